"""``infersize validate``: measurement files read and mapped onto candidates, every usable row
predicted, and the accuracy record (per metric, source and deployment; steady-state checks;
run-to-run spread; the rows not predicted, with why).

The command calls :func:`measured_rows`, then :func:`validate_rows` (under its progress
display), and renders the record.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from inferencesize.catalog import Catalog
from inferencesize.disagg_point import predict_disaggregated
from inferencesize.estimate import Estimator
from inferencesize.io_measurements import Measurement, dedupe, marked_duplicates, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.repeats import repeat_spreads
from inferencesize.study import efficiency_set
from inferencesize.validation import (
    STEADY_TOLERANCE,
    Mapped,
    Prediction,
    SteadyCheck,
    deployment_kind,
    estimator_chooser,
    not_predicted,
    point_key,
    predict_all,
    steady_checks,
    summary_table,
)

#: A row the model could not predict, with why.
Skipped = tuple[Measurement, str]


def read_rows(data: list[Path]) -> list[Measurement]:
    """The rows of the measurement files, each distinct row once."""
    return dedupe([m for path in data for m in read_measurements(path)])


@dataclass(frozen=True)
class MeasuredRows:
    """The rows of the measurement files, those mapped onto a candidate, the others with why,
    and the estimator each row is predicted with."""

    rows: list[Measurement]
    mapped: list[Mapped]
    skipped: list[Skipped]
    pick: Callable[[Measurement], Estimator]


def measured_rows(
    catalog: Catalog, data: list[Path], engine: str | None, calibration: Path | None
) -> MeasuredRows:
    """Read and map the rows; each is predicted with the set of its engine unless ``engine`` or
    ``calibration`` fixes one."""
    fixed = efficiency_set(catalog, engine, calibration) if (engine or calibration) else None
    rows = read_rows(data)
    unique, duplicates = marked_duplicates(rows)
    mapped, skipped = map_measurements(catalog, unique)
    return MeasuredRows(rows, mapped, duplicates + skipped, estimator_chooser(catalog, fixed))


@dataclass(frozen=True)
class Validation:
    """The record of ``validate`` and what its table shows besides it."""

    record: dict[str, Any]
    off: list[SteadyCheck]  # the serving points off steady state
    skipped: list[Skipped]  # every row not predicted, with why


def summary_rows(preds: list[Prediction], by: Any) -> list[dict[str, Any]]:
    """The accuracy of ``preds`` grouped by ``by``, a record per group."""
    return [
        {
            "group": k,
            "n": s.n,
            "median_ape": s.median_ape,
            "p90_ape": s.p90_ape,
            "within_10": s.within_10,
            "within_25": s.within_25,
        }
        for k, s in summary_table(preds, by).items()
    ]


def validate_rows(measured: MeasuredRows) -> Validation:
    """Predict every mapped row (aggregated and disaggregated) and summarise the accuracy."""
    rows, mapped, pick = measured.rows, measured.mapped, measured.pick
    t0 = time.perf_counter()
    aggregated = [r for r in mapped if r.pools is None]
    preds = predict_all(pick, aggregated)
    disagg, disagg_problems = predict_disaggregated(
        pick, [r for r in mapped if r.pools is not None]
    )
    elapsed = time.perf_counter() - t0
    skipped = measured.skipped + not_predicted(pick, aggregated, preds) + disagg_problems
    preds = preds + disagg
    used = Counter((r.m.engine, r.m.engine_version, pick(r.m).efficiency.id) for r in mapped)
    sets_used = [
        {"engine": e, "engine_version": v, "efficiency": ident, "rows": n}
        for (e, v, ident), n in sorted(used.items())
    ]
    by_metric = summary_rows(preds, lambda p: p.mapped.m.metric)
    by_source = summary_rows(preds, lambda p: f"{p.mapped.m.source} · {p.mapped.m.metric}")
    by_deployment = summary_rows(
        preds, lambda p: f"{deployment_kind(p.mapped)} · {p.mapped.m.metric}"
    )
    checks = steady_checks(mapped)
    off = [c for c in checks if not c.steady]
    off_points = {c.point for c in off}
    by_metric_steady = summary_rows(
        [p for p in preds if point_key(p.mapped) not in off_points], lambda p: p.mapped.m.metric
    )
    unmapped = [
        {
            "row": m.row,
            "source": m.source,
            "model": m.model,
            "gpu": m.gpu,
            "metric": m.metric,
            "reason": why,
        }
        for m, why in skipped
    ]
    by_reason = [
        {"reason": why, "rows": n}
        for why, n in sorted(Counter(why for _, why in skipped).items(), key=lambda x: -x[1])
    ]
    record = {
        "rows": len(rows),
        "predicted": len(preds),
        "unmapped": unmapped,
        "unmapped_by_reason": by_reason,
        "by_metric": by_metric,
        "by_source": by_source,
        "by_deployment": by_deployment,
        "efficiency_sets": sets_used,
        "steady_state": {
            "checked": len(checks),
            "tolerance": STEADY_TOLERANCE,
            "off": [_off_point(c) for c in off],
            "by_metric": by_metric_steady,
        },
        "repeat_runs": [asdict(r) for r in repeat_spreads(rows)],
        "seconds": elapsed,
    }
    return Validation(record, off, skipped)


def _off_point(c: SteadyCheck) -> dict[str, Any]:
    m = c.m
    return {
        "source": m.source,
        "model": m.model,
        "gpu": m.gpu,
        "precision": m.precision,
        "tp": m.tp,
        "isl": m.isl,
        "osl": m.osl,
        "concurrency": c.clients,
        "ratio": c.ratio,
    }
