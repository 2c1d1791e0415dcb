"""YAML is the JSON document: ``-f yaml`` reads back as the ``-f json`` record, for every
shipped scenario and every command.

One in-process run per scenario and command (the cheap way): the command runs with ``-f json``,
the document it hands to :func:`report.to_json` is kept, and its YAML (what ``-f yaml`` prints
for that same document, :func:`report.to_yaml`) must load to the JSON that was printed.

* plan and check: every shipped scenario (plan: the session's run, tests/shipped_plans.py).
* sweep and frontier: one scenario of each kind they take (closed loop, Poisson, a trace-free
  MoE rack, speculative decoding); a sweep or a frontier of all 24 takes minutes of CPU, and
  their documents are built by the same serialiser from the same plan records. Scenarios they
  refuse (pipelines, daily, disaggregated) are asserted as one-line refusals below.
* the commands without a scenario (estimate, simulate, peak, validate, calibrate, catalog):
  every format in tests/cli/test_formats.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from shipped_plans import plan_run
from typer.testing import CliRunner

from inferencesize import report
from inferencesize.cli import app

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml"))
runner = CliRunner()

#: The commands that take a scenario, with the flags that make them answer with a document
#: (check: a budget no plan exceeds).
COMMANDS: dict[str, list[str]] = {
    "plan": ["plan"],
    "check": ["check", "--max-gpus", "1000000"],
}
#: Sweep and frontier: closed loop (default, seed-nemo-43b: a static-batching engine) and
#: Poisson (streaming-kv-cap, economics-owned: prices in the document).
FEW = ("default", "seed-nemo-43b", "streaming-kv-cap", "economics-owned")
#: Scenarios sweep and frontier refuse, with the word their one-line error names.
REFUSED = {
    "sweep": {
        "daily-chat": "daily",
        "disaggregated-long-prompt": "disaggregated",
        "long-context-prefill": "disaggregated",
        "pipeline-agent": "pipeline",
        "pipeline-guardrail-judge": "pipeline",
    },
    "frontier": {"pipeline-agent": "pipeline", "pipeline-guardrail-judge": "pipeline"},
}


def _json_and_document(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """The JSON ``args`` print and the document the command handed to ``report.to_json``."""
    docs: list[Any] = []
    real = report.to_json

    def keep(data: Any) -> str:
        docs.append(data)
        return real(data)

    monkeypatch.setattr(report, "to_json", keep)
    result = runner.invoke(app, [*args, "-f", "json"], env={"NO_COLOR": "1"})
    assert result.exit_code == 0, (args, result.stderr)
    assert len(docs) == 1, args
    return json.loads(result.stdout), docs[0]


def _assert_yaml_is_json(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    printed, doc = _json_and_document(args, monkeypatch)
    assert json.loads(report.to_json(doc)) == printed
    assert yaml.safe_load(report.to_yaml(doc)) == printed


def test_the_scenarios_are_found() -> None:
    assert len(SCENARIOS) >= 20 and set(FEW) <= set(SCENARIOS)
    assert all(set(refused) <= set(SCENARIOS) for refused in REFUSED.values())


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_yaml_reads_back_as_json(
    scenario: str, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if command == "plan":  # the session's plan of the scenario (other modules read it too)
        run = plan_run(scenario)
        assert run.exit_code == 0, run.stderr
        printed = json.loads(run.stdout)
        assert json.loads(report.to_json(run.document)) == printed
        assert yaml.safe_load(report.to_yaml(run.document)) == printed
        return
    _assert_yaml_is_json([COMMANDS[command][0], scenario, *COMMANDS[command][1:]], monkeypatch)


@pytest.mark.parametrize("scenario", FEW)
def test_sweep_and_frontier_yaml_read_back_as_json(
    scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    osl = yaml.safe_load((ROOT / "scenarios" / f"{scenario}.yaml").read_text())["osl"]
    _assert_yaml_is_json(["sweep", scenario, "--vary", f"osl={osl}"], monkeypatch)
    _assert_yaml_is_json(["frontier", scenario, "--no-terminal-plot"], monkeypatch)


@pytest.mark.parametrize(
    ("command", "scenario", "word"),
    [(c, s, w) for c, refused in REFUSED.items() for s, w in refused.items()],
)
def test_refused_scenarios_are_one_line_errors(command: str, scenario: str, word: str) -> None:
    args = [command, scenario, "-f", "yaml"]
    if command == "sweep":
        args += ["--vary", "isl=100"]
    result = runner.invoke(app, args, env={"NO_COLOR": "1"})
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and word in result.stderr


def test_numpy_values_become_plain_numbers_in_both_formats() -> None:
    doc = {
        "f": np.float64(0.5),
        "i": np.int64(3),
        "b": np.bool_(True),
        "a": np.array([1.5, 2.0]),
        "nan": np.float64("nan"),
        "nested": [{"x": np.float32(0.25)}, (np.int32(2),)],
    }
    plain = {
        "f": 0.5,
        "i": 3,
        "b": True,
        "a": [1.5, 2.0],
        "nan": None,
        "nested": [{"x": 0.25}, [2]],
    }
    assert json.loads(report.to_json(doc)) == plain
    assert yaml.safe_load(report.to_yaml(doc)) == plain
    assert "!!" not in report.to_yaml(doc)  # no python/numpy tags: any YAML reader loads it


def _cell_matches(cell: str, value: Any) -> bool:
    """A CSV cell says what the JSON value says (numbers to the CSV's 6 significant digits)."""
    if value is None:
        return cell == ""
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    if isinstance(value, (int, float)):
        return cell != "" and float(cell) == pytest.approx(value, rel=1e-5, abs=1e-9)
    if isinstance(value, list):
        return cell == ";".join(str(v) for v in value)
    return cell == str(value)


@pytest.mark.parametrize(
    "scenario", ["default", "streaming-kv-cap", "disaggregated-long-prompt", "pipeline-agent"]
)
def test_plan_csv_rows_carry_the_json_values(scenario: str) -> None:
    """One CSV row per plan (per stage of a pipeline): each cell is the JSON value of that
    plan, nested keys joined with '_'."""
    import csv
    import io

    rec = json.loads(plan_run(scenario).stdout)
    out = runner.invoke(app, ["plan", scenario, "-f", "csv"])
    assert out.exit_code == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    if rec.get("pipeline"):
        plans = [s["plan"] for s in rec["stages"]]
    else:
        plans = [rec["plan"], *rec["alternatives"]]
        disagg = (rec.get("disaggregated") or {}).get("plan")
        plans += [disagg] if disagg else []
    assert len(rows) == len(plans)
    for row, plan in zip(rows, plans, strict=True):
        flat = report.flatten(plan)
        assert flat.keys() <= row.keys()
        wrong = {k: (row[k], v) for k, v in flat.items() if not _cell_matches(row[k], v)}
        assert not wrong, wrong
