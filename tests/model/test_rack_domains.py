"""Rack systems are one NVLink domain: TP and EP groups inside the rack's domain use NVLink,
never the network, even when they span its compute trays."""

from __future__ import annotations

import pytest

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.deployment import links
from inferencesize.parallelism import Parallelism


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_gh200_nvl32_is_one_32_gpu_nvlink_domain(catalog: Catalog) -> None:
    gpu, system = catalog.hardware("gh200-nvl32")
    assert system is not None and gpu.id == "gh200-144gb"
    assert (system.gpus_per_node, system.nvlink_domain_size) == (2, 32)


def test_tp32_on_gh200_nvl32_routes_over_nvlink(catalog: Catalog) -> None:
    gpu, system = catalog.hardware("gh200-nvl32")
    route = links(gpu, system, Parallelism(tp=32), 5e-6)
    # 16 trays of 2, one NVLink domain: 900 GB/s bidirectional -> 450 GB/s per direction
    assert route.tp.name == "nvlink"
    assert route.tp.bytes_per_s == pytest.approx(450e9)
    assert route.pp.name == "nvlink"


def test_beyond_the_rack_the_network_carries_the_group(catalog: Catalog) -> None:
    gpu, system = catalog.hardware("gh200-nvl32")
    assert links(gpu, system, Parallelism(tp=64), 5e-6).tp.name == "network"
    # the same 32-GPU TP group on 8-GPU servers (DGX H100) crosses the network
    h100, dgx = catalog.hardware("dgx-h100")
    assert links(h100, dgx, Parallelism(tp=32), 5e-6).tp.name == "network"


@pytest.mark.parametrize("rack", ["gb200-nvl72", "gb300-nvl72"])
def test_nvl72_tp_and_wide_ep_route_over_nvlink(catalog: Catalog, rack: str) -> None:
    gpu, system = catalog.hardware(rack)
    route = links(gpu, system, Parallelism(tp=8, ep=72, dp=9), 5e-6)
    assert route.tp.name == "nvlink"  # 8 GPUs: two 4-GPU trays
    assert route.ep is not None and route.ep.name == "nvlink"  # 72 GPUs: the whole rack
