"""The GGUF conversion's one read: transformers' three metadata reads of a file become one, made from memory, its
weights read is passed through, and the library functions are restored afterwards. (The conversion itself runs in
every model test's first use of `default`, whose numbers the suite checks against llama.cpp and lm-eval.)"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from transformers import modeling_gguf_pytorch_utils as gguf_utils

from crossknow.models.checkpoint_cache import _one_gguf_read


def test_metadata_is_parsed_once_per_file_and_each_caller_gets_its_own_copy(monkeypatch: pytest.MonkeyPatch):
    calls: list[tuple[str, bool]] = []

    def load(path, return_tensors=False, model_to_load=None, torch_dtype=None):
        calls.append((str(path), return_tensors))
        return {"config": {"model_type": "gemma3"}, "tensors": {"w": 1} if return_tensors else {}}

    monkeypatch.setattr(gguf_utils, "load_gguf_checkpoint", load)
    original_reader = gguf.GGUFReader
    with _one_gguf_read():
        first = gguf_utils.load_gguf_checkpoint("a.gguf", return_tensors=False)
        first["config"]["model_type"] = "changed by its caller"
        second = gguf_utils.load_gguf_checkpoint("a.gguf", return_tensors=False)
        weights = gguf_utils.load_gguf_checkpoint("a.gguf", return_tensors=True, model_to_load="m")
        other = gguf_utils.load_gguf_checkpoint("b.gguf", return_tensors=False)
    assert calls == [("a.gguf", False), ("a.gguf", True), ("b.gguf", False)]
    assert second["config"]["model_type"] == "gemma3" and weights["tensors"] == {"w": 1} and other["tensors"] == {}
    assert gguf_utils.load_gguf_checkpoint is load and gguf.GGUFReader is original_reader


def test_the_reader_reads_the_file_into_memory_and_numpy_is_its_own_again_after(tmp_path):
    from gguf import gguf_reader

    path = tmp_path / "model.gguf"
    path.write_bytes(bytes(range(256)) * 4)
    with _one_gguf_read():
        read = gguf_reader.np.memmap(path, mode="r")
        assert type(read) is np.ndarray and read.tobytes() == path.read_bytes()
        assert gguf_reader.np.uint32 is np.uint32  # the rest is numpy's
        writable = gguf_reader.np.memmap(path, mode="r+")
        assert isinstance(writable, np.memmap)  # only a read-only map is read into memory
        del writable
    assert gguf_reader.np is np
