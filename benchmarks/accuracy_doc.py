"""Write docs/accuracy.md from `infersize validate` on the measurement files (never by hand).

Usage:
    python benchmarks/accuracy_doc.py            # (re)write docs/accuracy.md
    python benchmarks/accuracy_doc.py --check    # exit 1 when docs/accuracy.md is out of date

Every number in the page comes from the command line, run in process (Typer's CliRunner):
`infersize validate --data FILE --format json` on each file of ``FILES``, once on the whole
file and once on the rows of each efficiency set that predicts part of it (validate picks the
set per row from its engine and version); `infersize catalog list efficiency` and
`infersize catalog show SET` for the efficiency sets. The output is deterministic: fixed
ordering and float formatting, no timestamps or timings.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "accuracy.md"
COMMAND = "python benchmarks/accuracy_doc.py"

#: The measurement files the page reports, in order, with what each is to the fit.
FILES: tuple[tuple[str, str], ...] = (
    (
        "data/calibration/measurements.csv",
        "In sample: the efficiency sets were fitted to these rows (`benchmarks/fit_efficiency.py`"
        " fits each set to the rows of its own engine generation in this file and the static"
        " sweep).",
    ),
    (
        "data/calibration/static_batching_sweep.csv",
        "In sample: `trtllm-0.9-static` was fitted to these rows.",
    ),
    (
        "data/calibration/measurements_modern.csv",
        "Out of sample: in no fit. The engines, models and GPUs are newer than any set was"
        " fitted to; each row is predicted with the set validate assigns to its engine label"
        " (the nearest version of an engine a set names, else the default set), and every row,"
        " disaggregated ones included, as one aggregated instance.",
    ),
    (
        "data/calibration/nim_perf_docs.csv",
        "Out of sample: in no fit (held out to check which set describes a newer NIM release).",
    ),
)

#: What each source's measurement is (data/calibration/README.md has the full provenance).
SOURCES: dict[str, str] = {
    "nvidia_dli_nim": (
        'NVIDIA\'s "Sizing LLM Inference Systems" course data: GenAI-Perf in concurrency mode'
        " (closed-loop clients, streaming, `ignore_eos`) against one NIM instance (TensorRT-LLM"
        " backend, 2024) on `num_gpus` GPUs with TP = `num_gpus`; Llama-3-8B / 70B on A100 and"
        " H100, fp16 / bf16 / fp8, ISL 200 / 2000 / 7000, OSL 200 / 1000 / 2000, 1 to 250"
        " clients. Values are per instance; TTFT includes the queue inside the server."
    ),
    "nvidia_dli_trtllm_static": (
        "TensorRT-LLM 0.9 static-batch sweep (batch 1 to 1536) on A100, H100, H100 NVL, H200,"
        " GH200, L40 and L40S: `prefill_ms` is the prefill of the whole batch (TTFT with no"
        " queue), `itl_ms_avg` the per-token decode step at that batch, throughput the output"
        " tokens/s of the TP group. It isolates the compute half (prefill) and the bandwidth"
        " half (decode) of the model."
    ),
    "trtllm_perf_overview": (
        "TensorRT-LLM `perf-overview.md` v0.14 and v0.17 max-throughput tables (in-flight"
        " batching, every request queued at once): total output tokens/s of the whole TP / PP"
        " group. Latency at these points is unbounded; they are throughput ceilings."
    ),
    "seed": (
        "The worked examples of the sizing talks the tool starts from: Llama-3-8B FP8 per-DGX"
        " request rates at TTFT 500 ms and 220 ms, and Llama-2-70B TP4 FP16 at batch 8 (3500-token"
        " prefill, decode step)."
    ),
    "nvidia_nim_perf_docs": (
        "NVIDIA's NIM benchmarking page, NIM 1.8.0 serving Llama-3.3-70B fp8 on two H100 (TP 2),"
        " AIPerf / GenAI-Perf concurrency mode, ISL/OSL 5000/500 (1 to 250 clients) and the first"
        " rows of 500/2000. The statistic is read as a mean."
    ),
    "aic_silicon_sample": (
        "Measured points collected by NVIDIA's aiconfigurator project (`silicon_sample.csv`):"
        " mean TTFT and TPOT per client concurrency for recent dense and MoE models on"
        " TensorRT-LLM, vLLM and SGLang (some through Dynamo), aggregated and disaggregated, on"
        " H100, H200, B200 and B300. The client and length distribution are not stated, TTFT"
        " includes queueing, and many disaggregated rows do not state the number of prefill and"
        " decode workers."
    ),
}

# --------------------------------------------------------------------------- running the CLI


def invoke(args: Sequence[str]) -> Any:
    """``infersize ARGS`` in process on the shipped catalog only; its stdout parsed as JSON."""
    from inferencesize.cli import app

    result = CliRunner().invoke(app, list(args), env={"INFERSIZE_CATALOG": None})
    if result.exit_code != 0:
        raise RuntimeError(
            f"infersize {' '.join(args)} exited {result.exit_code}: {result.stderr or result.output}"
        )
    return json.loads(result.stdout)


def validate(path: Path) -> Any:
    return invoke(["validate", "--data", str(path), "--format", "json"])


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def partition(
    path: Path, whole: Any, key: Callable[[dict[str, str]], str | None]
) -> dict[str, Any]:
    """validate's JSON for each part of ``path``'s rows (``key``: a row's part, None: left
    out); every predicted row of the file must land in exactly one part."""
    header, rows = read_rows(path)
    parts: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        name = key(r)
        if name is not None:
            parts[name].append(r)
    if len(parts) <= 1:
        return {name: whole for name in parts}
    out = {}
    with tempfile.TemporaryDirectory(prefix="accuracy-doc-") as tmp:
        for i, name in enumerate(sorted(parts)):
            part = Path(tmp) / f"part-{i}.csv"
            with part.open("w", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=header)
                writer.writeheader()
                writer.writerows(parts[name])
            out[name] = validate(part)
    for group in whole["by_source"]:
        n = sum(
            g["n"] for r in out.values() for g in r["by_source"] if g["group"] == group["group"]
        )
        if n != group["n"]:
            raise RuntimeError(
                f"{path}: {group['group']}: {n} rows over the parts, {group['n']} in the file"
            )
    return out


def by_set(path: Path, whole: Any) -> dict[str, Any]:
    """validate's JSON for the rows of each efficiency set that predicted part of ``path``
    (validate names the set of every engine label it predicted)."""
    label_set = {
        (u["engine"], u["engine_version"]): u["efficiency"] for u in whole["efficiency_sets"]
    }
    return partition(
        path, whole, lambda r: label_set.get((r.get("engine") or "", r.get("engine_version") or ""))
    )


def deployment(row: dict[str, str]) -> str:
    """Disaggregated rows write the split of each pool (``tp`` = ``P:tp4x1 D:tp8x4``)."""
    return "disaggregated" if (row.get("tp") or "").strip().startswith("P:") else "aggregated"


# --------------------------------------------------------------------------- formatting


def pct(x: float) -> str:
    return f"{100 * x:,.1f} %"


def share(x: float) -> str:
    return f"{100 * x:.0f} %"


def count(n: int) -> str:
    return f"{n:,}"


def number(name: str, value: Any) -> str:
    """A parameter value: seconds in ms, µs or ns, large counts whole, the rest to 3
    significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if name.endswith("_s"):
        if value < 1e-9:
            return "0" if value == 0 else "< 1 ns"
        for unit, scale in (("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
            if value >= scale:
                return f"{value / scale:.3g} {unit}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], right: int = 1) -> list[str]:
    """A Markdown table; columns from ``right`` on are right-aligned."""
    align = ["---" if i < right else "---:" for i in range(len(head))]
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


# --------------------------------------------------------------------------- sections


def sets_section() -> list[str]:
    listed = invoke(["catalog", "list", "efficiency", "--format", "json"])
    shown = [invoke(["catalog", "show", s["id"], "--format", "json"]) for s in listed]
    out = [
        "## Efficiency sets",
        "",
        "An efficiency set is the fitted data of one engine generation ([model.md](model.md#efficiency-sets)). validate predicts each row with the set whose `engines` list"
        " claims the row's engine and version, else with the default set.",
        "",
    ]
    out += table(
        ["set", "engine", "claims", "default", "entries"],
        [
            [
                f"`{s['id']}`",
                s["engine"],
                ", ".join(f"`{e}`" for e in s["engines"]),
                "yes" if s["default"] else "",
                len(s["entries"]),
            ]
            for s in shown
        ],
        right=4,
    )
    out += [
        "",
        "Where each set's numbers come from (its `source` and `engines_source` fields):",
        "",
    ]
    for s in shown:
        out.append(f"- `{s['id']}`: {s['source']}")
        if s.get("engines_source"):
            out.append(f"  Claims: {s['engines_source']}")
    names = list(shown[0]["defaults"])
    out += [
        "",
        "Set-wide values (`defaults`; `compute` and `memory` apply to GPUs without an entry;"
        " [model.md](model.md#efficiency-sets) gives each parameter's meaning):",
        "",
    ]
    out += table(
        ["parameter", *(f"`{s['id']}`" for s in shown)],
        [[f"`{n}`", *(number(n, s["defaults"].get(n)) for s in shown)] for n in names],
    )
    out += [
        "",
        "Per GPU × precision entries, and per architecture × precision (`arch:`, what a GPU"
        " of that architecture without an entry takes; `compute`: share of the datasheet dense"
        " peak of the precision's tensor units; `memory`: share of HBM bandwidth; `points`:"
        " rows the fit used):",
        "",
    ]
    rows = []
    for s in shown:
        for e in sorted(s["entries"], key=lambda e: (_subject(e), e.get("precision") or "")):
            rows.append(
                [
                    f"`{s['id']}`",
                    _subject(e),
                    e.get("precision") or "all",
                    number("compute", e.get("compute")),
                    number("memory", e.get("memory")),
                    "" if e.get("points") is None else count(e["points"]),
                ]
            )
    out += table(["set", "GPU", "precision", "compute", "memory", "points"], rows, right=3)
    return out


def _subject(entry: dict[str, Any]) -> str:
    """What an entry is for: a GPU id, or ``arch:NAME`` for an architecture entry."""
    return str(entry.get("gpu") or f"arch:{entry.get('architecture')}")


def accuracy_rows(whole: Any, parts: dict[str, Any], shown: str = "{}") -> list[list[str]]:
    """One table row per (source · metric of the whole file, part), in the file's order."""
    rows = []
    for group in whole["by_source"]:
        for name, result in sorted(parts.items()):
            for g in result["by_source"]:
                if g["group"] != group["group"]:
                    continue
                source, metric = g["group"].split(" · ", 1)
                rows.append(
                    [
                        source,
                        f"`{metric}`",
                        shown.format(name),
                        count(g["n"]),
                        pct(g["median_ape"]),
                        pct(g["p90_ape"]),
                        share(g["within_10"]),
                        share(g["within_25"]),
                    ]
                )
    return rows


def file_section(rel: str, role: str) -> list[str]:
    path = ROOT / rel
    whole = validate(path)
    parts = by_set(path, whole)
    _, raw = read_rows(path)
    sources = sorted({r["source"] for r in raw})
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise RuntimeError(f"{rel}: describe source(s) {', '.join(unknown)} in SOURCES")
    out = [f"## `{rel}`", "", role, ""]
    out += [f"- `{s}`: {SOURCES[s]}" for s in sources]
    reasons = Counter(u["reason"] for u in whole["unmapped"])
    dropped = len(raw) - whole["rows"]
    out += [
        "",
        f"{count(len(raw))} rows in the file"
        + (
            f", {count(whole['rows'])} after dropping {count(dropped)} exact repeats"
            if dropped
            else ""
        )
        + f"; {count(whole['predicted'])} predicted, {count(len(whole['unmapped']))} not mappable.",
    ]
    if reasons:
        out += ["", "Not mappable:", ""]
        out += [
            f"- {count(n)} rows: {why}"
            for why, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0]))
        ]
    out += ["", f"Reproduce: `infersize validate --data {rel}`.", ""]
    head = ["source", "metric", "rows", "median APE", "p90 APE", "≤ 10 %", "≤ 25 %"]
    out += table([*head[:2], "set", *head[2:]], accuracy_rows(whole, parts, "`{}`"), right=3)
    kinds = partition(path, whole, deployment)
    if len(kinds) > 1:
        out += [
            "",
            "Aggregated rows (one instance) against disaggregated ones (`tp` written"
            " `P:… D:…`, separate prefill and decode pools):",
            "",
        ]
        out += table([*head[:2], "deployment", *head[2:]], accuracy_rows(whole, kinds), right=3)
    out += ["", "Which set predicted the rows of each engine label:", ""]
    out += table(
        ["engine", "version", "set", "rows"],
        [
            [
                u["engine"] or "(not stated)",
                u["engine_version"] or "",
                f"`{u['efficiency']}`",
                count(u["rows"]),
            ]
            for u in whole["efficiency_sets"]
        ],
        right=3,
    )
    steady = whole["steady_state"]
    if steady["checked"]:
        off = steady["off"]
        out.append("")
        if off:
            ratios = [o["ratio"] for o in off]
            out += [
                f"Steady state: {count(len(off))} of {count(steady['checked'])} serving points break"
                f" Little's law by more than {share(steady['tolerance'])} (clients / (req/s × E2E) ="
                f" {min(ratios):.2f} to {max(ratios):.2f}): runs that ended before their queue"
                " settled. The model predicts steady state; without those points:",
                "",
            ]
            out += table(
                ["metric", "rows", "median APE", "p90 APE", "≤ 10 %", "≤ 25 %"],
                [
                    [
                        f"`{g['group']}`",
                        count(g["n"]),
                        pct(g["median_ape"]),
                        pct(g["p90_ape"]),
                        share(g["within_10"]),
                        share(g["within_25"]),
                    ]
                    for g in steady["by_metric"]
                ],
            )
        else:
            out.append(
                f"Steady state: all {count(steady['checked'])} serving points obey Little's law."
            )
    if whole["repeat_runs"]:
        out += [
            "",
            "Points measured more than once, each later run against the first"
            " (|later / first − 1|): no prediction can be closer to every run than this.",
            "",
        ]
        out += table(
            ["metric", "points", "median", "p90", "max"],
            [
                [
                    f"`{r['metric']}`",
                    count(r["points"]),
                    pct(r["median"]),
                    pct(r["p90"]),
                    pct(r["max"]),
                ]
                for r in whole["repeat_runs"]
            ],
        )
    return out


def render() -> str:
    """The whole page (Markdown)."""
    lines = [
        f"<!-- Generated by `{COMMAND}`. Do not edit by hand: regenerate it. -->",
        "",
        "# Accuracy",
        "",
        f"Generated by `{COMMAND}` from the shipped catalog and the files in `data/calibration/`;"
        " do not edit by hand. `tests/docs/test_accuracy_doc.py` fails while this page differs"
        " from what the generator writes, so a change to the model or to an efficiency set that"
        " moves a figure needs the page regenerated.",
        "",
        "Every figure is the JSON output of `infersize validate` (`--data FILE --format json`)."
        " validate"
        " maps each row onto a catalog model, GPU and precision, one instance of `tp` × `pp`"
        " GPUs (`num_gpus` GPUs when `tp` is not a number), and an operating point"
        " (serving sweeps: closed-loop in-flight batching at the row's concurrency; static sweeps:"
        " static batching at the batch size; `offline_max` tables: in-flight batching with every"
        " KV slot busy), and predicts it with the efficiency set of the row's engine. The error of"
        " a row is its absolute percentage error, APE = |predicted − measured| / measured; each"
        " table gives the median and 90th percentile over its rows and the share of rows within"
        " 10 % and 25 %. Rates are compared per instance: a per-server or per-GPU rate is"
        " converted with the row's `unit`. Rows that cannot be mapped are counted with the"
        " reason. The breakdown by set is validate run on the rows of each set alone.",
        "",
    ]
    lines += sets_section()
    lines += ["", *heldout_section()]
    for rel, role in FILES:
        lines += ["", *file_section(rel, role)]
    return "\n".join(lines) + "\n"


HELDOUT = ROOT / "docs" / "heldout.md"


def heldout_section() -> list[str]:
    """The table of docs/heldout.md (written by benchmarks/heldout.py, minutes to run)."""
    rows = [line for line in HELDOUT.read_text(encoding="utf-8").splitlines() if line[:1] == "|"]
    return [
        "## Held-out accuracy",
        "",
        "The figure to judge the model by: each GPU, engine, model, source and TensorRT-LLM"
        " version predicted by sets refitted without it. Quoted from [heldout.md](heldout.md),"
        " written by `python benchmarks/heldout.py --write`; it says how the refits are done.",
        "",
        *rows,
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="exit 1 if docs/accuracy.md is out of date"
    )
    ap.add_argument(
        "--out", type=Path, default=DOC, help="where to write (default docs/accuracy.md)"
    )
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else None
        if current != text:
            sys.stderr.write(f"{args.out} is out of date: run {COMMAND}\n")
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
