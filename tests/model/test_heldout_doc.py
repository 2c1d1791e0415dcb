"""docs/heldout.md is what benchmarks/heldout.py writes, and docs/accuracy.md quotes its table.

Rerunning the held-out fits takes minutes (``python benchmarks/heldout.py --check``), so this
test holds the page to the generator's format: its header, every scheme, the metrics' columns,
and the figures well-formed; the numbers themselves are the script's to check.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "heldout.py"
DOC = ROOT / "docs" / "heldout.md"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("heldout", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script() -> ModuleType:
    if not SCRIPT.is_file() or not DOC.is_file():
        pytest.skip("docs/ and benchmarks/ are not part of this source tree")
    return _script()


def test_page_is_the_generators(script: ModuleType) -> None:
    text = DOC.read_text(encoding="utf-8")
    table = "\n".join(line for line in text.splitlines() if line.startswith("|"))
    assert text == script.page(table)  # everything but the table is the generator's


def test_every_scheme_and_target_metric_is_reported(script: ModuleType) -> None:
    rows = [line for line in DOC.read_text(encoding="utf-8").splitlines() if line[:2] == "| "]
    body = [r.split(" | ") for r in rows[1:]]
    held = {cells[0].removeprefix("| ") for cells in body}
    for what, _ in script.SCHEMES.values():
        assert any(h.startswith(what) for h in held), what
    modern_gpu = {c[1] for c in body if c[0] == "| one GPU, modern"}
    assert {"tpot_ms_avg", "ttft_ms_avg"} <= modern_gpu
    for cells in body:
        assert int(cells[2]) > 0
        assert re.fullmatch(r"\d+\.\d%", cells[3]) and re.fullmatch(r"\d+\.\d% \|", cells[4])


def test_accuracy_page_quotes_the_table() -> None:
    accuracy = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    table = [line for line in DOC.read_text(encoding="utf-8").splitlines() if line[:1] == "|"]
    assert "\n".join(table) in accuracy
