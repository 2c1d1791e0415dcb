"""Economics: cost per hour (cloud and owned), power, per-token cost and energy, objectives."""

from __future__ import annotations

import pytest
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.economics import (
    HOURS_PER_YEAR,
    Pricing,
    fleet_it_watts,
    hourly_cost,
    input_share,
    owned_usd_per_hour,
    server_power,
    token_economics,
)
from inferencesize.errors import InputError
from inferencesize.latency import prefill
from inferencesize.planner import Limits, PlanResult, plan


def test_hours_per_year_is_365_25_days() -> None:
    assert HOURS_PER_YEAR == 365.25 * 24


def test_owned_cost_hand_computed() -> None:
    # 4 servers at 300,000 $ over 4 years: 1.2e6 / (4 · 8766) = 34.2231 $/h
    # 40.8 kW IT · PUE 1.3 · 0.12 $/kWh = 6.3648 $/h
    capex, energy = owned_usd_per_hour(300_000, 4, 4.0, 40_800, 1.3, 0.12)
    assert capex == pytest.approx(1.2e6 / (4 * 8766))
    assert capex == pytest.approx(34.2231, abs=1e-4)
    assert energy == pytest.approx(6.3648)


def test_cloud_cost_is_rent_times_gpus_without_energy() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    cost = hourly_cost(Pricing(), gpu, system, gpus=13, servers=2, it_watts=9100.0)
    assert cost is not None and cost.basis == "cloud"
    assert cost.usd_per_hour == pytest.approx(6.88 * 13)  # 89.44 $/h
    assert cost.energy_usd_per_hour == 0.0


def test_given_rent_overrides_the_catalog() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    cost = hourly_cost(Pricing(usd_per_gpu_hour=2.0), gpu, system, 10, 2, None)
    assert cost is not None and cost.usd_per_hour == pytest.approx(20.0)


def test_auto_uses_a_purchase_price_when_no_rent_is_known() -> None:
    gpu, system = _catalog().hardware("dgx-a100-320gb")  # 199,000 $, 6.5 kW, no rent
    cost = hourly_cost(Pricing(), gpu, system, gpus=16, servers=2, it_watts=13_000.0)
    assert cost is not None and cost.basis == "owned"
    capex = 199_000 * 2 / (4 * 8766)  # default 4 years
    energy = 13.0 * 1.3 * 0.10  # default PUE 1.3, 0.10 $/kWh
    assert cost.usd_per_hour == pytest.approx(capex + energy)


def test_no_price_means_no_cost_and_forced_basis_names_the_field() -> None:
    gpu, system = _catalog().hardware("dgx-h100")  # no price in the catalog
    assert hourly_cost(Pricing(), gpu, system, 8, 1, 10_200.0) is None
    with pytest.raises(InputError, match="usd_per_gpu_hour"):
        hourly_cost(Pricing(basis="cloud"), gpu, system, 8, 1, 10_200.0)
    with pytest.raises(InputError, match="server_price_usd"):
        hourly_cost(Pricing(basis="owned"), gpu, system, 8, 1, 10_200.0)


def test_server_power_sources() -> None:
    c = _catalog()
    gpu, system = c.hardware("dgx-h100")
    assert server_power(gpu, system, 8) == server_power(gpu, system, 8, None)
    p = server_power(gpu, system, 8)
    assert p is not None and (p.watts, p.basis) == (10_200.0, "system")
    gpu, system = c.hardware("hgx-h100")  # no system power: 8 × 700 W TDP (lower bound)
    p = server_power(gpu, system, 8)
    assert p is not None and (p.watts, p.basis) == (5_600.0, "gpu-tdp")
    # GPU-TDP power counts the GPUs used, a system's power whole servers
    assert fleet_it_watts(p, servers=2, gpus=13, gpus_per_node=8) == pytest.approx(9_100.0)
    s = server_power(*c.hardware("dgx-h100"), 8)
    assert s is not None and fleet_it_watts(s, 2, 13, 8) == pytest.approx(20_400.0)
    g = server_power(gpu, system, 8, given_w=7_000.0)
    assert g is not None and (g.watts, g.basis) == (7_000.0, "given")


def test_token_economics_hand_computed() -> None:
    # 36 $/h = 0.01 $/s; 10 req/s · 1000 in = 10,000 input tok/s, · 100 out = 1,000 output tok/s
    t = token_economics(36.0, 11_000.0, 10.0, 1000, 100, share=0.25)
    assert t.usd_per_million_input == pytest.approx(0.01 * 0.25 / 10_000 * 1e6)  # 0.25 $
    assert t.usd_per_million_output == pytest.approx(0.01 * 0.75 / 1_000 * 1e6)  # 7.5 $
    assert t.usd_per_million_tokens == pytest.approx(0.01 / 11_000 * 1e6)  # 0.909 $
    assert t.joules_per_input_token == pytest.approx(0.275)
    assert t.joules_per_output_token == pytest.approx(8.25)
    assert t.joules_per_token == pytest.approx(1.0)
    # the split keeps the total: input share + output share of cost = all cost
    whole = t.usd_per_million_input * 10_000 + t.usd_per_million_output * 1_000
    assert whole == pytest.approx(0.01 * 1e6)


def test_input_share_is_clipped() -> None:
    assert input_share(2.0, 0.1) == pytest.approx(0.2)
    assert input_share(20.0, 0.1) == 1.0
    assert input_share(0.0, 0.1) == 0.0


def _plan(objective: str, hardware: list[str], **kw: object) -> PlanResult:
    c = _catalog()
    return plan(
        c.model("llama-3.1-70b"),
        [c.hardware(h) for h in hardware],
        ["fp8"],
        1000,
        300,
        28.0,
        Limits(ttft_s=1.0, itl_s=0.05),
        _est(),
        top=20,
        objective=objective,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


HW = ["aws-p5-48xlarge", "lambda-8x-h100", "aws-p5e-48xlarge", "dgx-b200"]


def test_cost_objective_picks_the_cheapest_feasible_plan() -> None:
    r = _plan("cost", HW)
    assert r.chosen is not None and r.chosen.cost_per_hour_usd is not None
    costs = [p.cost_per_hour_usd for p in r.feasible if p.cost_per_hour_usd is not None]
    assert r.chosen.cost_per_hour_usd == min(costs)
    # lambda (3.99 $/GPU-h) beats the same H100 on AWS (6.88 $/GPU-h) at equal GPUs
    by_hw = {
        (p.candidate.hardware_id, p.candidate.par.tp): p
        for p in r.feasible
        if p.candidate.hardware_id in ("aws-p5-48xlarge", "lambda-8x-h100")
    }
    lam, aws = by_hw[("lambda-8x-h100", 2)], by_hw[("aws-p5-48xlarge", 2)]
    assert lam.gpus == aws.gpus
    assert aws.cost_per_hour_usd / lam.cost_per_hour_usd == pytest.approx(6.88 / 3.99)
    # a plan without a price (dgx-b200) is never chosen for cost
    assert r.chosen.candidate.hardware_id != "dgx-b200"


def test_power_and_gpus_objectives_minimise_their_quantity() -> None:
    r = _plan("power", HW)
    assert r.chosen is not None and r.chosen.power_watts is not None
    assert r.chosen.power_watts == min(
        p.power_watts for p in r.feasible if p.power_watts is not None
    )
    g = _plan("gpus", HW)
    assert g.chosen is not None
    assert g.chosen.gpus == min(p.gpus for p in g.feasible)
    s = _plan("servers", HW)
    assert s.chosen is not None
    assert s.chosen.servers == min(p.servers for p in s.feasible)
    # the same feasible set whatever the objective
    assert {p.candidate.label() for p in r.feasible} == {p.candidate.label() for p in s.feasible}


def test_plan_carries_consistent_economics() -> None:
    r = _plan("servers", ["aws-p5-48xlarge"])
    p = r.chosen
    assert p is not None and p.economics is not None and p.economics.cost is not None
    assert p.cost_per_hour_usd == pytest.approx(6.88 * p.gpus)
    assert p.economics.cost.usd_per_hour == p.cost_per_hour_usd
    # no system power for the AWS instance: GPUs × 700 W
    assert p.power_watts == pytest.approx(700.0 * p.gpus)
    assert p.economics.facility_watts == pytest.approx(1.3 * p.power_watts)
    # input share = per-instance rate × one prompt's prefill time
    c = _catalog()
    res = _est().resolve(p.candidate, 1300)
    assert res.deployment is not None
    t = float(prefill(res.deployment, 1, 1000).total_s)
    assert p.economics.tokens.input_share == pytest.approx(p.rate * t)
    assert 0.0 < p.economics.tokens.input_share < 1.0
    assert c is not None


def test_owned_pricing_in_the_planner_is_the_hand_formula() -> None:
    c = _catalog()
    pricing = Pricing(basis="owned", server_price_usd=300_000, usd_per_kwh=0.12)
    r = plan(
        c.model("llama-3-8b"),
        [c.hardware("dgx-h100")],
        ["fp8"],
        2000,
        200,
        200.0,
        Limits(ttft_s=0.5),
        _est(),
        tps=[1],
        pps=[1],
        pricing=pricing,
    )
    p = r.chosen
    assert p is not None and p.cost_per_hour_usd is not None
    capex = 300_000 * p.servers / (4 * 8766)
    energy = 10.2 * p.servers * 1.3 * 0.12
    assert p.cost_per_hour_usd == pytest.approx(capex + energy)
    # more expensive electricity costs more, never less
    dearer = plan(
        c.model("llama-3-8b"),
        [c.hardware("dgx-h100")],
        ["fp8"],
        2000,
        200,
        200.0,
        Limits(ttft_s=0.5),
        _est(),
        tps=[1],
        pps=[1],
        pricing=Pricing(basis="owned", server_price_usd=300_000, usd_per_kwh=0.30),
    ).chosen
    assert dearer is not None and dearer.cost_per_hour_usd is not None
    assert dearer.cost_per_hour_usd - p.cost_per_hour_usd == pytest.approx(
        10.2 * p.servers * 1.3 * 0.18
    )
