"""The kernel tier: fits recover known parameters, predictions are monotone and bounded, a GPU
without kernels runs its architecture's fit on its own datasheet, the loader rejects bad
files by file, line and column, and the shipped fit reproduces measured rows."""

from __future__ import annotations

import gzip
import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from inferencesize.errors import InputError
from inferencesize.io_kernels import GEMM_COLUMNS, read_kernel_table
from inferencesize.kernel_fit import (
    COLLECTIVE_LOWER,
    COLLECTIVE_UPPER,
    GEMM_LOWER,
    GEMM_UPPER,
    fit_collective,
    fit_gemm,
)
from inferencesize.kernels import (
    CollectiveParams,
    GemmParams,
    collective_time_s,
    gemm_bytes,
    gemm_time_s,
    traffic_factor,
    transferred,
)

ROOT = Path(__file__).resolve().parents[2]
H100_BF16_FLOPS = 989.5e12  # hardware/gpus/h100-sxm.yaml, dense BF16
H100_HBM = 3.35e12  # bytes/s
TRUE_GEMM = GemmParams(
    eta_max=0.8, m_half=64.0, n_half=96.0, k_half=128.0, eta_mem=0.75, launch_s=3e-6
)


def _grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sizes = np.array([1, 4, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384], dtype=float)
    m, n, k = np.meshgrid(sizes, sizes[3:], sizes[3:], indexing="ij")
    return m.ravel(), n.ravel(), k.ravel()


def test_gemm_fit_recovers_known_parameters() -> None:
    m, n, k = _grid()
    moved = gemm_bytes(m, n, k, "bfloat16")
    latency = gemm_time_s(m, n, k, moved, H100_BF16_FLOPS, H100_HBM, TRUE_GEMM)
    fit = fit_gemm(m, n, k, moved, H100_BF16_FLOPS, H100_HBM, latency)
    for f in fields(GemmParams):
        assert getattr(fit, f.name) == pytest.approx(getattr(TRUE_GEMM, f.name), rel=0.02), f.name


def test_collective_fit_recovers_known_parameters() -> None:
    true = CollectiveParams(alpha_s=8e-6, eta_link=0.3, bulk_extra_s=12e-6, eta_bulk=0.8)
    message = 2.0 ** np.arange(8, 30)
    link = 450e9  # H100 NVLink 900 GB/s bidirectional, per direction
    latency = collective_time_s("all_reduce", 8, message, link, true)
    fit = fit_collective("all_reduce", 8, message, link, latency)
    for f in fields(CollectiveParams):
        assert getattr(fit, f.name) == pytest.approx(getattr(true, f.name), rel=0.02), f.name


def test_bytes_and_traffic_by_hand() -> None:
    # bf16 1 × 4096 × 4096: 4096·2 + 4096·4096·2 + 4096·2 bytes
    assert float(gemm_bytes(1.0, 4096.0, 4096.0, "bfloat16")) == 2 * 4096 + 2 * 4096**2 + 2 * 4096
    # fp8 in, bf16 out: 16·64·1 + 64·32·1 + 16·32·2
    assert float(gemm_bytes(16.0, 32.0, 64.0, "fp8")) == 16 * 64 + 64 * 32 + 16 * 32 * 2
    assert float(traffic_factor("all_reduce", 8)) == pytest.approx(2 * 7 / 8)
    assert float(traffic_factor("all_gather", 4)) == pytest.approx(3 / 4)


def test_gemm_compute_bound_limit_by_hand() -> None:
    # launch 0, huge dimensions: t -> 2mnk / (eta_max · peak)
    p = GemmParams(0.5, 1.0, 1.0, 1.0, 1.0, 0.0)
    big = 1e6
    t = float(gemm_time_s(big, big, big, 0.0, 1e15, 1e12, p))
    assert t == pytest.approx(2 * big**3 / (0.5 * 1e15), rel=1e-5)


def _random_params(rng: np.random.Generator) -> GemmParams:
    lo = np.array([getattr(GEMM_LOWER, f.name) for f in fields(GemmParams)])
    hi = np.array([getattr(GEMM_UPPER, f.name) for f in fields(GemmParams)])
    return GemmParams(*(float(v) for v in rng.uniform(lo + 1e-3 * (hi - lo), hi)))


@pytest.mark.parametrize("seed", range(5))
def test_gemm_time_is_monotone_in_each_dimension(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = _random_params(rng)
    sizes = 2.0 ** np.arange(0, 17)
    base = rng.uniform(1, 8192, size=2)
    for axis in range(3):
        dims = [np.full_like(sizes, base[0]), np.full_like(sizes, base[1])]
        dims.insert(axis, sizes)
        m, n, k = dims
        t = gemm_time_s(m, n, k, gemm_bytes(m, n, k, "fp8"), 1979e12, 3.35e12, p)
        assert np.all(np.diff(t) >= 0), axis


def test_collective_time_is_monotone_in_message_size() -> None:
    message = 2.0 ** np.arange(0, 32)
    for kind in ("all_reduce", "all_gather", "reduce_scatter", "alltoall"):
        t = collective_time_s(kind, 4, message, 450e9, CollectiveParams(5e-6, 0.3, 10e-6, 0.9))
        assert np.all(np.diff(t) > 0)


def test_fits_stay_within_physical_bounds() -> None:
    # a "GPU" twice as fast as its datasheet: the share cannot exceed 1, it saturates
    m, n, k = _grid()
    moved = gemm_bytes(m, n, k, "bfloat16")
    fast = GemmParams(1.0, 64.0, 96.0, 128.0, 0.75, 3e-6)
    latency = gemm_time_s(m, n, k, moved, 2 * H100_BF16_FLOPS, H100_HBM, fast)
    fit = fit_gemm(m, n, k, moved, H100_BF16_FLOPS, H100_HBM, latency)
    for f in fields(GemmParams):
        assert getattr(GEMM_LOWER, f.name) <= getattr(fit, f.name) <= getattr(GEMM_UPPER, f.name)
    assert fit.eta_max == pytest.approx(1.0, abs=1e-6)
    # a latency far below any bandwidth: alpha cannot go negative
    message = 2.0 ** np.arange(8, 20)
    flat = np.full_like(message, 1e-7)
    c = fit_collective("all_gather", 2, message, 1e12, flat)
    for f in fields(CollectiveParams):
        assert getattr(COLLECTIVE_LOWER, f.name) <= getattr(c, f.name)
        assert getattr(c, f.name) <= getattr(COLLECTIVE_UPPER, f.name)


def test_gpu_without_kernels_takes_its_architecture_on_its_datasheet() -> None:
    h100 = GemmParams(0.8, 64.0, 64.0, 64.0, 0.8, 3e-6)
    h200 = GemmParams(0.8, 64.0, 64.0, 64.0, 0.8, 3e-6)
    a100 = GemmParams(0.9, 100.0, 100.0, 100.0, 0.7, 5e-6)
    fits = {"h100-sxm": h100, "h200-sxm": h200, "a100-sxm-80gb": a100}
    arch = {"h100-sxm": "hopper", "h200-sxm": "hopper", "a100-sxm-80gb": "ampere"}
    own, label = transferred("a100-sxm-80gb", "ampere", fits, arch)
    assert (own, label) == (a100, "measured")
    h20, label = transferred("h20", "hopper", fits, arch)
    assert label == "same architecture"
    assert h20.eta_max == pytest.approx(0.8)
    # scaled by its own datasheet: H20 BF16 148 TFLOPS, 4.0 TB/s vs H100 989.5, 3.35
    big = 8192.0
    moved = gemm_bytes(big, big, big, "bfloat16")
    t_h20 = float(gemm_time_s(big, big, big, moved, 148e12, 4.0e12, h20))
    t_h100 = float(gemm_time_s(big, big, big, moved, 989.5e12, 3.35e12, h100))
    assert (t_h20 - h20.launch_s) / (t_h100 - h100.launch_s) == pytest.approx(989.5 / 148)
    mi300, label = transferred("mi300x", "cdna3", fits, arch)
    assert label == "all GPUs"
    assert 0.8 < mi300.eta_max < 0.9  # the log-space average of 0.8, 0.8, 0.9


def _write_gz(path: Path, text: str) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    return path


HEADER = "gpu,device,framework,gemm_dtype,m,n,k,latency,source_detail\n"


def test_loader_reads_columns(tmp_path: Path) -> None:
    path = _write_gz(tmp_path / "g.csv.gz", HEADER + "h100_sxm,VLLM,0.1,fp8,1,2,3,0.5,x\n")
    table = read_kernel_table(path, *GEMM_COLUMNS)
    assert len(table) == 1
    assert table.text["gemm_dtype"] == ["fp8"]
    assert table.numbers["k"].tolist() == [3.0]


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("h100_sxm,VLLM,0.1,fp8,1,2,three,0.5,x", "line 3: column 'k': expected a number"),
        ("h100_sxm,VLLM,0.1,fp8,1,2,3,-1,x", "line 3: column 'latency': expected a finite"),
        ("h100_sxm,VLLM,0.1,fp8,1,2,3,nan,x", "line 3: column 'latency': expected a finite"),
        ("h100_sxm,VLLM,0.1,fp8,1,2,3", "line 3: 7 fields, the header has 9"),
    ],
)
def test_loader_rejects_a_malformed_row(tmp_path: Path, row: str, expected: str) -> None:
    good = "h100_sxm,VLLM,0.1,fp8,1,2,3,0.5,x\n"
    path = _write_gz(tmp_path / "bad.csv.gz", HEADER + good + row + "\n")
    with pytest.raises(InputError) as err:
        read_kernel_table(path, *GEMM_COLUMNS)
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


def test_loader_names_a_missing_column(tmp_path: Path) -> None:
    path = _write_gz(tmp_path / "g.csv.gz", "gpu,m,n\nh100_sxm,1,2\n")
    with pytest.raises(InputError, match=r"g\.csv\.gz: line 1: column 'framework' is missing"):
        read_kernel_table(path, *GEMM_COLUMNS)


# Measured rows (h100_sxm, TensorRT-LLM torch_flow, bfloat16; latency ms), from
# ai-dynamo/aiconfigurator@095f58a51c4c:aic-core/src/aiconfigurator_core/systems/data/h100_sxm/
# gemm/trtllm/1.0.0/gemm_perf.parquet via calibration/kernels/gemm_perf.csv.gz
H100_ROWS = [
    (4096, 8192, 16384, 1.3604853947957356),  # 1.10 TFLOP: 1.111 ms at peak -> 82 % of it
    (1, 4096, 65536, 0.18588266770044962),  # 537 MB of weights: 160 us at 3.35 TB/s -> 86 %
    (8, 7168, 4096, 0.024853333830833435),
    (256, 7168, 8192, 0.05067733426888784),
    (4096, 7168, 65536, 4.820901234944661),
]


def test_measured_rows_are_within_the_datasheet() -> None:
    for m, n, k, ms in H100_ROWS:
        compute_s = 2 * m * n * k / H100_BF16_FLOPS
        memory_s = float(gemm_bytes(m, n, k, "bfloat16")) / H100_HBM
        assert max(compute_s, memory_s) < ms * 1e-3  # no kernel beats the datasheet roofline


def test_shipped_fit_reproduces_measured_rows() -> None:
    document = json.loads((ROOT / "data" / "kernels" / "fit.json").read_text(encoding="utf-8"))
    entries = document["entries"]
    assert {e["catalog_id"] for e in entries} >= {"h100-sxm", "b200", "a100-sxm-80gb", "l40s"}
    assert all(e["rows"] > 0 and "aiconfigurator@" in e["source"] for e in entries)
    (entry,) = [
        e
        for e in entries
        if (e["family"], e["gpu"], e.get("engine"), e.get("dtype"))
        == ("gemm", "h100_sxm", "TRTLLM", "bfloat16")
    ]
    p = GemmParams(**entry["params"])
    for f in fields(GemmParams):
        assert getattr(GEMM_LOWER, f.name) <= getattr(p, f.name) <= getattr(GEMM_UPPER, f.name)
    m, n, k, ms = (np.array(c, dtype=float) for c in zip(*H100_ROWS, strict=True))
    pred = gemm_time_s(m, n, k, gemm_bytes(m, n, k, "bfloat16"), H100_BF16_FLOPS, H100_HBM, p)
    assert np.all(np.abs(pred / (ms * 1e-3) - 1) < 0.3)


def test_any_catalog_gpu_gets_gemm_parameters_from_the_shipped_fit() -> None:
    from shipped import catalog

    from inferencesize.io_kernels import read_kernel_fit
    from inferencesize.kernels import collective_params_for, gemm_params_for

    fit = read_kernel_fit(ROOT / "data" / "kernels" / "fit.json")
    gpus = catalog().gpus
    arch = {gpu_id: spec.architecture for gpu_id, spec in gpus.items()}
    h100 = fit.gemm[("h100-sxm", "TRTLLM", "bfloat16")]
    h200 = fit.gemm[("h200-sxm", "TRTLLM", "bfloat16")]

    own = gemm_params_for("h100-sxm", "hopper", "TRTLLM", "bfloat16", fit.gemm, arch)
    assert own == (h100, "measured")
    # H20 (Hopper, no kernels): the log-space mean of H100 and H200, on its own datasheet
    got = gemm_params_for("h20", gpus["h20"].architecture, "TRTLLM", "bfloat16", fit.gemm, arch)
    assert got is not None
    h20, label = got
    assert label == "same architecture"
    assert h20.eta_max == pytest.approx((h100.eta_max * h200.eta_max) ** 0.5)
    assert h20.launch_s == pytest.approx((h100.launch_s * h200.launch_s) ** 0.5)
    big = 16384.0
    moved = gemm_bytes(big, big, big, "bfloat16")
    peak = gpus["h20"].dense_flops.bf16
    assert peak is not None
    t = float(gemm_time_s(big, big, big, moved, peak, gpus["h20"].hbm_bandwidth_bytes_per_s, h20))
    assert t > 2 * big**3 / peak  # never faster than its own datasheet
    # MI300X (an architecture never measured): the average of every fitted GPU
    got = gemm_params_for("mi300x", "cdna3", "TRTLLM", "bfloat16", fit.gemm, arch)
    assert got is not None and got[1] == "all GPUs"
    assert gemm_params_for("h20", "hopper", "TRTLLM", "no-such-dtype", fit.gemm, arch) is None
    document = json.loads((ROOT / "data" / "kernels" / "fit.json").read_text(encoding="utf-8"))
    families = [e["family"] for e in document["entries"]]
    # no two entries share a key
    assert len(fit.gemm) == families.count("gemm")
    assert len(fit.collectives) == families.count("nccl") + families.count("custom_allreduce")
    assert len(fit.context_attention) == families.count("context_attention")
    assert len(fit.generation_attention) == families.count("generation_attention")
    assert len(fit.context_mla) == families.count("context_mla")
    assert len(fit.generation_mla) == families.count("generation_mla")
    assert len(fit.moe) == families.count("moe")
    nccl = collective_params_for("h20", "hopper", "NCCL", "all_reduce", 8, fit.collectives, arch)
    assert nccl is not None and nccl[1] == "same architecture"


def test_fit_reader_names_a_malformed_entry(tmp_path: Path) -> None:
    from inferencesize.io_kernels import read_kernel_fit

    path = tmp_path / "fit.json"
    path.write_text(
        json.dumps({"entries": [{"family": "gemm", "catalog_id": "x", "engine": "e"}]}),
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"fit\.json: entries\[0\]: malformed entry"):
        read_kernel_fit(path)


def test_evaluating_the_kernel_tier_does_not_import_scipy() -> None:
    # the planning path imports inferencesize.kernels; scipy (the fits) costs startup there
    import subprocess
    import sys

    code = (
        "import sys, inferencesize.kernels, inferencesize.io_kernels;"
        "sys.exit(any(m == 'scipy' or m.startswith('scipy.') for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_leave_one_gpu_out_predicts_a_gpu_from_its_siblings_datasheet(tmp_path: Path) -> None:
    # H100 and H200 (both Hopper) run the same GEMM shares on their own datasheets: each one
    # left out is predicted from the other's fit within rounding, and both are fitted
    from shipped import catalog

    from inferencesize.kernel_calibration import fit_folder

    gpus = catalog().gpus
    m, n, k = _grid()
    lines = ["gpu,framework,gemm_dtype,m,n,k,latency"]
    for gpu in ("h100-sxm", "h200-sxm"):
        peak, bw = gpus[gpu].dense_flops.bf16, gpus[gpu].hbm_bandwidth_bytes_per_s
        assert peak is not None
        ms = 1e3 * gemm_time_s(m, n, k, gemm_bytes(m, n, k, "bfloat16"), peak, bw, TRUE_GEMM)
        lines += [
            f"{gpu},E,bfloat16,{a:g},{b:g},{c:g},{float(t)!r}" for a, b, c, t in zip(m, n, k, ms)
        ]
    (tmp_path / "gemm_perf.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = fit_folder(tmp_path, gpus)
    assert {e["catalog_id"] for e in report.entries} == {"h100-sxm", "h200-sxm"}
    for gpu in ("h100-sxm", "h200-sxm"):
        left_out = np.concatenate(report.left_out[(gpu, "gemm bfloat16")])
        assert len(left_out) == len(m) and float(np.max(left_out)) < 0.01
