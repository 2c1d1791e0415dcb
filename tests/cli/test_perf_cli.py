"""`infersize estimate` (one point and ``--points`` batch mode), `calibrate` and `validate`
in-process: the JSON schema and the model's invariants (E2E, Little's law, memory budget), batch
rows against single points, a calibration round trip (runs synthesised from known efficiencies
are fitted back), GenAI-Perf exports, and bad input that must leave no file behind.

Expectations are hand-computed or invariants; no float the code printed is pinned.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from inferencesize.calibration import WORSE_MARGIN
from inferencesize.cli import app
from inferencesize.io_measurements import COLUMNS

runner = CliRunner()

ROOT = Path(__file__).resolve().parents[2]
PERF = ROOT / "tests" / "fixtures" / "perf"
GIB = 2**30

# The published seed point (NVIDIA DLI / NIM, README "Reference answers"): Llama-3-8B FP8 on one
# H100, 2000 / 200 tokens, 25 closed-loop clients.
SEED = ["--model", "llama-3-8b", "--hardware", "h100-sxm", "--precision", "fp8"]
SEED_POINT = [*SEED, "--isl", "2000", "--osl", "200", "--concurrency", "25"]
SEED_TTFT_MS, SEED_ITL_MS = 489.5, 11.73

# Every key of `estimate --format json` (inferencesize.estimate.record, "the stable JSON record").
ESTIMATE_KEYS = {
    "model",
    "hardware",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "dp",
    "isl",
    "osl",
    "concurrency",
    "batching",
    "gpus",
    "ttft_ms",
    "itl_ms",
    "itl_max_ms",
    "e2e_ms",
    "requests_per_s",
    "output_tokens_per_s",
    "max_concurrency",
    "memory",
    "bound",
    "feasible",
    "reason",
    "engine",
    "efficiency",
    "trust",
    "techniques",
    "error_band",
}
MEMORY_KEYS = {"capacity", "weights", "kv_cache", "activations", "reserve", "free"}
# Batch-mode CSV: the input file's columns, then these (memory and bound flattened with `_`).
BATCH_RESULT_COLUMNS = [
    "model",
    "hardware",
    "precision",
    "tp",
    "pp",
    "ep",
    "isl",
    "osl",
    "concurrency",
    "batching",
    "kv_precision",
    "gpus",
    "ttft_ms",
    "itl_ms",
    "e2e_ms",
    "itl_max_ms",
    "requests_per_s",
    "output_tokens_per_s",
    "max_concurrency",
    "memory_capacity_gib",
    "memory_weights_gib",
    "memory_kv_cache_gib",
    "memory_activations_gib",
    "memory_reserve_gib",
    "memory_free_gib",
    "bound_prefill",
    "bound_decode",
    "feasible",
    "reason",
    "engine",
    "efficiency",
    "trust",
]

# Llama-3-8B (models/llama-3-8b.yaml): 32 layers, hidden 4096, 32 heads, 8 KV heads of 128,
# MLP 14336, vocabulary 128256, untied embeddings.
L3_LINEAR_PARAMS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)  # 6,979,321,856
L3_EMBED_PARAMS = 2 * 128256 * 4096  # embedding + lm_head, kept 16-bit: 1,050,673,152
L3_FP8_WEIGHT_BYTES = L3_LINEAR_PARAMS * 1 + L3_EMBED_PARAMS * 2  # 9,080,668,160 B = 8.457 GiB
L3_FP8_KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 1  # K and V · layers · KV heads · head_dim · 1 B


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.stderr
    return result.stdout


def estimate_json(*args: str | Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ok(invoke("estimate", *args, "--format", "json")))
    return data


def assert_one_line_error(result: Result, code: int, *needles: str) -> None:
    """Exit ``code``, exactly one ``error:`` line naming ``needles`` on stderr, no stdout."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def table_rows(text: str) -> dict[str, list[str]]:
    """Body rows of a rich table, keyed by their first cell."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows[cells[0]] = cells[1:]
    return rows


def assert_same_point(batch: dict[str, Any], single: dict[str, Any]) -> None:
    """Every key of the single-point record, numbers to 1e-9 (batch mode is vectorised)."""
    for key, value in single.items():
        if key == "error_band":  # batch mode (--points) does not carry the bands
            continue
        if isinstance(value, float):
            assert batch[key] == pytest.approx(value, rel=1e-9), key
        elif isinstance(value, dict):
            assert_same_point(batch[key], value)
        else:
            assert batch[key] == value, key


# ---------------------------------------------------------------------------------------------
# estimate: one operating point
# ---------------------------------------------------------------------------------------------


def test_estimate_json_has_the_stable_keys_and_echoes_the_point() -> None:
    rec = estimate_json(*SEED_POINT)
    assert set(rec) == ESTIMATE_KEYS
    assert set(rec["memory"]) == MEMORY_KEYS
    assert set(rec["bound"]) == {"prefill", "decode"}
    assert {k: rec[k] for k in ("model", "hardware", "precision", "kv_precision")} == {
        "model": "llama-3-8b",
        "hardware": "h100-sxm",
        "precision": "fp8",
        "kv_precision": "fp8",  # an fp8 engine keeps an fp8 KV cache unless --kv-precision
    }
    assert (rec["tp"], rec["pp"], rec["ep"], rec["dp"]) == (1, 1, 1, 1)
    assert (rec["isl"], rec["osl"], rec["concurrency"]) == (2000, 200, 25)
    assert rec["batching"] == "inflight"
    assert rec["feasible"] is True and rec["reason"] is None
    assert rec["techniques"] is None
    assert rec["efficiency"] == "nim-2024: h100-sxm fp8"  # the default set has this entry
    assert "NIM" in rec["engine"]


@pytest.mark.parametrize(
    "args",
    [
        ["--concurrency", "1"],
        ["--concurrency", "25"],
        ["--concurrency", "100", "--isl", "500", "--osl", "500"],
        ["--tp", "2", "--concurrency", "10"],
        ["--tp", "2", "--pp", "2", "--concurrency", "10"],
        ["--precision", "bf16", "--concurrency", "8"],
        ["--kv-precision", "bf16", "--concurrency", "8"],
    ],
    ids=["c1", "c25", "c100-short", "tp2", "tp2-pp2", "bf16", "kv-bf16"],
)
def test_estimate_invariants(args: list[str]) -> None:
    rec = estimate_json("--model", "llama-3-8b", "--hardware", "h100-sxm", *args)
    assert rec["feasible"] is True
    osl, conc = rec["osl"], rec["concurrency"]
    assert rec["gpus"] == rec["tp"] * rec["pp"]
    # E2E = TTFT + (OSL − 1) · ITL (README glossary)
    assert rec["e2e_ms"] == pytest.approx(rec["ttft_ms"] + (osl - 1) * rec["itl_ms"], rel=1e-9)
    assert rec["output_tokens_per_s"] == pytest.approx(rec["requests_per_s"] * osl, rel=1e-12)
    # Closed loop within the KV capacity: Little's law, clients = rate · E2E
    assert conc <= rec["max_concurrency"]
    assert rec["requests_per_s"] * rec["e2e_ms"] / 1e3 == pytest.approx(conc, rel=1e-6)
    assert rec["itl_max_ms"] >= rec["itl_ms"] > 0
    assert rec["ttft_ms"] > 0
    # The memory budget partitions the GPU: an H100 SXM has 80 GiB.
    mem = rec["memory"]
    assert mem["capacity"] == 80.0
    parts = mem["weights"] + mem["kv_cache"] + mem["activations"] + mem["reserve"] + mem["free"]
    assert parts == pytest.approx(mem["capacity"], rel=1e-12)
    assert mem["free"] >= 0 and mem["kv_cache"] > 0 and mem["activations"] > 0


def test_estimate_memory_is_the_hand_computed_budget() -> None:
    one = estimate_json(*SEED_POINT)
    mem = one["memory"]
    # fp8 linear layers (1 B) + 16-bit embedding and lm_head; norms are < 0.01 % of it.
    assert mem["weights"] == pytest.approx(L3_FP8_WEIGHT_BYTES / GIB, rel=1e-3)
    # KV capacity / (KV bytes per token · (ISL + OSL)) sequences fit at once.
    kv_bytes = mem["kv_cache"] * GIB
    assert one["max_concurrency"] == math.floor(kv_bytes / (L3_FP8_KV_BYTES_PER_TOKEN * 2200))
    # Dense weights split over TP · PP GPUs (embeddings too).
    split = estimate_json(*SEED_POINT, "--tp", "2", "--pp", "2")
    assert split["gpus"] == 4
    assert split["memory"]["weights"] == pytest.approx(mem["weights"] / 4, rel=1e-9)
    # A 16-bit KV cache holds half the sequences of an fp8 one (same budget).
    kv16 = estimate_json(*SEED_POINT, "--kv-precision", "bf16")
    assert kv16["kv_precision"] == "bf16"
    assert kv16["memory"]["kv_cache"] == pytest.approx(mem["kv_cache"], rel=1e-9)
    assert kv16["max_concurrency"] == math.floor(kv_bytes / (2 * L3_FP8_KV_BYTES_PER_TOKEN * 2200))


def test_estimate_physics_bounds_at_the_seed_point() -> None:
    rec = estimate_json(*SEED_POINT)
    # 2 FLOP per parameter per token on 1-byte weights: a 2000-token prefill does ~4000 FLOP
    # per weight byte, far above an H100's FP8 ridge (1979 TFLOP/s / 3.35 TB/s ≈ 590); a decode
    # step of 25 sequences does ~50 (less with its KV reads).
    assert rec["bound"] == {"prefill": "compute", "decode": "memory"}


def test_estimate_accepts_a_system_id_like_its_gpu() -> None:
    for extra in ([], ["--tp", "2"]):
        on_system = estimate_json(*SEED_POINT, *extra, "--hardware", "dgx-h100")
        on_gpu = estimate_json(*SEED_POINT, *extra)
        assert on_system["hardware"] == "dgx-h100"
        assert {**on_system, "hardware": "h100-sxm"} == on_gpu
    # ids are case-insensitive
    assert estimate_json(*SEED_POINT, "--hardware", "DGX-H100")["hardware"] == "dgx-h100"


def test_static_batching_ttft_grows_with_the_batch() -> None:
    recs = [
        estimate_json(*SEED, "--batching", "static", "--concurrency", str(b)) for b in (1, 4, 16)
    ]
    assert [r["batching"] for r in recs] == ["static"] * 3
    ttft = [r["ttft_ms"] for r in recs]
    assert ttft[0] < ttft[1] < ttft[2]  # the whole batch is prefilled before the first token
    for r in recs:
        assert r["feasible"] is True
        assert r["e2e_ms"] == pytest.approx(r["ttft_ms"] + 199 * r["itl_ms"], rel=1e-9)
        # a static batch of B finishes B requests every E2E
        assert r["requests_per_s"] * r["e2e_ms"] / 1e3 == pytest.approx(r["concurrency"], rel=1e-9)
    # In-flight batching at one client is the same single request as a static batch of one.
    inflight = estimate_json(*SEED, "--concurrency", "1")
    for key in ("ttft_ms", "itl_ms", "e2e_ms", "requests_per_s"):
        assert inflight[key] == pytest.approx(recs[0][key], rel=1e-9), key


def test_static_batch_beyond_the_kv_capacity_is_infeasible() -> None:
    cap = estimate_json(*SEED)["max_concurrency"]
    rec = estimate_json(*SEED, "--batching", "static", "--concurrency", str(cap + 1))
    assert rec["feasible"] is False
    assert rec["reason"] == (
        f"static batch {cap + 1} exceeds the KV capacity of {cap} sequences of 2200 tokens"
    )


def test_estimate_out_of_memory_is_reported_in_the_record() -> None:
    # Llama-3.1-70B in bf16: ~70.6e9 parameters · 2 B ≈ 131 GiB > 80 GiB on one H100.
    args = ["--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--precision", "bf16"]
    result = invoke("estimate", *args, "--tp", "1", "--format", "json")
    # Exit 0: `estimate` reports infeasibility in the record (README and DESIGN only define
    # exit 3 for plans; `simulate` exits 1 on the same point).
    assert result.exit_code == 0, result.stderr
    rec = json.loads(result.stdout)
    assert rec["feasible"] is False
    assert rec["reason"].startswith("out of memory: weights ")
    assert "exceed 80 GiB" in rec["reason"]
    assert rec["memory"]["weights"] > rec["memory"]["capacity"]
    assert rec["memory"]["weights"] == pytest.approx(70.6e9 * 2 / GIB, rel=0.01)
    assert rec["max_concurrency"] == 0
    for key in ("ttft_ms", "itl_ms", "e2e_ms", "requests_per_s", "output_tokens_per_s", "bound"):
        assert rec[key] is None, key
    # Four GPUs hold it: a quarter of the weights each.
    tp4 = estimate_json(*args, "--tp", "4")
    assert tp4["feasible"] is True
    assert tp4["memory"]["weights"] == pytest.approx(rec["memory"]["weights"] / 4, rel=1e-9)


def test_estimate_invalid_split_is_infeasible_with_its_reason() -> None:
    rec = estimate_json(*SEED_POINT, "--tp", "3")
    assert rec["feasible"] is False
    assert rec["reason"] == "tp 3 does not divide 32 attention heads"
    assert rec["ttft_ms"] is None


def test_estimate_table_prints_the_same_numbers() -> None:
    rec = estimate_json(*SEED_POINT)
    result = invoke("estimate", *SEED_POINT)
    out = ok(result)
    assert result.stderr == ""
    assert "llama-3-8b on h100-sxm fp8 tp1 · ISL 2000 · OSL 200 · inflight concurrency 25" in out
    rows = table_rows(out)
    assert rows["feasible"] == ["yes"]
    assert rows["GPUs per instance"] == ["1"]
    for row, key in (("TTFT (mean)", "ttft_ms"), ("ITL (mean)", "itl_ms")):
        band = rec["error_band"][key]
        shown = f"{rec[key]:,.1f} ms, 80 % band {band['low']:,.1f}–{band['high']:,.1f}"
        assert rows[row] == [shown]
    assert rows["E2E (mean)"] == [f"{rec['e2e_ms']:,.1f} ms"]
    assert rows["max concurrent sequences (KV)"] == [str(rec["max_concurrency"])]
    assert f"weights {rec['memory']['weights']:.1f}" in out
    static = ok(invoke("estimate", *SEED, "--batching", "static", "--concurrency", "8"))
    assert "static batch 8" in static
    oom = ok(
        invoke(
            "estimate",
            "--model",
            "llama-3.1-70b",
            "--hardware",
            "h100-sxm",
            "--precision",
            "bf16",
            "-f",
            "table",
        )
    )
    assert "no: out of memory" in oom


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--hardware", "h100-sxm"], 2, "estimate needs --model and --hardware"),
        ([*SEED, "--batching", "continuous"], 2, "'continuous' is not one of"),
        ([*SEED, "--format", "xml"], 2, "'xml' is not one of table, json, yaml, csv"),
        ([*SEED, "--precision", "fp6"], 1, "--precision: unknown 'fp6'"),
        ([*SEED, "--kv-precision", "fp6"], 1, "--kv-precision: unknown 'fp6'"),
        (["--model", "nope", "--hardware", "h100-sxm"], 1, "unknown model 'nope'"),
        (["--model", "llama-3-8b", "--hardware", "nope"], 1, "unknown hardware"),
        ([*SEED, "--concurrency", "0"], 2, "--concurrency"),
    ],
)
def test_estimate_bad_flags(args: list[str], code: int, message: str) -> None:
    result = invoke("estimate", *args)
    assert result.exit_code == code, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


# ---------------------------------------------------------------------------------------------
# estimate --points: batch mode
# ---------------------------------------------------------------------------------------------

POINTS = PERF / "points.csv"  # no pp / ep / batching / kv_precision columns
POINTS_HEADER = ["label", "model", "hardware", "precision", "tp", "isl", "osl", "concurrency"]
POINT_LABELS = [
    "seed",
    "alias-on-a-system",
    "unknown-model",
    "tp-not-dividing-heads",
    "out-of-memory",
    "not-a-number",
    "defaults",
]
FEASIBLE_LABELS = {"seed", "alias-on-a-system", "defaults"}


def batch(path: Path, fmt: str, *extra: str) -> str:
    result = invoke("estimate", "--points", path, "--format", fmt, *extra)
    out = ok(result)
    assert result.stderr == ""
    return out


def test_batch_csv_one_row_per_input_row_in_order() -> None:
    text = batch(POINTS, "csv")
    header = text.splitlines()[0].split(",")
    # the input columns first, in the file's order, then the result columns not among them
    assert header == POINTS_HEADER + [c for c in BATCH_RESULT_COLUMNS if c not in POINTS_HEADER]
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["label"] for r in rows] == POINT_LABELS
    by = {r["label"]: r for r in rows}
    assert {r["label"] for r in rows if r["feasible"] == "true"} == FEASIBLE_LABELS
    assert {r["label"] for r in rows if r["feasible"] == "false"} == (
        set(POINT_LABELS) - FEASIBLE_LABELS
    )
    assert by["unknown-model"]["reason"].startswith("unknown model 'llama-9-999b'")
    assert by["tp-not-dividing-heads"]["reason"] == "tp 3 does not divide 32 attention heads"
    assert by["out-of-memory"]["reason"].startswith("out of memory: ")
    assert by["not-a-number"]["reason"] == "row 7: isl: not a number ('abc')"  # line 7 of the file
    for label in FEASIBLE_LABELS:
        assert by[label]["reason"] == ""
        assert float(by[label]["ttft_ms"]) > 0
    # the alias resolves to the catalog id; a system id stays as given
    assert by["alias-on-a-system"]["model"] == "llama-3-8b"
    assert by["alias-on-a-system"]["hardware"] == "dgx-h100"
    assert by["alias-on-a-system"]["gpus"] == "2"
    # blank or absent optional columns take the defaults
    defaults = by["defaults"]
    assert (defaults["precision"], defaults["tp"], defaults["pp"], defaults["ep"]) == (
        "fp8",
        "1",
        "1",
        "1",
    )
    assert (defaults["batching"], defaults["kv_precision"]) == ("inflight", "fp8")
    # a row that could not be parsed keeps its input and leaves the numbers empty
    assert by["unknown-model"]["isl"] == "100" and by["unknown-model"]["ttft_ms"] == ""
    # memory flattened: the parts still sum to the GPU's capacity (6 significant digits)
    seed = by["seed"]
    parts = sum(
        float(seed[f"memory_{k}_gib"])
        for k in ("weights", "kv_cache", "activations", "reserve", "free")
    )
    assert parts == pytest.approx(float(seed["memory_capacity_gib"]), rel=1e-5)
    # --format defaults to csv with --points
    assert ok(invoke("estimate", "--points", POINTS)) == text


def test_batch_jsonl_rows_equal_single_point_estimates() -> None:
    lines = batch(POINTS, "jsonl").splitlines()
    recs = [json.loads(line) for line in lines]
    assert [r["label"] for r in recs] == POINT_LABELS
    by = {r["label"]: r for r in recs}
    singles = {
        "seed": [*SEED_POINT],
        "alias-on-a-system": [
            "--model",
            "Meta-Llama-3-8B-Instruct",
            "--hardware",
            "dgx-h100",
            "--tp",
            "2",
            "--isl",
            "1000",
            "--osl",
            "100",
            "--concurrency",
            "4",
        ],
        "defaults": [*SEED, "--isl", "500", "--osl", "50", "--concurrency", "2"],
    }
    for label, args in singles.items():
        assert_same_point(by[label], estimate_json(*args))
    oom = by["out-of-memory"]
    assert oom["feasible"] is False and oom["ttft_ms"] is None
    assert oom["memory"]["weights"] > oom["memory"]["capacity"]
    # the CSV carries the same numbers, rounded to 6 significant digits
    rows = {r["label"]: r for r in csv.DictReader(io.StringIO(batch(POINTS, "csv")))}
    for label in FEASIBLE_LABELS:
        for key in ("ttft_ms", "itl_ms", "e2e_ms", "requests_per_s", "max_concurrency"):
            assert float(rows[label][key]) == pytest.approx(by[label][key], rel=1e-5)
        assert float(rows[label]["memory_kv_cache_gib"]) == pytest.approx(
            by[label]["memory"]["kv_cache"], rel=1e-5
        )
        assert rows[label]["bound_decode"] == by[label]["bound"]["decode"]


def test_batch_with_every_column_static_rows_and_bad_values(tmp_path: Path) -> None:
    points = tmp_path / "all-columns.csv"
    points.write_text(
        "model,hardware,precision,tp,pp,ep,isl,osl,concurrency,batching,kv_precision\n"
        "llama-3-8b,h100-sxm,fp8,1,1,1,2000,200,8,static,bf16\n"
        "llama-3-8b,h100-sxm,fp8,2,2,1,1000,100,16,inflight,\n"
        "llama-3-8b,h100-sxm,fp8,1,1,1,2000,200,4,static,\n"
        "llama-3-8b,h100-sxm,fp8,1,1,1,2000,200,4,dynamic,\n"
        "llama-3-8b,h100-sxm,fp8,1,1,1,2000,200,0,inflight,\n"
        "llama-3-8b,h100-sxm,fp6,1,1,1,2000,200,1,inflight,\n"
    )
    recs = [json.loads(line) for line in batch(points, "jsonl").splitlines()]
    assert len(recs) == 6
    assert_same_point(
        recs[0],
        estimate_json(
            *SEED_POINT, "--concurrency", "8", "--batching", "static", "--kv-precision", "bf16"
        ),
    )
    assert_same_point(
        recs[1],
        estimate_json(
            *SEED, "--tp", "2", "--pp", "2", "--isl", "1000", "--osl", "100", "--concurrency", "16"
        ),
    )
    assert_same_point(
        recs[2], estimate_json(*SEED_POINT, "--concurrency", "4", "--batching", "static")
    )
    # static TTFT grows with the batch in batch mode too
    assert recs[0]["ttft_ms"] > recs[2]["ttft_ms"]
    assert recs[3]["feasible"] is False
    assert recs[3]["reason"] == "row 5: batching: 'dynamic' is not inflight or static"
    assert recs[4]["reason"] == "row 6: concurrency: must be at least 1 (got 0)"
    assert recs[5]["reason"].startswith("--precision: unknown 'fp6'")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model,hardware,isl,osl\nllama-3-8b,h100-sxm,100,100\n", "missing column(s) concurrency"),
        ("", "missing column(s) model, hardware, isl, osl, concurrency"),
    ],
)
def test_batch_file_without_required_columns(tmp_path: Path, text: str, message: str) -> None:
    points = tmp_path / "points.csv"
    points.write_text(text)
    result = invoke("estimate", "--points", points)
    assert_one_line_error(result, 1, str(points), message)


def test_batch_usage_errors(tmp_path: Path) -> None:
    assert_one_line_error(
        invoke("estimate", "--points", tmp_path / "missing.csv"), 1, "missing.csv: file not found"
    )
    result = invoke("estimate", "--points", POINTS, "--format", "xml")
    assert result.exit_code == 2
    assert "'xml' is not one of csv, jsonl, json, yaml" in result.stderr


def test_batch_does_not_silently_ignore_single_point_flags(tmp_path: Path) -> None:
    points = tmp_path / "p.csv"
    points.write_text("model,hardware,isl,osl,concurrency\nllama-3-8b,h100-sxm,2000,200,4\n")
    result = invoke("estimate", "--points", points, "--precision", "bf16", "--format", "jsonl")
    assert_one_line_error(result, 2, "--points", "drop --precision")
    result = invoke("estimate", "--points", points, "--tp", "2", "--batching", "static")
    assert_one_line_error(result, 2, "drop --tp, --batching")


def test_batch_jsonl_rows_share_keys_and_types() -> None:
    recs = [json.loads(line) for line in batch(POINTS, "jsonl").splitlines()]
    keys = {frozenset(r) for r in recs}
    assert len(keys) == 1
    assert all(isinstance(r["isl"], int) for r in recs if r["label"] != "not-a-number")


# ---------------------------------------------------------------------------------------------
# calibrate
# ---------------------------------------------------------------------------------------------

KNOWN = {"compute": 0.70, "memory": 0.80}  # h100-sxm fp8 (nim-2024 ships ~0.55 / ~0.67)
METRIC_KEYS = {
    "ttft_ms_avg": "ttft_ms",
    "itl_ms_avg": "itl_ms",
    "e2e_ms_avg": "e2e_ms",
    "req_per_s": "requests_per_s",
    "output_tok_s_total": "output_tokens_per_s",
}
MEASUREMENT_COLUMNS = COLUMNS  # the schema of data/calibration
CALIBRATE = ["calibrate", "--hardware", "h100-sxm", "--precision", "fp8"]


def h100_fp8(eset: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = next(
        e for e in eset["entries"] if e.get("gpu") == "h100-sxm" and e["precision"] == "fp8"
    )
    return entry


@pytest.fixture(scope="module")
def base_set() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (ROOT / "hardware" / "efficiency" / "nim-2024.yaml").read_text()
    )
    return data


@pytest.fixture(scope="module")
def known_set(tmp_path_factory: pytest.TempPathFactory, base_set: dict[str, Any]) -> Path:
    """nim-2024 with h100-sxm fp8 set to KNOWN: the 'true' engine of the synthetic runs."""
    known = json.loads(json.dumps(base_set))
    known.update(id="known", default=False)
    h100_fp8(known).update(KNOWN)
    path = tmp_path_factory.mktemp("known") / "known.yaml"
    path.write_text(yaml.safe_dump(known, sort_keys=False))
    return path


def synthetic_rows(
    known: Path, tmp: Path, gpu: str = "h100-sxm", precision: str = "fp8"
) -> list[dict[str, Any]]:
    """Runs 'measured' on the known engine: ISL 500 / 4000 × 1, 8, 32 clients, five metrics."""
    points = tmp / "grid.csv"
    points.write_text(
        "model,hardware,precision,isl,osl,concurrency\n"
        + "".join(
            f"llama-3-8b,{gpu},{precision},{isl},100,{c}\n"
            for isl in (500, 4000)
            for c in (1, 8, 32)
        )
    )
    result = invoke("estimate", "--points", points, "--calibration", known, "-f", "jsonl")
    recs = [json.loads(line) for line in ok(result).splitlines()]
    assert len(recs) == 6 and all(r["feasible"] for r in recs)
    return [
        {
            "source": "synthetic",
            "source_detail": "estimate --calibration known.yaml",
            "model": "Llama-3-8B",
            "gpu": "H100-SXM-80GB" if gpu == "h100-sxm" else gpu,
            "num_gpus": 1,
            "precision": precision,
            "kv_precision": "fp8" if precision == "fp8" else "",
            "tp": 1,
            "pp": 1,
            "ep": "",
            "isl": float(r["isl"]),
            "osl": float(r["osl"]),
            "concurrency_or_batch": r["concurrency"],
            "metric": metric,
            "value": repr(r[key]),
            "unit": "ms" if metric.endswith("_ms_avg") else "per instance",
            "engine": "NIM (TRT-LLM backend)",
            "engine_version": "synthetic",
            "notes": "GenAI-Perf concurrency mode, streaming",
        }
        for r in recs
        for metric, key in METRIC_KEYS.items()
    ]


def write_measurements(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=MEASUREMENT_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory, known_set: Path) -> tuple[Result, Path, int]:
    tmp = tmp_path_factory.mktemp("calibrate")
    rows = synthetic_rows(known_set, tmp)
    data = write_measurements(tmp / "my-runs.csv", rows)
    out = tmp / "fitted.yaml"
    return invoke(*CALIBRATE, "--data", data, "--out", out), out, len(rows)


def test_calibrate_recovers_known_efficiencies(
    fitted: tuple[Result, Path, int], base_set: dict[str, Any]
) -> None:
    result, out, n_rows = fitted
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"wrote {out}\n"
    eset = yaml.safe_load(out.read_text())
    entry = h100_fp8(eset)
    assert entry["compute"] == pytest.approx(KNOWN["compute"], rel=0.02)
    assert entry["memory"] == pytest.approx(KNOWN["memory"], rel=0.02)
    assert entry["points"] == n_rows == 30
    printed = re.search(r"fitted h100-sxm fp8: compute ([\d.]+), memory ([\d.]+)", result.stdout)
    assert printed is not None
    assert float(printed[1]) == pytest.approx(entry["compute"], abs=5e-4)
    assert float(printed[2]) == pytest.approx(entry["memory"], abs=5e-4)
    # the set is named after the file, never the default, and says where it came from
    assert eset["id"] == "fitted" and eset["default"] is False
    assert "my-runs.csv" in eset["source"] and "starting from nim-2024" in eset["source"]
    # only the fitted GPU × precision moved; the set-wide parameters stay (no --overheads);
    # the per-GPU defaults are the lowest fitted shares of the set's GPUs (what a GPU of an
    # architecture never measured takes)
    shares = ("compute", "memory")
    assert {k: v for k, v in eset["defaults"].items() if k not in shares} == {
        k: v for k, v in base_set["defaults"].items() if k not in shares
    }
    gpus = [e for e in eset["entries"] if e.get("gpu")]
    assert [eset["defaults"][k] for k in shares] == [min(e[k] for e in gpus) for k in shares]
    others = [e for e in gpus if e is not entry]
    base_others = [e for e in base_set["entries"] if e.get("gpu") and e is not h100_fp8(base_set)]

    def key(e: dict[str, Any]) -> tuple[str, str]:
        return (e["gpu"], e.get("precision") or "")

    assert sorted(others, key=key) == sorted(base_others, key=key)
    # fit quality: every metric of the 6 runs, the error after the fit ~0
    rows = table_rows(result.stdout)
    assert set(rows) >= set(METRIC_KEYS)
    for metric in METRIC_KEYS:
        n, before, after = rows[metric][:3]
        assert n == "6"
        assert float(after.rstrip("%")) <= 1.0 < float(before.rstrip("%"))


def test_calibration_file_moves_estimates_the_expected_way(
    fitted: tuple[Result, Path, int], known_set: Path
) -> None:
    _, out, _ = fitted
    point = [*SEED, "--isl", "4000", "--osl", "100", "--concurrency", "1"]
    default = estimate_json(*point)
    calibrated = estimate_json(*point, "--calibration", out)
    truth = estimate_json(*point, "--calibration", known_set)
    assert calibrated["efficiency"] == "fitted: h100-sxm fp8"
    # compute 0.55 → 0.70 speeds up the prefill; memory 0.67 → 0.80 the decode step
    assert calibrated["ttft_ms"] < default["ttft_ms"]
    assert calibrated["itl_ms"] < default["itl_ms"]
    assert calibrated["requests_per_s"] > default["requests_per_s"]
    for key in ("ttft_ms", "itl_ms", "e2e_ms", "requests_per_s"):
        assert calibrated[key] == pytest.approx(truth[key], rel=0.01), key
    # a GPU the data did not cover is unchanged
    other = ["--model", "llama-3-8b", "--hardware", "a100-sxm-80gb", "--precision", "fp16"]
    assert estimate_json(*other, "--calibration", out)["ttft_ms"] == pytest.approx(
        estimate_json(*other)["ttft_ms"], rel=1e-12
    )


# Only the target GPU × precision is fitted; a fit worse than its start is not written ------------


def test_calibrate_fits_the_target_gpu_only_and_names_the_other_rows(
    tmp_path: Path, known_set: Path
) -> None:
    """H200 rows of the same engine are faster (HBM 4.8 against 3.35 TB/s): read as H100 rows
    they would pull the H100's memory share up. They, and fp16 rows of another GPU, are counted
    and left out; the H100's shares come back as they were made."""
    h100 = synthetic_rows(known_set, tmp_path)
    h200 = synthetic_rows(known_set, tmp_path, gpu="h200-sxm")
    a100 = synthetic_rows(known_set, tmp_path, gpu="a100-sxm-80gb", precision="fp16")
    data = write_measurements(tmp_path / "mixed.csv", h200 + h100 + a100)
    out = tmp_path / "fit.yaml"
    result = invoke(*CALIBRATE, "--data", data, "--out", out, "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"wrote {out}\n"
    rec = json.loads(result.stdout)
    assert rec["rows_used"] == len(h100) == 30
    assert rec["rows_excluded"] == [
        {"gpu": "a100-sxm-80gb", "precision": "fp16", "rows": len(a100)},
        {"gpu": "h200-sxm", "precision": "fp8", "rows": len(h200)},
    ]
    assert {q["metric"]: q["n"] for q in rec["fit_quality"]} == dict.fromkeys(METRIC_KEYS, 6)
    entry = h100_fp8(yaml.safe_load(out.read_text()))
    assert entry["points"] == 30
    assert entry["compute"] == pytest.approx(KNOWN["compute"], rel=0.02)
    assert entry["memory"] == pytest.approx(KNOWN["memory"], rel=0.02)
    # better than the start on every metric: written, nothing worse
    assert rec["written"] is True and rec["worse"] == [] and rec["starting_set"] == "nim-2024"
    for q in rec["fit_quality"]:
        assert q["median_ape_after"] < q["median_ape_before"] and not q["worse"]
    # the table names the rows left out, per GPU × precision
    table = invoke(*CALIBRATE, "--data", data, "--out", tmp_path / "t.yaml")
    assert table.exit_code == 0, table.stderr
    assert (
        "rows of other GPUs or precisions, not fitted to h100-sxm fp8: 30 on a100-sxm-80gb fp16,"
        " 30 on h200-sxm fp8" in " ".join(table.stdout.split())
    )


def test_calibrate_without_rows_of_the_target_writes_nothing(
    tmp_path: Path, known_set: Path
) -> None:
    data = write_measurements(
        tmp_path / "h200.csv", synthetic_rows(known_set, tmp_path, gpu="h200-sxm")
    )
    (tmp_path / "grid.csv").unlink()
    out = tmp_path / "fit.yaml"
    result = invoke(*CALIBRATE, "--data", data, "--out", out)
    assert_one_line_error(
        result, 1, "h200.csv: no rows measured on h100-sxm fp8 (30 on h200-sxm fp8)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h200.csv"]


@pytest.fixture(scope="module")
def beyond_bounds(
    tmp_path_factory: pytest.TempPathFactory, base_set: dict[str, Any]
) -> tuple[Path, Path]:
    """A catalog whose set `fast` runs the H100 at 100 % of its datasheet (compute and memory
    1.0), and runs measured on it. The fit keeps its shares within physical bounds (compute
    ≤ 0.85, memory ≤ 0.95), so from this start it can only predict slower than measured: a
    fit worse than the set it starts from, whatever the model's other numbers."""
    tmp = tmp_path_factory.mktemp("beyond")
    fast = json.loads(json.dumps(base_set))
    fast.update(id="fast", default=False, engines=[])
    h100_fp8(fast).update(compute=1.0, memory=1.0)
    catalog = tmp / "catalog"
    (catalog / "hardware" / "efficiency").mkdir(parents=True)
    path = catalog / "hardware" / "efficiency" / "fast.yaml"
    path.write_text(yaml.safe_dump(fast, sort_keys=False))
    data = write_measurements(tmp / "runs.csv", synthetic_rows(path, tmp))
    return catalog, data


def test_calibrate_refuses_a_fit_worse_than_its_start(
    tmp_path: Path, beyond_bounds: tuple[Path, Path]
) -> None:
    catalog, data = beyond_bounds
    out = tmp_path / "fit.yaml"
    args = [*CALIBRATE, "--data", data, "--catalog", catalog, "--engine", "fast", "--out", out]
    result = invoke(*args, "-f", "json")
    assert result.exit_code == 3, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        f"error: {out} not written: the fit is worse than fast on the 30 h100-sxm fp8 rows:"
        " e2e_ms_avg median APE 0.0% → "
    )
    assert lines[0].endswith("(--force writes it anyway)")
    assert not out.exists() and list(tmp_path.iterdir()) == []
    # the record says what was compared: every metric worse, each by more than the margin
    rec = json.loads(result.stdout)
    assert rec["written"] is False and rec["starting_set"] == "fast"
    quality = {q["metric"]: q for q in rec["fit_quality"]}
    assert {w["metric"] for w in rec["worse"]} == {m for m, q in quality.items() if q["worse"]}
    assert {w["metric"] for w in rec["worse"]} >= {"ttft_ms_avg", "itl_ms_avg"}
    for w in rec["worse"]:
        q = quality[w["metric"]]
        assert (w["before"], w["after"]) == (
            q[f"{w['statistic']}_ape_before"],
            q[f"{w['statistic']}_ape_after"],
        )
        assert w["before"] < 1e-6 < WORSE_MARGIN < w["after"] - w["before"]
    # the table shows the same comparison before the error
    table = invoke(*args)
    assert table.exit_code == 3
    assert table_rows(table.stdout)["ttft_ms_avg"][1] == "0.0%"
    assert not out.exists()


def test_calibrate_force_writes_a_worse_fit_and_says_so(
    tmp_path: Path, beyond_bounds: tuple[Path, Path]
) -> None:
    catalog, data = beyond_bounds
    out = tmp_path / "fit.yaml"
    result = invoke(
        *CALIBRATE,
        "--data",
        data,
        "--catalog",
        catalog,
        "--engine",
        "fast",
        "--out",
        out,
        "--force",
    )
    assert result.exit_code == 0, result.stderr
    warning, wrote = result.stderr.splitlines()
    assert warning.startswith("warning: the fit is worse than fast: ") and "ttft_ms_avg" in warning
    assert wrote == f"wrote {out}"
    entry = h100_fp8(yaml.safe_load(out.read_text()))
    assert entry["compute"] <= 0.85 and entry["memory"] <= 0.95  # the fit's upper bounds


# GenAI-Perf exports (profile_export_genai_perf.json / .csv) -------------------------------------


def genai_perf_json(point: dict[str, Any], model: str, concurrency: int) -> str:
    """A profile_export_genai_perf.json: per-metric stats with their units, throughputs as
    {unit, avg}, and the run's arguments under input_config (genai_perf JsonExporter)."""

    def stats(unit: str, avg: float) -> dict[str, Any]:
        spread = {"p99": 1.2, "p95": 1.1, "p90": 1.05, "p75": 1.02, "p50": 1.0, "p25": 0.98}
        return {
            "unit": unit,
            "avg": avg,
            **{k: avg * f for k, f in spread.items()},
            "min": avg * 0.9,
            "max": avg * 1.3,
            "std": avg * 0.05,
        }

    isl, osl = point["isl"], point["osl"]
    export = {
        "request_throughput": {"unit": "requests/sec", "avg": point["requests_per_s"]},
        "request_latency": stats("ms", point["e2e_ms"]),
        "time_to_first_token": stats("ms", point["ttft_ms"]),
        "inter_token_latency": stats("ms", point["itl_ms"]),
        "output_token_throughput": {"unit": "tokens/sec", "avg": point["output_tokens_per_s"]},
        "output_token_throughput_per_request": stats("tokens/sec", osl / point["e2e_ms"] * 1e3),
        "output_sequence_length": stats("tokens", osl),
        "input_sequence_length": stats("tokens", isl),
        "input_config": {
            "model": [model],
            "endpoint_type": "chat",
            "service_kind": "openai",
            "streaming": True,
            "concurrency": concurrency,
            "synthetic_input_tokens_mean": isl,
            "output_tokens_mean": osl,
        },
    }
    return json.dumps(export, indent=2)


def genai_perf_csv(point: dict[str, Any]) -> str:
    """A profile_export_genai_perf.csv as genai_perf's CsvExporter writes it (2024): request
    metrics `Metric,avg,min,max,p99,…` with values as f"{v:,.2f}", a blank line, then
    `Metric,Value` system metrics as f"{v:.2f}"."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(["Metric", "avg", "min", "max", "p99", "p95", "p90", "p75", "p50", "p25"])
    factors = (1.0, 0.9, 1.3, 1.2, 1.1, 1.05, 1.02, 1.0, 0.98)
    for name, value in (
        ("Time To First Token (ms)", point["ttft_ms"]),
        ("Inter Token Latency (ms)", point["itl_ms"]),
        ("Request Latency (ms)", point["e2e_ms"]),
        ("Output Sequence Length", point["osl"]),
        ("Input Sequence Length", point["isl"]),
    ):
        writer.writerow([name, *(f"{value * f:,.2f}" for f in factors)])
    writer.writerow([])
    writer.writerow(["Metric", "Value"])
    writer.writerow(["Output Token Throughput (per sec)", f"{point['output_tokens_per_s']:.2f}"])
    writer.writerow(["Request Throughput (per sec)", f"{point['requests_per_s']:.2f}"])
    return buf.getvalue()


GENAI_FLAGS = ["--tp", "1", "--isl", "2000", "--osl", "200"]


@pytest.fixture(scope="module")
def known_point(known_set: Path) -> dict[str, Any]:
    return estimate_json(
        *SEED, "--isl", "2000", "--osl", "200", "--concurrency", "8", "--calibration", known_set
    )


@pytest.mark.parametrize("kind", ["json", "csv"])
def test_calibrate_genai_perf_export_round_trip(
    kind: str, tmp_path: Path, known_point: dict[str, Any]
) -> None:
    export = tmp_path / f"profile_export_genai_perf.{kind}"
    if kind == "json":  # model and concurrency come from input_config (a NIM's served name)
        export.write_text(genai_perf_json(known_point, "meta/llama3-8b-instruct", 8))
        flags = GENAI_FLAGS
    else:  # the CSV carries no arguments: all from the flags
        export.write_text(genai_perf_csv(known_point))
        flags = [*GENAI_FLAGS, "--model", "llama-3-8b", "--concurrency", "8"]
    out = tmp_path / "genai.yaml"
    result = invoke(*CALIBRATE, "--data", export, *flags, "--out", out)
    assert result.exit_code == 0, result.stderr
    rows = table_rows(result.stdout)
    assert {m: rows[m][0] for m in METRIC_KEYS} == dict.fromkeys(METRIC_KEYS, "1")
    entry = h100_fp8(yaml.safe_load(out.read_text()))
    assert entry["points"] == 5
    # the CSV rounds to 2 decimals (req/s 5.09): still within 2 %
    assert entry["compute"] == pytest.approx(KNOWN["compute"], rel=0.02)
    assert entry["memory"] == pytest.approx(KNOWN["memory"], rel=0.02)


@pytest.mark.parametrize(
    ("name", "flags"),
    [
        ("profile_export_genai_perf.json", GENAI_FLAGS),
        (
            "profile_export_genai_perf.csv",
            [*GENAI_FLAGS, "--model", "llama-3-8b", "--concurrency", "25"],
        ),
    ],
)
def test_calibrate_on_the_published_seed_point(name: str, flags: list[str], tmp_path: Path) -> None:
    """The fixtures hold NVIDIA's published seed run (TTFT 489.5 ms, ITL 11.73 ms, 8.843 req/s
    at 25 clients) in GenAI-Perf's two export formats; the fit must move toward it."""
    out = tmp_path / "seed.yaml"
    result = invoke(*CALIBRATE, "--data", PERF / name, *flags, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"wrote {out}\n"
    assert {m: table_rows(result.stdout)[m][0] for m in METRIC_KEYS} == dict.fromkeys(
        METRIC_KEYS, "1"
    )
    entry = h100_fp8(yaml.safe_load(out.read_text()))
    assert entry["points"] == 5
    before = estimate_json(*SEED_POINT)
    after = estimate_json(*SEED_POINT, "--calibration", out)

    def miss(rec: dict[str, Any]) -> float:
        return abs(math.log(rec["ttft_ms"] / SEED_TTFT_MS)) + abs(
            math.log(rec["itl_ms"] / SEED_ITL_MS)
        )

    assert miss(after) < miss(before)
    assert after["ttft_ms"] == pytest.approx(SEED_TTFT_MS, rel=0.02)
    assert after["itl_ms"] == pytest.approx(SEED_ITL_MS, rel=0.02)


def test_calibrate_explicit_model_wins_over_the_served_model_name(
    tmp_path: Path, known_point: dict[str, Any]
) -> None:
    export = tmp_path / "profile_export_genai_perf.json"
    export.write_text(genai_perf_json(known_point, "my-llm-deployment", 8))
    out = tmp_path / "out.yaml"
    result = invoke(
        *CALIBRATE, "--data", export, *GENAI_FLAGS, "--model", "llama-3-8b", "--out", out
    )
    assert result.exit_code == 0, result.stderr
    assert h100_fp8(yaml.safe_load(out.read_text()))["memory"] == pytest.approx(
        KNOWN["memory"], rel=0.02
    )


def test_calibrate_reads_the_per_user_throughput_row_as_what_it_is(tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    result = invoke(
        *CALIBRATE,
        "--data",
        PERF / "profile_export_genai_perf_per_user.csv",
        *GENAI_FLAGS,
        "--model",
        "llama-3-8b",
        "--concurrency",
        "25",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.stderr
    assert table_rows(result.stdout)["output_tok_s_total"][0] == "1"


def test_calibrate_genai_perf_json_with_an_empty_model_list(
    tmp_path: Path, known_point: dict[str, Any]
) -> None:
    data = json.loads(genai_perf_json(known_point, "", 8))
    data["input_config"]["model"] = []
    export = tmp_path / "profile_export_genai_perf.json"
    export.write_text(json.dumps(data))
    result = invoke(
        *CALIBRATE,
        "--data",
        export,
        *GENAI_FLAGS,
        "--model",
        "llama-3-8b",
        "--out",
        tmp_path / "out.yaml",
    )
    assert result.exit_code in (0, 1), result.stderr


HEADER = ",".join(MEASUREMENT_COLUMNS)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("missing.csv", None, "missing.csv: file not found"),
        ("no-metric.csv", "model,gpu,value\nllama-3-8b,h100-sxm,3\n", "missing column(s) metric"),
        ("header-only.csv", HEADER + "\n", "header-only.csv: no usable rows (empty)"),
        ("export.json", "{bad", "export.json:1:2: invalid JSON"),
        ("export2.json", '{"x": 1}', "export2.json: no GenAI-Perf metrics found"),
        ("bytes.csv", b"\xff\xfe\x00bad", "bytes.csv: is not UTF-8 text"),
        (
            "unknown-model.csv",
            HEADER + "\ns,d,llama-9,h100-sxm,1,fp8,,1,1,,100,100,1,itl_ms_avg,5,ms,NIM,x,\n",
            "unknown-model.csv: no usable rows (unknown model 'llama-9')",
        ),
    ],
)
def test_calibrate_bad_data_leaves_no_file(
    tmp_path: Path, name: str, text: str | bytes | None, message: str
) -> None:
    data = tmp_path / name
    if isinstance(text, bytes):
        data.write_bytes(text)
    elif text is not None:
        data.write_text(text)
    out = tmp_path / "out.yaml"
    result = invoke(*CALIBRATE, "--data", data, "--out", out)
    assert_one_line_error(result, 1, name, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name] if text is not None else [])


def test_calibrate_bad_value_names_the_file(tmp_path: Path) -> None:
    data = tmp_path / "runs.csv"
    data.write_text(
        HEADER + "\ns,d,llama-3-8b,h100-sxm,1,fp8,,1,1,,100,100,1,itl_ms_avg,abc,ms,NIM,x,\n"
    )
    out = tmp_path / "out.yaml"
    result = invoke(*CALIBRATE, "--data", data, "--out", out)
    assert not out.exists()
    assert_one_line_error(result, 1, "runs.csv", "row 2", "value")


def test_calibrate_never_overwrites_its_output(tmp_path: Path) -> None:
    out = tmp_path / "calibration.yaml"
    out.write_text("keep: me\n")
    export = PERF / "profile_export_genai_perf.json"
    result = invoke(*CALIBRATE, "--data", export, *GENAI_FLAGS, "--out", out)
    assert_one_line_error(result, 1, str(out), "already exists")
    assert out.read_text() == "keep: me\n"
    assert [p.name for p in tmp_path.iterdir()] == ["calibration.yaml"]


def test_calibrate_unknown_hardware_and_missing_flags(tmp_path: Path) -> None:
    export = PERF / "profile_export_genai_perf.json"
    out = tmp_path / "out.yaml"
    result = invoke(
        "calibrate",
        "--data",
        export,
        "--hardware",
        "h900",
        "--precision",
        "fp8",
        *GENAI_FLAGS,
        "--out",
        out,
    )
    assert_one_line_error(result, 1, "unknown hardware (GPU or system) 'h900'")
    result = invoke("calibrate", "--data", export, "--hardware", "h100-sxm", "--out", out)
    assert result.exit_code == 2 and "--precision" in result.stderr
    assert not out.exists()


# ---------------------------------------------------------------------------------------------
# validate
# ---------------------------------------------------------------------------------------------

SMALL = PERF / "measurements_small.csv"  # rows 862-871 of data/calibration + 2 unmappable rows
VALIDATE_KEYS = {
    "rows",
    "predicted",
    "unmapped",
    "unmapped_by_reason",
    "by_metric",
    "by_source",
    "by_deployment",
    "efficiency_sets",
    "steady_state",
    "repeat_runs",
    "seconds",
}
SUMMARY_KEYS = {"group", "n", "median_ape", "p90_ape", "within_10", "within_25"}


def expected_summaries() -> dict[str, dict[str, float]]:
    """Each metric of the fixture's two NIM points (Llama-3-8B fp16 TP2 on A100, 200 / 1000
    tokens, 5 and 50 clients) against `estimate` at the same points (nim-2024, the set of the
    rows' engine): APE, then median and p90 of two values."""
    measured = [r for r in csv.DictReader(SMALL.open()) if r["model"] == "Llama-3-8B"]
    measured = [r for r in measured if r["gpu"] == "A100-SXM-80GB"]
    assert len(measured) == 10
    apes: dict[str, list[float]] = {}
    for clients in ("5", "50"):
        pred = estimate_json(
            "--model",
            "llama-3-8b",
            "--hardware",
            "a100-sxm-80gb",
            "--precision",
            "fp16",
            "--tp",
            "2",
            "--isl",
            "200",
            "--osl",
            "1000",
            "--concurrency",
            clients,
        )
        for r in measured:
            if r["concurrency_or_batch"] == clients:
                value = float(r["value"])
                predicted = pred[METRIC_KEYS[r["metric"]]]
                apes.setdefault(r["metric"], []).append(abs(predicted - value) / value)
    out = {}
    for metric, (a, b) in apes.items():
        lo, hi = sorted((a, b))
        out[metric] = {
            "n": 2,
            "median_ape": (lo + hi) / 2,
            "p90_ape": lo + 0.9 * (hi - lo),
            "within_10": ((a <= 0.10) + (b <= 0.10)) / 2,
            "within_25": ((a <= 0.25) + (b <= 0.25)) / 2,
        }
    return out


def test_validate_json_counts_lists_and_summaries() -> None:
    result = invoke("validate", "--data", SMALL, "--format", "json")
    data = json.loads(ok(result))
    assert set(data) == VALIDATE_KEYS
    assert data["rows"] == 12
    assert data["predicted"] == 10
    assert data["unmapped"] == [
        {
            "row": 12,
            "source": "nvidia_dli_nim",
            "model": "Llama-9-999B",
            "gpu": "A100-SXM-80GB",
            "metric": "ttft_ms_avg",
            "reason": "unknown model 'Llama-9-999B'",
        },
        {
            "row": 13,
            "source": "nvidia_dli_nim",
            "model": "Llama-3-8B",
            "gpu": "Z900-SXM-80GB",
            "metric": "e2e_ms_avg",
            "reason": "unknown GPU 'Z900-SXM-80GB'",
        },
    ]
    expected = expected_summaries()
    assert [g["group"] for g in data["by_metric"]] == sorted(METRIC_KEYS)
    for group in data["by_metric"]:
        assert set(group) == SUMMARY_KEYS
        want = expected[group["group"]]
        assert group["n"] == want["n"]
        for key in ("median_ape", "p90_ape", "within_10", "within_25"):
            assert group[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), (group, key)
        assert group["median_ape"] <= group["p90_ape"]
        assert group["within_10"] <= group["within_25"]
    # one source: the per-source table is the per-metric one
    assert [g["group"] for g in data["by_source"]] == [
        f"nvidia_dli_nim · {m}" for m in sorted(METRIC_KEYS)
    ]
    assert [{**g, "group": None} for g in data["by_source"]] == [
        {**g, "group": None} for g in data["by_metric"]
    ]
    # every mapped row is a NIM 1.0.x row of the DLI course: the nim-2024 set predicts it
    assert data["efficiency_sets"] == [
        {
            "engine": "NIM (TRT-LLM backend)",
            "engine_version": "NIM llama3 1.0.x (2024)",
            "efficiency": "nim-2024",
            "rows": 10,
        }
    ]
    # Little's law on the two measured points: 0.571205 req/s × 8.75147 s = 5.00 clients,
    # 3.82017 × 13.0778 = 49.96: both in steady state
    steady = data["steady_state"]
    assert steady["checked"] == 2 and steady["off"] == []
    assert steady["by_metric"] == data["by_metric"]
    assert data["repeat_runs"] == []  # every point measured once
    assert data["seconds"] >= 0


def test_validate_reports_how_far_repeat_runs_differ(tmp_path: Path) -> None:
    """A second run of the fixture's 5-client point, its TTFT 10 % higher and its req/s 1 %
    lower: the repeat table shows 10 % and 1 % (|later / first − 1|), in JSON and as a table.
    (A run that repeats a value exactly is dropped as file overlap, like any duplicate row.)"""
    lines = SMALL.read_text().splitlines()
    first = [ln for ln in lines if ",200.0,1000.0,5," in ln and "Llama-3-8B,A100" in ln]
    ttft = next(ln for ln in first if ",ttft_ms_avg," in ln)
    rate = next(ln for ln in first if ",req_per_s," in ln)

    def rerun(line: str, factor: float) -> str:
        text = next(csv.reader([line]))[14]
        return line.replace(f",{text},", f",{float(text) * factor!r},")

    again = [rerun(ttft, 1.1), rerun(rate, 0.99)]
    data_file = tmp_path / "with_repeats.csv"
    data_file.write_text("\n".join([*lines, *again]) + "\n")
    data = json.loads(ok(invoke("validate", "--data", data_file, "--format", "json")))
    got = {r["metric"]: r for r in data["repeat_runs"]}
    assert sorted(got) == ["req_per_s", "ttft_ms_avg"]
    assert got["ttft_ms_avg"]["pairs"] == got["ttft_ms_avg"]["points"] == 1
    assert got["ttft_ms_avg"]["max"] == pytest.approx(0.1, rel=1e-9)
    assert got["req_per_s"]["median"] == pytest.approx(0.01, rel=1e-9)
    out = ok(invoke("validate", "--data", data_file))
    assert "run-to-run difference" in out
    assert table_rows(out.split("run-to-run difference")[1])["ttft_ms_avg"][:5] == [
        "1",
        "1",
        "10.0%",
        "10.0%",
        "10.0%",
    ]


def test_validate_table_prints_the_tables_and_the_unmapped_rows() -> None:
    result = invoke("validate", "--data", SMALL)
    out = ok(result)
    assert result.stderr == ""
    assert "accuracy by metric" in out
    assert "accuracy by source and metric" in out
    rows = table_rows(out.split("accuracy by source and metric")[0])
    assert {m: rows[m][0] for m in METRIC_KEYS} == dict.fromkeys(METRIC_KEYS, "2")
    assert (
        "NIM (TRT-LLM backend) NIM llama3 1.0.x (2024): 10 rows predicted with efficiency set"
        " nim-2024" in out
    )
    assert "12 rows read, 10 predicted in " in out
    assert ", 2 not mappable" in out
    assert (
        "  row 12 (nvidia_dli_nim, Llama-9-999B, ttft_ms_avg): unknown model 'Llama-9-999B'" in out
    )
    assert "  row 13 (nvidia_dli_nim, Llama-3-8B, e2e_ms_avg): unknown GPU 'Z900-SXM-80GB'" in out


def test_validate_bad_input(tmp_path: Path) -> None:
    assert_one_line_error(
        invoke("validate", "--data", tmp_path / "none.csv"), 1, "none.csv: file not found"
    )
    result = invoke("validate", "--data", SMALL, "--format", "xml")
    assert result.exit_code == 2 and "'xml' is not one of table, json, yaml, csv" in result.stderr
