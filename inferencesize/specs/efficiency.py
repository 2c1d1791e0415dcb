"""Efficiency sets: fitted fractions of peak and overheads for the performance model.

An efficiency set belongs to an engine generation (say which). Entries are per GPU and
precision (or per GPU for every precision); what no entry states comes from ``defaults``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from inferencesize.specs.common import Source, Spec

Fraction = Annotated[float, Field(gt=0, le=1)]
Seconds = Annotated[float, Field(ge=0, le=1)]


class EfficiencyValues(Spec):
    compute: Fraction | None = Field(default=None, description="large-GEMM share of dense peak")
    memory: Fraction | None = Field(default=None, description="share of HBM bandwidth")
    attention: Fraction | None = Field(
        default=None, description="prefill attention share of 16-bit peak"
    )
    comm: Fraction | None = Field(default=None, description="share of link bandwidth")
    gemm_m_half: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="GEMM rows (tokens) at half of the large-GEMM efficiency"
    )
    step_overhead_s: Seconds | None = None
    layer_overhead_s: Seconds | None = None
    comm_latency_s: Seconds | None = None
    prefill_sync: Annotated[float, Field(ge=0, le=1)] | None = Field(
        default=None,
        description="share of arrivals in step with a cohort (closed-loop clients of one"
        " length), which wait for half of its batched prefill; the rest arrive out of step and"
        " wait for the step in progress and the prompts sharing theirs",
    )
    cohort_tokens: Annotated[float, Field(gt=0)] | None = Field(
        default=None,
        description="largest block of prompt tokens that arrives together (one step's token"
        " budget); beyond it closed-loop arrivals spread out",
    )
    kv_read_min_bytes: Annotated[float, Field(ge=0, le=4)] | None = Field(
        default=None,
        description="decode attention reads the KV cache at no fewer than this many bytes per"
        " element's worth of time (2: an 8-bit cache is dequantised at the 16-bit rate);"
        " optional, default 0 (stored bytes)",
    )
    kv_items_half: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="decode attention streams the KV cache at memory · n / (n + this) for n"
        " (sequence, KV head) pairs per GPU; optional, default 0 (always at memory)",
    )


#: Parameters a set's defaults may leave out (the model then uses its neutral default).
OPTIONAL_PARAMS = frozenset({"kv_read_min_bytes", "kv_items_half"})


class EfficiencyEntry(EfficiencyValues):
    gpu: str
    precision: str | None = None
    points: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="measurements the fit used"
    )
    source: str | None = None


class EfficiencySet(Spec):
    id: str
    engine: str = Field(description="the serving engine generation these numbers belong to")
    default: bool = Field(default=False, description="used when no --engine/--calibration")
    engines: list[str] = Field(
        default_factory=list,
        description="case-insensitive substrings of a measurement's 'engine engine_version'"
        " that this set describes (validate picks the set per row)",
    )
    source: Source
    defaults: EfficiencyValues
    entries: list[EfficiencyEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _complete_defaults(self) -> EfficiencySet:
        missing = [
            k
            for k, v in self.defaults.model_dump().items()
            if v is None and k not in OPTIONAL_PARAMS
        ]
        if missing:
            raise ValueError(f"defaults: must set every parameter (missing {', '.join(missing)})")
        return self
