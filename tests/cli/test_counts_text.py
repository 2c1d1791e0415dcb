"""Counts in the tables read as English: '1 instance', '1 GPU', never '1 instances' or
'GPU(s)'; big counts carry thousands separators in tables and none in JSON."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()
#: One instance on one GPU is enough (asserted below). Requests of 1,000/200 tokens: with
#: 100/100 the KV cache holds thousands of them and each plan took seconds of open-loop points.
SMALL = [
    "plan",
    "--model",
    "llama-3-8b",
    "--isl",
    "1000",
    "--osl",
    "200",
    "--mean-rps",
    "1",
    "--ttft-ms",
    "2000",
    "--hardware",
    "h100-sxm",
    "--tp",
    "1",
]


def run(args: list[str]) -> str:
    result = runner.invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "1000"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_one_of_each_is_singular() -> None:
    rec = json.loads(run([*SMALL, "-f", "json"]))
    assert (rec["plan"]["instances"], rec["plan"]["gpus"]) == (1, 1)  # the question's premise
    text = run(SMALL)
    assert "1 of 8 GPUs used" in text and "· 1 instance " in text + " "
    assert re.search(r"tp1 pp1 ep1 · 1 GPU\b", text)
    for wrong in ("1 instances", "1 GPUs", "(s)"):
        assert wrong not in text


def test_simulate_names_one_instance() -> None:
    args = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--rate", "4"]
    text = run(args)
    assert "· 1 instance," in text and "instance(s)" not in text


def test_big_counts_have_separators_in_the_table_only() -> None:
    args = [
        "plan",
        "--model",
        "llama-3-8b",
        "--isl",
        "1000",
        "--osl",
        "200",
        "--mean-rps",
        "20000",
        "--ttft-ms",
        "2000",
        "--itl-ms",
        "50",
        "--hardware",
        "h100-sxm",
        "--tp",
        "1,2",
        "--top",
        "3",
    ]
    rec = json.loads(run([*args, "-f", "json"]))
    big = [p["gpus"] for p in [rec["plan"], *rec["alternatives"]] if p["gpus"] >= 1000]
    assert big  # 20,000 req/s need more than 1,000 GPUs for some option: the premise
    text = run(args)
    for gpus in big:
        assert f"{gpus:,}" in text and not re.search(rf"\b{gpus}\b", text)
    assert f"peak {rec['peak_rps']:,.0f} req/s" in text  # 20,233, not 2.023e+04
    check = ["check", *args[1:-2], "--max-power-kw", "100"]  # --top is plan's
    over = runner.invoke(app, check, env={"NO_COLOR": "1"})
    assert over.exit_code == 4 and rec["plan"]["power_kw"] > 1000  # the premise
    assert re.search(r": kW \d{1,3}(,\d{3})+ > 100 \(over by [\d,.]+\)$", over.stderr.strip())
    raw = run([*args, "-f", "json"])
    assert not re.search(r"\d,\d{3}", raw.replace(", ", ""))  # JSON numbers stay plain


def test_one_rejected_candidate_and_simulated_request_counts() -> None:
    args = ["plan", "--model", "llama-3.1-70b", "--hardware", "dgx-h100,dgx-b200"]
    args += ["--isl", "1000", "--osl", "300", "--requests", "1e6", "--deadline-h", "12"]
    rec = json.loads(run([*args, "-f", "json"]))
    n = len(rec["rejected"])
    text = run(args)
    word = "candidate" if n == 1 else "candidates"
    assert f"\n{n} {word} rejected (--explain lists them)" in text
    sim = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--rate", "8"]
    out = run([*sim, "--requests", "5000"])
    assert "5,000 (4,500 measured after warm-up)" in out
