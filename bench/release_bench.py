"""Whole releases as users run them: items per second, total time, and memory as the items grow.

    .venv/bin/python bench/release_bench.py --work DIR [--pitfalls DIR] [--adaxeval FILE ...]
        [--dtype float32|bfloat16] [--limit N] [--kill-after N] [--interval S] [--json OUT]

One process per file, the largest first, on the embedded model on the CPU: `crossknow pitfalls eval
--answering loss` for every `<Language>.json` of the Cross-Lingual Pitfalls release in `--pitfalls` (16
files, 6,713 pairs, each pair two items), and `crossknow evaluate` for every AdaXEval release file given
with `--adaxeval` (the authors' four files; they are not in ../shared/data). Every `--interval` seconds the
bench reads the process's resident memory (/proc, so Linux only) and the units its run directory has
committed (pairs or items, from the stage manifest), so the memory is known at 1,000 items and at the end
of every file.

Nothing is lost when the bench or a command is interrupted: a file's measurements are saved under
DIR/measures/ after each of its processes, and a rerun of the same command skips finished files and resumes
the unfinished one (its processes' times add up). With --kill-after N, the largest file's first process is
killed with SIGKILL once its run has committed N units, and the same command is run again. Every file's run
directory is then checked: each usable unit committed once, none twice, none missing (the count of usable
units comes from crossknow's reader of the file, not from the run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from pipeline_bench import OFFLINE, SHARED, tool
from run_outputs import crossknow_rescored
from timed_process import run_timed

ITEMS_AT = 1000
"""The item count at which the memory is read for comparison with the end of the file."""
KINDS = {
    # kind: (stages whose manifests together hold each decided unit once, items per unit); `evaluate` commits an
    # item the model cannot score (e.g. an option that tokenises to nothing) to `unscorable`, not to `scores`
    "pitfalls": (("answers",), 2),
    "adaxeval": (("scores", "unscorable"), 1),
}


def usable_units(kind: str, path: Path, limit: int | None) -> int:
    """Pairs (Pitfalls) or items (AdaXEval) of `path` that the command's own reader finds scorable, with the
    command's `--limit`."""
    if kind == "pitfalls":
        from crossknow.pitfalls.flaws import read_pair_file

        return len(read_pair_file(path, limit=limit).pairs)
    from crossknow.data.adaxeval import read_adaxeval

    return len(read_adaxeval(path, limit=limit).items)


def committed_keys(run_dir: Path, kind: str) -> list[str]:
    """The unit keys of every shard committed so far (repeated keys kept, to be caught), read by crossknow's
    own manifest reader (which also reads a manifest torn by the SIGKILL); none before the first commit."""
    from crossknow.store.manifest import Manifest

    return [key for stage in KINDS[kind][0] for shard in Manifest(run_dir / "stages" / stage / "manifest.json").shards()
            for key in shard["keys"]]


def command(kind: str, path: Path, out: Path, dtype: str, limit: int | None) -> list[str]:
    """The command line a user runs on one release file."""
    limit_args = ["--limit", str(limit)] if limit else []
    if kind == "pitfalls":
        return [tool("crossknow"), "pitfalls", "eval", "--pairs", str(path), "--model", "default",
                "--answering", "loss", "--out", str(out), "--device", "cpu", "--dtype", dtype, *limit_args]
    return [tool("crossknow"), "evaluate", "--model", "default", "--data", str(path), "--out", str(out),
            "--device", "cpu", "--dtype", dtype, *limit_args]


def rss_mb(pid: int) -> float:
    """Resident memory of a running process, MiB (0 once it has gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return 0.0
    return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0.0)


def run_process(argv: list[str], label: str, work: Path, out: Path, kind: str, kill_after: int | None,
                interval: float) -> dict:
    """One process of a file's command, its memory and committed items read every `interval` seconds; killed
    (SIGKILL) once it has committed `kill_after` units, when given."""
    per_unit, before, samples = KINDS[kind][1], len(committed_keys(out, kind)), []

    def watch(pid: int, seconds: float) -> bool:
        units, resident = len(committed_keys(out, kind)), rss_mb(pid)
        if resident:  # 0: the process has just exited
            samples.append({"seconds": round(seconds, 1), "items": units * per_unit, "rss_mb": round(resident, 1)})
        return kill_after is not None and units - before >= kill_after

    run = run_timed(label, argv, work / "logs" / f"{label}.log", OFFLINE, watch=watch, interval=interval)
    return {**asdict(run), "log": str(run.log), "items_before": before * per_unit,
            "items_after": len(committed_keys(out, kind)) * per_unit, "samples": samples}


def measure_file(kind: str, path: Path, usable: int, work: Path, dtype: str, limit: int | None,
                 kill_after: int | None, interval: float) -> dict:
    """Run (or resume) one file, of `usable` units by the command's own reader, to its end and return its
    measurements; saved after every process."""
    name = f"{kind}-{path.stem}-{dtype}" + (f"-limit{limit}" if limit else "")
    record_path, out = work / "measures" / f"{name}.json", work / "runs" / name
    record = {"name": name, "kind": kind, "file": str(path), "dtype": dtype, "processes": []}
    if record_path.exists():
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if "nothing_lost" in record:  # finished and checked
            return record
    while not record.get("finished"):
        process = run_process(command(kind, path, out, dtype, limit), f"{name}-{len(record['processes'])}", work,
                              out, kind, None if record["processes"] else kill_after, interval)
        record["processes"].append(process)
        record["finished"] = not process["killed"]
        record_path.parent.mkdir(parents=True, exist_ok=True)
        record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return summarise(record, committed_keys(out, kind), usable, KINDS[kind][1], record_path, out)


def summarise(record: dict, keys: list[str], usable: int, per_unit: int, record_path: Path, out: Path) -> dict:
    """Add the file's figures and the check of its run directory `out` to `record`, and save it; for an
    `evaluate` run in bfloat16, also the items its metrics.json says were re-scored in float32."""
    processes = record["processes"]
    seconds = sum(p["seconds"] for p in processes)
    measured = sum(p["items_after"] - p["items_before"] for p in processes)
    early = [s["rss_mb"] for s in processes[0]["samples"] if s["items"] <= ITEMS_AT]
    record.update({
        "usable_units": usable, "committed_units": len(keys), "repeated_units": len(keys) - len(set(keys)),
        "nothing_lost": len(set(keys)) == usable and len(keys) == usable,
        "items": usable * per_unit, "seconds": seconds, "items_measured": measured,
        "items_per_second": measured / seconds if seconds else float("nan"),
        "peak_rss_mb": max(p["peak_rss_mb"] for p in processes),
        f"rss_mb_up_to_{ITEMS_AT}_items": max(early) if processes[0]["items_after"] > ITEMS_AT and early else None,
        "killed_and_resumed": any(p["killed"] for p in processes),
        "items_rescored_float32": crossknow_rescored(out),
    })
    record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def print_table(records: list[dict]) -> None:
    """One line per file, then the whole release per kind."""
    print(f"{'file':<34}{'items':>7}{'s':>8}{'items/s':>8}{f'MiB<={ITEMS_AT}':>10}{'peak MiB':>9}"
          f"{'killed':>7}{'intact':>7}{'re-scored':>10}")
    for r in records:
        early = r[f"rss_mb_up_to_{ITEMS_AT}_items"]
        print(f"{r['name']:<34}{r['items']:>7}{r['seconds']:>8.0f}{r['items_per_second']:>8.2f}"
              f"{early if early is not None else '-':>10}{r['peak_rss_mb']:>9.0f}"
              f"{'yes' if r['killed_and_resumed'] else '':>7}{'yes' if r['nothing_lost'] else 'NO':>7}"
              f"{r.get('items_rescored_float32') or '':>10}")
    for kind in sorted({r["kind"] for r in records}):
        rows = [r for r in records if r["kind"] == kind]
        items, seconds = sum(r["items"] for r in rows), sum(r["seconds"] for r in rows)
        measured = sum(r["items_measured"] for r in rows)
        print(f"{kind}: {len(rows)} files, {items} items in {seconds:.0f} s ({seconds / 3600:.2f} h), "
              f"{measured / seconds:.2f} items/s, peak {max(r['peak_rss_mb'] for r in rows):.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="runs, logs and measurements; rerun to resume")
    parser.add_argument("--pitfalls", type=Path, help="folder of the Pitfalls release's <Language>.json files")
    parser.add_argument("--adaxeval", type=Path, nargs="*", default=[], help="AdaXEval release files")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                        help="with bfloat16, evaluate keeps float32's decisions (its default); pitfalls eval "
                        "has no such step and scores in plain bfloat16")
    parser.add_argument("--limit", type=int, help="only the first N usable pairs/items of each file (a sample)")
    parser.add_argument("--kill-after", type=int, help="SIGKILL the largest file's first process after N units")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between memory readings")
    parser.add_argument("--json", type=Path, help="all figures (default DIR/release.json)")
    args = parser.parse_args()
    files = [("adaxeval", path) for path in args.adaxeval]
    if args.pitfalls:
        files += [("pitfalls", path) for path in sorted(args.pitfalls.glob("*.json"))
                  if not path.stem.endswith("_results")]
    if not files:
        parser.error(f"give --pitfalls (e.g. {SHARED / 'cross-lingual-pitfalls'}) and/or --adaxeval FILE ...")
    # The largest files first: they pass ITEMS_AT items in one process, and the killed one is among them.
    units = {file: usable_units(*file, args.limit) for file in files}
    files.sort(key=lambda file: -units[file])
    started, records = time.time(), []
    for kind, path in files:
        print(f"  {kind} {path.name}: {units[kind, path]} usable units ...", file=sys.stderr, flush=True)
        kill = args.kill_after if (kind, path) == files[0] else None
        records.append(measure_file(kind, path, units[kind, path], args.work, args.dtype, args.limit, kill,
                                    args.interval))
    out = args.json or args.work / "release.json"
    out.write_text(json.dumps({"files": records, "bench_seconds_this_call": time.time() - started,
                               "load_avg_1min": os.getloadavg()[0], "cpu_count": os.cpu_count()}, indent=1) + "\n",
                   encoding="utf-8")
    print_table(records)
    print(f"\nfigures: {out}")
    if not all(r["nothing_lost"] for r in records):
        raise SystemExit("a run directory lost or repeated units: see 'intact' above")


if __name__ == "__main__":
    main()
