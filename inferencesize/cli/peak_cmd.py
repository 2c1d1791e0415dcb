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
from inferencesize.specs.common import MAX_RPS
from inferencesize.specs.economics import (
    SECONDS_PER_DAY,
    requests_per_day_of_users,
    users_of_requests,
)
from inferencesize.traffic import mean_rps_from_daily, peak_rps, traffic_model
from inferencesize.units import SECONDS_PER_HOUR

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
    daily_active_users: Annotated[
        float | None,
        typer.Option(
            "--daily-active-users",
            metavar="U",
            help="People a day instead of --mean-rps (with --requests-per-user): U × R"
            " requests over --active-hours.",
            show_default=False,
        ),
    ] = None,
    requests_per_user: Annotated[
        float | None,
        typer.Option(
            "--requests-per-user",
            metavar="R",
            help="Requests each user sends a day; with a rate or volume, prints the users.",
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
    --active-hours: 8.64 million requests/day over 24 h is 100 requests/s), or as people:
    --daily-active-users U --requests-per-user R is U × R requests/day. With a rate or a
    volume, --requests-per-user counts the users it takes (both directions).

    Burstier traffic: the rate itself varies hour to hour with a squared coefficient of
    variation of D (--dispersion D), which makes the counts negative binomial with variance
    mean + D·mean²; D = 0 is Poisson. D = 0.04 means the rate typically swings by ±20 %.

    The default output is the number alone, for scripts; --format table|json|yaml|csv for
    more.

    Examples:
      infersize peak --mean-rps 64  # prints 77
      infersize peak --mean-rps 64 --percentile 0.99 --format json
      infersize peak --requests-per-day 2e6 --active-hours 10 --dispersion 0.05
      infersize peak --daily-active-users 678720 --requests-per-user 3 --active-hours 8
      infersize peak --mean-rps 70.7 --active-hours 8 --requests-per-user 3 -f table  # users
      infersize peak --mean-rps 20 --window-s 60  # the peak of one-minute averages
    """
    check_format(fmt, FORMATS)
    given = [x for x in (mean_rps, requests_per_day, daily_active_users) if x is not None]
    if len(given) != 1:
        raise usage_error(
            "give exactly one of --mean-rps, --requests-per-day or --daily-active-users"
        )
    if daily_active_users is not None and requests_per_user is None:
        raise usage_error("--daily-active-users needs --requests-per-user")
    if active_hours is not None and mean_rps is not None and requests_per_user is None:
        raise usage_error(
            "--active-hours goes with --requests-per-day or --daily-active-users, or with"
            " --mean-rps and --requests-per-user (to count the users)"
        )
    hours = 24.0 if active_hours is None else active_hours
    try:
        day = _daily_volume(
            mean_rps, requests_per_day, daily_active_users, requests_per_user, hours
        )
        mean = mean_rps if mean_rps is not None else mean_rps_from_daily(day or 0.0, hours)
        peak_value = peak_rps(mean, percentile, window_s, dispersion)
    except ValueError as err:
        raise InputError(_option_names(str(err))) from None
    users = (
        users_of_requests(day, requests_per_user)
        if day is not None and requests_per_user is not None
        else None
    )

    data: dict[str, Any] = {
        "mean_rps": mean,
        "percentile": percentile,
        "peak_rps": peak_value,
        "window_s": window_s,
        "dispersion": dispersion,
        "model": traffic_model(dispersion),
    }
    if day is not None:
        data |= {"requests_per_day": day, "active_hours": hours}
    if users is not None:
        data |= {"daily_active_users": users, "requests_per_user": requests_per_user}
    if fmt == "plain":
        if mean_rps is None:  # say what the number is the peak of (stderr: stdout stays a number)
            report.emit(sys.stderr, _derivation(data))
        report.emit(sys.stdout, format_number(peak_value))
        return

    def table(out: Any) -> None:
        pairs: list[tuple[str, Any]] = []
        if users is not None:
            pairs.append(("daily active users", f"{users:,.0f}"))
            pairs.append(("requests/user", format_number(requests_per_user or 0.0)))
        if day is not None:
            pairs.append(("requests/day", f"{day:,.0f}"))
            pairs.append(("active hours", format_number(hours)))
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


def _daily_volume(
    mean_rps: float | None,
    requests_per_day: float | None,
    users: float | None,
    requests_per_user: float | None,
    hours: float,
) -> float | None:
    """Requests/day from users (U × R), as given, or from a mean rate over the active hours
    when users are to be counted (mean · hours · 3600); None when it is not asked for."""
    if users is not None:
        assert requests_per_user is not None
        for name, value in (
            ("daily_active_users", users),
            ("requests_per_user", requests_per_user),
        ):
            if not value > 0 or value != value or value == float("inf"):
                raise ValueError(f"{name} must be a finite number > 0 (got {value})")
        day = requests_per_day_of_users(users, requests_per_user)
        if day > MAX_RPS * SECONDS_PER_DAY:
            raise ValueError(
                f"--daily-active-users × --requests-per-user must be at most"
                f" {MAX_RPS * SECONDS_PER_DAY:.3g} requests/day (got {day:.3g})"
            )
        return day
    if requests_per_day is not None:
        return requests_per_day
    if mean_rps is not None and requests_per_user is not None:
        if not 0 < hours <= 24:
            raise ValueError(f"active_hours must be in (0, 24] hours (got {hours})")
        return mean_rps * hours * SECONDS_PER_HOUR
    return None


def _derivation(data: dict[str, Any]) -> str:
    """One line: users → requests/day → mean rate → the peak printed on stdout."""
    parts = []
    if "daily_active_users" in data:
        parts.append(
            f"{data['daily_active_users']:,.0f} users × {format_number(data['requests_per_user'])}"
            " requests"
        )
    parts.append(
        f"{data['requests_per_day']:,.0f} requests/day over {format_number(data['active_hours'])} h"
    )
    parts.append(f"mean {data['mean_rps']:,.1f} req/s")
    stat = "Poisson" if not data["dispersion"] else "negative binomial"
    return " = ".join(parts) + f"; {stat} p{data['percentile'] * 100:g} peak (req/s):"


def _option_names(message: str) -> str:
    """Name the flags, not the Python arguments, in a validation message."""
    for arg, flag in (
        ("mean_rps", "--mean-rps"),
        ("requests_per_day", "--requests-per-day"),
        ("active_hours", "--active-hours"),
        ("daily_active_users", "--daily-active-users"),
        ("requests_per_user", "--requests-per-user"),
        ("percentile", "--percentile"),
        ("window_s", "--window-s"),
        ("dispersion", "--dispersion"),
    ):
        if message.startswith(arg + " "):
            return flag + message[len(arg) :]
    return message
