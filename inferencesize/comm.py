"""Collective communication times (alpha-beta model) on the link an instance uses.

t = alpha + volume / (bandwidth_per_direction · efficiency). Ring all-reduce moves
2 (n − 1) / n of the message per GPU; all-to-all (n − 1) / n; point-to-point the whole message.
Bandwidths in bytes/s per direction: NVLink/IF bidirectional figures are halved by the caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Host-link bandwidth per direction for PCIe x16 by generation (bytes/s, usable ~80 % of line).
PCIE_BYTES_PER_S = {3: 12.8e9, 4: 25.6e9, 5: 51.2e9, 6: 102.4e9, 7: 204.8e9}


@dataclass(frozen=True)
class Link:
    """One interconnect as the collectives see it."""

    name: str  # "nvlink", "pcie", "network"
    bytes_per_s: float  # per GPU, per direction
    latency_s: float  # alpha: fixed cost per collective


def allreduce_time(message_bytes: float, n: int, link: Link, efficiency: float = 1.0) -> float:
    """Ring all-reduce of ``message_bytes`` over ``n`` GPUs (0 for one GPU)."""
    if n <= 1 or message_bytes <= 0:
        return 0.0
    volume = 2.0 * (n - 1) / n * message_bytes
    return allreduce_latency(n, link) + volume / (link.bytes_per_s * efficiency)


def allreduce_latency(n: int, link: Link) -> float:
    """Fixed cost of an all-reduce over ``n`` GPUs: ``latency_s`` (the two-GPU cost) times the
    depth log2(n) of the synchronisation. The small messages of decode steps go through the
    engines' one-shot / two-shot kernels (every GPU reads its peers' buffers in parallel, then
    a flag barrier) or NVLink SHARP, not a ring of n − 1 hops: the cost grows with the depth of
    the barrier, not with the peer count (NCCL tree and recursive doubling: log2 n as well)."""
    return link.latency_s * math.log2(n) if n > 1 else 0.0


def alltoall_time(message_bytes: float, n: int, link: Link, efficiency: float = 1.0) -> float:
    """All-to-all where each GPU holds ``message_bytes`` and keeps 1/n of it."""
    if n <= 1 or message_bytes <= 0:
        return 0.0
    return link.latency_s + (n - 1) / n * message_bytes / (link.bytes_per_s * efficiency)


def p2p_time(message_bytes: float, link: Link, efficiency: float = 1.0) -> float:
    """One point-to-point send (pipeline stage boundary, KV transfer)."""
    if message_bytes <= 0:
        return 0.0
    return link.latency_s + message_bytes / (link.bytes_per_s * efficiency)
