"""Fit efficiency parameters to measurements with scipy.optimize.least_squares.

Per die × power class × precision (``share_group``): ``compute`` and ``memory`` (fractions
of datasheet peak), written to every measured GPU of it. Shared by the
whole set (the engine generation): attention efficiency, GEMM half-saturation rows, per-step
and per-layer overheads, collective latency and bandwidth share, and (for serving data) the
prefill synchronisation share. Names, meanings and bounds: ``specs.efficiency.PARAMETERS``. Residuals are log(predicted / measured), robust (soft-L1) so a
few odd rows cannot drag the physics; each metric gets equal total weight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import least_squares

from inferencesize.deployment import BARE_GPU_NODE, scale_up_domain
from inferencesize.errors import UnknownIdError
from inferencesize.estimate import Estimator
from inferencesize.io_measurements import stated_precision
from inferencesize.kernel_step import KernelTier
from inferencesize.specs import EfficiencyEntry, EfficiencySet, EfficiencyValues, GpuSpec
from inferencesize.specs.efficiency import OPTIONAL_PARAMS, PARAMETERS
from inferencesize.validation import Mapped, Prediction, predict_all, summary_table

if TYPE_CHECKING:
    from inferencesize.catalog import Catalog
    from inferencesize.io_measurements import Measurement

#: Parameters the fit shares across a set: name -> (lower, upper) bound (``PARAMETERS``).
GLOBAL_PARAMS: dict[str, tuple[float, float]] = {
    p.name: p.fit for p in PARAMETERS if p.fit is not None and not p.per_gpu
}
#: Parameters fitted per GPU × precision: name -> (lower, upper) bound.
PER_GPU_PARAMS: dict[str, tuple[float, float]] = {
    p.name: p.fit for p in PARAMETERS if p.fit is not None and p.per_gpu
}


#: Parameters of closed-loop serving: fitted only where the rows measure latency under load.
SERVING_ONLY = frozenset({"prefill_sync", "cohort_tokens", "arrival_spread_s"})


def fittable(rows: Sequence[Mapped]) -> list[Mapped]:
    """The rows a fit uses: aggregated instances inside one server (or one NVLink domain, if
    larger). An instance across nodes depends on the network, the expert layout and (for
    wide-EP deployments) a split the rows do not state: fitting the GPU's and engine's shares
    to it would turn those unknowns into wrong physics. Such rows are still predicted and
    reported."""
    return [r for r in rows if r.pools is None and r.candidate.par.gpus <= _node(r)]


def _node(r: Mapped) -> int:
    """GPUs one server (or the NVLink domain, if larger) holds for a row's candidate."""
    c = r.candidate
    server = c.system.gpus_per_node if c.system else BARE_GPU_NODE
    return max(server, scale_up_domain(c.gpu, c.system))


def free_parameters(
    base: EfficiencySet, rows: Sequence[Mapped], stated: Sequence[str] = ()
) -> list[str]:
    """The set-wide parameters a fit of ``base`` to ``rows`` chooses: all of them, less the
    serving ones without in-flight rows, the optional ones ``base`` leaves out and ``stated``."""
    serving = any(r.mode == "inflight" for r in rows)
    return [
        g
        for g in GLOBAL_PARAMS
        if (serving or g not in SERVING_ONLY)
        and (g not in OPTIONAL_PARAMS or getattr(base.defaults, g) is not None)
        and g not in stated
    ]


def precision_class(precision: str) -> str:
    """bf16 and fp16 run on the same tensor units at the same speed: one efficiency."""
    return "bf16" if precision in ("bf16", "fp16") else precision


def on_target(
    catalog: Catalog, rows: Sequence[Measurement], gpu_id: str, precision: str
) -> tuple[list[Measurement], list[tuple[str, str, int]]]:
    """The rows measured on GPU ``gpu_id`` at ``precision`` (bf16 and fp16 as one class), and
    the others counted per GPU × precision, most rows first: ``(gpu, precision, rows)``, the
    GPU as the catalog names it (as the row states it when the catalog has no such GPU).

    A fit of one GPU's shares to rows of another carries that GPU's speed into it (an H200 row
    read as an H100 one, 4.8 against 3.35 TB/s, pulls the H100's memory share ~40 % too high),
    so those rows are named and left out, never re-labelled."""
    target = precision_class(precision)
    kept: list[Measurement] = []
    others: Counter[tuple[str, str]] = Counter()
    ids: dict[str, str] = {}
    for m in rows:
        if m.gpu not in ids:
            try:
                ids[m.gpu] = catalog.hardware(m.gpu)[0].id
            except UnknownIdError:
                ids[m.gpu] = m.gpu or "(not stated)"
        gpu = ids[m.gpu]
        prec = stated_precision(m.precision) or "(not stated)"
        if gpu == gpu_id and precision_class(prec) == target:
            kept.append(m)
        else:
            others[(gpu, prec)] += 1
    ranked = sorted(others.items(), key=lambda kv: (-kv[1], kv[0]))
    return kept, [(gpu, prec, n) for (gpu, prec), n in ranked]


#: A fit is worse than the set it starts from when, on one metric of the rows it was fitted
#: to, its median or p90 absolute percentage error rises by more than this share: half a
#: percentage point, under the 0.1-point rounding of the printed table and well under the
#: run-to-run spread of points measured twice (a few percent).
WORSE_MARGIN = 0.005


@dataclass(frozen=True)
class Worse:
    """One metric on which a fit does worse than its starting set: ``statistic`` ``median``
    or ``p90`` (``before`` and ``after`` absolute percentage errors, as shares), or
    ``predicted`` (``before`` and ``after`` counts of rows the set gives a prediction for)."""

    metric: str
    statistic: str
    before: float
    after: float


def worse_than_start(
    before: Sequence[Prediction], after: Sequence[Prediction], margin: float = WORSE_MARGIN
) -> list[Worse]:
    """Where the fitted set (``after``) does worse than its starting set (``before``) on the
    same rows, per metric: fewer rows predicted, or a median or p90 absolute percentage error
    more than ``margin`` higher. Empty when the fit is no worse on any metric. The fit
    minimises a robust loss over every metric together, so it can trade one metric against
    another or move the bulk of the rows at the cost of their tail: this is the check a user
    sees, in the terms the table prints."""

    def metric(p: Prediction) -> str:
        return p.mapped.m.metric

    b = summary_table(before, metric)
    a = summary_table(after, metric)
    out: list[Worse] = []
    for name, start in b.items():
        end = a.get(name)
        if end is None or end.n < start.n:
            out.append(Worse(name, "predicted", start.n, end.n if end else 0))
            continue
        for statistic, was, now in (
            ("median", start.median_ape, end.median_ape),
            ("p90", start.p90_ape, end.p90_ape),
        ):
            if now > was + margin:
                out.append(Worse(name, statistic, was, now))
    return out


@dataclass(frozen=True)
class FitResult:
    efficiency: EfficiencySet
    predictions: list[Prediction]
    cost: float
    evaluations: int


def share_group(gpu: GpuSpec) -> str:
    """What ``compute`` and ``memory`` are fitted per: GPUs of one compute die, SM count and
    power class (``efficiency_like``: H200 SXM and GH200 with H100 SXM) reach the same shares
    of their own datasheets, so they share one fit and differ by their datasheets (HBM 4.8 vs
    3.35 TB/s), not by two free fits that could invert them. Other GPUs of one architecture
    differ in power class and clocks (H100 NVL at 400 W, L40 against L40S): each its own."""
    return gpu.efficiency_like or gpu.id


def _pairs(rows: Sequence[Mapped]) -> dict[tuple[str, str], list[str]]:
    """(share group, precision class) -> the measured GPUs in it."""
    out: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        gpu = r.candidate.gpu
        out.setdefault((share_group(gpu), precision_class(r.candidate.precision)), set()).add(
            gpu.id
        )
    return {k: sorted(v) for k, v in sorted(out.items())}


def conservative(
    entries: Sequence[EfficiencyEntry], architecture_of: Mapping[str, str | None]
) -> tuple[list[EfficiencyEntry], dict[str, float]]:
    """What a GPU no entry names takes: per architecture × precision, the lowest compute and
    memory shares fitted on its GPUs (an architecture entry); for an architecture never
    measured, the lowest of all (the set's defaults). A GPU never measured is then never
    predicted above a measured GPU of its architecture with the same datasheet figures."""
    measured = [e for e in entries if e.gpu is not None and e.compute and e.memory]
    groups: dict[tuple[str, str | None], list[EfficiencyEntry]] = {}
    for e in measured:
        arch = architecture_of.get(e.gpu or "")
        if arch is not None:
            groups.setdefault((arch, e.precision), []).append(e)
    out = [
        EfficiencyEntry(
            architecture=arch,
            precision=prec,
            compute=min(e.compute or 1.0 for e in group),
            memory=min(e.memory or 1.0 for e in group),
            points=sum(e.points or 0 for e in group),
            source="lowest fitted of " + ", ".join(sorted({e.gpu or "" for e in group})),
        )
        for (arch, prec), group in sorted(groups.items(), key=lambda kv: str(kv[0]))
    ]
    floor = {k: min(getattr(e, k) for e in measured) for k in PER_GPU_PARAMS} if measured else {}
    return out, floor


def with_conservative(eset: EfficiencySet, architecture_of: dict[str, str | None]) -> EfficiencySet:
    """``eset`` with its architecture entries and per-GPU defaults rewritten by
    :func:`conservative` from its GPU entries."""
    gpus = [e for e in eset.entries if e.gpu is not None]
    archs, floor = conservative(gpus, architecture_of)
    defaults = eset.defaults.model_copy(update=floor)
    return eset.model_copy(update={"defaults": defaults, "entries": gpus + archs})


def build_set(
    base: EfficiencySet,
    x: np.ndarray,
    pairs: dict[tuple[str, str], list[str]],
    free_globals: list[str],
    counts: Counter[tuple[str, str]],
) -> EfficiencySet:
    """``base`` with the set-wide values and, for every measured GPU, the shares of its group."""
    values = base.defaults.model_dump()
    for i, name in enumerate(free_globals):
        values[name] = float(x[i])
    entries = []
    measured: set[tuple[str, str]] = set()
    off = len(free_globals)
    for j, ((_, prec), gpus) in enumerate(pairs.items()):
        fitted = {k: float(x[off + 2 * j + n]) for n, k in enumerate(PER_GPU_PARAMS)}
        for gpu in gpus:
            measured.add((gpu, prec))
            for p in ("bf16", "fp16") if prec == "bf16" else (prec,):
                entries.append(
                    EfficiencyEntry(gpu=gpu, precision=p, points=counts[(gpu, prec)], **fitted)
                )
    kept = [
        e
        for e in base.entries
        if e.gpu is not None and (e.gpu, precision_class(e.precision or "")) not in measured
    ]
    return base.model_copy(
        update={"defaults": EfficiencyValues(**values), "entries": kept + entries}
    )


def fit(
    base: EfficiencySet,
    rows: Sequence[Mapped],
    free_globals: Sequence[str] = tuple(GLOBAL_PARAMS),
    max_evaluations: int = 400,
    architectures: Mapping[str, str | None] | None = None,
    kernel_tier: KernelTier | None = None,
) -> FitResult:
    """Fit ``base``'s parameters to ``rows`` (all predicted with the set being fitted), then
    write its architecture entries and per-GPU defaults (:func:`conservative`) from every GPU
    entry (``architectures``: GPU id -> architecture of the catalog; the rows' GPUs else)."""
    # a set whose kernels carry the hardware fits only its set-wide (engine) terms
    pairs = {} if base.kernels else _pairs(rows)
    counts = Counter((r.candidate.gpu.id, precision_class(r.candidate.precision)) for r in rows)
    free = list(free_globals)
    x0, lo, hi = [], [], []
    start = base.defaults.model_dump()
    for name in free:
        low, high = GLOBAL_PARAMS[name]
        lo.append(low)
        hi.append(high)
        x0.append(float(np.clip(start[name], low, high)))
    for (_, prec), gpus in pairs.items():
        entry = next(
            (
                e
                for e in base.entries
                if e.gpu in gpus and precision_class(e.precision or "") == prec
            ),
            None,
        )
        for k, (low, high) in PER_GPU_PARAMS.items():
            value = getattr(entry, k, None) if entry else None
            lo.append(low)
            hi.append(high)
            x0.append(float(np.clip(value if value is not None else start[k], low, high)))
    metric_n = Counter(r.m.metric for r in rows)
    weights = np.array([1.0 / np.sqrt(metric_n[r.m.metric]) for r in rows])
    measured = np.array([r.m.value for r in rows])
    evaluations = 0

    def residuals(x: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        evaluations += 1
        est = Estimator(build_set(base, x, pairs, free, counts), kernel_tier=kernel_tier)
        preds = predict_all(lambda _m: est, rows)
        by_row = {id(p.mapped): p.predicted for p in preds}
        pred = np.array([by_row.get(id(r), np.nan) for r in rows])
        res = np.log(np.maximum(pred, 1e-12) / measured)
        out: np.ndarray = np.where(np.isfinite(res), res, 5.0) * weights
        return out

    result = least_squares(
        residuals,
        np.array(x0),
        bounds=(np.array(lo), np.array(hi)),
        loss="soft_l1",
        f_scale=0.15 * float(np.mean(weights)),
        x_scale="jac",
        max_nfev=max_evaluations,
    )
    architecture_of = {r.candidate.gpu.id: r.candidate.gpu.architecture for r in rows}
    fitted = build_set(base, result.x, pairs, free, counts)
    fitted = with_conservative(fitted, {**architecture_of, **(architectures or {})})
    est = Estimator(fitted, kernel_tier=kernel_tier)
    return FitResult(fitted, predict_all(lambda _m: est, rows), float(result.cost), evaluations)
