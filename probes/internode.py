"""The network between nodes, as NCCL sees it: collectives on the rails of a multi-node launch.

Launched on several nodes (``torchrun --nnodes N …`` or ``deepspeed --hostfile …``), every rank joins the
ring of the ranks with its local rank on the other nodes (a rail: NCCL's inter-node traffic goes
GPU i → NIC i → GPU i of the next node), and all rails run their collectives at the same time, as the
inter-node phase of a hierarchical collective does. One rail's bus bandwidth times the rails of a node is
what the node's NICs carried: the ``net_bps`` the step-time model divides by. NVLink multicast stays off.
"""

from __future__ import annotations

import os
from typing import Any

from knowledge.schema import CollectivePoint, InterNodeProbe
from probes.collectives import OPS, QUICK_SIZES, TOY_SIZES, multicast_off


def launch_shape(env: dict[str, str] | None = None) -> tuple[int, int] | None:
    """(nodes, ranks per node) when this process was launched on several nodes, else None.

    torchrun sets WORLD_SIZE and LOCAL_WORLD_SIZE; DeepSpeed's launcher WORLD_SIZE and LOCAL_SIZE."""
    env = os.environ if env is None else env
    world = int(env.get("WORLD_SIZE", "1"))
    local = int(env.get("LOCAL_WORLD_SIZE") or env.get("LOCAL_SIZE") or world)
    if local < 1 or world <= local or world % local:
        return None
    return world // local, local


def node_busbw_gbs(points: list[CollectivePoint], per_node: int) -> float:
    """GB/s one node's NICs carried: the rails' best all-reduce bus bandwidth at the largest size, times the rails."""
    ar = [p for p in points if p.op == "all_reduce"] or points
    biggest = max(p.size_bytes for p in ar)
    return per_node * max(p.busbw_gbs for p in ar if p.size_bytes == biggest)


def measure_internode(sizes: tuple[int, ...] = QUICK_SIZES, ops: tuple[str, ...] = OPS, repeats: int = 10) -> InterNodeProbe:
    """Inside an initialised process group spanning several nodes (ranks numbered node by node, as torchrun
    and DeepSpeed's launcher number them): every rail measures at once."""
    import torch.distributed as dist

    from probes.collectives import measure_collectives

    shape = launch_shape()
    if shape is None:
        raise RuntimeError("not launched on several nodes (WORLD_SIZE must be a multiple > 1 of the local world size)")
    nodes, per_node = shape
    local_rank = dist.get_rank() % per_node
    multicast_off()
    # every rank creates every group, in the same order (torch.distributed's rule)
    rails = [dist.new_group([n * per_node + r for n in range(nodes)]) for r in range(per_node)]
    dist.barrier()
    points = measure_collectives(sizes, ops, repeats=repeats, group=rails[local_rank])
    return InterNodeProbe(nodes=nodes, gpus_per_node=per_node, busbw_gbs=node_busbw_gbs(points, per_node), points=points)


def run(device: str, quick: bool) -> InterNodeProbe:
    """Initialise the process group of this launch, measure, tear it down (every rank gets the result)."""
    import torch
    import torch.distributed as dist

    multicast_off()
    kwargs: dict[str, Any] = {}
    if device.startswith("cuda"):
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        backend = "nccl"
        kwargs["device_id"] = torch.device("cuda", local)
    else:
        backend = "gloo"
    dist.init_process_group(backend, **kwargs)
    try:
        sizes = TOY_SIZES if device == "cpu" else QUICK_SIZES if quick else QUICK_SIZES + (2**30,)
        return measure_internode(sizes, repeats=3 if device == "cpu" else 10)
    finally:
        dist.destroy_process_group()
