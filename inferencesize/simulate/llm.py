"""The simulator on an LLM instance: step times from ``latency``, KV capacity from ``memory``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from inferencesize.latency import Deployment
from inferencesize.memory import kv_bytes_per_sequence_per_gpu, memory_budget
from inferencesize.simulate.arrivals import Workload
from inferencesize.simulate.engine import Balancer, BatchingConfig, SimResult, simulate
from inferencesize.simulate.service import LlmService, slope_context
from inferencesize.vocabulary import DEFAULT_ROUTER

#: Widest range of ISL + OSL (tokens) that kv_budget looks up in a table rather than sorts.
LOOKUP_SPAN = 1 << 20


@dataclass(frozen=True)
class KvBudget:
    """KV bytes per GPU the instance holds, and what each request reserves (ISL + OSL)."""

    capacity_bytes: float
    need_bytes: npt.NDArray[np.float64]

    @property
    def max_sequences(self) -> int:
        """Most requests that fit at once (of the shortest reservation)."""
        smallest = float(self.need_bytes.min()) if self.need_bytes.size else 0.0
        return int(self.capacity_bytes // smallest) if smallest > 0 else 0


def kv_budget(dep: Deployment, memory_bytes: float, workload: Workload) -> KvBudget:
    """The instance's KV capacity and each request's reservation (one model call per distinct
    ISL + OSL)."""
    seq = (workload.isl + workload.osl).astype(np.int64)
    cap = memory_budget(dep, memory_bytes, 1.0).kv_capacity_bytes
    if seq.size == 0:
        return KvBudget(cap, np.zeros(0))
    lo, hi = int(seq.min()), int(seq.max())
    if hi - lo <= LOOKUP_SPAN:  # a table over the range: no sort
        offset = seq - lo
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[offset] = True
        unique = np.flatnonzero(present) + lo
        table = np.zeros(hi - lo + 1)
        table[unique - lo] = [kv_bytes_per_sequence_per_gpu(dep, float(s)) for s in unique]
        return KvBudget(cap, table[offset])
    unique, inverse = np.unique(seq, return_inverse=True)
    per = np.array([kv_bytes_per_sequence_per_gpu(dep, float(s)) for s in unique])
    return KvBudget(cap, per[inverse].astype(float))


def simulate_llm(
    dep: Deployment,
    memory_bytes: float,
    workload: Workload,
    batching: BatchingConfig,
    instances: int = 1,
    balancer: Balancer = DEFAULT_ROUTER,
    kv: KvBudget | None = None,
    seed: int | np.random.Generator = 0,
) -> SimResult:
    """Simulate ``workload`` on ``instances`` copies of the deployment ``dep`` whose GPUs have
    ``memory_bytes`` each behind the router ``balancer``; batch sizes are capped by the KV
    cache as well as ``max_batch``. Requests reach the engine ``dep.handoff_s`` after they are
    sent (multi-GPU hand-off). ``kv``: ``kv_budget(dep, memory_bytes, workload)`` when the
    caller has it already. ``seed``: the random router's draws (``engine.router_generator``)."""
    if kv is None:
        kv = kv_budget(dep, memory_bytes, workload)
    top = max(1, min(batching.max_batch, kv.max_sequences))
    service = LlmService(dep, top, slope_context(workload.isl, workload.osl))
    cfg = BatchingConfig(batching.policy, top, batching.max_queue_delay_s, batching.step_tokens)
    return simulate(
        workload,
        service,
        cfg,
        kv.capacity_bytes,
        kv.need_bytes,
        instances,
        balancer,
        dep.handoff_s,
        seed,
    )
