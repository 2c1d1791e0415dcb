"""One disaggregated deployment at one operating point: a given xPyD split (prefill instances
of one split, decode instances of another) under closed-loop clients (``disagg.closed_loop``).

Used by ``estimate --prefill … --decode …`` and by ``validate`` for disaggregated measurement
rows. Each pool is resolved like an aggregated instance (its split, memory and efficiency set);
the prompt's KV cache moves from a prefill to a decode instance as in disaggregated planning
(``disagg.kv_transfer_time`` over ``disagg.kv_link_between``). Closed-loop clients with fixed
lengths come back in step: a prompt also waits for the others of its cohort at its prefill
instance, by the aggregated model's rule (``queueing.cohort_size``, ``cohort_wait_s`` with the
set's ``prefill_sync``, ``cohort_tokens``, ``arrival_spread_s``). Rates follow the sources'
definitions (``validation.per_gpu_rates``): output per decode GPU, input per prefill GPU,
input + output per GPU of the whole deployment; ``req_per_s`` and ``output_tok_s_total`` are
the whole deployment's. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from inferencesize import latency
from inferencesize.disagg import (
    closed_loop,
    kv_link_between,
    kv_streams,
    kv_transfer_time,
    prefill_step_s,
    prompt_kv_bytes,
)
from inferencesize.estimate import Estimator
from inferencesize.io_measurements import Measurement
from inferencesize.queueing import (
    cohort_size,
    cohort_step_prompts,
    cohort_wait_s,
    e2e_s,
    in_step_share,
)
from inferencesize.units import MS_PER_S
from inferencesize.validation import RATE_METRICS, Mapped, PoolPoint, Prediction, per_gpu_rates
from inferencesize.vocabulary import Batching


@dataclass(frozen=True)
class DisaggPoint:
    """A disaggregated deployment at ``clients`` closed-loop clients."""

    prefill: PoolPoint
    decode: PoolPoint
    isl: float
    osl: float
    clients: float
    ttft_s: float
    itl_s: float
    requests_per_s: float
    prefill_batch: float  # prompts per prefill step
    decode_batch: float  # sequences in flight per decode instance
    kv_transfer_s: float
    kv_link: str
    efficiency_source: str

    @property
    def e2e_s(self) -> float:
        return float(e2e_s(self.ttft_s, self.itl_s, self.osl))

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    def metrics(self) -> dict[str, float]:
        """Every metric a measurement row may state, in its unit (ms, req/s, tokens/s)."""
        rate = self.requests_per_s
        return {
            "ttft_ms_avg": self.ttft_s * MS_PER_S,
            "itl_ms_avg": self.itl_s * MS_PER_S,
            "tpot_ms_avg": self.itl_s * MS_PER_S,  # closed loop, fixed lengths (validation)
            "e2e_ms_avg": self.e2e_s * MS_PER_S,
            "req_per_s": rate,
            "output_tok_s_total": rate * self.osl,
            **per_gpu_rates(
                rate, self.isl, self.osl, self.prefill.gpus, self.decode.gpus, self.gpus
            ),
        }


def disaggregated_point(
    est: Estimator, prefill: PoolPoint, decode: PoolPoint, isl: float, osl: float, clients: float
) -> DisaggPoint | str:
    """The deployment at ``clients`` clients (module docstring), or why a pool cannot run."""
    pre_res = est.resolve(prefill.candidate, isl)
    dec_res = est.resolve(decode.candidate, isl + osl)
    for role, res in (("prefill", pre_res), ("decode", dec_res)):
        if res.reason is not None or res.deployment is None:
            return f"disaggregated {role} pool: {res.reason or 'does not resolve'}"
    pre_dep, dec_dep = pre_res.deployment, dec_res.deployment
    assert pre_dep is not None and dec_dep is not None
    kv_bytes = prompt_kv_bytes(pre_dep.costs, pre_dep.kv_bytes_per_element, isl)
    pre_gpus, dec_gpus = prefill.candidate.par.gpus, decode.candidate.par.gpus
    link = kv_link_between(
        prefill.candidate.system,
        decode.candidate.system,
        pre_gpus + dec_gpus,
        pre_dep.eff.comm_latency_s,
    )
    streams = kv_streams(prefill.candidate.par, decode.candidate.par)
    t_kv = kv_transfer_time(kv_bytes, streams, link)
    # closed-loop clients with fixed lengths come back in step (``queueing.cohort_size``): the
    # prompts of one cohort wait for each other at their prefill instance, as on an aggregated
    # instance (``serving`` docstring)
    eff = pre_dep.eff
    step_one = prefill_step_s(pre_dep, 1.0, isl)
    cohort = float(cohort_size(clients / prefill.instances, isl, eff.cohort_tokens))
    sync = float(in_step_share(eff.prefill_sync, step_one, eff.arrival_spread_s))
    step_cohort = prefill_step_s(pre_dep, float(cohort_step_prompts(cohort)), isl)
    wait = float(cohort_wait_s(sync, step_cohort, step_one))
    loop = closed_loop(
        lambda p: latency.prefill(pre_dep, p, isl).total_s,  # prefill_step_s on arrays
        prefill.instances,
        pre_res.max_concurrency,
        lambda b: latency.per_token_decode_s(dec_dep, b, isl + osl / 2.0),  # decode_itl_s
        decode.instances,
        dec_res.max_concurrency,
        t_kv + wait,
        osl,
        clients,
    )
    return DisaggPoint(
        prefill,
        decode,
        isl,
        osl,
        clients,
        loop.ttft_s,
        loop.itl_s,
        loop.requests_per_s,
        loop.prefill_batch,
        loop.decode_batch,
        t_kv,
        link.name,
        dec_res.efficiency_source,
    )


def predict_disaggregated(
    estimator_for: Callable[[Measurement], Estimator], rows: Sequence[Mapped]
) -> tuple[list[Prediction], list[tuple[Measurement, str]]]:
    """Predictions of disaggregated rows (``Mapped.pools``), and the rows that have none with
    why (a pool that does not resolve, a mode other than closed-loop serving)."""
    preds: list[Prediction] = []
    problems: list[tuple[Measurement, str]] = []
    memo: dict[tuple[object, ...], DisaggPoint | str] = {}
    for r in rows:
        value = _predict(estimator_for(r.m), r, memo)
        if isinstance(value, str):
            problems.append((r.m, value))
        else:
            preds.append(Prediction(r, value))
    return preds, problems


def _predict(
    est: Estimator, r: Mapped, memo: dict[tuple[object, ...], DisaggPoint | str]
) -> float | str:
    assert r.pools is not None
    m = r.m
    if r.mode != Batching.INFLIGHT:
        return "disaggregated: only closed-loop serving rows are predicted"
    if m.metric in RATE_METRICS and r.scale != 1.0:
        return "disaggregated: a per-GPU or per-server rate must name whose GPUs (*_per_gpu)"
    pre, dec = r.pools
    isl, osl = m.isl or 0.0, m.osl or 1.0
    key = (id(est), *_pool_key(pre), *_pool_key(dec), isl, osl, r.concurrency)
    if key not in memo:
        memo[key] = disaggregated_point(est, pre, dec, isl, osl, r.concurrency)
    point = memo[key]
    if isinstance(point, str):
        return point
    values = point.metrics()
    if m.metric not in values:
        return f"disaggregated: metric {m.metric!r} has no disaggregated prediction"
    return float(values[m.metric])


def _pool_key(pool: PoolPoint) -> tuple[object, ...]:
    c = pool.candidate
    return (c.model.id, c.hardware_id, c.precision, c.kv_precision, c.par, pool.instances)
