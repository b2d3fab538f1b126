"""Collectives across nodes: NVLink or PCIe inside a node, the network across. Pure functions, seconds.

NCCL's cost model (time = latency + bytes / algorithm bandwidth) in nccl-tests conventions: ``n_bytes`` is
the whole buffer (all-reduce's buffer, all-gather's output, reduce-scatter's input); a rank sends
2(n-1)/n of it in an all-reduce and (n-1)/n in an all-gather or reduce-scatter, which is why nccl-tests'
bus bandwidth compares with one link whatever n is.

- Ring (every op): NCCL lays its rings out node by node, one ring per NIC (rail); each node's NICs
  together carry as many bytes as each GPU's link, all hops pipelined, so the slower of the two sets the
  pace. Latency: n-1 steps (2(n-1) for all-reduce), each waiting for its network hop.
- Tree (all-reduce only): a chain inside each node and NCCL's double binary tree across nodes. Each node
  sends the buffer up (reduce) and down (broadcast): 2·S where the ring sends 2(n-1)/n·S, but only
  2·log2(nodes) network steps. NCCL picks, per message, whichever its model says is faster; so do we.
- Hierarchical phases (ZeRO++'s secondary partition and quantized gradients, MiCS): a collective inside
  each node (``intra_s``) and one across nodes carried by all NICs of each node at once (``inter_s``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER = "all_reduce", "all_gather", "reduce_scatter"


@dataclass(frozen=True)
class Topology:
    """Ranks spread evenly over nodes, with the bandwidths a collective achieves on each level."""

    nodes: int
    per_node: int  # ranks on each node
    intra_bps: float  # achieved per-GPU one-direction link inside a node, bytes/s (link x efficiency)
    intra_latency_s: float  # one collective call inside a node
    net_bps: float  # achieved per node, one direction, all its NICs, bytes/s (line rate x efficiency)
    net_latency_s: float  # one network step

    @property
    def ranks(self) -> int:
        return self.nodes * self.per_node


def bus_factor(op: str, n: int) -> float:
    """Bytes a rank sends per byte of buffer: 2(n-1)/n for all-reduce, (n-1)/n otherwise."""
    if n <= 1:
        return 0.0
    return (2.0 if op == ALL_REDUCE else 1.0) * (n - 1) / n


def _pace_bps(t: Topology) -> float:
    """The slower of a GPU's link and its node's NICs (a rank alone on its node uses no link inside)."""
    return t.net_bps if t.per_node <= 1 else min(t.intra_bps, t.net_bps)


def intra_s(op: str, n_bytes: float, ranks: int, t: Topology, calls: float = 1.0) -> float:
    """``op`` among ``ranks`` GPUs of one node (the single-node ring)."""
    if ranks <= 1 or n_bytes <= 0:
        return 0.0
    return bus_factor(op, ranks) * n_bytes / t.intra_bps + calls * t.intra_latency_s


def inter_s(op: str, n_bytes: float, nodes: int, t: Topology, calls: float = 1.0, share: float = 1.0) -> float:
    """``op`` of an ``n_bytes`` buffer across ``nodes`` nodes, the node's NICs carrying it in parallel
    rails; ``share`` of the NICs' bandwidth is available to it (concurrent groups split the rest)."""
    if nodes <= 1 or n_bytes <= 0:
        return 0.0
    steps = (2 if op == ALL_REDUCE else 1) * (nodes - 1)
    return bus_factor(op, nodes) * n_bytes / (t.net_bps * share) + calls * steps * t.net_latency_s


def ring_s(op: str, n_bytes: float, t: Topology) -> float:
    """One ring collective over every rank of ``t``."""
    n = t.ranks
    if n <= 1:
        return 0.0
    if t.nodes <= 1:
        return intra_s(op, n_bytes, n, t)
    steps = (2 if op == ALL_REDUCE else 1) * (n - 1)
    return bus_factor(op, n) * n_bytes / _pace_bps(t) + t.intra_latency_s + steps * t.net_latency_s


def tree_all_reduce_s(n_bytes: float, t: Topology) -> float:
    """NCCL's tree all-reduce: chain inside the node, double binary tree across nodes."""
    hops = 2 * math.ceil(math.log2(max(t.nodes, 1)))
    return 2.0 * n_bytes / _pace_bps(t) + t.intra_latency_s + hops * t.net_latency_s


def collective_s(op: str, n_bytes: float, t: Topology, calls: float = 1.0) -> float:
    """``calls`` equal messages of ``n_bytes`` in all, over every rank of ``t``: ring, or for all-reduce
    across nodes the tree when that is faster at this message size (NCCL's choice)."""
    if t.ranks <= 1 or n_bytes <= 0 or calls <= 0:
        return 0.0
    per_call = n_bytes / calls
    best = ring_s(op, per_call, t)
    if op == ALL_REDUCE and t.nodes > 1:
        best = min(best, tree_all_reduce_s(per_call, t))
    return calls * best


def algorithm(op: str, n_bytes: float, t: Topology) -> str:
    """'ring' or 'tree': what ``collective_s`` takes for one message of ``n_bytes``."""
    if op == ALL_REDUCE and t.nodes > 1 and tree_all_reduce_s(n_bytes, t) < ring_s(op, n_bytes, t):
        return "tree"
    return "ring"
