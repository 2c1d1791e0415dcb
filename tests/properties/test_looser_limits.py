"""Looser limits never need more GPUs (hypothesis, 1,000 random scenarios).

Latency is monotone non-decreasing in the load, so the loads meeting the limits are an
interval [1, N*], and loosening a TTFT, ITL or E2E limit can only widen it. The planner sizes
each candidate at the highest request rate in that interval, so loosening a limit can neither
lower a candidate's rate nor raise its instance count, and a feasible candidate stays
feasible. Throughput is not monotone in the load (near the KV limit and with the closed loop's
prefill stretch it can fall, then rise again): sizing at N* itself broke this.

Each example is one candidate (a shipped model, dense or MoE, on one of four GPUs at a
precision the GPU runs natively, one valid single-node split, in-flight or static batching),
so the property is the candidate's, not an artefact of ranking several. Its GPUs are compared
at the drawn peak, and at the peak the tighter plan serves exactly (its capacity): there any
lower rate would need one more instance, so that check holds for every peak.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from loose_plan import plan_loose
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.estimate import Batching
from inferencesize.parallelism import Parallelism, valid_splits
from inferencesize.planner import Limits, Plan, PlanResult, at_peak
from inferencesize.specs import ModelSpec
from inferencesize.vocabulary import Mode

HARDWARE = ["h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb"]
MODELS = sorted(_catalog().models)
NODE = 8  # bare GPUs are packed on 8-GPU nodes: the single-node splits
MAX_ISL, MAX_OSL = 32_768, 4_096
LIMITS = ["ttft", "itl", "e2e"]
MODES: list[Mode] = ["streaming", "streaming", "streaming", "sequential"]
BATCHING: list[Batching] = ["inflight", "inflight", "inflight", "static"]
#: Rates are solved to ~1e-12; the planner keeps N* over a load within 1e-9 of its rate.
RATE_TOLERANCE = 1e-8


@dataclass(frozen=True)
class Case:
    model: ModelSpec
    hardware: str
    precision: str
    split: Parallelism
    isl: int
    osl: int
    peak: float
    batching: Batching
    tight: Limits
    loose: Limits


def _log(draw: st.DrawFn, lo: float, hi: float) -> float:
    """Log-uniform in [10^lo, 10^hi]."""
    return float(10 ** draw(st.floats(lo, hi)))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """One candidate, one workload, limits, and the same limits with one or more loosened."""
    c = _catalog()
    model = c.model(draw(st.sampled_from(MODELS)))
    hardware = draw(st.sampled_from(HARDWARE))
    gpu, _ = c.hardware(hardware)
    precision = draw(st.sampled_from(gpu.native_precisions()))
    split = draw(st.sampled_from(valid_splits(_est().costs(model), NODE, pps=[1])))
    isl = draw(st.integers(1, min(MAX_ISL, model.max_context - 1)))
    osl = draw(st.integers(1, min(MAX_OSL, model.max_context - isl)))
    present = [k for k in LIMITS if draw(st.booleans())] or [draw(st.sampled_from(LIMITS))]
    must = draw(st.sampled_from(present))  # loosened for sure; the others present may be too
    value = {
        "ttft": _log(draw, -1.7, 1.5),  # 20 ms to 32 s
        "itl": _log(draw, -2.5, -0.5),  # 3 ms to 316 ms
        # per output token (and a prompt's worth), so long answers get a reachable limit
        "e2e": (osl + 20) * _log(draw, -2.5, -0.5),
    }
    tight = {k: value[k] if k in present else None for k in LIMITS}
    loose = dict(tight)
    for k in present:
        if k == must or draw(st.booleans()):
            loose[k] = value[k] * draw(st.floats(1.0, 3.0, exclude_min=True))
    mode = draw(st.sampled_from(MODES))
    return Case(
        model,
        hardware,
        precision,
        split,
        isl,
        osl,
        draw(st.floats(0.1, 200.0)),
        draw(st.sampled_from(BATCHING)),
        Limits(tight["ttft"], tight["itl"], tight["e2e"], mode),
        Limits(loose["ttft"], loose["itl"], loose["e2e"], mode),
    )


def _plan(case: Case, limits: Limits) -> PlanResult:
    return plan_loose(
        case.model,
        [_catalog().hardware(case.hardware)],
        [case.precision],
        case.isl,
        case.osl,
        case.peak,
        limits,
        _est(),
        tps=[case.split.tp],
        pps=[case.split.pp],
        eps=[case.split.ep],
        batching=case.batching,
    )


def _resized(p: Plan, case: Case, peak: float) -> Plan:
    return at_peak(p, peak, case.isl, case.osl, _est())


@settings(max_examples=1000, deadline=None)
@given(case=cases())
def test_looser_limits_never_need_more_gpus(case: Case) -> None:
    tight, loose = _plan(case, case.tight), _plan(case, case.loose)
    assert tight.summary is not None and tight.summary.candidates == 1
    if tight.chosen is None:
        return
    assert loose.chosen is not None, "a looser limit made a feasible candidate infeasible"
    a, b = tight.chosen, loose.chosen
    assert b.instances <= a.instances and b.gpus <= a.gpus and b.servers <= a.servers
    assert b.rate >= a.rate * (1 - RATE_TOLERANCE)
    exact = a.capacity_rps  # the tighter plan serves it with no headroom
    assert _resized(b, case, exact).gpus <= _resized(a, case, exact).gpus == a.gpus
