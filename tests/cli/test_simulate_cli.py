"""`infersize simulate` and `plan --verify` in-process: records, seeds, traces, errors."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()
BASE = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--precision", "fp8"]


def sim(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*BASE, *args, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_record_carries_the_operating_point_and_percentiles() -> None:
    rec = sim("--rate", "4", "--requests", "300")
    for key in ("model", "hardware", "precision", "kv_precision", "tp", "pp", "ep", "batching"):
        assert key in rec
    assert rec["isl_mean"] == 2000 and rec["osl_mean"] == 200
    assert rec["max_batch"] == 442  # KV capacity of the seed case (as estimate reports)
    for metric in ("ttft_ms", "itl_ms", "e2e_ms", "queue_ms"):
        d = rec[metric]
        assert d["p50"] <= d["p90"] <= d["p95"] <= d["p99"]
    assert rec["measured_requests"] == 270  # 10 % warm-up left out
    assert 0 < rec["gpu_busy"] <= 1
    assert rec["requests_per_s"] > 0 and rec["dropped_requests"] == 0


def test_seed_makes_runs_reproducible() -> None:
    args = ("--rate", "5", "--requests", "300", "--isl-stddev", "300")
    a, b = sim(*args, "--seed", "3"), sim(*args, "--seed", "3")
    c = sim(*args, "--seed", "4")
    assert a == b
    assert a["ttft_ms"] != c["ttft_ms"]


def test_compare_runs_each_policy_on_the_same_traffic() -> None:
    recs = sim("--rate", "3", "--requests", "300", "--compare", "static,dynamic,inflight")
    assert [r["batching"] for r in recs] == ["static", "dynamic", "inflight"]
    e2e = [r["e2e_ms"]["mean"] for r in recs]
    assert e2e[2] < e2e[1] < e2e[0]
    table = runner.invoke(
        app, [*BASE, "--rate", "3", "--requests", "200", "--compare", "static,inflight"]
    )
    assert table.exit_code == 0 and "Poisson 3 req/s" in table.stdout


def test_closed_loop_and_bursty_arrivals() -> None:
    closed = sim("--concurrency", "8", "--requests", "300")
    assert closed["concurrency"] == 8 and "closed loop" in closed["arrivals"]
    bursty = sim("--rate", "4", "--cv", "3", "--requests", "400")
    poisson = sim("--rate", "4", "--requests", "400")
    assert bursty["ttft_ms"]["p99"] > poisson["ttft_ms"]["p99"]


def test_trace_input_and_requests_out(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,isl,osl,user\n0.5,100,20,a\n0.0,300,10,b\n1.0,50,5,c\n")
    out = tmp_path / "requests.csv"
    result = runner.invoke(
        app, [*BASE, "--trace", str(trace), "--requests-out", str(out), "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    rec = json.loads(result.stdout)
    assert rec["requests"] == 3 and rec["arrivals"] == "trace trace.csv"
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [float(r["arrival_s"]) for r in rows] == [0.0, 0.5, 1.0]  # sorted by time
    assert [int(r["isl"]) for r in rows] == [300, 100, 50]
    for r in rows:
        assert float(r["e2e_s"]) >= float(r["ttft_s"]) >= float(r["queue_s"]) >= 0


def _requests_out(tmp_path: Path, *args: str) -> tuple[dict, list[dict[str, str]]]:  # type: ignore[type-arg]
    out = tmp_path / "requests.csv"
    result = runner.invoke(app, [*BASE, *args, "--requests-out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), list(csv.DictReader(io.StringIO(out.read_text())))


def test_random_balancer_draws_apart_from_the_traffic(tmp_path: Path) -> None:
    args = ("--rate", "12", "--requests", "400", "--instances", "3", "--isl-stddev", "300")
    rec, rows = _requests_out(tmp_path, *args, "--balancer", "random", "--seed", "5")
    assert rec["balancer"] == "random" and rec["instances"] == 3
    again, rows_again = _requests_out(tmp_path, *args, "--balancer", "random", "--seed", "5")
    assert again == rec and rows_again == rows  # same seed, same run
    picked = [int(r["instance"]) for r in rows]
    assert set(picked) == {0, 1, 2}
    assert picked != [i % 3 for i in range(len(picked))]  # not round-robin
    # the draws leave the traffic alone: the same seed gives the same requests on any balancer
    _, least = _requests_out(tmp_path, *args, "--balancer", "least-loaded", "--seed", "5")
    for column in ("arrival_s", "isl", "osl"):
        assert [r[column] for r in rows] == [r[column] for r in least]
    _, other = _requests_out(tmp_path, *args, "--balancer", "random", "--seed", "6")
    assert [int(r["instance"]) for r in other] != picked
    bad = runner.invoke(app, [*BASE, "--rate", "1", "--balancer", "fastest"])
    assert bad.exit_code == 2
    assert "'fastest' is not one of random, round-robin, least-loaded" in bad.stderr


def _trace_error(tmp_path: Path, text: str) -> str:
    trace = tmp_path / "bad.csv"
    trace.write_text(text)
    result = runner.invoke(app, [*BASE, "--trace", str(trace)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    return lines[0]


def test_trace_errors_are_one_line(tmp_path: Path) -> None:
    msg = _trace_error(tmp_path, "time,isl,osl\n0,10,10\n")
    assert "bad.csv: missing column arrival_s" in msg and "arrival_s, isl, osl" in msg
    msg = _trace_error(tmp_path, "arrival_s,isl,osl\n0,10,10\n-2,10,10\n")
    assert "bad.csv: line 3: arrival_s: must be >= 0 seconds (got -2)" in msg
    msg = _trace_error(tmp_path, "arrival_s,isl,osl\n0,ten,10\n")
    assert "line 2: isl: expected a number (got 'ten')" in msg
    msg = _trace_error(tmp_path, "arrival_s,isl,osl\n0,10,0.5\n")
    assert "line 2: osl: expected a whole number of tokens >= 1" in msg
    msg = _trace_error(tmp_path, "arrival_s,isl,osl\n")
    assert "no requests" in msg
    result = runner.invoke(app, [*BASE, "--trace", str(tmp_path / "missing.csv")])
    assert result.exit_code == 1 and "file not found" in result.stderr


def test_usage_errors() -> None:
    none = runner.invoke(app, BASE)
    assert none.exit_code == 2 and "exactly one of --rate, --concurrency or --trace" in none.stderr
    both = runner.invoke(app, [*BASE, "--rate", "1", "--concurrency", "2"])
    assert both.exit_code == 2
    bad = runner.invoke(app, [*BASE, "--rate", "1", "--compare", "static,magic"])
    assert bad.exit_code == 2 and "'magic' is not one of" in bad.stderr


def test_plan_verify_adds_instances_until_the_mean_meets_the_limits() -> None:
    result = runner.invoke(
        app,
        [
            "plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--precision", "fp8",
            "--tp", "1", "--isl", "2000", "--osl", "200", "--peak-rps", "20", "--itl-ms", "10",
            "--arrivals", "closed-loop", "--verify", "--format", "json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    v = data["verify"]
    assert v["statistics"] == {"ttft": "mean", "itl": "mean", "e2e": "mean"}
    assert v["analytic"]["instances"] == data["plan"]["instances"]
    assert v["meets_limits"] and v["simulated"]["held"]["itl_ms"] <= 10
    assert v["latency"]["mean"]["itl_ms"] == v["simulated"]["held"]["itl_ms"]
    assert v["simulated"]["instances"] == v["analytic"]["instances"] + v["instances_delta"]
    assert v["instances_delta"] >= 1  # the closed-loop plan meets 10 ms; Poisson arrivals do not
    table = runner.invoke(
        app,
        [
            "plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--precision", "fp8",
            "--tp", "1", "--isl", "2000", "--osl", "200", "--peak-rps", "20", "--itl-ms", "10",
            "--arrivals", "closed-loop", "--verify",
        ],
    )  # fmt: skip
    assert table.exit_code == 0
    added = re.search(r"needs (\d+) instances \((\d+) more\)", table.stdout)
    assert added is not None and int(added.group(2)) >= 1


def test_arrivals_and_cv_read_as_on_plan_and_estimate() -> None:
    plain = sim("--rate", "4", "--cv", "2", "--requests", "300")
    checked = sim("--arrivals", "poisson", "--rate", "4", "--cv", "2", "--requests", "300")
    assert plain["arrivals"] == checked["arrivals"] == "gamma 4 req/s, cv 2"
    assert plain["ttft_ms"] == checked["ttft_ms"]
    closed = sim("--arrivals", "closed-loop", "--concurrency", "4", "--requests", "300")
    assert closed["concurrency"] == 4
    for args, needle in (
        (["--concurrency", "4", "--cv", "2"], "--cv describes arrivals at a rate"),
        (["--concurrency", "4", "--arrivals", "poisson"], "--arrivals poisson needs --rate"),
        (["--rate", "4", "--arrivals", "closed-loop"], "--arrivals closed-loop needs"),
        (["--rate", "4", "--cv", "11"], "--cv: must be <= 10"),  # the ceiling of plan's cv
    ):
        result = runner.invoke(app, [*BASE, *args])
        assert result.exit_code in (1, 2), result.stdout
        assert result.stderr.startswith(f"error: {needle}"), result.stderr
        assert len(result.stderr.splitlines()) == 1
