"""Shared pydantic building blocks: frozen strict models and unit-bearing quantity types."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from inferencesize.units import parse_quantity


class Spec(BaseModel):
    """Base for every catalog and result model: frozen, no unknown keys, aliases accepted."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def _bytes(value: object) -> float:
    return parse_quantity(value, "bytes")


def _bytes_per_s(value: object) -> float:
    return parse_quantity(value, "bytes_per_s")


def _flop_per_s(value: object) -> float:
    return parse_quantity(value, "flop_per_s")


def _watts(value: object) -> float:
    return parse_quantity(value, "watts")


#: "80 GiB" -> bytes (> 0)
Bytes = Annotated[float, BeforeValidator(_bytes), Field(gt=0)]
#: "3.35 TB/s" -> bytes/s (> 0)
BytesPerSecond = Annotated[float, BeforeValidator(_bytes_per_s), Field(gt=0)]
#: "3.35 TB/s" -> bytes/s (>= 0; 0 means "no such link")
BytesPerSecondOrZero = Annotated[float, BeforeValidator(_bytes_per_s), Field(ge=0)]
#: "989.5 TFLOPS" -> FLOP/s (> 0)
FlopsPerSecond = Annotated[float, BeforeValidator(_flop_per_s), Field(gt=0)]
#: "700 W" -> watts (> 0)
Watts = Annotated[float, BeforeValidator(_watts), Field(gt=0)]

Id = Annotated[str, Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9._-]*$")]
Source = Annotated[str, Field(min_length=3)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
