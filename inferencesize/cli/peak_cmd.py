"""`infersize peak`: the peak request rate to size for, from a mean rate or a daily volume."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from inferencesize import report
from inferencesize.cli.common import (
    check_format,
    emit_data,
    format_option,
    handle_errors,
    usage_error,
)
from inferencesize.errors import InputError
from inferencesize.traffic import mean_rps_from_daily, peak_rps, traffic_model

FORMATS = ("plain", *report.FORMATS)


def format_number(value: float) -> str:
    """A rate for one line of plain output: ``77`` when integral, else up to 6 decimals."""
    if value.is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


@handle_errors
def peak(
    mean_rps: Annotated[
        float | None,
        typer.Option(
            "--mean-rps",
            metavar="RPS",
            help="Mean arrival rate in requests/s (long-run average).",
            show_default=False,
        ),
    ] = None,
    requests_per_day: Annotated[
        float | None,
        typer.Option(
            "--requests-per-day",
            metavar="N",
            help="Daily request volume instead of --mean-rps; spread over --active-hours.",
            show_default=False,
        ),
    ] = None,
    active_hours: Annotated[
        float | None,
        typer.Option(
            "--active-hours",
            metavar="HOURS",
            help="Hours per day the daily volume arrives in, (0, 24]; default 24.",
            show_default=False,
        ),
    ] = None,
    percentile: Annotated[
        float,
        typer.Option(
            "--percentile",
            metavar="Q",
            help="Fraction of windows the peak must cover, strictly between 0 and 1.",
        ),
    ] = 0.95,
    window_s: Annotated[
        float,
        typer.Option(
            "--window-s",
            metavar="SECONDS",
            help="Window in seconds over which requests are counted.",
        ),
    ] = 1.0,
    dispersion: Annotated[
        float,
        typer.Option(
            "--dispersion",
            metavar="D",
            help="Burstiness D >= 0: squared coefficient of variation of the rate itself"
            " (negative binomial counts); 0 is Poisson.",
        ),
    ] = 0.0,
    fmt: Annotated[
        str, format_option(FORMATS, "plain: the number alone (for scripts); or a record.")
    ] = "plain",
) -> None:
    """Peak requests/s to size for, from a mean rate or a daily volume.

    The PERCENTILE quantile of the number of requests in a WINDOW-S window, divided by the
    window, for random (Poisson) arrivals at the mean rate. With 64 requests/s on average, 95 % of one-second windows see at most 77 requests, so size
    for 77 requests/s. Give the mean as --mean-rps, or as --requests-per-day (optionally with
    --active-hours: 8.64 million requests/day over 24 h is 100 requests/s).

    Burstier traffic: the rate itself varies hour to hour with a squared coefficient of
    variation of D (--dispersion D), which makes the counts negative binomial with variance
    mean + D·mean²; D = 0 is Poisson. D = 0.04 means the rate typically swings by ±20 %.

    The default output is the number alone, for scripts; --format table|json|yaml|csv for
    more.

    Examples:
      infersize peak --mean-rps 64  # prints 77
      infersize peak --mean-rps 64 --percentile 0.99 --format json
      infersize peak --requests-per-day 2e6 --active-hours 10 --dispersion 0.05
      infersize peak --mean-rps 20 --window-s 60  # the peak of one-minute averages
    """
    check_format(fmt, FORMATS)
    if (mean_rps is None) == (requests_per_day is None):
        raise usage_error("give exactly one of --mean-rps or --requests-per-day")
    if active_hours is not None and requests_per_day is None:
        raise usage_error("--active-hours goes with --requests-per-day, not --mean-rps")
    try:
        if requests_per_day is not None:
            hours = 24.0 if active_hours is None else active_hours
            mean = mean_rps_from_daily(requests_per_day, hours)
        else:
            assert mean_rps is not None  # narrowed by the exactly-one check above
            mean = mean_rps
        peak_value = peak_rps(mean, percentile, window_s, dispersion)
    except ValueError as err:
        raise InputError(_option_names(str(err))) from None

    data: dict[str, Any] = {
        "mean_rps": mean,
        "percentile": percentile,
        "peak_rps": peak_value,
        "window_s": window_s,
        "dispersion": dispersion,
        "model": traffic_model(dispersion),
    }
    if fmt == "plain":
        report.emit(sys.stdout, format_number(peak_value))
        return

    def table(out: Any) -> None:
        pairs: list[tuple[str, Any]] = []
        if requests_per_day is not None:
            pairs.append(("requests/day", format_number(requests_per_day)))
            pairs.append(
                ("active hours", format_number(24.0 if active_hours is None else active_hours))
            )
        pairs += [
            ("mean rate", f"{format_number(mean)} req/s"),
            ("percentile", format_number(percentile)),
            ("window", f"{format_number(window_s)} s"),
            (
                "arrivals",
                data["model"] + (f" (D = {format_number(dispersion)})" if dispersion else ""),
            ),
            ("peak rate", f"{format_number(peak_value)} req/s"),
            ("peak / mean", "n/a" if mean == 0 else f"{peak_value / mean:.2f}x"),
        ]
        out.print(report.key_value_table("Peak traffic", pairs))

    emit_data(fmt, data, table=table)


def _option_names(message: str) -> str:
    """Name the flags, not the Python arguments, in a validation message."""
    for arg, flag in (
        ("mean_rps", "--mean-rps"),
        ("requests_per_day", "--requests-per-day"),
        ("active_hours", "--active-hours"),
        ("percentile", "--percentile"),
        ("window_s", "--window-s"),
        ("dispersion", "--dispersion"),
    ):
        if message.startswith(arg + " "):
            return flag + message[len(arg) :]
    return message
