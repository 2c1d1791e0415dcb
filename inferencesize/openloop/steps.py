"""Step costs of one deployment at one (ISL, OSL): prompt steps of k = 0..K prompts and decode
steps (per output token) of b = 0..c sequences at the mean context (``latency``).

A deployment that carries its traffic's length distribution (``Deployment.lengths``, a
:class:`~inferencesize.length_mix.LengthMix`) is costed over it instead of at the mean lengths:

* a prompt step of k prompts takes the mixture over the ISL bins of a step of k prompts of
  that bin's length, E_b[p(k; isl_b)] (prefill is superlinear in ISL through attention, so this
  exceeds p(k; E[isl]); exact in expectation for every cost linear in each prompt's work);
* a decode step reads the occupancy-weighted context E[osl·(isl + osl/2)]/E[osl] per sequence;
* a request's own prompt differs from the mean one by δ_b = p(1; isl_b) − E_b'[p(1; isl_b')]
  (``own_s``, probabilities ``own_p``): its TTFT is the mixture over its ISL bin of the
  queue's TTFT shifted by δ_b (``point``), so the long prompts set the TTFT tail.

K, the prompts a step batches, stays ``step_tokens`` // the mean ISL.

Pure: numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from inferencesize.latency import Deployment, per_token_decode_s, step_time

FloatArray = npt.NDArray[np.float64]

#: Prompt tokens one in-flight prompt step batches by default (``memory.MAX_NUM_TOKENS``,
#: TensorRT-LLM's ``max_num_tokens``; the simulator's default too).
STEP_TOKENS = 8192


@dataclass(frozen=True)
class Steps:
    """Step times of one deployment at one (ISL, OSL): prompt steps of k = 0..K prompts
    (``prompt_s``) and decode steps of b = 0..c sequences (``decode_s``, per output token)."""

    isl: float
    osl: float
    per_step: int  # K
    slots: int  # c
    prompt_s: FloatArray  # [k]
    decode_s: FloatArray  # [b]
    handoff_s: float
    #: Per ISL bin of a length distribution: its own prompt's extra time over the mean one
    #: (seconds) and its probability (module docstring); empty: fixed lengths.
    own_s: tuple[float, ...] = ()
    own_p: tuple[float, ...] = ()
    #: The variance of one other prompt's work in a full prompt step about the mean one
    #: (s²): Var_b[(p(K; isl_b) − E_b'[p(K; isl_b')]) / K] (module docstring); 0: fixed.
    other_var_s2: float = 0.0

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


def steps(dep: Deployment, isl: float, osl: float, max_in_flight: int, step_tokens: int) -> Steps:
    """The step times of ``dep`` at ISL / OSL with ``max_in_flight`` KV slots and prompt steps
    of up to ``step_tokens`` prompt tokens (at least one prompt)."""
    if not (isl >= 1 and osl >= 1):
        raise ValueError(f"ISL and OSL must be >= 1 token (got {isl}, {osl})")
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1 (got {max_in_flight})")
    if step_tokens < 1:
        raise ValueError(f"step_tokens must be >= 1 (got {step_tokens})")
    isl, osl = float(round(isl)), float(round(osl))
    per_step = max(1, int(step_tokens // isl))
    k = np.arange(per_step + 1, dtype=float)
    mix = dep.lengths
    own_s: tuple[float, ...] = ()
    own_p: tuple[float, ...] = ()
    other_var = 0.0
    if mix is None or mix.cells == 1:
        context = isl + osl / 2.0 if mix is None else mix.decode_context
        prompt = _prompt_steps(dep, k, isl if mix is None else mix.isl[0])
    else:
        context = mix.decode_context
        probs = mix.prompt_probs
        p = np.asarray(probs)
        by_bin = np.stack([_prompt_steps(dep, k, i) for i in mix.prompt_isl])  # [bin, k]
        prompt = p @ by_bin
        alone = by_bin[:, 1]
        own_s = tuple(float(x) for x in alone - float(p @ alone))
        own_p = probs
        full = by_bin[:, per_step] / per_step
        other_var = float(p @ (full - float(p @ full)) ** 2)
    prompt[0] = 0.0
    b = np.arange(max_in_flight + 1, dtype=float)
    decode = np.asarray(per_token_decode_s(dep, b, context), dtype=float)
    decode = np.broadcast_to(decode, b.shape).copy()
    decode[0] = 0.0
    return Steps(
        isl, osl, per_step, max_in_flight, prompt, decode, dep.handoff_s, own_s, own_p, other_var
    )


def _prompt_steps(dep: Deployment, k: FloatArray, isl: float) -> FloatArray:
    """p(k; isl) for each k: a prompt step of k prompts of ``isl`` tokens (seconds)."""
    prompt = np.asarray(step_time(dep, 0.0, 0.0, k, isl).total_s, dtype=float)
    return np.broadcast_to(prompt, k.shape).copy()
