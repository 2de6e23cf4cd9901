"""Fixtures of the family tests: each family's tiny random model, and its float32 `evaluate` run of the AdaXEval
examples, built once per session."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED_DATA
from tests.families.vocab import FAMILIES

EXAMPLES = SHARED_DATA / "adaxeval-paper-examples.jsonl"
"""English and Japanese cloze and question items in the AdaXEval release's format."""


@dataclass(frozen=True)
class FamilyRun:
    """One `crossknow.evaluate` run on a family's model: its scores and the ids of the items reported unscorable."""

    family: str
    model_dir: Path
    frame: Any
    unscorable: set[str]

    @property
    def rows(self) -> dict[tuple[str, int], Any]:
        """The score rows by (item id, option index)."""
        return {(row.item_id, row.option_index): row for row in self.frame.itertuples()}


def evaluate_family(family: str, model_dir: Path, data: Any, out: Path, **options: Any) -> FamilyRun:
    """`crossknow.evaluate` of `data` (a file or item records) on the family's model on the CPU, its run kept in
    `out`."""
    import crossknow

    frame = crossknow.evaluate(f"hf:{model_dir}", data, device="cpu", out=out, **options)
    invalid = [json.loads(line) for line in (out / "invalid.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(record["reason"].startswith("unscorable") for record in invalid), invalid
    return FamilyRun(family, model_dir, frame, {record["item_id"] for record in invalid})


@pytest.fixture(scope="session", params=sorted(FAMILIES))
def family_model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """(family, directory of its tiny random model on its real tokenizer), for every family."""
    from tests.families.tiny_models import write_family_model

    family = request.param
    return family, write_family_model(family, tmp_path_factory.mktemp(f"family-{family}") / "model")


@pytest.fixture(scope="session")
def family_examples(family_model, tmp_path_factory: pytest.TempPathFactory) -> FamilyRun:
    """The family's float32 run of the AdaXEval examples under crossknow's rule (adaxeval)."""
    family, model_dir = family_model
    return evaluate_family(family, model_dir, EXAMPLES, tmp_path_factory.mktemp(f"examples-{family}"))
