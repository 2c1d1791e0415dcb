"""`infersize calibrate --kernels DIR`: a round trip on small synthetic tables whose latencies
come from known parameters (the fit must find them again and say so), the output rules of
every written file, and one-line errors naming file, line and column."""

from __future__ import annotations

import csv
import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from inferencesize.cli import app
from inferencesize.io_kernels import read_kernel_fit
from inferencesize.kernels import GemmParams, gemm_bytes, gemm_time_s
from inferencesize.kernels_attention import (
    GenerationAttentionParams,
    generation_attention_bytes,
    generation_attention_flops,
    generation_attention_time_s,
)

runner = CliRunner()
H100 = (989.5e12, 3.35e12)  # dense BF16 FLOP/s, HBM bytes/s (hardware/gpus/h100-sxm.yaml)
TRUE_GEMM = GemmParams(0.8, 64.0, 96.0, 128.0, 0.75, 3e-6)
TRUE_DECODE = GenerationAttentionParams(0.85, 16.0, 48.0, 0.1, 6e-6)


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def assert_one_line_error(result: Result, code: int, *needles: str) -> None:
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def _write(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def gemm_table(folder: Path, gpu: str = "h100_sxm", dtype: str = "bfloat16") -> Path:
    """GEMM latencies (ms) of ``TRUE_GEMM`` on the H100 datasheet, over a grid of shapes."""
    sizes = [1.0, 8.0, 32.0, 128.0, 512.0, 2048.0, 8192.0]
    m, n, k = (a.ravel() for a in np.meshgrid(sizes, sizes[2:], sizes[2:], indexing="ij"))
    ms = 1e3 * gemm_time_s(m, n, k, gemm_bytes(m, n, k, "bfloat16"), *H100, TRUE_GEMM)
    header = ["gpu", "framework", "gemm_dtype", "m", "n", "k", "latency"]
    rows = [[gpu, "MyEngine", dtype, *map(int, s), t] for *s, t in zip(m, n, k, ms, strict=True)]
    return _write(folder / "gemm_perf.csv", header, rows)


def decode_table(folder: Path) -> Path:
    """Decode attention latencies (ms) of ``TRUE_DECODE`` on the H100 datasheet."""
    batch, step, kv_heads = (
        a.ravel()
        for a in np.meshgrid(
            [1.0, 8.0, 64.0, 512.0], [0.0, 15.0, 255.0, 4095.0, 32767.0], [1.0, 8.0]
        )
    )
    heads = 128.0 * kv_heads
    kv_len = step + 1
    flops = generation_attention_flops(batch, kv_len, heads, 128.0)
    moved = generation_attention_bytes(batch, kv_len, heads, kv_heads, 128.0, 2.0)
    ms = 1e3 * generation_attention_time_s(
        flops, moved, kv_len, batch * kv_heads, *H100, TRUE_DECODE
    )
    header = [
        "gpu", "framework", "attn_dtype", "kv_cache_dtype", "batch_size", "isl", "step",
        "num_heads", "num_key_value_heads", "head_dim", "window_size", "latency",
    ]  # fmt: skip
    rows = [
        [
            "h100-sxm",
            "MyEngine",
            "bfloat16",
            "bfloat16",
            int(b),
            1,
            int(s),
            int(h),
            int(kv),
            128,
            "",
            t,
        ]
        for b, s, h, kv, t in zip(batch, step, heads, kv_heads, ms, strict=True)
    ]
    return _write(folder / "generation_attention_perf.csv", header, rows)


def test_round_trip_finds_the_parameters_it_was_given(tmp_path: Path) -> None:
    tables = tmp_path / "kernels"
    tables.mkdir()
    gemm_table(tables)
    decode_table(tables)  # GPU named by its catalog id, window blank = full
    out = tmp_path / "fit.json"
    result = invoke("calibrate", "--kernels", tables, "--out", out, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip().endswith(f"wrote {out}")
    record = json.loads(result.stdout)
    families = {f["family"]: f for f in record["families"]}
    assert set(families) == {"gemm", "gemm_from_10us", "generation_attention"}
    for family in families.values():
        assert family["median_error"] < 0.01  # synthetic rows: the model is exact
        assert "left_one_gpu_out_median_error" not in family  # one GPU: nothing to leave out
    fit = read_kernel_fit(out)
    got = fit.gemm[("h100-sxm", "MyEngine", "bfloat16")]
    for f in fields(GemmParams):
        assert getattr(got, f.name) == pytest.approx(getattr(TRUE_GEMM, f.name), rel=0.02)
    decode = fit.generation_attention[("h100-sxm", "MyEngine", "bfloat16", "bfloat16")]
    assert decode.eta_mem == pytest.approx(TRUE_DECODE.eta_mem, rel=0.02)
    document = json.loads(out.read_text(encoding="utf-8"))
    assert {e["table"] for e in document["entries"]} == {
        "gemm_perf.csv",
        "generation_attention_perf.csv",
    }
    # the table format names each family
    table = invoke("calibrate", "--kernels", tables, "--out", tmp_path / "again.json")
    assert table.exit_code == 0 and "generation_attention" in table.stdout


def test_never_overwrites_without_force(tmp_path: Path) -> None:
    gemm_table(tmp_path)
    out = tmp_path / "fit.json"
    out.write_text("mine\n", encoding="utf-8")
    result = invoke("calibrate", "--kernels", tmp_path, "--out", out)
    assert_one_line_error(result, 1, "--out", str(out))
    assert out.read_text(encoding="utf-8") == "mine\n"
    result = invoke("calibrate", "--kernels", tmp_path, "--out", out, "--force")
    assert result.exit_code == 0, result.stderr
    assert read_kernel_fit(out).gemm
    # an input table is never an output
    result = invoke(
        "calibrate", "--kernels", tmp_path, "--out", tmp_path / "gemm_perf.csv", "--force"
    )
    assert result.exit_code == 1 and "gemm_perf.csv" in result.stderr


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda rows: rows[3].__setitem__(0, "h900"), "line 4: column 'gpu': unknown GPU 'h900'"),
        (
            lambda rows: rows[2].__setitem__(2, "fp6"),
            "line 3: column 'gemm_dtype': unknown 'fp6'",
        ),
        (
            lambda rows: rows[5].__setitem__(6, "fast"),
            "line 6: column 'latency': expected a number, got 'fast'",
        ),
        (lambda rows: rows[5].__setitem__(6, "0"), "line 6: column 'latency': expected a time > 0"),
        (lambda rows: rows[4].pop(), "line 5: 6 fields, the header has 7"),
        (lambda rows: rows[0].remove("k"), "line 1: column 'k' is missing"),
        (lambda rows: rows.__delitem__(slice(6, None)), "5 rows, a fit needs at least 8"),
    ],
)
def test_bad_tables_are_one_line_errors(tmp_path: Path, edit: object, expected: str) -> None:
    path = gemm_table(tmp_path)
    rows = list(csv.reader(path.open(encoding="utf-8")))
    edit(rows)  # type: ignore[operator]
    _write(path, rows[0], rows[1:])
    out = tmp_path / "fit.json"
    result = invoke("calibrate", "--kernels", tmp_path, "--out", out)
    assert_one_line_error(result, 1, "gemm_perf.csv", expected)
    assert not out.exists()


def test_folder_errors_and_flag_mixes(tmp_path: Path) -> None:
    out = tmp_path / "fit.json"
    assert_one_line_error(
        invoke("calibrate", "--kernels", tmp_path, "--out", out), 1, "no kernel table"
    )
    missing = tmp_path / "nowhere"
    assert_one_line_error(
        invoke("calibrate", "--kernels", missing, "--out", out), 1, "not a folder"
    )
    result = invoke("calibrate", "--kernels", tmp_path, "--hardware", "h100-sxm", "--out", out)
    assert_one_line_error(result, 2, "--kernels", "leave out --hardware")
    result = invoke("calibrate", "--hardware", "h100-sxm", "--out", out)
    assert_one_line_error(result, 2, "missing --data, --precision")
    assert not out.exists()
