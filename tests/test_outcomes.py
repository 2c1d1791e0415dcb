"""Typed rejections and the search summary: messages derived from the numbers, the coarse
kinds ``binding_constraint`` reports, and the summary sentence."""

from __future__ import annotations

import math

import pytest
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.frontier import frontier
from inferencesize.outcomes import (
    BatchTooLarge,
    Described,
    HardwareSearch,
    LatencyMiss,
    MemoryShortfall,
    Rejected,
    RejectKind,
    SearchSummary,
    SplitConstraint,
    SplitProblem,
    count_kinds,
    summary_sentence,
)
from inferencesize.planner import Limits
from inferencesize.question import ClosedLoop, Question, SearchSpace
from inferencesize.vocabulary import Batching


def test_latency_miss_message_and_ratio() -> None:
    miss = LatencyMiss("ttft", 0.033, 0.001, 1)
    assert miss.message == "TTFT 33 ms > limit 1 ms at concurrency 1"
    assert str(miss) == miss.message
    assert miss.kind is RejectKind.TTFT and miss.kind.family == "ttft"
    assert miss.ratio == pytest.approx(33.0)
    static = LatencyMiss("itl", 2.5, 2.0, 32, "batch size")
    assert static.message == "ITL 2.5 s > limit 2 s at batch size 32"
    assert static.best_message("h100-sxm fp8 tp1") == (
        "best ITL is 2.5 s on h100-sxm fp8 tp1 > limit 2 s"
    )


def test_split_problem_message_names_the_constraint() -> None:
    p = SplitProblem(SplitConstraint.TP_DIVIDES_HEADS, tp=3, pp=1, ep=1, dp=1, count=64)
    assert p.message == "tp 3 does not divide 64 attention heads"
    assert p.kind is RejectKind.INVALID_SPLIT and p.kind.family == "invalid"
    assert p.constraint.dimension == "tp"
    assert SplitConstraint.EP_DIVIDES_DP_TP.dimension == "ep"
    assert SplitConstraint.PP_AT_MOST_LAYERS.dimension == "pp"
    assert SplitConstraint.DP_NEEDS_MOE.dimension == "dp"
    assert SplitConstraint.DEGREE_BELOW_ONE.dimension is None


def test_memory_kinds_report_memory() -> None:
    oom = MemoryShortfall(RejectKind.OUT_OF_MEMORY, 90e9, 80e9, "out of memory: …")
    batch = BatchTooLarge(smallest_batch=64, max_concurrency=17)
    assert batch.message == "out of memory: the smallest allowed batch 64 > 17"
    for why in (oom, batch):
        r = Rejected("x", why)
        assert r.kind == "memory" and r.miss_ratio == math.inf and r.miss_message is None


def test_rejected_kind_is_the_worst_missed_limit() -> None:
    """The message names the first limit missed; ``kind`` and ``miss_ratio`` the limit missed
    by the largest factor (what ``binding_constraint`` and ``nearest_miss`` report)."""
    first = LatencyMiss("ttft", 0.6, 0.5, 1)  # 1.2 ×
    worst = LatencyMiss("itl", 0.09, 0.03, 1)  # 3 ×
    r = Rejected("dgx-h100 fp8 tp1", first, nearest=worst)
    assert r.reason == "TTFT 600 ms > limit 500 ms at concurrency 1"
    assert r.kind == "itl" and r.miss_ratio == pytest.approx(3.0)
    assert r.miss_message == "best ITL is 90 ms on dgx-h100 fp8 tp1 > limit 30 ms"


def test_rejected_still_takes_a_sentence_and_a_coarse_kind() -> None:
    r = Rejected("decode h100-sxm fp8 tp1", "ITL 30 ms > budget 20 ms at batch 1", "itl")
    assert r.why == Described(RejectKind.ITL, "ITL 30 ms > budget 20 ms at batch 1")
    assert r.kind == "itl" and r.reason.startswith("ITL 30 ms")
    assert Rejected("x", "no fp8 tensor units", "invalid").kind == "invalid"
    assert Rejected("x", "out of memory: …", "memory").why.kind is RejectKind.OUT_OF_MEMORY


def test_count_kinds_in_kind_order() -> None:
    rejected = [
        Rejected("a", LatencyMiss("ttft", 1.0, 0.5, 1)),
        Rejected("b", MemoryShortfall(RejectKind.OUT_OF_MEMORY, 2.0, 1.0, "oom")),
        Rejected("c", MemoryShortfall(RejectKind.OUT_OF_MEMORY, 2.0, 1.0, "oom")),
    ]
    counts = count_kinds(rejected)
    assert list(counts.items()) == [(RejectKind.OUT_OF_MEMORY, 2), (RejectKind.TTFT, 1)]


def _hw(name: str, precisions: int, splits: int, considered: int | None = None) -> HardwareSearch:
    return HardwareSearch(
        name,
        tuple(["fp8", "bf16", "fp4"][:precisions]),
        tuple(f"tp{i}" for i in range(splits)),
        splits if considered is None else considered,
    )


def test_summary_sentence_counts_the_space() -> None:
    # 3 systems × 3 precisions × 11 splits = 99 candidates: 58 feasible, 30 + 11 rejected
    s = SearchSummary(
        hardware=(_hw("a", 3, 11), _hw("b", 3, 11), _hw("c", 3, 11)),
        candidates=99,
        feasible=58,
        rejected_by_kind={RejectKind.OUT_OF_MEMORY: 30, RejectKind.TTFT: 11},
    )
    assert s.rejected == 41 and s.feasible + s.rejected == s.candidates
    assert s.candidates == sum(h.candidates for h in s.hardware)
    assert s.hardware_ids == ("a", "b", "c") and s.precisions == ("fp8", "bf16", "fp4")
    assert summary_sentence(s) == (
        "searched 3 systems × 3 precisions × 11 splits = 99 candidates;"
        " rejected 41 (out of memory 30, TTFT 11)"
    )
    rec = s.record()
    assert rec["candidates"] == 99 and rec["feasible"] + rec["rejected"] == 99
    assert rec["rejected_by_kind"] == {"out_of_memory": 30, "ttft": 11}
    assert [h["candidates"] for h in rec["hardware"]] == [33, 33, 33]
    assert rec["multi_node"] is False and rec["skipped_splits"] == 0


def test_summary_sentence_with_uneven_systems() -> None:
    # splits differ: (11 + 9) · 2 = 40; skipped: 12 - 9 = 3 impossible auto splits
    s = SearchSummary((_hw("a", 2, 11), _hw("b", 2, 9, 12)), 40, 40, {}, multi_node=True)
    assert summary_sentence(s) == (
        "searched 2 systems (11 + 9 splits) × 2 precisions = 40 candidates"
        " (multi-node splits included); 3 structurally impossible splits skipped; rejected 0"
    )
    # precisions differ too: 3 · 1 + 2 · 1 = 5
    one = SearchSummary((_hw("a", 3, 1), _hw("b", 2, 1)), 5, 4, {RejectKind.INVALID_SPLIT: 1})
    assert summary_sentence(one) == (
        "searched 2 systems (3 precisions × 1 split + 2 precisions × 1 split) = 5 candidates;"
        " rejected 1 (invalid split 1)"
    )


def test_frontier_rejections_are_typed() -> None:
    """Llama-3-70B in BF16 on one 80 GB H100: 2 B × ~70.6 B params ≈ 141 GB of weights."""
    c = _catalog()
    gpu, _ = c.hardware("h100-sxm")
    space = SearchSpace(
        c.model("llama-3-70b"), (c.hardware("h100-sxm"),), ["bf16"], None, [1], [1], None
    )
    q = Question(space, 2000, 200, Limits(ttft_s=1.0), ClosedLoop(), Batching.INFLIGHT, None)
    fr = frontier(_est(), q)
    assert [r.candidate for r in fr.rejected] == ["h100-sxm bf16 tp1"]
    why = fr.rejected[0].why
    assert isinstance(why, MemoryShortfall) and why.kind is RejectKind.OUT_OF_MEMORY
    assert why.available_bytes == gpu.memory_bytes < 2 * 70e9 < why.needed_bytes
    assert fr.rejected[0].kind == "memory" and fr.rejected[0].reason.startswith("out of memory")
