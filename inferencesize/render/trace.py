"""What a trace adds to a plan's output: fixed against autoscaled fleets over its windows
(:mod:`inferencesize.trace_fleet`), as JSON records and table rows. The Azure LLM inference
traces, where they are the input, are CC-BY-4.0 (Patel et al., Splitwise, ISCA 2024)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inferencesize.burstiness import BURST_SCALE_S

if TYPE_CHECKING:
    from inferencesize.trace_fleet import TraceFleet
    from inferencesize.trace_replay import TraceReplay


def usd(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.2f}"


def fleet_record(f: TraceFleet) -> dict[str, Any]:
    """Fixed against autoscaled over a trace's windows (:mod:`inferencesize.trace_fleet`)."""

    def figures(x: Any) -> dict[str, Any]:
        return {
            "peak_gpus": x.peak_gpus,
            "mean_gpus": x.mean_gpus,
            "peak_units": x.peak_units,
            "gpu_hours": x.gpu_hours,
            "cost_usd": x.cost_usd,
        }

    return {
        "unit": f.unit,
        "span_s": f.span_s,
        "cost_basis": f.cost_basis,
        "scale_up_delay_s": f.scale_up_delay_s,
        "fixed": {**figures(f.fixed), "instances": f.fixed_instances},
        "autoscaled": {**figures(f.autoscaled), "gpu_hours_saved": f.gpu_hours_saved},
    }


def window_fleet_fields(f: TraceFleet) -> list[dict[str, Any]]:
    """What each window of ``trace.windows`` adds with a plan: its peak, the instances and
    GPUs it needs, and the GPUs the autoscaled fleet pays for in it."""
    return [
        {
            "peak_rps": w.peak_rps,
            "instances": w.instances,
            "gpus": w.gpus,
            "autoscaled_gpus": w.autoscaled_gpus,
        }
        for w in f.windows
    ]


def trace_fleet_rows(rec: dict[str, Any]) -> list[tuple[str, str]]:
    """Fixed against autoscaled over a trace's windows, side by side."""
    fl, t = rec.get("fleet"), rec.get("trace")
    if not fl or not t:
        return []
    span = fl["span_s"]
    over = f"{span / 3600:,.2f} h" if span >= 3600 else f"{span:,.4g} s"
    busiest = max(t["windows"], key=lambda w: w["rate_rps"])
    rows = [
        (
            "trace windows",
            f"{len(t['windows'])} of {t['window_s']:,.0f} s over {over} · busiest"
            f" {busiest['rate_rps']:,.3g} req/s from {busiest['start_s']:,.0f} s",
        )
    ]
    cvs = sorted({round(w["cv"], 3) for w in t["windows"] if w.get("cv") is not None})
    if len(cvs) > 1:
        rows.append(
            (
                "window burstiness",
                f"each window at its own cv: {cvs[0]:.3g} to {cvs[-1]:.3g} (gamma gaps whose"
                f" counts over {BURST_SCALE_S:g} s vary as its requests' do)",
            )
        )
    capped = [k for k, w in enumerate(t["windows"]) if w.get("cv_capped")]
    if capped:
        rows.append(
            (
                "burstier than modelled",
                f"{len(capped)} of {len(t['windows'])} windows burstier than gamma gaps of cv"
                f" {cvs[-1]:g}, the model's limit, are sized at it; --verify replays them as"
                " they came",
            )
        )
    rows.extend(conversation_rows(t))
    for name in ("fixed", "autoscaled"):
        f = fl[name]
        rows.append(
            (
                f"{name} fleet",
                f"peak {f['peak_gpus']:,} GPUs ({f['peak_units']} × {fl['unit']}) · mean"
                f" {f['mean_gpus']:,.1f} GPUs · {f['gpu_hours']:,.3g} GPU-h"
                f" · {usd(f['cost_usd'])}",
            )
        )
    a = fl["autoscaled"]
    rows[-1] = (
        rows[-1][0],
        f"{rows[-1][1]} ({a['gpu_hours_saved']:.0%} fewer GPU-h; units started"
        f" {fl['scale_up_delay_s']:,.0f} s ahead)",
    )
    return rows


def _ms(held: Any) -> dict[str, float]:
    return {f"{name}_ms": value * 1e3 for name, value in held.by_name().items()}


def replay_record(fixed: TraceReplay, autoscaled: TraceReplay) -> dict[str, Any]:
    """``plan --verify`` on a trace: the trace replayed as it came against the fixed and the
    autoscaled fleet, the limits' statistics per window and over the whole trace."""

    def one(r: TraceReplay) -> dict[str, Any]:
        return {
            "meets_limits": r.meets,
            "requests": r.requests,
            "router": r.router,
            "held": _ms(r.held),
            "missed_windows": r.missed,
            "windows": [
                {
                    "start_s": w.start_s,
                    "end_s": w.end_s,
                    "instances": w.instances,
                    "requests": w.requests,
                    "held": _ms(w.held),
                    "meets_limits": w.meets,
                }
                for w in r.windows
            ],
        }

    return {"fixed": one(fixed), "autoscaled": one(autoscaled)}


def replay_rows(v: dict[str, Any]) -> list[tuple[str, str]]:
    """``plan --verify`` on a trace: the replay of the whole trace against each fleet, the
    limits' statistics over every request and the windows that miss."""
    replay = v.get("trace_replay")
    if not replay:
        return []
    stats = v["statistics"]
    rows = []
    for name in ("fixed", "autoscaled"):
        r = replay[name]
        held = " · ".join(
            f"{label} {stats[key]} {r['held'][f'{key}_ms']:,.1f} ms"
            for key, label in (("ttft", "TTFT"), ("itl", "ITL"), ("e2e", "E2E"))
            if v["limits"].get(f"{key}_ms") is not None
        )
        missed = r["missed_windows"]
        windows = len(r["windows"])
        state = "meets" if r["meets_limits"] else "misses"
        where = (
            f"misses in windows {', '.join(map(str, missed))} of {windows}"
            if missed
            else (f"every window of {windows} meets")
        )
        rows.append(
            (
                f"trace replay, {name}",
                f"{r['requests']:,} requests, {r['router']} router: {held or 'no limit'} →"
                f" {state} over the whole trace; {where}",
            )
        )
    return rows


def conversation_rows(t: dict[str, Any]) -> list[tuple[str, str]]:
    """Prefix reuse across the trace's conversations, and what the plan's caches keep."""
    c = t.get("conversations")
    if not c:
        return []
    text = (
        f"{c['later_turns']:,} later turns of {c['conversations']:,} conversations repeat"
        f" {c['reuse_share']:.1%} of the prompt tokens"
    )
    cache = c.get("prefix_cache")
    if cache:
        kept = cache["residence_s"]
        held = "ever" if kept == float("inf") else f"{kept:,.3g} s"
        text += (
            f" · the plan's KV left keeps a prefix {held}: hit rate {cache['hit_rate']:.1%},"
            f" {cache['prefix_tokens']:,.0f} tokens a hit ({cache['cached_share']:.1%} of"
            " prompt tokens)"
        )
    fed = c.get("sized_with")
    if fed:
        text += f" · sized with a hit rate of {fed['hit_rate']:.1%}"
    elif cache:
        text += " · sized without (a prefix cache stated, or no hit)"
    return [("conversations", text)]
