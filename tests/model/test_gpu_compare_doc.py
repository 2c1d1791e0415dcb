"""docs/gpu-comparison.md is exactly what benchmarks/gpu_compare.py writes today, and the
relative throughput of measured GPU pairs it reports stays close to the measurements."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_compare.py"
DOC = ROOT / "docs" / "gpu-comparison.md"


@pytest.fixture(scope="module")
def generated() -> str:
    if not SCRIPT.is_file() or not DOC.is_file():
        pytest.skip("docs/ and benchmarks/ are not part of this source tree")
    spec = importlib.util.spec_from_file_location("gpu_compare", SCRIPT)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.render())


def test_page_is_up_to_date(generated: str) -> None:
    assert DOC.read_text(encoding="utf-8") == generated, "run python benchmarks/gpu_compare.py"


def test_measured_pairs_keep_their_order(generated: str) -> None:
    # where the data measures both GPUs, the predicted ratio is on the same side of 1 as the
    # measured one whenever the measured GPUs differ by more than 10 %
    for m in re.finditer(r"^\| (\S+) / (\S+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|", generated, re.M):
        measured, predicted = float(m.group(4)), float(m.group(5))
        if abs(measured - 1) > 0.1:
            assert (predicted - 1) * (measured - 1) > 0, m.group(0)
