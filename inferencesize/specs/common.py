"""Shared pydantic building blocks: frozen strict models, unit-bearing quantity types and the
ceilings every catalog and scenario number stays under.

Numbers are checked at the edge so that the math below never sees a value that overflows,
allocates without bound or takes long to plan: ``true`` is never a number (YAML's booleans are
not 1 and 0 here), no float is infinite or NaN, and each count has a ceiling far above any real
model, GPU or deployment (:data:`CEILINGS`, listed in docs/catalogs.md).
"""

from __future__ import annotations

import math
import reprlib
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from inferencesize.units import MAX_QUANTITY_TEXT, Dimension, parse_quantity

#: Longest text field (ids, names, sources, descriptions) a catalog or scenario may state.
MAX_TEXT = 10_000

#: Transformer layers of one model (the largest published models have ~130).
MAX_LAYERS = 1_000
#: Attention heads (query or KV) of one layer.
MAX_HEADS = 100_000
#: Widths: hidden size, FFN and expert widths, head dimension, MLA ranks.
MAX_WIDTH = 1_000_000
#: Vocabulary entries.
MAX_VOCAB = 10_000_000
#: Experts of one MoE layer (routed or shared), and experts per token.
MAX_EXPERTS = 100_000
#: Tokens: context window, ISL, OSL, sliding windows, shared prefixes, KV caps, chunks.
MAX_TOKENS = 100_000_000
#: Parallel degrees (TP, PP, EP, attention DP, CP) and GPUs per node or NVLink domain.
MAX_PARALLEL = 4_096
#: Request rate a scenario may state: a billion requests/s, beyond any deployment (larger ones
#: overflow the instance counts).
MAX_RPS = 1e9
#: Batch sizes and instance or GPU counts in limits.
MAX_COUNT = 1_000_000_000
#: GPU memory: 1 PiB.
MAX_MEMORY_BYTES = 2.0**50
#: Bandwidths (HBM, scale-up, scale-out): 1 PB/s.
MAX_BANDWIDTH_BYTES_PER_S = 1e15
#: Dense peak throughput of one GPU: 1 ZFLOP/s.
MAX_FLOP_PER_S = 1e21
#: Power of one GPU or node: 1 GW.
MAX_WATTS = 1e9

#: Field kind -> (ceiling, how it reads in a message), for the documentation.
CEILINGS: dict[str, tuple[float, str]] = {
    "layers (num_layers, layer_types entries)": (MAX_LAYERS, "1,000"),
    "attention heads": (MAX_HEADS, "100,000"),
    "widths (hidden, FFN, expert, head_dim, MLA ranks)": (MAX_WIDTH, "1,000,000"),
    "vocabulary": (MAX_VOCAB, "10,000,000"),
    "experts": (MAX_EXPERTS, "100,000"),
    "tokens (context, ISL, OSL, windows, prefixes)": (MAX_TOKENS, "100,000,000"),
    "TP / PP / EP / attention DP / CP, GPUs per node": (MAX_PARALLEL, "4,096"),
    "batch sizes, GPU and instance counts": (MAX_COUNT, "1,000,000,000"),
    "GPU memory": (MAX_MEMORY_BYTES, "1 PiB"),
    "bandwidth": (MAX_BANDWIDTH_BYTES_PER_S, "1 PB/s"),
    "dense FLOP/s": (MAX_FLOP_PER_S, "1e21 FLOPS"),
    "power": (MAX_WATTS, "1 GW"),
}


class Spec(BaseModel):
    """Base for every catalog and result model: frozen, no unknown keys, aliases accepted,
    finite floats only, text of bounded length."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        allow_inf_nan=False,
        str_max_length=MAX_TEXT,
    )


_REPR = reprlib.Repr()
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4
_REPR.maxlevel = 2
#: Longest value shown in a message.
SHOWN_CHARS = 80


def brief(value: object) -> str:
    """``repr(value)`` for a message, at most :data:`SHOWN_CHARS` characters: a value from a
    file may be a megabyte of text, a number of thousands of digits or a deep structure."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"<a number of about {digits:,} digits>"
    text = _REPR.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def clip(text: str, limit: int = 2 * SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters (a message that may quote a file's content)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
