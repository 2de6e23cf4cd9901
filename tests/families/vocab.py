"""Real tokenizers of other model families, from the vocab-only GGUFs in llama.cpp's source tree.

The llama-cpp-python sdist that the lock builds carries `vendor/llama.cpp/models/ggml-vocab-*.gguf`. `make vocab`
(a prerequisite of `make test`) runs this module: it downloads that sdist (pip's cache holds it after the install),
checks its SHA-256 against the lock, extracts the families' GGUFs and saves each as a transformers tokenizer
directory under `.test-cache/vocab/` (the GGUF conversion takes up to 20 s a family; the saved one loads in one).

    .venv/bin/python -m tests.families.vocab
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from crossknow.store.hashing import file_sha256

ROOT = Path(__file__).resolve().parents[2]
VOCAB_DIR = ROOT / ".test-cache" / "vocab"
"""Where the converted tokenizers are kept (one directory per family)."""

FAMILIES = {"llama3": "llama-bpe", "llama2": "llama-spm", "qwen2": "qwen2", "phi3": "phi-3"}
"""crossknow's family name -> llama.cpp's vocab file name (`ggml-vocab-NAME.gguf`)."""

SOURCE_FILE = "crossknow-vocab-source.json"
"""Written beside each saved tokenizer: the sdist and GGUF it came from, with their SHA-256."""


def lock_pin(lock: Path = ROOT / "requirements" / "lock.txt") -> tuple[str, str]:
    """(version, sha256) of llama-cpp-python in the lock."""
    match = re.search(r"^llama-cpp-python==(\S+) \\\n\s+--hash=sha256:([0-9a-f]{64})", lock.read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"{lock}: no pinned llama-cpp-python with a sha256 hash")
    return match.group(1), match.group(2)


def download_sdist(version: str, sha256: str, into: Path) -> Path:
    """The llama-cpp-python sdist of the lock, downloaded by pip into `into`, its SHA-256 checked."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    f"llama-cpp-python=={version}", "-d", str(into)], check=True)
    sdist = into / f"llama_cpp_python-{version}.tar.gz"
    found = file_sha256(sdist)
    if found != sha256:
        raise SystemExit(f"{sdist.name}: sha256 {found} is not the lock's {sha256}")
    return sdist


def extract_ggufs(sdist: Path, into: Path) -> dict[str, Path]:
    """Family -> its vocab GGUF, extracted from the sdist into `into`."""
    wanted = {f"ggml-vocab-{name}.gguf": family for family, name in FAMILIES.items()}
    found = {}
    with tarfile.open(sdist, "r:gz") as archive:
        for member in archive:
            name = member.name.rsplit("/", 1)[-1]
            if name in wanted and "/vendor/llama.cpp/models/" in member.name:
                target = into / name
                target.write_bytes(archive.extractfile(member).read())
                found[wanted[name]] = target
    missing = sorted(set(wanted) - {path.name for path in found.values()})
    if missing:
        raise SystemExit(f"{sdist.name} holds no {', '.join(missing)}")
    return found


def prepare(out: Path = VOCAB_DIR) -> None:
    """Save every family's tokenizer into `out`/FAMILY (kept when its source record is current)."""
    from transformers import AutoTokenizer

    version, sha256 = lock_pin()
    if all(_current(out / family, sha256) for family in FAMILIES):
        return
    with tempfile.TemporaryDirectory() as scratch:
        ggufs = extract_ggufs(download_sdist(version, sha256, Path(scratch)), Path(scratch))
        for family, gguf in ggufs.items():
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            tokenizer.save_pretrained(out / family)
            source = {"sdist": f"llama_cpp_python-{version}.tar.gz", "sdist_sha256": sha256, "gguf": gguf.name,
                      "gguf_sha256": file_sha256(gguf)}
            (out / family / SOURCE_FILE).write_text(json.dumps(source, indent=1) + "\n", encoding="utf-8")
            print(f"{family}: {len(tokenizer)} entries from {gguf.name} -> {out / family}")


def _current(directory: Path, sha256: str) -> bool:
    source = directory / SOURCE_FILE
    return source.is_file() and json.loads(source.read_text(encoding="utf-8"))["sdist_sha256"] == sha256


def tokenizer_dir(family: str) -> Path:
    """The saved tokenizer of `family`; fails with the command that makes it when it is missing."""
    directory = VOCAB_DIR / family
    if not (directory / SOURCE_FILE).is_file():
        raise FileNotFoundError(f"{directory} is missing: run `make vocab` (the real tokenizers of other families)")
    return directory


if __name__ == "__main__":
    prepare()
