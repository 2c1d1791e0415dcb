"""`infersize plan SCENARIO --format json` of a shipped scenario, run once per test session.

Several modules read the plan of the same shipped scenario (the front door's plan-and-sweep
check, YAML read back as JSON, the CSV rows, the scale-out and technique scenarios); each plan
is up to seconds of CPU, so it runs once, in process, and every reader gets the same answer.
Readers must not change the document they are handed (parse ``stdout`` for a copy of their own).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from typer.testing import CliRunner

from inferencesize import report
from inferencesize.cli import app


@dataclass(frozen=True)
class PlanRun:
    exit_code: int
    stdout: str
    stderr: str
    document: Any  # what the command handed to report.to_json (None: it printed no JSON)


@cache
def plan_run(scenario: str) -> PlanRun:
    """``infersize plan SCENARIO --format json`` (no other flag), with the document it printed."""
    docs: list[Any] = []
    real = report.to_json

    def keep(data: Any) -> str:
        docs.append(data)
        return real(data)

    report.to_json = keep  # type: ignore[assignment]
    try:
        result = CliRunner().invoke(app, ["plan", scenario, "-f", "json"], env={"NO_COLOR": "1"})
    finally:
        report.to_json = real  # type: ignore[assignment]
    assert len(docs) <= 1, scenario
    return PlanRun(result.exit_code, result.stdout, result.stderr, docs[0] if docs else None)
