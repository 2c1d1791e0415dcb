"""A day of traffic: a fixed fleet sized for the busiest hour vs a fleet autoscaled every hour,
both in whole units as they are rented or bought (:func:`inferencesize.economics.sales_unit`).

The day is 24 hourly mean rates λ_h (requests/s). Within an hour arrivals are Poisson (or
over-dispersed), so each hour is sized for its own burst, the percentile of its per-second
count (:func:`inferencesize.traffic.peak_rps`)::

    peak_h      = peak_rps(λ_h, percentile, dispersion)
    instances_h = max(min_instances, ceil(peak_h / rate))      rate = requests/s per instance
    servers_h   = instances packed onto nodes (packing.pack_servers) + k spares (N + k)
    units_h     = ceil(servers_h / nodes per unit)             whole servers, instances, racks

* **fixed fleet**: ``max_h units_h`` units run all 24 hours (the plan for the busiest hour);
* **autoscaled**: ``units_h`` units run in hour h. A unit takes ``scale_up_delay_s`` to start
  (boot, load the weights), so a unit added for hour h is started that long before the hour
  and paid from then::

      unit-hours/day = Σ_h units_h + Σ_h max(0, units_h − units_{h−1}) · delay / 3600 s

  (the day repeats: hour 23 precedes hour 0). GPU-hours paid = unit-hours · GPUs per unit.
  An 8-GPU instance holding 4 GPUs of instances is paid for 8.

The per-instance rate is the chosen plan's operating point (it depends on the latency limits,
not on the traffic), so the same candidate serves every hour.

Cost per day: rented (cloud) units are paid per unit-hour, so autoscaling saves in proportion to
unit-hours. Owned units are bought for the busiest hour either way, so autoscaling an owned
fleet only saves the energy of the units switched off: capital cost is 24 h of the fixed fleet.
Energy counts every node of a running unit at its maximum wall power (an upper bound, more so
for a fixed fleet idling at night). Requests and tokens per day are the profile's means:
Σ_h λ_h · 3600 (· ISL, OSL).

``requests_per_day`` with ``peak_hour_share`` s gives λ = s · R / 3600 in the busiest hour and
(1 − s) · R / (23 · 3600) in each other hour (the flattest day with that peak). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from inferencesize.economics import (
    Fleet,
    Pricing,
    fleet_it_watts,
    fleet_of,
    hourly_cost,
    sales_unit,
    server_power,
)
from inferencesize.packing import instances_for, pack_servers
from inferencesize.specs import GpuSpec, SystemSpec
from inferencesize.traffic import peak_rps
from inferencesize.units import HOURS_PER_DAY, KW, SECONDS_PER_HOUR

#: Time to start one more unit when autoscaling (boot, pull and load the weights), seconds:
#: an assumption, not a measurement; scenarios state their own as daily.scale_up_delay_s.
DEFAULT_SCALE_UP_DELAY_S = 600.0


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


def unit_hours(units: Sequence[int], scale_up_delay_s: float) -> float:
    """Unit-hours paid over a repeating day: each hour's units, plus every unit added at an
    hour boundary paid for ``scale_up_delay_s`` before it (see the module docstring)."""
    added = sum(max(0, units[h] - units[h - 1]) for h in range(len(units)))
    return float(sum(units)) + added * scale_up_delay_s / SECONDS_PER_HOUR


@dataclass(frozen=True)
class Hour:
    """One hour of the autoscaled fleet."""

    hour: int
    mean_rps: float
    peak_rps: float
    instances: int
    gpus: int  # GPUs running an instance
    servers: int  # nodes, spares included
    units: int  # units paid for (servers, instances, racks)
    cost_usd: float | None  # this hour's cost of the autoscaled fleet (warm-up included)
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
    fixed_units: int
    fixed_gpu_hours: float  # GPU-hours paid: whole units, 24 h
    fixed_cost_usd: float | None
    fixed_energy_kwh: float | None
    autoscaled_gpu_hours: float  # GPU-hours paid: whole units, warm-up included
    autoscaled_server_hours: float
    autoscaled_cost_usd: float | None
    autoscaled_energy_kwh: float | None
    cost_basis: str | None
    unit: str  # what a unit is: "8-GPU instance"
    scale_up_delay_s: float = 0.0

    @property
    def gpu_hours_saved(self) -> float:
        """Fraction of the fixed fleet's paid GPU-hours autoscaling saves."""
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
    scale_up_delay_s: float = DEFAULT_SCALE_UP_DELAY_S,
    instances_per_gpu: int = 1,
) -> DailyPlan:
    """Size every hour of the day with one candidate (see the module docstring);
    ``instances_per_gpu`` > 1: instances share GPUs (MIG slices, processes), whole GPUs
    counted."""
    if len(hourly_rps) != HOURS_PER_DAY:
        raise ValueError(f"hourly_rps needs 24 values (got {len(hourly_rps)})")
    if rate_per_instance <= 0:
        raise ValueError(f"rate_per_instance must be > 0 (got {rate_per_instance})")
    if min_instances < 0:
        raise ValueError(f"min_instances must be >= 0 (got {min_instances})")
    if not 0 <= scale_up_delay_s <= SECONDS_PER_HOUR:
        raise ValueError(f"scale_up_delay_s must be in [0, 3600] (got {scale_up_delay_s})")
    pricing = pricing or Pricing()
    unit = sales_unit(system, gpus_per_node)
    node_power = server_power(gpu, system, gpus_per_node, pricing.server_power_w)

    def fleet(n: int) -> Fleet:
        groups = -(-n // instances_per_gpu)  # GPUs (or GPU groups) the n instances occupy
        servers = pack_servers(groups, gpus_per_instance, gpus_per_node) + pricing.spare_servers
        return fleet_of(unit, servers if n else 0, groups * gpus_per_instance)

    def it_watts(f: Fleet) -> float | None:
        return fleet_it_watts(node_power, f) if node_power is not None else None

    def size(mean: float) -> tuple[float, int]:
        peak = peak_rps(mean, percentile, dispersion=dispersion) if mean > 0 else 0.0
        return peak, instances_for(peak, rate_per_instance, min_instances)

    sized = [size(m) for m in hourly_rps]
    fixed_instances = max(max(n for _, n in sized), 1)
    fixed = fleet(fixed_instances)
    fixed_w = it_watts(fixed)
    fixed_hour = hourly_cost(pricing, gpu, system, fixed, fixed_w)
    fleets = [fleet(n) for _, n in sized]
    units = [f.units for f in fleets]
    delay_h = scale_up_delay_s / SECONDS_PER_HOUR

    hours: list[Hour] = []
    for h, (mean, (peak, n)) in enumerate(zip(hourly_rps, sized, strict=True)):
        f = fleets[h]
        # the units added for the next hour run (and are paid) for the delay in this one
        warm = max(0, units[(h + 1) % HOURS_PER_DAY] - units[h]) * delay_h
        w = it_watts(f)
        per_unit_w = node_power.watts * unit.nodes if node_power is not None else None
        energy = (w + warm * per_unit_w) / KW if w is not None and per_unit_w else None
        cost: float | None = None
        if fixed_hour is not None:
            if fixed_hour.basis == "owned":  # bought for the busiest hour, paid all day
                energy_usd = energy * pricing.pue * pricing.usd_per_kwh if energy else 0.0
                cost = fixed_hour.capex_usd_per_hour + energy_usd
            else:
                cost = (f.units + warm) * fixed_hour.usd_per_unit_hour
        hours.append(Hour(h, mean, peak, n, f.gpus_used, f.servers, f.units, cost, energy))

    requests = sum(hourly_rps) * SECONDS_PER_HOUR
    costs = [x.cost_usd for x in hours]
    energies = [x.energy_kwh for x in hours]
    paid_unit_hours = unit_hours(units, scale_up_delay_s)
    return DailyPlan(
        hours=hours,
        requests_per_day=requests,
        input_tokens_per_day=requests * isl,
        output_tokens_per_day=requests * osl,
        fixed_instances=fixed_instances,
        fixed_gpus=fixed.gpus_used,
        fixed_servers=fixed.servers,
        fixed_units=fixed.units,
        fixed_gpu_hours=fixed.gpus_paid * float(HOURS_PER_DAY),
        fixed_cost_usd=fixed_hour.usd_per_hour * HOURS_PER_DAY if fixed_hour else None,
        fixed_energy_kwh=fixed_w / KW * HOURS_PER_DAY if fixed_w is not None else None,
        autoscaled_gpu_hours=paid_unit_hours * unit.gpus,
        autoscaled_server_hours=paid_unit_hours * unit.nodes,
        autoscaled_cost_usd=None if any(c is None for c in costs) else sum(c or 0 for c in costs),
        autoscaled_energy_kwh=None
        if any(e is None for e in energies)
        else sum(e or 0 for e in energies),
        cost_basis=fixed_hour.basis if fixed_hour else None,
        unit=unit.label(),
        scale_up_delay_s=scale_up_delay_s,
    )
