"""Economics of a fleet: cost per hour, cost per million tokens, power and energy per token.

Two ways to pay for GPUs:

* **cloud** (rented): ``usd_per_hour = usd_per_gpu_hour · gpus``. The rent includes power and
  cooling, so no energy cost is added.
* **owned** (on-prem): the purchase price is written off linearly over the amortisation period
  and the energy is paid at the wall, cooling included through the PUE::

      capex_usd_per_hour  = server_price_usd · servers / (amortization_years · 8766 h)
      energy_usd_per_hour = it_kw · pue · usd_per_kwh
      usd_per_hour        = capex_usd_per_hour + energy_usd_per_hour

  (8766 h = 365.25 days; no interest, staff, space or network: a lower bound on the total
  cost of ownership.)

Power is the IT load of the servers at their **maximum** power from the catalog (a system's
``power``; without one, GPUs × GPU TDP, which leaves out CPUs, NICs and fans, so it is a lower
bound). The facility draws ``it_watts · pue``.

Per token, the instance time is split between prefill (input) and decode (output) by the share
of time an instance spends prefilling: at ``rate`` requests/s with ``prefill_s`` seconds of
prefill per request, ``input_share = min(1, rate · prefill_s)``. Cost and energy per million
input tokens carry that share, output tokens the rest; the blended figure divides the whole
cost by input + output tokens. All figures are at full capacity (every instance at its
operating point); at lower load each token costs more (see :mod:`inferencesize.daily`).

Defaults when the user gives nothing (assumptions, not data): 4 years of amortisation,
0.10 USD/kWh, PUE 1.3. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inferencesize.errors import InputError
from inferencesize.specs import GpuSpec, SystemSpec

HOURS_PER_YEAR = 8766.0  # 365.25 days
SECONDS_PER_HOUR = 3600.0
DEFAULT_AMORTIZATION_YEARS = 4.0
DEFAULT_USD_PER_KWH = 0.10
DEFAULT_PUE = 1.3

Basis = Literal["auto", "cloud", "owned"]
Objective = Literal["servers", "gpus", "cost", "power"]
OBJECTIVES: tuple[Objective, ...] = ("servers", "gpus", "cost", "power")


@dataclass(frozen=True)
class Pricing:
    """How to price a fleet. None = take it from the catalog (or leave it unknown).

    ``basis`` auto: cloud when a $/GPU-hour is known (given or in the catalog), else owned when
    a purchase price is known (given or the system's ``price_usd``), else no cost.
    """

    basis: Basis = "auto"
    usd_per_gpu_hour: float | None = None
    server_price_usd: float | None = None
    amortization_years: float = DEFAULT_AMORTIZATION_YEARS
    usd_per_kwh: float = DEFAULT_USD_PER_KWH
    pue: float = DEFAULT_PUE
    server_power_w: float | None = None


@dataclass(frozen=True)
class ServerPower:
    """Maximum IT power of one node and where the number comes from."""

    watts: float
    basis: str  # "given" | "system" | "gpu-tdp"


@dataclass(frozen=True)
class HourlyCost:
    """Cost of a fleet per hour, split into capital (or rent) and energy."""

    basis: Literal["cloud", "owned"]
    usd_per_hour: float
    capex_usd_per_hour: float
    energy_usd_per_hour: float
    price: str  # what the price is: "6.88 $/GPU-h (aws-p5-48xlarge)", "199,000 $/server ..."


@dataclass(frozen=True)
class TokenEconomics:
    """Cost and energy per token at full capacity."""

    input_share: float  # fraction of instance time spent on prefill
    usd_per_million_input: float | None
    usd_per_million_output: float | None
    usd_per_million_tokens: float | None  # blended: all cost / (input + output tokens)
    joules_per_input_token: float | None
    joules_per_output_token: float | None
    joules_per_token: float | None  # blended


def server_power(
    gpu: GpuSpec, system: SystemSpec | None, gpus_per_node: int, given_w: float | None = None
) -> ServerPower | None:
    """Maximum IT power of one node: given, else the system's, else GPUs × TDP (lower bound)."""
    if given_w is not None:
        return ServerPower(given_w, "given")
    if system is not None and system.power_watts is not None:
        return ServerPower(system.power_watts, "system")
    if gpu.tdp_watts is not None:
        return ServerPower(gpu.tdp_watts * gpus_per_node, "gpu-tdp")
    return None


def fleet_it_watts(node: ServerPower, servers: int, gpus: int, gpus_per_node: int) -> float:
    """IT power of the fleet. GPU-TDP power counts the GPUs actually used (a bare GPU fleet
    need not fill its last node); a system's power counts whole servers."""
    if node.basis == "gpu-tdp":
        return node.watts / gpus_per_node * gpus
    return node.watts * servers


def owned_usd_per_hour(
    server_price_usd: float,
    servers: int,
    amortization_years: float,
    it_watts: float,
    pue: float,
    usd_per_kwh: float,
) -> tuple[float, float]:
    """(capex, energy) USD per hour of an owned fleet (see the module docstring)."""
    capex = server_price_usd * servers / (amortization_years * HOURS_PER_YEAR)
    energy = it_watts / 1e3 * pue * usd_per_kwh
    return capex, energy


def hourly_cost(
    pricing: Pricing,
    gpu: GpuSpec,
    system: SystemSpec | None,
    gpus: int,
    servers: int,
    it_watts: float | None,
) -> HourlyCost | None:
    """Cost per hour of ``gpus`` GPUs on ``servers`` nodes, or None when no price is known.

    Raises InputError when the basis is forced but its price is missing (the message says which
    field to give).
    """
    where = system.id if system is not None else gpu.id
    rent = pricing.usd_per_gpu_hour
    rent_from = "given"
    if rent is None and system is not None and system.price_usd_per_gpu_hour is not None:
        rent, rent_from = system.price_usd_per_gpu_hour, where
    if rent is None and gpu.price_usd_per_gpu_hour is not None:
        rent, rent_from = gpu.price_usd_per_gpu_hour, gpu.id
    buy = pricing.server_price_usd
    buy_from = "given"
    if buy is None and system is not None and system.price_usd is not None:
        buy, buy_from = system.price_usd, where
    basis = pricing.basis
    if basis == "auto":
        basis = "cloud" if rent is not None else "owned" if buy is not None else "auto"
    if basis == "auto":
        return None
    if basis == "cloud":
        if rent is None:
            raise InputError(
                f"{where}: no $/GPU-hour in the catalog; give economics.usd_per_gpu_hour"
                " (--usd-per-gpu-hour)"
            )
        usd = rent * gpus
        return HourlyCost("cloud", usd, usd, 0.0, f"{rent:,.4g} $/GPU-h ({rent_from})")
    if buy is None:
        raise InputError(
            f"{where}: no purchase price in the catalog; give economics.server_price_usd"
            " (--server-price-usd)"
        )
    if it_watts is None:
        raise InputError(
            f"{where}: no power in the catalog; give economics.server_power_kw (--server-power-kw)"
        )
    capex, energy = owned_usd_per_hour(
        buy, servers, pricing.amortization_years, it_watts, pricing.pue, pricing.usd_per_kwh
    )
    note = (
        f"{buy:,.0f} $/server ({buy_from}) over {pricing.amortization_years:g} y"
        f" + {pricing.usd_per_kwh:g} $/kWh × PUE {pricing.pue:g}"
    )
    return HourlyCost("owned", capex + energy, capex, energy, note)


def input_share(requests_per_s: float, prefill_s: float) -> float:
    """Fraction of an instance's time spent prefilling: ``min(1, rate · prefill_s)``."""
    return min(1.0, max(0.0, requests_per_s * prefill_s))


def token_economics(
    usd_per_hour: float | None,
    it_watts: float | None,
    capacity_rps: float,
    isl: float,
    osl: float,
    share: float,
) -> TokenEconomics:
    """Cost (USD per million tokens) and energy (J per token) at ``capacity_rps``.

    ``share`` is the input (prefill) share of instance time; see :func:`input_share`.
    """
    if capacity_rps <= 0:
        raise ValueError(f"capacity_rps must be > 0 (got {capacity_rps})")
    in_tps = capacity_rps * isl
    out_tps = capacity_rps * osl

    def per(total: float | None, part: float, tps: float, scale: float) -> float | None:
        if total is None or tps <= 0:
            return None
        return total * part / tps * scale

    usd_per_s = usd_per_hour / SECONDS_PER_HOUR if usd_per_hour is not None else None
    return TokenEconomics(
        input_share=share,
        usd_per_million_input=per(usd_per_s, share, in_tps, 1e6),
        usd_per_million_output=per(usd_per_s, 1.0 - share, out_tps, 1e6),
        usd_per_million_tokens=per(usd_per_s, 1.0, in_tps + out_tps, 1e6),
        joules_per_input_token=per(it_watts, share, in_tps, 1.0),
        joules_per_output_token=per(it_watts, 1.0 - share, out_tps, 1.0),
        joules_per_token=per(it_watts, 1.0, in_tps + out_tps, 1.0),
    )


def objective_key(
    objective: Objective, servers: int, gpus: int, cost: float | None, watts: float | None
) -> tuple[float, float, float, float]:
    """Sort key for a plan under ``objective``; unknown cost or power sort last."""
    inf = float("inf")
    usd = cost if cost is not None else inf
    w = watts if watts is not None else inf
    if objective == "gpus":
        return (gpus, servers, usd, 0.0)
    if objective == "cost":
        return (usd, servers, gpus, w)
    if objective == "power":
        return (w, servers, gpus, usd)
    return (servers, gpus, usd, 0.0)


@dataclass(frozen=True)
class PlanEconomics:
    """Power, cost and per-token figures of one plan."""

    node_power: ServerPower | None
    it_watts: float | None
    facility_watts: float | None
    cost: HourlyCost | None
    tokens: TokenEconomics
    pue: float = DEFAULT_PUE


def plan_economics(
    pricing: Pricing,
    gpu: GpuSpec,
    system: SystemSpec | None,
    gpus: int,
    servers: int,
    gpus_per_node: int,
    capacity_rps: float,
    isl: float,
    osl: float,
    share: float,
) -> PlanEconomics:
    """Everything economic about ``servers`` nodes holding ``gpus`` GPUs at full capacity."""
    node = server_power(gpu, system, gpus_per_node, pricing.server_power_w)
    it = fleet_it_watts(node, servers, gpus, gpus_per_node) if node is not None else None
    cost = hourly_cost(pricing, gpu, system, gpus, servers, it)
    tokens = token_economics(
        cost.usd_per_hour if cost is not None else None, it, capacity_rps, isl, osl, share
    )
    facility = it * pricing.pue if it is not None else None
    return PlanEconomics(node, it, facility, cost, tokens, pricing.pue)
