"""Traffic read off a request trace: the prompt and answer lengths a plan sizes for, the rate,
and the burstiness of the arrivals (the coefficient of variation of the gaps between them).

The open-loop model takes fixed lengths and gamma-renewal arrivals: a trace enters it as its
mean ISL and OSL, its busiest window's rate and that window's own gaps' cv
(:func:`sized_cv`). The whole trace's cv is reported but not sized for: it mixes the drift
of the rate from window to window with the burstiness within them.

Each window is sized at its own cv (:func:`sized_cv`): at least :data:`MIN_CV`, rounded up
onto a grid of relative step :data:`CV_STEP` (the sizing is searched once per grid value,
so a week of windows costs a few searches, and the rounding only ever adds burstiness), and
at most the model's limit (``max_cv``: 10). A window burstier than that limit is sized at it
and marked ``cv_capped``: its gaps hold idle spells of minutes between dense bursts (the
Azure code trace's 5-minute windows measure cv up to 20; at 1-minute windows none is above
9), which no gamma-renewal cv describes; the output says so, shorter windows (``--window-s``)
measure the bursts apart from the spells, and ``--verify`` replays them as they came. ``plan --verify`` replays the trace itself
(every request's lengths, the arrivals' own pattern) with its times scaled to the rate sized
for (:meth:`TraceTraffic.at_rate`); a trace of more than :data:`REPLAY_MAX_REQUESTS` requests
replays its first that many, in arrival order (:attr:`TraceTraffic.replayed`).

A trace of any length gives its figures in one pass over its requests in arrival order, in
flat memory (:class:`TraceFigures`: counts, sums, and the gaps' mean and spread merged block
by block, Chan et al.'s pairwise update). Pure: the caller reads the file
(:func:`inferencesize.io_trace.read_trace_traffic`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from inferencesize.burstiness import matched_cv, reaches
from inferencesize.length_mix import LengthMix, LengthSums, length_mix
from inferencesize.simulate.arrivals import FloatArray, IntArray, Workload
from inferencesize.trace_conversations import Reuse
from inferencesize.trace_windows import DEFAULT_WINDOW_S, Window

#: Fewest requests a trace needs: two gaps give a rate and a spread.
MIN_REQUESTS = 3
#: The least burstiness sized for: a trace of (nearly) evenly spaced requests is sized as
#: gaps with this cv (the open-loop model needs cv > 0).
MIN_CV = 0.05
#: Relative step of the grid a window's cv is rounded up onto (MIN_CV · CV_STEP^k).
CV_STEP = 1.1
#: Most requests ``plan --verify`` replays: a longer trace replays its first this many (in
#: arrival order), so the simulation's memory and time stay bounded.
REPLAY_MAX_REQUESTS = 200_000


@dataclass(frozen=True)
class TraceTraffic:
    """What a trace says about the traffic (SI units: seconds, requests/s, tokens)."""

    source: str
    requests: int
    span_s: float
    mean_rps: float
    #: The whole trace's gaps' coefficient of variation as measured, and the cv the plan is
    #: sized for: its busiest window's (:func:`sized_cv`; the whole trace's before it is cut).
    gap_cv: float
    cv: float
    isl_mean: float
    osl_mean: float
    workload: Workload
    #: The file's layout (``io_trace_formats``), and its rows skipped (0 tokens) with a note.
    layout: str = ""
    skipped: int = 0
    skipped_note: str = ""
    #: The trace cut into windows (:mod:`inferencesize.trace_windows`), their rates scaled.
    windows: tuple[Window, ...] = ()
    window_s: float = DEFAULT_WINDOW_S
    #: Rates times this (``--trace-scale``: growth planning); the slice read (``--trace-window``).
    scale: float = 1.0
    slice_s: tuple[float, float] | None = None
    #: The most burstiness sized for (:func:`sized_cv`).
    max_cv: float = math.inf
    #: Prefix reuse across conversations' turns, where the trace names conversations.
    reuse: Reuse | None = None

    @property
    def cv_capped(self) -> list[int]:
        """Indexes of the windows burstier than :attr:`max_cv` (sized at it)."""
        return [k for k, w in enumerate(self.windows) if w.cv_capped]

    #: The binned joint ISL/OSL distribution (:mod:`inferencesize.length_mix`) of the whole
    #: trace (one longer than :data:`REPLAY_MAX_REQUESTS`: its cells from a uniform sample of
    #: that many, its means from every request); None only for a hand-built value.
    lengths: LengthMix | None = None

    @property
    def busiest_rps(self) -> float:
        """The mean rate a plan sizes for: its busiest window's (the trace's own mean when it
        is one window)."""
        if len(self.windows) < 2:
            return self.mean_rps
        return max(w.rate_rps for w in self.windows)

    def read_as(self, layout: str, skipped: int, skipped_note: str) -> TraceTraffic:
        """These figures, with what reading the file found besides its requests."""
        return replace(self, layout=layout, skipped=skipped, skipped_note=skipped_note)

    def with_reuse(self, reuse: Reuse) -> TraceTraffic:
        """These figures with the reuse of the conversations' earlier turns."""
        return replace(self, reuse=reuse)

    def cut(
        self,
        windows: tuple[Window, ...],
        window_s: float,
        scale: float,
        slice_s: tuple[float, float] | None,
    ) -> TraceTraffic:
        """These figures with their windows (each with the cv it is sized at,
        :func:`sized_cv`), the mean rate times ``scale``. The plan's cv is the busiest
        window's (the whole trace's when it is one window, or too sparse to measure), and so
        is that of a window with too few gaps to measure its own."""
        cv = self.cv
        if windows:
            cv = window_cv(max(windows, key=lambda w: w.rate_rps), cv, self.max_cv)[0]
        windows = tuple(w.sized(*window_cv(w, cv, self.max_cv)) for w in windows)
        return replace(
            self,
            cv=cv,
            windows=windows,
            window_s=window_s,
            scale=scale,
            slice_s=slice_s,
            mean_rps=self.mean_rps * scale,
        )

    def at_rate(self, rate_rps: float) -> Workload:
        """The trace's requests with their arrival times scaled so they come at ``rate_rps``
        on average (the first at time 0): the same pattern, faster or slower (the mean rate
        includes ``--trace-scale``). A trace longer
        than :data:`REPLAY_MAX_REQUESTS`: its first requests (:attr:`replayed`), on the
        whole trace's scale."""
        assert self.workload.arrival_s is not None
        t = self.workload.arrival_s
        scale = self.mean_rps / rate_rps
        return Workload(self.workload.isl, self.workload.osl, (t - t[0]) * scale)

    @property
    def replayed(self) -> int:
        """Requests ``plan --verify`` replays: all of them, or the first
        :data:`REPLAY_MAX_REQUESTS`."""
        return self.workload.n

    def replay_note(self) -> str:
        """What a replay covers, for a trace replayed in part ("" when whole)."""
        if self.replayed >= self.requests:
            return ""
        t = self.workload.arrival_s
        assert t is not None
        return (
            f"its first {self.replayed:,} of {self.requests:,} requests:"
            f" {float(t[-1] - t[0]):,.6g} of its {self.span_s:,.6g} s"
        )


@dataclass
class TraceFigures:
    """What a trace gives, gathered in one pass over its requests in arrival order, block by
    block (:meth:`add`), in memory that does not grow with them: the count, the first and
    last arrival, the lengths' sums, the gaps' count, mean and sum of squared deviations
    (merged as Chan, Golub and LeVeque's pairwise update: exact to rounding whatever the
    blocks), and a uniform sample of :data:`REPLAY_MAX_REQUESTS` requests' lengths over the
    whole trace (reservoir sampling, Vitter's algorithm R, seeded: the same file gives the
    same sample) for the length distribution's cells."""

    requests: int = 0
    first_s: float = 0.0
    last_s: float = 0.0
    sums: LengthSums = field(default_factory=lambda: LengthSums(0, 0, 0, 0, 0))
    gaps: int = 0
    gap_mean_s: float = 0.0
    gap_m2: float = 0.0
    sample_size: int = REPLAY_MAX_REQUESTS
    sample_isl: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    sample_osl: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def _sample(self, isl: IntArray, osl: IntArray) -> None:
        """Algorithm R over the block: the request of index t (from 0) enters a full sample
        of k with probability k / (t + 1), in the place of a uniformly chosen one."""
        k, seen = self.sample_size, self.requests
        fill = max(0, min(len(isl), k - seen))
        if fill:
            self.sample_isl = np.concatenate([self.sample_isl, isl[:fill]])
            self.sample_osl = np.concatenate([self.sample_osl, osl[:fill]])
        if fill == len(isl):
            return
        index = seen + np.arange(fill, len(isl))
        slot = self._rng.integers(0, index + 1)
        enter = slot < k
        self.sample_isl[slot[enter]] = isl[fill:][enter]
        self.sample_osl[slot[enter]] = osl[fill:][enter]

    def lengths(self) -> LengthMix:
        """The length distribution of every request added: its cells from the sample, its
        means and occupancy-weighted figures from the sums of all."""
        return length_mix(self.sample_isl, self.sample_osl, self.sums)

    def add(self, arrival_s: FloatArray, isl: IntArray, osl: IntArray) -> None:
        """The next requests, in arrival order: the first at or after the last one added."""
        if len(arrival_s) == 0:
            return
        if self.requests == 0:
            self.first_s = float(arrival_s[0])
            gaps = np.diff(arrival_s)
        else:
            gaps = np.diff(arrival_s, prepend=self.last_s)
        self.last_s = float(arrival_s[-1])
        self._sample(isl, osl)
        self.requests += len(arrival_s)
        self.sums = self.sums + LengthSums.of(isl, osl)
        if len(gaps) == 0:
            return
        count = self.gaps + len(gaps)
        mean = float(gaps.mean())
        delta = mean - self.gap_mean_s
        self.gap_m2 += (
            float(np.sum((gaps - mean) ** 2)) + delta * delta * self.gaps * len(gaps) / count
        )
        self.gap_mean_s += delta * len(gaps) / count
        self.gaps = count


def trace_traffic(workload: Workload, source: str, max_cv: float) -> TraceTraffic:
    """The traffic of ``workload`` (a whole trace in memory, sorted by arrival time), sized
    at most at ``max_cv`` (:func:`sized_cv`); ValueError with the reason when it has too few
    requests or no time between its first and last arrival."""
    t = workload.arrival_s
    got = 0 if t is None else len(t)
    _enough(got)
    assert t is not None
    span = float(t[-1] - t[0])
    _spread(span)
    gaps = np.diff(t)
    mean_gap = float(gaps.mean())
    gap_cv = float(gaps.std()) / mean_gap
    return TraceTraffic(
        source=source,
        requests=len(t),
        span_s=span,
        mean_rps=1.0 / mean_gap,
        gap_cv=gap_cv,
        cv=sized_cv(gap_cv, gap_cv, max_cv)[0],
        max_cv=max_cv,
        isl_mean=float(np.mean(workload.isl)),
        osl_mean=float(np.mean(workload.osl)),
        workload=workload,
        lengths=length_mix(workload.isl, workload.osl),
    )


def streamed_traffic(
    figures: TraceFigures, replay: Workload, source: str, max_cv: float
) -> TraceTraffic:
    """The traffic of a trace from its :class:`TraceFigures` (the same figures as
    :func:`trace_traffic` of the whole trace, to rounding), ``replay`` its first requests in
    arrival order; ValueError as :func:`trace_traffic`."""
    n = figures.requests
    _enough(n)
    span = figures.last_s - figures.first_s
    _spread(span)
    mean_gap = span / (n - 1)
    gap_cv = math.sqrt(max(figures.gap_m2, 0.0) / figures.gaps) / mean_gap
    return TraceTraffic(
        source=source,
        requests=n,
        span_s=span,
        mean_rps=1.0 / mean_gap,
        gap_cv=gap_cv,
        cv=sized_cv(gap_cv, gap_cv, max_cv)[0],
        max_cv=max_cv,
        isl_mean=figures.sums.isl / n,
        osl_mean=figures.sums.osl / n,
        workload=replay,
        lengths=figures.lengths(),
    )


def _enough(requests: int) -> None:
    if requests < MIN_REQUESTS:
        raise ValueError(
            f"a trace needs at least {MIN_REQUESTS} requests to give a rate and its"
            f" burstiness (got {requests})"
        )


def _spread(span_s: float) -> None:
    if not span_s > 0:
        raise ValueError("every request arrives at the same time: the trace gives no rate")


def cv_grid(max_cv: float) -> tuple[float, ...]:
    """The cvs a window is sized at: MIN_CV · CV_STEP^k below ``max_cv``, then ``max_cv``."""
    top = math.floor(math.log(max_cv / MIN_CV) / math.log(CV_STEP) + 1e-9)
    grid = [MIN_CV * CV_STEP**k for k in range(top + 1)]
    return (*(g for g in grid if g < max_cv), max_cv)


def window_cv(w: Window, fallback: float, max_cv: float) -> tuple[float, bool]:
    """The cv window ``w`` is sized at, and whether it was capped (module docstring): the
    grid's least cv whose gamma-renewal arrivals vary as much as its requests' counts over
    :data:`~inferencesize.burstiness.BURST_SCALE_S` (:func:`~inferencesize.burstiness.matched_cv`);
    where it has too few requests for that, its gaps' cv (:func:`sized_cv`)."""
    if w.count_idc is None:
        return sized_cv(w.gap_cv, fallback, max_cv)
    grid = cv_grid(max_cv)
    cv = matched_cv(w.burst_mean_count, w.count_idc, grid)
    return cv, cv == grid[-1] and not reaches(w.burst_mean_count, cv, w.count_idc)


def sized_cv(gap_cv: float | None, fallback: float, max_cv: float) -> tuple[float, bool]:
    """The cv a window of measured gap cv ``gap_cv`` is sized at, and whether it was capped
    (module docstring): ``fallback`` where it has too few gaps to measure one (None), at
    least :data:`MIN_CV`, rounded up to MIN_CV · CV_STEP^k, at most ``max_cv``."""
    cv = max(fallback if gap_cv is None else gap_cv, MIN_CV)
    if cv > max_cv:
        return max_cv, True
    k = math.ceil(math.log(cv / MIN_CV) / math.log(CV_STEP) - 1e-9)
    return min(MIN_CV * CV_STEP ** max(k, 0), max_cv), False
