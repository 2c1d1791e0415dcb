"""Workloads: arrival times and prompt / answer lengths (pure, seeded numpy Generator).

* Poisson arrivals at ``rate``: exponential inter-arrival times, mean 1 / rate.
* Bursty arrivals: gamma inter-arrival times with mean 1 / rate and coefficient of variation
  ``cv`` (shape 1 / cv², scale 1 / (rate · shape)); cv = 1 is Poisson, cv > 1 is burstier,
  cv 0 evenly spaced.
* Closed loop: ``concurrency`` clients, each sends its next request when the previous one
  completes (GenAI-Perf's concurrency mode); arrival times come from the simulation.
* Lengths: fixed, or normal with a standard deviation (rounded, at least 1 token).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Workload:
    """``n`` requests. ``arrival_s`` is None for closed-loop clients (``concurrency`` > 0)."""

    isl: IntArray
    osl: IntArray
    arrival_s: FloatArray | None = None
    concurrency: int = 0

    def __post_init__(self) -> None:
        if len(self.isl) != len(self.osl):
            raise ValueError("isl and osl must have the same length")
        if self.arrival_s is None and self.concurrency < 1:
            raise ValueError("a workload needs arrival times or a closed-loop concurrency")
        if self.arrival_s is not None and len(self.arrival_s) != len(self.isl):
            raise ValueError("arrival_s must have one time per request")

    @property
    def n(self) -> int:
        return len(self.isl)

    @property
    def closed_loop(self) -> bool:
        return self.arrival_s is None


def lengths(rng: np.random.Generator, n: int, mean: float, stddev: float = 0.0) -> IntArray:
    """``n`` token counts: ``mean`` when ``stddev`` is 0, else normal, rounded, at least 1."""
    if mean < 1:
        raise ValueError(f"mean length must be >= 1 token (got {mean})")
    if stddev < 0:
        raise ValueError(f"stddev must be >= 0 (got {stddev})")
    if stddev == 0:
        return np.full(n, round(mean), dtype=np.int64)
    drawn = np.rint(rng.normal(mean, stddev, n))
    return np.maximum(drawn, 1).astype(np.int64)


def poisson_arrivals(rng: np.random.Generator, n: int, rate_per_s: float) -> FloatArray:
    """Arrival times of a Poisson process (first arrival after one inter-arrival time)."""
    if rate_per_s <= 0:
        raise ValueError(f"rate must be > 0 requests/s (got {rate_per_s})")
    return np.cumsum(rng.exponential(1.0 / rate_per_s, n))


def gamma_arrivals(rng: np.random.Generator, n: int, rate_per_s: float, cv: float) -> FloatArray:
    """Arrival times with gamma inter-arrival times: mean 1 / rate, coefficient of variation
    cv (cv 0: evenly spaced, every 1 / rate, the first at 1 / rate)."""
    if rate_per_s <= 0:
        raise ValueError(f"rate must be > 0 requests/s (got {rate_per_s})")
    if cv < 0 or not np.isfinite(cv):
        raise ValueError(f"coefficient of variation must be >= 0 (got {cv})")
    if cv == 0:
        return np.arange(1, n + 1, dtype=float) / rate_per_s
    shape = 1.0 / cv**2
    return np.cumsum(rng.gamma(shape, 1.0 / (rate_per_s * shape), n))
