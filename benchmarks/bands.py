"""Error bands from held-out residuals, and a check that they are honest.

Usage:
    python benchmarks/bands.py                  # print the bands and their held-out coverage
    python benchmarks/bands.py --write          # also (re)write data/calibration/bands.json
    python benchmarks/bands.py --only gpu       # one leave-out scheme (gpu, engine, model)
    python benchmarks/bands.py --cache FILE     # keep the residuals in FILE (reused when there)

Residuals: every calibration row of ITL/TPOT (``itl_ms_avg``, ``tpot_ms_avg``) or mean TTFT
(``ttft_ms_avg``) is predicted by ``benchmarks/heldout.py``'s refits without its GPU, without
its engine and without its model (three predictions of a row where all three schemes hold it
out). Each prediction is labelled as the product labels one (``inferencesize.bands``): the
trust of its GPU × precision in the refit set (calibrated, same-architecture, datasheet) and
whether the refit's rows measured its model family. The band of a label is the 10th–90th
percentile of measured / predicted over its rows; every trust level and every row pooled give
the fallbacks.

Honesty: the bands are themselves cross-validated by held-out group (one GPU, one engine or
one model of one scheme is a fold): bands computed without the fold's rows (in any scheme)
predict the fold; the share of its rows inside their band is the coverage, to be 75–85 %.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from heldout import FILES, MAX_ROWS, SCHEMES, held_out_fits, predict_with, rows_and_sets

from inferencesize.bands import (
    BAND_SHARE,
    EVERY_ROW,
    METRICS,
    MIN_ROWS,
    Band,
    fit_band,
    label,
    model_family,
)
from inferencesize.catalog import load_catalog
from inferencesize.estimate import Estimator
from inferencesize.validation import Mapped

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "data" / "calibration" / "bands.json"
#: Calibration metrics -> band metric (benchmark clients' TPOT is the model's mean ITL).
METRIC_OF = {"itl_ms_avg": "itl", "tpot_ms_avg": "itl", "ttft_ms_avg": "ttft"}
#: The leave-out schemes whose residuals make the bands (``heldout.SCHEMES``).
BAND_SCHEMES = ("gpu", "engine", "model")
#: Honest 80 % bands hold this share of left-out measurements.
COVERAGE_TARGET = (0.75, 0.85)


@dataclass(frozen=True)
class Residual:
    """One held-out prediction: its fold (scheme, group), row, metric, labels and ratio."""

    scheme: str
    group: str
    row: int  # the row's index in ``rows_and_sets``
    metric: str
    trust: str
    family_measured: bool
    ratio: float  # measured / predicted

    @property
    def label(self) -> str:
        return label(self.trust, self.family_measured)


def residuals(schemes: Sequence[str]) -> list[Residual]:
    catalog = load_catalog()
    rows, set_of = rows_and_sets(catalog)
    index = {id(r): i for i, r in enumerate(rows)}
    out: list[Residual] = []
    for scheme in schemes:
        t0 = time.perf_counter()
        group = SCHEMES[scheme][1]
        for f in held_out_fits(catalog, rows, set_of, group, lambda r: r.m.metric in METRIC_OF):
            est = Estimator(f.efficiency)
            families = {model_family(r.candidate.model) for r in f.train}
            for p in predict_with(f.efficiency, f.held):
                r: Mapped = p.mapped
                if not p.predicted > 0:
                    continue
                trust = est.resolve(r.candidate, (r.m.isl or 0) + (r.m.osl or 0)).trust
                fam = model_family(r.candidate.model) in families
                out.append(
                    Residual(
                        scheme,
                        f.group,
                        index[id(r)],
                        METRIC_OF[r.m.metric],
                        trust,
                        fam,
                        r.m.value / p.predicted,
                    )
                )
        print(f"{scheme}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return out


def measured_families() -> dict[str, list[str]]:
    """Per efficiency set, the model families of the rows it is fitted to."""
    catalog = load_catalog()
    rows, set_of = rows_and_sets(catalog)
    found: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        found[set_of[id(r)]].add(model_family(r.candidate.model))
    return {k: sorted(v) for k, v in sorted(found.items())}


#: The lower percentiles tried for a band, narrowest first (the upper: 100 − each).
TAILS = (10.0, 8.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.5, 0.0)


def names(x: Residual) -> tuple[tuple[str, str], ...]:
    """The bands a residual belongs to: its label's, its trust level's, every row's."""
    return tuple((x.metric, n) for n in (x.label, x.trust, EVERY_ROW))


def _members(res: Sequence[Residual]) -> dict[tuple[str, str], np.ndarray]:
    """The indices of the residuals of each band (``names``)."""
    found: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, x in enumerate(res):
        for key in names(x):
            found[key].append(i)
    return {k: np.array(v) for k, v in sorted(found.items())}


def _judge(x: Residual, sizes: dict[tuple[str, str], int]) -> tuple[str, str] | None:
    """The band the product gives ``x`` (``BandTable.band``: the first with enough rows)."""
    return next((k for k in names(x) if sizes.get(k, 0) >= MIN_ROWS), None)


def _widest_enough(inside: np.ndarray) -> int:
    """The narrowest tail (index in TAILS) whose coverage ``inside[:, t]`` reaches the band's
    share; the widest when none does."""
    share = inside.mean(axis=0) if inside.size else np.zeros(len(TAILS))
    ok = np.flatnonzero(share >= BAND_SHARE)
    return int(ok[0]) if ok.size else len(TAILS) - 1


@dataclass(frozen=True)
class CrossValidation:
    """Bands checked by held-out group (module docstring): the tail each band takes, the
    coverage of every band's own members at that tail (``member``: inside, rows) and the
    nested coverage of the product's lookup per label (``held``: inside, rows)."""

    tails: dict[tuple[str, str], float]
    member: dict[tuple[str, str], tuple[int, int]]
    held: dict[tuple[str, str], tuple[int, int]]


def cross_validated(res: Sequence[Residual]) -> CrossValidation:
    r = np.array([x.ratio for x in res])
    fold_of = {k: i for i, k in enumerate(sorted({(x.scheme, x.group) for x in res}))}
    fold = np.array([fold_of[(x.scheme, x.group)] for x in res])
    rows = np.array([x.row for x in res])
    members = _members(res)
    lows_highs = [*TAILS, *(100 - t for t in TAILS)]
    # inside[key][i, t]: member i of the key's band inside it at tail t, the band fitted
    # without the rows of i's fold (in any scheme)
    inside: dict[tuple[str, str], np.ndarray] = {
        k: np.zeros((len(v), len(TAILS)), bool) for k, v in members.items()
    }
    judged: list[tuple[str, str] | None] = [None] * len(res)
    for k in range(len(fold_of)):
        test = fold == k
        train = ~np.isin(rows, rows[test])
        sizes = {key: int(train[idx].sum()) for key, idx in members.items()}
        for key, idx in members.items():
            if sizes[key] < MIN_ROWS:
                continue
            q = np.percentile(r[idx[train[idx]]], lows_highs)
            lo, hi = q[: len(TAILS)], q[len(TAILS) :]
            mine = np.flatnonzero(test[idx])
            x = r[idx[mine]][:, None]
            inside[key][mine] = (x >= lo) & (x <= hi)
        for i in np.flatnonzero(test):
            judged[i] = _judge(res[i], sizes)
    tails = {key: TAILS[_widest_enough(v)] for key, v in inside.items()}
    member = {key: (int(v[:, TAILS.index(tails[key])].sum()), len(v)) for key, v in inside.items()}
    # nested: the product's band for each residual, at the tail chosen without its fold
    position = {key: {int(i): j for j, i in enumerate(idx)} for key, idx in members.items()}
    held: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for k in range(len(fold_of)):
        for i in np.flatnonzero(fold == k):
            key = judged[i]
            if key is None:
                continue
            others = np.array([fold[j] != k for j in members[key]])
            t = _widest_enough(inside[key][others])
            ok = int(inside[key][position[key][int(i)], t])
            x = res[i]
            for out in ((x.metric, x.label), (x.metric, EVERY_ROW)):
                held[out][0] += ok
                held[out][1] += 1
    return CrossValidation(tails, member, {k: (v[0], v[1]) for k, v in sorted(held.items())})


def bands_of(
    res: Sequence[Residual], tails: dict[tuple[str, str], float]
) -> dict[tuple[str, str], Band]:
    """Every band with enough rows: per metric, by label, by trust level and pooled, each at
    its tail."""
    return {
        key: fit_band((res[i].ratio for i in idx), key[1], tails.get(key, TAILS[0]))
        for key, idx in _members(res).items()
        if len(idx) >= MIN_ROWS
    }


def report(bands: dict[tuple[str, str], Band], cv: CrossValidation) -> str:
    lines = [
        "| metric | label | rows | percentiles | 80 % band (measured / predicted) |"
        " held-out coverage |",
        "|---|---|---:|---|---|---:|",
    ]
    for metric in METRICS:
        for (m, name), b in bands.items():
            if m != metric:
                continue
            inside, n = cv.held.get((m, name), (0, 0))
            cov = f"{inside / n:.1%} of {n}" if n else "—"
            lines.append(
                f"| {m} | {name} | {b.rows} | {b.tail:g}–{100 - b.tail:g} |"
                f" {b.low:.2f}–{b.high:.2f} | {cov} |"
            )
    return "\n".join(lines)


def document(res: Sequence[Residual], cv: CrossValidation) -> dict[str, Any]:
    bands = bands_of(res, cv.tails)
    plain = bands_of(res, {})  # the 10th-90th percentiles before widening
    return {
        "about": "Error bands of infersize predictions (inferencesize.bands), written by"
        " benchmarks/bands.py: per metric and label, a percentile range of measured /"
        " predicted over calibration rows predicted by fits that never saw the row's GPU,"
        " engine or model (benchmarks/heldout.py's refits); the 10th to 90th percentile,"
        " widened where cross-validation by held-out group shows it holds fewer than 80 % of"
        " a new group's measurements (p10_p90: the range before widening)."
        " held_out_coverage: the share of left-out rows of the label inside their band (bands"
        " and widening chosen without their group).",
        "computed_from": {
            "files": list(FILES),
            "schemes": [SCHEMES[s][0] for s in BAND_SCHEMES],
            "metrics": METRIC_OF,
            "rows_per_refit": MAX_ROWS,
            "min_rows_per_band": MIN_ROWS,
        },
        "measured_families": measured_families(),
        "bands": [
            {
                "metric": m,
                "label": name,
                "percentiles": [b.tail, 100 - b.tail],
                "p10_p90": [round(plain[(m, name)].low, 4), round(plain[(m, name)].high, 4)],
                "low": round(b.low, 4),
                "high": round(b.high, 4),
                "rows": b.rows,
                "held_out_coverage": (
                    round(cv.held[(m, name)][0] / cv.held[(m, name)][1], 4)
                    if (m, name) in cv.held
                    else None
                ),
            }
            for (m, name), b in bands.items()
        ],
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=BAND_SCHEMES, action="append")
    parser.add_argument("--write", action="store_true", help=f"write {OUT.name}")
    parser.add_argument("--cache", type=Path, help="residuals kept here (JSON), reused")
    args = parser.parse_args(argv)
    if args.cache is not None and args.cache.exists():
        res = [Residual(**x) for x in json.loads(args.cache.read_text(encoding="utf-8"))]
    else:
        res = residuals(args.only or BAND_SCHEMES)
        if args.cache is not None:
            args.cache.write_text(json.dumps([asdict(x) for x in res]), encoding="utf-8")
    cv = cross_validated(res)
    print(report(bands_of(res, cv.tails), cv))
    bad = [
        k
        for k, (inside, n) in cv.held.items()
        if k[1] == EVERY_ROW and not COVERAGE_TARGET[0] <= inside / n <= COVERAGE_TARGET[1]
    ]
    for metric, _ in bad:
        print(f"{metric}: held-out coverage outside 75–85 %", file=sys.stderr)
    if args.write:
        OUT.write_text(json.dumps(document(res, cv), indent=1) + "\n", encoding="utf-8")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
