"""One instance under open-loop traffic: in-flight batching, requests arriving at λ requests/s.

(draft)
"""

from __future__ import annotations

from inferencesize.latency import Deployment
from inferencesize.openloop.point import QUANTILES, OpenLoopPoint, point
from inferencesize.openloop.search import InstanceSearch, RateSearch, max_rate_within, rate_bound
from inferencesize.openloop.steps import STEP_TOKENS, Steps, steps
from inferencesize.units import statistic_fraction
from inferencesize.vocabulary import Metric

__all__ = [
    "QUANTILES",
    "STEP_TOKENS",
    "InstanceSearch",
    "Metric",
    "OpenLoopPoint",
    "RateSearch",
    "max_rate_rps",
    "max_rate_within",
    "open_loop",
    "rate_bound",
    "steps_of",
]


def open_loop(
    dep: Deployment,
    isl: float,
    osl: float,
    rate_rps: float,
    *,
    cv: float = 1.0,
    max_in_flight: int,
    step_tokens: int = STEP_TOKENS,
    quantiles: tuple[float, ...] = QUANTILES,
) -> OpenLoopPoint:
    """One in-flight-batching instance of ``dep`` under arrivals at ``rate_rps`` requests/s
    (gamma inter-arrival times with coefficient of variation ``cv``; 1 = Poisson) of ISL / OSL
    tokens, with ``max_in_flight`` KV slots (``Resolved.max_concurrency``) and prompt steps of
    up to ``step_tokens`` prompt tokens (module docstring). Seconds and requests/s."""
    st = steps(dep, isl, osl, max_in_flight, step_tokens)
    return point(st, float(rate_rps), cv, tuple(statistic_fraction(q) for q in quantiles))


def max_rate_rps(
    dep: Deployment, isl: float, osl: float, *, max_in_flight: int, step_tokens: int = STEP_TOKENS
) -> float:
    """The sustainable rate λ_max (requests/s) of one instance (module docstring)."""
    return steps(dep, isl, osl, max_in_flight, step_tokens).max_rate_rps


def steps_of(
    dep: Deployment, isl: float, osl: float, max_in_flight: int, step_tokens: int = STEP_TOKENS
) -> Steps:
    """The step table of ``dep`` at ISL / OSL (shared by the searches of one deployment)."""
    return steps(dep, isl, osl, max_in_flight, step_tokens)
