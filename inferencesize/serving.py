"""Serving math: latency and throughput of one instance at an operating point.

In-flight (continuous) batching with N closed-loop clients (GenAI-Perf concurrency mode):

* At most B_max = KV capacity / KV(ISL + OSL) requests are in flight; the other N − B wait
  for a slot (Little's law on that queue: wait = (N − B) / X).
* Decode steps run at batch ≈ B and are stretched by the prefills interleaved with them:
  ITL = T_decode(B) / (1 − X · t_p), t_p = marginal step cost of one more prompt.
* Prefills queue behind each other: closed-loop clients with fixed lengths arrive in step, so a
  new request waits for the prefills of a share s (``prefill_sync``) of the other in-flight
  requests, (B − 1) / 2 · s · t_p on average, then for its own prefill step.
* E2E = TTFT + (OSL − 1) · ITL; throughput X = N / E2E (Little's law), solved by fixed point.

Static batching at batch B: TTFT = prefill of the whole batch; ITL = decode step at B.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inferencesize.latency import Deployment, StepTime, decode_step, prefill, step_time

Batching = Literal["inflight", "static"]


@dataclass(frozen=True)
class OperatingPoint:
    """Per-instance prediction at one operating point (SI units)."""

    concurrency: int
    in_flight: int  # requests holding KV (≤ B_max)
    ttft_s: float
    itl_s: float
    e2e_s: float
    requests_per_s: float
    output_tokens_per_s: float
    queue_wait_s: float  # waiting for a KV slot (part of TTFT)
    prefill_wait_s: float  # waiting behind other prefills (part of TTFT)
    prefill_bound: str
    decode_bound: str


def inflight(dep: Deployment, isl: float, osl: float, concurrency: int, max_in_flight: int,
             iterations: int = 60) -> OperatingPoint:
    """Closed-loop in-flight batching at ``concurrency`` clients (see module docstring)."""
    n = max(int(concurrency), 1)
    b = max(min(n, max_in_flight), 1)
    context = isl + osl / 2.0
    t_decode = decode_step(dep, b, context).total_s
    own = step_time(dep, b - 1, context, 1, isl)
    t_own = float(own.total_s)
    t_marginal = max(t_own - float(decode_step(dep, b - 1, context).total_s), 0.0) if b > 1 \
        else float(prefill(dep, 1, isl).total_s)
    prefill_wait = dep.eff.prefill_sync * (b - 1) / 2.0 * t_marginal
    x = b / (t_own + osl * float(t_decode))
    itl = float(t_decode)
    ttft_service = t_own
    for _ in range(iterations):
        load = min(x * t_marginal, 0.95)
        itl = float(t_decode) / (1.0 - load)
        residual = 0.5 * itl if b > 1 else 0.0
        ttft_service = residual + prefill_wait + t_own
        service = ttft_service + (osl - 1) * itl
        x_new = b / service
        if abs(x_new - x) <= 1e-9 * x:
            x = x_new
            break
        x = 0.5 * (x + x_new)
    queue_wait = (n - b) / x
    ttft = queue_wait + ttft_service
    e2e = ttft + (osl - 1) * itl
    rate = n / e2e
    return OperatingPoint(
        concurrency=n,
        in_flight=b,
        ttft_s=ttft,
        itl_s=itl,
        e2e_s=e2e,
        requests_per_s=rate,
        output_tokens_per_s=rate * osl,
        queue_wait_s=queue_wait,
        prefill_wait_s=prefill_wait,
        prefill_bound=own.bound,
        decode_bound=_bound(decode_step(dep, b, context)),
    )


def static(dep: Deployment, isl: float, osl: float, batch: int) -> OperatingPoint:
    """Static batching: the whole batch is prefilled together, then decoded together."""
    b = max(int(batch), 1)
    pre = prefill(dep, b, isl)
    dec = decode_step(dep, b, isl + osl / 2.0)
    ttft = float(pre.total_s)
    itl = float(dec.total_s)
    e2e = ttft + (osl - 1) * itl
    rate = b / e2e
    return OperatingPoint(
        concurrency=b,
        in_flight=b,
        ttft_s=ttft,
        itl_s=itl,
        e2e_s=e2e,
        requests_per_s=rate,
        output_tokens_per_s=rate * osl,
        queue_wait_s=0.0,
        prefill_wait_s=0.0,
        prefill_bound=pre.bound,
        decode_bound=dec.bound,
    )


def _bound(step: StepTime) -> str:
    return step.bound
