"""The demand a scenario sizes for: its peak request rate and its hourly profile.

One rule for every command: a stated ``peak_rps`` is used as is; a ``mean_rps`` is raised to
its Poisson (or over-dispersed) percentile (:func:`inferencesize.traffic.peak_rps`); a
``daily:`` block sizes its busiest hour the same way (:mod:`inferencesize.daily`). Pure.
"""

from __future__ import annotations

import math
from functools import lru_cache

from inferencesize.errors import InputError
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.traffic import peak_rps


@lru_cache(maxsize=65536)
def _peak(mean: float, percentile: float, dispersion: float) -> float:
    return peak_rps(mean, percentile, dispersion=dispersion)


def hourly_profile(s: ScenarioSpec) -> list[float] | None:
    """Mean requests/s of each hour of the day (None without ``daily:``)."""
    d = s.daily
    if d is None:
        return None
    if d.hourly_rps is not None:
        return list(d.hourly_rps)
    assert d.requests_per_day is not None and d.peak_hour_share is not None
    from inferencesize.daily import profile_from_daily

    return profile_from_daily(d.requests_per_day, d.peak_hour_share)


def scenario_peak(s: ScenarioSpec) -> float:
    """The peak to size for: given, the percentile of the mean, or of the busiest hour."""
    try:
        return peak_of(s)
    except ValueError as err:
        raise InputError(f"scenario: {err}") from None


def peak_of(s: ScenarioSpec) -> float:
    """:func:`scenario_peak`, ValueError with the reason when there is none: no traffic, or
    a peak of no request at all (:func:`nothing_to_size`)."""
    profile = hourly_profile(s)
    if profile is not None:
        from inferencesize.daily import busiest_hour_peak_rps

        mean, field = max(profile), "daily"
        peak = busiest_hour_peak_rps(profile, s.percentile, s.dispersion)
    elif s.peak_rps is not None:
        return s.peak_rps
    elif s.mean_rps is None:
        raise ValueError("no traffic: give mean_rps, peak_rps or daily")
    else:
        mean, field = s.mean_rps, "mean_rps"
        peak = _peak(mean, s.percentile, s.dispersion)
    if peak == 0 and mean > 0:
        raise ValueError(nothing_to_size(mean, s.percentile, s.dispersion, field))
    return peak


def nothing_to_size(mean: float, percentile: float, dispersion: float, field: str) -> str:
    """Why a mean rate > 0 has a peak of 0 requests in a second, naming its cause: a mean far
    below one request a second (most seconds see none), a percentile near 0, or a dispersion
    so large that most seconds are empty (the rate comes in rare bursts); and the fix."""
    state = "state the peak to serve (peak_rps, --peak-rps)"
    if dispersion > 0 and _peak(mean, percentile, 0.0) > 0:
        return (
            f"dispersion: {dispersion:g} leaves at least {percentile * 100:g} % of seconds"
            f" without a request at {mean:g} req/s on average, a peak of 0: nothing to size"
            f" for; use a lower dispersion, or {state}"
        )
    if mean > math.log(2.0):  # most seconds see a request: the percentile is the cause
        return (
            f"percentile: {percentile:g} puts the peak of {mean:g} req/s at 0 requests a"
            f" second: nothing to size for; use a percentile such as 0.95, or {state}"
        )
    what = "the busiest hour's" if field == "daily" else "a mean of"
    more = "a larger daily volume" if field == "daily" else "a higher mean_rps"
    return (
        f"{field}: {what} {mean:g} req/s is no request in most seconds, a peak of 0 at"
        f" percentile {percentile:g}: nothing to size for; {state} or {more}"
    )
