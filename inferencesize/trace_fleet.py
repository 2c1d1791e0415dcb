"""A fleet for a trace's windows: fixed for the worst window against autoscaled window by
window, in whole units as they are rented or bought (:func:`inferencesize.economics.sales_unit`).

Each window k (:mod:`inferencesize.trace_windows`) of mean rate λ_k is sized for its own
burst, the percentile of its per-second count, with the plan's candidate at the window's own
burstiness cv_k (its gaps' cv as sized, :func:`inferencesize.trace_traffic.sized_cv`; the
instance search the plan made, one per cv, so a router's pooling counts)::

    peak_k      = peak_rps(λ_k, percentile, dispersion)
    instances_k = the fewest instances meeting the limits at peak_k with gaps of cv_k
                  (instances_at)
    units_k     = whole units holding them (packing.pack_servers, + spares)

* **fixed**: ``max(plan instances, max_k instances_k)`` instances, run over the whole trace;
* **autoscaled**: a unit takes ``scale_up_delay_s`` to start (boot, load the weights), so the
  units window j needs are started that long before j begins and paid from then, and window
  k runs (and pays) the most units of any window that needs them during it::

      running_k = max(units_j : start_j − delay < end_k and end_j > start_k)

  never fewer than window k needs itself (whole units; no unit is paid for part of a window
  it runs in). Units are released as soon as no later window needs them.

Per fleet: peak and mean GPUs (paid: whole units × GPUs per unit; the mean weighted by the
windows' lengths), GPU-hours over the trace, and the cost where a price is known: rented
units per unit-hour; owned units bought for the fleet's peak and written off over the trace's
hours, plus the energy of the units running. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from inferencesize.daily import DEFAULT_SCALE_UP_DELAY_S
from inferencesize.economics import (
    Fleet,
    Pricing,
    fleet_it_watts,
    fleet_of,
    hourly_cost,
    sales_unit,
    server_power,
)
from inferencesize.packing import pack_servers
from inferencesize.specs import GpuSpec, SystemSpec
from inferencesize.trace_windows import Window
from inferencesize.traffic import peak_rps
from inferencesize.units import SECONDS_PER_HOUR


@dataclass(frozen=True)
class WindowFleet:
    """One window: what it needs and what the autoscaled fleet runs in it."""

    start_s: float
    end_s: float
    peak_rps: float
    cv: float  # the gaps' cv it is sized at
    instances: int  # instances its peak needs
    gpus: int  # GPUs running those instances
    units: int  # whole units holding them
    autoscaled_units: int  # units the autoscaled fleet runs (>= units)
    autoscaled_gpus: int  # GPUs paid for those units


@dataclass(frozen=True)
class FleetFigures:
    """A fleet over the whole trace (GPUs paid: whole units)."""

    peak_gpus: int
    mean_gpus: float
    peak_units: int
    gpu_hours: float
    cost_usd: float | None


@dataclass(frozen=True)
class TraceFleet:
    """Fixed against autoscaled over a trace's windows, with one candidate."""

    windows: tuple[WindowFleet, ...]
    fixed: FleetFigures
    autoscaled: FleetFigures
    fixed_instances: int
    unit: str  # what a unit is: "8-GPU server"
    unit_gpus: int
    span_s: float
    scale_up_delay_s: float
    cost_basis: str | None

    @property
    def gpu_hours_saved(self) -> float:
        """Fraction of the fixed fleet's GPU-hours autoscaling saves."""
        if self.fixed.gpu_hours <= 0:
            return 0.0
        return max(0.0, 1.0 - self.autoscaled.gpu_hours / self.fixed.gpu_hours)


def running_units(
    windows: Sequence[tuple[float, float]], units: Sequence[int], delay_s: float
) -> list[int]:
    """The units an autoscaled fleet runs in each window (module docstring): the most any
    window needs whose start is less than ``delay_s`` after this one's end."""
    out = []
    for k, (_, end_k) in enumerate(windows):  # windows before k end by its start: not counted
        j, most = k, units[k]
        while j + 1 < len(windows) and windows[j + 1][0] - delay_s < end_k:
            j += 1
            most = max(most, units[j])
        out.append(most)
    return out


def trace_fleet(
    windows: Sequence[Window],
    instances_at: Callable[[float, float], int],
    gpus_per_instance: int,
    gpus_per_node: int,
    *,
    gpu: GpuSpec,
    system: SystemSpec | None,
    plan_instances: int,
    pricing: Pricing | None = None,
    percentile: float = 0.95,
    dispersion: float = 0.0,
    scale_up_delay_s: float = DEFAULT_SCALE_UP_DELAY_S,
    instances_per_gpu: int = 1,
    cv: float = 1.0,
) -> TraceFleet:
    """Size every window with one candidate (module docstring). ``instances_at(peak_rps,
    cv)``: the fewest instances meeting the limits at that peak with gaps of that cv (``cv``
    for a window not sized at its own, :attr:`Window.cv` None); ``plan_instances``: the
    plan's own count (the fixed fleet never has fewer)."""
    if not windows:
        raise ValueError("a trace fleet needs at least one window")
    if not 0 <= scale_up_delay_s <= 86_400:
        raise ValueError(f"scale_up_delay_s must be in [0, 86400] (got {scale_up_delay_s})")
    pricing = pricing or Pricing()
    unit = sales_unit(system, gpus_per_node)

    def fleet(n: int) -> Fleet:
        groups = -(-n // instances_per_gpu)  # GPUs (or GPU groups) the n instances occupy
        servers = pack_servers(groups, gpus_per_instance, gpus_per_node) + pricing.spare_servers
        return fleet_of(unit, servers if n else 0, groups * gpus_per_instance)

    peaks = [
        peak_rps(w.rate_rps, percentile, dispersion=dispersion) if w.rate_rps > 0 else 0.0
        for w in windows
    ]
    cvs = [cv if w.cv is None else w.cv for w in windows]
    needed = [instances_at(p, c) if p > 0 else 0 for p, c in zip(peaks, cvs, strict=True)]
    fleets = [fleet(n) for n in needed]
    spans = [(w.start_s, w.end_s) for w in windows]
    running = running_units(spans, [f.units for f in fleets], scale_up_delay_s)
    fixed_instances = max(plan_instances, *needed)
    fixed = fleet(fixed_instances)

    span_s = windows[-1].end_s - windows[0].start_s
    hours = [(e - s) / SECONDS_PER_HOUR for s, e in spans]
    one = fleet_of(unit, unit.nodes, unit.gpus)  # one unit: its price and power
    node_power = server_power(gpu, system, gpus_per_node, pricing.server_power_w)
    watts = fleet_it_watts(node_power, one) if node_power is not None else None
    price = hourly_cost(pricing, gpu, system, one, watts)

    def cost(bought_units: int, unit_hours: float) -> float | None:
        if price is None:
            return None
        if price.basis == "owned":  # bought for the peak, written off over the trace
            capex = bought_units * price.capex_usd_per_hour * span_s / SECONDS_PER_HOUR
            return capex + unit_hours * price.energy_usd_per_hour
        return unit_hours * price.usd_per_unit_hour

    fixed_unit_hours = fixed.units * span_s / SECONDS_PER_HOUR
    auto_unit_hours = sum(u * h for u, h in zip(running, hours, strict=True))
    mean_units = auto_unit_hours / (span_s / SECONDS_PER_HOUR) if span_s > 0 else max(running)
    fixed_figures = FleetFigures(
        peak_gpus=fixed.gpus_paid,
        mean_gpus=float(fixed.gpus_paid),
        peak_units=fixed.units,
        gpu_hours=fixed_unit_hours * unit.gpus,
        cost_usd=cost(fixed.units, fixed_unit_hours),
    )
    auto_figures = FleetFigures(
        peak_gpus=max(running) * unit.gpus,
        mean_gpus=mean_units * unit.gpus,
        peak_units=max(running),
        gpu_hours=auto_unit_hours * unit.gpus,
        cost_usd=cost(max(running), auto_unit_hours),
    )
    per_window = tuple(
        WindowFleet(
            start_s=w.start_s,
            end_s=w.end_s,
            peak_rps=p,
            cv=c,
            instances=n,
            gpus=f.gpus_used,
            units=f.units,
            autoscaled_units=r,
            autoscaled_gpus=r * unit.gpus,
        )
        for w, p, c, n, f, r in zip(windows, peaks, cvs, needed, fleets, running, strict=True)
    )
    return TraceFleet(
        windows=per_window,
        fixed=fixed_figures,
        autoscaled=auto_figures,
        fixed_instances=fixed_instances,
        unit=unit.label(),
        unit_gpus=unit.gpus,
        span_s=span_s,
        scale_up_delay_s=scale_up_delay_s,
        cost_basis=price.basis if price is not None else None,
    )
