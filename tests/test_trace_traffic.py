"""Sizing for the traffic of a request trace: what it gives the question (hand-computed), the
conflicts it refuses, and --verify replaying it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from inferencesize import io_trace, io_trace_formats
from inferencesize.cli import app
from inferencesize.errors import InputError
from inferencesize.io_trace import read_trace_traffic
from inferencesize.simulate import Workload
from inferencesize.trace_traffic import (
    CV_STEP,
    MIN_CV,
    REPLAY_MAX_REQUESTS,
    TraceFigures,
    sized_cv,
    streamed_traffic,
    trace_traffic,
)
from inferencesize.trace_windows import Windows

runner = CliRunner()


def _workload(times: list[float], isl: list[int], osl: list[int]) -> Workload:
    return Workload(np.array(isl), np.array(osl), np.array(times, dtype=float))


def test_rate_burstiness_and_lengths_by_hand() -> None:
    t = trace_traffic(
        _workload([0.0, 1.0, 3.0, 6.0], [100, 200, 300, 400], [10, 20, 30, 60]), "x", 10
    )
    # gaps 1, 2, 3 s: mean 2 s (0.5 req/s), standard deviation sqrt(2/3) s
    assert t.requests == 4 and t.span_s == 6.0 and t.mean_rps == pytest.approx(0.5)
    assert t.gap_cv == pytest.approx((2.0 / 3.0) ** 0.5 / 2.0)
    assert t.gap_cv <= t.cv <= t.gap_cv * CV_STEP  # sized at it rounded up onto the grid
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
    ],
)
def test_a_trace_that_gives_no_traffic_says_why(times: list[float], message: str) -> None:
    n = len(times)
    with pytest.raises(ValueError, match=message):
        trace_traffic(_workload(times, [1] * n, [1] * n), "x", 1.0)


def test_a_trace_burstier_than_the_model_takes_is_sized_at_its_limit() -> None:
    # gaps 0, 0, 0, 100 s: mean 25 s, standard deviation sqrt(3·25² + 75²)/2 = 25·sqrt(3),
    # cv sqrt(3) = 1.73, above a limit of 1: sized at 1, not refused
    t = trace_traffic(_workload([0.0, 0.0, 0.0, 0.0, 100.0], [1] * 5, [1] * 5), "x", 1.0)
    assert t.gap_cv == pytest.approx(3**0.5) and t.cv == 1.0


def test_each_window_is_sized_at_its_own_cv_and_the_plan_at_the_busiest() -> None:
    # window 0 (0-10 s): 3 requests at 0, 5, 9.99 (gaps 5, 4.99: cv 0.001 -> MIN_CV);
    # window 1 (10-20 s, the last arrival's short window merged in): 10, 10, 10, 19, 20,
    # gaps 0, 0, 9, 1 (the 9.99 -> 10 gap crosses the boundary: in neither), mean 2.5 s,
    # variance (81 + 1)/4 - 2.5² = 14.25: cv sqrt(14.25)/2.5; 5 requests against 3
    times = [0.0, 5.0, 9.99, 10.0, 10.0, 10.0, 19.0, 20.0]
    w = _workload(times, [1] * 8, [1] * 8)
    windows = Windows(10.0)
    windows.add(np.asarray(w.arrival_s), w.isl, w.osl)
    t = trace_traffic(w, "x", 10.0).cut(windows.result(), 10.0, 1.0, None)
    first, second = t.windows
    assert first.cv == sized_cv(first.gap_cv, 0.0, 10.0)[0] and first.cv_capped is False
    assert second.gap_cv == pytest.approx(14.25**0.5 / 2.5)
    assert second.cv is not None and second.cv >= second.gap_cv
    assert t.cv == second.cv  # the busiest window's
    capped = trace_traffic(w, "x", 1.0).cut(windows.result(), 10.0, 1.0, None)
    assert [x.cv_capped for x in capped.windows] == [False, True] and capped.cv == 1.0
    assert capped.cv_capped == [1]
    # a window of one request (no gap to measure) takes the busiest window's cv
    sparse = Windows(10.0)
    more = np.array([*times, 25.0, 35.0, 45.0])  # windows 2-4: 20, 25 · 35 · 45 (one gap or none)
    sparse.add(more, np.ones(11, np.int64), np.ones(11, np.int64))
    cut = trace_traffic(w, "x", 10.0).cut(sparse.result(), 10.0, 1.0, None)
    assert [x.gap_cv is None for x in cut.windows] == [False, False, True, True, True]
    assert {x.cv for x in cut.windows[2:]} == {cut.cv} == {cut.windows[1].cv}


@pytest.mark.parametrize("measured", [0.0, 0.01, 0.05, 0.3, 0.999, 1.0, 1.2, 4.7, 9.99, 10.0])
def test_a_window_cv_is_rounded_up_onto_the_grid(measured: float) -> None:
    cv, capped = sized_cv(measured, 0.0, 10.0)
    assert not capped and max(measured, MIN_CV) <= cv <= max(measured, MIN_CV) * CV_STEP * (
        1 + 1e-9
    )
    k = round(math.log(cv / MIN_CV) / math.log(CV_STEP))
    assert cv == pytest.approx(MIN_CV * CV_STEP**k) or cv == 10.0  # on the grid: few searches
    assert sized_cv(None, measured, 10.0) == (cv, False)  # too few gaps: the fallback's
    assert sized_cv(10.01, 0.0, 10.0) == (10.0, True)


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
    from inferencesize.io_trace import read_trace_traffic

    want = read_trace_traffic(trace, str(trace), 10.0)  # cut into windows, as plan reads it
    # sized for the mean lengths (the default, the length distribution: tests/test_trace_lengths)
    rec = _plan(*QUESTION, "--trace", str(trace), "--trace-lengths", "mean")
    assert rec["arrivals"] == "trace" and rec["origins"]["arrivals"] == "flag"
    assert rec["isl"] == round(want.isl_mean) and rec["osl"] == round(want.osl_mean)
    assert rec["mean_rps"] == pytest.approx(want.mean_rps) and rec["cv"] == want.cv
    assert rec["trace"]["requests"] == 1200 and rec["trace"]["gap_cv"] == pytest.approx(
        1.0, abs=0.1
    )
    assert rec["trace"]["verify_replays"] == 1200  # all of it, with or without --verify
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


def test_a_trace_too_slow_for_a_peak_is_named_as_given(tmp_path: Path) -> None:
    # 3 requests over 2e5 s: the busiest 300-s window is the last, from 199,800 s to the last
    # arrival at 200,000 s: one in 200 s, 0.005 req/s, a peak of 0 (P(N = 0) = e^-0.005 >= 0.95)
    slow = _scenario(tmp_path, "slow.csv", "arrival_s,isl,osl\n0,100,10\n1e5,100,10\n2e5,100,10\n")
    scenario = _scenario(
        tmp_path, "slow.yaml", "model: llama-3-8b\nttft_ms: 500\ntrace: slow.csv\n"
    )
    problem = (
        "a mean of 0.005 req/s is no request in most seconds, a peak of 0 at percentile 0.95:"
        " nothing to size for; state the peak to serve (peak_rps, --peak-rps) or a higher"
        " mean_rps\n"
    )
    for args, where in (
        (["--model", "llama-3-8b", "--ttft-ms", "500", "--trace", str(slow)], "--trace"),
        ([str(scenario)], f"{scenario}: trace"),
    ):
        result = runner.invoke(app, ["plan", *args])
        assert result.exit_code == 1 and result.stderr == f"error: {where}: {problem}"


def test_verify_replays_the_trace_at_the_peak(trace: Path) -> None:
    rec = _plan(*QUESTION, "--trace", str(trace), "--verify")
    v = rec["verify"]
    assert v["arrivals"].startswith(f"trace {trace} replayed at {rec['peak_rps']:g} req/s")
    assert v["requests"] == 1200 == rec["trace"]["verify_replays"]  # every request of the trace
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


# --------------------------------------------------------------------------- long traces


def test_figures_gathered_block_by_block_by_hand() -> None:
    figures = TraceFigures()
    ints = np.array([1, 1], dtype=np.int64)
    figures.add(np.array([0.0, 1.0]), ints * 100, ints * 10)
    figures.add(np.array([3.0, 6.0]), ints * 300, ints * 30)
    figures.add(np.array([]), np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    # gaps 1, 2 | 3 (across the blocks), 3: in two merges; as a whole: 1, 2, 3
    assert (figures.requests, figures.first_s, figures.last_s) == (4, 0.0, 6.0)
    assert (figures.sums.isl, figures.sums.osl) == (800, 80)
    assert (figures.sums.isl_osl, figures.sums.osl_sq) == (2 * 100 * 10 + 2 * 300 * 30, 2000)
    assert figures.gaps == 3 and figures.gap_mean_s == pytest.approx(2.0)
    assert figures.gap_m2 == pytest.approx(2.0)  # (1-2)^2 + (2-2)^2 + (3-2)^2
    t = streamed_traffic(figures, _workload([0.0, 1.0], [100, 100], [10, 10]), "x", 10)
    same = trace_traffic(
        _workload([0.0, 1.0, 3.0, 6.0], [100, 100, 300, 300], [10] * 2 + [30] * 2), "x", 10
    )
    assert (t.requests, t.span_s, t.isl_mean, t.osl_mean) == (4, 6.0, 200.0, 20.0)
    assert t.mean_rps == pytest.approx(same.mean_rps) and t.gap_cv == pytest.approx(same.gap_cv)
    assert t.replayed == 2 and t.replay_note() == "its first 2 of 4 requests: 1 of its 6 s"


def test_the_lengths_of_a_trace_too_long_to_hold_are_sampled_over_all_of_it() -> None:
    """Prompts that drift (100 tokens in the first half, 1,000 in the second): a sample of
    1,000 of 10,000 requests holds both halves about equally, as a uniform sample does (the
    first 1,000 would hold only the short ones); the means are exact, from the sums."""
    samples = []
    for block in (10_000, 997):
        figures = TraceFigures(sample_size=1000)
        isl = np.repeat(np.array([100, 1000], dtype=np.int64), 5000)
        osl = np.full(10_000, 10, dtype=np.int64)
        for lo in range(0, 10_000, block):
            hi = min(lo + block, 10_000)
            figures.add(np.arange(lo, hi, dtype=float), isl[lo:hi], osl[lo:hi])
        assert len(figures.sample_isl) == 1000
        late = float(np.mean(figures.sample_isl == 1000))
        assert abs(late - 0.5) < 4 * math.sqrt(0.25 / 1000)
        mix = figures.lengths()
        assert (mix.isl_mean, mix.osl_mean) == (550.0, 10.0)
        assert mix.kv_tokens == 560.0  # E[osl·(isl + osl)] / E[osl], every request
        samples.append(figures.sample_isl)
    assert np.array_equal(samples[0], samples[1])  # the same sample whatever the blocks


LONG = 250_000  # past REPLAY_MAX_REQUESTS (200,000): gathered in one pass, replayed in part


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(11)
    times = np.cumsum(rng.gamma(2.0, 1 / 120.0, LONG))  # 60 req/s, gaps' cv 1/sqrt(2)
    isl = rng.integers(100, 4001, LONG)
    osl = rng.integers(20, 501, LONG)
    path = tmp_path_factory.mktemp("long") / "long.csv"
    with path.open("w", encoding="utf-8") as fh:
        fh.write("arrival_s,isl,osl\n")
        fh.writelines(f"{t:.6f},{a},{b}\n" for t, a, b in zip(times, isl, osl, strict=True))
    return path


def test_a_long_trace_gives_its_figures_in_one_pass(long_trace: Path) -> None:
    t = read_trace_traffic(long_trace, "long.csv", 10.0)
    # by hand, with numpy, from the file as written
    table = np.loadtxt(long_trace, delimiter=",", skiprows=1)
    arrival, isl, osl = table[:, 0], table[:, 1], table[:, 2]
    gaps = np.diff(arrival)
    assert t.requests == LONG and t.span_s == pytest.approx(arrival[-1] - arrival[0], rel=1e-15)
    assert t.mean_rps == pytest.approx(1.0 / gaps.mean(), rel=1e-12)
    assert t.gap_cv == pytest.approx(gaps.std() / gaps.mean(), rel=1e-9)
    busiest = max(t.windows, key=lambda w: w.rate_rps)
    assert t.cv == busiest.cv == sized_cv(busiest.gap_cv, 0.0, 10.0)[0]
    assert t.isl_mean == pytest.approx(isl.mean(), rel=1e-15)
    assert t.osl_mean == pytest.approx(osl.mean(), rel=1e-15)
    # the length distribution: its means and occupancy-weighted KV from every request
    assert t.lengths is not None and t.lengths.isl_mean == t.isl_mean
    assert t.lengths.kv_tokens == pytest.approx(np.dot(osl, isl + osl) / osl.sum(), rel=1e-12)
    # replayed: its first REPLAY_MAX_REQUESTS requests, as they stand in the file
    assert t.replayed == REPLAY_MAX_REQUESTS < t.requests
    w = t.workload
    assert w.arrival_s is not None
    assert np.array_equal(w.arrival_s, arrival[:REPLAY_MAX_REQUESTS])
    assert np.array_equal(w.isl, isl[:REPLAY_MAX_REQUESTS])
    assert np.array_equal(w.osl, osl[:REPLAY_MAX_REQUESTS])
    # brought to twice the trace's rate: the same pattern in half the time, from 0
    fast = t.at_rate(2.0 * t.mean_rps)
    assert fast.arrival_s is not None
    assert np.allclose(fast.arrival_s, (arrival[:REPLAY_MAX_REQUESTS] - arrival[0]) / 2.0)
    assert t.replay_note().startswith(f"its first 200,000 of {LONG:,} requests:")


def test_the_json_says_how_much_of_a_long_trace_verify_replays(long_trace: Path) -> None:
    rec = _plan(*QUESTION, "--trace", str(long_trace))
    assert rec["trace"]["requests"] == LONG == 250_000
    assert rec["trace"]["verify_replays"] == REPLAY_MAX_REQUESTS == 200_000


def test_the_figures_do_not_depend_on_the_blocks(
    long_trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = read_trace_traffic(long_trace, "long.csv", 10.0)
    monkeypatch.setattr(io_trace_formats, "BLOCK_ROWS", 997)
    small = read_trace_traffic(long_trace, "long.csv", 10.0)
    assert (small.requests, small.span_s, small.isl_mean) == (
        whole.requests,
        whole.span_s,
        whole.isl_mean,
    )
    assert small.gap_cv == pytest.approx(whole.gap_cv, rel=1e-12)
    assert np.array_equal(small.workload.isl, whole.workload.isl)
    assert small.lengths == whole.lengths


def test_rows_out_of_order(tmp_path: Path) -> None:
    path = tmp_path / "shuffled.csv"
    path.write_text("arrival_s,isl,osl\n0,10,1\n2,20,2\n1,30,3\n3,40,4\n5,50,5\n4,60,6\n")
    # held whole (at most `keep` requests): sorted, as a short trace always was
    t = read_trace_traffic(path, "shuffled.csv", 10.0)
    assert t.workload.arrival_s is not None and list(t.workload.arrival_s) == [0, 1, 2, 3, 4, 5]
    assert list(t.workload.isl) == [10, 30, 20, 40, 60, 50] and t.gap_cv == 0.0
    # longer than `keep`: read in file order, so a row before the one above it is an error
    with pytest.raises(InputError) as err:
        read_trace_traffic(path, "shuffled.csv", 10.0, keep=4)
    assert str(err.value) == (
        f"{path}: line 4: arrival_s: 1 s comes before the row above (2 s): a trace of more"
        " than 4 requests must list them in arrival order (sort its rows by arrival_s)"
    )


def test_verify_replays_the_first_requests_of_a_long_trace_and_says_so(
    trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(io_trace, "REPLAY_MAX_REQUESTS", 1000)  # the chat trace has 1,200
    rec = _plan(*QUESTION, "--trace", str(trace), "--verify")
    assert rec["trace"]["requests"] == 1200  # its figures: every request
    v = rec["verify"]
    assert v["arrivals"].startswith(f"trace {trace} (its first 1,000 of 1,200 requests: ")
    assert v["requests"] == 1000
    table = runner.invoke(app, ["plan", *QUESTION, "--trace", str(trace), "--verify"])
    assert table.exit_code == 0 and "its first 1,000 of 1,200 requests" in table.stdout
