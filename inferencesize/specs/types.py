"""The annotation types of spec fields: numbers with ceilings, unit-bearing quantities, ids.

Spec modules name these types in their (string) annotations and import them for the type
checker only; the schema (:mod:`inferencesize.specs.schema`) reads them from here when it
builds the pydantic models, so importing a spec never imports pydantic.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

from inferencesize.specs.common import (
    MAX_BANDWIDTH_BYTES_PER_S,
    MAX_COUNT,
    MAX_EXPERTS,
    MAX_FLOP_PER_S,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_MEMORY_BYTES,
    MAX_PARALLEL,
    MAX_RPS,
    MAX_TOKENS,
    MAX_VOCAB,
    MAX_WATTS,
    MAX_WIDTH,
    brief,
)
from inferencesize.units import MAX_QUANTITY_TEXT, Dimension, parse_quantity


def _number(value: object) -> object:
    """Booleans are not numbers here (pydantic would read ``true`` as 1)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {str(value).lower()}")
    return value


def _at_most(ceiling: int) -> BeforeValidator:
    """A whole number up to ``ceiling``, checked before pydantic parses it (so ``1.0e+300``
    reads as too large, not as unparsable); booleans refused."""

    def check(value: object) -> object:
        _number(value)
        if isinstance(value, float) and value.is_integer() and value < 1e21:
            value = int(value)  # 1.0e+12 reads as 1,000,000,000,000
        if isinstance(value, int | float) and math.isfinite(value) and value > ceiling:
            shown = _count(value) if isinstance(value, int) else f"{value:g}"
            raise ValueError(f"must be at most {ceiling:,} (got {shown})")
        return value

    return BeforeValidator(check)


def _below(ceiling: int) -> AfterValidator:
    """The same ceiling after parsing (text such as ``"10000000000"`` parses to an int)."""

    def check(value: int) -> int:
        if value > ceiling:
            raise ValueError(f"must be at most {ceiling:,} (got {_count(value)})")
        return value

    return AfterValidator(check)


def _count(value: int) -> str:
    return brief(value) if value.bit_length() > 128 else f"{value:,}"


def _whole(value: object) -> object:
    """A whole number: never a boolean, and a float beyond any integer field (``1.0e+300``)
    is refused by value (pydantic would say it cannot parse it)."""
    _number(value)
    if isinstance(value, float) and math.isfinite(value) and abs(value) >= 2.0**63:
        raise ValueError(f"must be a whole number below 2^63 (got {value:g})")
    return value


_NUMBER = BeforeValidator(_number)
_WHOLE = BeforeValidator(_whole)

#: A whole number (never a boolean); ``Int`` with Field constraints for bounds.
Int = Annotated[int, _WHOLE]
#: A finite float (never a boolean).
Float = Annotated[float, _NUMBER, Field(allow_inf_nan=False)]
PositiveInt = Annotated[int, _WHOLE, Field(gt=0)]
NonNegativeInt = Annotated[int, _WHOLE, Field(ge=0)]
PositiveFloat = Annotated[float, _NUMBER, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, _NUMBER, Field(ge=0, allow_inf_nan=False)]
#: A positive float (economics and scenario limits).
Positive = PositiveFloat
#: A request rate: positive, at most :data:`~inferencesize.specs.common.MAX_RPS`.
Rate = Annotated[PositiveFloat, Field(le=MAX_RPS)]
#: A probability or share, 0 to 1.
Fraction = Annotated[Float, Field(ge=0, le=1)]

Layers = Annotated[int, _at_most(MAX_LAYERS), Field(gt=0), _below(MAX_LAYERS)]
LayerCount = Annotated[int, _at_most(MAX_LAYERS), Field(ge=0), _below(MAX_LAYERS)]
Heads = Annotated[int, _at_most(MAX_HEADS), Field(gt=0), _below(MAX_HEADS)]
Width = Annotated[int, _at_most(MAX_WIDTH), Field(gt=0), _below(MAX_WIDTH)]
Vocab = Annotated[int, _at_most(MAX_VOCAB), Field(gt=0), _below(MAX_VOCAB)]
Experts = Annotated[int, _at_most(MAX_EXPERTS), Field(gt=0), _below(MAX_EXPERTS)]
ExpertCount = Annotated[int, _at_most(MAX_EXPERTS), Field(ge=0), _below(MAX_EXPERTS)]
Tokens = Annotated[int, _at_most(MAX_TOKENS), Field(gt=0), _below(MAX_TOKENS)]
TokenCount = Annotated[int, _at_most(MAX_TOKENS), Field(ge=0), _below(MAX_TOKENS)]
Degree = Annotated[int, _at_most(MAX_PARALLEL), Field(gt=0), _below(MAX_PARALLEL)]
Count = Annotated[int, _at_most(MAX_COUNT), Field(gt=0), _below(MAX_COUNT)]
CountOrZero = Annotated[int, _at_most(MAX_COUNT), Field(ge=0), _below(MAX_COUNT)]
#: Words (converted to tokens at 0.75 words per token): as many as tokens.
Words = Annotated[float, _NUMBER, Field(gt=0, le=MAX_TOKENS, allow_inf_nan=False)]
WordsOrZero = Annotated[float, _NUMBER, Field(ge=0, le=MAX_TOKENS, allow_inf_nan=False)]


def _quantity_parser(dimension: Dimension, ceiling: float, ceiling_text: str) -> BeforeValidator:
    def parse(value: object) -> float:
        number = parse_quantity(value, dimension)
        if number > ceiling:
            shown = value if isinstance(value, str) and len(value) <= MAX_QUANTITY_TEXT else ""
            raise ValueError(f"must be at most {ceiling_text} (got {shown!r})")
        return number

    return BeforeValidator(parse)


#: "80 GiB" -> bytes (> 0, at most 1 PiB)
Bytes = Annotated[float, _quantity_parser("bytes", MAX_MEMORY_BYTES, "1 PiB"), Field(gt=0)]
_BANDWIDTH = _quantity_parser("bytes_per_s", MAX_BANDWIDTH_BYTES_PER_S, "1 PB/s")
#: "3.35 TB/s" -> bytes/s (> 0)
BytesPerSecond = Annotated[float, _BANDWIDTH, Field(gt=0)]
#: "3.35 TB/s" -> bytes/s (>= 0; 0 means "no such link")
BytesPerSecondOrZero = Annotated[float, _BANDWIDTH, Field(ge=0)]
#: "989.5 TFLOPS" -> FLOP/s (> 0)
FlopsPerSecond = Annotated[
    float, _quantity_parser("flop_per_s", MAX_FLOP_PER_S, "1e21 FLOPS"), Field(gt=0)
]
#: "700 W" -> watts (> 0)
Watts = Annotated[float, _quantity_parser("watts", MAX_WATTS, "1 GW"), Field(gt=0)]

Id = Annotated[str, Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9._-]*$")]
Source = Annotated[str, Field(min_length=3)]
#: A MIG profile name: compute slices "g", then the memory it is sold as ("2g.20gb").
MigProfileName = Annotated[str, Field(pattern=r"^\d+g\.\d+gb$")]
#: A price's date: ISO year, year-month or year-month-day (when it was published or read).
PriceDate = Annotated[str, Field(pattern=r"^\d{4}(-\d{2}){0,2}$")]
