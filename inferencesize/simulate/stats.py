"""Statistics of a simulation: per-request latencies, percentiles, throughput, GPU busy share.

Warm-up: the first ``warmup`` share of requests (in arrival order) start on an empty system
and are left out. Closed loop: the last ``concurrency`` requests are sent while the clients
are finishing (the load falls), so they are left out too, and throughput is clients / mean
E2E (Little's law; clients send again at once), which stays right when clients in step finish
in bursts (with dropped requests: the completion rate between the first and the last measured
completion). Open loop: throughput is measured requests over the time from their first
arrival to their last completion.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from inferencesize.simulate.engine import SimResult

PERCENTILES = (50.0, 90.0, 95.0, 99.0)
METRICS = ("ttft_s", "itl_s", "e2e_s", "queue_s")


@dataclass(frozen=True)
class Distribution:
    mean: float
    p50: float
    p90: float
    p95: float
    p99: float


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


def measured_mask(res: SimResult, warmup: float) -> npt.NDArray[np.bool_]:
    """Requests that count: after the warm-up share, before the closed-loop drain, not dropped."""
    if not 0.0 <= warmup < 1.0:
        raise ValueError(f"warmup must be in [0, 1) (got {warmup})")
    n = len(res.arrival_s)
    order = np.argsort(res.arrival_s, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    tail = res.concurrency if res.closed_loop else 0
    keep: npt.NDArray[np.bool_] = (rank >= int(warmup * n)) & (rank < n - tail)
    if not keep.any():
        keep = rank >= 0
    return keep & ~np.isnan(res.done_s)


def distribution(values: npt.NDArray[np.float64]) -> Distribution:
    v = values[~np.isnan(values)]
    if v.size == 0:
        nan = float("nan")
        return Distribution(nan, nan, nan, nan, nan)
    p50, p90, p95, p99 = np.percentile(v, PERCENTILES)
    return Distribution(float(v.mean()), float(p50), float(p90), float(p95), float(p99))


def percentile_of(values: npt.NDArray[np.float64], q: float) -> float:
    """The ``q`` quantile (0–1) of the non-NaN values."""
    v = values[~np.isnan(values)]
    return float(np.percentile(v, q * 100.0)) if v.size else float("nan")


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
    )
