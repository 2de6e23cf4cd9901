"""Every command that reads a file, with a small valid main input for it, and a gate that keeps models away.

`COMMANDS` names each command line with `{file}` where its main input goes (written from `Command.text`) and
`{dir}` for the test's directory. `close_models` makes every way to a model (the registry's local weights, a
pipeline's scoring-path check) run a function of the test instead, so that a test sees where a command would
have loaded one: after its inputs were read.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from crossknow.adaxeval.annotate import MATERIAL, score_columns
from crossknow.eclektic.review_sheet import SHEET_COLUMNS


@dataclass(frozen=True)
class Command:
    """One command line that reads a file."""

    argv: tuple[str, ...]
    """The arguments, `{file}` for the main input and `{dir}` for the test's directory."""
    file_name: str
    text: str
    """A valid main input."""
    loads_model: bool = True
    """Whether the command goes on to load a model once its inputs are read (else it finishes without one)."""

    def args(self, directory: Path) -> list[str]:
        """The arguments with the test's paths filled in."""
        return [arg.format(file=directory / self.file_name, dir=directory) for arg in self.argv]


def _lines(*records: dict) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def _csv(header: list[str], rows: list[dict[str, str]]) -> str:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerows([header, *([row.get(column, "") for column in header] for row in rows)])
    return text.getvalue()


ITEMS = _lines({"id": "q1", "lang": "en", "kind": "question", "prompt": "Water is?", "options": ["wet", "dry"],
                "answer": 0})
CORPUS = _lines({"id": "d1-en", "lang": "en", "text": "Tokyo is the capital of Japan. Mount Fuji is its highest "
                 "mountain.", "metadata": {"pair_id": "d1"}},
                {"id": "d1-ja", "lang": "ja", "text": "東京は日本の首都である。富士山は日本で最も高い山である。",
                 "metadata": {"pair_id": "d1"}})
ECLEKTIC = _lines({"q_id": "e1", "original_lang": "ja", "title": "T", "url": "https://x", "content": "C",
                   "question": "Q", "answer": "A", "ja_q": "質問", "ja_a": "答え", "ja_c": "文脈", "en_q": "Q",
                   "en_a": "A", "en_c": "C"})
JUDGEMENTS = _lines({"q_id": "e1", "source_lang": "ja", "target_lang": "ja", "correct": True},
                    {"q_id": "e1", "source_lang": "ja", "target_lang": "en", "correct": False})
LONG = " ".join(f"Sentence number {i} of the article tells one more fact." for i in range(1, 13))
ARTICLES = _lines({"id": "a1", "lang": "en", "title": "Title", "text": LONG})
PAIR = {"question": "Q? hint", "choices": ["a", "b", "c", "d"], "answer": "b", "transquestion": "問？ ヒント",
        "transchoices": ["あ", "い", "う", "え"], "transanswer": "い", "oriquestion": "Q?", "prequestion": "",
        "sufquestion": " hint", "transpre": "", "transori": "問？", "transsuf": " ヒント"}
PAIRS = json.dumps([PAIR, PAIR | {"question": "R? hint", "oriquestion": "R?"}], ensure_ascii=False)
SOURCES = json.dumps([{"question": "Q?", "choices": ["a", "b", "c", "d"], "answer": "c", "source": "mmlu"}])
SIDES = [{"id": f"French:0:{lang}", "lang": lang, "kind": "question", "prompt": prompt, "options": ["a", "b"],
          "answer": 0, "pair_id": "French:0", "metadata": {"seed_lang": "fr"}}
         for lang, prompt in (("en", "Q?"), ("fr", "Q ?"))]
ANNOTATION_SHEET = _csv([*MATERIAL, *(column for column, _ in score_columns()), "notes"],
                        [dict.fromkeys((column for column, _ in score_columns()), "1") | {"item_id": "q1", "lang": lang}
                         for lang in ("en", "ja")])
REVIEW = {"q_id": "e1", "original_lang": "ja", "title": "T", "url": "https://x", "question": "質問", "answer": "答え",
          "context": "文脈", "closed_book": "yes", "language_specific": "y", "self_contained": "1", "approved": "yes"}
REVIEW_SHEET = _csv(list(SHEET_COLUMNS), [REVIEW | {"lang": lang} for lang in ("ja", "en")])

COMMANDS: dict[str, Command] = {
    "evaluate": Command(("evaluate", "--data", "{file}", "--out", "{dir}/run"), "items.jsonl", ITEMS),
    "trace": Command(("trace", "--checkpoints", "default", "--data", "{file}", "--train-lang", "en", "--out",
                      "{dir}/run"), "items.jsonl", ITEMS),
    "trace-sequences": Command(("trace-sequences", "--checkpoints", "default", "--variants", "{file}", "--out",
                                "{dir}/run"), "corpus.jsonl", CORPUS),
    "generate": Command(("generate", "--corpus", "{file}", "--detector", "default", "--writer", "default", "--out",
                         "{dir}/run"), "corpus.jsonl", CORPUS),
    "perturb": Command(("perturb", "--corpus", "{file}", "--lang", "en", "--n", "1", "--methods", "mask", "--out",
                        "{dir}/run"), "corpus.jsonl", CORPUS),
    "train": Command(("train", "--corpus", "{file}", "--langs", "en", "--out", "{dir}/run"), "corpus.jsonl", CORPUS),
    "annotate score": Command(("annotate", "score", "--sheet", "{file}"), "sheet.csv", ANNOTATION_SHEET,
                              loads_model=False),
    **{f"eclektic {step}": Command(("eclektic", step, "--data", "{file}", "--model", "default", "--out", "{dir}/run"),
                                   "eclektic.jsonl", ECLEKTIC) for step in ("answer", "judge", "run")},
    "eclektic score": Command(("eclektic", "score", "--judgements", "{file}", "--out", "{dir}/run"),
                              "judgements.jsonl", JUDGEMENTS, loads_model=False),
    "eclektic build": Command(("eclektic", "build", "--documents", "{file}", "--model", "default", "--languages",
                               "en,ja", "--out", "{dir}/run"), "articles.jsonl", ARTICLES),
    "eclektic import-review": Command(("eclektic", "import-review", "--sheet", "{file}", "--out", "{dir}/set.jsonl"),
                                      "review.csv", REVIEW_SHEET, loads_model=False),
    "pitfalls eval": Command(("pitfalls", "eval", "--pairs", "{file}", "--model", "default", "--out", "{dir}/run"),
                             "Japanese.json", PAIRS),
    "pitfalls probe": Command(("pitfalls", "probe", "--recipe", "np", "--sources", "{file}", "--n", "1", "--proxy",
                               "default", "--simulator", "default", "--out", "{dir}/run"), "mmlu.json", SOURCES),
    "pitfalls expand": Command(("pitfalls", "expand", "--seed-file", "{file}", "--seed-file", "{dir}/Korean.json",
                                "--proxy", "default", "--out", "{dir}/run"), "Japanese.json", PAIRS),
    "pitfalls affinity": Command(("pitfalls", "affinity", "--pairs", "{file}", "--model", "default", "--out",
                                  "{dir}/run"), "items.jsonl", _lines(*SIDES)),
    "pitfalls categorize": Command(("pitfalls", "categorize", "--pairs", "{file}", "--classifier", "default", "--out",
                                    "{dir}/run"), "Japanese.json", PAIRS),
    "pitfalls finetune": Command(("pitfalls", "finetune", "--train-pairs", "{file}", "--out", "{dir}/run"),
                                 "Japanese.json", PAIRS),
}
"""Every command that takes an input file, by name."""
SECOND_FILES = {"Korean.json": PAIRS}
"""Files some command lines name besides their main input (written valid, once per test)."""


def close_models(monkeypatch: pytest.MonkeyPatch, reached: Callable[..., object]) -> None:
    """Make `reached` run wherever a command would load a model or check its scoring path (which imports torch):
    the registry's local weights (every local scorer, generator and tokenizer spec), the GGUF file a llama.cpp
    generator decodes, and the trace and train pipelines' scoring-path check. perturb's tokenizers, which one
    process loads once, are forgotten first, so that an earlier test's cannot stand in for a load."""
    from crossknow.dynamics import trace
    from crossknow.models import specs
    from crossknow.models.backends import local
    from crossknow.perturb.tokenizers import load_spec_tokenizer
    from crossknow.training import trainer

    load_spec_tokenizer.cache_clear()
    monkeypatch.setattr(specs, "resolve_local", reached)
    monkeypatch.setattr(local, "gguf_of", reached)
    monkeypatch.setattr(trace, "ensure_scoring_path", reached)
    monkeypatch.setattr(trainer, "ensure_scoring_path", reached)
