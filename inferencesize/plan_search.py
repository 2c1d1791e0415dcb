"""The planner's search: every candidate of a resolved question searched, sized and ranked.

:func:`plan` takes the question (:class:`inferencesize.question.Question`: the model and
hardware specs, the precisions and splits searched, lengths, limits in seconds at their
statistics, arrivals) and the planner's options (:class:`inferencesize.question.PlanOptions`).
One run is a small object, :class:`_Search`, whose methods each decide one thing: the splits
and GPU shares of a hardware option, a candidate's search (:func:`inferencesize.planner.
search_point` closed loop, :func:`inferencesize.planner.search_instances` open loop), its plan
or rejection, and branch and bound. What a plan is, how plans rank and how one candidate is
searched live in :mod:`inferencesize.planner`. Pure: no I/O, no printing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from inferencesize.deployment import default_kv_precision
from inferencesize.economics import Budget, Pricing, require_figure
from inferencesize.estimate import Candidate, Estimator, Resolved
from inferencesize.limits import Limits
from inferencesize.outcomes import (
    HardwareSearch,
    LatencyMiss,
    Pruned,
    RejectReason,
    SearchSummary,
    SplitProblem,
    count_kinds,
)
from inferencesize.packing import RATE_SLACK, instances_for
from inferencesize.parallelism import Parallelism, enumerate_splits, split_problem
from inferencesize.planned import ClosedLoad, UnlimitedOpenLoad
from inferencesize.planner import (
    MAX_NODES_PER_INSTANCE,
    HardwareOption,
    OpenLoopSizing,
    Plan,
    PlanResult,
    Rejected,
    Searched,
    alternatives,
    plan_for,
    point_at,
    rank,
    search_instances,
    search_point,
    unrunnable,
)
from inferencesize.question import DEFAULT_OPTIONS, PlanOptions, Question, SearchSpace
from inferencesize.serving import OperatingPoint
from inferencesize.sharing import Share, shares_for
from inferencesize.specs import ModelSpec
from inferencesize.vocabulary import Objective

if TYPE_CHECKING:  # imported where searched: the open-loop model loads only when used
    from inferencesize.openloop import InstanceSearch


def _splits(
    est: Estimator,
    model: ModelSpec,
    max_gpus: int,
    min_gpus: int,
    tps: Sequence[int] | None,
    pps: Sequence[int] | None,
    eps: Sequence[int] | None,
    dps: Sequence[int] | None = None,
) -> list[tuple[Parallelism, SplitProblem | None]]:
    """The splits with ``min_gpus`` < GPUs ≤ ``max_gpus``, each with the rule it breaks."""
    out = enumerate_splits(
        est.costs(model),
        max_gpus,
        list(tps) if tps else None,
        list(pps) if pps else None,
        list(eps) if eps else None,
        list(dps) if dps else None,
    )
    return [(p, why) for p, why in out if min_gpus < p.gpus <= max_gpus]


def plan(
    q: Question, peak_rps: float, est: Estimator, options: PlanOptions = DEFAULT_OPTIONS
) -> PlanResult:
    """Size a deployment for question ``q`` at ``peak_rps``: every candidate of its search
    space, its best operating point, ranked plans.

    The space's ``tps``/``pps``/``eps`` None means "auto" (every valid power of two), else
    the listed values. Splits with tp · pp above a node (multi-node) are tried only when no
    single-node candidate is feasible. ``options.objective`` ranks feasible plans by what is
    paid for — servers, GPUs (of whole units: a rack is all its trays), cost per hour or power
    first (unknown cost/power last); ``options.pricing`` prices them
    (:mod:`inferencesize.economics`). With a ``budget``, plans within it rank before every
    plan over it: the chosen plan is the best within the budget when one exists (``check``).
    The alternatives (``top`` of them) are the best plan of each other hardware option, then
    variants (:func:`~inferencesize.planner.alternatives`). ``dps`` lists attention data-parallel degrees (None: 1
    only); ``span_nvlink_domain`` lets the single-node pass use a rack's whole NVLink domain.
    The question's ``batch_sizes`` restricts static batches to those sizes
    (:func:`~inferencesize.planner.search_point`). ``share_gpus`` also searches several TP-1 instances per GPU, on
    MIG slices or processes sharing it, where the model is small for the GPU
    (:func:`_shared`); their GPUs count whole.

    Arrivals: a closed loop sizes each instance at the load a GenAI-Perf concurrency benchmark
    would run it at (:func:`~inferencesize.planner.search_point`, mean limits); open-loop arrivals at the highest
    request rate whose latencies meet the limits at their statistics under arrivals at a rate
    with the question's coefficient of variation (:func:`~inferencesize.planner.search_instances`; in-flight
    batching: static batching keeps the closed-loop batch model), spread over the instances by
    its router.

    ``prune`` (open loop only): branch and bound over the candidates, for a caller that wants
    the chosen plan and the ``top`` alternatives and not every other feasible plan. Each
    candidate's sustainable rate (:func:`inferencesize.openloop.max_rate_rps`, cheap) bounds
    the rate any limit lets it serve, hence its instances, servers, GPUs, cost and power from
    below; candidates are searched in the order of that bound, and one whose bound cannot
    beat the ``1 + top`` best plans found so far is not searched (nor is any after it). One
    that could is first tested at the one rate per instance it would need
    (:meth:`inferencesize.openloop.RateSearch.meets`): a miss there prunes it too. With
    ``top`` > 0 a candidate is also kept while it could be the best plan of its hardware
    option (each one's best is shown, :func:`~inferencesize.planner.alternatives`). Either is
    recorded as a rejection of kind :attr:`RejectKind.PRUNED` (:class:`Pruned`, with its
    bound), never dropped; the plans kept are the exhaustive search's, the same rates to the
    bit (the rate search's answer does not depend on the points it evaluated).
    """
    if peak_rps <= 0:
        raise ValueError(f"peak_rps must be > 0 (got {peak_rps})")
    if not q.open_loop and any(stat != "mean" for stat in q.limits.stats):
        raise ValueError("percentile limits need open-loop (poisson) arrivals")
    pricing = options.pricing or Pricing()
    require_figure(options.objective, pricing, q.space.hardware)  # never a silent fallback
    search = _Search(q, peak_rps, est, options)
    search.run(multi_node=False)
    multi_node = not search.feasible
    if multi_node:
        search.run(multi_node=True)
    return search.result(multi_node)


@dataclass
class _Tried:
    """What was searched on one hardware option: its precisions, split labels, and how many
    splits were enumerated (``considered``)."""

    precisions: dict[str, None] = field(default_factory=dict)
    splits: list[str] = field(default_factory=list)
    considered: int = 0


class _Search:
    """One run of :func:`plan`: the candidates of the question enumerated, each searched
    (operating point, or instance count under open loop) and sized into a plan or rejected
    with its reason; with ``prune`` (open loop), in the order of a bound (:meth:`bounded`)."""

    def __init__(self, q: Question, peak_rps: float, est: Estimator, options: PlanOptions):
        self.q, self.peak_rps, self.est, self.options = q, peak_rps, est, options
        self.hardware = [HardwareOption(g, s) for g, s in q.space.hardware]
        self.tried = [_Tried() for _ in self.hardware]
        self.candidates = 0
        self.feasible: list[Plan] = []
        self.rejected: list[Rejected] = []
        #: per deployment (the same instance on a DGX and its bare GPU): its search
        self.found: dict[Any, Searched] = {}
        self.searches: dict[Any, InstanceSearch] = {}  # branch and bound: per deployment
        self.answered: list[float] = []  # answers so far, as shares of their sustainable rates
        self.wanted = q.limits.open_loop_limits()

    # ---- the candidates
    def run(self, multi_node: bool) -> None:
        """Every candidate of one pass (single-node, or multi-node when none was feasible):
        searched now, or queued for branch and bound."""
        queue: list[tuple[Candidate, HardwareOption]] = []
        for i, hw in enumerate(self.hardware):
            splits = self._splits(i, hw, multi_node)
            precisions = self.q.space.precisions or hw.gpu.native_precisions()
            shares = self._shares(i, hw, precisions, multi_node)
            for precision in precisions:
                self.tried[i].precisions[precision] = None
                kv = self.q.space.kv_precision or default_kv_precision(precision)
                runs = [(par, problem, None) for par, problem in splits]
                for par, problem, share in runs + [(Parallelism(), None, s) for s in shares]:
                    cand = Candidate(self.q.model, hw.gpu, hw.system, precision, kv, par, share)
                    self.candidates += 1
                    if problem is not None:
                        self.rejected.append(Rejected(cand.label(), problem))
                    elif self.pruned:
                        queue.append((cand, hw))
                    else:
                        self.evaluate(cand, hw)
        if queue:
            self.bounded(queue)

    @property
    def pruned(self) -> bool:
        """Branch and bound (``prune``, open loop only)."""
        return self.options.prune and self.q.open_loop

    def _splits(
        self, i: int, hw: HardwareOption, multi_node: bool
    ) -> list[tuple[Parallelism, SplitProblem | None]]:
        """The splits of one pass on ``hw``, each with the rule it breaks: an invalid split is
        a candidate when a degree it breaks was asked for; "auto" keeps the structurally
        possible splits only (and counts the others)."""
        s, dps = self.q.space, self.options.dps
        node = hw.instance_span(self.options.span_nvlink_domain)
        top, low = node, 0
        if multi_node:
            top, low = max(node, hw.gpus_per_node * MAX_NODES_PER_INSTANCE), node
        splits = _splits(self.est, s.model, top, low, s.tps, s.pps, s.eps, dps)
        self.tried[i].considered += len(splits)
        explicit = {"tp": bool(s.tps), "pp": bool(s.pps), "ep": bool(s.eps), "dp": bool(dps)}
        splits = [(p, why) for p, why in splits if why is None or _asked(why, explicit)]
        self.tried[i].splits += [p.label() for p, _ in splits]
        return splits

    def _shares(
        self, i: int, hw: HardwareOption, precisions: Sequence[str], multi_node: bool
    ) -> list[Share]:
        """Several instances per GPU (``share_gpus``): TP 1 and PP 1 must be among the splits
        asked for; never in the multi-node pass."""
        s, o = self.q.space, self.options
        asked = o.share_gpus and not o.dps and all(not d or 1 in d for d in (s.tps, s.pps, s.eps))
        if multi_node or not asked:
            return []
        shares = _shared(self.est, s.model, hw, precisions, self.q.isl + self.q.osl)
        self.tried[i].splits += [f"tp1 {share.label()}" for share in shares]
        self.tried[i].considered += len(shares)
        return shares

    # ---- one candidate
    def resolved(self, cand: Candidate) -> Resolved | None:
        """``cand``'s deployment at ISL + OSL, or None (rejected) when it cannot run."""
        seq = self.q.isl + self.q.osl
        res = self.est.resolve(cand, seq)
        cannot = unrunnable(res, seq, self.est.costs(self.q.model))
        if cannot is not None:
            self.rejected.append(Rejected(cand.label(), cannot))
            return None
        return res

    def evaluate(
        self,
        cand: Candidate,
        hw: HardwareOption,
        res: Resolved | None = None,
        search: InstanceSearch | None = None,
    ) -> None:
        """``cand`` searched and sized into a plan, or rejected with why it cannot serve."""
        if res is None:
            res = self.resolved(cand)
        if res is None:
            return
        op, why, count, sizing = self.searched(res, search)
        if isinstance(why, str):
            q = self.q
            args = (cand, res, op, why, hw, self.peak_rps, q.isl, q.osl, self.options.pricing)
            self.feasible.append(plan_for(*args, count or None, sizing, self._load(res, sizing)))
            return
        self.rejected.append(Rejected(cand.label(), why, nearest=self._nearest(res, why)))

    def searched(self, res: Resolved, search: InstanceSearch | None = None) -> Searched:
        """The search of ``res``'s deployment (once per deployment: the same instance on
        another package of the same GPU, a DGX and its bare GPU, is searched once)."""
        try:
            key: Any = (res.deployment, res.max_concurrency)
            found = self.found.get(key)
        except TypeError:  # an unhashable deployment detail: no sharing
            key, found = None, None
        if found is None:
            found = self._search(res, search)
            if key is not None:
                self.found[key] = found
        return found

    def _search(self, res: Resolved, search: InstanceSearch | None) -> Searched:
        q, a = self.q, self.q.arrivals
        if q.open_loop:
            return search_instances(
                res, q.isl, q.osl, q.limits, self.peak_rps, a.cv, a.router, search,
                start=self.options.start_share,
            )  # fmt: skip
        closed = search_point(res, q.isl, q.osl, q.limits, q.batching, q.batch_sizes)
        if closed[0] is None:
            return None, closed[1], 0, None
        return closed[0], closed[1], 0, None

    def _load(
        self, res: Resolved, sizing: OpenLoopSizing | None
    ) -> ClosedLoad | UnlimitedOpenLoad | None:
        """How one instance is loaded below its capacity where its sizing does not say."""
        q = self.q
        if not q.open_loop:
            return ClosedLoad(res, q.isl, q.osl, q.batching, _sizes(q.batch_sizes))
        if sizing is None:
            return UnlimitedOpenLoad(res, q.isl, q.osl, q.arrivals.cv, str(q.arrivals.router))
        return None

    def _nearest(self, res: Resolved, why: RejectReason) -> LatencyMiss | None:
        """The limit missed by the largest factor where a latency miss was found."""
        if not isinstance(why, LatencyMiss):
            return None
        if why.unit == "request rate":
            return why  # already the limit missed by the largest factor at light load
        q = self.q
        at = point_at(res, q.isl, q.osl, why.at, q.batching)
        name, value, limit, _ = q.limits.worst_ratio(at)
        return LatencyMiss(name, value, limit, why.at, why.unit)

    # ---- branch and bound
    def placeholder(self, cand: Candidate, res: Resolved, hw: HardwareOption, n: int) -> Plan:
        """``cand`` sized at ``n`` instances (the plan's own sizing at a rate that needs n):
        its servers, GPUs, cost and power; its operating point is a placeholder."""
        pk, q = self.peak_rps, self.q
        at = OperatingPoint(0.0, 0.0, 0.0, 0.0, 0.0, pk / n, 0.0, 0.0, 0.0, None, None)
        return plan_for(cand, res, at, "memory", hw, pk, q.isl, q.osl, self.options.pricing)

    def sized(self, cand: Candidate, res: Resolved, hw: HardwareOption, n: int) -> Prefix:
        """The ranking prefix (servers, GPUs, cost, power in ``objective``'s order) of
        ``cand`` at ``n`` instances."""
        return self.placeholder(cand, res, hw, n).prefix(*self._ranked)[:-1]

    @property
    def _ranked(self) -> tuple[Objective, Budget | None]:
        return self.options.objective, self.options.budget

    def prune(
        self, cand: Candidate, res: Resolved, hw: HardwareOption, basis: Any, rate: float, n: int
    ) -> None:
        at = self.placeholder(cand, res, hw, n)
        self.rejected.append(Rejected(cand.label(), Pruned(basis, rate, n, at.gpus, at.servers)))

    def most(
        self, cand: Candidate, res: Resolved, hw: HardwareOption, n: int, bar: Prefix
    ) -> int | None:
        """The most instances (≥ ``n``, which fits) at which ``cand`` still sizes within
        ``bar`` (the prefix is monotone in the count); None when no count exceeds it."""
        step = 1
        while self.sized(cand, res, hw, n + step) <= bar:
            n += step
            step *= 2
            if n > 1 << 40:
                return None
        while step > 1:  # n fits, n + step does not
            step //= 2
            if self.sized(cand, res, hw, n + step) <= bar:
                n += step
        return n

    def bounded(self, queue: list[tuple[Candidate, HardwareOption]]) -> None:
        """Branch and bound over ``queue`` (``prune`` in :func:`plan`): in the order of each
        candidate's bound, searched while it can still rank among the plans shown."""
        for bound in sorted(self._bounds(queue), key=lambda b: (b.low, b.order)):
            bar = self._bar(bound.hw)
            if bar is not None and bound.low > bar:
                basis = (
                    "sustainable_rate" if bound.cap >= bound.steps.max_rate_rps else "mean_limits"
                )
                self.prune(bound.cand, bound.res, bound.hw, basis, bound.cap, bound.fewest)
                continue
            self._search_bounded(bound, bar)

    def _bounds(self, queue: list[tuple[Candidate, HardwareOption]]) -> list[_Bound]:
        """Each runnable candidate's bound: the fewest instances its sustainable rate (or
        less, under mean limits) allows, and their ranking prefix."""
        from inferencesize.openloop import rate_bound, steps_of

        q, out = self.q, []
        for order, (cand, hw) in enumerate(queue):
            res = self.resolved(cand)
            if res is None:
                continue
            assert res.deployment is not None
            st = steps_of(res.deployment, q.isl, q.osl, res.max_concurrency)
            cap = rate_bound(st, self.wanted)  # the sustainable rate, or less under mean limits
            fewest = instances_for(self.peak_rps, cap) if cap > 0 else 1 << 40
            low = self.sized(cand, res, hw, fewest)
            out.append(_Bound(low, order, cand, hw, res, cap, fewest, st))
        return out

    def _bar(self, hw: HardwareOption) -> Prefix | None:
        """The prefix a candidate on ``hw`` must beat to be shown: the worst of the
        ``1 + top`` best so far, or its hardware's best while it could be that (None: none
        yet)."""
        kept = 1 + max(self.options.top, 0)
        best = sorted(p.prefix(*self._ranked)[:-1] for p in self.feasible)[:kept]
        bar = best[-1] if len(best) == kept else None
        if bar is not None and self.options.top > 0:  # it may still be its hardware's best
            own = [
                p.prefix(*self._ranked)[:-1]
                for p in self.feasible
                if p.candidate.hardware_id == hw.id
            ]
            bar = max(bar, min(own)) if own else None
        return bar

    def _search_bounded(self, b: _Bound, bar: Prefix | None) -> None:
        """A candidate whose bound may beat ``bar``: tested at the one rate per instance it
        would need to, then searched."""
        from inferencesize.openloop import InstanceSearch

        key = (b.res.deployment, b.res.max_concurrency)
        search = self.searches.get(key)
        if search is None and self.wanted and key not in self.found:
            # the first point where the answers so far lie (their median share of the
            # sustainable rate): fewer points, the same answer
            start = float(np.median(self.answered)) if self.answered else self.options.start_share
            a = self.q.arrivals
            search = InstanceSearch(b.steps, self.wanted, a.cv, a.router, start=start)
            self.searches[key] = search
        n = self.most(b.cand, b.res, b.hw, b.fewest, bar) if bar is not None and search else None
        if search is not None and n is not None and not search.meets(self.peak_rps, n):
            need = self.peak_rps / (n + RATE_SLACK)
            self.prune(b.cand, b.res, b.hw, "limits", need, n + 1)
            return
        self.evaluate(b.cand, b.hw, b.res, search)
        if search is not None and search.answer_share > 0:
            self.answered.append(search.answer_share)

    # ---- the answer
    def result(self, multi_node: bool) -> PlanResult:
        """The ranked plans, the alternatives shown, the rejections and what was searched."""
        o = self.options
        summary = SearchSummary(
            hardware=tuple(
                HardwareSearch(hw.id, tuple(t.precisions), tuple(t.splits), t.considered)
                for hw, t in zip(self.hardware, self.tried, strict=True)
            ),
            candidates=self.candidates,
            feasible=len(self.feasible),
            rejected_by_kind=count_kinds(self.rejected),
            multi_node=multi_node,
        )
        feasible = rank(self.feasible, o.objective, exact=1 + max(o.top, 0), budget=o.budget)
        chosen = feasible[0] if feasible else None
        shown = alternatives(feasible, o.top)
        nearest = None if chosen else _nearest_miss(self.rejected, self.q.limits)
        return PlanResult(chosen, shown, self.rejected, feasible, nearest, summary)


#: A plan's ranking prefix without the shared flag (what branch and bound compares).
Prefix = tuple[float, ...]


@dataclass(frozen=True)
class _Bound:
    """A candidate's bound for branch and bound: the ranking prefix of the fewest instances
    its sustainable rate allows (``low``), its place in the queue, its deployment, that rate
    (``cap``), the count, and its step costs."""

    low: Prefix
    order: int
    cand: Candidate
    hw: HardwareOption
    res: Resolved
    cap: float
    fewest: int
    steps: Any


def _sizes(batch_sizes: Sequence[int] | None) -> tuple[int, ...] | None:
    return tuple(batch_sizes) if batch_sizes is not None else None


def _shared(
    est: Estimator, model: ModelSpec, hw: HardwareOption, precisions: Sequence[str], seq: float
) -> list[Share]:
    """The GPU shares (MIG slices, processes sharing a GPU) searched for ``model`` on ``hw``:
    those its weights are small for at the lightest of ``precisions``
    (:func:`inferencesize.sharing.shares_for`); none when TP 1 cannot run it."""
    if split_problem(est.costs(model), Parallelism()) is not None:
        return []
    weights = []
    for precision in precisions:
        kv = default_kv_precision(precision)
        res = est.resolve(Candidate(model, hw.gpu, hw.system, precision, kv, Parallelism()), seq)
        if res.memory is not None:
            weights.append(res.memory.weights_bytes)
    return shares_for(hw.gpu, min(weights)) if weights else []


def _asked(problem: SplitProblem, explicit: dict[str, bool]) -> bool:
    """Was the degree a split breaks asked for (not "auto")? A degree below 1 always was."""
    dim = problem.constraint.dimension
    return dim is None or explicit[dim]


def _nearest_miss(rejected: list[Rejected], limits: Limits) -> str:
    latency = [r for r in rejected if r.miss_message is not None]
    if latency:
        best = min(latency, key=lambda r: r.miss_ratio)
        assert best.miss_message is not None
        return best.miss_message
    if rejected:
        first = rejected[0]
        return f"no candidate can run it: {first.candidate}: {first.reason}"
    if not limits.active():
        return "no latency limit applies"
    return "no candidates (no hardware, precision or split to try)"


def plan_alone(
    chosen: Plan, est: Estimator, q: Question, options: PlanOptions, top: int = 0
) -> Plan | None:
    """``chosen``'s candidate alone (its hardware, precision, split and GPU share) sized by
    ``est`` for question ``q`` (the one it was planned for: the same lengths, limits and
    traffic) at the same peak, priced and spanned as ``options`` say; None when it meets no
    count. ``top``: plans the search ranks (``plan``'s ``top``)."""
    c = chosen.candidate
    hardware = ((c.gpu, c.system),)
    par = c.par
    space = SearchSpace(
        c.model, hardware, [c.precision], c.kv_precision, [par.tp], [par.pp], [par.ep]
    )
    sizing = chosen.sizing  # the same candidate: its search starts near the chosen answer
    alone = PlanOptions(
        top=top,
        pricing=options.pricing,
        dps=(par.dp,),
        span_nvlink_domain=options.span_nvlink_domain,
        share_gpus=c.share is not None,
        start_share=sizing.start_share(chosen.instances, chosen.peak_rps) if sizing else None,
    )
    result = plan(replace(q, space=space), chosen.peak_rps, est, alone)
    same = [p for p in result.feasible if p.candidate.label() == c.label()]
    return same[0] if same else None
