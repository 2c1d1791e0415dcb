"""The rate search: the highest rate one instance serves with every limit held at its
statistic, on a fixed grid of rates (``RateSearch``).

Pure: numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import cast

import numpy as np

from inferencesize.latency import Deployment
from inferencesize.openloop.point import QUANTILES, OpenLoopPoint, Quantiles, Warm, point
from inferencesize.openloop.router import Instance, instance, node_below
from inferencesize.openloop.steps import STEP_TOKENS, Steps, steps
from inferencesize.vocabulary import Metric, fraction_of, quantiles_of


def max_rate_within(
    dep: Deployment,
    isl: float,
    osl: float,
    limits: Mapping[str, tuple[str | float, float]],
    cv: float = 1.0,
    max_in_flight: int = 1,
    *,
    step_tokens: int = STEP_TOKENS,
    rel_tol: float = 1e-3,
) -> float:
    """The highest rate (requests/s) at which every ``limits`` entry holds: metric ("ttft",
    "itl", "e2e"; a ``_s`` suffix is accepted) → (statistic: "mean", a fraction or "pNN";
    limit in seconds), on a grid of relative step ``rel_tol`` below λ_max (:class:`RateSearch`);
    0 when even a vanishing rate misses."""
    search = RateSearch(
        dep, isl, osl, limits, cv, max_in_flight, step_tokens=step_tokens, rel_tol=rel_tol
    )
    return search.highest()


#: The lowest rate a search tries, as a share of λ_max: below it a request is alone.
_VANISHING = 1e-6


class RateSearch:
    """The highest rate one instance serves with every limit held at its statistic.

    The answer is defined on a fixed grid, r_j = λ_max·(1 + ``rel_tol``)^(−j) for j = 1 … J
    (r_J the first at or below 10⁻⁶·λ_max): the largest r_j whose statistics meet every limit,
    0 when even r_J misses. Every statistic grows with the rate, so the grid rates that meet
    are those at or below the answer, and a point at any rate narrows one bracket of grid
    indices: [``meets``] at a rate tells every grid rate at or below it meets, a miss that every
    one at or above it misses. The answer therefore does not depend on which points were
    evaluated, nor in what order: a planner may ask ``meets`` at the rate it needs first and
    still get the exhaustive search's answer from ``highest``, and ``start`` (the share of
    λ_max the first point is placed at; another candidate's answer is a good one) changes
    how many points it takes, never the answer.

    ``highest`` places its points by regula falsi per limit on u = ρ/(1 − ρ) (ρ = rate/λ_max):
    the queueing part of a latency grows about linearly in u (Pollaczek–Khinchine, Kingman),
    so the secant through the points nearest the limit (or the line through the two highest
    that meet, while every miss is unstable) lands near it; the first limit to bind sets the
    next point, snapped to the grid inside the bracket. A step that does not halve the bracket
    twice running is replaced by a bisection of the rate (Illinois-style safeguard), so the
    search ends in about log₂(J) points at worst and in four or five usually."""

    def __init__(
        self,
        dep: Deployment | Steps,
        isl: float,
        osl: float,
        limits: Mapping[str, tuple[str | float, float]],
        cv: float | Instance = 1.0,
        max_in_flight: int = 1,
        *,
        step_tokens: int = STEP_TOKENS,
        rel_tol: float = 1e-3,
        start: float = 0.5,
    ) -> None:
        if not 0 < rel_tol < 1:
            raise ValueError(f"rel_tol must be in (0, 1) (got {rel_tol})")
        self._st = (
            dep if isinstance(dep, Steps) else steps(dep, isl, osl, max_in_flight, step_tokens)
        )
        wanted: list[tuple[Metric, str | float, float]] = []
        tables: set[Metric] = set()
        for name, (stat, limit) in limits.items():
            metric = name.removesuffix("_s")
            if metric == "ttft" or metric == "itl" or metric == "e2e":
                if fraction_of(stat) is not None:  # only the percentiles asked for, of the
                    tables.add(cast(Metric, metric))  # metrics asked for
                wanted.append((cast(Metric, metric), stat, float(limit)))
            else:
                raise ValueError(f"unknown metric {name!r}; expected ttft, itl or e2e")
        self._wanted = wanted
        self._quantiles = quantiles_of(stat for stat, _ in limits.values())
        self._tables = frozenset(tables)
        self._instance = cv if isinstance(cv, Instance) else Instance(cv)
        self._warm: list[tuple[float, Warm]] = []  # (rate, where its fixed point ended)
        #: The points solved, by rate (percentiles of the limited metrics only).
        self.points: dict[float, OpenLoopPoint] = {}
        self._start = min(max(start, _VANISHING), 1.0 - rel_tol)
        self.top_rps = self._st.max_rate_rps
        self._log_step = math.log1p(rel_tol)
        self._last = math.ceil(math.log(1.0 / _VANISHING) / self._log_step)
        self._meets_j = self._last + 1  # smallest index known to meet (J + 1: none yet)
        self._miss_j = 0  # largest index known to miss (0: λ_max itself, unstable)
        self._met_rps = 0.0  # the highest rate solved that meets (grid or not)
        self._missed_rps = math.inf  # the lowest rate solved that misses
        # evaluated points: (u, value / limit per limit), and the outcome of each step
        self._seen: list[tuple[float, list[float]]] = [(0.0, self._alone())]
        self._widths: list[int] = []
        #: Points solved so far (``_point`` calls).
        self.solves = 0
        self._judged: dict[float, float] = {}  # rate → the largest statistic / limit there

    def _alone(self) -> list[float]:
        """Statistic / limit per limit at a vanishing rate, where every request is alone (the
        low-load limit, in closed form): its prompt step and hand-off, then decode steps of
        one sequence; every percentile the same. Guides the first steps only."""
        st = self._st
        ttft = float(st.prompt_s[1]) + st.handoff_s
        itl = float(st.decode_s[1]) if st.osl > 1 else 0.0
        value = {"ttft": ttft, "itl": itl, "e2e": ttft + (st.osl - 1.0) * itl}
        return [value[m] / lim if lim > 0 else math.inf for m, _, lim in self._wanted]

    def full_point(self, rate: float) -> OpenLoopPoint:
        """The point at ``rate`` with every percentile: the solved one's means and the tables
        it computed, the others computed when first read (one more solve, only then)."""
        inst = self._instance
        got = self.points.get(rate)
        if got is None:
            return point(self._st, rate, inst.cv, QUANTILES, pool=inst.pool, idc_itl=inst.idc_itl)
        lazy = LazyPoint(self._st, rate, inst)
        tables = {}
        for metric in ("ttft", "itl", "e2e"):
            have: Mapping[float, float] = getattr(got, f"{metric}_q")
            if all(q in have and not math.isnan(have[q]) for q in QUANTILES):
                tables[metric] = have
            else:
                tables[metric] = Quantiles(QUANTILES, lazy.table, metric)
        return replace(got, ttft_q=tables["ttft"], itl_q=tables["itl"], e2e_q=tables["e2e"])

    @property
    def done(self) -> bool:
        """Is the answer known (the bracket closed)?"""
        return not self._wanted or self._meets_j - self._miss_j <= 1

    def count(self, peak_rps: float, least: int, most: int) -> int | None:
        """The least count n in [``least``, ``most``] with peak / n within this search's limits
        (meets is monotone in the rate, so in n); None when even ``most`` misses. Each point is
        placed by the search's regula falsi and taken at the rate of the count nearest it."""
        slack = 1e-9

        def rate(n: int) -> float:
            return peak_rps / (n + slack)

        lo, hi = least - 1, None  # lo misses (or is below the range); hi meets
        for _ in range(200):
            # what the bracket already decides
            if self._meets_j <= self._last:
                known = math.ceil(peak_rps / self.rate_at(self._meets_j) - slack)
                if hi is None or known < hi:
                    hi = max(known, least)
            if self._miss_j > 0:
                known = math.floor(peak_rps / self.rate_at(self._miss_j) - slack)
                lo = max(lo, min(known, most))
            if hi is not None and hi - lo <= 1:
                return hi
            if hi is None and lo >= most:
                return None
            top = most if hi is None else hi - 1
            guess = self._predict()
            if guess is not None and guess > 0:
                n = math.ceil(peak_rps / guess - slack)
            elif hi is None:
                n = min(most, max(lo + 1, 2 * lo + 1))
            else:
                n = (lo + hi) // 2
            n = min(max(n, lo + 1), top)
            if self.meets(rate(n)):
                hi = n
            else:
                lo = n
        return hi

    def predicted(self, seen: list[tuple[float, list[float]]] | None = None) -> float | None:
        """The rate where the first limit is predicted to bind from the points so far, or
        from ``seen`` (requests/s); None without two usable points."""
        return self._predict(seen)

    @property
    def seen(self) -> list[tuple[float, list[float]]]:
        """The points evaluated: (u = ρ/(1 − ρ), value / limit per limit), the light-load limit
        first."""
        return list(self._seen)

    def alone_meets(self) -> bool:
        """Does a request alone (a vanishing rate) meet every limit?"""
        return max(self._seen[0][1], default=0.0) <= 1.0

    def rate_at(self, j: int) -> float:
        """Grid rate r_j, requests/s."""
        return self.top_rps * math.exp(-j * self._log_step)

    def _index(self, rate: float) -> float:
        return math.log(self.top_rps / rate) / self._log_step

    def _ratios(self, rate: float) -> list[float]:
        """Statistic / limit per limit at ``rate`` (inf: unstable or missed outright; 0: a
        vanishing statistic within a limit ≥ 0, or one the point does not have, as the ITL of
        one-token answers)."""
        self.solves += 1
        inst = self._instance
        near = min(self._warm, key=lambda rw: abs(math.log(rw[0] / rate)), default=None)
        solved: list[Warm | None] = [None]
        p = point(
            self._st, rate, inst.cv, self._quantiles, self._tables,
            pool=inst.pool, idc_itl=inst.idc_itl, warm=near[1] if near else None, solved=solved,
        )  # fmt: skip
        if solved[0] is not None:
            self._warm.append((rate, solved[0]))
        self.points[rate] = p
        out = self._judge(p)
        self._judged[rate] = max(out, default=0.0)
        return out

    def _judge(self, p: OpenLoopPoint) -> list[float]:
        """Statistic / limit per limit at point ``p`` (see :meth:`_ratios`)."""
        if not p.stable:
            return [math.inf] * len(self._wanted)
        out = []
        for metric, stat, lim in self._wanted:
            value = p.statistic(metric, stat)
            if math.isnan(value):  # no such latency (one-token answers have no ITL): met
                out.append(0.0)
            elif lim > 0 and value > 0 and math.isfinite(value):
                out.append(value / lim)
            else:
                out.append(0.0 if value <= lim else math.inf)
        return out

    def worst_ratio(self, rate: float) -> float:
        """The largest statistic / limit at ``rate`` (one point, unless solved already; inf
        where unstable): how near its limits an instance runs there."""
        if rate not in self._judged and 0 < rate < self.top_rps:
            self.meets(rate)  # (narrows the bracket if it solves the point)
        if rate not in self._judged:  # decided by the bracket, or unstable
            if not 0 < rate < self.top_rps:
                return math.inf
            self._ratios(rate)
        return self._judged[rate]

    def meets(self, rate: float) -> bool:
        """Do the statistics at ``rate`` (requests/s) meet every limit? (One point, at most;
        none where a point already evaluated decides it.) Narrows the search's bracket."""
        if not rate > 0:
            raise ValueError(f"rate must be > 0 requests/s (got {rate})")
        if rate >= self.top_rps:
            return False
        x = self._index(rate)
        if rate <= self._met_rps or x >= self._meets_j - 1e-9:  # at or below one that meets
            return True
        if rate >= self._missed_rps or x <= self._miss_j + 1e-9:  # at or above one that misses
            return False
        ratios = self._ratios(rate)
        rho = rate / self.top_rps
        if all(math.isfinite(r) for r in ratios):
            self._seen.append((rho / (1.0 - rho), ratios))
        ok = max(ratios, default=0.0) <= 1.0
        if ok:
            self._met_rps = max(self._met_rps, rate)
            self._meets_j = min(self._meets_j, math.ceil(x - 1e-9))
        else:
            self._missed_rps = min(self._missed_rps, rate)
            self._miss_j = max(self._miss_j, math.floor(x + 1e-9))
        return ok

    def highest(self) -> float:
        """The answer (requests/s; 0 when even a vanishing rate misses)."""
        if not self._wanted:
            return self.rate_at(1)
        while self._meets_j - self._miss_j > 1:
            j = self._next()
            self.meets(self.rate_at(j))
            self._widths.append(self._meets_j - self._miss_j)
        return self.rate_at(self._meets_j) if self._meets_j <= self._last else 0.0

    def _next(self) -> int:
        """The next grid index to evaluate, strictly inside the bracket."""
        lo_j, hi_j = self._miss_j + 1, self._meets_j - 1  # the open bracket, as indices
        w = self._widths
        stalled = len(w) >= 3 and w[-1] > 0.5 * w[-3]
        guess = None if stalled else self._predict()
        if guess is None:
            if max(self._seen[0][1]) > 1.0 and self._meets_j > self._last:
                guess = 0.0  # even a request alone misses: the vanishing rate first
            elif len(self._seen) == 1:
                guess = self._start * self.top_rps  # nothing evaluated yet: where it starts
            else:  # bisect the rate between the bracket's ends
                top = self.rate_at(self._miss_j)
                bottom = self.rate_at(self._meets_j) if self._meets_j <= self._last else 0.0
                guess = 0.5 * (top + bottom)
            if stalled:
                self._widths.clear()
        if guess <= 0:
            return hi_j
        x = self._index(guess)
        # the grid point on the side of the guess whose end of the bracket is farther: a good
        # guess then moves that end next to the other, and the next one closes the bracket
        j = math.ceil(x) if self._meets_j - x > x - self._miss_j else math.floor(x)
        return min(max(j, lo_j), hi_j)

    def _predict(self, seen: list[tuple[float, list[float]]] | None = None) -> float | None:
        """Rate where the first limit is predicted to bind: per limit, the line in u through
        the nearest points either side of it (or the two highest below it); ``seen``: the
        points to predict from (default: this search's)."""
        seen = self._seen if seen is None else seen
        if len(seen) < 2:
            return None
        best = math.inf
        for i in range(len(self._wanted)):
            pts = sorted((u, r[i]) for u, r in seen)
            below = [(u, r) for u, r in pts if r <= 1.0]
            above = [(u, r) for u, r in pts if r > 1.0]
            if below and above:
                (u0, r0), (u1, r1) = below[-1], above[0]
            elif len(below) >= 2:
                (u0, r0), (u1, r1) = below[-2], below[-1]
            else:
                continue
            if r1 <= r0 or u1 <= u0:
                continue  # flat: this limit does not bind nearby
            best = min(best, u0 + (1.0 - r0) * (u1 - u0) / (r1 - r0))
        if not math.isfinite(best):
            return None
        return self.top_rps * best / (1.0 + best) if best > 0 else 0.0


#: Relative step of the rate grid an instance's capacity is found on (what one instance
#: serves within the limits, shown with a plan; the count itself is decided at peak / N).
CAPACITY_TOL = 1e-2
#: Slack under a whole multiple of a rate (float noise must not add an instance).
_RATE_SLACK = 1e-9


class InstanceSearch:
    """The fewest instances of one deployment that serve a peak within the limits, behind a
    router (:mod:`inferencesize.openloop.router`): N* = min{N : one instance meets every
    limit at peak / N with the arrivals N instances see}.

    Each node count of the router's grid has its own :class:`RateSearch` for its arrivals (a
    fleet size between nodes takes the node below), built when first asked; ``meets`` is one
    point at the rate peak / n, or none where that search's bracket already decides it (a
    rate below one known to meet, or above one known to miss). Counts are searched from a
    first guess by predictions (the secant in u = ρ/(1 − ρ) through the points seen, all
    nodes together: their arrivals differ little), with doubling and bisection as
    safeguards: about three points per candidate. More instances never need fewer to meet:
    a larger node's arrivals are smoother and more pooled. One instance's capacity (the most
    it serves, on a grid of relative step :data:`CAPACITY_TOL`) is searched only when asked."""

    def __init__(
        self,
        st: Steps,
        limits: Mapping[str, tuple[str | float, float]],
        cv: float = 1.0,
        router: str = "random",
        *,
        start: float | None = None,
    ) -> None:
        self.st = st
        self.limits = dict(limits)
        self.cv = cv
        self.router = router
        #: Where the first point lies, a share of the sustainable rate (None: half of it).
        self.start = 0.5 if start is None else start
        self.top_rps = st.max_rate_rps
        self._searches: dict[int, RateSearch] = {}
        #: Close each node's search on its grid before judging a count there: a few points
        #: more per node, then every count of every peak is judged from its bracket (a sweep
        #: of many peaks); a plan judges a count or two and does not.
        self.closed = False

    def search(self, n: int) -> RateSearch:
        """The rate search of the node at or below ``n`` instances."""
        node = node_below(n)
        found = self._searches.get(node)
        if found is None:
            inst = instance(self.router, self.cv, node)
            same = [
                s for k, s in self._searches.items() if instance(self.router, self.cv, k) == inst
            ]
            if same:
                found = same[0]  # the router changes nothing here (Poisson behind random)
            else:
                found = RateSearch(
                    self.st,
                    0.0,
                    0.0,
                    self.limits,
                    inst,
                    start=self.answer_share or self.start,
                    rel_tol=CAPACITY_TOL,
                )
            self._searches[node] = found
        return found

    @property
    def solves(self) -> int:
        """Points solved so far, over every node."""
        return sum(s.solves for s in {id(s): s for s in self._searches.values()}.values())

    def meets(self, peak_rps: float, n: int) -> bool:
        """Do ``n`` instances serve ``peak_rps`` within the limits? (One point at most.)"""
        if n < 1:
            return False
        rate = peak_rps / (n + _RATE_SLACK)
        if rate >= self.top_rps:
            return False
        search = self.search(n)
        if self.closed:
            search.highest()
        return search.meets(rate)

    def feasible(self) -> bool:
        """Does a request alone meet every limit (so some count serves any peak)?"""
        return self.search(1).alone_meets()

    def fewest(self, peak_rps: float) -> int | None:
        """N* for ``peak_rps``; None when even a request alone misses a limit (class
        docstring)."""
        if not self.feasible():
            return None
        least = max(1, math.floor(peak_rps / self.top_rps) + 1)  # below it: over capacity
        most = max(least, math.ceil(peak_rps / (_VANISHING * self.top_rps)))
        share = self.answer_share or self.start
        n = min(max(least, math.ceil(peak_rps / (max(share, 1e-9) * self.top_rps))), most)
        lo, hi = least - 1, 0  # lo misses (or is below every count); hi meets (0: none yet)
        widths: list[int] = []
        for _ in range(400):
            if self.meets(peak_rps, n):
                hi = n
            else:
                lo = n
            if hi and hi - lo <= 1:
                return hi
            if not hi and lo >= most:
                return None
            top = (hi - 1) if hi else most
            widths.append((hi or 2 * most) - lo)
            stalled = len(widths) >= 3 and widths[-1] > 0.5 * widths[-3]
            predicted = None if stalled else self.search(n).predicted(self._all_seen())
            if predicted is not None and predicted > 0:
                n = math.ceil(peak_rps / predicted - _RATE_SLACK)
            elif hi:
                n = (lo + hi) // 2
            else:
                n = 2 * lo + 1
            if stalled:
                widths.clear()
            n = min(max(n, lo + 1), top)
        raise RuntimeError("instance search did not settle")  # pragma: no cover

    def _all_seen(self) -> list[tuple[float, list[float]]]:
        """Every node's points, the light-load limit once."""
        searches = list({id(s): s for s in self._searches.values()}.values())
        out = searches[0].seen[:1] if searches else []
        for search in searches:
            out.extend(search.seen[1:])
        return out

    @property
    def answer_share(self) -> float:
        """The largest capacity found so far as a share of the sustainable rate (0: none)."""
        done = [s.highest() / s.top_rps for s in self._searches.values() if s.done]
        return max(done, default=0.0)

    def margin(self, peak_rps: float, n: int) -> float:
        """How near its limits one of ``n`` instances runs at the planned load, peak / n: the
        largest statistic / limit there (below 1 when the count meets; the point the count
        search solved, or one more). Smaller is more room: a tie-break that costs no search."""
        return self.search(n).worst_ratio(peak_rps / (n + _RATE_SLACK))

    def planned_point(self, peak_rps: float, n: int) -> OpenLoopPoint:
        """One of ``n`` instances at the planned load, peak / n (every percentile, tables
        computed when first read)."""
        return self.search(n).full_point(peak_rps / (n + _RATE_SLACK))

    def capacity_rps(self, n: int, peak_rps: float = 0.0) -> float:
        """The most one of ``n`` instances serves within the limits (requests/s): the search's
        answer on its grid of relative step :data:`CAPACITY_TOL`, or the planned load
        ``peak_rps`` / n where that is higher and meets (the count was found to serve it).
        Which points were solved on the way never changes it: a plan and a sweep show the
        same capacity."""
        search = self.search(n)
        rate = search.highest()
        planned = peak_rps / (n + _RATE_SLACK)
        if planned > rate and search.meets(planned):
            rate = planned
        return rate

    def capacity_point(self, n: int, peak_rps: float = 0.0) -> tuple[float, OpenLoopPoint]:
        """:meth:`capacity_rps` and the point there (every percentile, tables computed when
        first read)."""
        rate = self.capacity_rps(n, peak_rps)
        return rate, self.search(n).full_point(rate)


class LazyPoint:
    """The point of ``st`` at ``rate`` for ``inst``, solved on first use and kept
    (``table(metric)``: its percentiles of one metric, in the order of QUANTILES). Picklable."""

    def __init__(self, st: Steps, rate: float, inst: Instance) -> None:
        self._args = (st, rate, inst)
        self._point: OpenLoopPoint | None = None

    def table(self, metric: str) -> list[float]:
        if self._point is None:
            st, rate, inst = self._args
            self._point = point(st, rate, inst.cv, QUANTILES, pool=inst.pool, idc_itl=inst.idc_itl)
        table: Mapping[float, float] = getattr(self._point, f"{metric}_q")
        return [table[q] for q in QUANTILES]


#: How far above the mean-value bound of :func:`rate_bound` the true answer may lie (the bound
#: prunes and orders candidates; it never decides one).
BOUND_MARGIN = 1.25


def rate_bound(st: Steps, limits: Mapping[str, tuple[str | float, float]]) -> float:
    """An upper bound on the rate one instance serves within the limits held at the mean
    (requests/s; the sustainable rate where none is): at rate λ the decode batch is at least
    B_λ, the root of B = λ(OSL − 1)·d(B) (Little, and E[B/d(B)] ≤ E[B]/d(E[B]) for the concave
    B/d(B)), so the mean ITL is at least d(B_λ): an ITL limit ℓ allows at most
    B*/((OSL − 1)·ℓ) with d(B*) = ℓ, and an E2E limit E the same with ℓ = (E − p(1) − hand-off)
    / (OSL − 1). Widened by :data:`BOUND_MARGIN`."""
    top = st.max_rate_rps
    steps_out = st.osl - 1.0
    if steps_out <= 0:
        return top
    caps = [top]
    for name, (stat, limit) in limits.items():
        metric = name.removesuffix("_s")
        if stat != "mean" or metric not in ("itl", "e2e"):
            continue
        per_token = limit
        if metric == "e2e":
            per_token = (limit - float(st.prompt_s[1]) - st.handoff_s) / steps_out
        if per_token <= float(st.decode_s[1]):
            return 0.0  # a request alone misses it
        fits = np.flatnonzero(st.decode_s[1:] <= per_token) + 1
        biggest = float(fits[-1]) if fits.size else 1.0
        if biggest < st.slots:  # between whole batches: linear
            d0, d1 = float(st.decode_s[int(biggest)]), float(st.decode_s[int(biggest) + 1])
            biggest += (per_token - d0) / (d1 - d0) if d1 > d0 else 0.0
        caps.append(BOUND_MARGIN * biggest / (steps_out * per_token))
    return min(caps)
