"""plan --plot and --verify on a pipeline scenario: refused in one line (exit 2) before any
planning, never a plan printed without what was asked for; --help says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--verify"], "--verify simulates"),
        (["--plot", "PLOT"], "--plot draws"),
        (["--plot", "PLOT", "--verify"], "--plot and --verify draw and simulate"),
    ],
)
@pytest.mark.parametrize("scenario", ["pipeline-agent", "pipeline-guardrail-judge"])
def test_pipeline_plot_and_verify_are_refused(
    scenario: str, extra: list[str], named: str, tmp_path: Path
) -> None:
    plot = tmp_path / "plan.png"
    args = ["plan", scenario, *(str(plot) if a == "PLOT" else a for a in extra)]
    result = runner.invoke(app, args, env={"NO_COLOR": "1"})
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: {named} one model's plan; {scenario} is a pipeline")
    assert "stages: drop " in result.stderr
    assert not plot.exists()


def test_the_pipeline_without_them_still_plans() -> None:
    result = runner.invoke(app, ["plan", "pipeline-agent", "-f", "json"])
    assert result.exit_code == 0 and '"pipeline"' in result.stdout


def test_help_says_a_pipeline_is_refused() -> None:
    out = runner.invoke(app, ["plan", "--help"], env={"COLUMNS": "200"}).stdout
    text = " ".join(re.sub(r"[\u2500-\u257f]", " ", out).split())
    assert text.count("a pipeline scenario is refused") == 2  # --plot and --verify
