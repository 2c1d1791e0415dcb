"""The application layer: a scenario file and/or flags resolved once into one :class:`Study`.

Every command that sizes or checks a deployment (plan, check, sweep, frontier, ``--verify``,
``--plot``) takes a :class:`Study`; ``estimate`` and ``simulate`` take its one-candidate form,
:class:`PointStudy`. Nothing below the CLI builds an estimator anywhere else, so all of them see
the same deployment: the same engine set, serving techniques, KV cap, peak, limits and pricing.

Precedence is tool defaults < scenario file < flags:

* ``infersize plan`` with no scenario and no flag that states part of the question runs the
  shipped ``default`` scenario (a worked example);
* otherwise the question starts empty (or from the scenario file), flags replace what the file
  says field by field, and what neither states takes the tool's defaults: the hardware of
  :data:`~inferencesize.specs.scenario.DEFAULT_HARDWARE`, every precision each GPU runs
  natively, every TP × PP × EP split, in-flight batching, streaming limits, the 95th
  percentile peak. The study records where each of those values came from (:attr:`origins`).

A flag is given as a dotted scenario path (``tp``, ``economics.pue``,
``techniques.speculative.draft``); the CLI owns the table from option names to paths.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencesize.catalog import (
    Catalog,
    check_scenario,
    display_path,
    load_file,
    parse_spec,
    read_yaml,
)
from inferencesize.demand import PEAK_FIELDS, PeakError, hourly_profile, peak_of
from inferencesize.deployment import default_kv_precision
from inferencesize.economics import Budget, Pricing
from inferencesize.engines import auto_sets, engine_efficiency
from inferencesize.errors import CatalogError, InputError, UnknownIdError
from inferencesize.estimate import Candidate, Estimator
from inferencesize.offline import OfflineBatch, offline_batch
from inferencesize.parallelism import Parallelism
from inferencesize.plan_search import plan
from inferencesize.planner import Limits, PlanResult
from inferencesize.question import (
    DEFAULT_OPTIONS,
    PlanOptions,
    Question,
    SearchSpace,
    hardware_ids,
    inherit,
    part_space,
    question_of,
)
from inferencesize.specs import EfficiencySet, ModelSpec
from inferencesize.specs.scenario import DEFAULT_HARDWARE, MAX_CV, Pool, ScenarioSpec
from inferencesize.specs.techniques import TechniquesSpec
from inferencesize.techniques import Speculative, Techniques, mtp_costs
from inferencesize.transformer import model_costs
from inferencesize.units import PRECISIONS, ms_to_s, tokens_from_words
from inferencesize.vocabulary import Router

if TYPE_CHECKING:  # imported by the methods that need them
    from inferencesize.band_plan import SlowEdge
    from inferencesize.daily import DailyPlan
    from inferencesize.disagg import Comparison, PoolSpec
    from inferencesize.engine_choice import EngineChoice
    from inferencesize.frontier import Frontier
    from inferencesize.pipeline import PipelineResult
    from inferencesize.planner import Plan
    from inferencesize.plotting import LabelledCurve
    from inferencesize.sweep import Axis, Row, Sweeper
    from inferencesize.trace_conversations import PrefixHits
    from inferencesize.trace_fleet import TraceFleet
    from inferencesize.trace_replay import TraceReplay
    from inferencesize.trace_traffic import TraceTraffic
    from inferencesize.verify import Verification

#: The shipped scenario a bare ``infersize plan`` answers.
DEFAULT_SCENARIO = "default"
#: Attention-DP degrees tried for ``attention_dp: auto``.
AUTO_DP = (1, 2, 4, 8, 16, 32, 64)
#: Fields whose tool default the output names when neither file nor flags state them.
DEFAULTED = (
    "hardware", "precision", "tp", "pp", "ep", "batching", "mode", "percentile", "engine",
    "arrivals",
)  # fmt: skip
#: What a trace gives (its mean lengths, its gaps' cv), so a question with one states none.
TRACE_GIVES = ("isl", "isl_words", "osl", "osl_words", "cv")
#: Setting one member of a group (or a key under it) clears the others: a flag replaces what
#: the scenario file said about the same thing.
EXCLUSIVE: tuple[tuple[str, ...], ...] = (
    ("isl", "isl_words"),
    ("osl", "osl_words"),
    ("mean_rps", "peak_rps", "daily", "offline"),
    # an offline batch replaces the latency limits and arrivals, and they replace it
    *(
        ("offline", key)
        for key in ("ttft_ms", "itl_ms", "e2e_ms", "arrivals", "cv", "latency_stat", "trace")
    ),
    *(("offline", f"{key}_stat") for key in ("ttft", "itl", "e2e")),
    ("offline.requests", "offline.tokens_per_day"),
    ("daily.hourly_rps", "daily.requests_per_day"),
    ("daily.hourly_rps", "daily.peak_hour_share"),
)
#: Override paths that are not part of the question (they do not replace the default example).
NOT_QUESTION = frozenset({"engine"})
#: What ``shown`` adds to a scenario's name when flags change it.
WITH_FLAGS = " (with flags)"
#: Fields that state a rate (a trace's mean rate is used only without one of them).
RATE_FIELDS = ("mean_rps", "peak_rps", "daily", "users", "offline")


# --------------------------------------------------------------------------- resolution


def _covers(path: str, key: str) -> bool:
    return path == key or path.startswith(key + ".")


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    """``data[a][b][c] = value`` for ``path`` 'a.b.c', merging into existing mappings."""
    *parents, leaf = path.split(".")
    node = data
    for key in parents:
        child = node.get(key)
        node[key] = child = dict(child) if isinstance(child, dict) else {}
        node = child
    node[leaf] = value


def _drop(data: dict[str, Any], path: str) -> None:
    *parents, leaf = path.split(".")
    node: Any = data
    for key in parents:
        node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return
    node.pop(leaf, None)


def nest(paths: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1, "a.c": 2}`` -> ``{"a": {"b": 1, "c": 2}}``."""
    out: dict[str, Any] = {}
    for path, value in paths.items():
        _set(out, path, value)
    return out


def apply_overrides(data: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    """Apply flag values (dotted scenario paths) to scenario ``data`` in place.

    A path of an :data:`EXCLUSIVE` group clears the group's other members that no flag sets,
    and ``trace`` the fields a trace gives (:data:`TRACE_GIVES`) that no flag sets;
    ``disaggregated`` True/False adds (keeping the file's pools) or removes the block;
    ``batch_sizes`` 'auto' removes the table, and so does a batching other than static.
    """
    for path in overrides:
        for group in EXCLUSIVE:
            if not any(_covers(path, key) for key in group):
                continue
            for other in group:
                if not _covers(path, other) and not any(_covers(p, other) for p in overrides):
                    _drop(data, other)
    if "trace" in overrides:  # a trace given as a flag replaces the lengths it gives
        for key in TRACE_GIVES:
            if key not in overrides:
                data.pop(key, None)
    for path, value in overrides.items():
        if path == "disaggregated":
            if value:
                data["disaggregated"] = data.get("disaggregated") or {}
            else:
                data.pop("disaggregated", None)
        elif path == "batch_sizes" and value == "auto":
            data.pop("batch_sizes", None)
        else:
            _set(data, path, value)
    if overrides.get("batching", "static") != "static" and "batch_sizes" not in overrides:
        data.pop("batch_sizes", None)


def is_question(overrides: Mapping[str, Any]) -> bool:
    """Whether the flags state part of the question (so the default example does not apply)."""
    return any(path not in NOT_QUESTION for path in overrides)


def scenario_data(
    catalog: Catalog, name: str | None, overrides: Mapping[str, Any]
) -> tuple[dict[str, Any], str]:
    """The scenario mapping (file, shipped id, the default example, or empty) with the flags
    applied, and how to name it in messages."""
    if name is None and not is_question(overrides):
        name = DEFAULT_SCENARIO
    if name is None:
        data: dict[str, Any] = {}
        shown = "flags"
    else:
        path = Path(name)
        # a file, or a path (no catalog id has a '/'): read_yaml says what is wrong with it
        if _is_file(name):
            data = read_yaml(path)
            shown = display_path(path)
        else:
            spec = catalog.scenario(name)
            data = spec.model_dump(by_alias=True, exclude_none=True, exclude_unset=True)
            shown = catalog.file_of("scenarios", spec.id or name)
        if overrides:
            shown = f"{shown}{WITH_FLAGS}"
    apply_overrides(data, overrides)
    return data, shown


def origins_of(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, str]:
    """Where each :data:`DEFAULTED` field's value came from: flag, scenario or default."""
    out = {}
    for key in DEFAULTED:
        if any(_covers(p, key) for p in overrides):
            out[key] = "flag"
        elif key in data:
            out[key] = "scenario"
        else:
            out[key] = "default"
    return out


def _required(
    catalog: Catalog, data: Mapping[str, Any], shown: str, traffic: bool
) -> ModelSpec | None:
    """A missing part of the question, named with its flag, before schema validation (an
    unknown model id first: it is the likelier mistake); returns the model it looked up."""
    if data.get("pipeline"):
        return None
    model = None
    if isinstance(data.get("model"), str):
        try:
            model = catalog.model(data["model"])
        except UnknownIdError as err:
            raise CatalogError(shown, "model", str(err)) from None
    need: list[tuple[str, tuple[str, ...], str]] = [
        ("model", ("model",), "--model"),
        ("isl", ("isl", "isl_words"), "--isl"),
        ("osl", ("osl", "osl_words"), "--osl"),
    ]
    if traffic and "offline" not in data:
        need.append(
            ("traffic", ("mean_rps", "peak_rps", "daily", "users"), "--mean-rps or --peak-rps")
        )
    for what, keys, flag in need:
        if not any(k in data for k in keys):
            raise CatalogError(shown, what, f"required: give {flag} (or state it in a scenario)")
    return model


# --------------------------------------------------------------------------- techniques


def resolve_techniques(
    catalog: Catalog,
    spec: TechniquesSpec | None,
    target: ModelSpec | None,
    isl: int | None,
    system_prompt_tokens: int,
    shown: str,
) -> Techniques:
    """The math-level techniques of a scenario: draft model looked up, prefix checked
    (``target`` None: batch mode, no speculative decoding; ``isl`` None: not checked)."""
    if spec is None:
        return Techniques()
    where = "techniques"
    prefix = spec.prefix_tokens if spec.prefix_tokens is not None else system_prompt_tokens
    if spec.prefix_hit_rate > 0 and prefix == 0:
        raise CatalogError(
            shown,
            f"{where}.prefix_hit_rate",
            "a hit rate needs a shared prefix: set prefix_tokens (--prefix-tokens) or a"
            " system prompt",
        )
    if isl is not None and prefix > isl:
        raise CatalogError(
            shown,
            f"{where}.prefix_tokens",
            f"the shared prefix ({prefix} tokens) is longer than the input ({isl} tokens)",
        )
    sparse = spec.sparsity
    return Techniques(
        prefix_tokens=float(prefix if spec.prefix_hit_rate > 0 else 0),
        prefix_hit_rate=spec.prefix_hit_rate,
        chunk_tokens=spec.chunked_prefill_tokens or 0,
        speculative=_speculative(catalog, spec, target, shown),
        weight_only=spec.weight_only,
        sparse_weight_factor=sparse.weight_factor if sparse else 1.0,
        sparse_compute_speedup=sparse.compute_speedup if sparse else 1.0,
    )


def _speculative(
    catalog: Catalog, spec: TechniquesSpec, target: ModelSpec | None, shown: str
) -> Speculative | None:
    sp = spec.speculative
    if sp is None or target is None:
        return None
    where = "techniques.speculative.draft"
    target_costs = model_costs(target)
    if sp.draft.lower() == "mtp":
        return Speculative(sp.draft_tokens, sp.acceptance, mtp_costs(target_costs), "mtp", "mtp")
    try:
        draft = catalog.model(sp.draft)
    except UnknownIdError as err:
        raise CatalogError(shown, where, str(err)) from None
    if draft.vocab_size != target.vocab_size:
        raise CatalogError(
            shown,
            where,
            f"{draft.id} has a {draft.vocab_size}-token vocabulary and {target.id}"
            f" {target.vocab_size}: a draft model must share the target's tokenizer"
            " (or use 'mtp')",
        )
    return Speculative(sp.draft_tokens, sp.acceptance, model_costs(draft), "model", draft.id)


# --------------------------------------------------------------------------- one scenario


def efficiency_set(
    catalog: Catalog, engine: str | None, calibration: Path | None, where: str = "--engine"
) -> EfficiencySet:
    """The efficiency set: a ``--calibration`` file, else the engine id, else the default.
    An engine that names no set is an error located at ``where``: the flag it came from,
    or a scenario's file and field."""
    if calibration is not None:
        return load_file(calibration, EfficiencySet)
    if engine is None:
        return catalog.efficiency_set()
    try:
        return engine_efficiency(catalog.efficiency.values(), engine)  # a set id or name@version
    except UnknownIdError as err:
        raise UnknownIdError(f"{where}: {err}") from None


def kv_cap(spec: ScenarioSpec) -> tuple[int, int]:
    """(sink tokens, window tokens) of the scenario's KV cap; (0, 0) = none."""
    cap = spec.kv_cap
    return (cap.sink_tokens, cap.window_tokens) if cap else (0, 0)


def attention_dps(value: Any) -> list[int] | None:
    """Attention-DP degrees to try (None: 1 only)."""
    if value is None:
        return None
    return list(AUTO_DP) if value == "auto" else list(value)


def pricing(spec: ScenarioSpec) -> Pricing:
    e = spec.economics
    spares = spec.redundancy.spare_servers if spec.redundancy is not None else 0
    if e is None:
        return Pricing(spare_servers=spares)
    return Pricing(
        spare_servers=spares,
        basis=e.basis,
        usd_per_gpu_hour=e.usd_per_gpu_hour,
        server_price_usd=e.server_price_usd,
        amortization_years=e.amortization_years,
        usd_per_kwh=e.usd_per_kwh,
        pue=e.pue,
        server_power_w=e.server_power_kw * 1e3 if e.server_power_kw is not None else None,
    )


def system_prompt_tokens(spec: ScenarioSpec) -> int:
    words = spec.system_prompt_words
    return spec.system_prompt_tokens + (tokens_from_words(words) if words else 0)


@dataclass(frozen=True)
class Planning:
    """What planning one scenario takes beyond its fields: the configured estimator and the
    planner's options. :func:`planning` is the one place that builds it."""

    estimator: Estimator
    options: PlanOptions


def planning(
    catalog: Catalog,
    eset: EfficiencySet,
    spec: ScenarioSpec,
    shown: str,
    others: tuple[EfficiencySet, ...] = (),
    model: ModelSpec | None = None,
) -> Planning:
    """The estimator (engine set, techniques, KV cap) and planner arguments (objective,
    pricing, attention DP, NVLink span) of a single-model scenario whose model is ``model``;
    ``others``: the sets a GPU × precision ``eset`` is not calibrated on may take
    (``engines.auto_sets``)."""
    techniques = resolve_techniques(
        catalog, spec.techniques, model, spec.input_tokens, system_prompt_tokens(spec), shown
    )
    dps = attention_dps(spec.attention_dp)
    priced = spec.economics is not None or spec.redundancy is not None  # else catalog prices
    options = PlanOptions(
        objective=spec.objective,
        pricing=pricing(spec) if priced else None,
        dps=tuple(dps) if dps is not None else None,
        span_nvlink_domain=spec.span_nvlink_domain,
        share_gpus=spec.share_gpus,
    )
    tier = catalog.kernel_tier(eset, *others)
    est = Estimator(
        eset, kv_cap=kv_cap(spec), techniques=techniques, others=others, kernel_tier=tier
    )
    return Planning(est, options)


@dataclass(frozen=True)
class Study:
    """One resolved sizing question (module docstring)."""

    spec: ScenarioSpec
    #: Where it came from, for messages: a file, a shipped scenario's file, or 'flags'.
    shown: str
    catalog: Catalog
    efficiency: EfficiencySet
    #: :data:`DEFAULTED` field -> 'flag' | 'scenario' | 'default'.
    origins: Mapping[str, str]
    estimator: Estimator
    #: The planner's options (objective, pricing, attention DP, NVLink span, GPU sharing).
    options: PlanOptions = DEFAULT_OPTIONS
    #: The trace whose traffic the question sizes for (scenario ``trace:``, ``--trace``).
    trace: TraceTraffic | None = None
    #: How messages about the peak name each of :data:`~inferencesize.demand.PEAK_FIELDS`:
    #: the flag that stated it, or the scenario file and the field (:func:`_peak_names`).
    peak_names: Mapping[str, str] = field(default_factory=dict)
    #: The single-model question, resolved (None: a pipeline, sized stage by stage).
    question: Question | None = None
    #: A pipeline's stages' search spaces, resolved (in the order of ``spec.pipeline``).
    stages: tuple[SearchSpace, ...] = ()
    #: The prefix cache a trace's conversations gave the estimator (:func:`_trace_prefix`).
    trace_prefix: PrefixHits | None = None

    # ---- the question
    @property
    def model(self) -> ModelSpec | None:
        return self.question.model if self.question is not None else None

    @property
    def isl(self) -> int:
        return self.spec.input_tokens

    @property
    def osl(self) -> int:
        return self.spec.output_tokens

    @property
    def limits(self) -> Limits:
        return self.question.limits if self.question is not None else Limits.of(self.spec)

    @property
    def peak_rps(self) -> float:
        """The rate sized for: the traffic's peak, or the throughput an offline batch needs."""
        batch = self.offline
        if batch is not None:
            return batch.rate_rps
        try:
            return peak_of(self.spec)
        except PeakError as err:
            where = self.peak_names.get(err.field, f"{self.shown}: {err.field}")
            raise InputError(f"{where}: {err.problem}") from None

    @property
    def offline(self) -> OfflineBatch | None:
        """The scenario's offline batch (``offline:``), or None for traffic."""
        o = self.spec.offline
        if o is None:
            return None
        return offline_batch(
            self.isl,
            self.osl,
            requests=o.requests,
            tokens_per_day=o.tokens_per_day,
            deadline_h=o.deadline_h,
        )

    @property
    def pricing(self) -> Pricing:
        return pricing(self.spec)

    @property
    def engine(self) -> str:
        return self.efficiency.engine

    def plan_engine(self, p: Plan) -> str:
        """The engine of the set plan ``p``'s GPU × precision is predicted with (the study's
        set, or the one taken where it is not calibrated)."""
        return self.estimator.efficiency_for(p.candidate.gpu, p.candidate.precision).engine

    def engine_choice(self, result: PlanResult) -> EngineChoice | None:
        """Which set predicted the chosen plan's GPU × precision and why, and the rate per
        instance each set calibrated there gives its candidate (``engine_choice``)."""
        chosen = result.chosen
        if chosen is None or self.model is None:
            return None
        from inferencesize.engine_choice import engine_choice

        q = self.question
        assert q is not None  # a chosen plan has a model
        return engine_choice(
            chosen,
            self.estimator,
            self.catalog.efficiency.values(),
            q,
            self.options,
            named=self.origins.get("engine") != "default",
        )

    def error_band(self, result: PlanResult) -> SlowEdge | None:
        """The chosen plan's candidate sized again with every step as slow as the 90th
        percentile of measured / predicted for predictions like it (``band_plan``)."""
        chosen = result.chosen
        if chosen is None or self.model is None:
            return None
        from inferencesize.band_plan import slow_edge
        from inferencesize.io_bands import shipped_bands

        q = self.question
        assert q is not None  # a chosen plan has a model
        return slow_edge(chosen, self.estimator, shipped_bands(), q, self.options)

    # ---- the answers
    def plan(self, top: int = 3, budget: Budget | None = None) -> PlanResult:
        """Aggregated sizing of a single-model scenario at its peak: the chosen plan and
        ``top`` alternatives (open loop: candidates that cannot beat them are pruned); with
        ``budget``, the chosen plan is the best within it where one exists (``check``)."""
        assert self.question is not None  # pipeline scenarios are planned stage by stage
        options = replace(self.options, top=top, prune=True, budget=budget)
        return plan(self.question, self.peak_rps, self.estimator, options)

    def disaggregated(self, aggregated: PlanResult) -> Comparison | None:
        """Disaggregated sizing next to the aggregated plan, when the scenario asks for it."""
        dis = self.spec.disaggregated
        model = self.model
        if dis is None or model is None:
            return None
        from inferencesize.disagg import Comparison, plan_disaggregated

        q = self.question
        assert q is not None  # disaggregated questions have one model
        prefill, decode = self._pool(dis.prefill, "prefill"), self._pool(dis.decode, "decode")
        result = plan_disaggregated(q, prefill, decode, self.peak_rps, self.estimator)
        return Comparison(result, aggregated)

    def _pool(self, pool: Pool, role: str) -> PoolSpec:
        from inferencesize.disagg import PoolSpec

        s, q = self.spec, self.question
        assert q is not None  # disaggregated questions have one model
        hardware = list(q.space.hardware)
        if pool.hardware is not None:  # its own options, else the scenario's (looked up)
            hardware = []
            for i, name in enumerate(hardware_ids(pool.hardware)):
                try:
                    hardware.append(self.catalog.hardware(name))
                except UnknownIdError as err:
                    where = f"disaggregated.{role}.hardware[{i}]"
                    raise CatalogError(self.shown, where, str(err)) from None
        return PoolSpec(
            part_space(pool, s, q.model, hardware),
            cps=tuple(pool.cp or [1]),
            dps=attention_dps(inherit(pool.attention_dp, s.attention_dp)),
            span_nvlink_domain=s.span_nvlink_domain,
        )

    def trace_fleet(self, p: Plan) -> TraceFleet | None:
        """Fixed against autoscaled over the trace's windows, for plan ``p``
        (:mod:`inferencesize.trace_fleet`); None without a trace."""
        if self.trace is None or not self.trace.windows:
            return None
        from inferencesize.openloop import InstanceSearch
        from inferencesize.packing import instances_for
        from inferencesize.trace_fleet import trace_fleet

        s, c, sizing = self.spec, p.candidate, p.sizing

        # windows share peaks (a Poisson percentile: whole) and cvs (a grid): one count each,
        # one instance search per cv (the plan's own at its cv)
        counts: dict[tuple[float, float], int] = {}
        searches = {sizing.search.cv: sizing.search} if sizing is not None else {}
        # a search at another cv starts from the plan's own capacity share, not the default
        # (a first guess of a few instances; points of few instances at a high cv cost most)
        share = sizing.start_share(p.instances, p.peak_rps) if sizing is not None else 0.0

        def instances_at(peak: float, cv: float) -> int:
            if (peak, cv) not in counts:
                if sizing is None:
                    counts[peak, cv] = instances_for(peak, p.rate)
                else:
                    if cv not in searches:
                        q = sizing.search
                        searches[cv] = InstanceSearch(
                            q.st, q.limits, cv, q.router, start=share or q.start
                        )
                    counts[peak, cv] = searches[cv].fewest(peak) or p.instances
            return counts[peak, cv]

        return trace_fleet(
            self.trace.windows,
            instances_at,
            p.gpus_per_instance,
            p.gpus_per_node,
            gpu=c.gpu,
            system=c.system,
            plan_instances=p.instances,
            pricing=self.pricing,
            percentile=s.percentile,
            dispersion=s.dispersion,
            scale_up_delay_s=s.scale_up_delay_s,
            instances_per_gpu=c.share.per_gpu if c.share else 1,
            cv=self.trace.cv,
        )

    def prefix_reuse(self, p: Plan) -> PrefixHits | None:
        """The share of the trace's conversations' earlier turns a prefix cache keeps on plan
        ``p``'s instances (:mod:`inferencesize.trace_conversations`): each instance's KV left
        after its running sequences at the peak (whole sequences of the plan's length), filled
        by its share of the peak's requests (a cache filling that fast keeps prefixes no longer
        than at the mean); None without conversation ids."""
        if self.trace is None or self.trace.reuse is None:
            return None
        from inferencesize.trace_conversations import residence_s

        seq = self.isl + self.osl
        res = self.estimator.resolve(p.candidate, seq)
        free = max(res.max_concurrency - p.planned.concurrency, 0.0) * seq
        written = p.peak_rps / p.instances * seq  # tokens/s into one instance
        # gaps shrink with --trace-scale: a gap g/scale under T is g under T·scale
        return self.trace.reuse.hits(residence_s(free, written) * self.trace.scale)

    def length_answers(self, p: Plan) -> tuple[int | None, int | None]:
        """Instances ``p``'s candidate needs for the trace's length distribution and for its
        mean lengths alone: ``p``'s own count for the way it was sized, the other sized
        again (:mod:`inferencesize.trace_lengths`); (None, None) without a trace."""
        q, t = self.question, self.trace
        if t is None or q is None:
            return None, None
        from inferencesize.trace_lengths import instances_for_lengths

        by_mean = self.spec.trace_lengths == "mean"
        other = instances_for_lengths(
            self.estimator, p, t.lengths if by_mean else None, q.isl, q.osl, q.limits,
            q.arrivals.cv, q.arrivals.router,
        )  # fmt: skip
        return (other, p.instances) if by_mean else (p.instances, other)

    def replay_trace(self, p: Plan, less: int = 0) -> tuple[TraceReplay, TraceReplay] | None:
        """The trace replayed as it came against plan ``p``'s fixed fleet and its autoscaled
        fleet, window by window (:mod:`inferencesize.trace_replay`); ``less``: that many
        instances fewer in every window (a check that the fleet is tight). None without a
        trace."""
        fleet = self.trace_fleet(p)
        if self.trace is None or fleet is None:
            return None
        from inferencesize.trace_fleet import running_units

        bounds = [(w.start_s, w.end_s) for w in fleet.windows]
        need = [w.instances for w in fleet.windows]
        auto = running_units(bounds, need, self.spec.scale_up_delay_s)
        fixed = self.replay_counts(p, [max(1, fleet.fixed_instances - less)] * len(bounds))
        scaled = self.replay_counts(p, [max(1, n - less) for n in auto])
        assert fixed is not None and scaled is not None
        return fixed, scaled

    def replay_counts(self, p: Plan, counts: Sequence[int]) -> TraceReplay | None:
        """The trace replayed as it came with ``counts[k]`` instances of plan ``p``'s
        candidate in window k, behind the plan's router (:mod:`inferencesize.trace_replay`);
        None without a trace."""
        t = self.trace
        if t is None or not t.windows:
            return None
        from inferencesize.simulate import Workload
        from inferencesize.trace_replay import replay_trace

        s = self.spec
        times = t.workload.arrival_s
        assert times is not None
        trace = Workload(t.workload.isl, t.workload.osl, (times - times[0]) / t.scale)
        bounds = [(w.start_s, w.end_s) for w in t.windows]
        q = self.question  # the router the plan and the peak's --verify size behind
        router = q.arrivals.router if q is not None else Router(s.router)
        return replay_trace(
            self.estimator, p, self.isl, self.osl, self.limits, trace, bounds, list(counts),
            batching=s.batching, router=router,
        )  # fmt: skip

    def daily(self, p: Plan) -> DailyPlan | None:
        """Fixed fleet against hourly autoscaling over the scenario's day, for plan ``p``."""
        s = self.spec
        profile = hourly_profile(s)
        if profile is None or s.daily is None:
            return None
        from inferencesize.daily import daily_plan

        c = p.candidate
        return daily_plan(
            profile,
            p.rate,
            p.gpus_per_instance,
            p.gpus_per_node,
            self.isl,
            self.osl,
            gpu=c.gpu,
            system=c.system,
            pricing=self.pricing,
            percentile=s.percentile,
            dispersion=s.dispersion,
            min_instances=s.daily.min_instances,
            scale_up_delay_s=s.daily.scale_up_delay_s,
            instances_per_gpu=c.share.per_gpu if c.share else 1,
        )

    def pipeline(self, top: int = 3) -> PipelineResult:
        """Every stage of a pipeline scenario sized within its share of the E2E limit."""
        from inferencesize.pipeline import Stage, plan_pipeline

        s = self.spec
        assert s.pipeline is not None and s.e2e_ms is not None
        stages = [
            Stage(
                name=st.name,
                space=space,
                isl=st.isl,
                osl=st.osl,
                calls=st.calls,
                e2e_s=ms_to_s(st.e2e_ms),
                ttft_s=ms_to_s(st.ttft_ms),
                itl_s=ms_to_s(st.itl_ms),
            )
            for st, space in zip(s.pipeline, self.stages, strict=True)
        ]
        return plan_pipeline(
            stages,
            self.peak_rps,
            ms_to_s(s.e2e_ms),
            self.estimator,
            batching=s.batching,
            options=PlanOptions(top=top, objective=s.objective, pricing=self.pricing),
        )

    def verify(self, p: Plan) -> Verification:
        """The chosen plan's instance count searched again request by request at the peak
        (both directions from the analytic count), on this study's deployment (engine set,
        techniques, KV cap) and arrivals (``cv`` under ``arrivals: poisson``), each limit held
        at its statistic."""
        from inferencesize.verify import verify_plan

        q = self.question
        assert q is not None  # a plan has a model
        replay = self.trace.at_rate(p.peak_rps) if self.trace is not None else None
        return verify_plan(self.estimator, p, q, replay=replay)

    def rate_curves(self, result: PlanResult, max_curves: int = 6) -> list[LabelledCurve]:
        """Req/s per instance against latency of the chosen plan and the next-ranked
        candidates on its hardware (the chosen one first), under the plan's own traffic
        model: closed loop over concurrency 1 … max(3 × the chosen concurrency, 16) (capped at
        the KV capacity) with mean latencies; open loop (:func:`inferencesize.frontier.
        fleet_curve`, at most 3 curves) over request rates with the arrivals of the plan's
        fleet behind its router, latencies at the limits' statistics. Each curve passes
        through its plan's operating point (marked on the chosen one, with its planned load,
        peak ÷ instances, when open loop)."""
        from inferencesize.frontier import concurrency_grid, curve, fleet_curve
        from inferencesize.plotting import LabelledCurve, mark

        chosen = result.chosen
        if chosen is None:
            return []
        hw = chosen.candidate.hardware_id
        plans = [chosen] + [
            p for p in result.feasible if p is not chosen and p.candidate.hardware_id == hw
        ]
        if chosen.sizing is not None:
            max_curves = min(max_curves, 3)  # a dozen open-loop points each
        curves = []
        for p in plans[:max_curves]:
            op = p.point
            planned = p.peak_rps / p.instances
            if p.sizing is not None:
                c = fleet_curve(p.sizing, p.instances, [op.requests_per_s, planned])
            else:
                res = self.estimator.resolve(p.candidate, self.isl + self.osl)
                top = min(res.max_concurrency, max(math.ceil(3 * op.concurrency), 16))
                grid = sorted({*concurrency_grid(top).tolist(), op.concurrency})
                c = curve(res, self.isl, self.osl, self.spec.batching, grid)
            marks = []
            if p is chosen:
                marks.append(mark(c, op.requests_per_s, "capacity of one instance"))
                if p.sizing is not None and planned < op.requests_per_s:
                    marks.append(mark(c, planned, "planned load (peak ÷ instances)"))
            curves.append(LabelledCurve(p.candidate.label(), c, p is chosen, tuple(marks)))
        return curves

    def frontier(self, max_concurrency: int | None = None) -> Frontier:
        """Every single-node candidate of the search space over its load (concurrency, or a
        request rate under ``arrivals: poisson``), with its Pareto frontier (``frontier``)."""
        from inferencesize.frontier import frontier

        assert self.question is not None  # single-model questions only
        return frontier(self.estimator, self.question, max_concurrency=max_concurrency)

    def sweep(self, axes: Sequence[Axis], points: range | None = None) -> Iterator[Row]:
        """Every point of the grid of ``axes`` over this scenario, planned (rows in order);
        ``points``: only the points with these indices."""
        from inferencesize.sweep import expand

        return self.sweeper().run(self.base(), expand(axes, points), points.start if points else 0)

    def sweeper(self) -> Sweeper:
        """A :class:`inferencesize.sweep.Sweeper` over this scenario (its planner runs cached
        per workload, for as long as it is kept)."""
        if self.spec.offline is not None:
            raise InputError(
                f"{self.shown}: sweep varies traffic scenarios; an offline batch (offline:,"
                " --requests, --tokens-per-day) is sized by plan, one batch at a time"
            )
        from inferencesize.sweep import Sweeper

        # Points with the same techniques and KV cap share one estimator (and its deployments).
        estimators: dict[tuple[Any, ...], Estimator] = {}

        def configure(s: ScenarioSpec, model: ModelSpec) -> tuple[Estimator, PlanOptions]:
            others = self.estimator.others
            setup = planning(self.catalog, self.efficiency, s, self.shown, others, model)
            est = setup.estimator
            return estimators.setdefault((est.techniques, est.kv_cap), est), setup.options

        return Sweeper(self.estimator, self.catalog, configure=configure)

    def base(self) -> dict[str, Any]:
        """The scenario as the mapping a sweep varies: arrivals, cv and router only where stated
        (a grid point that varies batching, pools or the traffic gets its own default
        arrivals)."""
        data = self.spec.model_dump(by_alias=True, exclude_none=True)
        if self.origins.get("arrivals") == "default":
            data.pop("arrivals", None)
        for name in ("cv", "router"):
            if name not in self.spec.model_fields_set:
                data.pop(name, None)
        return data


def resolve(
    catalog: Catalog,
    scenario: str | None,
    overrides: Mapping[str, Any] | None = None,
    *,
    engine: str | None = None,
    calibration: Path | None = None,
    traffic: bool = True,
    flags: Mapping[str, str] | None = None,
) -> Study:
    """Resolve a scenario (file or shipped id; None: flags alone, or the default example)
    and flags into one :class:`Study`. ``traffic`` False: rates and limits are optional
    (``frontier``). ``engine`` (``--engine``) and ``calibration`` override the scenario's
    ``engine:``. ``flags``: the flag each override path was given as (``{'mean_rps':
    '--mean-rps'}``), for messages; a path without one is named as ``flags: path``."""
    overrides = dict(overrides or {})
    data, shown = scenario_data(catalog, scenario, overrides)
    rated = next((k for k in RATE_FIELDS if k in data), None)
    trace = _trace(data, shown, None if "trace" in overrides else scenario)
    rate_from = (
        "users" if rated == "users" else "trace" if trace is not None and not rated else None
    )
    names = _peak_names(overrides, flags or {}, shown, rate_from)
    found = None
    if scenario is not None or is_question(overrides):
        found = _required(catalog, data, shown, traffic)
    spec = parse_spec(ScenarioSpec, data, shown, context={"traffic": traffic})
    model, hardware, stages = check_scenario(catalog, spec, shown, found)
    origins = origins_of(data, {**overrides, **({"engine": engine} if engine else {})})
    eset = efficiency_set(
        catalog, engine or spec.engine, calibration, "--engine" if engine else f"{shown}: engine"
    )
    if calibration is not None:
        origins["engine"] = "flag"
    if trace is not None:  # the trace's requests are the arrivals
        origins["arrivals"] = "flag" if "trace" in overrides else "scenario"
    named = origins.get("engine") != "default"
    others = () if named else auto_sets(catalog.efficiency.values(), eset)
    spaces: tuple[SearchSpace, ...] = ()
    if spec.pipeline is not None:
        tier = catalog.kernel_tier(eset, *others)
        est = Estimator(eset, kv_cap=kv_cap(spec), others=others, kernel_tier=tier)
        options = DEFAULT_OPTIONS
        question = None
        spaces = tuple(
            part_space(st, spec, m, hw) for st, (m, hw) in zip(spec.pipeline, stages, strict=True)
        )
    else:
        setup = planning(catalog, eset, spec, shown, others, model)
        est, options = setup.estimator, setup.options
        if trace is not None and spec.trace_lengths == "distribution":  # (trace_lengths)
            est = replace(est, lengths=trace.lengths)
        question = question_of(spec, model, hardware, trace)
    study = Study(spec, shown, catalog, eset, origins, est, options, trace, names, question, spaces)
    return _trace_prefix(study)


def _trace_prefix(study: Study) -> Study:
    """A trace's conversations as the prefix cache the model sizes with, unless the scenario
    states one (``techniques.prefix_tokens`` or ``prefix_hit_rate``, ``--prefix-*``): the
    question planned without it, the share of earlier turns its chosen plan's caches keep
    (:meth:`Study.prefix_reuse`), then the study with that cache (one step: the plan it gives
    keeps about as much, its own share shown beside). ``prefix_tokens`` is the mean cached
    tokens of a hit, at most the ISL sized for (the hit rate raised to keep the tokens
    skipped)."""
    t, told = study.trace, study.spec.techniques
    stated = told is not None and (told.prefix_tokens is not None or told.prefix_hit_rate > 0)
    if t is None or t.reuse is None or stated or study.question is None:
        return study
    chosen = study.plan(top=1).chosen
    hits = study.prefix_reuse(chosen) if chosen is not None else None
    if hits is None or hits.hit_rate <= 0:
        return study
    prefix = min(hits.prefix_tokens, float(study.isl))
    rate = min(1.0, hits.hit_rate * hits.prefix_tokens / prefix)
    est = study.estimator
    techniques = replace(est.techniques, prefix_tokens=prefix, prefix_hit_rate=rate)
    est = replace(est, techniques=techniques, _costs={}, _deps={})
    return replace(study, estimator=est, trace_prefix=hits)


def _peak_names(
    overrides: Mapping[str, Any], flags: Mapping[str, str], shown: str, rate_from: str | None
) -> dict[str, str]:
    """How messages about the peak name each of :data:`~inferencesize.demand.PEAK_FIELDS`:
    the flag that stated it (``--mean-rps``; ``--requests-per-day/--peak-hour-share`` for
    ``daily``), else the scenario file and the field (``chat.yaml: mean_rps``). A mean rate
    that ``users:`` or a trace gave (``rate_from``) is named by that field or its flag."""
    file = shown.removesuffix(WITH_FLAGS)
    out = {}
    for name in PEAK_FIELDS:
        source = rate_from if name == "mean_rps" and rate_from else name
        given = [p for p in overrides if _covers(p, source)]
        if given and all(p in flags for p in given):
            out[name] = "/".join(dict.fromkeys(flags[p] for p in given))
        else:
            out[name] = f"{shown if given else file}: {source}"
    return out


def _trace(data: dict[str, Any], shown: str, scenario: str | None) -> TraceTraffic | None:
    """The trace a question names (``trace:``; relative to the scenario file when the file
    names it), read, with what it gives filled into ``data``: ISL and OSL (its means), the
    gaps' cv and, unless a rate is stated, its mean rate."""
    name = data.get("trace")
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise CatalogError(shown, "trace", "expected the name of a CSV file")
    path = Path(name)
    if scenario is not None and _is_file(scenario) and not path.is_absolute():
        path = Path(scenario).parent / path
    stated = next((k for k in TRACE_GIVES if k in data), None)
    if stated is not None:
        raise CatalogError(
            shown, stated, f"the trace gives ISL, OSL and the gaps' cv; drop {stated} or trace"
        )
    from inferencesize.io_trace import read_trace_traffic  # the simulator's types: only then
    from inferencesize.trace_windows import DEFAULT_WINDOW_S, parse_slice

    window = data.get("trace_window")
    try:
        slice_s = None if window is None else parse_slice(str(window))
    except ValueError as err:
        raise CatalogError(shown, "trace_window", str(err)) from None
    try:
        traffic = read_trace_traffic(
            path,
            display_path(path),
            MAX_CV,
            window_s=float(data.get("window_s", DEFAULT_WINDOW_S)),
            slice_s=slice_s,
            scale=float(data.get("trace_scale", 1.0)),
        )
    except ValueError as err:
        raise CatalogError(shown, "trace", f"{display_path(path)}: {err}") from None
    data["isl"] = max(1, round(traffic.isl_mean))
    data["osl"] = max(1, round(traffic.osl_mean))
    data["cv"] = traffic.cv
    if not any(k in data for k in RATE_FIELDS):  # the busiest window's (trace_windows)
        data["mean_rps"] = traffic.busiest_rps
    return traffic


def _is_file(name: str) -> bool:
    """Whether a scenario argument names a file (not a shipped scenario id)."""
    path = Path(name)
    return path.suffix in (".yaml", ".yml") or "/" in name or os.sep in name or path.is_file()


def default_hardware_text() -> str:
    return ", ".join(DEFAULT_HARDWARE)


# --------------------------------------------------------------------------- one candidate


@dataclass(frozen=True)
class PointStudy:
    """One candidate (``estimate``, ``simulate``): its estimator with the techniques stated."""

    efficiency: EfficiencySet
    estimator: Estimator


def resolve_point(
    catalog: Catalog,
    *,
    engine: str | None,
    calibration: Path | None,
    techniques: Mapping[str, Any] | None = None,
    target: ModelSpec | None = None,
    isl: int | None = None,
    kv_window: tuple[int, int] = (0, 0),
) -> PointStudy:
    """The estimator of one candidate: engine set, the techniques flags (validated as a
    scenario's ``techniques:`` block), KV cap. Without ``engine`` or ``calibration``, a GPU ×
    precision the default set is not calibrated on takes a set that is (as a plan does)."""
    eset = efficiency_set(catalog, engine, calibration)
    named = engine is not None or calibration is not None
    others = () if named else auto_sets(catalog.efficiency.values(), eset)
    spec = parse_spec(TechniquesSpec, dict(techniques), "flags") if techniques else None
    t = resolve_techniques(catalog, spec, target, isl, 0, "flags")
    tier = catalog.kernel_tier(eset, *others)
    est = Estimator(eset, kv_cap=kv_window, techniques=t, others=others, kernel_tier=tier)
    return PointStudy(eset, est)


def candidate(
    catalog: Catalog,
    model: str,
    hardware: str,
    precision: str,
    kv_precision: str | None,
    tp: int,
    pp: int,
    ep: int,
) -> Candidate:
    """One candidate from flag values (``estimate``, ``simulate``): ids looked up."""
    if precision not in PRECISIONS:
        raise InputError(
            f"--precision: unknown '{precision}'; expected one of {', '.join(PRECISIONS)}"
        )
    if kv_precision is not None and kv_precision not in PRECISIONS:
        raise InputError(
            f"--kv-precision: unknown '{kv_precision}'; expected one of {', '.join(PRECISIONS)}"
        )
    gpu, system = catalog.hardware(hardware)
    return Candidate(
        catalog.model(model),
        gpu,
        system,
        precision,
        kv_precision or default_kv_precision(precision),
        Parallelism(tp, pp, ep),
    )
