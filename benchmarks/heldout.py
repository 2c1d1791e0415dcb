"""Held-out accuracy: predict each GPU, engine, model, source and engine version from a fit that
never saw it (the figure to improve and report; in-sample error is printed for reference).

Usage:
    python benchmarks/heldout.py                 # every scheme (a few minutes on 2 cores)
    python benchmarks/heldout.py --only gpu      # one scheme: gpu, engine, model, source, version
    python benchmarks/heldout.py --write         # (re)write docs/heldout.md
    python benchmarks/heldout.py --check         # exit 1 when docs/heldout.md is out of date

Rows: every file of data/calibration (repeated rows counted once: ``io_measurements.dedupe``;
the rows marked "likely duplicate of inferencemax" stay, as their InferenceMAX twin is in no
file here), the rows ``calibration.fittable`` keeps (aggregated instances inside one server:
the fits' rows, so held-out and in-sample figures cover the same rows), each predicted with
the set `validate` picks for its engine. For one held-out group G (a GPU, an engine, ...),
every set that predicts rows of G is refitted on its own rows minus G, starting from no entries
and the 2024 defaults (nothing of G can leak through a start value); a set left without rows
is replaced by one fitted on the remaining rows of the same source (leave-one-engine-out: the
other engines' rows; leave one TensorRT-LLM version out: the other version's table). A GPU a
fit never saw takes its architecture's factors, else the set's conservative defaults, as the
shipped sets do. Each fit is small: per GPU × precision ``compute`` and ``memory``, the
set-wide parameters in ``FREE``, at most ``MAX_ROWS`` rows, ``EVALUATIONS`` iterations.
The printed table is Markdown (docs/accuracy.md quotes it: ``benchmarks/accuracy_doc.py``).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from inferencesize.calibration import fit, fittable, free_parameters
from inferencesize.catalog import Catalog, load_catalog
from inferencesize.estimate import Estimator
from inferencesize.io_measurements import dedupe, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.specs import EfficiencySet
from inferencesize.validation import (
    Mapped,
    Prediction,
    estimator_chooser,
    predict_all,
    summarise,
)

ROOT = Path(__file__).resolve().parent.parent
FILES = (
    "data/calibration/measurements.csv",
    "data/calibration/static_batching_sweep.csv",
    "data/calibration/measurements_modern.csv",
)
MODERN = "aic_silicon_sample"
#: Fit size per held-out fit: rows (every k-th, in file order) and least-squares iterations
#: (scipy counts an iteration once, not its finite-difference Jacobian).
MAX_ROWS = 200
EVALUATIONS = 5
#: The set-wide parameters a held-out fit chooses (the rest keep the start set's values): the
#: ones with the largest effect on TPOT and TTFT, so that each fit stays small.
FREE = (
    "attention",
    "gemm_m_half",
    "step_overhead_s",
    "layer_overhead_s",
    "comm_latency_s",
    "prefill_sync",
    "seq_overhead_s",
    "handoff_s",
)
#: The set every refit starts from (its defaults only: fitted on 2024 data, in no target).
START = "nim-2024"
METRICS_SHOWN = ("tpot_ms_avg", "ttft_ms_avg", "itl_ms_avg", "output_tok_s_total", "e2e_ms_avg")


def engine_family(r: Mapped) -> str:
    """'vLLM 0.19.0' -> 'vllm'; 'Dynamo+TensorRT-LLM (disagg)' -> 'tensorrt-llm'."""
    engine, _ = r.m.served_engine
    return re.split(r"[\s(]", engine.strip().lower(), maxsplit=1)[0] or "unknown"


def trtllm_version(r: Mapped) -> str | None:
    """The TensorRT-LLM release of a perf-overview row (the version-out scheme's groups)."""
    return r.m.engine_version if r.m.source == "trtllm_perf_overview" else None


#: scheme -> (what it holds out, the group of a row or None: the row is not held out by it)
SCHEMES: dict[str, tuple[str, Callable[[Mapped], str | None]]] = {
    "gpu": ("one GPU", lambda r: r.candidate.gpu.id),
    "engine": (
        "one engine (modern rows)",
        lambda r: engine_family(r) if r.m.source == MODERN else None,
    ),
    "model": ("one model", lambda r: r.candidate.model.id),
    "source": ("one source", lambda r: r.m.source),
    "version": ("one TensorRT-LLM version (perf-overview tables)", trtllm_version),
}


def _bare(catalog: Catalog, s: EfficiencySet) -> EfficiencySet:
    """``s`` with no entries and the start set's defaults: a fit from nothing of the data."""
    return s.model_copy(update={"entries": [], "defaults": catalog.efficiency_set(START).defaults})


def _subsample(rows: Sequence[Mapped]) -> list[Mapped]:
    step = max(1, -(-len(rows) // MAX_ROWS))
    return list(rows[::step])


def _fit(catalog: Catalog, base: EfficiencySet, rows: Sequence[Mapped]) -> EfficiencySet:
    archs = {g.id: g.architecture for g in catalog.gpus.values()}
    train = _subsample(rows)
    free = [g for g in free_parameters(base, train) if g in FREE]
    return fit(_bare(catalog, base), train, free, EVALUATIONS, architectures=archs).efficiency


def predict_with(s: EfficiencySet, rows: Sequence[Mapped]) -> list[Prediction]:
    est = Estimator(s)
    return [p for p in predict_all(lambda _m: est, rows) if p.predicted == p.predicted]


class HeldOutFit(NamedTuple):
    """One refit of a held-out group: ``efficiency`` fitted on ``train`` (rows of the set's own
    engine, none of the group), predicting ``held`` (the group's rows that set predicts)."""

    group: str
    efficiency: EfficiencySet
    train: list[Mapped]
    held: list[Mapped]


def held_out_fits(
    catalog: Catalog,
    rows: list[Mapped],
    set_of: dict[int, str],
    group: Callable[[Mapped], str | None],
    wanted: Callable[[Mapped], bool] = lambda _r: True,
) -> Iterator[HeldOutFit]:
    """Every refit a scheme makes: per held-out group, per set that predicts rows of it;
    only the rows ``wanted`` are held (the others of a group still stay out of its fits)."""
    groups: dict[str, list[Mapped]] = defaultdict(list)
    for r in rows:
        g = group(r)
        if g is not None and wanted(r):
            groups[g].append(r)
    for g, held in sorted(groups.items()):
        train = [r for r in rows if group(r) != g]
        by_set: dict[str, list[Mapped]] = defaultdict(list)
        for r in held:
            by_set[set_of[id(r)]].append(r)
        for sid, mine in sorted(by_set.items()):
            own = [r for r in train if set_of[id(r)] == sid]
            if not own:  # the set's only rows are held out: the same source's other rows
                sources = {r.m.source for r in mine}
                own = [r for r in train if r.m.source in sources] or train
            yield HeldOutFit(g, _fit(catalog, catalog.efficiency_set(sid), own), own, mine)
        print(f"  held out {g}: {len(held)} rows", file=sys.stderr)


def held_out(
    catalog: Catalog,
    rows: list[Mapped],
    set_of: dict[int, str],
    group: Callable[[Mapped], str | None],
) -> list[Prediction]:
    """Predictions of every row a group holds out, each from a fit without its group."""
    out: list[Prediction] = []
    for f in held_out_fits(catalog, rows, set_of, group):
        out += predict_with(f.efficiency, f.held)
    return out


def table(results: dict[str, list[Prediction]]) -> str:
    lines = [
        "| held out | metric | n | median APE | p90 APE |",
        "|---|---|---:|---:|---:|",
    ]
    for scheme, preds in results.items():
        by_metric: dict[str, list[Prediction]] = defaultdict(list)
        for p in preds:
            by_metric[p.mapped.m.metric].append(p)
        for metric in [m for m in METRICS_SHOWN if m in by_metric]:
            s = summarise(by_metric[metric])
            lines.append(f"| {scheme} | {metric} | {s.n} | {s.median_ape:.1%} | {s.p90_ape:.1%} |")
    return "\n".join(lines)


def rows_and_sets(catalog: Catalog) -> tuple[list[Mapped], dict[int, str]]:
    """The mapped, aggregated rows of every file and the set each is predicted with."""
    raw = dedupe([m for f in FILES for m in read_measurements(ROOT / f)])
    mapped, _ = map_measurements(catalog, raw)
    rows = fittable(mapped)
    return rows, {id(r): catalog.efficiency_for(*r.m.served_engine).id for r in rows}


DOC = ROOT / "docs" / "heldout.md"
COMMAND = "python benchmarks/heldout.py --write"


def page(text: str) -> str:
    """docs/heldout.md: the table with what it is (docs/accuracy.md quotes the table)."""
    return "\n".join(
        [
            f"<!-- Generated by `{COMMAND}`. Do not edit by hand: regenerate it. -->",
            "",
            "# Held-out accuracy",
            "",
            f"Generated by `{COMMAND}` (a few minutes on 2 cores; `--check` reruns it and"
            " compares). Each group of rows (one GPU, one engine, one model, one source, one"
            " TensorRT-LLM version) is predicted by efficiency sets refitted without it, from no"
            " entries and the 2024 defaults; a GPU no refit saw takes its architecture's"
            " factors, else the set's conservative defaults (the module docstring of"
            " `benchmarks/heldout.py` has the details). APE = |predicted − measured| / measured"
            " per row; `modern` = `data/calibration/measurements_modern.csv` (aggregated rows),"
            " `2024 files` = `measurements.csv` and `static_batching_sweep.csv`. The first rows"
            " are in sample (the shipped sets), for reference.",
            "",
            text,
            "",
        ]
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SCHEMES), action="append")
    parser.add_argument("--write", action="store_true", help=f"write {DOC.name}")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if {DOC.name} is stale")
    args = parser.parse_args(argv)
    catalog = load_catalog()
    rows, set_of = rows_and_sets(catalog)
    results: dict[str, list[Prediction]] = {}
    modern = [r for r in rows if r.m.source == MODERN]
    results["in sample (shipped sets), modern"] = predict_all(estimator_chooser(catalog), modern)
    for name in args.only or list(SCHEMES):
        what, group = SCHEMES[name]
        t0 = time.perf_counter()
        preds = held_out(catalog, rows, set_of, group)
        print(f"{what}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        results[f"{what}, modern"] = [p for p in preds if p.mapped.m.source == MODERN]
        results[f"{what}, 2024 files"] = [p for p in preds if p.mapped.m.source != MODERN]
    text = table({k: v for k, v in results.items() if v})
    print(text)
    if args.check:
        return 0 if DOC.read_text(encoding="utf-8") == page(text) else 1
    if args.write:
        DOC.write_text(page(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
