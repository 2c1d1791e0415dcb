"""What one instance sees of the fleet's traffic behind a router.

The fleet receives arrivals at the peak rate with gaps of coefficient of variation c (a renewal
process); N instances share them:

* **random**: each request to an instance drawn uniformly, independently. An instance sees a
  thinned renewal process at rate/N whose gaps are sums of a geometric number (mean N) of the
  fleet's gaps: c_N² = 1 + (c² − 1)/N (Poisson stays Poisson).
* **round-robin**: to the instances in turn. An instance sees every N-th arrival: a renewal
  process whose gaps are sums of N gaps, c_N² = c²/N.
* **least-loaded** (join the shortest queue): state-dependent; in the model, the prompt queue
  sees the random router's arrivals (JSQ does not look at where a step is, and its waits are
  never longer than a random split's), while the decode batch is pooled over the fleet: each
  instance holds about 1/N of the fleet's requests, so its batch's variance-to-mean is the
  single instance's divided by N, and a request's life sees the fleet's arrivals spread evenly,
  interruptions counted as round-robin's (c²/N). Checked against the simulator's
  join-the-shortest-queue balancer in ``benchmarks/openloop_vs_sim.py``.

The fleet size enters through ``node_below``: the router's effect is taken at the count just
below N on the grid 1, 2, 3, 4, 6, 8, 12, 16 (:data:`NODES`; steps of √2 at most, the
last for every larger fleet), so counts between nodes share one per-instance model, and a plan
and a sweep size every peak with the same few searches. Below N the arrivals are burstier and
less pooled: never optimistic.

Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferencesize.vocabulary import Router


@dataclass(frozen=True)
class Instance:
    """Arrivals at one instance: ``cv`` of the gaps its prompt queue sees, ``pool`` the fleet
    size its decode batch is pooled over (1: alone), ``idc_itl`` the variance-to-mean of the
    arrivals during a request's life (None: ``cv``²)."""

    cv: float = 1.0
    pool: float = 1.0
    idc_itl: float | None = None


#: The fleet sizes whose arrivals the model takes (each for the sizes up to the next); from the
#: last on, the pooling and smoothing a router gives are taken as at it (as far as more
#: instances smooth a Poisson fleet's arrivals in the model: eight Erlang phases).
NODES = (1, 2, 3, 4, 6, 8, 12, 16)


def node_below(n: int) -> int:
    """The largest node of :data:`NODES` at most ``n`` ≥ 1."""
    if n < 1:
        raise ValueError(f"instances must be >= 1 (got {n})")
    return max(k for k in NODES if k <= n)


def node_above(n: int) -> int | None:
    """The node after ``n``'s node (None after the last)."""
    later = [k for k in NODES if k > n]
    return later[0] if later else None


def instance(router: Router | str, cv: float, n: int) -> Instance:
    """What one of ``n`` instances behind ``router`` sees of fleet arrivals with gap
    coefficient of variation ``cv`` (module docstring); ``n`` as it is, not rounded."""
    if n < 1:
        raise ValueError(f"instances must be >= 1 (got {n})")
    c2 = cv * cv
    route = Router(router)
    if n == 1:
        return Instance(cv)
    if route is Router.ROUND_ROBIN:
        return Instance(math.sqrt(c2 / n))
    thinned = math.sqrt(1.0 + (c2 - 1.0) / n)
    if route is Router.RANDOM:
        return Instance(thinned)
    if route is Router.LEAST_LOADED:
        return Instance(thinned, float(n), c2 / n)
    raise ValueError(f"no open-loop model of the {route} router")  # a new Router needs one
