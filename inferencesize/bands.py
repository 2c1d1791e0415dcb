"""Error bands: how far measurements fall from predictions like this one.

A prediction's trust covers what was measured with its engine: the GPU × precision (the
efficiency set's label: calibrated, same-architecture, datasheet) and the model family (its
structure: :func:`model_family`). ``benchmarks/bands.py`` predicts every calibration row from
fits that never saw its GPU, its engine or its model, and keeps per label and metric a
percentile range of measured / predicted: the 10th to the 90th, widened where cross-validation
by held-out group shows that range holds fewer than 80 % of a new group's measurements
(errors are correlated within a GPU, an engine, a model). A prediction ``v`` then carries
``(v × low, v × high)``, an 80 % band. A label with fewer than :data:`MIN_ROWS` rows takes its
trust level's band (every model family pooled), else the band of every row.

Pure: the table is read by :mod:`inferencesize.io_bands`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from inferencesize.specs import ModelSpec

#: The predicted metrics that carry a band: the mean gap between tokens (ITL, which benchmark
#: clients report as TPOT) and the time to the first token.
Metric = Literal["itl", "ttft"]
METRICS: tuple[Metric, ...] = ("itl", "ttft")
#: The share of measurements an error band holds.
BAND_SHARE = 0.8
#: The lower percentile of measured / predicted a band starts from (the upper: 100 − it):
#: the 10th–90th percentile holds 80 % of the rows it is fitted on.
TAIL_PERCENT = 10.0
#: Fewer rows than this give no band of their own (the next coarser label's band instead).
MIN_ROWS = 30
#: The label of every row pooled (the last fallback).
EVERY_ROW = "every prediction"


def model_family(model: ModelSpec) -> str:
    """The model's structure, as far as an engine's kernels see it: dense or MoE, then its
    attention (``mla``, ``mla-sparse``, ``linear`` hybrid, ``sliding`` window, or the head
    layout ``mha``/``gqa``/``mqa``). ``gpt-oss-120b`` -> ``moe-sliding``; Llama 3.1 70B ->
    ``dense-gqa``."""
    ffn = "moe" if model.moe is not None else "dense"
    if model.mla is not None:
        attention = "mla-sparse" if model.sparse_attention is not None else "mla"
    elif model.linear_attention is not None:
        attention = "linear"
    elif model.sliding_window is not None:
        attention = "sliding"
    else:
        attention = model.attention.lower()
    return f"{ffn}-{attention}"


def label(trust: str, family_measured: bool) -> str:
    """The band label of a prediction: its trust and whether its model family was measured
    with its engine (``calibrated, family measured``)."""
    return f"{trust}, family {'measured' if family_measured else 'not measured'}"


@dataclass(frozen=True)
class Band:
    """The 80 % band of measured / predicted for one label and metric, from ``rows`` rows:
    their ``tail``-th to (100 − ``tail``)-th percentiles."""

    low: float
    high: float
    rows: int
    label: str
    tail: float = TAIL_PERCENT

    def around(self, value: float) -> tuple[float, float]:
        """The band of a predicted ``value`` (same unit)."""
        return value * self.low, value * self.high


def fit_band(ratios: Iterable[float], name: str, tail: float = TAIL_PERCENT) -> Band:
    """The band of measured / predicted ``ratios`` (every one > 0): its ``tail``-th and
    (100 − ``tail``)-th percentiles (linear interpolation; numpy's default)."""
    r = np.asarray(list(ratios), dtype=float)
    if r.size == 0 or not np.all(r > 0):
        raise ValueError(f"{name}: a band needs positive ratios (got {r.size})")
    if not 0 <= tail < 50:
        raise ValueError(f"{name}: tail must be in [0, 50) percent (got {tail})")
    low, high = np.percentile(r, [tail, 100 - tail])
    return Band(float(low), float(high), int(r.size), name, tail)


@dataclass(frozen=True)
class BandTable:
    """Bands by (metric, label) and the model families each efficiency set was measured on."""

    bands: Mapping[tuple[str, str], Band]
    measured_families: Mapping[str, frozenset[str]]

    def family_measured(self, efficiency_id: str, model: ModelSpec) -> bool:
        return model_family(model) in self.measured_families.get(efficiency_id, frozenset())

    def band(self, metric: Metric, trust: str, family_measured: bool) -> Band | None:
        """The band of a prediction (module docstring: its label, else its trust level, else
        every row); None when the table has none of them."""
        for name in (label(trust, family_measured), trust, EVERY_ROW):
            found = self.bands.get((metric, name))
            if found is not None and found.rows >= MIN_ROWS:
                return found
        return None


def coverage(band: Band, ratios: Iterable[float]) -> float:
    """The share of measured / predicted ``ratios`` inside ``band`` (edges included)."""
    r = np.asarray(list(ratios), dtype=float)
    if r.size == 0:
        return float("nan")
    return float(np.mean((r >= band.low) & (r <= band.high)))
