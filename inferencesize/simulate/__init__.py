"""Discrete-event simulation of serving instances, request by request (pure: no I/O)."""

from inferencesize.simulate.arrivals import (
    Workload,
    gamma_arrivals,
    lengths,
    poisson_arrivals,
)
from inferencesize.simulate.engine import (
    BALANCERS,
    POLICIES,
    PROMPT_STEP_TOKENS,
    Balancer,
    BatchingConfig,
    Policy,
    SimResult,
    simulate,
)
from inferencesize.simulate.llm import KvBudget, kv_budget, simulate_llm
from inferencesize.simulate.service import ConstantService, LlmService, Service
from inferencesize.simulate.stats import Summary, per_request, summarize

__all__ = [
    "BALANCERS",
    "POLICIES",
    "PROMPT_STEP_TOKENS",
    "Balancer",
    "BatchingConfig",
    "ConstantService",
    "KvBudget",
    "LlmService",
    "Policy",
    "Service",
    "SimResult",
    "Summary",
    "Workload",
    "gamma_arrivals",
    "kv_budget",
    "lengths",
    "per_request",
    "poisson_arrivals",
    "simulate",
    "simulate_llm",
    "summarize",
]
