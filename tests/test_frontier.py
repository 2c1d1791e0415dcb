"""Pareto frontier: hand-computed masks, grids, and properties on a real candidate set."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.frontier import Frontier, concurrency_grid, frontier, pareto_mask
from inferencesize.planner import Limits
from inferencesize.plotting import Series, terminal_plot
from inferencesize.question import ClosedLoop, OpenLoop, Question, SearchSpace
from inferencesize.vocabulary import Batching

LIMITS = Limits(ttft_s=1.0, itl_s=0.04)


@cache
def _frontier() -> Frontier:
    c = _catalog()
    space = SearchSpace(
        c.model("llama-3-70b"), (c.hardware("h100-sxm"),), ["fp8", "bf16"], None, None, [1, 2], None
    )
    q = Question(space, 2000, 200, LIMITS, ClosedLoop(), Batching.INFLIGHT, None)
    return frontier(_est(), q, max_concurrency=300)


def test_pareto_mask_by_hand() -> None:
    # (1,3) (2,2) (3,1) trade off; (2,1) is beaten by (2,2); the repeated (1,3) keeps one copy
    x = [1, 2, 3, 2, 1]
    y = [3, 2, 1, 1, 3]
    assert pareto_mask(x, y).tolist() == [True, True, True, False, False]
    assert pareto_mask([], []).tolist() == []


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=40))
def test_pareto_mask_matches_definition(pts: list[tuple[int, int]]) -> None:
    x = np.array([p[0] for p in pts], dtype=float)
    y = np.array([p[1] for p in pts], dtype=float)
    mask = pareto_mask(x, y)
    for i in range(len(pts)):
        dominated = np.any((x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i])))
        if mask[i]:
            assert not dominated
        elif not dominated:  # a duplicate of a kept point
            same = np.flatnonzero((x == x[i]) & (y == y[i]))
            assert mask[same].sum() == 1


def test_concurrency_grid() -> None:
    assert concurrency_grid(5).tolist() == [1, 2, 3, 4, 5]
    big = concurrency_grid(100_000, limit=512)
    assert big[:256].tolist() == list(range(1, 257))
    assert big[-1] == 100_000 and len(big) <= 513
    assert np.all(np.diff(big) > 0)


def test_frontier_points_are_not_dominated_and_cover_the_rest() -> None:
    fr = _frontier()
    x, y = fr.tokens_per_s_per_user, fr.tokens_per_s_per_gpu
    on = np.flatnonzero(fr.on_frontier)
    assert 0 < on.size < fr.size
    for i in on:
        assert not np.any((x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i])))
    off = np.flatnonzero(~fr.on_frontier)
    for i in off[:: max(1, off.size // 200)]:
        assert np.any((x[on] >= x[i]) & (y[on] >= y[i]))


def test_ends_and_goodput() -> None:
    fr = _frontier()
    lat, thr, best = fr.latency_optimal(), fr.throughput_optimal(), fr.best_within_limits()
    assert lat is not None and thr is not None and best is not None
    assert fr.tokens_per_s_per_user[lat] == fr.tokens_per_s_per_user.max()
    assert fr.tokens_per_s_per_gpu[thr] == fr.tokens_per_s_per_gpu.max()
    # the latency end runs one request at a time
    assert fr.concurrency[lat] == 1
    meets = (fr.ttft_s <= 1.0) & (fr.itl_s <= 0.04)
    assert np.array_equal(fr.meets_limits, meets)
    assert fr.meets_limits[best]
    assert fr.tokens_per_s_per_gpu[best] == fr.tokens_per_s_per_gpu[meets].max()
    assert not np.any(fr.on_goodput_frontier & ~fr.meets_limits)


def test_point_values_match_the_estimator() -> None:
    fr = _frontier()
    i = int(np.flatnonzero(fr.on_frontier)[3])
    cand = fr.candidates[int(fr.candidate_index[i])]
    res = _est().resolve(cand, 2200)
    op = _est().point(res, 2000, 200, int(fr.concurrency[i]), "inflight")
    assert op is not None
    assert fr.ttft_s[i] == pytest.approx(op.ttft_s, rel=1e-9)
    assert fr.itl_s[i] == pytest.approx(op.itl_s, rel=1e-9)
    # tokens/s per GPU = req/s · OSL / GPUs; per user = 1 / ITL
    assert fr.tokens_per_s_per_gpu[i] == pytest.approx(op.requests_per_s * 200 / cand.par.gpus)
    assert fr.tokens_per_s_per_user[i] == pytest.approx(1.0 / op.itl_s)


def test_out_of_memory_candidates_are_rejected() -> None:
    fr = _frontier()
    labels = {r.candidate for r in fr.rejected}
    assert "h100-sxm bf16 tp1" in labels  # 141 GB of BF16 weights on one 80 GB GPU
    assert all(r.reason.startswith("out of memory") for r in fr.rejected)


def test_terminal_plot_places_points() -> None:
    text = terminal_plot(
        [Series([0.0, 10.0], [0.0, 5.0], "x"), Series([10.0], [5.0], "T")],
        "per user",
        "per GPU",
        width=11,
        height=6,
    )
    lines = text.splitlines()
    assert lines[0] == "per GPU"
    grid = [line.split("│", 1)[1] for line in lines[1:7]]
    assert grid[0] == " " * 10 + "T"  # (10, 5): top right, drawn over by the later series
    assert grid[5] == "x" + " " * 10  # (0, 0): bottom left
    assert lines[1].startswith("5 │") and lines[6].startswith("0 │")
    assert lines[8].rstrip().endswith("10")


# --------------------------------------------------------------------------- open loop


@cache
def _open(stat: str) -> Frontier:
    c = _catalog()
    limits = Limits(ttft_s=0.3, itl_s=0.025, stats=(stat, stat, stat))
    space = SearchSpace(
        c.model("llama-3-8b"), (c.hardware("h100-sxm"),), ["fp8"], None, [1], [1], None
    )
    return frontier(_est(), Question(space, 1000, 200, limits, OpenLoop(), Batching.INFLIGHT, None))


def test_open_loop_sweeps_shares_of_the_sustainable_rate() -> None:
    from inferencesize.frontier import RATE_SHARES
    from inferencesize.openloop import max_rate_rps

    fr = _open("p95")
    assert fr.open_loop and fr.stats == ("p95", "p95", "p95")
    (cand,) = fr.candidates
    res = _est().resolve(cand, 1200)
    assert res.deployment is not None
    top = max_rate_rps(res.deployment, 1000, 200, max_in_flight=res.max_concurrency)
    assert fr.requests_per_s == pytest.approx(np.array(RATE_SHARES) * top)
    # one instance's output tokens/s per GPU is its rate × OSL (TP 1)
    assert fr.tokens_per_s_per_gpu == pytest.approx(fr.requests_per_s * 200)
    # more traffic: every latency grows, requests in flight too
    for values in (fr.ttft_s, fr.itl_s, fr.e2e_s, fr.concurrency):
        assert np.all(np.diff(values) > 0)
    # in flight (Little) never exceeds the rate times the time a request spends in the engine
    assert np.all(fr.concurrency <= fr.requests_per_s * _open("mean").e2e_s * (1 + 1e-6))


def test_open_loop_tail_statistic_sits_above_the_mean() -> None:
    mean, tail = _open("mean"), _open("p99")
    assert mean.stats == ("mean", "mean", "mean")
    assert np.all(tail.ttft_s > mean.ttft_s) and np.all(tail.e2e_s > mean.e2e_s)
    # a p99 limit is stricter than the same mean limit: no more points meet it
    assert tail.meets_limits.sum() <= mean.meets_limits.sum()
    assert np.all(tail.meets_limits <= mean.meets_limits)


def test_closed_loop_frontier_stays_concurrency() -> None:
    fr = _frontier()
    assert not fr.open_loop and fr.stats == ("mean", "mean", "mean")
    assert fr.concurrency.dtype.kind == "i"
