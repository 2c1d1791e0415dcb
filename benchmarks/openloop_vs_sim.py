"""Open-loop model (`inferencesize.openloop`) against the discrete-event simulator.

Usage: python benchmarks/openloop_vs_sim.py [--json] [--quick] [--requests 30000] [--workers 2]

A grid of deployments (dense and MoE models on H100, H200, B200 and A100), prompt / answer
lengths, utilisations (rates as fractions of the *simulated* sustainable rate) and arrivals
(Poisson and gamma with cv = 2). Each point is simulated with in-flight batching (prefill
first, prompt steps of up to 8192 tokens, the KV cache as the slot limit), the first 10 % of
requests dropped as warm-up, and predicted by `open_loop`. The sustainable rate is simulated
by overloading the instance (Poisson at 1.5 × the model's rate) and counting completions in
the second half of the run. Prints the signed relative error of the mean, p95 and p99 of
TTFT, ITL and E2E per point, and the median and p90 of the absolute errors at utilisation
≤ 0.85 and above; ``--json`` prints the records instead.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

import numpy as np

from inferencesize.catalog import load_catalog
from inferencesize.estimate import Candidate, Estimator, Resolved
from inferencesize.openloop import max_rate_rps, open_loop
from inferencesize.parallelism import Parallelism
from inferencesize.simulate import (
    BatchingConfig,
    Workload,
    gamma_arrivals,
    per_request,
    poisson_arrivals,
    simulate_llm,
)
from inferencesize.simulate.engine import SimResult
from inferencesize.simulate.stats import measured_mask

#: (model, hardware, precision, TP)
DEPLOYMENTS = (
    ("llama-3.1-8b", "h100-sxm", "fp8", 1),
    ("llama-3.1-70b", "h200-sxm", "fp8", 4),
    ("mixtral-8x7b", "h100-sxm", "fp8", 2),
    ("qwen3-30b-a3b", "b200", "fp8", 1),
    ("llama-3.1-8b", "a100-sxm-80gb", "fp16", 1),
)
#: (ISL, OSL); the last two are long prompts with short answers (code completion), where a
#: request's few decode steps meet the prompts that arrived while it waited for its first token
SHAPES = ((200, 200), (2000, 200), (1000, 1000), (8000, 500), (2000, 10), (7000, 10))
LOADS = (0.1, 0.3, 0.5, 0.7, 0.85, 0.95)
CVS = (1.0, 2.0)
METRICS = ("ttft", "itl", "e2e")
STATS = ("mean", "p95", "p99")
WARMUP = 0.1
SEED = 7


@dataclass(frozen=True)
class Case:
    model: str
    hardware: str
    precision: str
    tp: int
    isl: int
    osl: int

    @property
    def label(self) -> str:
        return f"{self.model} {self.hardware} tp{self.tp} {self.isl}/{self.osl}"


@cache
def _estimator() -> Estimator:
    return Estimator(load_catalog().efficiency_set())


def _resolve(case: Case) -> tuple[Resolved, float]:
    cat = load_catalog()
    gpu, system = cat.hardware(case.hardware)
    cand = Candidate(
        cat.model(case.model), gpu, system, case.precision, case.precision, Parallelism(case.tp)
    )
    return _estimator().resolve(cand, case.isl + case.osl), gpu.memory_bytes


def _simulate(case: Case, rate: float, n: int, cv: float, seed: int) -> tuple[SimResult, Resolved]:
    res, memory = _resolve(case)
    assert res.deployment is not None
    rng = np.random.default_rng(seed)
    arrivals = poisson_arrivals(rng, n, rate) if cv == 1.0 else gamma_arrivals(rng, n, rate, cv)
    wl = Workload(np.full(n, case.isl), np.full(n, case.osl), arrivals)
    cfg = BatchingConfig("inflight", res.max_concurrency)
    return simulate_llm(res.deployment, memory, wl, cfg), res


def sustainable(case: Case) -> dict[str, float]:
    """Simulated sustainable rate (completions/s of an overloaded instance) and the model's."""
    res, _ = _resolve(case)
    assert res.deployment is not None
    model = max_rate_rps(res.deployment, case.isl, case.osl, max_in_flight=res.max_concurrency)
    n = int(min(max(30000, 25 * res.max_concurrency), 150000))
    t0 = time.perf_counter()
    sim, _ = _simulate(case, 1.5 * model, n, 1.0, SEED)
    done = np.sort(sim.done_s[~np.isnan(sim.done_s)])
    a, b = int(0.5 * done.size), int(0.95 * done.size) - 1
    simulated = (b - a) / float(done[b] - done[a])
    return {"sim": simulated, "model": model, "seconds": time.perf_counter() - t0}


def point(args: tuple[Case, float, float, float, int]) -> dict[str, Any]:
    case, load, cv, sim_max, n = args
    rate = load * sim_max
    t0 = time.perf_counter()
    sim, res = _simulate(case, rate, n, cv, SEED + 1)
    sim_s = time.perf_counter() - t0
    keep = measured_mask(sim, WARMUP)
    pr = per_request(sim)
    simulated: dict[str, float] = {}
    for metric in METRICS:
        v = getattr(pr, f"{metric}_s")[keep]
        v = v[~np.isnan(v)]
        simulated[f"{metric}_mean"] = float(v.mean())
        simulated[f"{metric}_p95"] = float(np.percentile(v, 95))
        simulated[f"{metric}_p99"] = float(np.percentile(v, 99))
    t0 = time.perf_counter()
    dep = res.deployment
    assert dep is not None
    p = open_loop(
        dep,
        case.isl,
        case.osl,
        rate,
        cv=cv,
        max_in_flight=res.max_concurrency,
    )
    model_s = time.perf_counter() - t0
    predicted: dict[str, float] = {}
    for metric in METRICS:
        predicted[f"{metric}_mean"] = float(getattr(p, f"{metric}_s"))
        table = getattr(p, f"{metric}_q")
        predicted[f"{metric}_p95"] = float(table[0.95])
        predicted[f"{metric}_p99"] = float(table[0.99])
    error = {
        k: (predicted[k] - simulated[k]) / simulated[k] if simulated[k] > 0 else float("nan")
        for k in simulated
    }
    return {
        **asdict(case),
        "cv": cv,
        "load": load,
        "rate_rps": rate,
        "utilisation": p.utilisation,
        "stable": p.stable,
        "simulated": simulated,
        "predicted": predicted,
        "error": error,
        "sim_seconds": sim_s,
        "model_seconds": model_s,
    }


def _aggregate(records: list[dict[str, Any]], low: bool) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for cv in CVS:
        for metric in METRICS:
            for stat in STATS:
                key = f"{metric}_{stat}"
                errs = [
                    abs(r["error"][key])
                    for r in records
                    if r["cv"] == cv and (r["load"] <= 0.85) == low and np.isfinite(r["error"][key])
                ]
                if errs:
                    out.setdefault(f"cv={cv:g}", {})[key] = float(np.median(errs))
                    out.setdefault(f"cv={cv:g} p90", {})[key] = float(np.percentile(errs, 90))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the records as JSON")
    ap.add_argument("--quick", action="store_true", help="two deployments, two shapes")
    ap.add_argument("--requests", type=int, default=30000, help="requests per simulated point")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    deployments = DEPLOYMENTS[:2] if args.quick else DEPLOYMENTS
    shapes = SHAPES[1:3] if args.quick else SHAPES
    cases = []
    for model, hw, prec, tp in deployments:
        for isl, osl in shapes:
            case = Case(model, hw, prec, tp, isl, osl)
            res, _ = _resolve(case)
            if res.deployment is not None and res.reason is None:
                cases.append(case)
    t_start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        rates = dict(zip(cases, pool.map(sustainable, cases), strict=True))
        jobs = [
            (c, load, cv, rates[c]["sim"], args.requests)
            for c in cases
            for cv in CVS
            for load in LOADS
        ]
        records = list(pool.map(point, jobs))
    elapsed = time.perf_counter() - t_start
    if args.json:
        out = {
            "sustainable": [{**asdict(c), **rates[c]} for c in cases],
            "points": records,
            "aggregate": {
                "le_0.85": _aggregate(records, True),
                "gt_0.85": _aggregate(records, False),
            },
            "seconds": elapsed,
        }
        print(json.dumps(out, indent=1))
        return
    print(f"open-loop model vs simulator: {len(records)} points, {elapsed:.0f} s")
    print("\nsustainable rate (requests/s): model vs simulated")
    errs = []
    for c in cases:
        sus = rates[c]
        err = sus["model"] / sus["sim"] - 1.0
        errs.append(abs(err))
        print(f"  {c.label:48s} {sus['model']:9.3f} {sus['sim']:9.3f} {err:+6.1%}")
    print(f"  median |error| {np.median(errs):.1%}, max {np.max(errs):.1%}")
    head = " ".join(f"{m}:{s:4s}" for m in METRICS for s in STATS)
    print(f"\nsigned error per point (model − sim)/sim\n  {'case':48s} cv   rho  {head}")
    for r in records:
        c = Case(*(r[k] for k in ("model", "hardware", "precision", "tp", "isl", "osl")))
        cells = " ".join(f"{r['error'][f'{m}_{s}']:+9.0%}" for m in METRICS for s in STATS)
        print(f"  {c.label:48s} {r['cv']:<4g} {r['load']:.2f} {cells}")
    for title, low in (("utilisation <= 0.85", True), ("utilisation > 0.85", False)):
        agg = _aggregate(records, low)
        print(f"\n|error| at {title}: median and p90 across the grid")
        print(f"  {'':12s} " + " ".join(f"{m}_{s:4s}".rjust(10) for m in METRICS for s in STATS))
        for row, values in agg.items():
            print(
                f"  {row:12s} "
                + " ".join(f"{values[f'{m}_{s}']:10.1%}" for m in METRICS for s in STATS)
            )
    model_time = sum(float(r["model_seconds"]) for r in records)
    print(f"\nmodel time: {model_time:.1f} s for {len(records)} points; total {elapsed:.0f} s")


if __name__ == "__main__":
    main()
