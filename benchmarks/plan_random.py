"""Speed of ``infersize plan`` over random traffic questions: the worst case, not the typical one.

Draws ``--questions`` questions (seeded): every shipped model in turn, input lengths log-uniform
on 10–128k tokens (within the model's context), output lengths log-uniform on 1–16k, mean
rates log-uniform on 0.5–500 req/s, the gaps' coefficient of variation uniform on 0–8, a TTFT
limit and an ITL limit (and one time in three an E2E limit) at one statistic drawn from mean,
p50, p90, p95 and p99, the router drawn from least-loaded, random and round-robin, and the
hardware one of the default systems (DGX H100, H200, B200) or all three. Each runs as a fresh
``infersize plan … --format json`` process; its CPU seconds (user + system, from the
operating system's accounting) are recorded. Every question with Poisson arrivals (cv 1) is
also asked with closed-loop clients (mean limits) in the same run, one after the other, and
the two compared.

Targets (on the project's 2-core machine): median ≤ 0.5 s CPU, every plan ≤ 1.5 s, every
Poisson plan ≤ 1.5 × the same question's closed-loop plan. Prints the distribution, the ten
slowest questions (as command lines to rerun) and the ratios; ``--json FILE`` writes every
question and figure.

Run: python benchmarks/plan_random.py [--questions 300] [--seed 0] [--json FILE]
Exit 0 when every target is met, 2 when one is not, 1 when a command fails unexpectedly (a
plan may legitimately exit 3: no plan meets the limits).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
from process_stats import infersize, run

from inferencesize.catalog import load_catalog

ROOT = Path(__file__).resolve().parents[1]
MEDIAN_TARGET_S = 0.5
WORST_TARGET_S = 1.5
POISSON_VS_CLOSED = 1.5
HARDWARE = ("dgx-h100", "dgx-h200", "dgx-b200", "dgx-h100,dgx-h200,dgx-b200")
STATISTICS = ("mean", "p50", "p90", "p95", "p99")
ROUTERS = ("least-loaded", "random", "round-robin")


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def questions(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` random questions (see the module docstring)."""
    cat = load_catalog()
    models = sorted(cat.entries("models"))
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        model = cat.model(models[i % len(models)])
        context = int(model.max_context or 131072)
        osl = max(1, round(_log_uniform(rng, 1, 16384)))
        osl = min(osl, max(1, context // 2))
        isl = max(10, round(_log_uniform(rng, 10, 131072)))
        isl = min(isl, max(10, context - osl))
        cv = 1.0 if rng.random() < 0.25 else round(float(rng.uniform(0.0, 8.0)), 2)
        q: dict[str, Any] = {
            "model": model.id,
            "isl": isl,
            "osl": osl,
            "mean_rps": round(_log_uniform(rng, 0.5, 500), 3),
            "cv": cv,
            "ttft_ms": round(_log_uniform(rng, 200, 20000)),
            "itl_ms": round(_log_uniform(rng, 20, 300)),
            "latency_stat": STATISTICS[int(rng.integers(len(STATISTICS)))],
            "router": ROUTERS[int(rng.integers(len(ROUTERS)))],
            "hardware": HARDWARE[int(rng.integers(len(HARDWARE)))],
        }
        if rng.random() < 1 / 3:
            q["e2e_ms"] = round(q["ttft_ms"] + osl * q["itl_ms"] * float(rng.uniform(0.5, 1.5)))
        out.append(q)
    return out


def command(q: dict[str, Any], closed: bool = False) -> list[str]:
    """The ``infersize plan`` command line of question ``q`` (closed-loop clients at mean
    limits with ``closed``)."""
    args = [*infersize(), "plan", "--model", q["model"], "--isl", str(q["isl"])]
    args += ["--osl", str(q["osl"]), "--mean-rps", str(q["mean_rps"])]
    args += ["--ttft-ms", str(q["ttft_ms"]), "--itl-ms", str(q["itl_ms"])]
    if "e2e_ms" in q:
        args += ["--e2e-ms", str(q["e2e_ms"])]
    args += ["--hardware", q["hardware"], "--format", "json"]
    if closed:
        return [*args, "--arrivals", "closed-loop"]
    return [*args, "--cv", str(q["cv"]), "--router", q["router"]]


def _with_stat(args: list[str], q: dict[str, Any]) -> list[str]:
    """``args`` with the question's statistic last (a copied command line reads naturally)."""
    return [*args, "--latency-stat", q["latency_stat"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    qs = questions(args.questions, args.seed)
    run(command(qs[0]), env)  # byte-compile and warm the file cache once
    records = []
    failed = 0
    for i, q in enumerate(qs):
        r = run(_with_stat(command(q), q), env)
        rec: dict[str, Any] = {**q, "cpu_s": r.cpu_s, "exit": r.code}
        if r.code not in (0, 3):
            failed += 1
        if q["cv"] == 1.0:
            c = run(command(q, closed=True), env)
            rec["closed_cpu_s"] = c.cpu_s
        records.append(rec)
        sys.stdout.write(f"\r{i + 1}/{len(qs)}  last {r.cpu_s:.2f} s (exit {r.code})".ljust(40))
        sys.stdout.flush()
    print()
    cpu = [r["cpu_s"] for r in records]
    ratios = [r["cpu_s"] / r["closed_cpu_s"] for r in records if "closed_cpu_s" in r]
    q = statistics.quantiles(cpu, n=100)
    print(
        f"{len(records)} questions: CPU s median {statistics.median(cpu):.3f}, p90 {q[89]:.3f},"
        f" p99 {q[98]:.3f}, max {max(cpu):.3f}; failures {failed}"
    )
    if ratios:
        print(
            f"Poisson / closed-loop CPU over {len(ratios)} questions: median "
            f"{statistics.median(ratios):.2f}, max {max(ratios):.2f}"
        )
    print("slowest:")
    for r in sorted(records, key=lambda r: -r["cpu_s"])[:10]:
        line = " ".join(_with_stat(command(r), r)[len(infersize()) :])
        print(f"  {r['cpu_s']:.2f} s  exit {r['exit']}  infersize {line}")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1), encoding="utf-8")
    ok = (
        statistics.median(cpu) <= MEDIAN_TARGET_S
        and max(cpu) <= WORST_TARGET_S
        and all(x <= POISSON_VS_CLOSED for x in ratios)
    )
    if failed:
        return 1
    return 0 if ok else 2


if __name__ == "__main__":
    raise SystemExit(main())
