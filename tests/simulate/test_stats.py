"""Summary statistics of a simulation run, on hand-built runs with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from inferencesize.simulate.engine import SimResult
from inferencesize.simulate.stats import summarize


def closed_loop_run(arrival: list[float], done: list[float], clients: int) -> SimResult:
    a = np.array(arrival, dtype=float)
    d = np.array(done, dtype=float)
    n = len(a)
    return SimResult(
        arrival_s=a,
        admit_s=a.copy(),
        first_token_s=a + 0.1,
        done_s=d,
        instance=np.zeros(n, dtype=np.int64),
        isl=np.full(n, 100, dtype=np.int64),
        osl=np.full(n, 10, dtype=np.int64),
        busy_s=np.array([float(d.max())]),
        end_s=float(d.max()),
        closed_loop=True,
        concurrency=clients,
    )


def test_closed_loop_rate_of_a_synchronised_cohort_is_clients_over_e2e() -> None:
    # Two clients in step: every round both send at k·T and both finish at (k + 1)·T, so the
    # throughput is 2 / T. Completions come in bursts; counting them between the first and
    # the last burst (9 requests over 4 T) would say 2.25 / T.
    cycle = 2.0
    rounds = 6
    arrival = [k * cycle for k in range(rounds) for _ in range(2)]
    done = [(k + 1) * cycle for k in range(rounds) for _ in range(2)]
    s = summarize(closed_loop_run(arrival, done, 2), warmup=0.0)
    assert s.requests == 10  # the last round (one per client) is the drain
    assert s.e2e_s.mean == pytest.approx(cycle)
    assert s.requests_per_s == pytest.approx(2 / cycle)
    assert s.output_tokens_per_s == pytest.approx(10 * 2 / cycle)


def test_closed_loop_rate_of_clients_out_of_step() -> None:
    # Three clients with E2E 3 s, offset by 1 s: a completion every second, 1 req/s.
    arrival = [c + 3.0 * k for k in range(5) for c in range(3)]
    done = [t + 3.0 for t in arrival]
    s = summarize(closed_loop_run(arrival, done, 3), warmup=0.0)
    assert s.requests_per_s == pytest.approx(1.0)
