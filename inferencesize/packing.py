"""Instances for a peak rate, and the servers (nodes) they are packed onto.

* Instances: the fewest whose summed rate covers the peak, ceil(peak / rate), at least one
  (a rate within 1e-9 of a whole multiple counts as that multiple).
* Servers: a multi-node instance (more GPUs than a node) takes ceil(per / node) whole nodes;
  otherwise floor(node / per) instances share a node (GPUs left over stay idle: an instance
  never spans two nodes unless it needs more than one).

Elementwise on numbers or numpy arrays (the sweep sizes every candidate for many peaks at once);
:func:`pack_servers` and :func:`instances_for` are the scalar forms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Slack under a whole multiple of the rate (float noise must not add an instance).
RATE_SLACK = 1e-9


def instances_needed(peak_rps: Any, rate_per_instance: Any, minimum: Any = 1) -> Any:
    """max(minimum, ceil(peak / rate)) elementwise (float results)."""
    return np.maximum(minimum, np.ceil(peak_rps / rate_per_instance - RATE_SLACK))


def servers_needed(instances: Any, gpus_per_instance: Any, gpus_per_node: Any) -> Any:
    """Servers for ``instances`` elementwise: whole nodes per multi-node instance, else
    floor(node / per) instances to a node."""
    per, node = gpus_per_instance, gpus_per_node
    whole_nodes = -(-per // node)  # ceil(per / node)
    per_node = np.maximum(node // per, 1)
    return np.where(per > node, instances * whole_nodes, -(-instances // per_node))


def instances_for(peak_rps: float, rate_per_instance: float, minimum: int = 1) -> int:
    """Instances that serve ``peak_rps`` at ``rate_per_instance`` each (at least ``minimum``)."""
    return int(instances_needed(peak_rps, rate_per_instance, minimum))


def pack_servers(instances: int, gpus_per_instance: int, gpus_per_node: int) -> int:
    """Nodes for ``instances``: a multi-node instance takes whole nodes; otherwise
    ``floor(gpus_per_node / gpus_per_instance)`` instances share a node."""
    return int(servers_needed(instances, gpus_per_instance, gpus_per_node))
