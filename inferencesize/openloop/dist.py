"""Distributions of the open-loop model: discrete atoms, mixtures of shifted gammas, their
quantiles, and the quantiles of a sum of two independent parts (E2E = TTFT + (OSL − 1)·ITL).

Pure: numpy only (the incomplete gamma function from ``special``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from inferencesize.openloop.special import gammainc

FloatArray = npt.NDArray[np.float64]

#: Cells of the table of Y's CDF that the quantiles of X + s·Y (E2E) are read from.
SUM_CELLS = 4096


def compact(
    values: FloatArray, probs: FloatArray, cells: int = 4096
) -> tuple[FloatArray, FloatArray]:
    """Atoms merged on a grid of ``cells`` cells over their range (each at its mean), sorted:
    cells even in log(value) where every value is positive (each cell then a fixed share of
    its value wide, ~0.2 % over a range of 1000×), even in value otherwise."""
    lo, hi = float(values.min()), float(values.max())
    if hi <= lo:
        return np.array([lo]), np.array([float(probs.sum())])
    scaled = np.log(values / lo) / math.log(hi / lo) if lo > 0 else (values - lo) / (hi - lo)
    idx = np.minimum((scaled * cells).astype(np.int64), cells - 1)
    w = np.bincount(idx, weights=probs, minlength=cells)
    m = np.bincount(idx, weights=probs * values, minlength=cells)
    keep = w > 0
    return np.asarray(m[keep] / w[keep], dtype=float), np.asarray(w[keep], dtype=float)


def quantiles_of_atoms(values: FloatArray, probs: FloatArray, qs: tuple[float, ...]) -> list[float]:
    order = np.argsort(values, kind="stable")
    v, c = values[order], np.cumsum(probs[order])
    c /= c[-1]
    out = []
    for qq in qs:
        i = int(np.searchsorted(c, qq, side="left"))
        out.append(float(v[min(i, v.size - 1)]))
    return out


def equal_mass(values: FloatArray, probs: FloatArray, nodes: int) -> FloatArray:
    """``nodes`` equal-probability atoms (the quantiles at (i + ½)/nodes)."""
    order = np.argsort(values, kind="stable")
    v, c = values[order], np.cumsum(probs[order])
    c /= c[-1]
    at = (np.arange(nodes) + 0.5) / nodes
    idx = np.minimum(np.searchsorted(c, at, side="left"), v.size - 1)
    return v[idx]


@dataclass(frozen=True)
class Mixture:
    """Σ_i w_i · (shift_i + Gamma with mean gmean_i and variance var_i)."""

    shift: FloatArray
    gmean: FloatArray
    var: FloatArray
    w: FloatArray
    cap: float = math.inf  # no value above it (the mass beyond sits at it)

    @property
    def mean(self) -> FloatArray:
        return np.asarray(self.shift + self.gmean, dtype=float)

    def cdf(self, x: FloatArray) -> FloatArray:
        shape = self.gmean**2 / self.var
        scale = self.var / self.gmean
        y = np.maximum(x[:, None] - self.shift[None, :], 0.0) / scale[None, :]
        # a component 40 standard deviations below x holds all its mass there (its gamma
        # tail beyond is under e⁻⁴⁰), one at or above x none of it: the special function only
        # where it is neither
        a = np.broadcast_to(shape[None, :], y.shape)
        below = y > a + 40.0 * np.sqrt(a)
        mid = (y > 0) & ~below
        values = below.astype(float)
        values[mid] = gammainc(a[mid], y[mid])
        cdf = np.asarray(values @ self.w, dtype=float)
        return np.where(x >= self.cap, 1.0, cdf)

    def bounds(self) -> tuple[float, float]:
        sd = np.sqrt(self.var)
        hi = float(np.max(self.mean + 12.0 * sd + 2.0 * self.gmean))
        lo = float(np.min(self.shift))
        return min(lo, self.cap), min(hi, max(self.cap, lo))

    def quantiles(self, qs: tuple[float, ...]) -> list[float]:
        """Quantiles: where the CDF reaches each (``cdf_roots``), over the components of
        weight above 1e-13 (what the others hold moves no quantile by a visible amount)."""
        lo, hi = self.bounds()
        big = self.w > 1e-13
        view = Mixture(self.shift[big], self.gmean[big], self.var[big], self.w[big], self.cap)
        return cdf_roots(view.cdf, lo, hi, qs)


def cdf_roots(
    cdf: Any, lo: float, hi: float, qs: tuple[float, ...], points: int = 17
) -> list[float]:
    """The least x in [lo, hi] with cdf(x) ≥ q for each q (``cdf`` non-decreasing and
    vectorised): the CDF on a grid of ``points`` finds the cell holding each, then
    Anderson–Björck regula falsi in it (bisection after 60 steps, a guard that never acts on
    a smooth CDF), until the cell is 1e-8 of [lo, hi] or the CDF is within 1e-10 of q (the CDFs
    here are good to a few parts in a million: ``special``)."""
    grid = np.linspace(lo, hi, points)
    values = cdf(grid)
    target = np.asarray(qs, dtype=float)
    cell = np.clip(np.searchsorted(values, target, side="left"), 1, grid.size - 1)
    a, b = grid[cell - 1], grid[cell]
    fa, fb = values[cell - 1] - target, values[cell] - target
    tol = 1e-8 * max(hi - lo, 1e-300)
    side = np.zeros(target.shape)
    best = 0.5 * (a + b)
    done = (b - a <= tol) | (fb == 0.0)
    best = np.where(fb == 0.0, b, best)
    for step in range(120):
        if done.all():
            break
        width = b - a
        slope = fb - fa
        usable = (slope > 0) & (fa < 0) & (fb >= 0) & (step < 60)  # then bisect
        x = np.where(usable, a - fa * width / np.where(usable, slope, 1.0), 0.5 * (a + b))
        x = np.minimum(np.maximum(x, a), b)
        fx = cdf(x) - target
        below = fx < 0
        # Anderson–Björck: the end kept twice running has its value scaled down
        keep_b = below & (side < 0)
        keep_a = ~below & (side > 0)
        m_b = np.where(keep_b, 1.0 - fx / np.where(fa != 0, fa, 1.0), 1.0)
        m_a = np.where(keep_a, 1.0 - fx / np.where(fb != 0, fb, 1.0), 1.0)
        fb = np.where(keep_b, fb * np.where(m_b > 0, m_b, 0.5), fb)
        fa = np.where(keep_a, fa * np.where(m_a > 0, m_a, 0.5), fa)
        a, fa = np.where(below, x, a), np.where(below, fx, fa)
        b, fb = np.where(below, b, x), np.where(below, fb, fx)
        side = np.where(below, -1.0, 1.0)
        hit = np.abs(fx) <= 1e-10
        newly = ~done & (hit | (b - a <= tol))
        best = np.where(newly, np.where(hit, x, 0.5 * (a + b)), best)
        done |= newly
    best = np.where(done, best, 0.5 * (a + b))
    return [float(v) for v in best]


def mixture(
    mean: FloatArray, var: FloatArray, level: float, w: FloatArray, cap: float = math.inf
) -> Mixture:
    """Components with ``mean`` and ``var`` whose random part is a gamma with mean ``level``
    (the part of the value that scales with the batch: positive), at least exponential
    (shape ≥ 1: where the level is small next to the spread, the spread is not the batch's)."""
    var = np.maximum(var, (1e-9 * np.abs(mean)) ** 2 + 1e-30)
    shape = np.maximum(level * level / var, 1.0)
    gmean = np.sqrt(shape * var)
    return Mixture(mean - gmean, gmean, var, w, cap)


def merge(mix: Mixture, nodes: int) -> Mixture:
    """At most ``nodes`` components: consecutive ones (by mean) merged in equal-probability
    groups with the same mean, variance and mean gamma part."""
    if mix.w.size <= nodes:
        return mix
    mean = mix.mean
    order = np.argsort(mean, kind="stable")
    mu, v, gm, w = mean[order], mix.var[order], mix.gmean[order], mix.w[order]
    group = np.minimum((np.cumsum(w) / w.sum() * nodes).astype(int), nodes - 1)
    gw = np.asarray(np.bincount(group, weights=w, minlength=nodes), dtype=float)
    keep = gw > 0
    gw = gw[keep]
    m1 = np.bincount(group, weights=w * mu, minlength=nodes)[keep] / gw
    m2 = np.bincount(group, weights=w * (v + mu**2), minlength=nodes)[keep] / gw
    level = np.bincount(group, weights=w * gm, minlength=nodes)[keep] / gw
    var = np.maximum(m2 - m1**2, 1e-30)
    shape = np.maximum(level**2 / var, 1.0)
    g = np.sqrt(shape * var)
    return Mixture(m1 - g, g, var, gw, mix.cap)


def sum_quantiles(
    atoms: FloatArray, mix: Mixture, scale: float, qs: tuple[float, ...]
) -> list[float]:
    """Quantiles of X + scale·Y, X equal-mass ``atoms``, Y ~ ``mix``, independent: their
    CDF, the mean over the atoms of Y's, inverted by ``cdf_roots``."""
    small = merge(mix, 32)
    b_lo, b_hi = small.bounds()
    # Y's CDF once, on a grid of 4096 cells over its range (linear in between: within
    # (cell/σ)²/8 of the CDF, ~1e-7), then the mean over the atoms
    table_y = np.linspace(b_lo, b_hi, SUM_CELLS + 1)
    table_f = small.cdf(table_y)

    def cdf(x: FloatArray) -> FloatArray:
        y = (x[:, None] - atoms[None, :]) / scale
        at = np.interp(y.ravel(), table_y, table_f, left=0.0, right=1.0)
        return np.asarray(at.reshape(y.shape).mean(axis=1), dtype=float)

    lo = float(atoms.min() + scale * b_lo)
    hi = float(atoms.max() + scale * b_hi)
    return cdf_roots(cdf, lo, hi, qs)
