"""Search-space properties of the planner (hypothesis): a larger search space never yields a
worse chosen plan, and the search summary counts every candidate once.

Adding a candidate (another precision, another TP degree, another hardware id) can only add
feasible plans, so the minimum of the default objective's sort key (servers, GPUs, cost,
headroom, label) cannot grow. The spaces drawn here are single-node (TP ≤ 8, PP 1 on 8-GPU
nodes), where the multi-node pass adds no candidates: there, a larger space that turns up a
single-node plan skips the multi-node pass by design.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from loose_plan import plan_loose
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.planner import Limits, PlanResult

MODELS = ["llama-3-8b", "llama-3-70b", "mixtral-8x7b"]
HARDWARE = ["dgx-h100", "h100-sxm", "dgx-h200", "l40s-8x", "a100-sxm-80gb"]
PRECISIONS = ["fp8", "bf16"]
TPS = [1, 2, 4, 8]

PROPERTY = settings(max_examples=20, deadline=None)
Space = dict[str, list[Any]]  # hardware ids, precisions, TP degrees


def _plan(
    model: str, hardware: list[str], precisions: list[str], tps: list[int], ttft: float, peak: float
) -> PlanResult:
    c = _catalog()
    return plan_loose(
        c.model(model),
        [c.hardware(h) for h in hardware],
        precisions,
        2000,
        200,
        peak,
        Limits(ttft_s=ttft, itl_s=0.05),
        _est(),
        tps=tps,
        pps=[1],
    )


@st.composite
def spaces(draw: st.DrawFn) -> tuple[Space, Space]:
    """A search space and the same space with one more hardware id, precision or TP degree."""
    hardware = draw(st.permutations(HARDWARE))
    precisions = draw(st.permutations(PRECISIONS))
    tps = draw(st.permutations(TPS))
    grow = draw(st.sampled_from(["hardware", "precisions", "tps"]))
    full = {"hardware": hardware, "precisions": precisions, "tps": tps}
    small = {k: v[: draw(st.integers(1, len(v) - 1))] for k, v in full.items()}
    large = {**small, grow: full[grow][: len(small[grow]) + 1]}
    return small, large


@PROPERTY
@given(
    space=spaces(),
    model=st.sampled_from(MODELS),
    ttft=st.floats(0.1, 2.0),
    peak=st.floats(1.0, 200.0),
)
def test_a_larger_search_space_never_chooses_a_worse_plan(
    space: tuple[Space, Space],
    model: str,
    ttft: float,
    peak: float,
) -> None:
    small, large = space
    a = _plan(model, small["hardware"], small["precisions"], small["tps"], ttft, peak)
    b = _plan(model, large["hardware"], large["precisions"], large["tps"], ttft, peak)
    for r in (a, b):  # every candidate counted once: feasible or rejected
        s = r.summary
        assert s is not None
        assert s.candidates == s.feasible + s.rejected == len(r.feasible) + len(r.rejected)
        assert s.candidates == sum(len(h.precisions) * len(h.splits) for h in s.hardware)
    assert a.summary is not None and b.summary is not None
    assert b.summary.candidates > a.summary.candidates
    if a.chosen is not None:
        assert b.chosen is not None
        assert b.chosen.sort_key() <= a.chosen.sort_key()
