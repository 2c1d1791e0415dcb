"""Overload: a run whose servers cannot keep up with its arrivals, on hand-built runs (a
single server of known service time, first come first served); the simulator's own runs are
checked through the CLI (tests/cli/test_reliability.py)."""

from __future__ import annotations

import numpy as np
import pytest

from inferencesize.simulate.engine import SimResult
from inferencesize.simulate.stats import OVERLOAD_TOLERANCE, summarize


def fifo_run(rate: float, service_s: float, n: int, closed: bool = False) -> SimResult:
    """Arrivals every 1/rate s to one server taking service_s each (D/D/1, FIFO)."""
    arrival = np.arange(n) / rate
    done = np.empty(n)
    free = 0.0
    for i, t in enumerate(arrival):
        free = max(free, t) + service_s
        done[i] = free
    return SimResult(
        arrival_s=arrival,
        admit_s=done - service_s,
        first_token_s=done - service_s + 0.01,
        done_s=done,
        instance=np.zeros(n, dtype=np.int64),
        isl=np.full(n, 100, dtype=np.int64),
        osl=np.full(n, 10, dtype=np.int64),
        busy_s=np.array([service_s * n]),
        end_s=float(done[-1]),
        closed_loop=closed,
        concurrency=1,
    )


def test_a_server_at_twice_its_capacity_is_overloaded() -> None:
    # 10 arrivals/s, 0.2 s each: 5 completions/s; the queue grows by 5 requests a second
    s = summarize(fifo_run(10.0, 0.2, 2000), warmup=0.1)
    assert s.overloaded
    assert s.arrival_rps == pytest.approx(10.0, rel=1e-3)
    assert s.completion_rps == pytest.approx(5.0, rel=0.01)


@pytest.mark.parametrize("load", [0.5, 0.9, 0.99])
def test_a_server_below_capacity_keeps_up(load: float) -> None:
    s = summarize(fifo_run(10.0, load / 10.0, 2000), warmup=0.1)
    assert not s.overloaded
    assert s.completion_rps == pytest.approx(s.arrival_rps, rel=0.01)


def test_just_over_capacity_within_noise_is_not_flagged_but_beyond_it_is() -> None:
    # n = 1800 measured arrivals: the floor is 1 - 5 % - 3 / sqrt(1800) = 0.879
    floor = 1 - OVERLOAD_TOLERANCE - 3 / np.sqrt(1800)
    assert not summarize(fifo_run(10.0, 0.1 * (1 / (floor + 0.02)), 2000)).overloaded
    assert summarize(fifo_run(10.0, 0.1 * (1 / (floor - 0.02)), 2000)).overloaded


def test_a_closed_loop_is_never_overloaded() -> None:
    assert not summarize(fifo_run(10.0, 0.2, 500, closed=True), warmup=0.1).overloaded
