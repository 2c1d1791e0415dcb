"""The sizing solver: seed 1, exact search, and properties (monotone, minimal, in memory)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loose_plan import plan_loose
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.estimate import Candidate
from inferencesize.outcomes import (
    BatchTooLarge,
    ContextTooLong,
    Described,
    LatencyMiss,
    MemoryShortfall,
    RejectKind,
    SplitConstraint,
    SplitProblem,
    summary_sentence,
)
from inferencesize.parallelism import Parallelism
from inferencesize.planner import LOAD_STEPS, Limits, PlanResult
from inferencesize.serving import inflight_arrays

SEED_PER_DGX = 70.7  # req/s per DGX H100 (8 × TP1 instances), measured (scenarios/default.yaml)


def _seed(
    ttft_s: float = 0.5, peak: float = 200.0, pps: tuple[int, ...] | None = (1,)
) -> PlanResult:
    c = _catalog()
    return plan_loose(
        c.model("llama-3-8b"),
        [c.hardware("dgx-h100")],
        ["fp8"],
        2000,
        200,
        peak,
        Limits(ttft_s=ttft_s),
        _est(),
        tps=[1],
        pps=list(pps) if pps else None,
    )


def test_seed1_per_dgx_capacity_within_15_percent() -> None:
    p = _seed().chosen
    assert p is not None
    assert (p.candidate.par.tp, p.candidate.par.pp) == (1, 1)
    per_dgx = 8 * p.rate
    assert per_dgx == pytest.approx(SEED_PER_DGX, rel=0.15)
    assert p.binding == "ttft"
    assert p.point.ttft_s <= 0.5


def test_seed1_plan_is_3_dgx() -> None:
    p = _seed().chosen
    assert p is not None and p.servers == 3


def test_seed1_ttft_220_is_5_dgx() -> None:
    """NVIDIA: 5.2 req/s per instance at concurrency 10 (TTFT 220.8 ms) → 5 DGX. At the
    published 5.2 req/s per instance it would be 39 instances, 5 DGX; 4.9 req/s or less would
    need 41, 6 DGX: the plan must land on 33 to 40 instances (5 DGX)."""
    p = _seed(ttft_s=0.22).chosen
    assert p is not None and p.servers == 5 and 33 <= p.instances <= 40
    assert 10.0 < p.point.concurrency < 10.5
    assert p.point.ttft_s <= 0.22
    # the published operating point itself: 10 clients
    est = _est()
    at10 = est.point(est.resolve(p.candidate, 2200), 2000, 200, 10, "inflight")
    assert at10 is not None
    assert at10.ttft_s == pytest.approx(0.2208, rel=0.05)
    # 9 % over the published 5.2 req/s: the 2024 set is fitted to 2,347 rows (median 4.6 %)
    # with a log-deep all-reduce alpha, which moved this TP1 point from +3.5 % to +9 %
    assert at10.requests_per_s == pytest.approx(5.2, rel=0.10)


NEMO_PER_DGX = 2.4  # req/s per DGX H100, NVIDIA's 2023 answer (scenarios/seed-nemo-43b.yaml)


def _nemo(engine: str | None, batch_sizes: list[int] | None, tps: list[int] | None = None):  # type: ignore[no-untyped-def]
    c = _catalog()
    return plan_loose(
        c.model("nemo-gpt-43b"),
        [c.hardware("dgx-h100")],
        ["fp16"],
        3500,
        500,
        31,
        Limits(ttft_s=3.0),
        _est(engine),
        tps=tps,
        batching="static",
        batch_sizes=batch_sizes,
    )


def test_seed2_static_fp16_power_of_two_batches_is_12_to_14_dgx() -> None:
    # the shipped scenario's mode: static, FP16, static-batching TRT-LLM set, batch table
    p = _nemo("trtllm-0.9-static", [1, 2, 4, 8, 16, 32, 64]).chosen
    assert p is not None
    assert 12 <= p.servers <= 14
    assert p.capacity_rps / p.servers == pytest.approx(NEMO_PER_DGX, rel=0.15)
    assert p.point.concurrency in (1, 2, 4, 8, 16, 32, 64)
    # the published point: TTFT 2606 ms, ITL 21.4 ms
    assert p.point.ttft_s == pytest.approx(2.606, rel=0.15)
    assert p.point.itl_s == pytest.approx(0.0214, rel=0.15)


def test_batch_sizes_keep_the_largest_allowed_size_meeting_the_limits() -> None:
    free = _nemo("trtllm-0.9-static", None, tps=[4]).chosen
    table = _nemo("trtllm-0.9-static", [4, 16, 32], tps=[4]).chosen
    assert free is not None and table is not None
    est, c = _est("trtllm-0.9-static"), table.candidate
    res = est.resolve(c, 4000)
    # any size: the exact largest batch under TTFT 3 s (18 measured 2026-11-21)
    over = est.point(res, 3500, 500, free.point.concurrency + 1, "static")
    assert over is not None and over.ttft_s > 3.0 >= free.point.ttft_s
    # table: 32 misses TTFT, so 16 (not 19, which the table does not hold)
    at32 = est.point(res, 3500, 500, 32, "static")
    assert at32 is not None and at32.ttft_s > 3.0
    assert table.point.concurrency == 16 and table.binding == "ttft"
    assert table.instances >= free.instances
    only_big = _nemo("trtllm-0.9-static", [32, 64], tps=[4])
    assert only_big.chosen is None
    assert any("at batch size 32" in r.reason for r in only_big.rejected)


def test_search_is_exact_largest_concurrency() -> None:
    res = _seed()
    p = res.chosen
    assert p is not None
    est, cand = _est(), p.candidate
    r = est.resolve(cand, 2200)
    nxt = est.point(r, 2000, 200, p.point.concurrency + 1, "inflight")
    assert nxt is not None and nxt.ttft_s > 0.5


def _qwen_moe_long_prompt(itl_s: float) -> PlanResult:
    """Qwen3-30B-A3B, 14,962 prompt / 10 output tokens on B200 FP8 TP2, 20.2 req/s: the rate
    peaks near 14 clients and then falls as the prefills stretch the decode steps."""
    c = _catalog()
    return plan_loose(
        c.model("qwen3-30b-a3b"),
        [c.hardware("b200")],
        ["fp8"],
        14962,
        10,
        20.2,
        Limits(itl_s=itl_s),
        _est(),
        tps=[2],
        pps=[1],
        eps=[1],
    )


def test_looser_itl_does_not_need_more_gpus_where_the_rate_falls_with_the_load() -> None:
    """Sized at the largest load meeting the ITL limit, ITL ≤ 60 ms needed 4 GPUs where
    ITL ≤ 42.75 ms needed 2: the larger load serves fewer requests per second."""
    tight, loose = _qwen_moe_long_prompt(0.04275).chosen, _qwen_moe_long_prompt(0.060).chosen
    assert tight is not None and loose is not None
    assert loose.gpus <= tight.gpus
    assert loose.rate >= tight.rate * (1 - 1e-9)


def test_operating_point_is_the_highest_rate_meeting_the_limits() -> None:
    """Every load on the search's grid (1/64 of a client) up to the KV cap: the chosen load's
    rate is the highest among those meeting the limit; it lies below the largest such load
    N*, whose rate is lower, and the binding limit is still the one that stops N*."""
    res = _qwen_moe_long_prompt(0.060)
    p = res.chosen
    assert p is not None and p.point.itl_s <= 0.060
    r = _est().resolve(p.candidate, 14962 + 10)
    assert r.deployment is not None
    loads = np.arange(LOAD_STEPS, r.max_concurrency * LOAD_STEPS + 1) / LOAD_STEPS
    grid = inflight_arrays(r.deployment, 14962, 10, loads, r.max_concurrency)
    ok = grid.itl_s <= 0.060
    top = int(np.flatnonzero(ok)[-1])  # N*: latency grows with the load, so ok is [1, N*]
    assert ok[: top + 1].all()
    best = float(grid.requests_per_s[ok].max())
    assert p.rate == pytest.approx(best, rel=1e-9)
    assert p.point.concurrency < loads[top] and grid.requests_per_s[top] < p.rate
    assert p.binding == "itl" and res.binding_constraint == "itl"


def test_infeasible_names_nearest_miss() -> None:
    res = _seed(ttft_s=0.001)
    assert res.chosen is None
    assert res.nearest_miss is not None and res.nearest_miss.startswith("best TTFT is ")
    assert "> limit 1 ms" in res.nearest_miss
    assert res.binding_constraint == "ttft"
    assert all("at concurrency 1" in r.reason for r in res.rejected)


def _one(
    model: str,
    hardware: str,
    precision: str,
    isl: float = 2000,
    limits: Limits = Limits(ttft_s=2.0),
    **options: Any,
) -> PlanResult:
    """Plan a model on one hardware id at one precision: OSL 200, peak 5 req/s."""
    c = _catalog()
    return plan_loose(
        c.model(model), [c.hardware(hardware)], [precision], isl, 200, 5, limits, _est(), **options
    )


def test_out_of_memory_is_rejected_with_reason() -> None:
    """Llama-3-70B in BF16 on one 24 GB L4: ≥ 2 B × 70e9 params = 140 GB of weights."""
    gpu, _ = _catalog().hardware("l4")
    res = _one("llama-3-70b", "l4", "bf16", limits=Limits(ttft_s=5.0), tps=[1], pps=[1])
    assert [r.candidate for r in res.rejected] == ["l4 bf16 tp1"]
    r = res.rejected[0]
    assert r.reason.startswith("out of memory")
    assert isinstance(r.why, MemoryShortfall) and r.why.kind is RejectKind.OUT_OF_MEMORY
    assert r.why.available_bytes == gpu.memory_bytes < 2 * 70e9 < r.why.needed_bytes
    assert r.kind == "memory" and res.binding_constraint == "memory"
    assert res.summary is not None and dict(res.summary.rejected_by_kind) == {
        RejectKind.OUT_OF_MEMORY: 1
    }


def test_requested_tp_that_does_not_divide_the_heads_is_rejected_as_invalid() -> None:
    """Llama-3-70B has 64 attention heads and 8 KV heads: 64 % 3 = 1, so --tp 3 cannot run.
    Single-node pass: 3 · pp ≤ 8 -> pp 1, 2; none feasible, so the multi-node pass tries
    8 < 3 · pp ≤ 64 -> pp 4, 8, 16: five splits, each rejected for the heads."""
    costs = _est().costs(_catalog().model("llama-3-70b"))
    assert (costs.num_attention_heads, costs.num_kv_heads) == (64, 8)
    res = _one("llama-3-70b", "dgx-h100", "fp8", limits=Limits(ttft_s=1.0), tps=[3])
    assert res.chosen is None
    assert [r.candidate for r in res.rejected] == [
        f"dgx-h100 fp8 tp3{f' pp{pp}' if pp > 1 else ''}" for pp in (1, 2, 4, 8, 16)
    ]
    for r in res.rejected:
        assert isinstance(r.why, SplitProblem)
        assert r.why.constraint is SplitConstraint.TP_DIVIDES_HEADS and r.why.count == 64
        assert r.reason == "tp 3 does not divide 64 attention heads" and r.kind == "invalid"
    assert res.binding_constraint == "invalid"
    assert res.nearest_miss is not None and "tp 3 does not divide 64" in res.nearest_miss
    s = res.summary
    assert s is not None and s.multi_node and s.candidates == 5 == s.rejected
    assert dict(s.rejected_by_kind) == {RejectKind.INVALID_SPLIT: 5}


def test_invalid_split_beside_valid_ones_is_listed_not_chosen() -> None:
    res = _one("llama-3-70b", "dgx-h100", "fp8", limits=Limits(ttft_s=1.0), tps=[3, 4], pps=[1])
    assert res.chosen is not None and res.chosen.candidate.par.tp == 4
    invalid = [r for r in res.rejected if r.why.kind is RejectKind.INVALID_SPLIT]
    assert [r.candidate for r in invalid] == ["dgx-h100 fp8 tp3"]
    s = res.summary
    assert s is not None and not s.multi_node
    assert s.hardware[0].splits == ("tp3", "tp4") and s.candidates == 2


def test_search_summary_counts_add_up() -> None:
    """Llama-3-8B (32 heads, 8 KV heads) on an 8-GPU DGX and a bare H100 (packed 8 a node),
    auto splits: tp, pp in {1, 2, 4, 8} with tp · pp ≤ 8 -> 4 + 3 + 2 + 1 = 10 splits, all
    valid; 2 systems × 2 precisions × 10 splits = 40 candidates, each feasible or rejected."""
    c = _catalog()
    res = plan_loose(
        c.model("llama-3-8b"),
        [c.hardware("dgx-h100"), c.hardware("h100-sxm")],
        ["fp8", "bf16"],
        2000,
        200,
        50,
        Limits(ttft_s=0.3, itl_s=0.02),
        _est(),
    )
    s = res.summary
    assert s is not None and res.chosen is not None and not s.multi_node
    assert s.hardware_ids == ("dgx-h100", "h100-sxm") and s.precisions == ("fp8", "bf16")
    assert [len(h.splits) for h in s.hardware] == [10, 10]
    assert [h.skipped for h in s.hardware] == [0, 0]
    assert s.candidates == 2 * 2 * 10 == s.feasible + s.rejected
    assert s.feasible == len(res.feasible) and s.rejected == len(res.rejected)
    kinds = {r.why.kind for r in res.rejected}
    assert sum(s.rejected_by_kind[k] for k in kinds) == len(res.rejected)
    assert summary_sentence(s).startswith(
        "searched 2 systems × 2 precisions × 10 splits = 40 candidates; rejected "
    )


def test_asked_for_ep_rejects_the_splits_it_cannot_share() -> None:
    """Mixtral-8x7B has 8 experts; with --ep 8 and tp auto on 8 GPUs, ep 8 must divide tp
    (experts share the TP GPUs), so only tp 8 works. ep was asked for: tp 1, 2, 4 (with their
    pp) are rejected as invalid, each naming the rule; none is skipped."""
    res = _one("mixtral-8x7b", "dgx-h100", "fp8", eps=[8])
    s = res.summary
    assert s is not None and res.chosen is not None and res.chosen.candidate.par.tp == 8
    # tp · pp ≤ 8: (1,1) (1,2) (1,4) (1,8) (2,1) (2,2) (2,4) (4,1) (4,2) invalid, (8,1) valid
    invalid = [r for r in res.rejected if r.kind == "invalid"]
    assert len(invalid) == 9 and s.rejected_by_kind[RejectKind.INVALID_SPLIT] == 9
    assert all(
        isinstance(r.why, SplitProblem) and r.why.constraint is SplitConstraint.EP_DIVIDES_TP
        for r in invalid
    )
    assert s.hardware[0].considered == len(s.hardware[0].splits) == 10


def test_no_room_for_one_sequence_is_typed() -> None:
    """Llama-3.1-8B BF16 on a 24 GB L4: ~16 GB of weights fit, but one 30 200-token sequence
    needs 30 200 × 2 (K, V) · 32 layers · 8 KV heads · 128 · 2 B = 30 200 × 131 072 B
    ≈ 3.96 GB of KV cache, more than is left."""
    res = _one("llama-3.1-8b", "l4", "bf16", isl=30000, tps=[1], pps=[1])
    (r,) = res.rejected
    assert isinstance(r.why, MemoryShortfall) and r.why.kind is RejectKind.NO_ROOM
    assert r.why.needed_bytes == pytest.approx(30200 * 2 * 32 * 8 * 128 * 2, rel=1e-9)
    assert 0 <= r.why.available_bytes < r.why.needed_bytes
    assert "leave no room for one 30200-token sequence" in r.reason and r.kind == "memory"


def test_static_batches_above_the_kv_capacity_are_typed_memory() -> None:
    res = _one(
        "llama-3-8b", "dgx-h100", "fp8", tps=[1], pps=[1], batching="static", batch_sizes=[100_000]
    )
    (r,) = res.rejected
    assert isinstance(r.why, BatchTooLarge) and r.why.smallest_batch == 100_000
    c = _catalog()
    gpu, system = c.hardware("dgx-h100")
    cand = Candidate(c.model("llama-3-8b"), gpu, system, "fp8", "fp8", Parallelism())
    assert r.why.max_concurrency == _est().resolve(cand, 2200).max_concurrency < 100_000
    assert r.reason == f"out of memory: the smallest allowed batch 100000 > {r.why.max_concurrency}"
    # not a latency miss: no nearest miss, and the binding constraint is memory
    assert r.nearest is None and r.kind == "memory" and res.binding_constraint == "memory"


def test_latency_rejection_carries_its_numbers() -> None:
    res = _seed(ttft_s=0.001)
    assert res.chosen is None and res.rejected
    for r in res.rejected:
        assert isinstance(r.why, LatencyMiss) and r.why.metric == "ttft"
        assert r.why.at == 1 and r.why.value_s > r.why.limit_s == 0.001
        assert r.nearest is not None and r.miss_ratio == r.nearest.value_s / 0.001 > 1
    best = min(res.rejected, key=lambda r: r.miss_ratio)
    assert res.nearest_miss == best.miss_message


def test_context_and_unsupported_precision_are_typed() -> None:
    model = _catalog().model("llama-3-8b")
    (r,) = _one("llama-3-8b", "dgx-h100", "fp8", isl=9000, tps=[1], pps=[1]).rejected
    assert isinstance(r.why, ContextTooLong) and r.kind == "invalid"
    assert (r.why.seq_len_tokens, r.why.max_context_tokens) == (9200, model.max_context)
    assert r.reason == f"ISL + OSL = 9200 exceeds the context window {model.max_context}"
    (r,) = _one("llama-3-8b", "a100-sxm-80gb", "fp8", tps=[1], pps=[1]).rejected
    assert r.why == Described(RejectKind.UNSUPPORTED, r.reason) and r.kind == "invalid"
    assert "no fp8 tensor units" in r.reason


SETTINGS = settings(max_examples=8, deadline=None)


@SETTINGS
@given(peak=st.floats(1, 400), extra=st.floats(0, 200))
def test_more_peak_never_needs_fewer_gpus(peak: float, extra: float) -> None:
    a, b = _seed(peak=peak).chosen, _seed(peak=peak + extra).chosen
    assert a is not None and b is not None
    assert b.gpus >= a.gpus


@SETTINGS
@given(ttft=st.floats(0.12, 2.0), looser=st.floats(0, 2.0))
def test_looser_ttft_never_needs_more_gpus(ttft: float, looser: float) -> None:
    a, b = _seed(ttft_s=ttft).chosen, _seed(ttft_s=ttft + looser).chosen
    assert a is not None and b is not None
    assert b.gpus <= a.gpus


@SETTINGS
@given(peak=st.floats(0.5, 500), ttft=st.floats(0.15, 1.5))
def test_plan_is_minimal_and_in_memory(peak: float, ttft: float) -> None:
    p = _seed(ttft_s=ttft, peak=peak, pps=None).chosen
    assert p is not None
    assert p.instances * p.rate >= peak * (1 - 1e-9)
    assert (p.instances - 1) * p.rate < peak
    r = _est().resolve(p.candidate, 2200)
    assert 1 <= p.point.concurrency <= r.max_concurrency
    assert math.isclose(p.headroom, p.instances * p.rate / peak - 1)
