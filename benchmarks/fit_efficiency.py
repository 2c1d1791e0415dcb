"""Refit the shipped efficiency sets to the calibration data (writes hardware/efficiency/*.yaml).

Usage: python benchmarks/fit_efficiency.py [SET_ID ...]

Each set is fitted only to the rows of its own engine generation (the set's ``engines``), with
a handful of parameters per GPU × precision (see inferencesize/calibration.py). An optional
parameter (``OPTIONAL_PARAMS``) is fitted only in the sets whose defaults state it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

from inferencesize.calibration import fit, fittable, free_parameters
from inferencesize.catalog import Catalog, load_catalog
from inferencesize.io_measurements import Measurement, dedupe, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.specs import EfficiencySet, names_engine
from inferencesize.validation import summary_table

ROOT = Path(__file__).resolve().parent.parent
DATA = [
    ROOT / "data/calibration/measurements.csv",
    ROOT / "data/calibration/static_batching_sweep.csv",
    ROOT / "data/calibration/measurements_modern.csv",
]
#: Parameters a set states instead of fitting, because its rows do not pin them (README).
#: nim-2024's prefill attention: refitted with each ISL, OSL or model left out in turn it
#: lands anywhere from 0.12 to 1.00, so it takes trtllm-0.9-static's value (0.589, fitted to
#: 1951 measured prefill times of the same TensorRT-LLM kernel generation).
STATED = {
    "nim-2024": {
        "attention": "the rows do not pin it (each ISL, OSL or model left out, it fits"
        " 0.12-1.00); trtllm-0.9-static's fit to measured prefill times of the same kernel"
        " generation"
    }
}
#: Sets fitted without latency under load keep their stated serving parameters (README).
UNFITTED_SERVING = "; prefill_sync and cohort_tokens not fitted (no latency-under-load rows)"
#: Why, when a set states the in-flight engine's values (trtllm-0.14, trtllm-0.17).
ENGINE_SERVING = {"prefill_sync": 1.0, "cohort_tokens": 8192.0}
ENGINE_SERVING_WHY = (
    ": closed-loop clients of one length stay in step (1.0) and their cohort thins over one"
    " step's token budget (8192 = TensorRT-LLM's default max_num_tokens)"
)


def _unfitted_serving(base: EfficiencySet) -> str:
    """The source note for a set without serving rows; the reason only where it holds."""
    stated = all(getattr(base.defaults, g) == v for g, v in ENGINE_SERVING.items())
    return UNFITTED_SERVING + (ENGINE_SERVING_WHY if stated else "")


def _belongs(catalog: Catalog, base: EfficiencySet, m: Measurement) -> bool:
    """A row fits the set that `validate` predicts it with, if its label names the set's engine
    (rows that only fall back to the default set stay out of its fit)."""
    engine, version = m.served_engine  # a Dynamo row: its engine's, not Dynamo's, version
    return catalog.efficiency_for(engine, version).id == base.id and names_engine(
        base, engine, version
    )


def main(ids: list[str]) -> None:
    catalog = load_catalog()
    rows = dedupe([m for path in DATA for m in read_measurements(path)])
    mapped, _ = map_measurements(catalog, rows)
    for set_id in ids or list(catalog.efficiency):
        base = catalog.efficiency_set(set_id)
        mine = [r for r in fittable(mapped) if _belongs(catalog, base, r.m)]
        if not mine:
            print(f"{set_id}: no rows for engines {base.engines}")
            continue
        serving = any(r.mode == "inflight" for r in mine)
        free = free_parameters(base, mine, tuple(STATED.get(set_id, {})))
        held = STATED.get(set_id, {})
        t0 = time.perf_counter()
        archs = {g.id: g.architecture for g in catalog.gpus.values()}
        archs.update({a: g.architecture for g in catalog.gpus.values() for a in g.aliases})
        result = fit(base, mine, free, architectures=archs)
        dt = time.perf_counter() - t0
        sources = sorted({r.m.source for r in mine})
        fitted = result.efficiency.model_copy(
            update={
                "source": (
                    f"fitted by benchmarks/fit_efficiency.py (scipy least_squares, soft-L1 on log error) to"
                    f" {len(mine)} rows of data/calibration ({', '.join(sources)}; engine rows matching"
                    f" {base.engines}); copies of shared/calibration with per-row source_detail"
                    + ("" if serving else _unfitted_serving(base))
                    + "".join(f"; {g} stated, not fitted: {why}" for g, why in sorted(held.items()))
                )
            }
        )
        data = fitted.model_dump(exclude_none=True)
        path = ROOT / "hardware/efficiency" / f"{set_id}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False, width=100))
        print(f"{set_id}: {len(mine)} rows, {result.evaluations} evaluations, {dt:.0f} s")
        for metric, s in summary_table(result.predictions, lambda p: p.mapped.m.metric).items():
            print(f"  {metric:20s} n={s.n:5d} median {s.median_ape:6.1%} p90 {s.p90_ape:6.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
