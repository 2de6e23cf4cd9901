"""`crossknow fetch [RELEASE ...]`: download the published releases into crossknow's cache, checked by SHA-256."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from crossknow.cli.consoles import console, errors
from crossknow.errors import CrossknowError

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""

FETCHED_BY_DEFAULT = ("adaxeval", "pitfalls")


@commands.command()
def fetch(
    releases: list[str] = typer.Argument(
        None, help="adaxeval, pitfalls or eclektic (default: adaxeval and pitfalls; eclektic needs a Kaggle account)."),
    into: Path | None = typer.Option(
        None, help="Directory to write each release into, as INTO/RELEASE/FILE (default: releases/ in crossknow's "
        "cache, ~/.cache/crossknow or $CROSSKNOW_CACHE)."),
    base_url: str | None = typer.Option(
        None, help="Fetch the one release named from this address (a mirror) instead of its authors' repository."),
) -> None:
    """Download the releases' files, keep those whose SHA-256 is the recorded one, and print where they are."""
    from crossknow.data.releases import RELEASES
    from crossknow.store.cache_dir import cache_dir

    names = list(releases or FETCHED_BY_DEFAULT)
    unknown = [name for name in names if name not in RELEASES]
    if unknown:
        raise CrossknowError(f"unknown release {', '.join(unknown)}; choose from {', '.join(RELEASES)}")
    if base_url and len(names) != 1:
        raise CrossknowError("--base-url replaces one release's address: name that release alone")
    root = into or cache_dir() / "releases"
    refused = []
    for name in names:
        results = _fetch_with_bar(RELEASES[name], root / name, base_url)
        table = Table(title=f"{name}: {root / name}", title_justify="left")
        for column in ("file", "bytes", "sha256", "status"):
            table.add_column(column, justify="right" if column == "bytes" else "left")
        for result in results:
            ok = result.status in ("downloaded", "kept")
            table.add_row(result.file.path, f"{result.file.size:,}", result.file.sha256[:12],
                          result.status if ok else "[red]refused[/red]")
            if not ok:
                refused.append(result.status)
        console.print(table)
    if not releases:
        errors.print(f"eclektic: {RELEASES['eclektic'].unavailable}", highlight=False, soft_wrap=True)
    if refused:
        raise CrossknowError("nothing was written for these files:\n" + "\n".join(refused))


def _fetch_with_bar(release, directory: Path, base_url: str | None) -> list:
    """`fetch_release` with a progress bar over the release's bytes."""
    from crossknow.cli.progress import bar
    from crossknow.data.releases import fetch_release

    total, done = sum(file.size for file in release.files), 0
    with bar(errors, f"fetching {release.name}") as update:

        def advance(n: int) -> None:
            nonlocal done
            done += n
            update(done, total)

        return fetch_release(release, directory, base_url, advance)
