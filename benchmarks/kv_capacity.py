"""Measured KV capacity of the NIM runs against the memory model's.

Usage: python benchmarks/kv_capacity.py

For each NIM configuration (model, GPU, precision, TP, ISL, OSL), Little's law on the decode
phase gives the sequences decoding at once: req/s × (OSL − 1) × ITL. Below the KV capacity it
follows the clients; at the capacity it stops growing and the other clients wait for a slot
(their wait is part of TTFT). A configuration counts as KV-bound at a concurrency when fewer
than 85 % of the clients decode and the count grew by under 5 % since the previous concurrency.
Runs that ended before their queue settled count too (`infersize validate` flags them): their
mean TTFT is off, but the engine was full and its req/s and ITL still measure the batch.

Prints, per KV-bound configuration, the measured plateau (median over its KV-bound points), the
model's `max_concurrency` for ISL + OSL, their ratio, and the KV bytes per GPU each implies (the
model's KV bytes per sequence times the sequences), so a shortfall reads in GiB per GPU. Requests
in their prompt step hold KV too but do not decode, so the count is a lower bound, loose where
the prompt step is a large share of a request's life (short outputs): configurations with OSL
under ``FULL_OSL`` are marked and left out of the per-model medians.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from inferencesize.catalog import load_catalog
from inferencesize.io_measurements import dedupe, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.units import GIB
from inferencesize.validation import Mapped, estimator_chooser, point_metrics

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data/calibration/measurements.csv"
SOURCE = "nvidia_dli_nim"
DECODING_SHARE = 0.85  # below this share of clients decoding, some wait for a KV slot
GROWTH = 0.05  # ... and the decoding count has stopped growing
FULL_OSL = 1000  # outputs this long keep the prompt step a small share of a request's life


def decoding(rows: list[Mapped]) -> dict[float, float]:
    """Sequences decoding at once per concurrency, over the runs of one configuration (a
    repeated run replaces the earlier one: their req/s and ITL agree within 0.2 %)."""
    return {
        x.concurrency: v["req_per_s"] * ((x.m.osl or 1.0) - 1) * v["itl_ms_avg"] / 1e3
        for x, v in point_metrics(rows).values()
        if "req_per_s" in v and "itl_ms_avg" in v
    }


def plateau(points: dict[float, float]) -> tuple[float, list[float]] | None:
    """The decoding count where it stops following the clients, and the concurrencies there."""
    clients = sorted(points)
    bound = [
        c
        for prev, c in itertools.pairwise(clients)
        if points[c] < DECODING_SHARE * c and points[c] < (1 + GROWTH) * points[prev]
    ]
    if not bound:
        return None
    return float(np.median([points[c] for c in bound])), bound


def main() -> None:
    catalog = load_catalog()
    rows = [m for m in dedupe(read_measurements(DATA)) if m.source == SOURCE]
    mapped, _ = map_measurements(catalog, rows)
    configs: dict[tuple[Any, ...], list[Mapped]] = defaultdict(list)
    for r in mapped:
        if r.mode == "inflight":
            m = r.m
            configs[(m.model, m.gpu, m.precision, m.tp, int(m.isl or 0), int(m.osl or 0))].append(r)
    estimator_for = estimator_chooser(catalog)  # each row's engine set (nim-2024)
    print(
        f"{'configuration':44s} {'clients':>16s} {'measured':>8s} {'model':>6s} {'ratio':>6s}"
        f" {'KV GiB/GPU measured / model':>28s}"
    )
    ratios: dict[str, list[float]] = defaultdict(list)
    for key in sorted(configs):
        found = plateau(decoding(configs[key]))
        if found is None:
            continue
        seqs, bound = found
        row = configs[key][0]
        res = estimator_for(row.m).resolve(row.candidate, (row.m.isl or 0.0) + (row.m.osl or 0.0))
        if res.memory is None:
            continue
        model_seqs = res.max_concurrency
        per_seq = res.memory.kv_bytes_per_sequence / GIB
        if key[5] >= FULL_OSL:
            ratios[key[0]].append(seqs / model_seqs)
        label = f"{key[0]} {key[1]} {key[2]} TP{key[3]} {key[4]}/{key[5]}"
        label += "" if key[5] >= FULL_OSL else " *"
        where = ",".join(str(int(c)) for c in bound)
        print(
            f"{label:44s} {where:>16s} {seqs:8.0f} {model_seqs:6d} {seqs / model_seqs:6.2f}"
            f" {seqs * per_seq:13.1f} / {model_seqs * per_seq:5.1f}"
        )
    print(f"* OSL under {FULL_OSL}: a lower bound, not in the medians")
    for model, values in sorted(ratios.items()):
        print(
            f"{model}: measured / model capacity, median {np.median(values):.2f} over"
            f" {len(values)} configurations (range {min(values):.2f}-{max(values):.2f})"
        )


if __name__ == "__main__":
    main()
