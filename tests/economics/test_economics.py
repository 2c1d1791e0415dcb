"""Economics: cost per hour (cloud and owned), power, per-token cost and energy, objectives."""

from __future__ import annotations

import json

import pytest
from loose_plan import plan_loose
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.economics import (
    HOURS_PER_YEAR,
    WALL_PER_BOARD,
    Fleet,
    Pricing,
    fleet_it_watts,
    fleet_of,
    hourly_cost,
    input_share,
    owned_usd_per_hour,
    require_figure,
    sales_unit,
    server_power,
    token_economics,
)
from inferencesize.errors import InputError
from inferencesize.latency import prefill
from inferencesize.planner import Limits, PlanResult
from inferencesize.specs import SystemSpec


def test_hours_per_year_is_365_25_days() -> None:
    assert HOURS_PER_YEAR == 365.25 * 24


def test_owned_cost_hand_computed() -> None:
    # 4 servers at 300,000 $ over 4 years: 1.2e6 / (4 · 8766) = 34.2231 $/h
    # 40.8 kW IT · PUE 1.3 · 0.12 $/kWh = 6.3648 $/h
    capex, energy = owned_usd_per_hour(300_000, 4, 4.0, 40_800, 1.3, 0.12)
    assert capex == pytest.approx(1.2e6 / (4 * 8766))
    assert capex == pytest.approx(34.2231, abs=1e-4)
    assert energy == pytest.approx(6.3648)


def _fleet(system: SystemSpec | None, servers: int, gpus: int) -> Fleet:
    return fleet_of(sales_unit(system, 8), servers, gpus)


def test_cloud_cost_rents_whole_instances_without_energy() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    # 13 GPUs on 2 nodes: p5.48xlarge rents only as 8 GPUs, so 2 × 8 × 6.88 = 110.08 $/h
    cost = hourly_cost(Pricing(), gpu, system, _fleet(system, 2, 13), it_watts=9100.0)
    assert cost is not None and cost.basis == "cloud"
    assert cost.usd_per_hour == pytest.approx(2 * 8 * 6.88)
    assert cost.usd_per_unit_hour == pytest.approx(55.04)  # the instance's published rate
    assert cost.energy_usd_per_hour == 0.0
    assert cost.price.startswith("2 × 55.04 $/h per 8-GPU instance")
    assert "2026-11-09" in cost.price  # the price's date travels with it


def test_lambda_b200_ten_gpus_rent_two_servers() -> None:
    # The case: 10 GPUs on 8-GPU Lambda B200 servers rent 2 × 8 = 16 GPUs,
    # 16 × 6.69 = 107.04 $/h (not 10 × 6.69 = 66.90), 62.5 % of what is paid for in use.
    gpu, system = _catalog().hardware("lambda-8x-b200")
    fleet = _fleet(system, 2, 10)
    cost = hourly_cost(Pricing(), gpu, system, fleet, None)
    assert cost is not None and cost.usd_per_hour == pytest.approx(107.04)
    assert (fleet.units, fleet.gpus_paid, fleet.utilisation) == (2, 16, 0.625)


def test_given_rent_overrides_the_catalog() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    cost = hourly_cost(Pricing(usd_per_gpu_hour=2.0), gpu, system, _fleet(system, 2, 10), None)
    assert cost is not None and cost.usd_per_hour == pytest.approx(2 * 8 * 2.0)


def test_auto_uses_a_purchase_price_when_no_rent_is_known() -> None:
    gpu, system = _catalog().hardware("dgx-a100-320gb")  # 199,000 $, 6.5 kW, no rent
    cost = hourly_cost(Pricing(), gpu, system, _fleet(system, 2, 16), it_watts=13_000.0)
    assert cost is not None and cost.basis == "owned"
    capex = 199_000 * 2 / (4 * 8766)  # default 4 years
    energy = 13.0 * 1.3 * 0.10  # default PUE 1.3, 0.10 $/kWh
    assert cost.usd_per_hour == pytest.approx(capex + energy)


def test_no_price_means_no_cost_and_forced_basis_names_the_field() -> None:
    gpu, system = _catalog().hardware("dgx-h100")  # no price in the catalog
    fleet = _fleet(system, 1, 8)
    assert hourly_cost(Pricing(), gpu, system, fleet, 10_200.0) is None
    with pytest.raises(InputError, match="usd_per_gpu_hour"):
        hourly_cost(Pricing(basis="cloud"), gpu, system, fleet, 10_200.0)
    with pytest.raises(InputError, match="server_price_usd"):
        hourly_cost(Pricing(basis="owned"), gpu, system, fleet, 10_200.0)


def test_nvl72_is_bought_as_a_rack_of_18_trays() -> None:
    gpu, system = _catalog().hardware("gb200-nvl72")
    unit = sales_unit(system, system.gpus_per_node if system else 0)
    assert (unit.kind, unit.gpus, unit.nodes) == ("rack", 72, 18)
    # 16 GPUs on 4 trays: one rack paid for and powered (18 trays × 6.67 kW = 120 kW)
    fleet = fleet_of(unit, 4, 16)
    assert (fleet.units, fleet.gpus_paid, fleet.nodes_paid) == (1, 72, 18)
    assert fleet.utilisation == pytest.approx(16 / 72)
    p = server_power(gpu, system, 4)
    assert p is not None and fleet_it_watts(p, fleet) == pytest.approx(18 * 6670.0)
    # 19 trays spill into a second rack
    assert fleet_of(unit, 19, 76).units == 2


def test_server_power_one_basis() -> None:
    c = _catalog()
    gpu, system = c.hardware("dgx-h100")
    p = server_power(gpu, system, 8)
    assert p is not None and (p.watts, p.basis) == (10_200.0, "system")
    assert p.board_watts == 8 * 700.0  # GPU board power shown beside it
    # no published wall power: 1.8 × the boards (DGX H100 10.2 kW / 5.6 kW = 1.82,
    # DGX B200 14.3 kW / 8 kW = 1.79)
    assert 10_200 / 5_600 == pytest.approx(WALL_PER_BOARD, abs=0.03)
    assert 14_300 / 8_000 == pytest.approx(WALL_PER_BOARD, abs=0.03)
    gpu, system = c.hardware("hgx-h100")
    e = server_power(gpu, system, 8)
    assert e is not None and e.basis == "estimate"
    assert e.watts == pytest.approx(1.8 * 8 * 700)  # 10,080 W
    assert "1.8 × GPU board power" in e.text()
    # every node of the units paid for, whole servers: 13 GPUs on 2 servers = 2 servers' power
    assert fleet_it_watts(e, _fleet(system, 2, 13)) == pytest.approx(2 * 10_080.0)
    g = server_power(gpu, system, 8, given_w=7_000.0)
    assert g is not None and (g.watts, g.basis) == (7_000.0, "given")


def test_every_shipped_system_has_wall_power_and_states_its_prices() -> None:
    c = _catalog()
    for ident, system in c.systems.items():
        gpu = c.gpus[system.gpu]
        text = system.not_published or ""
        power = server_power(gpu, system, system.gpus_per_node)
        assert power is not None or "power" in text, ident
        buy, rent = system.price_usd, system.price_usd_per_gpu_hour
        if buy is not None or rent is not None:
            assert system.price_date and system.price_source, ident
        if buy is None or rent is None:  # a missing figure is said plainly
            if buy is None:
                assert "purchase" in text, ident
            if rent is None:
                assert "rent" in text, ident


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
    return plan_loose(
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
    instances_rented = -(-p.servers // 1)  # one 8-GPU instance per node
    assert p.cost_per_hour_usd == pytest.approx(55.04 * instances_rented)
    assert p.economics.cost.usd_per_hour == p.cost_per_hour_usd
    # no published power for the AWS instance: 1.8 × 8 × 700 W per instance rented
    assert p.power_watts == pytest.approx(1.8 * 8 * 700.0 * instances_rented)
    # one $/M output tokens: the plan's figure is the economics' one
    assert p.cost_per_million_output_tokens_usd == p.economics.tokens.usd_per_million_output
    assert p.economics.facility_watts == pytest.approx(1.3 * p.power_watts)
    # input share = per-instance rate × one prompt's time in a prompt step of ⌊8192 / 1000⌋ = 8
    c = _catalog()
    res = _est().resolve(p.candidate, 1300)
    assert res.deployment is not None
    t = float(prefill(res.deployment, 8, 1000).total_s) / 8
    assert p.economics.tokens.input_share == pytest.approx(p.rate * t)
    assert 0.0 < p.economics.tokens.input_share < 1.0
    assert c is not None


def test_a_batched_prompt_step_leaves_output_tokens_their_share() -> None:
    """gpt-oss-120b on one B200 at 35 req/s per instance: one 2,000-token prompt alone takes
    about 30 ms (the experts' weights read once per step), so rate × that put the whole
    instance on input (share 1: output tokens at $0 and 0 J). Prompts are batched four to a
    step (⌊8192 / 2000⌋), and the share is the rate × a quarter of that step."""
    from typer.testing import CliRunner

    from inferencesize.cli import app

    args = ["plan", "default", "--model", "gpt-oss-120b", "--hardware", "dgx-b200", "-f", "json"]
    got = CliRunner().invoke(app, args)
    assert got.exit_code == 0, got.output
    e = json.loads(got.stdout)["plan"]["economics"]
    assert 0.0 < e["input_share"] < 1.0
    assert e["joules_per_output_token"] > e["joules_per_input_token"] > 0.0


def test_owned_pricing_in_the_planner_is_the_hand_formula() -> None:
    c = _catalog()
    pricing = Pricing(basis="owned", server_price_usd=300_000, usd_per_kwh=0.12)
    r = plan_loose(
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
    dearer = plan_loose(
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


def test_power_compares_like_with_like() -> None:
    # The case: 10 MI300X used to read "7.5 kW" (10 × 750 W boards) against a whole
    # DGX B200 at 14.3 kW. On one basis, wall power of whole servers: 10 MI300X fill 2 8-GPU
    # servers, 2 × 1.8 × 8 × 750 W = 21.6 kW, more than the one DGX B200.
    c = _catalog()
    gpu, system = c.hardware("mi300x-8x")
    mi = server_power(gpu, system, 8)
    assert mi is not None and mi.basis == "estimate"
    assert fleet_it_watts(mi, _fleet(system, 2, 10)) == pytest.approx(21_600.0)
    gpu, system = c.hardware("dgx-b200")
    b = server_power(gpu, system, 8)
    assert b is not None and fleet_it_watts(b, _fleet(system, 1, 8)) == pytest.approx(14_300.0)


def test_cost_objective_without_any_price_is_an_error_naming_them() -> None:
    with pytest.raises(InputError) as err:
        _plan("cost", ["dgx-h100", "mi300x-8x"])
    message = str(err.value)
    assert "dgx-h100" in message and "mi300x-8x" in message and "\n" not in message
    # a given price makes them comparable
    r = _plan("cost", ["dgx-h100"], pricing=Pricing(usd_per_gpu_hour=2.0))
    assert r.chosen is not None and r.chosen.cost_per_hour_usd is not None


def test_power_objective_without_any_power_is_an_error() -> None:
    c = _catalog()
    with pytest.raises(InputError, match="tpu-v5e-pod"):
        require_figure("power", Pricing(), [c.hardware("tpu-v5e-pod")])
    require_figure("power", Pricing(server_power_w=5_000.0), [c.hardware("tpu-v5e-pod")])


def test_spare_servers_are_in_the_plan_and_its_cost() -> None:
    base = _plan("servers", ["aws-p5-48xlarge"]).chosen
    spare = _plan("servers", ["aws-p5-48xlarge"], pricing=Pricing(spare_servers=1)).chosen
    assert base is not None and spare is not None
    assert spare.servers == base.servers + 1
    assert spare.gpus == base.gpus  # a spare runs no instance
    assert spare.cost_per_hour_usd == pytest.approx(base.cost_per_hour_usd + 55.04)
    assert spare.economics is not None and spare.economics.spare_servers == 1
