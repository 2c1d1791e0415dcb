"""The joint prompt/answer length distribution of a trace, binned: what the open-loop model
sizes for instead of the mean lengths (``--trace-lengths distribution``).

Cells: prompt (ISL) bins cut at the trace's ISL quantiles :data:`ISL_QUANTILES` (finer in the
tail, where the long prompts that set the TTFT percentiles are) × answer (OSL) bins cut at its
OSL quantiles :data:`OSL_QUANTILES`; each cell keeps its probability and its requests' mean ISL
and OSL (empty cells dropped). Beside them, two occupancy-weighted figures computed exactly
from the requests (a request holds its KV cache for its OSL decode steps, so a running
sequence is a long answer more often than a request is):

* ``kv_tokens``: the KV tokens a running sequence reserves on average,
  E[osl·(isl + osl)] / E[osl] (the engine reserves ISL + OSL from admission to completion);
* ``decode_context``: the context a decode step reads per sequence on average,
  E[osl·(isl + osl/2)] / E[osl] (not E[isl] + E[osl]/2).

A trace of one length gives one cell and ISL + OSL, ISL + OSL/2 exactly (integer sums), so the
model then reproduces the fixed-length answer to the bit.

A trace too long to hold takes its cells from a uniform sample of its requests and its means
and occupancy-weighted figures from the sums of every request (:class:`LengthSums`).

Pure: numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: ISL quantiles the prompt bins are cut at: halves, then the tail ever finer.
ISL_QUANTILES = (0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999)
#: OSL quantiles the answer bins are cut at.
OSL_QUANTILES = (0.5, 0.9)


@dataclass(frozen=True)
class LengthSums:
    """Exact integer sums over requests: their count, ΣISL, ΣOSL, ΣISL·OSL and ΣOSL²."""

    requests: int
    isl: int
    osl: int
    isl_osl: int
    osl_sq: int

    @classmethod
    def of(cls, isl: npt.NDArray[np.int64], osl: npt.NDArray[np.int64]) -> LengthSums:
        return cls(
            len(isl), int(isl.sum()), int(osl.sum()), int(np.dot(isl, osl)), int(np.dot(osl, osl))
        )

    def __add__(self, other: LengthSums) -> LengthSums:
        return LengthSums(
            self.requests + other.requests,
            self.isl + other.isl,
            self.osl + other.osl,
            self.isl_osl + other.isl_osl,
            self.osl_sq + other.osl_sq,
        )


@dataclass(frozen=True)
class LengthMix:
    """A binned joint ISL/OSL distribution (module docstring): per cell its probability and
    mean ISL and OSL (tokens), and the occupancy-weighted KV tokens and decode context."""

    probs: tuple[float, ...]
    isl: tuple[float, ...]
    osl: tuple[float, ...]
    kv_tokens: float
    decode_context: float
    isl_mean: float
    osl_mean: float
    #: The prompt (ISL) bins alone, ascending: their probabilities and mean ISL.
    prompt_probs: tuple[float, ...]
    prompt_isl: tuple[float, ...]

    @property
    def cells(self) -> int:
        return len(self.probs)


def length_mix(isl: npt.ArrayLike, osl: npt.ArrayLike, sums: LengthSums | None = None) -> LengthMix:
    """The binned distribution of requests' ``isl`` and ``osl`` (tokens, ≥ 1 each; module
    docstring); ValueError when there are none or a length is below 1. ``sums``: those of
    every request where ``isl`` and ``osl`` are a sample of them (the means and the
    occupancy-weighted figures are taken from them; the cells from the sample)."""
    i = np.asarray(isl, dtype=np.int64)
    o = np.asarray(osl, dtype=np.int64)
    if i.shape != o.shape or i.ndim != 1:
        raise ValueError("isl and osl must be 1-D arrays of one length")
    n = len(i)
    if n == 0:
        raise ValueError("no requests to take the lengths of")
    if int(i.min()) < 1 or int(o.min()) < 1:
        raise ValueError("every ISL and OSL must be >= 1 token")
    ib = _bins(i, ISL_QUANTILES)
    ob = _bins(o, OSL_QUANTILES)
    cell = ib * (int(ob.max()) + 1) + ob
    count = np.bincount(cell)
    isl_sum = np.bincount(cell, weights=i.astype(float))
    osl_sum = np.bincount(cell, weights=o.astype(float))
    held = np.flatnonzero(count)
    by_isl = np.bincount(ib)
    prompts = np.flatnonzero(by_isl)
    prompt_sum = np.bincount(ib, weights=i.astype(float))
    whole = LengthSums.of(i, o) if sums is None else sums
    # exact in integers (a trace of one length gives ISL + OSL and ISL + OSL/2 to the bit)
    o_sum, io, oo = whole.osl, whole.isl_osl, whole.osl_sq
    return LengthMix(
        probs=tuple(float(c) / n for c in count[held]),
        isl=tuple(float(s) / float(c) for s, c in zip(isl_sum[held], count[held], strict=True)),
        osl=tuple(float(s) / float(c) for s, c in zip(osl_sum[held], count[held], strict=True)),
        kv_tokens=(io + oo) / o_sum,
        decode_context=io / o_sum + oo / o_sum / 2.0,
        isl_mean=whole.isl / whole.requests,
        osl_mean=o_sum / whole.requests,
        prompt_probs=tuple(float(c) / n for c in by_isl[prompts]),
        prompt_isl=tuple(float(prompt_sum[b]) / float(by_isl[b]) for b in prompts),
    )


def _bins(x: npt.NDArray[np.int64], quantiles: tuple[float, ...]) -> npt.NDArray[np.int64]:
    """Each value's bin: how many of the distinct quantile edges lie below it."""
    edges = np.unique(np.quantile(x, quantiles, method="lower"))
    return np.searchsorted(edges, x, side="left").astype(np.int64)
