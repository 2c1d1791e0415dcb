"""Predict disaggregated measurement rows: a stated xPyD split (prefill TP × instances, decode
TP × instances) under the row's closed-loop clients (``disagg.closed_loop``).

Each pool is resolved like an aggregated instance (its split, memory and efficiency set); the
prompt's KV cache moves from a prefill to a decode instance as in disaggregated planning
(``disagg.kv_transfer_time`` over ``disagg.kv_link_between``). Rates follow the sources'
definitions (``validation.per_gpu_rates``): output per decode GPU, input per prefill GPU,
input + output per GPU of the whole deployment; ``req_per_s`` and ``output_tok_s_total`` are
the whole deployment's. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inferencesize.disagg import (
    closed_loop,
    decode_itl_s,
    kv_link_between,
    kv_transfer_time,
    prefill_step_s,
    prompt_kv_bytes,
)
from inferencesize.estimate import Estimator
from inferencesize.io_measurements import Measurement
from inferencesize.queueing import e2e_s
from inferencesize.units import MS_PER_S, Batching
from inferencesize.validation import RATE_METRICS, Mapped, Prediction, per_gpu_rates


def predict_disaggregated(
    estimator_for: Callable[[Measurement], Estimator], rows: Sequence[Mapped]
) -> tuple[list[Prediction], list[tuple[Measurement, str]]]:
    """Predictions of disaggregated rows (``Mapped.pools``), and the rows that have none with
    why (a pool that does not resolve, a mode other than closed-loop serving)."""
    preds: list[Prediction] = []
    problems: list[tuple[Measurement, str]] = []
    for r in rows:
        value = _predict(estimator_for(r.m), r)
        if isinstance(value, str):
            problems.append((r.m, value))
        else:
            preds.append(Prediction(r, value))
    return preds, problems


def _predict(est: Estimator, r: Mapped) -> float | str:
    assert r.pools is not None
    m = r.m
    if r.mode != Batching.INFLIGHT:
        return "disaggregated: only closed-loop serving rows are predicted"
    if m.metric in RATE_METRICS and r.scale != 1.0:
        return "disaggregated: a per-GPU or per-server rate must name whose GPUs (*_per_gpu)"
    pre, dec = r.pools
    isl, osl = m.isl or 0.0, m.osl or 1.0
    pre_res = est.resolve(pre.candidate, isl)
    dec_res = est.resolve(dec.candidate, isl + osl)
    for role, res in (("prefill", pre_res), ("decode", dec_res)):
        if res.reason is not None or res.deployment is None:
            return f"disaggregated {role} pool: {res.reason or 'does not resolve'}"
    pre_dep, dec_dep = pre_res.deployment, dec_res.deployment
    assert pre_dep is not None and dec_dep is not None
    kv_bytes = prompt_kv_bytes(pre_dep.costs, pre_dep.kv_bytes_per_element, isl)
    link = kv_link_between(
        pre.candidate.system,
        dec.candidate.system,
        pre.candidate.par.gpus + dec.candidate.par.gpus,
        pre_dep.eff.comm_latency_s,
    )
    streams = min(pre.candidate.par.gpus, dec.candidate.par.gpus)
    loop = closed_loop(
        lambda p: prefill_step_s(pre_dep, p, isl),
        pre.instances,
        pre_res.max_concurrency,
        lambda b: decode_itl_s(dec_dep, b, isl, osl),
        dec.instances,
        dec_res.max_concurrency,
        kv_transfer_time(kv_bytes, streams, link),
        osl,
        r.concurrency,
    )
    rate = loop.requests_per_s
    values = {
        "ttft_ms_avg": loop.ttft_s * MS_PER_S,
        "itl_ms_avg": loop.itl_s * MS_PER_S,
        "tpot_ms_avg": loop.itl_s * MS_PER_S,  # closed loop, fixed lengths (validation)
        "e2e_ms_avg": e2e_s(loop.ttft_s, loop.itl_s, osl) * MS_PER_S,
        "req_per_s": rate,
        "output_tok_s_total": rate * osl,
        **per_gpu_rates(rate, isl, osl, pre.gpus, dec.gpus, pre.gpus + dec.gpus),
    }
    if m.metric not in values:
        return f"disaggregated: metric {m.metric!r} has no disaggregated prediction"
    return float(values[m.metric])
