"""plan: latency at the planned load (peak ÷ instances) in the table and the JSON, checked
against the simulation of the planned fleet; the note when nothing holds the ITL."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()

# the README's p99 example (``--verify``)
P99 = ["plan", "--model", "llama-3-8b", "--hardware", "dgx-h100", "--tp", "1", "--precision"]
P99 += ["fp8", "--isl", "1000", "--osl", "200", "--peak-rps", "50", "--ttft-ms", "2000"]
P99 += ["--itl-ms", "100", "--latency-stat", "p99"]
# a TTFT-only question on a 70B model: nothing holds the instances back from batching
TTFT_ONLY = ["plan", "--model", "llama-3.1-70b", "--hardware", "dgx-h100", "--isl", "1000"]
TTFT_ONLY += ["--osl", "500", "--mean-rps", "20", "--ttft-ms", "1000"]


def _run(args: list[str]) -> str:
    result = runner.invoke(app, args, env={"COLUMNS": "250", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _json(args: list[str]) -> dict[str, Any]:
    return json.loads(_run([*args, "--format", "json"]))  # type: ignore[no-any-return]


def test_the_shown_latency_is_what_the_simulated_fleet_sees() -> None:
    rec = _json([*P99, "--verify"])
    p, v = rec["plan"], rec["verify"]
    at, cap = p["per_instance_at_peak"], p["per_instance"]
    assert at["requests_per_s"] == pytest.approx(rec["peak_rps"] / p["instances"])
    assert v["analytic"]["instances"] == p["instances"]
    held = v["analytic"]["held"]  # the simulated fleet of the plan, at p99
    for metric in ("ttft", "itl"):
        simulated = held[f"{metric}_ms"]
        assert at[f"{metric}_ms_p99"] == pytest.approx(simulated, rel=0.15), metric
        assert at[f"{metric}_ms_p99"] <= cap[f"{metric}_ms_p99"]


def test_the_table_labels_the_peak_and_the_capacity_apart() -> None:
    rec, text = _json(P99), _run(P99)
    p = rec["plan"]
    at, cap = p["per_instance_at_peak"], p["per_instance"]
    rows = {
        m.group(1).strip(): m.group(2).strip() for m in re.finditer(r"│ ([^│]+?) +│ (.+?) +│", text)
    }
    assert rows["load at peak"].startswith(
        f"{at['requests_per_s']:,.3f} req/s per instance (peak 50 ÷ {p['instances']} instances)"
    )
    assert rows["latency at peak (mean)"].startswith(f"TTFT {at['ttft_ms']:,.1f} ms")
    assert rows["latency at peak (p99)"] == (
        f"TTFT {at['ttft_ms_p99']:,.1f} ms · ITL {at['itl_ms_p99']:,.2f} ms · "
        f"E2E {at['e2e_ms_p99']:,.0f} ms"
    )
    assert rows["capacity per instance"].startswith(
        f"{cap['requests_per_s']:,.3f} req/s within the limits"
    )
    assert "operating point" not in rows and "latency (mean)" not in rows


def _note(rec: dict[str, Any]) -> list[str]:
    return [n for n in rec["notes"] if "no ITL or E2E limit" in n]


def test_a_ttft_only_plan_that_streams_slowly_says_so() -> None:
    rec = _json(TTFT_ONLY)
    itl_ms = rec["plan"]["per_instance_at_peak"]["itl_ms"]
    assert itl_ms > 50  # the premise: nothing held the ITL, the KV cache filled up
    (note,) = _note(rec)
    assert f"about {1e3 / itl_ms:,.0f} tokens/s (ITL mean {itl_ms:,.0f} ms" in note
    assert note in " ".join(_run(TTFT_ONLY).split()).replace("│", "")


@pytest.mark.parametrize("limit", [["--itl-ms", "200"], ["--e2e-ms", "100000"]])
def test_a_stated_itl_or_e2e_limit_needs_no_note(limit: list[str]) -> None:
    rec = _json([*TTFT_ONLY, *limit])
    assert rec["plan"]["per_instance_at_peak"]["itl_ms"] > 50  # as slow, but asked for
    assert _note(rec) == []


def test_a_fast_stream_needs_no_note() -> None:
    question = [a for a in P99 if a not in ("--itl-ms", "100")]
    rec = _json(question)
    assert rec["limits"]["itl_ms"] is None
    assert rec["plan"]["per_instance_at_peak"]["itl_ms_p99"] < 50
    assert _note(rec) == []
