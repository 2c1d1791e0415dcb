"""Repeat runs in a measurements file: how far two measurements of one point differ.

A point measured more than once (the same source, model, GPU, precision, split, lengths,
concurrency, metric and engine; only the value, notes and row differ) shows the data's own
run-to-run scatter. Each later run is compared with the first, |later / first − 1|: the error
of "predicting" one run with another. No model can be closer to every run than the runs are
to each other, so this is a floor under the prediction error at those points.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inferencesize.io_measurements import Measurement


@dataclass(frozen=True)
class RepeatSpread:
    """Run-to-run differences of one metric over the points measured more than once."""

    metric: str
    points: int  # points with two or more runs
    pairs: int  # (first run, later run) pairs
    median: float  # of |later / first − 1|
    p90: float
    max: float


def repeat_spreads(rows: Sequence[Measurement]) -> list[RepeatSpread]:
    """Per metric (sorted), the spread of the points measured more than once; metrics with
    no repeated point are left out."""
    runs: dict[tuple[object, ...], list[float]] = defaultdict(list)
    for m in rows:
        if m.value:
            runs[(m.point, m.metric)].append(m.value)
    diffs: dict[str, list[float]] = defaultdict(list)
    points: dict[str, int] = defaultdict(int)
    for key, values in runs.items():
        if len(values) < 2:
            continue
        metric = str(key[1])
        points[metric] += 1
        diffs[metric].extend(abs(v / values[0] - 1.0) for v in values[1:])
    out = []
    for metric in sorted(diffs):
        d = np.array(diffs[metric])
        out.append(
            RepeatSpread(
                metric,
                points[metric],
                int(d.size),
                float(np.median(d)),
                float(np.percentile(d, 90)),
                float(d.max()),
            )
        )
    return out
