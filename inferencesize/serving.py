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

Serving techniques (prefix caching, speculative decoding, chunked prefill) enter through
``technique_steps``: step times include them, and ITL is per output token (a speculative step
emits several).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np

from inferencesize.latency import Deployment
from inferencesize.technique_steps import (
    chunked_prefill,
    decode_step,
    prefill,
    step_time,
)

Batching = Literal["inflight", "static"]
#: Prefill work may take at most this share of the decode steps' time (keeps ITL finite).
LOAD_CAP = 0.95


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
    context = isl + osl / 2.0
    # The cohort of other clients in step, thinned by its prompt tokens (module docstring).
    cohort = (b - 1) / (1.0 + (b - 1) * isl / dep.eff.cohort_tokens)
    half = (cohort + 1.0) / 2.0
    decode_b, t_own, t_alone, decode_others, half_prefill = step_totals(
        dep,
        (b, context, 0.0, 0.0),  # a decode step at B
        (b - 1, context, 1.0, isl),  # a new prompt's step next to the others' decodes
        (0.0, 0.0, 1.0, isl),  # a prompt alone
        (b - 1, context, 0.0, 0.0),  # the others' decode step
        (0.0, 0.0, half, isl),  # half the cohort's batched prefill
    )
    per_step = dep.techniques.tokens_per_step
    t_decode = decode_b / per_step
    t_marginal = np.where(b > 1, np.maximum(t_own - decode_others, 0.0), t_alone)
    t_prompt = t_marginal  # engine time one more prompt costs (random-arrival queue)
    spread = dep.eff.arrival_spread_s
    sync = dep.eff.prefill_sync * t_alone / (t_alone + spread)
    loose = np.maximum(1.0 - sync, 0.0)  # share of arrivals out of step
    # two batched prompt steps of half the cohort each: a member waits 1.5 of them on average
    # (less its own prompt) and for 0.75 C − 0.25 other prompts
    ahead = np.maximum(0.75 * cohort - 0.25, 0.0)
    cohort_wait = sync * np.maximum(1.5 * half_prefill - t_alone, 0.0)
    chunk = dep.techniques.chunk_tokens
    itl_cap: Any = np.inf
    x_cap: Any = np.inf
    if chunk:  # the prompt rides on ceil(ISL / chunk) decode steps
        chunks = chunked_prefill(dep, b - 1, context, isl)
        t_own = chunks.first_token_s
        t_marginal = np.where(b > 1, chunks.marginal_s, t_alone)
        # A full step: one chunk, or chunk / ISL short prompts. Prompts ahead take their
        # share of such steps; the budget admits chunk / new tokens prompts per full step
        # (beyond that, prompts queue: TTFT), and no decode step is longer than a full one.
        full = np.where(
            isl < chunk,
            step_time(dep, b - 1, context, chunk / np.maximum(isl, 1.0), isl).total_s,
            chunks.longest_step_s,
        )
        new = np.maximum(dep.techniques.expected_new_tokens(isl), 1.0)
        t_prompt = full * new / chunk
        cohort_wait = sync * ahead * t_prompt
        itl_cap = full / per_step
        x_cap = np.where(b > 1, chunk / (new * full), np.inf)
    first_token = t_own + dep.handoff_s  # own prompt step, then the hand-off (multi-GPU)
    busy = b > 1
    share = (b - 1) / b  # a client's own prompt is not in its queue
    others = np.maximum(b - 1, 1.0)

    def queue(x: Any) -> tuple[Any, Any]:
        """Prefill wait (beyond half a step) and the stretch coefficient of ITL at rate x."""
        # Arrivals out of step (share 1 − s) find a step in progress, length-biased (mean
        # residual (T + ρ t_p) / 2 with ρ the others' prefill share of engine time), and
        # share their own step with the prompts that came during it: x (T + ρ t_p) of them.
        rho = np.minimum(x * t_prompt * share, LOAD_CAP)
        step = t_decode * per_step / (1.0 - rho)
        along = loose * x * share * (step + rho * t_prompt)
        wait = cohort_wait + loose * rho * t_prompt * 0.5 + along * t_prompt
        # A client's decode steps interleave with the other clients' prefills only, and not
        # with those it already waited for before its first token (each prefill is counted
        # once).
        waited = np.minimum((sync * ahead + along) / others, 1.0)
        return np.where(busy, wait, 0.0), t_marginal * share * (1.0 - waited)

    def service(x: Any) -> tuple[Any, Any, Any]:
        wait, stretch = queue(x)
        itl = t_decode / (1.0 - np.minimum(x * stretch, LOAD_CAP))
        if chunk:
            itl = np.maximum(np.minimum(itl, itl_cap), t_decode)
        ttft = np.where(busy, 0.5 * itl, 0.0) + wait + first_token
        if chunk:
            ttft = np.where(x < x_cap, ttft, np.inf)
        return ttft, itl, wait

    top = b / (t_own + (osl - 1) * t_decode)  # no wait, no stretch: an upper bound on X
    if chunk:
        x = _bisect(service, b, osl, top, iterations)
    else:
        # E2E(X) = c(X) + k / (1 − a(X) X): c (wait + own step) grows with X, a falls. With
        # a at its least and the wait at zero the closed form over-states X; with c at that
        # rate and a at its most it under-states it. Both agree when all arrivals are in
        # step (s ≥ 1); otherwise the root lies between and regula falsi finds it.
        k = (osl - 1 + 0.5 * busy) * t_decode
        idle_wait, most_stretch = queue(0.0)
        upper = _fixed_point(b, idle_wait + first_token, k, queue(top)[1])
        lower = _fixed_point(b, queue(upper)[0] + first_token, k, most_stretch)
        x = _regula_falsi(service, b, osl, np.minimum(lower, upper), upper, iterations)
    ttft_service, itl, prefill_wait = service(x)
    if chunk:  # at the budget's limit the closed loop waits for it: TTFT = B / X − decode
        ttft_service = np.maximum(ttft_service, b / x - (osl - 1) * itl)
    queue_wait = (n - b) / x
    ttft = queue_wait + ttft_service
    e2e = ttft + (osl - 1) * itl
    return InflightArrays(b, ttft, itl, e2e, n / e2e, queue_wait, prefill_wait)


def _excess(service: Any, b: Any, osl: Any, x: Any) -> Any:
    """g(X) = B / E2E(X) − X: positive below the closed-loop throughput, negative above."""
    ttft, itl, _ = service(x)
    return b / (ttft + (osl - 1) * itl) - x


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


def step_totals(dep: Deployment, *shapes: tuple[Any, Any, Any, Any]) -> list[Any]:
    """Total seconds of several step shapes (decode sequences, their context, prompts, prompt
    length), each elementwise over arrays, computed in one vectorised ``step_time`` call."""
    shape = np.broadcast_shapes(*(np.shape(v) for s in shapes for v in s))
    stacked = [np.empty((len(shapes), *shape)) for _ in range(4)]
    for row, values in enumerate(shapes):
        for column, value in enumerate(values):
            stacked[column][row] = value
    total = step_time(dep, *stacked).total_s
    return list(np.broadcast_to(total, stacked[0].shape))


def _fixed_point(b: Any, c: Any, k: Any, a: Any) -> Any:
    """Throughput X solving X · (c + k / (1 − min(a X, LOAD_CAP))) = B in closed form.

    Without chunking, E2E(X) = c + k / (1 − a X): c = prefill wait + own prefill step +
    hand-off, k = (OSL − 1 + ½ if others are in flight) · T_decode, a = t_p · (B − 1)/B ·
    (1 − w). Then a c X² − (c + k + a B) X + B = 0, whose smaller root (written stably as
    2B / (p + √(p² − 4 a c B)), p = c + k + a B) is the fixed point; it is B / (c + k) when
    a = 0. Past the load cap the ITL stretch is constant and X = B / (c + k / (1 − cap)).
    """
    p = c + k + a * b
    x = 2.0 * b / (p + np.sqrt(np.maximum(p * p - 4.0 * a * c * b, 0.0)))
    return np.where(a * x > LOAD_CAP, b / (c + k / (1.0 - LOAD_CAP)), x)


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
    batching: Batching,
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
    ctx = isl + osl / 2.0
    if batching == "static":
        pre = prefill(dep, n, isl)
        dec = decode_step(dep, n, ctx)
        ttft = np.asarray(pre.total_s, float) + dep.handoff_s
        itl = np.asarray(dec.total_s, float) / dep.techniques.tokens_per_step
        e2e = ttft + (osl - 1) * itl
        rate = n / e2e
        inflight_now = n
        queue = prefill_wait = np.zeros_like(n)
        pre_b, dec_b = (_bounds(pre), _bounds(dec)) if bounds else (None, None)
    else:
        r = arrays if arrays is not None else inflight_arrays(dep, isl, osl, n, max_in_flight)
        ttft, itl, e2e, rate = r.ttft_s, r.itl_s, r.e2e_s, r.requests_per_s
        inflight_now, queue, prefill_wait = r.in_flight, r.queue_wait_s, r.prefill_wait_s
        b = np.asarray(r.in_flight, dtype=float)
        pre_b = dec_b = None
        if bounds:
            pre_b = _bounds(step_time(dep, b - 1, ctx, 1.0, isl))
            dec_b = _bounds(decode_step(dep, b, ctx))
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
    return points(dep, isl, osl, concurrency, max_in_flight, "inflight")[0]


def static(dep: Deployment, isl: float, osl: float, batch: int) -> OperatingPoint:
    """Static batching: the whole batch is prefilled together, then decoded together."""
    return points(dep, isl, osl, batch, batch, "static")[0]
