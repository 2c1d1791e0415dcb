"""Rack systems are one NVLink domain: TP and EP groups inside the rack's domain use NVLink,
never the network, even when they span its compute trays."""

from __future__ import annotations

import pytest

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.comm import Link
from inferencesize.deployment import links, two_level_allreduce_link
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


def test_tp_across_dgx_servers_all_reduces_in_two_levels(catalog: Catalog) -> None:
    """TP16 on two DGX H100: NVLink 450 GB/s per direction inside, one 50 GB/s NIC per GPU
    between. Per byte: 2·(1/2)/(8 · 50e9) + 2·(7/8)/450e9 = 6.389e-12 s, i.e. the flat
    ring's 2·(15/16) per byte at 293.5 GB/s per GPU."""
    gpu, system = catalog.hardware("dgx-h100")
    route = links(gpu, system, Parallelism(tp=16), 5e-6)
    per_byte = 2 * 0.5 / (8 * 50e9) + 2 * 7 / 8 / 450e9
    assert route.tp.name == "network"
    assert route.tp.bytes_per_s == pytest.approx(2 * 15 / 16 / per_byte, rel=1e-12)
    assert route.tp.bytes_per_s == pytest.approx(293.5e9, rel=1e-3)
    # still slower per byte than the same message all-reduced inside one server
    assert 2 * 15 / 16 / route.tp.bytes_per_s > 2 * 7 / 8 / 450e9


def test_two_level_route_limits() -> None:
    nvlink, nic = Link("nvlink", 450e9, 5e-6), Link("network", 50e9, 25e-6)
    # one domain: nothing crosses the network
    assert two_level_allreduce_link(8, 8, nvlink, nic) is nic
    # ever more domains: the inter-domain term tends to 2 / (g · B_nic) per byte
    wide = two_level_allreduce_link(8 * 1024, 8, nvlink, nic)
    limit = 2.0 / (2.0 / (8 * 50e9) + 2 * 7 / 8 / 450e9)
    assert wide.bytes_per_s == pytest.approx(limit, rel=1e-3)
