"""A day of traffic: a fixed fleet sized for the busiest hour vs a fleet autoscaled every hour.

The day is 24 hourly mean rates λ_h (requests/s). Within an hour arrivals are Poisson (or
over-dispersed), so each hour is sized for its own burst, the percentile of its per-second
count (:func:`inferencesize.traffic.peak_rps`)::

    peak_h      = peak_rps(λ_h, percentile, dispersion)
    instances_h = max(min_instances, ceil(peak_h / rate))      rate = requests/s per instance
    servers_h   = instances packed onto nodes (packing.pack_servers)

* **fixed fleet**: ``max_h instances_h`` instances run all 24 hours (that is the plan for the
  busiest hour);
* **autoscaled**: ``instances_h`` run in hour h, so GPU-hours/day = Σ_h instances_h · gpus per
  instance.

The per-instance rate is the chosen plan's operating point (it depends on the latency limits,
not on the traffic), so the same candidate serves every hour; scaling is instant at hour
boundaries (no warm-up modelled).

Cost per day: rented (cloud) GPUs are paid per hour used, so autoscaling saves in proportion to
GPU-hours. Owned GPUs are bought for the busiest hour either way, so autoscaling an owned fleet
only saves the energy of the servers switched off: capital cost is 24 h of the fixed fleet.
Energy counts servers at their maximum power (an upper bound, more so for a fixed fleet idling
at night). Requests and tokens per day are the profile's means: Σ_h λ_h · 3600 (· ISL, OSL).

``requests_per_day`` with ``peak_hour_share`` s gives λ = s · R / 3600 in the busiest hour and
(1 − s) · R / (23 · 3600) in each other hour (the flattest day with that peak). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from inferencesize.economics import (
    Pricing,
    fleet_it_watts,
    hourly_cost,
    server_power,
)
from inferencesize.packing import instances_for, pack_servers
from inferencesize.specs import GpuSpec, SystemSpec
from inferencesize.traffic import peak_rps
from inferencesize.units import HOURS_PER_DAY, KW, SECONDS_PER_HOUR


def profile_from_daily(requests_per_day: float, peak_hour_share: float) -> list[float]:
    """24 hourly mean rates (req/s): hour 0 carries the peak share, the rest is even.

    Raises ValueError for a share outside [1/24, 1] or a non-positive volume.
    """
    if requests_per_day <= 0:
        raise ValueError(f"requests_per_day must be > 0 (got {requests_per_day})")
    if not 1 / HOURS_PER_DAY - 1e-12 <= peak_hour_share <= 1:
        raise ValueError(f"peak_hour_share must be in [1/24, 1] (got {peak_hour_share})")
    peak = peak_hour_share * requests_per_day / SECONDS_PER_HOUR
    rest = (1 - peak_hour_share) * requests_per_day / ((HOURS_PER_DAY - 1) * SECONDS_PER_HOUR)
    return [peak] + [rest] * (HOURS_PER_DAY - 1)


def busiest_hour_peak_rps(
    hourly_rps: Sequence[float], percentile: float = 0.95, dispersion: float = 0.0
) -> float:
    """The per-second peak of the busiest hour: what the fixed fleet is sized for."""
    return peak_rps(max(hourly_rps), percentile, dispersion=dispersion)


@dataclass(frozen=True)
class Hour:
    """One hour of the autoscaled fleet."""

    hour: int
    mean_rps: float
    peak_rps: float
    instances: int
    gpus: int
    servers: int
    cost_usd: float | None  # this hour's cost of the autoscaled fleet
    energy_kwh: float | None


@dataclass(frozen=True)
class DailyPlan:
    """Fixed vs autoscaled fleet for one day of traffic with one candidate."""

    hours: list[Hour]
    requests_per_day: float
    input_tokens_per_day: float
    output_tokens_per_day: float
    fixed_instances: int
    fixed_gpus: int
    fixed_servers: int
    fixed_gpu_hours: float
    fixed_cost_usd: float | None
    fixed_energy_kwh: float | None
    autoscaled_gpu_hours: float
    autoscaled_server_hours: float
    autoscaled_cost_usd: float | None
    autoscaled_energy_kwh: float | None
    cost_basis: str | None

    @property
    def gpu_hours_saved(self) -> float:
        """Fraction of the fixed fleet's GPU-hours autoscaling saves."""
        return 1.0 - self.autoscaled_gpu_hours / self.fixed_gpu_hours

    def usd_per_million_tokens(self, autoscaled: bool) -> float | None:
        """Day cost / (input + output tokens of the day) · 1e6."""
        cost = self.autoscaled_cost_usd if autoscaled else self.fixed_cost_usd
        tokens = self.input_tokens_per_day + self.output_tokens_per_day
        if cost is None or tokens <= 0:
            return None
        return cost / tokens * 1e6


def daily_plan(
    hourly_rps: Sequence[float],
    rate_per_instance: float,
    gpus_per_instance: int,
    gpus_per_node: int,
    isl: float,
    osl: float,
    *,
    gpu: GpuSpec,
    system: SystemSpec | None,
    pricing: Pricing | None = None,
    percentile: float = 0.95,
    dispersion: float = 0.0,
    min_instances: int = 1,
) -> DailyPlan:
    """Size every hour of the day with one candidate (see the module docstring)."""
    if len(hourly_rps) != HOURS_PER_DAY:
        raise ValueError(f"hourly_rps needs 24 values (got {len(hourly_rps)})")
    if rate_per_instance <= 0:
        raise ValueError(f"rate_per_instance must be > 0 (got {rate_per_instance})")
    if min_instances < 0:
        raise ValueError(f"min_instances must be >= 0 (got {min_instances})")
    pricing = pricing or Pricing()
    node_power = server_power(gpu, system, gpus_per_node, pricing.server_power_w)

    def it_watts(gpus: int, servers: int) -> float | None:
        if node_power is None:
            return None
        return fleet_it_watts(node_power, servers, gpus, gpus_per_node)

    def size(mean: float) -> tuple[float, int]:
        peak = peak_rps(mean, percentile, dispersion=dispersion) if mean > 0 else 0.0
        return peak, instances_for(peak, rate_per_instance, min_instances)

    sized = [size(m) for m in hourly_rps]
    fixed_instances = max(max(n for _, n in sized), 1)
    fixed_gpus = fixed_instances * gpus_per_instance
    fixed_servers = pack_servers(fixed_instances, gpus_per_instance, gpus_per_node)
    fixed_w = it_watts(fixed_gpus, fixed_servers)
    fixed_hour = hourly_cost(pricing, gpu, system, fixed_gpus, fixed_servers, fixed_w)

    hours: list[Hour] = []
    for h, (mean, (peak, n)) in enumerate(zip(hourly_rps, sized, strict=True)):
        gpus = n * gpus_per_instance
        servers = pack_servers(n, gpus_per_instance, gpus_per_node) if n else 0
        w = it_watts(gpus, servers)
        cost: float | None = None
        if fixed_hour is not None:
            if n == 0:
                cost = fixed_hour.capex_usd_per_hour if fixed_hour.basis == "owned" else 0.0
            else:
                hc = hourly_cost(pricing, gpu, system, gpus, servers, w)
                assert hc is not None
                # owned: the machines for the busiest hour are paid for all day
                cost = (
                    fixed_hour.capex_usd_per_hour + hc.energy_usd_per_hour
                    if hc.basis == "owned"
                    else hc.usd_per_hour
                )
        energy = w / KW if w is not None else None
        hours.append(Hour(h, mean, peak, n, gpus, servers, cost, energy))

    requests = sum(hourly_rps) * SECONDS_PER_HOUR
    costs = [x.cost_usd for x in hours]
    energies = [x.energy_kwh for x in hours]
    return DailyPlan(
        hours=hours,
        requests_per_day=requests,
        input_tokens_per_day=requests * isl,
        output_tokens_per_day=requests * osl,
        fixed_instances=fixed_instances,
        fixed_gpus=fixed_gpus,
        fixed_servers=fixed_servers,
        fixed_gpu_hours=fixed_gpus * float(HOURS_PER_DAY),
        fixed_cost_usd=fixed_hour.usd_per_hour * HOURS_PER_DAY if fixed_hour else None,
        fixed_energy_kwh=fixed_w / KW * HOURS_PER_DAY if fixed_w is not None else None,
        autoscaled_gpu_hours=float(sum(x.gpus for x in hours)),
        autoscaled_server_hours=float(sum(x.servers for x in hours)),
        autoscaled_cost_usd=None if any(c is None for c in costs) else sum(c or 0 for c in costs),
        autoscaled_energy_kwh=None
        if any(e is None for e in energies)
        else sum(e or 0 for e in energies),
        cost_basis=fixed_hour.basis if fixed_hour else None,
    )
