"""Economics and daily-traffic flags for `plan` / `check`, and their output records.

Flags map onto the scenario's ``objective``, ``economics:`` and ``daily:`` blocks; the records
add ``objective``, ``plan.economics`` and ``daily`` to the JSON and rows to the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from inferencesize.economics import OBJECTIVES, Pricing
from inferencesize.errors import InputError
from inferencesize.planner import Plan
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.traffic import peak_rps

if TYPE_CHECKING:  # daily traffic math is imported only for scenarios with daily:
    from inferencesize.daily import DailyPlan

ObjectiveOpt = Annotated[
    str | None,
    typer.Option(
        "--objective",
        help="Rank plans by: servers (default) | gpus | cost ($/hour) | power (kW). "
        "Example: --objective cost",
    ),
]
CostBasisOpt = Annotated[
    str | None,
    typer.Option(
        "--cost-basis",
        help="cloud ($/GPU-hour) | owned (purchase + amortisation + power) | auto.",
    ),
]
GpuHourOpt = Annotated[
    float | None,
    typer.Option("--usd-per-gpu-hour", min=0.0, help="Rent per GPU-hour, USD (e.g. 2.5)."),
]
ServerPriceOpt = Annotated[
    float | None,
    typer.Option("--server-price-usd", min=0.0, help="Purchase price per server (e.g. 300000)."),
]
YearsOpt = Annotated[
    float | None,
    typer.Option("--amortization-years", min=0.0, help="Years to write servers off (4)."),
]
KwhOpt = Annotated[
    float | None, typer.Option("--usd-per-kwh", min=0.0, help="Electricity, USD/kWh (0.10).")
]
PueOpt = Annotated[
    float | None, typer.Option("--pue", min=1.0, help="Facility power / IT power (1.3).")
]
ServerPowerOpt = Annotated[
    float | None,
    typer.Option("--server-power-kw", min=0.0, help="Max IT power per server, kW (e.g. 10.2)."),
]
PowerBudgetOpt = Annotated[
    float | None,
    typer.Option("--power-budget-kw", min=0.0, help="IT power the fleet may draw, kW."),
]
RequestsPerDayOpt = Annotated[
    float | None,
    typer.Option(
        "--requests-per-day",
        min=0.0,
        help="Daily volume (with --peak-hour-share): sizes the busiest hour and compares a "
        "fixed fleet with hourly autoscaling. Example: --requests-per-day 2e6 --peak-hour-share 0.1",
    ),
]
PeakShareOpt = Annotated[
    float | None,
    typer.Option("--peak-hour-share", help="Share of the day's requests in the busiest hour."),
]
HourlyOpt = Annotated[
    str | None,
    typer.Option("--hourly-rps", help="24 comma-separated mean requests/s, hour 0..23."),
]

_ECON_KEYS = {
    "cost_basis": "basis",
    "usd_per_gpu_hour": "usd_per_gpu_hour",
    "server_price_usd": "server_price_usd",
    "amortization_years": "amortization_years",
    "usd_per_kwh": "usd_per_kwh",
    "pue": "pue",
    "server_power_kw": "server_power_kw",
    "power_budget_kw": "power_budget_kw",
}


def _hourly(value: str) -> list[float]:
    try:
        out = [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise InputError(
            f"--hourly-rps: expected 24 comma-separated numbers (got {value!r})"
        ) from None
    if len(out) != 24:
        raise InputError(f"--hourly-rps: expected 24 values, one per hour (got {len(out)})")
    return out


def flags(values: dict[str, Any]) -> dict[str, Any]:
    """Scenario keys from the economics and daily flags (None when not given)."""
    objective = values.get("objective")
    if objective is not None and objective not in OBJECTIVES:
        raise InputError(f"--objective: '{objective}' is not one of {', '.join(OBJECTIVES)}")
    basis = values.get("cost_basis")
    if basis is not None and basis not in ("auto", "cloud", "owned"):
        raise InputError(f"--cost-basis: '{basis}' is not one of auto, cloud, owned")
    econ = {key: values[flag] for flag, key in _ECON_KEYS.items() if values.get(flag) is not None}
    daily: dict[str, Any] = {}
    if values.get("hourly_rps") is not None:
        daily["hourly_rps"] = _hourly(values["hourly_rps"])
    for key in ("requests_per_day", "peak_hour_share"):
        if values.get(key) is not None:
            daily[key] = values[key]
    return {"objective": objective, "economics": econ or None, "daily": daily or None}


def merge(data: dict[str, Any], given: dict[str, Any]) -> None:
    """Apply the ``economics`` / ``daily`` flags to scenario ``data`` (nested merge) and drop
    the traffic keys they replace; removes them from ``given``."""
    econ = given.pop("economics", None)
    if econ:
        data["economics"] = {**(data.get("economics") or {}), **econ}
    daily = given.pop("daily", None)
    if daily:
        old = dict(data.get("daily") or {})
        if "hourly_rps" in daily:
            old.pop("requests_per_day", None)
            old.pop("peak_hour_share", None)
        if "requests_per_day" in daily:
            old.pop("hourly_rps", None)
        data["daily"] = {**old, **daily}
        data.pop("mean_rps", None)
        data.pop("peak_rps", None)
    elif "mean_rps" in given or "peak_rps" in given:
        data.pop("daily", None)


def pricing(scenario: ScenarioSpec) -> Pricing:
    e = scenario.economics
    if e is None:
        return Pricing()
    return Pricing(
        basis=e.basis,
        usd_per_gpu_hour=e.usd_per_gpu_hour,
        server_price_usd=e.server_price_usd,
        amortization_years=e.amortization_years,
        usd_per_kwh=e.usd_per_kwh,
        pue=e.pue,
        server_power_w=e.server_power_kw * 1e3 if e.server_power_kw is not None else None,
    )


def hourly_profile(scenario: ScenarioSpec) -> list[float] | None:
    d = scenario.daily
    if d is None:
        return None
    if d.hourly_rps is not None:
        return list(d.hourly_rps)
    assert d.requests_per_day is not None and d.peak_hour_share is not None
    from inferencesize.daily import profile_from_daily

    return profile_from_daily(d.requests_per_day, d.peak_hour_share)


def scenario_peak(scenario: ScenarioSpec) -> float:
    """The peak to size for: given, the percentile of the mean, or of the busiest hour."""
    profile = hourly_profile(scenario)
    try:
        if profile is not None:
            from inferencesize.daily import busiest_hour_peak_rps

            return busiest_hour_peak_rps(profile, scenario.percentile, scenario.dispersion)
        if scenario.peak_rps is not None:
            return scenario.peak_rps
        assert scenario.mean_rps is not None
        return peak_rps(scenario.mean_rps, scenario.percentile, dispersion=scenario.dispersion)
    except ValueError as err:
        raise InputError(f"scenario: {err}") from None


def economics_record(p: Plan) -> dict[str, Any] | None:
    e = p.economics
    if e is None:
        return None
    t, c = e.tokens, e.cost
    return {
        "basis": c.basis if c else None,
        "price": c.price if c else None,
        "capex_usd_per_hour": c.capex_usd_per_hour if c else None,
        "energy_usd_per_hour": c.energy_usd_per_hour if c else None,
        "server_power_kw": e.node_power.watts / 1e3 if e.node_power else None,
        "server_power_from": e.node_power.basis if e.node_power else None,
        "it_power_kw": e.it_watts / 1e3 if e.it_watts is not None else None,
        "facility_power_kw": e.facility_watts / 1e3 if e.facility_watts is not None else None,
        "pue": e.pue,
        "input_share": t.input_share,
        "usd_per_million_input_tokens": t.usd_per_million_input,
        "usd_per_million_output_tokens": t.usd_per_million_output,
        "usd_per_million_tokens": t.usd_per_million_tokens,
        "joules_per_input_token": t.joules_per_input_token,
        "joules_per_output_token": t.joules_per_output_token,
        "joules_per_token": t.joules_per_token,
    }


def power_budget_record(scenario: ScenarioSpec, p: Plan | None) -> dict[str, Any] | None:
    budget = scenario.economics.power_budget_kw if scenario.economics else None
    if budget is None:
        return None
    kw = p.power_watts / 1e3 if p is not None and p.power_watts is not None else None
    return {"budget_kw": budget, "it_power_kw": kw, "within": None if kw is None else kw <= budget}


def daily_for(scenario: ScenarioSpec, p: Plan) -> DailyPlan | None:
    profile = hourly_profile(scenario)
    if profile is None or scenario.daily is None:
        return None
    c = p.candidate
    from inferencesize.daily import daily_plan

    return daily_plan(
        profile,
        p.rate,
        p.gpus_per_instance,
        p.gpus_per_node,
        scenario.input_tokens,
        scenario.output_tokens,
        gpu=c.gpu,
        system=c.system,
        pricing=pricing(scenario),
        percentile=scenario.percentile,
        dispersion=scenario.dispersion,
        min_instances=scenario.daily.min_instances,
    )


def daily_record(d: DailyPlan) -> dict[str, Any]:
    return {
        "requests_per_day": d.requests_per_day,
        "input_tokens_per_day": d.input_tokens_per_day,
        "output_tokens_per_day": d.output_tokens_per_day,
        "cost_basis": d.cost_basis,
        "fixed": {
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
        },
        "hours": [
            {
                "hour": h.hour,
                "mean_rps": h.mean_rps,
                "peak_rps": h.peak_rps,
                "instances": h.instances,
                "gpus": h.gpus,
                "servers": h.servers,
                "cost_usd": h.cost_usd,
            }
            for h in d.hours
        ],
    }


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{fmt}}{unit}"


def _usd(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"${value:,.{digits}f}"


def table_rows(plan: dict[str, Any], rec: dict[str, Any]) -> list[tuple[str, str]]:
    """Extra key/value rows for the plan table: tokens, energy, power budget, daily."""
    rows: list[tuple[str, str]] = []
    e = plan.get("economics")
    if e:
        rows.append(
            (
                "per million tokens",
                f"input {_usd(e['usd_per_million_input_tokens'])} · output "
                f"{_usd(e['usd_per_million_output_tokens'])} · blended "
                f"{_usd(e['usd_per_million_tokens'])} (prefill "
                f"{e['input_share']:.0%} of GPU time)",
            )
        )
        if e["basis"]:
            rows.append(("cost basis", f"{e['basis']}: {e['price']}"))
        rows.append(
            (
                "energy per token",
                f"input {_num(e['joules_per_input_token'], ',.3g', ' J')} · output "
                f"{_num(e['joules_per_output_token'], ',.3g', ' J')} · facility "
                f"{_num(e['facility_power_kw'], ',.1f', ' kW')} at PUE {e['pue']:g}",
            )
        )
    pb = rec.get("power_budget")
    if pb:
        verdict = "unknown power" if pb["within"] is None else "within" if pb["within"] else "OVER"
        rows.append(("power budget", f"{pb['budget_kw']:,.1f} kW: {verdict}"))
    d = rec.get("daily")
    if d:
        f, a = d["fixed"], d["autoscaled"]
        rows.append(
            (
                "daily traffic",
                f"{d['requests_per_day']:,.0f} requests · "
                f"{(d['input_tokens_per_day'] + d['output_tokens_per_day']) / 1e9:,.3f} B tokens",
            )
        )
        rows.append(
            (
                "fixed fleet / day",
                f"{f['gpu_hours']:,.0f} GPU-h · {_usd(f['cost_usd'], 2)}",
            )
        )
        rows.append(
            (
                "autoscaled / day",
                f"{a['gpu_hours']:,.0f} GPU-h ({a['gpu_hours_saved']:.0%} fewer) · "
                f"{_usd(a['cost_usd'], 2)}",
            )
        )
    return rows
