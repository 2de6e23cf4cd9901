"""pyproject.toml's requirements: a range for torch that holds the versions the suite ran on, never a pin, so that
installing crossknow beside a site's own torch build keeps it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_torch_is_a_range_that_holds_the_tested_releases_and_their_cuda_builds():
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    (torch,) = [Requirement(line) for line in extras["hf"] if Requirement(line).name == "torch"]
    assert not any(spec.operator in ("==", "===") for spec in torch.specifier)
    assert all(torch.specifier.contains(version) for version in ("2.13.0", "2.11.0", "2.12.1"))
    assert not torch.specifier.contains("2.10.0") and not torch.specifier.contains("2.14.0")
