"""SI constants, precision sizes and quantity parsing.

Inside the package every quantity is in SI base units (bytes, seconds, FLOP, bytes/s,
FLOP/s, watts) and names carry the unit where it is not obvious. This module is the only
place that converts to and from human units. GB = 1e9 bytes, GiB = 2**30 bytes: never mixed.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Final, Literal, overload

KB: Final = 1e3
MB: Final = 1e6
GB: Final = 1e9
TB: Final = 1e12
KIB: Final = 2.0**10
MIB: Final = 2.0**20
GIB: Final = 2.0**30
TIB: Final = 2.0**40

MS: Final = 1e-3  # one millisecond, in seconds
US: Final = 1e-6
TERA: Final = 1e12
PETA: Final = 1e15
KW: Final = 1e3  # one kilowatt, in watts
MW: Final = 1e6

#: Milliseconds per second: ``seconds * MS_PER_S`` is a time in ms (exact, unlike ``/ MS``).
MS_PER_S: Final = 1e3
SECONDS_PER_MINUTE: Final = 60.0
SECONDS_PER_HOUR: Final = 3600.0
HOURS_PER_DAY: Final = 24
SECONDS_PER_DAY: Final = SECONDS_PER_HOUR * HOURS_PER_DAY


#: Words per token used to turn a word count into tokens (English prose, BPE tokenizers).
WORDS_PER_TOKEN: Final = 0.75

Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]
PRECISIONS: Final[tuple[str, ...]] = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")

#: Storage bytes per weight element, including block-scale overhead where the format has one.
#: int4: group-wise (group 128) with a 16-bit scale and a 16-bit zero point -> 4.25 bits.
#: fp4: NVFP4 with one fp8 scale per 16 elements -> 4.5 bits (MXFP4: 4.25 bits; we take the larger).
BYTES_PER_ELEMENT: Final[dict[str, float]] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 4.25 / 8.0,
    "fp4": 4.5 / 8.0,
}

#: The tensor-core precision that does the math when weights are stored in a precision.
#: Weight-only int4 runs its GEMMs in 16-bit (dequantised); fp8/int8/fp4 use their own units.
COMPUTE_PRECISION: Final[dict[str, str]] = {
    "fp32": "tf32",
    "bf16": "bf16",
    "fp16": "fp16",
    "fp8": "fp8",
    "int8": "int8",
    "int4": "fp16",
    "fp4": "fp4",
}


def known_precisions(value: list[str] | str | None) -> None:
    """A precision, or a list of them, as a scenario, a pool or a pipeline stage states it
    (None: unstated); ValueError naming the known precisions for any other."""
    for p in [value] if isinstance(value, str) else value or []:
        if p not in PRECISIONS:
            raise ValueError(f"unknown precision {p!r}; expected one of {', '.join(PRECISIONS)}")


def bytes_per_element(precision: str) -> float:
    """Bytes per stored element for a precision id (``fp8`` -> 1.0)."""
    try:
        return BYTES_PER_ELEMENT[precision]
    except KeyError:
        raise ValueError(
            f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}"
        ) from None


Dimension = Literal["bytes", "bytes_per_s", "flop_per_s", "watts", "seconds"]

_BYTE_UNITS: Final[dict[str, float]] = {
    "B": 1.0,
    "KB": KB,
    "MB": MB,
    "GB": GB,
    "TB": TB,
    "KiB": KIB,
    "MiB": MIB,
    "GiB": GIB,
    "TiB": TIB,
}
_FLOPS_UNITS: Final[dict[str, float]] = {
    "FLOPS": 1.0,
    "GFLOPS": 1e9,
    "TFLOPS": TERA,
    "PFLOPS": PETA,
    "TOPS": TERA,
    "POPS": PETA,
}
_POWER_UNITS: Final[dict[str, float]] = {"W": 1.0, "kW": KW, "MW": MW}
_TIME_UNITS: Final[dict[str, float]] = {
    "s": 1.0,
    "ms": MS,
    "us": US,
    "min": SECONDS_PER_MINUTE,
    "h": SECONDS_PER_HOUR,
}

_UNIT_TABLES: Final[dict[str, dict[str, float]]] = {
    "bytes": _BYTE_UNITS,
    "bytes_per_s": {f"{k}/s": v for k, v in _BYTE_UNITS.items()},
    "flop_per_s": _FLOPS_UNITS,
    "watts": _POWER_UNITS,
    "seconds": _TIME_UNITS,
}
#: Longest quantity text read ("989.5 TFLOPS" is 12 characters); longer text is refused before
#: any pattern matching, so a megabyte of digits costs nothing.
MAX_QUANTITY_TEXT: Final = 100
_QUANTITY_RE: Final = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]+)\s*$")


def expected_units(dimension: Dimension) -> str:
    """The units accepted for a dimension, for error messages."""
    return ", ".join(_UNIT_TABLES[dimension])


def parse_quantity(value: object, dimension: Dimension) -> float:
    """Parse ``"80 GiB"``, ``"3.35 TB/s"``, ``"989.5 TFLOPS"``, ``"700 W"`` into SI units.

    A bare number is rejected: a catalog must state its unit. Raises ``ValueError`` with the
    accepted units on anything else, and on a number too large to be finite (``1e400 GiB``).
    """
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(
            f"needs a number with a unit, e.g. '80 GiB' (one of: {expected_units(dimension)})"
        )
    if len(value) > MAX_QUANTITY_TEXT:
        raise ValueError(
            f"cannot read a quantity of {len(value):,} characters: expected a number and one of"
            f" {expected_units(dimension)}"
        )
    match = _QUANTITY_RE.match(value)
    table = _UNIT_TABLES[dimension]
    if match is None or match.group(2) not in table:
        raise ValueError(
            f"cannot read {value!r}: expected a number and one of {expected_units(dimension)}"
        )
    number = float(match.group(1)) * table[match.group(2)]
    if not math.isfinite(number):
        raise ValueError(f"cannot read {value!r}: the number is too large")
    return number


def statistic_fraction(statistic: str | float) -> float:
    """The fraction a percentile statistic stands for: "p99" -> 0.99 ("pNN", decimals allowed),
    or a fraction in (0, 1) as given; ValueError for anything else ("mean" included)."""
    if isinstance(statistic, str):
        if not (statistic.startswith("p") and statistic[1:].replace(".", "", 1).isdigit()):
            raise ValueError(f"statistic must be 'mean', a fraction or 'pNN' (got {statistic!r})")
        q = float(Decimal(statistic[1:]) / 100)  # "p99.9" -> 0.999, not 0.9990000000000001
    else:
        q = float(statistic)
    if not 0 < q < 1:
        raise ValueError(f"percentile must be a fraction in (0, 1) (got {statistic!r})")
    return q


@overload
def ms_to_s(ms: float) -> float: ...
@overload
def ms_to_s(ms: None) -> None: ...
@overload
def ms_to_s(ms: float | None) -> float | None: ...


def ms_to_s(ms: float | None) -> float | None:
    """A time stated in milliseconds (a limit, as scenarios and flags state it) in seconds;
    None stays None."""
    return ms / MS_PER_S if ms is not None else None


def tokens_from_words(words: float) -> int:
    """Tokens for a word count at 0.75 words per token, rounded up."""
    return int(-(-words // WORDS_PER_TOKEN))
