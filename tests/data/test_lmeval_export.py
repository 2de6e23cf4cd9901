import json
from pathlib import Path

import pytest
import yaml

from crossknow.data.adaxeval import read_adaxeval
from crossknow.data.lm_eval_prompt import lm_eval_prompt
from crossknow.data.lmeval_export import delimiter_name, export_lm_eval
from crossknow.data.pitfalls import read_pitfalls
from crossknow.data.schemas import MCItem, QAItem

from ..conftest import SHARED_DATA as SHARED

needs_shared = pytest.mark.skipif(not SHARED.exists(), reason=f"{SHARED} is not present")

EDGE_ITEMS = [
    # A context of digits only: lm-eval would turn a rendered "{{context}}" template into an int.
    MCItem(
        id="digits",
        lang="en",
        kind="cloze",
        prompt="1990 [BLANK] ended.",
        options=["war", "year"],
        answer=1,
    ),
    # [BLANK] first: empty context and no delimiter.
    MCItem(
        id="start",
        lang="en",
        kind="cloze",
        prompt="[BLANK] is red.",
        options=["Blood", "Grass"],
        answer=0,
    ),
    # Newline before [BLANK]: its own task with target_delimiter "\n".
    MCItem(
        id="newline",
        lang="en",
        kind="cloze",
        prompt="Capital:\n[BLANK]",
        options=["Paris", "Rome"],
        answer=0,
    ),
    MCItem(
        id="quotes",
        lang="en",
        kind="question",
        prompt='Say "{{x}}"?',
        options=["'a'", '"b"', "{{c}}"],
        answer=2,
    ),
]


def test_delimiter_names():
    assert [delimiter_name(d) for d in ["", " ", "\n", "\n ", "\u3000", "\xa0"]] == [
        "nodelim",
        "space",
        "newline",
        "newline_space",
        "ideographic_space",
        "u00a0",
    ]


def test_task_files(tmp_path):
    export = export_lm_eval(EDGE_ITEMS, tmp_path / "out", "edge")
    assert [(t.name, t.delimiter, t.size) for t in export.tasks] == [
        ("edge_space", " ", 2),
        ("edge_nodelim", "", 1),
        ("edge_newline", "\n", 1),
    ]
    group = yaml.safe_load(export.group_yaml.read_text())
    assert group["group"] == "edge" and group["task"] == [
        "edge_space",
        "edge_nodelim",
        "edge_newline",
    ]
    config = yaml.safe_load(export.tasks[2].yaml_path.read_text())
    data_file = Path(config["dataset_kwargs"]["data_files"]["test"])
    assert data_file.is_absolute() and data_file == export.tasks[2].data_path
    assert config["dataset_path"] == "json" and config["test_split"] == "test"
    assert config["output_type"] == "multiple_choice" and config["target_delimiter"] == "\n"
    assert [(m["metric"], m["higher_is_better"]) for m in config["metric_list"]] == [
        ("acc", True),
        ("acc_norm", True),
    ]
    docs = [json.loads(line) for line in data_file.read_text().splitlines()]
    assert docs == [
        {"id": "newline", "context": "Capital:", "choices": ["Paris", "Rome"], "answer": 0}
    ]


def test_refuses_what_lm_eval_cannot_take(tmp_path):
    with pytest.raises(ValueError, match="no items"):
        export_lm_eval([], tmp_path, "t")
    with pytest.raises(ValueError, match="group name"):
        export_lm_eval(EDGE_ITEMS, tmp_path, "bad name")
    with pytest.raises(TypeError, match="QAItem"):
        export_lm_eval([QAItem(id="a", lang="en", question="q", answer="a")], tmp_path, "t")


def load_lm_eval_tasks(include_path: Path, group: str) -> dict:
    """The ConfigurableTasks lm-eval builds from our YAML, by task name (offline)."""
    tasks_module = pytest.importorskip("lm_eval.tasks")
    manager_class = tasks_module.TaskManager

    manager = manager_class(include_path=str(include_path), include_defaults=False)
    return manager.load([group])["tasks"]


@needs_shared
def test_lm_eval_builds_exactly_our_requests(tmp_path):
    items = (
        read_adaxeval(SHARED / "adaxeval-paper-examples.jsonl").items
        + read_pitfalls(SHARED / "cross-lingual-pitfalls" / "Japanese.json", limit=5).items
        + EDGE_ITEMS
    )
    export = export_lm_eval(items, tmp_path / "task", "crossknow_parity")
    tasks = load_lm_eval_tasks(tmp_path / "task", "crossknow_parity")
    assert sorted(tasks) == sorted(task.name for task in export.tasks)
    assert {task.delimiter for task in export.tasks} == {
        " ",
        "",
        "\n",
    }  # Japanese cloze items have no space
    by_id = {item.id: item for item in items}
    seen = 0
    for task in export.tasks:
        lm_task = tasks[task.name]
        lm_task.build_all_requests(limit=None, rank=0, world_size=1)
        for instance in lm_task.instances:
            item = by_id[instance.doc["id"]]
            prompt = lm_eval_prompt(item)
            choice = instance.idx
            assert instance.arguments == (prompt.context, prompt.delimiter + prompt.choices[choice])
            assert prompt.delimiter == task.delimiter
            assert lm_task.doc_to_target(instance.doc) == item.answer
            seen += 1
    assert seen == sum(len(item.options) for item in items)
