"""Scenario schema: the workload, traffic, limits and the candidates to size over."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from inferencesize.specs.common import MAX_RPS as MAX_RPS  # the largest request rate
from inferencesize.specs.common import Field, Spec, field_validator, model_validator
from inferencesize.specs.economics import (
    DailySpec,
    EconomicsSpec,
    PipelineStage,
    Redundancy,
    Users,
)
from inferencesize.specs.techniques import TechniquesSpec
from inferencesize.units import known_precisions, tokens_from_words
from inferencesize.vocabulary import (
    DEFAULT_ROUTER,
    Arrivals,
    Batching,
    Mode,
    Objective,
    Router,
    Statistic,
)

if TYPE_CHECKING:  # annotation types: read by the schema (specs.schema), never imported here
    from pydantic import ValidationInfo

    from inferencesize.specs.types import (
        Count,
        Degree,
        Float,
        NonNegativeFloat,
        Positive,
        PositiveFloat,
        Rate,
        TokenCount,
        Tokens,
        Words,
        WordsOrZero,
    )

Auto = Literal["auto"]


def closed_loop_only(data: Mapping[str, Any]) -> str:
    """Why a question (raw scenario fields) has only the closed-loop model, or '' when the
    open-loop model applies: an offline batch has no arrivals; static batches, disaggregated
    pools and pipelines are sized at a closed-loop load (no open-loop model of them)."""
    if data.get("offline") is not None:
        return "offline batches have no arrivals (sized at the throughput-optimal load)"
    if data.get("pipeline") is not None:
        return "pipelines are sized closed-loop, stage by stage"
    if data.get("disaggregated") is not None:
        return "disaggregated pools are sized closed-loop"
    if data.get("batching") == "static":
        return "static batching is sized closed-loop (batches run to completion)"
    return ""


#: Hardware searched when a scenario names none: the 8-GPU NVIDIA systems a buyer compares
#: today (Hopper 80 GB, Hopper 141 GB, Blackwell).
DEFAULT_HARDWARE = ("dgx-h100", "dgx-h200", "dgx-b200")


class Budget(Spec):
    max_gpus: Count | None = None
    max_servers: Count | None = None
    max_cost_per_hour_usd: Positive | None = None
    max_power_kw: Positive | None = None


#: Largest coefficient of variation of inter-arrival gaps (``cv``, ``--cv`` on every command).
MAX_CV = 10.0
#: Largest offline batch (requests) and daily token volume; longest deadline (hours: a year).
MAX_OFFLINE_REQUESTS = 1e15
MAX_TOKENS_PER_DAY = 1e18
MAX_DEADLINE_H = 8760.0


class Offline(Spec):
    """Offline work: a batch of ``requests`` finished within ``deadline_h`` hours, or
    ``tokens_per_day`` (input + output tokens) finished every day (within ``deadline_h``,
    default 24). No latency limit: instances run at their throughput-optimal load."""

    requests: Annotated[PositiveFloat, Field(le=MAX_OFFLINE_REQUESTS)] | None = Field(
        default=None, description="requests in the batch"
    )
    tokens_per_day: Annotated[PositiveFloat, Field(le=MAX_TOKENS_PER_DAY)] | None = Field(
        default=None, description="input + output tokens to process every day"
    )
    deadline_h: Annotated[PositiveFloat, Field(le=MAX_DEADLINE_H)] | None = Field(
        default=None, description="hours to finish the batch in (tokens_per_day: at most 24)"
    )

    @model_validator(mode="after")
    def _one_volume(self) -> Offline:
        if (self.requests is None) == (self.tokens_per_day is None):
            raise ValueError("give exactly one of requests or tokens_per_day")
        if self.requests is not None and self.deadline_h is None:
            raise ValueError("deadline_h: required with requests (hours to finish in)")
        if self.tokens_per_day is not None and (self.deadline_h or 24.0) > 24.0:
            raise ValueError("deadline_h: a day's tokens must finish within 24 hours")
        return self


#: Scenario fields that state traffic or latency, which an offline batch replaces.
NOT_OFFLINE = ("mean_rps", "peak_rps", "daily", "ttft_ms", "itl_ms", "e2e_ms", "pipeline")


class KvCap(Spec):
    """Serving-engine KV cap on the global-attention layers (StreamingLLM): keep the first
    ``sink_tokens`` ("attention sinks") and the last ``window_tokens`` of every sequence."""

    sink_tokens: TokenCount = 4
    window_tokens: Tokens


class Pool(Spec):
    """One pool of a disaggregated deployment; unset keys inherit the scenario's."""

    hardware: list[str] | None = Field(default=None, min_length=1)
    precision: list[str] | None = Field(default=None, min_length=1)
    kv_precision: str | None = None
    tp: Auto | list[Degree] | None = None
    pp: Auto | list[Degree] | None = None
    ep: Auto | list[Degree] | None = None
    attention_dp: Auto | list[Degree] | None = None
    cp: list[Degree] | None = Field(
        default=None, description="context parallelism of a prefill instance (long prompts)"
    )

    @field_validator("precision", "kv_precision")
    @classmethod
    def _known_precisions(cls, value: list[str] | str | None) -> list[str] | str | None:
        known_precisions(value)
        return value


class Disaggregated(Spec):
    """Separate prefill and decode pools (xPyD); the planner sizes both and compares them with
    aggregated serving."""

    prefill: Pool = Field(default_factory=Pool)
    decode: Pool = Field(default_factory=Pool)

    @model_validator(mode="after")
    def _cp_prefill_only(self) -> Disaggregated:
        if self.decode.cp is not None and self.decode.cp != [1]:
            raise ValueError("decode.cp: context parallelism applies to the prefill pool only")
        return self


class ScenarioSpec(Spec):
    """One sizing question. Lengths are tokens; ``*_words`` are converted at 0.75 words/token
    and the system prompt is added to the input. Exactly one of mean_rps / peak_rps."""

    id: str | None = None
    description: str | None = None
    model: str | None = Field(default=None, description="required unless pipeline: is given")
    isl: Tokens | None = Field(default=None, description="input tokens per request")
    osl: Tokens | None = Field(default=None, description="output tokens per request")
    isl_words: Words | None = None
    osl_words: Words | None = None
    system_prompt_tokens: TokenCount = 0
    system_prompt_words: WordsOrZero = 0
    mean_rps: Rate | None = None
    peak_rps: Rate | None = None
    percentile: Annotated[Float, Field(gt=0, lt=1)] = 0.95
    dispersion: NonNegativeFloat = 0.0
    ttft_ms: Positive | None = None
    itl_ms: Positive | None = None
    e2e_ms: Positive | None = None
    arrivals: Arrivals = Field(
        default=Arrivals.POISSON,
        description="poisson (default): requests at a rate (cv: their burstiness), sized at"
        " each limit's statistic with the open-loop model; closed-loop: the GenAI-Perf"
        " concurrency benchmark (clients resend when their answer ends), sized at mean limits."
        " Static batching, disaggregated, pipeline and offline questions are closed-loop",
    )
    trace: str | None = Field(
        default=None,
        description="CSV of requests (arrival_s, isl, osl) whose traffic is sized for: its"
        " ISL/OSL distribution (trace_lengths), its mean rate (unless mean_rps or peak_rps is stated) and its gaps'"
        " cv; plan --verify replays it. A path relative to the scenario file",
    )
    trace_scale: Annotated[float, Field(gt=0, le=1e6)] = Field(
        default=1.0,
        description="the trace's rates times this (growth planning: 1.5 is 50 % more traffic)",
    )
    trace_window: str | None = Field(
        default=None,
        description="START:END: only the trace's requests arriving from START to END seconds"
        " on its clock (arrival_s as written; a timestamp from the first row's); either side"
        " may be left out",
    )
    scale_up_delay_s: Annotated[float, Field(ge=0, le=86_400)] = Field(
        default=600.0,
        description="seconds a unit takes to start when a trace's fleet is autoscaled window"
        " by window (boot, load the weights): it is started that long before it is needed",
    )
    trace_lengths: Literal["distribution", "mean"] = Field(
        default="distribution",
        description="what the trace's lengths are sized as: distribution, its binned joint"
        " ISL/OSL distribution (long prompts set the KV capacity and the TTFT tail), or mean,"
        " its mean ISL and OSL alone",
    )
    window_s: Annotated[float, Field(gt=0, le=1e9)] = Field(
        default=300.0,
        description="length of the windows a trace is cut into (seconds): each window's rate,"
        " gaps' cv and lengths",
    )
    cv: Annotated[float, Field(ge=0, le=MAX_CV)] = Field(
        default=1.0,
        description="coefficient of variation of inter-arrival times: 1 Poisson, 0 a steady"
        " rate, above 1 burstier (gamma)",
    )
    router: Router = Field(
        default=DEFAULT_ROUTER,
        description="how requests at a rate are spread over the instances: least-loaded"
        " (default: to the instance with the fewest requests outstanding, as production"
        " routers do), round-robin, or random",
    )
    latency_stat: Statistic = Field(
        default=Statistic.MEAN, description="statistic of TTFT, ITL and E2E that the limits hold"
    )
    ttft_stat: Statistic | None = Field(default=None, description="overrides latency_stat")
    itl_stat: Statistic | None = Field(default=None, description="overrides latency_stat")
    e2e_stat: Statistic | None = Field(default=None, description="overrides latency_stat")
    mode: Mode = Mode.STREAMING
    batching: Batching = Batching.INFLIGHT
    batch_sizes: list[Count] | None = Field(
        default=None,
        min_length=1,
        description="static batching: the only batch sizes the engine runs (its build profiles"
        " or the measured table, e.g. powers of two); None: any size",
    )
    hardware: list[str] = Field(
        default_factory=lambda: list(DEFAULT_HARDWARE),
        min_length=1,
        description="GPU or system ids to compare (default: DEFAULT_HARDWARE)",
    )
    engine: str | None = Field(
        default=None,
        description="efficiency set (engine generation) to plan with; --engine overrides it,"
        " --calibration overrides both; None: the catalog's default set",
    )
    precision: Auto | list[str] = Field(
        default="auto",
        min_length=1,
        description="weight precisions to compare; auto: every precision each GPU runs"
        " natively (16-bit, plus fp8 / fp4 where it has them)",
    )
    kv_precision: str | None = None
    tp: Auto | list[Degree] = "auto"
    pp: Auto | list[Degree] = "auto"
    ep: Auto | list[Degree] = "auto"
    budget: Budget | None = None
    objective: Objective = Objective.SERVERS
    economics: EconomicsSpec | None = None
    daily: DailySpec | None = None
    users: Users | None = Field(
        default=None, description="the mean rate as people: sets mean_rps (replaces it)"
    )
    redundancy: Redundancy | None = Field(
        default=None, description="N + k: spare servers in the plan, its budget and cost"
    )
    pipeline: list[PipelineStage] | None = Field(default=None, min_length=1)
    attention_dp: Auto | list[Degree] | None = Field(
        default=None,
        description="attention data parallelism of MoE instances (None: 1; experts EP-sharded)",
    )
    span_nvlink_domain: bool = Field(
        default=False, description="instances may fill a rack-scale NVLink domain (NVL72)"
    )
    share_gpus: bool = Field(
        default=False,
        description="also plan several instances of a small model per GPU (MIG slices, or"
        " processes sharing the GPU); GPUs are counted whole",
    )
    kv_cap: KvCap | None = None
    offline: Offline | None = Field(
        default=None,
        description="a batch by a deadline (or tokens per day) instead of traffic and limits",
    )
    disaggregated: Disaggregated | None = None
    techniques: TechniquesSpec | None = None
    source: str | None = None

    @field_validator("precision")
    @classmethod
    def _known_precisions(cls, value: str | list[str]) -> str | list[str]:
        known_precisions([] if value == "auto" else value)
        return value

    @field_validator("kv_precision")
    @classmethod
    def _known_kv(cls, value: str | None) -> str | None:
        known_precisions(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _arrivals(cls, data: Any) -> Any:
        """Arrivals as stated, else poisson where the open-loop model applies and closed-loop
        where only the closed-loop model does (:func:`closed_loop_only`); a stated
        ``arrivals: poisson`` there, or ``cv`` under closed-loop clients, is an error."""
        if not isinstance(data, dict):
            return data
        only = closed_loop_only(data)
        stated = data.get("arrivals")
        if stated == "trace":  # the trace's requests: arrivals at a rate, with its burstiness
            if data.get("trace") is None:
                raise ValueError("arrivals: trace needs trace: FILE (a CSV of arrival_s, isl, osl)")
            data, stated = {**data, "arrivals": "poisson"}, "poisson"
        for key, default in (
            ("trace_scale", 1.0),
            ("trace_window", None),
            ("window_s", 300.0),
            ("scale_up_delay_s", 600.0),
            ("trace_lengths", "distribution"),
        ):
            if data.get(key) not in (None, default) and data.get("trace") is None:
                raise ValueError(f"{key}: applies to a trace; add trace: FILE or drop {key}")
        if data.get("trace") is not None and (only or stated == "closed-loop"):
            why = only or "closed-loop clients have no arrival times"
            raise ValueError(f"trace: its requests arrive at a rate, but {why}; drop trace")
        if only and data.get("router") is not None:
            raise ValueError(f"router: spreads requests at a rate, but {only}; drop router")
        if stated is None:
            if "offline" in only and data.get("cv") is not None:
                raise ValueError(f"offline: {only}; drop cv")
            return {**data, "arrivals": "closed-loop" if only else "poisson"}
        if only and "offline" in only:
            raise ValueError(f"offline: {only}; drop arrivals")
        if stated == "poisson" and only:
            raise ValueError(f"arrivals: poisson, but {only}; drop arrivals or state closed-loop")
        if stated == "closed-loop" and data.get("cv") is not None:
            raise ValueError(
                "cv: describes arrivals at a rate; closed-loop clients have none"
                " (drop cv, or state arrivals: poisson)"
            )
        if stated == "closed-loop" and data.get("router") is not None:
            raise ValueError(
                "router: spreads requests at a rate; closed-loop clients are spread evenly"
                " (drop router, or state arrivals: poisson)"
            )
        return data

    @model_validator(mode="before")
    @classmethod
    def _users_rate(cls, data: Any) -> Any:
        """``users:`` states the mean rate (``Users.mean_rps``); it replaces the others."""
        if not isinstance(data, dict) or data.get("users") is None:
            return data
        if any(data.get(k) is not None for k in ("mean_rps", "peak_rps", "daily")):
            raise ValueError("users: replaces mean_rps / peak_rps / daily; give only one of them")
        users = Users.model_validate(data["users"])
        return {**data, "mean_rps": users.mean_rps}

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> ScenarioSpec:
        """Cross-field rules; with validation context ``{"traffic": False}`` (``frontier``)
        the rates and latency limits are optional."""
        traffic = (info.context or {}).get("traffic", True)
        if self.offline is not None:
            self._offline_consistent()
            traffic = False  # the batch states the demand; no latency limit applies
        if self.pipeline is not None:
            self._pipeline_consistent()
            return self
        if self.model is None:
            raise ValueError("model: required (or give pipeline: stages)")
        if (self.isl is None) == (self.isl_words is None):
            raise ValueError("isl: give exactly one of isl (tokens) or isl_words")
        if (self.osl is None) == (self.osl_words is None):
            raise ValueError("osl: give exactly one of osl (tokens) or osl_words")
        if traffic:
            self._traffic_consistent()
        if (
            traffic
            and self.mode == "streaming"
            and self.ttft_ms is None
            and self.itl_ms is None
            and self.e2e_ms is None
        ):
            raise ValueError("ttft_ms: give at least one latency limit (ttft_ms, itl_ms or e2e_ms)")
        why = closed_loop_only({"batching": self.batching, "disaggregated": self.disaggregated})
        if self.arrivals == "closed-loop" and any(s != "mean" for s in self.statistics):
            raise ValueError(
                "latency_stat: closed-loop benchmarks are sized at mean latencies; percentile"
                " limits need arrivals: poisson" + (f"; {why}" if why else "")
            )
        if self.batch_sizes is not None and self.batching != "static":
            raise ValueError("batch_sizes: applies to batching static only")
        if self.disaggregated is not None and self.batching != "inflight":
            raise ValueError("disaggregated: needs batching inflight")
        if traffic and self.mode == "sequential" and self.e2e_ms is None:
            raise ValueError(
                "e2e_ms: mode sequential needs e2e_ms (the whole answer is what counts)"
            )
        return self

    def _offline_consistent(self) -> None:
        for key in NOT_OFFLINE:
            if getattr(self, key) is not None:
                raise ValueError(
                    f"offline: replaces traffic and latency limits; drop {key}"
                    " (offline sizes for throughput by the deadline)"
                )
        if any(s != "mean" for s in self.statistics):
            raise ValueError(
                "offline: a batch has no latency statistic; drop latency_stat and the *_stat fields"
            )
        if self.disaggregated is not None:
            raise ValueError("offline: sizes aggregated instances; drop disaggregated")

    def _traffic_consistent(self) -> None:
        if self.daily is not None:
            if self.mean_rps is not None or self.peak_rps is not None:
                raise ValueError("daily: replaces mean_rps / peak_rps; give only one of them")
        elif (self.mean_rps is None) == (self.peak_rps is None):
            raise ValueError("mean_rps: give exactly one of mean_rps or peak_rps")

    def _pipeline_consistent(self) -> None:
        for key in ("model", "isl", "osl", "isl_words", "osl_words"):
            if getattr(self, key) is not None:
                raise ValueError(
                    f"{key}: a pipeline scenario sets it per stage (pipeline[i].{key})"
                )
        self._traffic_consistent()
        if self.e2e_ms is None:
            raise ValueError("e2e_ms: a pipeline needs the user request's E2E limit")
        fixed = sum(st.calls * st.e2e_ms for st in self.pipeline or [] if st.e2e_ms is not None)
        if fixed > self.e2e_ms:
            raise ValueError(
                f"pipeline: fixed stage budgets (calls × e2e_ms) sum to {fixed:g} ms > "
                f"e2e_ms {self.e2e_ms:g}"
            )

    @property
    def statistics(self) -> tuple[str, str, str]:
        """The statistic of the TTFT, ITL and E2E limits (each override, else latency_stat)."""
        base = self.latency_stat
        return (self.ttft_stat or base, self.itl_stat or base, self.e2e_stat or base)

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
