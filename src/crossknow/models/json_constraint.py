"""Decoding constrained to a JSON schema, for local generators, with llguidance (one matcher per row of a batch).

The JSON is written compactly and a row ends when its top-level value closes. crossknow's choice: a row whose open
string ends with the same span of at least `LOOP_MIN_CHARS` characters twice in a row is stopped there
(`repeats_in_open_string`): its output stays invalid, only cheaper, and `crossknow.generation` retries it; no string
is cut or closed. Without llguidance (`json_constraints_available()` is False) decoding is unconstrained.
"""

from __future__ import annotations

import json
from typing import Any

import torch

from crossknow.errors import CrossknowError

try:
    import llguidance
    import llguidance.hf
    import llguidance.torch
except ImportError:  # optional: see the module docstring
    llguidance = None

JSON_FORMAT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
"""How the constrained JSON is laid out: compact, one space after ',' and ':'."""


LOOP_MIN_CHARS = 16
"""Shortest span whose immediate repetition inside a JSON string counts as a loop (crossknow's choice:
long enough that ordinary text does not repeat it back to back)."""


def open_string_content(text: str) -> str | None:
    """The content written so far (escapes as written) of the JSON string `text` ends inside, or None when `text`
    (a prefix of compact JSON, as the grammar writes it) does not end inside a string."""
    start, escaped = None, False
    for i, char in enumerate(text):
        if start is not None and escaped:
            escaped = False
        elif start is not None and char == "\\":
            escaped = True
        elif char == '"':
            start = i + 1 if start is None else None
    return None if start is None else text[start:]


def repeats_in_open_string(text: str, min_chars: int = LOOP_MIN_CHARS) -> bool:
    """True when the string `text` ends inside ends with a span of at least `min_chars` characters
    written twice in a row (see the module docstring)."""
    content = open_string_content(text)
    if content is None:
        return False
    return any(content[-2 * n : -n] == content[-n:] for n in range(min_chars, len(content) // 2 + 1))


class JsonConstraint:
    """The grammar state of one row: which tokens may come next, and whether the value is complete."""

    def __init__(self, matcher: Any, vocab_size: int):
        self._matcher = matcher
        self._bitmask = llguidance.torch.allocate_token_bitmask(1, vocab_size)

    def mask_(self, logits: torch.Tensor) -> None:
        """Set the logits of the tokens the grammar forbids next to -inf, in place (a 1-D float tensor)."""
        llguidance.torch.fill_next_token_bitmask(self._matcher, self._bitmask, 0)
        view = logits.view(1, -1)
        llguidance.torch.apply_token_bitmask_inplace(view, self._bitmask.to(logits.device))

    def advance(self, token: int) -> None:
        """Consume the chosen token; an error when the grammar did not allow it."""
        if not self._matcher.consume_token(token):
            raise CrossknowError(f"json constraint: token {token} refused: {self._matcher.get_error()}")

    @property
    def complete(self) -> bool:
        """True once the JSON value is closed (nothing but EOS may follow)."""
        return self._matcher.is_accepting() or self._matcher.is_stopped()


class JsonConstraintFactory:
    """Builds a JsonConstraint per request from its schema, over one vocabulary converted once for llguidance
    (`from_hf` for a transformers tokenizer; llama.cpp's vocabulary goes through `llguidance.llamacpp`)."""

    def __init__(self, lltokenizer: Any, vocab_size: int):
        self._tokenizer = lltokenizer
        self.vocab_size = vocab_size
        """Width of the model's logits (at least the tokenizer's vocabulary)."""
        self._grammars: dict[str, str] = {}

    @classmethod
    def from_hf(cls, tokenizer: Any, vocab_size: int) -> JsonConstraintFactory:
        """The factory over a transformers tokenizer's vocabulary, padded to the model's `vocab_size` logits."""
        return cls(llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab_size), vocab_size)

    def __call__(self, schema: dict[str, Any]) -> JsonConstraint:
        """A fresh constraint for one row; a CrossknowError for a schema llguidance cannot take."""
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults=JSON_FORMAT)
        matcher = llguidance.LLMatcher(self._tokenizer, self._grammars[key])
        if matcher.is_error():
            raise CrossknowError(f"json constraint: llguidance cannot use this schema: {matcher.get_error()}")
        return JsonConstraint(matcher, self.vocab_size)


def json_constraints_available() -> bool:
    """True when llguidance is installed."""
    return llguidance is not None
