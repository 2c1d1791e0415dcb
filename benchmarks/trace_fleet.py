"""The plan of a trace against its replay: for each trace given, the time of a whole ``infersize
plan --trace`` process (wall and CPU seconds), then in process the plan's fixed and
autoscaled fleets replayed as the trace came (:mod:`inferencesize.trace_replay`), each
window's own replay need searched, and the analytic p99 TTFT at the plan's peak. With
``--synthetic ROWS``: a generated trace of that many requests (benchmarks/trace_scale.py's)
planned by a whole process, its peak memory and time. Not a timed test: figures for a
person.

Each check prints PASS or FAIL against its target: a plan process under
:data:`PLAN_CPU_S` CPU seconds; the fixed fleet's replay meets the limits over the whole
trace; with one instance fewer in every window it misses where the fleet meets, over the
whole trace or in a window (the fleet is tight, not padded); the autoscaled fleet counts in
every window at least the GPUs (whole units, as paid) that window's own replay needs; a
synthetic trace planned under :data:`SYNTHETIC_MIB` MiB and :data:`SYNTHETIC_S` s. Times are
judged in CPU seconds (the plan is one thread): on a shared machine the wall clock also
counts the other processes' turns.

The Azure LLM inference traces 2023 (Azure Public Dataset, CC-BY-4.0; Patel et al.,
"Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024) are what it
was written for; they are not in this repository:

Run: python benchmarks/trace_fleet.py TRACE.csv [TRACE.csv ...] [--model M --hardware H ...]
         [--synthetic 10000000]
Exit 0 when every check passed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from process_stats import infersize, mib, run
from trace_scale import QUESTION as SYNTHETIC_QUESTION
from trace_scale import write_trace

from inferencesize.catalog import load_catalog
from inferencesize.planner import Plan
from inferencesize.render.plan import result_record
from inferencesize.study import Study, resolve

#: Targets: a trace plans in this many CPU seconds; a synthetic trace in this memory and time.
PLAN_CPU_S = 3.0
SYNTHETIC_MIB = 300.0
SYNTHETIC_S = 60.0


def check(name: str, passed: bool, figures: str) -> bool:
    print(f"  {'PASS' if passed else 'FAIL'} {name}: {figures}")
    return passed


def trace_question(args: argparse.Namespace, trace: Path) -> dict[str, object]:
    """The benchmark's question of ``trace`` as a scenario (``args``: the candidate, the
    limits; ``delay_s`` where the parser has it)."""
    q: dict[str, object] = {
        "model": args.model,
        "hardware": [args.hardware],
        "precision": [args.precision],
        "tp": [args.tp],
        "pp": [1],
        "ttft_ms": args.ttft_ms,
        "itl_ms": args.itl_ms,
        "latency_stat": args.stat,
        "trace": str(trace),
    }
    if getattr(args, "delay_s", None) is not None:
        q["scale_up_delay_s"] = args.delay_s
    return q


def question_arguments(ap: argparse.ArgumentParser) -> None:
    """The flags of the benchmark's question (:func:`trace_question`): the candidate and the
    limits."""
    ap.add_argument("--model", default="llama-3.1-70b")
    ap.add_argument("--hardware", default="h100-sxm")
    ap.add_argument("--precision", default="fp8")
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--ttft-ms", type=float, default=1000.0)
    ap.add_argument("--itl-ms", type=float, default=60.0)
    ap.add_argument("--stat", default="p95")


def _flags(args: argparse.Namespace, trace: Path) -> list[str]:
    return [
        "plan", "--model", args.model, "--hardware", args.hardware, "--precision",
        args.precision, "--tp", str(args.tp), "--pp", "1", "--ttft-ms", str(args.ttft_ms),
        "--itl-ms", str(args.itl_ms), "--latency-stat", args.stat, "--trace", str(trace),
        "--scale-up-delay-s", str(args.delay_s), "-f", "json",
    ]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--synthetic", type=int, default=0, help="requests of a generated trace")
    question_arguments(ap)
    ap.add_argument("--delay-s", type=float, default=120.0)
    args = ap.parse_args()
    ok = True
    catalog = load_catalog()
    for trace in args.traces:
        r = run([*infersize(), *_flags(args, trace)])
        print(f"{trace.name}: plan process {r.wall_s:.2f} s wall, {r.cpu_s:.2f} s CPU", end="")
        print(f", peak memory {mib(r.peak_bytes):.0f} MiB, exit {r.code}")
        ok &= check("plans in time", r.cpu_s < PLAN_CPU_S, f"{r.cpu_s:.2f} s CPU")
        study = resolve(catalog, None, trace_question(args, trace))
        result = study.plan(top=1)
        p = result.chosen
        if p is None:
            print("  no feasible plan")
            ok = False
            continue
        rec = result_record(study, result)
        print(f"  {p.instances} instances for a peak of {p.peak_rps:.3g} req/s")
        started = time.perf_counter()
        replays = study.replay_trace(p)
        tight = study.replay_trace(p, less=1)
        assert replays is not None and tight is not None
        seconds = time.perf_counter() - started
        for name, rep, less in zip(("fixed", "autoscaled"), replays, tight, strict=True):
            held = rep.held.by_name()
            print(
                f"  {name:10s} replay meets {rep.meets} ({args.stat} TTFT"
                f" {held['ttft'] * 1e3:.0f} ms, ITL {held['itl'] * 1e3:.1f} ms over"
                f" {rep.requests:,} requests); one instance fewer in every window misses in"
                f" windows {less.missed}"
            )
        fixed, auto = replays
        ok &= check("fixed fleet meets over the whole trace", fixed.meets, f"{fixed.requests:,}")
        newly = [k for k in tight[0].missed if k not in fixed.missed]
        ok &= check(
            "one instance fewer misses where the fleet meets (over the whole trace or a window)",
            not tight[0].meets or bool(newly),
            f"whole trace meets {tight[0].meets}; windows missed {tight[0].missed} of"
            f" {len(tight[0].windows)}, by the fleet itself {fixed.missed}",
        )
        fleet = study.trace_fleet(p)
        assert fleet is not None
        needs = window_needs(study, p, [w.instances for w in fleet.windows])
        short = [
            k
            for k, (w, n) in enumerate(zip(fleet.windows, needs, strict=True))
            if w.autoscaled_gpus < n * p.gpus_per_instance
        ]
        print(f"  instances each window's own replay needs: {needs}")
        print(
            f"  instances the model sizes each window at:  {[w.instances for w in fleet.windows]}"
        )
        print(
            f"  GPUs the autoscaled fleet counts per window: {[w.autoscaled_gpus for w in fleet.windows]}"
        )
        ok &= check(
            "autoscaled fleet never counts fewer GPUs than the replay needs",
            not short,
            f"short in windows {short} of {len(needs)}",
        )
        print(
            f"  (the autoscaled fleet's replay at the instances it sizes misses windows"
            f" {auto.missed})"
        )
        for name in ("fixed", "autoscaled"):
            f = rec["fleet"][name]
            print(
                f"  {name:10s} fleet: peak {f['peak_gpus']} GPUs, mean {f['mean_gpus']:.1f},"
                f" {f['gpu_hours']:.2f} GPU-h, cost {f['cost_usd']}"
            )
        at_peak = rec["plan"]["per_instance_at_peak"]
        print(
            f"  analytic TTFT at the peak: p95 {at_peak.get('ttft_ms_p95')} ms, p99"
            f" {at_peak.get('ttft_ms_p99')} ms; replays took {seconds:.1f} s"
        )
    if args.synthetic:
        ok &= synthetic(args.synthetic)
    return 0 if ok else 1


def window_needs(study: Study, p: Plan, start: list[int]) -> list[int]:
    """The fewest instances of ``p``'s candidate with which each window's own replay meets
    the limits: from ``start``, one instance down in each window that meets, up in each that
    misses, until every window's two counts either side are known (all windows in one replay
    a step)."""
    lo = [0] * len(start)  # the most known to miss
    hi: list[int | None] = [None] * len(start)  # the fewest known to meet
    counts = list(start)
    while True:
        rep = study.replay_counts(p, counts)
        assert rep is not None
        for k, w in enumerate(rep.windows):
            if w.meets:
                hi[k] = counts[k]  # only counts below a known meet are tried
            else:
                lo[k] = max(lo[k], counts[k])
        if all(h is not None and h - m <= 1 for h, m in zip(hi, lo, strict=True)):
            return [h for h in hi if h is not None]
        counts = [
            (m + 1 if h is None else h if h - m <= 1 else h - 1)
            for h, m in zip(hi, lo, strict=True)
        ]


def synthetic(rows: int) -> bool:
    """A generated trace of ``rows`` requests planned by a whole process (flat memory)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.csv"
        wrote = write_trace(path, rows)
        print(f"synthetic trace: {rows:,} requests, {mib(path.stat().st_size):,.0f} MiB", end="")
        print(f" (written in {wrote:.1f} s)")
        r = run([*infersize(), "plan", *SYNTHETIC_QUESTION, "--trace", str(path)])
        print(f"  plan process {r.wall_s:.2f} s wall, {r.cpu_s:.2f} s CPU, exit {r.code}")
        peak = mib(r.peak_bytes)
        fits = r.code == 0 and peak < SYNTHETIC_MIB and r.cpu_s < SYNTHETIC_S
        figures = f"peak {peak:.0f} MiB, {r.cpu_s:.1f} s CPU"
        return check("synthetic trace in flat memory and time", fits, figures)


if __name__ == "__main__":
    sys.exit(main())
