"""Reading the trace layouts people have (our CSV, the Azure LLM inference traces as published,
JSONL), detected from the first line; rows of 0 tokens skipped and counted; one-line errors
naming the file and the line for every bad trace.

The Azure rows below are the first rows of AzureLLMInferenceTrace_conv.csv (Azure Public
Dataset, CC-BY-4.0; Patel et al., "Splitwise: Efficient generative LLM inference using phase
splitting", ISCA 2024)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inferencesize import io_trace_formats
from inferencesize.errors import InputError
from inferencesize.io_trace import read_trace, read_trace_traffic
from inferencesize.io_trace_formats import Reading, read_blocks

AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.2224670,879,55
2023-11-16 18:15:51.3910170,91,16
"""


def _write(tmp_path: Path, text: str | bytes, name: str = "t.csv") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _read(path: Path) -> tuple[Reading, np.ndarray, np.ndarray, np.ndarray]:
    reading = Reading()
    blocks = list(read_blocks(path, reading))
    t = np.concatenate([b.arrival_s for b in blocks])
    isl = np.concatenate([b.isl for b in blocks])
    osl = np.concatenate([b.osl for b in blocks])
    return reading, t, isl, osl


def test_the_azure_trace_is_read_as_published(tmp_path: Path) -> None:
    reading, t, isl, osl = _read(_write(tmp_path, AZURE))
    assert reading.layout == "Azure LLM inference trace"
    # seconds from the first row: 50.9951690 - 46.6805900 = 4.3145790, and so on
    assert t == pytest.approx([0.0, 4.314579, 4.541877, 4.710427], abs=1e-9)
    assert list(isl) == [374, 396, 879, 91] and list(osl) == [44, 109, 55, 16]
    traffic = read_trace_traffic(_write(tmp_path, AZURE), "azure", 10.0)
    assert traffic.layout == "Azure LLM inference trace"
    # 3 gaps over 4.710427 s
    assert traffic.mean_rps == pytest.approx(3 / 4.710427)
    assert traffic.isl_mean == (374 + 396 + 879 + 91) / 4


def test_the_blocks_do_not_change_what_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, AZURE)
    whole = _read(path)
    monkeypatch.setattr(io_trace_formats, "BLOCK_ROWS", 3)
    parts = _read(path)
    for a, b in zip(whole[1:], parts[1:], strict=True):
        assert np.array_equal(a, b)


def test_names_in_any_case_and_order_extra_columns_ignored(tmp_path: Path) -> None:
    text = "Output_Tokens,note,Input_Tokens,arrival_s\n5,a,100,0.5\n6,b,200,1.5\n"
    reading, t, isl, osl = _read(_write(tmp_path, text))
    assert reading.layout == "CSV"
    assert list(t) == [0.5, 1.5] and list(isl) == [100, 200] and list(osl) == [5, 6]


def test_a_timestamp_in_seconds_counts_from_the_first_row(tmp_path: Path) -> None:
    text = "timestamp,isl,osl\n1700000000.25,10,1\n1700000002.75,10,1\n1700000001.25,10,1\n"
    _, t, _, _ = _read(_write(tmp_path, text))
    assert list(t) == [0.0, 2.5, 1.0]
    # the simulator's workload: sorted, the first at 0
    w = read_trace(_write(tmp_path, text))
    assert w.arrival_s is not None and list(w.arrival_s) == [0.0, 1.0, 2.5]


def test_jsonl_with_either_names_and_conversations(tmp_path: Path) -> None:
    text = (
        '{"timestamp": 10.0, "input_tokens": 100, "output_tokens": 7, "conversation_id": "a"}\n'
        "\n"
        '{"timestamp": 11.5, "input_tokens": 250, "output_tokens": 9, "conversation_id": "b"}\n'
        '{"timestamp": 12.0, "input_tokens": 400, "output_tokens": 3, "conversation_id": "a"}\n'
    )
    reading = Reading()
    blocks = list(read_blocks(_write(tmp_path, text, "t.jsonl"), reading))
    assert reading.layout == "JSONL"
    (b,) = blocks
    assert list(b.arrival_s) == [0.0, 1.5, 2.0] and list(b.isl) == [100, 250, 400]
    assert list(b.lines) == [1, 3, 4]
    assert b.conversation is not None and list(b.conversation) == [0, 1, 0]
    plain = '{"arrival_s": 0, "isl": 5, "osl": 1}\n{"arrival_s": 2, "isl": 6, "osl": 2}\n'
    _, t, isl, osl = _read(_write(tmp_path, plain, "p.jsonl"))
    assert list(t) == [0.0, 2.0] and list(isl) == [5, 6] and list(osl) == [1, 2]


def test_rows_of_zero_tokens_are_skipped_and_counted(tmp_path: Path) -> None:
    text = "arrival_s,isl,osl\n0,10,0\n1,10,5\n2,0,5\n3,10,5\n4,10,5\n"
    reading, t, _, _ = _read(_write(tmp_path, text))
    assert list(t) == [1.0, 3.0, 4.0]
    assert (reading.skipped, reading.first_skipped_line) == (2, 2)
    assert "2 row(s) with a prompt or answer of 0 tokens skipped (the first on line 2)" in (
        reading.skipped_note()
    )
    traffic = read_trace_traffic(_write(tmp_path, text), "t", 10.0)
    assert traffic.requests == 3 and traffic.skipped == 2


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("empty.csv", "", "empty.csv: empty: a trace needs the columns arrival_s, isl, osl"),
        ("blank.csv", "\n\n", "blank.csv: empty: a trace needs"),
        (
            "unknown.csv",
            "when,prompt,answer\n0,1,1\n",
            "unknown.csv: missing column arrival_s (or timestamp), isl, osl: a trace needs",
        ),
        (
            "both.csv",
            "arrival_s,isl,input_tokens,osl\n0,1,1,1\n",
            "both.csv: line 1: both isl and input_tokens name the isl: keep one",
        ),
        (
            "negative.csv",
            "arrival_s,isl,osl\n0,10,5\n1,-3,5\n",
            "negative.csv: line 3: isl: expected a whole number of tokens >= 1, or 0 to skip",
        ),
        (
            "absurd.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,5\n"
            "2023-11-16 18:15:47,10,500000000\n",
            "absurd.csv: line 3: GeneratedTokens: must be at most 100,000,000 tokens",
        ),
        (
            "date.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,5\nyesterday,10,5\n",
            "date.csv: line 3: TIMESTAMP: expected a number of seconds or a date-time"
            " (got 'yesterday')",
        ),
        (
            "years.csv",
            "timestamp,isl,osl\n0,10,5\n1e12,10,5\n",
            "years.csv: line 3: timestamp: must be at most 1e+09 seconds from the first row",
        ),
        ("binary.csv", b"\x00\x01\x02,\x03\n\x00,1\n", "binary.csv: line 1: binary data"),
        (
            "bad.jsonl",
            '{"arrival_s": 0, "isl": 5, "osl": 1}\n{"arrival_s": 1, "isl": 5\n',
            "bad.jsonl: line 2: not a JSON object",
        ),
        (
            "list.jsonl",
            '{"arrival_s": 0, "isl": 5, "osl": 1}\n[1, 2]\n',
            "list.jsonl: line 2: expected a JSON object (got [1, 2])",
        ),
        (
            "bool.jsonl",
            '{"arrival_s": 0, "isl": 5, "osl": true}\n',
            "bool.jsonl: line 1: osl: expected a number (got 'true')",
        ),
        (
            "keys.jsonl",
            '{"t": 0, "isl": 5, "osl": 1}\n',
            "keys.jsonl (JSONL keys): missing column arrival_s (or timestamp)",
        ),
    ],
)
def test_a_bad_trace_is_one_line_naming_the_file_and_line(
    tmp_path: Path, name: str, text: str | bytes, message: str
) -> None:
    path = _write(tmp_path, text, name)
    with pytest.raises(InputError) as err:
        read_trace_traffic(path, name, 10.0)
    got = str(err.value)
    assert "\n" not in got and got.startswith(str(path)) and message in got, got


def test_only_skipped_rows_is_no_requests_and_says_why(tmp_path: Path) -> None:
    path = _write(tmp_path, "arrival_s,isl,osl\n0,10,0\n1,10,0\n")
    with pytest.raises(InputError, match=r"no requests .*2 row\(s\) with a prompt or answer"):
        read_trace_traffic(path, "t", 10.0)


def test_plan_shows_the_layout_and_the_rows_skipped(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from inferencesize.cli import app

    rng = np.random.default_rng(1)
    times = np.cumsum(rng.exponential(0.25, 300))
    rows = [f"{t:.4f},{500 + i % 50},{0 if i % 100 == 7 else 100}" for i, t in enumerate(times)]
    path = _write(tmp_path, "arrival_s,input_tokens,output_tokens\n" + "\n".join(rows) + "\n")
    question = ["plan", "--model", "llama-3-8b", "--hardware", "dgx-h100", "--precision", "fp8"]
    question += ["--tp", "1", "--pp", "1", "--ttft-ms", "500", "--itl-ms", "30"]
    question += ["--trace", str(path)]
    runner = CliRunner()
    result = runner.invoke(app, [*question, "-f", "json"])
    assert result.exit_code == 0, result.stderr
    import json

    trace = json.loads(result.stdout)["trace"]
    # rows 7, 107 and 207 (lines 9, 109, 209) have answers of 0 tokens
    assert trace["requests"] == 297 and trace["skipped_rows"] == 3
    assert trace["layout"] == "CSV"
    table = runner.invoke(app, question)
    assert table.exit_code == 0 and "3 rows of 0 tokens skipped" in table.stdout


def test_a_long_unsorted_trace_names_its_own_column(tmp_path: Path) -> None:
    text = AZURE.replace("18:15:51.2224670", "18:15:40.0000000")  # row 3 before row 2
    with pytest.raises(InputError) as err:
        read_trace_traffic(_write(tmp_path, text), "t", 10.0, keep=2)
    # 40.0 - 46.68059 s from the first row
    assert "line 4: TIMESTAMP: -6.68059 s comes before the row above (4.31458 s)" in str(err.value)
    assert "(sort its rows by TIMESTAMP)" in str(err.value)
