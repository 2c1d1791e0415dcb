"""Accuracy of the discrete-event simulator (and of `estimate`) on the NIM serving rows.

Usage: python benchmarks/simulate_accuracy.py [--max-clients 100] [--per-client 8]

Replays every nvidia_dli_nim operating point of data/calibration/measurements.csv up to
``--max-clients`` closed-loop clients in the simulator (in-flight batching, the `simulate`
defaults: prompt steps of up to 8192 tokens, the running decodes pause for them) and predicts
the same rows analytically with `estimate`'s model. Prints median and p90 absolute percentage error per
metric, and per metric and concurrency, for both. Beyond ~100 clients the NIM runs wait for KV
slots for minutes and a simulation of them takes long, so the default stops there.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inferencesize.catalog import load_catalog
from inferencesize.estimate import Estimator
from inferencesize.io_measurements import dedupe, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.simulate.arrivals import Workload
from inferencesize.simulate.engine import BatchingConfig
from inferencesize.simulate.llm import simulate_llm
from inferencesize.simulate.stats import Summary, summarize
from inferencesize.validation import Mapped, Prediction, predict_all, summarise

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data/calibration/measurements.csv"
SOURCE = "nvidia_dli_nim"
EFFICIENCY_SET = "nim-2024"
METRICS = ("ttft_ms_avg", "itl_ms_avg", "e2e_ms_avg", "req_per_s")
WARMUP = 0.25  # share of requests (in arrival order) that start on an empty system
UNCAPPED = 10**6  # max batch before the KV cap


def simulated(metric: str, s: Summary) -> float:
    """The simulator's figure for a measured metric (means, per instance)."""
    if metric == "req_per_s":
        return s.requests_per_s
    dist = {"ttft_ms_avg": s.ttft_s, "itl_ms_avg": s.itl_s, "e2e_ms_avg": s.e2e_s}[metric]
    return dist.mean * 1e3


@dataclass(frozen=True)
class Point:
    rows: list[Mapped]

    @property
    def clients(self) -> int:
        return int(self.rows[0].concurrency)


def points(rows: list[Mapped], max_clients: int) -> list[Point]:
    groups: dict[tuple[object, ...], list[Mapped]] = defaultdict(list)
    for r in rows:
        m = r.m
        if m.source != SOURCE or m.metric not in METRICS or r.concurrency > max_clients:
            continue
        groups[(r.candidate.label(), m.isl, m.osl, r.concurrency)].append(r)
    return [Point(v) for _, v in sorted(groups.items(), key=lambda kv: str(kv[0]))]


def simulate_point(est: Estimator, p: Point, per_client: int) -> Summary | None:
    first = p.rows[0]
    isl, osl = int(first.m.isl or 1), int(first.m.osl or 1)
    res = est.resolve(first.candidate, isl + osl)
    if res.deployment is None or res.reason is not None:
        return None
    n = max(per_client * p.clients, 200)
    wl = Workload(np.full(n, isl), np.full(n, osl), None, p.clients)
    # simulate_llm caps the batch at the KV capacity itself
    cfg = BatchingConfig("inflight", UNCAPPED)
    s = summarize(simulate_llm(res.deployment, first.candidate.gpu.memory_bytes, wl, cfg), WARMUP)
    return s if s.requests else None


def table(title: str, preds: list[Prediction]) -> None:
    print(f"\n{title}")
    print(f"  {'metric':14s} {'rows':>5s} {'median':>8s} {'p90':>8s}   median by clients")
    for metric in METRICS:
        mine = [p for p in preds if p.mapped.m.metric == metric]
        if not mine:
            continue
        s = summarise(mine)
        by: dict[int, list[Prediction]] = defaultdict(list)
        for p in mine:
            by[int(p.mapped.concurrency)].append(p)
        cells = "  ".join(
            f"{c}:{np.median([(q.predicted - q.mapped.m.value) / q.mapped.m.value for q in v]):+.0%}"
            for c, v in sorted(by.items())
        )
        print(f"  {metric:14s} {s.n:5d} {s.median_ape:8.1%} {s.p90_ape:8.1%}   {cells}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-clients", type=int, default=100)
    ap.add_argument("--per-client", type=int, default=8, help="requests simulated per client")
    args = ap.parse_args()
    catalog = load_catalog()
    mapped, _ = map_measurements(catalog, dedupe(read_measurements(DATA)))
    est = Estimator(catalog.efficiency_set(EFFICIENCY_SET))
    pts = points(mapped, args.max_clients)
    t0 = time.perf_counter()
    sim: list[Prediction] = []
    for p in pts:
        s = simulate_point(est, p, args.per_client)
        if s is not None:
            sim.extend(Prediction(r, simulated(r.m.metric, s)) for r in p.rows)
    dt = time.perf_counter() - t0
    rows = [r for p in pts for r in p.rows]
    table(f"simulator ({len(pts)} operating points, {dt:.1f} s)", sim)
    table("estimate (analytic, same rows)", predict_all(lambda _m: est, rows))
    print("\nsigned median error by clients: + means predicted above measured")


if __name__ == "__main__":
    main()
