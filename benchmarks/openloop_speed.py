"""Speed of open-loop (Poisson) sizing, against the closed-loop plan measured in the same run.

Usage: python benchmarks/openloop_speed.py [--models m1,m2,...] [--runs N] [--exhaustive]

Three levels, each timed as the minimum over ``--runs`` repeats (CPU seconds of this process,
``time.process_time``: on a shared machine the wall clock mostly measures the other jobs):

* one point: ``open_loop`` at 0.3, 0.7 and 0.9 of the sustainable rate (every percentile
  table), for Llama-3.1-70B fp4 TP1 on a DGX B200 (1000 input / 200 output tokens);
* one rate search: ``max_rate_within`` under p99 TTFT ≤ 2 s and p99 ITL ≤ 100 ms, with the
  points it solved, Poisson and cv = 2;
* one plan per model: ``plan`` over DGX H100, H200 and B200, every native precision and
  TP/PP/EP split, 1000 / 200 tokens, peak 20 req/s, TTFT ≤ 2 s and ITL ≤ 100 ms, the
  closed-loop plan (mean limits), the open-loop plan at p99 with the branch and bound the plan
  command uses (``prune=True``), and with ``--exhaustive`` the open-loop plan without it,
  checked to choose the same plan. Ratios open / closed per model.

Then the whole ``infersize plan --arrivals poisson --latency-stat p99 ...`` process for the
first model, wall and CPU seconds, next to the same command closed-loop (fresh interpreters,
as a user runs it). Target: the open-loop command within 1.5 s wall and 2 × the closed-loop
one on the project's 2-core machine when it is otherwise idle.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from inferencesize.catalog import load_catalog
from inferencesize.estimate import Candidate, Estimator
from inferencesize.openloop import RateSearch, max_rate_rps, open_loop
from inferencesize.parallelism import Parallelism
from inferencesize.plan_search import plan
from inferencesize.planner import Limits
from inferencesize.question import OpenLoop, PlanOptions, Question, SearchSpace

MODELS = ("llama-3.1-70b", "llama-3-8b", "deepseek-r1", "gpt-oss-120b", "qwen3-30b-a3b")
HARDWARE = ("dgx-h100", "dgx-h200", "dgx-b200")
ISL, OSL, PEAK = 1000, 200, 20.0
OPEN = Limits(ttft_s=2.0, itl_s=0.1, stats=("p99", "p99", "p99"))
CLOSED = Limits(ttft_s=2.0, itl_s=0.1)
CLI = [
    *["plan", "--ttft-ms", "2000", "--itl-ms", "100"],
    *["--isl", str(ISL), "--osl", str(OSL), "--peak-rps", str(PEAK), "--format", "json"],
]


def _best(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """Least CPU seconds over ``runs`` calls, and the last result."""
    times, out = [], None
    for _ in range(runs):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return min(times), out


def _estimator() -> tuple[Any, Estimator]:
    cat = load_catalog()
    return cat, Estimator(cat.efficiency_set())


def points_and_searches(runs: int) -> None:
    cat, est = _estimator()
    gpu, system = cat.hardware("dgx-b200")
    cand = Candidate(cat.model("llama-3.1-70b"), gpu, system, "fp4", "fp8", Parallelism(1))
    res = est.resolve(cand, ISL + OSL)
    assert res.deployment is not None
    dep, slots = res.deployment, res.max_concurrency
    top = max_rate_rps(dep, ISL, OSL, max_in_flight=slots)
    print(f"llama-3.1-70b fp4 tp1 on dgx-b200: sustainable {top:.2f} req/s, {slots} KV slots")
    for share in (0.3, 0.7, 0.9):
        t, _ = _best(lambda s=share: open_loop(dep, ISL, OSL, s * top, max_in_flight=slots), runs)
        print(f"  point at {share:.0%} of it (every table): {t * 1e3:7.1f} ms")
    wanted = OPEN.open_loop_limits()
    for cv in (1.0, 2.0):

        def search(c: float = cv) -> RateSearch:
            s = RateSearch(dep, ISL, OSL, wanted, c, slots)
            s.highest()
            return s

        t, s = _best(search, runs)
        print(
            f"  rate search, cv {cv:g}: {t * 1e3:7.1f} ms, {s.solves} points,"
            f" {s.highest():.3f} req/s"
        )


def plans(models: list[str], runs: int, exhaustive: bool) -> None:
    cat, est = _estimator()
    hw = [cat.hardware(h) for h in HARDWARE]
    print(f"\nplans over {', '.join(HARDWARE)} (CPU s, best of {runs})")
    head = f"{'model':16} {'closed':>8} {'open':>8} {'ratio':>6}  pruned/candidates"
    print(head + ("   exhaustive  same plan" if exhaustive else ""))
    for m in models:
        model = cat.model(m)

        space = SearchSpace(model, tuple(hw))

        def closed_plan(space: SearchSpace = space) -> Any:
            return plan(Question(space, ISL, OSL, CLOSED), PEAK, est)

        def open_plan(prune: bool, space: SearchSpace = space) -> Any:
            q = Question(space, ISL, OSL, OPEN, OpenLoop())
            return plan(q, PEAK, est, PlanOptions(prune=prune))

        t_closed, _ = _best(closed_plan, runs)

        t_open, r = _best(lambda: open_plan(True), runs)
        s = r.summary
        cut = sum(n for k, n in s.rejected_by_kind.items() if k.value == "pruned")
        line = (
            f"{m:16} {t_closed:8.2f} {t_open:8.2f} {t_open / t_closed:6.1f}  {cut}/{s.candidates}"
        )
        if exhaustive:
            t_full, full = _best(lambda: open_plan(False), 1)
            same = [(p.candidate.label(), p.instances) for p in [r.chosen, *r.alternatives]] == [
                (p.candidate.label(), p.instances) for p in [full.chosen, *full.alternatives]
            ]
            line += f"   {t_full:10.2f}  {'yes' if same else 'NO'}"
        print(line, flush=True)


def _process(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh ``python -m inferencesize`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "inferencesize", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "0"},
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands(model: str, runs: int) -> None:
    print(f"\nthe command, {model} (median of {runs} fresh processes)")
    base = [*CLI, "--model", model]
    opened = [*base, "--arrivals", "poisson", "--latency-stat", "p99"]
    rows = {"closed-loop": base, "poisson p99": opened}
    _process(base)  # byte-compile and warm the file cache once
    for name, args in rows.items():
        walls, cpus = zip(*(_process(args) for _ in range(runs)), strict=True)
        print(
            f"  {name:12} wall {statistics.median(walls):6.2f} s"
            f"  CPU {statistics.median(cpus):6.2f} s"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--exhaustive", action="store_true", help="also the unpruned open plan")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    points_and_searches(args.runs)
    plans(models, args.runs, args.exhaustive)
    commands(models[0], args.runs)


if __name__ == "__main__":
    main()
