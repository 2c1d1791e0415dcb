"""``infersize estimate`` at one operating point: the candidate the flags name, resolved once,
and its record (closed loop, open loop at a rate, or a disaggregated xPyD deployment).

The command parses its flags, calls one function here and renders the record it gets back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from inferencesize.catalog import Catalog
from inferencesize.disagg_point import DisaggPoint, disaggregated_point
from inferencesize.estimate import (
    Candidate,
    Estimator,
    point_bands,
    rate_record,
    record,
    with_error_band,
)
from inferencesize.io_bands import shipped_bands
from inferencesize.measured_map import on_servers
from inferencesize.study import candidate, resolve_point
from inferencesize.units import MS_PER_S
from inferencesize.validation import PoolPoint
from inferencesize.vocabulary import Batching


@dataclass(frozen=True)
class PointFlags:
    """What names one candidate and its efficiency set on the command line."""

    model: str
    hardware: str
    precision: str
    kv_precision: str | None
    engine: str | None
    calibration: Path | None
    techniques: Mapping[str, Any] | None


@dataclass(frozen=True)
class PointEstimate:
    """The record of one point and the candidate it was computed for (for the title)."""

    candidate: Candidate
    record: dict[str, Any]


def point_candidate(
    catalog: Catalog,
    flags: PointFlags,
    tp: int,
    pp: int,
    ep: int,
    dp: int = 1,
    spans: bool = False,
) -> Candidate:
    """The candidate of the flags at a split: ids looked up, attention DP set, on the GPU's
    reference server where the instance is wider than one (or, ``spans``, a disaggregated
    pool's deployment spans servers)."""
    cand = candidate(
        catalog, flags.model, flags.hardware, flags.precision, flags.kv_precision, tp, pp, ep
    )
    if dp != 1:
        cand = replace(cand, par=replace(cand.par, dp=dp))
    return on_servers(catalog, cand, spans=spans)


def point_estimator(catalog: Catalog, flags: PointFlags, cand: Candidate, isl: int) -> Estimator:
    """The estimator of the flags' engine set and techniques, for ``cand``'s model at ``isl``."""
    return resolve_point(
        catalog,
        engine=flags.engine,
        calibration=flags.calibration,
        techniques=flags.techniques,
        target=cand.model,
        isl=isl,
    ).estimator


def estimate_point(
    catalog: Catalog,
    flags: PointFlags,
    split: tuple[int, int, int, int],
    isl: int,
    osl: int,
    concurrency: int,
    batching: Batching,
    rate: float | None,
    cv: float,
) -> PointEstimate:
    """One instance at one operating point: closed loop at ``concurrency`` clients, or open
    loop at ``rate`` requests/s with gaps of coefficient of variation ``cv``; the record with
    its error band."""
    tp, pp, ep, dp = split
    cand = point_candidate(catalog, flags, tp, pp, ep, dp)
    est = point_estimator(catalog, flags, cand, isl)
    engine = est.efficiency_for(cand.gpu, cand.precision).engine  # the set it is run with
    res = est.resolve(cand, isl + osl)
    bands = point_bands(shipped_bands(), est, res.candidate, res.trust)
    if rate is not None:
        rec = rate_record(res, isl, osl, rate, cv, engine)
    else:
        op = est.point(res, isl, osl, concurrency, batching)
        rec = record(res, isl, osl, concurrency, batching, op, engine)
    return PointEstimate(cand, with_error_band(rec, bands))


# ------------------------------------------------------------------ one disaggregated point

#: Keys of the disaggregated estimate record (documented in the README).
DISAGG_RECORD_KEYS = (
    "model",
    "hardware",
    "precision",
    "kv_precision",
    "isl",
    "osl",
    "concurrency",
    "prefill",
    "decode",
    "gpus",
    "ttft_ms",
    "itl_ms",
    "e2e_ms",
    "requests_per_s",
    "output_tokens_per_s_per_decode_gpu",
    "input_tokens_per_s_per_prefill_gpu",
    "tokens_per_s_per_gpu",
    "kv_transfer_ms",
    "kv_link",
    "feasible",
    "reason",
    "engine",
    "efficiency",
)

#: A pool of a disaggregated deployment as the flags state it: (tp, pp, ep, dp, instances).
PoolSplit = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class DisaggEstimate:
    """The record of one disaggregated deployment and its two pools (for the title)."""

    prefill: PoolPoint
    decode: PoolPoint
    record: dict[str, Any]


def estimate_disaggregated(
    catalog: Catalog,
    flags: PointFlags,
    prefill: PoolSplit,
    decode: PoolSplit,
    isl: int,
    osl: int,
    concurrency: int,
) -> DisaggEstimate:
    """Resolve both pools and predict the deployment at ``concurrency`` closed-loop clients."""
    pre, dec = (
        PoolPoint(point_candidate(catalog, flags, tp, pp, ep, dp, spans=True), instances)
        for tp, pp, ep, dp, instances in (prefill, decode)
    )
    est = point_estimator(catalog, flags, pre.candidate, isl)
    result = disaggregated_point(est, pre, dec, isl, osl, concurrency)
    used = est.efficiency_for(pre.candidate.gpu, pre.candidate.precision)
    return DisaggEstimate(
        pre, dec, disagg_record(pre, dec, isl, osl, concurrency, result, used.engine)
    )


def _pool(pool: PoolPoint, batch: float | None, batch_key: str) -> dict[str, Any]:
    c: Candidate = pool.candidate
    return {
        "tp": c.par.tp,
        "pp": c.par.pp,
        "ep": c.par.ep,
        "dp": c.par.dp,
        "instances": pool.instances,
        "gpus": pool.gpus,
        batch_key: batch,
    }


def disagg_record(
    pre: PoolPoint,
    dec: PoolPoint,
    isl: int,
    osl: int,
    concurrency: int,
    result: DisaggPoint | str,
    engine: str,
) -> dict[str, Any]:
    """The stable record of a disaggregated estimate (``DISAGG_RECORD_KEYS``); latencies and
    rates None when a pool cannot run (``reason`` says why)."""
    c = pre.candidate
    ok = not isinstance(result, str)
    point = result if not isinstance(result, str) else None
    metrics = point.metrics() if point else {}
    rec: dict[str, Any] = {
        "model": c.model.id,
        "hardware": c.hardware_id,
        "precision": c.precision,
        "kv_precision": c.kv_precision,
        "isl": isl,
        "osl": osl,
        "concurrency": concurrency,
        "prefill": _pool(pre, point.prefill_batch if point else None, "prompts_per_step"),
        "decode": _pool(dec, point.decode_batch if point else None, "sequences_per_instance"),
        "gpus": pre.gpus + dec.gpus,
        "ttft_ms": metrics.get("ttft_ms_avg"),
        "itl_ms": metrics.get("itl_ms_avg"),
        "e2e_ms": metrics.get("e2e_ms_avg"),
        "requests_per_s": metrics.get("req_per_s"),
        "output_tokens_per_s_per_decode_gpu": metrics.get("output_tok_s_per_gpu"),
        "input_tokens_per_s_per_prefill_gpu": metrics.get("input_tok_s_per_gpu"),
        "tokens_per_s_per_gpu": metrics.get("throughput_tok_s_per_gpu"),
        "kv_transfer_ms": point.kv_transfer_s * MS_PER_S if point else None,
        "kv_link": point.kv_link if point else None,
        "feasible": ok,
        "reason": result if isinstance(result, str) else None,
        "engine": engine,
        "efficiency": point.efficiency_source if point else None,
    }
    assert tuple(rec) == DISAGG_RECORD_KEYS
    return rec
