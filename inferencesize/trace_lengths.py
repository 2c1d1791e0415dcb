"""A trace's lengths as the plan took them, and the answer the mean lengths alone give.

A trace is sized for its binned ISL/OSL distribution by default
(:mod:`inferencesize.length_mix`, carried by the estimator to the open-loop model); beside that
plan, the chosen candidate sized again at the trace's mean ISL and OSL with the same limits,
arrivals and router shows what a mean hides (:func:`mean_length_instances`).

Pure: the plan and the estimator come in.
"""

from __future__ import annotations

from dataclasses import replace

from inferencesize.estimate import Estimator
from inferencesize.planner import Limits, Plan, search_instances
from inferencesize.vocabulary import Router


def mean_length_instances(
    est: Estimator,
    p: Plan,
    isl: float,
    osl: float,
    limits: Limits,
    cv: float,
    router: Router | str,
) -> int | None:
    """Instances of ``p``'s candidate that serve its peak within ``limits`` when every
    request is ``isl`` / ``osl`` tokens (``est`` without its length distribution); None when
    none does (a request alone misses, or it does not fit)."""
    fixed = replace(est, lengths=None, _costs={}, _deps={})
    res = fixed.resolve(p.candidate, isl + osl)
    if res.deployment is None:
        return None
    _, _, n, _ = search_instances(res, isl, osl, limits, p.peak_rps, cv, router)
    return n if n > 0 else None
