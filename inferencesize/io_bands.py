"""Read the error bands (``data/calibration/bands.json``, written by ``benchmarks/bands.py``)."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

from inferencesize.bands import Band, BandTable
from inferencesize.catalog import builtin_root, display_path
from inferencesize.errors import InputError

#: Where the shipped bands live, under the catalog root (the checkout, or the wheel's copy).
BANDS_FILE = Path("data") / "calibration" / "bands.json"


def read_bands(path: Path) -> BandTable:
    """The bands of ``path``; a file that cannot be read or an entry that is malformed is one
    InputError naming the file and the entry."""
    shown = display_path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        entries = document["bands"]
        families = document["measured_families"]
        measured = {str(k): frozenset(str(f) for f in v) for k, v in families.items()}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise InputError(f"{shown}: cannot read the error bands ({err})") from err
    bands: dict[tuple[str, str], Band] = {}
    for i, e in enumerate(entries):
        try:
            low, high, rows = float(e["low"]), float(e["high"]), int(e["rows"])
            band = Band(low, high, rows, str(e["label"]), float(e["percentiles"][0]))
            metric = str(e["metric"])
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"{shown}: bands[{i}]: malformed entry ({err!r})") from err
        if not (math.isfinite(band.high) and 0 < band.low <= band.high and band.rows > 0):
            raise InputError(
                f"{shown}: bands[{i}]: low and high must be finite with 0 < low <= high and"
                f" rows > 0 (got {band.low}, {band.high}, {band.rows}): rerun benchmarks/bands.py"
            )
        bands[(metric, band.label)] = band
    return BandTable(bands, measured)


@functools.cache
def shipped_bands() -> BandTable:
    """The bands shipped with the tool (read once)."""
    return read_bands(builtin_root() / BANDS_FILE)
