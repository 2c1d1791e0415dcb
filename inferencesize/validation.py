"""Predict published measurements and summarise the error (median / p90 APE per metric).

Each measurement row is mapped to an operating point: serving sweeps (numeric concurrency) to
closed-loop in-flight batching, static-batch sweeps to static batching, ``offline_max``
throughput tables to in-flight batching with every KV slot busy. Rows are grouped by
candidate and evaluated as numpy arrays, so the fit can call this hundreds of times.

``tpot_ms_avg`` (time per output token, as benchmark clients report it) is
(E2E − TTFT) / (OSL − 1) per request, averaged. Under a closed loop of fixed-length requests
(every request decodes OSL tokens, all the sources' clients) that is the request's mean gap
between tokens, so it is predicted as the model's mean ITL (``itl_ms_avg``). With lengths that
vary per request the two differ by the spread of 1 / (OSL − 1); the sources that vary them do
so by at most 20 % (InferenceMAX's 0.8–1.0 range ratio).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from inferencesize.catalog import Catalog
from inferencesize.deployment import BARE_GPU_NODE, peak_flops
from inferencesize.errors import UnknownIdError
from inferencesize.estimate import Candidate, Estimator
from inferencesize.io_measurements import Measurement, stated_precision
from inferencesize.latency import Deployment
from inferencesize.measured_shape import DRAFT_HEADS, speculative_method
from inferencesize.serving import inflight_arrays
from inferencesize.serving_steps import static_batch
from inferencesize.specs import EfficiencySet
from inferencesize.specs.efficiency import engine_set, static_batching
from inferencesize.techniques import (
    MEASURED_MTP_ACCEPTANCE,
    MEASURED_MTP_DRAFT_TOKENS,
    draft_heads,
)
from inferencesize.units import MS_PER_S, PRECISIONS, bytes_per_element
from inferencesize.vocabulary import Batching

#: Token rates per GPU (``per_gpu_rates``): the metric names say whose GPUs.
PER_GPU_METRICS = ("output_tok_s_per_gpu", "input_tok_s_per_gpu", "throughput_tok_s_per_gpu")
METRICS = (
    "ttft_ms_avg",
    "prefill_ms",
    "itl_ms_avg",
    "tpot_ms_avg",
    "e2e_ms_avg",
    "req_per_s",
    "output_tok_s_total",
    *PER_GPU_METRICS,
)
#: Rates: measured per instance, DGX or GPU (a row's ``scale`` converts); the rest per request.
RATE_METRICS = ("req_per_s", "output_tok_s_total")
#: Offline (max-throughput) runs: the engine's max batch size caps the KV-limited batch.
OFFLINE_MAX_BATCH = 2048
#: The mode of an offline (max-throughput) row: in-flight batching with every KV slot busy.
OFFLINE = "offline"


@dataclass(frozen=True)
class PoolPoint:
    """One pool of a disaggregated row: ``instances`` instances of ``candidate``."""

    candidate: Candidate
    instances: int

    @property
    def gpus(self) -> int:
        return self.candidate.par.gpus * self.instances


@dataclass(frozen=True)
class Mapped:
    """A measurement with the operating point it was mapped to."""

    m: Measurement
    candidate: Candidate  # a disaggregated row: its decode instance
    mode: str  # inflight | static (``vocabulary.Batching``) | offline
    concurrency: float
    scale: float  # instances the measured rate covers (per DGX: several; per GPU: a share)
    #: A disaggregated row: (prefill pool, decode pool); predicted by ``disagg_point``.
    pools: tuple[PoolPoint, PoolPoint] | None = None


def deployment_kind(x: Mapped) -> str:
    """The shape a row ran on, for the error tables: disaggregated, or one instance (with
    attention DP, across servers, with speculative decoding as it applies)."""
    if x.pools is not None:
        return "disaggregated"
    par = x.candidate.par
    system = x.candidate.system
    node = system.gpus_per_node if system is not None else BARE_GPU_NODE
    parts = ["one instance"]
    if par.dp > 1:
        parts.append("attention DP")
    if par.gpus > node:
        parts.append("across servers")
    if speculative_method(x.m.notes) in DRAFT_HEADS:
        parts.append("MTP")
    return ", ".join(parts)


def per_gpu_rates(
    requests_per_s: Any, isl: Any, osl: Any, prefill_gpus: Any, decode_gpus: Any, all_gpus: Any
) -> dict[str, Any]:
    """Token rates per GPU as the sources define them (shared/calibration README): output
    tokens/s per decode GPU, input tokens/s per prefill GPU, input + output per GPU of the
    whole deployment. One instance (aggregated): every GPU is all three."""
    return {
        "output_tok_s_per_gpu": requests_per_s * osl / decode_gpus,
        "input_tok_s_per_gpu": requests_per_s * isl / prefill_gpus,
        "throughput_tok_s_per_gpu": requests_per_s * (isl + osl) / all_gpus,
    }


@dataclass(frozen=True)
class Prediction:
    mapped: Mapped
    predicted: float

    @property
    def ape(self) -> float:
        return abs(self.predicted - self.mapped.m.value) / abs(self.mapped.m.value)


def mode_of(m: Measurement) -> str:
    text = f"{m.source} {m.unit} {m.engine} {m.notes}".lower()
    if m.concurrency.lower().startswith("offline"):
        return OFFLINE
    if "static" in text or m.metric == "prefill_ms" or "decode step" in text:
        return Batching.STATIC.value
    return Batching.INFLIGHT.value


def group_key(x: Mapped) -> tuple[Any, ...]:
    c = x.candidate
    return (c.model.id, c.hardware_id, c.precision, c.kv_precision, c.par, x.mode)


def predict_group(
    dep: Deployment, max_seqs: Callable[[float], int], rows: Sequence[Mapped]
) -> np.ndarray:
    """Predicted value of each row (all rows share the deployment and the mode)."""
    isl = np.array([r.m.isl or 0.0 for r in rows])
    osl = np.array([r.m.osl or 1.0 for r in rows])
    conc = np.array([r.concurrency for r in rows])
    mode = rows[0].mode
    if mode == Batching.STATIC:
        # measured engine time of the batch's steps: no request hand-off
        pred: Any = static_batch(dep, conc, isl, osl, handoff=False)
    else:
        bmax = np.array([max(max_seqs(i + o), 1) for i, o in zip(isl, osl, strict=True)])
        if mode == OFFLINE:
            conc = np.minimum(bmax, OFFLINE_MAX_BATCH)
        pred = inflight_arrays(dep, isl, osl, conc, bmax)
    ttft, itl, e2e, rate = pred.ttft_s, pred.itl_s, pred.e2e_s, pred.requests_per_s
    values = {
        "ttft_ms_avg": ttft * MS_PER_S,
        "prefill_ms": ttft * MS_PER_S,
        "itl_ms_avg": itl * MS_PER_S,
        "tpot_ms_avg": itl * MS_PER_S,  # closed loop, fixed lengths: the mean ITL (docstring)
        "e2e_ms_avg": e2e * MS_PER_S,
        "req_per_s": rate,
        "output_tok_s_total": rate * osl,
    }
    gpus = rows[0].candidate.par.gpus
    values.update(per_gpu_rates(rate, isl, osl, gpus, gpus, gpus))
    scale = np.array([r.scale for r in rows])
    out = np.array([values[r.m.metric][i] for i, r in enumerate(rows)], dtype=float)
    per_instance = np.isin([r.m.metric for r in rows], RATE_METRICS)
    return np.where(per_instance, out * scale, out)


def placeholder_weights(m: Measurement) -> bool:
    """A benchmark run on placeholder ("fake") weights: an MoE router then sends every token to
    the same experts (``transformer.ModelCosts.fixed_routing``)."""
    return "fake weights" in m.notes.lower()


def estimator_chooser(
    catalog: Catalog, fixed: EfficiencySet | None = None
) -> Callable[[Measurement], Estimator]:
    """The estimator of a row: ``fixed`` if given, else the set of the row's engine and version
    (``Catalog.efficiency_for``) that served the model (``Measurement.served_engine``: a
    Dynamo row is predicted with its engine's set), matched once per engine label; a
    static-batch row of an engine no set names takes the set fitted to static batching.

    A row run with speculative decoding by draft heads (``spec_decoding=mtp`` in its notes)
    gets them on top: ``techniques.MEASURED_MTP_DRAFT_TOKENS`` drafted tokens accepted with
    probability ``techniques.MEASURED_MTP_ACCEPTANCE`` (the sources state neither). A row in a
    precision narrower than 16 bits that its GPU has no tensor units for (gpt-oss's MXFP4 on
    Hopper) ran weight-only: weights stored narrow, GEMMs on 16-bit units, as the engines run
    it there (``techniques.Techniques.weight_only``)."""
    one = Estimator(fixed, kernel_tier=catalog.kernel_tier(fixed)) if fixed is not None else None
    estimators = {
        s.id: Estimator(s, kernel_tier=catalog.kernel_tier(s)) for s in catalog.efficiency.values()
    }
    by_label: dict[tuple[str, str, bool], Estimator] = {}
    with_heads: dict[tuple[int, str, bool], Estimator] = {}

    static = next((s for s in catalog.efficiency.values() if static_batching(s)), None)

    def base(m: Measurement) -> Estimator:
        if one is not None:
            return one
        engine, version = m.served_engine
        key = (engine, version, mode_of(m) == Batching.STATIC)
        if key not in by_label:
            chosen = catalog.efficiency_for(engine, version)
            named = engine_set(catalog.efficiency.values(), engine, version) is not None
            if key[2] and not named and static is not None:
                chosen = static  # a static-batch row of an engine no set names
            by_label[key] = estimators[chosen.id]
        return by_label[key]

    def pick(m: Measurement) -> Estimator:
        est = base(m)
        heads = speculative_method(m.notes) in DRAFT_HEADS
        weight_only = _weight_only(catalog, m)
        if not heads and not weight_only:
            return est
        key = (id(est), m.model if heads else "", weight_only)
        if key not in with_heads:
            techniques = replace(est.techniques, weight_only=weight_only)
            if heads:
                spec = draft_heads(
                    est.costs(catalog.model(m.model)),
                    MEASURED_MTP_DRAFT_TOKENS,
                    MEASURED_MTP_ACCEPTANCE,
                )
                techniques = replace(techniques, speculative=spec)
            with_heads[key] = replace(est, techniques=techniques, _costs={}, _deps={})
        return with_heads[key]

    return pick


def _weight_only(catalog: Catalog, m: Measurement) -> bool:
    """The row's precision is narrower than 16 bits and its GPU has no tensor units for it."""
    precision = stated_precision(m.precision)
    if precision not in PRECISIONS or bytes_per_element(precision) >= 2.0:
        return False
    try:
        gpu, _ = catalog.hardware(m.gpu)
    except UnknownIdError:
        return False
    return peak_flops(gpu, precision) is None


def predict_all(
    estimator_for: Callable[[Measurement], Estimator], rows: Sequence[Mapped]
) -> list[Prediction]:
    """Predictions for mapped rows, grouped by candidate for speed. Rows measured on
    placeholder weights are predicted with fixed expert routing."""
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        if r.pools is not None:
            continue  # disaggregated: ``disagg_point.predict_disaggregated``
        groups[(*group_key(r), id(estimator_for(r.m)), placeholder_weights(r.m))].append(i)
    fixed: dict[int, Estimator] = {}
    predicted = np.full(len(rows), np.nan)
    for idxs in groups.values():
        first = rows[idxs[0]]
        est = estimator_for(first.m)
        if placeholder_weights(first.m) and first.candidate.model.moe is not None:
            if id(est) not in fixed:
                fixed[id(est)] = replace(est, fixed_routing=True, _costs={}, _deps={})
            est = fixed[id(est)]
        seq = (first.m.isl or 0) + (first.m.osl or 0)
        res = est.resolve(first.candidate, seq)
        if res.deployment is None:
            continue
        dep = res.deployment

        def max_seqs(seq_len: float, _r: Any = res, _e: Estimator = est) -> int:
            return _e.resolve(_r.candidate, seq_len).max_concurrency

        predicted[idxs] = predict_group(dep, max_seqs, [rows[i] for i in idxs])
    return [Prediction(r, float(p)) for r, p in zip(rows, predicted, strict=True) if np.isfinite(p)]


def not_predicted(
    estimator_for: Callable[[Measurement], Estimator],
    rows: Sequence[Mapped],
    preds: Sequence[Prediction],
) -> list[tuple[Measurement, str]]:
    """Mapped rows ``predict_all`` gave no prediction, each with why (its deployment does not
    resolve: out of memory, a split the model cannot run, a context too long)."""
    done = {id(p.mapped) for p in preds}
    out = []
    for r in rows:
        if id(r) in done:
            continue
        res = estimator_for(r.m).resolve(r.candidate, (r.m.isl or 0) + (r.m.osl or 0))
        out.append((r.m, res.reason or "the model gives no finite prediction"))
    return out


@dataclass(frozen=True)
class Summary:
    n: int
    median_ape: float
    p90_ape: float
    within_10: float
    within_25: float


def summarise(preds: Sequence[Prediction]) -> Summary:
    ape = np.array([p.ape for p in preds])
    if ape.size == 0:
        return Summary(0, float("nan"), float("nan"), float("nan"), float("nan"))
    return Summary(
        n=int(ape.size),
        median_ape=float(np.median(ape)),
        p90_ape=float(np.percentile(ape, 90)),
        within_10=float(np.mean(ape <= 0.10)),
        within_25=float(np.mean(ape <= 0.25)),
    )


def summary_table(
    preds: Sequence[Prediction], by: Callable[[Prediction], str]
) -> dict[str, Summary]:
    groups: dict[str, list[Prediction]] = defaultdict(list)
    for p in preds:
        groups[by(p)].append(p)
    return {k: summarise(v) for k, v in sorted(groups.items())}


#: A closed-loop run in steady state obeys Little's law: clients = requests/s × E2E.
STEADY_TOLERANCE = 0.05


@dataclass(frozen=True)
class SteadyCheck:
    """Little's law at one measured in-flight operating point: ``ratio`` = clients / (req/s ×
    E2E). A steady closed loop gives 1; a run that ends before its queue settles reports a
    mean E2E over the requests that finished early (which waited least), so the ratio is > 1."""

    point: tuple[Any, ...]  # point_key
    m: Measurement  # one of the point's rows (its model, GPU, lengths)
    clients: float
    ratio: float

    @property
    def steady(self) -> bool:
        return abs(self.ratio - 1.0) <= STEADY_TOLERANCE


def point_key(x: Mapped) -> tuple[Any, ...]:
    """A measured run at one operating point: the run's metrics share it (the notes tell repeat
    runs of one point apart)."""
    return (*x.m.point, x.m.notes)


def point_metrics(rows: Sequence[Mapped]) -> dict[tuple[Any, ...], tuple[Mapped, dict[str, float]]]:
    """Each in-flight point's first row and its metrics (``point_key``), rates per instance (a
    per-DGX or per-GPU figure converted with the row's ``scale``)."""
    out: dict[tuple[Any, ...], tuple[Mapped, dict[str, float]]] = {}
    for x in rows:
        if x.mode != Batching.INFLIGHT or x.concurrency <= 0:
            continue
        _, values = out.setdefault(point_key(x), (x, {}))
        rate = x.m.metric in RATE_METRICS
        values[x.m.metric] = x.m.value / x.scale if rate else x.m.value
    return out


def steady_checks(rows: Sequence[Mapped]) -> list[SteadyCheck]:
    """Little's law on every in-flight point that reports both req/s and mean E2E."""
    return [
        SteadyCheck(
            k,
            x.m,
            x.concurrency,
            x.concurrency / (v["req_per_s"] * (v["e2e_ms_avg"] / MS_PER_S)),
        )
        for k, (x, v) in point_metrics(rows).items()
        if "req_per_s" in v and "e2e_ms_avg" in v
    ]
