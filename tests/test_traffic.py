"""Peak traffic: Poisson and negative binomial quantiles, daily volumes, argument checks."""

from __future__ import annotations

import math
import subprocess
import sys
from decimal import Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import nbinom, poisson

from inferencesize.traffic import (
    mean_rps_from_daily,
    peak_count,
    peak_rps,
    traffic_model,
)


def poisson_cdf_exact(k: int, mu: float) -> Decimal:
    """P(N ≤ k) for N ~ Poisson(mu), summed in 60-digit decimal arithmetic (independent of the
    implementation under test and of scipy)."""
    with localcontext() as ctx:
        ctx.prec = 60
        m = Decimal(mu)
        term = (-m).exp()
        total = term
        for j in range(1, k + 1):
            term = term * m / j
            total += term
        return total


# --- seeds from DESIGN.md §4 and issue 4 ------------------------------------------------------


def test_seed_64_is_77() -> None:
    # P(N ≤ 76 | 64) = 0.9377 < 0.95 ≤ P(N ≤ 77 | 64) = 0.9508
    assert peak_rps(64) == 77
    assert poisson_cdf_exact(76, 64) < Decimal("0.95") <= poisson_cdf_exact(77, 64)


def test_seed_7_is_12() -> None:
    # P(N ≤ 11 | 7) = 0.9467 < 0.95 ≤ P(N ≤ 12 | 7) = 0.9730
    assert peak_rps(7) == 12
    assert poisson_cdf_exact(11, 7) < Decimal("0.95") <= poisson_cdf_exact(12, 7)


def test_seeds_equal_scipy() -> None:
    assert peak_rps(64) == poisson.ppf(0.95, 64) == 77
    assert peak_rps(7) == poisson.ppf(0.95, 7) == 12


# --- hand-computed small cases ----------------------------------------------------------------


def test_fractional_mean_0_3() -> None:
    # P(0) = e^-0.3 = 0.7408 < 0.95; P(≤1) = e^-0.3 · (1 + 0.3) = 0.9631 ≥ 0.95  -> 1
    assert math.exp(-0.3) < 0.95 <= math.exp(-0.3) * 1.3
    assert peak_rps(0.3) == 1


def test_fractional_mean_2_5() -> None:
    # e^-2.5 = 0.082085; terms 2.5^k/k! for k = 0..5: 1, 2.5, 3.125, 2.6042, 1.6276, 0.8138
    # P(≤4) = 0.082085 · 10.8568 = 0.8912 < 0.95;  P(≤5) = 0.082085 · 11.6706 = 0.9580  -> 5
    e = math.exp(-2.5)
    sums = [e * sum(2.5**j / math.factorial(j) for j in range(k + 1)) for k in (4, 5)]
    assert sums[0] == pytest.approx(0.8912, abs=1e-4)
    assert sums[1] == pytest.approx(0.9580, abs=1e-4)
    assert peak_rps(2.5) == 5


def test_fractional_mean_6_5() -> None:
    # P(≤10 | 6.5) = 0.9332 < 0.95 ≤ P(≤11 | 6.5) = 0.9661
    assert poisson_cdf_exact(10, 6.5) < Decimal("0.95") <= poisson_cdf_exact(11, 6.5)
    assert peak_rps(6.5) == 11


def test_zero_mean_has_zero_peak() -> None:
    assert peak_rps(0) == 0
    assert peak_rps(0, dispersion=0.5) == 0
    assert peak_count(0.0, 0.999) == 0


def test_window_60_s() -> None:
    # 1.5 req/s over 60 s windows: mean count 90; P(≤105 | 90) = 0.9460 < 0.95 ≤ P(≤106) = 0.9561
    assert poisson_cdf_exact(105, 90) < Decimal("0.95") <= poisson_cdf_exact(106, 90)
    assert peak_rps(1.5, window_s=60) == pytest.approx(106 / 60)
    # longer windows average bursts out: the per-second peak of the same traffic is higher
    assert peak_rps(1.5, window_s=60) < peak_rps(1.5, window_s=1) == 4


def test_sub_second_window() -> None:
    # 64 req/s counted over 0.5 s: mean count 32 -> ppf(0.95, 32) = 42 -> 84 req/s
    assert peak_rps(64, window_s=0.5) == poisson.ppf(0.95, 32) / 0.5 == 84


def test_other_percentiles() -> None:
    assert peak_rps(64, percentile=0.99) == 83
    assert peak_rps(64, percentile=0.5) == 64


def test_large_mean_is_fast_and_near_normal() -> None:
    mu = 1e6
    k = peak_count(mu)
    assert k == poisson.ppf(0.95, mu)
    assert k == pytest.approx(mu + 1.6449 * math.sqrt(mu), abs=3)


def test_far_upper_tail_is_exact() -> None:
    # at q = 1 - 2.4e-15 the answer is decided by the 16th digit of the CDF
    mu, q = 41.26070054782933, 0.9999999999999976
    k = peak_count(mu, q)
    assert k == 101
    assert poisson_cdf_exact(k - 1, mu) < Decimal(q) <= poisson_cdf_exact(k, mu)


def test_far_lower_tail_is_exact() -> None:
    mu, q = 500.0, 1e-30
    k = peak_count(mu, q)
    assert poisson_cdf_exact(k - 1, mu) < Decimal(q) <= poisson_cdf_exact(k, mu)


# --- over-dispersion (negative binomial) ------------------------------------------------------


def test_dispersion_parameters_match_mean_and_variance() -> None:
    mean, d = 64.0, 0.1
    n = 1 / d
    p = n / (n + mean)
    assert nbinom.mean(n, p) == pytest.approx(mean)
    assert nbinom.var(n, p) == pytest.approx(mean + d * mean**2)  # 64 + 409.6 = 473.6


def test_dispersion_increases_the_peak() -> None:
    assert peak_rps(64, dispersion=0.1) == 103 > peak_rps(64) == 77
    peaks = [peak_rps(64, dispersion=d) for d in (0, 0.01, 0.05, 0.1, 0.5, 1.0)]
    assert peaks == sorted(peaks)
    assert peaks[0] < peaks[-1]


def test_negative_binomial_by_hand() -> None:
    # D = 1 (n = 1): N is geometric, P(N ≤ k) = 1 − r^(k+1) with r = mu/(1 + mu).
    # mu = 3: r = 0.75; 1 − 0.75^10 = 0.9437 < 0.95 ≤ 1 − 0.75^11 = 0.9578  -> 10
    assert 1 - 0.75**10 < 0.95 <= 1 - 0.75**11
    assert peak_count(3.0, 0.95, dispersion=1.0) == 10
    # mu = 1, D = 0.5 (n = 2, p = 2/3): P(0) = 4/9, P(1) = 2·(4/9)·(1/3) = 8/27,
    # P(2) = 3·(4/9)·(1/9) = 4/27 -> CDF 0.444, 0.741, 0.889, P(3) = 4·(4/9)/27 = 0.0658 -> 0.955
    assert peak_count(1.0, 0.5, dispersion=0.5) == 1
    assert peak_count(1.0, 0.95, dispersion=0.5) == 3


def test_negative_binomial_does_not_import_scipy() -> None:
    code = (
        "import sys; from inferencesize.traffic import peak_rps;"
        "assert peak_rps(64, dispersion=0.1) == 103; assert peak_rps(1000, dispersion=0.5) > 1000;"
        "assert 'scipy' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_tiny_dispersion_tends_to_poisson() -> None:
    assert peak_rps(64, dispersion=1e-12) == 77


# --- long tails: the quantile searched on the distribution function -------------------------


def test_a_long_geometric_tail_by_hand() -> None:
    # D = 1, mu = 1e5: 75·(1 + 1e5) terms, past the summation. Geometric: P(N ≤ k) =
    # 1 − r^(k+1), r = mu/(1 + mu), so k = ⌈log(0.05)/log(r)⌉ − 1 = ⌈299574.73⌉ − 1 = 299574
    mu = 1e5
    assert math.log(0.05) / math.log1p(-1 / (1 + mu)) == pytest.approx(299574.7252, abs=1e-4)
    assert peak_count(mu, 0.95, dispersion=1.0) == 299574 == nbinom.ppf(0.95, 1, 1 / (1 + mu))


def test_a_large_poisson_mean_is_near_normal_on_both_sides() -> None:
    # mu = 1e12, past the summation: mu ± 1.6449·√mu = mu ± 1,644,854 (to within one)
    mu = 1e12
    high, low = peak_count(mu, 0.95), peak_count(mu, 0.05)
    assert high == poisson.ppf(0.95, mu) and abs(high - (mu + 1644853.6)) <= 1
    assert abs(low - (mu - 1644853.6)) <= 1
    # scipy's own ppf has no answer below the median here (NaN): the definition instead
    assert math.isnan(poisson.ppf(0.05, mu))
    assert poisson.cdf(low, mu) >= 0.05 > poisson.cdf(low - 1, mu)


def test_a_dispersion_far_below_one_over_the_mean_is_poisson() -> None:
    # D·mu = 1e-21: the mass is Poisson's to double precision (scipy.stats.nbinom.ppf
    # answers 1000029893 here, 22,122 below the Poisson quantile, and 0 at D = 1e-30)
    poisson_peak = peak_count(1e9, 0.95)
    assert poisson_peak == poisson.ppf(0.95, 1e9)
    assert peak_count(1e9, 0.95, dispersion=1e-30) == poisson_peak
    assert peak_count(1e9, 0.95, dispersion=1e-21) == poisson_peak
    # D = 1e-12: variance mu + D·mu² = 1.001e9, mu + 1.6449·√(1.001e9) = 1000052040.8
    assert peak_count(1e9, 0.95, dispersion=1e-12) == 1000052041


def test_model_names() -> None:
    assert traffic_model(0) == "poisson"
    assert traffic_model(0.2) == "negative-binomial"


# --- properties -------------------------------------------------------------------------------

means = st.floats(min_value=0, max_value=1e4, allow_nan=False)
percentiles = st.floats(min_value=0.01, max_value=0.999)
dispersions = st.sampled_from([0.0, 0.01, 0.2, 1.0])


@settings(max_examples=300, deadline=None)
@given(mu=st.floats(min_value=1e-6, max_value=1e4), q=percentiles)
def test_poisson_equals_scipy(mu: float, q: float) -> None:
    assert peak_count(mu, q) == poisson.ppf(q, mu)


@settings(max_examples=300, deadline=None)
@given(
    mu=st.floats(min_value=1e-4, max_value=2e4),
    q=st.floats(min_value=1e-9, max_value=0.999999),
    d=st.floats(min_value=1e-9, max_value=3.0),
)
def test_negative_binomial_equals_scipy(mu: float, q: float, d: float) -> None:
    n = 1 / d
    assert peak_count(mu, q, d) == nbinom.ppf(q, n, n / (n + mu))


@settings(max_examples=200, deadline=None)
@given(mu=st.floats(min_value=1e-3, max_value=300), q=st.floats(min_value=1e-12, max_value=0.999))
def test_poisson_quantile_definition(mu: float, q: float) -> None:
    k = peak_count(mu, q)
    assert poisson_cdf_exact(k, mu) >= Decimal(q)
    assert k == 0 or poisson_cdf_exact(k - 1, mu) < Decimal(q)


@settings(max_examples=200, deadline=None)
@given(a=means, b=means, q=percentiles, d=dispersions)
def test_monotone_in_mean(a: float, b: float, q: float, d: float) -> None:
    lo, hi = sorted((a, b))
    assert peak_rps(lo, q, dispersion=d) <= peak_rps(hi, q, dispersion=d)


@settings(max_examples=200, deadline=None)
@given(mu=means, a=percentiles, b=percentiles, d=dispersions)
def test_monotone_in_percentile(mu: float, a: float, b: float, d: float) -> None:
    lo, hi = sorted((a, b))
    assert peak_rps(mu, lo, dispersion=d) <= peak_rps(mu, hi, dispersion=d)


@settings(max_examples=100, deadline=None)
@given(mu=st.floats(min_value=0.1, max_value=1e4))
def test_peak_covers_the_mean_at_high_percentiles(mu: float) -> None:
    # the 95th percentile of a Poisson count is at least its mean rounded down
    assert peak_rps(mu) >= math.floor(mu)


# --- daily volume -----------------------------------------------------------------------------


def test_daily_volume_over_24_hours() -> None:
    # 8.64e6 requests / (24 h · 3600 s/h) = 8.64e6 / 86400 s = 100 req/s
    assert mean_rps_from_daily(8.64e6) == pytest.approx(100.0)
    assert mean_rps_from_daily(8.64e6, active_hours=24) == pytest.approx(100.0)


def test_daily_volume_over_a_working_day() -> None:
    # the same volume in 8 hours: 8.64e6 / 28800 s = 300 req/s
    assert mean_rps_from_daily(8.64e6, active_hours=8) == pytest.approx(300.0)
    assert mean_rps_from_daily(0) == 0


# --- argument checks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mean_rps": -1}, "mean_rps must be a finite number >= 0"),
        ({"mean_rps": math.inf}, "mean_rps must be a finite number >= 0"),
        ({"mean_rps": math.nan}, "mean_rps must be a finite number >= 0"),
        ({"mean_rps": 1, "percentile": 0}, "percentile must be a fraction strictly between"),
        ({"mean_rps": 1, "percentile": 1}, "percentile must be a fraction strictly between"),
        ({"mean_rps": 1, "percentile": 95}, "percentile must be a fraction strictly between"),
        ({"mean_rps": 1, "percentile": math.nan}, "percentile must be a fraction"),
        ({"mean_rps": 1, "window_s": 0}, "window_s must be a positive number of seconds"),
        ({"mean_rps": 1, "window_s": -5}, "window_s must be a positive number of seconds"),
        ({"mean_rps": 1, "dispersion": -0.1}, "dispersion must be a finite number >= 0"),
        ({"mean_rps": 1, "dispersion": math.inf}, "dispersion must be a finite number >= 0"),
    ],
)
def test_peak_rps_rejects_bad_arguments(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        peak_rps(**kwargs)


@pytest.mark.parametrize("hours", [0, -1, 24.5, math.nan])
def test_daily_rejects_bad_active_hours(hours: float) -> None:
    with pytest.raises(ValueError, match=r"active_hours must be in \(0, 24\]"):
        mean_rps_from_daily(1000, hours)


def test_daily_rejects_negative_volume() -> None:
    with pytest.raises(ValueError, match="requests_per_day must be a finite number >= 0"):
        mean_rps_from_daily(-1)
