"""`crossknow trace`: score every checkpoint of a sweep on evaluation sets labelled by condition.

Conditions come from the training language and, for sets `crossknow generate` wrote, from its pairing: an item of
another language is interlingual when its pair's other document is in the training language (crossknow's reading
of section 3.1.2; `interlingual-cloze` is crossknow's addition). Sets without a pairing are labelled by language
alone. The run directory's files and the resume rule: docs/adaxeval.md.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from crossknow.data.formats import load_item_set
from crossknow.data.hub_data import data_file
from crossknow.data.jsonl import write_invalid
from crossknow.data.pairing import InterlingualLink, PairingKey, find_pairing, read_pairing
from crossknow.data.schemas import MCItem
from crossknow.dynamics.checkpoint_sweep import sweep_checkpoints
from crossknow.dynamics.checkpoints import discover_checkpoints
from crossknow.dynamics.trace_config import TraceConfig
from crossknow.errors import CrossknowError
from crossknow.models.scoring_check import ensure_scoring_path
from crossknow.scoring.metrics import accuracy_table, item_predictions
from crossknow.scoring.stage import ScoringStage, ScoringTask, task_key
from crossknow.store.atomic import atomic_write, atomic_write_json
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir

CONDITIONS = ("memorisation", "intralingual", "interlingual", "interlingual-cloze")
"""Condition labels: cloze and question items in the training language, question and cloze items in another."""
LINK_FIELDS = (
    pa.field("partner_lang", pa.string(), metadata={"doc": "Language of the other document of the item's pair "
                                                           "(interlingual.jsonl); null for a set without a pairing."}),
    pa.field("partner_doc_id", pa.string(), metadata={"doc": "The other document of the item's pair; null for a set "
                                                             "without a pairing."}),
)
"""Columns trace.parquet adds to the scores table: the item's link to its pair's other language."""


@dataclass(frozen=True)
class EvalSet:
    """One evaluation set with its items' conditions and interlingual links."""

    name: str
    path: Path
    items: list[MCItem]
    """The set's items; `pair_id` set from the pairing where an item is linked."""
    conditions: list[str]
    links: list[InterlingualLink | None]
    """Each item's line of the pairing; None for every item of a set without one."""
    pairing: Path | None = None
    """The interlingual.jsonl the links come from."""


def condition_of(item: MCItem, train_lang: str) -> str:
    """memorisation (cloze, training language), intralingual (question, training language),
    interlingual (question, another language) or interlingual-cloze (cloze, another language)."""
    if item.lang == train_lang:
        return "memorisation" if item.kind == "cloze" else "intralingual"
    return "interlingual" if item.kind == "question" else "interlingual-cloze"


def linked_condition(item: MCItem, train_lang: str, link: InterlingualLink | None, where: str) -> str:
    """`condition_of` for an item of a set with a pairing: an item of another language must be linked to a
    document in the training language, or its interlingual condition is unknown (an error naming `where`)."""
    if item.lang != train_lang:
        if link is None:
            raise CrossknowError(
                f"{where}: item {item.id!r} ({item.lang}) has no line in the pairing, so nothing says which "
                "training-language document it pairs with; pass the pairing that covers it, or label the file "
                "with CONDITION=FILE"
            )
        if link.partner_lang != train_lang:
            raise CrossknowError(
                f"{where}: item {item.id!r} ({item.lang}) pairs with a document in {link.partner_lang!r}, not in the "
                f"training language {train_lang!r}; it tests no transfer from the training data (check --train-lang)"
            )
    return condition_of(item, train_lang)


def pairing_key(item: MCItem) -> PairingKey:
    """How interlingual.jsonl names an item: its language and the id its set file gives it (the AdaXEval
    reader keeps that id in metadata['source_id'])."""
    return item.lang, str(item.metadata.get("source_id", item.id))


def load_sets(data: list[str], train_lang: str, pairing: str | None = None) -> list[EvalSet]:
    """Read every `[CONDITION=]FILE` (set names: `set_names`). `pairing` is an
    interlingual.jsonl for every set; without it each set uses its own (`find_pairing`), where there is one."""
    pairings: dict[Path, dict[PairingKey, InterlingualLink]] = {}
    sets = []
    for entry in data:
        label, sep, file = entry.partition("=")
        if not sep or Path(entry).exists():
            label, file = "", entry
        path = data_file(file)
        if not path.is_file():
            raise CrossknowError(f"--data {entry}: file not found: {file}")
        items = [item for item in load_item_set(path).items if isinstance(item, MCItem)]
        if not items:
            raise CrossknowError(f"--data {entry}: no multiple-choice items in {file}")
        pairing_file = data_file(pairing) if pairing else find_pairing(path)
        if pairing_file is None:
            links: list[InterlingualLink | None] = [None] * len(items)
            conditions = [label or condition_of(item, train_lang) for item in items]
        else:
            if pairing_file not in pairings:
                pairings[pairing_file] = read_pairing(pairing_file)
            links = [pairings[pairing_file].get(pairing_key(item)) for item in items]
            items = [item.model_copy(update={"pair_id": link.pair_id}) if link else item
                     for item, link in zip(items, links, strict=True)]
            where = f"--data {entry} (pairing {pairing_file})"
            conditions = [label or linked_condition(item, train_lang, link, where)
                          for item, link in zip(items, links, strict=True)]
        sets.append(EvalSet(path.stem, path, items, conditions, links, pairing_file))
    return [dataclasses.replace(s, name=name) for s, name in zip(sets, set_names([s.path for s in sets]), strict=True)]


def set_names(paths: list[Path]) -> list[str]:
    """Each set's name: its file's stem, or DIRECTORY/STEM where files share a stem (`generate` writes
    en/memorization.jsonl and ja/memorization.jsonl); names that still collide are an error."""
    stems = Counter(path.stem for path in paths)
    names = [path.stem if stems[path.stem] == 1 else f"{path.parent.name}/{path.stem}" for path in paths]
    if len(set(names)) != len(names):
        raise CrossknowError(f"--data: two sets share a name ({names}); set names are the files' stems, with their "
                             "directory's name where stems repeat")
    return names


def run_trace(
    config: TraceConfig, out: Path, on_progress: Callable[[int, int, str], None] | None = None,
    reuse_frozen: bool = True,
) -> pa.Table:
    """Score every checkpoint on every set into run directory `out`; return the trace table.

    Local checkpoints of one architecture share one loaded model, and the decoder blocks no checkpoint
    changed run once per input (crossknow.models.sweep_scorers); `reuse_frozen=False` loads and runs
    every checkpoint whole (the same numbers, slower: for checking).

    `on_progress(items done, items total, checkpoint label)` is called after each committed shard.
    An item that some checkpoint could not score is left out of the trace at every checkpoint (the
    analyses compare the same items throughout) and listed in invalid.jsonl with the reason.
    Every input (checkpoints, sets, pairings) is read and checked before the scoring path is, and
    before any model loads.
    """
    out = Path(out)
    checkpoints = discover_checkpoints(config.checkpoints.specs)
    sets = load_sets(config.data, config.train_lang, config.pairing)
    ensure_scoring_path()
    with RunDir(out) as run:
        inputs = {str(s.path): file_sha256(s.path) for s in sets}
        inputs |= {str(s.pairing): file_sha256(s.pairing) for s in sets if s.pairing is not None}
        run.open(config.model_dump(), inputs, volatile=volatile_keys(type(config)), upgrade=type(config).recorded)
        stage = ScoringStage(run, config.rule, config.batch_size, config.boundary)
        tasks = [ScoringTask(item, s.name, condition)
                 for s in sets for item, condition in zip(s.items, s.conditions, strict=True)]
        options = config.checkpoints.options(batch_size=config.batch_size)
        sweep_checkpoints(out, checkpoints, tasks, task_key, stage.done_keys(), options, stage.run,
                          reuse_frozen=reuse_frozen, prune=config.prune, on_progress=on_progress)
        excluded = {(row["set"], row["item_id"]) for row in stage.read_unscorable()}
        table = stage.read()
        if excluded:
            keys = zip(table["set"].to_pylist(), table["item_id"].to_pylist(), strict=True)
            keep = [key not in excluded for key in keys]
            table = table.filter(pa.array(keep))
        table = _with_links(table, sets)
        table = table.sort_by([("step", "ascending"), ("set", "ascending"), ("item_id", "ascending"),
                               ("option_index", "ascending")])
        atomic_write(out / "trace.parquet", lambda handle: pq.write_table(table, handle), binary=True)
        write_invalid(out / "invalid.jsonl", stage.unscorable_records({s.name: str(s.path) for s in sets}))
        _write_accuracy(out / "accuracy.json", table)
        return table


def _with_links(table: pa.Table, sets: list[EvalSet]) -> pa.Table:
    """The scores table with LINK_FIELDS filled from each set's pairing."""
    links = {(s.name, item.id): link for s in sets for item, link in zip(s.items, s.links, strict=True) if link}
    found = [links.get(key) for key in zip(table["set"].to_pylist(), table["item_id"].to_pylist(), strict=True)]
    for field in LINK_FIELDS:
        values = [getattr(link, field.name) if link else None for link in found]
        table = table.append_column(field, pa.array(values, pa.string()))
    return table


def _write_accuracy(path: Path, table: pa.Table) -> None:
    """accuracy.json: per step, accuracy under every normalisation (lm-eval's acc is `sum`, acc_norm
    `per_char`), overall and per condition; the same computation as evaluate's metrics."""
    frame = table.to_pandas()
    result = {}
    for step, rows in frame.groupby("step", sort=True):
        accuracy, n_items = accuracy_table(item_predictions(rows), group_by=("condition",))
        result[str(step)] = {"accuracy": accuracy, "n_items": n_items}
    atomic_write_json(path, result)


def copy_training_record(sources: list[str], out: Path) -> None:
    """Copy the training loss log and config of the one `crossknow train` run among `sources` into `out`
    (train_log.parquet, train_config.yaml), so that the report shows both."""
    runs = [Path(s) for s in sources if (Path(s) / "train_log.parquet").is_file()]
    if len(runs) != 1:
        return
    for name, target in (("train_log.parquet", "train_log.parquet"), ("config.yaml", "train_config.yaml")):
        if (runs[0] / name).is_file():
            data = (runs[0] / name).read_bytes()
            atomic_write(Path(out) / target, lambda handle, data=data: handle.write(data), binary=True)
