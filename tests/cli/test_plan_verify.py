"""``plan --verify``: the instance count searched by simulation in both directions.

Properties rather than numbers: the search lands on the same count from an analytic count far
above it and far below it; that count meets the limits and one fewer does not (simulated on the
same requests); a limit held at p99 needs at least the instances of the same limit held at the
mean; the record names both counts with their servers, and the table says which way they
differ.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from typer.testing import CliRunner

from inferencesize.catalog import load_catalog
from inferencesize.cli import app
from inferencesize.plan_search import plan
from inferencesize.planner import Limits, Plan, pack_servers
from inferencesize.question import OpenLoop, Question, SearchSpace
from inferencesize.study import candidate, resolve_point
from inferencesize.verify import _run, verify_plan, workload

runner = CliRunner()
ISL, OSL, PEAK = 1000, 200, 30.0
POISSON = [
    "plan", "--model", "llama-3-8b", "--hardware", "dgx-h100", "--precision", "fp8", "--tp", "1",
    "--isl", str(ISL), "--osl", str(OSL), "--peak-rps", f"{PEAK:g}", "--ttft-ms", "300",
    "--itl-ms", "25", "--arrivals", "poisson",
]  # fmt: skip


def plan_json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--verify", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.fixture(scope="module")
def p99() -> dict[str, Any]:
    return plan_json(*POISSON, "--latency-stat", "p99")


def test_record_names_both_counts_with_their_servers(p99: dict[str, Any]) -> None:
    v, plan = p99["verify"], p99["plan"]
    assert v["statistics"] == {"ttft": "p99", "itl": "p99", "e2e": "p99"}
    assert v["analytic"]["instances"] == plan["instances"]
    for side in ("analytic", "simulated"):
        run = v[side]
        assert run["gpus"] == run["instances"] * plan["gpus_per_instance"]
        assert run["servers"] == pack_servers(run["instances"], plan["gpus_per_instance"], 8)
    s = v["simulated"]
    assert v["meets_limits"] and s["meets_limits"] and not s["overloaded"]
    # the held values are the p99 of the simulated requests, within the limits
    assert s["held"]["ttft_ms"] == v["latency"]["p99"]["ttft_ms"] <= 300
    assert s["held"]["itl_ms"] == v["latency"]["p99"]["itl_ms"] <= 25
    delta = s["instances"] - v["analytic"]["instances"]
    assert v["instances_delta"] == delta
    assert v["agrees"] == (abs(delta) <= max(1, 0.1 * v["analytic"]["instances"]))
    # the counts simulated bracket the answer: one fewer was tried and missed
    assert s["instances"] in v["searched"]
    assert s["instances"] == 1 or s["instances"] - 1 in v["searched"]
    for name in ("mean", "p50", "p90", "p95", "p99"):
        lat = v["latency"][name]
        assert lat["ttft_ms"] > 0 and lat["e2e_ms"] > lat["ttft_ms"]


def test_a_tighter_statistic_never_needs_fewer_instances(p99: dict[str, Any]) -> None:
    mean = plan_json(*POISSON)
    assert mean["verify"]["statistics"]["ttft"] == "mean"
    assert mean["verify"]["simulated"]["instances"] <= p99["verify"]["simulated"]["instances"]


def test_table_compares_the_counts() -> None:
    result = runner.invoke(app, [*POISSON, "--latency-stat", "p95", "--verify"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for needle in ("analytic plan", "smallest meeting", "TTFT p95 ≤ 300 ms", "verdict"):
        assert needle in out


@pytest.fixture(scope="module")
def setting() -> tuple[Any, Plan, Question]:
    catalog = load_catalog()
    est = resolve_point(catalog, engine=None, calibration=None).estimator
    cand = candidate(catalog, "llama-3-8b", "dgx-h100", "fp8", None, 1, 1, 1)
    limits = replace(Limits(ttft_s=0.3, itl_s=0.025), stats=("p95", "p95", "p95"))
    space = SearchSpace(cand.model, ((cand.gpu, cand.system),), ["fp8"], None, [1], [1], [1])
    q = Question(space, ISL, OSL, limits, OpenLoop())
    result = plan(q, PEAK, est)
    assert result.chosen is not None
    return est, result.chosen, q


def test_search_lands_on_the_same_count_from_above_and_below(
    setting: tuple[Any, Plan, Question],
) -> None:
    est, chosen, q = setting
    limits = q.limits
    runs = {
        start: verify_plan(est, replace(chosen, instances=start), q, requests=3000)
        for start in (1, chosen.instances, 4 * chosen.instances)
    }
    found = {v.instances for v in runs.values()}
    assert len(found) == 1, {k: v.instances for k, v in runs.items()}
    n = found.pop()
    assert all(v.meets for v in runs.values())
    assert runs[1].delta == n - 1 and runs[4 * chosen.instances].delta < 0
    # the answer is the smallest count that meets, on the same requests
    wl = workload(ISL, OSL, PEAK, 1.0, 3000, 0)
    assert _run(est, chosen, ISL, OSL, "inflight", wl, n, limits).meets
    if n > 1:
        assert not _run(est, chosen, ISL, OSL, "inflight", wl, n - 1, limits).meets


def test_same_requests_for_every_count() -> None:
    a = workload(ISL, OSL, PEAK, 2.0, 500, 7)
    b = workload(ISL, OSL, PEAK, 2.0, 500, 7)
    assert a.arrival_s is not None and b.arrival_s is not None
    assert list(a.arrival_s) == list(b.arrival_s)
    gaps = a.arrival_s[1:] - a.arrival_s[:-1]
    assert gaps.std() / gaps.mean() == pytest.approx(2.0, rel=0.2)  # the stated burstiness


def test_run_length_covers_the_fill_of_the_instances() -> None:
    from inferencesize.verify import run_length

    # short answers: the floors (4000 requests, 10 % warm-up), then 1.5 E2E of arrivals
    # (10 req/s × 1.5 s = 15) that keep the load up while the last measured requests finish
    assert run_length(10.0, 1.0, 2) == (4000, 0.1, 15)
    # 400 requests per planned instance
    assert run_length(10.0, 1.0, 20) == (8000, 0.1, 15)
    # 100 req/s of 7.5 s answers: ten E2E of arrivals, a warm-up of 2.5 E2E (1875 of 7500),
    # a cool-down of 1.5 E2E (1125)
    assert run_length(100.0, 7.5, 8) == (7500, pytest.approx(0.25), 1125)
    # capped: 20,000 requests, half of them warm-up, and at most as many again to cool down
    assert run_length(1000.0, 100.0, 8) == (20_000, 0.5, 20_000)
    # a stated count is kept
    assert run_length(100.0, 7.5, 8, requests=3000)[0] == 3000


def test_the_cool_down_arrivals_are_sent_but_not_measured() -> None:
    import numpy as np

    from inferencesize.simulate.engine import SimResult
    from inferencesize.simulate.stats import measured_mask

    n = 100
    arrival = np.random.default_rng(3).permutation(n).astype(float)  # rank = arrival time
    nan = np.full(n, np.nan)
    done = arrival + 1.0
    done[int(np.argmax(arrival == 50.0))] = np.nan  # one dropped request
    ints = np.zeros(n, dtype=np.int64)
    res = SimResult(arrival, nan, nan, done, ints, ints, ints, np.zeros(1), 101.0, False, 0)
    kept = np.sort(arrival[measured_mask(res, 0.1, cooldown=20)])
    # warm-up: 10 % of the 80 measured-run arrivals (8); the last 20 keep the load up only
    assert list(kept) == [float(t) for t in range(8, 80) if t != 50]
    assert np.count_nonzero(measured_mask(res, 0.1)) == 100 - 10 - 1  # no cool-down: as before


def test_without_a_cool_down_the_last_requests_read_fast(
    setting: tuple[Any, Plan, Question],
) -> None:
    """Near capacity, requests that arrive in the last E2E of a run finish while the instance
    drains, in smaller batches: their ITL reads lower than in steady state. Arrivals that go
    on after them (sent, not measured) keep the measured requests at the long run's ITL."""
    est, chosen, q = setting
    limits = q.limits
    rate = 0.95 * chosen.point.requests_per_s  # one instance, near what it sustains
    e2e_requests = round(chosen.point.e2e_s * rate)  # arrivals in one E2E
    short, tail = 4 * e2e_requests, 2 * e2e_requests

    def itl_mean(count: int, cooldown: int) -> float:
        wl = workload(ISL, OSL, rate, 1.0, count + cooldown, 5, jitter=0.0)  # lengths fixed
        run = _run(est, chosen, ISL, OSL, "inflight", wl, 1, limits, 0.25, cooldown)
        return run.stats["mean"].itl_s

    steady = itl_mean(40 * e2e_requests, 0)
    drained, kept_up = itl_mean(short, 0), itl_mean(short, tail)
    assert drained < kept_up
    assert abs(kept_up - steady) < abs(drained - steady)
