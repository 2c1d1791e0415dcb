"""Peak traffic from a mean arrival rate: Poisson and over-dispersed (gamma-Poisson) arrivals.

Sizing is done for the *peak* request rate, not the mean. With independent arrivals at a mean
rate of λ requests/s, the number of requests N in a window of w seconds is Poisson with mean
μ = λ·w; the peak rate at percentile q is the q-quantile of N divided by w::

    peak_rps = F⁻¹(q; μ = λ·w) / w        F⁻¹(q) = min{k ≥ 0 : P(N ≤ k) ≥ q}

so 64 requests/s on average means at most 77 requests in 95 % of one-second windows
(``scipy.stats.poisson.ppf(0.95, 64) == 77``; ``ppf(0.95, 7) == 12``).

Real traffic is often burstier than Poisson: the rate itself drifts (hour to hour, campaign to
campaign). Modelling the rate as gamma-distributed with mean μ and squared coefficient of
variation D (the *dispersion*) makes N negative binomial (gamma-Poisson) with

    E[N] = μ,   Var[N] = μ + D·μ²,   n = 1/D,   p = n / (n + μ)

(``scipy.stats.nbinom(n, p)``); D = 0 is the Poisson case. The negative binomial quantile
grows roughly as μ·(1 + z_q·√D) for large μ, so even a modest D matters at high traffic.

Both quantiles are computed here in plain floating point (summing the probability mass
function around its mode), because importing scipy costs a third of a second of CLI start-up
(``scipy.stats`` over a second). Where that sum would run long (a Poisson mean over 10⁹, a
negative binomial with D·μ over about 2,500), the quantile is searched on the distribution
function instead, the regularised incomplete gamma and beta functions of ``scipy.special``:
a bracket doubled from the mean, then bisected on the integers, so about 2·log₂(k) evaluations
for a quantile k whatever the dispersion and percentile. Tests check them against
``scipy.stats.poisson.ppf`` and ``scipy.stats.nbinom.ppf``.

All rates are requests per second; windows are seconds. Pure functions: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

SECONDS_PER_HOUR = 3600.0

TrafficModel = Literal["poisson", "negative-binomial"]
#: P(j±1)/P(j) of a count distribution, elementwise on an array of j
Ratio = Callable[[Any], Any]

# Relative size (to the mode's term) below which Poisson terms are dropped: far below the double
# precision of a probability near 1 (1 - q >= 1.1e-16), and 20 orders of magnitude below q itself
# in the lower tail, so tiny percentiles are exact too.
_TAIL_CUT = 1e-32
_MIN_CUT = 1e-300
# Above this mean count the summation (O(√μ) terms) hands over to the search on the CDF.
_SUMMATION_MAX_MEAN = 1e9
# Above this many terms (a negative binomial with D·μ over ~2,500: ~50 ms of summation) the
# search on the CDF answers.
_SUMMATION_MAX_TERMS = 2e5
# Below this D·μ a negative binomial of more than _SUMMATION_MAX_TERMS terms (so μ > 2.5e7)
# is the Poisson distribution in double precision: its mass differs from Poisson's by a factor
# exp(D/2·((k − μ)² − k)), under exp(1e-17) where the mass lies (|k − μ| < 40·√μ).
_POISSON_LIMIT = 1e-20
# The search gives up past this count (a quantile beyond any float's integer precision).
_SEARCH_MAX = 2.0**1000


def traffic_model(dispersion: float) -> TrafficModel:
    """The arrival model a dispersion selects: ``poisson`` for D = 0, else ``negative-binomial``."""
    return "poisson" if dispersion == 0 else "negative-binomial"


def peak_rps(
    mean_rps: float,
    percentile: float = 0.95,
    window_s: float = 1.0,
    dispersion: float = 0.0,
) -> float:
    """Peak request rate (requests/s) that traffic stays at or below in a fraction of windows.

    ``peak_rps = quantile(percentile, count in window_s seconds) / window_s`` with the count
    Poisson of mean ``mean_rps · window_s`` (``dispersion = 0``) or negative binomial with
    variance ``mean + dispersion · mean²`` (see the module docstring).

    Args:
        mean_rps: long-run mean arrival rate λ in requests/s (≥ 0, may be fractional).
        percentile: fraction q of windows the peak must cover, in (0, 1); 0.95 by default.
        window_s: window w in seconds over which requests are counted (> 0); the peak is a
            rate averaged over one window, so longer windows smooth bursts out.
        dispersion: squared coefficient of variation D ≥ 0 of the underlying rate;
            0 means Poisson arrivals.

    Returns:
        The peak rate in requests/s: an integer count divided by ``window_s``
        (``peak_rps(64) == 77.0``, ``peak_rps(7) == 12.0``).

    Raises:
        ValueError: for an argument outside its range (the message names it).
    """
    _check_rate(mean_rps, "mean_rps")
    _check_percentile(percentile)
    if not (math.isfinite(window_s) and window_s > 0):
        raise ValueError(f"window_s must be a positive number of seconds (got {window_s})")
    _check_dispersion(dispersion)
    return peak_count(mean_rps * window_s, percentile, dispersion) / window_s


def peak_count(mean_count: float, percentile: float = 0.95, dispersion: float = 0.0) -> int:
    """The ``percentile`` quantile of a request count with mean ``mean_count`` (requests).

    Smallest k ≥ 0 with P(N ≤ k) ≥ percentile, for N Poisson(mean_count) when
    ``dispersion == 0`` and negative binomial (n = 1/D, p = n / (n + mean_count)) otherwise;
    equal to ``scipy.stats.poisson.ppf`` / ``scipy.stats.nbinom.ppf``.

    Raises:
        ValueError: for an argument outside its range.
    """
    _check_rate(mean_count, "mean_count")
    _check_percentile(percentile)
    _check_dispersion(dispersion)
    if mean_count == 0:
        return 0
    if dispersion == 0:
        return _poisson_quantile(percentile, mean_count)
    return _nbinom_quantile(percentile, mean_count, dispersion)


def mean_rps_from_daily(requests_per_day: float, active_hours: float = 24.0) -> float:
    """Mean request rate (requests/s) of a daily volume spread evenly over the active hours.

    ``mean_rps = requests_per_day / (active_hours · 3600 s/h)``; e.g. 8.64e6 requests/day over
    24 h is 100 requests/s, and the same volume in an 8-hour working day is 300 requests/s.

    Args:
        requests_per_day: requests per day (≥ 0).
        active_hours: hours per day during which the requests arrive, in (0, 24].

    Raises:
        ValueError: for an argument outside its range.
    """
    _check_rate(requests_per_day, "requests_per_day")
    if not (0 < active_hours <= 24):  # also rejects NaN
        raise ValueError(f"active_hours must be in (0, 24] hours (got {active_hours})")
    return requests_per_day / (active_hours * SECONDS_PER_HOUR)


def _check_rate(value: float, name: str) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0 (got {value})")


def _check_percentile(percentile: float) -> None:
    if not (0 < percentile < 1):  # also rejects NaN
        raise ValueError(
            f"percentile must be a fraction strictly between 0 and 1, e.g. 0.95 (got {percentile})"
        )


def _check_dispersion(dispersion: float) -> None:
    if not (math.isfinite(dispersion) and dispersion >= 0):
        raise ValueError(
            f"dispersion must be a finite number >= 0; 0 is Poisson (got {dispersion})"
        )


def _poisson_quantile(q: float, mu: float) -> int:
    """Smallest k with P(N ≤ k) ≥ q for N ~ Poisson(mu), mu > 0.

    Terms relative to the mode m = ⌊mu⌋: t(j+1) = t(j)·mu/(j+1), t(j−1) = t(j)·j/mu. Work is
    O(√mu): about 25·√mu terms for q = 0.95.
    """
    if mu > _SUMMATION_MAX_MEAN:
        from scipy.special import gammainc, gammaincc  # deferred: a third of a second

        # P(N ≤ k) = Q(k + 1, μ), P(N > k) = P(k + 1, μ) (regularised incomplete gamma)
        return _quantile_by_search(
            q,
            mu,
            lambda k: float(gammaincc(k + 1.0, mu)),
            lambda k: float(gammainc(k + 1.0, mu)),
            f"Poisson count of mean {mu:g}",
        )
    return _quantile_by_summation(q, math.floor(mu), lambda j: mu / (j + 1), lambda j: j / mu)


def _nbinom_quantile(q: float, mu: float, dispersion: float) -> int:
    """Smallest k with P(N ≤ k) ≥ q for N negative binomial of mean mu, variance mu + D·mu².

    With n = 1/D and r = 1 − p = mu/(n + mu), the mass P(k) ∝ Γ(k+n)/k!·r^k, so
    t(j+1) = t(j)·(j+n)·r/(j+1) and t(j−1) = t(j)·j/((j−1+n)·r); the mode is
    ⌊(n−1)·mu/n⌋ for n > 1, else 0. The upper tail falls off as r^k: about
    75·(1 + D·mu) terms; past :data:`_SUMMATION_MAX_TERMS` the quantile is searched on the
    CDF, P(N ≤ k) = I_p(n, k + 1) with p = 1 − r (the regularised incomplete beta function),
    in a bounded number of evaluations (:func:`_quantile_by_search`).
    """
    if nbinom_zero_mass(mu, dispersion) >= q:  # enough windows are empty: the quantile is 0
        return 0
    n = 1.0 / dispersion
    r = mu / (n + mu)
    if not r < 1.0:  # p = 1 - r = 1/(1 + D·mu) rounds to 0: beyond double precision
        raise ValueError(
            f"dispersion {dispersion:g} is too large for a mean of {mu:g} requests a window:"
            f" dispersion x mean must be well below 1e16 (got {dispersion * mu:.3g})"
        )
    terms = 75.0 * (1.0 + dispersion * mu) + 40.0 * math.sqrt(mu + dispersion * mu * mu)
    if terms > _SUMMATION_MAX_TERMS:
        if dispersion * mu < _POISSON_LIMIT:
            return _poisson_quantile(q, mu)
        return _nbinom_quantile_by_search(q, mu, n)
    mode = math.floor((n - 1.0) * mu / n) if n > 1.0 else 0
    return _quantile_by_summation(
        q, mode, lambda j: (j + n) * r / (j + 1), lambda j: j / ((j - 1 + n) * r)
    )


def _nbinom_quantile_by_search(q: float, mu: float, n: float) -> int:
    """:func:`_nbinom_quantile` from the distribution function: P(N ≤ k) = I_p(n, k + 1) and
    P(N > k) = I_r(k + 1, n), p = n/(n + mu) and r = mu/(n + mu) each formed directly (neither
    as 1 minus the other); the smaller of p and r is handed to the beta function, which
    keeps it exact (I_x(a, b) = 1 − I_(1−x)(b, a))."""
    from scipy.special import betainc, betaincc  # deferred: a third of a second

    p, r = n / (n + mu), mu / (n + mu)

    def cdf(k: int) -> float:
        return float(betainc(n, k + 1.0, p) if p <= 0.5 else betaincc(k + 1.0, n, r))

    def sf(k: int) -> float:
        return float(betaincc(n, k + 1.0, p) if p <= 0.5 else betainc(k + 1.0, n, r))

    return _quantile_by_search(q, mu, cdf, sf, f"negative binomial count of mean {mu:g}")


def _quantile_by_search(
    q: float,
    mean: float,
    cdf: Callable[[int], float],
    sf: Callable[[int], float],
    what: str,
) -> int:
    """Smallest k ≥ 0 with P(N ≤ k) ≥ q, from the distribution function ``cdf(k)`` = P(N ≤ k)
    and its complement ``sf(k)`` = P(N > k): for q ≥ 0.5 a k meets when sf(k) ≤ 1 − q (1 − q
    is exact there, and the upper tail keeps its relative precision for q near 1), below
    when cdf(k) ≥ q. The bracket starts at k = ⌈mean⌉ and doubles until k meets, then is
    bisected on the integers: at most 2·log₂(k) + 2 evaluations, whatever the shape of the
    distribution (about 60 for a quantile near 2·10¹⁰).

    Raises:
        ValueError: when a probability is not a number, or the quantile lies past
            :data:`_SEARCH_MAX` (``what`` names the distribution).
    """

    def meets(k: int) -> bool:
        value = sf(k) if q >= 0.5 else cdf(k)
        if math.isnan(value):
            raise ValueError(f"percentile {q!r} of a {what}: no quantile in double precision")
        return value <= 1.0 - q if q >= 0.5 else value >= q

    lo, hi = -1, max(1, math.ceil(mean))  # P(N ≤ −1) = 0 < q: −1 never meets
    while not meets(hi):
        if hi > _SEARCH_MAX:
            raise ValueError(
                f"percentile {q!r} of a {what}: the quantile is past {_SEARCH_MAX:.3g}"
            )
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # lo misses, hi meets
        mid = (lo + hi) // 2
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


def nbinom_zero_mass(mean_count: float, dispersion: float) -> float:
    """P(N = 0) of a negative binomial count of mean μ and dispersion D > 0:
    ``p^n = (1 + D·μ)^(−1/D)`` (n = 1/D, p = n / (n + μ)), formed from logarithms so that
    neither D·μ overflowing nor n underflowing (``dispersion = 1e300``) makes it NaN; towards
    1 as D grows (the rate is almost always near 0, with rare huge bursts)."""
    spread = dispersion * mean_count
    log_ratio = (
        math.log1p(spread) if math.isfinite(spread) else math.log(dispersion) + math.log(mean_count)
    )
    return math.exp(-log_ratio / dispersion)


def _quantile_by_summation(q: float, mode: int, up: Ratio, down: Ratio) -> int:
    """Smallest k with P(N ≤ k) ≥ q for a unimodal count N given by its mass ratios.

    ``up(j)`` is P(j+1)/P(j) and ``down(j)`` is P(j−1)/P(j), elementwise on arrays of j. The
    mass is summed relative to the mode (t(mode) = 1) and normalised by the total (pairwise
    summation), so no term under- or overflows and no normalising constant (e^(−mu),
    p^n) is ever formed. For q ≥ 0.5 the upper tail P(N > k) is summed from the far end and
    compared with 1 − q, which keeps full relative precision for percentiles close to 1.
    Products and running sums are sequential (``cumprod``, ``cumsum``), as a loop would form
    them.
    """
    lower_cut = max(_MIN_CUT, min(_TAIL_CUT, q * 1e-20))
    below = _run(mode, -1, down, lower_cut)  # t(m−1), t(m−2), … while ≥ lower_cut
    above_mode = _run(mode, 1, up, _TAIL_CUT)  # t(m+1), t(m+2), … while ≥ _TAIL_CUT
    first = mode - len(below)
    terms = np.concatenate((below[::-1], [1.0], above_mode))
    total = float(np.sum(terms))  # pairwise: relative error ~1e-16·log2(len)
    if q < 0.5:  # lower half: P(N ≤ k) from the bottom, smallest terms first
        reached = np.cumsum(terms) / total >= q
        if reached.any():
            return first + int(np.argmax(reached))
    # upper half: P(N > k) ≤ 1 − q (exact for q ≥ 0.5) from the top, smallest terms first:
    # the first k from the top whose tail sum with its own term exceeds 1 − q
    tail = np.cumsum(terms[:0:-1]) / total > (1.0 - q)
    if not tail.any():
        return first
    return first + len(terms) - 1 - int(np.argmax(tail))


def _run(mode: int, step: int, ratio: Ratio, cut: float) -> Any:
    """t(mode + step·i) for i = 1, 2, … relative to t(mode) = 1, while ≥ ``cut`` (and j ≥ 0)."""
    parts = []
    t, j, size = 1.0, mode, 256
    while True:
        js = np.arange(j, j + size) if step > 0 else np.arange(j, max(j - size, 0), -1)
        if len(js) == 0:
            break
        run = np.cumprod(np.concatenate(([t], ratio(js.astype(float)))))[1:]
        small = run < cut
        if small.any():
            parts.append(run[: int(np.argmax(small))])
            break
        parts.append(run)
        t, j, size = float(run[-1]), j + step * len(js), size * 2
    return np.concatenate(parts) if parts else np.empty(0)
