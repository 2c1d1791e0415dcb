"""The simulator against queueing theory, with a step time independent of any LLM.

ConstantService makes every step take ``d`` seconds whatever the batch, so a request of OSL
``m`` holds a slot for exactly ``m`` steps (one prefill step + m − 1 decode steps):
deterministic service for a fixed OSL, and (nearly) exponential service for a geometric OSL
with a large mean (E[S²] = S̄² (2 − 1/m), 0.25 % below the exponential's 2 S̄² at m = 200).
Sample sizes were chosen so that the tolerances hold for every seed in 0…9 (checked offline),
not only for the fixed seed used here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from inferencesize.simulate import (
    BatchingConfig,
    ConstantService,
    Workload,
    poisson_arrivals,
    simulate,
    summarize,
)


def _run(
    rho: float, n: int, servers: int, osl: np.ndarray, step_s: float, policy: str, seed: int
) -> tuple[Workload, object]:
    rng = np.random.default_rng(seed)
    mean_service = float(np.mean(osl)) * step_s if len(osl) else step_s
    rate = rho * servers / mean_service
    wl = Workload(np.ones(n, dtype=np.int64), osl, poisson_arrivals(rng, n, rate))
    res = simulate(
        wl,
        ConstantService(step_s, step_s, servers),
        BatchingConfig(policy, servers),  # type: ignore[arg-type]
        math.inf,
        np.zeros(n),
    )
    return wl, res


@pytest.mark.parametrize(("rho", "n"), [(0.5, 60_000), (0.8, 200_000)])
def test_md1_mean_wait_matches_pollaczek_khinchine(rho: float, n: int) -> None:
    service_s = 0.01
    _, res = _run(rho, n, 1, np.ones(n, dtype=np.int64), service_s, "dynamic", seed=1)
    r = res  # SimResult
    skip = n // 20  # warm-up: the queue starts empty
    wait = (r.admit_s - r.arrival_s)[skip:]  # type: ignore[attr-defined]
    arrive = r.arrival_s[skip:]  # type: ignore[attr-defined]
    # utilisation of this sample of arrivals (the nominal one ± sampling noise)
    util = (len(arrive) - 1) / (arrive[-1] - arrive[0]) * service_s
    assert util == pytest.approx(rho, rel=0.01)
    # batch size 1, deterministic service S: Wq = rho S / (2 (1 − rho))  (P-K with E[S²] = S²)
    expected = util * service_s / (2 * (1 - util))
    assert float(wait.mean()) == pytest.approx(expected, rel=0.03)


def test_mm1_mean_wait_and_sojourn() -> None:
    # in-flight engine with one slot = a FIFO single server; geometric OSL, mean 200 steps
    rho, n, m, d = 0.7, 80_000, 200, 5e-5
    rng = np.random.default_rng(7)
    osl = rng.geometric(1 / m, n).astype(np.int64)
    _, res = _run(rho, n, 1, osl, d, "inflight", seed=2)
    s = summarize(res, warmup=0.05)  # type: ignore[arg-type]
    service = m * d
    # M/M/1: Wq = rho / (mu − lambda), W = 1 / (mu − lambda)
    mu, lam = 1 / service, rho / service
    assert s.queue_s.mean == pytest.approx(rho / (mu - lam), rel=0.05)
    assert s.e2e_s.mean == pytest.approx(1 / (mu - lam), rel=0.05)


def _erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in M/M/c with offered load a = lambda / mu."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


@pytest.mark.parametrize("rho", [0.6, 0.85])
def test_mmc_wait_probability_matches_erlang_c(rho: float) -> None:
    # one in-flight instance with 4 slots and a batch-independent step = M/M/4, shared queue
    c, n, m, d = 4, 40_000, 200, 5e-5
    rng = np.random.default_rng(11)
    osl = rng.geometric(1 / m, n).astype(np.int64)
    _, res = _run(rho, n, c, osl, d, "inflight", seed=3)
    r = res  # SimResult
    keep = np.arange(n) >= n // 20
    arrive = r.arrival_s[keep]  # type: ignore[attr-defined]
    # slots held at each arrival: admitted before it and not yet done (PASTA)
    admit = np.sort(r.admit_s)  # type: ignore[attr-defined]
    done = np.sort(r.done_s)  # type: ignore[attr-defined]
    busy = np.searchsorted(admit, arrive, "right") - np.searchsorted(done, arrive, "right")
    waited = float(np.mean(busy >= c))
    expected = _erlang_c(c, rho * c)
    assert waited == pytest.approx(expected, abs=0.02)
