"""``infersize calibrate``: fit an efficiency set to measurements of one GPU at one precision,
and the record of the fit (fitted values, error before and after, whether it is worse).

The command calls :func:`calibration_rows`, then :func:`fit_rows` (under its progress
display), writes the fitted set when it may and renders the record. Imports scipy (through
``calibration``): the command imports this module only when it runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from inferencesize.calibration import (
    PER_GPU_PARAMS,
    Worse,
    fit,
    on_target,
    precision_class,
    worse_than_start,
)
from inferencesize.catalog import Catalog
from inferencesize.errors import InputError
from inferencesize.estimate import Estimator
from inferencesize.io_measurements import GENAI_SOURCE, Measurement
from inferencesize.measured_map import map_measurements
from inferencesize.specs import EfficiencySet
from inferencesize.study import efficiency_set
from inferencesize.validation import Mapped, predict_all, summary_table
from inferencesize.validation_study import Skipped, read_rows


@dataclass(frozen=True)
class RunFill:
    """What the flags state of the runs (GenAI-Perf exports state none of it)."""

    model: str | None
    tp: int | None
    isl: int | None
    osl: int | None
    concurrency: int | None


@dataclass(frozen=True)
class CalibrationRows:
    """The rows a fit of one GPU × precision uses, starting from ``base``."""

    base: EfficiencySet
    gpu: str  # the catalog's id of the GPU fitted
    precision: str
    mapped: list[Mapped]
    skipped: list[Skipped]
    excluded: list[tuple[str, str, int]]  # rows of other GPUs or precisions: (gpu, precision, n)

    @property
    def target(self) -> str:
        return f"{self.gpu} {self.precision}"


def calibration_rows(
    catalog: Catalog,
    data: list[Path],
    hardware: str,
    precision: str,
    fill: RunFill,
    engine: str | None,
) -> CalibrationRows:
    """Read the rows, keep those measured on ``hardware`` at ``precision`` and map them onto
    single instances (disaggregated rows are listed, not fitted); an InputError naming the
    first file when none is usable."""
    base = efficiency_set(catalog, engine, None)
    gpu, _ = catalog.hardware(hardware)
    rows, excluded = on_target(
        catalog, [_fill(m, fill, gpu.id, precision) for m in read_rows(data)], gpu.id, precision
    )
    target = f"{gpu.id} {precision}"
    if not rows and excluded:
        measured = ", ".join(f"{n:,} on {g} {p}" for g, p, n in excluded[:3])
        raise InputError(
            f"{data[0]}: no rows measured on {target} ({measured}); give the --hardware and"
            " --precision the rows were measured on (a blank gpu or precision cell takes them)"
        )
    mapped, skipped = map_measurements(catalog, rows, hardware=hardware, precision=precision)
    # the fit predicts one instance per row: disaggregated rows are listed, not fitted
    skipped += [(r.m, "disaggregated: calibrate fits one instance") for r in mapped if r.pools]
    mapped = [r for r in mapped if r.pools is None]
    if not mapped:
        reasons = sorted({why for _, why in skipped})
        raise InputError(f"{data[0]}: no usable rows ({'; '.join(reasons[:3]) or 'empty'})")
    return CalibrationRows(base, gpu.id, precision, mapped, skipped, excluded)


@dataclass(frozen=True)
class Calibration:
    """A fitted set (named ``id``), its record, and the metrics it is worse on."""

    fitted: EfficiencySet
    record: dict[str, Any]
    worse: list[Worse]


def fit_rows(
    catalog: Catalog, rows: CalibrationRows, overheads: bool, fitted_id: str, data: list[Path]
) -> Calibration:
    """Fit the set to the rows (``overheads``: the set-wide overheads too); the fitted set is
    named ``fitted_id`` and its source names the files ``data``."""
    base, mapped = rows.base, rows.mapped
    tier = catalog.kernel_tier(base)
    start = Estimator(base, kernel_tier=tier)
    before = predict_all(lambda _m: start, mapped)
    free = ["step_overhead_s", "layer_overhead_s", "gemm_m_half"] if overheads else []
    result = fit(base, mapped, free, kernel_tier=tier)
    worse = worse_than_start(before, result.predictions)
    fitted = result.efficiency.model_copy(
        update={
            "id": fitted_id,
            "default": False,
            "source": f"infersize calibrate on {', '.join(str(d) for d in data)} ({len(mapped)} rows;"
            f" {rows.target}); starting from {base.id}",
        }
    )
    entry = next(
        e
        for e in fitted.entries
        if e.gpu == rows.gpu
        and precision_class(e.precision or "") == precision_class(rows.precision)
    )
    b = summary_table(before, lambda p: p.mapped.m.metric)
    a = summary_table(result.predictions, lambda p: p.mapped.m.metric)
    worse_metrics = {w.metric for w in worse}
    quality = [
        {
            "metric": k,
            "n": a[k].n,
            "median_ape_before": b[k].median_ape if k in b else None,
            "median_ape_after": a[k].median_ape,
            "p90_ape_before": b[k].p90_ape if k in b else None,
            "p90_ape_after": a[k].p90_ape,
            "worse": k in worse_metrics,
        }
        for k in a
    ]
    skipped = rows.skipped
    record: dict[str, Any] = {
        "id": fitted.id,
        "hardware": rows.gpu,
        "precision": rows.precision,
        "starting_set": base.id,
        "fitted": {k: getattr(entry, k) for k in PER_GPU_PARAMS},
        "rows_used": len(mapped),
        "rows_excluded": [{"gpu": g, "precision": p, "rows": n} for g, p, n in rows.excluded],
        "rows_not_used": len(skipped),
        "not_used_example": skipped[0][1] if skipped else None,
        "fit_quality": quality,
        "worse": [asdict(w) for w in worse],
    }
    return Calibration(fitted, record, worse)


def _fill(m: Measurement, fill: RunFill, gpu: str, precision: str) -> Measurement:
    # A GenAI-Perf export names the served model (a deployment name, not a catalog id) and
    # states no TP: the flags win there. A measurements CSV states each row: flags fill blanks.
    export = m.source == GENAI_SOURCE
    updates: dict[str, Any] = {}
    if (export or not m.model) and fill.model:
        updates["model"] = fill.model
    if (export or m.tp is None) and fill.tp:
        updates["tp"] = fill.tp
    if (export or m.isl is None) and fill.isl:
        updates["isl"] = float(fill.isl)
    if (export or m.osl is None) and fill.osl:
        updates["osl"] = float(fill.osl)
    if (export or not m.concurrency) and fill.concurrency:
        updates["concurrency"] = str(fill.concurrency)
    if not m.gpu:
        updates["gpu"] = gpu
    if not m.precision:
        updates["precision"] = precision
    return replace(m, **updates) if updates else m
