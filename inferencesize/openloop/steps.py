"""Step costs of one deployment at one (ISL, OSL): prompt steps of k = 0..K prompts and decode
steps (per output token) of b = 0..c sequences at the mean context (``latency``).

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
    prompt = np.asarray(step_time(dep, 0.0, 0.0, k, isl).total_s, dtype=float)
    prompt = np.broadcast_to(prompt, k.shape).copy()
    prompt[0] = 0.0
    b = np.arange(max_in_flight + 1, dtype=float)
    decode = np.asarray(per_token_decode_s(dep, b, isl + osl / 2.0), dtype=float)
    decode = np.broadcast_to(decode, b.shape).copy()
    decode[0] = 0.0
    return Steps(isl, osl, per_step, max_in_flight, prompt, decode, dep.handoff_s)
