"""`infersize estimate --rate` (one instance under open-loop arrivals) and the `rate` column of
``estimate --points``: the record's keys, the identities it must hold (utilisation = rate /
sustainable rate, E2E = TTFT + (OSL − 1) · ITL, ordered percentiles), the light-load limit (a
request alone: the closed-loop point at one client), burstier arrivals waiting longer, and the
past-capacity answer (stable: false, no latencies, exit 0). No float of today's model is pinned.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from inferencesize.cli import app

runner = CliRunner()
POINT = ["--model", "llama-3-8b", "--hardware", "h100-sxm", "--isl", "2000", "--osl", "200"]
PERCENTILES = (50, 90, 95, 99)
LATENCIES = {
    f"{name}_ms{suffix}"
    for name in ("ttft", "itl", "e2e")
    for suffix in ("", *(f"_p{q}" for q in PERCENTILES))
}
RATE_KEYS = LATENCIES | {
    "model",
    "hardware",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "dp",
    "isl",
    "osl",
    "batching",
    "gpus",
    "arrivals",
    "cv",
    "rate_rps",
    "utilisation",
    "stable",
    "max_requests_per_s",
    "requests_per_s",
    "output_tokens_per_s",
    "in_flight",
    "kv_wait_ms",
    "max_concurrency",
    "memory",
    "feasible",
    "reason",
    "engine",
    "efficiency",
    "trust",
    "techniques",
    "error_band",
}


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def as_json(*args: str) -> dict[str, Any]:
    result = invoke("estimate", *POINT, *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def assert_one_line_error(result: Result, code: int, *needles: str) -> None:
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def at_8() -> dict[str, Any]:
    return as_json("--rate", "8")


def test_rate_record_keys_and_identities(at_8: dict[str, Any]) -> None:
    rec = at_8
    assert set(rec) == RATE_KEYS
    assert rec["stable"] is True and rec["feasible"] is True
    assert rec["arrivals"] == "poisson" and rec["cv"] == 1.0 and rec["rate_rps"] == 8.0
    # utilisation is the offered rate over the sustainable one
    assert rec["utilisation"] == pytest.approx(8.0 / rec["max_requests_per_s"], rel=1e-12)
    assert 0 < rec["utilisation"] < 1
    # a stable instance serves what arrives
    assert rec["requests_per_s"] == 8.0
    assert rec["output_tokens_per_s"] == pytest.approx(8.0 * 200)
    # E2E = TTFT + (OSL − 1) · ITL holds for the means (ITL is the mean gap after the first)
    assert rec["e2e_ms"] == pytest.approx(rec["ttft_ms"] + 199 * rec["itl_ms"], rel=1e-6)
    for name in ("ttft", "itl", "e2e"):
        qs = [rec[f"{name}_ms_p{q}"] for q in PERCENTILES]
        assert qs == sorted(qs) and qs[0] > 0, name
    # Little's law: requests holding KV = rate × their time in the engine (≤ E2E)
    assert 0 < rec["in_flight"] <= 8.0 * rec["e2e_ms"] / 1e3 * (1 + 1e-6)


def test_light_load_is_a_request_alone() -> None:
    """At a vanishing rate nothing queues or shares a step: TTFT, ITL and E2E are those of one
    closed-loop client (the same deployment, one request in the engine)."""
    alone = as_json("--rate", "0.001")
    one = as_json("--concurrency", "1")
    for key in ("ttft_ms", "itl_ms", "e2e_ms"):
        assert alone[key] == pytest.approx(one[key], rel=0.01), key
    assert alone["kv_wait_ms"] == 0.0


def test_more_traffic_and_burstier_arrivals_wait_longer(at_8: dict[str, Any]) -> None:
    light = as_json("--rate", "2")
    bursty = as_json("--rate", "8", "--cv", "2")
    steady = as_json("--rate", "8", "--cv", "0.5")
    assert bursty["arrivals"] == "gamma" and bursty["cv"] == 2.0
    assert light["ttft_ms"] < at_8["ttft_ms"]
    assert steady["ttft_ms"] < at_8["ttft_ms"] < bursty["ttft_ms"]
    assert at_8["ttft_ms_p99"] < bursty["ttft_ms_p99"]
    # the sustainable rate is a property of the instance, not of the arrivals
    assert bursty["max_requests_per_s"] == pytest.approx(at_8["max_requests_per_s"])


def test_past_capacity_is_unstable_not_an_error(at_8: dict[str, Any]) -> None:
    top = at_8["max_requests_per_s"]
    rec = as_json("--rate", f"{2 * top:.6f}")
    assert rec["stable"] is False and rec["feasible"] is True
    assert rec["utilisation"] == pytest.approx(2.0, rel=1e-5)
    assert all(rec[k] is None for k in LATENCIES)
    # it completes requests at its sustainable rate, no faster
    assert rec["requests_per_s"] == pytest.approx(top)
    table = invoke("estimate", *POINT, "--rate", f"{2 * top:.6f}")
    assert table.exit_code == 0 and "stable" in table.stdout and "no:" in table.stdout


def test_table_shows_means_and_percentiles() -> None:
    result = invoke("estimate", *POINT, "--rate", "8")
    assert result.exit_code == 0, result.stderr
    for needle in ("Poisson 8 req/s", "TTFT ms", "mean", "p95", "p99", "utilisation"):
        assert needle in result.stdout


def test_help_states_the_definitions() -> None:
    text = " ".join(invoke("estimate", "--help").stdout.split())
    assert "mean gap between a request's tokens after the first" in text
    assert "TPOT = (E2E − TTFT) / (OSL − 1)" in text


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--rate", "8", "--concurrency", "4"], ["--rate and --concurrency are exclusive"]),
        (["--cv", "2"], ["--cv", "--rate"]),
        (["--rate", "8", "--batching", "static"], ["--rate", "in-flight"]),
        (["--rate", "8", "--cv", "-1"], ["--cv"]),
        (["--rate", "8", "--cv", "11"], ["--cv"]),
        (["--rate", "0"], ["--rate"]),
        (["--rate", "nan"], ["--rate"]),
    ],
)
def test_bad_rate_flags_are_one_line(args: list[str], needles: list[str]) -> None:
    result = invoke("estimate", *POINT, *args)
    assert result.exit_code in (1, 2), (result.stdout, result.stderr)
    assert_one_line_error(result, result.exit_code, *needles)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "points.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_points_rate_rows_match_single_points(tmp_path: Path, at_8: dict[str, Any]) -> None:
    path = write(
        tmp_path,
        "model,hardware,isl,osl,concurrency,rate,cv\n"
        "llama-3-8b,h100-sxm,2000,200,25,,\n"
        "llama-3-8b,h100-sxm,2000,200,,8,\n"
        "llama-3-8b,h100-sxm,2000,200,3,8,\n"
        "llama-3-8b,h100-sxm,2000,200,,,\n"
        "llama-3-8b,h100-sxm,2000,200,25,,2\n",
    )
    result = invoke("estimate", "--points", path, "--format", "json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 5
    closed = json.loads(invoke("estimate", *POINT, "--concurrency", "25", "-f", "json").stdout)
    assert rows[0]["ttft_ms"] == pytest.approx(closed["ttft_ms"])
    for key in LATENCIES | {"utilisation", "max_requests_per_s"}:
        assert rows[1][key] == pytest.approx(at_8[key]), key
    assert rows[2]["feasible"] is False and "both given" in rows[2]["reason"]
    assert rows[3]["feasible"] is False and "neither given" in rows[3]["reason"]
    assert rows[4]["feasible"] is False and "cv" in rows[4]["reason"]
    # CSV: the open-loop columns after the closed-loop ones, blank where they do not apply
    text = invoke("estimate", "--points", path).stdout
    table = list(csv.DictReader(io.StringIO(text)))
    assert table[0]["ttft_ms_p99"] == "" and float(table[1]["ttft_ms_p99"]) > 0
    assert math.isclose(float(table[1]["utilisation"]), at_8["utilisation"], rel_tol=1e-5)


def test_points_need_a_load_column(tmp_path: Path) -> None:
    path = write(tmp_path, "model,hardware,isl,osl\nllama-3-8b,h100-sxm,2000,200\n")
    assert_one_line_error(invoke("estimate", "--points", path), 1, "concurrency (or rate)")


@pytest.mark.parametrize("cell", ["0", "-3", "inf", "x"])
def test_points_bad_rate_names_the_row(tmp_path: Path, cell: str) -> None:
    path = write(tmp_path, f"model,hardware,isl,osl,rate\nllama-3-8b,h100-sxm,2000,200,{cell}\n")
    result = invoke("estimate", "--points", path, "--format", "json")
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["feasible"] is False and row["reason"].startswith("row 2: rate")
