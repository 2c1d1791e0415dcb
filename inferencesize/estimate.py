"""One operating point from catalog entries: resolve, check memory, predict, and report.

``Estimator`` caches per-model costs and per-candidate deployments so that batch mode,
validation, calibration and the planner can call it many times cheaply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from inferencesize import vocabulary
from inferencesize.bands import BAND_SHARE, METRICS, Band, BandTable
from inferencesize.deployment import build_deployment, choose_efficiency, default_kv_precision
from inferencesize.kernel_step import KernelTier, kernel_hardware
from inferencesize.latency import Deployment
from inferencesize.length_mix import LengthMix
from inferencesize.memory import MemoryBudget, memory_budget
from inferencesize.parallelism import Parallelism
from inferencesize.roofline import Efficiency
from inferencesize.serving import InflightArrays, OperatingPoint, inflight, points, static
from inferencesize.serving_steps import longest_gap_s
from inferencesize.sharing import Share, shared_efficiency, shared_gpu
from inferencesize.specs import EfficiencySet, GpuSpec, ModelSpec, SystemSpec
from inferencesize.techniques import NO_TECHNIQUES, Techniques, describe
from inferencesize.transformer import ModelCosts, capped_costs, model_costs
from inferencesize.units import GIB, MS_PER_S
from inferencesize.vocabulary import BatchingMode

#: A batching argument: ``vocabulary.Batching`` or its string value (the name other modules import).
Batching = BatchingMode


@dataclass(frozen=True)
class Candidate:
    """What runs: a model on hardware with a precision and a split; ``share``: one of several
    instances on a GPU (a MIG slice or a shared GPU, :mod:`inferencesize.sharing`)."""

    model: ModelSpec
    gpu: GpuSpec
    system: SystemSpec | None
    precision: str
    kv_precision: str
    par: Parallelism
    share: Share | None = None

    @property
    def instance_gpu(self) -> GpuSpec:
        """The GPU one instance sees: the whole GPU, or its share of it."""
        return shared_gpu(self.gpu, self.share) if self.share else self.gpu

    @property
    def hardware_id(self) -> str:
        return self.system.id if self.system else self.gpu.id

    def label(self) -> str:
        kv = (
            f" kv {self.kv_precision}"
            if self.kv_precision != default_kv_precision(self.precision)
            else ""
        )
        share = f" {self.share.label()}" if self.share else ""
        return f"{self.hardware_id} {self.precision}{kv} {self.par.label()}{share}"

    def fields(self) -> dict[str, Any]:
        """The record keys every output uses for what runs: hardware, precisions, split."""
        return {
            "hardware": self.hardware_id,
            "precision": self.precision,
            "kv_precision": self.kv_precision,
            "tp": self.par.tp,
            "pp": self.par.pp,
            "ep": self.par.ep,
        }


@dataclass(frozen=True)
class Resolved:
    """A candidate with its deployment and memory budget at one sequence length, or why not."""

    candidate: Candidate
    deployment: Deployment | None
    memory: MemoryBudget | None
    efficiency_source: str
    reason: str | None
    #: how far the efficiencies come from a measurement (``specs.efficiency.Trust``)
    trust: str = "datasheet"

    @property
    def max_concurrency(self) -> int:
        return self.memory.max_sequences if self.memory else 0


@dataclass
class Estimator:
    """Predicts operating points with one efficiency set (an engine generation)."""

    efficiency: EfficiencySet
    #: Scenario KV cap on global layers: (attention-sink tokens, recent-window tokens); (0, 0)
    #: = none (see ``transformer.capped_costs``).
    kv_cap: tuple[int, int] = (0, 0)
    techniques: Techniques = NO_TECHNIQUES
    #: MoE tokens all routed to the same experts (benchmarks with placeholder weights; see
    #: ``transformer.ModelCosts.fixed_routing``); real checkpoints: False.
    fixed_routing: bool = False
    #: Sets a GPU × precision that ``efficiency`` is not calibrated on takes where one of them
    #: is (``deployment.choose_efficiency``); empty: ``efficiency`` everywhere.
    others: tuple[EfficiencySet, ...] = ()
    #: The measured kernels a set that names ``kernels`` predicts with (``Catalog.kernel_tier``).
    kernel_tier: KernelTier | None = None
    #: Every step's time times this (``latency.Deployment.step_scale``): 1 predicts; a plan's
    #: count at the pessimistic edge of its error band (``inferencesize.band_plan``) sets more.
    step_scale: float = 1.0
    #: The traffic's binned ISL/OSL distribution (a trace's, ``inferencesize.length_mix``):
    #: every deployment carries it to the open-loop model (``latency.Deployment.lengths``),
    #: and a candidate's KV slots are counted at its occupancy-weighted reservation
    #: (``LengthMix.kv_tokens``) instead of the ``seq_len`` asked; None: fixed lengths.
    lengths: LengthMix | None = None
    _costs: dict[str, ModelCosts] = field(default_factory=dict)
    _deps: dict[tuple[Any, ...], tuple[Deployment | str, str, str]] = field(default_factory=dict)

    def costs(self, model: ModelSpec) -> ModelCosts:
        if model.id not in self._costs:
            costs = model_costs(model)
            if any(self.kv_cap):
                costs = capped_costs(costs, *self.kv_cap)
            if self.fixed_routing and costs.num_experts:
                costs = replace(costs, fixed_routing=True)
            self._costs[model.id] = costs
        return self._costs[model.id]

    def resolve(self, cand: Candidate, seq_len: float) -> Resolved:
        key: tuple[Any, ...] = (cand.model.id, cand.hardware_id, cand.precision)
        key += (cand.kv_precision, cand.par, cand.share)
        gpu = cand.instance_gpu
        if key not in self._deps:
            chosen, found = choose_efficiency(
                self.efficiency, self.others, cand.gpu, cand.precision
            )
            eff = Efficiency(**{k: v for k, v in found.values.items() if v is not None})
            if cand.share:
                eff = shared_efficiency(eff, cand.share)
            dep = build_deployment(
                self.costs(cand.model),
                gpu,
                cand.system,
                cand.precision,
                cand.kv_precision,
                cand.par,
                eff,
                self.techniques,
            )
            if chosen.kernels and not isinstance(dep, str):
                if self.kernel_tier is None:
                    raise ValueError(f"{chosen.id} names kernels: give the Estimator a kernel tier")
                kh = kernel_hardware(
                    self.kernel_tier,
                    gpu.id,
                    gpu.architecture,
                    chosen.kernels,
                    cand.precision,
                    cand.kv_precision,
                    cand.par.tp,
                )
                dep = replace(dep, kernels=kh.launched(eff.launch_share) if kh else None)
            if self.step_scale != 1.0 and not isinstance(dep, str):
                dep = replace(dep, step_scale=self.step_scale)
            if self.lengths is not None and not isinstance(dep, str):
                dep = replace(dep, lengths=self.lengths)
            self._deps[key] = (dep, found.origin, found.trust)
        dep, origin, trust = self._deps[key]
        if isinstance(dep, str):
            return Resolved(cand, None, None, origin, dep, trust)
        if seq_len > cand.model.max_context:
            return Resolved(
                cand,
                dep,
                None,
                origin,
                f"ISL + OSL = {seq_len:.0f} exceeds the context window {cand.model.max_context}",
                trust,
            )
        kv_seq = seq_len if self.lengths is None else self.lengths.kv_tokens
        mem = memory_budget(dep, gpu.memory_bytes, kv_seq)
        reason = None
        if not mem.fits:
            cap = gpu.memory_bytes / GIB
            need = (mem.weights_bytes + mem.activations_bytes + mem.reserve_bytes) / GIB
            reason = (
                f"out of memory: weights {mem.weights_bytes / GIB:.1f} GiB + runtime "
                f"{(mem.activations_bytes + mem.reserve_bytes) / GIB:.1f} GiB per GPU leave no room"
                f" for one {seq_len:.0f}-token sequence on {cap:.0f} GiB"
                if need < cap
                else f"out of memory: weights {mem.weights_bytes / GIB:.1f} GiB + runtime "
                f"{(mem.activations_bytes + mem.reserve_bytes) / GIB:.1f} GiB per GPU exceed "
                f"{cap:.0f} GiB"
            )
        return Resolved(cand, dep, mem, origin, reason, trust)

    def efficiency_for(self, gpu: GpuSpec, precision: str) -> EfficiencySet:
        """The set this GPU × precision is predicted with (``efficiency``, or one of
        ``others`` calibrated there)."""
        return choose_efficiency(self.efficiency, self.others, gpu, precision)[0]

    def point(
        self, res: Resolved, isl: float, osl: float, concurrency: int, batching: BatchingMode
    ) -> OperatingPoint | None:
        if res.deployment is None or res.reason is not None:
            return None
        if batching == vocabulary.Batching.STATIC:
            return static(res.deployment, isl, osl, concurrency)
        return inflight(res.deployment, isl, osl, concurrency, res.max_concurrency)


def record(
    res: Resolved,
    isl: float,
    osl: float,
    concurrency: int,
    batching: BatchingMode,
    op: OperatingPoint | None,
    engine: str,
    itl_max_s: float | None = None,
) -> dict[str, Any]:
    """The stable JSON record of ``infersize estimate`` (documented in the README);
    ``itl_max_s`` when already computed (``longest_gaps``)."""
    cand = res.candidate
    reason = res.reason
    if (
        op is not None
        and batching == vocabulary.Batching.STATIC
        and concurrency > res.max_concurrency
    ):
        reason = (
            f"static batch {concurrency} exceeds the KV capacity of {res.max_concurrency}"
            f" sequences of {isl + osl:.0f} tokens"
        )
    mem = res.memory
    memory = None
    if mem is not None:
        memory = {
            "capacity": mem.capacity_bytes / GIB,
            "weights": mem.weights_bytes / GIB,
            "kv_cache": mem.kv_capacity_bytes / GIB,
            "activations": mem.activations_bytes / GIB,
            "reserve": mem.reserve_bytes / GIB,
            "free": (
                mem.capacity_bytes
                - mem.weights_bytes
                - mem.kv_capacity_bytes
                - mem.activations_bytes
                - mem.reserve_bytes
            )
            / GIB,
        }
    ok = op is not None and reason is None
    itl_max = None
    if op is not None and res.deployment is not None:
        if itl_max_s is None:
            itl_max_s = longest_gaps(res, [isl], [osl], [op], batching)[0]
        itl_max = itl_max_s * MS_PER_S
    return {
        "model": cand.model.id,
        **cand.fields(),
        "dp": cand.par.dp,
        "isl": isl,
        "osl": osl,
        "concurrency": concurrency,
        "batching": str(batching),
        "gpus": cand.par.gpus,
        "ttft_ms": op.ttft_s * MS_PER_S if op else None,
        "itl_ms": op.itl_s * MS_PER_S if op else None,
        "itl_max_ms": itl_max,
        "e2e_ms": op.e2e_s * MS_PER_S if op else None,
        "requests_per_s": op.requests_per_s if op else None,
        "output_tokens_per_s": op.output_tokens_per_s if op else None,
        "max_concurrency": res.max_concurrency if mem else None,
        "memory": memory,
        "bound": {"prefill": op.prefill_bound, "decode": op.decode_bound} if op else None,
        "feasible": ok,
        "reason": reason,
        "engine": engine,
        "efficiency": res.efficiency_source,
        "trust": res.trust,
        "techniques": describe(res.deployment.techniques) if res.deployment else None,
    }


def longest_gaps(
    res: Resolved, isl: Any, osl: Any, ops: list[OperatingPoint], batching: BatchingMode
) -> list[float]:
    """Longest gap between two tokens of a stream at each operating point (seconds): under
    in-flight batching a decode step carrying a new prompt (or one chunk of it), never below
    the mean gap (which also spreads cohorts' batched prefills); static: the decode step."""
    assert res.deployment is not None
    per_step = res.deployment.techniques.tokens_per_step
    mean = np.array([op.itl_s for op in ops]) * per_step
    if batching != vocabulary.Batching.INFLIGHT:
        return [float(g) for g in mean]
    isl_a = np.asarray(isl, dtype=float)
    ctx = isl_a + np.asarray(osl, dtype=float) / 2.0
    b = np.array([op.in_flight for op in ops], dtype=float)
    gaps = np.maximum(longest_gap_s(res.deployment, b, ctx, isl_a), mean)
    return [float(g) for g in np.broadcast_to(gaps, mean.shape)]


def operating_points(
    res: Resolved,
    isl: Any,
    osl: Any,
    concurrency: Any,
    max_in_flight: Any,
    batching: BatchingMode,
    arrays: InflightArrays | None = None,
    bounds: bool = True,
) -> list[OperatingPoint]:
    """Vectorised predictions for many operating points of one resolved candidate
    (``arrays``: in-flight results already solved for these concurrencies; ``bounds``: label
    the bound of each phase)."""
    assert res.deployment is not None
    return points(res.deployment, isl, osl, concurrency, max_in_flight, batching, arrays, bounds)


#: Percentiles of an open-loop record (``rate_record``): the vocabulary's, each a key suffix
#: of its name (``ttft_ms_p50`` … ``ttft_ms_p99``).
RATE_PERCENTILES = vocabulary.PERCENTILES
#: Every key of an open-loop record, in order.
RATE_RECORD_KEYS = (
    *("model", "hardware", "precision", "kv_precision", "tp", "pp", "ep", "dp", "isl", "osl"),
    *("batching", "gpus", "arrivals", "cv", "rate_rps"),
    *(
        f"{name}_ms{suffix}"
        for name in ("ttft", "itl", "e2e")
        for suffix in ("", *(f"_{s}" for s in RATE_PERCENTILES))
    ),
    *("utilisation", "stable", "max_requests_per_s", "requests_per_s", "output_tokens_per_s"),
    *("in_flight", "kv_wait_ms", "max_concurrency", "memory", "feasible", "reason", "engine"),
    *("efficiency", "trust", "techniques"),
)


def rate_record(
    res: Resolved, isl: float, osl: float, rate_rps: float, cv: float, engine: str
) -> dict[str, Any]:
    """The JSON record of ``infersize estimate --rate``: one in-flight instance under
    open-loop arrivals at ``rate_rps`` (gamma gaps with coefficient of variation ``cv``; 1 =
    Poisson), from :func:`inferencesize.openloop.open_loop`. Means and percentiles of TTFT,
    ITL and E2E in ms; at or past the sustainable rate ``stable`` is False and every latency
    None (the queue grows without bound)."""
    from inferencesize.openloop import open_loop

    base = record(res, isl, osl, 0, vocabulary.Batching.INFLIGHT, None, engine)
    out: dict[str, Any] = dict(base)
    out.update(arrivals="poisson" if cv == 1.0 else "gamma", cv=cv, rate_rps=rate_rps)
    for name in ("ttft", "itl", "e2e"):
        out[f"{name}_ms"] = None
        for stat in RATE_PERCENTILES:
            out[f"{name}_ms_{stat}"] = None
    out.update(
        utilisation=None,
        stable=None,
        max_requests_per_s=None,
        in_flight=None,
        kv_wait_ms=None,
        feasible=False,
    )
    if res.deployment is None or res.reason is not None:
        return {k: out[k] for k in RATE_RECORD_KEYS}
    pt = open_loop(
        res.deployment,
        isl,
        osl,
        rate_rps,
        cv=cv,
        max_in_flight=res.max_concurrency,
        quantiles=vocabulary.QUANTILES,
    )
    out.update(
        utilisation=float(pt.utilisation),
        stable=bool(pt.stable),
        max_requests_per_s=float(pt.max_rate_rps),
        requests_per_s=rate_rps if pt.stable else float(pt.max_rate_rps),
        output_tokens_per_s=(rate_rps if pt.stable else float(pt.max_rate_rps)) * osl,
        feasible=True,
    )
    if pt.stable:
        _rate_latencies(out, pt)
    return {k: out[k] for k in RATE_RECORD_KEYS}


def _rate_latencies(out: dict[str, Any], pt: Any) -> None:
    """Means and percentiles of a stable open-loop point into ``out`` (ms; a statistic that
    does not exist, such as the ITL of one-token answers, as None)."""

    def ms(seconds: Any) -> float | None:
        value = float(seconds)
        return value * MS_PER_S if math.isfinite(value) else None

    out.update(in_flight=float(pt.in_flight), kv_wait_ms=ms(pt.kv_wait_s))
    for name in ("ttft", "itl", "e2e"):
        out[f"{name}_ms"] = ms(getattr(pt, f"{name}_s"))
        table = getattr(pt, f"{name}_q")
        for stat in RATE_PERCENTILES:
            out[f"{name}_ms_{stat}"] = ms(table[stat.fraction])


def point_bands(table: BandTable, est: Estimator, c: Candidate, trust: str) -> dict[str, Band]:
    """The error band of each banded metric (``bands.METRICS``) of a candidate predicted by
    ``est`` with ``trust`` (``Resolved.trust``): by its trust and whether its model family was
    measured with the set it is predicted with."""
    measured = table.family_measured(est.efficiency_for(c.gpu, c.precision).id, c.model)
    found = {m: table.band(m, trust, measured) for m in METRICS}
    return {m: b for m, b in found.items() if b is not None}


def with_error_band(rec: dict[str, Any], bands: Mapping[str, Band]) -> dict[str, Any]:
    """``rec`` (``record``, ``rate_record``) with ``error_band``: the 80 % band of its mean
    TTFT and ITL (``ttft_ms``, ``itl_ms``: ``low``, ``high`` in ms, the ``label`` of the
    predictions it came from and their ``rows``; None where the value or its band is none)."""

    def one(metric: str) -> dict[str, Any] | None:
        value, band = rec.get(f"{metric}_ms"), bands.get(metric)
        if value is None or band is None:
            return None
        low, high = band.around(value)
        return {"low": low, "high": high, "label": band.label, "rows": band.rows}

    return {
        **rec,
        "error_band": {"share": BAND_SHARE, "ttft_ms": one("ttft"), "itl_ms": one("itl")},
    }
