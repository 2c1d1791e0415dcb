"""The words of a question are declared once (inferencesize.vocabulary) and the scenario
schema, the flags and the solvers all take them: a scenario's value is the enum member, the
flag's choices are its values, and a percentile's fraction is read from its name."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.verify import STATISTICS
from inferencesize.vocabulary import (
    PERCENTILES,
    QUANTILES,
    Arrivals,
    Batching,
    CostBasis,
    Mode,
    Objective,
    Statistic,
    fraction_of,
)

BASE: dict[str, Any] = {"model": "llama-3-8b", "isl": 1000, "osl": 200, "peak_rps": 10}


def test_a_percentile_is_read_from_its_name() -> None:
    assert Statistic.MEAN.fraction is None
    assert Statistic.P50.fraction == 50 / 100
    assert Statistic.P99.fraction == 99 / 100
    assert Statistic.MEAN not in PERCENTILES
    assert QUANTILES == (0.5, 0.9, 0.95, 0.99)  # p50, p90, p95, p99 as fractions
    assert STATISTICS == ("mean", "p50", "p90", "p95", "p99")  # what verify reports


@pytest.mark.parametrize(
    ("field", "value", "member"),
    [
        ("latency_stat", "p95", Statistic.P95),
        ("arrivals", "poisson", Arrivals.POISSON),
        ("mode", "sequential", Mode.SEQUENTIAL),
        ("batching", "inflight", Batching.INFLIGHT),
        ("objective", "cost", Objective.COST),
    ],
)
def test_the_scenario_holds_the_vocabulary(field: str, value: str, member: object) -> None:
    limits = {"e2e_ms": 9000} if field == "mode" else {"ttft_ms": 500}
    spec = ScenarioSpec.model_validate({**BASE, **limits, field: value})
    assert getattr(spec, field) is member


def test_the_cost_basis_of_a_scenario_is_the_enum() -> None:
    spec = ScenarioSpec.model_validate({**BASE, "ttft_ms": 500, "economics": {"basis": "owned"}})
    assert spec.economics is not None and spec.economics.basis is CostBasis.OWNED


@pytest.mark.parametrize(
    ("flag", "enum"),
    [("--latency-stat", Statistic), ("--arrivals", Arrivals), ("--objective", Objective)],
)
def test_the_flags_offer_the_vocabulary(flag: str, enum: type[Statistic]) -> None:
    bad = CliRunner().invoke(app, ["plan", "default", flag, "nonsense"])
    assert bad.exit_code == 2
    for member in enum:
        assert member.value in bad.output


@pytest.mark.parametrize(
    ("name", "fraction"),
    [("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999)],
)
def test_a_percentiles_fraction_is_its_decimal_name_divided_by_100(
    name: str, fraction: float
) -> None:
    # float("99.9") / 100 is 0.9990000000000001: the name is read as a decimal, so a p99.9
    # limit is held at the double nearest 0.999, the fraction a user states for it
    assert fraction_of(name) == fraction
