"""The demand a scenario sizes for: its peak request rate and its hourly profile.

One rule for every command: a stated ``peak_rps`` is used as is; a ``mean_rps`` is raised to
its Poisson (or over-dispersed) percentile (:func:`inferencesize.traffic.peak_rps`); a
``daily:`` block sizes its busiest hour the same way (:mod:`inferencesize.daily`). Pure.
"""

from __future__ import annotations

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
        profile = hourly_profile(s)
        if profile is not None:
            from inferencesize.daily import busiest_hour_peak_rps

            return busiest_hour_peak_rps(profile, s.percentile, s.dispersion)
        if s.peak_rps is not None:
            return s.peak_rps
        if s.mean_rps is None:
            raise ValueError("no traffic: give mean_rps, peak_rps or daily")
        return _peak(s.mean_rps, s.percentile, s.dispersion)
    except ValueError as err:
        raise InputError(f"scenario: {err}") from None
