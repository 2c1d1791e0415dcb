"""`plan` / `check` for a scenario with ``pipeline:`` stages: size each stage, report totals."""

from __future__ import annotations

from typing import Any

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli import economics_opts as econ
from inferencesize.cli.common import point_record, stdout
from inferencesize.estimate import Estimator
from inferencesize.pipeline import PipelineResult, Stage, plan_pipeline
from inferencesize.planner import Plan
from inferencesize.specs.scenario import ScenarioSpec


def solve(scenario: ScenarioSpec, catalog: Catalog, est: Estimator, top: int) -> PipelineResult:
    assert scenario.pipeline is not None and scenario.e2e_ms is not None
    stages = []
    for st in scenario.pipeline:
        hardware = st.hardware or scenario.hardware
        tp = st.tp if st.tp is not None else scenario.tp
        pp = st.pp if st.pp is not None else scenario.pp
        ep = st.ep if st.ep is not None else scenario.ep
        stages.append(
            Stage(
                name=st.name,
                model=catalog.model(st.model),
                hardware=[catalog.hardware(h) for h in dict.fromkeys(hardware)],
                precisions=st.precision or scenario.precision,
                isl=st.isl,
                osl=st.osl,
                calls=st.calls,
                kv_precision=st.kv_precision or scenario.kv_precision,
                tps=None if tp == "auto" else tp,
                pps=None if pp == "auto" else pp,
                eps=None if ep == "auto" else ep,
                e2e_s=st.e2e_ms / 1e3 if st.e2e_ms is not None else None,
                ttft_s=st.ttft_ms / 1e3 if st.ttft_ms is not None else None,
                itl_s=st.itl_ms / 1e3 if st.itl_ms is not None else None,
            )
        )
    return plan_pipeline(
        stages,
        econ.scenario_peak(scenario),
        scenario.e2e_ms / 1e3,
        est,
        batching=scenario.batching,
        objective=scenario.objective,
        pricing=econ.pricing(scenario),
        top=top,
    )


def _plan(p: Plan) -> dict[str, Any]:
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
        "power_kw": p.power_watts / 1e3 if p.power_watts is not None else None,
        "cost_per_hour_usd": p.cost_per_hour_usd,
        "economics": econ.economics_record(p),
    }


def record(scenario: ScenarioSpec, result: PipelineResult, engine: str) -> dict[str, Any]:
    power = result.power_watts
    return {
        "schema_version": 1,
        "scenario": scenario.id,
        "pipeline": True,
        "peak_rps": result.peak_rps,
        "e2e_limit_ms": result.e2e_limit_s * 1e3,
        "unloaded_e2e_ms": result.unloaded_e2e_s * 1e3
        if result.unloaded_e2e_s is not None
        else None,
        "budget_split": "proportional to each stage's unloaded E2E (fixed e2e_ms kept)",
        "objective": scenario.objective,
        "feasible": result.feasible,
        "stages": [
            {
                "name": s.stage.name,
                "model": s.stage.model.id,
                "isl": s.stage.isl,
                "osl": s.stage.osl,
                "calls": s.stage.calls,
                "peak_rps": s.peak_rps,
                "unloaded_e2e_ms": s.unloaded_e2e_s * 1e3 if s.unloaded_e2e_s is not None else None,
                "e2e_budget_ms": s.budget_s * 1e3,
                "plan": _plan(s.chosen) if s.chosen else None,
                "nearest_miss": s.result.nearest_miss,
                "rejected": [
                    {"candidate": r.candidate, "reason": r.reason} for r in s.result.rejected
                ],
            }
            for s in result.stages
        ],
        "total": {
            "servers": result.servers,
            "gpus": result.gpus,
            "e2e_ms": result.e2e_s * 1e3 if result.e2e_s is not None else None,
            "power_kw": power / 1e3 if power is not None else None,
            "cost_per_hour_usd": result.cost_per_hour_usd,
        },
        "engine": engine,
    }


def miss(result: PipelineResult) -> str:
    """Why the pipeline is infeasible, one line."""
    parts = [f"{s.stage.name}: {s.result.nearest_miss}" for s in result.stages if not s.chosen]
    if result.unloaded_e2e_s is not None and result.unloaded_e2e_s > result.e2e_limit_s:
        parts.insert(
            0,
            f"unloaded E2E of the chain {result.unloaded_e2e_s * 1e3:,.0f} ms > limit "
            f"{result.e2e_limit_s * 1e3:,.0f} ms",
        )
    return "; ".join(parts)


def print_table(rec: dict[str, Any], explain: bool) -> None:
    out = stdout()
    rows = []
    for s in rec["stages"]:
        p = s["plan"]
        rows.append(
            [
                s["name"],
                s["model"],
                f"{s['isl']}/{s['osl']}",
                f"{s['calls']:g}",
                f"{s['peak_rps']:,.4g}",
                f"{s['e2e_budget_ms']:,.0f}",
                "—" if p is None else f"{p['hardware']} {p['precision']} tp{p['tp']}",
                "—" if p is None else p["servers"],
                "—" if p is None else p["gpus"],
                "—" if p is None else f"{p['per_instance']['e2e_ms']:,.0f}",
                "—"
                if p is None or p["cost_per_hour_usd"] is None
                else f"{p['cost_per_hour_usd']:,.0f}",
            ]
        )
    title = (
        f"pipeline · peak {rec['peak_rps']:,.4g} req/s · E2E limit {rec['e2e_limit_ms']:,.0f} ms"
        f" (unloaded {econ_ms(rec['unloaded_e2e_ms'])})"
    )
    out.print(
        report.table(
            title,
            [
                "stage",
                "model",
                "ISL/OSL",
                "calls",
                "peak req/s",
                "budget ms",
                "candidate",
                "servers",
                "GPUs",
                "E2E ms",
                "$/h",
            ],
            rows,
            caption=_total_line(rec["total"]),
        )
    )
    if explain:
        for s in rec["stages"]:
            if s["rejected"]:
                out.print(
                    report.table(
                        f"{s['name']}: rejected candidates",
                        ["candidate", "reason"],
                        [[r["candidate"], r["reason"]] for r in s["rejected"]],
                    )
                )


def _total_line(t: dict[str, Any]) -> str:
    servers = "—" if t["servers"] is None else str(t["servers"])
    gpus = "—" if t["gpus"] is None else str(t["gpus"])
    kw = "—" if t["power_kw"] is None else f"{t['power_kw']:,.1f} kW"
    usd = "—" if t["cost_per_hour_usd"] is None else f"${t['cost_per_hour_usd']:,.2f}/hour"
    return f"total: {servers} servers · {gpus} GPUs · E2E {econ_ms(t['e2e_ms'])} · {kw} · {usd}"


def econ_ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} ms"


def emit(rec: dict[str, Any], fmt: str, explain: bool) -> None:
    out = stdout()
    if fmt == "json":
        report.emit(out, report.to_json(rec))
    elif fmt == "yaml":
        report.emit(out, report.to_yaml(rec))
    elif fmt == "csv":
        rows = [
            {"stage": s["name"], "model": s["model"], "calls": s["calls"], **(s["plan"] or {})}
            for s in rec["stages"]
        ]
        report.emit(out, report.csv_text(rows))
    else:
        print_table(rec, explain)
