"""What a result returned for a mutated file must hold of that file, per reader (`seeds.Reader.holds`), beyond the
records revalidating: values in their ranges, and what the file says found in what was read."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from crossknow.adaxeval.annotate import COMBINED, RUBRICS
from crossknow.adaxeval.prompts import PromptTable
from crossknow.data.eclektic import read_eclektic
from crossknow.data.schemas import LANGUAGE_TAG
from crossknow.generation.pricing import ModelPrice, PriceTable
from crossknow.perturb.synonym_dictionary import TSV_COLUMNS
from crossknow.training.templates import TemplateTable
from tests.fuzz.mutations import BOM
from tests.fuzz.results import records_in


def judgements(table: Any, _: bytes) -> None:
    """Every judgement row has language tags, a verdict (or null) and a sample in the 64-bit range."""
    for row in table.to_pylist():
        assert LANGUAGE_TAG.match(row["source_lang"]) and LANGUAGE_TAG.match(row["lang"]), row
        assert row["correct"] in (True, False, None) and 0 <= row["sample"] < 2**63, row


def sequences(result: list, data: bytes) -> None:
    """Every sequence has its own id and text, and a line of the file."""
    assert len({sequence.variant_id for sequence in result}) == len(result)
    assert all(sequence.text and 1 <= sequence.line <= data.count(b"\n") + 1 for sequence in result)


def released_set(result: tuple, data: bytes) -> None:
    """The set the import wrote is read back by `read_eclektic` without an invalid record, one question a line, from
    no more rows than the sheet has."""
    summary, released = result
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "released.jsonl"
        path.write_text(released, encoding="utf-8")
        read_back = read_eclektic(path, required="source") if released else None
    assert read_back is None or not read_back.invalid, read_back.invalid
    assert summary.questions == released.count("\n") and summary.rows <= records_in("csv", data)


def scores(table: Any, _: bytes) -> None:
    """Every mean score lies in its rubric's range."""
    maximum = {rubric.column: rubric.maximum for rubric in RUBRICS} | {column: 3 for column in COMBINED}
    for column, by_lang in table.means.items():
        assert all(mean is None or 0 <= mean <= maximum[column] for mean in by_lang.values()), (column, by_lang)


def prices(table: PriceTable, data: bytes) -> None:
    """Every model of the file has the price the file gives it."""
    text = data.removeprefix(BOM).decode("utf-8")
    try:
        written = json.loads(text)
    except ValueError:
        written = yaml.safe_load(text)
    for model, entry in written.items():
        assert table.prices[str(model)] == ModelPrice.model_validate(entry), model


def prompts(table: PromptTable, data: bytes) -> None:
    """The English prompts and language names are the file's."""
    written = yaml.safe_load(data.removeprefix(BOM).decode("utf-8"))
    assert all(table.template(task, "en") == text for task, text in written["tasks"].items())
    assert all(table.language_name("en", lang) == name for lang, name in written["names"].items())


def templates(table: TemplateTable, data: bytes) -> None:
    """The table is the file's."""
    assert table.table == yaml.safe_load(data.removeprefix(BOM).decode("utf-8"))


def synonyms(dictionary: Any, data: bytes) -> None:
    """Every line of the file is found: its synonym among those of its lemma."""
    lines = [line.rstrip("\r\n") for line in data.removeprefix(BOM).decode("utf-8").split("\n")]
    for line in lines:
        fields = tuple(part.strip() for part in line.split("\t"))
        if line.strip() and not line.startswith("#") and fields != TSV_COLUMNS:
            lemma_lang, lemma, synonym_lang, synonym = fields
            assert synonym == lemma or synonym in dictionary.synonyms(lemma, lemma_lang, synonym_lang), line
