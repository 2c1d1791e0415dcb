"""`infersize simulate`: request-by-request discrete-event simulation of serving instances."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from inferencesize import report
from inferencesize.cli.common import (
    MAX_INSTANCES,
    MAX_REQUESTS,
    Progress,
    check_format,
    emit_data,
    finite,
    format_option,
    input_files,
    open_catalog,
    stdout,
)
from inferencesize.cli.options import (
    EpOpt,
    IslOpt,
    OslOpt,
    PointHardwareOpt,
    PointKvPrecisionOpt,
    PointModelOpt,
    PointPrecisionOpt,
    PpOpt,
    TpOpt,
    engine_options,
    with_options,
)
from inferencesize.cli.stream import write_rows
from inferencesize.errors import UsageError
from inferencesize.io_requests import requests_text
from inferencesize.io_write import atomic_file, check_target
from inferencesize.point_estimate import PointFlags
from inferencesize.simulate import (
    BALANCERS,
    POLICIES,
    PROMPT_STEP_TOKENS,
    SimResult,
)
from inferencesize.simulation_study import (
    CHUNK_TOKENS,
    DEFAULT_REQUEST_BATCH,
    Serving,
    prepare_simulation,
    run_policy,
    simulation_workload,
)
from inferencesize.vocabulary import DEFAULT_ROUTER, Arrivals, Router, Statistic

FORMATS = report.FORMATS


def _policies(compare: str | None, batching: str) -> list[str]:
    names = [batching] if compare is None else [p.strip() for p in compare.split(",") if p.strip()]
    for name in names:
        if name not in POLICIES:
            flag = "--compare" if compare is not None else "--batching"
            raise UsageError(f"{flag}: '{name}' is not one of {', '.join(POLICIES)}")
    if not names:
        raise UsageError("--compare: give a comma list such as static,dynamic,inflight")
    return names


def _print(records: list[dict[str, Any]]) -> None:
    out = stdout()
    r0 = records[0]
    title = (
        f"{r0['model']} on {r0['hardware']} {r0['precision']} tp{r0['tp']} pp{r0['pp']} "
        f"ep{r0['ep']} · ISL {r0['isl_mean']:g} · OSL {r0['osl_mean']:g} · {r0['arrivals']} · "
        f"{report.count(r0['instances'], 'instance')}, {r0['balancer']} · seed {r0['seed']}"
    )
    if len(records) > 1:
        rows = [
            [
                r["batching"],
                r["max_batch"],
                f"{r['requests_per_s']:,.3f}",
                f"{r['output_tokens_per_s']:,.0f}",
                f"{r['ttft_ms']['mean']:,.1f}",
                f"{r['ttft_ms']['p95']:,.1f}",
                f"{r['itl_ms']['mean']:,.2f}",
                f"{r['e2e_ms']['mean']:,.0f}",
                f"{r['e2e_ms']['p95']:,.0f}",
                f"{r['gpu_busy']:.0%}",
            ]
            for r in records
        ]
        cols = [
            "batching",
            "max batch",
            "req/s",
            "out tok/s",
            "TTFT mean ms",
            "TTFT p95 ms",
            "ITL mean ms",
            "E2E mean ms",
            "E2E p95 ms",
            "GPU busy",
        ]
        out.print(report.table(title, cols, rows))
        return
    r = r0

    def line(d: dict[str, float], digits: int) -> str:
        return " · ".join(f"{k} {d[k]:,.{digits}f}" for k in Statistic)

    pairs: list[tuple[str, Any]] = [
        ("batching", f"{r['batching']} (max batch {r['max_batch']})"),
        ("requests", f"{r['requests']:,} ({r['measured_requests']:,} measured after warm-up)"),
        ("TTFT ms", line(r["ttft_ms"], 1)),
        ("ITL ms", line(r["itl_ms"], 2)),
        ("E2E ms", line(r["e2e_ms"], 0)),
        ("queue ms", line(r["queue_ms"], 1)),
        (
            "throughput",
            f"{r['requests_per_s']:,.3f} req/s · {r['output_tokens_per_s']:,.0f} output tok/s",
        ),
        ("GPU busy", f"{r['gpu_busy']:.1%}"),
    ]
    if r["dropped_requests"]:
        pairs.append(("dropped", f"{r['dropped_requests']} (larger than the KV cache)"))
    pairs.append(("engine", r["engine"]))
    out.print(report.key_value_table(title, pairs))


@with_options(engine_options)
def simulate_command(
    model: PointModelOpt = None,
    hardware: PointHardwareOpt = None,
    precision: PointPrecisionOpt = "fp8",
    kv_precision: PointKvPrecisionOpt = None,
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    ep: EpOpt = 1,
    dp: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help="Attention data parallelism (MoE): N groups of TP GPUs in the instance.",
        ),
    ] = 1,
    isl: IslOpt = 2000,
    osl: OslOpt = 200,
    isl_stddev: Annotated[
        float,
        typer.Option(
            min=0, metavar="TOKENS", help="Standard deviation of ISL (normal); 0 = fixed."
        ),
    ] = 0.0,
    osl_stddev: Annotated[
        float,
        typer.Option(
            min=0, metavar="TOKENS", help="Standard deviation of OSL (normal); 0 = fixed."
        ),
    ] = 0.0,
    rate: Annotated[
        float | None,
        typer.Option(metavar="RPS", help="Open-loop arrivals, requests/s (Poisson unless --cv)."),
    ] = None,
    cv: Annotated[
        float | None,
        typer.Option(
            metavar="CV",
            help="With --rate: coefficient of variation of the gaps between arrivals (1 Poisson,"
            " near 0 a steady rate, > 1 burstier gamma arrivals), as on plan and estimate.",
        ),
    ] = None,
    arrivals: Annotated[
        Arrivals | None,
        typer.Option(
            help="Optional check, as on plan: poisson goes with --rate (gamma with --cv),"
            " closed-loop with --concurrency.",
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="Closed-loop clients (GenAI-Perf concurrency mode)."),
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="CSV trace with columns arrival_s, isl, osl."),
    ] = None,
    requests: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help=f"Requests to simulate (not with --trace; at most {MAX_REQUESTS:,}).",
        ),
    ] = 2000,
    batching: Annotated[
        str, typer.Option(metavar="[" + "|".join(POLICIES) + "]", help="Batching policy.")
    ] = "inflight",
    compare: Annotated[
        str | None,
        typer.Option(
            metavar="P,P[,P…]",
            help="Compare batching policies on the same traffic, e.g. static,dynamic,inflight.",
        ),
    ] = None,
    max_batch: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help=f"Largest batch (default: KV capacity for inflight/chunked, "
            f"{DEFAULT_REQUEST_BATCH} for static/dynamic).",
        ),
    ] = None,
    max_queue_delay_ms: Annotated[
        float,
        typer.Option(
            min=0, metavar="MS", help="Dynamic batching: longest wait of the oldest request."
        ),
    ] = 10.0,
    step_tokens: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="TOKENS",
            help="Tokens per step: inflight, the prompt tokens one prompt step batches (a"
            f" prompt always fits, so 1 = one prompt per step; default {PROMPT_STEP_TOKENS},"
            f" TensorRT-LLM's max_num_tokens); chunked, the step's token budget (default"
            f" {CHUNK_TOKENS}).",
        ),
    ] = None,
    instances: Annotated[
        int,
        typer.Option(
            min=1, metavar="N", help=f"Instances behind the balancer (at most {MAX_INSTANCES:,})."
        ),
    ] = 1,
    balancer: Annotated[
        str,
        typer.Option(
            metavar="[" + "|".join(BALANCERS) + "]",
            help="Load balancer: random (an instance drawn per request), round-robin (in turn)"
            " or least-loaded (fewest requests outstanding).",
        ),
    ] = DEFAULT_ROUTER.value,
    seed: Annotated[
        int,
        typer.Option(
            metavar="N",
            help="Random seed of the traffic and the random balancer (same seed, same result).",
        ),
    ] = 0,
    warmup: Annotated[
        float,
        typer.Option(
            min=0, max=0.9, metavar="SHARE", help="Share of first requests left out of the stats."
        ),
    ] = 0.1,
    requests_out: Annotated[
        Path | None,
        typer.Option(
            "--requests-out",
            metavar="FILE",
            help="Write per-request times to this CSV (replaces an existing file, atomically;"
            " never the --trace read).",
        ),
    ] = None,
    fmt: Annotated[str, format_option(FORMATS)] = "table",
    **flags: Any,
) -> None:
    """Simulate serving request by request: latency percentiles and throughput.

    Iteration-level discrete-event simulation on the step-time model of `estimate`, with KV
    admission, batching policies and a load balancer over instances. Reports TTFT, ITL, E2E
    and queue time (mean, p50, p90, p95, p99), throughput and GPU busy share.

    Overload: when the completions in the measured window fall short of the arrivals (the
    instances cannot keep up, the queue grows through the run), the result has no steady
    state: the record says overloaded: true with the measured arrival_rps and
    completion_rps, and table output warns on stderr. The exit code stays 0.

    Examples:
      infersize simulate --model llama-3-8b --hardware h100-sxm --rate 8 --requests 5000
      infersize simulate --model llama-3-8b --hardware h100-sxm --concurrency 25
      infersize simulate --model llama-3-8b --hardware h100-sxm --rate 4 --compare static,dynamic,inflight
      infersize simulate --model llama-3-8b --hardware h100-sxm --trace trace.csv --requests-out requests.csv
    """
    check_format(fmt, FORMATS)
    finite(requests, "--requests", 1, MAX_REQUESTS)
    if model is None or hardware is None:
        raise UsageError("simulate needs --model and --hardware")
    if balancer not in BALANCERS:
        raise UsageError(f"--balancer: '{balancer}' is not one of {', '.join(BALANCERS)}")
    router = Router(balancer)
    names = _policies(compare, batching)
    if requests_out is not None and len(names) > 1:
        raise UsageError("--requests-out works with one batching policy, not --compare")
    inputs = input_files(trace=trace, calibration=flags.get("calibration"))
    if requests_out is not None:
        check_target(requests_out, "--requests-out", inputs=inputs)
    _check_arrivals(arrivals, rate, cv, concurrency)
    wl, shown = simulation_workload(
        rate,
        1.0 if cv is None else cv,
        concurrency,
        trace,
        requests,
        isl,
        osl,
        isl_stddev,
        osl_stddev,
        seed,
    )
    point = PointFlags(
        model,
        hardware,
        precision,
        kv_precision,
        flags.get("engine"),
        flags.get("calibration"),
        None,
    )
    catalog = open_catalog(flags.get("catalog_dirs"))
    sim = prepare_simulation(catalog, point, (tp, pp, ep, dp), wl, shown)
    serving = Serving(
        max_batch, max_queue_delay_ms / 1e3, step_tokens, instances, router, seed, warmup
    )
    records = []
    last: SimResult | None = None
    with Progress(f"simulating {wl.n:,} requests", total=len(names)) as progress:
        for name in names:
            rec, last = run_policy(sim, name, serving)
            records.append(rec)
            progress.advance()
    del sim  # its KV budget (a column per request) is not needed while the requests are written
    if requests_out is not None and last is not None:
        with atomic_file(requests_out, "--requests-out", inputs=inputs) as fh:
            for block in requests_text(last):
                write_rows(fh, block)
    emit_data(fmt, records[0] if len(records) == 1 else records, records, lambda _: _print(records))
    if fmt == "table":
        for r in records:
            if r["overloaded"]:
                sys.stderr.write(f"warning: {overload_text(r)}\n")


def _check_arrivals(
    arrivals: Arrivals | None, rate: float | None, cv: float | None, concurrency: int | None
) -> None:
    """--arrivals and --cv as plan and estimate --rate read them: a coefficient of variation
    describes arrivals at a rate; poisson arrivals need --rate, closed-loop --concurrency."""
    if cv is not None and rate is None:
        raise UsageError("--cv describes arrivals at a rate: use it with --rate")
    if arrivals == Arrivals.POISSON and rate is None:
        raise UsageError("--arrivals poisson needs --rate (requests/s; --cv for burstier gaps)")
    if arrivals == Arrivals.CLOSED_LOOP and concurrency is None:
        raise UsageError("--arrivals closed-loop needs --concurrency (the clients)")


def overload_text(r: dict[str, Any]) -> str:
    """One line saying a run did not keep up with its arrivals."""
    return (
        f"{r['batching']}: overloaded: {r['completion_rps']:,.3g} completions/s for"
        f" {r['arrival_rps']:,.3g} arrivals/s; the queue grows through the run, so the"
        " latencies depend on its length (no steady state)"
    )
