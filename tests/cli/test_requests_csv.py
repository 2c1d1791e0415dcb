"""simulate --requests-out writes its CSV a column at a time: the same bytes as the row-by-row
formatting of io_trace (``"%d,%d,%.6f,…" % row`` with NaN empty), for every value."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from inferencesize.io_requests import csv_rows, requests_text
from inferencesize.io_trace import requests_csv
from inferencesize.simulate import (
    BatchingConfig,
    ConstantService,
    SimResult,
    Workload,
    poisson_arrivals,
    simulate,
)
from inferencesize.vocabulary import Router


def by_row(columns: list[np.ndarray], fixed: list[bool]) -> bytes:  # type: ignore[type-arg]
    """The reference: Python's '%d' and '%.6f' row by row, 'nan' removed."""
    row = ",".join("%.6f" if f else "%d" for f in fixed) + "\n"
    values = zip(*(c.tolist() for c in columns), strict=True)
    return "".join(row % v for v in values).replace("nan", "").encode()


def same(columns: list[np.ndarray], fixed: list[bool]) -> None:  # type: ignore[type-arg]
    assert csv_rows(columns, fixed) == by_row(columns, fixed)


def test_edge_values() -> None:
    seconds = [
        0.0,
        -0.0,  # '-0.000000'
        -1e-9,  # '-0.000000'
        5e-7,  # just below a half millionth: rounds down
        1.5e-6,
        2.5e-6,
        0.0078125,  # 1/128: an exact tie, to even ('0.007812')
        0.0234375,  # 3/128: to even ('0.023438')
        -0.0234375,
        0.9999995,
        9.9999995,
        999999.9999995,
        123456.5,
        2.0**31 + 0.5,
        2.0**32 - 2.0**-20,
        1e-300,
        math.nan,
        -math.nan,  # '%f' writes 'nan' whatever its sign: empty
        3.14159,
        -2.71828,
    ]
    n = len(seconds)
    ints = [0, -1, 7, 10, 99, 100, 999, 1000, 10**14, -(10**14), 5, 6, 7, 8, 9, 1, 2, 3, 4, 5]
    same([np.array(ints), np.array(seconds), np.array(seconds[::-1])], [False, True, True])
    # every multiple of 1/256 s up to 64 s (ties at each odd multiple of 1/128)
    ticks = np.arange(0, 64 * 256) / 256.0
    same([np.arange(len(ticks)), ticks, -ticks], [False, True, True])
    same([np.zeros(0, dtype=np.int64), np.zeros(0)], [False, True])  # no rows
    nan_only = np.full(n, math.nan)
    same([np.arange(n), nan_only, nan_only], [False, True, True])  # ',,\n' rows


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-(10**14), 10**14),
            st.floats(-(2.0**32) + 1, 2.0**32 - 1) | st.just(math.nan),
            st.floats(-1e-3, 1e-3),
            st.floats(0, 1e6, allow_nan=False),
        ),
        min_size=1,
        max_size=50,
    )
)
def test_any_values_in_range(rows: list[tuple[int, float, float, float]]) -> None:
    cols = [np.array(c) for c in zip(*rows, strict=True)]
    cols[0] = cols[0].astype(np.int64)
    same(cols, [False, True, True, True])


def test_random_microsecond_grid_and_wide_ranges() -> None:
    rng = np.random.default_rng(0)
    n = 20_000
    grid = rng.integers(0, 10**12, n) / 1e6  # values near a whole microsecond
    halves = (rng.integers(0, 10**9, n) + 0.5) / 1e6  # near a half microsecond
    wide = rng.exponential(1.0, n) * 10.0 ** rng.integers(-9, 9, n)
    signed = wide * rng.choice([-1.0, 1.0], n)
    signed[rng.random(n) < 0.1] = math.nan
    ids = rng.integers(-5, 10**12, n)
    same([ids, grid, halves, wide, signed], [False, True, True, True, True])


def _result(instances: int, router: Router) -> SimResult:
    rng = np.random.default_rng(3)
    n = 3000
    isl = rng.integers(1, 4000, n)
    osl = rng.integers(1, 300, n)  # some one-token answers: itl_s empty
    need = (isl + osl).astype(float)
    wl = Workload(isl, osl, poisson_arrivals(rng, n, 40.0))
    svc = ConstantService(0.0123, 0.0456, 64)
    cfg = BatchingConfig("inflight", 64)
    return simulate(wl, svc, cfg, 4000.0, need, instances, router, 0.0013, 1)


def test_the_requests_csv_equals_io_trace() -> None:
    for res in (_result(1, Router.LEAST_LOADED), _result(3, Router.RANDOM)):
        assert res.dropped > 0  # (isl + osl > 4000: dropped, instance -1, empty times)
        for rows in (7, 1000, 65_536):
            assert "".join(requests_text(res, rows)) == requests_csv(res)


def test_values_beyond_the_columns_range_are_written_row_by_row() -> None:
    res = _result(2, Router.ROUND_ROBIN)
    far = replace(res, done_s=np.where(np.isnan(res.done_s), math.inf, res.done_s + 1e12))
    text = "".join(requests_text(far))
    assert text == requests_csv(far) and ",inf\n" in text
