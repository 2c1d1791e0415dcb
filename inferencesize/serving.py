"""Serving math: latency and throughput of one instance at an operating point.

In-flight (continuous) batching with N closed-loop clients (GenAI-Perf concurrency mode):

* At most B_max = KV capacity / KV(ISL + OSL) requests are in flight; the other N − B wait
  for a slot (Little's law on that queue: wait = (N − B) / X).
* Decode steps run at batch ≈ B and are stretched by the prefills interleaved with them:
  ITL = T_decode(B) / (1 − X · t_p · (B − 1) / B · (1 − w)), t_p = marginal step cost of one
  more prompt: a client's decode steps interleave only with the other clients' prefills, less
  the share w of them it already waited for before its first token (below), so each prefill
  is counted once.
* Prefills queue behind each other. Closed-loop clients with fixed lengths come back together
  (a cohort): the other B − 1 return as C = (B − 1) / (1 + (B − 1) · ISL / ``cohort_tokens``)
  in step (long prompts spread them out), and the engine prefills the cohort in two batched
  steps, those that came before the first prompt step and those that came during it, (C + 1)/2
  prompts each. A member of the first step waits for it, one of the second for both: on
  average 1.5 prefills of half the cohort, less its own prompt (counted below), and for
  0.75 C − 0.25 other prompts. The re-sends spread over ``arrival_spread_s``, so a share
  s = ``prefill_sync`` · t₁ / (t₁ + spread) is in step (t₁ a prompt step alone: a short one
  misses most of the spread; s above 1 scales the cohort's wait). The other max(1 − s, 0)
  arrive out of step, as random traffic does: such a request finds a step in progress,
  length-biased, so it waits T/2 + ρ t_p/2 of it (T = T_decode / (1 − ρ) the mean step,
  ρ = X t_p (B − 1)/B the others' prefill share of engine time), and shares its own step with
  the X (T + ρ t_p) prompts that arrived meanwhile (w counts those too). Then its own step.
* Every step pays ``step_overhead_s``, ``layer_overhead_s`` per layer and ``seq_overhead_s``
  per sequence it holds (``latency.step_time``): a busy engine's steps cost more than their
  GEMMs and KV reads.
* On an instance of more than one GPU, TTFT also holds the request hand-off ``handoff_s``
  (the orchestrator passes the request to the worker ranks and the first token back): it
  takes no engine time, so it lowers a closed-loop client's rate only by lengthening its
  cycle.
* E2E = TTFT + (OSL − 1) · ITL; throughput X = B / E2E(X) (Little's law), a root solved by
  closed-form bounds and regula falsi (bisection when a chunk budget makes E2E jump).

Static batching at batch B: TTFT = prefill of the whole batch (+ the hand-off on more than one
GPU); ITL = decode step at B.

Serving techniques (prefix caching, speculative decoding, chunked prefill) enter through the
step model (``latency.step_time``): step times include them, and ITL is per output token (a
speculative step emits several).

The model in three parts: what the steps cost at an operating point (``serving_steps``), the
closed-form queue formulas (``queueing``), and here the fixed point X = B / E2E(X) that ties
them together, and the operating points the commands report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from inferencesize.latency import Deployment, step_time
from inferencesize.queueing import (
    LOAD_CAP,
    chunked_cohort_wait_s,
    closed_loop_rate,
    cohort_size,
    cohort_step_prompts,
    cohort_wait_s,
    e2e_s,
    in_step_share,
    prefill_queue,
    prompts_ahead,
    slot_wait_s,
    stretched_itl_s,
    ttft_s,
)
from inferencesize.serving_steps import inflight_steps, static_batch, step_totals
from inferencesize.vocabulary import Batching, BatchingMode

__all__ = [
    "LOAD_CAP",
    "Batching",
    "InflightArrays",
    "OperatingPoint",
    "inflight",
    "inflight_arrays",
    "points",
    "select",
    "static",
    "step_totals",
]


@dataclass(frozen=True)
class OperatingPoint:
    """Per-instance prediction at one operating point (SI units)."""

    concurrency: float  # clients (closed loop) or batch size; the planner's load may be fractional
    in_flight: float  # requests holding KV (≤ B_max)
    ttft_s: float
    itl_s: float
    e2e_s: float
    requests_per_s: float
    output_tokens_per_s: float
    queue_wait_s: float  # waiting for a KV slot (part of TTFT)
    prefill_wait_s: float  # waiting behind other prefills (part of TTFT)
    prefill_bound: str | None  # what bounds each phase (None: not computed, e.g. planning)
    decode_bound: str | None
    #: Open-loop points: percentiles over requests, {fraction: seconds} (empty: means only).
    ttft_q: Mapping[float, float] = field(default_factory=dict)
    itl_q: Mapping[float, float] = field(default_factory=dict)
    e2e_q: Mapping[float, float] = field(default_factory=dict)


@dataclass(frozen=True)
class InflightArrays:
    """Vectorised in-flight results (numpy arrays, seconds and requests/s)."""

    in_flight: Any
    ttft_s: Any
    itl_s: Any
    e2e_s: Any
    requests_per_s: Any
    queue_wait_s: Any
    prefill_wait_s: Any


def inflight_arrays(
    dep: Deployment, isl: Any, osl: Any, concurrency: Any, max_in_flight: Any, iterations: int = 44
) -> InflightArrays:
    """Closed-loop in-flight batching, elementwise over numpy arrays (module docstring)."""
    isl = np.asarray(isl, dtype=float)
    osl = np.asarray(osl, dtype=float)
    n = np.maximum(np.asarray(concurrency, dtype=float), 1.0)
    b = np.maximum(np.minimum(n, np.asarray(max_in_flight, dtype=float)), 1.0)
    eff = dep.eff
    cohort = cohort_size(b, isl, eff.cohort_tokens)
    steps = inflight_steps(dep, isl, isl + osl / 2.0, b, cohort_step_prompts(cohort))
    t_decode = steps.decode_s
    sync = in_step_share(eff.prefill_sync, steps.alone_s, eff.arrival_spread_s)
    ahead = prompts_ahead(cohort)
    chunked = steps.chunked
    if chunked is None:
        cohort_wait = cohort_wait_s(sync, steps.cohort_step_s, steps.alone_s)
    else:
        cohort_wait = chunked_cohort_wait_s(sync, ahead, steps.prompt_s)
    first_token = steps.own_s + dep.handoff_s  # own prompt step, then the hand-off (multi-GPU)
    decode_step_s = t_decode * dep.techniques.tokens_per_step

    def queue(x: Any) -> tuple[Any, Any]:
        """Prefill wait (beyond half a step) and the stretch coefficient of ITL at rate x."""
        return prefill_queue(
            x, b, sync, ahead, cohort_wait, steps.prompt_s, steps.marginal_s, decode_step_s
        )

    def service(x: Any) -> tuple[Any, Any, Any]:
        wait, stretch = queue(x)
        itl = stretched_itl_s(t_decode, x, stretch)
        if chunked is not None:
            itl = np.maximum(np.minimum(itl, chunked.itl_cap_s), t_decode)
        ttft = ttft_s(b, itl, wait, first_token)
        if chunked is not None:
            ttft = np.where(x < chunked.rate_cap, ttft, np.inf)
        return ttft, itl, wait

    top = b / (steps.own_s + (osl - 1) * t_decode)  # no wait, no stretch: an upper bound on X
    if chunked is not None:
        x = _bisect(service, b, osl, top, iterations)
    else:
        # E2E(X) = c(X) + k / (1 − a(X) X): c (wait + own step) grows with X, a falls. With
        # a at its least and the wait at zero the closed form over-states X; with c at that
        # rate and a at its most it under-states it. Both agree when all arrivals are in
        # step (s ≥ 1); otherwise the root lies between and regula falsi finds it.
        k = (osl - 1 + 0.5 * (b > 1)) * t_decode
        idle_wait, most_stretch = queue(0.0)
        upper = closed_loop_rate(b, idle_wait + first_token, k, queue(top)[1])
        lower = closed_loop_rate(b, queue(upper)[0] + first_token, k, most_stretch)
        x = _regula_falsi(service, b, osl, np.minimum(lower, upper), upper, iterations)
    ttft_service, itl, prefill_wait = service(x)
    if chunked is not None:  # at the budget's limit the closed loop waits for it
        ttft_service = np.maximum(ttft_service, b / x - (osl - 1) * itl)
    queue_wait = slot_wait_s(n, b, x)
    ttft = queue_wait + ttft_service
    e2e = e2e_s(ttft, itl, osl)
    return InflightArrays(b, ttft, itl, e2e, n / e2e, queue_wait, prefill_wait)


# ---------------------------------------------------------------------------------------------
# Root solvers of X = B / E2E(X)
# ---------------------------------------------------------------------------------------------


def _excess(service: Any, b: Any, osl: Any, x: Any) -> Any:
    """g(X) = B / E2E(X) − X: positive below the closed-loop throughput, negative above."""
    ttft, itl, _ = service(x)
    return b / e2e_s(ttft, itl, osl) - x


def _bisect(service: Any, b: Any, osl: Any, hi: Any, iterations: int) -> Any:
    """X = B / E2E(X) by bisection on [0, hi]: exact even where E2E jumps (a chunk budget's
    limit, an open bound: there the last rate known to be served is kept)."""
    lo = np.zeros_like(b)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        served = _excess(service, b, osl, mid) > 0
        lo = np.where(served, mid, lo)
        hi = np.where(served, hi, mid)
    return np.where(lo > 0, lo, 0.5 * (lo + hi))


def _regula_falsi(service: Any, b: Any, osl: Any, lo: Any, hi: Any, iterations: int) -> Any:
    """X = B / E2E(X) in the bracket [lo, hi] (g(lo) ≥ 0 ≥ g(hi), E2E continuous and
    increasing): regula falsi with the Illinois step, superlinear; stops when all converge."""
    g_lo, g_hi = _excess(service, b, osl, lo), _excess(service, b, osl, hi)
    best = np.where(np.abs(g_lo) < np.abs(g_hi), lo, hi)
    g_best = np.minimum(np.abs(g_lo), np.abs(g_hi))
    side = np.zeros_like(b)  # +1: lo moved last, −1: hi moved last
    for _ in range(iterations):
        if np.all(g_best <= 1e-12 * best):
            break
        width = hi - lo
        x = hi + g_hi * width / np.where(g_lo > g_hi, g_lo - g_hi, 1.0)
        gx = _excess(service, b, osl, x)
        closer = np.abs(gx) < g_best
        best, g_best = np.where(closer, x, best), np.where(closer, np.abs(gx), g_best)
        up = gx > 0
        g_hi = np.where(up & (side > 0), 0.5 * g_hi, g_hi)  # Illinois: the stale end halves
        g_lo = np.where(~up & (side < 0), 0.5 * g_lo, g_lo)
        lo, g_lo = np.where(up, x, lo), np.where(up, gx, g_lo)
        hi, g_hi = np.where(up, hi, x), np.where(up, g_hi, gx)
        side = np.where(up, 1.0, -1.0)
    return best


# ---------------------------------------------------------------------------------------------
# Operating points
# ---------------------------------------------------------------------------------------------


def _bounds(step: Any) -> Any:
    """Elementwise bound label of a StepTime: the largest share of the step time."""
    work = step.gemm_s + step.attention_s
    kind = np.where(np.asarray(step.gemm_compute_bound), "compute", "memory")
    comm = np.broadcast_to(np.asarray(step.comm_s, dtype=float), np.shape(work))
    over = np.broadcast_to(np.asarray(step.overhead_s, dtype=float), np.shape(work))
    out = np.where(comm > np.maximum(work, over), "communication", kind)
    return np.where(over > np.maximum(work, comm), "overhead", out)


def select(r: InflightArrays, index: Any) -> InflightArrays:
    """The elements ``index`` of vectorised in-flight results (scalars broadcast)."""
    shape = np.shape(r.ttft_s)
    return InflightArrays(
        *(np.broadcast_to(np.asarray(getattr(r, f.name)), shape)[index] for f in fields(r))
    )


def points(
    dep: Deployment,
    isl: Any,
    osl: Any,
    concurrency: Any,
    max_in_flight: Any,
    batching: BatchingMode,
    arrays: InflightArrays | None = None,
    bounds: bool = True,
) -> list[OperatingPoint]:
    """Operating points elementwise over arrays (static: batch = ``concurrency``).

    ``arrays``: in-flight results already computed for these concurrencies (skips the solve).
    ``bounds``: label what bounds each phase (two more step evaluations; the planner skips it).
    """
    isl = np.asarray(isl, dtype=float)
    osl = np.asarray(osl, dtype=float)
    n = np.atleast_1d(np.maximum(np.asarray(concurrency, dtype=float), 1.0))
    if batching == Batching.STATIC:
        s = static_batch(dep, n, isl, osl)
        ttft, itl, e2e, rate = s.ttft_s, s.itl_s, s.e2e_s, s.requests_per_s
        inflight_now = n
        queue = prefill_wait = np.zeros_like(n)
        pre_b, dec_b = (_bounds(s.prefill), _bounds(s.decode)) if bounds else (None, None)
    else:
        r = arrays if arrays is not None else inflight_arrays(dep, isl, osl, n, max_in_flight)
        ttft, itl, e2e, rate = r.ttft_s, r.itl_s, r.e2e_s, r.requests_per_s
        inflight_now, queue, prefill_wait = r.in_flight, r.queue_wait_s, r.prefill_wait_s
        b = np.asarray(r.in_flight, dtype=float)
        pre_b = dec_b = None
        if bounds:
            ctx = isl + osl / 2.0
            pre_b = _bounds(step_time(dep, b - 1, ctx, 1.0, isl))
            dec_b = _bounds(step_time(dep, b, ctx))
    shape = np.shape(n)
    cols = [
        np.broadcast_to(np.asarray(a), shape)
        for a in (n, inflight_now, ttft, itl, e2e, rate, osl, queue, prefill_wait, pre_b, dec_b)
    ]
    return [
        OperatingPoint(
            _whole(c),
            _whole(b),
            float(t),
            float(i),
            float(e),
            float(x),
            float(x * o),
            float(q),
            float(w),
            None if pb is None else str(pb),
            None if db is None else str(db),
        )
        for c, b, t, i, e, x, o, q, w, pb, db in zip(*cols, strict=True)
    ]


def _whole(value: Any) -> float:
    """An int when the value is whole (JSON keeps printing 25, not 25.0), else the float."""
    v = float(value)
    return int(v) if v.is_integer() else v


def inflight(
    dep: Deployment, isl: float, osl: float, concurrency: int, max_in_flight: int
) -> OperatingPoint:
    """Closed-loop in-flight batching at ``concurrency`` clients (see module docstring)."""
    return points(dep, isl, osl, concurrency, max_in_flight, Batching.INFLIGHT)[0]


def static(dep: Deployment, isl: float, osl: float, batch: int) -> OperatingPoint:
    """Static batching: the whole batch is prefilled together, then decoded together."""
    return points(dep, isl, osl, batch, batch, Batching.STATIC)[0]
