"""What an NER backend finds in one sentence: shared by the backends of `crossknow.adaxeval.ner` and
`crossknow.adaxeval.ner_hf`."""

from __future__ import annotations

from dataclasses import dataclass

from crossknow.adaxeval.records import CallInfo


@dataclass(frozen=True)
class Found:
    """Entities of one sentence, or None with the call's error (an llm: backend's invalid output)."""

    entities: list[str] | None
    call: CallInfo | None = None
    retry: bool = False
    """True when the request failed in transport: leave the sentence for a later run."""
