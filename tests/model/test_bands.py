"""Error bands (inferencesize.bands): the percentiles, the label's fallbacks, the model family,
and the shipped table (data/calibration/bands.json) as io_bands reads it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from inferencesize.bands import (
    EVERY_ROW,
    MIN_ROWS,
    Band,
    BandTable,
    coverage,
    fit_band,
    label,
    model_family,
)
from inferencesize.catalog import Catalog, load_catalog
from inferencesize.errors import InputError
from inferencesize.io_bands import BANDS_FILE, read_bands, shipped_bands


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_band_is_the_10th_and_90th_percentile() -> None:
    # ratios 1..11: the 10th percentile sits at rank 0.1 × 10 = 1 (value 2), the 90th at
    # rank 9 (value 10); numpy's linear interpolation lands on them exactly
    band = fit_band([float(x) for x in range(1, 12)], "x")
    assert band.low == pytest.approx(2.0) and band.high == pytest.approx(10.0)
    assert band.rows == 11 and band.tail == 10.0
    # ratios 1..10: ranks 0.9 and 8.1 -> 1.9 and 9.1
    band = fit_band([float(x) for x in range(1, 11)], "x")
    assert band.low == pytest.approx(1.9) and band.high == pytest.approx(9.1)
    # widened to the 0th-100th percentile: the smallest and largest ratio
    band = fit_band([3.0, 1.0, 2.0], "x", tail=0.0)
    assert (band.low, band.high) == (1.0, 3.0)


def test_band_scales_a_prediction_and_counts_coverage() -> None:
    band = Band(0.8, 1.5, 100, "x")
    assert band.around(10.0) == (8.0, 15.0)
    # 0.8 and 1.5 are inside (edges included), 0.79 and 1.51 not: 2 of 4
    assert coverage(band, [0.79, 0.8, 1.5, 1.51]) == 0.5


def test_fit_band_refuses_what_is_not_a_ratio() -> None:
    with pytest.raises(ValueError):
        fit_band([], "x")
    with pytest.raises(ValueError):
        fit_band([1.0, 0.0], "x")


def test_a_label_without_enough_rows_takes_its_trust_level_then_every_row() -> None:
    own = label("calibrated", True)
    enough, few = MIN_ROWS, MIN_ROWS - 1
    table = BandTable(
        {
            ("itl", own): Band(0.9, 1.1, few, own),
            ("itl", "calibrated"): Band(0.8, 1.3, enough, "calibrated"),
            ("itl", EVERY_ROW): Band(0.5, 2.0, 10 * enough, EVERY_ROW),
        },
        {},
    )
    found = table.band("itl", "calibrated", True)
    assert found is not None and found.label == "calibrated"
    # a trust level without its own band: every row
    found = table.band("itl", "datasheet", False)
    assert found is not None and found.label == EVERY_ROW
    assert table.band("ttft", "calibrated", True) is None  # nothing for that metric


def test_model_family_is_the_structure(catalog: Catalog) -> None:
    assert model_family(catalog.model("llama-3.1-70b")) == "dense-gqa"
    assert model_family(catalog.model("llama-2-7b")) == "dense-mha"
    assert model_family(catalog.model("gpt-oss-120b")) == "moe-sliding"
    assert model_family(catalog.model("deepseek-r1")) == "moe-mla"
    assert model_family(catalog.model("deepseek-v3.2")) == "moe-mla-sparse"
    assert model_family(catalog.model("qwen3-next-80b-a3b")) == "moe-linear"
    # two sizes of one structure are one family
    a, b = catalog.model("llama-3.1-8b"), catalog.model("llama-3.1-70b")
    assert model_family(a) == model_family(b)


def test_family_measured_is_per_efficiency_set(catalog: Catalog) -> None:
    table = BandTable({}, {"set-a": frozenset({"dense-gqa"})})
    llama = catalog.model("llama-3.1-70b")
    assert table.family_measured("set-a", llama)
    assert not table.family_measured("set-b", llama)
    assert not table.family_measured("set-a", catalog.model("deepseek-r1"))


def test_shipped_bands_cover_both_metrics_and_are_ordered() -> None:
    table = shipped_bands()
    for metric in ("itl", "ttft"):
        pooled = table.bands[(metric, EVERY_ROW)]
        assert 0 < pooled.low < 1 < pooled.high  # some predictions too slow, some too fast
        assert pooled.rows >= MIN_ROWS
    for band in table.bands.values():
        assert 0 < band.low <= band.high and band.rows >= MIN_ROWS
    # every trust level the product labels finds a band
    for trust in ("calibrated", "same-architecture", "datasheet"):
        for measured in (True, False):
            assert table.band("itl", trust, measured) is not None


def test_a_malformed_bands_file_names_the_file_and_entry(tmp_path: Path) -> None:
    path = tmp_path / "bands.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match=r"bands\.json: cannot read the error bands"):
        read_bands(path)
    entry = {"metric": "itl", "label": "x", "low": 2.0, "high": 1.0, "rows": 40}
    entry["percentiles"] = [10.0, 90.0]
    path.write_text(json.dumps({"measured_families": {}, "bands": [entry]}), encoding="utf-8")
    with pytest.raises(InputError, match=r"bands.json: bands\[0\]: low and high"):
        read_bands(path)
    del entry["rows"]
    path.write_text(json.dumps({"measured_families": {}, "bands": [entry]}), encoding="utf-8")
    with pytest.raises(InputError, match=r"bands\[0\]: malformed entry"):
        read_bands(path)


def test_the_wheel_ships_the_bands_where_they_are_read() -> None:
    root = Path(__file__).resolve().parents[2]
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    included = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    # the wheel's catalog root is inferencesize/_catalog (catalog.builtin_root)
    assert included[BANDS_FILE.as_posix()] == f"inferencesize/_catalog/{BANDS_FILE.as_posix()}"
    assert (root / BANDS_FILE).is_file()
