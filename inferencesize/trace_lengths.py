"""A trace's lengths as the plan took them, and the answer the other way gives.

A trace is sized for its binned ISL/OSL distribution by default
(:mod:`inferencesize.length_mix`, carried by the estimator to the open-loop model), or for its
mean ISL and OSL alone (``trace_lengths: mean``). Beside the plan, its candidate sized the
other way with the same limits, arrivals and router shows what a mean hides
(:func:`instances_for_lengths`).

Pure: the plan and the estimator come in.
"""

from __future__ import annotations

from dataclasses import replace

from inferencesize.estimate import Estimator
from inferencesize.length_mix import LengthMix
from inferencesize.planner import Limits, Plan, search_instances
from inferencesize.vocabulary import Router


def instances_for_lengths(
    est: Estimator,
    p: Plan,
    lengths: LengthMix | None,
    isl: float,
    osl: float,
    limits: Limits,
    cv: float,
    router: Router | str,
) -> int | None:
    """Instances of ``p``'s candidate that serve its peak within ``limits`` when the
    requests' lengths are ``lengths`` (None: every request ``isl`` / ``osl`` tokens); None
    when no count does (a request alone misses, or it does not fit)."""
    other = replace(est, lengths=lengths, _costs={}, _deps={})
    res = other.resolve(p.candidate, isl + osl)
    if res.deployment is None or res.max_concurrency < 1:
        return None
    sizing = p.sizing  # the same candidate: its search starts near p's answer
    start = sizing.start_share(p.instances, p.peak_rps) if sizing else None
    _, _, n, _ = search_instances(res, isl, osl, limits, p.peak_rps, cv, router, start=start)
    return n if n > 0 else None
