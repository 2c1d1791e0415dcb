"""`infersize plan --share-gpus`: several instances of a small model per GPU in the JSON record
and the table, and the scenario field that asks for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()

ARGS = [
    *("plan", "--model", "llama-3-8b", "--hardware", "dgx-h100", "--precision", "fp8"),
    *("--isl", "128", "--osl", "128", "--ttft-ms", "300", "--itl-ms", "30"),
]


def _json(*extra: str) -> dict[str, Any]:
    result = runner.invoke(app, [*ARGS, *extra, "--format", "json", "--top", "20"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_shared_plans_carry_their_share_and_count_whole_gpus() -> None:
    data = _json("--peak-rps", "30", "--share-gpus")
    plans = [data["plan"], *data["alternatives"]]
    shared = [p for p in plans if p["gpu_share"] is not None]
    kinds = {p["gpu_share"]["kind"] for p in shared}
    assert kinds == {"mig", "shared"}
    for p in shared:
        s = p["gpu_share"]
        assert p["tp"] == p["pp"] == 1
        assert p["gpus"] == -(-p["instances"] // s["instances_per_gpu"])
        if s["kind"] == "mig":
            g = int(s["profile"].split("g.")[0])
            assert s["compute_share"] == g / 7
        else:
            assert s["profile"] is None
            assert s["compute_share"] == s["memory_share"] == 1 / s["instances_per_gpu"]
    mig = next(p for p in shared if p["gpu_share"]["profile"] == "2g.20gb")
    assert mig["gpu_share"]["memory_share"] == 2 / 8 and mig["gpu_share"]["instances_per_gpu"] == 3


def test_without_the_flag_no_plan_shares_a_gpu() -> None:
    data = _json("--peak-rps", "30")
    assert all(p["gpu_share"] is None for p in [data["plan"], *data["alternatives"]])


def test_the_table_says_how_instances_sit_on_gpus() -> None:
    # sized for closed-loop clients (TTFT-bound), where two processes on one GPU win
    flags = ("--peak-rps", "100", "--share-gpus", "--arrivals", "closed-loop")
    result = runner.invoke(app, [*ARGS, *flags, "--top", "20"])
    assert result.exit_code == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "mig 2g.20gb ×3/GPU" in out  # an alternative on MIG slices
    data = _json(*flags)
    p = data["plan"]  # two processes per GPU need one GPU where whole-GPU instances need two
    assert p["gpu_share"] is not None and p["gpu_share"]["kind"] == "shared"
    k = p["gpu_share"]["instances_per_gpu"]
    assert f"{p['instances']} instances, {k} per GPU" in out
    assert f"1/{k} of a GPU's SMs" in out


def test_a_scenario_asks_for_shares(tmp_path: Path) -> None:
    path = tmp_path / "small.yaml"
    path.write_text(
        "id: small\nmodel: llama-3-8b\nisl: 128\nosl: 128\npeak_rps: 30\nttft_ms: 300\n"
        "itl_ms: 30\nhardware: [dgx-h100]\nprecision: [fp8]\nshare_gpus: true\n",
        encoding="utf-8",
    )
    # (three alternatives hold a shared and a MIG plan; the flag tests above list all twenty)
    result = runner.invoke(app, ["plan", str(path), "--format", "json", "--top", "3"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert any(p["gpu_share"] for p in [data["plan"], *data["alternatives"]])
