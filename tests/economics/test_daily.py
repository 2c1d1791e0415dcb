"""Daily traffic: fixed fleet for the busiest hour vs hourly autoscaling (hand-computed)."""

from __future__ import annotations

import pytest
from shipped import catalog as _catalog

from inferencesize.daily import busiest_hour_peak_rps, daily_plan, profile_from_daily
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


def test_cloud_autoscaling_pays_only_the_gpu_hours_used() -> None:
    d = _day()
    # busiest hour: ceil(77 / 10) = 8 instances; other hours ceil(12 / 10) = 2
    assert d.fixed_instances == 8
    assert [h.instances for h in d.hours] == [8] + [2] * 23
    assert d.fixed_gpu_hours == 8 * 24 == 192
    assert d.autoscaled_gpu_hours == 8 + 23 * 2 == 54
    assert d.gpu_hours_saved == pytest.approx(1 - 54 / 192)  # 71.9 % fewer GPU-hours
    assert d.cost_basis == "cloud"
    assert d.fixed_cost_usd == pytest.approx(192 * 6.88)  # 1,320.96 $/day
    assert d.autoscaled_cost_usd == pytest.approx(54 * 6.88)  # 371.52 $/day
    # requests and tokens of the day
    requests = (64 + 23 * 7) * 3600
    assert d.requests_per_day == pytest.approx(requests)
    assert d.input_tokens_per_day == pytest.approx(requests * 1000)
    assert d.output_tokens_per_day == pytest.approx(requests * 200)
    per_m = d.usd_per_million_tokens(autoscaled=True)
    assert per_m == pytest.approx(54 * 6.88 / (requests * 1200) * 1e6)


def test_owned_autoscaling_saves_only_energy() -> None:
    # dgx-a100-320gb: 199,000 $ per server, 6.5 kW; 4 GPUs per instance
    d = _day(gpus_per_instance=4, hardware="dgx-a100-320gb", pricing=Pricing(basis="owned"))
    assert d.fixed_servers == 4  # 8 instances × 4 GPUs on 8-GPU servers
    assert [h.servers for h in d.hours] == [4] + [1] * 23
    capex = 199_000 * 4 / (4 * 8766)  # 22.70 $/h, paid all day either way
    kwh_cost = 6.5 * 1.3 * 0.10  # per server-hour: 0.845 $
    assert d.fixed_cost_usd == pytest.approx(24 * (capex + 4 * kwh_cost))  # 625.95 $
    assert d.autoscaled_cost_usd == pytest.approx(24 * capex + (4 + 23) * kwh_cost)  # 567.65 $
    assert d.fixed_energy_kwh == pytest.approx(24 * 4 * 6.5)
    assert d.autoscaled_energy_kwh == pytest.approx((4 + 23) * 6.5)
    assert d.autoscaled_cost_usd > 0.9 * d.fixed_cost_usd  # owned: small saving
    cloud = _day()
    assert cloud.autoscaled_cost_usd < 0.3 * cloud.fixed_cost_usd  # rented: big saving


def test_flat_day_saves_nothing_and_min_instances_floor() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    flat = daily_plan([20.0] * 24, 10.0, 1, 8, 100, 100, gpu=gpu, system=system)
    assert flat.autoscaled_gpu_hours == flat.fixed_gpu_hours
    quiet = [30.0] + [0.0] * 23
    d0 = daily_plan(quiet, 10.0, 1, 8, 100, 100, gpu=gpu, system=system, min_instances=0)
    d2 = daily_plan(quiet, 10.0, 1, 8, 100, 100, gpu=gpu, system=system, min_instances=2)
    top = d0.hours[0].instances
    assert top == -(-peak_rps(30.0) // 10)  # ceil(40 / 10) = 4
    assert d0.autoscaled_gpu_hours == top
    assert d2.autoscaled_gpu_hours == top + 23 * 2
    assert d0.fixed_gpu_hours == d2.fixed_gpu_hours == 24 * top


def test_more_traffic_never_needs_fewer_gpu_hours() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    base = daily_plan(PROFILE, 10.0, 1, 8, 100, 100, gpu=gpu, system=system)
    more = daily_plan([x * 1.5 for x in PROFILE], 10.0, 1, 8, 100, 100, gpu=gpu, system=system)
    assert more.autoscaled_gpu_hours >= base.autoscaled_gpu_hours
    assert more.fixed_gpu_hours >= base.fixed_gpu_hours
