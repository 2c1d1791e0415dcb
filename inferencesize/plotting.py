"""Plots: PNG/SVG with matplotlib (optional extra ``infersize[plot]``) and plain-text plots.

matplotlib is imported only when a file plot is drawn (Agg backend, no display needed); when it
is missing the user gets one line naming the extra to install. Computes nothing: callers pass
the points (:mod:`inferencesize.frontier`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inferencesize.errors import InputError
from inferencesize.frontier import Curve, Frontier
from inferencesize.io_write import Input, atomic_file, check_target

PLOT_SUFFIXES = (".png", ".svg")
INSTALL_HINT = "pip install 'infersize[plot]'"


def check_plot_path(path: Path, flag: str = "--plot", inputs: Iterable[Input] = ()) -> None:
    """The plot file must be .png or .svg in an existing directory, and a file the writer may
    replace (:func:`inferencesize.io_write.check_target`)."""
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise InputError(f"{flag} {path}: expected a .png or .svg file name")
    check_target(path, flag, inputs=inputs)


def _save(fig: Any, path: Path, inputs: Iterable[Input]) -> None:
    """The figure to ``path`` atomically: drawn into a temporary file in the same folder,
    renamed when complete (an existing plot is replaced, never left half-written)."""
    with atomic_file(path, "--plot", binary=True, inputs=inputs) as fh:
        fig.savefig(fh, format=path.suffix.lower().lstrip("."))


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, or a one-line error naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise InputError(f"plotting needs matplotlib: {INSTALL_HINT}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_frontier(path: Path, fr: Frontier, title: str, inputs: Iterable[Input] = ()) -> None:
    """Tokens/s per GPU against tokens/s per user: every point, the frontier, the points
    meeting the limits, and the two ends marked."""
    check_plot_path(path, inputs=inputs)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=120)
    x, y = fr.tokens_per_s_per_user, fr.tokens_per_s_per_gpu
    ax.scatter(x, y, s=4, color="0.75", label="all operating points", rasterized=True)
    on = np.flatnonzero(fr.on_frontier)
    on = on[np.argsort(x[on])]
    ax.plot(x[on], y[on], "-o", color="tab:blue", ms=3, lw=1.5, label="Pareto frontier")
    good = np.flatnonzero(fr.on_goodput_frontier)
    if good.size:
        ax.scatter(x[good], y[good], s=22, color="tab:green", zorder=3, label="meets limits")
    marks = (
        (fr.latency_optimal(), "latency-optimal", "tab:purple", (-60, 12)),
        (fr.throughput_optimal(), "throughput-optimal", "tab:red", (8, -18)),
        (fr.best_within_limits(), "best within limits", "tab:green", (8, 8)),
    )
    for idx, name, color, offset in marks:
        if idx is None:
            continue
        cand = fr.candidates[int(fr.candidate_index[idx])]
        ax.scatter([x[idx]], [y[idx]], s=90, marker="*", color=color, zorder=4)
        ax.annotate(
            f"{name}\n{cand.label()} · conc {int(fr.concurrency[idx])}",
            (x[idx], y[idx]),
            textcoords="offset points",
            xytext=offset,
            fontsize=7,
            color=color,
        )
    ax.set_xlabel("output tokens/s per user (1 / ITL)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    try:
        _save(fig, path, inputs)
    finally:
        plt.close(fig)


@dataclass(frozen=True)
class Mark:
    """A point of a curve to mark: what it is, its rate and its latencies (seconds)."""

    label: str
    requests_per_s: float
    ttft_s: float
    itl_s: float
    e2e_s: float


def mark(c: Curve, rate_rps: float, label: str) -> Mark:
    """The point of ``c`` nearest ``rate_rps`` requests/s (a point it passes through)."""
    i = int(np.argmin(np.abs(np.asarray(c.requests_per_s, dtype=float) - rate_rps)))
    return Mark(
        label,
        float(c.requests_per_s[i]),
        float(c.ttft_s[i]),
        float(c.itl_s[i]),
        float(c.e2e_s[i]),
    )


@dataclass(frozen=True)
class LabelledCurve:
    label: str
    curve: Curve
    chosen: bool
    marks: tuple[Mark, ...] = ()


#: The latency metrics a panel can show, by their names in curves and marks.
METRICS = {"ttft": "TTFT", "itl": "ITL", "e2e": "E2E"}


def save_rate_vs_latency(
    path: Path,
    curves: Sequence[LabelledCurve],
    limits: Sequence[tuple[str, str, float]],
    stats: tuple[str, str, str],
    title: str,
    inputs: Iterable[Input] = (),
    ceiling: tuple[str, float] | None = None,
) -> None:
    """Requests/s per instance against latency for each candidate: one panel per limited
    metric (TTFT always), x its latency at its statistic (``stats``: TTFT, ITL, E2E, "mean"
    or "p95" …), every limit (``limits``: metric, statistic, seconds) a vertical line in its
    panel, the marks of each curve as stars on it (named in the legend), and ``ceiling``
    (what caps the rate when no latency limit does: its name, requests/s) a horizontal
    line."""
    check_plot_path(path, inputs=inputs)
    plt = pyplot()
    from matplotlib import ticker

    limited = {metric for metric, _, _ in limits}
    panels = [m for m in METRICS if m == "ttft" or m in limited]
    width = 8 if len(panels) == 1 else 5 * len(panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 5.5), dpi=120, squeeze=False)
    colors = ("black", "tab:green", "tab:purple")
    for ax, metric in zip(axes[0], panels, strict=True):
        name = METRICS[metric]
        for lc in curves:
            ax.plot(
                np.asarray(getattr(lc.curve, f"{metric}_s")) * 1e3,
                lc.curve.requests_per_s,
                lw=2.2 if lc.chosen else 1.0,
                alpha=1.0 if lc.chosen else 0.6,
                label=lc.label + (" (chosen)" if lc.chosen else ""),
            )
            for m, color in zip(lc.marks, colors, strict=False):
                x = getattr(m, f"{metric}_s") * 1e3
                ax.scatter(
                    [x],
                    [m.requests_per_s],
                    s=120,
                    marker="*",
                    color=color,
                    zorder=4,
                    label=f"{m.label}: {m.requests_per_s:.3g} req/s, {name} {x:,.3g} ms",
                )
        for limit_metric, statistic, limit_s in limits:
            if limit_metric == metric:
                ax.axvline(
                    limit_s * 1e3,
                    color="tab:red",
                    ls="--",
                    lw=1,
                    label=f"{name} limit ({statistic} ≤ {limit_s * 1e3:,.4g} ms)",
                )
        if ceiling is not None:
            ax.axhline(ceiling[1], color="tab:orange", ls=":", lw=1, label=ceiling[0])
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())  # decades only: no overlap
        ax.set_xlabel(f"{stats[list(METRICS).index(metric)]} {name} (ms, log scale)")
        ax.set_ylabel("requests/s per instance")
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    try:
        _save(fig, path, inputs)
    finally:
        plt.close(fig)


@dataclass(frozen=True)
class Series:
    """Points drawn with one character; later series draw over earlier ones."""

    x: Any
    y: Any
    char: str


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def terminal_plot(
    series: Sequence[Series],
    x_label: str,
    y_label: str,
    width: int = 64,
    height: int = 18,
) -> str:
    """A scatter plot as text (``width`` × ``height`` cells, linear axes from 0)."""
    xs = [np.asarray(s.x, dtype=float) for s in series]
    ys = [np.asarray(s.y, dtype=float) for s in series]
    finite = [v for arr in xs for v in arr[np.isfinite(arr)]]
    x_max = max(finite, default=1.0) or 1.0
    finite_y = [v for arr in ys for v in arr[np.isfinite(arr)]]
    y_max = max(finite_y, default=1.0) or 1.0
    grid = [[" "] * width for _ in range(height)]
    for s, x, y in zip(series, xs, ys, strict=True):
        ok = np.isfinite(x) & np.isfinite(y)
        cols = np.clip((x[ok] / x_max * (width - 1)).round().astype(int), 0, width - 1)
        rows = np.clip((y[ok] / y_max * (height - 1)).round().astype(int), 0, height - 1)
        for c, r in zip(cols, rows, strict=True):
            grid[height - 1 - int(r)][int(c)] = s.char
    top, bottom = _fmt(y_max), "0"
    pad = max(len(top), len(bottom))
    lines = [y_label]
    for i, row in enumerate(grid):
        tick = top if i == 0 else (bottom if i == height - 1 else "")
        lines.append(f"{tick:>{pad}} │{''.join(row)}")
    lines.append(f"{'':>{pad}} └{'─' * width}")
    right = _fmt(x_max)
    gap = max(width - len(right) - 1, 1)
    lines.append(f"{'':>{pad}}  0{' ' * gap}{right}")
    # centred under the axis; a label wider than the axis ends where the axis ends
    label = f"{x_label:^{width}}" if len(x_label) <= width else x_label
    lines.append(f"{label:>{pad + 2 + width}}")
    return "\n".join(lines)
