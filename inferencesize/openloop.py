"""One instance under open-loop traffic: in-flight batching, requests arriving at λ requests/s.

``serving`` answers the benchmark question (N closed-loop clients); this module answers the
traffic one: requests arrive at λ, Poisson or burstier (gamma gaps with coefficient of
variation ``cv``), whatever the instance does. It gives the mean and percentiles of TTFT, ITL
and E2E, the utilisation and the sustainable rate, from the engine semantics of
``simulate.engine`` (in-flight policy, prefill first), against which
``benchmarks/openloop_vs_sim.py`` checks it:

* at a step boundary, waiting prompts are admitted (FIFO) while the KV slots c
  (``max_in_flight``) and the step token limit allow (K = ⌊step_tokens / ISL⌋ prompts, at
  least 1), and prefilled whole in a *prompt step* p(k) = ``step_time(dep, 0, 0, k, ISL)``
  while the running decodes pause; otherwise a *decode step* d(b) = ``per_token_decode_s(dep,
  b, ISL + OSL/2)`` moves the b running sequences one token. An arrival joins at the next
  boundary; an idle instance starts its prompt step at once. A multi-GPU instance adds its
  request hand-off ``dep.handoff_s`` to TTFT and E2E.

Notation: ρ_p share of time in prompt steps; w = ρ_p/λ prompt-step time per request;
L the decode life (first token to last); B the running sequences; γ, β below.

**Sustainable rate.** Saturated, the slots are full (prefill first refills each freed slot at
the next boundary), decode steps hold c sequences and prompt steps K_s = min(K, c) prompts:

    λ_max = 1 / (p(K_s)/K_s + (OSL − 1)·d(c)/c),      utilisation = λ / λ_max.

At λ ≥ λ_max ``stable`` is False and every latency is infinite.

**Arrivals.** Gaps are phase-type: Poisson (one phase); for cv > 1 a gamma gap (shape
k = 1/cv² < 1) is a mixture of exponentials — its density is completely monotone (Bernstein;
Feller Vol. 2, XIII.4), with rates β·e^y weighted ∝ (e^y − 1)^{−k} — binned into
hyperexponential phases whose means are then stretched to restore E[X] and E[X²]; for
cv < 1 a mixed Erlang (Tijms 2003, §2.3.1). Counts in a window come from the generating
matrix exp((T + z·tα)τ) (Neuts 1979; Lucantoni 1991), inverted by FFT.

**Prompt queue and TTFT.** An embedded Markov chain on (prompts waiting, arrival phase) at
step boundaries (Kleinrock Vol. 1, §5.6; bulk service of up to K prompts, Bailey 1954): from
n ≥ 1 a prompt step of k = min(n, K) and n − k + A(p(k)) after it; from n = 0 a decode step
(a *vacation* of the prompt server: exhaustive service with multiple vacations, Doshi 1986)
whose length follows the batch distribution below, or an idle period that the next arrival
ends. Its share of idle boundaries makes the idle share of time that of an empty batch. Solved
by Grassmann–Taksar–Heyman state reduction (1985), the prompt levels once per rate. An arrival
lands in a step with the intensity of arrivals (time averages for Poisson: PASTA), at a
position that leaves the residual r, behind h others (carried, or arrived earlier in the step):

    TTFT = r + ⌊h/K⌋·p(K) + p(k_own) [+ KV slot wait] [+ hand-off],
    k_own = min(K, h mod K + 1 + those arriving before its step starts),

an exact mixture over states, positions and counts, so its percentiles are the mixture's. With
K = 1 and no decode (OSL = 1) it is M/D/1: mean wait ρS/(2(1 − ρ)) (Pollaczek–Khinchine); with
decode steps as vacations it adds E[V²]/(2E[V]) (Fuhrmann–Cooper 1985).

**Running sequences and ITL.** The batch B is solved from the token balance
(1 − ρ_p)·E[B/d(B)] = λ(OSL − 1) over a negative binomial B (capped at c: the mass above
waits for a slot); by Little, L = E[B]/λ and the mean ITL = L/(OSL − 1). Its dispersion comes
from a linear-noise analysis of the delay feedback: a request leaves after OSL − 1 tokens, so
B(t) counts the arrivals of one life back, and a larger batch (slope β = E[B]·d′/d, damped by
the prompt steps that longer decode steps gather: ×(1 + ∂ρ_p/∂ln D/(1 − ρ_p))) or one more
prompt (γ = 1 + λw_m/(1 − ρ_p), w_m = p(k) − p(k − 1) in the step it joins) lengthens every
life. With h(θ) = (1 − e^{−iθ})/(iθ) the window of one life,

    Var B / E[B] = cv²·γ²·J(β),   J = (1/π)∫₀^∞ |h|²/|1 − βh|² dθ = 1/(1 − β),

and a request's life varies by (L·cv²/λ)·γ²·(1/π)∫|h|²|ρ′ + β_t h/(1 − βh)|² dθ
(ρ′ = 1 − 1/γ, β_t the same slope over the batch a request sees, size-biased), in closed form
with J₁ = (e^β − 1)/β, I₁ = (e^β − 1 − β)/β², I₂ = (J − 2J₁ + 1)/β² (``_feedback``). Under
bursts, prompt steps and large batches come together: the batch over all time exceeds the
one in decode time by (γ − 1)·γ·(cv² − 1)/2 (∫ of the renewal covariance density,
λ(cv² − 1)/2). Per request, the life is a busy period of prompt interruptions started by decode
work D (Takács 1962: A arrivals with probability D/(D + A·w_e)·P(A in D + A·w_e), Borel–Tanner
for Poisson; inverse Gaussian when many), plus the batch's residual part, gamma-distributed
(positive, with the batch's share of the step as its mean), and no more than the ITL with the
slots full, c/(λ_max·(OSL − 1)).

**KV slots.** When the batch reaches c, requests wait for a slot: GI/G/c in heavy traffic
(Allen–Cunneen; Allen 1990, §6.4), W = P(full)·(cv² + c_s²)/(2(λ_max − λ)), c_s the
coefficient of variation of a life, exponential beyond.

**E2E** = TTFT + (OSL − 1)·ITL: the sum of the two distributions taken as independent.

Not captured: chunked prefill, variable lengths, decode contexts other than their mean,
several instances behind a balancer, the TTFT–ITL correlation, and the strongly nonlinear
regime of very bursty traffic near saturation (batch dispersion ≈ its mean), where the
linear-noise tails run narrow. Pure: numpy (scipy.special when a point is computed); no I/O.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from inferencesize.latency import Deployment, per_token_decode_s, step_time
from inferencesize.units import statistic_fraction

FloatArray = npt.NDArray[np.float64]
ComplexArray = npt.NDArray[np.complex128]
Metric = Literal["ttft", "itl", "e2e"]
#: Percentiles every point reports (fractions).
QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.95, 0.99)
#: Prompt tokens one in-flight prompt step batches by default (``memory.MAX_NUM_TOKENS``,
#: TensorRT-LLM's ``max_num_tokens``; the simulator's default too).
STEP_TOKENS = 8192
#: Gauss–Legendre nodes for the position of an arrival inside the step in progress.
_POSITION_NODES = 16
#: Atoms each position node is spread into (over its cell of residuals), for percentiles.
_SPREAD = 8
#: Nodes that stand for the distribution of a decode step's batch inside the chain.
_BATCH_NODES = 9
#: Bursty gaps (cv > 1): bins of log(rate / gamma rate) that become the phases of the
#: hyperexponential standing for the gamma gap (a mixture of exponentials, module docstring).
_BURST_BINS = (0.0, 0.5, 1.5, 3.0, 6.0, math.inf)
#: Smoother gaps (cv < 1) use a mixed Erlang with at most this many phases (cv ≥ 1/√12).
_MAX_ERLANG_PHASES = 12
_EPS = 1e-12
#: Cells of the table of Y's CDF that the quantiles of X + s·Y (E2E) are read from.
_SUM_CELLS = 4096


class _Quantiles(Mapping[float, float]):
    """{fraction: seconds} at ``qs``, computed on first look-up by ``compute(*args)`` (a list in
    the order of ``qs``): a point's percentiles cost more than its means (and need the
    special functions), and most points a search visits, or a plan prints, need none. Keys
    are known at once; values only when one is read. Picklable when ``compute`` is."""

    def __init__(self, qs: tuple[float, ...], compute: Any, *args: Any) -> None:
        self._qs, self._compute, self._args = qs, compute, args
        self._values: dict[float, float] | None = None

    def _table(self) -> dict[float, float]:
        if self._values is None:
            self._values = dict(zip(self._qs, self._compute(*self._args), strict=True))
            self._args = ()
        return self._values

    def __getitem__(self, q: float) -> float:
        if q not in self._qs:
            raise KeyError(q)
        return self._table()[q]

    def __iter__(self) -> Any:
        return iter(self._qs)

    def __len__(self) -> int:
        return len(self._qs)

    def __repr__(self) -> str:
        return repr(self._table())


@dataclass(frozen=True)
class OpenLoopPoint:
    """One instance under open-loop arrivals (SI units: seconds, requests/s).

    Means in ``ttft_s``, ``itl_s``, ``e2e_s``; percentiles in ``ttft_q``, ``itl_q``,
    ``e2e_q`` ({fraction: seconds}; ITL is NaN for one-token answers). ``utilisation`` = rate
    / ``max_rate_rps``; at 1 and beyond the instance is not ``stable`` and every latency is
    infinite. ``in_flight``: mean requests holding KV; ``decode_batch``: mean sequences in a
    decode step; ``prefill_share`` and ``busy_share``: shares of time in prompt steps and in
    any step; ``kv_wait_s``: mean wait for a KV slot (part of TTFT); ``ttft_wait_s``: mean TTFT
    beyond the request's prompt step alone and the hand-off."""

    rate_rps: float
    utilisation: float
    stable: bool
    in_flight: float
    ttft_s: float
    itl_s: float
    e2e_s: float
    ttft_q: Mapping[float, float]
    itl_q: Mapping[float, float]
    e2e_q: Mapping[float, float]
    max_rate_rps: float
    decode_batch: float
    prefill_share: float
    busy_share: float
    kv_wait_s: float
    ttft_wait_s: float

    def statistic(self, metric: Metric, statistic: str | float) -> float:
        """``metric`` ("ttft", "itl", "e2e") at ``statistic``: "mean", a fraction in the
        computed quantiles, or "p50" … "p99"."""
        if statistic == "mean":
            return float(getattr(self, f"{metric}_s"))
        q = statistic_fraction(statistic)
        table: Mapping[float, float] = getattr(self, f"{metric}_q")
        if q not in table:
            raise ValueError(f"percentile {q} not computed (have {sorted(table)})")
        return table[q]


# ---------------------------------------------------------------------------------------------
# Step costs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Steps:
    """Step times of one deployment at one (ISL, OSL): prompt steps of k = 0..K prompts and
    decode steps (per output token) of b = 0..c sequences at the mean context."""

    isl: float
    osl: float
    per_step: int  # K
    slots: int  # c
    prompt_s: FloatArray  # [k]
    decode_s: FloatArray  # [b]
    handoff_s: float

    @cached_property
    def tokens_per_s(self) -> FloatArray:
        """b / d(b): decode tokens/s of a batch of b (0 at b = 0)."""
        out = np.zeros(self.slots + 1)
        out[1:] = np.arange(1, self.slots + 1) / self.decode_s[1:]
        out.flags.writeable = False
        return out

    def decode(self, b: Any) -> Any:
        """d(b) at real b (linear between whole batches, clipped to [1, c])."""
        x = np.clip(np.asarray(b, dtype=float), 1.0, float(self.slots))
        return np.interp(x, np.arange(self.slots + 1, dtype=float), self.decode_s)

    @property
    def saturated_prompts(self) -> int:
        return max(1, min(self.per_step, self.slots))

    @property
    def max_rate_rps(self) -> float:
        """λ_max = 1 / (p(K_s)/K_s + (OSL − 1)·d(c)/c)."""
        k = self.saturated_prompts
        work = float(self.prompt_s[k]) / k
        if self.osl > 1:
            work += (self.osl - 1.0) * float(self.decode_s[self.slots]) / self.slots
        return 1.0 / work


def _steps(dep: Deployment, isl: float, osl: float, max_in_flight: int, step_tokens: int) -> _Steps:
    if not (isl >= 1 and osl >= 1):
        raise ValueError(f"ISL and OSL must be >= 1 token (got {isl}, {osl})")
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1 (got {max_in_flight})")
    if step_tokens < 1:
        raise ValueError(f"step_tokens must be >= 1 (got {step_tokens})")
    isl, osl = float(round(isl)), float(round(osl))
    per_step = max(1, int(step_tokens // isl))
    k = np.arange(per_step + 1, dtype=float)
    prompt = np.asarray(step_time(dep, 0.0, 0.0, k, isl).total_s, dtype=float)
    prompt = np.broadcast_to(prompt, k.shape).copy()
    prompt[0] = 0.0
    b = np.arange(max_in_flight + 1, dtype=float)
    decode = np.asarray(per_token_decode_s(dep, b, isl + osl / 2.0), dtype=float)
    decode = np.broadcast_to(decode, b.shape).copy()
    decode[0] = 0.0
    return _Steps(isl, osl, per_step, max_in_flight, prompt, decode, dep.handoff_s)


# ---------------------------------------------------------------------------------------------
# Arrivals: a renewal process with phase-type gaps
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Arrivals:
    """Renewal arrivals at ``rate`` requests/s whose gaps are phase-type: sub-generator
    ``sub`` (T, J × J), exit rates ``exit`` (t = −T·1) and the phase ``start`` (α) every gap
    begins in; ``idc`` = cv², the long-run variance / mean of counts."""

    rate: float
    sub: FloatArray
    exit: FloatArray
    start: FloatArray
    idc: float

    @property
    def phases(self) -> int:
        return int(self.exit.size)

    @property
    def to_next_s(self) -> FloatArray:
        """Mean time to the next arrival from each phase, (−T)⁻¹·1."""
        return np.asarray(np.linalg.solve(-self.sub, np.ones(self.phases)), dtype=float)

    @property
    def stationary(self) -> FloatArray:
        """Phase at a random time: α(−T)⁻¹ / E[gap]."""
        v = np.asarray(np.linalg.solve(-self.sub.T, self.start), dtype=float)
        return np.asarray(v / v.sum(), dtype=float)


@lru_cache(maxsize=64)
def _mixture_of_exponentials(cv: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Weights and mean gaps (in mean gaps) of the hyperexponential standing for a gamma gap
    with shape k = 1/cv² < 1. Such a gamma is exactly a mixture of exponentials: its density
    is ∫ s e^{−sx} w(s) ds with rates s = β e^y, β = k / mean, and weight
    sin(πk)/π · (e^y − 1)^{−k} dy on y > 0 (its density is completely monotone: Bernstein;
    Feller Vol. 2, XIII.4). Each bin of y in ``_BURST_BINS`` becomes one phase with the bin's
    weight and mean 1/s; the means are then stretched to restore the first two moments."""
    k = 1.0 / (cv * cv)
    x, h = np.polynomial.legendre.leggauss(64)
    u, hu = 0.5 * (x + 1.0), 0.5 * h
    weights, means = [], []
    for lo, hi in itertools.pairwise(_BURST_BINS):
        if lo == 0.0:  # y = v^{1/(1−k)} absorbs the y^{−k} singularity
            top = hi ** (1.0 - k)
            v = u * top
            y = v ** (1.0 / (1.0 - k))
            dy = top / (1.0 - k)  # (e^y − 1)^{−k} dy = ((e^y − 1)/y)^{−k} dv/(1 − k)
            f = (np.expm1(y) / np.maximum(y, 1e-300)) ** (-k) * dy
        elif math.isinf(
            hi
        ):  # y = lo − ln(v)/k: (e^y − 1)^{−k} dy = (1 − e^{−y})^{−k} e^{−k·lo} dv/k
            v = u
            y = lo - np.log(np.maximum(v, 1e-300)) / k
            f = (-np.expm1(-y)) ** (-k) * math.exp(-k * lo) / k
        else:
            y = lo + (hi - lo) * u
            f = np.expm1(y) ** (-k) * (hi - lo)
        mass = float(f @ hu)
        weights.append(mass)
        means.append(float((f * np.exp(-y)) @ hu) / mass / k)  # E[1/s] in mean gaps: 1/(β e^y)
    w = np.asarray(weights) / sum(weights)
    m = np.asarray(means)
    # A bin's phase keeps its mean gap, not its spread, so E[X²] falls a little short: stretch
    # the means as m^a (a ≥ 1, by bisection), rescaled to mean 1, so 2·Σ w m² = 1 + cv².
    target = (1.0 + cv * cv) / 2.0
    lo, hi = 1.0, 2.0
    for _ in range(60):
        a = 0.5 * (lo + hi)
        ma = m**a
        if float(w @ ma**2) / float(w @ ma) ** 2 < target:
            lo = a
        else:
            hi = a
    m = m**lo
    m = m / float(w @ m)  # the mean gap exactly
    return tuple(float(v) for v in w), tuple(float(v) for v in m)


def _arrivals(rate: float, cv: float) -> _Arrivals:
    """Phase-type renewal arrivals with mean gap 1/rate and coefficient of variation ``cv``:
    Poisson at 1; above, the hyperexponential of a gamma gap (``_mixture_of_exponentials``);
    below, the mixed Erlang E_{n−1,n} with the same mean and cv (Tijms, *A First Course in
    Stochastic Models*, 2003, §2.3.1)."""
    if not cv > 0:
        raise ValueError(f"coefficient of variation must be > 0 (got {cv})")
    c2 = cv * cv
    if abs(cv - 1.0) < 1e-9:
        return _Arrivals(rate, np.array([[-rate]]), np.array([rate]), np.array([1.0]), 1.0)
    if cv > 1.0:
        w, m = _mixture_of_exponentials(round(cv, 9))
        s = rate / np.asarray(m)
        return _Arrivals(rate, -np.diag(s), s, np.asarray(w), c2)
    n = math.ceil(1.0 / c2)
    if n > _MAX_ERLANG_PHASES:
        raise ValueError(f"cv must be >= {1 / math.sqrt(_MAX_ERLANG_PHASES):.2f} (got {cv})")
    p = (n * c2 - math.sqrt(n * (1.0 + c2) - n * n * c2)) / (1.0 + c2)
    mu = (n - p) * rate
    sub = -mu * np.eye(n) + mu * np.eye(n, k=1)
    exit_ = np.zeros(n)
    exit_[-1] = mu
    start = np.zeros(n)
    start[0] = 1.0 - p
    if n > 1:
        start[1] += p
    else:
        start[0] = 1.0
    return _Arrivals(rate, sub, exit_, start, c2)


@dataclass(frozen=True)
class _Spectrum:
    """Eigen-decomposition of T + z·tα (the generating matrix of counts) at z = r·e^{2πim/M},
    m = 0..M−1: Φ(z, τ) = V diag(e^{λτ}) V⁻¹ = E[z^{arrivals in τ}; phase after | phase
    before] (Neuts 1979; Lucantoni 1991). Counts are the inverse FFT, damped by r^{−a}."""

    size: int
    radius: float
    lam: ComplexArray  # [m, J]
    vec: ComplexArray  # [m, J, J]
    inv: ComplexArray  # [m, J, J]
    poisson_rps: float | None = None  # one phase: counts are Poisson, in closed form


def _spectrum(arr: _Arrivals, size: int, radius: float = 1.0) -> _Spectrum:
    z = radius * np.exp(2j * np.pi * np.arange(size) / size)
    gen = arr.sub[None, :, :] + z[:, None, None] * np.outer(arr.exit, arr.start)[None, :, :]
    if arr.phases == 1:
        lam = gen[:, :, 0].astype(complex)
        one = np.ones((size, 1, 1), dtype=complex)
        return _Spectrum(size, radius, lam, one, one, float(arr.exit[0]))
    lam, vec = np.linalg.eig(gen)
    return _Spectrum(size, radius, lam, vec, np.linalg.inv(vec))


@lru_cache(maxsize=8)
def _gauss(kind: Literal["legendre", "laguerre"], nodes: int) -> tuple[FloatArray, FloatArray]:
    """Gauss–Legendre (on [−1, 1]) or Gauss–Laguerre nodes and weights, computed once."""
    if kind == "legendre":
        x, w = np.polynomial.legendre.leggauss(nodes)
    else:
        x, w = np.polynomial.laguerre.laggauss(nodes)
    x.flags.writeable = False
    w.flags.writeable = False
    return x, w


@lru_cache(maxsize=16)
def _log_factorials(size: int) -> FloatArray:
    """log a! for a = 0..size−1 (the standard library's log-gamma, to the last bit)."""
    out = np.fromiter((math.lgamma(a + 1.0) for a in range(size)), dtype=float, count=size)
    out.flags.writeable = False
    return out


def _poisson_pmf(mean: FloatArray, size: int) -> FloatArray:
    """P(a) = e^{−m} m^a / a! for a = 0..size−1, one row per mean (the one-phase case of the
    generating matrix: exp((z − 1)·λτ), whose inversion this is, without the FFT)."""
    m = np.asarray(mean, dtype=float)[:, None]
    a = np.arange(size, dtype=float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = a * np.log(m) - m - _log_factorials(size)[None, :]
    pmf = np.exp(np.where(a > 0, logp, -m))
    return np.asarray(np.where(m > 0, pmf, a == 0), dtype=float)


def _invert(gf: ComplexArray, spec: _Spectrum, axis: int) -> FloatArray:
    """Probabilities of counts 0..M−1 from generating-function values along ``axis``."""
    pmf = np.fft.fft(gf, axis=axis).real / spec.size
    if spec.radius != 1.0:
        shape = [1] * pmf.ndim
        shape[axis] = spec.size
        pmf = pmf * (spec.radius ** -np.arange(spec.size, dtype=float)).reshape(shape)
    return np.asarray(np.maximum(pmf, 0.0), dtype=float)


def _counts(spec: _Spectrum, taus: FloatArray) -> FloatArray:
    """P(a arrivals in τ, phase j after | phase i before): [τ, a, i, j]."""
    if spec.poisson_rps is not None:
        rate_taus = spec.poisson_rps * np.asarray(taus, dtype=float)
        return _poisson_pmf(rate_taus, spec.size)[:, :, None, None]
    e = np.exp(spec.lam[None, :, :] * np.asarray(taus, dtype=float)[:, None, None])
    gf = np.einsum("mij,tmj,mjk->tmik", spec.vec, e, spec.inv)
    return _invert(gf, spec, 1)


def _counts_from(spec: _Spectrum, taus: FloatArray, left: FloatArray) -> FloatArray:
    """P(a arrivals in τ) from the phase distribution ``left``: [τ, a]."""
    if spec.poisson_rps is not None:
        return _poisson_pmf(spec.poisson_rps * np.asarray(taus, dtype=float), spec.size)
    e = np.exp(spec.lam[None, :, :] * np.asarray(taus, dtype=float)[:, None, None])
    head = np.einsum("i,mij->mj", left.astype(complex), spec.vec)
    tail = np.einsum("mjk->mj", spec.inv)
    gf = np.einsum("mj,tmj,mj->tm", head, e, tail)
    return _invert(gf, spec, 1)


def _own_counts(arr: _Arrivals, taus: FloatArray, size: int) -> FloatArray:
    """P(n arrivals in τ_n) for n = 0..len(τ) − 1 (each window's own count), from a fresh gap
    (phase α): Poisson in closed form; otherwise the diagonal of the inverted table, M = ``size``
    points (> the counts that matter)."""
    n = np.arange(taus.size)
    if arr.phases == 1:
        log_fact = _log_factorials(int(taus.size))
        m = arr.rate * np.asarray(taus, dtype=float)
        with np.errstate(divide="ignore"):
            logp = np.where(n > 0, n * np.log(m), 0.0) - m - log_fact
        return np.asarray(np.where(m > 0, np.exp(logp), n == 0), dtype=float)
    return _counts_from(_spectrum(arr, size), taus, arr.start)[n, n]


# ---------------------------------------------------------------------------------------------
# The prompt-queue chain: (prompts waiting, arrival phase) at step boundaries
# ---------------------------------------------------------------------------------------------


def _lower_inverse(m: FloatArray) -> FloatArray:
    """Inverse of a lower-triangular M-matrix (positive diagonal, off-diagonal ≤ 0), row by
    row by forward substitution: X_i = (e_i − M_i,<i · X_<i) / M_ii, every term ≥ 0, so
    subtraction-free. Solved once per chain; each stationary vector is then one product."""
    n = m.shape[0]
    out = np.zeros_like(m)
    for i in range(n):
        row = -m[i, :i] @ out[:i]
        row[i] = 1.0
        out[i] = row / m[i, i]
    return out


class _Levels:
    """The chain's transition matrix with its levels ≥ 1 (prompt steps: fixed at a rate)
    reduced once, by Grassmann–Taksar–Heyman state reduction (1985) from the top; level 0
    (nothing waits: a decode step or idle, which depend on the batch) is reduced per call with
    the recorded eliminations, composed once into one linear map (``fold``), and the levels
    above by one triangular solve. The chain moves down at most ``reach`` states a step, and
    that survives each elimination, so each touches ``reach`` columns. Subtraction-free."""

    def __init__(self, p: FloatArray, reach: int, phases: int) -> None:
        a = p.copy()
        n = a.shape[0]
        self.down = np.zeros(n)
        # fold: the eliminations as one linear map on the rows of level 0 (row0 @ fold),
        # recorded on the identity as they are made
        fold = np.eye(n)
        for s in range(n - 1, phases - 1, -1):
            lo = max(0, s - reach)
            out = float(a[s, lo:s].sum())
            self.down[s] = out
            if out > 0:
                frac = a[s, lo:s] / out
                fold[s:, lo:s] += np.multiply.outer(fold[s:, s], frac)
                if s > phases:
                    a[phases:s, lo:s] += np.multiply.outer(a[phases:s, s], frac)
        self.a = a
        self.fold = fold
        self.reach = reach
        self.phases = phases
        # levels ≥ 1 from level 0 by substitution: π_s·down_s = (π_0 r)_s + Σ_{t<s} π_t a_ts,
        # a unit-free triangular system (states that never leave downwards hold nothing)
        upper = np.triu(a[phases:, phases:], 1)
        leaves = self.down[phases:] > 0
        upper[:, ~leaves] = 0.0
        self.solve_inv = _lower_inverse(
            (np.diag(np.where(leaves, self.down[phases:], 1.0)) - upper).T
        )
        self.leaves = leaves

    def stationary(self, row0: FloatArray) -> FloatArray:
        """Stationary distribution with ``row0`` (phases × states) as the rows of level 0."""
        j0, n = self.phases, self.a.shape[0]
        r = row0 @ self.fold
        pi = np.zeros(n)
        low = np.zeros(j0)
        for s in range(j0 - 1, 0, -1):  # the phases of level 0 among themselves
            low[s] = float(r[s, :s].sum())
            if low[s] > 0:
                r[:s, :s] += np.multiply.outer(r[:s, s], r[s, :s] / low[s])
        pi[0] = 1.0
        for s in range(1, j0):
            pi[s] = float(pi[:s] @ r[:s, s]) / low[s] if low[s] > 0 else 0.0
        rhs = np.where(self.leaves, pi[:j0] @ r[:, j0:], 0.0)
        pi[j0:] = np.maximum(self.solve_inv @ rhs, 0.0)
        return np.asarray(pi / pi.sum(), dtype=float)


@dataclass(frozen=True)
class _Queue:
    """What the chain needs at one rate: the step counts and the reduced levels ≥ 1."""

    size: int  # levels (prompts waiting 0..size−1)
    spec: _Spectrum
    levels: _Levels


def _queue(st: _Steps, arr: _Arrivals, least: int = 32) -> _Queue:
    """The chain's prompt levels at one rate, with room for the arrivals of the longest step
    (10 standard deviations) and for the queue a prompt load ρ builds (15·cv²·ρ/(1 − ρ)
    prompts; ``_point`` doubles it while the stationary tail is not negligible), at least
    ``least`` levels."""
    kmax, ph = st.per_step, arr.phases
    longest = max(float(st.prompt_s[kmax]), float(st.decode_s[st.slots]))
    mean = arr.rate * longest
    load = min(arr.rate * float(st.prompt_s[kmax]) / kmax, 0.995)
    need = kmax + mean + 10.0 * math.sqrt(mean * max(arr.idc, 1.0) + 1.0) + 8.0
    need += 15.0 * max(arr.idc, 1.0) * load / (1.0 - load)
    size = least
    while size < need:
        size *= 2
    spec = _spectrum(arr, size)
    counts = _counts(spec, st.prompt_s[1:])  # [k − 1, a, i, j]
    p = np.zeros((size * ph, size * ph))
    for n in range(1, size):
        k = min(n, kmax)
        base = n - k
        block = counts[k - 1, : size - base].transpose(1, 0, 2).reshape(ph, -1)
        p[n * ph : (n + 1) * ph, base * ph :] = block
    rows = p[ph:].sum(axis=1, keepdims=True)
    p[ph:] /= np.maximum(rows, _EPS)  # the truncated mass stays in range
    return _Queue(size, spec, _Levels(p, kmax * ph + ph - 1, ph))


@dataclass(frozen=True)
class _Chain:
    pi: FloatArray  # [level, phase]: prompts waiting and arrival phase at step boundaries
    idle_p: float  # P(no sequence runs | nothing waits)
    decode_len_s: FloatArray  # decode step lengths (nodes) and their step probabilities
    decode_p: FloatArray
    cycle_s: float  # mean time between boundaries
    prefill_share: float
    idle_share: float
    prompt_work_s: float  # w: prompt-step time per request
    steps_per_prompt: float  # 1 / E[K]
    step_var_s2: float  # Var over prompt steps of p(K) − w·K
    marginal_s: float  # w_m: prompt-step time one more request adds, p(k) − p(k − 1) in its step


def _chain(
    st: _Steps,
    arr: _Arrivals,
    qu: _Queue,
    decode_len_s: FloatArray,
    decode_p: FloatArray,
    idle_p: float,
) -> _Chain:
    kmax, ph, size = st.per_step, arr.phases, qu.size
    dec = _counts(qu.spec, decode_len_s)  # [node, a, i, j]
    move = np.einsum("l,laij->iaj", decode_p, dec).reshape(ph, -1) * (1.0 - idle_p)
    move[:, ph : 2 * ph] += idle_p * arr.start[None, :]  # idle until an arrival: level 1
    move /= np.maximum(move.sum(axis=1, keepdims=True), _EPS)
    pi = qu.levels.stationary(move).reshape(size, ph)
    level = pi.sum(axis=1)
    k = np.minimum(np.arange(size), kmax)
    dec_mean = float(decode_p @ decode_len_s)
    t_idle = idle_p * float(pi[0] @ arr.to_next_s)
    t_decode = level[0] * (1.0 - idle_p) * dec_mean
    prompt_len = st.prompt_s[k]
    t_prompt = float(level[1:] @ prompt_len[1:])
    cycle = t_idle + t_decode + t_prompt
    served = float(level[1:] @ k[1:])
    w = t_prompt / max(served, _EPS)
    share = level[1:] / max(float(level[1:].sum()), _EPS)
    mean_k = float(share @ k[1:])
    resid = prompt_len[1:] - w * k[1:]
    var = float(share @ resid**2 - (share @ resid) ** 2)
    seen = share * k[1:]  # the step a request is in: size-biased
    extra = st.prompt_s[k[1:]] - st.prompt_s[k[1:] - 1]
    marginal = float(seen @ extra) / max(float(seen.sum()), _EPS)
    return _Chain(
        pi,
        idle_p,
        decode_len_s,
        decode_p,
        cycle,
        t_prompt / cycle,
        t_idle / cycle,
        w,
        1.0 / max(mean_k, _EPS),
        max(var, 0.0),
        marginal,
    )


def _ttft_atoms(
    st: _Steps, arr: _Arrivals, qu: _Queue, ch: _Chain
) -> tuple[FloatArray, FloatArray]:
    """TTFT at the engine (residual + full prompt steps ahead + own step) as atoms
    (seconds, probabilities) of the exact mixture over the chain (module docstring).

    An arrival comes at elapsed e of a step that began in (n waiting, phase i) after c others
    in that step with intensity [Φ_c(e)·t]_i (arrivals do not see time averages unless
    Poisson); those ahead of it are the carried n − k and the c; the gaps after it start in α.
    """
    kmax, size, ph = st.per_step, qu.size, arr.phases
    pi = ch.pi
    u, du = _gauss("legendre", _POSITION_NODES)
    u, du = 0.5 * (u + 1.0), 0.5 * du
    # periods: decode nodes, prompt steps of k (the last: K, with a carried queue)
    tau = np.concatenate([ch.decode_len_s, st.prompt_s[1:]])
    start = np.zeros((tau.size, ph, size))  # [period, phase i, carried]
    nd = ch.decode_len_s.size
    start[:nd, :, 0] = pi[0][None, :] * ((1.0 - ch.idle_p) * ch.decode_p)[:, None]
    for k in range(1, kmax):
        start[nd + k - 1, :, 0] = pi[k]
    start[-1, :, : size - kmax] = pi[kmax:].T
    keep = start.sum(axis=(1, 2)) > 1e-14
    tau, start = tau[keep], start[keep]
    elapsed = (tau[:, None] * u[None, :]).ravel()  # [(period, node)]
    resid = (tau[:, None] * (1.0 - u[None, :])).ravel()
    dw = (tau[:, None] * du[None, :]).ravel()
    # ahead: generating function of carried + c, weighted by the intensity of an arrival
    carry = np.fft.ifft(start, axis=-1) * size  # [period, i, m]: Σ_n start z^n
    e = np.exp(qu.spec.lam[None, :, :] * elapsed[:, None, None])  # [(period,node), m, j]
    tail = np.einsum("mjk,k->mj", qu.spec.inv, arr.exit.astype(complex))
    inten = np.einsum("mij,xmj,mj->xmi", qu.spec.vec, e, tail)  # [(p,n), m, i]
    carry_x = np.repeat(carry, _POSITION_NODES, axis=0)  # [(p,n), i, m]
    gf = np.einsum("xim,xmi->xm", carry_x, inten)
    ahead = np.maximum(np.fft.fft(gf, axis=-1).real / size, 0.0) * dw[:, None]
    # the request that ends an idle period waits for nothing: its own step alone
    idle_w = ch.idle_p * float(pi[0].sum())
    # ahead h: j = ⌊h/K⌋ full steps first, position h − jK + 1 in its own step
    jn = (size + kmax - 1) // kmax
    padded = np.zeros((ahead.shape[0], jn * kmax))
    padded[:, :size] = ahead
    by_j = padded.reshape(-1, jn, kmax)  # [entry, j, position − 1]
    mass_j = by_j.sum(axis=2)
    live = mass_j > 1e-13 * max(float(mass_j.max()), _EPS)
    ent, jj = np.nonzero(live)
    wait = resid[ent] + jj * st.prompt_s[kmax]
    pos = by_j[ent, jj]  # [group, position − 1]
    small = _spectrum(arr, max(16, 4 * kmax), 1e-10 ** (1.0 / max(16, 4 * kmax)))
    behind = _counts_from(small, wait, arr.start)[:, :kmax]  # [group, b], b < K
    tail_b = np.maximum(1.0 - np.cumsum(behind, axis=1), 0.0)  # P(behind > b)
    # k_own = min(K, position + behind): P(k | position s) (s, k 1-based)
    s_idx = np.arange(1, kmax + 1)[:, None]
    k_idx = np.arange(1, kmax + 1)[None, :]
    diff = k_idx - s_idx
    exact = np.where((diff >= 0)[None], behind[:, np.clip(diff, 0, kmax - 1)], 0.0)
    at_top = kmax - s_idx - 1  # P(behind ≥ K − s) = P(behind > K − s − 1)
    top = np.where(at_top >= 0, tail_b[:, np.clip(at_top, 0, kmax - 1)], 1.0)
    exact[:, :, -1] = top[:, :, 0]
    own = np.einsum("gs,gsk->gk", pos, exact)  # [group, k]
    # each position node stands for a cell of positions (its weight wide, centred on it, so
    # the mean is kept): spread its atoms evenly over the residuals of that cell
    width = dw[ent]  # τ·du: the residuals its position cell spans
    spread = (np.arange(_SPREAD) + 0.5) / _SPREAD - 0.5
    base = wait[:, None] + st.prompt_s[None, 1:]  # [group, k]
    live_k = own > 0
    grp, kk = np.nonzero(live_k)
    values = (base[grp, kk][:, None] + width[grp][:, None] * spread[None, :]).ravel()
    probs = np.repeat(own[grp, kk] / _SPREAD, _SPREAD)
    values = np.concatenate([values, st.prompt_s[1:2]])
    probs = np.concatenate([probs, [idle_w]])
    return values, probs / probs.sum()


# ---------------------------------------------------------------------------------------------
# The running sequences
# ---------------------------------------------------------------------------------------------


def _batch_pmf(mean: Any, idc: float, slots: int) -> FloatArray:
    """P(B = b) for b = 0..``slots`` (rows: one per ``mean``): negative binomial with that
    mean and variance mean·``idc`` (Poisson at idc = 1), the mass above ``slots`` lumped at
    ``slots`` (the KV slots are full; the rest wait for one). Computed where the rows have
    mass (``_nb_window``; beyond, zero)."""
    mu = np.atleast_1d(np.asarray(mean, dtype=float))
    first, values = _nb_window(mu, idc, slots)
    pmf = np.zeros((mu.size, slots + 1))
    pmf[:, first : first + values.shape[1]] = values
    pmf[:, -1] = np.maximum(0.0, 1.0 - pmf[:, :-1].sum(axis=1))
    pmf[mu <= 0] = np.eye(1, slots + 1)[0]
    return np.asarray(pmf, dtype=float)


def _log_rising(r: FloatArray, first: int, last: int) -> FloatArray:
    """log Γ(b + r) − log Γ(r) (the log of the rising factorial r(r+1)…(r+b−1)) for
    b = first … last, one row per r > 0: the standard library's log-gamma at b = first, then
    the sum of log(r + k) over the steps (no special-function library on this path)."""
    start = np.fromiter((math.lgamma(first + x) - math.lgamma(x) for x in r), float, r.size)
    steps = np.log(r[:, None] + np.arange(first, last, dtype=float)[None, :])
    return np.concatenate([start[:, None], start[:, None] + np.cumsum(steps, axis=1)], axis=1)


def _nb_window(mu: FloatArray, idc: float, slots: int) -> tuple[int, FloatArray]:
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
    log_fact = _log_factorials(slots + 1)[first : last + 1][None, :]
    if idc <= 1.0 + 1e-9:
        logp = b * np.log(safe) - safe - log_fact
    else:
        p = 1.0 / idc
        r = safe / (idc - 1.0)
        logp = _log_rising(r[:, 0], first, last) - log_fact + r * math.log(p)
        logp = logp + b * math.log1p(-p)
    return first, np.exp(np.asarray(logp, dtype=float))


def _supply(mu: float, idc: float, st: _Steps) -> float:
    """E[B/d(B)] (tokens/s) of the batch ``_batch_pmf``(μ), from its window alone."""
    if mu <= 0:
        return 0.0
    first, values = _nb_window(np.array([mu]), idc, st.slots)
    row = values[0]
    if first + row.size > st.slots:  # the last count is the lump: the rest goes there
        row = row[:-1]
    per_s = st.tokens_per_s
    lump = max(0.0, 1.0 - float(row.sum()))
    return float(row @ per_s[first : first + row.size]) + lump * float(per_s[st.slots])


def _feedback(beta: float) -> tuple[float, float, float, float]:
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


def _compress(values: FloatArray, probs: FloatArray, nodes: int) -> tuple[FloatArray, FloatArray]:
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


def _batch_mean(st: _Steps, need: float, idc: float, hint: float | None = None) -> float | None:
    """The mean μ of the batch whose supply E[B/d(B)] (B ~ ``_batch_pmf``(μ)) is ``need``
    tokens/s, or None when even a batch 4^20 times the lightest one falls short (saturated).
    The supply grows with μ: from ``hint`` (the last solution of a fixed-point iteration) or
    the root of the deterministic balance μ = need·d(μ) (a few substitutions), the root is
    bracketed geometrically, then found by ``_root`` to 1e-11 of μ."""

    def gap(mu: float) -> float:
        return _supply(mu, idc, st) - need

    top = max(need * float(st.decode_s[1]), 1e-3) * 4.0**20
    if hint is not None and hint > 0:
        # near the last solution: the secant from it, bracketed below if it wanders off
        x0, x1 = hint, hint * 1.001
        g0, g1 = gap(x0), gap(x1)
        for _ in range(8):
            if not (g1 != g0 and math.isfinite(g0) and math.isfinite(g1)):
                break
            x0, x1, g0 = x1, x1 - g1 * (x1 - x0) / (g1 - g0), g1
            if not 0 < x1 < top:
                break
            g1 = gap(x1)
            if abs(x1 - x0) <= 1e-10 * x1:
                return x1
        guess, step = hint, 1.02
    else:
        guess, step = min(need * float(st.decode_s[1]), float(st.slots)), 1.25
        for _ in range(8):
            guess = min(need * float(st.decode(guess)), float(st.slots))
        guess = max(guess, 1e-9)
    lo, hi = guess, guess
    if gap(guess) < 0:
        while True:
            hi = min(hi * step, top)
            if gap(hi) >= 0:
                break
            if hi >= top:
                return None
            lo, step = hi, step * step
    else:
        while True:
            lo /= step
            if lo < 1e-9:
                lo = 0.0
                break
            if gap(lo) < 0:
                break
            hi, step = lo, step * step
    return _root(gap, lo, hi, 1e-11)


def _root(f: Any, lo: float, hi: float, rel_tol: float) -> float:
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
class _Decode:
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


def _decode(
    st: _Steps,
    rate: float,
    prefill_share: float,
    idc: float,
    burst: float,
    damping: float = 1.0,
    gamma: float | None = None,
    hint: float | None = None,
) -> _Decode | None:
    """Solve the token balance (1 − ρ_p) · E[B/d(B)] = λ(OSL − 1) for the batch in decode
    time, B negative binomial with variance/mean ``idc``; None when no batch keeps up
    (saturated). The decode life L = E[B]/λ (Little) counts the prompt steps too, during which
    the batch is larger by (γ − 1)·γ·``burst``, burst = (cv² − 1)/2. ``damping``: how much of
    a longer decode step's slowing survives the prompt steps it shortens, 1 + ∂ρ_p/∂ln D /
    (1 − ρ_p); ``gamma``: 1 + λ·w_m/(1 − ρ_p), the life one more arrival adds, per life /
    λ (both from the chain; module docstring)."""
    need = rate * (st.osl - 1.0) / max(1.0 - prefill_share, 1e-12)
    mu = _batch_mean(st, need, idc, hint)
    if mu is None:
        return None
    pmf = _batch_pmf(mu, idc, st.slots)[0]
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
    overall = min(max(overall, 0.0), float(st.slots))
    return _Decode(pmf, overall / rate, beta, gamma, level, beta_seen, mu)


# ---------------------------------------------------------------------------------------------
# Distributions: atoms and normal mixtures
# ---------------------------------------------------------------------------------------------


def _compact(
    values: FloatArray, probs: FloatArray, cells: int = 16384
) -> tuple[FloatArray, FloatArray]:
    """Atoms merged on a grid of ``cells`` cells over their range (each at its mean), sorted."""
    lo, hi = float(values.min()), float(values.max())
    if hi <= lo:
        return np.array([lo]), np.array([float(probs.sum())])
    idx = np.minimum(((values - lo) / (hi - lo) * cells).astype(np.int64), cells - 1)
    w = np.bincount(idx, weights=probs, minlength=cells)
    m = np.bincount(idx, weights=probs * values, minlength=cells)
    keep = w > 0
    return np.asarray(m[keep] / w[keep], dtype=float), np.asarray(w[keep], dtype=float)


def _quantiles_of_atoms(
    values: FloatArray, probs: FloatArray, qs: tuple[float, ...]
) -> list[float]:
    order = np.argsort(values, kind="stable")
    v, c = values[order], np.cumsum(probs[order])
    c /= c[-1]
    out = []
    for qq in qs:
        i = int(np.searchsorted(c, qq, side="left"))
        out.append(float(v[min(i, v.size - 1)]))
    return out


def _equal_mass(values: FloatArray, probs: FloatArray, nodes: int) -> FloatArray:
    """``nodes`` equal-probability atoms (the quantiles at (i + ½)/nodes)."""
    order = np.argsort(values, kind="stable")
    v, c = values[order], np.cumsum(probs[order])
    c /= c[-1]
    at = (np.arange(nodes) + 0.5) / nodes
    idx = np.minimum(np.searchsorted(c, at, side="left"), v.size - 1)
    return v[idx]


@dataclass(frozen=True)
class _Mixture:
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
        from scipy.special import gammainc

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
        """Quantiles: where the CDF reaches each (``_cdf_roots``), over the components of
        weight above 1e-13 (what the others hold moves no quantile by a visible amount)."""
        lo, hi = self.bounds()
        big = self.w > 1e-13
        view = _Mixture(self.shift[big], self.gmean[big], self.var[big], self.w[big], self.cap)
        return _cdf_roots(view.cdf, lo, hi, qs)


def _cdf_roots(
    cdf: Any, lo: float, hi: float, qs: tuple[float, ...], points: int = 17
) -> list[float]:
    """The least x in [lo, hi] with cdf(x) ≥ q for each q (``cdf`` non-decreasing and
    vectorised): the CDF on a grid of ``points`` finds the cell holding each, then
    Anderson–Björck regula falsi in it (bisection after 60 steps, a guard that never acts on
    a smooth CDF), until the cell is 1e-10 of [lo, hi] or the CDF is within 1e-14 of q."""
    grid = np.linspace(lo, hi, points)
    values = cdf(grid)
    target = np.asarray(qs, dtype=float)
    cell = np.clip(np.searchsorted(values, target, side="left"), 1, grid.size - 1)
    a, b = grid[cell - 1], grid[cell]
    fa, fb = values[cell - 1] - target, values[cell] - target
    tol = 1e-10 * max(hi - lo, 1e-300)
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
        hit = np.abs(fx) <= 1e-14
        newly = ~done & (hit | (b - a <= tol))
        best = np.where(newly, np.where(hit, x, 0.5 * (a + b)), best)
        done |= newly
    best = np.where(done, best, 0.5 * (a + b))
    return [float(v) for v in best]


def _mixture(
    mean: FloatArray, var: FloatArray, level: float, w: FloatArray, cap: float = math.inf
) -> _Mixture:
    """Components with ``mean`` and ``var`` whose random part is a gamma with mean ``level``
    (the part of the value that scales with the batch: positive), at least exponential
    (shape ≥ 1: where the level is small next to the spread, the spread is not the batch's)."""
    var = np.maximum(var, (1e-9 * np.abs(mean)) ** 2 + 1e-30)
    shape = np.maximum(level * level / var, 1.0)
    gmean = np.sqrt(shape * var)
    return _Mixture(mean - gmean, gmean, var, w, cap)


def _merge(mix: _Mixture, nodes: int) -> _Mixture:
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
    return _Mixture(m1 - g, g, var, gw, mix.cap)


def _sum_quantiles(
    atoms: FloatArray, mix: _Mixture, scale: float, qs: tuple[float, ...]
) -> list[float]:
    """Quantiles of X + scale·Y, X equal-mass ``atoms``, Y ~ ``mix``, independent: their
    CDF, the mean over the atoms of Y's, inverted by ``_cdf_roots``."""
    small = _merge(mix, 32)
    b_lo, b_hi = small.bounds()
    # Y's CDF once, on a grid of 4096 cells over its range (linear in between: within
    # (cell/σ)²/8 of the CDF, ~1e-7), then the mean over the atoms
    table_y = np.linspace(b_lo, b_hi, _SUM_CELLS + 1)
    table_f = small.cdf(table_y)

    def cdf(x: FloatArray) -> FloatArray:
        y = (x[:, None] - atoms[None, :]) / scale
        at = np.interp(y.ravel(), table_y, table_f, left=0.0, right=1.0)
        return np.asarray(at.reshape(y.shape).mean(axis=1), dtype=float)

    lo = float(atoms.min() + scale * b_lo)
    hi = float(atoms.max() + scale * b_hi)
    return _cdf_roots(cdf, lo, hi, qs)


# ---------------------------------------------------------------------------------------------
# The point
# ---------------------------------------------------------------------------------------------


def _unstable(st: _Steps, rate: float, qs: tuple[float, ...]) -> OpenLoopPoint:
    inf = math.inf
    table = dict.fromkeys(qs, inf)
    top = st.max_rate_rps
    k = st.saturated_prompts
    prefill = min(rate, top) * float(st.prompt_s[k]) / k
    return OpenLoopPoint(
        rate, rate / top, False, float(st.slots), inf, inf, inf, table, table, table, top,
        float(st.slots), prefill, 1.0, inf, inf,
    )  # fmt: skip


def _point(
    st: _Steps,
    rate: float,
    cv: float,
    qs: tuple[float, ...],
    tables: frozenset[Metric] = frozenset(("ttft", "itl", "e2e")),
) -> OpenLoopPoint:
    """The point at ``rate``; percentiles only for the metrics in ``tables`` (NaN for the
    others: a search that only needs some of them skips the rest)."""
    if not rate > 0:
        raise ValueError(f"rate must be > 0 requests/s (got {rate})")
    arr = _arrivals(rate, cv)
    top = st.max_rate_rps
    if rate >= top:
        return _unstable(st, rate, qs)
    idc_a = arr.idc
    steps = st.osl - 1.0
    k_sat = st.saturated_prompts
    w_sat = float(st.prompt_s[k_sat]) / k_sat
    qu = _queue(st, arr)
    # warm starts: P(idle | nothing waits), batch variance/mean, damping, gamma
    state = [1.0, max(idc_a, 1.0), 1.0, 0.0]
    hint: list[float | None] = [None]  # the batch mean last solved: where the next starts

    def evaluate(w: float) -> tuple[float, _Decode | None, _Chain]:
        """F(w): prompt-step time per request that the chain gives when it is w now (the
        batch, hence the decode steps and the prompts each prompt step gathers, follow)."""
        dec: _Decode | None = None
        ch: _Chain | None = None
        if state[3] <= 0:
            state[3] = 1.0 / (1.0 - rate * w)
        for _ in range(12):
            idle_p, idc, damping, gamma = state
            idle_target = 1.0
            lens, probs = st.prompt_s[1:2], np.ones(1)
            if steps > 0:
                dec = _decode(st, rate, rate * w, idc, (idc_a - 1.0) / 2.0, damping, gamma, hint[0])
                if dec is not None:
                    hint[0] = dec.mu
                view = dec
                if view is None:  # no batch keeps up at this prompt share: slots full
                    pmf = np.zeros(st.slots + 1)
                    pmf[-1] = 1.0
                    view = _Decode(pmf, st.slots / rate, 0.0, gamma, 0.0, 0.0)
                held = np.flatnonzero(view.pmf[1:]) + 1  # the batches with mass
                lens = st.decode_s[held]
                probs = view.pmf[held] / lens  # time-average → per decode step
                if probs.sum() <= 0:
                    lens, probs = st.decode_s[1:2], np.ones(1)
                lens, probs = _compress(lens, probs / probs.sum(), _BATCH_NODES)
                idle_target = (1.0 - rate * w) * float(view.pmf[0])
                state[1] = max(idc_a * view.gamma**2 * _feedback(view.beta)[0], 1.0)
            probs = probs / probs.sum()
            ch = _chain(st, arr, qu, lens, probs, idle_p)
            if steps > 0:  # idle share of time = the target: P(idle | nothing waits), π held
                wait0 = float(ch.pi[0] @ arr.to_next_s)
                dec0 = float(ch.pi[0].sum()) * float(ch.decode_p @ ch.decode_len_s)
                other = ch.cycle_s - idle_p * wait0 - (1.0 - idle_p) * dec0
                num = idle_target * (dec0 + other)
                den = wait0 * (1.0 - idle_target) + idle_target * dec0
                state[0] = min(max(num / max(den, _EPS), 0.0), 1.0)
                # the prompt share's response to longer decode steps (more prompts gather)
                longer = _chain(st, arr, qu, lens * 1.02, probs, idle_p)
                slope = (longer.prefill_share - ch.prefill_share) / math.log(1.02)
                busy = max(1.0 - ch.idle_share - ch.prefill_share, _EPS)
                state[2] = min(max(1.0 + slope / busy, 0.0), 1.0)
                state[3] = 1.0 + rate * ch.marginal_s / (1.0 - ch.prefill_share)
            if (
                abs(state[0] - idle_p) < 1e-4
                and abs(state[1] - idc) <= 1e-3 * idc
                and abs(state[2] - damping) < 1e-3
                and abs(state[3] - gamma) < 1e-3 * gamma
            ):
                break
        assert ch is not None
        full = 1.0 if (steps > 0 and dec is None) else (dec.full if dec is not None else 0.0)
        return (1.0 - full) * ch.prompt_work_s + full * w_sat, dec, ch

    # w = F(w): F falls as w rises (more prompt time → larger batch → longer decode steps →
    # more prompts per prompt step), so the root is unique; Illinois-corrected regula falsi.
    per_prompt = st.prompt_s[1:] / np.arange(1, st.per_step + 1)
    lo, hi = float(per_prompt.min()), float(per_prompt.max())
    f_lo, dec, ch = evaluate(lo)
    g_lo = f_lo - lo
    if g_lo > 0 and hi > lo:
        hi = min(hi, f_lo)  # F falls: the root w = F(w) is at most F(lo), usually near it
        f_hi, dec, ch = evaluate(hi)
        g_hi = f_hi - hi
        side = 0
        for _ in range(40):
            if g_hi >= 0 or hi - lo <= 1e-6 * hi:
                break
            w = hi - g_hi * (hi - lo) / (g_hi - g_lo)
            f_w, dec, ch = evaluate(w)
            g = f_w - w
            if abs(g) <= 1e-6 * w:
                break
            if g > 0:
                lo, g_lo = w, g
                if side > 0:
                    g_hi *= 0.5
                side = 1
            else:
                hi, g_hi = w, g
                if side < 0:
                    g_lo *= 0.5
                side = -1
    if steps > 0 and dec is None:
        return _unstable(st, rate, qs)
    while float(ch.pi[3 * qu.size // 4 :].sum()) > 1e-9 and qu.size < 4096:
        # the queue outgrew the chain: again with room for it, at the solution found
        qu = _queue(st, arr, 2 * qu.size)
        _, dec, ch = evaluate(ch.prompt_work_s)
        if steps > 0 and dec is None:
            return _unstable(st, rate, qs)
    # TTFT at the engine, then the KV slot wait and the hand-off
    tv, tp = _compact(*_ttft_atoms(st, arr, qu, ch))
    kv_mean = 0.0
    itl: _Mixture | None = None
    if dec is not None and (dec.full > 1e-9 or "itl" in tables or "e2e" in tables):
        # (the per-request ITL distribution: for its tables and for the KV slot wait)
        full_itl = st.slots / (top * steps)  # Little at saturation: every slot held
        itl = _itl_mixture(st, arr, ch, dec, max(full_itl, dec.life_s / steps))
    if dec is not None and itl is not None and dec.full > 1e-9:
        # slots full: GI/G/c in heavy traffic (Allen–Cunneen), the c slots draining at λ_max:
        # W = P(full)·(c_a² + c_s²)/(2(λ_max − λ)), c_s the coefficient of variation of a
        # request's life (completions of many nearly constant lives are smooth)
        m1 = float(itl.w @ itl.mean)
        cs2 = float(itl.w @ (itl.var + itl.mean**2)) / (m1 * m1) - 1.0
        kv_mean = dec.full * (idc_a + max(cs2, 0.0)) / (2.0 * (top - rate))
        x, h = _gauss("laguerre", 24)
        cond = kv_mean / dec.full
        tv = np.concatenate([tv, (tv[:, None] + cond * x[None, :]).ravel()])
        tp = np.concatenate([tp * (1.0 - dec.full), (tp[:, None] * dec.full * h[None, :]).ravel()])
        tv, tp = _compact(tv, tp)
    tv = tv + st.handoff_s
    ttft_mean = float(tv @ tp)
    nan = math.nan
    ttft_table: Mapping[float, float] = (
        _Quantiles(qs, _quantiles_of_atoms, tv, tp, qs)
        if "ttft" in tables or ("e2e" in tables and dec is None)
        else dict.fromkeys(qs, nan)
    )
    alone = float(st.prompt_s[1]) + st.handoff_s
    if dec is None:  # one-token answers: no decode
        return OpenLoopPoint(
            rate, rate / top, True, rate * ttft_mean, ttft_mean, nan, ttft_mean,
            ttft_table, dict.fromkeys(qs, nan), ttft_table, top, 0.0, ch.prefill_share,
            1.0 - ch.idle_share, kv_mean, ttft_mean - alone,
        )  # fmt: skip
    itl_mean = dec.life_s / steps
    none = dict.fromkeys(qs, nan)
    e2e_q: Mapping[float, float] = (
        _Quantiles(qs, _sum_quantiles, _equal_mass(tv, tp, 128), itl, steps, qs)
        if itl is not None and "e2e" in tables
        else none
    )
    itl_q = _Quantiles(qs, itl.quantiles, qs) if itl is not None and "itl" in tables else none
    b = np.arange(st.slots + 1, dtype=float)
    return OpenLoopPoint(
        rate_rps=rate,
        utilisation=rate / top,
        stable=True,
        in_flight=float(dec.pmf @ b) + rate * float(st.prompt_s[1]),
        ttft_s=ttft_mean,
        itl_s=itl_mean,
        e2e_s=ttft_mean + steps * itl_mean,
        ttft_q=ttft_table,
        itl_q=itl_q,
        e2e_q=e2e_q,
        max_rate_rps=top,
        decode_batch=float(dec.pmf[1:] @ b[1:]) / max(float(dec.pmf[1:].sum()), _EPS),
        prefill_share=ch.prefill_share,
        busy_share=1.0 - ch.idle_share,
        kv_wait_s=kv_mean,
        ttft_wait_s=ttft_mean - alone,
    )


def _itl_mixture(st: _Steps, arr: _Arrivals, ch: _Chain, dec: _Decode, cap_s: float) -> _Mixture:
    """Per-request ITL (module docstring): the decode life as a busy period of prompt
    interruptions (each arrival during it adds w_e of life) started by decode work D, plus the
    batch's part, gamma-shaped, and no more than ``cap_s`` (the ITL with the slots full)."""
    steps = st.osl - 1.0
    rate, idc_a = arr.rate, arr.idc
    life = dec.life_s
    _, _, i1, i2 = _feedback(dec.beta)
    g, bt = dec.gamma, dec.beta_seen
    rho = 1.0 - 1.0 / g
    per_arrival = g * (rho + bt * i1) / rate  # s: life per arrival in a window of one life
    resid = life * idc_a / rate * g * g * bt * bt * max(i2 - i1 * i1, 0.0)
    # busy period: L = D + A·w_e, w_e/(1 − λw_e) = s, E[L] = D/(1 − λw_e) = L
    w_e = per_arrival / (1.0 + rate * per_arrival)
    work = life / (1.0 + rate * per_arrival)
    mean_a = rate * life
    if mean_a * idc_a < 300.0:
        # Takács (1962): P(A = n) = D/(D + n·w_e) · P(n arrivals in D + n·w_e), counted from
        # an arrival (Borel–Tanner for Poisson arrivals)
        n_max = int(mean_a + 14.0 * math.sqrt(mean_a * idc_a * g * g + 1.0) * g + 16)
        n = np.arange(n_max + 1, dtype=float)
        span = work + n * w_e
        top_count = rate * float(span[-1])
        need = max(n_max + 1.0, top_count + 12.0 * math.sqrt(top_count * idc_a + 1.0) + 16.0)
        size = 32
        while size < need:
            size *= 2
        pa = work / span * _own_counts(arr, span, size)
        lives = span
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
    return _mixture(
        lives / steps, (resid + np.maximum(batching, 0.0)) / steps**2,
        dec.level * life / steps, pa, cap_s,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def open_loop(
    dep: Deployment,
    isl: float,
    osl: float,
    rate_rps: float,
    *,
    cv: float = 1.0,
    max_in_flight: int,
    step_tokens: int = STEP_TOKENS,
    quantiles: tuple[float, ...] = QUANTILES,
) -> OpenLoopPoint:
    """One in-flight-batching instance of ``dep`` under arrivals at ``rate_rps`` requests/s
    (gamma inter-arrival times with coefficient of variation ``cv``; 1 = Poisson) of ISL / OSL
    tokens, with ``max_in_flight`` KV slots (``Resolved.max_concurrency``) and prompt steps of
    up to ``step_tokens`` prompt tokens (module docstring). Seconds and requests/s."""
    st = _steps(dep, isl, osl, max_in_flight, step_tokens)
    return _point(st, float(rate_rps), cv, tuple(statistic_fraction(q) for q in quantiles))


def max_rate_rps(
    dep: Deployment, isl: float, osl: float, *, max_in_flight: int, step_tokens: int = STEP_TOKENS
) -> float:
    """The sustainable rate λ_max (requests/s) of one instance (module docstring)."""
    return _steps(dep, isl, osl, max_in_flight, step_tokens).max_rate_rps


def max_rate_within(
    dep: Deployment,
    isl: float,
    osl: float,
    limits: Mapping[str, tuple[str | float, float]],
    cv: float = 1.0,
    max_in_flight: int = 1,
    *,
    step_tokens: int = STEP_TOKENS,
    rel_tol: float = 1e-3,
) -> float:
    """The highest rate (requests/s) at which every ``limits`` entry holds: metric ("ttft",
    "itl", "e2e"; a ``_s`` suffix is accepted) → (statistic: "mean", a fraction or "pNN";
    limit in seconds), on a grid of relative step ``rel_tol`` below λ_max (:class:`RateSearch`);
    0 when even a vanishing rate misses."""
    search = RateSearch(
        dep, isl, osl, limits, cv, max_in_flight, step_tokens=step_tokens, rel_tol=rel_tol
    )
    return search.highest()


#: The lowest rate a search tries, as a share of λ_max: below it a request is alone.
_VANISHING = 1e-6


class RateSearch:
    """The highest rate one instance serves with every limit held at its statistic.

    The answer is defined on a fixed grid, r_j = λ_max·(1 + ``rel_tol``)^(−j) for j = 1 … J
    (r_J the first at or below 10⁻⁶·λ_max): the largest r_j whose statistics meet every limit,
    0 when even r_J misses. Every statistic grows with the rate, so the grid rates that meet
    are those at or below the answer, and a point at any rate narrows one bracket of grid
    indices: [``meets``] at a rate tells every grid rate at or below it meets, a miss that every
    one at or above it misses. The answer therefore does not depend on which points were
    evaluated, nor in what order: a planner may ask ``meets`` at the rate it needs first and
    still get the exhaustive search's answer from ``highest``, and ``start`` (the share of
    λ_max the first point is placed at; another candidate's answer is a good one) changes
    how many points it takes, never the answer.

    ``highest`` places its points by regula falsi per limit on u = ρ/(1 − ρ) (ρ = rate/λ_max):
    the queueing part of a latency grows about linearly in u (Pollaczek–Khinchine, Kingman),
    so the secant through the points nearest the limit (or the line through the two highest
    that meet, while every miss is unstable) lands near it; the first limit to bind sets the
    next point, snapped to the grid inside the bracket. A step that does not halve the bracket
    twice running is replaced by a bisection of the rate (Illinois-style safeguard), so the
    search ends in about log₂(J) points at worst and in four or five usually."""

    def __init__(
        self,
        dep: Deployment,
        isl: float,
        osl: float,
        limits: Mapping[str, tuple[str | float, float]],
        cv: float = 1.0,
        max_in_flight: int = 1,
        *,
        step_tokens: int = STEP_TOKENS,
        rel_tol: float = 1e-3,
        start: float = 0.5,
    ) -> None:
        if not 0 < rel_tol < 1:
            raise ValueError(f"rel_tol must be in (0, 1) (got {rel_tol})")
        self._st = _steps(dep, isl, osl, max_in_flight, step_tokens)
        wanted: list[tuple[Metric, str | float, float]] = []
        qs: set[float] = set()
        tables: set[Metric] = set()
        for name, (stat, limit) in limits.items():
            metric = name.removesuffix("_s")
            if metric == "ttft" or metric == "itl" or metric == "e2e":
                if stat != "mean":  # only the percentiles asked for, of the metrics asked for
                    qs.add(statistic_fraction(stat))
                    tables.add(cast(Metric, metric))
                wanted.append((cast(Metric, metric), stat, float(limit)))
            else:
                raise ValueError(f"unknown metric {name!r}; expected ttft, itl or e2e")
        self._wanted = wanted
        self._quantiles = tuple(sorted(qs))
        self._tables = frozenset(tables)
        self._cv = cv
        self._start = min(max(start, _VANISHING), 1.0 - rel_tol)
        self.top_rps = self._st.max_rate_rps
        self._log_step = math.log1p(rel_tol)
        self._last = math.ceil(math.log(1.0 / _VANISHING) / self._log_step)
        self._meets_j = self._last + 1  # smallest index known to meet (J + 1: none yet)
        self._miss_j = 0  # largest index known to miss (0: λ_max itself, unstable)
        # evaluated points: (u, value / limit per limit), and the outcome of each step
        self._seen: list[tuple[float, list[float]]] = [(0.0, self._alone())]
        self._widths: list[int] = []
        #: Points solved so far (``_point`` calls).
        self.solves = 0

    def _alone(self) -> list[float]:
        """Statistic / limit per limit at a vanishing rate, where every request is alone (the
        low-load limit, in closed form): its prompt step and hand-off, then decode steps of
        one sequence; every percentile the same. Guides the first steps only."""
        st = self._st
        ttft = float(st.prompt_s[1]) + st.handoff_s
        itl = float(st.decode_s[1]) if st.osl > 1 else 0.0
        value = {"ttft": ttft, "itl": itl, "e2e": ttft + (st.osl - 1.0) * itl}
        return [value[m] / lim if lim > 0 else math.inf for m, _, lim in self._wanted]

    def rate_at(self, j: int) -> float:
        """Grid rate r_j, requests/s."""
        return self.top_rps * math.exp(-j * self._log_step)

    def _index(self, rate: float) -> float:
        return math.log(self.top_rps / rate) / self._log_step

    def _ratios(self, rate: float) -> list[float]:
        """Statistic / limit per limit at ``rate`` (inf: unstable or missed outright; 0: a
        vanishing statistic within a limit ≥ 0)."""
        self.solves += 1
        p = _point(self._st, rate, self._cv, self._quantiles, self._tables)
        if not p.stable:
            return [math.inf] * len(self._wanted)
        out = []
        for metric, stat, lim in self._wanted:
            value = p.statistic(metric, stat)
            if lim > 0 and value > 0 and math.isfinite(value):
                out.append(value / lim)
            else:
                out.append(0.0 if value <= lim else math.inf)
        return out

    def meets(self, rate: float) -> bool:
        """Do the statistics at ``rate`` (requests/s) meet every limit? (One point, at most;
        none where a point already evaluated decides it.) Narrows the search's bracket."""
        if not rate > 0:
            raise ValueError(f"rate must be > 0 requests/s (got {rate})")
        if rate >= self.top_rps:
            return False
        x = self._index(rate)
        if math.ceil(x - 1e-9) >= self._meets_j:  # at or below a rate known to meet
            return True
        if math.floor(x + 1e-9) <= self._miss_j:  # at or above a rate known to miss
            return False
        ratios = self._ratios(rate)
        rho = rate / self.top_rps
        if all(math.isfinite(r) for r in ratios):
            self._seen.append((rho / (1.0 - rho), ratios))
        ok = max(ratios, default=0.0) <= 1.0
        if ok:
            self._meets_j = min(self._meets_j, math.ceil(x - 1e-9))
        else:
            self._miss_j = max(self._miss_j, math.floor(x + 1e-9))
        return ok

    def highest(self) -> float:
        """The answer (requests/s; 0 when even a vanishing rate misses)."""
        if not self._wanted:
            return self.rate_at(1)
        while self._meets_j - self._miss_j > 1:
            j = self._next()
            self.meets(self.rate_at(j))
            self._widths.append(self._meets_j - self._miss_j)
        return self.rate_at(self._meets_j) if self._meets_j <= self._last else 0.0

    def _next(self) -> int:
        """The next grid index to evaluate, strictly inside the bracket."""
        lo_j, hi_j = self._miss_j + 1, self._meets_j - 1  # the open bracket, as indices
        w = self._widths
        stalled = len(w) >= 3 and w[-1] > 0.5 * w[-3]
        guess = None if stalled else self._predict()
        if guess is None:
            if max(self._seen[0][1]) > 1.0 and self._meets_j > self._last:
                guess = 0.0  # even a request alone misses: the vanishing rate first
            elif len(self._seen) == 1:
                guess = self._start * self.top_rps  # nothing evaluated yet: where it starts
            else:  # bisect the rate between the bracket's ends
                top = self.rate_at(self._miss_j)
                bottom = self.rate_at(self._meets_j) if self._meets_j <= self._last else 0.0
                guess = 0.5 * (top + bottom)
            if stalled:
                self._widths.clear()
        if guess <= 0:
            return hi_j
        x = self._index(guess)
        # the grid point on the side of the guess whose end of the bracket is farther: a good
        # guess then moves that end next to the other, and the next one closes the bracket
        j = math.ceil(x) if self._meets_j - x > x - self._miss_j else math.floor(x)
        return min(max(j, lo_j), hi_j)

    def _predict(self) -> float | None:
        """Rate where the first limit is predicted to bind: per limit, the line in u through
        the nearest points either side of it (or the two highest below it)."""
        if len(self._seen) < 2:
            return None
        best = math.inf
        for i in range(len(self._wanted)):
            pts = sorted((u, r[i]) for u, r in self._seen)
            below = [(u, r) for u, r in pts if r <= 1.0]
            above = [(u, r) for u, r in pts if r > 1.0]
            if below and above:
                (u0, r0), (u1, r1) = below[-1], above[0]
            elif len(below) >= 2:
                (u0, r0), (u1, r1) = below[-2], below[-1]
            else:
                continue
            if r1 <= r0 or u1 <= u0:
                continue  # flat: this limit does not bind nearby
            best = min(best, u0 + (1.0 - r0) * (u1 - u0) / (r1 - r0))
        if not math.isfinite(best):
            return None
        return self.top_rps * best / (1.0 + best) if best > 0 else 0.0
