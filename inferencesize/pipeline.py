"""Pipelines of models: one user request calls several models in turn (guardrail → main model →
judge; an agent that makes N calls per prompt). Each stage is its own fleet, sized by
:func:`inferencesize.plan_search.plan`; the user's E2E limit covers the whole chain.

Each stage i makes ``calls_i`` sequential calls per user request, so

* its peak is ``calls_i · peak`` requests/s (each user request brings ``calls_i`` calls; for
  fractional calls, e.g. a judge on 30 % of requests, this over-states the burst slightly);
* the user waits ``Σ_i calls_i · E2E_i``, which must stay within ``e2e_limit``.

**How the E2E budget is split.** Stages with a fixed ``e2e_s`` keep it. The rest
``R = e2e_limit − Σ_fixed calls_i · e2e_i`` is shared in proportion to each free stage's
*unloaded* latency u_i (E2E of one request alone, concurrency 1, on its fastest candidate)::

    budget_i = u_i · R / Σ_free calls_j · u_j          so   Σ_i calls_i · budget_i = e2e_limit

Every stage then gets the same slack factor R / Σ calls·u: a stage that is slow even when idle
(the big main model) gets most of the time, a 5-token guardrail little. When Σ calls·u > R the
pipeline cannot meet the limit even with no load; the stages are still planned so the result
names each stage's miss. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from inferencesize.deployment import BARE_GPU_NODE, default_kv_precision
from inferencesize.estimate import Batching, Candidate, Estimator
from inferencesize.limits import Limits
from inferencesize.parallelism import valid_splits
from inferencesize.plan_search import plan
from inferencesize.planner import Plan, PlanResult
from inferencesize.question import DEFAULT_OPTIONS, PlanOptions, Question, SearchSpace
from inferencesize.vocabulary import Batching as BatchingKind
from inferencesize.vocabulary import Mode


@dataclass(frozen=True)
class Stage:
    """One model of the pipeline with what it may run on."""

    name: str
    space: SearchSpace  # model, hardware, precisions and splits searched
    isl: int
    osl: int
    calls: float = 1.0
    e2e_s: float | None = None  # fixed per-call budget
    ttft_s: float | None = None  # extra limits per call (a stage that streams to the user)
    itl_s: float | None = None

    def question(self, budget_s: float, batching: BatchingKind) -> Question:
        """The stage's question with ``budget_s`` of E2E per call (its share of the user's
        limit; a zero budget still plans, to report the miss)."""
        e2e_s = max(budget_s, 1e-9)
        limits = Limits(self.ttft_s, self.itl_s, e2e_s, Mode.STREAMING)
        return Question(self.space, self.isl, self.osl, limits, batching=batching)


@dataclass(frozen=True)
class StageResult:
    stage: Stage
    unloaded_e2e_s: float | None  # fastest single request; None = cannot run at all
    budget_s: float  # E2E limit per call this stage was planned with
    peak_rps: float
    result: PlanResult

    @property
    def chosen(self) -> Plan | None:
        return self.result.chosen


@dataclass(frozen=True)
class PipelineResult:
    stages: list[StageResult]
    peak_rps: float
    e2e_limit_s: float
    unloaded_e2e_s: float | None  # Σ calls · unloaded E2E

    @property
    def feasible(self) -> bool:
        return all(s.chosen is not None for s in self.stages)

    def _sum(self, values: list[float | None]) -> float | None:
        if not self.feasible or any(v is None for v in values):
            return None
        return float(sum(v or 0.0 for v in values))

    @property
    def servers(self) -> int | None:
        total = self._sum([float(s.chosen.servers) if s.chosen else None for s in self.stages])
        return None if total is None else int(total)

    @property
    def gpus(self) -> int | None:
        total = self._sum([float(s.chosen.gpus) if s.chosen else None for s in self.stages])
        return None if total is None else int(total)

    @property
    def servers_paid(self) -> int | None:
        """Servers (nodes) of the whole units every stage pays for."""
        paid = [float(s.chosen.servers_paid) if s.chosen else None for s in self.stages]
        total = self._sum(paid)
        return None if total is None else int(total)

    @property
    def gpus_paid(self) -> int | None:
        """GPUs of the whole units every stage pays for."""
        total = self._sum([float(s.chosen.gpus_paid) if s.chosen else None for s in self.stages])
        return None if total is None else int(total)

    @property
    def cost_per_hour_usd(self) -> float | None:
        return self._sum([s.chosen.cost_per_hour_usd if s.chosen else None for s in self.stages])

    @property
    def power_watts(self) -> float | None:
        return self._sum([s.chosen.power_watts if s.chosen else None for s in self.stages])

    @property
    def e2e_s(self) -> float | None:
        """The user's E2E at the stages' operating points: Σ calls · E2E."""
        return self._sum(
            [s.stage.calls * s.chosen.point.e2e_s if s.chosen else None for s in self.stages]
        )


def unloaded_e2e(stage: Stage, est: Estimator, batching: Batching = "inflight") -> float | None:
    """E2E of one request alone (concurrency 1) on the stage's fastest single-node candidate."""
    best: float | None = None
    space = stage.space
    costs = est.costs(space.model)
    for gpu, system in space.hardware:
        node = system.gpus_per_node if system is not None else BARE_GPU_NODE
        splits = valid_splits(
            costs,
            node,
            list(space.tps) if space.tps else None,
            list(space.pps) if space.pps else None,
            list(space.eps) if space.eps else None,
        )
        for precision in space.precisions or gpu.native_precisions():
            kv = space.kv_precision or default_kv_precision(precision)
            for par in splits:
                cand = Candidate(space.model, gpu, system, precision, kv, par)
                res = est.resolve(cand, stage.isl + stage.osl)
                if res.reason is not None or res.max_concurrency < 1:
                    continue
                op = est.point(res, stage.isl, stage.osl, 1, batching)
                if op is not None and (best is None or op.e2e_s < best):
                    best = op.e2e_s
    return best


def split_budget(
    unloaded_s: Sequence[float | None],
    calls: Sequence[float],
    fixed_s: Sequence[float | None],
    e2e_limit_s: float,
) -> list[float]:
    """Per-call E2E budget of every stage (see the module docstring).

    A free stage that cannot run (unloaded None) gets the whole remainder: it fails anyway,
    and its plan then says why.
    """
    if not len(unloaded_s) == len(calls) == len(fixed_s):
        raise ValueError("split_budget: unloaded_s, calls and fixed_s need one value per stage")
    rest = e2e_limit_s - sum(c * f for c, f in zip(calls, fixed_s, strict=True) if f is not None)
    weight = sum(
        c * u for c, u, f in zip(calls, unloaded_s, fixed_s, strict=True) if f is None and u
    )
    out: list[float] = []
    for c, u, f in zip(calls, unloaded_s, fixed_s, strict=True):
        if f is not None:
            out.append(f)
        elif u is None or weight <= 0:
            out.append(max(rest, 0.0) / c)
        else:
            out.append(max(rest, 0.0) * u / weight)
    return out


def plan_pipeline(
    stages: Sequence[Stage],
    peak_rps: float,
    e2e_limit_s: float,
    est: Estimator,
    *,
    batching: BatchingKind = BatchingKind.INFLIGHT,
    options: PlanOptions = DEFAULT_OPTIONS,
) -> PipelineResult:
    """Size every stage for ``calls · peak_rps`` within its share of ``e2e_limit_s``, each
    planned with ``options``."""
    if not stages:
        raise ValueError("plan_pipeline: needs at least one stage")
    if peak_rps <= 0 or e2e_limit_s <= 0:
        raise ValueError("plan_pipeline: peak_rps and e2e_limit_s must be > 0")
    unloaded = [unloaded_e2e(s, est, batching) for s in stages]
    budgets = split_budget(
        unloaded, [s.calls for s in stages], [s.e2e_s for s in stages], e2e_limit_s
    )
    results: list[StageResult] = []
    for stage, u, budget in zip(stages, unloaded, budgets, strict=True):
        stage_peak = stage.calls * peak_rps
        result = plan(stage.question(budget, batching), stage_peak, est, options)
        results.append(StageResult(stage, u, budget, stage_peak, result))
    total_unloaded = (
        None
        if any(u is None for u in unloaded)
        else math.fsum(s.calls * (u or 0.0) for s, u in zip(stages, unloaded, strict=True))
    )
    return PipelineResult(results, peak_rps, e2e_limit_s, total_unloaded)
