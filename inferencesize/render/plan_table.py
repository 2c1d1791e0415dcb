"""Terminal tables of the ``plan`` records (:mod:`inferencesize.render.plan`): built from the
records, so the table shows exactly what the JSON says. Returns renderables; prints nothing."""

from __future__ import annotations

from typing import Any

from inferencesize import report
from inferencesize.outcomes import fmt_seconds
from inferencesize.question import ArrivalsModel, ClosedLoop, OpenLoop, TraceArrivals
from inferencesize.render.trace import replay_rows, trace_fleet_rows
from inferencesize.render.trace_lengths import trace_lengths_rows
from inferencesize.vocabulary import DEFAULT_ROUTER, Arrivals, Router

ORIGIN_WORDS = {"flag": "flag", "scenario": "scenario", "default": "default"}


def _money(value: float | None, digits: int = 2) -> str:
    return "— (no price in the catalog)" if value is None else f"${value:,.{digits}f}"


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{fmt}}{unit}"


def _usd(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"${value:,.{digits}f}"


def limit_text(rec: dict[str, Any], binding: str | None) -> str:
    if binding == "memory":
        return "memory (KV-cache capacity caps the concurrency)"
    value = rec["limits"].get(f"{binding}_ms")
    name = {"ttft": "TTFT", "itl": "ITL", "e2e": "E2E"}.get(binding or "", str(binding))
    return f"{name} ≤ {fmt_seconds(value / 1e3)}" if value is not None else name


def split_text(p: dict[str, Any]) -> str:
    """tp4 pp2 dp2 ep8 cp2: the split, the 1s left out (TP always shown)."""
    text = f"tp{p['tp']}"
    for key in ("pp", "dp", "ep", "cp"):
        if p.get(key, 1) > 1:
            text += f" {key}{p[key]}"
    share = p.get("gpu_share")
    if share:  # several instances on one GPU (as ``sharing.Share.label``)
        k = share["instances_per_gpu"]
        text += f" mig {share['profile']} ×{k}/GPU" if share["kind"] == "mig" else f" {k} per GPU"
    return text


def techniques_text(rec: dict[str, Any]) -> str:
    """One line for tables from the ``techniques`` record."""
    parts = []
    if "prefix_caching" in rec:
        p = rec["prefix_caching"]
        parts.append(f"prefix cache {p['prefix_tokens']:.0f} tok × hit {p['hit_rate']:g}")
    if "chunked_prefill" in rec:
        parts.append(f"chunked prefill {rec['chunked_prefill']['chunk_tokens']} tok/step")
    if "speculative" in rec:
        s = rec["speculative"]
        parts.append(
            f"speculative {s['draft']} k={s['draft_tokens']} a={s['acceptance']:g}"
            f" → {s['tokens_per_step']:.2f} tok/step"
        )
    if rec.get("weight_only"):
        parts.append("weight-only (16-bit GEMMs)")
    if "sparsity" in rec:
        sp = rec["sparsity"]
        parts.append(
            f"sparsity: weights ×{sp['weight_factor']:g}, GEMMs ×{sp['compute_speedup']:g}"
        )
    return " · ".join(parts)


def economics_rows(plan: dict[str, Any], rec: dict[str, Any]) -> list[tuple[str, str]]:
    """Key/value rows for tokens, energy, the power budget and daily traffic."""
    rows: list[tuple[str, str]] = []
    e = plan.get("economics")
    if e:
        if e["basis"]:
            rows.append(("cost basis", f"{e['basis']}: {e['price']}"))
            rows.append(
                (
                    "per million tokens",
                    f"output {_usd(e['usd_per_million_output_tokens'])} · input "
                    f"{_usd(e['usd_per_million_input_tokens'])} · blended "
                    f"{_usd(e['usd_per_million_tokens'])} (whole fleet at capacity; GPU time "
                    f"split by prefill share {e['input_share']:.0%})",
                )
            )
        rows.append(
            (
                "energy per token",
                f"output {_num(e['joules_per_output_token'], ',.3g', ' J')} · input "
                f"{_num(e['joules_per_input_token'], ',.3g', ' J')} (wall power) · facility "
                f"{_num(e['facility_power_kw'], ',.1f', ' kW')} at PUE {e['pue']:g}",
            )
        )
    pb = rec.get("power_budget")
    if pb:
        verdict = "unknown power" if pb["within"] is None else "within" if pb["within"] else "OVER"
        rows.append(("power budget", f"{pb['budget_kw']:,.1f} kW: {verdict}"))
    d = rec.get("daily")
    if d:
        f, a = d["fixed"], d["autoscaled"]
        tokens = (d["input_tokens_per_day"] + d["output_tokens_per_day"]) / 1e9
        rows.append(
            ("daily traffic", f"{d['requests_per_day']:,.0f} requests · {tokens:,.3f} B tokens")
        )
        rows.append(
            (
                "fixed fleet / day",
                f"{f['units']} × {d['unit']} · {f['gpu_hours']:,.0f} GPU-h paid · "
                f"{_usd(f['cost_usd'], 2)}",
            )
        )
        rows.append(
            (
                "autoscaled / day",
                f"{a['gpu_hours']:,.0f} GPU-h paid ({a['gpu_hours_saved']:.0%} fewer; whole "
                f"units, started {a['scale_up_delay_s']:,.0f} s ahead) · "
                f"{_usd(a['cost_usd'], 2)}",
            )
        )
    rows.extend(trace_fleet_rows(rec))
    rows.extend(trace_lengths_rows(rec))
    return rows


def title(rec: dict[str, Any]) -> str:
    sizes = rec["batch_sizes"]
    batching = f"static (batches {','.join(map(str, sizes))})" if sizes else rec["batching"]
    demand = (
        f"offline batch {report.number(rec['peak_rps'])} req/s"
        if rec.get("offline")
        else f"{rec['mode']} · {batching} · {arrivals_text(rec)} · peak {report.number(rec['peak_rps'])}"
        " req/s"
    )
    if rec.get("offline"):
        demand = f"{batching} · {demand}"
    return f"{rec['model']} · ISL {rec['isl']} · OSL {rec['osl']} · {demand}"


def arrivals_text(rec: dict[str, Any]) -> str:
    """How requests arrive in the question (a ``plan`` record's): the words of its arrivals
    (:attr:`inferencesize.question.OpenLoop.words` and the others)."""
    return arrivals_of_record(rec).words


def arrivals_of_record(rec: dict[str, Any]) -> ArrivalsModel:
    """The arrivals a ``plan`` record's question states (:func:`question_record`)."""
    t = rec.get("trace")
    router = Router(rec.get("router") or DEFAULT_ROUTER)
    if t:
        return TraceArrivals(t["cv"], router, t["file"], t.get("skipped_rows") or 0)
    if rec.get("arrivals") != Arrivals.POISSON:
        return ClosedLoop()
    cv = rec.get("cv")
    return OpenLoop(1.0 if cv is None else cv, router)


def _offline_rows(rec: dict[str, Any]) -> list[tuple[str, str]]:
    """An offline batch: what it asks and when the plan answers its last request."""
    o = rec.get("offline")
    if not o:
        return []
    volume = (
        f"{report.number(o['tokens_per_day'])} tokens/day = {o['requests']:,.0f} requests"
        if o["tokens_per_day"] is not None
        else f"{o['requests']:,.0f} requests"
    )
    done = "—"
    if o["finish_h"] is not None:
        done = f"{o['finish_h']:,.2f} h" + ("" if o["meets_deadline"] else " (past the deadline)")
    return [
        (
            "offline batch",
            f"{volume} within {report.number(o['deadline_h'])} h · needs {report.number(o['required_rps'])} req/s"
            f" · done in {done}",
        )
    ]


def _stated_latency(rec: dict[str, Any], op: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows of one instance's latencies at the planned load: the means, then each percentile
    a limit is stated at (open loop)."""
    rows = [
        (
            "latency at peak (mean)",
            f"TTFT {op['ttft_ms']:,.1f} ms · ITL {op['itl_ms']:,.2f} ms · E2E {op['e2e_ms']:,.0f} ms",
        )
    ]
    for stat in dict.fromkeys((rec.get("statistics") or {}).values()):
        if stat == "mean" or f"ttft_ms_{stat}" not in op:
            continue
        rows.append(
            (
                f"latency at peak ({stat})",
                f"TTFT {op[f'ttft_ms_{stat}']:,.1f} ms · ITL {op[f'itl_ms_{stat}']:,.2f} ms · "
                f"E2E {op[f'e2e_ms_{stat}']:,.0f} ms",
            )
        )
    return rows


def at_statistic_ms(op: dict[str, Any], metric: str, stat: str) -> float:
    """``metric`` ("ttft", "itl", "e2e") of a point record at ``stat`` (the mean where that
    percentile is not in the record: a closed-loop point), ms."""
    value = op.get(f"{metric}_ms_{stat}") if stat != "mean" else None
    return float(op[f"{metric}_ms"] if value is None else value)


def load_text(rec: dict[str, Any], p: dict[str, Any]) -> str:
    """'16.667 req/s per instance (peak 50 ÷ 3 instances) · concurrency 49.22'."""
    at, n = p["per_instance_at_peak"], p["instances"]
    return (
        f"{at['requests_per_s']:,.3f} req/s per instance (peak {rec['peak_rps']:,.4g} ÷ "
        f"{n} instance{'' if n == 1 else 's'}) · concurrency "
        f"{report.format_load(at['concurrency'])}"
    )


def capacity_text(rec: dict[str, Any], p: dict[str, Any]) -> str:
    """One instance's capacity: the most it serves within the limits, its load there and the
    binding limit's value there."""
    op, binding = p["per_instance"], p["binding_constraint"]
    text = (
        f"{op['requests_per_s']:,.3f} req/s within the limits · concurrency "
        f"{report.format_load(op['concurrency'])}"
    )
    if binding in ("ttft", "itl", "e2e"):
        stat = (rec.get("statistics") or {}).get(binding, "mean")
        text += f" · {binding.upper()} {stat} {at_statistic_ms(op, binding, stat):,.1f} ms there"
    return text


def fleet_text(p: dict[str, Any]) -> str:
    """'2 × lambda-8x-b200 (8-GPU instance) · 10 of 16 GPUs used (62 %) · 5 instances': the
    units as they are sold or rented, and how much of what is paid for runs an instance."""
    e = p.get("economics") or {}
    if e.get("units") is None:
        unit = "servers" if p["system"] else "8-GPU nodes"
        gpus = report.count(p["gpus"], "GPU")
        return f"{p['servers']:,} × {p['hardware']} ({unit}) · {gpus} · {_instances(p)}"
    text = (
        f"{e['units']:,} × {p['hardware']} ({e['unit']}) · {p['gpus']:,} of "
        f"{report.count(e['gpus_paid'], 'GPU')} used"
    )
    text += f" ({e['utilisation']:.0%})"
    if p["gpus_per_server"] < e["gpus_paid"] // max(e["units"], 1):
        text += f" on {report.count(p['servers'], 'tray')}"
    if e.get("spare_servers"):
        text += f" incl. {e['spare_servers']} spare"
    return text + f" · {_instances(p)}"


def _instances(p: dict[str, Any]) -> str:
    """'5 instances', or on shared GPUs '5 instances on 5 MIG 2g.20gb slices of 2 GPUs' /
    '4 instances, 2 per GPU'."""
    n, share = p["instances"], p.get("gpu_share")
    if not share:
        return report.count(n, "instance")
    if share["kind"] == "mig":
        slices = report.count(n, f"MIG {share['profile']} slice")
        return f"{report.count(n, 'instance')} on {slices} of {report.count(p['gpus'], 'GPU')}"
    return f"{report.count(n, 'instance')}, {share['instances_per_gpu']} per GPU"


def _share_text(p: dict[str, Any]) -> str:
    """What one instance runs on: its GPUs, or its share of one."""
    share = p.get("gpu_share")
    if not share:
        return report.count(p["gpus_per_instance"], "GPU")
    sms, hbm = share["compute_share"], share["memory_share"]
    if share["kind"] == "mig":
        return (
            f"one MIG {share['profile']} slice ({sms:.0%} of the SMs, {hbm:.0%} of the HBM;"
            f" {share['instances_per_gpu']} per GPU)"
        )
    return f"1/{share['instances_per_gpu']} of a GPU's SMs, HBM bandwidth and memory (shared)"


def power_text(p: dict[str, Any]) -> str:
    """Wall power of what is paid for, how it was found, and the GPU boards' share."""
    if p["power_kw"] is None:
        return "—"
    e = p.get("economics") or {}
    text = f"{p['power_kw']:,.1f} kW at the wall, max"
    if e.get("power_basis"):
        text += f" ({e['power_basis']})"
    if e.get("gpu_board_power_kw") is not None:
        text += f" · GPU boards {e['gpu_board_power_kw']:,.1f} kW"
    return text


def cost_text(p: dict[str, Any]) -> str:
    """'$107.04/hour = 2 × $53.52 per 8-GPU instance'."""
    if p["cost_per_hour_usd"] is None:
        return _money(None)
    e = p.get("economics") or {}
    text = f"{_money(p['cost_per_hour_usd'])}/hour"
    if e.get("basis") == "cloud" and e.get("units"):
        text += f" = {e['units']} × {_money(e['usd_per_unit_hour'])} per {e['unit']}"
    elif e.get("basis") == "owned":
        text += (
            f" = {_money(e['capex_usd_per_hour'])} write-off of {e['units']} × {e['unit']}"
            f" + {_money(e['energy_usd_per_hour'])} energy"
        )
    return text


def plan_table(rec: dict[str, Any]) -> Any:
    """The chosen plan as key/value rows."""
    p = rec["plan"]
    pairs: list[tuple[str, Any]] = [
        ("plan", fleet_text(p)),
        *([("if slower", slow_text(rec["error_band"]))] if rec.get("error_band") else []),
        (
            "per instance",
            f"{p['precision']} (KV {p['kv_precision']}) · tp{p['tp']} pp{p['pp']} ep{p['ep']}"
            + (f" dp{p['dp']}" if p["dp"] > 1 else "")
            + f" · {_share_text(p)}",
        ),
        ("binding constraint", limit_text(rec, p["binding_constraint"])),
        *([("techniques", techniques_text(rec["techniques"]))] if rec.get("techniques") else []),
        ("load at peak", load_text(rec, p)),
        *_stated_latency(rec, p["per_instance_at_peak"]),
        *_offline_rows(rec),
        ("capacity per instance", capacity_text(rec, p)),
        (
            "capacity",
            f"{p['capacity_rps']:,.1f} req/s · headroom {p['headroom']:+.1%} at "
            f"peak · {p['tokens_per_day'] / 1e9:,.3f} B output tokens/day",
        ),
        ("power", power_text(p)),
        ("cost", cost_text(p)),
        *economics_rows(p, rec),
        ("engine", f"{p['engine']} ({p['efficiency']}; trust: {p['trust']})"),
    ]
    return report.key_value_table(title(rec), pairs)


def slow_text(e: dict[str, Any]) -> str:
    """The chosen candidate's count at the slow edge of its error band: '4 servers · 32 GPUs
    · 31 instances if each step is as slow as the 90th percentile of errors like this one
    (1.30× the prediction)'."""
    why = (
        "if each step is as slow as the 90th percentile of errors like this one"
        f" ({e['step_scale']:.2f}× the prediction)"
    )
    if not e["feasible"]:
        return f"no count of this candidate meets the limits {why}"
    servers = report.count(e["servers_paid"], "server")
    gpus = report.count(e["gpus_paid"], "GPU")
    return f"{servers} · {gpus} · {report.count(e['instances'], 'instance')} {why}"


def alternatives_table(rec: dict[str, Any]) -> Any:
    """Each alternative at the planned load (peak ÷ its instances): its load and latencies
    there at the question's statistics; the headroom is its capacity over the peak."""
    stats = rec.get("statistics") or {}
    ttft, itl = stats.get("ttft", "mean"), stats.get("itl", "mean")
    rows = [
        [
            f"{a['hardware']} {a['precision']} {split_text(a)}",
            *paid_cells(a),
            a["instances"],
            report.format_load(a["per_instance_at_peak"]["concurrency"]),
            f"{a['per_instance_at_peak']['requests_per_s']:,.2f}",
            f"{at_statistic_ms(a['per_instance_at_peak'], 'ttft', ttft):,.0f}",
            f"{at_statistic_ms(a['per_instance_at_peak'], 'itl', itl):,.1f}",
            f"{a['headroom']:+.0%}",
            a["binding_constraint"],
            "—" if a["cost_per_hour_usd"] is None else f"{a['cost_per_hour_usd']:,.0f}",
            "—" if a["power_kw"] is None else f"{a['power_kw']:,.1f}",
        ]
        for a in rec["alternatives"]
    ]
    columns = ["candidate", "servers", "GPUs", "inst.", "conc.", "req/s/inst"]
    columns += [f"TTFT {_stat_word(rec, ttft)}ms", f"ITL {_stat_word(rec, itl)}ms"]
    columns += ["headroom", "binding", "$/h", "kW"]
    title = "alternatives at the peak load (the best on each other hardware first)"
    return report.table(title, columns, rows, whole=(1, 2))


def _stat_word(rec: dict[str, Any], stat: str) -> str:
    """'p95 ' where the alternatives show a percentile (open loop), '' for the mean."""
    alts = rec.get("alternatives") or []
    shown = stat != "mean" and alts and f"ttft_ms_{stat}" in alts[0]["per_instance_at_peak"]
    return f"{stat} " if shown else ""


def paid_cells(p: dict[str, Any]) -> tuple[str, str]:
    """Servers and GPUs a plan pays for (whole units), with the GPUs used when fewer:
    ("18", "3 of 72") for three GPUs of a GB200 NVL72 rack."""
    e = p["economics"] or {}
    servers = e.get("servers_paid") or p["servers"]
    paid = e.get("gpus_paid") or p["gpus"]
    gpus = f"{p['gpus']:,} of {paid:,}" if paid != p["gpus"] else f"{paid:,}"
    return f"{servers:,}", gpus


def rejected_table(title_text: str, rejected: list[dict[str, Any]]) -> Any:
    return report.table(
        title_text, ["candidate", "reason"], [[r["candidate"], r["reason"]] for r in rejected]
    )


def search_lines(rec: dict[str, Any]) -> list[str]:
    """What was searched and which values were tool defaults (stated under every plan)."""
    lines = []
    search = rec.get("search")
    if search:
        lines.append(search["text"])
    defaults = [k for k, v in (rec.get("origins") or {}).items() if v == "default"]
    shown = {"hardware", "precision", "tp", "pp", "ep", "percentile", "engine", "arrivals"}
    defaults = [k for k in defaults if k in shown]
    if defaults:
        lines.append(f"tool defaults used for: {', '.join(defaults)} (see --help; flags override)")
    lines += (rec.get("engine_choice") or {}).get("notes", [])
    if rec.get("unranked"):
        what = "price" if rec.get("objective") == "cost" else "power"
        lines.append(f"ranked last, no {what} in the catalog: {', '.join(rec['unranked'])}")
    lines.extend(rec.get("notes") or [])
    return lines


def disagg_table(rec: dict[str, Any]) -> Any:
    block = rec["disaggregated"]
    d = block["plan"]
    if d is None:
        return f"disaggregated: no feasible plan ({block['reason']})"

    def pool(p: dict[str, Any]) -> str:
        return (
            f"{p['instances']} × {p['hardware']} {p['precision']} {split_text(p)} "
            f"({report.count(p['gpus'], 'GPU')}, {report.count(p['servers'], 'server')}) · "
            f"batch {p['batch']} · "
            f"step {p['step_ms']:,.1f} ms · {p['requests_per_s_per_instance']:,.3g} req/s/inst"
        )

    kv = d["kv_transfer"]
    cost = d["cost_per_hour_usd"]
    pairs: list[tuple[str, Any]] = [
        (
            "ratio",
            f"{d['ratio']} · {report.count(d['servers'], 'server')} · "
            f"{report.count(d['gpus'], 'GPU')}",
        ),
        ("prefill pool", pool(d["prefill"])),
        ("decode pool", pool(d["decode"])),
        (
            "KV transfer",
            f"{kv['bytes'] / 1e6:,.1f} MB per {rec['isl']}-token prompt over {kv['link']}"
            f" · {kv['ms']:,.2f} ms (in TTFT)",
        ),
        (
            "latency (mean)",
            f"TTFT {d['ttft_ms']:,.1f} ms · ITL {d['itl_ms']:,.2f} ms · E2E {d['e2e_ms']:,.0f} ms"
            f" (OSL {rec['osl']})",
        ),
        ("cost", "—" if cost is None else f"${cost:,.2f}/hour"),
        ("better", str(block["better"])),
    ]
    return report.key_value_table("disaggregated prefill / decode", pairs)


def _ms_text(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} ms"


def pipeline_table(rec: dict[str, Any]) -> Any:
    rows = []
    for s in rec["stages"]:
        p = s["plan"]
        rows.append(
            [
                s["name"],
                s["model"],
                f"{s['isl']}/{s['osl']}",
                f"{s['calls']:g}",
                f"{report.number(s['peak_rps'])}",
                f"{s['e2e_budget_ms']:,.0f}",
                "—" if p is None else f"{p['hardware']} {p['precision']} tp{p['tp']}",
                "—" if p is None else p["servers"],
                "—" if p is None else p["gpus"],
                "—" if p is None else f"{p['per_instance']['e2e_ms']:,.0f}",
                "—"
                if p is None or p["cost_per_hour_usd"] is None
                else f"{p['cost_per_hour_usd']:,.0f}",
            ]
        )
    t = rec["total"]
    servers = "— servers" if t["servers"] is None else report.count(t["servers"], "server")
    gpus = "— GPUs" if t["gpus"] is None else report.count(t["gpus"], "GPU")
    power = "—" if t["power_kw"] is None else f"{t['power_kw']:,.1f} kW"
    usd = "—" if t["cost_per_hour_usd"] is None else f"${t['cost_per_hour_usd']:,.2f}/hour"
    caption = f"total: {servers} · {gpus} · E2E {_ms_text(t['e2e_ms'])} · {power} · {usd}"
    heading = (
        f"pipeline · peak {report.number(rec['peak_rps'])} req/s · E2E limit {rec['e2e_limit_ms']:,.0f} ms"
        f" (unloaded {_ms_text(rec['unloaded_e2e_ms'])})"
    )
    columns = ["stage", "model", "ISL/OSL", "calls", "peak req/s", "budget ms", "candidate"]
    columns += ["servers", "GPUs", "E2E ms", "$/h"]
    return report.table(heading, columns, rows, caption=caption)


def verification_table(v: dict[str, Any]) -> Any:
    """``plan --verify``: analytic against simulated instance counts, each limit at its
    statistic."""
    lim, stats = v["limits"], v["statistics"]
    names = (("ttft", "TTFT"), ("itl", "ITL"), ("e2e", "E2E"))
    active = [(k, label) for k, label in names if lim.get(f"{k}_ms") is not None]

    def held(run: dict[str, Any]) -> str:
        parts = []
        for key, label in active:
            value = run["held"][f"{key}_ms"]
            shown = "—" if value is None else f"{value:,.1f} ms"
            parts.append(f"{label} {stats[key]} {shown}")
        state = "meets" if run["meets_limits"] else "misses"
        if run["overloaded"]:
            state = "misses (cannot keep up)"
        return f"{_count(run)}: {' · '.join(parts) or 'no limit'} → {state}"

    def line(name: str) -> str:
        d = v["latency"][name]
        return " · ".join(
            f"{label} " + ("—" if d[f"{k}_ms"] is None else f"{d[f'{k}_ms']:,.1f} ms")
            for k, label in names
        )

    a, s = v["analytic"], v["simulated"]
    delta = v["instances_delta"]
    if not v.get("peak_meets_limits", v["meets_limits"]):
        verdict = f"misses the limits even with {report.count(s['instances'], 'instance')}"
    elif delta == 0:
        verdict = (
            f"agrees: the simulation needs the planned {report.count(a['instances'], 'instance')}"
        )
    else:
        side = "fewer" if delta < 0 else "more"
        verdict = (
            f"the simulation needs {report.count(s['instances'], 'instance')} ({abs(delta)} {side}); "
            + ("within one instance or 10 %" if v["agrees"] else "beyond one instance and 10 %")
        )
    limits = " · ".join(f"{label} {stats[k]} ≤ {lim[f'{k}_ms']:,.0f} ms" for k, label in active)
    pairs = [
        (
            "simulated",
            f"{v['arrivals']} · {report.count(v['requests'], 'request')} · seed {v['seed']}",
        ),
        ("limits", limits or "none"),
        ("analytic plan", held(a)),
        ("smallest meeting", held(s)),
        ("mean latency", line("mean")),
        ("p95 latency", line("p95")),
        ("p99 latency", line("p99")),
        ("instance counts simulated", ", ".join(str(n) for n in v["searched"])),
        ("verdict", verdict),
        *replay_rows(v),
    ]
    return report.key_value_table("verification (discrete-event simulation)", pairs)


def _count(run: dict[str, Any]) -> str:
    def n(count: int, what: str) -> str:
        return f"{count} {what}" + ("" if count == 1 else "s")

    return ", ".join(
        (n(run["instances"], "instance"), n(run["gpus"], "GPU"), n(run["servers"], "server"))
    )
