"""The running sequences: the decode batch under open-loop arrivals, the decode life of a
request and its fluctuations, and the per-request ITL distribution.

The batch B is solved from the token balance (1 − ρ_p)·E[B/d(B)] = λ(OSL − 1) over a negative
binomial B (capped at c: the mass above waits for a slot); by Little, L = E[B]/λ and the mean
ITL = L/(OSL − 1). Its dispersion comes from a linear-noise analysis of the delay feedback: a
request leaves after OSL − 1 tokens, so B(t) counts the arrivals of one life back, and a larger
batch (slope β = E[B]·d′/d, damped by the prompt steps that longer decode steps gather) or one
more prompt (γ = 1 + λw_m/(1 − ρ_p)) lengthens every life. With h(θ) = (1 − e^{−iθ})/(iθ) the
window of one life,

    Var B / E[B] = cv²·γ²·J(β),   J = (1/π)∫₀^∞ |h|²/|1 − βh|² dθ = 1/(1 − β),

and a request's life varies by (L·cv²/λ)·γ²·(1/π)∫|h|²|ρ′ + β_t h/(1 − βh)|² dθ in closed form
(``feedback``). Per request, the life is a busy period of prompt interruptions started by
decode work D (Takács 1962; Borel–Tanner for Poisson; inverse Gaussian when many), plus the
batch's residual part, gamma-distributed, and no more than the ITL with the slots full.

Pure: numpy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from inferencesize.openloop.arrivals import Arrivals, Counts, log_factorials
from inferencesize.openloop.dist import Mixture, mixture
from inferencesize.openloop.queue import Chain
from inferencesize.openloop.steps import Steps

FloatArray = npt.NDArray[np.float64]
_EPS = 1e-12
#: Nodes that stand for the distribution of a decode step's batch inside the chain.
BATCH_NODES = 9
#: Most numbers (counts × points of the circle × phases) the exact count of interruptions in
#: a request's life may take for phase-type arrivals (about 0.2 s); past it, the busy period's
#: inverse Gaussian (what the count tends to when many arrive).
OWN_WORK = 4_000_000
#: Most interruptions counted one by one (near saturation, where a life's count has a long
#: tail, the inverse Gaussian takes over).
MAX_INTERRUPTIONS = 100_000


def batch_pmf(mean: Any, idc: float, slots: int) -> FloatArray:
    """P(B = b) for b = 0..``slots`` (rows: one per ``mean``): negative binomial with that
    mean and variance mean·``idc`` (Poisson at idc = 1), the mass above ``slots`` lumped at
    ``slots`` (the KV slots are full; the rest wait for one). Computed where the rows have
    mass (``nb_window``; beyond, zero)."""
    mu = np.atleast_1d(np.asarray(mean, dtype=float))
    first, values = nb_window(mu, idc, slots)
    pmf = np.zeros((mu.size, slots + 1))
    pmf[:, first : first + values.shape[1]] = values
    pmf[:, -1] = np.maximum(0.0, 1.0 - pmf[:, :-1].sum(axis=1))
    pmf[mu <= 0] = np.eye(1, slots + 1)[0]
    return np.asarray(pmf, dtype=float)


def log_rising(r: FloatArray, first: int, last: int) -> FloatArray:
    """log Γ(b + r) − log Γ(r) (the log of the rising factorial r(r+1)…(r+b−1)) for
    b = first … last, one row per r > 0: the standard library's log-gamma at b = first, then
    the sum of log(r + k) over the steps (no special-function library on this path)."""
    start = np.fromiter((math.lgamma(first + x) - math.lgamma(x) for x in r), float, r.size)
    steps = np.log(r[:, None] + np.arange(first, last, dtype=float)[None, :])
    return np.concatenate([start[:, None], start[:, None] + np.cumsum(steps, axis=1)], axis=1)


def nb_window(mu: FloatArray, idc: float, slots: int) -> tuple[int, FloatArray]:
    """The negative binomial (Poisson at idc = 1) probabilities of b = first … last ≤ slots
    (rows: one per mean), over the counts within 14 standard deviations and 40 e-foldings of
    the geometric tail of the means (beyond, below e⁻⁴⁰ of the mode); ``first`` and the rows."""
    safe = np.maximum(mu, 1e-300)[:, None]
    spread = 14.0 * math.sqrt(float(safe.max()) * max(idc, 1.0)) + 30.0
    if idc > 1.0 + 1e-9:
        spread += 40.0 / -math.log1p(-1.0 / idc)
    first = max(0, int(float(safe.min()) - spread))
    last = min(slots, int(float(safe.max()) + spread) + 1)
    b = np.arange(first, last + 1, dtype=float)[None, :]
    log_fact = log_factorials(slots + 1)[first : last + 1][None, :]
    if idc <= 1.0 + 1e-9:
        logp = b * np.log(safe) - safe - log_fact
    else:
        p = 1.0 / idc
        r = safe / (idc - 1.0)
        logp = log_rising(r[:, 0], first, last) - log_fact + r * math.log(p)
        logp = logp + b * math.log1p(-p)
    return first, np.exp(np.asarray(logp, dtype=float))


def supply(mu: float, idc: float, st: Steps) -> float:
    """E[B/d(B)] (tokens/s) of the batch ``batch_pmf``(μ), from its window alone."""
    if mu <= 0:
        return 0.0
    first, values = nb_window(np.array([mu]), idc, st.slots)
    row = values[0]
    if first + row.size > st.slots:  # the last count is the lump: the rest goes there
        row = row[:-1]
    per_s = st.tokens_per_s
    lump = max(0.0, 1.0 - float(row.sum()))
    return float(row @ per_s[first : first + row.size]) + lump * float(per_s[st.slots])


def feedback(beta: float) -> tuple[float, float, float, float]:
    """Integrals of the decode-life window h(θ) = (1 − e^{−iθ})/(iθ) against the batch's
    feedback 1/(1 − βh) (module docstring; closed forms checked by quadrature in the tests):

    J = (1/π)∫₀^∞ |h|²/|1 − βh|² dθ = 1/(1 − β);
    J₁ = (1/π)∫₀^∞ |h|² Re[1/(1 − βh)] dθ = (e^β − 1)/β;
    I₁ = (1/π)∫₀^∞ |h|² Re[h/(1 − βh)] dθ = (J₁ − 1)/β = (e^β − 1 − β)/β²;
    I₂ = (1/π)∫₀^∞ |h|⁴/|1 − βh|² dθ = (J − 2J₁ + 1)/β²."""
    j = 1.0 / (1.0 - beta)
    if beta < 1e-4:  # series
        return j, 1.0 + beta / 2.0, 0.5 + beta / 6.0, 2.0 / 3.0 + 11.0 * beta / 12.0
    j1 = math.expm1(beta) / beta
    return j, j1, (j1 - 1.0) / beta, (j - 2.0 * j1 + 1.0) / (beta * beta)


def compress(values: FloatArray, probs: FloatArray, nodes: int) -> tuple[FloatArray, FloatArray]:
    """At most ``nodes`` points: equal-probability bins of a sorted discrete distribution, each
    at its conditional mean (keeps the mean exactly)."""
    if values.size <= nodes:
        return values, probs
    order = np.argsort(values)
    v, p = values[order], probs[order]
    cum = np.cumsum(p) / p.sum()
    edge = np.minimum((cum * nodes).astype(int), nodes - 1)
    w = np.bincount(edge, weights=p, minlength=nodes)
    m = np.bincount(edge, weights=p * v, minlength=nodes)
    keep = w > 0
    return np.asarray(m[keep] / w[keep], dtype=float), np.asarray(w[keep], dtype=float)


def supply_slope(mu: float, idc: float, st: Steps) -> tuple[float, float]:
    """E[B/d(B)] (tokens/s) of the batch ``batch_pmf``(μ) and its derivative in μ, in one pass
    over its window: d/dμ log P(b) = b/μ − 1 (Poisson), (ψ(b + r) − ψ(r) + log p)/(D − 1) for
    the negative binomial (r = μ/(D − 1), p = 1/D), ψ(b + r) − ψ(r) = Σ_{k<b} 1/(r + k)."""
    per_s = st.tokens_per_s
    slots = st.slots
    if mu <= 0:
        return 0.0, float(per_s[1]) if slots >= 1 else 0.0
    spread = 14.0 * math.sqrt(mu * max(idc, 1.0)) + 30.0
    poisson = idc <= 1.0 + 1e-9
    if not poisson:
        spread += 40.0 / -math.log1p(-1.0 / idc)
    first = max(0, int(mu - spread))
    last = min(slots, int(mu + spread) + 1)
    if first >= slots:  # every count the window holds is beyond the slots: all in the lump
        return float(per_s[slots]), 0.0
    b = np.arange(first, last + 1, dtype=float)
    log_fact = log_factorials(slots + 1)[first : last + 1]
    if poisson:
        logp = b * math.log(mu) - mu - log_fact
        dlog = b / mu - 1.0
    else:
        r = mu / (idc - 1.0)
        logp_p, log_q = -math.log(idc), math.log1p(-1.0 / idc)
        start = math.lgamma(first + r) - math.lgamma(r)
        inv = 1.0 / (r + np.arange(first, last, dtype=float))
        rising = np.empty(b.size)
        rising[0] = start
        np.cumsum(np.log(r + np.arange(first, last, dtype=float)), out=rising[1:])
        rising[1:] += start
        logp = rising - log_fact + r * logp_p + b * log_q
        digamma = np.empty(b.size)
        digamma[0] = float(np.sum(1.0 / (r + np.arange(first, dtype=float)))) if first else 0.0
        np.cumsum(inv, out=digamma[1:])
        digamma[1:] += digamma[0]
        dlog = (digamma + logp_p) / (idc - 1.0)
    pmf = np.exp(logp)
    f = per_s[first : last + 1]
    if last == slots:  # the last count is the lump: the rest goes there
        body, body_f, body_d = pmf[:-1], f[:-1], dlog[:-1]
        lump = max(0.0, 1.0 - float(body.sum()))
        d_lump = -float(body @ body_d)
        value = float(body @ body_f) + lump * float(per_s[slots])
        slope = float((body * body_d) @ body_f) + d_lump * float(per_s[slots])
        return value, slope
    return float(pmf @ f), float((pmf * dlog) @ f)


def batch_mean(st: Steps, need: float, idc: float, hint: float | None = None) -> float | None:
    """The mean μ of the batch whose supply E[B/d(B)] (B ~ ``batch_pmf``(μ)) is ``need``
    tokens/s, or None when no batch supplies it (at least the slots-full rate c/d(c)). The
    supply grows with μ: Newton's method from ``hint`` (the last solution of a fixed-point
    iteration) or the root of the deterministic balance μ = need·d(μ), kept inside the bracket
    it builds (bisection, or growth by 4× while no batch is known to suffice), to 1e-10 of μ."""
    per_s = st.tokens_per_s
    if need >= float(per_s[st.slots]) * (1.0 - 1e-12):
        return None
    if need <= 0:
        return 0.0
    if hint is not None and hint > 0:
        x = hint
    else:
        x = min(need * float(st.decode_s[1]), float(st.slots))
        for _ in range(8):
            x = min(need * float(st.decode(x)), float(st.slots))
        x = max(x, 1e-9)
    lo, hi = 0.0, math.inf  # supply below need at lo, at least need at hi
    for _ in range(200):
        value, slope = supply_slope(x, idc, st)
        gap = value - need
        if gap < 0:
            lo = x
        else:
            hi = x
        if abs(gap) <= 1e-12 * need:
            return x
        nxt = x - gap / slope if slope > 0 else math.nan
        if not (lo < nxt < hi):  # Newton left the bracket: bisect it, or grow it
            nxt = 0.5 * (lo + hi) if math.isfinite(hi) else 4.0 * max(x, 1e-9)
        if abs(nxt - x) <= 1e-10 * x:
            return nxt
        x = nxt
    return x


def root(f: Any, lo: float, hi: float, rel_tol: float) -> float:
    """The root of the increasing ``f`` in [lo, hi] (f(lo) < 0 ≤ f(hi)) to ``rel_tol`` of it:
    Anderson–Björck regula falsi (bisection after 60 steps, a guard that never acts on a
    smooth ``f``), ending where the bracket is ``rel_tol`` of it or a step lands within it."""
    f_lo, f_hi = f(lo), f(hi)
    side = 0
    for step in range(200):
        if hi - lo <= rel_tol * hi or f_hi == 0.0:
            break
        if step >= 60 or not f_hi > f_lo:
            x = 0.5 * (lo + hi)
        else:
            x = min(max(lo - f_lo * (hi - lo) / (f_hi - f_lo), lo), hi)
        fx = f(x)
        if fx < 0:
            if side < 0:  # lo moved twice running: scale f(hi) down
                m = 1.0 - fx / f_lo
                f_hi *= m if m > 0 else 0.5
            lo, f_lo, side = x, fx, -1
        else:
            if side > 0:
                m = 1.0 - fx / f_hi if f_hi != 0 else 0.0
                f_lo *= m if m > 0 else 0.5
            hi, f_hi, side = x, fx, 1
        if abs(fx) <= 1e-13 * abs(f_hi - f_lo) or abs(fx) == 0.0:
            return x
    return hi if f_hi == 0.0 else lo - f_lo * (hi - lo) / (f_hi - f_lo)


@dataclass(frozen=True)
class Decode:
    """The running sequences at a rate: their distribution (b = 0..c), the decode life and
    the parameters of its fluctuations."""

    pmf: FloatArray
    life_s: float
    beta: float  # E[B]·d′/d as a request sees it: how much a longer batch slows itself
    gamma: float  # 1/(1 − ρ_p): how much a prompt step stretches the lives it interrupts
    level: float  # share of a request's step time that grows with the batch
    beta_seen: float  # E[B]·d′/d over the batch a request sees (size-biased)
    mu: float = 0.0  # the negative binomial's mean before the mass above c is lumped at c

    @property
    def full(self) -> float:
        """P(the KV slots are full)."""
        return float(self.pmf[-1])


def decode(
    st: Steps,
    rate: float,
    prefill_share: float,
    idc: float,
    burst: float,
    damping: float = 1.0,
    gamma: float | None = None,
    hint: float | None = None,
) -> Decode | None:
    """Solve the token balance (1 − ρ_p) · E[B/d(B)] = λ(OSL − 1) for the batch in decode
    time, B negative binomial with variance/mean ``idc``; None when no batch keeps up
    (saturated). The decode life L = E[B]/λ (Little) counts the prompt steps too, during which
    the batch is larger by (γ − 1)·γ·``burst``, burst = (cv² − 1)/2. ``damping``: how much of
    a longer decode step's slowing survives the prompt steps it shortens, 1 + ∂ρ_p/∂ln D /
    (1 − ρ_p); ``gamma``: 1 + λ·w_m/(1 − ρ_p), the life one more arrival adds, per life /
    λ (both from the chain; module docstring)."""
    need = rate * (st.osl - 1.0) / max(1.0 - prefill_share, 1e-12)
    mu = batch_mean(st, need, idc, hint)
    if mu is None:
        return None
    pmf = batch_pmf(mu, idc, st.slots)[0]
    held = np.flatnonzero(pmf)  # the batches with mass (the sums below over them alone)
    held = held[held > 0]
    b = held.astype(float)
    d = st.decode_s[held]
    mean_b = float(pmf[held] @ b)
    # The regression slope of d(B) on B (B ≥ 1), relative to the mean step, over two views:
    # the batch in time (its feedback on itself, linearised about its mean) and the batch a
    # request sees (size-biased, b·π(b): it is in it).
    per_seq = []
    for weight in (pmf[held], pmf[held] * b):
        mass = float(weight.sum())
        if mass <= 0 or st.slots < 2:
            per_seq.append((0.0, 1.0))
            continue
        wt = weight / mass
        mb = float(wt @ b)
        md = float(wt @ d)
        var_b = float(wt @ (b - mb) ** 2)
        if var_b > 1e-9:
            slope = float(wt @ ((b - mb) * (d - md))) / var_b
        else:  # the batch barely moves: the local slope
            slope = float(st.decode(mb + 1.0) - st.decode(mb - 1.0)) / 2.0
        per_seq.append((max(slope, 0.0) / md, mb))
    beta = min(mean_b * per_seq[0][0] * damping, 0.95)
    beta_seen = min(mean_b * per_seq[1][0] * damping, 0.95)
    level = min(per_seq[1][1] * per_seq[1][0], 1.0)
    if gamma is None:
        gamma = 1.0 / (1.0 - prefill_share)
    overall = mean_b + (gamma - 1.0) * gamma * burst
    # smooth arrivals (burst < 0) thin the batch in prompt steps, never below half of it (the
    # linear correction runs away where prompt steps take nearly all the time)
    overall = min(max(overall, 0.5 * mean_b), float(st.slots))
    return Decode(pmf, overall / rate, beta, gamma, level, beta_seen, mu)


def itl_mixture(
    st: Steps, arr: Arrivals, ch: Chain, dec: Decode, cap_s: float, idc: float | None = None
) -> Mixture:
    """Per-request ITL (module docstring): the decode life as a busy period of prompt
    interruptions (each arrival during it adds w_e of life) started by decode work D, plus the
    batch's part, gamma-shaped, and no more than ``cap_s`` (the ITL with the slots full).
    ``idc``: the variance-to-mean of the arrivals in a life where it is not ``arr``'s (a
    router that spreads them evenly); the count is then inverse Gaussian."""
    steps = st.osl - 1.0
    rate = arr.rate
    idc_a = arr.idc if idc is None else idc
    exact = idc is None  # renewal arrivals at this instance: counted from an arrival
    life = dec.life_s
    _, _, i1, i2 = feedback(dec.beta)
    g, bt = dec.gamma, dec.beta_seen
    rho = 1.0 - 1.0 / g
    per_arrival = g * (rho + bt * i1) / rate  # s: life per arrival in a window of one life
    resid = life * idc_a / rate * g * g * bt * bt * max(i2 - i1 * i1, 0.0)
    # busy period: L = D + A·w_e, w_e/(1 − λw_e) = s, E[L] = D/(1 − λw_e) = L
    w_e = per_arrival / (1.0 + rate * per_arrival)
    work = life / (1.0 + rate * per_arrival)
    mean_a = rate * life
    counted = None
    if exact and mean_a * idc_a < 300.0:
        # Takács (1962): P(A = n) = D/(D + n·w_e) · P(n arrivals in D + n·w_e), counted from
        # an arrival (Borel–Tanner for Poisson arrivals)
        n_max = min(
            mean_a + 14.0 * math.sqrt(mean_a * idc_a * g * g + 1.0) * g + 16, MAX_INTERRUPTIONS
        )
        span = work + np.arange(int(n_max) + 1, dtype=float) * w_e
        top_count = rate * float(span[-1])
        need = max(n_max + 1.0, top_count + 12.0 * math.sqrt(top_count * idc_a + 1.0) + 16.0)
        size = 32
        while size < need:
            size *= 2
        fits = arr.poisson or span.size * size * arr.phases <= OWN_WORK
        if fits and n_max < MAX_INTERRUPTIONS:
            counted = span, work / span * Counts(arr, size).own(span)
    if counted is not None:
        lives, pa = counted
    elif mean_a * idc_a * per_arrival**2 <= (1e-9 * life) ** 2:  # no interruption varies it
        lives, pa = np.array([life]), np.array([1.0])
    else:  # many arrivals: the busy period is inverse Gaussian (first passage with drift)
        var = mean_a * idc_a * per_arrival**2
        shape = life**3 / var
        sd = math.sqrt(var)
        lives = life + sd * np.linspace(-7.0, 14.0, 211)
        lives = lives[lives > 0]
        pa = np.sqrt(shape / (2 * np.pi * lives**3)) * np.exp(
            -shape * (lives - life) ** 2 / (2 * life**2 * lives)
        )
    keep = pa > 1e-14 * pa.max()
    lives, pa = lives[keep], pa[keep] / pa[keep].sum()
    lives = lives * life / float(pa @ lives)  # the mean life exactly (Little)
    batching = (lives - work) / max(w_e, _EPS) * ch.steps_per_prompt * ch.step_var_s2 * g * g
    return mixture(
        lives / steps, (resid + np.maximum(batching, 0.0)) / steps**2,
        dec.level * life / steps, pa, cap_s,
    )  # fmt: skip
