"""Sweeps: plan every point of a cartesian grid of scenario fields, fast.

A grid is a base scenario (a mapping of scenario fields) and axes ``field=values``; every
combination is one scenario, planned exactly like ``infersize plan``. Two things make 10,000
points take seconds rather than minutes:

* **Capacity once per workload.** Feasibility and each candidate's operating point (the
  highest-rate load meeting the limits) depend on the model, hardware, precision, split,
  ISL, OSL, limits and batching, never on the traffic. Points that differ only in traffic
  (``mean_rps``, ``peak_rps``, ``percentile``, ``dispersion``) share one planner run; each
  peak then only needs ``instances = ceil(peak / rate)`` and the packing arithmetic, done for
  all peaks of a group at once with numpy (:func:`choose`), and the chosen plan re-sized with
  :func:`inferencesize.planner.at_peak`.
* **Vectorised concurrency search** (:func:`inferencesize.planner.search_point`): up to 256
  concurrencies per numpy call, two array calls (rarely three) per candidate.

Pure: no I/O, no printing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Annotated, Any

import numpy as np
from pydantic import TypeAdapter, ValidationError

from inferencesize.demand import peak_of
from inferencesize.economics import RANKING
from inferencesize.errors import InputError
from inferencesize.estimate import Estimator
from inferencesize.packing import instances_needed, servers_needed
from inferencesize.plan_search import plan
from inferencesize.planner import Plan, PlanResult, at_peak, rank
from inferencesize.question import DEFAULT_OPTIONS, Lookup, PlanOptions, look_up
from inferencesize.specs import ModelSpec
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.units import PRECISIONS
from inferencesize.vocabulary import Objective

#: Scenario fields that describe rather than size a scenario (not variable).
NOT_VARIABLE = ("id", "description", "source", "budget")
#: Scenario options whose answer is not one plan per point (a daily profile, a pipeline of
#: models, disaggregated pools) or that are read from a file when a question is resolved (a
#: trace): a sweep refuses them rather than silently ignoring them.
NOT_SWEPT = ("daily", "pipeline", "disaggregated", "trace")
#: Options a sweep hands to the caller's ``configure`` (estimator and planner arguments).
CONFIGURED = (
    "objective",
    "economics",
    "attention_dp",
    "span_nvlink_domain",
    "share_gpus",
    "kv_cap",
    "techniques",
)
#: configure(scenario, its model) -> (estimator, the planner's options)
Configure = Callable[[ScenarioSpec, ModelSpec], tuple[Estimator, PlanOptions]]


def unsupported_options(spec: ScenarioSpec) -> list[str]:
    """The options of ``spec`` a sweep would ignore (set to other than their defaults)."""
    fields = ScenarioSpec.model_fields
    return [f for f in NOT_SWEPT if getattr(spec, f) != fields[f].default]


#: Fields whose value is a list: one axis value is one element, or several joined with '+'.
LIST_FIELDS = ("hardware", "precision")
SPLIT_FIELDS = ("tp", "pp", "ep")
#: Traffic fields: they change the peak only, never a candidate's operating point.
TRAFFIC_FIELDS = ("mean_rps", "peak_rps", "percentile", "dispersion")
#: Giving one of these drops the other from the base (as the plan flags do).
EXCLUSIVE = {
    "isl": "isl_words",
    "isl_words": "isl",
    "osl": "osl_words",
    "osl_words": "osl",
    "mean_rps": "peak_rps",
    "peak_rps": "mean_rps",
}
MAX_POINTS = 1_000_000
#: Points validated, grouped and ranked together by :meth:`Sweeper.run`: memory is bounded by
#: one chunk, not the grid.
CHUNK_POINTS = 2048


def variable_fields() -> list[str]:
    """Scenario fields a sweep can vary (every sizing field of the scenario schema)."""
    return [f for f in ScenarioSpec.model_fields if f not in (*NOT_VARIABLE, *NOT_SWEPT)]


@dataclass(frozen=True)
class Axis:
    """One ``--vary`` axis: a scenario field and its values, in order."""

    field: str
    values: tuple[Any, ...]


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _range_spec(name: str, text: str) -> tuple[int | float, int | float, int | float, int]:
    """``START:STOP[:STEP]`` -> (start, stop, step, number of values), counted without building
    them; at most :data:`MAX_POINTS` values."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise InputError(f"--vary {name}={text}: a range is START:STOP or START:STOP:STEP")
    try:
        nums = [_number(p.strip()) for p in parts]
    except ValueError:
        raise InputError(f"--vary {name}={text}: range bounds must be numbers") from None
    start, stop = nums[0], nums[1]
    step = nums[2] if len(nums) == 3 else 1
    if not all(math.isfinite(v) for v in nums):
        raise InputError(f"--vary {name}={text}: range bounds must be finite")
    if step <= 0:
        raise InputError(f"--vary {name}={text}: empty range (step must be > 0)")
    if start > stop:
        raise InputError(f"--vary {name}={text}: empty range (start {start} > stop {stop})")
    span = (stop - start) / step
    if not math.isfinite(span):  # e.g. 0:1e300:1e-300
        raise InputError(f"--vary {name}={text}: too many values (at most {MAX_POINTS:,})")
    count = math.floor(span + 1e-9) + 1
    if count > MAX_POINTS:
        raise InputError(f"--vary {name}={text}: {count:,} values (at most {MAX_POINTS:,})")
    return start, stop, step, count


def _range(name: str, text: str) -> list[int | float]:
    start, stop, step, count = _range_spec(name, text)
    integral = all(isinstance(v, int) for v in (start, stop, step))
    return [start + i * step if integral else round(start + i * step, 12) for i in range(count)]


def _scalar(name: str, text: str) -> Any:
    if name in LIST_FIELDS:
        items = [t.strip() for t in text.split("+") if t.strip()]
        if not items:
            raise InputError(f"--vary {name}: empty value")
        return items
    if name in SPLIT_FIELDS:
        if text.strip().lower() == "auto":
            return "auto"
        try:
            return [int(t) for t in text.split("+")]
        except ValueError:
            raise InputError(
                f"--vary {name}={text}: expected 'auto' or integers joined by '+'"
            ) from None
    try:
        return _number(text)
    except ValueError:
        return text


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    """The validator of one scenario field (built once: building one takes ~1 ms)."""
    info = ScenarioSpec.model_fields[name]
    form: Any = info.annotation
    if info.metadata:
        form = Annotated[(form, *info.metadata)]
    return TypeAdapter(form)


def check_value(name: str, value: Any) -> Any:
    """Validate one axis value against the field's type; the value as the scenario holds it."""
    try:
        out = _adapter(name).validate_python(value)
    except ValidationError as err:
        msg = err.errors()[0]["msg"]
        raise InputError(f"--vary {name}={_show(value)}: {msg}") from None
    if name in ("precision", "kv_precision"):
        for p in out if isinstance(out, list) else [out]:
            if p is not None and p not in PRECISIONS:
                raise InputError(
                    f"--vary {name}: unknown precision {p!r}; expected one of"
                    f" {', '.join(PRECISIONS)}"
                )
    return out


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "+".join(str(v) for v in value)
    return str(value)


def parse_axis(text: str) -> Axis:
    """``field=a,b,c`` or ``field=START:STOP[:STEP]`` (inclusive) -> an Axis.

    List fields (hardware, precision) take one id per value, several joined with ``+``;
    tp/pp/ep take ``auto`` or integers joined with ``+``.
    """
    name, sep, spec = text.partition("=")
    name = name.strip().replace("-", "_")
    fields = variable_fields()
    if not sep or not name:
        raise InputError(f"--vary {text}: expected FIELD=VALUES, e.g. isl=500,1000,2000")
    if name in NOT_SWEPT:
        raise InputError(
            f"--vary {name}: sweep does not model this option yet; plan such scenarios point by"
            " point with `infersize plan`"
        )
    if name not in fields:
        import difflib

        close = difflib.get_close_matches(name, fields, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else f"fields: {', '.join(fields)}"
        raise InputError(f"--vary {name}: not a scenario field; {hint}")
    spec = spec.strip()
    if not spec:
        raise InputError(f"--vary {name}: no values (give a,b,c or START:STOP:STEP)")
    if ":" in spec and name not in LIST_FIELDS:
        raw: list[Any] = list(_range(name, spec))
    else:
        raw = [_scalar(name, t.strip()) for t in spec.split(",") if t.strip()]
        if not raw:
            raise InputError(f"--vary {name}={spec}: no values")
    return Axis(name, tuple(check_value(name, v) for v in raw))


def _axis_name(text: str) -> tuple[str, str]:
    name, _, spec = text.partition("=")
    return name.strip().replace("-", "_"), spec.strip()


def planned_size(texts: Sequence[str]) -> int:
    """The number of grid points the ``--vary`` texts describe, counted arithmetically (no
    axis is expanded, no value validated; a range's count as :func:`parse_axis` would make
    it). Malformed texts count one value each: :func:`parse_axis` reports them."""
    total = 1
    fields = set(variable_fields())
    for text in texts:
        name, spec = _axis_name(text)
        if name not in fields or not spec:
            continue
        if ":" in spec and name not in LIST_FIELDS:
            total *= _range_spec(name, spec)[3]
        else:
            total *= max(1, sum(1 for t in spec.split(",") if t.strip()))
    return total


def grid_size(axes: Sequence[Axis]) -> int:
    return math.prod(len(a.values) for a in axes)


def expand(axes: Sequence[Axis], points: range | None = None) -> Iterator[dict[str, Any]]:
    """The cartesian product in order (the last axis varies fastest); ``points``: only the
    points with these indices (a contiguous, increasing range)."""
    names = [a.field for a in axes]
    combos: Iterator[tuple[Any, ...]] = itertools.product(*(a.values for a in axes))
    if points is not None:
        combos = itertools.islice(combos, points.start, points.stop)
    for combo in combos:
        yield dict(zip(names, combo, strict=True))


def apply(base: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The base scenario mapping with ``values`` set (dropping the exclusive partner)."""
    data = dict(base)
    for key in values:
        other = EXCLUSIVE.get(key)
        if other is not None and other not in values:
            data.pop(other, None)
    data.update(values)
    return data


@dataclass(frozen=True)
class Row:
    """One sweep point: its scenario (or why it is invalid) and its plan (or why none)."""

    index: int
    values: dict[str, Any]
    scenario: ScenarioSpec | None
    peak_rps: float | None
    plan: Plan | None
    binding: str | None
    reason: str | None


def workload_key(s: ScenarioSpec) -> tuple[Any, ...]:
    """Everything but the traffic: points with the same key share one planner run."""
    return (
        s.model,
        tuple(s.hardware),
        tuple(s.precision),
        s.kv_precision,
        s.input_tokens,
        s.output_tokens,
        s.ttft_ms,
        s.itl_ms,
        s.e2e_ms,
        s.mode,
        s.batching,
        tuple(s.batch_sizes or ()),
        s.tp if s.tp == "auto" else tuple(s.tp),
        s.pp if s.pp == "auto" else tuple(s.pp),
        s.ep if s.ep == "auto" else tuple(s.ep),
        *(_frozen(getattr(s, f)) for f in CONFIGURED),
    )


def _frozen(value: Any) -> Any:
    """A hashable form of a scenario option (pydantic blocks as their JSON)."""
    if hasattr(value, "model_dump_json"):
        return value.model_dump_json()
    if isinstance(value, list):
        return tuple(value)
    return value


def _invalid(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    msg = str(first["msg"]).removeprefix("Value error, ")
    return f"invalid scenario: {loc}: {msg}" if loc else f"invalid scenario: {msg}"


def choose(feasible: Sequence[Plan], peaks: Any) -> Any:
    """Index of the chosen plan for every peak: the planner's ranking (:func:`rank`: servers
    and GPUs paid for, cost, power, GPUs used, whole-GPU instances before shared ones, more
    spare capacity, label) with its
    sizing arithmetic (:mod:`inferencesize.packing`; instances sharing a GPU take
    ceil(n / per GPU) GPUs), for all peaks at once. A closed-loop plan's instances follow from
    its rate; an open-loop plan's from its instance search at each peak (a router's effect
    depends on the fleet size)."""
    peak = np.asarray(peaks, dtype=float)[:, None]
    shape = (peak.size, len(feasible))
    inst = np.empty(shape)
    for j, p in enumerate(feasible):
        if p.sizing is None:
            inst[:, j] = instances_needed(peak[:, 0], p.rate, 1.0)
            continue
        p.sizing.search.closed = True  # many peaks: each node's search closed once
        for i, pk in enumerate(peak[:, 0]):
            n = p.sizing.search.fewest(float(pk))
            assert n is not None  # feasible at one peak: at every peak
            inst[i, j] = n
    per = np.array([p.gpus_per_instance for p in feasible])[None, :]
    node = np.array([p.gpus_per_node for p in feasible])[None, :]
    unit_nodes = np.array([p.fleet.unit.nodes for p in feasible])[None, :]
    unit_gpus = np.array([p.fleet.unit.gpus for p in feasible])[None, :]

    def per_unit(total: float | None, units: int) -> float:
        return total / units if total is not None else np.inf

    price = np.array([per_unit(p.cost_per_hour_usd, p.fleet.units) for p in feasible])[None, :]
    watts = np.array([per_unit(p.power_watts, p.fleet.units) for p in feasible])[None, :]
    labels = [p.candidate.label() for p in feasible]
    label_rank = np.broadcast_to(np.argsort(np.argsort(np.array(labels)))[None, :], shape)
    per_gpu = np.array([p.candidate.share.per_gpu if p.candidate.share else 1 for p in feasible])
    shared = np.broadcast_to(np.array([p.candidate.share is not None for p in feasible]), shape)
    groups = np.ceil(inst / per_gpu[None, :])  # GPUs (GPU groups) the instances occupy
    gpus = np.broadcast_to(groups * per, shape)
    # what is paid for: whole units of their nodes and GPUs (economics.fleet_of)
    units = -(-servers_needed(groups, per, node) // unit_nodes)
    servers = np.broadcast_to(units * unit_nodes, shape)
    gpus_paid = np.broadcast_to(units * unit_gpus, shape)
    cost = np.broadcast_to(np.where(np.isinf(price), np.inf, price * units), shape)
    power = np.broadcast_to(np.where(np.isinf(watts), np.inf, watts * units), shape)
    # economics.RANKING (objective servers), then Plan.prefix's shared, then the label
    figures = {
        "servers_paid": servers,
        "gpus_paid": gpus_paid,
        "cost": cost,
        "power": power,
        "gpus_used": gpus,
    }
    ranked = [figures[name] for name in RANKING[Objective.SERVERS]]
    order = np.lexsort((label_rank, shared, *reversed(ranked)), axis=-1)  # last key first
    first = order[:, 0].copy()
    for i in range(shape[0]):  # a tie on everything paid: more room first (Plan.sort_key)
        row = (*(r[i] for r in ranked), shared[i])
        best = tuple(r[first[i]] for r in row)
        tied = [int(j) for j in order[i] if tuple(r[j] for r in row) == best]
        if len(tied) > 1:
            pk = float(peak[i, 0])
            spare = {j: feasible[j].capacity.room(int(inst[i, j]), pk) for j in tied}
            first[i] = min(tied, key=lambda j: (-spare[j], label_rank[i, j]))
    return first


@dataclass
class Sweeper:
    """Plans grid points with one estimator, sharing planner runs across traffic levels."""

    est: Estimator
    lookup: Lookup
    #: Estimator and planner options of a scenario's ``CONFIGURED`` fields (techniques, KV
    #: cap, objective, pricing, attention DP, NVLink span); None: the plain estimator.
    configure: Configure | None = None
    _results: dict[tuple[Any, ...], PlanResult] | None = None
    _setups: dict[tuple[Any, ...], tuple[Estimator, PlanOptions]] | None = None

    def setup(
        self, s: ScenarioSpec, key: tuple[Any, ...], model: ModelSpec
    ) -> tuple[Estimator, PlanOptions]:
        """The estimator and planner options of ``s``, whose model is ``model`` (cached per
        workload ``key``, its :func:`workload_key`)."""
        if self._setups is None:
            self._setups = {}
        if key not in self._setups:
            plain = (self.est, DEFAULT_OPTIONS)
            self._setups[key] = self.configure(s, model) if self.configure else plain
        return self._setups[key]

    def capacity(self, s: ScenarioSpec, key: tuple[Any, ...] | None = None) -> PlanResult:
        """The planner's result for the workload of ``s`` (sized for 1 req/s; re-size with
        :func:`inferencesize.planner.at_peak`)."""
        if self._results is None:
            self._results = {}
        key = key or workload_key(s)
        if key not in self._results:
            q = look_up(self.lookup, s)  # each grid point's question, resolved as plan's is
            est, options = self.setup(s, key, q.model)
            self._results[key] = plan(q, 1.0, est, replace(options, top=0))
        return self._results[key]

    def run(
        self, base: Mapping[str, Any], grid: Iterable[Mapping[str, Any]], first: int = 0
    ) -> Iterator[Row]:
        """Every grid point planned, in grid order (a generator: rows stream out, planned
        :data:`CHUNK_POINTS` at a time); ``first``: the index of the first point."""
        points = iter(grid)
        while chunk := list(itertools.islice(points, CHUNK_POINTS)):
            yield from self._chunk(base, chunk, first)
            first += len(chunk)

    def _chunk(
        self, base: Mapping[str, Any], grid: Sequence[Mapping[str, Any]], first: int
    ) -> Iterator[Row]:
        specs: list[tuple[ScenarioSpec, float, tuple[Any, ...]] | str] = []
        groups: dict[tuple[Any, ...], list[int]] = {}
        peak_at: dict[int, float] = {}
        for i, values in enumerate(grid):
            try:
                spec = ScenarioSpec.model_validate(apply(base, values))
                peak_at[i] = peak_of(spec)
                key = workload_key(spec)
                specs.append((spec, peak_at[i], key))
            except ValidationError as err:
                specs.append(_invalid(err))
                continue
            except ValueError as err:
                specs.append(f"invalid traffic: {err}")
                continue
            groups.setdefault(key, []).append(i)
        chosen: dict[int, int] = {}
        done: set[tuple[Any, ...]] = set()
        for i, values in enumerate(grid):
            item = specs[i]
            if isinstance(item, str):
                yield Row(first + i, dict(values), None, None, None, None, item)
                continue
            s, pk, key = item
            result = self.capacity(s, key)
            assert self._setups is not None  # set up by capacity
            est, options = self._setups[key]
            pricing, objective = options.pricing, options.objective
            fast = objective == Objective.SERVERS and pricing is None
            if fast and key not in done:
                done.add(key)
                members = groups[key]
                if result.feasible:
                    picks = choose(result.feasible, [peak_at[m] for m in members])
                    chosen.update(zip(members, (int(p) for p in picks), strict=True))
            if not result.feasible:
                reason = result.nearest_miss or "no feasible plan"
                yield Row(first + i, dict(values), s, pk, None, result.binding_constraint, reason)
                continue
            if fast:
                best = at_peak(
                    result.feasible[chosen.pop(i)], pk, s.input_tokens, s.output_tokens, est
                )
            else:  # rank every feasible plan at this peak as the planner does
                sized = [
                    at_peak(p, pk, s.input_tokens, s.output_tokens, est, pricing)
                    for p in result.feasible
                ]
                best = rank(sized, objective)[0]
            yield Row(first + i, dict(values), s, pk, best, best.binding, None)
