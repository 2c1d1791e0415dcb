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


def test_far_behind_on_the_rates_alone_is_overloaded() -> None:
    # n = 1800 measured arrivals: the floor is 1 - 5 % - 3 / sqrt(1800) = 0.879
    floor = 1 - OVERLOAD_TOLERANCE - 3 / np.sqrt(1800)
    assert summarize(fifo_run(10.0, 0.1 * (1 / (floor - 0.02)), 2000)).overloaded


def test_a_shortfall_within_the_noise_of_the_counts_is_not_flagged() -> None:
    # served 1 - 1/sqrt(1800) = 97.6 % of the arrivals: within 2 standard deviations
    served = 1 - 1 / np.sqrt(1800)
    assert not summarize(fifo_run(10.0, 0.1 / served, 2000)).overloaded


def test_a_shortfall_beyond_noise_with_a_growing_queue_is_overloaded() -> None:
    """The README's --compare run: static batching serves 7.4 of 8 req/s (92.5 %), inside
    the old 5 % + 3/sqrt(n) floor (87.9 %), while the wait for a batch grows through the run."""
    served = 7.4 / 8.0
    assert served > 1 - OVERLOAD_TOLERANCE - 3 / np.sqrt(1800)
    run = fifo_run(8.0, 1 / 7.4, 2000)
    s = summarize(run)
    assert s.overloaded
    assert s.completion_rps == pytest.approx(7.4, rel=0.01)
    # the queue: 2000 arrivals at 8/s, served at 7.4/s: the last waits 2000/7.4 - 2000/8 s
    wait = run.admit_s - run.arrival_s
    assert wait[-1] == pytest.approx(1999 / 7.4 - 1999 / 8.0, rel=0.01)


def test_completions_that_lag_behind_longer_answers_without_a_queue_are_not_overload() -> None:
    """Answers growing from 1 s to 16 s over the run on servers that never queue (one per
    request): completions in the window fall short of arrivals, but nothing waits."""
    n, rate = 2000, 10.0
    arrival = np.arange(n) / rate
    e2e_s = 1.0 + 15.0 * np.arange(n) / n
    run = SimResult(
        arrival_s=arrival,
        admit_s=arrival.copy(),
        first_token_s=arrival + 0.05,
        done_s=arrival + e2e_s,
        instance=np.arange(n, dtype=np.int64),
        isl=np.full(n, 100, dtype=np.int64),
        osl=np.full(n, 200, dtype=np.int64),
        busy_s=e2e_s,
        end_s=float((arrival + e2e_s)[-1]),
        closed_loop=False,
        concurrency=1,
    )
    s = summarize(run, warmup=0.1)
    served = s.completion_rps / s.arrival_rps
    assert 1 - OVERLOAD_TOLERANCE - 3 / np.sqrt(1800) < served < 1 - 2 / np.sqrt(1800)
    assert not s.overloaded
