"""Burstiness from counts: the gamma-renewal IDC against its known limits and a simulation,
its inverse, and the counts gathered window by window in blocks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inferencesize.burstiness import BURST_SCALE_S, count_idc, matched_cv, renewal_idc
from inferencesize.trace_traffic import cv_grid
from inferencesize.trace_windows import Windows


@pytest.mark.parametrize("m", [0.3, 2.6, 40.0])
def test_poisson_counts_have_unit_dispersion(m: float) -> None:
    assert renewal_idc(m, 1.0) == pytest.approx(1.0, abs=1e-4)


def test_over_many_gaps_the_idc_tends_to_cv_squared() -> None:
    # Var N(t) = c² m + (1 − c⁴)/6 + … for gamma gaps (Cox 1962): the IDC → c² as m grows
    assert renewal_idc(2000.0, 2.0) == pytest.approx(4.0, rel=0.01)
    assert renewal_idc(2000.0, 0.5) == pytest.approx(0.25, rel=0.01)


def test_idc_rises_with_cv() -> None:
    values = [renewal_idc(3.0, c) for c in (0.2, 0.5, 1.0, 2.0, 5.0, 10.0)]
    assert values == sorted(values)
    assert values[0] < 1.0 < values[-1]


def test_idc_matches_a_simulated_gamma_renewal_process() -> None:
    rng = np.random.default_rng(7)
    m, c, horizon = 2.6, 4.6, 40_000
    k = 1.0 / c**2
    t = np.cumsum(rng.gamma(k, 1.0 / (k * m), int(m * horizon * 1.3)))
    counts = np.bincount(t[t < horizon].astype(np.int64), minlength=horizon)
    assert renewal_idc(m, c) == pytest.approx(counts.var() / counts.mean(), rel=0.1)


def test_matched_cv_is_the_least_grid_cv_reaching_the_idc() -> None:
    grid = cv_grid(10.0)
    assert grid[-1] == 10.0 and list(grid) == sorted(grid)
    for c in (0.5, 1.0, 3.0):
        got = matched_cv(2.0, renewal_idc(2.0, c), grid)
        below = grid[grid.index(got) - 1]
        assert renewal_idc(2.0, got) >= renewal_idc(2.0, c) * (1 - 1e-9)
        assert renewal_idc(2.0, below) < renewal_idc(2.0, c)
    assert matched_cv(2.0, 1e6, grid) == 10.0  # none reaches it: the last


def test_count_idc_by_hand() -> None:
    # counts 0, 2, 4, 2 in four spans: too few requests and spans to say
    assert count_idc(0 + 4 + 16 + 4, 8, 4) is None
    # 40 requests in 20 spans, squares summing to 200: mean 2, variance 200/20 − 2² = 6
    assert count_idc(200.0, 40, 20) == pytest.approx(6 / 2)


def test_windows_count_spans_across_blocks() -> None:
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0.0, 900.0, 4000))
    t[0] = 0.0
    lengths = np.ones(len(t), dtype=np.int64)
    whole, blocks = Windows(300.0), Windows(300.0)
    whole.add(t, lengths, lengths)
    for part in np.array_split(np.arange(len(t)), 7):
        blocks.add(t[part], lengths[part], lengths[part])
    a, b = whole.result(), blocks.result()
    assert [w.count_idc for w in a] == pytest.approx([w.count_idc for w in b])
    spans = np.floor(t / BURST_SCALE_S).astype(np.int64)
    for j, w in enumerate(a):
        inside = np.bincount(spans[(t >= 300 * j) & (t < 300 * (j + 1))] - 300 * j)
        inside = np.pad(inside, (0, 300 - len(inside)))
        assert w.count_idc == pytest.approx(inside.var() / inside.mean())
        assert math.isclose(w.burst_mean_count, w.requests / 300)
