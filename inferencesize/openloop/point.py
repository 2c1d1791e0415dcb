"""One instance at one rate: the fixed point that ties the prompt-queue chain to the running
sequences, and the point it gives (means, percentiles, shares).

Pure: numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from inferencesize.openloop.arrivals import arrivals
from inferencesize.openloop.dist import (
    Mixture,
    compact,
    equal_mass,
    quantiles_of_atoms,
    sum_quantiles,
)
from inferencesize.openloop.queue import (
    Chain,
    build_queue,
    chain,
    deep,
    gauss,
    level_cap,
    queue_size,
    smooth_size,
    ttft_atoms,
)
from inferencesize.openloop.running import (
    BATCH_NODES,
    Decode,
    compress,
    decode,
    feedback,
    itl_mixture,
)
from inferencesize.openloop.steps import FloatArray, Steps
from inferencesize.vocabulary import QUANTILES as QUANTILES  # every point reports them
from inferencesize.vocabulary import Metric, fraction_of

_EPS = 1e-12


class Quantiles(Mapping[float, float]):
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
        q = fraction_of(statistic)
        if q is None:
            return float(getattr(self, f"{metric}_s"))
        table: Mapping[float, float] = getattr(self, f"{metric}_q")
        if q not in table:
            raise ValueError(f"percentile {q} not computed (have {sorted(table)})")
        return table[q]


def _least_batch(st: Steps, rate: float) -> float:
    """The decode batch the token balance needs without prompt steps or fluctuations: the
    root of B = λ(OSL − 1)·d(B) (a few substitutions; the slots at most)."""
    need = rate * max(st.osl - 1.0, 0.0)
    b = min(need * float(st.decode_s[1]), float(st.slots))
    for _ in range(12):
        b = min(need * float(st.decode(b)), float(st.slots))
    return max(b, 1.0)


@dataclass(frozen=True)
class Warm:
    """Where a point's fixed point ended (a warm start for a point at a nearby rate): the
    prompt-step time per request w, the inner state (P(idle | nothing waits), batch
    variance/mean, damping, gamma) and the batch mean."""

    w: float
    state: tuple[float, ...]
    hint: float | None


#: Gauss–Hermite nodes for the spread of the other prompts' work in a TTFT.
SPREAD_NODES = 6


def _mixed_lengths(st: Steps, tv: FloatArray, tp: FloatArray) -> tuple[FloatArray, FloatArray]:
    """TTFT atoms of mean-length prompts (``tv``, ``tp``) under a length distribution: each ISL
    bin's own prompt shifts them by its δ_b (``Steps.own_s``), and the prompts served before
    it within them (their count: the time beyond a lone prompt step, in prompts of the
    saturated step's mean work) add their lengths' spread, a normal of variance count ×
    ``Steps.other_var_s2`` (a sum of independent prompts' deviations), no TTFT below the
    bin's own prompt step alone."""
    k = st.saturated_prompts
    per_prompt = float(st.prompt_s[k]) / k
    alone = float(st.prompt_s[1])
    count = np.maximum(tv - alone, 0.0) / per_prompt
    sd = np.sqrt(count * st.other_var_s2)
    z, h = np.polynomial.hermite_e.hermegauss(SPREAD_NODES)
    h = h / h.sum()
    spread = tv[:, None] + sd[:, None] * z[None, :]  # [atom, node]
    weight = tp[:, None] * h[None, :]
    shift, share = np.asarray(st.own_s), np.asarray(st.own_p)
    values = np.maximum(spread[None, :, :] + shift[:, None, None], alone + shift[:, None, None])
    probs = share[:, None, None] * weight[None, :, :]
    return compact(values.ravel(), probs.ravel())


def unstable(st: Steps, rate: float, qs: tuple[float, ...]) -> OpenLoopPoint:
    inf = math.inf
    table = dict.fromkeys(qs, inf)
    top = st.max_rate_rps
    k = st.saturated_prompts
    prefill = min(rate, top) * float(st.prompt_s[k]) / k
    return OpenLoopPoint(
        rate, rate / top, False, float(st.slots), inf, inf, inf, table, table, table, top,
        float(st.slots), prefill, 1.0, inf, inf,
    )  # fmt: skip


def point(
    st: Steps,
    rate: float,
    cv: float,
    qs: tuple[float, ...],
    tables: frozenset[Metric] = frozenset(("ttft", "itl", "e2e")),
    pool: float = 1.0,
    idc_itl: float | None = None,
    warm: Warm | None = None,
    solved: list[Warm | None] | None = None,
) -> OpenLoopPoint:
    """The point at ``rate``; percentiles only for the metrics in ``tables`` (NaN for the
    others: a search that only needs some of them skips the rest)."""
    if not rate > 0:
        raise ValueError(f"rate must be > 0 requests/s (got {rate})")
    if solved is None:
        solved = [None]
    arr = arrivals(rate, cv)
    top = st.max_rate_rps
    if rate >= top:
        return unstable(st, rate, qs)
    idc_a = arr.idc
    steps = st.osl - 1.0
    k_sat = st.saturated_prompts
    w_sat = float(st.prompt_s[k_sat]) / k_sat
    # the chain sized for the decode steps of the batch this rate needs at least (the root of
    # B = λ(OSL − 1)·d(B)); it grows if the queue reaches its top quarter
    cst, carr = st, arr
    qu = build_queue(
        cst, carr, queue_size(cst, carr, 1.5 * float(st.decode(_least_batch(st, rate))))
    )
    # warm starts: P(idle | nothing waits), batch variance/mean, damping, gamma
    state = [1.0, max(idc_a, 1.0), 1.0, 0.0]
    hint: list[float | None] = [None]  # the batch mean last solved: where the next starts

    last_tight = [True]

    def evaluate(w: float, tight: bool = True) -> tuple[float, Decode | None, Chain]:
        """F(w): prompt-step time per request that the chain gives when it is w now (the
        batch, hence the decode steps and the prompts each prompt step gathers, follow).
        ``tight`` False: the inner state to 10× the tolerance and at most four passes (far
        from the root the outer search needs F's sign and size, not its last digits)."""
        dec: Decode | None = None
        ch: Chain | None = None
        if state[3] <= 0:
            state[3] = 1.0 / (1.0 - rate * w)
        last_tight[0] = tight
        loose = 1.0 if tight else 10.0
        moved = [0.0, 0.0, 0.0, 0.0]  # each component's last step
        for inner in range(12 if tight else 4):
            idle_p, idc, damping, gamma = state
            idle_target = 1.0
            lens, probs = st.prompt_s[1:2], np.ones(1)
            if steps > 0:
                dec = decode(st, rate, rate * w, idc, (idc_a - 1.0) / 2.0, damping, gamma, hint[0])
                if dec is not None:
                    hint[0] = dec.mu
                view = dec
                if view is None:  # no batch keeps up at this prompt share: slots full
                    pmf = np.zeros(st.slots + 1)
                    pmf[-1] = 1.0
                    view = Decode(pmf, st.slots / rate, 0.0, gamma, 0.0, 0.0)
                held = np.flatnonzero(view.pmf[1:]) + 1  # the batches with mass
                lens = st.decode_s[held]
                probs = view.pmf[held] / lens  # time-average → per decode step
                if probs.sum() <= 0:
                    lens, probs = st.decode_s[1:2], np.ones(1)
                lens, probs = compress(lens, probs / probs.sum(), BATCH_NODES)
                idle_target = (1.0 - rate * w) * float(view.pmf[0])
                state[1] = max(idc_a * view.gamma**2 * feedback(view.beta)[0], 1.0) / pool
            probs = probs / probs.sum()
            ch = chain(cst, carr, qu, lens, probs, idle_p)
            if steps > 0:  # idle share of time = the target: P(idle | nothing waits), π held
                wait0 = float(ch.pi[0] @ carr.to_next_s)
                dec0 = float(ch.pi[0].sum()) * float(ch.decode_p @ ch.decode_len_s)
                other = ch.cycle_s - idle_p * wait0 - (1.0 - idle_p) * dec0
                num = idle_target * (dec0 + other)
                den = wait0 * (1.0 - idle_target) + idle_target * dec0
                state[0] = min(max(num / max(den, _EPS), 0.0), 1.0)
                # the prompt share's response to longer decode steps (more prompts gather):
                # slow to move, so probed on the first pass at each w only
                if inner == 0:
                    longer = chain(cst, carr, qu, lens * 1.02, probs, idle_p)
                    slope = (longer.prefill_share - ch.prefill_share) / math.log(1.02)
                    busy = max(1.0 - ch.idle_share - ch.prefill_share, _EPS)
                    state[2] = min(max(1.0 + slope / busy, 0.0), 1.0)
                state[3] = 1.0 + rate * ch.marginal_s / max(1.0 - ch.prefill_share, _EPS)
            if (
                abs(state[0] - idle_p) < 1e-4 * loose
                and abs(state[1] - idc) <= 1e-3 * loose * idc
                and abs(state[2] - damping) < 1e-3 * loose
                and abs(state[3] - gamma) < 1e-3 * loose * gamma
            ):
                break
            # a component whose step turned back (the iteration oscillates: prompt-heavy
            # instances, where the batch's spread and the prompt steps feed each other) moves
            # half way only
            for c, before in enumerate((idle_p, idc, damping, gamma)):
                step = state[c] - before
                if step * moved[c] < 0:
                    state[c] = before + 0.5 * step
                moved[c] = step
        assert ch is not None
        full = 1.0 if (steps > 0 and dec is None) else (dec.full if dec is not None else 0.0)
        return (1.0 - full) * ch.prompt_work_s + full * w_sat, dec, ch

    # w = F(w): F falls as w rises (more prompt time → larger batch → longer decode steps →
    # more prompts per prompt step), so the root is unique; Illinois-corrected regula falsi
    # from a bracket: [min p(k)/k, F(that)], or around a warm start's w and F(w)
    per_prompt = st.prompt_s[1:] / np.arange(1, st.per_step + 1)
    floor_w, ceil_w = float(per_prompt.min()), float(per_prompt.max())
    if warm is not None:
        state[:] = list(warm.state)
        hint[0] = warm.hint
        w0 = min(max(warm.w, floor_w), ceil_w)
        f0, dec, ch = evaluate(w0, tight=False)
        if abs(f0 - w0) <= 1e-6 * w0:
            lo = hi = w0
            g_lo, g_hi = 0.0, 0.0
        elif f0 > w0:
            lo, g_lo = w0, f0 - w0
            hi = min(f0, ceil_w)
            f_hi, dec, ch = evaluate(hi, tight=False)
            g_hi = f_hi - hi
        else:
            hi, g_hi = w0, f0 - w0
            lo = max(f0, floor_w)
            f_lo, dec, ch = evaluate(lo, tight=False)
            g_lo = f_lo - lo
            if g_lo <= 0:  # the root is at the floor
                hi, g_hi = lo, g_lo
    else:
        lo, hi = floor_w, ceil_w
        f_lo, dec, ch = evaluate(lo, tight=False)
        g_lo = f_lo - lo
        g_hi = 0.0
        if g_lo > 0 and hi > lo:
            hi = min(hi, f_lo)  # F falls: the root w = F(w) is at most F(lo), usually near it
            f_hi, dec, ch = evaluate(hi, tight=False)
            g_hi = f_hi - hi
        else:
            hi = lo
    w_end = lo
    if g_lo > 0 and g_hi < 0 and hi > lo:
        side = 0
        for _ in range(40):
            if hi - lo <= 1e-6 * hi:
                break
            w = hi - g_hi * (hi - lo) / (g_hi - g_lo)
            w_end = w
            f_w, dec, ch = evaluate(w, tight=hi - lo <= 0.02 * hi)
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
    if not last_tight[0]:  # the answer from a full pass at the root found
        _, dec, ch = evaluate(w_end if g_lo > 0 and g_hi < 0 else lo)
    solved[0] = Warm(
        ch.prompt_work_s if dec is not None or steps <= 0 else w_sat, tuple(state), hint[0]
    )
    if steps > 0 and dec is None:
        return unstable(st, rate, qs)
    cap = level_cap(cst, carr)
    while float(ch.pi[3 * qu.size // 4 :].sum()) > 1e-9 and qu.size < cap:
        # the queue outgrew the chain: again with room for it, at the solution found
        qu = build_queue(cst, carr, min(smooth_size(1.5 * qu.size), cap))
        _, dec, ch = evaluate(ch.prompt_work_s)
        if steps > 0 and dec is None:
            return unstable(st, rate, qs)
    if deep(qu, ch.pi, cap):
        return unstable(st, rate, qs)
    # TTFT at the engine, then the KV slot wait and the hand-off
    tv, tp = compact(*ttft_atoms(cst, carr, qu, ch))
    if st.own_s:
        tv, tp = _mixed_lengths(st, tv, tp)
    kv_mean = 0.0
    itl: Mixture | None = None
    if dec is not None and (dec.full > 1e-9 or "itl" in tables or "e2e" in tables):
        # (the per-request ITL distribution: for its tables and for the KV slot wait)
        # no more than with every slot held: at the sustainable rate (Little), or here, a
        # step of the full batch stretched by this rate's prompt steps (fewer prompts a step
        # than at saturation can take more time per request: MoE prompt steps read the experts)
        full_itl = max(
            st.slots / (top * steps),
            float(st.decode_s[st.slots]) / max(1.0 - ch.prefill_share, 1e-9),
        )
        itl = itl_mixture(st, arr, ch, dec, max(full_itl, dec.life_s / steps), idc_itl)
    if dec is not None and itl is not None and dec.full > 1e-9:
        # slots full: GI/G/c in heavy traffic (Allen–Cunneen), the c slots draining at λ_max:
        # W = P(full)·(c_a² + c_s²)/(2(λ_max − λ)), c_s the coefficient of variation of a
        # request's life (completions of many nearly constant lives are smooth)
        m1 = float(itl.w @ itl.mean)
        cs2 = float(itl.w @ (itl.var + itl.mean**2)) / (m1 * m1) - 1.0
        kv_mean = dec.full * (idc_a + max(cs2, 0.0)) / (2.0 * (top - rate))
        x, h = gauss("laguerre", 24)
        cond = kv_mean / dec.full
        tv = np.concatenate([tv, (tv[:, None] + cond * x[None, :]).ravel()])
        tp = np.concatenate([tp * (1.0 - dec.full), (tp[:, None] * dec.full * h[None, :]).ravel()])
        tv, tp = compact(tv, tp)
    tv = tv + st.handoff_s
    ttft_mean = float(tv @ tp)
    nan = math.nan
    ttft_table: Mapping[float, float] = (
        Quantiles(qs, quantiles_of_atoms, tv, tp, qs)
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
        Quantiles(qs, sum_quantiles, equal_mass(tv, tp, 128), itl, steps, qs)
        if itl is not None and "e2e" in tables
        else none
    )
    itl_q = Quantiles(qs, itl.quantiles, qs) if itl is not None and "itl" in tables else none
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
