"""Traffic whose peak is no request at all: a mean far below one request a second, a
percentile near 0, a dispersion so large that almost every second is empty. `peak` answers
the quantile (0); the commands that size for it say there is nothing to size for, in one line
(tests/hostile/test_inputs.py), or in a sweep's row; never a NaN, an overflow or exit 70."""

from __future__ import annotations

import csv
import io
import math

import pytest
from scipy.stats import nbinom
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.traffic import nbinom_zero_mass, peak_count

runner = CliRunner()


@pytest.mark.parametrize(
    ("mean", "dispersion", "expected"),
    [
        (1.0, 1.0, 0.5),  # (1 + 1·1)^(-1/1) = 1/2
        (3.0, 2.0, 7.0**-0.5),  # (1 + 2·3)^(-1/2) = 0.378
        (10.0, 0.5, 6.0**-2.0),  # (1 + 0.5·10)^(-2) = 1/36
    ],
)
def test_zero_mass_by_hand_and_by_scipy(mean: float, dispersion: float, expected: float) -> None:
    n = 1.0 / dispersion
    assert nbinom_zero_mass(mean, dispersion) == pytest.approx(expected, rel=1e-12)
    assert nbinom_zero_mass(mean, dispersion) == pytest.approx(
        nbinom.pmf(0, n, n / (n + mean)), rel=1e-12
    )


@pytest.mark.parametrize("mean", [1e-300, 10.0, 1e9])
def test_a_huge_dispersion_leaves_almost_every_second_empty(mean: float) -> None:
    # (1 + D·mu)^(-1/D) = e^(-log(D·mu) / D): log(1e300 · 1e9) = 711, / 1e300 -> e^-7e-298 = 1
    assert nbinom_zero_mass(mean, 1e300) == 1.0
    assert peak_count(mean, 0.95, 1e300) == 0
    assert peak_count(mean, 0.999999, 1e300) == 0


def test_an_extreme_dispersion_has_a_finite_quantile_or_says_why() -> None:
    # D = 1e4, mu = 1: P(N = 0) = 10001^(-1e-4) = 0.99908 < 0.999999: scipy's quantile
    k = peak_count(1.0, 0.999999, 1e4)
    assert k == nbinom.ppf(0.999999, 1e-4, 1e-4 / (1e-4 + 1.0)) and math.isfinite(k) and k > 0
    # D = 1e10, mu = 1e9: P(N = 0) = e^(-log(1e19) / 1e10) = 1 - 4.4e-9 < 1 - 1e-9, and
    # p = 1 / (1 + D·mu) = 1e-19 rounds 1 - p to 1: no quantile in double precision
    with pytest.raises(ValueError, match=r"dispersion 1e\+10 is too large for a mean of 1e\+09"):
        peak_count(1e9, 1 - 1e-9, 1e10)
    args = ["peak", "--mean-rps", "1e9", "--dispersion", "1e10", "--percentile", "0.999999999"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (
        "error: --dispersion 1e+10 is too large for a mean of 1e+09 requests a window:"
        " dispersion x mean must be well below 1e16 (got 1e+19)\n"
    )


@pytest.mark.parametrize(
    ("mean", "percentile", "dispersion"),
    [
        (1e3, 1 - 1e-15, 1e6),  # 42 s in scipy.stats.nbinom.ppf; its answer was 0.3 % high
        (1e9, 1 - 1.1e-16, 1e6),  # D·mu = 1e15: a quantile near 2e16
    ],
)
def test_an_extreme_quantile_is_the_quantile(
    mean: float, percentile: float, dispersion: float
) -> None:
    k = peak_count(mean, percentile, dispersion)
    n = 1 / dispersion
    p = n / (n + mean)
    # P(N ≤ k) ≥ q > P(N ≤ k − 1), as the upper tails: P(N > k) ≤ 1 − q < P(N > k − 1)
    # (1 − q is exact; P(N ≤ k) itself rounds to 1 within 1e-16 of it)
    assert nbinom.sf(k, n, p) <= 1 - percentile < nbinom.sf(k - 1, n, p)


@pytest.mark.parametrize(
    ("args", "stdout"),
    [
        (["--mean-rps", "10", "--dispersion", "1e300"], "0\n"),
        (["--mean-rps", "1e-300"], "0\n"),  # P(N = 0) = e^-1e-300 = 1
        (["--mean-rps", "10", "--percentile", "1e-300"], "0\n"),  # e^-10 = 4.5e-5 >= 1e-300
    ],
)
def test_peak_answers_the_quantile(args: list[str], stdout: str) -> None:
    result = runner.invoke(app, ["peak", *args])
    assert result.exit_code == 0, result.stderr
    assert (result.stdout, result.stderr) == (stdout, "")


def test_a_sweep_point_with_no_peak_is_a_row_saying_why() -> None:
    question = ["--model", "llama-3.1-8b", "--isl", "500", "--osl", "200", "--ttft-ms", "1000"]
    axes = ["--vary", "mean_rps=1e-300,1", "--vary", "dispersion=0,1e300"]
    result = runner.invoke(app, ["sweep", *question, "--hardware", "dgx-h100", *axes])
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["feasible"] for r in rows] == ["false", "false", "true", "false"]
    assert rows[0]["reason"].startswith("invalid traffic: mean_rps: a mean of 1e-300 req/s is")
    assert rows[1]["reason"].startswith("invalid traffic: mean_rps: a mean of 1e-300 req/s")
    assert rows[2]["peak_rps"] == "3" and rows[2]["reason"] == ""  # Poisson p95 of 1 req/s
    assert rows[3]["reason"].startswith("invalid traffic: dispersion: 1e+300 leaves at least 95 %")
