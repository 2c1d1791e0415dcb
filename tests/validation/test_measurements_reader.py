"""The measurements reader reads a CSV row by row: it yields the rows of the whole read (the
text read at once, then its table of cells) on every published calibration file, and a file
that is not one is still one error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencesize.errors import InputError
from inferencesize.io_measurements import _row, by_column, read_csv_table, read_measurements

CALIBRATION = Path(__file__).resolve().parents[2] / "data" / "calibration"
FILES = sorted(CALIBRATION.glob("*.csv"))


@pytest.mark.skipif(not FILES, reason="data/calibration not present")
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_rows_equal_the_whole_read(path: Path) -> None:
    shown, header, table = read_csv_table(path, "a measurements CSV or GenAI-Perf export")
    whole = [_row(shown, line, by_column(header, cells)) for line, cells in table]
    assert read_measurements(path) == whole
    assert whole


def test_a_file_that_is_not_one_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_bytes(b"model,gpu,metric,value\nllama-3-8b,h100,ttft_ms_avg,1\n\xff\n")
    with pytest.raises(InputError, match=r"m\.csv: is not UTF-8 text"):
        read_measurements(path)
    path.write_text("model,gpu,metric\n")
    with pytest.raises(InputError, match=r"missing column\(s\) value"):
        read_measurements(path)
    with pytest.raises(InputError, match="is a directory"):
        read_measurements(tmp_path)
