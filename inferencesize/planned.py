"""One instance of a plan at the planned load: the peak rate split over the plan's instances.

A plan is sized at each instance's capacity (the most it serves within the limits); what its
users see at the peak is one instance at peak / N, usually well below that capacity. This
module evaluates that point with the same model the plan was sized with:

* **open loop** (requests arriving at a rate): the open-loop point at peak / N with the
  arrivals N instances see behind the router
  (:meth:`inferencesize.openloop.InstanceSearch.planned_point`);
* **closed loop** (benchmark clients), in-flight batching: the least load (clients, to
  1/:data:`LOAD_STEPS` of one) at which an instance serves peak / N; below one client, one
  client's latencies (a request alone) at that rate;
* **static batching**: the smallest batch (of those allowed) whose rate serves peak / N.

Pure: numpy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from inferencesize.estimate import Batching, Resolved, operating_points
from inferencesize.serving import OperatingPoint, inflight_arrays, select

if TYPE_CHECKING:
    from inferencesize.openloop import InstanceSearch, OpenLoopPoint

#: Inter-token latency above which a stream is slow to read (20 tokens/s: about the pace of
#: fast reading, ~4 words/s at ~1.3 tokens a word): a plan with no ITL or E2E limit says so.
READING_ITL_S = 0.050
#: Closed-loop loads resolved per client (as the planner's search, ``planner.LOAD_STEPS``).
LOAD_STEPS = 64
#: Loads evaluated per vectorised call of the closed-loop search.
GRID = 256


def open_loop_op(pt: OpenLoopPoint, rate_rps: float, osl: float) -> OperatingPoint:
    """An open-loop point as an operating point (requests/s served: ``rate_rps``)."""
    return OperatingPoint(
        concurrency=pt.in_flight,
        in_flight=pt.in_flight,
        ttft_s=pt.ttft_s,
        itl_s=pt.itl_s,
        e2e_s=pt.e2e_s,
        requests_per_s=rate_rps,
        output_tokens_per_s=rate_rps * osl,
        queue_wait_s=pt.kv_wait_s,
        prefill_wait_s=pt.ttft_wait_s,
        prefill_bound=None,
        decode_bound=None,
        ttft_q=pt.ttft_q,  # computed when first read (a record that prints them)
        itl_q=pt.itl_q,
        e2e_q=pt.e2e_q,
    )


@dataclass(frozen=True)
class OpenLoad:
    """Open loop: one of ``n`` instances at peak / n, the arrivals behind the router as the
    instance search took them (``search``: the candidate's, or one without limits)."""

    search: InstanceSearch
    osl: float

    def at(self, n: int, peak_rps: float) -> OperatingPoint:
        return open_loop_op(self.search.planned_point(peak_rps, n), peak_rps / n, self.osl)


@dataclass(frozen=True)
class UnlimitedOpenLoad:
    """Open loop with no latency limit (sized at the sustainable rate): as :class:`OpenLoad`,
    its arrivals behind the router built when first asked (a plan that is shown)."""

    res: Resolved
    isl: float
    osl: float
    cv: float
    router: str

    def at(self, n: int, peak_rps: float) -> OperatingPoint:
        from inferencesize.openloop import InstanceSearch, steps_of

        dep = self.res.deployment
        assert dep is not None
        st = steps_of(dep, self.isl, self.osl, self.res.max_concurrency)
        search = InstanceSearch(st, {}, self.cv, self.router)
        return OpenLoad(search, self.osl).at(n, peak_rps)


@dataclass(frozen=True)
class ClosedLoad:
    """Closed loop (clients) or static batches: the least load of one instance that serves
    peak / n (class docstring of the module)."""

    res: Resolved
    isl: float
    osl: float
    batching: Batching
    batch_sizes: tuple[int, ...] | None = None

    def at(self, n: int, peak_rps: float, capacity: OperatingPoint) -> OperatingPoint:
        """One of ``n`` instances at peak / n; ``capacity``: its point at capacity (the most
        load the search allowed, an upper end of the loads looked at)."""
        rate = peak_rps / n
        top = float(capacity.concurrency)
        if rate >= capacity.requests_per_s:
            return capacity
        if self.batching == "static":
            return self._static(rate, capacity)
        if top <= 1:
            return _at_rate(capacity, rate)
        return self._inflight(rate, top)

    def _static(self, rate: float, capacity: OperatingPoint) -> OperatingPoint:
        """The smallest allowed batch serving ``rate``, its batches started ``rate`` / B
        times a second (the rest of the time idle)."""
        sizes = self.batch_sizes or range(1, int(capacity.concurrency) + 1)
        allowed = np.array(sorted(b for b in sizes if b <= capacity.concurrency), dtype=int)
        ops = operating_points(
            self.res, self.isl, self.osl, allowed, allowed, "static", None, False
        )
        op = next((o for o in ops if o.requests_per_s >= rate), capacity)
        return replace(op, requests_per_s=rate, output_tokens_per_s=rate * self.osl)

    def _inflight(self, rate: float, top: float) -> OperatingPoint:
        dep = self.res.deployment
        assert dep is not None
        cap = self.res.max_concurrency
        lo, hi = LOAD_STEPS, max(LOAD_STEPS, round(top * LOAD_STEPS))  # in 1/LOAD_STEPS
        while True:  # bracket the least load serving ``rate`` between lattice neighbours
            ks = np.unique(np.linspace(lo, hi, min(GRID, hi - lo + 1)).round())
            loads = ks / LOAD_STEPS
            arrays = inflight_arrays(dep, self.isl, self.osl, loads, cap)
            served = np.flatnonzero(arrays.requests_per_s >= rate)
            if served.size == 0:  # float noise at the top: the largest load
                at = loads.size - 1
                break
            at = int(served[0])
            if at == 0 or ks[at] - ks[at - 1] <= 1:
                break
            lo, hi = int(ks[at - 1]), int(ks[at])
        n = loads[at : at + 1]
        chosen = select(arrays, [at])
        op = operating_points(self.res, self.isl, self.osl, n, cap, "inflight", chosen, False)
        return _at_rate(op[0], rate)  # within 1/LOAD_STEPS of a client: the rate exactly


def _at_rate(op: OperatingPoint, rate: float) -> OperatingPoint:
    """``op``'s latencies at a lighter rate than it serves (a client's load below one: a
    request alone, part of the time): the rate and, by Little's law, the mean load."""
    if rate >= op.requests_per_s or not math.isfinite(op.e2e_s):
        return op
    load = rate * op.e2e_s
    return replace(
        op,
        concurrency=load,
        in_flight=min(op.in_flight, load),
        requests_per_s=rate,
        output_tokens_per_s=op.output_tokens_per_s * rate / op.requests_per_s,
    )
