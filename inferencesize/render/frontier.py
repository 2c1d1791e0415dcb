"""The ``frontier`` output: operating-point records, the thinned table and the text plot."""

from __future__ import annotations

from typing import Any

import numpy as np

from inferencesize import report
from inferencesize.frontier import Frontier
from inferencesize.plotting import Series, terminal_plot

MARKS = {"latency-optimal": "L", "throughput-optimal": "T", "best-within-limits": "G"}


def marks_of(fr: Frontier) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for name, idx in (
        ("latency-optimal", fr.latency_optimal()),
        ("throughput-optimal", fr.throughput_optimal()),
        ("best-within-limits", fr.best_within_limits()),
    ):
        if idx is not None:
            out.setdefault(idx, []).append(name)
    return out


def stats_text(fr: Frontier) -> str:
    """The statistics of TTFT, ITL and E2E, e.g. 'p95' or 'TTFT p99, ITL mean, E2E mean'."""
    if len(set(fr.stats)) == 1:
        return fr.stats[0]
    return ", ".join(f"{n} {s}" for n, s in zip(("TTFT", "ITL", "E2E"), fr.stats, strict=True))


def point_record(fr: Frontier, i: int, marks: dict[int, list[str]]) -> dict[str, Any]:
    """One operating point with everything it assumes (candidate, load): closed loop, its
    concurrency; open loop, its request rate per instance and the mean requests in flight
    (``concurrency``), latencies at the limits' statistics."""
    c = fr.candidates[int(fr.candidate_index[i])]
    load: dict[str, Any] = {"concurrency": int(fr.concurrency[i])}
    if fr.open_loop:
        load = {
            "rate_rps_per_instance": float(fr.requests_per_s[i]),
            "concurrency": float(fr.concurrency[i]),
        }
    return {
        **c.fields(),
        "gpus_per_instance": c.par.gpus,
        **load,
        "output_tokens_per_s_per_gpu": float(fr.tokens_per_s_per_gpu[i]),
        "output_tokens_per_s_per_user": float(fr.tokens_per_s_per_user[i]),
        "ttft_ms": float(fr.ttft_s[i]) * 1e3,
        "itl_ms": float(fr.itl_s[i]) * 1e3,
        "e2e_ms": float(fr.e2e_s[i]) * 1e3,
        "requests_per_s_per_instance": float(fr.requests_per_s[i]),
        "on_frontier": bool(fr.on_frontier[i]),
        "meets_limits": bool(fr.meets_limits[i]),
        "mark": "+".join(marks.get(i, [])) or None,
    }


def order(fr: Frontier, mask: Any) -> list[int]:
    """Indices of ``mask``, most interactive (tokens/s per user) first."""
    idx = np.flatnonzero(mask)
    return [int(i) for i in idx[np.argsort(-fr.tokens_per_s_per_user[idx], kind="stable")]]


def _thin(indices: list[int], keep: set[int], rows: int) -> list[int]:
    if len(indices) <= rows:
        return indices
    step = len(indices) / rows
    picked = {indices[int(k * step)] for k in range(rows)} | (keep & set(indices))
    return [i for i in indices if i in picked]


#: Plot cells across at most (the text plot's default width) and at least.
PLOT_WIDTH = (64, 20)


def terminal(fr: Frontier, width: int | None = None) -> tuple[str, str]:
    """The text plot (fitted to ``width`` columns with its axis labels) and its legend (one
    line, for the caller to wrap)."""
    on = np.flatnonzero(fr.on_frontier)
    good = np.flatnonzero(fr.on_goodput_frontier)
    series = [
        Series(fr.tokens_per_s_per_user, fr.tokens_per_s_per_gpu, "·"),
        Series(fr.tokens_per_s_per_user[on], fr.tokens_per_s_per_gpu[on], "•"),
        Series(fr.tokens_per_s_per_user[good], fr.tokens_per_s_per_gpu[good], "o"),
    ]
    for idx, char in (
        (fr.best_within_limits(), "G"),
        (fr.throughput_optimal(), "T"),
        (fr.latency_optimal(), "L"),
    ):
        if idx is not None:
            series.append(
                Series([fr.tokens_per_s_per_user[idx]], [fr.tokens_per_s_per_gpu[idx]], char)
            )
    # the y labels, a space and the axis take at most 10 columns
    cells = PLOT_WIDTH[0] if width is None else max(PLOT_WIDTH[1], min(PLOT_WIDTH[0], width - 10))
    plot = terminal_plot(
        series, "output tokens/s per user (1 / ITL)", "output tokens/s per GPU", width=cells
    )
    legend = (
        "· operating point   • frontier   o meets limits   L latency-optimal"
        "   T throughput-optimal   G best within limits"
    )
    return plot, legend


def table(
    fr: Frontier,
    chosen: list[int],
    marks: dict[int, list[str]],
    heading: str,
    engine: str,
    rows: int,
    single_hw: bool,
) -> Any:
    """The frontier as a table: at most ``rows`` evenly spaced points plus the marked ones."""
    shown = _thin(chosen, set(marks), rows)
    shown = order(fr, np.isin(np.arange(fr.size), [*shown, *marks]))
    table_rows = []
    for i in shown:
        r = point_record(fr, i, marks)
        load = f"{r['rate_rps_per_instance']:,.3g}" if fr.open_loop else str(r["concurrency"])
        table_rows.append(
            [
                "".join(MARKS[m] for m in marks.get(i, [])),
                ("" if single_hw else f"{r['hardware']} ")
                + f"{r['precision']} "
                + fr.candidates[int(fr.candidate_index[i])].par.label(),
                load,
                f"{r['output_tokens_per_s_per_user']:,.1f}",
                f"{r['output_tokens_per_s_per_gpu']:,.0f}",
                f"{r['ttft_ms']:,.0f}",
                f"{r['itl_ms']:,.1f}",
                f"{r['e2e_ms'] / 1e3:,.2f}",
                "yes" if r["meets_limits"] else "no",
            ]
        )
    caption = (
        f"{len(shown)} of {len(chosen)} points shown, {fr.size:,} evaluated"
        f" ({report.count(len(fr.candidates), 'candidate')}; {engine}); L latency-optimal, T throughput-optimal,"
        " G best within limits; ok = meets the limits"
    )
    ttft, itl, e2e = (f"{s} " if fr.open_loop else "" for s in fr.stats)
    columns = [
        "",
        "candidate",
        "req/s/inst" if fr.open_loop else "conc",
        "tok/s/user",
        "tok/s/GPU",
        f"TTFT {ttft}ms",
        f"ITL {itl}ms",
        f"E2E {e2e}s",
        "ok",
    ]
    return report.table(heading, columns, table_rows, caption=caption, compact=True)


def ends(fr: Frontier, marks: dict[int, list[str]]) -> dict[str, Any]:
    """The marked points: latency-optimal, throughput-optimal, best within the limits."""
    return {
        name.replace("-", "_"): (point_record(fr, idx, marks) if idx is not None else None)
        for name, idx in (
            ("latency-optimal", fr.latency_optimal()),
            ("throughput-optimal", fr.throughput_optimal()),
            ("best-within-limits", fr.best_within_limits()),
        )
    }
