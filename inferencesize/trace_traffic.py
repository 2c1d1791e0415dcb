"""Traffic read off a request trace: the prompt and answer lengths a plan sizes for, the rate,
and the burstiness of the arrivals (the coefficient of variation of the gaps between them).

The open-loop model takes fixed lengths and gamma-renewal arrivals: a trace enters it as its
mean ISL and OSL, its mean rate and its gaps' cv. ``plan --verify`` replays the trace itself
(every request's lengths, the arrivals' own pattern) with its times scaled to the rate sized
for (:meth:`TraceTraffic.at_rate`). Pure: the caller reads the file
(:func:`inferencesize.io_trace.read_trace`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inferencesize.simulate.arrivals import Workload

#: Fewest requests a trace needs: two gaps give a rate and a spread.
MIN_REQUESTS = 3
#: The least burstiness sized for: a trace of (nearly) evenly spaced requests is sized as
#: gaps with this cv (the open-loop model needs cv > 0).
MIN_CV = 0.05


@dataclass(frozen=True)
class TraceTraffic:
    """What a trace says about the traffic (SI units: seconds, requests/s, tokens)."""

    source: str
    requests: int
    span_s: float
    mean_rps: float
    #: The gaps' coefficient of variation as measured, and as sized for (at least MIN_CV).
    gap_cv: float
    cv: float
    isl_mean: float
    osl_mean: float
    workload: Workload

    def at_rate(self, rate_rps: float) -> Workload:
        """The trace's requests with their arrival times scaled so they come at ``rate_rps``
        on average (the first at time 0): the same pattern, faster or slower."""
        assert self.workload.arrival_s is not None
        t = self.workload.arrival_s
        scale = self.mean_rps / rate_rps
        return Workload(self.workload.isl, self.workload.osl, (t - t[0]) * scale)


def trace_traffic(workload: Workload, source: str, max_cv: float) -> TraceTraffic:
    """The traffic of ``workload`` (a trace sorted by arrival time); ValueError with the
    reason when it has too few requests, no time between its first and last arrival, or gaps
    burstier than ``max_cv``."""
    t = workload.arrival_s
    if t is None or len(t) < MIN_REQUESTS:
        got = 0 if t is None else len(t)
        raise ValueError(
            f"a trace needs at least {MIN_REQUESTS} requests to give a rate and its"
            f" burstiness (got {got})"
        )
    span = float(t[-1] - t[0])
    if not span > 0:
        raise ValueError("every request arrives at the same time: the trace gives no rate")
    gaps = np.diff(t)
    mean_gap = float(gaps.mean())
    gap_cv = float(gaps.std()) / mean_gap
    if gap_cv > max_cv:
        raise ValueError(
            f"its gaps' coefficient of variation is {gap_cv:.3g}, above the {max_cv:g} the"
            " open-loop model takes"
        )
    return TraceTraffic(
        source=source,
        requests=len(t),
        span_s=span,
        mean_rps=1.0 / mean_gap,
        gap_cv=gap_cv,
        cv=max(gap_cv, MIN_CV),
        isl_mean=float(np.mean(workload.isl)),
        osl_mean=float(np.mean(workload.osl)),
        workload=workload,
    )
