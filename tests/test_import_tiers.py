"""The import contracts of pyproject.toml cover every module: a module left out of the tiers is
held to none of them, so a new module must be placed in one (and, below the application tier,
in the pure-math contract)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "inferencesize"


def _contracts() -> list[dict[str, Any]]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        contracts: list[dict[str, Any]] = tomllib.load(fh)["tool"]["importlinter"]["contracts"]
    return contracts


def _contract(name_starts: str) -> dict[str, Any]:
    found = [c for c in _contracts() if c["name"].startswith(name_starts)]
    assert len(found) == 1, name_starts
    return found[0]


def _tiers() -> list[list[str]]:
    layers = _contract("Tiers:")["layers"]
    return [[m.strip() for m in layer.replace("|", ":").split(":")] for layer in layers]


def _top_level_modules() -> set[str]:
    """inferencesize.X for every module and subpackage directly under the package."""
    names = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    names |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    return {f"inferencesize.{n}" for n in names}


def test_every_module_sits_in_one_tier() -> None:
    placed = [m for tier in _tiers() for m in tier]
    assert len(placed) == len(set(placed)), "a module is listed in two tiers"
    missing = sorted(_top_level_modules() - set(placed))
    assert not missing, f"place these modules in a tier of pyproject.toml: {missing}"
    unknown = sorted(set(placed) - _top_level_modules())
    assert not unknown, f"the tiers list modules that do not exist: {unknown}"


def test_the_tiers_are_named_in_order() -> None:
    tiers = _tiers()
    assert len(tiers) == 6
    assert "inferencesize.cli" in tiers[0]  # commands
    assert "inferencesize.study" in tiers[1]  # application
    assert "inferencesize.catalog" in tiers[2] and "inferencesize.report" in tiers[2]
    assert "inferencesize.planner" in tiers[3]  # solvers
    assert "inferencesize.latency" in tiers[4]  # model
    assert "inferencesize.vocabulary" in tiers[5]  # types


def test_every_module_below_the_application_tier_is_pure_math() -> None:
    below = {m for tier in _tiers()[3:] for m in tier}
    pure = _contract("Pure math")
    assert sorted(below - set(pure["source_modules"])) == []
    for banned in ("yaml", "rich", "typer", "click", "pathlib", "inferencesize.catalog"):
        assert banned in pure["forbidden_modules"]


@pytest.mark.parametrize(
    "module",
    [
        "inferencesize.point_estimate",
        "inferencesize.point_batch",
        "inferencesize.simulation_study",
        "inferencesize.validation_study",
        "inferencesize.calibration_study",
    ],
)
def test_the_point_commands_work_in_the_application_tier(module: str) -> None:
    assert module in _tiers()[1]


def test_rich_is_banned_outside_the_presentation_modules() -> None:
    contract = _contract("Only the presentation modules")
    assert contract["source_modules"] == ["inferencesize"]
    assert contract["forbidden_modules"] == ["rich"]
    allowed = {line.split(" -> ")[0] for line in contract["ignore_imports"]}
    assert allowed <= {"inferencesize.report", "inferencesize.cli.common", "inferencesize.cli.help"}
