"""A trace cut into windows of time: each window's requests, rate, burstiness and lengths.

Traffic drifts over a day and comes in bursts; a trace's one mean rate hides both. The trace
is cut into windows of ``window_s`` seconds (:data:`DEFAULT_WINDOW_S`) from its first
arrival; window k holds the requests arriving in [first + k·window_s, first + (k+1)·window_s).
The last window ends at the last arrival; one shorter than half a window is merged into the
window before it (its few requests over a short time would state a rate nobody sees), so the
last window is between 0.5 and 1.5 windows long. Per window:

- ``rate_rps`` = requests / its length (s), times the trace's scale (``--trace-scale``);
- ``gap_cv``: the coefficient of variation of the gaps between consecutive arrivals that both
  fall in the window (None with fewer than two such gaps; a gap across a boundary is in
  neither window, except into a merged last window);
- the mean and largest prompt and answer lengths (tokens);
- once the trace's figures are known, the cv the window is sized at (``cv``; ``cv_capped``
  where its own is above the model's limit: :func:`inferencesize.trace_traffic.sized_cv`).

Gathered in one pass over the requests in arrival order, block by block (:class:`Windows`),
in memory that grows with the number of windows, never with the requests (a week at 300 s is
2,016 windows). Pure: no file is read here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from inferencesize.burstiness import BURST_SCALE_S, count_idc

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Length of a window (s): five minutes, as autoscalers and dashboards look at load.
DEFAULT_WINDOW_S = 300.0
#: Most windows a trace is cut into (a year of 5-minute windows is 105,120): the per-window
#: figures are held, so their number is bounded, not the trace's length.
MAX_WINDOWS = 131_072
#: A last window shorter than this share of a window is merged into the one before it.
MERGE_SHARE = 0.5


@dataclass(frozen=True)
class Window:
    """One window of a trace (SI units: seconds, requests/s, tokens)."""

    start_s: float  # from the trace's first arrival
    end_s: float
    requests: int
    rate_rps: float
    gap_cv: float | None
    isl_mean: float
    osl_mean: float
    isl_max: int
    osl_max: int
    #: Index of dispersion of its requests' counts over BURST_SCALE_S spans, and the mean
    #: count of such a span (:mod:`inferencesize.burstiness`; None: too few to say).
    count_idc: float | None = None
    burst_mean_count: float = 0.0
    #: The cv it is sized at, and whether its own was above the model's limit (None: not yet).
    cv: float | None = None
    cv_capped: bool = False

    def sized(self, cv: float, capped: bool) -> Window:
        """This window sized at gaps of coefficient of variation ``cv``."""
        return replace(self, cv=cv, cv_capped=capped)


@dataclass
class Windows:
    """Per-window sums gathered from requests in arrival order (:meth:`add`), then
    :meth:`result`. Arrays indexed by window, grown as windows appear."""

    window_s: float = DEFAULT_WINDOW_S
    first_s: float | None = None
    last_s: float = 0.0
    count: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    isl_sum: FloatArray = field(default_factory=lambda: np.zeros(0))
    osl_sum: FloatArray = field(default_factory=lambda: np.zeros(0))
    isl_max: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    osl_max: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    gaps: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    gap_sum: FloatArray = field(default_factory=lambda: np.zeros(0))
    gap_sq: FloatArray = field(default_factory=lambda: np.zeros(0))
    #: The gap into each window's first request from the request before it (0: none).
    lead_gap: FloatArray = field(default_factory=lambda: np.zeros(0))
    #: Sum of the squared request counts of the BURST_SCALE_S spans that closed in each
    #: window, and the span still open (its index and count so far; -1: none).
    burst_sq: FloatArray = field(default_factory=lambda: np.zeros(0))
    open_span: int = -1
    open_count: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.window_s) and self.window_s > 0):
            raise ValueError(f"a window must be a positive number of seconds ({self.window_s})")

    def _grow(self, size: int) -> None:
        have = len(self.count)
        if size <= have:
            return
        extra = max(size - have, have)  # doubling: amortised O(1) per window
        for name in ("count", "isl_sum", "osl_sum", "isl_max", "osl_max", "gaps"):
            old = getattr(self, name)
            setattr(self, name, np.concatenate([old, np.zeros(extra, dtype=old.dtype)]))
        for name in ("gap_sum", "gap_sq", "lead_gap", "burst_sq"):
            setattr(self, name, np.concatenate([getattr(self, name), np.zeros(extra)]))

    def add(self, arrival_s: FloatArray, isl: IntArray, osl: IntArray) -> None:
        """The next requests, in arrival order (the first at or after the last one added)."""
        if len(arrival_s) == 0:
            return
        first = self.first_s is None
        if self.first_s is None:
            self.first_s = float(arrival_s[0])
        k = ((arrival_s - self.first_s) // self.window_s).astype(np.int64)
        size = int(k[-1]) + 1
        if size > MAX_WINDOWS:
            raise ValueError(
                f"it spans more than {MAX_WINDOWS:,} windows of {self.window_s:g} s: give longer"
                " windows (--window-s, window_s)"
            )
        self._grow(size)
        # k is non-decreasing (arrival order): a segment per window, reduced at once
        starts = np.flatnonzero(np.diff(k, prepend=-1))
        at = k[starts]
        self.count[at] += np.diff(np.append(starts, len(k)))
        self.isl_sum[at] += np.add.reduceat(isl.astype(np.float64), starts)
        self.osl_sum[at] += np.add.reduceat(osl.astype(np.float64), starts)
        self.isl_max[at] = np.maximum(self.isl_max[at], np.maximum.reduceat(isl, starts))
        self.osl_max[at] = np.maximum(self.osl_max[at], np.maximum.reduceat(osl, starts))
        if first:
            gaps, same, to = np.diff(arrival_s), k[1:] == k[:-1], k[1:]
        else:
            before = int((self.last_s - self.first_s) // self.window_s)
            gaps = np.diff(arrival_s, prepend=self.last_s)
            same = k == np.concatenate([[before], k[:-1]])
            to = k
        self.last_s = float(arrival_s[-1])
        self.lead_gap[to[~same]] = gaps[~same]
        size_now = len(self.gaps)
        self.gaps += np.bincount(to[same], minlength=size_now)[:size_now]
        self.gap_sum += np.bincount(to[same], gaps[same], minlength=size_now)[:size_now]
        self.gap_sq += np.bincount(to[same], gaps[same] ** 2, minlength=size_now)[:size_now]
        self._count_spans(arrival_s)

    def _window_of_span(self, span: Any) -> Any:
        return (np.asarray(span) * BURST_SCALE_S // self.window_s).astype(np.int64)

    def _count_spans(self, arrival_s: FloatArray) -> None:
        """The requests per BURST_SCALE_S span (from the first arrival): every span but the
        last one seen is closed, its squared count added to its window's."""
        assert self.first_s is not None
        b = ((arrival_s - self.first_s) // BURST_SCALE_S).astype(np.int64)
        starts = np.flatnonzero(np.diff(b, prepend=-1))
        spans, counts = b[starts], np.diff(np.append(starts, len(b)))
        if spans[0] == self.open_span:
            counts[0] += self.open_count
        elif self.open_span >= 0:
            self.burst_sq[self._window_of_span(self.open_span)] += float(self.open_count) ** 2
        closed = self._window_of_span(spans[:-1])
        np.add.at(self.burst_sq, closed, counts[:-1].astype(np.float64) ** 2)
        self.open_span, self.open_count = int(spans[-1]), int(counts[-1])

    def result(self, scale: float = 1.0) -> tuple[Window, ...]:
        """The windows (module docstring), their rates times ``scale``."""
        if self.first_s is None:
            return ()
        n = int((self.last_s - self.first_s) // self.window_s) + 1
        count, gaps = self.count[:n].copy(), self.gaps[:n].copy()
        sums = [a[:n].copy() for a in (self.isl_sum, self.osl_sum, self.gap_sum, self.gap_sq)]
        burst = self.burst_sq[:n].copy()
        if self.open_span >= 0:  # the span still open closes with the trace
            burst[min(int(self._window_of_span(self.open_span)), n - 1)] += (
                float(self.open_count) ** 2
            )
        isl_max, osl_max = self.isl_max[:n].copy(), self.osl_max[:n].copy()
        span = self.last_s - self.first_s
        starts = [k * self.window_s for k in range(n)]
        ends = [*starts[1:], span]
        if n > 1 and ends[-1] - starts[-1] < MERGE_SHARE * self.window_s:
            # the last window merged into the one before, with the gap between them
            count[-2] += count[-1]
            for a in sums:
                a[-2] += a[-1]
            gaps[-2] += gaps[-1]
            if count[-1]:
                lead = self.lead_gap[n - 1]
                sums[2][-2] += lead
                sums[3][-2] += lead * lead
                gaps[-2] += 1
            burst[-2] += burst[-1]
            isl_max[-2] = max(isl_max[-2], isl_max[-1])
            osl_max[-2] = max(osl_max[-2], osl_max[-1])
            n -= 1
            ends = [*starts[1:n], span]
            starts = starts[:n]
        out = []
        for j in range(n):
            length = ends[j] - starts[j]
            c = int(count[j])
            rate = c / length * scale if length > 0 else 0.0
            cv = None
            if gaps[j] >= 2:
                mean = sums[2][j] / gaps[j]
                var = max(sums[3][j] / gaps[j] - mean * mean, 0.0)
                cv = math.sqrt(var) / mean if mean > 0 else None
            spans = max(round(length / BURST_SCALE_S), 1)
            idc = count_idc(float(burst[j]), c, spans)
            out.append(
                Window(
                    start_s=starts[j],
                    end_s=ends[j],
                    requests=c,
                    rate_rps=rate,
                    gap_cv=cv,
                    isl_mean=sums[0][j] / c if c else 0.0,
                    osl_mean=sums[1][j] / c if c else 0.0,
                    isl_max=int(isl_max[j]),
                    osl_max=int(osl_max[j]),
                    count_idc=idc,
                    burst_mean_count=c / spans,
                )
            )
        return tuple(out)


def parse_slice(text: str) -> tuple[float, float]:
    """``A:B`` (seconds on the trace's clock; either side may be left out) as (A, B);
    ValueError with the reason otherwise."""
    parts = text.split(":")
    if len(parts) != 2:
        raise ValueError(f"expected START:END in seconds, such as 600:1800 (got {text!r})")
    try:
        low = float(parts[0]) if parts[0].strip() else 0.0
        high = float(parts[1]) if parts[1].strip() else math.inf
    except ValueError:
        raise ValueError(
            f"expected START:END in seconds, such as 600:1800 (got {text!r})"
        ) from None
    if not (math.isfinite(low) and low >= 0) or math.isnan(high) or not high > low:
        raise ValueError(f"expected 0 <= START < END (got {text!r})")
    return low, high
