"""The README and docs/ stay true to the repository: every relative link resolves, and every `crossknow ...`
command line in a fenced code block names a command that the CLI has.

Anchors are computed the GitHub way: the heading's text lowercased, punctuation other than '-' and '_'
removed, spaces turned into '-', and a repeated anchor numbered (-1, -2, ...). The command tree is the
click tree typer builds from `crossknow.cli.app.app`; importing it loads no model.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
import typer.main

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`[^`]*`")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...
COMMAND = re.compile(r"(?:^|(?<=\s))crossknow((?:\s+\S+)*)")


def split_fences(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(prose lines, lines inside fenced code blocks), each as (1-based line number, line)."""
    prose: list[tuple[int, str]] = []
    code: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(text.split("\n"), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        (code if fenced else prose).append((number, line))
    return prose, code


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation but '-' and '_' removed, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every heading anchor of a Markdown file, repeated ones numbered as GitHub numbers them."""
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose:
        match = HEADING.match(line)
        if not match:
            continue
        anchor = github_anchor(match.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return frozenset(found)


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link outside code blocks and inline code."""
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    return [(number, match.group(1)) for number, line in prose
            for match in LINK.finditer(INLINE_CODE.sub("", line))]


def link_problem(document: Path, target: str) -> str | None:
    """Why a relative link of `document` does not resolve, or None when it does (external links are not
    checked)."""
    if EXTERNAL.match(target):
        return None
    file_part, _, anchor = target.partition("#")
    resolved = (document.parent / file_part).resolve() if file_part else document
    if ROOT not in resolved.parents and resolved != ROOT:
        return f"{file_part} leaves the repository"
    if not resolved.exists():
        return f"{file_part} does not exist"
    if anchor:
        if resolved.suffix != ".md" or resolved.is_dir():
            return f"#{anchor} points into {file_part}, which is not a Markdown file"
        if anchor not in anchors(resolved):
            return f"{resolved.relative_to(ROOT)} has no heading with anchor #{anchor}"
    return None


@cache
def command_tree():
    """The click command tree of the `crossknow` CLI."""
    from crossknow.cli.app import app

    return typer.main.get_command(app)


def command_problem(words: list[str]) -> str | None:
    """Why the words after `crossknow` do not name a command, or None when they do. The walk follows
    sub-commands while the current command is a group and stops at an option (`--out`, or `[--out` in a
    usage line) or at a leaf command;
    at a group, a word that is no sub-command is the problem. `a|b` at a group names alternatives,
    each of which must exist."""

    def walk(command, path: list[str], rest: list[str]) -> str | None:
        subcommands = getattr(command, "commands", None)
        if not subcommands or not rest or rest[0].startswith(("-", "[")):
            return None
        alternatives = rest[0].split("|")
        for word in alternatives:
            where = " ".join(path)
            if word not in list(subcommands):  # the names only: a lazy group imports nothing to list them
                return f"{where!r} has no sub-command {word!r} (it has: {', '.join(subcommands)})"
            try:
                subcommand = subcommands[word]
            except Exception as error:  # noqa: BLE001 - the CLI itself is broken: say so, naming the command
                return f"the CLI could not build '{where} {word}': {type(error).__name__}: {error}"
            problem = walk(subcommand, [*path, word], rest[1:])
            if problem:
                return problem
        return None

    return walk(command_tree(), ["crossknow"], words)


def command_lines(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, the line, the words after `crossknow`) for each `crossknow` word in a fenced code block."""
    _, code = split_fences(path.read_text(encoding="utf-8"))
    found = []
    for number, line in code:
        for match in COMMAND.finditer(line):
            words = match.group(1).split()
            if words and words[0] in ("#", "\\"):
                words = []
            found.append((number, line.strip(), words))
    return found


def document_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("document", DOCUMENTS, ids=document_id)
def test_relative_links_resolve(document: Path) -> None:
    broken = [f"{document_id(document)}:{number}: ({target}): {problem}"
              for number, target in links(document)
              if (problem := link_problem(document, target))]
    assert not broken, "broken links:\n" + "\n".join(broken)


@pytest.mark.parametrize("document", DOCUMENTS, ids=document_id)
def test_commands_in_code_blocks_exist(document: Path) -> None:
    unknown = [f"{document_id(document)}:{number}: `{line}`: {problem}"
               for number, line, words in command_lines(document)
               if (problem := command_problem(words))]
    assert not unknown, "commands the CLI does not have:\n" + "\n".join(unknown)


def test_the_checks_see_what_they_check() -> None:
    """The parsers find the README's links and commands, and reject what does not exist."""
    readme = ROOT / "README.md"
    assert any(target.startswith("docs/") for _, target in links(readme))
    assert any(words[:2] == ["eclektic", "demo"] for _, _, words in command_lines(readme))
    assert github_anchor("`crossknow perturb` (AdaXEval section 5.1: perturbed training sequences)") == (
        "crossknow-perturb-adaxeval-section-51-perturbed-training-sequences")
    assert command_problem(["pitfalls", "probe", "--recipe", "paper"]) is None
    assert command_problem(["eclektic", "answer|judge", "(the", "same"]) is None
    assert command_problem(["pitfalls", "probes"]) is not None
    assert command_problem(["evaluat", "--data"]) is not None
    assert link_problem(readme, "docs/no-such-page.md") is not None
    assert link_problem(readme, "docs/scoring.md#no-such-heading") is not None
