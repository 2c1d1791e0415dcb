"""Instances for a peak and the servers they are packed onto (packing.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from inferencesize.packing import instances_for, instances_needed, pack_servers, servers_needed


def test_instances_cover_the_peak() -> None:
    assert instances_for(10.0, 3.0) == 4  # 10 / 3 = 3.33 -> 4
    assert instances_for(9.0, 3.0) == 3  # an exact multiple needs no spare
    assert instances_for(9.0 + 1e-12, 3.0) == 3  # float noise adds none
    assert instances_for(0.5, 3.0) == 1  # at least one
    assert instances_for(0.0, 3.0, minimum=0) == 0  # an idle hour of an autoscaled fleet


def test_servers_pack_whole_instances() -> None:
    assert pack_servers(5, 2, 8) == 2  # 4 instances of 2 GPUs to an 8-GPU node: ceil(5 / 4)
    assert pack_servers(3, 3, 8) == 2  # floor(8 / 3) = 2 to a node, 2 GPUs idle: ceil(3 / 2)
    assert pack_servers(3, 16, 8) == 6  # multi-node: 2 whole nodes each
    assert pack_servers(2, 12, 8) == 4  # 12 GPUs take ceil(12 / 8) = 2 nodes
    assert pack_servers(1, 8, 8) == 1


@pytest.mark.parametrize("node", [4, 8, 72])
def test_array_form_agrees_with_the_scalar_form(node: int) -> None:
    grid = list(itertools.product(range(1, 40), (1, 2, 3, 4, 8, 16, 24, 64)))
    inst = np.array([g[0] for g in grid], dtype=float)
    per = np.array([g[1] for g in grid])
    got = servers_needed(inst, per, node)
    assert got.tolist() == [pack_servers(i, p, node) for i, p in grid]
    peaks = np.array([0.1, 2.9, 3.0, 7.5, 300.0])
    want = [instances_for(float(x), 3.0) for x in peaks]
    assert instances_needed(peaks, 3.0).tolist() == want
