"""Scenario blocks for economics (``economics:``), daily traffic (``daily:``) and pipelines of
models (``pipeline:``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from inferencesize.specs.common import MAX_RPS, Field, Spec, field_validator, model_validator
from inferencesize.units import known_precisions
from inferencesize.vocabulary import CostBasis

if TYPE_CHECKING:  # annotation types: read by the schema (specs.schema), never imported here
    from inferencesize.specs.types import (
        CountOrZero,
        Degree,
        Float,
        NonNegativeFloat,
        Positive,
        Tokens,
    )

HOURS_PER_DAY = 24
SECONDS_PER_DAY = 86_400
SECONDS_PER_HOUR = 3_600


class EconomicsSpec(Spec):
    """How to price the fleet and the power it may draw (see inferencesize.economics)."""

    basis: CostBasis = Field(
        default=CostBasis.AUTO,
        description="cloud: $/GPU-hour; owned: purchase price + amortisation + power; auto: "
        "cloud when a $/GPU-hour is known, else owned when a purchase price is known",
    )
    usd_per_gpu_hour: Positive | None = Field(
        default=None, description="rent per GPU-hour (overrides the catalog)"
    )
    server_price_usd: Positive | None = Field(
        default=None, description="purchase price of one server/node (overrides the catalog)"
    )
    amortization_years: Positive = 4.0
    usd_per_kwh: NonNegativeFloat = 0.10
    pue: Annotated[Float, Field(ge=1)] = Field(
        default=1.3, description="power usage effectiveness: facility power / IT power"
    )
    server_power_kw: Positive | None = Field(
        default=None, description="max IT power of one server (overrides the catalog)"
    )
    power_budget_kw: Positive | None = Field(
        default=None, description="IT power the fleet may draw; the plan reports within/over"
    )


class DailySpec(Spec):
    """A day of traffic: 24 hourly mean rates, or requests/day with the peak hour's share.

    With ``requests_per_day`` and ``peak_hour_share`` the peak hour carries that share and the
    rest is spread evenly over the other 23 hours."""

    hourly_rps: list[Annotated[NonNegativeFloat, Field(le=MAX_RPS)]] | None = Field(
        default=None, description="mean requests/s in each hour 0..23 (24 values)"
    )
    requests_per_day: Annotated[Positive, Field(le=MAX_RPS * SECONDS_PER_DAY)] | None = None
    peak_hour_share: Annotated[Float, Field(gt=0, le=1)] | None = None
    min_instances: CountOrZero = Field(
        default=1, description="instances kept running in an empty hour when autoscaling"
    )
    scale_up_delay_s: Annotated[Float, Field(ge=0, le=3600)] = Field(
        default=600.0,
        description="seconds to start one more unit (boot, load the weights): a unit added for"
        " an hour is started and paid that long before it",
    )

    @model_validator(mode="after")
    def _one_shape(self) -> DailySpec:
        if (self.hourly_rps is None) == (self.requests_per_day is None):
            raise ValueError("daily: give exactly one of hourly_rps or requests_per_day")
        if self.hourly_rps is not None:
            if len(self.hourly_rps) != HOURS_PER_DAY:
                raise ValueError(
                    f"daily.hourly_rps: needs 24 values, one per hour (got {len(self.hourly_rps)})"
                )
            if max(self.hourly_rps) <= 0:
                raise ValueError("daily.hourly_rps: at least one hour must have traffic")
            if self.peak_hour_share is not None:
                raise ValueError("daily.peak_hour_share: only with requests_per_day")
        if self.requests_per_day is not None:
            if self.peak_hour_share is None:
                raise ValueError(
                    "daily.peak_hour_share: requests_per_day needs the peak hour's share "
                    "(e.g. 0.1 = 10 % of the day's requests arrive in the busiest hour)"
                )
            if self.peak_hour_share < 1 / HOURS_PER_DAY:
                raise ValueError(
                    f"daily.peak_hour_share: must be >= 1/24 = {1 / HOURS_PER_DAY:.4f} "
                    f"(the busiest hour carries at least an even share; got {self.peak_hour_share})"
                )
        return self


class Redundancy(Spec):
    """N + k: spare servers beyond what the peak needs, so a failed server costs no capacity."""

    spare_servers: CountOrZero = Field(
        default=0, description="k spare servers (nodes), paid and powered, serving nothing"
    )


class Users(Spec):
    """Traffic stated as people: ``daily_active_users`` each sending ``requests_per_user``
    requests within ``active_hours`` a day, evenly (see :mod:`inferencesize.demand`)."""

    daily_active_users: Positive
    requests_per_user: Positive
    active_hours: Annotated[Float, Field(gt=0, le=HOURS_PER_DAY)] = HOURS_PER_DAY

    @property
    def requests_per_day(self) -> float:
        return requests_per_day_of_users(self.daily_active_users, self.requests_per_user)

    @property
    def mean_rps(self) -> float:
        """The mean rate while the users are active: requests/day / (active_hours · 3600)."""
        return self.requests_per_day / (self.active_hours * SECONDS_PER_HOUR)


def requests_per_day_of_users(daily_active_users: float, requests_per_user: float) -> float:
    """U users × R requests each (678,720 users × 3 = 2,036,160 requests/day)."""
    return daily_active_users * requests_per_user


def users_of_requests(requests_per_day: float, requests_per_user: float) -> float:
    """The inverse: requests/day / R (2,036,160 / 3 = 678,720 users)."""
    return requests_per_day / requests_per_user


class PipelineStage(Spec):
    """One model a user request calls (guardrail, main model, judge, an agent step).

    Unset hardware/precision/tp/pp/ep fall back to the scenario's."""

    name: str = Field(min_length=1)
    model: str
    isl: Tokens
    osl: Tokens
    calls: Positive = Field(
        default=1.0, description="sequential calls per user request (may be fractional)"
    )
    hardware: list[str] | None = Field(default=None, min_length=1)
    precision: list[str] | None = Field(default=None, min_length=1)
    kv_precision: str | None = None
    tp: Literal["auto"] | list[Degree] | None = None
    pp: Literal["auto"] | list[Degree] | None = None
    ep: Literal["auto"] | list[Degree] | None = None
    e2e_ms: Positive | None = Field(
        default=None, description="fixed E2E budget per call; others share the rest"
    )
    ttft_ms: Positive | None = Field(default=None, description="extra TTFT limit per call")
    itl_ms: Positive | None = Field(default=None, description="extra ITL limit per call")

    @field_validator("precision", "kv_precision")
    @classmethod
    def _known_precisions(cls, value: list[str] | str | None) -> list[str] | str | None:
        known_precisions(value)
        return value
