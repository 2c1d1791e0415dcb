"""The same formats everywhere: every command that prints data takes --format table, json,
yaml and csv; YAML is the JSON record; CSV is one flat row per record (plan: per plan,
simulate: per policy, frontier: per point …), nested keys flattened as parent_child."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from inferencesize.cli import app

ROOT = Path(__file__).resolve().parents[2]
PERF = ROOT / "tests" / "fixtures" / "perf"
SMALL = PERF / "measurements_small.csv"
runner = CliRunner()

COMMANDS: dict[str, list[str]] = {
    "plan": ["plan", "default", "--top", "2"],
    "check": ["check", "default", "--max-servers", "3"],
    "estimate": ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm"],
    "validate": ["validate", "--data", str(SMALL)],
    "sweep": ["sweep", "default", "--vary", "isl=500,1000"],
    "frontier": ["frontier", "default", "--rows", "5", "--no-terminal-plot"],
    "simulate": ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--rate", "4"],
    "peak": ["peak", "--mean-rps", "64"],
    "catalog list": ["catalog", "list", "models"],
    "catalog show": ["catalog", "show", "h100-sxm"],
}
FORMATS = ("table", "json", "yaml", "csv")


def invoke(args: list[str]) -> str:
    result = runner.invoke(app, args, env={"NO_COLOR": "1"})
    assert result.exit_code == 0, (args, result.stderr)
    return result.stdout


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_data_command_takes_every_format(name: str, fmt: str) -> None:
    out = invoke([*COMMANDS[name], "--format", fmt])
    assert out.strip()
    if fmt == "json":
        json.loads(out)
    elif fmt == "yaml":
        data, same = yaml.safe_load(out), json.loads(invoke([*COMMANDS[name], "-f", "json"]))
        if name == "validate":  # the time it took differs between runs
            data.pop("seconds"), same.pop("seconds")
        assert data == same
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))
        assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows)
        assert not any(cell.startswith(("{", "[{")) for r in rows for cell in r)  # flat


def test_calibrate_takes_every_format(tmp_path: Path) -> None:
    # the file's rows were measured on A100 fp16 (and one on a GPU the catalog lacks)
    base = ["calibrate", "--data", str(SMALL), "--hardware", "a100-sxm-80gb", "--precision", "fp16"]
    outs = {f: invoke([*base, "--out", str(tmp_path / f"{f}.yaml"), "-f", f]) for f in FORMATS}
    rec = json.loads(outs["json"])
    assert yaml.safe_load(outs["yaml"]) == {**rec, "out": str(tmp_path / "yaml.yaml"), "id": "yaml"}
    rows = list(csv.DictReader(io.StringIO(outs["csv"])))
    assert [r["metric"] for r in rows] == [q["metric"] for q in rec["fit_quality"]]
    assert {"fitted_compute", "fitted_memory", "median_ape_after"} <= set(rows[0])
    assert "fit quality" in outs["table"]


def test_plan_csv_is_one_row_per_plan_with_the_disaggregated_one() -> None:
    rec = json.loads(invoke(["plan", "default", "--disaggregated", "--top", "2", "-f", "json"]))
    rows = list(
        csv.DictReader(
            io.StringIO(invoke(["plan", "default", "--disaggregated", "--top", "2", "-f", "csv"]))
        )
    )
    assert len(rows) == 1 + len(rec["alternatives"]) + 1
    assert [r["layout"] for r in rows] == ["aggregated"] * (len(rows) - 1) + ["disaggregated"]
    last, d = rows[-1], rec["disaggregated"]["plan"]
    assert last["ratio"] == d["ratio"] and int(last["gpus"]) == d["gpus"]
    assert last["prefill_hardware"] == d["prefill"]["hardware"]
    assert rows[0]["rank"] == "1" and rows[0]["per_instance_ttft_ms"]


def test_check_csv_carries_the_budget_verdict() -> None:
    rows = list(csv.DictReader(io.StringIO(invoke([*COMMANDS["check"], "-f", "csv"]))))
    assert rows[0]["within_budget"] == "true" and rows[0]["budget_max_servers"] == "3"
    table = invoke([*COMMANDS["check"], "-f", "table"])
    assert "within budget" in table


def test_estimate_points_take_json_and_yaml() -> None:
    points = ["estimate", "--points", str(PERF / "points.csv")]
    data = json.loads(invoke([*points, "-f", "json"]))
    assert isinstance(data, list) and len(data) == len(
        invoke([*points, "-f", "jsonl"]).splitlines()
    )
    assert yaml.safe_load(invoke([*points, "-f", "yaml"])) == data


def test_sweep_json_and_yaml_go_to_out_atomically(tmp_path: Path) -> None:
    out = tmp_path / "grid.json"
    result = runner.invoke(app, [*COMMANDS["sweep"], "-f", "json", "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    assert [r["isl"] for r in json.loads(out.read_text())] == [500, 1000]
    table_out = runner.invoke(app, [*COMMANDS["sweep"], "-f", "table", "--out", str(out)])
    assert table_out.exit_code == 2
