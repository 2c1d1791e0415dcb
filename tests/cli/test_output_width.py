"""Table output at any width: at COLUMNS=60, 80 and 120 no line is wider, every word of the
output (a number, an id) is one the unwrapped output has too, and the ids and counts of the
JSON output of the same command appear whole. A pipe gets no colour and no wrapping; a
terminal gets its width and colour."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from functools import cache
from typing import Any

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.render.plan_table import paid_cells

runner = CliRunner()

DEEPSEEK = [
    "plan",
    "--model",
    "deepseek-r1",
    "--hardware",
    "gb200-nvl72",
    "--isl",
    "1000",
    "--osl",
    "1000",
    "--peak-rps",
    "5",
    "--ttft-ms",
    "2000",
    "--itl-ms",
    "50",
]
NEMO = ["plan", "seed-nemo-43b", "--explain"]
BOX = r"[│┃┏┓┗┛┡┩┣┫┳┻╇╋━─┌┐└┘├┤┬┴┼]"


def run(args: list[str], columns: int) -> str:
    """What ``args`` print at ``columns`` (each command and width runs once per session: the
    tests below ask for the same unwrapped text and JSON of one plan at every width)."""
    return _run(tuple(args), columns)


@cache
def _run(args: tuple[str, ...], columns: int) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


def words(text: str) -> set[str]:
    return {w.rstrip(":") for w in re.sub(BOX, " ", text).split()}


def json_ids_and_counts(rec: dict[str, Any], explain: bool) -> set[str]:
    """What the table must show whole: the model, each candidate's hardware, precision and
    split, the counts of the chosen plan and (--explain) the rejected candidates."""
    out = {rec["model"]}
    for p in [rec["plan"], *rec["alternatives"]]:
        out |= {p["hardware"], p["precision"], f"tp{p['tp']}"}
    plan = rec["plan"]
    out |= {str(plan["servers"]), str(plan["gpus"]), str(plan["instances"])}
    out.add(f"{plan['per_instance_at_peak']['ttft_ms']:,.1f}")  # the table's TTFT at peak
    for r in rec["rejected"] if explain else []:
        out |= set(r["candidate"].split())
    return out


@pytest.mark.parametrize("args", [DEEPSEEK, NEMO], ids=["deepseek-r1", "seed-nemo-43b"])
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_plan_tables_never_split_a_number_or_an_id(args: list[str], columns: int) -> None:
    text = run(args, columns)
    assert max(len(line) for line in text.splitlines()) <= columns
    whole = words(run(args, 1000))
    assert words(text) <= whole, sorted(words(text) - whole)
    rec = json.loads(run([*args, "--format", "json"], 80))
    missing = json_ids_and_counts(rec, "--explain" in args) - words(text)
    assert not missing, missing


def test_alternatives_go_vertical_when_their_columns_do_not_fit() -> None:
    narrow, wide = run(DEEPSEEK, 80), run(DEEPSEEK, 160)
    assert "candidate: gb200-nvl72 fp4 tp4 ep2" in narrow
    assert re.search(r"│ gb200-nvl72 fp4 tp4 ep2 +│", wide)


GPT_OSS = [
    "plan",
    "--model",
    "gpt-oss-120b",
    "--isl",
    "1000",
    "--osl",
    "500",
    "--mean-rps",
    "20",
    "--ttft-ms",
    "1000",
    "--itl-ms",
    "50",
    "--hardware",
    "dgx-b200,gb200-nvl72,dgx-h100",
    "--top",
    "5",
]


@pytest.mark.parametrize("columns", [110, 120])
def test_ids_never_wrap_into_rows_of_their_own(columns: int) -> None:
    """At 110 and 120 columns the candidates' names ('gb200-nvl72 fp4 tp2') wrapped at a
    space, and the second half read as a row of its own: each name is now one line with its
    counts, and no row starts with an empty name."""
    text = run(GPT_OSS, columns)
    assert max(len(line) for line in text.splitlines()) <= columns
    rec = json.loads(run([*GPT_OSS, "--format", "json"], 80))
    alternatives = text[text.index("alternatives") : text.index("searched")]
    for p in rec["alternatives"]:
        name = re.escape(f"{p['hardware']} {p['precision']} tp{p['tp']}") + r"(?: [a-z]+\S+)*"
        servers, gpus = paid_cells(p)  # what is paid: servers, "GPUs used of paid"
        row = rf"^[│ ]*{name}[ │]+{re.escape(servers)}[ │]+{re.escape(gpus)}[ │]"
        assert re.search(row, alternatives, re.MULTILINE), (p, alternatives)
    rows = [line for line in alternatives.splitlines()[1:] if re.search(r"\d", line)]
    assert rows and not any(re.match(r"^[│ ]*[│ ] {3}", line) for line in rows), alternatives
    assert len(rows) == len(rec["alternatives"])


@pytest.mark.parametrize(
    "args",
    [
        ["frontier", "default", "--rows", "5", "--no-terminal-plot"],
        ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm"],
        ["catalog", "list"],
        ["catalog", "show", "deepseek-r1"],
        ["peak", "--mean-rps", "64", "--format", "table"],
        ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--concurrency", "8"],
        ["sweep", "default", "--vary", "isl=500,1000", "--format", "table"],
    ],
    ids=lambda a: a[0] if a[0] != "catalog" else " ".join(a[:2]),
)
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_every_table_fits(args: list[str], columns: int) -> None:
    text = run(args, columns)
    assert max(len(line) for line in text.splitlines()) <= columns
    whole = words(run(args, 1000))
    too_long = [w for w in whole if len(w) > columns - 8]  # folded: nothing else can show it
    split = [w for w in words(text) - whole if not any(w in long for long in too_long)]
    assert not split, split


@pytest.mark.parametrize("columns", [40, 60, 80, 120])
def test_the_frontier_text_plot_narrows_with_the_terminal(columns: int) -> None:
    text = run(["frontier", "default", "--rows", "3"], columns)
    assert max(len(line) for line in text.splitlines()) <= max(columns, 30)
    assert "L latency-optimal" in " ".join(text.split())


SCRIPT = shutil.which("infersize")
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "inferencesize"]


def test_a_pipe_gets_no_colour_and_no_wrapping() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    done = subprocess.run(
        [*COMMAND, *NEMO], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    assert "\x1b[" not in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) > 100  # rows kept whole
    assert re.search(
        r"│ engine +│ TensorRT-LLM .*\(trtllm-0\.9-static: h100-sxm fp16; trust: calibrated\) +│",
        done.stdout,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_terminal_gets_its_width_and_colour() -> None:
    import fcntl
    import pty
    import struct
    import termios

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "TERM")}
    env["TERM"] = "xterm-256color"
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 70, 0, 0))
    proc = subprocess.Popen([*COMMAND, *NEMO], stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=120) == 0
    os.close(leader)
    raw = b"".join(chunks).decode()
    assert "\x1b[" in raw  # colour on a terminal
    plain = re.sub(r"\x1b\[[0-9;]*m", "", raw).replace("\r", "")
    assert max(len(line) for line in plain.splitlines()) <= 70
    assert "candidate: dgx-h100 fp16 tp2" in plain  # the alternatives, vertical at 70
