"""Daily traffic: fixed fleet for the busiest hour vs hourly autoscaling (hand-computed)."""

from __future__ import annotations

import pytest
from shipped import catalog as _catalog

from inferencesize.daily import busiest_hour_peak_rps, daily_plan, profile_from_daily, unit_hours
from inferencesize.economics import Pricing
from inferencesize.traffic import peak_rps

# hour 0 at 64 req/s (Poisson 95th percentile 77), 23 hours at 7 req/s (percentile 12)
PROFILE = [64.0] + [7.0] * 23


def test_profile_from_requests_per_day() -> None:
    hours = profile_from_daily(2.4e6, 0.1)
    assert hours[0] == pytest.approx(240_000 / 3600)  # 66.67 req/s in the busiest hour
    assert hours[1:] == [pytest.approx(2.16e6 / 23 / 3600)] * 23  # 26.09 req/s elsewhere
    assert sum(hours) * 3600 == pytest.approx(2.4e6)
    flat = profile_from_daily(86_400, 1 / 24)  # an even day: 1 req/s every hour
    assert flat == [pytest.approx(1.0)] * 24
    with pytest.raises(ValueError, match="peak_hour_share"):
        profile_from_daily(1e6, 0.02)


def test_busiest_hour_peak_is_the_poisson_percentile() -> None:
    assert busiest_hour_peak_rps(PROFILE) == 77.0
    assert peak_rps(7.0) == 12.0


def _day(gpus_per_instance: int = 1, hardware: str = "aws-p5-48xlarge", **kw: object) -> object:
    gpu, system = _catalog().hardware(hardware)
    return daily_plan(
        PROFILE,
        rate_per_instance=10.0,
        gpus_per_instance=gpus_per_instance,
        gpus_per_node=8,
        isl=1000,
        osl=200,
        gpu=gpu,
        system=system,
        **kw,  # type: ignore[arg-type]
    )


def test_cloud_autoscaling_rents_whole_instances() -> None:
    d = _day()
    # busiest hour: ceil(77 / 10) = 8 instances; other hours ceil(12 / 10) = 2
    assert d.fixed_instances == 8
    assert [h.instances for h in d.hours] == [8] + [2] * 23
    # ... of one GPU each: 8 GPUs or 2 GPUs, both one 8-GPU p5.48xlarge, rented whole
    assert [h.units for h in d.hours] == [1] * 24
    assert d.fixed_gpu_hours == 8 * 24 == 192
    # one GPU at a time it would be 8 + 23 · 2 = 54 GPU-h; whole instances: the same 192
    assert d.autoscaled_gpu_hours == 192
    assert d.gpu_hours_saved == 0.0
    assert d.cost_basis == "cloud"
    assert d.fixed_cost_usd == pytest.approx(24 * 55.04)  # 1,320.96 $/day
    assert d.autoscaled_cost_usd == pytest.approx(24 * 55.04)
    # requests and tokens of the day
    requests = (64 + 23 * 7) * 3600
    assert d.requests_per_day == pytest.approx(requests)
    assert d.input_tokens_per_day == pytest.approx(requests * 1000)
    assert d.output_tokens_per_day == pytest.approx(requests * 200)
    per_m = d.usd_per_million_tokens(autoscaled=True)
    assert per_m == pytest.approx(24 * 55.04 / (requests * 1200) * 1e6)


def test_autoscaling_pays_the_scale_up_delay() -> None:
    # 4 GPUs per instance: busiest hour 8 instances = 32 GPUs = 4 instances rented; other
    # hours 2 instances = 8 GPUs = 1. Over the repeating day 3 instances start before hour 0,
    # each paid 600 s = 1/6 h ahead: 4 + 23 + 3/6 = 27.5 instance-hours.
    d = _day(gpus_per_instance=4)
    assert [h.units for h in d.hours] == [4] + [1] * 23
    assert d.fixed_gpu_hours == 4 * 8 * 24  # 768
    assert d.autoscaled_gpu_hours == pytest.approx(27.5 * 8)  # 220
    assert d.autoscaled_cost_usd == pytest.approx(27.5 * 55.04)  # 1,513.60 $
    assert d.fixed_cost_usd == pytest.approx(4 * 24 * 55.04)  # 5,283.84 $
    assert d.gpu_hours_saved == pytest.approx(1 - 220 / 768)
    # the warm-up is paid in the hour before the one it serves (hour 23 here)
    assert d.hours[23].cost_usd == pytest.approx((1 + 3 / 6) * 55.04)
    instant = _day(gpus_per_instance=4, scale_up_delay_s=0.0)
    assert instant.autoscaled_gpu_hours == 27 * 8
    assert unit_hours([4] + [1] * 23, 3600.0) == 27 + 3  # a whole hour ahead
    # a longer start never costs less
    slow = _day(gpus_per_instance=4, scale_up_delay_s=1800.0)
    assert slow.autoscaled_cost_usd > d.autoscaled_cost_usd > instant.autoscaled_cost_usd


def test_owned_autoscaling_saves_only_energy() -> None:
    # dgx-a100-320gb: 199,000 $ per server, 6.5 kW; 4 GPUs per instance
    d = _day(
        gpus_per_instance=4,
        hardware="dgx-a100-320gb",
        pricing=Pricing(basis="owned"),
        scale_up_delay_s=0.0,
    )
    assert d.fixed_servers == 4  # 8 instances × 4 GPUs on 8-GPU servers
    assert [h.servers for h in d.hours] == [4] + [1] * 23
    capex = 199_000 * 4 / (4 * 8766)  # 22.70 $/h, paid all day either way
    kwh_cost = 6.5 * 1.3 * 0.10  # per server-hour: 0.845 $
    assert d.fixed_cost_usd == pytest.approx(24 * (capex + 4 * kwh_cost))  # 625.95 $
    assert d.autoscaled_cost_usd == pytest.approx(24 * capex + (4 + 23) * kwh_cost)  # 567.65 $
    assert d.fixed_energy_kwh == pytest.approx(24 * 4 * 6.5)
    assert d.autoscaled_energy_kwh == pytest.approx((4 + 23) * 6.5)
    assert d.autoscaled_cost_usd > 0.9 * d.fixed_cost_usd  # owned: small saving
    cloud = _day(gpus_per_instance=4)
    assert cloud.autoscaled_cost_usd < 0.3 * cloud.fixed_cost_usd  # rented: big saving


def test_spare_servers_run_all_day() -> None:
    # N + 1: one more p5 instance in every hour and in the fixed fleet
    d = _day(gpus_per_instance=4, pricing=Pricing(spare_servers=1), scale_up_delay_s=0.0)
    assert [h.units for h in d.hours] == [5] + [2] * 23
    assert d.fixed_units == 5
    assert d.autoscaled_gpu_hours == (5 + 23 * 2) * 8


def test_flat_day_saves_nothing_and_min_instances_floor() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    flat = daily_plan([20.0] * 24, 10.0, 1, 8, 100, 100, gpu=gpu, system=system)
    assert flat.autoscaled_gpu_hours == flat.fixed_gpu_hours
    quiet = [30.0] + [0.0] * 23
    kw = {"gpu": gpu, "system": system, "scale_up_delay_s": 0.0}
    d0 = daily_plan(quiet, 10.0, 1, 8, 100, 100, min_instances=0, **kw)  # type: ignore[arg-type]
    d2 = daily_plan(quiet, 10.0, 1, 8, 100, 100, min_instances=2, **kw)  # type: ignore[arg-type]
    top = d0.hours[0].instances
    assert top == -(-peak_rps(30.0) // 10)  # ceil(40 / 10) = 4
    assert d0.autoscaled_gpu_hours == 8  # 4 GPUs in use, one whole 8-GPU instance, one hour
    assert d2.autoscaled_gpu_hours == 24 * 8  # 2 instances kept: one 8-GPU instance all day
    assert d0.fixed_gpu_hours == d2.fixed_gpu_hours == 24 * 8


def test_more_traffic_never_needs_fewer_gpu_hours() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    base = daily_plan(PROFILE, 10.0, 1, 8, 100, 100, gpu=gpu, system=system)
    more = daily_plan([x * 1.5 for x in PROFILE], 10.0, 1, 8, 100, 100, gpu=gpu, system=system)
    assert more.autoscaled_gpu_hours >= base.autoscaled_gpu_hours
    assert more.fixed_gpu_hours >= base.fixed_gpu_hours
