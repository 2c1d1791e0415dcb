"""Queue formulas of closed-loop in-flight batching, in closed form (``serving`` composes them).

Pure arithmetic on step costs (seconds) and rates (requests/s), elementwise over floats or
numpy arrays; nothing here knows a model or a GPU. Notation as in ``serving``: B requests in
flight, X the instance's throughput, T the decode step at B, t_p the engine time one prompt
costs, t₁ a prompt step alone.

* Cohort: closed-loop clients of one length come back together; the other B − 1 return as
  C = (B − 1) / (1 + (B − 1) · ISL / ``cohort_tokens``) in step, prefilled in two batched
  steps of (C + 1) / 2 prompts. A share s = ``prefill_sync`` · t₁ / (t₁ + spread) of the
  arrivals is in step; a member waits 1.5 cohort steps (less its own prompt) and for
  0.75 C − 0.25 other prompts.
* Out-of-step arrivals (share max(1 − s, 0)) find a step in progress, length-biased, and share
  their own step with the prompts that came during it (:func:`prefill_queue`).
* ITL = T / (1 − X · a) with a the stretch of :func:`prefill_queue`; ρ and X · a are capped
  at :data:`LOAD_CAP` so ITL stays finite.
* E2E = TTFT + (OSL − 1) · ITL; requests beyond the KV slots wait (N − B) / X (Little's law).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Prefill work may take at most this share of the decode steps' time (keeps ITL finite).
LOAD_CAP = 0.95


def cohort_size(in_flight: Any, isl: Any, cohort_tokens: float) -> Any:
    """C = (B − 1) / (1 + (B − 1) · ISL / cohort_tokens): the other clients in step with one
    (long prompts spread them out)."""
    return (in_flight - 1) / (1.0 + (in_flight - 1) * isl / cohort_tokens)


def cohort_step_prompts(cohort: Any) -> Any:
    """Prompts in each of the two batched steps that prefill a cohort and one client:
    (C + 1) / 2."""
    return (cohort + 1.0) / 2.0


def in_step_share(prefill_sync: float, alone_s: Any, spread_s: float) -> Any:
    """s = prefill_sync · t₁ / (t₁ + spread): the share of arrivals in step with a cohort (a
    short prompt step misses most of the re-sends spread over ``spread_s``)."""
    return prefill_sync * alone_s / (alone_s + spread_s)


def prompts_ahead(cohort: Any) -> Any:
    """Other prompts a cohort member waits for: 0.75 C − 0.25 (at least 0)."""
    return np.maximum(0.75 * cohort - 0.25, 0.0)


def cohort_wait_s(sync: Any, cohort_step_s: Any, alone_s: Any) -> Any:
    """Whole prompts: s · (1.5 cohort steps − its own prompt step), at least 0."""
    return sync * np.maximum(1.5 * cohort_step_s - alone_s, 0.0)


def chunked_cohort_wait_s(sync: Any, ahead: Any, prompt_s: Any) -> Any:
    """Chunked prefill: s · (prompts ahead) · t_p (each prompt takes its share of full
    steps)."""
    return sync * ahead * prompt_s


def prefill_queue(
    rate: Any,
    in_flight: Any,
    sync: Any,
    ahead: Any,
    cohort_wait: Any,
    prompt_s: Any,
    marginal_s: Any,
    decode_step_s: Any,
) -> tuple[Any, Any]:
    """Prefill wait (beyond half a step) and the stretch coefficient a of ITL at rate X.

    Out-of-step arrivals (share 1 − s) find a step in progress, length-biased: mean residual
    (T' + ρ t_p) / 2 with ρ = min(X t_p (B − 1)/B, cap) the others' prefill share of engine
    time and T' = T / (1 − ρ) the mean step; they share their own step with the
    X (B − 1)/B (T' + ρ t_p) prompts that came during it. A client's decode steps interleave
    with the other clients' prefills only, less the share w of them it already waited for
    before its first token, so a = t_marginal · (B − 1)/B · (1 − w) (each prefill counted
    once). One client alone (B = 1) waits for nobody.
    """
    share = (in_flight - 1) / in_flight  # a client's own prompt is not in its queue
    loose = np.maximum(1.0 - sync, 0.0)  # share of arrivals out of step
    rho = np.minimum(rate * prompt_s * share, LOAD_CAP)
    step = decode_step_s / (1.0 - rho)
    along = loose * rate * share * (step + rho * prompt_s)
    wait = cohort_wait + loose * rho * prompt_s * 0.5 + along * prompt_s
    waited = np.minimum((sync * ahead + along) / np.maximum(in_flight - 1, 1.0), 1.0)
    return np.where(in_flight > 1, wait, 0.0), marginal_s * share * (1.0 - waited)


def stretched_itl_s(decode_s: Any, rate: Any, stretch: Any) -> Any:
    """ITL = T / (1 − min(X · a, cap)): decode steps stretched by the prefills between them."""
    return decode_s / (1.0 - np.minimum(rate * stretch, LOAD_CAP))


def ttft_s(in_flight: Any, itl_s: Any, wait_s: Any, first_token_s: Any) -> Any:
    """TTFT at the engine: half a decode step in progress (when others are in flight), the
    prefill wait, then its own prompt step(s) and the hand-off."""
    return np.where(in_flight > 1, 0.5 * itl_s, 0.0) + wait_s + first_token_s


def e2e_s(ttft: Any, itl: Any, osl: Any) -> Any:
    """E2E = TTFT + (OSL − 1) · ITL."""
    return ttft + (osl - 1) * itl


def slot_wait_s(clients: Any, in_flight: Any, rate: Any) -> Any:
    """Wait for a KV slot: (N − B) / X (Little's law on the N − B requests queued)."""
    return (clients - in_flight) / rate


def closed_loop_rate(in_flight: Any, c: Any, k: Any, a: Any) -> Any:
    """Throughput X solving X · (c + k / (1 − min(a X, cap))) = B in closed form.

    Without chunking, E2E(X) = c + k / (1 − a X): c = prefill wait + own prefill step +
    hand-off, k = (OSL − 1 + ½ if others are in flight) · T_decode, a = t_p · (B − 1)/B ·
    (1 − w). Then a c X² − (c + k + a B) X + B = 0, whose smaller root (written stably as
    2B / (p + √(p² − 4 a c B)), p = c + k + a B) is the fixed point; it is B / (c + k) when
    a = 0. Past the load cap the ITL stretch is constant and X = B / (c + k / (1 − cap)).
    """
    b = in_flight
    p = c + k + a * b
    x = 2.0 * b / (p + np.sqrt(np.maximum(p * p - 4.0 * a * c * b, 0.0)))
    return np.where(a * x > LOAD_CAP, b / (c + k / (1.0 - LOAD_CAP)), x)
