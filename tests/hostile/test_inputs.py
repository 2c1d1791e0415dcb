"""Hostile inputs: every bad file, number or folder is one clean line on stderr with exit 1,
fast; never a traceback, an internal error (exit 70), a hang or a crash.

The corpus lives in ``tests/hostile/inputs/`` (small files, one problem each); inputs too large
to keep in git (a 30,000-level YAML, a 2 MiB scenario, a 40,000-entry ``layer_types``, a
200 KiB CSV field) are written by fixtures. Cases run in-process with Typer's CliRunner from
the corpus folder (messages show short relative paths); the ones that could block, crash the
interpreter or depend on the process's locale run as subprocesses with a timeout, so a hang
fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.io_measurements import point_int, read_points

INPUTS = Path(__file__).resolve().parent / "inputs"
REPO = Path(__file__).resolve().parents[2]
#: Seconds an in-process case may take (each answers in well under one).
IN_PROCESS_S = 2.0
#: Seconds a subprocess case may take: interpreter start-up plus the command.
SUBPROCESS_S = 15.0

runner = CliRunner()


class Case(NamedTuple):
    id: str
    args: list[str]
    expect: str  # a substring of the one error line
    code: int = 1


def _check(code: int, stdout: str, stderr: str, case: Case, elapsed: float, limit: float) -> None:
    lines = stderr.strip().splitlines()
    assert code == case.code, f"exit {code}, stderr: {stderr[-2000:]}"
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert len(lines) == 1, stderr[-2000:]
    assert lines[0].startswith("error: "), lines[0]
    assert case.expect in lines[0], lines[0]
    assert len(lines[0]) < 400, f"message of {len(lines[0])} characters"
    assert stdout == ""
    assert elapsed < limit, f"took {elapsed:.2f} s"


def run_in_process(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(INPUTS)
    start = time.perf_counter()
    result = runner.invoke(app, case.args)
    elapsed = time.perf_counter() - start
    _check(result.exit_code, result.stdout, result.stderr, case, elapsed, IN_PROCESS_S)


def run_process(
    args: list[str], env: dict[str, str] | None = None, cwd: Path = INPUTS
) -> tuple[int, str, str, float]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING",)}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    base["NO_COLOR"] = "1"
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "inferencesize", *args],
            capture_output=True,
            env={**base, **(env or {})},
            cwd=cwd,
            timeout=SUBPROCESS_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args} did not answer within {SUBPROCESS_S} s (a hang)")
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    return done.returncode, out, err, time.perf_counter() - start


def run_subprocess(case: Case) -> None:
    code, out, err, elapsed = run_process(case.args)
    assert code >= 0, f"killed by signal {-code} (a crash): {err[-2000:]}"
    _check(code, out, err, case, elapsed, SUBPROCESS_S)


PLAN = ["plan"]
#: A question stated by flags, its traffic left to each case.
QUESTION = [*PLAN, "--model", "llama-3.1-8b", "--isl", "500", "--osl", "200", "--ttft-ms", "1000"]
QUESTION += ["--hardware", "dgx-h100"]
STATE_PEAK = "state the peak to serve (peak_rps, --peak-rps)"
VALIDATE = ["catalog", "validate"]
ESTIMATE = ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm"]
SIMULATE = ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--trace"]
CALIBRATE = ["calibrate", "--hardware", "h100-sxm", "--precision", "fp8", "--out", "never.yaml"]

# --------------------------------------------------------------------------- YAML loader

YAML_CASES = [
    Case(
        "duplicate-key",
        [*PLAN, "scenarios/duplicate-key.yaml"],
        "scenarios/duplicate-key.yaml:4:1: isl: duplicate key (first stated on line 2)",
    ),
    Case(
        "duplicate-nested-key",
        [*PLAN, "scenarios/duplicate-nested-key.yaml"],
        "duplicate-nested-key.yaml:9:3: pue: duplicate key (first stated on line 8)",
    ),
    Case(
        "duplicate-key-gpu",
        [*VALIDATE, "hardware/gpus/duplicate-key.yaml"],
        "duplicate-key.yaml:13:1: memory: duplicate key (first stated on line 5)",
    ),
    Case(
        "duplicate-key-model",
        [*VALIDATE, "models/duplicate-key.yaml"],
        "num_layers: duplicate key (first stated on line 4)",
    ),
    Case(
        "duplicate-key-calibration",
        [*ESTIMATE, "--calibration", "calibration/duplicate-key.yaml"],
        "compute: duplicate key (first stated on line 18)",
    ),
    Case(
        "isl-true",
        [*PLAN, "scenarios/isl-true.yaml"],
        "isl-true.yaml: isl: expected a number, got true",
    ),
    Case("osl-false", [*PLAN, "scenarios/osl-false.yaml"], "osl: expected a number, got false"),
    Case("rps-true", [*PLAN, "scenarios/rps-true.yaml"], "mean_rps: expected a number, got true"),
    Case("tp-true", [*PLAN, "scenarios/tp-true.yaml"], "tp-true.yaml: tp"),
    Case(
        "layers-true",
        [*VALIDATE, "models/layers-true.yaml"],
        "num_layers: expected a number, got true",
    ),
    Case(
        "flops-true",
        [*VALIDATE, "hardware/gpus/flops-true.yaml"],
        "dense_flops.bf16: needs a number with a unit",
    ),
    Case(
        "pcie-true",
        [*VALIDATE, "hardware/gpus/pcie-true.yaml"],
        "pcie_gen: expected a number, got true",
    ),
    Case(
        "calibration-true",
        [*ESTIMATE, "--calibration", "calibration/compute-true.yaml"],
        "defaults.compute: expected a number, got true",
    ),
    Case(
        "alias-bomb",
        [*PLAN, "scenarios/alias-bomb.yaml"],
        "YAML aliases expand to more than 100,000 values",
    ),
    Case(
        "alias-deep",
        [*PLAN, "scenarios/alias-deep.yaml"],
        "nested deeper than 64 levels",
    ),
    Case("deep-block", [*PLAN, "scenarios/deep-block.yaml"], "nested deeper than 64 levels"),
    Case("deep-compact-list", [*PLAN, "scenarios/deep-compact-list.yaml"], "nested deeper than 64"),
    Case(
        "5000-digit-int",
        [*PLAN, "scenarios/isl-5000-digits.yaml"],
        "isl-5000-digits.yaml:2:6: YAML error: a number of 5,000 digits is too long to read",
    ),
    Case(
        "month-13",
        [*PLAN, "scenarios/bad-date.yaml"],
        "bad-date.yaml:7:9: YAML error: cannot read '2024-13-01'",
    ),
    Case(
        "python-tag",
        [*PLAN, "scenarios/python-tag.yaml"],
        "YAML error: could not determine a constructor for the tag",
    ),
    Case(
        "tab-indent", [*PLAN, "scenarios/tab-indent.yaml"], "tab-indent.yaml:3:1: YAML syntax error"
    ),
    Case(
        "not-utf8", [*PLAN, "scenarios/not-utf8.yaml"], "scenarios/not-utf8.yaml: is not UTF-8 text"
    ),
    Case("directory", [*PLAN, "scenarios/"], "scenarios: is a directory, expected a YAML file"),
    Case(
        "directory-yaml-suffix",
        [*VALIDATE, "folder.yaml"],
        "folder.yaml: is a directory, expected a YAML file",
    ),
    Case(
        "calibration-directory",
        [*ESTIMATE, "--calibration", "calibration"],
        "calibration: is a directory, expected a YAML file",
    ),
]

# --------------------------------------------------------------------------- numbers

NUMBER_CASES = [
    Case("isl-inf", [*PLAN, "scenarios/isl-inf.yaml"], "isl: input should be a finite number"),
    Case(
        "ttft-nan", [*PLAN, "scenarios/ttft-nan.yaml"], "ttft_ms: input should be a finite number"
    ),
    Case(
        "dispersion-inf",
        [*PLAN, "scenarios/dispersion-inf.yaml"],
        "dispersion: input should be a finite number",
    ),
    # a peak of no request at all (the quantile is 0): nothing to size for, never exit 70;
    # named as stated: the flag, or the scenario file and its field
    Case(
        "mean-rps-1e-300",
        [*QUESTION, "--mean-rps", "1e-300"],
        "error: --mean-rps: a mean of 1e-300 req/s is no request in most seconds, a peak"
        f" of 0 at percentile 0.95: nothing to size for; {STATE_PEAK} or a higher mean_rps",
    ),
    Case(
        "mean-rps-1e-300-in-a-file",
        [*PLAN, "scenarios/mean-rps-1e-300.yaml"],
        "error: scenarios/mean-rps-1e-300.yaml: mean_rps: a mean of 1e-300 req/s is no request"
        f" in most seconds, a peak of 0 at percentile 0.95: nothing to size for; {STATE_PEAK} or"
        " a higher mean_rps",
    ),
    Case(  # the file's mean is the cause, whatever flag changes the rest
        "mean-rps-1e-300-in-a-file-with-flags",
        [*PLAN, "scenarios/mean-rps-1e-300.yaml", "--percentile", "0.5"],
        "error: scenarios/mean-rps-1e-300.yaml: mean_rps: a mean of 1e-300 req/s is no request"
        " in most seconds, a peak of 0 at percentile 0.5",
    ),
    Case(  # users: one request a day, 1/86,400 req/s: named by the field that gave the mean
        "one-user",
        [*PLAN, "scenarios/one-user.yaml"],
        "error: scenarios/one-user.yaml: users: a mean of 1.15741e-05 req/s is no request in"
        " most seconds",
    ),
    Case(  # P(N = 0) = e^-0.01 = 0.990 >= 0.95
        "mean-rps-0.01",
        [*QUESTION, "--mean-rps", "0.01"],
        "error: --mean-rps: a mean of 0.01 req/s is no request in most seconds, a peak of 0 at"
        " percentile 0.95",
    ),
    Case(  # P(N = 0) = e^-10 = 4.5e-5 >= 1e-300
        "percentile-1e-300",
        [*QUESTION, "--mean-rps", "10", "--percentile", "1e-300"],
        "error: --percentile: 1e-300 puts the peak of 10 req/s at 0 requests a second:"
        f" nothing to size for; use a percentile such as 0.95, or {STATE_PEAK}",
    ),
    Case(  # the flags are the cause, over a file's mean
        "percentile-flag-over-a-file",
        [*PLAN, "scenarios/mean-rps-1e-300.yaml", "--mean-rps", "10", "--percentile", "1e-300"],
        "error: --percentile: 1e-300 puts the peak of 10 req/s at 0 requests a second",
    ),
    Case(  # P(N = 0) = (1 + D·mu)^(-1/D) = e^(-log(1e301) / 1e300) = 1 >= 0.95
        "dispersion-1e300",
        [*PLAN, "scenarios/dispersion-1e300.yaml"],
        "error: scenarios/dispersion-1e300.yaml: dispersion: 1e+300 leaves at least 95 % of"
        " seconds without a request at 10 req/s on average, a peak of 0: nothing to size for;"
        f" use a lower dispersion, or {STATE_PEAK}",
    ),
    Case(  # the file's dispersion is the cause, at the mean the flag states
        "dispersion-1e300-with-flags",
        [*PLAN, "scenarios/dispersion-1e300.yaml", "--mean-rps", "20"],
        "error: scenarios/dispersion-1e300.yaml: dispersion: 1e+300 leaves at least 95 % of"
        " seconds without a request at 20 req/s on average",
    ),
    Case(  # p = 1/(1 + D·mu) = 1/(1 + 1e19) rounds 1 - p to 1: no quantile in double precision
        "dispersion-1e10-at-1e9-req-s",
        [*PLAN, "scenarios/dispersion-1e10.yaml"],
        "error: scenarios/dispersion-1e10.yaml: dispersion: 1e+10 is too large for a mean of"
        " 1e+09 requests a window: dispersion x mean must be well below 1e16 (got 1e+19)",
    ),
    Case(  # the busiest hour: 0.1 × 100 requests / 3600 s = 0.00278 req/s
        "daily-100-requests",
        [*PLAN, "scenarios/daily-100-requests.yaml"],
        "error: scenarios/daily-100-requests.yaml: daily: the busiest hour's 0.00277778 req/s"
        f" is no request in most seconds, a peak of 0 at percentile 0.95: nothing to size for;"
        f" {STATE_PEAK} or a larger daily volume",
    ),
    Case(  # the same day stated by flags: named by them
        "daily-100-requests-by-flags",
        [*QUESTION, "--requests-per-day", "100", "--peak-hour-share", "0.1"],
        "error: --requests-per-day/--peak-hour-share: the busiest hour's 0.00277778 req/s is no"
        " request in most seconds",
    ),
    Case(
        "pue-inf",
        [*PLAN, "scenarios/pue-inf.yaml"],
        "economics.pue: input should be a finite number",
    ),
    Case(
        "isl-1e12",
        [*PLAN, "scenarios/isl-huge.yaml"],
        "isl: must be at most 100,000,000 (got 1,000,000,000,000)",
    ),
    Case(
        "isl-1e300",
        [*PLAN, "scenarios/isl-float-huge.yaml"],
        "isl: must be at most 100,000,000 (got 1e+300)",
    ),
    Case("tp-8192", [*PLAN, "scenarios/tp-huge.yaml"], "tp[0]: must be at most 4,096 (got 8,192)"),
    Case(
        "memory-1e400",
        [*VALIDATE, "hardware/gpus/memory-1e400.yaml"],
        "memory: cannot read '1e400 GiB': the number is too large",
    ),
    Case(
        "memory-2-pib",
        [*VALIDATE, "hardware/gpus/memory-2-pib.yaml"],
        "memory: must be at most 1 PiB",
    ),
    Case(
        "price-inf",
        [*VALIDATE, "hardware/gpus/price-inf.yaml"],
        "price_usd_per_gpu_hour: input should be a finite number",
    ),
    Case(
        "layers-1e12",
        [*VALIDATE, "models/layers-1e12.yaml"],
        "num_layers: must be at most 1,000 (got 1,000,000,000,000)",
    ),
    Case(
        "context-1e9",
        [*VALIDATE, "models/context-huge.yaml"],
        "max_context: must be at most 100,000,000",
    ),
    Case(
        "heads-2^20",
        [*VALIDATE, "models/heads-huge.yaml"],
        "num_attention_heads: must be at most 100,000",
    ),
    Case(
        "experts-1e6",
        [*VALIDATE, "models/experts-huge.yaml"],
        "moe.num_experts: must be at most 100,000",
    ),
    Case(
        "calibration-inf",
        [*ESTIMATE, "--calibration", "calibration/gemm-inf.yaml"],
        "defaults.gemm_m_half: input should be a finite number",
    ),
    Case(
        "hf-layers-1e12",
        ["catalog", "import-hf", "hf/layers-1e12.json", "--id", "x"],
        "hf/layers-1e12.json: num_hidden_layers: must be at most 1,000 (got 1,000,000,000,000)",
    ),
    Case(
        "hf-layers-float-1e12",
        ["catalog", "import-hf", "hf/layers-float-1e12.json", "--id", "x"],
        "num_hidden_layers: must be at most 1,000",
    ),
    Case(
        "hf-5000-digits",
        ["catalog", "import-hf", "hf/hidden-5000-digits.json", "--id", "x"],
        "hidden_size: expected a whole number (got a number of 5,000 digits)",
    ),
    Case(
        "hf-1e400",
        ["catalog", "import-hf", "hf/hidden-1e400.json", "--id", "x"],
        "hidden_size: expected a whole number (got inf)",
    ),
    Case(
        "hf-nan",
        ["catalog", "import-hf", "hf/hidden-nan.json", "--id", "x"],
        "hidden_size: expected a whole number (got nan)",
    ),
    Case(
        "hf-model-type-list",
        ["catalog", "import-hf", "hf/model-type-list.json", "--id", "x"],
        "model_type: expected a string naming the architecture family (got ['llama'])",
    ),
    Case(
        "hf-model-type-number",
        ["catalog", "import-hf", "hf/model-type-number.json", "--id", "x"],
        "model_type: expected a string naming the architecture family (got 7)",
    ),
    Case(
        "hf-heads-string",
        ["catalog", "import-hf", "hf/heads-string.json", "--id", "x"],
        "num_attention_heads: expected a whole number (got '32')",
    ),
    Case(
        "hf-tie-string",
        ["catalog", "import-hf", "hf/tie-string.json", "--id", "x"],
        "tie_word_embeddings: expected true or false (got 'yes')",
    ),
    Case(
        "hf-not-utf8",
        ["catalog", "import-hf", "hf/not-utf8.json", "--id", "x"],
        "is not UTF-8 text",
    ),
    Case("hf-directory", ["catalog", "import-hf", "hf", "--id", "x"], "hf: is a directory"),
]

# --------------------------------------------------------------------------- readers

READER_CASES = [
    Case(
        "value-nan",
        ["validate", "--data", "data/value-nan.csv"],
        "data/value-nan.csv: row 3: value: expected a finite measurement >= 0 (got 'nan')",
    ),
    Case(
        "value-negative",
        ["validate", "--data", "data/value-negative.csv"],
        "row 2: value: expected a finite measurement >= 0 (got '-3.5')",
    ),
    Case(
        "value-inf", ["validate", "--data", "data/value-inf.csv"], "row 2: value: expected a finite"
    ),
    Case(
        "value-nan-calibrate",
        [*CALIBRATE, "--data", "data/value-nan.csv"],
        "row 3: value: expected a finite measurement",
    ),
    Case(
        "isl-inf-column",
        ["validate", "--data", "data/isl-inf.csv"],
        "row 2: isl: expected a finite number from 0 up to 100,000,000 (got 'inf')",
    ),
    Case(
        "isl-1e12-column",
        ["validate", "--data", "data/isl-huge.csv"],
        "row 2: isl: expected a finite",
    ),
    Case(
        "tp-1e400-column",
        ["validate", "--data", "data/tp-1e400.csv"],
        "row 2: tp: expected a finite number from 0 up to 4,096 (got '1e400')",
    ),
    Case(
        "concurrency-1e20",
        ["validate", "--data", "data/concurrency-huge.csv"],
        "row 2: concurrency_or_batch: expected a finite number from 0 up to 1,000,000,000",
    ),
    Case(
        "no-value-column",
        ["validate", "--data", "data/no-value-column.csv"],
        "missing column(s) value",
    ),
    Case(
        "measurements-not-utf8",
        ["validate", "--data", "data/not-utf8.csv"],
        "data/not-utf8.csv: is not UTF-8",
    ),
    Case("measurements-directory", ["validate", "--data", "data"], "data: is a directory"),
    Case(
        "measurements-missing",
        ["validate", "--data", "data/none.csv"],
        "data/none.csv: file not found",
    ),
    Case(
        "csv-unterminated-quote",
        ["validate", "--data", "data/unterminated-quote.csv"],
        "unterminated-quote.csv",
    ),
    Case(
        "genai-avg-text",
        ["validate", "--data", "data/genai-avg-text.json"],
        "time_to_first_token.avg: expected a finite number >= 0 (got 'fast')",
    ),
    Case(
        "genai-avg-nan",
        ["validate", "--data", "data/genai-avg-nan.json"],
        "inter_token_latency.avg",
    ),
    Case("genai-avg-negative", ["validate", "--data", "data/genai-avg-negative.json"], "(got -1)"),
    Case("genai-avg-list", ["validate", "--data", "data/genai-avg-list.json"], "(got [1, 2])"),
    Case(
        "genai-avg-5000-digits",
        ["validate", "--data", "data/genai-avg-5000-digits.json"],
        "time_to_first_token.avg: expected a finite number >= 0 (got inf)",
    ),
    Case(
        "genai-list",
        ["validate", "--data", "data/genai-list.json"],
        "expected a GenAI-Perf profile export",
    ),
    Case(
        "genai-csv-nan",
        ["validate", "--data", "data/genai-nan.csv"],
        "line 2: Time To First Token (ms)",
    ),
    Case("genai-csv-negative", ["validate", "--data", "data/genai-negative.csv"], "(got '-4')"),
    Case(
        "trace-negative-time",
        [*SIMULATE, "data/trace-negative-time.csv"],
        "line 3: arrival_s: must be >= 0 seconds (got -1)",
    ),
    Case(
        "trace-nan-time",
        [*SIMULATE, "data/trace-nan-time.csv"],
        "line 2: arrival_s: expected a finite number",
    ),
    Case(
        "trace-inf-time",
        [*SIMULATE, "data/trace-inf-time.csv"],
        "line 2: arrival_s: expected a finite number",
    ),
    Case(
        "trace-1e300-s",
        [*SIMULATE, "data/trace-late.csv"],
        "arrival_s: must be at most 1e+09 seconds",
    ),
    Case(
        "trace-isl-1e300",
        [*SIMULATE, "data/trace-isl-huge.csv"],
        "isl: must be at most 100,000,000 tokens",
    ),
    Case(
        "trace-osl-true",
        [*SIMULATE, "data/trace-osl-bool.csv"],
        "osl: expected a number (got 'true')",
    ),
    Case(
        "trace-not-utf8",
        [*SIMULATE, "data/trace-not-utf8.csv"],
        "trace-not-utf8.csv: is not UTF-8 text",
    ),
    Case("trace-directory", [*SIMULATE, "data"], "data: is a directory, expected a trace CSV"),
]


@pytest.mark.parametrize("case", YAML_CASES + NUMBER_CASES + READER_CASES, ids=lambda c: c.id)
def test_bad_input_is_one_line(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    run_in_process(case, monkeypatch)


# --------------------------------------------------------------------------- generated inputs


def test_alias_bomb_never_printed_nor_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(INPUTS)
    result = runner.invoke(app, ["catalog", "validate", "scenarios/alias-bomb.yaml"])
    assert result.exit_code == 1 and "lol" not in result.stderr


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _generated(tmp: Path) -> list[Case]:
    scenario = "model: llama-3.1-8b\nisl: 1000\nosl: 200\nmean_rps: 10\nttft_ms: 1000\n"
    gpu = (INPUTS / "hardware/gpus/pcie-true.yaml").read_text().replace("pcie_gen: true\n", "")
    base = json.loads((REPO / "tests/fixtures/hf/llama-3.1-8b.json").read_text())
    types = {**base, "model_type": "gemma2", "layer_types": ["sliding_attention"] * 40_000}
    many = {**types, "num_hidden_layers": 40_000}
    head = (INPUTS / "data/value-nan.csv").read_text().splitlines()
    f = {
        "big": _write(tmp / "big.yaml", scenario + "# " + "x" * (2 << 20) + "\n"),
        "long": _write(tmp / "long.yaml", scenario.replace("llama-3.1-8b", "m" * 200_000)),
        "longkey": _write(tmp / "longkey.yaml", scenario + "k" * 200_000 + ": 1\n"),
        "quantity": _write(
            tmp / "hardware/gpus/quantity.yaml",
            gpu.replace("memory: 80 GiB", "memory: " + "1" * 100_000 + " GiB"),
        ),
        "types": _write(tmp / "types.json", json.dumps(types)),
        "layers": _write(tmp / "layers.json", json.dumps(many)),
        "deepjson": _write(tmp / "deep.json", "[" * 100_000 + "]" * 100_000),
        "genaideep": _write(tmp / "genai.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        "field": _write(tmp / "field.csv", head[0] + "\n" + head[1] + ',"' + "n" * 200_000 + '"\n'),
        "tracefield": _write(tmp / "trace.csv", "arrival_s,isl,osl\n0,1,1," + "z" * 200_000 + "\n"),
    }
    return [
        Case(
            "file-over-1-mib",
            [*PLAN, str(f["big"])],
            "is larger than 1 MiB, too large for a YAML file",
        ),
        Case("200k-model-id", [*PLAN, str(f["long"])], "unknown model 'mmmm"),
        Case("200k-key", [*PLAN, str(f["longkey"])], "YAML syntax error"),
        Case(
            "100k-quantity",
            [*VALIDATE, str(f["quantity"])],
            "memory: cannot read a quantity of 100,004",
        ),
        Case(
            "hf-40000-layer-types",
            ["catalog", "import-hf", str(f["types"]), "--id", "x"],
            "layer_types: has 40,000 entries, at most 1,000 (one per layer)",
        ),
        Case(
            "hf-40000-layers",
            ["catalog", "import-hf", str(f["layers"]), "--id", "x"],
            "num_hidden_layers: must be at most 1,000 (got 40,000)",
        ),
        Case(
            "hf-deep",
            ["catalog", "import-hf", str(f["deepjson"]), "--id", "x"],
            "nested too deeply to read",
        ),
        Case(
            "genai-deep", ["validate", "--data", str(f["genaideep"])], "nested too deeply to read"
        ),
        Case(
            "csv-field-200k",
            ["validate", "--data", str(f["field"])],
            "line 2: a field is longer than 128 KiB",
        ),
        Case(
            "trace-field-200k",
            [*SIMULATE, str(f["tracefield"])],
            "line 2: a field is longer than 128 KiB",
        ),
    ]


GENERATED_IDS = [
    "file-over-1-mib",
    "200k-model-id",
    "200k-key",
    "100k-quantity",
    "hf-40000-layer-types",
    "hf-40000-layers",
    "hf-deep",
    "genai-deep",
    "csv-field-200k",
    "trace-field-200k",
]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    return {c.id: c for c in _generated(tmp_path_factory.mktemp("hostile"))}


@pytest.mark.parametrize("ident", GENERATED_IDS)
def test_generated_input_is_one_line(
    ident: str, generated: dict[str, Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_in_process(generated[ident], monkeypatch)


# --------------------------------------------------------------------------- processes


def test_30000_levels_neither_crash_nor_recurse(tmp_path: Path) -> None:
    """PyYAML 6.0.3 segfaults on this file; the depth check refuses it first."""
    deep = _write(tmp_path / "deep.yaml", "a: " + "[" * 30_000 + "]" * 30_000 + "\n")
    block = _write(tmp_path / "block.yaml", "a:\n" + "- " * 30_000 + "x\n")
    for path in (deep, block):
        run_subprocess(Case("deep", [*PLAN, str(path)], "nested deeper than 64 levels"))


@pytest.fixture()
def fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    path = tmp_path / "fifo.yaml"
    os.mkfifo(path)
    return path


def test_fifo_never_blocks(fifo: Path) -> None:
    run_subprocess(Case("fifo", [*PLAN, str(fifo)], "is a FIFO, expected a YAML file"))
    run_subprocess(Case("fifo", ["validate", "--data", str(fifo)], "is a FIFO, expected a"))
    run_subprocess(Case("fifo", [*SIMULATE, str(fifo)], "is a FIFO, expected a trace CSV"))
    run_subprocess(
        Case("fifo", ["catalog", "import-hf", str(fifo), "--id", "x"], "is a FIFO, expected a")
    )


@pytest.mark.parametrize(
    ("path", "expect"),
    [
        ("/dev/zero", "/dev/zero: is a character device, expected a YAML file"),
        ("/dev/null", "/dev/null: is a character device, expected a YAML file"),
        ("/proc/self/mem", "/proc/self/mem: cannot be read"),
    ],
)
def test_devices_and_proc(path: str, expect: str) -> None:
    if not os.path.exists(path):
        pytest.skip(f"no {path} here")
    run_subprocess(Case(path, [*PLAN, path], expect))


# --------------------------------------------------------------------------- catalog folders


def _catalog(tmp: Path) -> Path:
    root = tmp / "cat"
    shutil.copytree(REPO / "tests/fixtures/mini_catalog/models", root / "models")
    return root


def test_catalog_symlink_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path)
    (root / "models" / "loop.yaml").symlink_to("loop.yaml")
    run_in_process(
        Case(
            "loop",
            ["catalog", "list", "models", "--catalog", str(root)],
            "loop.yaml: cannot be read",
        ),
        monkeypatch,
    )
    looped = tmp_path / "looped"
    looped.symlink_to(looped)
    run_in_process(
        Case("loop-root", [*PLAN, "--catalog", str(looped)], "catalog directory not found"),
        monkeypatch,
    )


def test_catalog_directory_named_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path)
    (root / "models" / "dir.yaml").mkdir()
    run_in_process(
        Case(
            "dir", ["catalog", "list", "models", "--catalog", str(root)], "dir.yaml: is a directory"
        ),
        monkeypatch,
    )


def test_catalog_dangling_symlink(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path)
    (root / "models" / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    run_in_process(
        Case(
            "gone",
            ["catalog", "list", "models", "--catalog", str(root)],
            "gone.yaml: file not found",
        ),
        monkeypatch,
    )


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads anything")
def test_catalog_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path)
    secret = root / "models" / "secret.yaml"
    secret.write_text("id: secret\n")
    secret.chmod(0)
    run_in_process(
        Case(
            "unreadable",
            ["catalog", "list", "models", "--catalog", str(root)],
            "secret.yaml: cannot be read (Permission denied)",
        ),
        monkeypatch,
    )


def test_catalog_fifo_never_blocks(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    root = _catalog(tmp_path)
    os.mkfifo(root / "models" / "pipe.yaml")
    run_subprocess(
        Case("fifo", ["catalog", "list", "models", "--catalog", str(root)], "pipe.yaml: is a FIFO")
    )


def test_alias_bomb_in_catalog_never_reaches_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _catalog(tmp_path)
    shutil.copy(INPUTS / "scenarios/alias-bomb.yaml", root / "models" / "bomb.yaml")
    cache = tmp_path / "cache"
    monkeypatch.setenv("INFERSIZE_CACHE_DIR", str(cache))
    run_in_process(
        Case("bomb", ["catalog", "list", "models", "--catalog", str(root)], "aliases expand"),
        monkeypatch,
    )
    assert all(b"lol" not in p.read_bytes() for p in cache.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- corrupted cache


def _list_models(monkeypatch: pytest.MonkeyPatch) -> str:
    result = runner.invoke(app, ["catalog", "list", "models", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    "damage",
    [
        "garbage",
        "empty",
        "list",
        "deep",
        "entry-int",
        "entry-data-list",
        "huge-number",
        "directory",
    ],
)
def test_corrupted_cache_is_rebuilt_silently(
    damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("INFERSIZE_CACHE_DIR", str(cache))
    expected = _list_models(monkeypatch)
    files = sorted(cache.glob("catalog-*.json"))
    assert files
    for path in files:
        payload = json.loads(path.read_text())
        if damage == "garbage":
            path.write_bytes(b"\xff\x00 not json")
        elif damage == "empty":
            path.write_text("")
        elif damage == "list":
            path.write_text("[1, 2]")
        elif damage == "deep":
            path.write_text("[" * 100_000 + "]" * 100_000)
        elif damage == "entry-int":
            payload["files"] = dict.fromkeys(payload["files"], 5)
            path.write_text(json.dumps(payload))
        elif damage == "entry-data-list":  # right stamps, wrong data
            payload["files"] = {k: [v[0], [1, 2]] for k, v in payload["files"].items()}
            path.write_text(json.dumps(payload))
        elif damage == "huge-number":
            path.write_text(
                json.dumps(payload).replace('"files"', '"n": ' + "9" * 5000 + ', "files"')
            )
        else:
            path.unlink()
            path.mkdir()
    start = time.perf_counter()
    assert _list_models(monkeypatch) == expected
    assert time.perf_counter() - start < IN_PROCESS_S


def test_cache_fifo_never_blocks(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    cache = tmp_path / "cache"
    env = {"INFERSIZE_CACHE_DIR": str(cache)}
    code, _, err, _ = run_process(["catalog", "list", "models"], env)
    assert code == 0, err
    for path in cache.glob("catalog-*.json"):
        path.unlink()
        os.mkfifo(path)
    code, out, err, _ = run_process(["catalog", "list", "models"], env)
    assert code == 0 and err == "" and "llama" in out


# --------------------------------------------------------------------------- points reader


def test_points_reader(tmp_path: Path) -> None:
    """``io_measurements.read_points`` / ``point_int``: what ``estimate --points`` reads."""
    from inferencesize.errors import InputError

    with pytest.raises(InputError, match="is not UTF-8 text"):
        read_points(INPUTS / "data/points-not-utf8.csv")
    with pytest.raises(InputError, match="is a directory"):
        read_points(INPUTS / "data")
    field = _write(
        tmp_path / "p.csv", "model,hardware,isl,osl,concurrency\n" + "x" * 200_000 + "\n"
    )
    with pytest.raises(InputError, match="line 2: a field is longer than 128 KiB"):
        read_points(field)
    with pytest.raises(InputError, match="missing column"):
        read_points(INPUTS / "data/value-nan.csv")
    header, rows = read_points(INPUTS / "data/points-concurrency-inf.csv")
    assert header[:5] == ["model", "hardware", "isl", "osl", "concurrency"] and len(rows) == 1
    with pytest.raises(
        InputError, match=r"row 2: concurrency: expected a finite number \(got 'inf'\)"
    ):
        point_int(rows[0], "concurrency", 2)
    assert point_int(rows[0], "isl", 2) == 1000 and point_int(rows[0], "pp", 2, 1) == 1
    _, rows = read_points(INPUTS / "data/points-tp-huge.csv")
    with pytest.raises(InputError, match="row 2: tp: must be at most 4,096"):
        point_int(rows[0], "tp", 2)


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        ("points-concurrency-inf.csv", "concurrency: expected a finite number"),
        ("points-not-utf8.csv", "is not UTF-8 text"),
    ],
)
def test_points_cli(name: str, expect: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(INPUTS)
    result = runner.invoke(app, ["estimate", "--points", f"data/{name}", "--format", "json"])
    assert result.exit_code in (0, 1) and "internal error" not in result.stderr
    assert expect in result.stderr + result.stdout


# --------------------------------------------------------------------------- locale

LOCALE_COMMANDS = [
    pytest.param(["catalog", "show", "h100-sxm"], id="catalog-show-gpu"),
    pytest.param(["catalog", "show", "llama-3.1-70b"], id="catalog-show-model"),
    pytest.param(["plan", "default"], id="plan"),
    pytest.param(["frontier", "default"], id="frontier"),
]


def _no_crash(args: list[str], env: dict[str, str]) -> None:
    code, out, err, _ = run_process(args, env, cwd=REPO)
    assert code == 0, err[-2000:]
    assert "Traceback" not in err and "internal error" not in err
    assert out.strip()


@pytest.mark.parametrize("args", LOCALE_COMMANDS)
def test_ascii_c_locale(args: list[str]) -> None:
    """LC_ALL=C without Python's UTF-8 mode: stdout is ASCII (strict for '×', '·', '≤')."""
    _no_crash(args, {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"})


@pytest.fixture(scope="module")
def latin1_locale(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A real en_US.ISO-8859-1 locale, compiled for the test (skipped where localedef or the
    locale sources are missing)."""
    localedef = shutil.which("localedef")
    if localedef is None:
        pytest.skip("no localedef")
    where = tmp_path_factory.mktemp("locale")
    done = subprocess.run(
        [localedef, "-i", "en_US", "-f", "ISO-8859-1", str(where / "en_US.ISO-8859-1")],
        capture_output=True,
        timeout=60,
        check=False,
    )
    if not (where / "en_US.ISO-8859-1").exists():
        pytest.skip(f"localedef could not build en_US.ISO-8859-1: {done.stderr[-200:]!r}")
    env = {"LOCPATH": str(where), "LANG": "en_US.ISO-8859-1", "LC_ALL": "en_US.ISO-8859-1"}
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; print(sys.stdout.encoding)"],
        capture_output=True,
        text=True,
        env={k: v for k, v in {**os.environ, **env}.items() if k != "PYTHONIOENCODING"},
        timeout=30,
        check=False,
    )
    if probe.stdout.strip() != "iso8859-1":
        pytest.skip(f"the compiled locale gives stdout {probe.stdout.strip()!r}, not Latin-1")
    return env


@pytest.mark.parametrize("args", LOCALE_COMMANDS)
def test_latin1_locale(args: list[str], latin1_locale: dict[str, str]) -> None:
    """A Latin-1 locale (PYTHONIOENCODING unset): '×' and '·' encode, '≤' and '│' do not."""
    _no_crash(args, latin1_locale)
