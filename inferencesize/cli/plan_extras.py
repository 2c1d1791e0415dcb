"""`plan --verify` and `plan --plot`: the chosen plan simulated and drawn, on the study's own
deployment (engine set, techniques, KV cap)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from inferencesize.cli.common import Progress
from inferencesize.io_write import Input
from inferencesize.plotting import check_plot_path, save_rate_vs_latency
from inferencesize.render.plan import limits_record, verify_record
from inferencesize.render.trace import replay_record
from inferencesize.study import Study


def add_verification(study: Study, rec: dict[str, Any], result: Any) -> None:
    """Search the chosen plan's instance count by simulation at the peak rate; put the
    outcome under ``rec["verify"]``."""
    p = result.chosen
    if p is None:
        rec["verify"] = None
        return
    with Progress("simulating instance counts at the peak rate"):  # on a terminal, after 1 s
        v = study.verify(p)
    trace = None
    if study.trace is not None:  # a long trace replays its first requests: say which
        note = study.trace.replay_note()
        trace = f"{study.trace.source} ({note})" if note else study.trace.source
    rec["verify"] = verify_record(p, v, limits_record(study), trace)
    if study.trace is not None:  # the trace as it came, window by window
        with Progress("replaying the trace window by window"):
            replays = study.replay_trace(p)
        if replays is not None:  # a trace's verdict is its replay's, as it came
            v = rec["verify"]
            v["peak_meets_limits"] = v["meets_limits"]
            v["meets_limits"] = replays[0].meets
            v["missed_windows"] = replays[0].missed
            v["trace_replay"] = replay_record(*replays)


def draw_plan(path: Path, study: Study, result: Any, inputs: list[Input]) -> None:
    """Req/s per instance against latency on the chosen hardware, under the plan's traffic
    model: a panel per limited metric with its limit, the chosen operating point (and, open
    loop, the planned load) marked (``inputs``: the command's input files, never
    overwritten)."""
    check_plot_path(path, inputs=inputs)
    chosen = result.chosen
    if chosen is None:
        sys.stderr.write(f"no plot: no feasible plan ({path} not written)\n")
        return
    s = study.spec
    limits = study.limits
    lines = [(name, limits.statistic(name), limit) for name, limit in limits.active()]
    open_loop = chosen.sizing is not None
    stats = limits.stats if open_loop else ("mean", "mean", "mean")
    traffic = f"open loop, {s.router} router" if open_loop else "closed-loop clients"
    ceiling = None
    if chosen.binding == "memory":  # no latency limit binds: what caps one instance
        if chosen.sizing is not None:  # the rate it cannot keep up with, λ_max
            top = chosen.sizing.search.top_rps
            ceiling = (f"sustainable rate (λ_max): {top:.3g} req/s per instance", top)
        else:  # the load the KV cache holds
            rate = chosen.point.requests_per_s
            ceiling = (f"KV-cache capacity: {rate:.3g} req/s per instance", rate)
    save_rate_vs_latency(
        path,
        study.rate_curves(result),
        lines,
        stats,
        f"{s.model} · ISL {study.isl} · OSL {study.osl} · {s.batching} · {traffic} · "
        f"{chosen.candidate.hardware_id} × {chosen.instances} instances · binding"
        f" {chosen.binding}",
        inputs=inputs,
        ceiling=ceiling,
    )
    sys.stderr.write(f"wrote {path}\n")
