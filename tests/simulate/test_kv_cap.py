"""A KV cap (StreamingLLM sinks + window): each sequence attends min(context, cap) tokens.

LinearService: a decode step of b sequences takes base + slope · Σ min(context, cap), a step
with prompt work PREFILL plus the same decode term (chunked: its decodes ride in it). Times
are sums of dyadic fractions, so the hand-computed timelines below are exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from inferencesize.catalog import load_catalog
from inferencesize.estimate import Candidate, Estimator, Resolved
from inferencesize.latency import decode_step, step_time
from inferencesize.parallelism import Parallelism
from inferencesize.simulate import (
    BatchingConfig,
    LlmService,
    Service,
    SimResult,
    Workload,
    lengths,
    poisson_arrivals,
    simulate,
    simulate_llm,
    summarize,
)
from inferencesize.simulate.engine import capped_context_sum
from inferencesize.simulate.service import chunk_pairs, equal_prompt_length

BASE, SLOPE, PREFILL = 1.0, 0.125, 16.0


@dataclass
class LinearService(Service):
    kv_cap: int
    max_batch: int = 64
    base: float = BASE
    slope: float = SLOPE

    def __post_init__(self) -> None:
        self.decode_base_s = [0.0] + [self.base] * self.max_batch
        self.context_s = [0.0] + [self.slope] * self.max_batch

    def mixed_s(self, b: int, sum_ctx: float, tokens: int, pairs: float, prompts: int) -> float:
        decode = self.decode_base_s[b] + self.context_s[b] * sum_ctx
        return PREFILL + (decode if b else 0.0) if tokens > 0 else decode


def run(
    isl: list[int],
    osl: list[int],
    cfg: BatchingConfig,
    cap: int,
    arrivals: list[float] | None = None,
    service: Service | None = None,
) -> SimResult:
    n = len(isl)
    wl = Workload(
        np.asarray(isl, dtype=np.int64),
        np.asarray(osl, dtype=np.int64),
        np.asarray(arrivals or [0.0] * n, dtype=float),
    )
    svc = service or LinearService(cap)
    return simulate(wl, svc, cfg, math.inf, np.zeros(n))


POLICIES = [
    BatchingConfig("static", 2),
    BatchingConfig("dynamic", 2),
    BatchingConfig("inflight", 2),
    BatchingConfig("chunked", 2, step_tokens=1000),
]


@pytest.mark.parametrize("cfg", POLICIES, ids=lambda c: c.policy)
def test_a_sequence_beyond_the_cap_attends_the_cap(cfg: BatchingConfig) -> None:
    # ISL 10 > cap 8: each of the 5 decode steps attends 8 tokens
    res = run([10], [6], cfg, cap=8)
    assert res.first_token_s[0] == PREFILL
    assert res.done_s[0] == PREFILL + 5 * (BASE + SLOPE * 8)


@pytest.mark.parametrize("cfg", POLICIES, ids=lambda c: c.policy)
def test_contexts_cross_the_cap_inside_a_run(cfg: BatchingConfig) -> None:
    # one batch, prefilled together; decode step t attends min(isl + 1 + t, 8):
    # ISL 5: 6, 7, 8, 8, 8, 8, 8 (53); ISL 7: 8 × 7 (56); ISL 2 (3 decode steps): 3, 4, 5
    res = run([5, 7], [8, 8], cfg, cap=8)
    assert res.done_s.tolist() == [PREFILL + 7 * BASE + SLOPE * 109] * 2
    res = run([5, 2], [8, 4], cfg, cap=8)
    # 3 steps of both (6 + 7 + 8 and 3 + 4 + 5), then ISL 5 alone (8 × 4); static batches
    # keep the finished ISL 2 as padding, its context growing to the cap: 6 + 7 + 8 + 8
    three = PREFILL + 3 * BASE + SLOPE * (21 + 12)
    padding = SLOPE * (6 + 7 + 8 + 8) if cfg.policy in ("static", "dynamic") else 0.0
    tail = 4 * BASE + SLOPE * 32 + padding
    assert res.done_s[1] == three
    assert res.done_s[0] == three + tail


def test_inflight_joins_mid_run_with_a_capped_batch() -> None:
    """A request that arrives during a run joins at the next boundary; the running sequence
    crossed the cap before it (contexts 6, 7, 8, 8, …)."""
    res = run([5, 20], [12, 3], BatchingConfig("inflight", 4), cap=8, arrivals=[0.0, 20.0])
    # r0: prefill [0, 16]; decode steps of 1 + 0.125 · ctx: 1.75, 1.875, 2 → 21.625 ≥ 20
    t = PREFILL + 1.75 + 1.875 + 2
    assert res.first_token_s[1] == t + PREFILL  # r1's prompt step (r0 pauses)
    t += PREFILL
    # both decode, both capped at 8: r1's two steps, 1 + 0.125 · 16 each
    assert res.done_s[1] == t + 2 * (BASE + SLOPE * 16)
    t += 2 * (BASE + SLOPE * 16)
    # r0 has 11 decode steps: 3 before, 2 with r1, 6 alone
    assert res.done_s[0] == t + 6 * (BASE + SLOPE * 8)


def _step_by_step(
    isl: list[int], osl: list[int], arrivals: list[float], svc: LinearService
) -> tuple[list[float], list[float]]:
    """In-flight batching one step at a time (no KV or batch limit, all prompts per step)."""
    n, cap = len(isl), svc.kv_cap
    first, done = [math.nan] * n, [math.nan] * n
    ctx: dict[int, int] = {}
    left: dict[int, int] = {}
    waiting: list[int] = []
    t, nxt = 0.0, 0
    while nxt < n or waiting or ctx:
        if not waiting and not ctx:
            t = max(t, arrivals[nxt])
        while nxt < n and arrivals[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
        if waiting:
            t += svc.mixed_s(0, 0.0, sum(isl[r] for r in waiting), 0.0, len(waiting))
            for r in waiting:
                first[r] = t
                if osl[r] <= 1:
                    done[r] = t
                else:
                    ctx[r], left[r] = isl[r] + 1, osl[r] - 1
            waiting = []
            continue
        b = len(ctx)
        t += svc.decode_base_s[b] + svc.context_s[b] * sum(min(c, cap) for c in ctx.values())
        for r in list(ctx):
            ctx[r] += 1
            left[r] -= 1
            if left[r] == 0:
                done[r] = t
                del ctx[r], left[r]
    return first, done


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_inflight_runs_equal_step_by_step_steps(seed: int) -> None:
    """The closed-form runs (split at every cap crossing) are the sum of the single steps."""
    rng = np.random.default_rng(seed)
    n, cap = 60, 40
    isl = rng.integers(1, 60, n).tolist()
    osl = rng.integers(1, 50, n).tolist()
    arrivals = np.cumsum(rng.exponential(4.0, n)).tolist()
    svc = LinearService(cap, max_batch=n, base=0.5, slope=0.01)
    first, done = _step_by_step(isl, osl, arrivals, svc)
    res = run(isl, osl, BatchingConfig("inflight", n, step_tokens=10**6), cap, arrivals, svc)
    assert res.first_token_s == pytest.approx(first, rel=1e-12)
    assert res.done_s == pytest.approx(done, rel=1e-12)


def test_capped_context_sum() -> None:
    assert capped_context_sum(6, 7, 8) == 6 + 7 + 8 * 5
    assert capped_context_sum(9, 3, 8) == 24
    assert capped_context_sum(3, 3, 8) == 3 + 4 + 5
    assert capped_context_sum(3, 0, 8) == 0


def test_capped_prompt_pairs_and_their_equal_prompts() -> None:
    # tokens 1..10 under cap 4: 1 + 2 + 3 + 4 · 7
    assert chunk_pairs(0, 10, 4) == 34
    assert chunk_pairs(3, 7, 4) == 28
    assert chunk_pairs(0, 3, 4) == chunk_pairs(0, 3) == 6
    # one prompt (or equal prompts) maps back to its own length, below and beyond the cap
    for length in (1, 3, 4, 10, 30000):
        pairs = chunk_pairs(0, length, 4096)
        assert equal_prompt_length(2 * length, 2 * pairs, 4096) == pytest.approx(length, 1e-12)


# --- on the roofline step model ----------------------------------------------------------

ISL, OSL = 6000, 200
CAP = (4, 4092)


def _case(kv_cap: tuple[int, int]) -> tuple[Estimator, Resolved]:
    cat = load_catalog()
    gpu, system = cat.hardware("h100-sxm")
    cand = Candidate(cat.model("llama-3-8b"), gpu, system, "fp8", "fp8", Parallelism(1, 1, 1))
    est = Estimator(cat.efficiency_set(None), kv_cap=kv_cap)
    return est, est.resolve(cand, ISL + OSL)


@pytest.mark.parametrize("kv_cap", [CAP, (4, 1020)])
def test_service_matches_the_capped_step_model(kv_cap: tuple[int, int]) -> None:
    _, res = _case(kv_cap)
    dep = res.deployment
    assert dep is not None
    cap = sum(kv_cap)
    svc = LlmService(dep, 64)
    assert svc.kv_cap == cap
    for b, ctx in ((1, 500.0), (1, 6100.0), (17, 900.0), (64, 3000.0)):
        want = float(decode_step(dep, b, ctx).total_s)
        got = svc.decode_base_s[b] + svc.context_s[b] * b * min(ctx, cap)
        assert got == pytest.approx(want, rel=1e-9)
    want = float(step_time(dep, 5, 2100.0, 1, ISL).total_s)
    got = svc.mixed_s(5, 5 * min(2100.0, cap), ISL, chunk_pairs(0, ISL, cap), 1)
    assert got == pytest.approx(want, rel=1e-9)


def test_one_capped_client_equals_estimate() -> None:
    """One client, ISL 6000 beyond the 4096-token cap: every decode step attends 4096 tokens,
    as the estimate's step at its mean context does."""
    est, res = _case(CAP)
    assert res.deployment is not None
    op = est.point(res, ISL, OSL, 1, "inflight")
    assert op is not None
    wl = Workload(
        lengths(None, 50, ISL),  # type: ignore[arg-type]
        lengths(None, 50, OSL),  # type: ignore[arg-type]
        None,
        1,
    )
    sim = simulate_llm(
        res.deployment, res.candidate.gpu.memory_bytes, wl, BatchingConfig("inflight", 10**6)
    )
    s = summarize(sim)
    assert s.itl_s.mean == pytest.approx(op.itl_s, rel=1e-6)
    assert s.ttft_s.mean == pytest.approx(op.ttft_s, rel=1e-6)
    # uncapped, the 6000-6200-token contexts cost more
    plain_est, plain = _case((0, 0))
    base = plain_est.point(plain, ISL, OSL, 1, "inflight")
    assert base is not None and op.itl_s < base.itl_s


@pytest.mark.parametrize("policy", ["static", "dynamic", "inflight", "chunked"])
def test_a_cap_no_context_reaches_changes_nothing(policy: str) -> None:
    """Contexts up to 2600 tokens under a 100 000-token cap: the same numbers as without."""
    results = []
    for kv_cap in ((0, 0), (4, 99996)):
        _, res = _case(kv_cap)
        assert res.deployment is not None
        rng = np.random.default_rng(3)
        n = 400
        wl = Workload(
            np.clip(rng.normal(2000, 300, n).round(), 1, 2400).astype(np.int64),
            np.clip(rng.normal(150, 50, n).round(), 1, 200).astype(np.int64),
            poisson_arrivals(rng, n, 20.0),
        )
        cfg = BatchingConfig(policy, 64, 0.05, 1024 if policy == "chunked" else 8192)  # type: ignore[arg-type]
        results.append(simulate_llm(res.deployment, res.candidate.gpu.memory_bytes, wl, cfg))
    plain, capped = results
    for f in ("admit_s", "first_token_s", "done_s", "busy_s"):
        np.testing.assert_array_equal(getattr(plain, f), getattr(capped, f))
