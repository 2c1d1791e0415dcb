"""The plan output schema (``plan`` / ``check`` JSON, YAML, CSV): one record per result.

Every record carries the operating point it assumes (model, lengths, precision, split, load,
engine) and where its efficiencies come from. Numbers are SI inside; the records state ms,
kW and USD in their key names.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import asdict
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from inferencesize import report
from inferencesize.estimate import Estimator
from inferencesize.outcomes import Rejected
from inferencesize.planned import READING_ITL_S
from inferencesize.planner import Plan, PlanResult
from inferencesize.render.trace import fleet_record, window_fleet_fields
from inferencesize.render.trace_lengths import lengths_record
from inferencesize.serving import OperatingPoint
from inferencesize.sharing import Share
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.techniques import describe
from inferencesize.vocabulary import fraction_of, gaps_words, quantiles_of

if TYPE_CHECKING:
    from inferencesize.band_plan import SlowEdge
    from inferencesize.daily import DailyPlan
    from inferencesize.disagg import Comparison, DisaggPlan, PoolPlan
    from inferencesize.engine_choice import EngineChoice
    from inferencesize.offline import OfflineBatch
    from inferencesize.pipeline import PipelineResult
    from inferencesize.question import Question
    from inferencesize.trace_conversations import PrefixHits, Reuse
    from inferencesize.trace_fleet import TraceFleet
    from inferencesize.trace_traffic import TraceTraffic
    from inferencesize.verify import Verification


class Study(Protocol):
    """What the records read of a resolved study (:class:`inferencesize.study.Study`)."""

    @property
    def spec(self) -> ScenarioSpec: ...
    @property
    def shown(self) -> str: ...
    @property
    def origins(self) -> Mapping[str, str]: ...
    @property
    def estimator(self) -> Estimator: ...
    @property
    def engine(self) -> str: ...
    @property
    def peak_rps(self) -> float: ...
    @property
    def offline(self) -> OfflineBatch | None: ...
    @property
    def trace(self) -> TraceTraffic | None: ...
    @property
    def trace_prefix(self) -> PrefixHits | None: ...
    @property
    def question(self) -> Question | None: ...
    def daily(self, p: Plan) -> DailyPlan | None: ...
    def trace_fleet(self, p: Plan) -> TraceFleet | None: ...
    def prefix_reuse(self, p: Plan) -> PrefixHits | None: ...
    def length_answers(self, p: Plan) -> tuple[int | None, int | None]: ...
    def engine_choice(self, result: PlanResult) -> EngineChoice | None: ...
    def error_band(self, result: PlanResult) -> SlowEdge | None: ...
    def plan_engine(self, p: Plan) -> str: ...


SCHEMA_VERSION = 1


def ms(seconds: float | None) -> float | None:
    return seconds * 1e3 if seconds is not None else None


def kw(watts: float | None) -> float | None:
    return watts / 1e3 if watts is not None else None


def point_record(op: OperatingPoint, only: Collection[float] | None = None) -> dict[str, Any]:
    """A per-instance operating point; of an open-loop point's percentiles, those in ``only``
    (fractions) where given, else all."""
    out: dict[str, Any] = {
        "concurrency": op.concurrency,
        "requests_per_s": op.requests_per_s,
        "ttft_ms": op.ttft_s * 1e3,
        "itl_ms": op.itl_s * 1e3,
        "e2e_ms": op.e2e_s * 1e3,
    }
    for name, table in (("ttft", op.ttft_q), ("itl", op.itl_q), ("e2e", op.e2e_q)):
        for q in sorted(table):  # open-loop points: percentiles too
            if only is None or q in only:
                out[f"{name}_ms_p{q * 100:g}"] = table[q] * 1e3
    return out


def at_peak_record(p: Plan, only: Collection[float] | None = None) -> dict[str, Any]:
    """One instance at the planned load (the peak over the instances): what users see at the
    peak, beside ``per_instance`` (one instance at its capacity within the limits)."""
    op = p.planned
    return {**point_record(op, only), "output_tokens_per_s": op.output_tokens_per_s}


def reading_note(spec: ScenarioSpec, p: Plan | None) -> str | None:
    """One line when no ITL or E2E limit is stated (streaming) and the chosen plan's ITL at
    the peak, at the question's ITL statistic, is slower than :data:`READING_ITL_S`: nothing
    held the instances back from batching until each user reads slowly."""
    if p is None or spec.mode != "streaming" or spec.itl_ms is not None or spec.e2e_ms is not None:
        return None
    op, stat = p.planned, spec.statistics[1]
    q = fraction_of(stat)
    itl_s = op.itl_q.get(q, op.itl_s) if q is not None else op.itl_s
    e2e_s = op.e2e_q.get(q, op.e2e_s) if q is not None else op.e2e_s
    if not itl_s > READING_ITL_S:
        return None
    shown = stat if q is not None and q in op.itl_q else "mean"
    return (
        f"note: no ITL or E2E limit is stated, and at the peak each user reads about "
        f"{1.0 / itl_s:,.0f} tokens/s (ITL {shown} {itl_s * 1e3:,.0f} ms, E2E {shown} "
        f"{e2e_s:,.1f} s); state an ITL limit (--itl-ms, or itl_ms: in the scenario) where "
        "streaming speed matters"
    )


def rejected_record(r: Rejected) -> dict[str, Any]:
    """A rejected candidate: its label, the kind of reason, the numbers behind it and the
    sentence (``details``: the reason's fields, SI units in their names)."""
    why = r.why
    details = {k: v for k, v in asdict(why).items() if k not in ("kind", "text")}
    return {
        "candidate": r.candidate,
        "kind": why.kind.value,
        "reason": r.reason,
        "details": {k: v.value if isinstance(v, StrEnum) else v for k, v in details.items()},
    }


def economics_record(p: Plan) -> dict[str, Any] | None:
    e = p.economics
    if e is None:
        return None
    t, c, f = e.tokens, e.cost, e.fleet
    return {
        "unit": f.unit.label() if f else None,
        "units": f.units if f else None,
        "gpus_paid": f.gpus_paid if f else None,
        "servers_paid": f.nodes_paid if f else None,
        "utilisation": f.utilisation if f else None,
        "spare_servers": e.spare_servers,
        "basis": c.basis if c else None,
        "price": c.price if c else None,
        "usd_per_unit_hour": c.usd_per_unit_hour if c else None,
        "capex_usd_per_hour": c.capex_usd_per_hour if c else None,
        "energy_usd_per_hour": c.energy_usd_per_hour if c else None,
        "server_power_kw": kw(e.node_power.watts) if e.node_power else None,
        "server_power_from": e.node_power.basis if e.node_power else None,
        "power_basis": e.node_power.text() if e.node_power else None,
        "gpu_board_power_kw": kw(e.board_watts),
        "it_power_kw": kw(e.it_watts),
        "facility_power_kw": kw(e.facility_watts),
        "pue": e.pue,
        "input_share": t.input_share,
        "usd_per_million_input_tokens": t.usd_per_million_input,
        "usd_per_million_output_tokens": t.usd_per_million_output,
        "usd_per_million_tokens": t.usd_per_million_tokens,
        "joules_per_input_token": t.joules_per_input_token,
        "joules_per_output_token": t.joules_per_output_token,
        "joules_per_token": t.joules_per_token,
    }


def gpu_share_record(share: Share | None) -> dict[str, Any] | None:
    """What one instance gets of a GPU it shares (None: a whole GPU or more)."""
    if share is None:
        return None
    return {
        "kind": share.kind,
        "profile": share.name if share.kind == "mig" else None,
        "instances_per_gpu": share.per_gpu,
        "compute_share": share.compute,
        "memory_share": share.memory,
    }


def plan_record(p: Plan, engine: str, only: Collection[float] | None = None) -> dict[str, Any]:
    """One plan (``plan`` and each of ``alternatives``)."""
    c, op = p.candidate, p.point
    return {
        "hardware": c.hardware_id,
        "gpu": c.gpu.id,
        "system": c.system.id if c.system else None,
        "precision": c.precision,
        "kv_precision": c.kv_precision,
        "tp": c.par.tp,
        "pp": c.par.pp,
        "ep": c.par.ep,
        "dp": c.par.dp,
        "gpu_share": gpu_share_record(c.share),
        "instances": p.instances,
        "gpus_per_instance": p.gpus_per_instance,
        "gpus": p.gpus,
        "servers": p.servers,
        "gpus_per_server": p.gpus_per_node,
        "servers_are": "systems" if c.system else f"{p.gpus_per_node}-GPU nodes (assumed)",
        "multi_node": p.multi_node,
        "per_instance": {**point_record(op, only), "output_tokens_per_s": op.output_tokens_per_s},
        "per_instance_at_peak": at_peak_record(p, only),
        "capacity_rps": p.capacity_rps,
        "headroom": p.headroom,
        "binding_constraint": p.binding,
        "tokens_per_day": p.tokens_per_day,
        "power_kw": kw(p.power_watts),
        "cost_per_hour_usd": p.cost_per_hour_usd,
        "cost_per_million_output_tokens_usd": p.cost_per_million_output_tokens_usd,
        "economics": economics_record(p),
        "engine": engine,
        "efficiency": p.efficiency_source,
        "trust": p.trust,
    }


def daily_record(d: DailyPlan) -> dict[str, Any]:
    return {
        "requests_per_day": d.requests_per_day,
        "input_tokens_per_day": d.input_tokens_per_day,
        "output_tokens_per_day": d.output_tokens_per_day,
        "cost_basis": d.cost_basis,
        "unit": d.unit,
        "fixed": {
            "units": d.fixed_units,
            "instances": d.fixed_instances,
            "gpus": d.fixed_gpus,
            "servers": d.fixed_servers,
            "gpu_hours": d.fixed_gpu_hours,
            "cost_usd": d.fixed_cost_usd,
            "energy_kwh": d.fixed_energy_kwh,
            "usd_per_million_tokens": d.usd_per_million_tokens(autoscaled=False),
        },
        "autoscaled": {
            "gpu_hours": d.autoscaled_gpu_hours,
            "server_hours": d.autoscaled_server_hours,
            "cost_usd": d.autoscaled_cost_usd,
            "energy_kwh": d.autoscaled_energy_kwh,
            "usd_per_million_tokens": d.usd_per_million_tokens(autoscaled=True),
            "gpu_hours_saved": d.gpu_hours_saved,
            "scale_up_delay_s": d.scale_up_delay_s,
        },
        "hours": [
            {
                "hour": h.hour,
                "mean_rps": h.mean_rps,
                "peak_rps": h.peak_rps,
                "instances": h.instances,
                "gpus": h.gpus,
                "servers": h.servers,
                "units": h.units,
                "cost_usd": h.cost_usd,
            }
            for h in d.hours
        ],
    }


def limits_record(study: Study) -> dict[str, Any]:
    s = study.spec
    return {"ttft_ms": s.ttft_ms, "itl_ms": s.itl_ms, "e2e_ms": s.e2e_ms}


def question_record(study: Study) -> dict[str, Any]:
    """What was asked and where each part came from (flag, scenario or tool default)."""
    s = study.spec
    arrivals = study.question.arrivals if study.question is not None else None  # None: stages
    rate = arrivals if arrivals is not None and arrivals.open_loop else None
    return {
        "scenario": s.id,
        "source": study.shown,
        "model": s.model,
        "isl": s.input_tokens if s.model is not None else None,
        "osl": s.output_tokens if s.model is not None else None,
        "mode": s.mode,
        "batching": s.batching,
        "batch_sizes": s.batch_sizes,
        "limits": limits_record(study),
        "mean_rps": s.mean_rps,
        "percentile": s.percentile if s.mean_rps is not None or s.daily is not None else None,
        "engine": study.engine,
        "objective": s.objective,
        "arrivals": arrivals.kind if arrivals is not None else s.arrivals,
        "cv": rate.cv if rate is not None else None,
        "router": str(rate.router) if rate is not None else None,
        "trace": trace_record(study.trace) if study.trace is not None else None,
        "statistics": dict(zip(("ttft", "itl", "e2e"), s.statistics, strict=True)),
        "origins": dict(study.origins),
    }


def trace_record(t: TraceTraffic) -> dict[str, Any]:
    """What a trace gave the question: its file, requests and span, mean rate, the gaps'
    coefficient of variation (measured, and as sized for), mean ISL and OSL; and how many of
    its requests ``--verify`` replays (all, or the first of a long trace), whether it runs or
    not."""
    return {
        "file": t.source,
        "requests": t.requests,
        "span_s": t.span_s,
        "mean_rps": t.mean_rps,
        "gap_cv": t.gap_cv,
        "cv": t.cv,
        "isl_mean": t.isl_mean,
        "osl_mean": t.osl_mean,
        "verify_replays": t.replayed,
        "layout": t.layout,
        "skipped_rows": t.skipped,
        "scale": t.scale,
        "slice_s": list(t.slice_s) if t.slice_s is not None else None,
        "window_s": t.window_s,
        "windows": [asdict(w) for w in t.windows],
        "conversations": conversations_record(t.reuse) if t.reuse is not None else None,
    }


def conversations_record(reuse: Reuse) -> dict[str, Any]:
    """Prefix reuse across a trace's conversations (:mod:`inferencesize.trace_conversations`):
    an unbounded cache's share; with a plan, ``prefix_cache``: what its instances keep."""
    return {
        "conversations": reuse.conversations,
        "later_turns": reuse.later_turns,
        "reuse_share": reuse.reuse_share,
        "prefix_cache": None,
        "sized_with": None,
    }


def search_record(result: PlanResult) -> dict[str, Any] | None:
    """What the planner searched and rejected (the summary the planner keeps)."""
    summary = getattr(result, "summary", None)
    if summary is None:
        return None
    from inferencesize.outcomes import summary_sentence

    record = summary.record() if hasattr(summary, "record") else {}
    return {**record, "text": summary_sentence(summary)}


def result_record(study: Study, result: PlanResult, percentiles: bool = True) -> dict[str, Any]:
    """The whole ``plan`` JSON of a single-model scenario; without ``percentiles``, of the
    open-loop percentiles only those the limits are held at (what the tables show)."""
    s = study.spec
    only = None if percentiles else set(quantiles_of(s.statistics))
    chosen = result.chosen
    daily = study.daily(chosen) if chosen else None
    fleet = study.trace_fleet(chosen) if chosen else None
    choice = study.engine_choice(result)
    slow = study.error_band(result)
    engine = study.plan_engine
    budget_kw = s.economics.power_budget_kw if s.economics else None
    power = kw(chosen.power_watts) if chosen is not None else None
    question = question_record(study)
    if fleet is not None and question.get("trace"):  # each window's GPUs beside its traffic
        windows = question["trace"]["windows"]
        for w, more in zip(windows, window_fleet_fields(fleet), strict=True):
            w.update(more)
    hits = study.prefix_reuse(chosen) if chosen else None
    if hits is not None and question.get("trace"):
        c = question["trace"]["conversations"]
        c["prefix_cache"] = asdict(hits)
        fed = study.trace_prefix
        c["sized_with"] = asdict(fed) if fed is not None else None
    if study.trace is not None and study.trace.lengths is not None and question.get("trace"):
        answers = study.length_answers(chosen) if chosen else (None, None)
        question["trace"]["lengths"] = lengths_record(
            s.trace_lengths,
            study.trace.lengths,
            answers,
            chosen.gpus_per_instance if chosen else None,
        )
    return {
        "schema_version": SCHEMA_VERSION,
        **question,
        "peak_rps": study.peak_rps,
        "search": search_record(result),
        "binding_constraint": result.binding_constraint,
        "plan": plan_record(chosen, engine(chosen), only) if chosen else None,
        "alternatives": [plan_record(a, engine(a), only) for a in result.alternatives],
        "rejected": [rejected_record(r) for r in result.rejected],
        "nearest_miss": result.nearest_miss,
        "unranked": unranked(s.objective, result.feasible),
        "power_budget": None
        if budget_kw is None
        else {
            "budget_kw": budget_kw,
            "it_power_kw": power,
            "within": None if power is None else power <= budget_kw,
        },
        "daily": daily_record(daily) if daily else None,
        "fleet": fleet_record(fleet) if fleet else None,
        "offline": offline_record(study.offline, chosen),
        "techniques": describe(study.estimator.techniques),
        "engine_choice": choice.record() if choice else None,
        "error_band": slow.record() if slow else None,
        "notes": [n for n in (reading_note(s, chosen),) if n is not None],
    }


def unranked(objective: str, feasible: list[Plan]) -> list[str]:
    """Hardware whose plans lack the figure ``objective`` ranks by (a price, a power): ranked
    last and listed, never silently ranked by servers."""
    if objective not in ("cost", "power"):
        return []
    field = "cost_per_hour_usd" if objective == "cost" else "power_watts"
    ids = (p.candidate.hardware_id for p in feasible if getattr(p, field) is None)
    return list(dict.fromkeys(ids))


def offline_record(batch: OfflineBatch | None, chosen: Plan | None) -> dict[str, Any] | None:
    """An offline batch: its volume and deadline, the throughput it needs, and when the
    chosen fleet (at its throughput-optimal load) answers its last request."""
    if batch is None:
        return None
    from inferencesize.offline import finish_s
    from inferencesize.units import SECONDS_PER_HOUR

    out: dict[str, Any] = {
        "requests": batch.requests,
        "tokens_per_day": batch.tokens_per_day,
        "deadline_h": batch.deadline_s / SECONDS_PER_HOUR,
        "required_rps": batch.rate_rps,
        "finish_h": None,
        "meets_deadline": None,
    }
    if chosen is not None:
        done = finish_s(batch, chosen.capacity_rps, chosen.point.e2e_s)
        out.update(finish_h=done / SECONDS_PER_HOUR, meets_deadline=done <= batch.deadline_s)
    return out


# --------------------------------------------------------------------------- disaggregated


def _pool_record(p: PoolPlan) -> dict[str, Any]:
    c = p.candidate
    return {
        **c.fields(),
        "dp": c.par.dp,
        "cp": p.cp,
        "instances": p.instances,
        "gpus_per_instance": p.gpus_per_instance,
        "gpus": p.gpus,
        "servers": p.servers,
        "batch": p.batch,
        "step_ms": p.step_s * 1e3,
        "requests_per_s_per_instance": p.rate,
        "cost_per_hour_usd": p.cost_per_hour_usd,
        "efficiency": p.efficiency_source,
    }


def _disagg_plan_record(d: DisaggPlan) -> dict[str, Any]:
    return {
        "ratio": d.ratio,
        "prefill": _pool_record(d.prefill),
        "decode": _pool_record(d.decode),
        "kv_transfer": {
            "bytes": d.kv_transfer_bytes,
            "ms": d.kv_transfer_s * 1e3,
            "link": d.kv_link,
        },
        "ttft_ms": d.ttft_s * 1e3,
        "itl_ms": d.itl_s * 1e3,
        "e2e_ms": d.e2e_s * 1e3,
        "gpus": d.gpus,
        "servers": d.servers,
        "capacity_rps": d.capacity_rps,
        "power_kw": kw(d.power_watts),
        "cost_per_hour_usd": d.cost_per_hour_usd,
    }


def disagg_record(cmp: Comparison) -> dict[str, Any]:
    """The ``disaggregated`` block of the plan JSON."""
    r = cmp.disaggregated
    return {
        "plan": _disagg_plan_record(r.chosen) if r.chosen else None,
        "reason": r.reason,
        "rejected": [rejected_record(x) for x in r.rejected],
        "better": cmp.better,
    }


# --------------------------------------------------------------------------- pipelines


def _stage_plan(p: Plan) -> dict[str, Any]:
    c, op = p.candidate, p.point
    return {
        "hardware": c.hardware_id,
        "precision": c.precision,
        "tp": c.par.tp,
        "pp": c.par.pp,
        "ep": c.par.ep,
        "instances": p.instances,
        "gpus": p.gpus,
        "servers": p.servers,
        "per_instance": point_record(op),
        "binding_constraint": p.binding,
        "power_kw": kw(p.power_watts),
        "cost_per_hour_usd": p.cost_per_hour_usd,
        "economics": economics_record(p),
    }


def pipeline_record(study: Study, result: PipelineResult) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        **question_record(study),
        "pipeline": True,
        "peak_rps": result.peak_rps,
        "e2e_limit_ms": result.e2e_limit_s * 1e3,
        "unloaded_e2e_ms": ms(result.unloaded_e2e_s),
        "budget_split": "proportional to each stage's unloaded E2E (fixed e2e_ms kept)",
        "feasible": result.feasible,
        "stages": [
            {
                "name": s.stage.name,
                "model": s.stage.space.model.id,
                "isl": s.stage.isl,
                "osl": s.stage.osl,
                "calls": s.stage.calls,
                "peak_rps": s.peak_rps,
                "unloaded_e2e_ms": ms(s.unloaded_e2e_s),
                "e2e_budget_ms": s.budget_s * 1e3,
                "plan": _stage_plan(s.chosen) if s.chosen else None,
                "nearest_miss": s.result.nearest_miss,
                "rejected": [rejected_record(r) for r in s.result.rejected],
            }
            for s in result.stages
        ],
        "total": {
            "servers": result.servers,
            "gpus": result.gpus,
            "e2e_ms": ms(result.e2e_s),
            "power_kw": kw(result.power_watts),
            "cost_per_hour_usd": result.cost_per_hour_usd,
        },
    }


def pipeline_miss(result: PipelineResult) -> str:
    """Why the pipeline is infeasible, one line."""
    parts = [f"{s.stage.name}: {s.result.nearest_miss}" for s in result.stages if not s.chosen]
    if result.unloaded_e2e_s is not None and result.unloaded_e2e_s > result.e2e_limit_s:
        parts.insert(
            0,
            f"unloaded E2E of the chain {result.unloaded_e2e_s * 1e3:,.0f} ms > limit "
            f"{result.e2e_limit_s * 1e3:,.0f} ms",
        )
    return "; ".join(parts)


# --------------------------------------------------------------------------- verification


def _latencies_ms(lat: Any) -> dict[str, float | None]:
    def finite_ms(seconds: float) -> float | None:
        return seconds * 1e3 if seconds == seconds else None  # NaN (no ITL): None

    return {
        "ttft_ms": finite_ms(lat.ttft_s),
        "itl_ms": finite_ms(lat.itl_s),
        "e2e_ms": finite_ms(lat.e2e_s),
    }


def verify_record(
    p: Plan, v: Verification, limits: Mapping[str, Any], trace: str | None = None
) -> dict[str, Any]:
    """``plan --verify``: the analytic instance count against the smallest count that meets
    the limits in simulation (each limit at its statistic), with servers for both;
    ``trace``: the file whose requests were replayed."""
    from inferencesize.planner import pack_servers

    arrivals = gaps_words(v.cv)
    if trace is not None:
        arrivals = f"trace {trace} replayed at"

    share = p.candidate.share
    per_gpu = share.per_gpu if share else 1  # instances sharing a GPU count it whole

    def count(run: Any) -> dict[str, Any]:
        groups = -(-run.instances // per_gpu)
        return {
            "instances": run.instances,
            "gpus": groups * p.gpus_per_instance,
            "servers": pack_servers(groups, p.gpus_per_instance, p.gpus_per_node),
            "meets_limits": run.meets,
            "overloaded": run.overloaded,
            "held": _latencies_ms(run.held),
        }

    found = v.found
    return {
        "arrivals": f"{arrivals} {p.peak_rps:g} req/s (peak), {v.router} router",
        "router": v.router,
        "requests": v.requests,
        "seed": v.seed,
        "statistics": dict(zip(("ttft", "itl", "e2e"), v.statistics, strict=True)),
        "limits": dict(limits),
        "analytic": count(v.planned),
        "simulated": count(found),
        "meets_limits": v.meets,
        "instances_delta": v.delta,
        "agrees": v.agrees,
        "searched": list(v.searched),
        "latency": {name: _latencies_ms(lat) for name, lat in found.stats.items()},
    }


# --------------------------------------------------------------------------- budgets


def plan_totals(result: PlanResult | PipelineResult) -> dict[str, float | None] | None:
    """Budget key -> what the plan pays for (GPUs and servers of whole units, cost per hour,
    power; None: the catalog has no price/power); None when infeasible."""
    if isinstance(result, PlanResult):
        p = result.chosen
        if p is None:
            return None
        return {
            "max_gpus": float(p.gpus_paid),
            "max_servers": float(p.servers_paid),
            "max_cost_per_hour_usd": p.cost_per_hour_usd,
            "max_power_kw": kw(p.power_watts),
        }
    if not result.feasible:
        return None
    return {
        "max_gpus": float(result.gpus_paid or 0),
        "max_servers": float(result.servers_paid or 0),
        "max_cost_per_hour_usd": result.cost_per_hour_usd,
        "max_power_kw": kw(result.power_watts),
    }


def plan_summary(result: PlanResult | PipelineResult) -> str:
    """One line naming what a feasible result deploys: the whole units paid for, their GPUs
    (and how many run an instance, when fewer), the split and the instances."""
    if not isinstance(result, PlanResult):
        return (
            f"pipeline of {report.count(len(result.stages), 'stage')}: "
            f"{report.count(result.servers_paid or 0, 'server')},"
            f" {report.count(result.gpus_paid or 0, 'GPU')}"
        )
    p = result.chosen
    assert p is not None
    share = f" {p.candidate.share.label()}" if p.candidate.share else ""
    unit = p.fleet.unit
    what = f"{unit.label()}; " if unit.nodes > 1 else ""
    used = f", {p.gpus:,} used" if p.gpus != p.gpus_paid else ""
    return (
        f"{p.fleet.units:,} × {p.candidate.hardware_id}"
        f" ({what}{report.count(p.gpus_paid, 'GPU')}{used}),"
        f" {report.count(p.instances, 'instance')} of {p.candidate.precision}"
        f" {p.candidate.par.label()}{share}"
    )
