"""Plan-level accuracy: the GPUs `plan` asks for, like for like, against the GPUs a published
closed-loop measurement shows are enough.

Usage:
    python benchmarks/plan_count.py                          # every point (about a minute)
    python benchmarks/plan_count.py --only nvidia_dli_nim    # one source
    python benchmarks/plan_count.py --limit 200              # at most 200 points (every k-th)
    python benchmarks/plan_count.py --write docs/plan_count.md

Points: the closed-loop serving rows of ``data/calibration`` (``nvidia_dli_nim`` in
measurements.csv, ``aic_silicon_sample`` in measurements_modern.csv), aggregated instances
only: disaggregated rows, speculative-decoding rows and rows marked "likely duplicate" are
left out. Rows are mapped as `validate` maps them (``io_measurements.map_measurements``: the
split with attention DP and MoE TP from the notes, lengths as the client drew them) and each
is predicted with the set `validate` picks (``validation.estimator_chooser``). A curve is one
concurrency sweep (same source, model, GPU, precision, split, ISL, OSL, engine and version);
repeated runs of one concurrency are merged (median of each metric).

For each measured point (C clients; mean TPOT, mean TTFT, requests/s per instance: stated,
else Little's law C / (TTFT + (OSL − 1) · TPOT)) the plan is asked like for like: the same
split, precision and set, closed-loop clients, limits ITL = the measured TPOT and TTFT = the
measured TTFT (means). ``planner.search_point``, the search `plan` runs for closed-loop
arrivals, finds the load with the highest request rate among those the model says meet both
limits. For one demand, GPUs planned / GPUs implied = measured requests/s per instance /
planned requests/s per instance (the same GPUs per instance): above 1 the plan buys more GPUs
than the measurement shows are enough. A point where even one client misses a limit in the
model has no plan (an infinite ratio in the statistics). A plan is unsafe when the measured
curve, interpolated linearly in log C between its points (extrapolated from its last two
beyond the last, held at the first below it), shows TPOT or TTFT above its limit by more than
``UNSAFE_MARGIN`` at the planned load; a curve of one point cannot judge a plan above it.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.estimate import Estimator
from inferencesize.io_measurements import dedupe, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.measured_shape import speculative_method
from inferencesize.outcomes import LatencyMiss
from inferencesize.planner import Limits, search_point
from inferencesize.serving import OperatingPoint
from inferencesize.units import MS_PER_S
from inferencesize.validation import (
    Mapped,
    deployment_kind,
    estimator_chooser,
    placeholder_weights,
    point_metrics,
)

ROOT = Path(__file__).resolve().parent.parent
#: (file, the closed-loop serving sources read from it)
FILES = (
    ("data/calibration/measurements.csv", ("nvidia_dli_nim",)),
    ("data/calibration/measurements_modern.csv", ("aic_silicon_sample",)),
)
#: A plan is unsafe when the measurement at its load is above a limit by more than this share.
UNSAFE_MARGIN = 0.10
#: The measured time per output token: TPOT where stated, else the mean ITL (GenAI-Perf).
TPOT_METRICS = ("tpot_ms_avg", "itl_ms_avg")
WORST_SHOWN = 10
NO_PLAN_SHOWN = 5


@dataclass(frozen=True)
class Point:
    """One measured operating point of a curve (per instance, SI units)."""

    concurrency: float
    tpot_s: float
    ttft_s: float
    requests_per_s: float


@dataclass(frozen=True)
class Curve:
    """One concurrency sweep: a representative mapped row and its points by concurrency."""

    row: Mapped
    engine_set: str
    points: tuple[Point, ...]

    @property
    def label(self) -> tuple[str, ...]:
        m, c = self.row.m, self.row.candidate
        lengths = f"{m.isl:g}/{m.osl:g}"
        return (m.model, m.gpu, m.engine_label, c.precision, c.par.label(), lengths)


@dataclass(frozen=True)
class Outcome:
    """The plan for one measured point and what the measured curve says of it."""

    curve: Curve
    point: Point
    planned: OperatingPoint | None  # None: the model has no load meeting both limits
    ratio: float  # GPUs planned / GPUs implied (inf: no plan; nan: the split does not run)
    #: Measured value / limit − 1 at the planned load, worst of TPOT and TTFT (None: unknown)
    excess: float | None
    excess_metric: str
    #: No plan: why ("ITL 1.31× at 1 client") and by how much the model misses (sorting)
    why: str = ""
    miss: float = 0.0

    @property
    def unsafe(self) -> bool:
        return self.excess is not None and self.excess > UNSAFE_MARGIN


def measured_at(points: Sequence[Point], concurrency: float, metric: str) -> float | None:
    """The curve's ``metric`` (a Point field) at ``concurrency``: linear in log C between the
    measured points, the first point's value below them, extrapolated from the last two above
    them (a slope below zero taken as flat); None above a curve of one point."""
    cs = np.log([p.concurrency for p in points])
    vs = np.array([getattr(p, metric) for p in points])
    x = math.log(concurrency)
    if x <= cs[-1]:
        return float(np.interp(x, cs, vs))
    if len(points) < 2:
        return None
    slope = max((vs[-1] - vs[-2]) / (cs[-1] - cs[-2]), 0.0)
    return float(vs[-1] + slope * (x - cs[-1]))


def judge(
    curve: Curve, point: Point, planned: OperatingPoint | None, why: str = "", miss: float = 0.0
) -> Outcome:
    """GPUs planned / implied for one point and the measured excess over a limit at the plan's
    load (module docstring). The limits are the point's own TPOT and TTFT; ``planned`` None:
    no plan, for the reason ``why`` (the model misses a limit by the factor ``miss``)."""
    if planned is None or planned.requests_per_s <= 0:
        return Outcome(curve, point, None, math.inf, None, "", why or "no plan", miss)
    ratio = point.requests_per_s / planned.requests_per_s
    excess: float | None = None
    worst = ""
    for metric, limit in (("tpot_s", point.tpot_s), ("ttft_s", point.ttft_s)):
        value = measured_at(curve.points, planned.concurrency, metric)
        if value is None:
            return Outcome(curve, point, planned, ratio, None, "")
        over = value / limit - 1.0
        if excess is None or over > excess:
            excess, worst = over, metric.removesuffix("_s").upper()
    return Outcome(curve, point, planned, ratio, excess, worst)


def plan_point(est: Estimator, curve: Curve, point: Point) -> Outcome:
    """The closed-loop plan of one instance at the point's limits (``planner.search_point``,
    as `plan` runs it), judged against the curve; no plan when the split does not run or one
    client already misses a limit."""
    m = curve.row.m
    isl, osl = m.isl or 0.0, m.osl or 1.0
    res = est.resolve(curve.row.candidate, isl + osl)
    if res.deployment is None:  # a split the model does not run: no figure (left out)
        return Outcome(curve, point, None, math.nan, None, "", res.reason or "does not run")
    limits = Limits(ttft_s=point.ttft_s, itl_s=point.tpot_s)
    op, why = search_point(res, isl, osl, limits, "inflight")
    if op is not None:
        return judge(curve, point, op)
    if isinstance(why, LatencyMiss):
        name = "TPOT" if why.metric == "itl" else why.metric.upper()
        text = f"{name} {why.ratio:.2f}× at {why.at} client" + ("s" if why.at != 1 else "")
        return judge(curve, point, None, text, why.ratio)
    return judge(curve, point, None, str(why), math.inf)


def evaluate(est: Estimator, curve: Curve) -> list[Outcome]:
    return [plan_point(est, curve, p) for p in curve.points]


# ---------------------------------------------------------------------------------------------
# Curves from the calibration files
# ---------------------------------------------------------------------------------------------


def _kept(r: Mapped) -> bool:
    m = r.m
    return (
        r.pools is None
        and r.mode == "inflight"
        and r.concurrency > 0
        and speculative_method(m.notes) is None
        and "likely duplicate" not in m.notes.lower()
    )


def _point(r: Mapped, values: dict[str, float]) -> Point | None:
    """A measured point from one run's metrics, or None when TPOT or TTFT is missing."""
    tpot_ms = next((values[k] for k in TPOT_METRICS if k in values), None)
    if tpot_ms is None or "ttft_ms_avg" not in values:
        return None
    tpot, ttft = tpot_ms / MS_PER_S, values["ttft_ms_avg"] / MS_PER_S
    osl = r.m.osl or 1.0
    rate = values.get("req_per_s") or r.concurrency / (ttft + (osl - 1.0) * tpot)
    return Point(r.concurrency, tpot, ttft, rate)


def _merge(points: Sequence[Point]) -> tuple[Point, ...]:
    """One point per concurrency (repeated runs: the median of each field), by concurrency."""
    by_c: dict[float, list[Point]] = defaultdict(list)
    for p in points:
        by_c[p.concurrency].append(p)
    return tuple(
        Point(c, *(float(np.median([getattr(p, f.name) for p in ps])) for f in fields(Point)[1:]))
        for c, ps in sorted(by_c.items())
    )


def curves(
    catalog: Catalog, chooser: Callable[[Any], Estimator], sources: Sequence[str] | None = None
) -> list[Curve]:
    """The closed-loop concurrency sweeps of the calibration files (module docstring)."""
    raw = []
    for name, kept_sources in FILES:
        wanted = [s for s in kept_sources if sources is None or s in sources]
        raw += [m for m in read_measurements(ROOT / name) if m.source in wanted]
    mapped, _ = map_measurements(catalog, dedupe(raw))
    runs = point_metrics([r for r in mapped if _kept(r)])
    grouped: dict[tuple[Any, ...], list[tuple[Mapped, Point]]] = defaultdict(list)
    for r, values in runs.values():
        p = _point(r, values)
        if p is None:
            continue
        m, c = r.m, r.candidate
        key: tuple[Any, ...] = (m.source, m.model, m.gpu, c.precision, c.kv_precision, c.par)
        key += (m.isl, m.osl, m.engine_label, placeholder_weights(m))
        grouped[key].append((r, p))
    out = []
    for key in sorted(grouped, key=repr):
        members = grouped[key]
        row = members[0][0]
        out.append(Curve(row, chooser(row.m).efficiency.id, _merge([p for _, p in members])))
    return out


def estimator_of(chooser: Callable[[Any], Estimator], row: Mapped) -> Estimator:
    """The row's estimator as `validate` predicts it (``validation.predict_all``): placeholder
    weights route every MoE token to the same experts."""
    est = chooser(row.m)
    if placeholder_weights(row.m) and row.candidate.model.moe is not None:
        est = replace(est, fixed_routing=True, _costs={}, _deps={})
    return est


def subsample(items: Sequence[Curve], limit: int | None) -> list[Curve]:
    """Every k-th curve so that at most ``limit`` points remain (deterministic)."""
    total = sum(len(c.points) for c in items)
    if limit is None or total <= limit:
        return list(items)
    step = math.ceil(total / limit)
    out, count = [], 0
    for c in items[::step]:
        if count + len(c.points) > limit:
            break
        out.append(c)
        count += len(c.points)
    return out


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    points: int
    no_plan: int
    median_abs: float  # |ratio − 1|, no plan counted as infinite
    p90_abs: float
    median_signed: float
    planned_median_abs: float  # |ratio − 1| over the points with a plan
    planned_p90_abs: float
    unsafe_share: float  # of the plans the curve can judge
    judged: int
    worst: Outcome | None  # the largest measured excess over a limit at a plan's load


def _percentile(x: Any, q: float) -> float:
    return float(np.percentile(x, q, method="higher")) if np.size(x) else math.nan


def summarise(outcomes: Sequence[Outcome]) -> Summary:
    """Statistics of |ratio − 1| (no plan: infinite), the signed median, the unsafe share.
    Percentiles are order statistics (numpy's "higher"), so an infinite ratio never mixes
    with a finite one."""
    r = np.array([o.ratio for o in outcomes])
    planned = np.abs(r[np.isfinite(r)] - 1)
    judged = [o for o in outcomes if o.excess is not None]
    worst = max(judged, key=lambda o: o.excess or 0.0, default=None)
    return Summary(
        points=len(outcomes),
        no_plan=int(np.sum(np.isinf(r))),
        median_abs=_percentile(np.abs(r - 1), 50),
        p90_abs=_percentile(np.abs(r - 1), 90),
        median_signed=_percentile(r - 1, 50),
        planned_median_abs=_percentile(planned, 50),
        planned_p90_abs=_percentile(planned, 90),
        unsafe_share=sum(o.unsafe for o in judged) / len(judged) if judged else math.nan,
        judged=len(judged),
        worst=worst,
    )


def _pct(x: float, signed: bool = False) -> str:
    if math.isnan(x):
        return "–"
    if math.isinf(x):
        return "∞"
    return f"{x:+.0%}".replace("+0%", "0%") if signed else f"{x:.0%}"


def _summary_row(name: str, s: Summary) -> str:
    worst = "–"
    if s.worst is not None and s.worst.excess is not None and s.worst.excess > 0:
        worst = f"{s.worst.excess_metric} {_pct(s.worst.excess, signed=True)}"
    unsafe = "–" if math.isnan(s.unsafe_share) else f"{s.unsafe_share:.1%} of {s.judged}"
    cells = (
        name,
        str(s.points),
        str(s.no_plan),
        _pct(s.median_abs),
        _pct(s.p90_abs),
        _pct(s.median_signed, signed=True),
        _pct(s.planned_median_abs),
        _pct(s.planned_p90_abs),
        unsafe,
        worst,
    )
    return "| " + " | ".join(cells) + " |"


def _badness(o: Outcome) -> tuple[float, float]:
    """How far a plan is off, either way: |log ratio|; no plan first, the largest miss first."""
    return (math.inf, o.miss) if math.isinf(o.ratio) else (abs(math.log(o.ratio)), 0.0)


def table(every: Sequence[Outcome]) -> str:
    """The Markdown tables: statistics overall, per source and per set; the worst points."""
    outcomes = [o for o in every if not math.isnan(o.ratio)]
    left = Counter(o.why for o in every if math.isnan(o.ratio))
    lines = [
        "| points | n | no plan | median \\|r − 1\\| | p90 \\|r − 1\\| | median r − 1"
        " | planned: median \\|r − 1\\| | planned: p90 | unsafe plans | worst excess |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        _summary_row("all", summarise(outcomes)),
    ]
    for title, key in (
        ("source", lambda o: o.curve.row.m.source),
        ("set", lambda o: o.curve.engine_set),
        ("shape", lambda o: deployment_kind(o.curve.row)),
    ):
        groups: dict[str, list[Outcome]] = defaultdict(list)
        for o in outcomes:
            groups[key(o)].append(o)
        lines += [_summary_row(f"{title}: {g}", summarise(v)) for g, v in sorted(groups.items())]
    ranked = sorted(outcomes, key=_badness, reverse=True)
    planned = [o for o in ranked if o.planned is not None][:WORST_SHOWN]
    unplanned = [o for o in ranked if o.planned is None][:NO_PLAN_SHOWN]
    for title, shown in (
        ("points planned furthest from the measurement (the factor either way)", planned),
        ("points without a plan that the model misses by the most", unplanned),
    ):
        if not shown:
            continue
        lines += [
            "",
            f"The {len(shown)} {title}:",
            "",
            "| model | GPU | engine | precision | split | ISL/OSL | C | planned C | r |",
            "|---|---|---|---|---|---|---:|---:|---:|",
        ]
        for o in shown:
            at = "–" if o.planned is None else f"{o.planned.concurrency:.3g}"
            ratio = f"no plan: {o.why}" if math.isinf(o.ratio) else f"{o.ratio:.2f}"
            cells = (*o.curve.label, f"{o.point.concurrency:g}", at, ratio)
            lines.append("| " + " | ".join(cells) + " |")
    if left:
        why = "; ".join(f"{w} ({n})" for w, n in sorted(left.items()))
        lines += ["", f"Left out, a split the model does not run: {why}."]
    return "\n".join(lines)


SCRIPT = "python benchmarks/plan_count.py"


def page(text: str, options: Sequence[str] = ("--write", "docs/plan_count.md")) -> str:
    """The page ``--write`` writes: the tables with what they are and the command that made
    them (``options``: its arguments)."""
    command = " ".join([SCRIPT, *options])
    return "\n".join(
        [
            f"<!-- Generated by `{command}`. Do not edit by hand: regenerate it. -->",
            "",
            "# GPUs planned against GPUs measured",
            "",
            f"Generated by `{command}` (seconds). Each published closed-loop point of"
            " `data/calibration` (aggregated instances of `nvidia_dli_nim` and"
            " `aic_silicon_sample`: C clients, measured mean TPOT and TTFT) is sized like for"
            " like by the closed-loop search of `infersize plan`: the same split, precision and"
            " efficiency set, limits ITL = the measured TPOT and TTFT = the measured TTFT."
            " r = GPUs planned / GPUs the measurement implies for one demand = measured"
            " requests/s per instance ÷ planned requests/s per instance: above 1 the plan buys"
            " more GPUs than the measurement shows are enough; no plan (even one client misses a"
            " limit in the model) counts as an infinite r, and *planned* columns leave it out.",
            "",
            "A plan is unsafe when the measured curve of its point (the same sweep, linear in"
            f" log C between its points) is above a limit by more than {UNSAFE_MARGIN:.0%} at"
            " the planned load; *worst excess* is the largest such excess; a curve of one point"
            " judges no plan above it. Repeated runs of one concurrency are merged (medians);"
            " `benchmarks/plan_count.py` documents the rest.",
            "",
            text,
            "",
        ]
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sources = [s for _, names in FILES for s in names]
    parser.add_argument("--only", choices=sources, action="append", metavar="SOURCE")
    parser.add_argument("--limit", type=_positive, metavar="N", help="at most N points")
    parser.add_argument("--write", type=Path, metavar="FILE", help="write the page to FILE")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    catalog = load_catalog()
    chooser = estimator_chooser(catalog)
    chosen = subsample(curves(catalog, chooser, args.only), args.limit)
    outcomes: list[Outcome] = []
    for curve in chosen:
        outcomes += evaluate(estimator_of(chooser, curve.row), curve)
    took = time.perf_counter() - t0
    print(f"{len(chosen)} curves, {len(outcomes)} points: {took:.0f} s", file=sys.stderr)
    text = table(outcomes)
    print(text)
    if args.write:
        try:
            args.write.write_text(page(text, argv), encoding="utf-8")
        except OSError as err:
            print(f"{args.write}: cannot be written ({err.strerror or err})", file=sys.stderr)
            return 1
    return 0


def _positive(text: str) -> int:
    """--limit: a whole number of points, at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1 (got {text!r})")
    return int(text)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
