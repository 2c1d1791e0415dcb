"""The resolved question: a validated scenario turned, once, into the frozen values the
solvers take.

A scenario states ids (``model: llama-3-8b``), ``"auto"`` for a search over every valid value,
limits in milliseconds and arrivals as a word. :func:`question_of` resolves them once: the
model and hardware specs (looked up in the catalog here and nowhere later), the precisions and
splits searched (None: every valid one), the limits in seconds at their statistics, and the
arrivals as a tagged value (:class:`ClosedLoop`, :class:`OpenLoop` with its ``cv`` and
router, or a trace's, :class:`TraceArrivals`), each with its own words. A disaggregated pool
or a pipeline stage inherits what it does not state from the scenario with :func:`inherit`,
through one function (:func:`part_space`).

Every solver takes a :class:`Question` (``plan_search.plan(question, peak_rps, est, options)``,
``frontier``, ``verify_plan``, ``plan_disaggregated``; a pipeline stage's is
``pipeline.Stage.question``) and, for the planner, :class:`PlanOptions`: no solver sees an id,
``"auto"``, a millisecond or an arrivals word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from inferencesize.economics import Budget, Pricing
from inferencesize.limits import Limits
from inferencesize.specs import GpuSpec, ModelSpec, SystemSpec
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.vocabulary import (
    DEFAULT_ROUTER,
    Arrivals,
    Batching,
    Objective,
    Router,
    gaps_words,
)

if TYPE_CHECKING:  # a trace is read by the application layer
    from inferencesize.trace_traffic import TraceTraffic

T = TypeVar("T")
#: A hardware option: a GPU, alone or in a system.
Hardware = tuple[GpuSpec, SystemSpec | None]


class Lookup(Protocol):
    """What resolving a question needs from a catalog."""

    def model(self, name: str) -> ModelSpec: ...

    def hardware(self, name: str) -> tuple[GpuSpec, SystemSpec | None]: ...


def inherit(own: T | None, scenario: T) -> T:
    """A pool's or a stage's value where it states one, else the scenario's."""
    return own if own is not None else scenario


def searched(value: Any) -> list[Any] | None:
    """Precisions or splits to search: ``"auto"`` (or unstated) -> None, every valid value;
    else the listed ones."""
    return None if value is None or value == "auto" else list(value)


def hardware_ids(names: Sequence[str]) -> list[str]:
    """Hardware ids as a question compares them: each once, in the order first stated."""
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class ClosedLoop:
    """N clients that each send their next request when their answer ends (the GenAI-Perf
    concurrency benchmark): no arrival process, clients spread evenly."""

    kind = Arrivals.CLOSED_LOOP
    open_loop = False
    cv = 1.0
    router = DEFAULT_ROUTER
    words = "closed-loop clients"


@dataclass(frozen=True)
class OpenLoop:
    """Requests arriving at a rate: gaps with coefficient of variation ``cv`` (1: Poisson,
    above 1 burstier, gamma), spread over the instances by ``router``."""

    cv: float = 1.0
    router: Router = DEFAULT_ROUTER
    kind = Arrivals.POISSON
    open_loop = True

    @property
    def words(self) -> str:
        return f"{gaps_words(self.cv)} arrivals, {self.router} router"


#: The arrivals word of a question whose requests are a trace's (``trace:``; a scenario may
#: state ``arrivals: trace``): not a scenario's :class:`Arrivals` value, which says how
#: arrivals are modelled; a trace's are modelled as a rate with its burstiness.
TRACE = "trace"


@dataclass(frozen=True)
class TraceArrivals:
    """A trace's requests: arrivals at a rate whose gaps have the trace's coefficient of
    variation ``cv`` (as sized for), spread over the instances by ``router``; ``source``
    names the file, ``skipped`` its rows of 0 tokens left out."""

    cv: float
    router: Router = DEFAULT_ROUTER
    source: str = ""
    skipped: int = 0
    kind = TRACE
    open_loop = True

    @property
    def words(self) -> str:
        note = f", {self.skipped:,} rows of 0 tokens skipped" if self.skipped else ""
        return f"arrivals of trace {self.source} (sized at cv {self.cv:.3g}{note})"


ArrivalsModel = ClosedLoop | OpenLoop | TraceArrivals


def arrivals_of(spec: ScenarioSpec, trace: TraceTraffic | None = None) -> ArrivalsModel:
    """The arrivals a scenario is sized for (its schema has settled the default): a trace's
    requests where it names one (``trace``, read), its gaps' cv the one the scenario holds."""
    if trace is not None:
        return TraceArrivals(spec.cv, Router(spec.router), trace.source, trace.skipped)
    if spec.arrivals == Arrivals.POISSON:
        return OpenLoop(spec.cv, Router(spec.router))
    return ClosedLoop()


@dataclass(frozen=True)
class SearchSpace:
    """What is searched: the model, the hardware options, precisions and splits (None: every
    valid one)."""

    model: ModelSpec
    hardware: tuple[Hardware, ...]
    precisions: list[str] | None = None
    kv_precision: str | None = None
    tps: list[int] | None = None
    pps: list[int] | None = None
    eps: list[int] | None = None


@dataclass(frozen=True)
class Question:
    """A single-model sizing question, resolved: every solver takes these values."""

    space: SearchSpace
    isl: int
    osl: int
    limits: Limits
    arrivals: ArrivalsModel = ClosedLoop()
    batching: Batching = Batching.INFLIGHT
    batch_sizes: list[int] | None = None

    @property
    def open_loop(self) -> bool:
        """Sized under open-loop arrivals: a rate, in-flight batching (static batching keeps
        the closed-loop batch model)."""
        return self.arrivals.open_loop and self.batching != Batching.STATIC

    @property
    def model(self) -> ModelSpec:
        return self.space.model


class Part(Protocol):
    """A part of a scenario with its own search space: a pipeline stage or a disaggregated
    pool. What it leaves unset (None) is the scenario's."""

    @property
    def precision(self) -> list[str] | None: ...

    @property
    def kv_precision(self) -> str | None: ...

    @property
    def tp(self) -> Any: ...

    @property
    def pp(self) -> Any: ...

    @property
    def ep(self) -> Any: ...


def part_space(
    part: Part, spec: ScenarioSpec, model: ModelSpec, hardware: Sequence[Hardware]
) -> SearchSpace:
    """A pipeline stage's or a disaggregated pool's search space: its model and hardware
    (looked up), its precisions and splits, each inherited from the scenario where the part
    states none."""
    return SearchSpace(
        model,
        tuple(hardware),
        searched(inherit(part.precision, spec.precision)),
        inherit(part.kv_precision, spec.kv_precision),
        searched(inherit(part.tp, spec.tp)),
        searched(inherit(part.pp, spec.pp)),
        searched(inherit(part.ep, spec.ep)),
    )


def question_of(
    spec: ScenarioSpec,
    model: ModelSpec,
    hardware: Sequence[Hardware],
    trace: TraceTraffic | None = None,
) -> Question:
    """The question of a single-model scenario whose model and (de-duplicated) hardware have
    been looked up, and whose trace (``trace:``), if it names one, has been read."""
    space = SearchSpace(
        model,
        tuple(hardware),
        searched(spec.precision),
        spec.kv_precision,
        searched(spec.tp),
        searched(spec.pp),
        searched(spec.ep),
    )
    return Question(
        space,
        spec.input_tokens,
        spec.output_tokens,
        Limits.of(spec),
        arrivals_of(spec, trace),
        spec.batching,
        spec.batch_sizes,
    )


def look_up(lookup: Lookup, spec: ScenarioSpec) -> Question:
    """:func:`question_of` with the model and hardware looked up in ``lookup`` (ids already
    checked: a sweep's grid point)."""
    assert spec.model is not None  # pipeline scenarios are planned stage by stage
    hardware = [lookup.hardware(h) for h in hardware_ids(spec.hardware)]
    return question_of(spec, lookup.model(spec.model), hardware)


@dataclass(frozen=True)
class PlanOptions:
    """How :func:`inferencesize.plan_search.plan` searches and ranks, beyond the question: the
    alternatives shown (``top``), what is minimised first (``objective``), the prices
    (``pricing``; None: the catalog's), attention data-parallel degrees (``dps``; None: 1
    only), whether an instance may fill a rack's NVLink domain, branch and bound (``prune``,
    open loop), several instances per GPU (``share_gpus``), a ``budget`` (``check``) and where
    each open-loop search's first point lies (``start_share``: a share of one instance's
    sustainable rate, where a caller knows roughly the answer; None: the search's own guess;
    it changes which points are solved, never the answer)."""

    top: int = 3
    objective: Objective = Objective.SERVERS
    pricing: Pricing | None = None
    dps: tuple[int, ...] | None = None
    span_nvlink_domain: bool = False
    prune: bool = False
    share_gpus: bool = False
    budget: Budget | None = None
    start_share: float | None = None


#: The planner's options where a caller states none.
DEFAULT_OPTIONS = PlanOptions()
