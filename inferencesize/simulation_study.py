"""``infersize simulate``: the traffic of the flags drawn (or read from a trace), the candidate
resolved once, and one discrete-event simulation per batching policy with its record.

The command parses its flags, calls :func:`simulation_workload`, :func:`prepare_simulation`
and :func:`run_policy` (once per policy compared), and renders the records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inferencesize.catalog import Catalog
from inferencesize.errors import InputError, UsageError
from inferencesize.estimate import Candidate
from inferencesize.io_trace import read_trace
from inferencesize.latency import Deployment
from inferencesize.point_estimate import PointFlags, point_candidate
from inferencesize.simulate import (
    PROMPT_STEP_TOKENS,
    BatchingConfig,
    KvBudget,
    SimResult,
    Summary,
    Workload,
    gamma_arrivals,
    kv_budget,
    lengths,
    poisson_arrivals,
    simulate_llm,
    summarize,
)
from inferencesize.study import resolve_point
from inferencesize.vocabulary import Router, Statistic

#: Batch size of static / dynamic batching when --max-batch is not given.
DEFAULT_REQUEST_BATCH = 16
#: Chunked-prefill token budget per step when --step-tokens is not given (vLLM's classic
#: max_num_batched_tokens). Plain in-flight prompt steps batch PROMPT_STEP_TOKENS.
CHUNK_TOKENS = 2048


def simulation_workload(
    rate: float | None,
    cv: float,
    concurrency: int | None,
    trace: Path | None,
    requests: int,
    isl: int,
    osl: int,
    isl_stddev: float,
    osl_stddev: float,
    seed: int,
) -> tuple[Workload, str]:
    """The requests to simulate and the words for their arrivals: a trace, closed-loop
    clients, or ``requests`` drawn at ``rate`` (Poisson at ``cv`` 1, gamma gaps otherwise)."""
    given = [x for x in (rate, concurrency, trace) if x is not None]
    if len(given) != 1:
        raise UsageError("simulate needs exactly one of --rate, --concurrency or --trace")
    if trace is not None:
        return read_trace(trace), f"trace {trace.name}"
    rng = np.random.default_rng(seed)
    isl_a = lengths(rng, requests, isl, isl_stddev)
    osl_a = lengths(rng, requests, osl, osl_stddev)
    if concurrency is not None:
        return Workload(isl_a, osl_a, None, concurrency), f"closed loop, {concurrency} clients"
    assert rate is not None  # finite and in range: cli.common.BOUNDS
    if cv == 1.0:
        return Workload(isl_a, osl_a, poisson_arrivals(rng, requests, rate)), (
            f"Poisson {rate:g} req/s"
        )
    times = gamma_arrivals(rng, requests, rate, cv)
    return Workload(isl_a, osl_a, times), f"gamma {rate:g} req/s, cv {cv:g}"


@dataclass(frozen=True)
class Simulation:
    """One candidate resolved for a workload: its deployment, KV budget and engine."""

    candidate: Candidate
    deployment: Deployment
    workload: Workload
    arrivals: str  # the words for the workload's arrivals
    kv: KvBudget
    engine: str  # the efficiency set's engine it is run with


def prepare_simulation(
    catalog: Catalog,
    flags: PointFlags,
    split: tuple[int, int, int, int],
    workload: Workload,
    arrivals: str,
) -> Simulation:
    """The candidate of the flags at ``split`` (tp, pp, ep, dp), resolved at the workload's
    longest sequence, with its KV budget; an InputError when it does not fit."""
    est = resolve_point(catalog, engine=flags.engine, calibration=flags.calibration).estimator
    cand = point_candidate(catalog, flags, *split)
    longest = int((workload.isl + workload.osl).max())
    res = est.resolve(cand, longest)
    engine = est.efficiency_for(cand.gpu, cand.precision).engine  # the set it is run with
    if res.deployment is None or res.reason is not None:
        raise InputError(f"{cand.label()}: {res.reason}")
    kv = kv_budget(res.deployment, cand.gpu.memory_bytes, workload)
    return Simulation(cand, res.deployment, workload, arrivals, kv, engine)


@dataclass(frozen=True)
class Serving:
    """How the simulated instances serve: batching limits, instances, router, seed."""

    max_batch: int | None
    max_queue_delay_s: float
    step_tokens: int | None
    instances: int
    router: Router
    seed: int
    warmup: float  # share of first requests left out of the statistics


def batching_config(sim: Simulation, policy: str, serving: Serving) -> BatchingConfig:
    """The batching of ``policy``: the largest batch within the KV budget (the KV capacity for
    in-flight policies unless stated), the default step tokens of the policy."""
    kv_seqs = sim.kv.max_sequences
    inflight = policy in ("inflight", "chunked")
    top = serving.max_batch or (kv_seqs if inflight else DEFAULT_REQUEST_BATCH)
    step = serving.step_tokens or (CHUNK_TOKENS if policy == "chunked" else PROMPT_STEP_TOKENS)
    return BatchingConfig(
        policy,  # type: ignore[arg-type]
        max(1, min(top, kv_seqs)),
        serving.max_queue_delay_s,
        step,
    )


def run_policy(sim: Simulation, policy: str, serving: Serving) -> tuple[dict[str, Any], SimResult]:
    """Simulate the workload under ``policy``: its record and the per-request result."""
    cfg = batching_config(sim, policy, serving)
    cand = sim.candidate
    res = simulate_llm(
        sim.deployment,
        cand.gpu.memory_bytes,
        sim.workload,
        cfg,
        serving.instances,
        serving.router,
        sim.kv,
        serving.seed,
    )
    summary = summarize(res, serving.warmup)
    return sim_record(sim, cfg, res, summary, serving), res


def _dist_ms(summary: Summary, name: str) -> dict[str, float]:
    d = summary.metric(name)
    return {s.value: d.at(s) * 1e3 for s in Statistic}


def sim_record(
    sim: Simulation, cfg: BatchingConfig, res: SimResult, summary: Summary, serving: Serving
) -> dict[str, Any]:
    """The JSON record of one simulation (documented in the README)."""
    cand = sim.candidate
    return {
        "model": cand.model.id,
        **cand.fields(),
        "dp": cand.par.dp,
        "isl_mean": float(res.isl.mean()),
        "osl_mean": float(res.osl.mean()),
        "arrivals": sim.arrivals,
        "concurrency": res.concurrency if res.closed_loop else None,
        "batching": cfg.policy,
        "max_batch": cfg.max_batch,
        "max_queue_delay_ms": cfg.max_queue_delay_s * 1e3 if cfg.policy == "dynamic" else None,
        "step_tokens": cfg.step_tokens if cfg.policy in ("inflight", "chunked") else None,
        "instances": serving.instances,
        "balancer": serving.router.value,
        "seed": serving.seed,
        "requests": len(res.arrival_s),
        "measured_requests": summary.requests,
        "dropped_requests": summary.dropped,
        "ttft_ms": _dist_ms(summary, "ttft_s"),
        "itl_ms": _dist_ms(summary, "itl_s"),
        "e2e_ms": _dist_ms(summary, "e2e_s"),
        "queue_ms": _dist_ms(summary, "queue_s"),
        "requests_per_s": summary.requests_per_s,
        "output_tokens_per_s": summary.output_tokens_per_s,
        "gpu_busy": summary.gpu_busy,
        "simulated_s": summary.duration_s,
        "arrival_rps": summary.arrival_rps,
        "completion_rps": summary.completion_rps,
        "overloaded": summary.overloaded,
        "engine": sim.engine,
    }
