"""Repeat runs: the run-to-run difference of points measured more than once.

Hand-built rows with the differences written out, and the NIM data's own repeats (43 points
at 5 clients measured twice): TTFT differs by up to 42 % between runs, ITL by ~1 %.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from measurement_row import row

from inferencesize.io_measurements import dedupe, read_measurements
from inferencesize.repeats import repeat_spreads

REPO = Path(__file__).resolve().parents[2]


def test_each_later_run_is_compared_with_the_first() -> None:
    rows = [
        row("ttft_ms_avg", 40.0, notes="run 1"),
        row("ttft_ms_avg", 50.0, notes="run 2"),  # 50 / 40 − 1 = 25 %
        row("ttft_ms_avg", 38.0, notes="run 3"),  # |38 / 40 − 1| = 5 %
        row("ttft_ms_avg", 100.0, concurrency="25"),  # another point, measured once
        row("itl_ms_avg", 5.0),
        row("itl_ms_avg", 5.1, notes="repeat"),  # 2 %
    ]
    got = {r.metric: r for r in repeat_spreads(rows)}
    assert list(got) == ["itl_ms_avg", "ttft_ms_avg"]
    itl, ttft = got["itl_ms_avg"], got["ttft_ms_avg"]
    assert (itl.points, itl.pairs) == (1, 1)
    assert itl.median == itl.p90 == itl.max == pytest.approx(0.02)
    assert (ttft.points, ttft.pairs) == (1, 2)
    assert ttft.median == pytest.approx(0.15)  # of 5 % and 25 %
    assert ttft.p90 == pytest.approx(0.05 + 0.9 * 0.20)
    assert ttft.max == pytest.approx(0.25)


def test_points_that_differ_in_anything_but_value_and_notes_are_not_repeats() -> None:
    base = row("ttft_ms_avg", 40.0)
    others = [
        row("ttft_ms_avg", 60.0, tp=2),
        row("ttft_ms_avg", 60.0, isl=200.0),
        row("ttft_ms_avg", 60.0, concurrency="25"),
        row("ttft_ms_avg", 60.0, engine_version="1.8"),
        row("ttft_ms_avg", 60.0, gpu="a100-sxm-80gb"),
        row("ttft_ms_avg", 60.0, source="other"),
        row("itl_ms_avg", 60.0),
    ]
    assert repeat_spreads([base, *others]) == []


def test_nim_data_repeats_show_ttft_varies_between_runs_and_itl_does_not() -> None:
    rows = dedupe(read_measurements(REPO / "data/calibration/measurements.csv"))
    got = {r.metric: r for r in repeat_spreads([m for m in rows if m.source == "nvidia_dli_nim"])}
    ttft, itl = got["ttft_ms_avg"], got["itl_ms_avg"]
    assert ttft.points == itl.points == 43
    # Llama-3-8B fp16 TP2 on A100, 200 / 200 tokens, 5 clients: 37.1701 then 52.8161 ms
    assert ttft.max == pytest.approx(52.8161 / 37.1701 - 1, rel=1e-6)
    assert ttft.max > 0.4 and itl.max < 0.02
