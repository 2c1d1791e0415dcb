"""How much of the NIM TTFT error could any correction by cell remove?

Usage: python benchmarks/ttft_floor.py

Predicts every NIM TTFT row with the shipped default set, then, for several groupings of the
rows (by ISL × clients, ISL × OSL × clients, ...), divides each prediction by its group's median
ratio predicted / measured: the best a free correction factor per group could do. The p90 that
remains is scatter the grouping cannot explain (configuration-specific dynamics and run-to-run
differences, see `infersize validate`'s repeat table). Also prints the repeat-run spread.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from inferencesize.catalog import load_catalog
from inferencesize.io_measurements import dedupe, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.repeats import repeat_spreads
from inferencesize.validation import Prediction, estimator_chooser, predict_all

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data/calibration/measurements.csv"


def main() -> None:
    catalog = load_catalog()
    rows = [m for m in dedupe(read_measurements(DATA)) if m.source == "nvidia_dli_nim"]
    mapped, _ = map_measurements(catalog, rows)
    ttft = [r for r in mapped if r.m.metric == "ttft_ms_avg"]
    preds = predict_all(estimator_chooser(catalog, None), ttft)
    log_err = np.array([np.log(p.predicted / p.mapped.m.value) for p in preds])

    def config(p: Prediction) -> tuple[Any, ...]:
        m = p.mapped.m
        return (m.model, m.gpu, m.precision, m.tp)

    groupings: dict[str, Callable[[Prediction], tuple[Any, ...]]] = {
        "all rows (one factor)": lambda p: (),
        "configuration": config,
        "ISL x clients": lambda p: (p.mapped.m.isl, p.mapped.concurrency),
        "ISL x OSL x clients": lambda p: (p.mapped.m.isl, p.mapped.m.osl, p.mapped.concurrency),
        "GPU x ISL x clients": lambda p: (p.mapped.m.gpu, p.mapped.m.isl, p.mapped.concurrency),
        "model x GPU x ISL x clients": lambda p: (
            p.mapped.m.model,
            p.mapped.m.gpu,
            p.mapped.m.isl,
            p.mapped.concurrency,
        ),
    }
    print(f"NIM TTFT rows: {len(preds)} (nim-2024)")
    print(f"{'free factor per':30s} {'groups':>6s} {'median':>7s} {'p90':>7s}")
    for name, key in groupings.items():
        groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
        for i, p in enumerate(preds):
            groups[key(p)].append(i)
        left = log_err.copy()
        for idx in groups.values():
            left[idx] -= np.median(log_err[idx])
        ape = np.abs(np.expm1(left))
        print(f"{name:30s} {len(groups):6d} {np.median(ape):7.1%} {np.percentile(ape, 90):7.1%}")
    print("repeat runs (each later run against the first):")
    for r in repeat_spreads(rows):
        print(
            f"  {r.metric:20s} {r.points} points: median {r.median:.1%}, p90 {r.p90:.1%},"
            f" max {r.max:.1%}"
        )


if __name__ == "__main__":
    main()
