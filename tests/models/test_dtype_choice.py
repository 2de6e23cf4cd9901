"""`--dtype auto`: bfloat16 only where the CPU computes it in hardware."""

from __future__ import annotations

from crossknow.models.hf_loading import cpu_has_native_bf16, resolve_dtype

AVX2_ONLY = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse sse2 avx avx2 fma\n"
SAPPHIRE_RAPIDS = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"


def test_bf16_in_hardware_is_read_from_the_cpu_flags(tmp_path):
    (tmp_path / "amd").write_text(AVX2_ONLY)
    (tmp_path / "intel").write_text(SAPPHIRE_RAPIDS)
    assert not cpu_has_native_bf16(str(tmp_path / "amd"))
    assert cpu_has_native_bf16(str(tmp_path / "intel"))
    assert not cpu_has_native_bf16(str(tmp_path / "missing"))


def test_auto_follows_this_machine_and_explicit_dtypes_stay():
    here = cpu_has_native_bf16()
    assert resolve_dtype("auto", "cpu") == ("bfloat16" if here else "float32")
    assert resolve_dtype("bfloat16", "cpu") == "bfloat16" and resolve_dtype("float32", "cpu") == "float32"
