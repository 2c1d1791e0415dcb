"""The `plan --format json` reference (docs/output.md) names every key the command prints."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from inferencesize.cli import app

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "output.md"


def _schema_section() -> str:
    text = REFERENCE.read_text(encoding="utf-8")
    start = text.index("## `plan --format json` (schema_version 1)")
    ends = [text.find(mark, start + 1) for mark in ("\n## ", "\n### ")]
    return text[start : min((e for e in ends if e > 0), default=len(text))]


def _documented_names(section: str) -> set[str]:
    names: set[str] = set()
    for code in re.findall(r"`([^`]+)`", section):
        names.update(re.findall(r"[a-z_][a-z0-9_]*", code))
    return names


def _keys(value: Any) -> set[str]:
    """Key names of the object and its nested objects (lists: their first object)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            found.add(key)
            found |= _keys(inner)
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        found |= _keys(value[0])
    return found


def _plan_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["plan", "default", *args, "--format", "json"])
    assert result.exit_code in (0, 3), result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_every_plan_key_is_documented() -> None:
    documented = _documented_names(_schema_section())
    feasible = _plan_json("--pp", "1", "--top", "1", "--power-budget-kw", "20")
    infeasible = _plan_json("--pp", "1", "--ttft-ms", "1")
    assert feasible["plan"] is not None and infeasible["plan"] is None
    emitted = set(feasible) | set(infeasible)
    emitted |= _keys(feasible["plan"]) | _keys(feasible["power_budget"])
    emitted |= _keys(infeasible["rejected"])
    missing = sorted(emitted - documented)
    assert not missing, f"docs/output.md plan JSON section misses {missing}"


def test_check_json_additions_are_documented() -> None:
    documented = _documented_names(_schema_section())
    result = CliRunner().invoke(
        app, ["check", "default", "--pp", "1", "--max-servers", "3", "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    added = set(data) - set(_plan_json("--pp", "1"))
    assert added == {"budget", "within_budget", "over", "held"}
    assert not sorted((added | _keys(data["budget"])) - documented)
