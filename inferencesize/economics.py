"""Economics of a fleet: what is paid for, what it costs per hour, its power, cost and energy
per token.

**Units.** A fleet is paid for in whole units, as the vendor sells or rents them
(:func:`sales_unit`): an 8-GPU server or cloud instance, a 72-GPU NVL72 rack of 18 trays. The
instances are packed onto nodes (:mod:`inferencesize.packing`) and the nodes onto units::

    units       = ceil(servers / nodes_per_unit)         servers include the k spares (N + k)
    gpus_paid   = units · gpus_per_unit
    utilisation = gpus_used / gpus_paid

10 GPUs on 8-GPU servers rent 2 servers (16 GPUs, 62.5 % used). A bare GPU (no system) is
assumed to come in 8-GPU servers.

**Cost per hour**, two ways to pay:

* **cloud** (rented): ``usd_per_hour = units · gpus_per_unit · usd_per_gpu_hour``. The rent
  includes power and cooling, so no energy cost is added.
* **owned** (on-prem): the purchase price of each unit is written off linearly over the
  amortisation period and the energy is paid at the wall, cooling included through the PUE::

      capex_usd_per_hour  = unit_price_usd · units / (amortization_years · 8766 h)
      energy_usd_per_hour = it_kw · pue · usd_per_kwh
      usd_per_hour        = capex_usd_per_hour + energy_usd_per_hour

  (8766 h = 365.25 days; no interest, staff, space or network: a lower bound on the total
  cost of ownership.)

**Power**, one basis for every system: the server wall power at its maximum (GPUs, CPUs, NICs,
fans), of every node of the units paid for (a rack is powered whole). A system's ``power`` is
that figure from its source; where only the GPU board power (TDP) is known, the wall power is
estimated as :data:`WALL_PER_BOARD` × the boards' power, the ratio of published DGX maximum
power to its GPUs' TDP (DGX H100 10.2 kW / 8 × 700 W = 1.82; DGX B200 14.3 kW / 8 × 1000 W =
1.79). The GPU board power is reported beside it; the facility draws ``it_watts · pue``.

**Per token**, the instance time is split between prefill (input) and decode (output) by the
share of time an instance spends prefilling: at ``rate`` requests/s with ``prefill_s`` seconds
of prefill per request, ``input_share = min(1, rate · prefill_s)``. The cost and energy of a
million input tokens carry that share, output tokens the rest (the one "$/M output tokens"
figure); the blended figure divides the whole cost by input + output tokens. All figures are at
full capacity (every instance at its operating point) with the whole fleet paid for, idle GPUs
and spares included; at lower load each token costs more (see :mod:`inferencesize.daily`).

**Ranking and budgets** count what is paid for (:func:`objective_key`, :class:`Budget`): the
servers (nodes) and GPUs of the whole units, their cost per hour and wall power — never the
GPUs an instance happens to run on, so three GPUs of an NVL72 rack weigh as the 72-GPU rack.

Defaults when the user gives nothing (assumptions, not data): 4 years of amortisation,
0.10 USD/kWh, PUE 1.3. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from inferencesize.deployment import BARE_GPU_NODE
from inferencesize.errors import InputError
from inferencesize.specs import GpuSpec, SystemSpec
from inferencesize.vocabulary import CostBasis, Objective

HOURS_PER_YEAR = 8766.0  # 365.25 days
SECONDS_PER_HOUR = 3600.0
DEFAULT_AMORTIZATION_YEARS = 4.0
DEFAULT_USD_PER_KWH = 0.10
DEFAULT_PUE = 1.3
#: Server wall power per watt of GPU board power, where a system publishes none: DGX H100
#: 10.2 kW / (8 × 700 W) = 1.82, DGX B200 14.3 kW / (8 × 1000 W) = 1.79 (their datasheets).
WALL_PER_BOARD = 1.8

Basis = CostBasis


@dataclass(frozen=True)
class Pricing:
    """How to price a fleet. None = take it from the catalog (or leave it unknown).

    ``basis`` auto: cloud when a $/GPU-hour is known (given or in the catalog), else owned when
    a purchase price is known (given or the system's ``price_usd``), else no cost.
    ``spare_servers``: N + k redundancy, k nodes beyond what the peak needs, paid and powered.
    """

    basis: Basis = CostBasis.AUTO
    usd_per_gpu_hour: float | None = None
    server_price_usd: float | None = None
    amortization_years: float = DEFAULT_AMORTIZATION_YEARS
    usd_per_kwh: float = DEFAULT_USD_PER_KWH
    pue: float = DEFAULT_PUE
    server_power_w: float | None = None
    spare_servers: int = 0


@dataclass(frozen=True)
class Unit:
    """What is bought or rented whole: ``kind`` of ``gpus`` GPUs on ``nodes`` nodes."""

    kind: str  # server | instance | rack | tray | pod
    gpus: int
    nodes: int
    assumed: bool = False  # a bare GPU's 8-GPU server

    def label(self) -> str:
        """'8-GPU instance', '72-GPU rack of 18 nodes'."""
        text = f"{self.gpus}-GPU {self.kind}"
        if self.nodes > 1:
            text += f" of {self.nodes} × {self.gpus // self.nodes}-GPU trays"
        return text + (" (assumed)" if self.assumed else "")


def sales_unit(system: SystemSpec | None, gpus_per_node: int) -> Unit:
    """The unit a system is bought or rented in; a bare GPU's is an assumed 8-GPU server."""
    if system is None:
        return Unit("server", gpus_per_node, 1, assumed=True)
    return Unit(system.unit, system.unit_gpus, system.unit_gpus // system.gpus_per_node)


@dataclass(frozen=True)
class Fleet:
    """The units paid for: ``servers`` nodes (spares included) holding ``gpus_used`` GPUs."""

    unit: Unit
    units: int
    servers: int
    gpus_used: int

    @property
    def gpus_paid(self) -> int:
        return self.units * self.unit.gpus

    @property
    def nodes_paid(self) -> int:
        return self.units * self.unit.nodes

    @property
    def utilisation(self) -> float:
        """Fraction of the GPUs paid for that run an instance."""
        return self.gpus_used / self.gpus_paid if self.gpus_paid else 0.0


def fleet_of(unit: Unit, servers: int, gpus_used: int) -> Fleet:
    """``ceil(servers / nodes_per_unit)`` whole units (0 servers: none)."""
    return Fleet(unit, -(-servers // unit.nodes), servers, gpus_used)


@dataclass(frozen=True)
class ServerPower:
    """Maximum wall power of one node, its GPUs' board power, and where the number comes from."""

    watts: float
    basis: Literal["given", "system", "estimate"]
    board_watts: float | None  # GPUs × TDP of one node

    def text(self) -> str:
        """How the node's wall power was found, for the output."""
        if self.basis == "given":
            return "server power given"
        if self.basis == "system":
            return "server wall power from the catalog"
        return f"server wall power estimated as {WALL_PER_BOARD:g} × GPU board power"


def server_power(
    gpu: GpuSpec, system: SystemSpec | None, gpus_per_node: int, given_w: float | None = None
) -> ServerPower | None:
    """Maximum wall power of one node: given, else the system's, else the estimate from the
    GPU board power (:data:`WALL_PER_BOARD`); None when neither is known."""
    board = gpu.tdp_watts * gpus_per_node if gpu.tdp_watts is not None else None
    if given_w is not None:
        return ServerPower(given_w, "given", board)
    if system is not None and system.power_watts is not None:
        return ServerPower(system.power_watts, "system", board)
    if board is not None:
        return ServerPower(board * WALL_PER_BOARD, "estimate", board)
    return None


def fleet_it_watts(node: ServerPower, fleet: Fleet) -> float:
    """Wall (IT) power of every node of the units paid for."""
    return node.watts * fleet.nodes_paid


@dataclass(frozen=True)
class HourlyCost:
    """Cost of a fleet per hour, split into capital (or rent) and energy."""

    basis: Literal["cloud", "owned"]
    usd_per_hour: float
    capex_usd_per_hour: float
    energy_usd_per_hour: float
    price: str  # what the price is and where from: "6.69 $/GPU-h (lambda-8x-b200, 2026-09-20)"
    usd_per_unit_hour: float  # rent, or write-off, of one unit per hour


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


@dataclass(frozen=True)
class Prices:
    """The rent and purchase price that apply, each with where it comes from."""

    rent: float | None
    rent_from: str
    buy: float | None
    buy_from: str


def prices(pricing: Pricing, gpu: GpuSpec, system: SystemSpec | None) -> Prices:
    """Given prices first, then the system's, then the GPU's rent."""

    def dated(ident: str) -> str:
        when = system.price_date if system is not None else None
        return f"{ident}, {when}" if when else ident

    rent, rent_from = pricing.usd_per_gpu_hour, "given"
    if rent is None and system is not None and system.price_usd_per_gpu_hour is not None:
        rent, rent_from = system.price_usd_per_gpu_hour, dated(system.id)
    if rent is None and gpu.price_usd_per_gpu_hour is not None:
        rent, rent_from = gpu.price_usd_per_gpu_hour, gpu.id
    buy, buy_from = pricing.server_price_usd, "given"
    if buy is None and system is not None and system.price_usd is not None:
        buy, buy_from = system.price_usd, dated(system.id)
    return Prices(rent, rent_from, buy, buy_from)


def _basis(pricing: Pricing, p: Prices) -> Literal["cloud", "owned"] | None:
    if pricing.basis != CostBasis.AUTO:
        return "cloud" if pricing.basis == CostBasis.CLOUD else "owned"
    return "cloud" if p.rent is not None else "owned" if p.buy is not None else None


def hourly_cost(
    pricing: Pricing,
    gpu: GpuSpec,
    system: SystemSpec | None,
    fleet: Fleet,
    it_watts: float | None,
) -> HourlyCost | None:
    """Cost per hour of the whole units of ``fleet``, or None when no price is known.

    Raises InputError when the basis is forced but its price is missing (the message says which
    field to give).
    """
    where = system.id if system is not None else gpu.id
    p = prices(pricing, gpu, system)
    basis = _basis(pricing, p)
    if basis is None:
        return None
    unit = fleet.unit
    if basis == "cloud":
        if p.rent is None:
            raise InputError(
                f"{where}: no $/GPU-hour in the catalog; give economics.usd_per_gpu_hour"
                " (--usd-per-gpu-hour)"
            )
        per_unit = p.rent * unit.gpus
        usd = per_unit * fleet.units
        note = (
            f"{fleet.units} × {per_unit:,.2f} $/h per {unit.label()}"
            f" ({p.rent:,.4g} $/GPU-h, {p.rent_from})"
        )
        return HourlyCost("cloud", usd, usd, 0.0, note, per_unit)
    if p.buy is None:
        raise InputError(
            f"{where}: no purchase price in the catalog; give economics.server_price_usd"
            " (--server-price-usd)"
        )
    if it_watts is None:
        raise InputError(
            f"{where}: no power in the catalog; give economics.server_power_kw (--server-power-kw)"
        )
    capex, energy = owned_usd_per_hour(
        p.buy, fleet.units, pricing.amortization_years, it_watts, pricing.pue, pricing.usd_per_kwh
    )
    note = (
        f"{fleet.units} × {p.buy:,.0f} $ per {unit.label()} ({p.buy_from})"
        f" over {pricing.amortization_years:g} y + {pricing.usd_per_kwh:g} $/kWh × PUE"
        f" {pricing.pue:g}"
    )
    per_unit = p.buy / (pricing.amortization_years * HOURS_PER_YEAR)
    return HourlyCost("owned", capex + energy, capex, energy, note, per_unit)


def owned_usd_per_hour(
    unit_price_usd: float,
    units: int,
    amortization_years: float,
    it_watts: float,
    pue: float,
    usd_per_kwh: float,
) -> tuple[float, float]:
    """(capex, energy) USD per hour of an owned fleet (see the module docstring)."""
    capex = unit_price_usd * units / (amortization_years * HOURS_PER_YEAR)
    energy = it_watts / 1e3 * pue * usd_per_kwh
    return capex, energy


def has_figure(
    objective: Objective, pricing: Pricing, gpu: GpuSpec, system: SystemSpec | None
) -> bool:
    """Can a plan on this hardware be ranked by ``objective`` (a cost, a power)?"""
    node = system.gpus_per_node if system is not None else BARE_GPU_NODE
    power = server_power(gpu, system, node, pricing.server_power_w) is not None
    if objective == "power":
        return power
    if objective != "cost":
        return True
    p = prices(pricing, gpu, system)
    basis = _basis(pricing, p)
    if basis == "cloud":
        return p.rent is not None
    if basis == "owned":
        return p.buy is not None and power
    return False


def lacking_figure(
    objective: Objective,
    pricing: Pricing,
    hardware: Sequence[tuple[GpuSpec, SystemSpec | None]],
) -> list[str]:
    """Ids of the hardware a plan cannot be ranked on by ``objective``."""
    return [
        (s.id if s is not None else g.id)
        for g, s in hardware
        if not has_figure(objective, pricing, g, s)
    ]


def require_figure(
    objective: Objective,
    pricing: Pricing,
    hardware: Sequence[tuple[GpuSpec, SystemSpec | None]],
) -> None:
    """Raise InputError when no hardware has the figure ``objective`` ranks by (never a
    silent fallback to servers); some lacking it are ranked last and shown unpriced."""
    missing = lacking_figure(objective, pricing, hardware)
    if not hardware or len(missing) < len(hardware):
        return
    names = ", ".join(missing)
    if objective == "cost":
        raise InputError(
            f"--objective cost: no price for {names} (the catalog publishes none); give"
            " --usd-per-gpu-hour or --server-price-usd, or add priced hardware"
        )
    raise InputError(
        f"--objective power: no power for {names}; give --server-power-kw or add hardware"
        " with a known power"
    )


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


#: The ranking rule: the figures plans are ranked by under each objective, first to last.
#: What is paid for comes first: the servers (nodes) and GPUs of the whole units bought or
#: rented (a GB200 NVL72 rack: 18 trays, 72 GPUs, however few run an instance), their cost per
#: hour and wall power; ties on everything paid go to fewer GPUs used (more left free on the
#: same units). :func:`objective_key` reads it for one plan, the sweep's array ranking
#: (:func:`inferencesize.sweep.choose`) for many.
RANKING: dict[Objective, tuple[str, ...]] = {
    Objective.SERVERS: ("servers_paid", "gpus_paid", "cost", "power", "gpus_used"),
    Objective.GPUS: ("gpus_paid", "servers_paid", "cost", "power", "gpus_used"),
    Objective.COST: ("cost", "servers_paid", "gpus_paid", "power", "gpus_used"),
    Objective.POWER: ("power", "servers_paid", "gpus_paid", "cost", "gpus_used"),
}


def objective_key(
    objective: Objective,
    servers_paid: int,
    gpus_paid: int,
    cost: float | None,
    watts: float | None,
    gpus_used: int = 0,
) -> tuple[float, ...]:
    """Sort key for a plan under ``objective`` (:data:`RANKING`); unknown cost or power sort
    last."""
    inf = float("inf")
    figures = {
        "servers_paid": servers_paid,
        "gpus_paid": gpus_paid,
        "cost": cost if cost is not None else inf,
        "power": watts if watts is not None else inf,
        "gpus_used": gpus_used,
    }
    return tuple(figures[name] for name in RANKING[objective])


BudgetKey = Literal["max_gpus", "max_servers", "max_cost_per_hour_usd", "max_power_kw"]


@dataclass(frozen=True)
class Budget:
    """Caps on what a plan pays for (None: no cap): GPUs and servers (nodes) of the whole units
    paid, cost per hour, wall power in watts. ``check`` holds the plan to them."""

    max_gpus: int | None = None
    max_servers: int | None = None
    max_cost_per_hour_usd: float | None = None
    max_power_w: float | None = None

    def overruns(
        self, servers_paid: int, gpus_paid: int, cost: float | None, watts: float | None
    ) -> list[tuple[BudgetKey, float | None, float]]:
        """Each cap a plan breaks, as (key, its figure, the cap); a figure that is unknown
        (None: no price or power) under a cap breaks it (it cannot be shown within)."""
        caps: list[tuple[BudgetKey, float | None, float | None]] = [
            ("max_gpus", float(gpus_paid), self.max_gpus),
            ("max_servers", float(servers_paid), self.max_servers),
            ("max_cost_per_hour_usd", cost, self.max_cost_per_hour_usd),
            ("max_power_kw", watts, self.max_power_w),
        ]
        return [
            (key, have, cap)
            for key, have, cap in caps
            if cap is not None and (have is None or have > cap)
        ]

    def holds(
        self, servers_paid: int, gpus_paid: int, cost: float | None, watts: float | None
    ) -> bool:
        """Whether a plan paying for these is within every cap."""
        return not self.overruns(servers_paid, gpus_paid, cost, watts)


@dataclass(frozen=True)
class PlanEconomics:
    """Units paid for, power, cost and per-token figures of one plan."""

    node_power: ServerPower | None
    it_watts: float | None
    facility_watts: float | None
    cost: HourlyCost | None
    tokens: TokenEconomics
    pue: float = DEFAULT_PUE
    fleet: Fleet | None = None
    board_watts: float | None = None  # GPU board power of the GPUs paid for
    spare_servers: int = 0  # N + k: the k nodes of the fleet beyond the peak's


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
    """Everything economic about ``servers`` nodes (spares included) holding ``gpus`` GPUs at
    full capacity."""
    fleet = fleet_of(sales_unit(system, gpus_per_node), servers, gpus)
    node = server_power(gpu, system, gpus_per_node, pricing.server_power_w)
    it = fleet_it_watts(node, fleet) if node is not None else None
    cost = hourly_cost(pricing, gpu, system, fleet, it)
    tokens = token_economics(
        cost.usd_per_hour if cost is not None else None, it, capacity_rps, isl, osl, share
    )
    facility = it * pricing.pue if it is not None else None
    boards = gpu.tdp_watts * fleet.gpus_paid if gpu.tdp_watts is not None else None
    return PlanEconomics(
        node, it, facility, cost, tokens, pricing.pue, fleet, boards, pricing.spare_servers
    )
