"""A trace cut into windows: each window's requests, rate, gaps' cv and lengths (hand-computed),
the same whatever the blocks it is fed in; --trace-window and --trace-scale."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.io_trace import read_trace_traffic
from inferencesize.trace_windows import Windows, parse_slice


def _cut(times: list[float], window_s: float, scale: float = 1.0) -> Windows:
    w = Windows(window_s)
    n = len(times)
    w.add(np.array(times), np.arange(1, n + 1, dtype=np.int64), np.full(n, 2, dtype=np.int64))
    return w


def test_windows_by_hand() -> None:
    # windows of 10 s from the first arrival (5 s): [5, 15), [15, 25), [25, 35); 35 s opens
    # a fourth of no length, merged into the third (with the gap 28 -> 35)
    times = [5.0, 6.0, 8.0, 11.0, 15.0, 16.0, 24.0, 26.0, 27.0, 28.0, 35.0]
    w = _cut(times, 10.0).result()
    assert [(x.start_s, x.end_s, x.requests) for x in w] == [
        (0.0, 10.0, 4),
        (10.0, 20.0, 3),
        (20.0, 30.0, 4),
    ]
    # the last window [25, 35] s: 4 requests over 10 s
    assert [x.rate_rps for x in w] == [0.4, 0.3, 0.4]
    # window 1 gaps 1, 2, 3 (mean 2, sd sqrt(2/3)); window 2 gaps 1, 8 (mean 4.5, sd 3.5);
    # window 3 gaps 1, 1, 7 (mean 3, sd sqrt(8)); the gaps 11->15 and 24->26 cross a boundary
    # and are in neither
    assert w[0].gap_cv == pytest.approx(math.sqrt(2 / 3) / 2)
    assert w[1].gap_cv == pytest.approx(3.5 / 4.5)
    assert w[2].gap_cv == pytest.approx(math.sqrt(8) / 3)
    # prompts 1..11 in order: window 1 has 1-4 (mean 2.5, largest 4), window 2 5-7
    assert (w[0].isl_mean, w[0].isl_max, w[1].isl_mean, w[1].isl_max) == (2.5, 4, 6.0, 7)
    assert w[2].osl_mean == 2.0 and w[2].osl_max == 2


def test_a_short_last_window_is_merged_into_the_one_before() -> None:
    # windows of 10 s: [0, 10) has 3, [10, 20) has 2, the last [20, 23] 3 s < 5 s: merged
    w = _cut([0.0, 1.0, 2.0, 10.0, 12.0, 21.0, 23.0], 10.0).result()
    assert [(x.start_s, x.end_s, x.requests) for x in w] == [(0.0, 10.0, 3), (10.0, 23.0, 4)]
    assert w[1].rate_rps == pytest.approx(4 / 13)
    # gaps 2 (10->12), 9 (12->21, into the merged window), 2 (21->23): mean 13/3,
    # sd sqrt(((2 - 13/3)^2 * 2 + (9 - 13/3)^2) / 3)
    mean = 13 / 3
    sd = math.sqrt(((2 - mean) ** 2 * 2 + (9 - mean) ** 2) / 3)
    assert w[1].gap_cv == pytest.approx(sd / mean)


def test_an_empty_window_and_scale() -> None:
    w = _cut([0.0, 1.0, 2.0, 25.0, 26.0, 30.0], 10.0).result(scale=2.0)
    assert [x.requests for x in w] == [3, 0, 3]
    assert w[1].rate_rps == 0.0 and w[1].gap_cv is None and w[1].isl_mean == 0.0
    assert w[0].rate_rps == pytest.approx(2 * 3 / 10)


def test_the_blocks_do_not_change_the_windows() -> None:
    rng = np.random.default_rng(2)
    t = np.cumsum(rng.exponential(0.3, 5000))
    isl = rng.integers(1, 5000, 5000)
    osl = rng.integers(1, 500, 5000)
    whole = Windows(60.0)
    whole.add(t, isl, osl)
    parts = Windows(60.0)
    for a in range(0, 5000, 333):
        parts.add(t[a : a + 333], isl[a : a + 333], osl[a : a + 333])
    for x, y in zip(whole.result(), parts.result(), strict=True):
        assert (x.start_s, x.end_s, x.requests, x.isl_max, x.osl_max) == (
            y.start_s,
            y.end_s,
            y.requests,
            y.isl_max,
            y.osl_max,
        )
        assert x.gap_cv == pytest.approx(y.gap_cv, rel=1e-9)
        assert x.isl_mean == pytest.approx(y.isl_mean, rel=1e-12)
    # every request in exactly one window
    assert sum(x.requests for x in whole.result()) == 5000


@pytest.mark.parametrize(
    ("text", "expected"),
    [("600:1800", (600.0, 1800.0)), (":60", (0.0, 60.0)), ("30:", (30.0, math.inf))],
)
def test_slices(text: str, expected: tuple[float, float]) -> None:
    assert parse_slice(text) == expected


@pytest.mark.parametrize("text", ["60", "a:b", "60:30", "-1:5", "1:2:3", "5:5"])
def test_bad_slices(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_slice(text)


def test_a_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Windows(0.0)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    # 1 req/s for 600 s, then 3 req/s for 600 s (evenly spaced)
    times = [*np.arange(0, 600, 1.0), *np.arange(600, 1200, 1 / 3)]
    path = tmp_path / "t.csv"
    path.write_text(
        "arrival_s,isl,osl\n" + "".join(f"{t:.6f},100,10\n" for t in times), encoding="utf-8"
    )
    return path


def test_read_with_a_slice_and_a_scale(trace: Path) -> None:
    whole = read_trace_traffic(trace, "t", 10.0)
    # 300 s windows; the last ends at the last arrival, 1199.667 s: 900 requests in 299.667 s
    rates = [w.rate_rps for w in whole.windows]
    assert rates == pytest.approx([1.0, 1.0, 3.0, 900 / (1200 - 1 / 3 - 900)], rel=1e-6)
    part = read_trace_traffic(trace, "t", 10.0, slice_s=(600.0, 1200.0), scale=1.5)
    # 1,800 requests from 600 s, a third of a second apart: 3 req/s, times 1.5
    assert part.requests == 1800 and part.mean_rps == pytest.approx(4.5)
    assert [w.rate_rps for w in part.windows] == pytest.approx([4.5, 900 * 1.5 / (300 - 1 / 3)])
    assert part.scale == 1.5 and part.slice_s == (600.0, 1200.0)
    # a stream read (more requests than are held) cuts the same windows
    streamed = read_trace_traffic(trace, "t", 10.0, keep=100)
    assert [(w.start_s, w.requests) for w in streamed.windows] == [
        (w.start_s, w.requests) for w in whole.windows
    ]


def test_the_plan_json_lists_the_windows(trace: Path) -> None:
    question = ["plan", "--model", "llama-3-8b", "--hardware", "dgx-h100", "--precision", "fp8"]
    question += ["--tp", "1", "--pp", "1", "--ttft-ms", "500", "--itl-ms", "30"]
    result = CliRunner().invoke(
        app,
        [*question, "--trace", str(trace), "--window-s", "600", "--trace-scale", "2", "-f", "json"],
    )
    assert result.exit_code == 0, result.stderr
    t = json.loads(result.stdout)["trace"]
    assert t["window_s"] == 600 and t["scale"] == 2
    assert [(w["start_s"], w["requests"]) for w in t["windows"]] == [(0.0, 600), (600.0, 1800)]
    assert t["windows"][1]["rate_rps"] == pytest.approx(2 * 1800 / 599.666667, rel=1e-6)
    bad = CliRunner().invoke(app, [*question, "--trace", str(trace), "--trace-window", "5:1"])
    assert bad.exit_code == 1 and "trace_window: expected 0 <= START < END" in bad.stderr
    empty = CliRunner().invoke(app, [*question, "--trace", str(trace), "--trace-window", "2000:"])
    assert empty.exit_code == 1 and "no requests arrive from 2000 s" in empty.stderr


def test_the_windows_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "sparse.csv"
    path.write_text("arrival_s,isl,osl\n0,1,1\n5e8,1,1\n1e9,1,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="more than 131,072 windows of 300 s: give longer"):
        read_trace_traffic(path, "t", 10.0)
    assert len(read_trace_traffic(path, "t", 10.0, window_s=1e5).windows) == 10_000
