"""A trace sized for its length distribution against its mean lengths, each against the
simulator's replay of the whole trace: for each trace given and each of ``--trace-lengths
mean`` and ``distribution``, the plan (instances, the time of the plan in process), then at
the plan's fixed fleet the analytic p95/p99 TTFT and ITL over the whole trace and the replay's.

The analytic figures over the whole trace: each window's requests at its own rate on the
fixed fleet (one instance's open-loop point at the window's rate / N behind the plan's router,
the trace's gap cv), the windows' distributions mixed by their requests. The replay: every
request of the trace, as it came (times, lengths, bursts), through the simulator on the same
N instances behind the same router, with the plan's deployment and KV slots (what
``plan --verify`` replays, in one run rather than window by window). Not a timed test: figures
for a person.

The Azure LLM inference traces 2023 (Azure Public Dataset, CC-BY-4.0; Patel et al.,
"Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024) are what it
was written for; they are not in this repository.

Run: python benchmarks/trace_lengths.py TRACE.csv [TRACE.csv ...] [--model M --hardware H ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from trace_fleet import question_arguments, trace_question

from inferencesize.catalog import load_catalog
from inferencesize.errors import CatalogError
from inferencesize.openloop import steps_of
from inferencesize.openloop.point import point
from inferencesize.openloop.router import instance, node_below
from inferencesize.simulate import BatchingConfig, Workload, per_request, simulate_llm
from inferencesize.study import Study, resolve

#: The fractions each window's analytic distribution is tabled at (its inverse CDF).
GRID = tuple(float(q) for q in np.concatenate([np.arange(0.01, 0.99, 0.01), [0.99, 0.995, 0.999]]))


def _mixture_quantile(tables: list[np.ndarray], weights: np.ndarray, q: float) -> float:
    """The ``q`` quantile of the windows' distributions (each its values at :data:`GRID`)
    mixed with ``weights``: the x where Σ w·F(x) = q (F linear between the grid's values)."""
    grid = np.asarray(GRID)
    xs = np.unique(np.concatenate(tables))
    cdf = sum(
        w * np.interp(xs, t, grid, left=0.0, right=1.0)
        for w, t in zip(weights, tables, strict=True)
    )
    return float(np.interp(q, cdf, xs))


def analytic(study: Study, n: int, res_dep: object, slots: int) -> dict[str, float]:
    """p95/p99 TTFT and ITL (s) over the whole trace on ``n`` instances (module docstring)."""
    t = study.trace
    q = study.question
    assert t is not None and q is not None
    st = steps_of(res_dep, q.isl, q.osl, slots)  # type: ignore[arg-type]
    inst = instance(q.arrivals.router, q.arrivals.cv, node_below(n))
    ttft, itl, weights = [], [], []
    for w in t.windows:
        if w.requests == 0:
            continue
        pt = point(st, w.rate_rps / n, inst.cv, GRID, pool=inst.pool, idc_itl=inst.idc_itl)
        ttft.append(np.array([pt.ttft_q[g] for g in GRID]))
        itl.append(np.array([pt.itl_q[g] for g in GRID]))
        weights.append(w.requests)
    wts = np.asarray(weights, dtype=float) / sum(weights)
    return {
        f"{m}_p{int(x * 100)}": _mixture_quantile(tab, wts, x)
        for m, tab in (("ttft", ttft), ("itl", itl))
        for x in (0.95, 0.99)
    }


def replayed(study: Study, n: int) -> dict[str, float]:
    """p95/p99 TTFT and ITL (s) of every request of the trace on ``n`` instances."""
    t, q = study.trace, study.question
    assert t is not None and q is not None
    p_cand = study.plan(top=1).chosen
    assert p_cand is not None
    res = study.estimator.resolve(p_cand.candidate, q.isl + q.osl)
    assert res.deployment is not None
    times = t.workload.arrival_s
    assert times is not None
    wl = Workload(t.workload.isl, t.workload.osl, (times - times[0]) / t.scale)
    cfg = BatchingConfig("inflight", res.max_concurrency)
    sim = simulate_llm(
        res.deployment, p_cand.candidate.gpu.memory_bytes, wl, cfg, n, q.arrivals.router
    )
    pr = per_request(sim)
    out = {}
    for m, v in (("ttft", pr.ttft_s), ("itl", pr.itl_s)):
        v = v[np.isfinite(v)]
        for x in (0.95, 0.99):
            out[f"{m}_p{int(x * 100)}"] = float(np.quantile(v, x))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", type=Path)
    question_arguments(ap)
    args = ap.parse_args()
    catalog = load_catalog()
    for trace in args.traces:
        for lengths in ("mean", "distribution"):
            started = time.process_time()
            try:
                study = resolve(
                    catalog, None, {**trace_question(args, trace), "trace_lengths": lengths}
                )
            except CatalogError as err:
                print(f"{trace.name} [{lengths}]: not planned: {err}")
                continue
            result = study.plan(top=1)
            plan_cpu = time.process_time() - started
            p = result.chosen
            if p is None:
                print(f"{trace.name} [{lengths}]: no feasible plan ({plan_cpu:.2f} s CPU)")
                continue
            q = study.question
            assert q is not None
            res = study.estimator.resolve(p.candidate, q.isl + q.osl)
            by_dist, by_mean = study.length_answers(p)
            print(
                f"{trace.name} [{lengths}]: {p.instances} instances ({p.gpus} GPUs) for a peak"
                f" of {p.peak_rps:.3g} req/s, {res.max_concurrency} KV slots (instances for the"
                f" distribution {by_dist}, for the mean lengths {by_mean}); resolve + plan"
                f" {plan_cpu:.2f} s CPU"
            )
            a = analytic(study, p.instances, res.deployment, res.max_concurrency)
            r = replayed(study, p.instances)
            for key in a:
                err = (a[key] - r[key]) / r[key]
                print(
                    f"  {key:9s} analytic {a[key] * 1e3:8.1f} ms  replay {r[key] * 1e3:8.1f} ms"
                    f"  ({err:+.1%})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
