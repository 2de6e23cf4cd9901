"""Export multiple-choice items as an lm-evaluation-harness (v0.4) task (docs/adaxeval.md).

Every item is written as lm-eval sees it (`crossknow.data.lm_eval_prompt`). lm-eval's target_delimiter is a setting
of the task, so items are grouped by delimiter: one data file and task per delimiter, and a group over them that
aggregates acc and acc_norm weighted by size, for
`lm_eval --model hf --model_args pretrained=... --include_path OUT_DIR --tasks NAME`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from crossknow.data.lm_eval_prompt import lm_eval_prompt
from crossknow.data.schemas import MCItem
from crossknow.store.atomic import atomic_write

_TASK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_CHAR_NAMES = {" ": "space", "\n": "newline", "\t": "tab", "\u3000": "ideographic_space"}
_METRICS = ("acc", "acc_norm")


@dataclass(frozen=True)
class LmEvalTask:
    """One exported lm-eval task: the items that share a target delimiter."""

    name: str
    """The task name, f"{group}_{delimiter name}" (e.g. 'mytask_space', 'mytask_nodelim')."""
    delimiter: str
    """lm-eval's target_delimiter for every document of the task."""
    yaml_path: Path
    """The task's YAML file."""
    data_path: Path
    """The task's documents, JSON lines with id, context, choices, answer."""
    size: int
    """Number of documents."""


@dataclass(frozen=True)
class LmEvalExport:
    """The files of an exported group of lm-eval tasks."""

    group: str
    """The group name to pass to `lm_eval --tasks`."""
    group_yaml: Path
    """The group's YAML file, listing the tasks."""
    tasks: list[LmEvalTask]
    """The tasks, in the order their delimiter first occurs among the items."""


def delimiter_name(delimiter: str) -> str:
    """A name for a target delimiter usable in a task name: '' -> 'nodelim', ' ' -> 'space',
    '\\n ' -> 'newline_space', other characters by code point ('u00a0')."""
    if not delimiter:
        return "nodelim"
    return "_".join(_CHAR_NAMES.get(char, f"u{ord(char):04x}") for char in delimiter)


def lm_eval_doc(item: MCItem) -> tuple[str, dict[str, Any]]:
    """The item's target delimiter and its lm-eval document {id, context, choices, answer}."""
    prompt = lm_eval_prompt(item)
    return prompt.delimiter, {
        "id": item.id,
        "context": prompt.context,
        "choices": prompt.choices,
        "answer": item.answer,
    }


def task_config(name: str, data_path: Path, delimiter: str) -> dict[str, Any]:
    """The YAML configuration of one multiple-choice task over a local JSON-lines file."""
    return {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data_path.resolve())}},
        "test_split": "test",
        "output_type": "multiple_choice",
        # Column names, not Jinja templates ("{{context}}"): lm-eval turns a rendered template
        # that is all digits into an int, which breaks an item whose context is e.g. "1990".
        "doc_to_text": "context",
        "doc_to_choice": "choices",
        "doc_to_target": "answer",
        "target_delimiter": delimiter,
        "metric_list": [
            {"metric": metric, "aggregation": "mean", "higher_is_better": True}
            for metric in _METRICS
        ],
        "metadata": {"version": 1.0},
    }


def group_config(group: str, task_names: list[str]) -> dict[str, Any]:
    """The YAML configuration of a group of tasks; acc and acc_norm are averaged over all docs."""
    return {
        "group": group,
        "task": task_names,
        "aggregate_metric_list": [
            {"metric": metric, "aggregation": "mean", "weight_by_size": True} for metric in _METRICS
        ],
        "metadata": {"version": 1.0},
    }


def export_lm_eval(items: Sequence[MCItem], out_dir: str | Path, group: str) -> LmEvalExport:
    """Write `items` as an lm-eval group `group` in `out_dir`: per delimiter a data file
    f"{task}.jsonl" and a task file f"{task}.yaml", then the group file f"{group}.yaml".

    The data files are referenced by absolute path, so the directory can be passed to lm-eval as
    --include_path from anywhere. Raises ValueError for no items or a group name lm-eval cannot
    use, TypeError for an item that is not an MCItem.
    """
    if not _TASK_NAME.match(group):
        raise ValueError(
            f"group name {group!r} must start with a letter and hold only letters, digits, _ . -"
        )
    if not items:
        raise ValueError("no items to export")
    docs_by_delimiter: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        if not isinstance(item, MCItem):
            raise TypeError(
                f"only multiple-choice items can be exported to lm-eval, got {type(item).__name__}"
            )
        delimiter, doc = lm_eval_doc(item)
        docs_by_delimiter.setdefault(delimiter, []).append(doc)
    out = Path(out_dir).resolve()
    tasks = []
    for delimiter, docs in docs_by_delimiter.items():
        name = f"{group}_{delimiter_name(delimiter)}"
        data_path, yaml_path = out / f"{name}.jsonl", out / f"{name}.yaml"
        lines = [json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs]
        atomic_write(data_path, lambda handle, lines=lines: handle.writelines(lines))
        _write_yaml(yaml_path, task_config(name, data_path, delimiter))
        tasks.append(LmEvalTask(name, delimiter, yaml_path, data_path, len(docs)))
    group_yaml = out / f"{group}.yaml"
    _write_yaml(group_yaml, group_config(group, [task.name for task in tasks]))
    return LmEvalExport(group, group_yaml, tasks)


def _write_yaml(path: Path, config: dict[str, Any]) -> None:
    text = yaml.safe_dump(config, allow_unicode=True, sort_keys=False, width=1_000_000)
    atomic_write(path, lambda handle: handle.write(text))
