"""Which engine set a plan was predicted with, why, and whether the engine matters there.

Without an engine named (``--engine``, ``--calibration``, a scenario's ``engine:``), a GPU ×
precision the default set is not calibrated on takes the set calibrated there on the most
measurements (``deployment.choose_efficiency``); the plan says so. Where more than one set is
calibrated on the chosen plan's GPU × precision, each sizes the plan's candidate (same split,
limits and traffic) and the rates per instance they give are compared: when the highest is
more than :data:`SPREAD_BAND` above the lowest, the sets disagree by more than a calibrated
prediction's error and the answer depends on which engine is run; the plan says that too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from inferencesize.deployment import efficiency_resolution
from inferencesize.estimate import Estimator
from inferencesize.plan_search import plan_alone
from inferencesize.planner import Plan
from inferencesize.question import PlanOptions, Question
from inferencesize.specs import EfficiencySet, GpuSpec
from inferencesize.specs.efficiency import measured_points, static_batching

#: How far apart (highest / lowest − 1) the rates per instance of two sets calibrated on one
#: GPU × precision may be before the plan says the engine matters: the error band of a
#: calibrated prediction. In sample, calibrated rates and throughputs are within 13–21 % of
#: the measurement for nine rows in ten (p90 APE, docs/accuracy.md, 2024 files); two sets
#: within 25 % of each other cannot be told apart by the model.
SPREAD_BAND = 0.25

Why = Literal["named", "default", "calibrated"]


@dataclass(frozen=True)
class SetRate:
    """What one set calibrated on the plan's GPU × precision gives its candidate."""

    set_id: str
    points: int  # measurements its entry was fitted on
    rate_rps: float | None  # per instance within the limits; None: it finds none


@dataclass(frozen=True)
class EngineChoice:
    """The set behind the chosen plan (``why``: ``named`` by the user, the catalog's
    ``default``, or ``calibrated``: taken instead of the default, which is not calibrated on
    this GPU × precision), and the sets calibrated there with their rates per instance."""

    set_id: str
    engine: str
    why: Why
    default_id: str
    gpu: str
    precision: str
    calibrated: tuple[SetRate, ...]

    @property
    def spread(self) -> float | None:
        """Highest / lowest rate per instance − 1 over the calibrated sets (None: fewer than
        two sets give a rate). A set that finds no rate at all is counted as infinitely far."""
        rates = [r.rate_rps for r in self.calibrated]
        if len(rates) < 2:
            return None
        if any(r is None for r in rates):
            return float("inf")
        known = [r for r in rates if r is not None]
        return max(known) / min(known) - 1.0

    @property
    def disagree(self) -> bool:
        spread = self.spread
        return spread is not None and spread > SPREAD_BAND

    def notes(self) -> list[str]:
        """One line for each thing a reader of the plan should know (none: nothing)."""
        out = []
        where = f"{self.gpu} {self.precision}"
        if self.why == "calibrated":
            points = next((r.points for r in self.calibrated if r.set_id == self.set_id), 0)
            out.append(
                f"engine: {self.set_id} for {where}, the set calibrated there on the most"
                f" measurements ({points}); the default {self.default_id} is not calibrated"
                " there (--engine names another)"
            )
        if self.disagree:
            known = sorted(
                (r for r in self.calibrated if r.rate_rps is not None),
                key=lambda r: r.rate_rps or 0.0,
            )
            none = [r.set_id for r in self.calibrated if r.rate_rps is None]
            span = (
                f"{known[0].rate_rps:,.3g} ({known[0].set_id}) to {known[-1].rate_rps:,.3g}"
                f" ({known[-1].set_id}) req/s per instance"
                if len(known) > 1
                else ""
            )
            failing = f"no plan of this candidate under {', '.join(none)}" if none else ""
            what = "; ".join(t for t in (span, failing) if t)
            ask = (
                "the plan holds for the engine named only"
                if self.why == "named"
                else "name the engine you run with --engine"
            )
            out.append(
                f"engine sets calibrated on {where} disagree on this plan: {what}, more than"
                f" the model's ±{SPREAD_BAND:.0%} band: {ask}"
            )
        return out

    def record(self) -> dict[str, Any]:
        return {
            "set": self.set_id,
            "engine": self.engine,
            "why": self.why,
            "default_set": self.default_id,
            "gpu": self.gpu,
            "precision": self.precision,
            "calibrated_sets": [
                {"set": r.set_id, "points": r.points, "requests_per_s_per_instance": r.rate_rps}
                for r in self.calibrated
            ],
            "spread": self.spread,
            "band": SPREAD_BAND,
            "disagree": self.disagree,
            "notes": self.notes(),
        }


def engine_choice(
    chosen: Plan,
    est: Estimator,
    catalog_sets: Iterable[EfficiencySet],
    q: Question,
    options: PlanOptions,
    *,
    named: bool,
) -> EngineChoice:
    """The :class:`EngineChoice` of ``chosen``, planned with ``est`` for question ``q``: each
    in-flight set of the catalog (and ``est``'s own) calibrated on its GPU × precision sizes
    its candidate alone, with the same limits, traffic and options."""
    c = chosen.candidate
    used = est.efficiency_for(c.gpu, c.precision)
    why: Why = "named" if named else "default" if used is est.efficiency else "calibrated"
    pool = {s.id: s for s in catalog_sets if not static_batching(s)}
    pool.setdefault(est.efficiency.id, est.efficiency)
    pool[used.id] = used
    names = {c.gpu.id, *c.gpu.aliases}
    mine = [s for s in pool.values() if _calibrated(s, c.gpu, c.precision)]

    def rate(s: EfficiencySet) -> float | None:
        if s.id == used.id:
            return chosen.rate
        alone = replace(est, efficiency=s, others=(), _costs={}, _deps={})
        found = plan_alone(chosen, alone, q, options, top=TOP)
        return found.rate if found else None

    compare = len(mine) > 1  # else nothing to compare: only the set used has its rate
    rates = tuple(
        SetRate(
            s.id,
            measured_points(s, names, c.precision),
            rate(s) if compare or s.id == used.id else None,
        )
        for s in sorted(mine, key=lambda s: s.id)
    )
    return EngineChoice(used.id, used.engine, why, est.efficiency.id, c.gpu.id, c.precision, rates)


#: Plans each set's search ranks (plan_search.plan's default): its capacity is searched as when
#: the set plans the question itself.
TOP = 3


def _calibrated(s: EfficiencySet, gpu: GpuSpec, precision: str) -> bool:
    return efficiency_resolution(s, gpu, precision).trust == "calibrated"
