"""A measured rate is compared per instance: its unit says how many instances it covers.

Per instance / per TP group: 1. Per DGX, server or node: num_gpus / GPUs per instance. Per GPU:
1 / GPUs per instance. Latencies are never scaled.
"""

from __future__ import annotations

import pytest
from measurement_row import row as measurement_row

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.io_measurements import Measurement
from inferencesize.measured_map import map_measurements
from inferencesize.validation import estimator_chooser, predict_all


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def row(metric: str, unit: str, tp: int = 2, num_gpus: int = 8) -> Measurement:
    return measurement_row(metric, unit=unit, tp=tp, num_gpus=num_gpus)


@pytest.mark.parametrize(
    ("unit", "scale"),
    [
        ("req/s", 1.0),
        ("output tok/s (per instance)", 1.0),
        ("output tok/s (whole TP group)", 1.0),
        ("req/s per DGX H100 (8 x TP2 instances)", 8 / 2),  # 4 TP2 instances on 8 GPUs
        ("tok/s per server", 8 / 2),
        ("tok/s per node", 8 / 2),
        ("output tok/s per GPU", 1 / 2),  # a TP2 instance's rate is shared by its 2 GPUs
        ("tok/s/gpu", 1 / 2),
    ],
)
def test_scale_follows_the_unit(catalog: Catalog, unit: str, scale: float) -> None:
    [mapped], skipped = map_measurements(catalog, [row("output_tok_s_total", unit)])
    assert not skipped
    assert mapped.scale == pytest.approx(scale)


def test_predicted_rate_is_scaled_and_latency_is_not(catalog: Catalog) -> None:
    rows = [
        row("req_per_s", "req/s"),
        row("req_per_s", "req/s per GPU"),
        row("req_per_s", "req/s per DGX"),
        row("ttft_ms_avg", "ms per GPU"),  # a latency is a latency, whatever the unit says
        row("ttft_ms_avg", "ms"),
    ]
    mapped, _ = map_measurements(catalog, rows)
    instance, per_gpu, per_dgx, ttft_gpu, ttft = (
        p.predicted for p in predict_all(estimator_chooser(catalog), mapped)
    )
    assert per_gpu == pytest.approx(instance / 2)
    assert per_dgx == pytest.approx(instance * 4)
    assert ttft_gpu == pytest.approx(ttft)


def test_per_server_without_gpu_count_is_per_instance(catalog: Catalog) -> None:
    [mapped], _ = map_measurements(catalog, [row("req_per_s", "req/s per node", num_gpus=0)])
    assert mapped.scale == 1.0
