"""Throughput–interactivity trade-off: the Pareto frontier over splits, precisions, concurrency.

Every candidate (hardware × precision × valid single-node TP/PP/EP split) is evaluated at
every concurrency 1 … max_concurrency (its KV capacity at ISL + OSL; beyond it requests only
queue), vectorised with numpy (:func:`inferencesize.serving.inflight_arrays`). Each point has

* **output tokens/s per GPU** = requests/s · OSL / (TP · PP) — what the hardware yields;
* **output tokens/s per user** = 1 / ITL — the streaming speed one user sees (for static
  batching the same: one token per decode step).

A point is on the frontier when no other point is at least as good on both axes and better on
one. The *latency-optimal* end is the frontier point with the most tokens/s per user, the
*throughput-optimal* end the one with the most tokens/s per GPU. Points meeting the given
limits (TTFT, ITL, E2E; sequential mode: E2E only) form the goodput set, with its own frontier
and its best point (most tokens/s per GPU within the limits).

**Open loop** (arrivals at a rate or a trace's, in-flight batching): the load is a request rate per
instance instead of a number of clients, swept over the shares :data:`RATE_SHARES` of the
instance's sustainable rate λ_max (:mod:`inferencesize.openloop`; gamma arrivals with ``cv``).
TTFT, ITL and E2E are taken at the statistic each limit holds (mean, or p50 … p99 over
requests), tokens/s per user is 1 / ITL at the ITL's statistic, and ``concurrency`` is the mean
number of requests in flight there (Little's law). The open-loop model costs a fraction of a
second per point, so the sweep is a dozen rates per candidate.

Pure: no I/O, no printing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inferencesize.deployment import default_kv_precision
from inferencesize.estimate import Candidate, Estimator, Resolved
from inferencesize.parallelism import valid_splits
from inferencesize.planner import HardwareOption, Limits, OpenLoopSizing, Rejected, unrunnable
from inferencesize.question import Question
from inferencesize.serving import inflight_arrays, points
from inferencesize.vocabulary import BatchingMode, quantiles_of

#: Above this KV capacity a candidate is sampled (all of 1…256, then geometric) not exhaustive.
MAX_POINTS_PER_CANDIDATE = 2048
#: Open loop: the request rates swept per candidate, as shares of its sustainable rate.
RATE_SHARES = (0.02, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)


def concurrency_grid(max_concurrency: int, limit: int = MAX_POINTS_PER_CANDIDATE) -> Any:
    """1 … max_concurrency: every integer, or (when more than ``limit``) every integer up to
    256 then a geometric grid up to the maximum (always included)."""
    if max_concurrency <= limit:
        return np.arange(1, max_concurrency + 1)
    head = np.arange(1, 257)
    tail = np.geomspace(257, max_concurrency, limit - 256).round().astype(int)
    return np.unique(np.concatenate([head, tail, [max_concurrency]]))


def pareto_mask(x: Any, y: Any) -> Any:
    """True where (x, y) is not dominated (maximising both); of identical points the first."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.size == 0:
        return np.zeros(0, dtype=bool)
    order = np.lexsort((-y, -x))  # x descending, then y descending
    ys = y[order]
    best_before = np.maximum.accumulate(np.concatenate([[-np.inf], ys[:-1]]))
    mask = np.zeros(x.size, dtype=bool)
    mask[order] = ys > best_before
    return mask


def meets_limits(limits: Limits, ttft_s: Any, itl_s: Any, e2e_s: Any) -> Any:
    """Elementwise: does the point meet every active limit (``value <= limit``)?"""
    ok = np.ones(np.shape(ttft_s), dtype=bool)
    values = {"ttft": ttft_s, "itl": itl_s, "e2e": e2e_s}
    for name, limit in limits.active():
        ok &= np.asarray(values[name]) <= limit
    return ok


@dataclass(frozen=True)
class Curve:
    """One candidate's operating points over concurrency (arrays, SI units)."""

    concurrency: Any
    ttft_s: Any
    itl_s: Any
    e2e_s: Any
    requests_per_s: Any


def open_loop_curve(
    res: Resolved,
    isl: float,
    osl: float,
    stats: tuple[str, str, str],
    cv: float = 1.0,
    shares: Sequence[float] = RATE_SHARES,
) -> Curve:
    """One in-flight candidate under open-loop arrivals at ``shares`` of its sustainable
    rate: TTFT, ITL and E2E at ``stats`` (their limits' statistics), ``concurrency`` the mean
    requests in flight (seconds, requests/s)."""
    from inferencesize.openloop import QUANTILES, max_rate_rps, open_loop

    assert res.deployment is not None
    dep, top = res.deployment, res.max_concurrency
    wanted = quantiles_of(stats)
    top_rate = max_rate_rps(dep, isl, osl, max_in_flight=top)
    cols: dict[str, list[float]] = {k: [] for k in ("n", "ttft", "itl", "e2e", "x")}
    for share in shares:
        rate = share * top_rate
        pt = open_loop(dep, isl, osl, rate, cv=cv, max_in_flight=top, quantiles=wanted or QUANTILES)
        cols["n"].append(pt.in_flight)
        cols["x"].append(rate)
        for metric, stat in zip(("ttft", "itl", "e2e"), stats, strict=True):
            cols[metric].append(pt.statistic(metric, stat))  # type: ignore[arg-type]
    arr = {k: np.asarray(v, dtype=float) for k, v in cols.items()}
    return Curve(arr["n"], arr["ttft"], arr["itl"], arr["e2e"], arr["x"])


def fleet_curve(
    sizing: OpenLoopSizing,
    instances: int,
    rates_rps: Sequence[float] = (),
    shares: Sequence[float] = RATE_SHARES,
) -> Curve:
    """Open loop, under the plan's own traffic model: one of ``instances`` instances behind
    the plan's router (the arrivals that many instances see, as the plan sized it), at
    ``shares`` of its sustainable rate and at ``rates_rps`` (a plan's own points, so that
    they lie on the curve), ascending. Latencies at the limits' statistics, ``concurrency``
    the mean requests in flight (seconds, requests/s)."""
    search = sizing.search.search(instances)
    top = search.top_rps
    rates = sorted({share * top for share in shares} | {r for r in rates_rps if 0 < r < top})
    stats = sizing.limits.stats
    cols: dict[str, list[float]] = {k: [] for k in ("n", "ttft", "itl", "e2e")}
    for rate in rates:
        pt = search.full_point(rate)
        cols["n"].append(pt.in_flight)
        for metric, stat in zip(("ttft", "itl", "e2e"), stats, strict=True):
            cols[metric].append(pt.statistic(metric, stat))  # type: ignore[arg-type]
    arr = {k: np.asarray(v, dtype=float) for k, v in cols.items()}
    return Curve(arr["n"], arr["ttft"], arr["itl"], arr["e2e"], np.asarray(rates, dtype=float))


def curve(res: Resolved, isl: float, osl: float, batching: BatchingMode, concurrency: Any) -> Curve:
    """Latency and throughput of one resolved candidate at the given concurrencies."""
    assert res.deployment is not None
    n = np.asarray(concurrency, dtype=float)
    if batching == "static":
        ops = points(res.deployment, isl, osl, n, n, "static")
        return Curve(
            n,
            np.array([o.ttft_s for o in ops]),
            np.array([o.itl_s for o in ops]),
            np.array([o.e2e_s for o in ops]),
            np.array([o.requests_per_s for o in ops]),
        )
    r = inflight_arrays(res.deployment, isl, osl, n, res.max_concurrency)
    return Curve(n, r.ttft_s, r.itl_s, r.e2e_s, r.requests_per_s)


@dataclass(frozen=True)
class Frontier:
    """All evaluated points (arrays, one element per point) and the frontier marks."""

    candidates: list[Candidate]
    candidate_index: Any
    concurrency: Any
    ttft_s: Any
    itl_s: Any
    e2e_s: Any
    requests_per_s: Any
    tokens_per_s_per_gpu: Any
    tokens_per_s_per_user: Any
    on_frontier: Any
    meets_limits: Any
    on_goodput_frontier: Any
    rejected: list[Rejected] = field(default_factory=list)
    #: True: points are request rates under open-loop arrivals (``concurrency``: the mean in
    #: flight), latencies at ``stats``; False: closed-loop clients, mean latencies.
    open_loop: bool = False
    stats: tuple[str, str, str] = ("mean", "mean", "mean")

    @property
    def size(self) -> int:
        return int(np.size(self.concurrency))

    def latency_optimal(self) -> int | None:
        """Index of the frontier point with the most tokens/s per user."""
        return self._best(self.on_frontier, self.tokens_per_s_per_user)

    def throughput_optimal(self) -> int | None:
        """Index of the frontier point with the most tokens/s per GPU."""
        return self._best(self.on_frontier, self.tokens_per_s_per_gpu)

    def best_within_limits(self) -> int | None:
        """Index of the point meeting the limits with the most tokens/s per GPU."""
        return self._best(self.on_goodput_frontier, self.tokens_per_s_per_gpu)

    @staticmethod
    def _best(mask: Any, value: Any) -> int | None:
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return None
        return int(idx[np.argmax(np.asarray(value)[idx])])


def frontier(est: Estimator, q: Question, *, max_concurrency: int | None = None) -> Frontier:
    """Evaluate every single-node candidate of the question's search space over its load and
    mark the Pareto frontier.

    Splits not listed (None) are every valid power of two; ``max_concurrency`` caps the
    concurrency swept (default: each candidate's KV capacity). Arrivals at a rate (in-flight
    batching): the load is a request rate, latencies at the limits' statistics (module
    docstring).
    """
    space, isl, osl, limits, batching = q.space, q.isl, q.osl, q.limits, q.batching
    model, tps, pps, eps = space.model, space.tps, space.pps, space.eps
    open_loop = q.open_loop
    cands: list[Candidate] = []
    rejected: list[Rejected] = []
    cols: dict[str, list[Any]] = {k: [] for k in ("i", "n", "ttft", "itl", "e2e", "x", "gpus")}
    costs = est.costs(model)
    for g, s in space.hardware:
        hw = HardwareOption(g, s)
        splits = valid_splits(
            costs,
            hw.gpus_per_node,
            list(tps) if tps else None,
            list(pps) if pps else None,
            list(eps) if eps else None,
        )
        splits = [p for p in splits if p.gpus <= hw.gpus_per_node]
        for precision in space.precisions or g.native_precisions():
            kv = space.kv_precision or default_kv_precision(precision)
            for par in splits:
                cand = Candidate(model, g, s, precision, kv, par)
                res = est.resolve(cand, isl + osl)
                why = unrunnable(res, isl + osl, costs)
                if why is not None:
                    rejected.append(Rejected(cand.label(), why))
                    continue
                top = res.max_concurrency
                if max_concurrency is not None:
                    top = min(top, max_concurrency)
                if open_loop:
                    c = open_loop_curve(res, isl, osl, limits.stats, q.arrivals.cv)
                else:
                    c = curve(res, isl, osl, batching, concurrency_grid(top))
                cols["i"].append(np.full(np.size(c.concurrency), len(cands)))
                cols["n"].append(c.concurrency)
                cols["ttft"].append(c.ttft_s)
                cols["itl"].append(c.itl_s)
                cols["e2e"].append(c.e2e_s)
                cols["x"].append(c.requests_per_s)
                cols["gpus"].append(np.full(np.size(c.concurrency), par.gpus))
                cands.append(cand)
    flat = {
        k: np.concatenate(v) if v else np.zeros(0, dtype=int if k in ("i", "gpus") else float)
        for k, v in cols.items()
    }
    per_gpu = flat["x"] * osl / np.maximum(flat["gpus"], 1)
    per_user = 1.0 / flat["itl"] if flat["itl"].size else np.zeros(0)
    meets = meets_limits(limits, flat["ttft"], flat["itl"], flat["e2e"])
    on = pareto_mask(per_user, per_gpu)
    good = np.zeros_like(meets)
    if meets.any():
        idx = np.flatnonzero(meets)
        good[idx] = pareto_mask(per_user[idx], per_gpu[idx])
    return Frontier(
        candidates=cands,
        candidate_index=flat["i"].astype(int),
        concurrency=flat["n"] if open_loop else flat["n"].astype(int),
        ttft_s=flat["ttft"],
        itl_s=flat["itl"],
        e2e_s=flat["e2e"],
        requests_per_s=flat["x"],
        tokens_per_s_per_gpu=per_gpu,
        tokens_per_s_per_user=per_user,
        on_frontier=on,
        meets_limits=meets,
        on_goodput_frontier=good,
        rejected=rejected,
        open_loop=open_loop,
        stats=limits.stats if open_loop else ("mean", "mean", "mean"),
    )
