"""Statistics of a simulation: per-request latencies, percentiles, throughput, GPU busy share.

Warm-up: the first ``warmup`` share of requests (in arrival order) start on an empty system
and are left out. Closed loop: the last ``concurrency`` requests are sent while the clients
are finishing (the load falls), so they are left out too, and throughput is clients / mean
E2E (Little's law; clients send again at once), which stays right when clients in step finish
in bursts (with dropped requests: the completion rate between the first and the last measured
completion). Open loop: throughput is measured requests over the time from their first
arrival to their last completion.

Overload (open loop): a run whose servers cannot keep up with its arrivals has no steady
state; its latencies grow with the length of the run and mean nothing on their own. See
:func:`keeps_up`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from inferencesize.simulate.engine import SimResult
from inferencesize.vocabulary import PERCENTILES, QUANTILES, Statistic

METRICS = ("ttft_s", "itl_s", "e2e_s", "queue_s")


@dataclass(frozen=True)
class Distribution:
    """The mean and the vocabulary's percentiles (``vocabulary.PERCENTILES``, in order) of a
    sample."""

    mean: float
    percentiles: tuple[float, ...]

    def at(self, statistic: Statistic) -> float:
        """The value of ``statistic``: the mean or one of the percentiles."""
        if statistic is Statistic.MEAN:
            return self.mean
        return self.percentiles[PERCENTILES.index(statistic)]


@dataclass(frozen=True)
class PerRequest:
    """Per-request metrics (seconds); ``itl_s`` is NaN for one-token answers."""

    ttft_s: npt.NDArray[np.float64]
    itl_s: npt.NDArray[np.float64]
    e2e_s: npt.NDArray[np.float64]
    queue_s: npt.NDArray[np.float64]


@dataclass(frozen=True)
class Summary:
    requests: int  # measured (after warm-up and drain)
    dropped: int  # never fit in the KV cache
    ttft_s: Distribution
    itl_s: Distribution
    e2e_s: Distribution
    queue_s: Distribution
    requests_per_s: float
    output_tokens_per_s: float
    gpu_busy: float  # share of the simulated time the instances ran steps (mean over instances)
    duration_s: float
    arrival_rps: float = float("nan")  # measured over the window of measured arrivals
    completion_rps: float = float("nan")  # completions (any request) in that window
    overloaded: bool = False  # see keeps_up

    def metric(self, name: str) -> Distribution:
        dist: Distribution = getattr(self, name)
        return dist


def per_request(res: SimResult) -> PerRequest:
    itl = np.where(
        res.osl > 1,
        (res.done_s - res.first_token_s) / np.maximum(res.osl - 1, 1),
        np.nan,
    )
    return PerRequest(
        ttft_s=res.first_token_s - res.arrival_s,
        itl_s=itl,
        e2e_s=res.done_s - res.arrival_s,
        queue_s=res.admit_s - res.arrival_s,
    )


def measured_mask(res: SimResult, warmup: float, cooldown: int = 0) -> npt.NDArray[np.bool_]:
    """Requests that count: after the warm-up share of the first ``n − cooldown`` arrivals,
    before the last ``cooldown`` arrivals (sent only to keep the load up while the measured
    requests finish) and the closed-loop drain, not dropped."""
    if not 0.0 <= warmup < 1.0:
        raise ValueError(f"warmup must be in [0, 1) (got {warmup})")
    n = len(res.arrival_s)
    order = np.argsort(res.arrival_s, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    tail = cooldown + (res.concurrency if res.closed_loop else 0)
    start = int(warmup * (n - cooldown))
    keep: npt.NDArray[np.bool_] = (rank >= start) & (rank < n - tail)
    if not keep.any():
        keep = rank >= 0
    return keep & ~np.isnan(res.done_s)


def distribution(values: npt.NDArray[np.float64]) -> Distribution:
    v = values[~np.isnan(values)]
    if v.size == 0:
        return Distribution(float("nan"), (float("nan"),) * len(QUANTILES))
    values_at = np.quantile(v, QUANTILES)
    return Distribution(float(v.mean()), tuple(float(x) for x in values_at))


def percentile_of(values: npt.NDArray[np.float64], q: float) -> float:
    """The ``q`` quantile (0–1) of the non-NaN values."""
    v = values[~np.isnan(values)]
    return float(np.percentile(v, q * 100.0)) if v.size else float("nan")


#: Completions may fall short of arrivals by this share (plus Poisson noise, 3 standard
#: deviations of the arrival count) before a run counts as overloaded on the rates alone.
OVERLOAD_TOLERANCE = 0.05
#: Below that, a shortfall counts when it is beyond this many standard deviations of the
#: arrival count and the queue grows through the window (see :func:`queue_grows`).
SHORTFALL_SIGMAS = 2.0


def keeps_up(res: SimResult, keep: npt.NDArray[np.bool_]) -> tuple[float, float, bool]:
    """Arrival rate, completion rate and whether the run is overloaded.

    The window is the span of the measured arrivals (after the warm-up, ``keep``): the
    arrival rate is those arrivals over the window; the completion rate counts every request
    that completed inside the window (a server property: which request finishes does not
    matter). In steady state the two agree up to the Poisson noise of the counts and an edge
    of one E2E at each end, which the warm-up covers; when the servers cannot keep up, the
    completions run at the service capacity and the queue grows through the whole window.

    Overloaded, n the measured arrivals (short runs are judged leniently), when either

    * the completion rate is below the arrival rate × (1 − :data:`OVERLOAD_TOLERANCE` −
      3/√n): far behind on the rates alone; or
    * it is below the arrival rate × (1 − :data:`SHORTFALL_SIGMAS`/√n), beyond the noise of
      the counts, and the queue grows (:func:`queue_grows`): 7.4 of 8 req/s served, the
      wait for a batch rising from 3 s to 15 s over a run of 2,000 requests.

    A closed loop is never overloaded (its clients wait for their answers); requests dropped
    as larger than the KV cache are not arrivals here (they are reported as dropped).
    """
    arrivals = np.sort(res.arrival_s[keep & ~np.isnan(res.arrival_s)])
    if arrivals.size < 2 or arrivals[-1] <= arrivals[0]:
        nan = float("nan")
        return nan, nan, False
    start, end = float(arrivals[0]), float(arrivals[-1])
    span = end - start
    done = res.done_s[~np.isnan(res.done_s)]
    arrival_rps = arrivals.size / span
    completion_rps = float(np.count_nonzero((done >= start) & (done <= end))) / span
    if res.closed_loop:
        return arrival_rps, completion_rps, False
    noise = 1.0 / float(np.sqrt(arrivals.size))
    far_behind = completion_rps < arrival_rps * (1.0 - OVERLOAD_TOLERANCE - 3.0 * noise)
    shortfall = 1.0 - completion_rps / arrival_rps
    behind = shortfall > SHORTFALL_SIGMAS * noise and queue_grows(res, keep, shortfall * span)
    return arrival_rps, completion_rps, far_behind or behind


def queue_grows(res: SimResult, keep: npt.NDArray[np.bool_], backlog_s: float) -> bool:
    """Whether the wait before service grows through the measured window: the mean wait of
    the last quarter of the measured arrivals exceeds the first quarter's by more than the
    first quarter's mean E2E, and by more than a third of what a shortfall of ``backlog_s``
    seconds of arrivals builds between the two quarters (an overloaded server's wait grows
    by the shortfall × the time elapsed: 3/4 of ``backlog_s`` between the quarters' middles).
    A stable queue, however long, keeps its wait from quarter to quarter."""
    measured = keep & ~np.isnan(res.arrival_s) & ~np.isnan(res.admit_s)
    order = np.argsort(res.arrival_s[measured], kind="stable")
    wait = (res.admit_s - res.arrival_s)[measured][order]
    e2e = (res.done_s - res.arrival_s)[measured][order]
    quarter = wait.size // 4
    if quarter < 1:
        return False
    growth = float(wait[-quarter:].mean() - wait[:quarter].mean())
    return growth > float(e2e[:quarter].mean()) and growth > backlog_s / 4.0


def summarize(res: SimResult, warmup: float = 0.1) -> Summary:
    keep = measured_mask(res, warmup)
    pr = per_request(res)
    count = int(keep.sum())
    done = np.sort(res.done_s[keep])
    if res.closed_loop and count and res.dropped == 0:
        # Little's law with no think time: each client completes one request per E2E. Counting
        # completions between the first and the last one would be biased when clients in step
        # finish in bursts (a whole burst at each end of the span).
        rate = res.concurrency / float(np.mean(pr.e2e_s[keep]))
    elif res.closed_loop and count >= 2:
        span = float(done[-1] - done[0])
        rate = (count - 1) / span if span > 0 else float("nan")
    elif count:
        span = float(done[-1] - res.arrival_s[keep].min())
        rate = count / span if span > 0 else float("nan")
    else:
        rate = float("nan")
    tokens = float(res.osl[keep].mean()) * rate if count else float("nan")
    end = res.end_s
    busy = float(np.mean(res.busy_s) / end) if end > 0 else 0.0
    arrival_rps, completion_rps, overloaded = keeps_up(res, keep)
    return Summary(
        requests=count,
        dropped=res.dropped,
        ttft_s=distribution(pr.ttft_s[keep]),
        itl_s=distribution(pr.itl_s[keep]),
        e2e_s=distribution(pr.e2e_s[keep]),
        queue_s=distribution(pr.queue_s[keep]),
        requests_per_s=rate,
        output_tokens_per_s=tokens,
        gpu_busy=busy,
        duration_s=end,
        arrival_rps=arrival_rps,
        completion_rps=completion_rps,
        overloaded=overloaded,
    )
