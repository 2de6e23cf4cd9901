"""The package's shape holds: the import contracts of pyproject.toml ([tool.importlinter]: the floors, the CLI's
layers, the independent command modules, no import cycle), and the CLI imports a command's module only when
that command is asked for.

import-linter's `acyclic_siblings` contract compares the children of each package, so a cycle that runs
through a package's own `__init__` escapes it; `test_no_import_cycle_runs_through_a_package` checks those on
the same import graph (grimp's, import-linter's engine).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import typer.main

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_the_import_contracts_hold():
    result = subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_import_cycle_runs_through_a_package():
    graph = grimp.build_graph("crossknow", cache_dir=None)
    packages = sorted(module for module in graph.modules if graph.find_children(module))
    cycles = [
        " -> ".join((package, *chain))
        for package in packages
        for imported in sorted(graph.find_modules_directly_imported_by(package))
        if (chain := graph.find_shortest_chain(importer=imported, imported=package))
    ]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_a_command_imports_only_its_own_module():
    """`crossknow eclektic score --help` loads the eclektic commands and no other command's module."""
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from crossknow.cli.app import app\n"
        "result = CliRunner().invoke(app, ['eclektic', 'score', '--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('crossknow.cli.'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    commands = {module for module in result.stdout.split() if module.endswith(("_cmd", "_demo"))}
    assert commands == {"crossknow.cli.eclektic_cmd"}


def test_every_listed_command_loads():
    """Each name of a lazy table names a command its module registers (an error, not 'No such command')."""
    from crossknow.cli.app import app

    def names(command, path: str) -> list[str]:
        found = [path]
        for name, sub in getattr(command, "commands", {}).items():
            found += names(sub, f"{path} {name}")
        return found

    listed = names(typer.main.get_command(app), "crossknow")
    assert {"crossknow eclektic demo", "crossknow pitfalls expand", "crossknow pitfalls affinity",
            "crossknow annotate score", "crossknow trace-sequences"} <= set(listed)
