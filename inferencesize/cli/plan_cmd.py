"""`infersize plan` and `infersize check`: parse, resolve one study, solve, render."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from inferencesize import report
from inferencesize.cli.common import check_format, stdout
from inferencesize.cli.options import (
    QUESTION,
    ScenarioArg,
    engine_options,
    study_from,
    with_options,
)
from inferencesize.errors import InfeasibleError, InputError, OverBudgetError
from inferencesize.render import plan as records
from inferencesize.render import plan_table as tables
from inferencesize.study import Study

FORMATS = ("table", "json", "yaml", "csv")


def solve(study: Study, top: int) -> tuple[dict[str, Any], Any]:
    """The record of a study's answer and the result it renders (plan or pipeline)."""
    if study.spec.pipeline is not None:
        piped = study.pipeline(top)
        return records.pipeline_record(study, piped), piped
    result = study.plan(top)
    rec = records.result_record(study, result)
    cmp = study.disaggregated(result)
    if cmp is not None:
        rec["disaggregated"] = records.disagg_record(cmp)
        rec["feasible"] = result.chosen is not None or cmp.disaggregated.chosen is not None
    return rec, result


def _csv_rows(rec: dict[str, Any]) -> list[dict[str, Any]]:
    if rec.get("pipeline"):
        return [
            {"stage": s["name"], "model": s["model"], "calls": s["calls"], **(s["plan"] or {})}
            for s in rec["stages"]
        ]
    plans = ([rec["plan"]] if rec["plan"] else []) + rec["alternatives"]
    rows = [{"rank": i, "layout": "aggregated", **p} for i, p in enumerate(plans, 1)]
    d = (rec.get("disaggregated") or {}).get("plan")
    if d is not None:
        rows.append({"rank": len(rows) + 1, "layout": "disaggregated", **d})
    return rows


def emit(rec: dict[str, Any], fmt: str, explain: bool) -> None:
    """Print the record: JSON/YAML/CSV on stdout, or the tables."""
    if fmt in ("json", "yaml"):
        report.emit(sys.stdout, report.to_json(rec) if fmt == "json" else report.to_yaml(rec))
        return
    if fmt == "csv":
        report.emit(sys.stdout, report.csv_text([report.flatten(r) for r in _csv_rows(rec)]))
        return
    out = stdout()
    if rec.get("pipeline"):
        out.print(tables.pipeline_table(rec))
        rejected = [(s["name"], s["rejected"]) for s in rec["stages"]]
    else:
        if rec["plan"] is not None:
            out.print(tables.plan_table(rec))
            if rec["alternatives"]:
                out.print(tables.alternatives_table(rec))
        else:
            out.print(f"{tables.title(rec)}: no feasible plan")
        if "disaggregated" in rec:
            out.print(tables.disagg_table(rec))
        for line in tables.search_lines(rec):
            out.print(line, highlight=False)
        rejected = [("", rec["rejected"])]
    for name, rows in rejected:
        if explain and rows:
            out.print(tables.rejected_table(f"{name}: rejected candidates".lstrip(": "), rows))
        elif rows:
            out.print(f"{len(rows)} candidates rejected (--explain lists them)", highlight=False)


def _miss(rec: dict[str, Any], result: Any) -> str:
    if rec.get("pipeline"):
        return records.pipeline_miss(result)
    return str(result.nearest_miss or "no candidate meets the limits")


def _feasible(rec: dict[str, Any]) -> bool:
    if rec.get("pipeline"):
        return bool(rec["feasible"])
    return rec["plan"] is not None or bool(rec.get("feasible"))


@with_options(*QUESTION, engine_options)
def plan_command(
    scenario: ScenarioArg = None,
    top: Annotated[int, typer.Option("--top", min=0, help="Alternatives to show.")] = 3,
    explain: Annotated[
        bool, typer.Option("--explain", help="List every rejected candidate and why.")
    ] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table | json | yaml | csv")] = "table",
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Draw req/s per instance vs TTFT to FILE.png/.svg."),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Simulate the plan at the peak rate (discrete-event) on the same deployment;"
            " report the scenario's percentile of TTFT/ITL/E2E and add instances until it"
            " meets the limits.",
        ),
    ] = False,
    **flags: Any,
) -> None:
    """The fewest servers and GPUs that serve the peak within the latency limits.

    Searches every hardware × native precision × TP/PP/EP split (flags or the scenario narrow
    it), finds each one's largest load meeting TTFT/ITL/E2E, and ranks plans by servers, GPUs,
    then cost. Says what it searched and which values were tool defaults. Exit 3 when nothing
    meets the limits (with the nearest miss).

    Example: infersize plan --model llama-3.1-70b --isl 1000 --osl 500 --mean-rps 20
    --ttft-ms 1000 --itl-ms 50 --hardware dgx-h100

    Example: infersize plan scenarios/default.yaml --tp 1,2 --precision fp8 --verify
    """
    check_format(fmt, FORMATS)
    study = study_from(scenario, flags)
    rec, result = solve(study, top)
    single = not rec.get("pipeline")
    if verify and single:
        from inferencesize.cli import plan_extras  # the simulator, only when asked for

        plan_extras.add_verification(study, rec, result)
    emit(rec, fmt, explain)
    if verify and fmt == "table" and rec.get("verify"):
        stdout().print(tables.verification_table(rec["verify"]))
    if plot is not None and single:
        from inferencesize.cli import plan_extras

        plan_extras.draw_plan(plot, study, result)
    if not _feasible(rec):
        raise InfeasibleError(f"no feasible plan: {_miss(rec, result)}")


BUDGET_NAMES = {
    "max_gpus": "GPUs",
    "max_servers": "servers",
    "max_cost_per_hour_usd": "$/hour",
    "max_power_kw": "kW",
}


@with_options(*QUESTION, engine_options)
def check_command(
    scenario: ScenarioArg = None,
    max_gpus: Annotated[int | None, typer.Option("--max-gpus", min=1, help="GPU budget.")] = None,
    max_servers: Annotated[
        int | None, typer.Option("--max-servers", min=1, help="Server budget.")
    ] = None,
    max_cost_per_hour: Annotated[
        float | None, typer.Option("--max-cost-per-hour", help="Budget in USD per hour.")
    ] = None,
    max_power_kw: Annotated[
        float | None,
        typer.Option("--max-power-kw", min=0.0, help="IT power budget, kW (exit 4 over it)."),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="text (stderr line only) | json")
    ] = "text",
    **flags: Any,
) -> None:
    """For CI: plan the scenario and hold it to a budget (flags or the scenario's budget:).

    Exit 0 within budget, 4 over budget, 3 infeasible, 1 bad input. One summary line on
    stderr; --format json also prints the plan and the budget check on stdout.

    Example: infersize check scenarios/default.yaml --max-servers 3
    """
    check_format(fmt, ("text", "json"))
    if max_cost_per_hour is not None and not max_cost_per_hour > 0:
        raise InputError("--max-cost-per-hour: must be > 0")
    study = study_from(scenario, flags)
    budget = study.spec.budget
    stated = {
        "max_gpus": max_gpus,
        "max_servers": max_servers,
        "max_cost_per_hour_usd": max_cost_per_hour,
        "max_power_kw": max_power_kw,
    }
    limits = {
        k: v if v is not None else (getattr(budget, k) if budget else None)
        for k, v in stated.items()
    }
    if all(v is None for v in limits.values()):
        raise InputError(
            "check needs a budget: --max-gpus, --max-servers, --max-cost-per-hour,"
            " --max-power-kw or budget: in the scenario"
        )
    rec, result = solve(study, 0)
    totals = records.plan_totals(result)
    over: list[str] = []
    for key, cap in limits.items():
        if cap is None or totals is None:
            continue
        have = totals[key]
        if have is None:
            what, flag = (
                ("power", "--max-power-kw")
                if key == "max_power_kw"
                else ("price", "--max-cost-per-hour")
            )
            where = rec["plan"]["hardware"] if rec.get("plan") else "pipeline"
            raise InputError(f"{where}: no {what} in the catalog, cannot check {flag}")
        if have > cap:
            name = BUDGET_NAMES[key]
            over.append(f"{name} {have:,.4g} > {cap:,.4g} (over by {have - cap:,.4g})")
    if fmt == "json":
        out = {
            "schema_version": records.SCHEMA_VERSION,
            "budget": limits,
            "within_budget": totals is not None and not over,
            "over": over,
            **rec,
        }
        report.emit(sys.stdout, report.to_json(out))
    if totals is None:
        raise InfeasibleError(f"no feasible plan: {_miss(rec, result)}")
    summary = records.plan_summary(result)
    if over:
        raise OverBudgetError(f"over budget: {summary}: {'; '.join(over)}")
    sys.stderr.write(f"ok: {summary} within budget\n")
