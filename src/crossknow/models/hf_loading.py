"""Loading a transformers causal LM and its tokenizer, shared by the local scorer and generator."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.models.device import resolve_device
from crossknow.models.placement import placement_arguments, remove_with

try:
    import torch

    from crossknow.models.fast_tokenizer import load_tokenizer
except ImportError as _error:  # pragma: no cover - exercised only without the hf extra
    raise MissingDependencyError("torch and transformers", "hf", "Local models (default, hf:, gguf:)") from _error

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
"""Compute dtypes accepted by --dtype."""

NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
"""CPU flags (Linux /proc/cpuinfo) of bfloat16 arithmetic in hardware. Without them torch emulates bf16:
measured on a 2-core AMD EPYC with AVX2 only, a bf16 matrix multiply of Gemma 3 270M's head took 4.6x
float32's time, and one bf16-autocast training step of `crossknow demo` over 5 minutes (float32: 2 s)."""


def cpu_has_native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU computes bfloat16 in hardware (see NATIVE_BF16_CPU_FLAGS); False where unknown."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            flags = next((line.split(":", 1)[1].split() for line in handle if line.startswith("flags")), [])
    except OSError:
        return False
    return bool(NATIVE_BF16_CPU_FLAGS & set(flags))


def resolve_dtype(dtype: str, device: str) -> str:
    """'auto' -> 'bfloat16' where the device computes it in hardware (a CUDA device with bf16 support, a
    CPU with NATIVE_BF16_CPU_FLAGS), else 'float32' (crossknow's choice: bf16 only where it is faster);
    any other value unchanged."""
    if dtype != "auto":
        return dtype
    device = resolve_device(device)
    if device.startswith("cuda"):
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if device == "cpu" and cpu_has_native_bf16() else "float32"


CHECKPOINT_DTYPE = "auto"
"""The --dtype that loads a checkpoint in the dtype it was saved in (transformers' `dtype="auto"`)."""


@dataclass(frozen=True)
class LoadSettings:
    """How transformers loads a model, beyond its place and dtype (`ModelAccess`'s loading options)."""

    trust_remote_code: bool = False
    """Run the modelling code a checkpoint ships (its config's `auto_map`)."""
    attn_implementation: str | None = None
    """transformers' attention kernel ('eager', 'sdpa', 'flash_attention_2'); None: transformers' choice."""
    quantization: str | None = None
    """'8bit' or '4bit': bitsandbytes' weights (see `quantization_config`); None: the weights in the dtype."""
    device_map: str | None = None
    """accelerate's placement of the layers over the devices (`crossknow.models.placement`); None: all on one."""
    max_memory: str | None = None
    """The most each device may hold under `device_map` ('0=70GiB,cpu=200GiB'); None: what each has."""

    def default(self) -> bool:
        """True when nothing here changes how a model loads."""
        return self == LoadSettings()

    def model_id(self, model_id: str) -> str:
        """`model_id` naming the weights' format where it is not the checkpoint's, so that a run, the request cache
        and a comparison of runs keep a quantised model apart from its checkpoint."""
        return f"{model_id}, bitsandbytes {QUANTIZATIONS[self.quantization]}" if self.quantization else model_id


QUANTIZATIONS = {"8bit": "LLM.int8", "4bit": "NF4"}
"""The bitsandbytes format of each --quantization. crossknow's choices: 8-bit is LLM.int8's vector-wise quantisation
without its outlier decomposition, which picks the columns kept in float16 over every row of a batch and so makes an
option's score depend on the options that share its batch; 4-bit is NF4, QLoRA's data type, without its double
quantisation of the scales (docs/scoring.md, "Quantised weights")."""


class _CastNotice(logging.Filter):
    """Drops bitsandbytes' notice, logged at every 8-bit product, that float32 inputs are cast to float16 (a fact
    that docs/scoring.md states once)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("MatMul8bitLt: inputs will be cast")


_CAST_NOTICE = _CastNotice()


def quantization_config(quantization: str, compute_dtype: Any) -> Any:
    """transformers' BitsAndBytesConfig of `quantization` ('8bit': LLM.int8 without outlier decomposition; '4bit':
    NF4 whose matrix products run in `compute_dtype`; see QUANTIZATIONS). bitsandbytes keeps the output layer and the
    norms unquantised."""
    from transformers import BitsAndBytesConfig

    if quantization not in QUANTIZATIONS:
        raise CrossknowError(f"unknown quantization {quantization!r}; choose one of {', '.join(QUANTIZATIONS)}")
    try:
        import bitsandbytes  # noqa: F401
    except ImportError as error:
        raise MissingDependencyError("bitsandbytes", "quantization", f"--quantization {quantization}") from error
    if quantization == "8bit":
        logging.getLogger("bitsandbytes.autograd._functions").addFilter(_CAST_NOTICE)
        return BitsAndBytesConfig(load_in_8bit=True, llm_int8_threshold=0.0)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=compute_dtype)


def _checkpoint_dtype(path: str, revision: str | None, load: LoadSettings) -> Any:
    """The dtype a checkpoint was saved in (its config's), float32 where it names none."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path, revision=revision, trust_remote_code=load.trust_remote_code)
    saved = getattr(config, "dtype", None)
    return DTYPES.get(saved, torch.float32) if isinstance(saved, str) else saved or torch.float32


def dtype_name(dtype: Any) -> str:
    """'bfloat16' for torch.bfloat16: the --dtype that names a loaded model's dtype."""
    return str(dtype).removeprefix("torch.")


def load_causal_lm(
    path: str, revision: str | None, model_id: str, device: str, dtype: str, load: LoadSettings = LoadSettings(),
) -> tuple[Any, Any]:
    """(tokenizer, model) of `path` at `revision`, the model in `dtype` (`auto`: the checkpoint's own) on `device`
    (or over the devices of `load.device_map`) in eval mode, loaded as `load` says.

    An unknown dtype or a model that cannot be loaded is a CrossknowError naming `model_id`. The
    tokenizer takes the fast load where crossknow's cache checked it (`crossknow.models.fast_tokenizer`).
    """
    return _from_pretrained(*weights_source(path, revision), model_id, device, dtype, load)


def _from_pretrained(
    path: str, revision: str | None, model_id: str, device: str, dtype: str, load: LoadSettings,
) -> tuple[Any, Any]:
    """`load_causal_lm` of a path that `weights_source` already resolved."""
    if dtype not in DTYPES and dtype != CHECKPOINT_DTYPE:
        raise CrossknowError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)} or {CHECKPOINT_DTYPE}")
    try:
        from transformers import AutoModelForCausalLM
    except ImportError as error:  # pragma: no cover - exercised only without the hf extra
        raise MissingDependencyError("torch and transformers", "hf", "Local models (default, hf:, gguf:)") from error
    extra: dict[str, Any] = {"attn_implementation": load.attn_implementation} if load.attn_implementation else {}
    # A placed model stays where accelerate put it, and a quantised one where bitsandbytes quantised it.
    placed = placement_arguments(load.device_map, load.max_memory) if load.device_map else {}
    model = None
    try:
        if load.quantization:
            compute = DTYPES.get(dtype) or _checkpoint_dtype(path, revision, load)
            extra |= {"quantization_config": quantization_config(load.quantization, compute),
                      "device_map": {"": device}}
        tokenizer = load_tokenizer(path, revision, trust_remote_code=load.trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(path, revision=revision, dtype=DTYPES.get(dtype, dtype),
                                                     trust_remote_code=load.trust_remote_code, **extra | placed)
    except (OSError, ValueError, ImportError) as error:  # ValueError: remote code not trusted, an unknown kernel
        hint = " (the checkpoint ships its own modelling code: --trust-remote-code runs it, if you trust it)" if (
            "trust_remote_code" in str(error) and not load.trust_remote_code) else ""
        raise CrossknowError(f"cannot load model {model_id!r}{hint}: {error}") from error
    finally:
        if placed:
            remove_with(model, placed)
    return tokenizer, (model if load.quantization or placed else model.to(device)).eval()


def weights_source(path: str, revision: str | None) -> tuple[str, str | None]:
    """(path, revision) that transformers loads for `path` at `revision`: a Hub repository that holds a PEFT adapter
    becomes its merged checkpoint (`checkpoint_cache.hub_adapter_checkpoint`), anything else stays as it is."""
    from crossknow.models.checkpoint_cache import hub_adapter_checkpoint

    merged = hub_adapter_checkpoint(path, revision)
    return (str(merged), None) if merged is not None else (path, revision)


def load_scoring_model(
    path: str, revision: str | None, model_id: str, device: str, dtype: str, load: LoadSettings = LoadSettings(),
) -> tuple[Any, Any]:
    """`load_causal_lm` for the scorer: a local Gemma 3 text checkpoint that `crossknow.models.gemma3_text`
    computes loads through it, without importing transformers' model code (docs/speed.md, "Start-up"); any other
    model, or one loaded with settings of its own, through transformers."""
    from crossknow.models import gemma3_text

    path, revision = weights_source(path, revision)
    if not _own_gemma3_settings(dtype, load) or revision is not None or gemma3_text.unsupported(path) is not None:
        return _from_pretrained(path, revision, model_id, device, dtype, load)
    try:
        return load_tokenizer(path, revision, scoring=True), gemma3_text.load(path, DTYPES[dtype], device)
    except (OSError, ValueError) as error:  # ValueError: weights that do not fit its config.json
        raise CrossknowError(f"cannot load model {model_id!r}: {error}") from error


def _own_gemma3_settings(dtype: str, load: LoadSettings) -> bool:
    """Whether a model loaded in `dtype` with `load` may score through crossknow's Gemma 3: a named dtype (not the
    checkpoint's own) and no loading option of the user's."""
    return dtype in DTYPES and load.default()


def scoring_view(model: Any, dtype: str, load: LoadSettings = LoadSettings()) -> Any:
    """A model transformers loaded (a generator's), as `load_scoring_model` would have loaded it for the scorer:
    a Gemma 3 text model that `crossknow.models.gemma3_text` computes becomes that module's model, sharing the
    weights; any other stays as it is. So which implementation scores a model does not depend on whether a
    generator loaded it first."""
    from crossknow.models import gemma3_text

    if _own_gemma3_settings(dtype, load) and gemma3_text.computes(model):
        return gemma3_text.from_transformers(model)
    return model
