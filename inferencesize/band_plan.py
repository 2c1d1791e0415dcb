"""The chosen plan at the pessimistic edge of its error band.

A plan's GPU count rests on its predicted step times; measurements of predictions like this
one (same trust, model family measured or not: :mod:`inferencesize.bands`) fall above the
prediction by up to the 90th percentile of measured / predicted ITL in nine cases out of
ten. The chosen candidate is sized again, alone (:func:`inferencesize.plan_search.plan_alone`),
with every step's time multiplied by that ratio (``latency.Deployment.step_scale``), at the
same peak, limits and traffic: the count to buy if the step is that slow. One extra count
search, for one candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from inferencesize.bands import Band, BandTable
from inferencesize.estimate import Estimator, point_bands
from inferencesize.plan_search import plan_alone
from inferencesize.planner import Plan
from inferencesize.question import PlanOptions, Question


@dataclass(frozen=True)
class SlowEdge:
    """``plan``: the chosen candidate sized with every step ``band.high`` times slower (None:
    no count of it meets the limits then)."""

    band: Band
    plan: Plan | None

    def record(self) -> dict[str, Any]:
        p = self.plan
        return {
            "step_scale": self.band.high,
            "label": self.band.label,
            "rows": self.band.rows,
            "feasible": p is not None,
            "instances": p.instances if p else None,
            "gpus": p.gpus if p else None,
            "servers": p.servers if p else None,
            "gpus_paid": p.gpus_paid if p else None,
            "servers_paid": p.servers_paid if p else None,
            "cost_per_hour_usd": p.cost_per_hour_usd if p else None,
        }


def slow_edge(
    chosen: Plan,
    est: Estimator,
    table: BandTable,
    q: Question,
    options: PlanOptions,
) -> SlowEdge | None:
    """The :class:`SlowEdge` of ``chosen``, planned for question ``q`` with ``options``
    (module docstring); None when no band covers it."""
    band = point_bands(table, est, chosen.candidate, chosen.trust).get("itl")
    if band is None:
        return None
    slow = replace(est, step_scale=band.high, _costs={}, _deps={})
    found = plan_alone(chosen, slow, q, options)
    return SlowEdge(band, found)
