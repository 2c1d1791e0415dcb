"""Burstiness a queue sees: the gamma-renewal cv whose request counts over a short span vary as
a trace's do.

The open-loop model takes arrivals as a gamma renewal process: gaps of mean 1/λ and
coefficient of variation c. A trace's own gaps' cv is a poor c when its arrivals cluster:
bursts separated by idle minutes give a gap cv of 10 to 20 although, within the time a
prompt waits, requests come little burstier than Poisson ones. What a queue feels is how many
requests arrive within a short span: the index of dispersion of counts over ``τ`` seconds,
IDC(τ) = Var N(τ) / E N(τ). A window is sized at the c whose gamma-renewal process has the
trace's IDC over :data:`BURST_SCALE_S` (:func:`matched_cv`); for renewal arrivals (Poisson:
both 1) the two agree.

The IDC of a stationary renewal process (Cox, *Renewal Theory*, 1962, §4.5): with m = λτ,
Var N(τ) = m + 2λ ∫₀^τ M(u) du − m², where M(u) = Σₙ F⁽ⁿ⁾(u) is the renewal function. Gamma
gaps of shape k = 1/c² make F⁽ⁿ⁾ a gamma CDF of shape nk, P(nk, kλu), and
∫₀^x P(a, y) dy = x P(a, x) − a P(a + 1, x), so with x = k·m

    IDC(m, c) = 1 + (2/x) Σₙ [x P(nk, x) − nk P(nk + 1, x)] − m,

summed while P(nk, x) is not negligible. It rises with c from below 1 (regular gaps) through
1 (Poisson) towards c² when τ spans many gaps. Pure: numpy and math only.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from inferencesize.openloop.special import gammainc

#: The span (s) whose request counts set the burstiness a window is sized at: about a TTFT
#: limit, the time requests have to pile up in the prompt queue before they miss it.
BURST_SCALE_S = 1.0
#: Fewest requests and fewest spans a window needs for its counts to state a burstiness.
MIN_BURST_REQUESTS = 20
MIN_BURST_SPANS = 20


def renewal_idc(mean_count: float, cv: float) -> float:
    """IDC over a span in which ``mean_count`` requests arrive on average, of gamma-renewal
    arrivals with gaps of coefficient of variation ``cv`` (module docstring)."""
    if not (mean_count > 0 and cv > 0):
        raise ValueError(f"mean count and cv must be > 0 (got {mean_count}, {cv})")
    k = 1.0 / (cv * cv)
    x = k * mean_count
    terms = math.ceil((x + 8.0 * math.sqrt(x) + 20.0) / k) + 1
    a = k * np.arange(1, terms + 1, dtype=np.float64)
    s = float(np.sum(x * gammainc(a, x) - a * gammainc(a + 1.0, x)))
    return 1.0 + 2.0 * s / x - mean_count


@lru_cache(maxsize=4096)
def _idc_at(mean_count: float, cv: float) -> float:
    return renewal_idc(mean_count, cv)


def reaches(mean_count: float, cv: float, idc: float) -> bool:
    """Do gamma-renewal arrivals of ``cv`` vary at least as much as ``idc`` over spans of
    ``mean_count`` requests? The mean count is taken to three significant digits (a week of
    windows repeats them; the IDC of each is computed once)."""
    return _idc_at(float(f"{mean_count:.3g}"), cv) >= idc


def matched_cv(mean_count: float, idc: float, grid: tuple[float, ...]) -> float:
    """The least cv of ``grid`` (ascending) whose gamma-renewal IDC at ``mean_count`` reaches
    ``idc`` (:func:`reaches`); the last one where none does. Rounding up: never burstier than
    measured less."""
    lo, hi = 0, len(grid) - 1
    while lo < hi:  # the IDC rises with cv: bisection over the grid
        mid = (lo + hi) // 2
        if reaches(mean_count, grid[mid], idc):
            hi = mid
        else:
            lo = mid + 1
    return grid[lo]


def count_idc(count_sq_sum: float, requests: int, spans: int) -> float | None:
    """IDC of the counts of ``spans`` equal spans holding ``requests`` in all, their squares
    summing to ``count_sq_sum``; None with too few requests or spans to say."""
    if requests < MIN_BURST_REQUESTS or spans < MIN_BURST_SPANS:
        return None
    mean = requests / spans
    return max(count_sq_sum / spans - mean * mean, 0.0) / mean
