"""Disaggregated serving: separate prefill and decode pools (xPyD), sized for the peak.

A prefill instance only prefills; a decode instance only decodes; the prompt's KV cache moves
from one to the other over the interconnect (DistServe, Zhong et al. OSDI 2024; Splitwise,
Patel et al. ISCA 2024; NVIDIA Dynamo). Each pool has its own hardware, precision and split.

Prefill pool (an instance batches ``p`` whole prompts per step of time T(p)):

* rate = p / T(p) requests/s per instance (prefill-only steps back to back);
* TTFT = 1.5 · T(p) + t_kv: at full load a new prompt waits on average half a step for the
  batch in progress, then its own step, then the KV transfer;
* the largest p whose TTFT meets the budget (TTFT limit; with an E2E limit, also what the
  decode pool leaves), at most as many prompts as the instance's KV memory holds at ISL.
* Context parallelism (``cp`` > 1, long prompts): each prompt is split into ``cp`` chunks on
  ``cp`` groups of TP × PP GPUs (ring attention, load-balanced). Linear work per group is
  that of one chunk; attention does 1/cp of the prompt's causal pairs; each group passes its
  chunk's KV around the ring (cp − 1 hops per layer), overlapped with attention (only the
  excess adds). Weights are replicated on every group.

KV transfer: bytes = the prompt's whole KV cache (all layers, all KV heads, the KV precision
of the prefill pool); t_kv = alpha + bytes / (streams · link bandwidth per GPU), streams =
min(GPUs of a prefill attention group, GPUs of a decode one) (every GPU of the group holding the
sequence sends its shard over its own link; with attention DP a sequence lives on one group). The link is NVLink when both pools sit in one rack-scale NVLink domain (same
system, domain larger than a node, both instances fit in it), else the NIC network.

Decode pool (``b`` sequences in flight, no prefills interrupt the steps):

* ITL = decode step at batch b and mean context ISL + OSL / 2, per output token (a speculative
  step emits several);
* rate = b / ((OSL − 1) · ITL) (a request holds a slot for OSL − 1 steps: the first token
  comes from the prefill pool);
* the largest b meeting ITL (and E2E together with the prefill TTFT) and KV memory.

Pure: no I/O, no printing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inferencesize.comm import Link, p2p_time
from inferencesize.deployment import (
    NETWORK_LATENCY_S,
    default_kv_precision,
    links,
)
from inferencesize.economics import (
    fleet_it_watts,
    fleet_of,
    objective_key,
    sales_unit,
    server_power,
)
from inferencesize.estimate import Candidate, Estimator, Resolved
from inferencesize.latency import Deployment, per_token_decode_s, prefill
from inferencesize.packing import instances_for, pack_servers
from inferencesize.parallelism import (
    Parallelism,
    kv_share_per_gpu,
    layers_per_stage,
    valid_splits,
)
from inferencesize.planner import (
    MAX_NODES_PER_INSTANCE,
    HardwareOption,
    PlanResult,
    Rejected,
    fmt_seconds,
)
from inferencesize.question import Question, SearchSpace
from inferencesize.queueing import e2e_s
from inferencesize.specs import SystemSpec
from inferencesize.transformer import (
    ModelCosts,
    attention_pairs,
    kv_tokens,
    linear_state_bytes_per_sequence,
)
from inferencesize.vocabulary import Objective

#: A new prompt waits on average half a prefill step, then its own (see module docstring).
PREFILL_TTFT_STEPS = 1.5


@dataclass(frozen=True)
class PoolSpec:
    """The candidates of one pool: its search space (the model, hardware, precisions and
    splits, None = auto: :func:`inferencesize.question.part_space`) and the degrees only a
    pool has."""

    space: SearchSpace
    cps: Sequence[int] = (1,)  # context parallelism (prefill pool only)
    dps: Sequence[int] | None = None  # attention data parallelism (MoE), None = 1
    span_nvlink_domain: bool = False  # instances may fill a rack-scale NVLink domain


@dataclass(frozen=True)
class PoolPlan:
    """One pool sized for the peak."""

    role: str  # "prefill" | "decode"
    candidate: Candidate
    cp: int
    batch: int  # prompts per prefill step, or sequences in flight on a decode instance
    step_s: float  # prefill step T(p), or decode step (= ITL)
    rate: float  # requests/s per instance
    instances: int
    gpus_per_instance: int
    gpus: int
    servers: int
    gpus_per_node: int
    power_watts: float | None
    cost_per_hour_usd: float | None
    efficiency_source: str
    servers_paid: int = 0  # nodes of the whole units paid for (economics.Fleet)
    gpus_paid: int = 0

    def label(self) -> str:
        cp = f" cp{self.cp}" if self.cp > 1 else ""
        return self.candidate.label() + cp

    def sort_key(self) -> tuple[Any, ...]:
        """What is paid for, as aggregated plans rank (:func:`economics.objective_key`)."""
        key = objective_key(
            Objective.SERVERS,
            self.servers_paid,
            self.gpus_paid,
            self.cost_per_hour_usd,
            self.power_watts,
            self.gpus,
        )
        return (*key, self.label())


@dataclass(frozen=True)
class DisaggPlan:
    """Both pools, the KV transfer between them, and the request latency they give."""

    prefill: PoolPlan
    decode: PoolPlan
    peak_rps: float
    kv_transfer_bytes: float
    kv_transfer_s: float
    kv_link: str
    ttft_s: float
    itl_s: float
    e2e_s: float

    @property
    def ratio(self) -> str:
        """xPyD: prefill instances and decode instances."""
        return f"{self.prefill.instances}P{self.decode.instances}D"

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    @property
    def servers(self) -> int:
        return self.prefill.servers + self.decode.servers

    @property
    def servers_paid(self) -> int:
        return self.prefill.servers_paid + self.decode.servers_paid

    @property
    def gpus_paid(self) -> int:
        return self.prefill.gpus_paid + self.decode.gpus_paid

    @property
    def cost_per_hour_usd(self) -> float | None:
        a, b = self.prefill.cost_per_hour_usd, self.decode.cost_per_hour_usd
        return None if a is None or b is None else a + b

    @property
    def power_watts(self) -> float | None:
        a, b = self.prefill.power_watts, self.decode.power_watts
        return None if a is None or b is None else a + b

    @property
    def capacity_rps(self) -> float:
        return min(
            self.prefill.instances * self.prefill.rate, self.decode.instances * self.decode.rate
        )


@dataclass(frozen=True)
class DisaggResult:
    chosen: DisaggPlan | None
    rejected: list[Rejected] = field(default_factory=list)
    reason: str | None = None


@dataclass(frozen=True)
class Comparison:
    """Disaggregated against aggregated serving of the same scenario."""

    disaggregated: DisaggResult
    aggregated: PlanResult

    @property
    def better(self) -> str | None:
        """'disaggregated' or 'aggregated' (what is paid for: fewer servers, then GPUs, then
        cost, then power); None if neither is feasible."""
        d, a = self.disaggregated.chosen, self.aggregated.chosen
        if d is None or a is None:
            return (
                None
                if d is None and a is None
                else ("aggregated" if d is None else "disaggregated")
            )
        dk = _rank(d)
        ak = objective_key(
            Objective.SERVERS,
            a.servers_paid,
            a.gpus_paid,
            a.cost_per_hour_usd,
            a.power_watts,
            a.gpus,
        )
        return "disaggregated" if dk < ak else "aggregated"


# ---------------------------------------------------------------------------------------------
# Step math of the pools
# ---------------------------------------------------------------------------------------------


def prompt_kv_bytes(costs: ModelCosts, kv_bytes_per_element: float, isl: float) -> float:
    """KV bytes of one prompt of ``isl`` tokens, whole model (what moves to the decode pool)."""
    kv = float(kv_tokens(costs, isl)) * costs.kv_elements_per_token_layer * kv_bytes_per_element
    return kv + linear_state_bytes_per_sequence(costs)


def kv_transfer_time(kv_bytes: float, streams: int, link: Link) -> float:
    """alpha + bytes / (streams · per-GPU link bandwidth): every GPU sends its shard."""
    if kv_bytes <= 0:
        return 0.0
    return link.latency_s + kv_bytes / (max(streams, 1) * link.bytes_per_s)


def kv_streams(prefill: Parallelism, decode: Parallelism, cp: int = 1) -> int:
    """GPUs that send one prompt's KV cache at once: a sequence lives on one attention group
    (TP × PP GPUs; with context parallelism, cp of them), and the decode group receives it."""
    return min(prefill.tp * prefill.pp * cp, decode.tp * decode.pp)


def _pairs(costs: ModelCosts, length: float) -> float:
    return float(attention_pairs(costs, length))


def prefill_step_s(
    dep: Deployment, prompts: float, isl: float, cp: int = 1, ring: Link | None = None
) -> float:
    """Time of one prefill-only step of ``prompts`` prompts of ``isl`` tokens (module docs)."""
    if cp <= 1:
        return float(prefill(dep, prompts, isl).total_s)
    chunk = isl / cp
    step = prefill(dep, prompts, chunk)
    own = _pairs(dep.costs, chunk)
    attention = float(step.attention_s) * (_pairs(dep.costs, isl) / cp / own if own else 1.0)
    c = dep.costs
    kv_layer = c.kv_elements_per_token_layer * dep.kv_bytes_per_element
    chunk_bytes = prompts * chunk * kv_layer * kv_share_per_gpu(c, dep.par.tp)
    link = ring or dep.tp_link
    layers = layers_per_stage(c, dep.par.pp) * dep.par.pp
    ring_s = layers * (cp - 1) * p2p_time(chunk_bytes, link, dep.eff.comm)
    return float(
        step.gemm_s + attention + step.comm_s + step.overhead_s + max(ring_s - attention, 0.0)
    )


def decode_itl_s(dep: Deployment, batch: float, isl: float, osl: float) -> float:
    """Decode step at ``batch`` sequences and mean context ISL + OSL / 2 (no prefills), per
    output token."""
    return float(per_token_decode_s(dep, batch, isl + osl / 2.0))


def _largest(top: int, check: Callable[[int], bool]) -> int:
    """Largest n in [1, top] with check(n) (monotone: true then false); 0 if check(1) fails."""
    if top < 1 or not check(1):
        return 0
    if check(top):
        return top
    lo, hi = 1, top
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if check(mid):
            lo = mid
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------------------------------------
# A given xPyD split under closed-loop clients (what published disaggregated runs measure)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClosedLoop:
    """A fixed split at one client count: per-request latencies and the request rate of the
    whole deployment; ``prefill_batch`` prompts per prefill step, ``decode_batch`` sequences
    in flight per decode instance."""

    ttft_s: float
    itl_s: float
    requests_per_s: float
    prefill_batch: float
    decode_batch: float


#: Iterations of the fixed points of :func:`closed_loop` (bisection halves; prefill batch).
_CLOSED_LOOP_HALVINGS = 48
_PREFILL_ITERATIONS = 64


def prefill_ttft_s(
    step: Callable[[float], float], rate_per_instance: float, top: float, t_kv: float
) -> tuple[float, float]:
    """(TTFT, prompts per step) of a prefill instance fed ``rate_per_instance`` prompts/s.

    The instance takes every waiting prompt into its next step: p = max(1, λ · T(p)) (the
    prompts that arrive during a step), the smallest fixed point, at most ``top`` prompts
    (KV slots, or the clients that can be waiting). A prompt waits for the step in progress
    (half a step, times the share of time the instance is busy, ρ = λ · T(p) / p), then its
    own step, then the KV transfer: TTFT = (1 + ρ / 2) · T(p) + t_kv; at full load that is
    the sizing rule's ``PREFILL_TTFT_STEPS`` · T(p) + t_kv. No fixed point under ``top``:
    the pool is saturated (TTFT infinite)."""
    p = 1.0
    for _ in range(_PREFILL_ITERATIONS):
        nxt = max(1.0, rate_per_instance * step(p))
        if nxt > top:
            return math.inf, top
        if abs(nxt - p) <= 1e-9 * p:
            break
        p = nxt
    else:
        return math.inf, p
    t = step(p)
    busy = min(rate_per_instance * t / p, 1.0)
    return (1.0 + (PREFILL_TTFT_STEPS - 1.0) * busy) * t + t_kv, p


#: Points of the geometric grids on which :func:`closed_loop` evaluates the step times.
CLOSED_LOOP_GRID = 256


def _tabulated(step: Callable[[Any], Any], top: float) -> Callable[[float], float]:
    """``step`` evaluated once on a geometric grid over [1, top] (one vectorised call) and
    interpolated linearly in between; flat beyond the ends."""
    grid = np.unique(np.geomspace(1.0, max(top, 1.0), CLOSED_LOOP_GRID))
    values = np.broadcast_to(np.asarray(step(grid), dtype=float), grid.shape)

    def at(x: float) -> float:
        return float(np.interp(x, grid, values))

    return at


def closed_loop(
    prefill_step: Callable[[Any], Any],
    prefill_instances: int,
    prefill_slots: float,
    decode_itl: Callable[[Any], Any],
    decode_instances: int,
    decode_slots: float,
    t_kv: float,
    osl: float,
    clients: float,
) -> ClosedLoop:
    """A fixed xPyD split under ``clients`` closed-loop clients (each sends its next request
    when the last one ends).

    Decode: b sequences in flight per decode instance, ITL(b) (``decode_itl``, at least one
    sequence per step); the pool finishes X = D · b / ((OSL − 1) · ITL) requests/s. Prefill:
    each of P instances gets X / P prompts/s (:func:`prefill_ttft_s`). Little's law closes
    the loop: every client is waiting for its first token or decoding, clients = X · TTFT +
    D · b; b is found by bisection (the left side grows with b). When the decode slots are
    full, or the prefill pool saturates, the clients left over wait (in the engine's queue)
    for their first token: TTFT = (clients − D · b) / X.

    ``prefill_step`` (prompts) and ``decode_itl`` (batch) take numpy arrays: each is evaluated
    once on a geometric grid of :data:`CLOSED_LOOP_GRID` points and interpolated (both are
    smooth, nearly affine in the batch)."""
    steps = max(osl - 1.0, 1.0)
    top_prompts = max(min(prefill_slots, clients / max(prefill_instances, 1)), 1.0)
    top = min(decode_slots, clients / decode_instances)
    prefill_step = _tabulated(prefill_step, top_prompts)
    decode_itl = _tabulated(decode_itl, top)

    def state(b: float) -> tuple[float, float, float, float]:
        itl = decode_itl(max(b, 1.0))
        rate = decode_instances * b / (steps * itl)
        ttft, p = prefill_ttft_s(prefill_step, rate / prefill_instances, top_prompts, t_kv)
        return itl, rate, ttft, p

    def excess(b: float) -> float:
        _, rate, ttft, _ = state(b)
        return rate * ttft + decode_instances * b - clients

    lo, hi = 0.0, top
    if excess(top) <= 0:
        lo = top
    else:
        for _ in range(_CLOSED_LOOP_HALVINGS):
            mid = 0.5 * (lo + hi)
            if excess(mid) <= 0:
                lo = mid
            else:
                hi = mid
    b = max(lo, 1e-9)
    itl, rate, _, p = state(b)
    waiting = max(clients - decode_instances * b, 0.0)
    return ClosedLoop(waiting / rate, itl, rate, p, b)


# ---------------------------------------------------------------------------------------------
# Sizing
# ---------------------------------------------------------------------------------------------


def _price(hw: HardwareOption) -> float | None:
    if hw.system is not None and hw.system.price_usd_per_gpu_hour is not None:
        return hw.system.price_usd_per_gpu_hour
    return hw.gpu.price_usd_per_gpu_hour


def _pool_plan(
    role: str,
    res: Resolved,
    hw: HardwareOption,
    cp: int,
    batch: int,
    step_s: float,
    rate: float,
    peak: float,
) -> PoolPlan:
    per = res.candidate.par.gpus * cp
    instances = instances_for(peak, rate)
    node = hw.gpus_per_node
    servers = pack_servers(instances, per, node)
    gpus = instances * per
    # Paid and powered in whole units on the one power basis, as aggregated plans are.
    fleet = fleet_of(sales_unit(hw.system, node), servers, gpus)
    node_power = server_power(hw.gpu, hw.system, node)
    power = fleet_it_watts(node_power, fleet) if node_power is not None else None
    price = _price(hw)
    return PoolPlan(
        role=role,
        candidate=res.candidate,
        cp=cp,
        batch=batch,
        step_s=step_s,
        rate=rate,
        instances=instances,
        gpus_per_instance=per,
        gpus=gpus,
        servers=servers,
        gpus_per_node=node,
        power_watts=power,
        cost_per_hour_usd=price * fleet.gpus_paid if price is not None else None,
        efficiency_source=res.efficiency_source,
        servers_paid=fleet.nodes_paid,
        gpus_paid=fleet.gpus_paid,
    )


def _candidates(
    pool: PoolSpec, est: Estimator, multi_node: bool
) -> list[tuple[HardwareOption, Candidate, int]]:
    out = []
    space = pool.space
    model = space.model
    for gpu, system in space.hardware:
        hw = HardwareOption(gpu, system)
        node = hw.instance_span(pool.span_nvlink_domain)
        costs = est.costs(model)
        for cp in pool.cps:
            top = max(node, hw.gpus_per_node * MAX_NODES_PER_INSTANCE)
            lo, hi = (node, top) if multi_node else (0, node)
            # the prefill instance has tp · pp · dp · cp GPUs: bound the split accordingly
            splits = valid_splits(
                costs,
                max(hi // cp, 1),
                list(space.tps) if space.tps else None,
                list(space.pps) if space.pps else None,
                list(space.eps) if space.eps else None,
                list(pool.dps) if pool.dps else None,
            )
            for par in splits:
                if not lo < par.gpus * cp <= hi:
                    continue
                for precision in space.precisions or gpu.native_precisions():
                    kv = space.kv_precision or default_kv_precision(precision)
                    out.append((hw, Candidate(model, gpu, system, precision, kv, par), cp))
    return out


def kv_link(prefill: PoolPlan, decode: PoolPlan, alpha_s: float) -> Link:
    """NVLink when both pools share one rack-scale NVLink domain, else the NIC network."""
    return kv_link_between(
        prefill.candidate.system,
        decode.candidate.system,
        prefill.gpus_per_instance + decode.gpus_per_instance,
        alpha_s,
    )


def kv_link_between(
    ps: SystemSpec | None, ds: SystemSpec | None, pair_gpus: int, alpha_s: float
) -> Link:
    """The link a prompt's KV cache takes from a prefill instance on ``ps`` to a decode
    instance on ``ds`` (``pair_gpus``: the GPUs of the two instances): NVLink when both sit
    in one rack-scale NVLink domain, else the NIC network."""
    if (
        ps is not None
        and ds is not None
        and ps.id == ds.id
        and ps.nvlink_domain_size > ps.gpus_per_node
        and pair_gpus <= ps.nvlink_domain_size
        and ps.intra_node_bandwidth_bytes_per_s > 0
    ):
        return Link("nvlink", ps.intra_node_bandwidth_bytes_per_s / 2, alpha_s)
    bws = [
        s.inter_node_bandwidth_bytes_per_s
        for s in (ps, ds)
        if s is not None and s.inter_node_bandwidth_bytes_per_s > 0
    ]
    return Link("network", min(bws) if bws else 12.5e9, NETWORK_LATENCY_S)


def _best_decode(
    pool: PoolSpec,
    est: Estimator,
    isl: float,
    osl: float,
    itl_cap: float,
    peak: float,
    rejected: list[Rejected],
) -> PoolPlan | None:
    found: list[PoolPlan] = []
    for multi in (False, True):
        for hw, cand, _ in _candidates(pool, est, multi):
            res = est.resolve(cand, isl + osl)
            dep = res.deployment
            if res.reason is not None or dep is None:
                rejected.append(
                    Rejected(f"decode {cand.label()}", res.reason or "invalid", "invalid")
                )
                continue

            def fits(n: int, d: Deployment = dep) -> bool:
                return decode_itl_s(d, n, isl, osl) <= itl_cap

            b = _largest(res.max_concurrency, fits)
            if b == 0:
                itl1 = decode_itl_s(dep, 1, isl, osl)
                rejected.append(
                    Rejected(
                        f"decode {cand.label()}",
                        f"ITL {fmt_seconds(itl1)} > budget {fmt_seconds(itl_cap)} at batch 1",
                        "itl",
                    )
                )
                continue
            itl = decode_itl_s(dep, b, isl, osl)
            rate = b / (max(osl - 1.0, 1.0) * itl)
            found.append(_pool_plan("decode", res, hw, 1, b, itl, rate, peak))
        if found:
            break
    return min(found, key=PoolPlan.sort_key) if found else None


def _best_prefill(
    pool: PoolSpec,
    est: Estimator,
    isl: float,
    ttft_budget: float,
    decode: PoolPlan,
    peak: float,
    rejected: list[Rejected],
) -> tuple[PoolPlan, float, float, str] | None:
    found: list[tuple[PoolPlan, float, float, str]] = []
    for multi in (False, True):
        for hw, cand, cp in _candidates(pool, est, multi):
            res = est.resolve(cand, isl)
            dep = res.deployment
            name = f"prefill {cand.label()}" + (f" cp{cp}" if cp > 1 else "")
            if res.reason is not None or dep is None:
                rejected.append(Rejected(name, res.reason or "invalid", "invalid"))
                continue
            ring = links(
                hw.gpu, hw.system, Parallelism(tp=cand.par.tp * cp), dep.eff.comm_latency_s
            ).tp
            probe = _pool_plan("prefill", res, hw, cp, 1, 1.0, 1.0, peak)
            link = kv_link(probe, decode, dep.eff.comm_latency_s)
            kv_bytes = prompt_kv_bytes(dep.costs, dep.kv_bytes_per_element, isl)
            streams = kv_streams(cand.par, decode.candidate.par, cp)
            t_kv = kv_transfer_time(kv_bytes, streams, link)
            budget = ttft_budget - t_kv

            def ok(
                p: int, d: Deployment = dep, c: int = cp, r: Link = ring, b: float = budget
            ) -> bool:
                return PREFILL_TTFT_STEPS * prefill_step_s(d, p, isl, c, r) <= b

            top = res.max_concurrency * cp  # a prompt's KV is split over the cp groups
            p = _largest(top, ok)
            if p == 0:
                t1 = PREFILL_TTFT_STEPS * prefill_step_s(dep, 1, isl, cp, ring) + t_kv
                rejected.append(
                    Rejected(
                        name,
                        f"TTFT {fmt_seconds(t1)} (incl. KV transfer {fmt_seconds(t_kv)})"
                        f" > budget {fmt_seconds(ttft_budget)}",
                        "ttft",
                    )
                )
                continue
            step = prefill_step_s(dep, p, isl, cp, ring)
            plan = _pool_plan("prefill", res, hw, cp, p, step, p / step, peak)
            found.append((plan, kv_bytes, t_kv, link.name))
        if found:
            break
    return min(found, key=lambda f: f[0].sort_key()) if found else None


#: ITL budgets (s) tried for the decode pool under an E2E limit: 1 ms … 1 s, 8 per decade.
ITL_LADDER_S = tuple(10.0 ** (k / 8.0) for k in range(-24, 1))


def plan_disaggregated(
    q: Question,
    prefill_pool: PoolSpec,
    decode_pool: PoolSpec,
    peak_rps: float,
    est: Estimator,
) -> DisaggResult:
    """Size a prefill pool and a decode pool for question ``q`` (its lengths and limits; each
    pool searches its own space) at the peak (module docstring).

    Decode is sized first for an ITL budget, then prefill gets the TTFT limit and what E2E
    leaves after the decode pool's actual ITL. Without an E2E limit the ITL budget is the ITL
    limit. With one, every budget of a fixed geometric ladder (:data:`ITL_LADDER_S`, plus the
    ITL limit) that leaves time for decoding is tried and the best pair kept: the ladder does
    not depend on the E2E limit, so a looser limit only adds options (never needs more GPUs).
    """
    if peak_rps <= 0:
        raise ValueError(f"peak_rps must be > 0 (got {peak_rps})")
    rejected: list[Rejected] = []
    isl, osl, limits = q.isl, q.osl, q.limits
    inf = math.inf
    streaming = limits.mode == "streaming"
    ttft_lim = (limits.ttft_s if streaming else None) or inf
    itl_lim = (limits.itl_s if streaming else None) or inf
    e2e_lim = limits.e2e_s if limits.e2e_s is not None else inf
    steps = max(osl - 1.0, 1.0)
    if e2e_lim < inf:
        caps = sorted({c for c in (*ITL_LADDER_S, itl_lim) if c <= itl_lim and c * steps < e2e_lim})
    else:
        caps = [itl_lim]
    if not caps:
        return DisaggResult(None, rejected, "E2E limit leaves no time for decoding")
    best: DisaggPlan | None = None
    decode_missing = True
    for itl_cap in caps:
        misses: list[Rejected] = []
        decode = _best_decode(decode_pool, est, isl, osl, itl_cap, peak_rps, misses)
        if decode is None:
            if best is None:
                rejected[:] = misses
            continue
        decode_missing = False
        ttft_budget = min(ttft_lim, e2e_lim - steps * decode.step_s)
        found = _best_prefill(prefill_pool, est, isl, ttft_budget, decode, peak_rps, misses)
        if found is None:
            if best is None:
                rejected[:] = misses
            continue
        pre, kv_bytes, t_kv, link_name = found
        ttft = PREFILL_TTFT_STEPS * pre.step_s + t_kv
        plan = DisaggPlan(
            prefill=pre,
            decode=decode,
            peak_rps=peak_rps,
            kv_transfer_bytes=kv_bytes,
            kv_transfer_s=t_kv,
            kv_link=link_name,
            ttft_s=ttft,
            itl_s=decode.step_s,
            e2e_s=e2e_s(ttft, decode.step_s, osl),
        )
        if best is None or _rank(plan) < _rank(best):
            best, rejected[:] = plan, misses
    if best is None:
        return DisaggResult(
            None, rejected, _why(rejected, "decode" if decode_missing else "prefill")
        )
    return DisaggResult(best, rejected)


def _rank(p: DisaggPlan) -> tuple[float, ...]:
    """What both pools pay for, as aggregated plans rank (:func:`economics.objective_key`)."""
    return objective_key(
        Objective.SERVERS, p.servers_paid, p.gpus_paid, p.cost_per_hour_usd, p.power_watts, p.gpus
    )


def _why(rejected: list[Rejected], role: str) -> str:
    mine = [r for r in rejected if r.candidate.startswith(role)]
    if not mine:
        return f"no {role} candidates"
    latency = [r for r in mine if r.kind != "invalid"]
    first = (latency or mine)[0]
    return f"no feasible {role} pool: {first.candidate}: {first.reason}"
