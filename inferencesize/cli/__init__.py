"""The `infersize` command line (Typer). Data on stdout, diagnostics on stderr."""

from __future__ import annotations

from typing import Annotated

import typer

from inferencesize import __version__
from inferencesize.cli import (
    catalog_cmd,
    frontier_cmd,
    peak_cmd,
    perf_cmd,
    plan_cmd,
    simulate_cmd,
    sweep_cmd,
)
from inferencesize.cli.common import State, handle_errors

app = typer.Typer(
    name="infersize",
    help=(
        "Size LLM inference deployments: which GPUs, how many servers, with what parallelism"
        " and precision, for a model, prompt/answer lengths, traffic and latency limits.\n\n"
        "Exit codes: 0 ok, 1 bad input or catalog error, 2 usage error, 3 no feasible plan,"
        " 4 plan exceeds the budget (check)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(catalog_cmd.app, name="catalog")
app.command("peak")(peak_cmd.peak)
app.command("estimate")(handle_errors(perf_cmd.estimate))
app.command("validate")(handle_errors(perf_cmd.validate))
app.command("calibrate")(handle_errors(perf_cmd.calibrate))
app.command("plan")(handle_errors(plan_cmd.plan_command))
app.command("check")(handle_errors(plan_cmd.check_command))
app.command("sweep")(handle_errors(sweep_cmd.sweep_command))
app.command("frontier")(handle_errors(frontier_cmd.frontier_command))
app.command("simulate")(handle_errors(simulate_cmd.simulate_command))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"infersize {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks for errors (for bug reports).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    State.debug = debug


def main() -> None:
    """Console-script entry point."""
    app()
