"""NER backend `hf:DIR`: any Hugging Face token-classification model saved in a local directory (the form of
the paper's Japanese NER, MedNERN-CR-JA, Appendix A.1).

config.json's `id2label` must name the labels (`O`, `B-TYPE`/`I-TYPE` or `TYPE`): generic `LABEL_k` names are
refused with a message that says what to write. Entities are the groups of transformers' pipeline ("simple"
aggregation): the sentence's text between their offsets or, from a slow tokenizer, the decoded words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossknow.adaxeval.ner_found import Found
from crossknow.adaxeval.ner_heuristic import distinct_entities
from crossknow.adaxeval.records import SentenceRecord
from crossknow.errors import CrossknowError, MissingDependencyError

GENERIC_LABEL = re.compile(r"LABEL_\d+")
"""transformers' placeholder label names: a config saved without real label names."""
OUTSIDE_LABEL = "O"
"""The label of tokens outside every entity (the pipeline's default ignored label)."""
BATCH_SIZE = 16
"""Sentences per forward pass."""


def check_labels(directory: Path) -> dict[int, str]:
    """The model's `id2label` from config.json, refused when the names cannot tell entities from the rest."""
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise CrossknowError(
            f"NER backend 'hf:{directory}': {config_file} not found; not a transformers model directory"
        )
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CrossknowError(f"{config_file}: not valid JSON: {error}") from error
    id2label = {int(key): str(value) for key, value in (config.get("id2label") or {}).items()}
    if not id2label or all(GENERIC_LABEL.fullmatch(name) for name in id2label.values()):
        raise CrossknowError(
            f"{config_file}: field 'id2label' names no labels (only LABEL_0, LABEL_1, ...); write the real tag "
            f"names there, '{OUTSIDE_LABEL}' for outside and B-TYPE/I-TYPE for entities (for MedNERN-CR-JA: "
            "the names its id_to_tags.pkl maps the ids to)"
        )
    if OUTSIDE_LABEL not in id2label.values():
        raise CrossknowError(
            f"{config_file}: field 'id2label' has no '{OUTSIDE_LABEL}' label; crossknow needs the outside label "
            f"named '{OUTSIDE_LABEL}' to tell entity tokens from the rest (labels: {sorted(set(id2label.values()))})"
        )
    return id2label


class HfNer:
    """A token-classification model from a local directory (see the module docstring)."""

    def __init__(self, directory: str):
        self.spec = f"hf:{directory}"
        path = Path(directory)
        if not path.is_dir():
            raise CrossknowError(f"NER backend {self.spec!r}: {directory} is not a directory")
        check_labels(path)
        try:
            from transformers import pipeline

            from crossknow.models.device import resolve_device
        except ImportError as error:  # pragma: no cover - exercised only without the hf extra
            raise MissingDependencyError("torch and transformers", "hf", f"NER backend {self.spec!r}") from error
        try:
            self._pipeline = pipeline(
                "token-classification", model=str(path), tokenizer=str(path), aggregation_strategy="simple",
                device=resolve_device("auto"),
            )
        except (OSError, ValueError, ImportError) as error:
            raise CrossknowError(
                f"NER backend {self.spec!r}: cannot load the model or its tokenizer: {error}"
            ) from error

    def find(self, sentences: Sequence[SentenceRecord]) -> list[Found]:
        """The entities of each sentence in order of appearance (distinct, ignoring case)."""
        texts = [s.text for s in sentences]
        if not texts:
            return []
        groups = self._pipeline(texts, batch_size=BATCH_SIZE)
        return [Found(distinct_entities([text for group in found if (text := entity_text(sentence, group))]))
                for sentence, found in zip(texts, groups, strict=True)]


def entity_text(sentence: str, group: dict[str, Any]) -> str | None:
    """The sentence's text of one aggregated entity group; None when it cannot be placed in the sentence."""
    start, end = group.get("start"), group.get("end")
    if start is not None and end is not None:
        return sentence[int(start) : int(end)].strip() or None
    word = str(group.get("word") or "").strip()
    if word and word in sentence:
        return word
    joined = word.replace(" ", "")
    return joined if joined and joined in sentence else None
