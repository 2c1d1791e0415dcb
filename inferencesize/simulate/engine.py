"""Iteration-level discrete-event simulation of instances behind a load balancer.

Each instance runs forward steps back to back while it has work; the time of a step comes
from a :class:`~inferencesize.simulate.service.Service`. Batching policies:

* ``static``: request-level batches of exactly ``max_batch`` requests (a partial batch only
  when no more requests can arrive); the batch is prefilled in one step, then decoded until
  its longest answer is done (finished sequences keep their slot: padding).
* ``dynamic`` (Triton's dynamic batcher): like static, but a batch starts when ``max_batch``
  requests wait or when the oldest has waited ``max_queue_delay_s``.
* ``inflight`` (continuous batching, prefill first): at every step boundary waiting requests
  join (FIFO) while the KV cache, ``max_batch`` and the step token limit allow; their prompts
  are prefilled whole in a prompt step while the running decodes pause (as vLLM's default
  scheduler does without chunked prefill); finished sequences leave at once. The default
  limit, 8192 prompt tokens (TensorRT-LLM's default ``max_num_tokens``), batches the prompts
  that wait at a boundary: a cohort of closed-loop clients is prefilled in a few batched steps,
  as the analytic model assumes. Pausing keeps closed-loop clients in step, as the NIM
  measurements show (Llama-3-8B FP8 on one H100, ISL 2000 / OSL 200, 25 clients: TTFT 489.5
  ms measured; 451 ms simulated with the nim-2024 set; 147 ms, with an earlier step set,
  when the decodes rode in the prompt step instead: the clients then drift apart and each
  prompt only waits for itself).
* ``chunked``: in-flight batching with chunked prefill; a step holds at most ``step_tokens``
  tokens, decodes first, then prompt chunks (FIFO) in the remaining budget.

KV admission: a request reserves KV for ISL + OSL tokens from admission to completion (the
no-eviction scheduler of ``memory``); requests wait while the cache is full. A request that
can never fit is dropped.

Between two events (an arrival, a completion) an in-flight instance's batch is fixed, so its
decode steps are advanced in bulk with the closed form of the service (step time affine in
the summed context). Every run of steps stops at the first step boundary at or after the next
pending event, so arrivals join at the next boundary after they arrive. Closed-loop clients
send their next request the moment the previous one completes. A multi-GPU instance's request
hand-off (``handoff_s``) delays each request's arrival at the engine; its times still count
from when it was sent.

KV cap (``Service.kv_cap``, StreamingLLM sinks + window): a sequence adds ``min(context, cap)``
to the summed context. The sum is kept as ``capped · cap + Σ growing contexts``, and a run of
decode steps also stops at the step where the next growing sequence reaches the cap (it then
counts as capped), so the closed form stays exact; static batches sum ``min`` per sequence.

Routers (``vocabulary.Router``): least-loaded sends a request to the instance with the fewest
requests outstanding (lowest index on ties); round-robin cycles over them; random draws one
uniformly per request from a seeded numpy Generator of its own. The last two never look at the
instances, so on open-loop arrivals each instance sees only its own requests: N independent
thinned streams (Poisson arrivals at rate λ become Poisson at λ / N on each instance).

Drivers: the general event loop (:func:`_serve_balanced`) keeps a heap of instance step times
and of completions (closed-loop clients and least-loaded balancing wait on them). One instance
on open-loop arrivals needs neither: it runs up to each arrival in turn (:func:`_serve_alone`),
and an in-flight one without a KV cap, the common case, runs as one loop over local state
(``inflight_alone``). Instances behind a random or round-robin router on open-loop arrivals run
one by one on their own arrivals with those drivers (:func:`_serve_apart`); the general loop
then bounds each instance's runs by its own next arrival, as they do. Each driver runs the same
steps with the same arithmetic, so the results are equal to the bit.

Pure: no I/O; randomness only in the workload (``arrivals``) and the random router's draws.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from inferencesize.memory import MAX_NUM_TOKENS
from inferencesize.simulate.arrivals import Workload
from inferencesize.simulate.inflight_alone import Columns, serve_inflight_alone
from inferencesize.simulate.service import Service, chunk_pairs
from inferencesize.vocabulary import DEFAULT_ROUTER, Router

Policy = Literal["static", "dynamic", "inflight", "chunked"]
POLICIES: tuple[Policy, ...] = ("static", "dynamic", "inflight", "chunked")
#: How requests are spread over the instances: the router vocabulary of ``units``.
Balancer: TypeAlias = Router
BALANCERS: tuple[Router, ...] = tuple(Router)
INF = math.inf
#: In-flight prompt tokens one prompt step batches by default: the step token limit the
#: memory budget sizes activations for (TensorRT-LLM's default ``max_num_tokens``); a prompt
#: longer than it still fits alone.
PROMPT_STEP_TOKENS = MAX_NUM_TOKENS


@dataclass(frozen=True)
class BatchingConfig:
    """How an instance batches. ``step_tokens``: tokens one step may hold (in-flight: prompt
    tokens a prompt step batches; prompts are not split and one always fits, so 1 prefills one
    prompt per step; chunked: the chunk budget per step, decodes included)."""

    policy: Policy
    max_batch: int
    max_queue_delay_s: float = 0.0
    step_tokens: int = PROMPT_STEP_TOKENS

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown batching {self.policy!r}; expected {', '.join(POLICIES)}")
        if self.max_batch < 1:
            raise ValueError(f"max batch must be >= 1 (got {self.max_batch})")
        if self.max_queue_delay_s < 0:
            raise ValueError(f"max queue delay must be >= 0 (got {self.max_queue_delay_s})")
        if self.step_tokens < 1:
            raise ValueError(f"step token budget must be >= 1 (got {self.step_tokens})")


@dataclass(frozen=True)
class SimResult:
    """Per-request times (seconds; NaN for dropped requests) and per-instance busy time."""

    arrival_s: npt.NDArray[np.float64]
    admit_s: npt.NDArray[np.float64]  # start of the step that began serving it
    first_token_s: npt.NDArray[np.float64]
    done_s: npt.NDArray[np.float64]
    instance: npt.NDArray[np.int64]
    isl: npt.NDArray[np.int64]
    osl: npt.NDArray[np.int64]
    busy_s: npt.NDArray[np.float64]
    end_s: float
    closed_loop: bool
    concurrency: int

    @property
    def dropped(self) -> int:
        return int(np.count_nonzero(np.isnan(self.done_s)))


class _Requests:
    """Per-request columns as standard-library arrays: fast scalar access in the event loop,
    8 bytes a value (a list of floats takes 32), so a million requests fit in ~70 MB."""

    def __init__(self, wl: Workload, kv_need: npt.NDArray[np.float64]) -> None:
        n = wl.n
        self.isl = array("q", np.asarray(wl.isl, dtype=np.int64).tobytes())
        self.osl = array("q", np.asarray(wl.osl, dtype=np.int64).tobytes())
        self.need = array("d", np.asarray(kv_need, dtype=np.float64).tobytes())
        nan = array("d", [math.nan])
        self.arrive = nan * n
        self.admit = nan * n
        self.first = nan * n
        self.done = nan * n
        self.where = array("q", [-1]) * n


class _Instance:
    def __init__(self, req: _Requests, service: Service, cfg: BatchingConfig, cap: float) -> None:
        self.req = req
        self.service = service
        self.cfg = cfg
        self.cap = cap
        self.t = 0.0
        self.busy = 0.0
        self.waiting: deque[int] = deque()
        self.kv_used = 0.0
        self.flush = False

    def enqueue(self, rid: int, now: float) -> None:
        self.waiting.append(rid)
        if now > self.t and not self.working():
            self.t = now

    def working(self) -> bool:
        raise NotImplementedError

    def next_time(self) -> float:
        raise NotImplementedError

    def run(self, bound_s: float, done: list[tuple[float, int]]) -> None:
        raise NotImplementedError

    def advance(self, bound_s: float, done: list[tuple[float, int]]) -> None:
        """Run while the instance has a step to start before ``bound_s`` (no other event can
        come before it: one instance, open loop)."""
        while True:
            when = self.next_time()
            if not when < bound_s:
                return
            if when > self.t:
                self.t = when
            self.run(bound_s, done)


class _Inflight(_Instance):
    def __init__(self, req: _Requests, service: Service, cfg: BatchingConfig, cap: float) -> None:
        super().__init__(req, service, cfg, cap)
        self.step = 0
        self.decoders: list[tuple[int, int]] = []  # (last decode step, rid)
        self.ctx_offset = 0.0  # Σ (isl + 1 − first decode step) over growing decoders
        self.prefilling: list[list[int]] = []  # [rid, prompt tokens done] (chunked)
        # KV cap (0 = none): decoders whose context reached it attend cap tokens each
        self.kv_cap = service.kv_cap
        self.capped: set[int] = set()
        self.growing: set[int] = set()  # decoders below the cap (only tracked with a cap)
        self.cap_steps: list[tuple[int, int]] = []  # (step its context reaches the cap, rid)
        self.chunked = cfg.policy == "chunked"

    def working(self) -> bool:
        return bool(self.decoders or self.prefilling)

    def next_time(self) -> float:
        return self.t if (self.decoders or self.prefilling or self.waiting) else INF

    def advance(self, bound_s: float, done: list[tuple[float, int]]) -> None:
        run = self.run
        while (self.decoders or self.prefilling or self.waiting) and self.t < bound_s:
            run(bound_s, done)

    def _admit_whole(self) -> tuple[int, float, list[int]]:
        req, cfg = self.req, self.cfg
        b = len(self.decoders)
        budget = cfg.step_tokens
        tokens, pairs = 0, 0.0
        new: list[int] = []
        while self.waiting and b + len(new) < cfg.max_batch:
            rid = self.waiting[0]
            need = req.need[rid]
            if self.kv_used + need > self.cap:
                break
            length = req.isl[rid]
            if new and tokens + length > budget:
                break
            self.waiting.popleft()
            self.kv_used += need
            req.admit[rid] = self.t
            new.append(rid)
            tokens += length
            if self.kv_cap:
                pairs += chunk_pairs(0, length, self.kv_cap)
            else:
                pairs += length * (length + 1) / 2.0
        return tokens, pairs, new

    def _admit_chunks(self) -> tuple[int, float, int, list[int]]:
        req, cfg = self.req, self.cfg
        b = len(self.decoders)
        budget = cfg.step_tokens - b
        tokens, pairs, parts, finished = 0, 0.0, 0, []
        for entry in self.prefilling:
            if budget <= 0:
                break
            rid, done = entry
            chunk = min(req.isl[rid] - done, budget)
            pairs += chunk_pairs(done, chunk, self.kv_cap)
            entry[1] = done + chunk
            budget -= chunk
            tokens += chunk
            parts += 1
            if entry[1] >= req.isl[rid]:
                finished.append(rid)
        while self.waiting and budget > 0 and b + len(self.prefilling) < cfg.max_batch:
            rid = self.waiting[0]
            need = req.need[rid]
            if self.kv_used + need > self.cap:
                break
            self.waiting.popleft()
            self.kv_used += need
            req.admit[rid] = self.t
            chunk = min(req.isl[rid], budget)
            pairs += chunk_pairs(0, chunk, self.kv_cap)
            budget -= chunk
            tokens += chunk
            parts += 1
            self.prefilling.append([rid, chunk])
            if chunk >= req.isl[rid]:
                finished.append(rid)
        if finished:
            gone = set(finished)
            self.prefilling = [e for e in self.prefilling if e[0] not in gone]
        return tokens, pairs, parts, finished

    def _finish(self, last_step: int, done: list[tuple[float, int]]) -> None:
        req, dec = self.req, self.decoders
        while dec and dec[0][0] <= last_step:
            finish, rid = heapq.heappop(dec)
            if self.kv_cap and rid in self.capped:
                self.capped.remove(rid)
            else:
                first_step = finish - req.osl[rid] + 2
                self.ctx_offset -= req.isl[rid] + 1 - first_step
                self.growing.discard(rid)
            self.kv_used -= req.need[rid]
            req.done[rid] = self.t
            done.append((self.t, rid))

    def _cap_reached(self) -> int:
        """Count the decoders whose context reached the KV cap at the current step as capped;
        return the step at which the next growing one reaches it (a large number if none)."""
        heap, step = self.cap_steps, self.step
        while heap and (heap[0][0] <= step or heap[0][1] not in self.growing):
            at, rid = heapq.heappop(heap)
            if rid not in self.growing:
                continue  # finished below the cap
            self.growing.remove(rid)
            self.capped.add(rid)
            self.ctx_offset -= self.kv_cap - at  # its offset (it reaches the cap at cap − offset)
        return heap[0][0] if heap else 2**62

    def run(self, bound_s: float, done: list[tuple[float, int]]) -> None:
        req, svc = self.req, self.service
        b = len(self.decoders)
        cap = self.kv_cap
        next_cap = self._cap_reached() if cap else 0
        chunked = self.chunked
        if chunked:
            tokens, pairs, parts, prefilled = self._admit_chunks()
        elif self.waiting:
            tokens, pairs, prefilled = self._admit_whole()
            parts = len(prefilled)
        else:  # nothing to admit: a decode run
            tokens, pairs, parts, prefilled = 0, 0.0, 0, []
        n_capped = len(self.capped) if cap else 0
        g = b - n_capped  # decoders whose context still grows
        sum_ctx = self.ctx_offset + g * self.step
        if n_capped:
            sum_ctx += n_capped * cap
        if tokens > 0:
            # chunked: the decodes ride in the step; in-flight: a prompt step, decodes pause
            dt = svc.mixed_s(b if chunked else 0, sum_ctx if chunked else 0.0, tokens, pairs, parts)
            self.t += dt
            self.busy += dt
            if chunked:
                self._finish(self.step, done)
                self.step += 1
            for rid in prefilled:
                req.first[rid] = self.t
                osl = req.osl[rid]
                if osl <= 1:
                    self.kv_used -= req.need[rid]
                    req.done[rid] = self.t
                    done.append((self.t, rid))
                    continue
                heapq.heappush(self.decoders, (self.step + osl - 2, rid))
                offset = req.isl[rid] + 1 - self.step
                self.ctx_offset += offset
                if cap:  # context offset + s reaches the cap at step cap − offset
                    self.growing.add(rid)
                    heapq.heappush(self.cap_steps, (cap - offset, rid))
            return
        if b == 0:  # an empty instance always admits its first waiting request
            raise RuntimeError("in-flight instance has work but cannot step")
        # Decode-only run with a fixed batch: until the next completion or the next event (or
        # the step at which a growing context reaches the KV cap: up to it, min(ctx, cap) = ctx).
        steps = self.decoders[0][0] - self.step + 1
        if cap:
            steps = min(steps, next_cap - self.step + 1)
        a = svc.decode_base_s[b]
        sig = svc.context_s[b]
        if bound_s < INF:
            gap = bound_s - self.t
            quad = sig * g / 2.0
            lin = a + sig * sum_ctx - quad
            if gap <= 0:
                k = 1
            elif quad > 0:
                k = math.ceil((-lin + math.sqrt(lin * lin + 4.0 * quad * gap)) / (2.0 * quad))
            else:
                k = math.ceil(gap / lin)
            if k < steps:  # max(1, min(steps, k)) without the calls
                steps = k
            if steps < 1:
                steps = 1
        dt = a * steps + sig * (steps * sum_ctx + g * steps * (steps - 1) / 2.0)
        self.t += dt
        self.busy += dt
        self.step += steps
        if self.decoders[0][0] < self.step:  # one finishes at the last step run
            self._finish(self.step - 1, done)


class _Batched(_Instance):
    """Static and dynamic (request-level) batching."""

    def working(self) -> bool:
        return False  # a batch runs to completion inside run(); t is when the instance is free

    def next_time(self) -> float:
        if not self.waiting:
            return INF
        cfg = self.cfg
        if len(self.waiting) >= cfg.max_batch or self.flush:
            return self.t
        if cfg.policy == "dynamic":
            return max(self.t, self.req.arrive[self.waiting[0]] + cfg.max_queue_delay_s)
        return INF

    def run(self, bound_s: float, done: list[tuple[float, int]]) -> None:
        req, svc, cfg = self.req, self.service, self.cfg
        self.flush = False
        batch: list[int] = []
        used = 0.0
        while self.waiting and len(batch) < cfg.max_batch:
            rid = self.waiting[0]
            if batch and used + req.need[rid] > self.cap:
                break
            self.waiting.popleft()
            used += req.need[rid]
            req.admit[rid] = self.t
            batch.append(rid)
        b = len(batch)
        isl = [req.isl[r] for r in batch]
        tokens = sum(isl)
        cap = svc.kv_cap
        longest = max(req.osl[r] for r in batch) - 1  # decode steps of the batch
        if cap:
            pairs = sum(chunk_pairs(0, x, cap) for x in isl)
        else:
            pairs = sum(x * (x + 1) / 2.0 for x in isl)
        t_first = self.t + svc.mixed_s(0, 0.0, tokens, pairs, b)
        ctx0 = float(sum(x + 1 for x in isl))
        a, sig = svc.decode_base_s[b], svc.context_s[b]
        # decode step t (from 0) of a sequence attends isl + 1 + t tokens (at most the cap)
        capped = bool(cap) and max(isl) + longest > cap

        def decode_s(k: int) -> float:
            if capped:
                return a * k + sig * sum(capped_context_sum(x + 1, k, cap) for x in isl)
            return a * k + sig * (k * ctx0 + b * k * (k - 1) / 2.0)

        for rid in batch:
            req.first[rid] = t_first
            req.done[rid] = t_first + decode_s(req.osl[rid] - 1)
            done.append((req.done[rid], rid))
        end = t_first + decode_s(longest)
        self.busy += end - self.t
        self.t = end


def capped_context_sum(start: int, steps: int, cap: int) -> int:
    """Σ_{t=0..steps-1} min(start + t, cap): the context a sequence that starts at ``start``
    tokens attends over ``steps`` decode steps under a KV cap."""
    growing = min(steps, max(cap - start, 0))  # steps below the cap
    return growing * start + growing * (growing - 1) // 2 + (steps - growing) * cap


def one_inflight_instance(
    instances: int, closed: bool, batching: BatchingConfig, service: Service
) -> bool:
    """Whether :func:`serve_inflight_alone` runs a simulation: one in-flight instance (whole
    prompts, no KV cap) on open-loop arrivals; it runs the steps the general event loop runs,
    to the bit, in less than half the time."""
    return instances == 1 and not closed and batching.policy == "inflight" and not service.kv_cap


def independent_instances(instances: int, closed: bool, router: Router) -> bool:
    """Whether the instances run one by one, each on its own arrivals (:func:`_serve_apart`):
    several instances on open-loop arrivals behind a router that never looks at them (random,
    round-robin). Each runs the steps it runs in the general event loop, to the bit."""
    return instances > 1 and not closed and router is not Router.LEAST_LOADED


def router_generator(seed: int | np.random.Generator) -> np.random.Generator:
    """The random router's draws: a Generator as given, or from an int a stream of its own
    (the first child of ``SeedSequence(seed)``), independent of ``default_rng(seed)``, which a
    workload drawn with the same seed uses."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])


def route(
    router: Router,
    instances: int,
    fits: npt.NDArray[np.bool_],
    seed: int | np.random.Generator = 0,
) -> npt.NDArray[np.int64] | None:
    """The instance each request goes to (in the order they are sent; -1: dropped, it never
    fits), for a router that never looks at the instances; None for least-loaded.

    Random: one uniform draw per request, dropped ones included, so a request's instance
    depends on nothing but the draws. Round-robin: the requests that fit, in turn.
    """
    if router is Router.LEAST_LOADED:
        return None
    if router is Router.RANDOM:
        drawn = router_generator(seed).integers(0, instances, size=len(fits), dtype=np.int64)
    elif router is Router.ROUND_ROBIN:
        drawn = (np.cumsum(fits, dtype=np.int64) - 1) % instances
    else:  # a router of the vocabulary with no model here: never another's by default
        raise ValueError(f"router {router.value!r}: the simulator has no model of it")
    return np.where(fits, drawn, -1)


def simulate(
    workload: Workload,
    service: Service,
    batching: BatchingConfig,
    kv_capacity: float,
    kv_need: npt.NDArray[np.float64],
    instances: int = 1,
    balancer: Balancer = DEFAULT_ROUTER,
    handoff_s: float = 0.0,
    seed: int | np.random.Generator = 0,
) -> SimResult:
    """Run the workload through ``instances`` identical instances (see module docstring).

    ``kv_capacity``: KV one instance holds; ``kv_need``: what each request reserves (same
    unit, e.g. bytes per GPU). ``balancer``: the router (least-loaded sends a request to the
    instance with the fewest requests outstanding, lowest index on ties; round-robin cycles;
    random draws). ``handoff_s``: a request reaches the engine this long after it is sent
    (its times count from the send). ``seed``: the random router's draws (see
    :func:`router_generator`; the same seed, the same instances).
    """
    if handoff_s < 0:
        raise ValueError(f"hand-off time must be >= 0 (got {handoff_s})")
    if instances < 1:
        raise ValueError(f"instances must be >= 1 (got {instances})")
    if balancer not in BALANCERS:
        raise ValueError(f"unknown balancer {balancer!r}; expected {', '.join(BALANCERS)}")
    router = Router(balancer)
    if len(kv_need) != workload.n:
        raise ValueError("kv_need must have one value per request")
    req = _Requests(workload, kv_need)
    closed = workload.closed_loop
    # when the engine sees each request: open loop, its arrival plus the hand-off
    sent = () if workload.arrival_s is None else workload.arrival_s
    arrivals = array("d", (np.asarray(sent, dtype=np.float64) + handoff_s).tobytes())
    if not closed:
        req.arrive = arrivals  # (dispatch writes the same times)
    fits = np.asarray(kv_need, dtype=np.float64) <= kv_capacity
    assign = None if instances == 1 else route(router, instances, fits, seed)
    if one_inflight_instance(instances, closed, batching, service):
        cols = Columns(req.isl, req.osl, req.need, req.admit, req.first, req.done, req.where)
        out = serve_inflight_alone(
            cols, arrivals, service, batching.max_batch, batching.step_tokens, kv_capacity
        )
        end, busy = out.end_s, [out.busy_s]
    elif assign is not None and independent_instances(instances, closed, router):
        ends, busy = _serve_apart(req, arrivals, assign, instances, service, batching, kv_capacity)
        end = max(ends)
    else:
        insts = [_instance(req, service, batching, kv_capacity) for _ in range(instances)]
        if instances == 1 and not closed:
            _serve_alone(insts[0], req, arrivals, kv_capacity)
        else:
            sends = [handoff_s] * min(workload.concurrency, workload.n) if closed else []
            _serve_balanced(insts, req, arrivals, sends, closed, kv_capacity, assign, handoff_s)
        end, busy = max(inst.t for inst in insts), [inst.busy for inst in insts]
    return SimResult(
        arrival_s=np.asarray(req.arrive, dtype=float) - handoff_s,
        admit_s=np.asarray(req.admit, dtype=float),
        first_token_s=np.asarray(req.first, dtype=float),
        done_s=np.asarray(req.done, dtype=float),
        instance=np.asarray(req.where, dtype=np.int64),
        isl=np.asarray(workload.isl, dtype=np.int64),
        osl=np.asarray(workload.osl, dtype=np.int64),
        busy_s=np.asarray(busy, dtype=float),
        end_s=end,
        closed_loop=closed,
        concurrency=workload.concurrency,
    )


def _instance(req: _Requests, service: Service, cfg: BatchingConfig, cap: float) -> _Instance:
    kind: type[_Instance] = _Batched if cfg.policy in ("static", "dynamic") else _Inflight
    return kind(req, service, cfg, cap)


def _serve_alone(
    inst: _Instance,
    req: _Requests,
    arrivals: array[float],
    kv_capacity: float,
    rids: Iterable[int] | None = None,
    index: int = 0,
) -> None:
    """One instance, open loop: nothing but the arrivals can interrupt it, so it runs up to
    each arrival in turn (the steps :func:`_serve_balanced` would run, in the same order).
    ``rids``: the requests arriving at ``arrivals`` (default: all, in order); ``index``: the
    instance's number."""
    done: list[tuple[float, int]] = []  # completions: no one waits for them here
    need, where, advance = req.need, req.where, inst.advance
    for rid, now in zip(range(len(arrivals)) if rids is None else rids, arrivals, strict=True):
        advance(now, done)
        done.clear()
        if need[rid] > kv_capacity:
            continue  # dropped: never fits
        where[rid] = index
        inst.enqueue(rid, now)
    while True:
        advance(INF, done)
        done.clear()
        if not inst.waiting:
            return
        inst.flush = True  # a static batch that can never fill: run what is there


def _serve_apart(
    req: _Requests,
    arrivals: array[float],
    assign: npt.NDArray[np.int64],
    instances: int,
    service: Service,
    batching: BatchingConfig,
    kv_capacity: float,
) -> tuple[list[float], list[float]]:
    """Instances that see only their own requests (``assign``: each request's instance, -1
    dropped), one by one: each on its own arrivals as a lone instance. Returns each
    instance's end and busy time (seconds)."""
    order = np.argsort(assign, kind="stable")  # by instance, in arrival order within one
    bounds = np.searchsorted(assign[order], np.arange(-1, instances + 1))
    at = np.frombuffer(arrivals, dtype=np.float64)
    columns = [np.frombuffer(c, dtype=np.float64) for c in (req.admit, req.first, req.done)]
    ends: list[float] = []
    busy: list[float] = []
    for i in range(instances):
        rids = order[bounds[i + 1] : bounds[i + 2]]
        mine = array("d", at[rids].tobytes())
        if one_inflight_instance(1, False, batching, service):
            admit, first, done = own = [array("d", [math.nan]) * len(rids) for _ in columns]
            cols = Columns(
                array("q", np.frombuffer(req.isl, dtype=np.int64)[rids].tobytes()),
                array("q", np.frombuffer(req.osl, dtype=np.int64)[rids].tobytes()),
                array("d", np.frombuffer(req.need, dtype=np.float64)[rids].tobytes()),
                admit,
                first,
                done,
                array("q", [-1]) * len(rids),
            )
            out = serve_inflight_alone(
                cols, mine, service, batching.max_batch, batching.step_tokens, kv_capacity
            )
            for column, values in zip(columns, own, strict=True):
                column[rids] = np.frombuffer(values, dtype=np.float64)
            ends.append(out.end_s)
            busy.append(out.busy_s)
        else:
            inst = _instance(req, service, batching, kv_capacity)
            _serve_alone(inst, req, mine, kv_capacity, rids.tolist(), i)
            ends.append(inst.t)
            busy.append(inst.busy)
    req.where = array("q", assign.astype(np.int64).tobytes())
    return ends, busy


def _serve_balanced(
    insts: list[_Instance],
    req: _Requests,
    arrivals: array[float],
    sends: list[float],
    closed: bool,
    kv_capacity: float,
    assign: npt.NDArray[np.int64] | None,
    handoff_s: float,
) -> None:
    """The general event loop: instances behind a router, open or closed loop (``sends``:
    the engine arrival times of the first closed-loop requests; ``assign``: each request's
    instance from a router that never looks at them, None for least-loaded). With ``assign``
    on open-loop arrivals an instance's runs stop at its own next arrival (nothing else can
    change what it does), as the lone-instance drivers do."""
    instances = len(insts)
    n = len(req.isl)
    outstanding = [0] * instances
    version = [0] * instances
    ready: list[tuple[float, int, int]] = []  # (next time, version, instance)
    events: list[tuple[float, int]] = []  # completions (time, rid)
    done: list[tuple[float, int]] = []
    next_arrival = 0
    issued = 0
    chosen = None if assign is None else assign.tolist()
    # completions matter to the loop only for closed-loop clients and least-loaded balancing
    track = closed or (instances > 1 and chosen is None)
    # open loop behind a router that never looks at the instances: each one's next arrival
    apart = chosen is not None and not closed
    own: list[deque[float]] = [deque() for _ in insts]
    if apart and chosen is not None:
        for rid, i in enumerate(chosen):
            if i >= 0:
                own[i].append(arrivals[rid])

    def schedule(i: int) -> None:
        version[i] += 1
        when = insts[i].next_time()
        if when < INF:
            heapq.heappush(ready, (when, version[i], i))

    def dispatch(rid: int, now: float) -> None:
        req.arrive[rid] = now
        if req.need[rid] > kv_capacity:
            if track:
                heapq.heappush(events, (now, -1 - rid))  # dropped: never fits; frees its client
            return
        if instances == 1:
            i = 0
        elif chosen is not None:
            i = chosen[rid]
            if apart:
                own[i].popleft()
        else:
            i = min(range(instances), key=outstanding.__getitem__)
        req.where[rid] = i
        outstanding[i] += 1
        insts[i].enqueue(rid, now)
        schedule(i)

    n_arrivals = len(arrivals)
    push, pop = heapq.heappush, heapq.heappop
    while True:
        t_arr = arrivals[next_arrival] if next_arrival < n_arrivals else INF
        if sends:
            t_arr = min(t_arr, sends[0])
        t_evt = events[0][0] if events else INF
        t_next = t_arr if t_arr < t_evt else t_evt
        while ready and ready[0][1] != version[ready[0][2]]:
            pop(ready)
        if ready and ready[0][0] < t_next:
            when, _, i = pop(ready)
            inst = insts[i]
            if when > inst.t:
                inst.t = when
            done.clear()
            if apart:
                mine = own[i]
                inst.run(mine[0] if mine else INF, done)
            else:
                inst.run(t_next, done)
            if track:
                for item in done:
                    push(events, item)
            schedule(i)
            continue
        if t_evt <= t_arr and events:
            now, code = pop(events)
            if code >= 0:
                outstanding[req.where[code]] -= 1
            if closed and issued + len(sends) < n:
                push(sends, now + handoff_s)
            continue
        if sends and sends[0] == t_arr:
            dispatch(issued, pop(sends))
            issued += 1
            continue
        if t_arr < INF:
            dispatch(next_arrival, t_arr)
            next_arrival += 1
            continue
        stuck = [i for i, inst in enumerate(insts) if inst.waiting]
        if not stuck:
            break
        for i in stuck:  # static batches that can never fill: run what is there
            insts[i].flush = True
            schedule(i)
