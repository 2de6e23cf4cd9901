"""The instruction template table (instruction_templates.yaml): ten templates per type and document language.

A missing (type, language) entry is an error that names both, never a silent skip.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from crossknow.errors import CrossknowError

TEMPLATE_FILE = "instruction_templates.yaml"


@dataclass(frozen=True)
class PickedTemplate:
    """One template drawn for one document."""

    type: str
    """Instruction type, e.g. 'summarisation'."""
    index: int
    """Position of the template in the table's list for (type, language)."""
    text: str
    """The str.format template."""


class TemplateTable:
    """Templates keyed by instruction type, then by the document's language."""

    def __init__(self, table: dict[str, dict[str, list[str]]], source: str):
        self.table = table
        self.source = source

    @classmethod
    def load(cls, path: Path | None = None) -> TemplateTable:
        """The table in `path`, or the one shipped with crossknow."""
        if path is None:
            text = (resources.files("crossknow.training") / TEMPLATE_FILE).read_text(encoding="utf-8")
            return cls(yaml.safe_load(text), TEMPLATE_FILE)
        return cls(yaml.safe_load(Path(path).read_text(encoding="utf-8")), str(path))

    def templates(self, type_: str, lang: str) -> list[str]:
        """All templates of `type_` for documents in `lang`; an error when the table has none."""
        if type_ not in self.table:
            raise CrossknowError(f"{self.source}: no instruction type {type_!r} (has: {', '.join(self.table)})")
        by_lang = self.table[type_]
        if lang not in by_lang or not by_lang[lang]:
            raise CrossknowError(
                f"{self.source}: no {type_!r} templates for language {lang!r} (has: {', '.join(by_lang)}); "
                f"add them to extend the recipe to {lang!r}"
            )
        return by_lang[lang]

    def pick(self, type_: str, lang: str, rng: random.Random) -> PickedTemplate:
        """Draw one template of `type_` for a `lang` document with `rng`."""
        options = self.templates(type_, lang)
        index = rng.randrange(len(options))
        return PickedTemplate(type_, index, options[index])


@lru_cache(maxsize=64)
def placeholders(template: str) -> frozenset[str]:
    """The str.format field names a template uses."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(template) if name)


def fill(picked: PickedTemplate, values: dict[str, str]) -> str:
    """The template filled with `values`; an error naming the type when a placeholder has no value."""
    missing = placeholders(picked.text) - values.keys()
    if missing:
        raise CrossknowError(f"{picked.type} template {picked.index} needs {sorted(missing)}, which were not given")
    return picked.text.format(**values)
