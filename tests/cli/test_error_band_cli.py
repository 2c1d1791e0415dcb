"""Every estimate carries the 80 % band of its mean TTFT and ITL, and every plan its count at
the band's slow edge: in JSON and in the table, from the shipped bands."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from inferencesize.bands import model_family
from inferencesize.catalog import load_catalog
from inferencesize.cli import app
from inferencesize.io_bands import shipped_bands

runner = CliRunner()
POINT = ["--model", "llama-3-8b", "--hardware", "h100-sxm", "--isl", "2000", "--osl", "200"]


def _json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code in (0, 3), result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _expected_band(rec: dict[str, Any], metric: str, set_id: str) -> Any:
    """The band the shipped table gives this record, looked up independently of the CLI."""
    model = load_catalog().model(rec["model"])
    table = shipped_bands()
    measured = model_family(model) in table.measured_families.get(set_id, frozenset())
    return table.band(metric, rec["trust"], measured)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "load", [["--concurrency", "25"], ["--rate", "8"]], ids=["clients", "rate"]
)
def test_estimate_scales_its_mean_by_the_band_of_its_label(load: list[str]) -> None:
    rec = _json("estimate", *POINT, *load)
    band = rec["error_band"]
    assert band["share"] == 0.8
    for metric in ("ttft", "itl"):
        got = band[f"{metric}_ms"]
        want = _expected_band(rec, metric, "nim-2024")  # the default set
        assert want is not None and got["label"] == want.label and got["rows"] == want.rows
        assert got["low"] == pytest.approx(rec[f"{metric}_ms"] * want.low, rel=1e-12)
        assert got["high"] == pytest.approx(rec[f"{metric}_ms"] * want.high, rel=1e-12)
        assert got["low"] < got["high"]
    assert band["itl_ms"]["label"].startswith(rec["trust"])


def test_estimate_table_shows_each_mean_with_its_band() -> None:
    result = runner.invoke(app, ["estimate", *POINT, "--concurrency", "25"])
    assert result.exit_code == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "(mean)" in line]
    assert any("TTFT" in r and "80 % band" in r for r in rows)
    assert any("ITL" in r and "80 % band" in r for r in rows)


def test_an_estimate_without_a_prediction_has_no_band() -> None:
    rec = _json(
        "estimate", "--model", "llama-3.1-405b", "--hardware", "l40s", "--precision", "fp16"
    )
    assert rec["feasible"] is False and rec["ttft_ms"] is None
    assert rec["error_band"]["ttft_ms"] is None and rec["error_band"]["itl_ms"] is None


def test_plan_counts_its_candidate_again_at_the_slow_edge() -> None:
    rec = _json("plan", "default")
    plan, edge = rec["plan"], rec["error_band"]
    set_id = rec["engine_choice"]["set"]
    want = _expected_band(plan | {"model": rec["model"]}, "itl", set_id)
    assert want is not None and edge["step_scale"] == pytest.approx(want.high)
    assert edge["label"] == want.label
    assert edge["feasible"] is True
    # slower steps never need fewer instances, and never fewer paid servers or GPUs
    assert edge["step_scale"] > 1
    assert edge["instances"] >= plan["instances"]
    assert edge["servers_paid"] >= plan["economics"]["servers_paid"]
    assert edge["gpus_paid"] >= plan["economics"]["gpus_paid"]


def test_plan_table_says_the_count_if_slower() -> None:
    result = runner.invoke(app, ["plan", "default"])
    assert result.exit_code == 0, result.stderr
    line = next(r for r in result.stdout.splitlines() if "if slower" in r)
    assert "instances if each step is as slow as the 90th percentile" in line


def test_no_plan_has_no_slow_edge() -> None:
    rec = _json("plan", "default", "--ttft-ms", "1")
    assert rec["plan"] is None and rec["error_band"] is None
