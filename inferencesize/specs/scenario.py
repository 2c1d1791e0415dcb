"""Scenario schema: the workload, traffic, limits and the candidates to size over."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from inferencesize.specs.common import PositiveInt, Spec
from inferencesize.specs.techniques import TechniquesSpec
from inferencesize.units import PRECISIONS, tokens_from_words

Auto = Literal["auto"]
Positive = Annotated[float, Field(gt=0)]


class Budget(Spec):
    max_gpus: PositiveInt | None = None
    max_servers: PositiveInt | None = None
    max_cost_per_hour_usd: Positive | None = None


class ScenarioSpec(Spec):
    """One sizing question. Lengths are tokens; ``*_words`` are converted at 0.75 words/token
    and the system prompt is added to the input. Exactly one of mean_rps / peak_rps."""

    id: str | None = None
    description: str | None = None
    model: str
    isl: PositiveInt | None = Field(default=None, description="input tokens per request")
    osl: PositiveInt | None = Field(default=None, description="output tokens per request")
    isl_words: Positive | None = None
    osl_words: Positive | None = None
    system_prompt_tokens: Annotated[int, Field(ge=0)] = 0
    system_prompt_words: Annotated[float, Field(ge=0)] = 0
    mean_rps: Positive | None = None
    peak_rps: Positive | None = None
    percentile: Annotated[float, Field(gt=0, lt=1)] = 0.95
    dispersion: Annotated[float, Field(ge=0)] = 0.0
    ttft_ms: Positive | None = None
    itl_ms: Positive | None = None
    e2e_ms: Positive | None = None
    mode: Literal["streaming", "sequential"] = "streaming"
    batching: Literal["inflight", "static"] = "inflight"
    hardware: list[str] = Field(min_length=1)
    precision: list[str] = Field(default_factory=lambda: ["fp8", "bf16"], min_length=1)
    kv_precision: str | None = None
    tp: Auto | list[PositiveInt] = "auto"
    pp: Auto | list[PositiveInt] = "auto"
    ep: Auto | list[PositiveInt] = "auto"
    budget: Budget | None = None
    techniques: TechniquesSpec | None = None
    source: str | None = None

    @field_validator("precision")
    @classmethod
    def _known_precisions(cls, value: list[str]) -> list[str]:
        for p in value:
            if p not in PRECISIONS:
                raise ValueError(
                    f"unknown precision {p!r}; expected one of {', '.join(PRECISIONS)}"
                )
        return value

    @field_validator("kv_precision")
    @classmethod
    def _known_kv(cls, value: str | None) -> str | None:
        if value is not None and value not in PRECISIONS:
            raise ValueError(
                f"unknown precision {value!r}; expected one of {', '.join(PRECISIONS)}"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ScenarioSpec:
        if (self.isl is None) == (self.isl_words is None):
            raise ValueError("isl: give exactly one of isl (tokens) or isl_words")
        if (self.osl is None) == (self.osl_words is None):
            raise ValueError("osl: give exactly one of osl (tokens) or osl_words")
        if (self.mean_rps is None) == (self.peak_rps is None):
            raise ValueError("mean_rps: give exactly one of mean_rps or peak_rps")
        if (
            self.mode == "streaming"
            and self.ttft_ms is None
            and self.itl_ms is None
            and self.e2e_ms is None
        ):
            raise ValueError("ttft_ms: give at least one latency limit (ttft_ms, itl_ms or e2e_ms)")
        if self.mode == "sequential" and self.e2e_ms is None:
            raise ValueError(
                "e2e_ms: mode sequential needs e2e_ms (the whole answer is what counts)"
            )
        return self

    @property
    def input_tokens(self) -> int:
        """ISL in tokens including the system prompt."""
        base = self.isl if self.isl is not None else tokens_from_words(self.isl_words or 0)
        prompt = self.system_prompt_tokens + (
            tokens_from_words(self.system_prompt_words) if self.system_prompt_words else 0
        )
        return base + prompt

    @property
    def output_tokens(self) -> int:
        return self.osl if self.osl is not None else tokens_from_words(self.osl_words or 0)
