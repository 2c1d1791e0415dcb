"""Tables at any width (inferencesize.report): words never split, a vertical layout below the
width the columns need, unlimited width for pipes; machine formats flattened."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from inferencesize import report

ROWS = [
    ["gb200-nvl72 fp4 tp4 ep2", 1, 4, 436.38, "1,098", "itl"],
    ["deepseek-r1 fp8 tp8 pp2", 12, 96, 2526.2, "2,526.2", "memory"],
]
COLUMNS = ["candidate", "servers", "GPUs", "concurrency", "TTFT ms", "binding"]


def render(renderable: object, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, no_color=True, soft_wrap=False).print(renderable)
    return out.getvalue()


def words(text: str) -> set[str]:
    """The words of drawn text, box characters and the colon after a key dropped."""
    return {w.rstrip(":") for w in re.sub(r"[│┃┏┓┗┛┡┩┣┫┳┻╇╋━─┌┐└┘├┤┬┴┼]", " ", text).split()}


@pytest.mark.parametrize("width", [30, 45, 60, 80, 120])
def test_words_are_never_split_and_lines_fit(width: int) -> None:
    wide = words(render(report.table("t", COLUMNS, ROWS), 1000))
    text = render(report.table("t", COLUMNS, ROWS), width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert words(text) <= wide | {"t"}
    for cell in ("gb200-nvl72", "deepseek-r1", "2,526.2", "1,098", "436.38"):
        assert cell in words(text)


def test_vertical_layout_below_the_width_the_columns_need() -> None:
    t = report.table("alternatives", COLUMNS, ROWS)
    needed = sum(
        max(len(w) for w in [c, *(str(r[i]) for r in ROWS)]) for i, c in enumerate(COLUMNS)
    )
    assert t.widths(200) is not None
    assert t.widths(needed) is None  # borders and padding need more than the words
    text = render(t, 40)
    assert "candidate: gb200-nvl72 fp4 tp4 ep2" in text
    assert "TTFT ms: 2,526.2" in text
    blocks = text.split("\n\n")
    assert len(blocks) == 2  # one block per record


def test_columns_that_fit_get_their_longest_word_and_short_ones_stay_whole() -> None:
    t = report.table(None, ["id", "reason"], [["dgx-h100 fp16 tp1", "out of memory: " * 6]])
    sizes = t.widths(60)
    assert sizes is not None and sizes[0] == len("dgx-h100 fp16 tp1")  # short column whole
    assert sum(sizes) + 7 == 60  # the reason wraps in what is left


def test_key_value_keys_stay_on_one_line() -> None:
    pairs = [("binding constraint", "ITL ≤ 50 ms"), ("engine", "a " * 40)]
    text = render(report.key_value_table("plan", pairs), 50)
    assert "binding constraint" in text
    narrow = render(report.key_value_table("plan", pairs), 25)
    assert "\nbinding constraint: ITL" in narrow  # vertical: key: value lines
    assert "\n    a a a" in narrow  # continued lines indented


def test_cells_are_literal_text_not_markup() -> None:
    text = render(report.table(None, ["a"], [["[bold]x[/bold] [inflight|static]"]]), 80)
    assert "[bold]x[/bold] [inflight|static]" in text


def test_numbers_are_right_aligned() -> None:
    text = render(report.table(None, ["n", "name"], [[5, "a"], ["1,234", "b"]]), 80)
    assert "│     5 │" in text and "│ 1,234 │" in text


def test_output_width_columns_then_terminal_then_unlimited() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert report.output_width(io.StringIO(), {"COLUMNS": "72"}) == 72
    assert report.output_width(Tty(), {}) is None  # rich measures the terminal
    assert report.output_width(io.StringIO(), {}) == report.UNLIMITED_WIDTH
    assert report.output_width(io.StringIO(), {"COLUMNS": "wide"}) == report.UNLIMITED_WIDTH


def test_unlimited_width_keeps_a_row_on_one_line() -> None:
    long = "word " * 60
    text = render(report.table(None, ["a", "b"], [["x", long]]), report.UNLIMITED_WIDTH)
    assert len(text.splitlines()) == 5  # top, header, rule, the row, bottom


def test_flatten_and_csv_one_row_per_record() -> None:
    rows = [{"a": 1, "per": {"ttft_ms": 2.5, "x": None}, "ids": ["p", "q"]}, {"a": 2}]
    assert report.flatten(rows[0]) == {"a": 1, "per_ttft_ms": 2.5, "per_x": None, "ids": "p;q"}
    assert report.csv_text(rows).splitlines() == ["a,per_ttft_ms,per_x,ids", "1,2.5,,p;q", "2,,,"]


def test_counts_read_as_english_with_thousands_separators() -> None:
    assert report.count(1, "GPU") == "1 GPU"
    assert report.count(0, "GPU") == "0 GPUs"
    assert report.count(2, "instance") == "2 instances"
    assert report.count(12_288, "instance") == "12,288 instances"
    assert report.count(1, "entry", "entries") == "1 entry"
    assert report.count(3, "entry", "entries") == "3 entries"


def test_big_counts_in_tables_carry_separators_but_csv_keeps_plain_numbers() -> None:
    rows = [["h100-sxm fp8 tp2", 148, 1184, 20233.0, 436.38, True]]
    cols = ["candidate", "servers", "GPUs", "req/s", "conc.", "ok"]
    text = render(report.table(None, cols, rows), 200)
    assert {"148", "1,184", "20,233", "436.38", "true"} <= words(text)
    csv = report.csv_text([dict(zip(cols, rows[0], strict=True))])
    assert csv.splitlines()[1] == "h100-sxm fp8 tp2,148,1184,20233,436.38,true"


def test_the_first_column_never_wraps_and_borders_go_before_the_vertical_layout() -> None:
    rows = [["gb200-nvl72 fp4 tp2", 1, 2, "memory"], ["dgx-b200 fp4 tp1", 1, 2, "itl"]]
    cols = ["candidate", "servers", "GPUs", "binding"]
    t = report.table(None, cols, rows)
    bordered = len("gb200-nvl72 fp4 tp2") + 7 + 4 + 7 + 3 * 4 + 1  # 50: text + borders, pads
    assert t.widths(bordered) is not None and t.widths(bordered - 1) is None
    compact = render(t, bordered - 1)  # no borders: two cells between columns
    assert "gb200-nvl72 fp4 tp2  " in compact and "│" not in compact
    assert len(compact.splitlines()) == 2 + len(rows)  # header, rule, one line per row
    assert t.widths(len("gb200-nvl72 fp4 tp2") + 7 + 4 + 7 + 6, compact=True) is not None
    assert "candidate: gb200-nvl72 fp4 tp2" in render(t, 30)  # vertical


def test_numbers_for_text_never_turn_into_exponents() -> None:
    assert report.number(20_233.0) == "20,233"  # was 2.023e+04 with :,.4g
    assert report.number(1e10) == "10,000,000,000"
    assert report.number(9_999.0) == "9,999"
    assert report.number(28.0) == "28"
    assert report.number(23.148) == "23.15"
    assert report.number(0.5) == "0.5"
