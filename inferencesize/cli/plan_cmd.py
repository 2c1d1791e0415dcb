"""`infersize plan` and `infersize check`: parse, resolve one study, solve, render."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from inferencesize import report
from inferencesize.cli.common import check_format, emit_data, format_option, input_files, stdout
from inferencesize.cli.options import (
    QUESTION,
    ScenarioArg,
    engine_options,
    study_from,
    with_options,
)
from inferencesize.economics import Budget
from inferencesize.errors import InfeasibleError, InputError, OverBudgetError, UsageError
from inferencesize.render import plan as records
from inferencesize.render import plan_table as tables
from inferencesize.study import Study

FORMATS = report.FORMATS


def solve(
    study: Study, top: int, percentiles: bool = True, budget: Budget | None = None
) -> tuple[dict[str, Any], Any]:
    """The record of a study's answer and the result it renders (plan or pipeline);
    ``percentiles`` False: of the open-loop percentiles, only those the limits are held at
    (what a table shows; the rest are then never computed); ``budget``: the plan is the best
    within it where one exists."""
    if study.spec.pipeline is not None:
        piped = study.pipeline(top)
        return records.pipeline_record(study, piped), piped
    result = study.plan(top, budget)
    rec = records.result_record(study, result, percentiles)
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
    emit_data(
        fmt, rec, _csv_rows(rec) if fmt == "csv" else None, lambda out: _tables(out, rec, explain)
    )


def _tables(out: Any, rec: dict[str, Any], explain: bool) -> None:
    if rec.get("pipeline"):
        out.print(tables.pipeline_table(rec))
        rejected = [(s["name"], s["rejected"]) for s in rec["stages"]]
    else:
        if rec["plan"] is not None:
            out.print(tables.plan_table(rec))
            if rec["alternatives"]:
                out.print(tables.alternatives_table(rec))
        else:
            out.print(f"{tables.title(rec)}: no feasible plan", highlight=False)
        if "disaggregated" in rec:
            out.print(tables.disagg_table(rec))
        for line in tables.search_lines(rec):
            out.print(line, highlight=False)
        rejected = [("", rec["rejected"])]
    for name, rows in rejected:
        if explain and rows:
            out.print(tables.rejected_table(f"{name}: rejected candidates".lstrip(": "), rows))
        elif rows:
            counted = report.count(len(rows), "candidate")
            out.print(f"{counted} rejected (--explain lists them)", highlight=False)


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
    top: Annotated[
        int, typer.Option("--top", min=0, metavar="N", help="Alternatives to show.")
    ] = 3,
    explain: Annotated[
        bool, typer.Option("--explain", help="List every rejected candidate and why.")
    ] = False,
    fmt: Annotated[str, format_option(FORMATS)] = "table",
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            metavar="FILE",
            help="Draw req/s per instance vs TTFT to FILE.png/.svg (replaces an existing file,"
            " atomically). One model's plan: a pipeline scenario is refused.",
        ),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Search the instance count again by discrete-event simulation at the peak rate"
            " on the same deployment (down while it meets the limits, up while it misses, each"
            " limit at its statistic); report the analytic and simulated counts and servers."
            " One model's plan: a pipeline scenario is refused.",
        ),
    ] = False,
    **flags: Any,
) -> None:
    """The fewest servers and GPUs that serve the peak within the latency limits.

    Searches every hardware × native precision × TP/PP/EP split (flags or the scenario narrow
    it), finds each one's highest-rate load meeting TTFT/ITL/E2E, and ranks plans by what is
    paid for (whole servers or racks: their servers, GPUs, cost, power); the alternatives show
    the best plan of each other hardware first. Says what it searched and which values were tool defaults. Exit 3 when nothing
    meets the limits (with the nearest miss). CSV: one row per plan (rank, layout: aggregated
    or disaggregated), nested fields flattened.

    Examples:
      infersize plan default
      infersize plan --model llama-3.1-70b --isl 1000 --osl 500 --mean-rps 20 --ttft-ms 1000 --itl-ms 50 --hardware dgx-h100
      infersize plan default --tp 1,2 --precision fp8 --verify
      infersize plan seed-nemo-43b --explain --format csv
    """
    check_format(fmt, FORMATS)
    inputs = input_files(scenario=scenario, calibration=flags.get("calibration"))
    if plot is not None:
        from inferencesize.plotting import check_plot_path

        check_plot_path(plot, inputs=inputs)
    study = study_from(scenario, flags)
    if verify and study.spec.offline is not None:
        raise UsageError(
            "--verify simulates traffic at its peak rate; an offline batch has no arrivals to"
            " simulate: drop --verify"
        )
    _refuse_pipeline_extras(study, plot=plot is not None, verify=verify)
    rec, result = solve(study, top, percentiles=fmt != "table")
    single = not rec.get("pipeline")
    if verify and single:
        from inferencesize.cli import plan_extras  # the simulator, only when asked for

        plan_extras.add_verification(study, rec, result)
    emit(rec, fmt, explain)
    if verify and fmt == "table" and rec.get("verify"):
        stdout().print(tables.verification_table(rec["verify"]))
    if plot is not None and single:
        from inferencesize.cli import plan_extras

        plan_extras.draw_plan(plot, study, result, inputs)
    if not _feasible(rec):
        raise InfeasibleError(f"no feasible plan: {_miss(rec, result)}")


def _refuse_pipeline_extras(study: Study, *, plot: bool, verify: bool) -> None:
    """--plot and --verify draw and simulate one model's deployment; a pipeline's stages are
    sized closed-loop in their shares of the E2E limit, which neither models: refuse, before
    any planning, rather than print a plan without what was asked for."""
    spec = study.spec
    if spec.pipeline is None or not (plot or verify):
        return
    flags, verbs = (
        ("--plot and --verify", "draw and simulate")
        if plot and verify
        else ("--plot", "draws")
        if plot
        else ("--verify", "simulates")
    )
    stages = report.count(len(spec.pipeline), "stage")
    raise UsageError(
        f"{flags} {verbs} one model's plan; {spec.id or 'this scenario'} is a pipeline of"
        f" {stages}: drop {flags}, or plan a stage as a scenario of its own (--model, --isl,"
        " --osl and the stage's rate)"
    )


CHECK_FORMATS = ("text", *FORMATS)


def _check_tables(out: Any, rec: dict[str, Any], verdict: dict[str, Any]) -> None:
    _tables(out, rec, explain=False)
    budget = [
        (BUDGET_NAMES[k], report.number(v)) for k, v in verdict["budget"].items() if v is not None
    ]
    state = "within budget" if verdict["within_budget"] else "; ".join(verdict["over"]) or "—"
    held = verdict["held"]["plan"] if verdict["held"] else "—"
    rows = [*budget, ("plan held", held), ("verdict", state)]
    out.print(report.key_value_table("budget", rows))


BUDGET_NAMES = {
    "max_gpus": "GPUs",
    "max_servers": "servers",
    "max_cost_per_hour_usd": "$/hour",
    "max_power_kw": "kW",
}


@with_options(*QUESTION, engine_options)
def check_command(
    scenario: ScenarioArg = None,
    max_gpus: Annotated[
        int | None, typer.Option("--max-gpus", min=1, metavar="N", help="GPU budget.")
    ] = None,
    max_servers: Annotated[
        int | None, typer.Option("--max-servers", min=1, metavar="N", help="Server budget.")
    ] = None,
    max_cost_per_hour: Annotated[
        float | None,
        typer.Option("--max-cost-per-hour", metavar="USD", help="Budget in USD per hour."),
    ] = None,
    max_power_kw: Annotated[
        float | None,
        typer.Option(
            "--max-power-kw", min=0.0, metavar="KW", help="IT power budget, kW (exit 4 over it)."
        ),
    ] = None,
    fmt: Annotated[
        str,
        format_option(
            CHECK_FORMATS,
            "text: the summary line on stderr only; the others also print the"
            " plan and the budget check on stdout.",
        ),
    ] = "text",
    **flags: Any,
) -> None:
    """For CI: the best plan within a budget (flags or budget:) of what is paid.

    GPUs and servers count whole units (an NVL72 rack: 72 GPUs, 18 trays). Exit 0 when a plan
    is within the budget (it is named), 4 when none is (the best plan is named, with what it
    is over by), 3 infeasible, 1 bad input. One summary line on
    stderr; --format table|json|yaml|csv also prints the plan and the budget check on stdout
    (CSV: one row per plan, with the budget and within_budget columns first).

    Examples:
      infersize check default --max-servers 3
      infersize check default --max-gpus 24 --format json
    """
    check_format(fmt, CHECK_FORMATS)  # the budget flags: finite, in range (cli.common.BOUNDS)
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
    gpus, servers, usd, kw = (limits[k] for k in BUDGET_NAMES)
    caps = Budget(
        max_gpus=int(gpus) if gpus is not None else None,
        max_servers=int(servers) if servers is not None else None,
        max_cost_per_hour_usd=usd,
        max_power_w=kw * 1e3 if kw is not None else None,
    )
    # the best plan within the budget where one exists, else the best plan (over it)
    rec, result = solve(study, 0, percentiles=fmt not in ("text", "table"), budget=caps)
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
            over.append(
                f"{name} {report.number(have)} > {report.number(cap)}"
                f" (over by {report.number(have - cap)})"
            )
    summary = records.plan_summary(result) if totals is not None else None
    if fmt != "text":
        held = None
        if totals is not None:  # what the plan held to the budget pays for
            gpus_paid, servers_paid = totals["max_gpus"], totals["max_servers"]
            held = {
                "plan": summary,
                "gpus": int(gpus_paid) if gpus_paid is not None else None,
                "servers": int(servers_paid) if servers_paid is not None else None,
                "cost_per_hour_usd": totals["max_cost_per_hour_usd"],
                "power_kw": totals["max_power_kw"],
            }
        verdict = {
            "budget": limits,
            "within_budget": totals is not None and not over,
            "over": over,
            "held": held,
        }
        out = {"schema_version": records.SCHEMA_VERSION, **verdict, **rec}
        rows = [{**verdict, **row} for row in _csv_rows(rec)] if fmt == "csv" else None
        emit_data(fmt, out, rows, lambda con: _check_tables(con, rec, verdict))
    if totals is None:
        raise InfeasibleError(f"no feasible plan: {_miss(rec, result)}")
    if over:
        best = (
            f"{summary}" if rec.get("pipeline") else f"no plan is within it; the best is {summary}"
        )
        raise OverBudgetError(f"over budget: {best}: {'; '.join(over)}")
    sys.stderr.write(f"ok: {summary}: within budget\n")
