"""Sizing: the fewest servers and GPUs that serve the peak request rate within the limits.

For every candidate (hardware × precision × valid TP/PP/EP split) the planner resolves the
deployment at ``seq = ISL + OSL`` (memory, split validity) and then searches the operating
point: the per-instance concurrency N (in-flight batching) or batch size B (static batching)
with the highest request rate among the loads in ``[1, max_concurrency]`` whose predicted
TTFT, ITL and E2E meet the limits. Latency is monotone non-decreasing in N, so those loads
are ``[1, N*]`` and bracketing finds N* exactly (no fixed grid), with in-flight batching to
1/64 of a client (a mean load need not be whole, :data:`LOAD_STEPS`). The rate (Little's
law: N / E2E) is usually highest at N*, not always (:func:`search_point`): the highest on
``[1, N*]`` is taken, so a looser limit never needs more instances. Then

* ``instances = ceil(peak / rate)``, ``gpus = instances · tp · pp``;
* instances are packed onto nodes without splitting an instance across NVLink domains:
  ``servers = ceil(instances / floor(gpus_per_node / gpus_per_instance))``. A bare GPU (no
  system) is packed onto nodes of :data:`BARE_GPU_NODE` (8) GPUs, so ``servers`` then counts
  8-GPU nodes. Instances larger than a node (multi-node) are only considered when no
  single-node split works; each then takes ``ceil(gpus_per_instance / gpus_per_node)`` nodes;
* candidates are ranked on what is paid for, the whole units bought or rented
  (:mod:`inferencesize.economics`: a GB200 NVL72 rack is 18 trays and 72 GPUs however few
  run an instance): servers, then GPUs, then cost per hour, then wall power (or, with another
  ``objective``, by GPUs, cost per hour or power first), then fewer GPUs used; with a budget
  (``check``), plans within it first. The alternatives shown are the best plan of each other
  hardware option, then variants (:func:`alternatives`).

Limits: streaming mode checks every given limit (TTFT, ITL, E2E); sequential mode only E2E
(the whole answer is what counts) (:class:`inferencesize.limits.Limits`).

This module holds what a plan is (:class:`Plan`, :class:`PlanResult`), how plans rank
(:func:`rank`, :func:`alternatives`) and how one candidate is searched (:func:`search_point`,
:func:`search_instances`) and sized (:func:`plan_for`, :func:`at_peak`); the search over every
candidate of a resolved question is :func:`inferencesize.plan_search.plan`. Pure: no I/O, no
printing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from inferencesize.deployment import BARE_GPU_NODE
from inferencesize.economics import (
    Budget,
    Fleet,
    PlanEconomics,
    Pricing,
    input_share,
    objective_key,
)
from inferencesize.economics import plan_economics as _plan_economics
from inferencesize.estimate import Batching, Candidate, Estimator, Resolved, operating_points
from inferencesize.latency import prefill
from inferencesize.limits import Limits as Limits
from inferencesize.outcomes import (
    BatchTooLarge,
    ContextTooLong,
    Described,
    LatencyMiss,
    MemoryShortfall,
    RejectKind,
    RejectReason,
    SearchSummary,
)
from inferencesize.outcomes import Rejected as Rejected
from inferencesize.outcomes import fmt_seconds as fmt_seconds
from inferencesize.packing import instances_for
from inferencesize.packing import pack_servers as pack_servers
from inferencesize.parallelism import split_problem
from inferencesize.planned import ClosedLoad, OpenLoad, UnlimitedOpenLoad, open_loop_op
from inferencesize.serving import InflightArrays, OperatingPoint, inflight_arrays, select
from inferencesize.sharing import whole_gpus
from inferencesize.specs import GpuSpec, SystemSpec
from inferencesize.transformer import ModelCosts
from inferencesize.units import SECONDS_PER_DAY
from inferencesize.vocabulary import DEFAULT_ROUTER, Metric, Objective, Router

if TYPE_CHECKING:  # imported where searched: the open-loop model loads only when used
    from inferencesize.openloop import InstanceSearch

#: Largest multi-node instance considered (in nodes) when nothing fits in one node.
MAX_NODES_PER_INSTANCE = 8

Binding = Literal["ttft", "itl", "e2e", "memory"]
#: A candidate's search: its operating point and binding limit, or why it cannot serve, with
#: the instances the search found (0: sized from the operating point's rate) and, open loop,
#: how it sizes other peaks.
Searched = (
    tuple[OperatingPoint | None, Binding, int, "OpenLoopSizing | None"]
    | tuple[None, RejectReason, int, None]
)


@dataclass(frozen=True)
class HardwareOption:
    """A hardware choice: a GPU, alone or in a system."""

    gpu: GpuSpec
    system: SystemSpec | None = None

    @property
    def id(self) -> str:
        """The system's id, or the bare GPU's."""
        return self.system.id if self.system else self.gpu.id

    @property
    def gpus_per_node(self) -> int:
        return self.system.gpus_per_node if self.system else BARE_GPU_NODE

    def instance_span(self, span_nvlink_domain: bool) -> int:
        """Largest instance of the single-node pass: a node, or with ``span_nvlink_domain`` the
        whole scale-up domain of a rack-scale system (GB200 NVL72: 72 GPUs on 18 4-GPU trays,
        all on NVLink), so wide TP / EP instances are not treated as multi-node."""
        node = self.gpus_per_node
        if span_nvlink_domain and self.system is not None:
            return max(node, self.system.nvlink_domain_size)
        return node


@dataclass(frozen=True)
class FixedCapacity:
    """A candidate's capacity that does not depend on how many instances share the peak
    (closed-loop clients, static batches): its operating point and binding limit, and how one
    instance is loaded below it (``load``; None: taken at the capacity point)."""

    point: OperatingPoint
    binding: Binding
    load: ClosedLoad | UnlimitedOpenLoad | None = None

    def at(self, n: int, peak_rps: float) -> tuple[OperatingPoint, Binding]:
        return self.point, self.binding

    def planned(self, n: int, peak_rps: float) -> OperatingPoint:
        """One of ``n`` instances serving ``peak_rps`` at peak / n (:mod:`inferencesize.planned`)."""
        if isinstance(self.load, ClosedLoad):
            return self.load.at(n, peak_rps, self.point)
        if self.load is not None:
            return self.load.at(n, peak_rps)
        return self.point

    def rate_at(self, n: int, peak_rps: float) -> float:
        """Requests/s one instance serves."""
        return self.point.requests_per_s

    def room(self, n: int, peak_rps: float) -> float:
        """How much room ``n`` instances leave at ``peak_rps`` (more is better): the
        headroom of their capacity over the peak."""
        return n * self.point.requests_per_s / peak_rps - 1.0


@dataclass(frozen=True)
class Plan:
    """One feasible deployment for the peak.

    Its instances, GPUs, servers, power and cost per hour are known when it is made; one
    instance's capacity (``point``: the most it serves within the limits, and the ``binding``
    limit there) and what follows from it (``headroom``, ``tokens_per_day``, ``economics``,
    the cost per million tokens) are worked out when first read (open loop: a rate search a
    plan that is never shown does not need). Plans are ranked by :func:`rank`."""

    candidate: Candidate
    peak_rps: float
    instances: int
    gpus_per_instance: int
    gpus: int
    servers: int
    gpus_per_node: int
    multi_node: bool
    power_watts: float | None
    cost_per_hour_usd: float | None
    efficiency_source: str
    capacity: FixedCapacity | OpenLoopSizing = field(compare=False, repr=False)
    isl: float
    osl: float
    pricing: Pricing = field(compare=False, repr=False)
    prefill_per_prompt_s: float  # GPU time of one prompt in a batched prompt step
    fleet: Fleet = field(compare=False, repr=False)  # the whole units paid for
    trust: str = "datasheet"  # how far its efficiencies were measured (estimate.Resolved)

    @cached_property
    def _at_capacity(self) -> tuple[OperatingPoint, Binding]:
        return self.capacity.at(self.instances, self.peak_rps)

    @property
    def point(self) -> OperatingPoint:
        """One instance at the most it serves within the limits (its capacity)."""
        return self._at_capacity[0]

    @cached_property
    def planned(self) -> OperatingPoint:
        """One instance at the planned load: the peak split over the instances (open loop,
        with the arrivals they see behind the router; closed loop, the least load serving
        it). What its users see at the peak; never more latency than :attr:`point`."""
        return self.capacity.planned(self.instances, self.peak_rps)

    @property
    def binding(self) -> Binding:
        """The limit nearest its bound at that point ("memory": the sustainable rate)."""
        return self._at_capacity[1]

    @property
    def sizing(self) -> OpenLoopSizing | None:
        """Open loop: how the candidate is sized for another peak (None: by its rate)."""
        return self.capacity if isinstance(self.capacity, OpenLoopSizing) else None

    @cached_property
    def rate(self) -> float:
        """Requests/s one instance serves at its operating point (the most within the
        limits; open loop: without solving the point itself)."""
        return self.capacity.rate_at(self.instances, self.peak_rps)

    @property
    def capacity_rps(self) -> float:
        return self.instances * self.rate

    @property
    def headroom(self) -> float:
        return self.capacity_rps / self.peak_rps - 1.0

    @property
    def tokens_per_day(self) -> float:
        return self.capacity_rps * self.osl * SECONDS_PER_DAY

    @cached_property
    def economics(self) -> PlanEconomics:
        c = self.candidate
        share = input_share(self.rate, self.prefill_per_prompt_s)
        return _plan_economics(
            self.pricing, c.gpu, c.system, self.gpus, self.servers, self.gpus_per_node,
            self.capacity_rps, self.isl, self.osl, share,
        )  # fmt: skip

    @property
    def cost_per_million_output_tokens_usd(self) -> float | None:
        return self.economics.tokens.usd_per_million_output  # the one $/M output tokens

    @property
    def shared(self) -> int:
        """1 when its instances share GPUs (MIG slices, processes): at equal size a plan of
        whole-GPU instances ranks first (simpler to run); 0 otherwise."""
        return int(self.candidate.share is not None)

    @property
    def gpus_paid(self) -> int:
        """GPUs of the whole units bought or rented (a GB200 NVL72 rack: 72)."""
        return self.fleet.gpus_paid

    @property
    def servers_paid(self) -> int:
        """Servers (nodes) of the whole units bought or rented (a GB200 NVL72 rack: 18 trays),
        spares included."""
        return self.fleet.nodes_paid

    def within(self, budget: Budget | None) -> bool:
        """Whether what it pays for is within ``budget`` (None: no budget)."""
        return budget is None or budget.holds(
            self.servers_paid, self.gpus_paid, self.cost_per_hour_usd, self.power_watts
        )

    def prefix(
        self, objective: Objective = Objective.SERVERS, budget: Budget | None = None
    ) -> tuple[float, ...]:
        """What ranks it before any tie-break: within ``budget`` first (when one is held),
        then what is paid for — servers, GPUs, cost per hour, power in ``objective``'s order
        (:func:`inferencesize.economics.objective_key`; unknown cost or power last) — then
        whole-GPU instances before shared ones (simpler to run). Non-decreasing in the
        instance count (branch and bound relies on it)."""
        key = objective_key(
            objective,
            self.servers_paid,
            self.gpus_paid,
            self.cost_per_hour_usd,
            self.power_watts,
            self.gpus,
        )
        return (float(not self.within(budget)), *key, self.shared)

    @cached_property
    def room(self) -> float:
        """How much room it leaves at the peak, for breaking ties on everything paid (more
        first): open loop, 1 − the largest statistic / limit at the planned load; closed
        loop, its headroom."""
        return self.capacity.room(self.instances, self.peak_rps)

    def sort_key(
        self, objective: Objective = Objective.SERVERS, budget: Budget | None = None
    ) -> tuple[Any, ...]:
        """Its whole rank: :meth:`prefix`, then more room at the peak first, then its label."""
        return (*self.prefix(objective, budget), -self.room, self.candidate.label())


def prefill_per_prompt_s(dep: Any, isl: float) -> float:
    """GPU time one prompt of ``isl`` tokens takes when prompts are batched as the engine
    does, K = ⌊8192 / ISL⌋ a step (at least one): p(K) / K. The input share of an instance's
    time is the rate times this (:func:`inferencesize.economics.input_share`); one prompt
    alone would count the weights read per step once per prompt (an MoE on a fast GPU: a
    share over 1, every cost and joule put on input, none on output)."""
    from inferencesize.openloop.steps import STEP_TOKENS  # (the open-loop package on demand)

    k = max(1, int(STEP_TOKENS // max(isl, 1.0)))
    return float(prefill(dep, k, isl).total_s) / k


def rank(
    plans: Sequence[Plan],
    objective: Objective = Objective.SERVERS,
    exact: int | None = None,
    budget: Budget | None = None,
) -> list[Plan]:
    """``plans`` best first: by :meth:`Plan.sort_key` — the one ranking rule. A plan's
    room at the peak (open loop: the point at the planned load) is worked out only where it
    breaks a tie, and with ``exact`` only for ties among the first ``exact`` places (those
    shown) or holding the first plan of a hardware option (shown by :func:`alternatives`);
    later ties keep the order of their labels."""

    def prefix(p: Plan) -> tuple[float, ...]:
        return p.prefix(objective, budget)

    by_prefix = sorted(plans, key=lambda p: (*prefix(p), p.candidate.label()))
    out: list[Plan] = []
    seen: set[str] = set()
    for _, tied in itertools.groupby(by_prefix, key=prefix):
        group = list(tied)
        hardware = {p.candidate.hardware_id for p in group}
        if len(group) > 1 and (exact is None or len(out) < exact or not hardware <= seen):
            group.sort(key=lambda p: (-p.room, p.candidate.label()))
        out.extend(group)
        seen |= hardware
    return out


def alternatives(ranked: Sequence[Plan], top: int) -> list[Plan]:
    """The ``top`` plans shown after the chosen one (``ranked[0]``), so that they compare the
    hardware asked about: the best plan of each other hardware option, in rank order, then
    the other plans (variants of a hardware option already shown), in rank order."""
    if top <= 0 or not ranked:
        return []
    seen = {ranked[0].candidate.hardware_id}
    firsts: list[Plan] = []
    variants: list[Plan] = []
    for p in ranked[1:]:
        hw = p.candidate.hardware_id
        (variants if hw in seen else firsts).append(p)
        seen.add(hw)
    return (firsts + variants)[:top]


@dataclass(frozen=True)
class PlanResult:
    """The ranked plans, every rejected candidate with its typed reason, and ``summary``:
    what was searched (:class:`inferencesize.outcomes.SearchSummary`)."""

    chosen: Plan | None
    alternatives: list[Plan]
    rejected: list[Rejected]
    feasible: list[Plan] = field(default_factory=list)
    nearest_miss: str | None = None
    summary: SearchSummary | None = None

    @property
    def binding_constraint(self) -> str | None:
        """The limit that stopped the chosen plan's operating point from growing; when
        infeasible, the kind of the nearest miss."""
        if self.chosen is not None:
            return self.chosen.binding
        if not self.rejected:
            return None
        best = min(self.rejected, key=lambda r: r.miss_ratio)
        return best.kind


def unrunnable(
    res: Resolved, seq_len: float, costs: ModelCosts | None = None
) -> RejectReason | None:
    """Why a resolved candidate cannot run at all, typed from the resolver's fields, or None
    when it holds at least one sequence of ``seq_len`` tokens. The resolver words memory,
    context and hardware reasons itself (``res.reason``): they keep its sentence next to the
    numbers read back from the candidate and its memory budget. ``costs``: the model's, to
    type a split the model's shape rules out (without it such a split reads as unsupported).
    """
    cand, mem, text = res.candidate, res.memory, res.reason
    if res.deployment is None:
        problem = split_problem(costs, cand.par) if costs is not None else None
        return problem or Described(RejectKind.UNSUPPORTED, text or "cannot be deployed")
    if mem is None:
        if seq_len > cand.model.max_context:
            return ContextTooLong(seq_len, cand.model.max_context, text or "")
    elif mem.max_sequences < 1:  # weights + runtime exceed the GPU, or one sequence's KV
        need = mem.weights_bytes + mem.activations_bytes + mem.reserve_bytes
        text = text or NO_ROOM_MESSAGE
        if need >= mem.capacity_bytes:
            return MemoryShortfall(RejectKind.OUT_OF_MEMORY, need, mem.capacity_bytes, text)
        per_sequence, room = mem.kv_bytes_per_sequence, mem.kv_capacity_bytes
        return MemoryShortfall(RejectKind.NO_ROOM, per_sequence, room, text)
    if text is None:
        return None if res.max_concurrency >= 1 else Described(RejectKind.NO_ROOM, NO_ROOM_MESSAGE)
    memory = text.startswith("out of memory")  # a sentence the resolver gave no numbers for
    return Described(RejectKind.OUT_OF_MEMORY if memory else RejectKind.UNSUPPORTED, text)


NO_ROOM_MESSAGE = "out of memory: no room for one sequence"

#: Concurrencies evaluated by the first numpy call of :func:`search_point` (a coarse grid),
#: and at most by each later one (the bracket found, at full resolution when it fits).
SEARCH_BATCH = 256
REFINE_BATCH = 1024
#: In-flight batching: loads per client the search resolves. A deployment serves a request
#: rate, not a whole number of clients; its mean number of requests in flight (Little's law:
#: rate · E2E) is any real number and the closed-loop model is continuous in it. Stopping at
#: whole clients would under-state the rate by up to one client's share (10 % at N = 10).
LOAD_STEPS = 64


def _metrics(
    res: Resolved, isl: float, osl: float, n: Any, batching: Batching
) -> tuple[Any, Any, Any, Any, InflightArrays | None]:
    """TTFT, ITL, E2E (seconds) and requests/s at the concurrencies ``n`` (numpy arrays), and
    the in-flight solution they come from (None for static batching)."""
    assert res.deployment is not None
    if batching == "static":
        ops = operating_points(res, isl, osl, n, n, "static", bounds=False)
        return (
            np.array([o.ttft_s for o in ops]),
            np.array([o.itl_s for o in ops]),
            np.array([o.e2e_s for o in ops]),
            np.array([o.requests_per_s for o in ops]),
            None,
        )
    r = inflight_arrays(res.deployment, isl, osl, n, res.max_concurrency)
    return r.ttft_s, r.itl_s, r.e2e_s, r.requests_per_s, r


@dataclass(frozen=True)
class _Grid:
    """The loads one vectorised call evaluated: their request rates, the first limit each
    misses (index into ``Limits.active()``, −1: none) and the in-flight solution (None for
    static batching)."""

    loads: Any
    rate: Any
    miss: Any
    solved: InflightArrays | None


def _grid(
    res: Resolved, isl: float, osl: float, limits: Limits, n: Any, batching: Batching
) -> tuple[_Grid, list[Any]]:
    """One vectorised call at the loads ``n``: the grid, and its TTFT, ITL and E2E arrays."""
    ttft, itl, e2e, rate, solved = _metrics(res, isl, osl, n, batching)
    grid = _Grid(np.asarray(n, dtype=float), rate, _first_miss(limits, ttft, itl, e2e), solved)
    return grid, [ttft, itl, e2e]


def point_at(res: Resolved, isl: float, osl: float, n: int, batching: Batching) -> OperatingPoint:
    """One operating point, without the bound labels (plans never show them)."""
    return operating_points(
        res, isl, osl, n, n if batching == "static" else res.max_concurrency, batching, bounds=False
    )[0]


def _first_miss(limits: Limits, ttft: Any, itl: Any, e2e: Any) -> Any:
    """Per element: index into ``limits.active()`` of the first limit missed, or -1."""
    out = np.full(np.shape(ttft), -1)
    values = {"ttft": ttft, "itl": itl, "e2e": e2e}
    for i, (name, limit) in reversed(list(enumerate(limits.active()))):
        out = np.where(values[name] > limit, i, out)
    return out


def _loads(lo: float, hi: float, steps: int) -> Any:
    """The loads in ``[lo, hi]`` (both included) one call evaluates: every grid point (1/``steps``
    of a client) when they fit in :data:`REFINE_BATCH`, else whole clients to narrow it down."""
    points = round((hi - lo) * steps) + 1
    if points <= REFINE_BATCH:
        ns = np.linspace(lo, hi, points)
    else:
        ns = np.unique(np.linspace(lo, hi, REFINE_BATCH).round())
    return ns.round() if steps == 1 else ns


def search_point(
    res: Resolved,
    isl: float,
    osl: float,
    limits: Limits,
    batching: Batching,
    batch_sizes: Sequence[int] | None = None,
) -> tuple[OperatingPoint, Binding] | tuple[None, RejectReason]:
    """The operating point with the highest request rate among the concurrencies (batches) in
    ``[1, max_concurrency]`` meeting the limits, and the limit that binds the load.

    Latency is monotone non-decreasing in the load (more clients share every step and queue
    longer; the one exception, ITL dipping by up to ~0.1 % between 1 and 2 clients where a
    lone client's own prompt counts as interference, only makes N* conservative there), so
    the loads meeting the limits are taken as the interval ``[1, N*]`` below the first load
    that misses one, which a looser limit can only widen. N* is bracketed exactly (no fixed
    grid): a coarse grid of :data:`SEARCH_BATCH` whole concurrencies in one vectorised call,
    then the bracket found at full resolution (every batch size; in-flight, every
    1/:data:`LOAD_STEPS` of a client; :data:`REFINE_BATCH` points per call) until the bracket
    is two neighbours: two array calls (rarely three) per candidate instead of one per
    bisection step. The rate is usually highest at N*, but not always: near the KV limit and
    with the closed loop's prefill stretch it can fall with the load (and rise again), and a
    looser limit must never need more instances. So the point is the load in ``[1, N*]`` with
    the highest rate (:func:`_highest_rate`, at the same resolution; N* itself unless another
    load's rate is higher by more than :data:`RATE_MARGIN`), usually without another call.

    The binding limit is the one that stops the load at N* from growing (what the next load
    misses; ``"memory"`` when N* is ``max_concurrency``), also when the chosen load is below
    N*: it is the limit a looser value of which lets the load grow.

    ``batch_sizes`` (static batching): only these sizes are allowed; each one that fits in
    memory is evaluated (:func:`_search_sizes`).

    Returns (point, binding limit) or (None, reason): the candidate cannot run
    (:func:`unrunnable`) or concurrency 1 already misses a limit
    (:class:`~inferencesize.outcomes.LatencyMiss`).
    """
    top = res.max_concurrency
    if top < 1 or res.deployment is None:
        why = unrunnable(res, isl + osl)
        assert why is not None
        return None, why
    if batching == "static" and batch_sizes is not None:
        return _search_sizes(res, isl, osl, limits, batch_sizes)
    active = limits.active()
    ns = np.unique(np.linspace(1, top, min(top, SEARCH_BATCH)).round().astype(int))
    grid, lat = _grid(res, isl, osl, limits, ns, batching)
    if grid.miss[0] >= 0:
        return None, _latency_miss(res, isl, osl, limits, batching, 1, lat, grid.miss)
    grids = [grid]
    binding: Binding = "memory"
    steps = 1 if batching == "static" else LOAD_STEPS  # grid points per client
    while True:
        bad = np.flatnonzero(grid.miss >= 0)
        if bad.size == 0:
            lo = grid.loads[-1]
            break
        j = int(bad[0])
        lo, hi = grid.loads[j - 1], grid.loads[j]
        binding = active[int(grid.miss[j])][0]
        if round(float(hi - lo) * steps) + 1 <= 2:
            break
        grid, _ = _grid(res, isl, osl, limits, _loads(lo, hi, steps), batching)
        grids.append(grid)
    best, at = _highest_rate(res, isl, osl, limits, batching, grids, float(lo), steps)
    if best.solved is None:  # static batching
        return point_at(res, isl, osl, int(best.loads[at]), batching), binding
    n = best.loads[at : at + 1]
    pick = operating_points(res, isl, osl, n, n, "inflight", select(best.solved, [at]), False)
    return pick[0], binding


#: Another load meeting the limits replaces the largest one only when its rate is higher by
#: more than this share: the closed loop's rate is solved to ~1e-12, so where the rate is flat
#: (past the KV limit another client only queues) the largest load stays.
RATE_MARGIN = 1e-9
#: Local maxima of the rate refined per call of :func:`_highest_rate` (the highest first), and
#: the calls it makes at most (each narrows every bracket to whole clients or to the grid).
RATE_PEAKS = 4
RATE_ROUNDS = 8


def _highest_rate(
    res: Resolved,
    isl: float,
    osl: float,
    limits: Limits,
    batching: Batching,
    grids: list[_Grid],
    top: float,
    steps: int,
) -> tuple[_Grid, int]:
    """The load in ``[1, top]`` (``top`` = N*, the largest load meeting the limits) with the
    highest request rate, at the search's resolution (1/``steps`` of a client): (grid, index).

    The loads the search evaluated (the coarse grid and the brackets) are merged; when none
    that meets the limits has a higher rate than N* by more than :data:`RATE_MARGIN` (the rate
    is monotone, the usual case), N* it is, with no further call. Otherwise each local maximum
    of the rate above N*'s (the :data:`RATE_PEAKS` highest) is refined between its evaluated
    neighbours, at full resolution when it fits in :data:`REFINE_BATCH` points (else over whole
    clients first), all in one vectorised call, until every such maximum's neighbours are one
    grid step away; then the highest rate evaluated. Exact on the grid where the rate is
    unimodal between the coarse grid's neighbours of a peak (it is smooth in the load)."""
    last = grids[-1]  # the search's last call holds N*
    at = np.flatnonzero(last.loads == top)
    if at.size:  # the usual case first, without merging: no load beats N*'s rate
        bar = last.rate[at[0]] * (1 + RATE_MARGIN)
        if not any(np.any(g.rate[(g.miss < 0) & (g.loads <= top)] > bar) for g in grids):
            return last, int(at[0])
    for call in range(RATE_ROUNDS + 1):
        latest = grids[::-1]  # a load evaluated twice: the latest call's solution
        loads = np.concatenate([g.loads for g in latest])
        _, first = np.unique(loads, return_index=True)  # sorted by load
        rate = np.concatenate([g.rate for g in latest])[first]
        ok = np.concatenate([g.miss < 0 for g in latest])[first] & (loads[first] <= top)
        keep = first[ok]
        f_loads, f_rate = loads[keep], rate[ok]
        better = f_rate > f_rate[-1] * (1 + RATE_MARGIN)  # f_loads[-1] is N*
        if not better.any():
            return _origin(latest, int(keep[-1]))
        left = np.concatenate([[-np.inf], f_rate[:-1]])
        right = np.concatenate([f_rate[1:], [-np.inf]])
        peaks = np.flatnonzero(better & (f_rate >= left) & (f_rate >= right))
        peaks = peaks[np.argsort(-f_rate[peaks], kind="stable")[:RATE_PEAKS]]
        lo, hi = f_loads[np.maximum(peaks - 1, 0)], f_loads[peaks + 1]
        coarse = (hi - lo) * steps > 2.5  # the neighbours are not one grid step either side
        if not coarse.any() or call == RATE_ROUNDS:
            break
        ns = np.unique(
            np.concatenate(
                [_loads(a, b, steps) for a, b in zip(lo[coarse], hi[coarse], strict=True)]
            )
        )
        grids.append(_grid(res, isl, osl, limits, ns, batching)[0])
    return _origin(latest, int(keep[int(np.argmax(f_rate))]))


def _origin(grids: list[_Grid], flat: int) -> tuple[_Grid, int]:
    """The grid and index of element ``flat`` of the grids' concatenated loads."""
    for g in grids:
        if flat < g.loads.size:
            return g, flat
        flat -= g.loads.size
    raise IndexError(flat)


#: The lightest load an open-loop candidate is judged at when even it misses (a rate this far
#: below the instance's sustainable rate is alone in the engine for practical purposes).
LIGHT_LOAD_SHARE = 1e-3


def search_instances(
    res: Resolved,
    isl: float,
    osl: float,
    limits: Limits,
    peak_rps: float,
    cv: float = 1.0,
    router: Router | str = DEFAULT_ROUTER,
    search: InstanceSearch | None = None,
    start: float | None = None,
) -> Searched:
    """Open loop: the fewest instances of one in-flight deployment that serve ``peak_rps``
    behind ``router`` with every limit met at its statistic (fleet arrivals with gap
    coefficient of variation ``cv``; :class:`inferencesize.openloop.InstanceSearch`), the
    operating point of one of them at the most it serves within the limits there (means,
    with the percentiles), and the limit that binds it (the one nearest its limit there).

    Returns (None, reason, 0) when the candidate cannot run, or when even a vanishing rate
    misses a limit (:class:`~inferencesize.outcomes.LatencyMiss` at the lightest load).
    ``search``: the candidate's search where a caller has already asked it something (its
    points are reused; the answer is the same); ``start``: else the share of the sustainable
    rate its first point tries (None: the search's own; only which points are solved depends on
    it)."""
    from inferencesize.openloop import InstanceSearch, max_rate_rps, open_loop, steps_of

    top = res.max_concurrency
    if top < 1 or res.deployment is None:
        why = unrunnable(res, isl + osl)
        assert why is not None
        return None, why, 0, None
    dep = res.deployment
    wanted = limits.open_loop_limits()
    if not wanted:  # no limit: the sustainable rate
        rate = max_rate_rps(dep, isl, osl, max_in_flight=top)
        n = instances_for(peak_rps, rate)
        pt = open_loop(dep, isl, osl, rate * (1.0 - 1e-9), cv=cv, max_in_flight=top)
        return _open_loop_op(pt, rate, osl), "memory", n, None
    if search is None:
        search = InstanceSearch(steps_of(dep, isl, osl, top), wanted, cv, router, start=start)
    n_found = search.fewest(peak_rps)
    if n_found is None:
        light = LIGHT_LOAD_SHARE * max_rate_rps(dep, isl, osl, max_in_flight=top)
        pt = open_loop(dep, isl, osl, light, cv=cv, max_in_flight=top)
        name, value, limit = max(
            ((n, _at_statistic(pt, n, limits.statistic(n)), lim) for n, lim in limits.active()),
            key=lambda t: t[1] / t[2],
        )
        return (
            None,
            LatencyMiss(
                name, value, limit, at=0, unit="request rate", statistic=limits.statistic(name)
            ),
            0,
            None,
        )
    # one instance's capacity there is found when first read (a plan that is shown)
    return None, "memory", n_found, OpenLoopSizing(search, limits, osl)


@dataclass(frozen=True)
class OpenLoopSizing:
    """How an open-loop candidate is sized for any peak: its instance search (the count, and
    one instance's capacity at it) and the limits; a sweep re-sizes a plan with it."""

    search: InstanceSearch
    limits: Limits
    osl: float

    def rate_at(self, n: int, peak_rps: float) -> float:
        """Requests/s one of ``n`` instances serving ``peak_rps`` serves at most within the
        limits (its point is not solved)."""
        return self.search.capacity_rps(n, peak_rps)

    def start_share(self, n: int, peak_rps: float) -> float:
        """Where a search of the same candidate under other assumptions (another efficiency
        set, cv or lengths) starts (``InstanceSearch``'s ``start``): the share of one
        instance's sustainable rate that one of ``n`` instances serving ``peak_rps`` serves at
        most within the limits. Its capacity search starts by it, and its count search at
        peak / that rate."""
        return min(self.rate_at(n, peak_rps) / self.search.top_rps, 0.999)

    def room(self, n: int, peak_rps: float) -> float:
        """How much room ``n`` instances leave at ``peak_rps`` (more is better): 1 − the
        largest statistic / limit at the planned load (the point the count search solved; no
        capacity search)."""
        return 1.0 - self.search.margin(peak_rps, n)

    def at(self, n: int, peak_rps: float) -> tuple[OperatingPoint, Binding]:
        """One of ``n`` instances serving ``peak_rps`` at the most it serves within the
        limits, and the limit that binds it there (none within 1 %: the instance's
        sustainable rate, "memory")."""
        rate, pt = self.search.capacity_point(n, peak_rps)
        op = _open_loop_op(pt, rate, self.osl)
        limits = self.limits
        binding: Binding = "memory"
        ratios = [
            (_at_statistic(pt, name, limits.statistic(name)) / lim, name)
            for name, lim in limits.active()
        ]
        if ratios and max(ratios)[0] >= 0.99:
            binding = max(ratios)[1]
        return op, binding

    def planned(self, n: int, peak_rps: float) -> OperatingPoint:
        """One of ``n`` instances at the planned load, peak / n, with the arrivals ``n``
        instances see behind the router."""
        return OpenLoad(self.search, self.osl).at(n, peak_rps)


_open_loop_op = open_loop_op


def _at_statistic(pt: Any, name: Metric, statistic: str) -> float:
    """``pt``'s ``name`` latency at ``statistic`` ("mean" or "pNN"), seconds."""
    return float(pt.statistic(name, statistic))


def _latency_miss(
    res: Resolved,
    isl: float,
    osl: float,
    limits: Limits,
    batching: Batching,
    at: int,
    lat: list[Any],
    miss: Any,
) -> LatencyMiss:
    """The first limit missed at load ``at``, the first of the vectorised ``lat`` / ``miss``
    arrays: from the scalar operating point, or from the arrays where rounding has the scalar
    point meet every limit."""
    op = point_at(res, isl, osl, at, batching)
    assert op is not None
    found = limits.miss(op)
    if found is None:
        name, limit = limits.active()[int(miss[0])]
        found = (name, float(lat[("ttft", "itl", "e2e").index(name)][0]), limit)
    unit: Literal["concurrency", "batch size"] = "concurrency"
    if batching == "static":
        unit = "batch size"
    return LatencyMiss(*found, at=at, unit=unit)


def _search_sizes(
    res: Resolved,
    isl: float,
    osl: float,
    limits: Limits,
    batch_sizes: Sequence[int],
) -> tuple[OperatingPoint, Binding] | tuple[None, RejectReason]:
    """Static batching at a fixed set of batch sizes: the highest rate among the sizes up to
    the largest one meeting the limits (that one unless another's rate is higher by more than
    :data:`RATE_MARGIN`). Binding: what the next allowed size misses; memory when none is left
    below the KV cap."""
    top = res.max_concurrency
    sizes = np.array(sorted({b for b in batch_sizes if 1 <= b <= top}), dtype=int)
    if sizes.size == 0:
        return None, BatchTooLarge(min(batch_sizes), top)
    grid, lat = _grid(res, isl, osl, limits, sizes, "static")
    ok = np.flatnonzero(grid.miss < 0)
    active = limits.active()
    if ok.size == 0:
        return None, _latency_miss(res, isl, osl, limits, "static", int(sizes[0]), lat, grid.miss)
    last = int(ok[-1])
    best = int(ok[np.argmax(grid.rate[ok])])
    pick = best if grid.rate[best] > grid.rate[last] * (1 + RATE_MARGIN) else last
    op = point_at(res, isl, osl, int(sizes[pick]), "static")
    assert op is not None
    nxt = np.flatnonzero(sizes > sizes[last])
    binding: Binding = active[int(grid.miss[nxt[0]])][0] if nxt.size else "memory"
    return op, binding


def plan_for(
    cand: Candidate,
    res: Resolved,
    op: OperatingPoint | None,
    binding: Binding,
    hw: HardwareOption,
    peak: float,
    isl: float,
    osl: float,
    pricing: Pricing | None = None,
    instances: int | None = None,
    sizing: OpenLoopSizing | None = None,
    load: ClosedLoad | UnlimitedOpenLoad | None = None,
) -> Plan:
    """``cand`` sized for ``peak``: at the rate of ``op`` (its capacity; ``instances`` when
    given), or open loop at the ``instances`` its ``sizing`` found (``op`` then None: the
    capacity is found when first read). ``load``: how one instance is loaded below its
    capacity (:attr:`Plan.planned`) where ``sizing`` does not say it."""
    per = cand.par.gpus
    capacity: FixedCapacity | OpenLoopSizing
    if sizing is not None:
        assert instances is not None
        capacity = sizing
    else:
        assert op is not None
        capacity = FixedCapacity(op, binding, load)
        if instances is None:
            instances = instances_for(peak, op.requests_per_s)
    gpus = whole_gpus(instances, cand.share, per)  # slices of a GPU round up to GPUs
    node = hw.gpus_per_node
    multi = per > node
    pricing = pricing or Pricing()
    packed = pack_servers(gpus, 1, node) if cand.share else pack_servers(instances, per, node)
    servers = packed + pricing.spare_servers  # N + k
    assert res.deployment is not None
    # power and cost per hour depend on what is paid for, not on the throughput
    paid = _plan_economics(pricing, hw.gpu, hw.system, gpus, servers, node, peak, isl, osl, 0.0)
    assert paid.fleet is not None
    return Plan(
        candidate=cand,
        peak_rps=peak,
        instances=instances,
        gpus_per_instance=per,
        gpus=gpus,
        servers=servers,
        gpus_per_node=node,
        multi_node=multi,
        power_watts=paid.it_watts,
        cost_per_hour_usd=paid.cost.usd_per_hour if paid.cost is not None else None,
        efficiency_source=res.efficiency_source,
        capacity=capacity,
        isl=isl,
        osl=osl,
        pricing=pricing,
        prefill_per_prompt_s=prefill_per_prompt_s(res.deployment, isl),
        fleet=paid.fleet,
        trust=res.trust,
    )


def at_peak(
    p: Plan,
    peak_rps: float,
    isl: float,
    osl: float,
    est: Estimator,
    pricing: Pricing | None = None,
) -> Plan:
    """The same candidate sized for another peak: arithmetic on its operating point, or, open
    loop, its instance search for that peak (a router's arrivals depend on the fleet size; the
    search's nodes are shared by every peak). Feasibility does not depend on the peak, so a
    sweep plans once per workload and re-sizes each plan for every traffic level. None when
    the candidate cannot serve that peak (open loop only: it always can)."""
    if peak_rps <= 0:
        raise ValueError(f"peak_rps must be > 0 (got {peak_rps})")
    c = p.candidate
    res = est.resolve(c, isl + osl)  # cached: the deployment the plan was made with
    hw = HardwareOption(c.gpu, c.system)
    if p.sizing is None:
        load = p.capacity.load if isinstance(p.capacity, FixedCapacity) else None
        return plan_for(c, res, p.point, p.binding, hw, peak_rps, isl, osl, pricing, load=load)
    n = p.sizing.search.fewest(peak_rps)
    assert n is not None  # feasible at one peak: a request alone meets the limits
    return plan_for(c, res, None, "memory", hw, peak_rps, isl, osl, pricing, n, p.sizing)
