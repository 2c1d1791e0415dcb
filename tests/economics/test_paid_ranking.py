"""Plans are ranked, shown and held to a budget on what is paid for: whole units (a GB200 NVL72
rack is 72 GPUs on 18 trays), their price and their wall power; the alternatives compare the
hardware asked about."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from loose_plan import plan_loose
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.economics import Budget, Pricing, objective_key
from inferencesize.planner import Limits, Plan, PlanResult, alternatives, rank

# --------------------------------------------------------------------------- the rule


def test_objective_key_counts_whole_units_not_gpus_used() -> None:
    # 3 GPUs of a GB200 NVL72 rack: 18 trays, 72 GPUs, 18 × 6.67 kW = 120.06 kW paid for;
    # 4 GPUs of a DGX B200: 1 server, 8 GPUs, 14.3 kW. Fewer GPUs used, far more paid for.
    rack = (18, 72, None, 18 * 6_670.0, 3)
    dgx = (1, 8, None, 14_300.0, 4)
    for objective in ("servers", "gpus", "power"):
        r = objective_key(objective, *rack[:4], gpus_used=rack[4])  # type: ignore[arg-type]
        d = objective_key(objective, *dgx[:4], gpus_used=dgx[4])  # type: ignore[arg-type]
        assert d < r, objective


def test_objective_key_breaks_a_tie_on_what_is_paid_by_gpus_used() -> None:
    # both fill one 8-GPU server at the same price and power: the one using fewer GPUs first
    four = objective_key("servers", 1, 8, 53.52, 14_400.0, gpus_used=4)
    six = objective_key("servers", 1, 8, 53.52, 14_400.0, gpus_used=6)
    assert four < six
    # price decides before the GPUs used: 16 GPUs at 64 $/h beat 16 GPUs at 110 $/h
    assert objective_key("servers", 2, 16, 64.0, 20_160.0, 16) < objective_key(
        "servers", 2, 16, 110.0, 20_160.0, 8
    )


def test_budget_overruns_hand_computed() -> None:
    b = Budget(max_gpus=8, max_servers=2, max_cost_per_hour_usd=100.0, max_power_w=20_000.0)
    assert b.holds(1, 8, 53.52, 14_300.0)
    # a rack: 72 GPUs > 8, 18 trays > 2, 120.06 kW > 20 kW; its unknown price cannot be shown
    # within 100 $/h
    over = b.overruns(18, 72, None, 120_060.0)
    assert [k for k, _, _ in over] == ["max_gpus", "max_servers", "max_cost_per_hour_usd",
                                       "max_power_kw"]  # fmt: skip
    assert over[0][1:] == (72.0, 8) and over[3][1:] == (120_060.0, 20_000.0)
    assert Budget().holds(10**6, 10**6, None, None)  # no cap, nothing over
    assert Budget(max_gpus=8).holds(1, 8, None, None)  # a figure without a cap is not asked


def _fake(hardware: str, label: str) -> Any:
    return SimpleNamespace(candidate=SimpleNamespace(hardware_id=hardware, label=lambda: label))


def test_alternatives_show_each_other_hardware_first() -> None:
    ranked = [
        _fake("lambda-8x-b200", "b200 fp4 tp1"),
        _fake("lambda-8x-b200", "b200 fp4 tp2"),
        _fake("lambda-8x-b200", "b200 fp8 tp1"),
        _fake("lambda-8x-h100", "h100 fp8 tp2"),
        _fake("lambda-8x-h100", "h100 fp8 tp4"),
        _fake("aws-p5-48xlarge", "aws fp8 tp2"),
    ]
    labels = [p.candidate.label() for p in alternatives(ranked, 4)]
    assert labels == ["h100 fp8 tp2", "aws fp8 tp2", "b200 fp4 tp2", "b200 fp8 tp1"]
    assert [p.candidate.label() for p in alternatives(ranked, 1)] == ["h100 fp8 tp2"]
    assert alternatives(ranked, 0) == [] and alternatives([], 3) == []
    # every plan but the chosen one, each once
    assert len(alternatives(ranked, 10)) == 5


# --------------------------------------------------------------------------- the planner


def _gpt_oss(hardware: list[str], **kw: Any) -> PlanResult:
    c = _catalog()
    return plan_loose(
        c.model("gpt-oss-120b"),
        [c.hardware(h) for h in hardware],
        ["fp8"],
        2000,
        200,
        200.0,
        Limits(ttft_s=0.5),
        _est(),
        tps=[1],
        pps=[1],
        **kw,
    )


@pytest.mark.parametrize("objective", ["servers", "gpus", "power"])
def test_one_dgx_b200_ranks_above_a_whole_nvl72_rack(objective: str) -> None:
    r = _gpt_oss(["dgx-b200", "gb200-nvl72"], objective=objective, top=3)
    assert r.chosen is not None and r.chosen.candidate.hardware_id == "dgx-b200"
    rack = next(p for p in r.feasible if p.candidate.hardware_id == "gb200-nvl72")
    # the rack's plan uses fewer GPUs but pays for the whole rack
    assert rack.gpus <= r.chosen.gpus
    assert rack.gpus_paid == 72 and rack.servers_paid == 18
    assert r.chosen.gpus_paid == 8 and r.chosen.servers_paid == 1
    assert r.chosen.power_watts is not None and rack.power_watts is not None
    assert r.chosen.power_watts < rack.power_watts


def _cloud(**kw: Any) -> PlanResult:
    c = _catalog()
    return plan_loose(
        c.model("llama-3.1-70b"),
        [c.hardware(h) for h in ("aws-p5-48xlarge", "lambda-8x-h100", "dgx-b200")],
        ["fp8"],
        1000,
        300,
        28.0,
        Limits(ttft_s=1.0, itl_s=0.05),
        _est(),
        **kw,
    )


def test_a_budget_chooses_the_best_plan_within_it() -> None:
    free = _cloud(top=100)
    assert free.chosen is not None
    # the unpriced DGX B200 needs the fewest servers; no price cannot be shown within a cost cap
    assert free.chosen.candidate.hardware_id == "dgx-b200"
    cap = 200.0  # 4 Lambda H100 servers rent for 127.68 $/h, 4 AWS ones for 220.16 $/h
    budget = Budget(max_cost_per_hour_usd=cap)
    held = _cloud(top=0, budget=budget)
    within = [p for p in free.feasible if p.within(budget)]
    assert within and held.chosen is not None
    assert held.chosen.candidate.label() == rank(within)[0].candidate.label()
    assert held.chosen.cost_per_hour_usd is not None and held.chosen.cost_per_hour_usd <= cap
    # no plan within: the best plan over it, as without a budget
    none = _cloud(top=0, budget=Budget(max_gpus=1))
    assert none.chosen is not None
    assert none.chosen.candidate.label() == free.chosen.candidate.label()


def _best_per_hardware(plans: list[Plan]) -> dict[str, str]:
    best: dict[str, str] = {}
    for p in plans:
        best.setdefault(p.candidate.hardware_id, p.candidate.label())
    return best


def test_pruned_open_loop_search_keeps_each_hardware_best() -> None:
    """Branch and bound must still find the best plan of every hardware option (they are
    shown first): the same as the exhaustive search's."""
    c = _catalog()
    args: tuple[Any, ...] = (
        c.model("llama-3.1-70b"),
        [c.hardware(h) for h in ("lambda-8x-h100", "lambda-8x-b200", "aws-p5-48xlarge")],
        None,
        1000,
        500,
        28.0,
        Limits(ttft_s=1.0, itl_s=0.05),
        _est(),
    )
    kw: dict[str, Any] = dict(arrivals="poisson", objective="cost", top=2)
    pruned = plan_loose(*args, prune=True, **kw)
    full = plan_loose(*args, prune=False, **kw)
    assert pruned.chosen is not None and full.chosen is not None
    assert pruned.chosen.candidate.label() == full.chosen.candidate.label()
    shown = [p.candidate.label() for p in pruned.alternatives]
    assert shown == [p.candidate.label() for p in full.alternatives]
    # one row per other hardware option: the three clouds are all on the answer
    hardware = {pruned.chosen.candidate.hardware_id}
    hardware |= {p.candidate.hardware_id for p in pruned.alternatives}
    assert hardware == {"lambda-8x-h100", "lambda-8x-b200", "aws-p5-48xlarge"}
    best = _best_per_hardware(full.feasible)
    assert all(best[p.candidate.hardware_id] == p.candidate.label() for p in pruned.alternatives)
    assert any(r.why.kind.value == "pruned" for r in pruned.rejected)  # it did prune


def test_a_rack_plan_is_priced_and_powered_whole() -> None:
    r = _gpt_oss(["gb200-nvl72"], pricing=Pricing(usd_per_gpu_hour=10.0))
    p = r.chosen
    assert p is not None and p.cost_per_hour_usd is not None
    assert p.cost_per_hour_usd == pytest.approx(72 * 10.0)  # 72 GPUs rented, not p.gpus
    assert p.power_watts == pytest.approx(18 * 6_670.0)


@pytest.mark.parametrize(
    "budget",
    [
        Budget(max_cost_per_hour_usd=200.0),  # the unpriced DGX B200 cannot be shown within
        Budget(max_cost_per_hour_usd=60.0),  # no priced plan that cheap: none within
        Budget(max_gpus=4),  # none within: the best plan, over it
    ],
)
def test_pruned_search_holds_the_budget_as_the_exhaustive_one(budget: Budget) -> None:
    """Within-budget first is monotone in the instance count (more instances never get back
    within), so branch and bound finds the exhaustive search's best plan within the budget."""
    c = _catalog()
    args: tuple[Any, ...] = (
        c.model("llama-3.1-70b"),
        [c.hardware(h) for h in ("dgx-b200", "lambda-8x-h100", "aws-p5-48xlarge")],
        ["fp8"],
        1000,
        500,
        28.0,
        Limits(ttft_s=1.0, itl_s=0.05),
        _est(),
    )
    kw: dict[str, Any] = dict(arrivals="poisson", top=0)
    free = plan_loose(*args, prune=True, **kw)
    pruned = plan_loose(*args, prune=True, budget=budget, **kw)
    full = plan_loose(*args, prune=False, budget=budget, **kw)
    assert free.chosen is not None and pruned.chosen is not None and full.chosen is not None
    assert pruned.chosen.candidate.label() == full.chosen.candidate.label()
    within = full.chosen.within(budget)
    assert pruned.chosen.within(budget) == within
    # the budget changes the answer exactly when the best plan is over it
    moved = pruned.chosen.candidate.label() != free.chosen.candidate.label()
    assert moved == (within and not free.chosen.within(budget))
