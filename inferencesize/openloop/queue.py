"""The prompt-queue chain: (prompts waiting, arrival phase) at step boundaries, and the TTFT it
gives an arrival.

An embedded Markov chain at step boundaries (Kleinrock Vol. 1, §5.6; bulk service of up to K
prompts, Bailey 1954): from n ≥ 1 waiting a prompt step of k = min(n, K) and n − k + A(p(k))
after it; from n = 0 a decode step (a *vacation* of the prompt server: exhaustive service with
multiple vacations, Doshi 1986) whose length follows the batch distribution, or an idle period
that the next arrival ends. Levels ≥ 1 are fixed at a rate and reduced once by
Grassmann–Taksar–Heyman state reduction (1985); level 0 per call. The chain holds the levels
the queue can reach: K plus the arrivals of the longest step and the queue a prompt load
builds, but never more than twice what arrivals can fill when K is far above them (prompts
of a few tokens), so its size does not grow with K.

TTFT of an arrival that lands in a step at a position leaving the residual r, behind h others:

    TTFT = r + ⌊h/K⌋·p(K) + p(k_own),    k_own = min(K, h mod K + 1 + those arriving before
                                                      its step starts),

an exact mixture over states, positions and counts.

Pure: numpy only.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
import numpy.typing as npt

from inferencesize.openloop.arrivals import Arrivals, Counts
from inferencesize.openloop.steps import Steps

FloatArray = npt.NDArray[np.float64]

#: Gauss–Legendre nodes for the position of an arrival inside the step in progress.
POSITION_NODES = 16
#: Atoms each position node is spread into (over its cell of residuals), for percentiles.
SPREAD = 8
#: Block size of the triangular solves.
_BLOCK = 48
#: Most states (levels × arrival phases) the chain holds: its matrices are dense, n² numbers.
MAX_STATES = 2400
#: Most element updates the reduction of the levels may cost (about n·up·reach for n states,
#: the chain moving up ``up`` and down ``reach`` states a step): about 0.3 s.
MAX_REDUCTION_WORK = 3e8
#: Most prompt-step periods an arrival's position is integrated over: neighbouring step
#: sizes, whose lengths differ little, are merged beyond it.
MAX_PERIODS = 48
#: Most own-step sizes counted one by one (an arrival's step holding more is taken at the
#: largest it can hold: a longer step, never a shorter one).
MAX_OWN = 256
#: Windows whose arrival counts are computed exactly; more are interpolated between them.
WAIT_NODES = 256
#: Most complex numbers one block of generating functions holds (64 MiB).
_CHUNK_NUMBERS = 4_000_000
_EPS = 1e-12


@lru_cache(maxsize=8)
def gauss(kind: Literal["legendre", "laguerre"], nodes: int) -> tuple[FloatArray, FloatArray]:
    """Gauss–Legendre (on [−1, 1]) or Gauss–Laguerre nodes and weights, computed once."""
    if kind == "legendre":
        x, w = np.polynomial.legendre.leggauss(nodes)
    else:
        x, w = np.polynomial.laguerre.laggauss(nodes)
    x.flags.writeable = False
    w.flags.writeable = False
    return x, w


class LowerSolve:
    """Solves L·x = b for a lower-triangular-by-blocks M-matrix L (positive diagonal,
    off-diagonal ≤ 0) by blocked forward substitution: the inverses of the diagonal blocks
    (non-negative, as an M-matrix's are) once, then per right-hand side
    x_B = D_B⁻¹·(b_B + |L_B,<B|·x_<B), every term ≥ 0 (subtraction-free), O(n²) a solve and no
    explicit inverse of L. ``block``: the block size (a multiple of any structure L has)."""

    def __init__(self, m: FloatArray, block: int, inv: list[FloatArray] | None = None) -> None:
        n = m.shape[0]
        self.m = m
        self.edges = [*range(0, n, block), n]
        self.inv = inv or [
            np.maximum(np.linalg.inv(m[lo:hi, lo:hi]), 0.0)
            for lo, hi in itertools.pairwise(self.edges)
        ]

    def __call__(self, b: FloatArray) -> FloatArray:
        x = np.zeros_like(b)
        for i, (lo, hi) in enumerate(itertools.pairwise(self.edges)):
            rhs = b[lo:hi] - self.m[lo:hi, :lo] @ x[:lo] if lo else b[lo:hi]
            x[lo:hi] = self.inv[i] @ rhs
        return x


class Levels:
    """The chain's transition matrix with its levels ≥ 1 (prompt steps: fixed at a rate)
    reduced once, a block of whole levels at a time from the top, by block state reduction
    (Grassmann–Taksar–Heyman 1985, in blocks): censoring block B leaves
    a[i, j] += a[i, B]·(I − a[B, B])⁻¹·a[B, j] on the states below, where (I − a[B, B]) is
    formed without subtraction (its diagonal is what leaves each state: the rest of its row).
    The chain moves down at most ``reach`` states a step and up at most ``up`` (the arrivals of
    a prompt step; None: anywhere), and both survive each elimination (a state that reaches B
    lies at most ``up`` below it, and what B reaches lies above the states B − reach), so
    censoring a block touches the ``up`` rows below it only: about n·up·reach operations, in
    products of whole blocks. Level 0 (nothing waits: a decode step or idle, which depend on
    the batch) is reduced per call with the recorded eliminations, composed once into one
    linear map (``fold``), and the levels above follow by block forward substitution,
    π_B = (Σ_{T<B} π_T·a[T, B])·(I − a[B, B])⁻¹, every term ≥ 0."""

    def __init__(
        self,
        p: FloatArray,
        reach: int,
        phases: int,
        first: int | None = None,
        up: int | None = None,
    ) -> None:
        a = p.copy()
        n = a.shape[0]
        ph = phases
        width = ph * max(1, _BLOCK // ph)  # states a block: whole levels
        # level 0 moves into the ``first`` states only, so only their rows of the map count
        rows0 = n if first is None else max(ph, min(first, n))
        fold = np.eye(rows0)
        blocks = list(itertools.pairwise([*range(ph, n, width), n]))
        inv: list[FloatArray] = []
        live = np.ones(n - ph, dtype=bool)
        for s0, s1 in reversed(blocks):
            lo = max(0, s0 - reach)
            block = a[s0:s1, s0:s1]
            down = a[s0:s1, lo:s0]
            leave = down.sum(axis=1) + block.sum(axis=1) - block.diagonal()
            m = -block
            m[np.diag_indices(s1 - s0)] = leave
            dead = leave <= 1e-300  # never leaves (its row underflowed): holds nothing
            if dead.any():
                eye = np.eye(s1 - s0)
                m[dead] = eye[dead]
                m[:, dead] = eye[:, dead]
                live[s0 - ph : s1 - ph] = ~dead
            m_inv = np.maximum(np.linalg.inv(m), 0.0)  # an M-matrix's inverse: ≥ 0
            inv.append(m_inv.T)  # for the solve of π_B·m = rhs: mᵀ·π_Bᵀ = rhsᵀ
            frac = m_inv @ down  # [B, s0 − lo]
            frac[dead] = 0.0
            if s0 < rows0:
                t1 = min(s1, rows0)  # (the map's states end at rows0)
                fold[s0:, lo:s0] += fold[s0:, s0:t1] @ frac[: t1 - s0]
            if s0 > ph:
                r0 = ph if up is None else max(ph, s0 - up)  # the rows that reach block B
                a[r0:s0, lo:s0] += a[r0:s0, s0:s1] @ frac
        self.a = a
        self.fold = fold
        self.first = rows0
        self.phases = ph
        # levels ≥ 1 from level 0: π_B·(I − a[B, B]) = inflow_B + Σ_{T<B} π_T·a[T, B], a
        # triangular system by blocks (the inverses of its diagonal blocks kept above)
        lower = -np.triu(a[ph:, ph:], 1).T
        for s0, s1 in blocks:
            lower[s0 - ph : s1 - ph, s0 - ph : s1 - ph] = 0.0
        lower[~live] = 0.0
        self.live = live
        self.solve = LowerSolve(lower, width, inv[::-1])

    def stationary(self, row0: FloatArray) -> FloatArray:
        """Stationary distribution with ``row0`` (phases × states) as the rows of level 0."""
        j0, n = self.phases, self.a.shape[0]
        m = self.first
        r = np.zeros((j0, n))
        r[:, :m] = row0[:, :m] @ self.fold
        pi = np.zeros(n)
        low = np.zeros(j0)
        for s in range(j0 - 1, 0, -1):  # the phases of level 0 among themselves
            low[s] = float(r[s, :s].sum())
            if low[s] > 0:
                r[:s, :s] += np.multiply.outer(r[:s, s], r[s, :s] / low[s])
        pi[0] = 1.0
        for s in range(1, j0):
            pi[s] = float(pi[:s] @ r[:s, s]) / low[s] if low[s] > 0 else 0.0
        rhs = np.where(self.live, pi[:j0] @ r[:, j0:], 0.0)
        pi[j0:] = np.maximum(self.solve(rhs), 0.0)
        return np.asarray(pi / pi.sum(), dtype=float)


@dataclass(frozen=True)
class Queue:
    """What the chain needs at one rate: the counts and the reduced levels ≥ 1."""

    size: int  # levels (prompts waiting 0..size−1)
    counts: Counts
    levels: Levels


def queue_size(st: Steps, arr: Arrivals, decode_s: float | None = None, least: int = 24) -> int:
    """Levels for the chain at this rate: room for the arrivals of the longest step (10
    standard deviations): the full prompt step, or the decode step of ``decode_s`` (default:
    of a full batch, d(c)), and for the queue a prompt load ρ builds (15·c²·ρ/(1 − ρ)
    prompts), plus K or that much again, whichever is less; at least ``least``, rounded up
    to a fast FFT length. A point grows the chain if its queue reaches the top quarter."""
    kmax = st.per_step
    step = float(st.decode_s[st.slots]) if decode_s is None else decode_s
    longest = max(float(st.prompt_s[kmax]), step)
    mean = arr.rate * longest
    load = min(arr.rate * float(st.prompt_s[kmax]) / kmax, 0.995)
    rest = mean + 10.0 * math.sqrt(mean * max(arr.idc, 1.0) + 1.0) + 8.0
    rest += 15.0 * max(arr.idc, 1.0) * load / (1.0 - load)
    need = rest + min(float(kmax), rest)
    return min(smooth_size(max(float(least), need)), level_cap(st, arr))


def level_cap(st: Steps, arr: Arrivals) -> int:
    """The most levels the chain may hold at these steps and arrivals: at most
    :data:`MAX_STATES` states, and a reduction of at most :data:`MAX_REDUCTION_WORK` (about
    n·up·reach for n states, the chain moving up by the arrivals of a prompt step and down by K); a fast FFT
    length. A queue that outgrows it is judged by :func:`deep` (``point``)."""
    ph = arr.phases
    reach = st.per_step * ph + ph - 1
    mean = arr.rate * float(st.prompt_s[st.per_step])  # arrivals in the longest prompt step
    up = (mean + 10.0 * math.sqrt(mean * max(arr.idc, 1.0) + 1.0) + 8.0) * ph
    n = MAX_STATES
    while n > 24 * ph and n * min(n, up) * min(n, reach) > MAX_REDUCTION_WORK:
        n = int(n * 0.9)
    levels = max(24, n // ph)
    while smooth_size(levels) > levels:
        levels -= 1
    return levels


def deep(qu: Queue, pi: FloatArray, cap: int, tol: float = 1e-6) -> bool:
    """Does the queue reach beyond what the chain can hold (``cap`` levels, already held)
    with probability over ``tol``? Its TTFT tail would then be cut short, so the point is
    judged as not meeting its limits (conservative: a deeper queue only waits longer)."""
    return qu.size >= cap and float(pi[3 * qu.size // 4 :].sum()) > tol


def smooth_size(need: float) -> int:
    """The least integer ≥ ``need`` with no prime factor above 5 (FFT lengths that are fast)."""
    n = max(1, math.ceil(need))
    while True:
        m = n
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        if m == 1:
            return n
        n += 1


def build_queue(st: Steps, arr: Arrivals, size: int) -> Queue:
    """The chain's prompt levels at one rate with ``size`` levels."""
    kmax, ph = st.per_step, arr.phases
    counts = Counts(arr, size)
    top_k = min(kmax, size - 1)
    table = counts.transitions(st.prompt_s[1 : top_k + 1])  # [k − 1, a, i, j]
    table[table < 1e-16] = 0.0  # (the inversion's rounding noise: no reach)
    held_a = np.flatnonzero(table.max(axis=(0, 2, 3)) > 0)
    up = ((int(held_a[-1]) if held_a.size else 0) + 1) * ph  # states a prompt step moves up
    p = np.zeros((size * ph, size * ph))
    for n in range(1, size):
        k = min(n, kmax)
        base = n - k
        block = table[k - 1, : size - base].transpose(1, 0, 2).reshape(ph, -1)
        p[n * ph : (n + 1) * ph, base * ph :] = block
    rows = p[ph:].sum(axis=1, keepdims=True)
    p[ph:] /= np.maximum(rows, _EPS)  # the truncated mass stays in range
    # level 0 moves up by the arrivals of one decode step at most: of the longest, d(c)
    # (and the 2 % longer steps the damping probes)
    longest = counts.transitions(1.05 * st.decode_s[st.slots : st.slots + 1])[0]  # [a, i, j]
    held = np.flatnonzero(longest.sum(axis=2).max(axis=1) > 1e-18)
    reach0 = min(size, (int(held[-1]) if held.size else 0) + 2)
    return Queue(size, counts, Levels(p, kmax * ph + ph - 1, ph, reach0 * ph, up))


@dataclass(frozen=True)
class Chain:
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


def chain(
    st: Steps,
    arr: Arrivals,
    qu: Queue,
    decode_len_s: FloatArray,
    decode_p: FloatArray,
    idle_p: float,
) -> Chain:
    """The chain's stationary distribution with decode steps of ``decode_len_s`` (step
    probabilities ``decode_p``) when nothing waits and a batch runs, and idle with probability
    ``idle_p`` when nothing waits; the shares of time and prompt-step statistics it gives."""
    kmax, ph, size = st.per_step, arr.phases, qu.size
    dec = qu.counts.transitions(decode_len_s)  # [node, a, i, j]
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
    return Chain(
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


def merge_periods(
    tau: FloatArray, start: FloatArray, lo: int, hi: int
) -> tuple[FloatArray, FloatArray]:
    """Periods ``lo``…``hi`` − 1 (prompt steps of 1, 2, … prompts, none carried) merged into
    at most :data:`MAX_PERIODS` runs of neighbouring sizes, geometrically spaced (narrow where
    a prompt more changes the step most): each run a period of the mean length of its steps,
    weighted by how often each starts, holding what they hold. The mean cycle is kept."""
    if hi - lo <= MAX_PERIODS:
        return tau, start
    sizes = np.unique(np.geomspace(1, hi - lo + 1, MAX_PERIODS + 1).astype(int)) - 1
    edges = lo + sizes[sizes < hi - lo]
    mass = start[lo:hi].sum(axis=(1, 2))
    runs = np.add.reduceat(mass, edges - lo)
    width = np.diff(np.append(edges, hi))
    length = np.add.reduceat(mass * tau[lo:hi], edges - lo)
    plain = np.add.reduceat(tau[lo:hi], edges - lo) / width  # a run that starts nowhere
    merged_tau = np.where(runs > 0, length / np.maximum(runs, 1e-300), plain)
    merged = np.add.reduceat(start[lo:hi], edges - lo, axis=0)
    return (
        np.concatenate([tau[:lo], merged_tau, tau[hi:]]),
        np.concatenate([start[:lo], merged, start[hi:]]),
    )


def counts_after(counts: Counts, taus: FloatArray, left: FloatArray) -> FloatArray:
    """P(a arrivals in τ) from phases ``left`` for each of ``taus``: [τ, a]. Past
    :data:`WAIT_NODES` windows of phase-type gaps (thousands, each a spectrum over the
    circle), on that many windows evenly spaced in √τ and linear between them: the count's
    distribution moves smoothly with the window, by about λ·Δτ/σ(τ) ∝ Δ√τ in total variation
    between neighbours (its spread σ grows as √τ), and a mixture of two neighbours is a
    distribution. In blocks of bounded memory."""
    lo, hi = math.sqrt(float(taus.min(initial=0.0))), math.sqrt(float(taus.max(initial=0.0)))
    exact = counts.arr.phases == 1 or taus.size <= WAIT_NODES or hi <= lo
    grid = taus if exact else np.linspace(lo, hi, WAIT_NODES) ** 2
    chunk = max(1, _CHUNK_NUMBERS // (counts.size * counts.arr.phases))
    at = np.concatenate(
        [counts.from_phases(grid[i : i + chunk], left) for i in range(0, grid.size, chunk)]
    )
    if exact:
        return at
    x = (np.sqrt(taus) - lo) / (hi - lo) * (WAIT_NODES - 1)
    i = np.clip(x.astype(int), 0, WAIT_NODES - 2)
    f = (x - i)[:, None]
    return np.asarray((1.0 - f) * at[i] + f * at[i + 1], dtype=float)


def ttft_atoms(st: Steps, arr: Arrivals, qu: Queue, ch: Chain) -> tuple[FloatArray, FloatArray]:
    """TTFT at the engine (residual + full prompt steps ahead + own step) as atoms (seconds,
    probabilities) of the exact mixture over the chain (module docstring).

    An arrival comes at elapsed e of a step that began in (n waiting, phase i) after c others
    in that step with intensity [Φ_c(e)·t]_i (arrivals do not see time averages unless
    Poisson); those ahead of it are the carried n − k and the c; the gaps after it start in α.
    """
    kmax, size, ph = st.per_step, qu.size, arr.phases
    pi = ch.pi
    u, du = gauss("legendre", POSITION_NODES)
    u, du = 0.5 * (u + 1.0), 0.5 * du
    # periods: decode nodes, prompt steps of k (the last: K, with a carried queue); k beyond
    # the chain's levels holds nothing
    top_k = min(kmax, size - 1)
    tau = np.concatenate([ch.decode_len_s, st.prompt_s[1 : top_k + 1]])
    start = np.zeros((tau.size, ph, size))  # [period, phase i, carried]
    nd = ch.decode_len_s.size
    start[:nd, :, 0] = pi[0][None, :] * ((1.0 - ch.idle_p) * ch.decode_p)[:, None]
    for k in range(1, top_k + (0 if top_k == kmax else 1)):
        start[nd + k - 1, :, 0] = pi[k]
    if top_k == kmax:
        start[-1, :, : size - kmax] = pi[kmax:].T
    tau, start = merge_periods(tau, start, nd, nd + top_k - (1 if top_k == kmax else 0))
    keep = start.sum(axis=(1, 2)) > 1e-14
    tau, start = tau[keep], start[keep]
    elapsed = (tau[:, None] * u[None, :]).ravel()  # [(period, node)]
    resid = (tau[:, None] * (1.0 - u[None, :])).ravel()
    dw = (tau[:, None] * du[None, :]).ravel()
    # ahead: generating function of carried + c, weighted by the intensity of an arrival
    carry = np.fft.ifft(start, axis=-1) * size  # [period, i, m]: Σ_n start z^n
    inten = qu.counts.intensity(elapsed)  # [(p,n), m, i]
    carry_x = np.repeat(carry, POSITION_NODES, axis=0)  # [(p,n), i, m]
    gf = np.einsum("xim,xmi->xm", carry_x, inten)
    ahead = np.maximum(np.fft.fft(gf, axis=-1).real / size, 0.0) * dw[:, None]
    # the request that ends an idle period waits for nothing: its own step alone
    idle_w = ch.idle_p * float(pi[0].sum())
    # ahead h: j = ⌊h/K⌋ full steps first, position h − jK + 1 in its own step
    kq = min(kmax, size)  # positions beyond the levels hold nothing
    jn = (size + kq - 1) // kq
    padded = np.zeros((ahead.shape[0], jn * kq))
    padded[:, :size] = ahead
    by_j = padded.reshape(-1, jn, kq)  # [entry, j, position − 1]
    mass_j = by_j.sum(axis=2)
    live = mass_j > 1e-13 * max(float(mass_j.max()), _EPS)
    ent, jj = np.nonzero(live)
    wait = resid[ent] + jj * st.prompt_s[kmax]
    pos = by_j[ent, jj]  # [group, position − 1]
    held = np.flatnonzero(pos.sum(axis=0) > 1e-15 * float(pos.sum()))
    kq = int(held[-1]) + 1 if held.size else 1  # the positions that hold anything
    pos = pos[:, :kq]
    # those arriving before its step starts: counted from a fresh gap; k_own runs up to
    # kc = min(K, positions + the most that can arrive meanwhile), k = kc holding the rest
    most = int(arr.rate * float(wait.max()) * max(arr.idc, 1.0) * 4.0 + 32.0)
    k_top = min(kmax, kq + most)  # the largest own step that holds anything
    kc = min(k_top, MAX_OWN)  # counted one by one up to kc; beyond it, held at p(k_top)
    small_size = max(16, 4 * kc)
    small = Counts(arr, small_size, 1e-10 ** (1.0 / small_size))
    behind = counts_after(small, wait, arr.start)[:, :kc]  # [group, b], b < kc
    # k_own = min(kc, position + behind): the convolution of the two counts (by FFT), the mass
    # of k ≥ kc at kc
    span = kq + kc
    conv = np.fft.irfft(np.fft.rfft(pos, span) * np.fft.rfft(behind, span), span)[:, :kc]
    own = np.maximum(conv, 0.0)  # [group, k − 1]
    own[:, -1] = np.maximum(pos.sum(axis=1) - own[:, :-1].sum(axis=1), 0.0)
    # each position node stands for a cell of positions (its weight wide, centred on it, so
    # the mean is kept): spread its atoms evenly over the residuals of that cell
    width = dw[ent]  # τ·du: the residuals its position cell spans
    spread = (np.arange(SPREAD) + 0.5) / SPREAD - 0.5
    steps_s = st.prompt_s[1 : kc + 1].copy()
    steps_s[-1] = st.prompt_s[k_top]  # k ≥ kc: no longer than the largest it can be
    base = wait[:, None] + steps_s[None, :]  # [group, k]
    grp, kk = np.nonzero(own > 0)
    values = (base[grp, kk][:, None] + width[grp][:, None] * spread[None, :]).ravel()
    probs = np.repeat(own[grp, kk] / SPREAD, SPREAD)
    values = np.concatenate([values, st.prompt_s[1:2]])
    probs = np.concatenate([probs, [idle_w]])
    return values, probs / probs.sum()
