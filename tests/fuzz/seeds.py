"""A valid file for every reader entry point that the fuzz suite mutates, the call that reads it, and what the
reader must do with the mutation classes whose outcome is its own.

Each `Reader` names its file (some readers tell the format from the name: `<Language>.json`, `.parquet`), its
kind (which mutation classes fit it: JSON lines, one JSON document, YAML, CSV, TSV, Parquet), the valid bytes
(from the real data in ../shared/data where there are some, else written here), the call that reads a file, and
its expectations: whether it refuses an unknown key, a repeated record and a record against its rules, or reads
past them or reports them invalid (`expectations`); how many results one record of its file gives; what a
returned result must hold of its file (`holds`).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from crossknow.adaxeval.annotate import MATERIAL, score_columns, score_sheet
from crossknow.adaxeval.prompts import PromptTable
from crossknow.data.corpus import read_corpus
from crossknow.data.eclektic import LANGUAGES, read_eclektic
from crossknow.data.formats import load_item_set
from crossknow.data.pairing import read_pairing
from crossknow.data.parquet import items_table
from crossknow.data.schemas import MCItem
from crossknow.dynamics.sequence_inputs import read_sequences
from crossknow.eclektic.metrics import read_judgement_file
from crossknow.eclektic.review_sheet import SHEET_COLUMNS, import_sheet
from crossknow.generation.pricing import PriceTable
from crossknow.perturb.synonym_dictionary import load_synonyms
from crossknow.pitfalls.categorize.run import read_category_pairs
from crossknow.pitfalls.flaws import read_pair_file
from crossknow.pitfalls.probe.sources import read_source_file, read_source_sample
from crossknow.training.templates import TemplateTable
from tests.conftest import SHARED_DATA
from tests.fuzz import holds
from tests.fuzz.expectations import CHECKED, DROPPED, READ_EQUAL, REFUSED

RELEASE = SHARED_DATA / "cross-lingual-pitfalls"


@dataclass(frozen=True)
class Reader:
    """One reader entry point under fuzzing, and what it must do with each mutation class."""

    name: str
    file_name: str
    kind: str
    """'jsonl', 'json', 'yaml', 'csv', 'tsv' or 'parquet': which mutation classes apply."""
    seed: Callable[[], bytes]
    read: Callable[[Path], Any]
    expect: Mapping[str, str] = field(default_factory=dict)
    """Expectations of the classes whose outcome is the reader's own (`expectations`), by class."""
    breaks_rule: Callable[[Any], Any] | None = None
    """A change of one record (parsed JSON or YAML, a sheet row as a dict) that breaks one of the reader's own
    rules, for the class rule-violation."""
    per_record: tuple[int, int] | None = (1, 1)
    """The fewest and most results (usable and invalid records) one record of the file gives; None where the
    result is no list of records (a table of prices, prompts or templates)."""
    holds: Callable[[Any, bytes], None] | None = None
    """Asserts what a returned result must hold of the file it was read from, beyond `results.revalidate`."""


def _lines(*records: dict) -> bytes:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")


def _json_head(path: Path, count: int, fallback: list[dict]) -> bytes:
    data = json.loads(path.read_text(encoding="utf-8"))[:count] if path.exists() else fallback
    return json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")


def _lines_head(path: Path, count: int, fallback: bytes) -> bytes:
    if not path.exists():
        return fallback
    return b"".join(path.read_bytes().splitlines(keepends=True)[:count])


ITEMS = [
    {"id": "q1", "lang": "en", "kind": "question", "prompt": "What is water made of?",
     "options": ["hydrogen and oxygen", "iron", "salt", "sand"], "answer": 0, "pair_id": "p1",
     "metadata": {"source": "test", "n": 1}},
    {"id": "q2", "lang": "ja", "kind": "cloze", "prompt": "水は[BLANK]でできている。", "options": ["水素と酸素", "鉄"],
     "answer": 0, "source_lang": "en", "pair_id": "p1"},
    {"id": "q3", "lang": "en", "kind": "question", "prompt": "Two plus two?", "options": ["3", "4", "5"],
     "answer": 1},
]
QA = [{"id": "e1", "lang": "en", "question": "Who wrote it?", "answer": "Someone", "context": "A passage."}]
PAIR = {"question": "Q?", "choices": ["a", "b", "c", "d"], "answer": "b", "transquestion": "問？",
        "transchoices": ["あ", "い", "う", "え"], "transanswer": "い", "oriquestion": "Q?", "source": "mmlu",
        "category": "STEM"}
SOURCE = {"question": "Q?", "choices": ["a", "b", "c", "d"], "answer": "c", "source": "mmlu"}
SIDE = {"question": "Q?", "choices": ["a", "b", "c", "d"], "answer": 1, "lang": "en"}
CANDIDATE = {"id": "p1", "source_id": "s:1", "recipe": "paper", "english": SIDE, "target": SIDE | {"lang": "ja"},
             "value": 0.5, "beta_en": {"m": 1.0}, "beta_target": {"m": 0.0}, "depth": 0, "parent_id": None,
             "lineage": [], "category": "STEM"}
VARIANT = {"id": "s1:original", "source_id": "s1", "lang": "en", "method": "original", "level": "none", "x": None,
           "y": None, "a": None, "text": "A sequence.", "token_ids": None, "tokenizer": "default",
           "edit_distance": 0, "seed": 0}
ECLEKTIC = {"q_id": "e1", "original_lang": "ja", "title": "T", "url": "https://x", "content": "C",
            "question": "Q", "answer": "A", "ja_q": "質問", "ja_a": "答え", "ja_c": "文脈", "en_q": "Q", "en_a": "A",
            "en_c": "C"}
SAMPLE = {"seed": 0, "n": 2, "simulators": ["m"], "answering": "loss", "drawn": 2, "kept": 1, "dropped_wrong": 1,
          "dropped_invalid": 0, "wrong_by_simulator": {"m": 1}, "invalid_by_simulator": {"m": 0},
          "kept_ids": ["mmlu:0"], "dropped": {"mmlu:1": "wrong in English: m"},
          "files": [{"path": "mmlu.json", "name": "mmlu", "sha256": "0" * 64, "available": 2, "unusable": 0,
                     "drawn": 2, "kept": 1}]}


def _parquet() -> bytes:
    sink = io.BytesIO()
    pq.write_table(items_table([MCItem(**item) for item in ITEMS]), sink)
    return sink.getvalue()


def _csv(header: list[str], rows: list[list[str]]) -> bytes:
    import csv

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerows([header, *rows])
    return ("\ufeff" + text.getvalue()).encode("utf-8")


def _review_sheet() -> bytes:
    cells = {"q_id": "e1", "original_lang": "ja", "title": "T", "url": "https://x", "question": "質問",
             "answer": "答え", "context": "文脈", "approved": "yes"}
    criteria = {"closed_book": "yes", "language_specific": "y", "self_contained": "1"}  # on the source row only
    rows = [[{**cells, "lang": "ja", **criteria}.get(column, "") for column in SHEET_COLUMNS],
            [{**cells, "lang": "en"}.get(column, "") for column in SHEET_COLUMNS]]
    return _csv(list(SHEET_COLUMNS), rows)


def _score_sheet() -> bytes:
    scores = [column for column, _ in score_columns()]
    header = [*MATERIAL, *scores, "notes"]
    rows = [[f"q{n}", lang, *(f"{column} text" for column in MATERIAL[2:]), *(str(n % 3) for _ in scores), ""]
            for n, lang in ((1, "en"), (2, "ja"), (3, "en"))]
    return _csv(header, rows)


def _read_review(path: Path) -> tuple[Any, str]:
    """The import's summary and the released set it wrote."""
    out = path.with_name("released.jsonl")
    return import_sheet(path, out), out.read_text(encoding="utf-8")


def _read_prompts(path: Path) -> Any:
    return PromptTable.load(path.parent)


def _packaged(package: str, *names: str) -> Callable[[], bytes]:
    return lambda: resources.files(package).joinpath(*names).read_bytes()


def _set(**values: Any) -> Callable[[dict], dict]:
    return lambda record: record | values


def _answer_past_options(field_name: str) -> Callable[[dict], dict]:
    return lambda record: record | {field_name: len(record["options"])}


def _price_below_zero(table: dict) -> dict:
    return table | {next(iter(table)): {"prompt": -1, "completion": 0}}


def _unknown_placeholder(table: dict) -> dict:
    task = next(iter(table["tasks"]))
    return table | {"tasks": table["tasks"] | {task: table["tasks"][task] + " $no_such_placeholder"}}


REFUSES_ALL = {"unknown-key": REFUSED, "repeated-record": REFUSED, "rule-violation": REFUSED}
"""A reader of records validated whole: an unknown key, a repeated id and a broken rule are each refused."""
IGNORES_UNKNOWN = {"unknown-key": READ_EQUAL}
"""A reader that takes the fields it knows from each record (released formats carry fields of their own)."""

READERS: tuple[Reader, ...] = (
    Reader("items-jsonl", "items.jsonl", "jsonl", lambda: _lines(*ITEMS), load_item_set, REFUSES_ALL,
           _answer_past_options("answer")),
    Reader("items-qa-jsonl", "qa.jsonl", "jsonl", lambda: _lines(*QA, QA[0] | {"id": "e2"}), load_item_set,
           REFUSES_ALL, _set(lang="english")),
    Reader("items-parquet", "items.parquet", "parquet", _parquet, load_item_set),
    Reader("items-adaxeval", "adaxeval.jsonl", "jsonl", lambda: _lines_head(
        SHARED_DATA / "adaxeval-paper-examples.jsonl", 4,
        _lines({"id": 1, "question": "A [BLANK] b.", "options": ["x", "y"], "answer_idx": 0})), load_item_set,
        IGNORES_UNKNOWN | {"repeated-record": CHECKED, "rule-violation": DROPPED}, _answer_past_options("answer_idx"),
        per_record=(1, 2)),
    Reader("items-adaxeval-release", "release.jsonl", "jsonl", lambda: _lines(
        {"id": 1, "question": "Water is [BLANK].", "options": ["wet", "dry"], "answer_idx": 0,
         "metadata": {"docid": "d1", "correct_answer": "wet"}},
        {"id": 1, "question": "What is water?", "options": ["wet", "dry"], "answer_idx": 0}), load_item_set,
        IGNORES_UNKNOWN | {"repeated-record": DROPPED, "rule-violation": DROPPED}, _answer_past_options("answer_idx")),
    Reader("items-pitfalls", "Japanese.json", "json", lambda: _json_head(RELEASE / "Japanese.json", 4, [PAIR]),
           load_item_set, IGNORES_UNKNOWN | {"repeated-record": CHECKED, "rule-violation": DROPPED},
           _set(answer="not among the choices"), per_record=(1, 2)),
    Reader("items-eclektic", "eclektic.jsonl", "jsonl", lambda: _lines(ECLEKTIC, ECLEKTIC | {"q_id": 7}),
           load_item_set, IGNORES_UNKNOWN | {"repeated-record": DROPPED, "rule-violation": DROPPED}, _set(en_a=""),
           per_record=(1, 2 * len(LANGUAGES))),
    Reader("eclektic-set", "main.jsonl", "jsonl", lambda: _lines(ECLEKTIC, ECLEKTIC | {"q_id": "e2"}),
           lambda path: read_eclektic(path, required="all"),
           IGNORES_UNKNOWN | {"repeated-record": DROPPED, "rule-violation": DROPPED}, _set(en_a=""),
           per_record=(1, 2 * len(LANGUAGES))),
    Reader("eclektic-judgements", "judgements.jsonl", "jsonl", lambda: _lines(
        {"q_id": "e1", "source_lang": "ja", "target_lang": "ja", "correct": True},
        {"q_id": "e1", "source_lang": "ja", "target_lang": "en", "correct": None, "sample": 1}), read_judgement_file,
        IGNORES_UNKNOWN | {"repeated-record": REFUSED, "rule-violation": REFUSED}, _set(target_lang="english"),
        holds=holds.judgements),
    Reader("corpus", "corpus.jsonl", "jsonl", lambda: _lines(
        {"id": "d1", "lang": "en", "text": "Water is wet.", "metadata": {"pair_id": "p1", "keywords": ["w"]}},
        {"id": "d1-ja", "lang": "ja", "text": "水は濡れている。", "metadata": {"pair_id": "p1"}}), read_corpus,
        REFUSES_ALL, _set(lang="english")),
    Reader("pairing", "interlingual.jsonl", "jsonl", lambda: _lines(
        {"item_id": "q1", "lang": "en", "doc_id": "d1", "pair_id": "p1", "partner_lang": "ja",
         "partner_doc_id": "d1-ja", "support": 2},
        {"item_id": "q2", "lang": "ja", "doc_id": "d1-ja", "pair_id": "p1", "partner_lang": "en",
         "partner_doc_id": "d1", "support": None}), read_pairing,
        REFUSES_ALL, lambda record: record | {"partner_lang": record["lang"]}),
    Reader("sequence-variants", "variants.jsonl", "jsonl", lambda: _lines(
        VARIANT, VARIANT | {"id": "s1:mask-8", "method": "mask", "level": "token", "x": 8, "token_ids": [5, 6],
                            "edit_distance": 1},
        VARIANT | {"id": "s1:partial-2", "method": "partial", "level": "sentence", "a": 2}), read_sequences,
        REFUSES_ALL, _set(x=101), holds=holds.sequences),
    Reader("pitfalls-pairs", "Korean.json", "json", lambda: _json_head(RELEASE / "Korean.json", 4, [PAIR]),
           read_pair_file, IGNORES_UNKNOWN | {"repeated-record": CHECKED, "rule-violation": DROPPED},
           _set(transanswer="not among the choices")),
    Reader("pitfalls-sources", "mmlu.json", "json",
           lambda: _json_head(RELEASE / "source" / "mmlu.json", 4, [SOURCE]), read_source_file,
           IGNORES_UNKNOWN | {"repeated-record": CHECKED, "rule-violation": DROPPED},
           _set(answer="not among the choices")),
    Reader("pitfalls-categories", "candidates.jsonl", "jsonl", lambda: _lines(CANDIDATE, CANDIDATE | {"id": "p2"}),
           read_category_pairs, {"unknown-key": REFUSED, "repeated-record": CHECKED, "rule-violation": REFUSED},
           lambda record: record | {"english": record["english"] | {"answer": 99}}),
    Reader("pitfalls-sources-json", "sources.json", "json", lambda: json.dumps(SAMPLE).encode(), read_source_sample,
           {"unknown-key": REFUSED}),
    Reader("eclektic-review-sheet", "review.csv", "csv", _review_sheet, _read_review, {"rule-violation": REFUSED},
           _set(approved="maybe"), per_record=None, holds=holds.released_set),
    Reader("annotation-sheet", "sheet.csv", "csv", _score_sheet, score_sheet, {"rule-violation": REFUSED},
           lambda row: row | {score_columns()[0][0]: "9"}, holds=holds.scores),
    Reader("prices-yaml", "prices.yaml", "yaml", lambda: b"gpt-x: {prompt: 2.0, completion: 8}\nlocal: {prompt: 0, "
           b"completion: 0}\n", PriceTable.load, {"unknown-key": REFUSED, "rule-violation": REFUSED},
           _price_below_zero, per_record=None, holds=holds.prices),
    Reader("prices-json", "prices.json", "json", lambda: b'{"gpt-x": {"prompt": 2.0, "completion": 8}}',
           PriceTable.load, {"unknown-key": REFUSED, "rule-violation": REFUSED}, _price_below_zero, per_record=None,
           holds=holds.prices),
    Reader("prompt-table", "en.yaml", "yaml", _packaged("crossknow.adaxeval", "prompts", "en.yaml"), _read_prompts,
           IGNORES_UNKNOWN | {"rule-violation": REFUSED}, _unknown_placeholder, per_record=None, holds=holds.prompts),
    Reader("instruction-templates", "templates.yaml", "yaml", lambda: (
        "summarisation:\n  en: ['Summarise: {text}', 'In short: {text}']\n  ja: ['要約: {text}']\n"
        "qa:\n  en: ['{question}']\n").encode(), TemplateTable.load,
        {"unknown-key": CHECKED, "rule-violation": REFUSED}, lambda table: table | {"qa": {"en": ["{"]}},
        per_record=None, holds=holds.templates),
    Reader("synonyms", "synonyms.tsv", "tsv", lambda: (
        "lemma_lang\tlemma\tsynonym_lang\tsynonym\nja\t水\tja\tみず\nja\t水\ten\twater\n").encode(), load_synonyms,
        {"repeated-record": CHECKED, "rule-violation": REFUSED}, _set(lemma_lang="english"), per_record=None,
        holds=holds.synonyms),
)
"""Every reader entry point the suite fuzzes."""
