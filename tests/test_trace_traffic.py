"""Sizing for the traffic of a request trace: what it gives the question (hand-computed), the
conflicts it refuses, and --verify replaying it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.simulate import Workload
from inferencesize.trace_traffic import MIN_CV, trace_traffic

runner = CliRunner()


def _workload(times: list[float], isl: list[int], osl: list[int]) -> Workload:
    return Workload(np.array(isl), np.array(osl), np.array(times, dtype=float))


def test_rate_burstiness_and_lengths_by_hand() -> None:
    t = trace_traffic(
        _workload([0.0, 1.0, 3.0, 6.0], [100, 200, 300, 400], [10, 20, 30, 60]), "x", 10
    )
    # gaps 1, 2, 3 s: mean 2 s (0.5 req/s), standard deviation sqrt(2/3) s
    assert t.requests == 4 and t.span_s == 6.0 and t.mean_rps == pytest.approx(0.5)
    assert t.gap_cv == pytest.approx((2.0 / 3.0) ** 0.5 / 2.0) and t.cv == t.gap_cv
    assert (t.isl_mean, t.osl_mean) == (250.0, 30.0)
    # brought to 1 req/s: the same pattern in half the time, from 0
    fast = t.at_rate(1.0)
    assert fast.arrival_s is not None and list(fast.arrival_s) == [0.0, 0.5, 1.5, 3.0]
    assert list(fast.isl) == [100, 200, 300, 400]


def test_even_gaps_are_sized_at_the_least_burstiness() -> None:
    t = trace_traffic(_workload([0.0, 1.0, 2.0, 3.0], [1] * 4, [1] * 4), "x", 10)
    assert t.gap_cv == 0.0 and t.cv == MIN_CV


@pytest.mark.parametrize(
    ("times", "message"),
    [
        ([0.0, 1.0], "at least 3 requests"),
        ([5.0, 5.0, 5.0], "no rate"),
        ([0.0, 0.0, 0.0, 0.0, 100.0], "above the 1 the open-loop model takes"),
    ],
)
def test_a_trace_that_gives_no_traffic_says_why(times: list[float], message: str) -> None:
    n = len(times)
    with pytest.raises(ValueError, match=message):
        trace_traffic(_workload(times, [1] * n, [1] * n), "x", 1.0)


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(3)
    times = np.cumsum(rng.exponential(1 / 6.0, 1200))
    path = tmp_path_factory.mktemp("trace") / "chat.csv"
    rows = [f"{t:.4f},{rng.integers(500, 1501)},{rng.integers(100, 301)}" for t in times]
    path.write_text("arrival_s,isl,osl\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


QUESTION = ["--model", "llama-3-8b", "--hardware", "dgx-h100", "--precision", "fp8", "--tp", "1"]
QUESTION += ["--pp", "1", "--ttft-ms", "500", "--itl-ms", "30", "--latency-stat", "p95"]


def _plan(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["plan", *args, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_the_plan_sizes_for_what_the_trace_gives(trace: Path) -> None:
    from inferencesize.io_trace import read_trace

    want = trace_traffic(read_trace(trace), str(trace), 10.0)
    rec = _plan(*QUESTION, "--trace", str(trace))
    assert rec["arrivals"] == "trace" and rec["origins"]["arrivals"] == "flag"
    assert rec["isl"] == round(want.isl_mean) and rec["osl"] == round(want.osl_mean)
    assert rec["mean_rps"] == pytest.approx(want.mean_rps) and rec["cv"] == want.cv
    assert rec["trace"]["requests"] == 1200 and rec["trace"]["gap_cv"] == pytest.approx(
        1.0, abs=0.1
    )
    # the same question with the trace's figures stated by hand: the same plan
    same = _plan(
        *QUESTION, "--isl", str(rec["isl"]), "--osl", str(rec["osl"]),
        "--mean-rps", repr(want.mean_rps), "--cv", repr(want.cv),
    )  # fmt: skip
    assert same["plan"]["instances"] == rec["plan"]["instances"]
    assert same["plan"]["per_instance"] == rec["plan"]["per_instance"]
    # a stated rate replaces the trace's (its pattern is kept, for --verify)
    assert _plan(*QUESTION, "--trace", str(trace), "--peak-rps", "40")["peak_rps"] == 40.0


def _scenario(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_scenario_names_its_trace_beside_it_and_the_conflicts_are_errors(trace: Path) -> None:
    scenario = _scenario(
        trace.parent,
        "chat.yaml",
        "model: llama-3-8b\ntrace: chat.csv\nttft_ms: 500\nhardware: [dgx-h100]\n"
        "precision: [fp8]\ntp: [1]\npp: [1]\n",
    )
    rec = _plan(str(scenario))
    assert rec["trace"]["file"].endswith("chat.csv") and rec["origins"]["arrivals"] == "scenario"
    for args, message in (
        (["--isl", "100"], "isl: the trace gives ISL, OSL and the gaps' cv; drop isl or trace"),
        (["--arrivals", "closed-loop"], "trace: its requests arrive at a rate, but closed-loop"),
        (["--batching", "static"], "trace: its requests arrive at a rate, but static batching"),
    ):
        result = runner.invoke(app, ["plan", str(scenario), *args])
        assert result.exit_code == 1 and message in result.stderr
        assert result.stderr.count("\n") == 1


def test_verify_replays_the_trace_at_the_peak(trace: Path) -> None:
    rec = _plan(*QUESTION, "--trace", str(trace), "--verify")
    v = rec["verify"]
    assert v["arrivals"].startswith(f"trace {trace} replayed at {rec['peak_rps']:g} req/s")
    assert v["requests"] == 1200  # every request of the trace
    assert v["simulated"]["meets_limits"] and v["agrees"]


def test_a_sweep_refuses_a_trace_rather_than_ignore_it(trace: Path) -> None:
    for args in (
        ["--model", "llama-3-8b", "--trace", str(trace), "--ttft-ms", "500", "--vary", "tp=1,2"],
        ["default", "--vary", f"trace={trace}"],
    ):
        result = runner.invoke(app, ["sweep", *args])
        assert result.exit_code == 1 and "sweep does not model" in result.stderr


def test_arrivals_trace_names_its_file(trace: Path) -> None:
    stated = _scenario(
        trace.parent,
        "stated.yaml",
        "model: llama-3-8b\narrivals: trace\ntrace: chat.csv\nttft_ms: 500\n"
        "hardware: [h100-sxm]\nprecision: [fp8]\ntp: [1]\npp: [1]\n",
    )
    assert _plan(str(stated))["arrivals"] == "trace"
    bare = _scenario(
        trace.parent,
        "bare.yaml",
        "model: llama-3-8b\narrivals: trace\nisl: 100\nosl: 100\npeak_rps: 3\nttft_ms: 500\n",
    )
    result = runner.invoke(app, ["plan", str(bare)])
    assert result.exit_code == 1 and "arrivals: trace needs trace: FILE" in result.stderr
