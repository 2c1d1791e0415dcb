"""Tests that state a sizing question as loose values: the :class:`Question` and
:class:`PlanOptions` they stand for, and the planner run on them.

The planner takes a resolved question (:func:`inferencesize.plan_search.plan`); many tests vary one
value of it at a time, and state it as the flags would (``tps=[1]``, ``arrivals="poisson"``).
:func:`plan_loose` builds the question and the options from them, in one place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inferencesize.economics import Budget, Pricing
from inferencesize.estimate import Estimator
from inferencesize.limits import Limits
from inferencesize.plan_search import plan
from inferencesize.planner import PlanResult
from inferencesize.question import ClosedLoop, OpenLoop, PlanOptions, Question, SearchSpace
from inferencesize.specs import GpuSpec, ModelSpec, SystemSpec
from inferencesize.vocabulary import DEFAULT_ROUTER, Arrivals, Batching, Objective, Router


def loose_question(
    model: ModelSpec,
    hardware: Sequence[tuple[GpuSpec, SystemSpec | None]],
    precisions: Sequence[str] | None,
    isl: int,
    osl: int,
    limits: Limits,
    *,
    kv_precision: str | None = None,
    tps: Sequence[int] | None = None,
    pps: Sequence[int] | None = None,
    eps: Sequence[int] | None = None,
    batching: Batching | str = Batching.INFLIGHT,
    batch_sizes: Sequence[int] | None = None,
    arrivals: Arrivals | str = Arrivals.CLOSED_LOOP,
    cv: float = 1.0,
    router: Router | str = DEFAULT_ROUTER,
) -> Question:
    """The question these values state."""
    space = SearchSpace(
        model,
        tuple(hardware),
        list(precisions) if precisions is not None else None,
        kv_precision,
        list(tps) if tps is not None else None,
        list(pps) if pps is not None else None,
        list(eps) if eps is not None else None,
    )
    kind = OpenLoop(cv, Router(router)) if arrivals == Arrivals.POISSON else ClosedLoop()
    sizes = list(batch_sizes) if batch_sizes is not None else None
    return Question(space, isl, osl, limits, kind, Batching(batching), sizes)


def plan_loose(
    model: ModelSpec,
    hardware: Sequence[tuple[GpuSpec, SystemSpec | None]],
    precisions: Sequence[str] | None,
    isl: int,
    osl: int,
    peak_rps: float,
    limits: Limits,
    est: Estimator,
    *,
    top: int = 3,
    objective: Objective | str = Objective.SERVERS,
    pricing: Pricing | None = None,
    dps: Sequence[int] | None = None,
    span_nvlink_domain: bool = False,
    prune: bool = False,
    share_gpus: bool = False,
    budget: Budget | None = None,
    **question: Any,
) -> PlanResult:
    """:func:`inferencesize.plan_search.plan` of the question and options these values state
    (``question``: the keyword arguments of :func:`loose_question`)."""
    q = loose_question(model, hardware, precisions, isl, osl, limits, **question)
    options = PlanOptions(
        top=top,
        objective=Objective(objective),
        pricing=pricing,
        dps=tuple(dps) if dps is not None else None,
        span_nvlink_domain=span_nvlink_domain,
        prune=prune,
        share_gpus=share_gpus,
        budget=budget,
    )
    return plan(q, peak_rps, est, options)
