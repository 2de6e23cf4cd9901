"""Generator on llama.cpp, in this process: a GGUF model decoded by llama.cpp's kernels on its quantised weights
(`default` and `gguf:FILE` on the CPU, `llamacpp:FILE`; why, and how fast: docs/speed.md).

Continuous batching: up to `batch_size` requests are sequences of one llama.cpp context at once, and a request that
ends gives its sequence to the next waiting one, whose prompt goes into the same `llama_decode` call as the others'
next tokens. Each token is chosen by `DecodeRow.step` as in the transformers generator; flash attention is off, as in
llama-cpp-python's own loop, so that a request decoded alone has that loop's text and log-probabilities. Scores
(`score_answers`, and a pool's scorer of the same spec) come from the transformers scorer the backend gives.
"""

from __future__ import annotations

import ctypes
import math
import os
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.models.chat_format import gemma_prompt, resolve_prompt_format
from crossknow.models.generator import ChatMessage, GenerateRequest, PromptFormat
from crossknow.models.protocol import Scorer

try:
    import llama_cpp
    import numpy as np
    import torch

    from crossknow.models.hf_decoding import DecodeRow
    from crossknow.models.json_constraint import JsonConstraintFactory, json_constraints_available
    from crossknow.models.local_generator import LocalGenerator
except ImportError as _error:  # pragma: no cover - exercised only without llama-cpp-python
    raise MissingDependencyError("llama-cpp-python", "llamacpp", "The llamacpp: generator") from _error

CONTEXT_STEP = 1024
"""The context of each sequence is a multiple of this many tokens (crossknow's choice: few rebuilds)."""

BATCH_TOKENS = 2048
"""Most tokens one `llama_decode` call takes; longer prefills go in several calls."""

_RECENT_ERRORS: deque[str] = deque(maxlen=8)
"""llama.cpp's latest error lines, quoted when a load fails (its other log lines are dropped)."""

_LOG_ERROR = 3
"""GGML_LOG_LEVEL_ERROR."""


@llama_cpp.llama_log_callback
def _keep_errors(level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
    if level == _LOG_ERROR:
        _RECENT_ERRORS.append(text.decode("utf-8", errors="replace").strip())


def _errors() -> str:
    """llama.cpp's latest error lines, or a note that it gave none."""
    return " ".join(_RECENT_ERRORS) or "llama.cpp gave no reason"


_backend_ready = False


def _start_backend() -> None:
    """Quiet llama.cpp's log (errors are kept for messages) and initialise its backend, once per process."""
    global _backend_ready
    if not _backend_ready:
        llama_cpp.llama_log_set(_keep_errors, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        _backend_ready = True


def llamacpp_version() -> str:
    """The installed llama-cpp-python's version (part of a model id: another llama.cpp may write other texts)."""
    return llama_cpp.__version__


def _free(handles: dict[str, Any]) -> None:
    """Free a generator's llama.cpp objects (context, batch, model), each once."""
    if handles.get("batch") is not None:
        llama_cpp.llama_batch_free(handles.pop("batch"))
    if handles.get("context"):
        llama_cpp.llama_free(handles.pop("context"))
    if handles.get("model"):
        llama_cpp.llama_model_free(handles.pop("model"))


class LlamaCppGenerator(LocalGenerator):
    """Completes chat and completion prompts with a GGUF model on llama.cpp; see the module docstring."""

    def __init__(
        self,
        gguf_file: str | Path,
        *,
        name: str = "llamacpp",
        model_id: str | None = None,
        batch_size: int = 8,
        threads: int | None = None,
        constrain_json: bool = True,
        prompt_format: str = "auto",
        scorer: Callable[[], Scorer] | None = None,
    ):
        """`scorer`: builds the transformers scorer of the same model, when first asked (None: this generator
        does not score)."""
        if batch_size < 1:
            raise CrossknowError(f"batch_size must be at least 1, got {batch_size}")
        path = Path(gguf_file)
        if not path.is_file():
            raise CrossknowError(f"llamacpp: file not found: {path}")
        _start_backend()
        self.name = name
        self.model_id = model_id or f"{path.name} (llama.cpp)"
        self.batch_size = batch_size
        self.threads = threads or len(os.sched_getaffinity(0))
        """CPU threads of each llama.cpp call."""
        self._handles: dict[str, Any] = {}
        weakref.finalize(self, _free, self._handles)
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), llama_cpp.llama_model_default_params())
        if not model:
            raise CrossknowError(f"llamacpp: llama.cpp cannot load {path}: {_errors()}")
        self._handles["model"] = model
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self._train_context = llama_cpp.llama_model_n_ctx_train(model)
        self._context_tokens = self._sequences = self._batch_tokens = 0
        self._pieces: dict[int, bytes] = {}
        self._template = self._metadata("tokenizer.chat_template")
        self._formatter: Any = None
        self.prompt_format: PromptFormat = resolve_prompt_format(prompt_format, self)
        self.stop_ids = self._stop_ids()
        self.constrain_json = constrain_json and json_constraints_available()
        self._json_constraints: JsonConstraintFactory | None = None
        self._make_scorer, self._scorer = scorer, None

    def scorer(self) -> Scorer:
        """The transformers scorer of this model, built on first need."""
        if self._scorer is None:
            if self._make_scorer is None:
                raise CrossknowError(f"{self.name}: this llama.cpp generator was built without a scorer")
            self._scorer = self._make_scorer()
        return self._scorer

    @property
    def chat_template(self) -> str | None:
        """The GGUF's chat template (None without one): what `resolve_prompt_format` reads."""
        return self._template

    def _metadata(self, key: str) -> str | None:
        size = 1 << 16
        while True:
            buffer = ctypes.create_string_buffer(size)
            length = llama_cpp.llama_model_meta_val_str(self._handles["model"], key.encode(), buffer, size)
            if length < 0:
                return None
            if length < size:
                return buffer.value.decode("utf-8", errors="replace")
            size = length + 1

    def _stop_ids(self) -> frozenset[int]:
        ids = {llama_cpp.llama_vocab_eos(self._vocab), llama_cpp.llama_vocab_eot(self._vocab)}
        end_of_turn = self.tokenize("<end_of_turn>", add_bos=False)
        if len(end_of_turn) == 1:
            ids.add(end_of_turn[0])
        return frozenset(i for i in ids if i >= 0)

    def tokenize(self, text: str, add_bos: bool = True) -> list[int]:
        """Token ids of `text` by the GGUF's vocabulary (BOS first when `add_bos` and the vocabulary adds one;
        special tokens written as text are read as those tokens)."""
        data = text.encode("utf-8")
        size = len(data) + 8
        while True:
            buffer = (llama_cpp.llama_token * size)()
            count = llama_cpp.llama_tokenize(self._vocab, data, len(data), buffer, size, add_bos, True)
            if count >= 0:
                return list(buffer[:count])
            size = -count

    def detokenize(self, ids: list[int]) -> str:
        """The text of `ids` (control tokens written out, as transformers' `decode` writes them)."""
        return b"".join(self._piece(i) for i in ids).decode("utf-8", errors="replace")

    def _piece(self, token: int) -> bytes:
        if token not in self._pieces:
            buffer = ctypes.create_string_buffer(256)
            length = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, 256, 0, True)
            self._pieces[token] = buffer.raw[: max(length, 0)]
        return self._pieces[token]

    def prompt_text(self, messages: Sequence[ChatMessage]) -> str:
        """The chat prompt as text, ending where the model's answer starts, without BOS (tokenising adds it)."""
        if not self._template:
            return gemma_prompt(messages)
        if self._formatter is None:  # the template is compiled once, at the first chat prompt
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            bos, eos = (self._piece(token).decode("utf-8", errors="replace")
                        for token in (llama_cpp.llama_vocab_bos(self._vocab), llama_cpp.llama_vocab_eos(self._vocab)))
            self._formatter = Jinja2ChatFormatter(self._template, eos_token=eos, bos_token=bos,
                                                  add_generation_prompt=True)
        text = self._formatter(messages=[{"role": m.role, "content": m.content} for m in messages]).prompt
        bos = self._formatter.bos_token
        return text[len(bos) :] if bos and text.startswith(bos) else text

    def request_ids(self, request: GenerateRequest) -> list[int]:
        """Token ids of a request's prompt, after BOS, ending where the model's answer starts."""
        return self.tokenize(request.prompt if request.prompt is not None else self.prompt_text(request.messages))

    def max_positions(self) -> int | None:
        """The model's training context."""
        return self._train_context or None

    def json_constraints(self) -> JsonConstraintFactory:
        """Built on first need, over the GGUF's own vocabulary."""
        if self._json_constraints is None:
            import llguidance.llamacpp

            with warnings.catch_warnings():  # it asks llama_token_get_attr, deprecated, once per word of the vocabulary
                warnings.simplefilter("ignore", DeprecationWarning)
                tokenizer = llguidance.llamacpp.lltokenizer_from_vocab(self._vocab)
            self._json_constraints = JsonConstraintFactory(tokenizer, self._n_vocab)
        return self._json_constraints

    def _ensure_context(self, row_tokens: int, rows: int) -> None:
        """A context holding `rows` sequences of `row_tokens` tokens each, rebuilt only when this one is too small."""
        per_row = min(math.ceil(row_tokens / CONTEXT_STEP) * CONTEXT_STEP, self._train_context or row_tokens)
        if self._handles.get("context") and per_row <= self._context_tokens and rows <= self._sequences:
            return
        if self._handles.get("context"):
            llama_cpp.llama_free(self._handles.pop("context"))
        sequences = max(rows, min(self.batch_size, llama_cpp.llama_max_parallel_sequences()))
        params = llama_cpp.llama_context_default_params()
        params.n_seq_max = sequences
        params.n_ctx = per_row * sequences
        params.n_batch = params.n_ubatch = self._batch_tokens = min(BATCH_TOKENS, params.n_ctx)
        params.n_threads = params.n_threads_batch = self.threads
        params.kv_unified = True
        params.no_perf = True
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        context = llama_cpp.llama_init_from_model(self._handles["model"], params)
        if not context:
            raise CrossknowError(f"llamacpp: llama.cpp cannot make a context of {sequences} x {per_row} tokens: "
                                 f"{_errors()}")
        self._handles["context"] = context
        self._context_tokens, self._sequences = per_row, sequences
        if self._handles.get("batch") is None:
            self._handles["batch"] = llama_cpp.llama_batch_init(BATCH_TOKENS, 0, 1)

    def decode(self, rows: list[DecodeRow]) -> None:
        """Decode every row, `batch_size` at once, continuously (see the module docstring)."""
        waiting = deque(j for j, row in enumerate(rows) if row.budget > 0)
        if not waiting:
            return
        slots = min(self.batch_size, len(waiting))
        self._ensure_context(max(len(rows[j].prompt) + rows[j].budget for j in waiting), slots)
        memory = llama_cpp.llama_get_memory(self._handles["context"])
        llama_cpp.llama_memory_clear(memory, True)
        free = deque(range(slots))
        fed: dict[int, tuple[int, int]] = {}  # sequence -> (row, prompt tokens in the context)
        while waiting or fed:
            while waiting and free:
                fed[free.popleft()] = (waiting.popleft(), 0)
            entries: list[tuple[int, int, int, bool]] = []
            asked: list[tuple[int, int]] = []  # (batch index, sequence) of the entries whose logits choose a token
            for sequence, (j, done) in fed.items():  # rows already decoding first: one token each
                prompt = rows[j].prompt
                if done == len(prompt):
                    asked.append((len(entries), sequence))
                    entries.append((rows[j].generated[-1], done + len(rows[j].generated) - 1, sequence, True))
            for sequence, (j, done) in fed.items():  # then prompts, as far as the call has room
                prompt = rows[j].prompt
                take = min(len(prompt) - done, self._batch_tokens - len(entries))
                if done == len(prompt) or take <= 0:
                    continue
                end = done + take
                entries.extend((prompt[p], p, sequence, p == len(prompt) - 1) for p in range(done, end))
                fed[sequence] = (j, end)
                if end == len(prompt):
                    asked.append((len(entries) - 1, sequence))
            self._run(entries)
            for index, sequence in asked:
                j = fed[sequence][0]
                if not self._step(rows[j], index):
                    llama_cpp.llama_memory_seq_rm(memory, sequence, -1, -1)
                    del fed[sequence]
                    free.append(sequence)

    def _run(self, entries: list[tuple[int, int, int, bool]]) -> None:
        """One `llama_decode` of (token, position, sequence, wants logits) entries."""
        batch = self._handles["batch"]
        for index, (token, position, sequence, logits) in enumerate(entries):
            batch.token[index] = token
            batch.pos[index] = position
            batch.n_seq_id[index] = 1
            batch.seq_id[index][0] = sequence
            batch.logits[index] = logits
        batch.n_tokens = len(entries)
        status = llama_cpp.llama_decode(self._handles["context"], batch)
        if status != 0:
            raise CrossknowError(f"llamacpp: llama_decode failed with status {status}: "
                                 f"{_errors()}")

    def _step(self, row: DecodeRow, index: int) -> bool:
        """The row's next token from the logits of batch entry `index`; False once the row has ended."""
        pointer = llama_cpp.llama_get_logits_ith(self._handles["context"], index)
        logits = torch.from_numpy(np.ctypeslib.as_array(pointer, shape=(self._n_vocab,)))
        return row.step(logits, self.stop_ids, self.detokenize)
