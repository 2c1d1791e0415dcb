"""Little's law on measured closed-loop points: clients = requests/s × mean E2E in steady state.

Hand-built rows; the ratios are written out as arithmetic. The NIM data's own figures are
checked too: its long-request runs at 150–250 clients are measurably off steady state.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from measurement_row import row

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.io_measurements import Measurement, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.validation import STEADY_TOLERANCE, steady_checks

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def checks_of(catalog: Catalog, rows: list[Measurement]) -> list[tuple[float, float, bool]]:
    mapped, skipped = map_measurements(catalog, rows)
    assert not skipped
    return sorted((c.clients, c.ratio, c.steady) for c in steady_checks(mapped))


def test_steady_and_transient_points(catalog: Catalog) -> None:
    rows = [
        # 10 clients, 2 req/s, 5 s each: 10 / (2 × 5) = 1 (steady)
        row("req_per_s", 2.0),
        row("e2e_ms_avg", 5000.0),
        row("ttft_ms_avg", 100.0),
        # 150 clients, 0.73 req/s, 173 s each: 150 / (0.73 × 173) = 1.1877 (transient)
        row("req_per_s", 0.73, "150"),
        row("e2e_ms_avg", 173_000.0, "150"),
    ]
    (c10, r10, s10), (c150, r150, s150) = checks_of(catalog, rows)
    assert (c10, s10) == (10.0, True)
    assert r10 == pytest.approx(1.0)
    assert (c150, s150) == (150.0, False)
    assert r150 == pytest.approx(150 / (0.73 * 173))


def test_tolerance_edges(catalog: Catalog) -> None:
    inside = 1.0 + STEADY_TOLERANCE * 0.9  # 10 / (2 × 5 / 1.045)
    outside = 1.0 + STEADY_TOLERANCE * 1.1
    rows = [
        row("req_per_s", 2.0 / inside),
        row("e2e_ms_avg", 5000.0),
        row("req_per_s", 2.0 / outside, "10.0", notes="repeat"),
        row("e2e_ms_avg", 5000.0, "10.0", notes="repeat"),
    ]
    flags = {round(r, 4): s for _, r, s in checks_of(catalog, rows)}
    assert flags == {round(inside, 4): True, round(outside, 4): False}


def test_per_dgx_rate_is_divided_by_its_instances(catalog: Catalog) -> None:
    # 8 one-GPU instances on a DGX: 16 req/s per DGX is 2 req/s per instance: 10 / (2 × 5) = 1
    rows = [
        row("req_per_s", 16.0, num_gpus=8, unit="req/s per DGX"),
        row("e2e_ms_avg", 5000.0, num_gpus=8),
    ]
    [(_, ratio, steady)] = checks_of(catalog, rows)
    assert ratio == pytest.approx(1.0)
    assert steady


def test_points_without_both_metrics_or_not_serving_are_not_checked(catalog: Catalog) -> None:
    rows = [
        row("req_per_s", 2.0),  # no E2E at this point
        row("e2e_ms_avg", 5000.0, "20"),  # no req/s at this one
        row("itl_ms_avg", 10.0, "8", source="static", notes="static batching"),
        row("e2e_ms_avg", 900.0, "8", source="static", notes="static batching"),
    ]
    assert checks_of(catalog, rows) == []


def test_nim_data_long_runs_are_off_steady_state(catalog: Catalog) -> None:
    rows = read_measurements(REPO / "data/calibration/measurements.csv")
    mapped, _ = map_measurements(catalog, [m for m in rows if m.source == "nvidia_dli_nim"])
    checks = steady_checks(mapped)
    off = [c for c in checks if not c.steady]
    # Every run at 25 clients or fewer obeys Little's law within 5 %. The off ones are at 50
    # clients and more, with the longest requests first (70B on A100 at 7000 tokens, E2E
    # ~80 s at 50 clients), and reach 1.9 × (measured: 48 of 469, 1.050–1.910).
    assert len(checks) == 469
    assert 30 <= len(off) <= 70
    assert min(c.clients for c in off) >= 50
    assert max(c.ratio for c in off) > 1.5
    assert all(c.ratio > 1 for c in off)
