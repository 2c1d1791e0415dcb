"""The demand a scenario sizes for: its peak request rate and its hourly profile.

One rule for every command: a stated ``peak_rps`` is used as is; a ``mean_rps`` is raised to
its Poisson (or over-dispersed) percentile (:func:`inferencesize.traffic.peak_rps`); a
``daily:`` block sizes its busiest hour the same way (:mod:`inferencesize.daily`). Pure.
"""

from __future__ import annotations

import math
from functools import lru_cache

from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.traffic import peak_rps

#: Fields of a scenario the peak is worked out from (named in :class:`PeakError`).
PEAK_FIELDS = ("mean_rps", "percentile", "dispersion", "daily")


class PeakError(ValueError):
    """Traffic with no peak to size for, located at the field that makes it so (one of
    :data:`PEAK_FIELDS`, or ``traffic`` when none is stated): ``str()`` reads
    ``field: problem``; the caller names the field as the user stated it (a flag, or a file
    and the field)."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@lru_cache(maxsize=65536)
def _peak(mean: float, percentile: float, dispersion: float) -> float:
    return peak_rps(mean, percentile, dispersion=dispersion)


def _located(err: ValueError, rate: str) -> PeakError:
    """A quantile's ValueError (its message starts with the argument at fault, as
    :mod:`inferencesize.traffic` words it) located at that field; ``rate``: the field the
    mean came from (``mean_rps`` or ``daily``)."""
    text = str(err)
    for arg, field in (
        ("mean_rps", rate),
        ("percentile", "percentile"),
        ("dispersion", "dispersion"),
    ):
        if text.startswith(arg + " "):
            return PeakError(field, text[len(arg) + 1 :])
    return PeakError(rate, text)


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


def peak_of(s: ScenarioSpec) -> float:
    """The peak to size for: given, the percentile of the mean, or of the busiest hour.
    :class:`PeakError` when there is none: no traffic, a quantile out of reach, or a peak of
    no request at all (:func:`nothing_to_size`)."""
    profile = hourly_profile(s)
    rate = "daily" if profile is not None else "mean_rps"
    try:
        if profile is not None:
            from inferencesize.daily import busiest_hour_peak_rps

            mean = max(profile)
            peak = busiest_hour_peak_rps(profile, s.percentile, s.dispersion)
        elif s.peak_rps is not None:
            return s.peak_rps
        elif s.mean_rps is None:
            raise PeakError("traffic", "required: give mean_rps, peak_rps or daily")
        else:
            mean = s.mean_rps
            peak = _peak(mean, s.percentile, s.dispersion)
    except PeakError:
        raise
    except ValueError as err:
        raise _located(err, rate) from None
    if peak == 0 and mean > 0:
        raise nothing_to_size(mean, s.percentile, s.dispersion, rate)
    return peak


def nothing_to_size(mean: float, percentile: float, dispersion: float, field: str) -> PeakError:
    """Why a mean rate > 0 has a peak of 0 requests in a second, located at its cause: a mean
    far below one request a second (most seconds see none; ``field``, ``mean_rps`` or
    ``daily``), a percentile near 0, or a dispersion so large that most seconds are empty
    (the rate comes in rare bursts); and the fix."""
    state = "state the peak to serve (peak_rps, --peak-rps)"
    if dispersion > 0 and _peak(mean, percentile, 0.0) > 0:
        return PeakError(
            "dispersion",
            f"{dispersion:g} leaves at least {percentile * 100:g} % of seconds without a"
            f" request at {mean:g} req/s on average, a peak of 0: nothing to size for; use a"
            f" lower dispersion, or {state}",
        )
    if mean > math.log(2.0):  # most seconds see a request: the percentile is the cause
        return PeakError(
            "percentile",
            f"{percentile:g} puts the peak of {mean:g} req/s at 0 requests a second: nothing"
            f" to size for; use a percentile such as 0.95, or {state}",
        )
    what = "the busiest hour's" if field == "daily" else "a mean of"
    more = "a larger daily volume" if field == "daily" else "a higher mean_rps"
    return PeakError(
        field,
        f"{what} {mean:g} req/s is no request in most seconds, a peak of 0 at percentile"
        f" {percentile:g}: nothing to size for; {state} or {more}",
    )
