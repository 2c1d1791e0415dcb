"""The words of a question, each declared once: the scenario schema, the command-line flags
and the solvers take these enums (a ``StrEnum`` is its value: ``Arrivals.POISSON ==
"poisson"``, and pydantic and Typer accept it as they accept a ``Literal``).

The member order is the order flags list their choices in.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Final, Literal, TypeAlias

from inferencesize.units import statistic_fraction


class Statistic(StrEnum):
    """The statistic a latency limit is stated at: the mean or a percentile over requests.

    A percentile is ``p`` followed by its percent (``p99``, ``p99.9``): :attr:`fraction` reads
    it, so a new percentile is one member here.
    """

    MEAN = "mean"
    P50 = "p50"
    P90 = "p90"
    P95 = "p95"
    P99 = "p99"

    @property
    def fraction(self) -> float | None:
        """The fraction of requests at or below a percentile (``p99`` -> 0.99); None: mean."""
        return fraction_of(self)


def fraction_of(statistic: str | float) -> float | None:
    """The one rule for "the mean or a percentile": None for ``"mean"``, else the fraction a
    percentile stands for (``"p99"`` -> 0.99; a fraction in (0, 1) as given)."""
    return None if statistic == Statistic.MEAN else statistic_fraction(statistic)


def quantiles_of(statistics: Iterable[str | float]) -> tuple[float, ...]:
    """The percentiles (fractions, ascending, each once) that limits held at ``statistics``
    need computed; the mean needs none."""
    return tuple(sorted({q for s in statistics if (q := fraction_of(s)) is not None}))


#: The percentile statistics, in order (every member but the mean).
PERCENTILES: Final[tuple[Statistic, ...]] = tuple(s for s in Statistic if s is not Statistic.MEAN)
#: Their fractions (0.5, 0.9, …): what a point reports when no limit asks for fewer.
QUANTILES: Final[tuple[float, ...]] = tuple(statistic_fraction(s.value) for s in PERCENTILES)


class Arrivals(StrEnum):
    """How requests reach the deployment: from N clients that each send the next request when
    their answer ends (closed loop: the GenAI-Perf concurrency mode NVIDIA's sizing tables were
    measured with), or at a rate (open loop: Poisson, or gamma with ``cv``)."""

    CLOSED_LOOP = "closed-loop"
    POISSON = "poisson"


def gaps_words(cv: float) -> str:
    """The words for arrivals at a rate whose gaps have coefficient of variation ``cv``:
    Poisson (1), evenly spaced (0), gamma (cv …) otherwise."""
    if cv == 1.0:
        return "Poisson"
    if cv == 0.0:
        return "evenly spaced"
    return f"gamma (cv {cv:g})"


class Mode(StrEnum):
    """How answers are delivered: token by token (TTFT and ITL hold) or whole (E2E holds)."""

    STREAMING = "streaming"
    SEQUENTIAL = "sequential"


class Objective(StrEnum):
    """What plans are ranked by first."""

    SERVERS = "servers"
    GPUS = "gpus"
    COST = "cost"
    POWER = "power"


class CostBasis(StrEnum):
    """How a fleet is priced: ``cloud`` $/GPU-hour; ``owned`` purchase price, amortisation and
    power; ``auto`` cloud when a $/GPU-hour is known, else owned when a purchase price is."""

    AUTO = "auto"
    CLOUD = "cloud"
    OWNED = "owned"


#: A latency a limit can hold: time to first token, inter-token latency, end to end. A
#: ``Literal`` (not an enum): the solvers widen it into other literal sets (a binding limit is
#: a metric or ``"memory"``).
Metric: TypeAlias = Literal["ttft", "itl", "e2e"]
#: The metrics, in the order tables list them.
METRICS: Final[tuple[Metric, ...]] = ("ttft", "itl", "e2e")


class Batching(StrEnum):
    """How an instance batches requests; the values are the scenario and JSON spellings.

    ``inflight``: continuous (iteration-level) batching; ``static``: a batch of B requests is
    prefilled together, then decoded together until the last answer ends.
    """

    INFLIGHT = "inflight"
    STATIC = "static"


#: What a batching argument accepts: the enum, or its value as a caller spells it.
BatchingMode: TypeAlias = Batching | Literal["inflight", "static"]


class Router(StrEnum):
    """How requests are spread over the instances of a deployment; the values are the
    scenario, flag and JSON spellings.

    ``random``: each request to an instance drawn uniformly at random (independent of their
    state); ``round-robin``: to the instances in turn; ``least-loaded``: to the instance with
    the fewest requests outstanding (join the shortest queue), as production routers do.
    """

    RANDOM = "random"
    ROUND_ROBIN = "round-robin"
    LEAST_LOADED = "least-loaded"


#: The router a question assumes unless it states one.
DEFAULT_ROUTER: Final = Router.LEAST_LOADED
