"""`infersize plan` and `infersize check`: size a scenario, and hold a plan to a budget."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from inferencesize import report
from inferencesize.catalog import Catalog, check_scenario, display_path, parse_spec, read_yaml
from inferencesize.cli import economics_opts as econ
from inferencesize.cli import scale_opts
from inferencesize.cli.common import (
    CalibrationOpt,
    CatalogOpt,
    EngineOpt,
    check_format,
    efficiency_for,
    open_catalog,
    point_record,
    split_ints,
    stdout,
)
from inferencesize.cli.technique_opts import (
    AcceptanceOpt,
    ChunkOpt,
    DraftOpt,
    DraftTokensOpt,
    KvPrecisionOpt,
    PrefixHitOpt,
    PrefixTokensOpt,
    SparseSpeedupOpt,
    SparseWeightsOpt,
    WeightOnlyOpt,
    merge_techniques,
    resolve_techniques,
    technique_flags,
    techniques_text,
)
from inferencesize.errors import InfeasibleError, InputError, OverBudgetError
from inferencesize.estimate import Estimator
from inferencesize.planner import Limits, Plan, PlanResult, fmt_seconds, plan_scenario
from inferencesize.specs import EfficiencySet
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.techniques import describe
from inferencesize.units import tokens_from_words

if TYPE_CHECKING:  # pipeline scenarios import their planner when they run
    from inferencesize.pipeline import PipelineResult

SCHEMA_VERSION = 1
FORMATS = ("table", "json", "yaml", "csv")

ScenarioArg = Annotated[
    str | None,
    typer.Argument(
        help="Scenario YAML file or shipped scenario id (default: the shipped 'default').",
        show_default=False,
    ),
]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Model id or alias.")]
IslOpt = Annotated[int | None, typer.Option("--isl", min=1, help="Input tokens per request.")]
OslOpt = Annotated[int | None, typer.Option("--osl", min=1, help="Output tokens per request.")]
MeanOpt = Annotated[
    float | None, typer.Option("--mean-rps", help="Mean requests/s (peak = its percentile).")
]
PeakOpt = Annotated[float | None, typer.Option("--peak-rps", help="Peak requests/s to size for.")]
PercentileOpt = Annotated[
    float | None, typer.Option("--percentile", help="Peak percentile of --mean-rps (0.95).")
]
TtftOpt = Annotated[float | None, typer.Option("--ttft-ms", help="Mean TTFT limit, ms.")]
ItlOpt = Annotated[float | None, typer.Option("--itl-ms", help="Mean ITL limit, ms.")]
E2eOpt = Annotated[float | None, typer.Option("--e2e-ms", help="Mean end-to-end limit, ms.")]
HardwareOpt = Annotated[
    list[str] | None,
    typer.Option("--hardware", help="GPU or system id (repeatable).", show_default=False),
]
PrecisionOpt = Annotated[
    list[str] | None,
    typer.Option("--precision", help="Weight precision (repeatable).", show_default=False),
]
TpOpt = Annotated[str | None, typer.Option("--tp", help="Tensor parallel: N, N,M or auto.")]
PpOpt = Annotated[str | None, typer.Option("--pp", help="Pipeline stages: N, N,M or auto.")]
EpOpt = Annotated[str | None, typer.Option("--ep", help="Expert parallel: N, N,M or auto.")]
ModeOpt = Annotated[
    str | None,
    typer.Option("--mode", help="streaming (TTFT/ITL/E2E) | sequential (E2E only)."),
]
BatchingOpt = Annotated[str | None, typer.Option("--batching", help="inflight | static")]
BatchSizesOpt = Annotated[
    str | None,
    typer.Option(
        "--batch-sizes",
        help="Static batching: the only batch sizes the engine runs, e.g. 1,2,4,8,16,32"
        " (auto: any size).",
    ),
]


def load_scenario(
    catalog: Catalog, name: str | None, flags: dict[str, Any]
) -> tuple[ScenarioSpec, str]:
    """The scenario (file or shipped id) with flags applied, validated; and its display name."""
    if name is None:
        name = "default"
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        data = read_yaml(path)
        shown = display_path(path)
    else:
        spec = catalog.scenario(name)
        data = spec.model_dump(by_alias=True, exclude_none=True)
        shown = catalog.file_of("scenarios", spec.id or name)
    scale = {k: flags.get(k) for k in scale_opts.KEYS}
    given = {k: v for k, v in flags.items() if v is not None and k not in scale_opts.KEYS}
    econ.merge(data, given)
    pairs = {"isl": "isl_words", "osl": "osl_words", "mean_rps": "peak_rps", "peak_rps": "mean_rps"}
    for key, other in pairs.items():
        if key in given and other not in given:
            data.pop(other, None)
    for key in ("tp", "pp", "ep", "batch_sizes"):
        if key in given:
            given[key] = split_ints(given[key], f"--{key.replace('_', '-')}")
    if given.get("batch_sizes") == "auto":  # any batch size
        given.pop("batch_sizes")
        data.pop("batch_sizes", None)
    if given.get("batching", "static") != "static" and "batch_sizes" not in given:
        data.pop("batch_sizes", None)  # a batch table belongs to static batching
    if "techniques" in given:
        given["techniques"] = merge_techniques(data.get("techniques"), given["techniques"])
    data.update(given)
    scaled = scale_opts.apply_flags(data, scale)
    shown_flags = f"{shown} (with flags)" if given or scaled else shown
    scenario = parse_spec(ScenarioSpec, data, shown_flags)
    check_scenario(catalog, scenario, shown_flags)
    return scenario, shown


def scenario_peak(scenario: ScenarioSpec) -> float:
    return econ.scenario_peak(scenario)


def solve(
    scenario: ScenarioSpec, catalog: Catalog, est: Estimator, top: int
) -> tuple[PlanResult, float]:
    result, peak, _ = solve_with_limits(scenario, catalog, est, top)
    return result, peak


def solve_with_limits(
    scenario: ScenarioSpec, catalog: Catalog, est: Estimator, top: int
) -> tuple[PlanResult, float, Limits]:
    peak = scenario_peak(scenario)
    result = plan_scenario(
        catalog,
        scenario,
        peak,
        est,
        top=top,
        objective=scenario.objective,
        pricing=econ.pricing(scenario),
        dps=scale_opts.dps(scenario.attention_dp),
        span_nvlink_domain=scenario.span_nvlink_domain,
    )
    return result, peak, Limits.of(scenario)


def plan_record(p: Plan, engine: str) -> dict[str, Any]:
    """One plan in the JSON schema (``plan`` and each of ``alternatives``)."""
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
        "instances": p.instances,
        "gpus_per_instance": p.gpus_per_instance,
        "gpus": p.gpus,
        "servers": p.servers,
        "gpus_per_server": p.gpus_per_node,
        "servers_are": "systems" if c.system else f"{p.gpus_per_node}-GPU nodes (assumed)",
        "multi_node": p.multi_node,
        "per_instance": {**point_record(op), "output_tokens_per_s": op.output_tokens_per_s},
        "capacity_rps": p.capacity_rps,
        "headroom": p.headroom,
        "binding_constraint": p.binding,
        "tokens_per_day": p.tokens_per_day,
        "power_kw": p.power_watts / 1e3 if p.power_watts is not None else None,
        "cost_per_hour_usd": p.cost_per_hour_usd,
        "cost_per_million_output_tokens_usd": p.cost_per_million_output_tokens_usd,
        "economics": econ.economics_record(p),
        "engine": engine,
        "efficiency": p.efficiency_source,
    }


def result_record(
    scenario: ScenarioSpec, result: PlanResult, peak: float, engine: str
) -> dict[str, Any]:
    daily = econ.daily_for(scenario, result.chosen) if result.chosen else None
    return {
        "schema_version": SCHEMA_VERSION,
        "scenario": scenario.id,
        "model": scenario.model,
        "isl": scenario.input_tokens,
        "osl": scenario.output_tokens,
        "mode": scenario.mode,
        "batching": scenario.batching,
        "batch_sizes": scenario.batch_sizes,
        "limits": {
            "ttft_ms": scenario.ttft_ms,
            "itl_ms": scenario.itl_ms,
            "e2e_ms": scenario.e2e_ms,
        },
        "mean_rps": scenario.mean_rps,
        "percentile": scenario.percentile if scenario.mean_rps is not None else None,
        "peak_rps": peak,
        "binding_constraint": result.binding_constraint,
        "plan": plan_record(result.chosen, engine) if result.chosen else None,
        "alternatives": [plan_record(a, engine) for a in result.alternatives],
        "rejected": [{"candidate": r.candidate, "reason": r.reason} for r in result.rejected],
        "nearest_miss": result.nearest_miss,
        "engine": engine,
        "objective": scenario.objective,
        "power_budget": econ.power_budget_record(scenario, result.chosen),
        "daily": econ.daily_record(daily) if daily else None,
    }


def _limit_text(scenario: ScenarioSpec, binding: str | None) -> str:
    limits = {"ttft": scenario.ttft_ms, "itl": scenario.itl_ms, "e2e": scenario.e2e_ms}
    if binding == "memory":
        return "memory (KV-cache capacity caps the concurrency)"
    value = limits.get(binding or "")
    name = {"ttft": "TTFT", "itl": "ITL", "e2e": "E2E"}.get(binding or "", str(binding))
    return f"{name} ≤ {fmt_seconds(value / 1e3)}" if value is not None else name


def _money(value: float | None, digits: int = 2) -> str:
    return "— (no price in the catalog)" if value is None else f"${value:,.{digits}f}"


def _print_table(scenario: ScenarioSpec, rec: dict[str, Any], explain: bool) -> None:
    out = stdout()
    p = rec["plan"]
    sizes = scenario.batch_sizes
    batching = f"static (batches {','.join(map(str, sizes))})" if sizes else scenario.batching
    title = (
        f"{scenario.model} · ISL {rec['isl']} · OSL {rec['osl']} · {scenario.mode}"
        f" · {batching} · peak {rec['peak_rps']:,.4g} req/s"
    )
    if p is not None:
        op = p["per_instance"]
        unit = "servers" if p["system"] else "8-GPU nodes"
        pairs: list[tuple[str, Any]] = [
            (
                "plan",
                f"{p['servers']} × {p['hardware']} ({unit}) · {p['gpus']} GPUs · "
                f"{p['instances']} instances",
            ),
            (
                "per instance",
                f"{p['precision']} (KV {p['kv_precision']}) · tp{p['tp']} "
                f"pp{p['pp']} ep{p['ep']}"
                + (f" dp{p['dp']}" if p["dp"] > 1 else "")
                + f" · {p['gpus_per_instance']} GPU(s)",
            ),
            ("binding constraint", _limit_text(scenario, p["binding_constraint"])),
            *(
                [("techniques", techniques_text(rec["techniques"]))]
                if rec.get("techniques")
                else []
            ),
            (
                "operating point",
                f"concurrency {report.format_load(op['concurrency'])} · "
                f"{op['requests_per_s']:,.3f} req/s per instance",
            ),
            (
                "latency (mean)",
                f"TTFT {op['ttft_ms']:,.1f} ms · ITL {op['itl_ms']:,.2f} ms · "
                f"E2E {op['e2e_ms']:,.0f} ms",
            ),
            (
                "capacity",
                f"{p['capacity_rps']:,.1f} req/s · headroom {p['headroom']:+.1%} at "
                f"peak · {p['tokens_per_day'] / 1e9:,.3f} B output tokens/day",
            ),
            ("power", "—" if p["power_kw"] is None else f"{p['power_kw']:,.1f} kW"),
            (
                "cost",
                f"{_money(p['cost_per_hour_usd'])}/hour · "
                f"{_money(p['cost_per_million_output_tokens_usd'], 3)}/M output tokens"
                if p["cost_per_hour_usd"] is not None
                else _money(None),
            ),
            *econ.table_rows(p, rec),
            ("engine", f"{p['engine']} ({p['efficiency']})"),
        ]
        out.print(report.key_value_table(title, pairs))
        if rec["alternatives"]:
            rows = [
                [
                    f"{a['hardware']} {a['precision']} tp{a['tp']}"
                    + (f" pp{a['pp']}" if a["pp"] > 1 else "")
                    + (f" dp{a['dp']}" if a["dp"] > 1 else "")
                    + (f" ep{a['ep']}" if a["ep"] > 1 else ""),
                    a["servers"],
                    a["gpus"],
                    a["instances"],
                    report.format_load(a["per_instance"]["concurrency"]),
                    f"{a['per_instance']['requests_per_s']:,.2f}",
                    f"{a['per_instance']['ttft_ms']:,.0f}",
                    f"{a['per_instance']['itl_ms']:,.1f}",
                    f"{a['headroom']:+.0%}",
                    a["binding_constraint"],
                    "—" if a["cost_per_hour_usd"] is None else f"{a['cost_per_hour_usd']:,.0f}",
                ]
                for a in rec["alternatives"]
            ]
            out.print(
                report.table(
                    "alternatives",
                    [
                        "candidate",
                        "servers",
                        "GPUs",
                        "inst.",
                        "conc.",
                        "req/s/inst",
                        "TTFT ms",
                        "ITL ms",
                        "headroom",
                        "binding",
                        "$/h",
                    ],
                    rows,
                )
            )
    else:
        out.print(f"{title}: no feasible plan")
    if explain and rec["rejected"]:
        out.print(
            report.table(
                "rejected candidates",
                ["candidate", "reason"],
                [[r["candidate"], r["reason"]] for r in rec["rejected"]],
            )
        )
    elif rec["rejected"]:
        out.print(f"{len(rec['rejected'])} candidates rejected (--explain lists them)")


def _emit(scenario: ScenarioSpec, rec: dict[str, Any], fmt: str, explain: bool) -> None:
    out = sys.stdout
    if fmt == "json":
        report.emit(out, report.to_json(rec))
    elif fmt == "yaml":
        report.emit(out, report.to_yaml(rec))
    elif fmt == "csv":
        rows = [
            {"rank": i, **p}
            for i, p in enumerate(([rec["plan"]] if rec["plan"] else []) + rec["alternatives"], 1)
        ]
        report.emit(out, report.csv_text(rows))
    else:
        _print_table(scenario, rec, explain)
        if "disaggregated" in rec:
            scale_opts.print_table(rec, rec["isl"], rec["osl"])


def _prepare(
    scenario_name: str | None,
    flags: dict[str, Any],
    top: int,
    engine: str | None,
    calibration: Path | None,
    catalog_dirs: list[Path] | None,
) -> tuple[ScenarioSpec, dict[str, Any], PlanResult | PipelineResult]:
    for key, allowed in (
        ("mode", ("streaming", "sequential")),
        ("batching", ("inflight", "static")),
    ):
        if flags.get(key) is not None and flags[key] not in allowed:
            raise InputError(f"--{key}: '{flags[key]}' is not one of {', '.join(allowed)}")
    catalog = open_catalog(catalog_dirs)
    scenario, shown = load_scenario(catalog, scenario_name, flags)
    eset = efficiency_for(catalog, engine or scenario.engine, calibration)
    kv_cap = scale_opts.kv_cap(scenario)
    if scenario.pipeline is not None:
        from inferencesize.cli import pipeline_cmd  # only pipeline scenarios need it

        est = Estimator(eset, kv_cap=kv_cap)
        piped = pipeline_cmd.solve(scenario, catalog, est, top)
        return scenario, pipeline_cmd.record(scenario, piped, eset.engine), piped
    est = scenario_estimator(catalog, eset, scenario, shown)
    result, peak, limits = solve_with_limits(scenario, catalog, est, top)
    rec = result_record(scenario, result, peak, eset.engine)
    rec["techniques"] = describe(est.techniques)
    cmp = scale_opts.compare(catalog, scenario, result, peak, limits, est, shown)
    if cmp is not None:
        rec["disaggregated"] = scale_opts.record(cmp)
        rec["feasible"] = not scale_opts.infeasible(cmp, result)
    return scenario, rec, result


def scenario_estimator(
    catalog: Catalog, eset: EfficiencySet, scenario: ScenarioSpec, shown: str
) -> Estimator:
    """The estimator of a single-model scenario: its serving techniques and KV cap applied."""
    assert scenario.model is not None
    system_prompt = scenario.system_prompt_tokens + (
        tokens_from_words(scenario.system_prompt_words) if scenario.system_prompt_words else 0
    )
    techniques = resolve_techniques(
        catalog,
        scenario.techniques,
        catalog.model(scenario.model),
        scenario.input_tokens,
        system_prompt,
        shown,
    )
    return Estimator(eset, kv_cap=scale_opts.kv_cap(scenario), techniques=techniques)


def sweep_setup(
    catalog: Catalog, eset: EfficiencySet, scenario: ScenarioSpec, shown: str
) -> tuple[Estimator, dict[str, Any]]:
    """What a sweep point needs beyond the plain planner: the scenario's estimator and the
    planner arguments ``plan`` would pass (objective, pricing, attention DP, NVLink span)."""
    extra: dict[str, Any] = {
        "objective": scenario.objective,
        "dps": scale_opts.dps(scenario.attention_dp),
        "span_nvlink_domain": scenario.span_nvlink_domain,
    }
    if scenario.economics is not None:
        extra["pricing"] = econ.pricing(scenario)
    return scenario_estimator(catalog, eset, scenario, shown), extra


def plan_command(
    scenario: ScenarioArg = None,
    model: ModelOpt = None,
    isl: IslOpt = None,
    osl: OslOpt = None,
    mean_rps: MeanOpt = None,
    peak_rps_: PeakOpt = None,
    percentile: PercentileOpt = None,
    ttft_ms: TtftOpt = None,
    itl_ms: ItlOpt = None,
    e2e_ms: E2eOpt = None,
    hardware: HardwareOpt = None,
    precision: PrecisionOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    ep: EpOpt = None,
    mode: ModeOpt = None,
    batching: BatchingOpt = None,
    batch_sizes: BatchSizesOpt = None,
    objective: econ.ObjectiveOpt = None,
    cost_basis: econ.CostBasisOpt = None,
    usd_per_gpu_hour: econ.GpuHourOpt = None,
    server_price_usd: econ.ServerPriceOpt = None,
    amortization_years: econ.YearsOpt = None,
    usd_per_kwh: econ.KwhOpt = None,
    pue: econ.PueOpt = None,
    server_power_kw: econ.ServerPowerOpt = None,
    power_budget_kw: econ.PowerBudgetOpt = None,
    requests_per_day: econ.RequestsPerDayOpt = None,
    peak_hour_share: econ.PeakShareOpt = None,
    hourly_rps: econ.HourlyOpt = None,
    kv_precision: KvPrecisionOpt = None,
    prefix_tokens: PrefixTokensOpt = None,
    prefix_hit_rate: PrefixHitOpt = None,
    chunked_prefill: ChunkOpt = None,
    draft: DraftOpt = None,
    draft_tokens: DraftTokensOpt = None,
    acceptance: AcceptanceOpt = None,
    weight_only: WeightOnlyOpt = None,
    sparse_weights: SparseWeightsOpt = None,
    sparse_speedup: SparseSpeedupOpt = None,
    top: Annotated[int, typer.Option("--top", min=0, help="Alternatives to show.")] = 3,
    explain: Annotated[bool, typer.Option("--explain", help="List rejected candidates.")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table | json | yaml | csv")] = "table",
    engine: EngineOpt = None,
    calibration: CalibrationOpt = None,
    catalog_dirs: CatalogOpt = None,
    disaggregated: scale_opts.DisaggOpt = None,
    attention_dp: scale_opts.AttentionDpOpt = None,
    span_nvlink_domain: scale_opts.SpanOpt = None,
    kv_window_tokens: scale_opts.KvWindowOpt = None,
    kv_sink_tokens: scale_opts.KvSinkOpt = None,
    prefill_cp: scale_opts.PrefillCpOpt = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Draw req/s per instance vs TTFT to FILE.png/.svg."),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Simulate the plan at the peak rate (discrete-event); report the scenario's"
            " percentile of TTFT/ITL/E2E and add instances until it meets the limits.",
        ),
    ] = False,
) -> None:
    """The fewest servers and GPUs that serve the peak within the latency limits.

    Tries every hardware × precision × TP/PP/EP split, finds each one's largest concurrency
    meeting TTFT/ITL/E2E (exact search), and ranks plans by servers, GPUs, then cost.
    Exit 3 when nothing meets the limits (with the nearest miss). --objective cost|power|gpus
    ranks by $/hour, kW or GPUs instead; a scenario with daily: (or --requests-per-day) adds
    fixed-fleet vs autoscaled cost per day; one with pipeline: sizes every stage.

    Example: infersize plan --model llama-3-8b --hardware dgx-h100 --precision fp8 --tp 1
    --isl 2000 --osl 200 --peak-rps 200 --ttft-ms 500 --format json

    Check by simulation: infersize plan --model llama-3-8b --hardware dgx-h100 --tp 1
    --peak-rps 50 --ttft-ms 500 --verify
    """
    check_format(fmt, FORMATS)
    flags = _flags(locals())
    scen, rec, result = _prepare(scenario, flags, top, engine, calibration, catalog_dirs)
    engine = engine or scen.engine
    if verify and isinstance(result, PlanResult):
        from inferencesize.cli import verify_out  # the simulator, only when asked for

        verify_out.add_verification(scen, rec, result, engine, calibration, catalog_dirs)
    if not isinstance(result, PlanResult):
        from inferencesize.cli import pipeline_cmd

        pipeline_cmd.emit(rec, fmt, explain)
        if not result.feasible:
            raise InfeasibleError(f"no feasible pipeline: {pipeline_cmd.miss(result)}")
        return
    _emit(scen, rec, fmt, explain)
    if verify and fmt == "table":
        verify_out.print_verification(rec)
    if plot is not None:
        from inferencesize.cli.plan_plot import draw_plan

        draw_plan(plot, scen, result, engine, calibration, catalog_dirs)
    if result.chosen is None and not rec.get("feasible"):
        raise InfeasibleError(f"no feasible plan: {result.nearest_miss}")


def _flags(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": values["model"],
        "isl": values["isl"],
        "osl": values["osl"],
        "mean_rps": values["mean_rps"],
        "peak_rps": values["peak_rps_"],
        "percentile": values["percentile"],
        "ttft_ms": values["ttft_ms"],
        "itl_ms": values["itl_ms"],
        "e2e_ms": values["e2e_ms"],
        "hardware": values["hardware"] or None,
        "precision": values["precision"] or None,
        "tp": values["tp"],
        "pp": values["pp"],
        "ep": values["ep"],
        "mode": values["mode"],
        "batching": values["batching"],
        "batch_sizes": values.get("batch_sizes"),
        **econ.flags(values),
        **{k: values.get(k) for k in scale_opts.KEYS},
        "kv_precision": values.get("kv_precision"),
        "techniques": technique_flags(values),
    }


def check_command(
    scenario: ScenarioArg = None,
    max_gpus: Annotated[int | None, typer.Option("--max-gpus", min=1, help="GPU budget.")] = None,
    max_servers: Annotated[
        int | None, typer.Option("--max-servers", min=1, help="Server budget.")
    ] = None,
    max_cost_per_hour: Annotated[
        float | None, typer.Option("--max-cost-per-hour", help="Budget in USD per hour.")
    ] = None,
    model: ModelOpt = None,
    isl: IslOpt = None,
    osl: OslOpt = None,
    mean_rps: MeanOpt = None,
    peak_rps_: PeakOpt = None,
    percentile: PercentileOpt = None,
    ttft_ms: TtftOpt = None,
    itl_ms: ItlOpt = None,
    e2e_ms: E2eOpt = None,
    hardware: HardwareOpt = None,
    precision: PrecisionOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    ep: EpOpt = None,
    mode: ModeOpt = None,
    batching: BatchingOpt = None,
    batch_sizes: BatchSizesOpt = None,
    objective: econ.ObjectiveOpt = None,
    cost_basis: econ.CostBasisOpt = None,
    usd_per_gpu_hour: econ.GpuHourOpt = None,
    server_price_usd: econ.ServerPriceOpt = None,
    amortization_years: econ.YearsOpt = None,
    usd_per_kwh: econ.KwhOpt = None,
    pue: econ.PueOpt = None,
    server_power_kw: econ.ServerPowerOpt = None,
    power_budget_kw: econ.PowerBudgetOpt = None,
    requests_per_day: econ.RequestsPerDayOpt = None,
    peak_hour_share: econ.PeakShareOpt = None,
    hourly_rps: econ.HourlyOpt = None,
    max_power_kw: Annotated[
        float | None,
        typer.Option("--max-power-kw", min=0.0, help="IT power budget, kW (exit 4 over it)."),
    ] = None,
    kv_precision: KvPrecisionOpt = None,
    prefix_tokens: PrefixTokensOpt = None,
    prefix_hit_rate: PrefixHitOpt = None,
    chunked_prefill: ChunkOpt = None,
    draft: DraftOpt = None,
    draft_tokens: DraftTokensOpt = None,
    acceptance: AcceptanceOpt = None,
    weight_only: WeightOnlyOpt = None,
    sparse_weights: SparseWeightsOpt = None,
    sparse_speedup: SparseSpeedupOpt = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="text (stderr line only) | json")
    ] = "text",
    engine: EngineOpt = None,
    calibration: CalibrationOpt = None,
    catalog_dirs: CatalogOpt = None,
) -> None:
    """For CI: plan the scenario and hold it to a budget (flags or the scenario's budget:).

    Exit 0 within budget, 4 over budget, 3 infeasible, 1 bad input. One summary line on
    stderr; --format json also prints the plan and the budget check on stdout.

    Example: infersize check scenarios/default.yaml --max-servers 3
    """
    check_format(fmt, ("text", "json"))
    flags = _flags(locals())
    scen, rec, result = _prepare(scenario, flags, 0, engine, calibration, catalog_dirs)
    budget = scen.budget
    limits = {
        "max_gpus": max_gpus if max_gpus is not None else (budget.max_gpus if budget else None),
        "max_servers": max_servers
        if max_servers is not None
        else (budget.max_servers if budget else None),
        "max_cost_per_hour_usd": max_cost_per_hour
        if max_cost_per_hour is not None
        else (budget.max_cost_per_hour_usd if budget else None),
        "max_power_kw": max_power_kw
        if max_power_kw is not None
        else (budget.max_power_kw if budget else None),
    }
    if max_cost_per_hour is not None and max_cost_per_hour <= 0:
        raise InputError("--max-cost-per-hour: must be > 0")
    if all(v is None for v in limits.values()):
        raise InputError(
            "check needs a budget: --max-gpus, --max-servers, --max-cost-per-hour,"
            " --max-power-kw or budget: in the scenario"
        )
    totals = _totals(result)
    over: list[str] = []
    if totals is not None:
        where, summary, actual = totals
        names = {
            "max_gpus": "GPUs",
            "max_servers": "servers",
            "max_cost_per_hour_usd": "$/hour",
            "max_power_kw": "kW",
        }
        for key, cap in limits.items():
            if cap is None:
                continue
            have = actual[key]
            if have is None:
                what = "power" if key == "max_power_kw" else "price"
                flag = "--max-power-kw" if key == "max_power_kw" else "--max-cost-per-hour"
                raise InputError(f"{where}: no {what} in the catalog, cannot check {flag}")
            if have > cap:
                over.append(f"{names[key]} {have:,.4g} > {cap:,.4g} (over by {have - cap:,.4g})")
    out = {
        "schema_version": SCHEMA_VERSION,
        "budget": limits,
        "within_budget": totals is not None and not over,
        "over": over,
        **rec,
    }
    if fmt == "json":
        report.emit(sys.stdout, report.to_json(out))
    if totals is None:
        why = result.nearest_miss if isinstance(result, PlanResult) else _pipeline_miss(result)
        raise InfeasibleError(f"no feasible plan: {why}")
    if over:
        raise OverBudgetError(f"over budget: {summary}: {'; '.join(over)}")
    sys.stderr.write(f"ok: {summary} within budget\n")


def _pipeline_miss(result: PipelineResult) -> str:
    from inferencesize.cli import pipeline_cmd

    return pipeline_cmd.miss(result)


def _totals(
    result: PlanResult | PipelineResult,
) -> tuple[str, str, dict[str, float | None]] | None:
    """(where, summary, budget key -> value) of a feasible result; None when infeasible."""
    if not isinstance(result, PlanResult):
        if not result.feasible:
            return None
        power = result.power_watts
        actual = {
            "max_gpus": float(result.gpus or 0),
            "max_servers": float(result.servers or 0),
            "max_cost_per_hour_usd": result.cost_per_hour_usd,
            "max_power_kw": power / 1e3 if power is not None else None,
        }
        summary = (
            f"pipeline of {len(result.stages)} stages: {result.servers} servers, {result.gpus} GPUs"
        )
        return "pipeline", summary, actual
    p = result.chosen
    if p is None:
        return None
    actual = {
        "max_gpus": float(p.gpus),
        "max_servers": float(p.servers),
        "max_cost_per_hour_usd": p.cost_per_hour_usd,
        "max_power_kw": p.power_watts / 1e3 if p.power_watts is not None else None,
    }
    summary = (
        f"{p.servers} × {p.candidate.hardware_id}, {p.gpus} GPUs "
        f"({p.candidate.precision} {p.candidate.par.label()}, {p.instances} instances)"
    )
    return p.candidate.hardware_id, summary, actual
