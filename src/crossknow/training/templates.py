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
from typing import Any

from crossknow.data.guarded import load_yaml, parse_yaml
from crossknow.errors import CrossknowError, InputError

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
        """The table in `path`, or the one shipped with crossknow; InputError naming the file, the line and the
        field for a file that is not such a table (type -> language -> list of template strings)."""
        if path is None:
            text = (resources.files("crossknow.training") / TEMPLATE_FILE).read_text(encoding="utf-8")
            return cls(_checked(parse_yaml(text, TEMPLATE_FILE), TEMPLATE_FILE), TEMPLATE_FILE)
        return cls(_checked(load_yaml(path), path), str(path))

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


def _checked(table: Any, path: str | Path) -> dict[str, dict[str, list[str]]]:
    """`table` when it maps each instruction type to languages to lists of template strings."""
    if not isinstance(table, dict):
        raise InputError(path, f"expected a mapping of instruction types, found {type(table).__name__}")
    for type_, by_lang in table.items():
        if not isinstance(type_, str) or not isinstance(by_lang, dict):
            raise InputError(path, "expected a mapping of languages to template lists", field=str(type_))
        for lang, templates in by_lang.items():
            field = f"{type_}.{lang}"
            if not isinstance(lang, str) or not isinstance(templates, list):
                raise InputError(path, "expected a list of templates", field=field)
            for index, template in enumerate(templates):
                if not isinstance(template, str):
                    raise InputError(path, f"expected a string, found {type(template).__name__}",
                                     field=f"{field}[{index}]")
                try:
                    placeholders(template)
                except ValueError as exc:
                    raise InputError(path, f"not a str.format template: {exc}", field=f"{field}[{index}]") from None
    return table


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
