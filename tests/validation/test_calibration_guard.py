"""What `calibrate` fits and when it may write: ``calibration.on_target`` keeps the rows of the
target GPU × precision and counts the others; ``calibration.worse_than_start`` compares a fit
with its starting set on the same rows, per metric, in the terms the table prints (median and
p90 absolute percentage error). Hand-built rows and predictions: the arithmetic is in the
comments."""

from __future__ import annotations

import pytest
from measurement_row import row

from inferencesize.calibration import WORSE_MARGIN, Worse, on_target, worse_than_start
from inferencesize.catalog import Catalog, load_catalog
from inferencesize.validation import Mapped, Prediction


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_on_target_keeps_the_gpu_and_precision_class_and_counts_the_rest(
    catalog: Catalog,
) -> None:
    rows = [
        row("itl_ms_avg", gpu="H100-SXM-80GB"),  # an alias of h100-sxm: kept
        row("ttft_ms_avg", gpu="dgx-h100"),  # a system of h100-sxm: kept
        row("itl_ms_avg", gpu="h100-sxm", precision="bf16"),  # other precision
        row("itl_ms_avg", gpu="h100-sxm", precision="fp16"),  # bf16 and fp16: one class
        row("itl_ms_avg", gpu="h200-sxm"),  # same compute die, still another GPU
        row("ttft_ms_avg", gpu="h200-sxm"),
        row("itl_ms_avg", gpu="Z900"),  # not in the catalog: named as stated
    ]
    kept, others = on_target(catalog, rows, "h100-sxm", "fp8")
    assert kept == rows[:2]
    assert others == [
        ("h200-sxm", "fp8", 2),
        ("Z900", "fp8", 1),
        ("h100-sxm", "bf16", 1),
        ("h100-sxm", "fp16", 1),
    ]
    # a bf16 target takes its fp16 rows too (same tensor units, one fitted value)
    kept, others = on_target(catalog, rows, "h100-sxm", "bf16")
    assert kept == rows[2:4]
    assert sum(n for *_, n in others) == len(rows) - 2


def test_on_target_reads_a_likely_precision_as_stated(catalog: Catalog) -> None:
    likely = row("itl_ms_avg", precision="bf16 (likely: no quant mode given; BF16 checkpoint)")
    assert on_target(catalog, [likely], "h100-sxm", "bf16") == ([likely], [])
    assert on_target(catalog, [likely], "h100-sxm", "fp8") == ([], [("h100-sxm", "bf16", 1)])


def preds(metric: str, errors: list[float]) -> list[Prediction]:
    """Rows measured at 100 predicted at 100 × (1 + error): absolute error = |error|."""
    out = []
    for i, e in enumerate(errors):
        m = row(metric, value=100.0, concurrency=str(i + 1))
        mapped = Mapped(m, candidate=None, mode="inflight", concurrency=i + 1.0, scale=1.0)  # type: ignore[arg-type]
        out.append(Prediction(mapped, 100.0 * (1 + e)))
    return out


def worse(before: dict[str, list[float]], after: dict[str, list[float]]) -> list[Worse]:
    b = [p for k, v in before.items() for p in preds(k, v)]
    a = [p for k, v in after.items() for p in preds(k, v)]
    return worse_than_start(b, a)


def test_a_fit_better_or_equal_on_every_metric_is_not_worse() -> None:
    assert worse({"itl_ms_avg": [0.1, -0.2, 0.3]}, {"itl_ms_avg": [0.05, -0.1, 0.1]}) == []
    same: dict[str, list[float]] = {"itl_ms_avg": [0.1, 0.2], "ttft_ms_avg": [0.3, -0.3]}
    assert worse(same, same) == []


def test_a_metric_worse_at_its_median_or_p90_is_named_with_both_values() -> None:
    # ITL errors 10, 20, 30 % → 10, 20, 30 %: unchanged. TTFT 10, 10, 10 % → 5, 30, 5 %:
    # median 10 → 5 % (better), p90 (numpy linear: 0.8 of the way from the 2nd to the 3rd
    # sorted value, 5 % + 0.8 × 25 % = 25 %) 10 → 25 %: worse by 15 points
    found = worse(
        {"itl_ms_avg": [0.1, 0.2, 0.3], "ttft_ms_avg": [0.1, -0.1, 0.1]},
        {"itl_ms_avg": [0.1, 0.2, 0.3], "ttft_ms_avg": [0.05, -0.3, 0.05]},
    )
    assert [(w.metric, w.statistic) for w in found] == [("ttft_ms_avg", "p90")]
    assert found[0].before == pytest.approx(0.10) and found[0].after == pytest.approx(0.25)
    # the median too: 10 → 20 % on every row
    found = worse({"itl_ms_avg": [0.1] * 3}, {"itl_ms_avg": [0.2] * 3})
    assert [(w.statistic, w.before, w.after) for w in found] == [
        ("median", pytest.approx(0.1), pytest.approx(0.2)),
        ("p90", pytest.approx(0.1), pytest.approx(0.2)),
    ]


def test_a_change_within_the_margin_is_not_worse() -> None:
    within = 0.10 + WORSE_MARGIN * 0.9
    beyond = 0.10 + WORSE_MARGIN * 1.1
    assert worse({"itl_ms_avg": [0.1]}, {"itl_ms_avg": [within]}) == []
    assert [w.statistic for w in worse({"itl_ms_avg": [0.1]}, {"itl_ms_avg": [beyond]})] == [
        "median",
        "p90",
    ]


def test_rows_the_fit_no_longer_predicts_make_it_worse() -> None:
    # three ITL rows predicted before, two after (the third out of memory, say): however
    # small the errors on the two, the fit lost a row
    found = worse({"itl_ms_avg": [0.2, 0.2, 0.2]}, {"itl_ms_avg": [0.0, 0.0]})
    assert [(w.metric, w.statistic, w.before, w.after) for w in found] == [
        ("itl_ms_avg", "predicted", 3, 2)
    ]
    found = worse({"itl_ms_avg": [0.0], "ttft_ms_avg": [0.1]}, {"itl_ms_avg": [0.0]})
    assert [(w.metric, w.statistic, w.after) for w in found] == [("ttft_ms_avg", "predicted", 0)]
