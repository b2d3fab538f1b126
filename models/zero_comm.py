"""What each ZeRO stage sends per micro-batch and per optimizer step, in seconds. Pure functions.

ZeRO-0 (DeepSpeed's BF16_Optimizer) and plain DDP all-reduce the gradients once per step; ZeRO-1 reduces
them at the accumulation boundary, ZeRO-2 in every backward, both then all-gather the updated 16-bit
weights; ZeRO-3 all-gathers every weight in forward and again in backward (and for recomputation), and
reduce-scatters the gradients in every backward.

On several nodes the same collectives run over all ranks through ``models.collectives``, and the two
ZeRO-3 variants built for slow networks change what crosses them:

- ZeRO++ (Wang et al. 2023, arXiv 2306.10209): qwZ all-gathers int8 weights in forward (half the bytes,
  plus a dequantization pass); hpZ keeps a secondary 16-bit copy of the weights partitioned inside the
  node, so backward's all-gathers never leave it; qgZ sends int4 gradients through an all-to-all inside
  the node and then across nodes (a quarter of the bytes), instead of a reduce-scatter over every rank.
- MiCS (Zhang et al. 2022, arXiv 2205.00119): weights, gradients and optimizer states are sharded within
  groups of ``mics_shard_size`` GPUs and replicated across groups; the gathers stay in the group, and
  only the gradient shards are all-reduced across groups, once per optimizer step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from knowledge.efficiency import Efficiencies
from models.collectives import ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER, Topology, collective_s, inter_s, intra_s
from models.roofline import Ceilings
from models.setup import TrainSetup

# Memory traffic of quantized communication, bytes per element: qwZ's receiver reads the int8 weight and
# writes it back in 16 bits; qgZ quantizes to int4 and back twice (inside the node, then across), each
# round reading 2 B and writing 0.5 B, then reading 0.5 B and writing 2 B.
QWZ_DEQUANT_BYTES = 3.0
QGZ_BYTES = 2 * (2.0 + 0.5 + 0.5 + 2.0)

Collective = Callable[[str, float, float], float]

# ZeRO-3 gathers each weight twice per micro-batch, recomputation or not: DeepSpeed keeps a gathered parameter
# whose next use comes within ``stage3_max_reuse_distance`` elements (default 1e9), "useful when activation
# checkpointing is enabled, where we do a forward recompute and backward pass" (DeepSpeed's config docs), so the
# checkpointed forward's gather serves the backward right after it. The study's rows agree: with recomputation,
# ZeRO-3 on its PCIe boxes runs 0.99x (RTX 4090, mb 1) to 0.95x (RTX 3090) as fast as without, where a third
# gather would make it 0.7x (Zhang et al. 2023, Table III). Its module hooks still run on all three passes.
ZERO3_GATHER_PASSES = 2


def zero3_hook_passes(recompute: bool) -> int:
    """Passes over the modules whose ZeRO-3 hooks run: forward, backward, and the recomputed forward."""
    return 2 + int(recompute)


@dataclass(frozen=True)
class Comm:
    per_micro_batch_s: float  # in every backward (overlaps it)
    per_step_s: float  # once per optimizer step
    in_step_s: float = 0.0  # the part of ``per_step_s`` DeepSpeed runs inside its optimizer step (the all-gather of
    # the updated 16-bit weights), where the backward's reductions end before it


def _collective_s(n_bytes: float, ranks: int, c: Ceilings, eff: Efficiencies, calls: float, factor: float) -> float:
    """Ring collective inside one node: ``factor`` = 2(n-1)/n for all-reduce, (n-1)/n for all-gather/reduce-scatter."""
    if ranks <= 1 or c.link_bps <= 0:
        return 0.0
    return factor * n_bytes / (c.link_bps * c.link_eff) + calls * eff.collective_latency_s


def topology(s: TrainSetup, eff: Efficiencies, c: Ceilings) -> Topology:
    """The case's ranks over its nodes, with the link and network bandwidths a collective achieves."""
    return Topology(nodes=s.nodes, per_node=s.per_node, intra_bps=c.link_bps * c.link_eff,
                    intra_latency_s=eff.collective_latency_s, net_bps=c.net_bps * c.net_eff, net_latency_s=c.net_latency_s)


def collective_fn(s: TrainSetup, eff: Efficiencies, c: Ceilings) -> Collective:
    """(op, bytes, calls) -> seconds over every rank of the case: the single-node ring on one node, the
    hierarchical model of ``models.collectives`` across several."""
    n = s.ranks
    if s.nodes <= 1:
        ag, ar = (n - 1) / max(n, 1), 2 * (n - 1) / max(n, 1)
        factor = {ALL_REDUCE: ar, ALL_GATHER: ag, REDUCE_SCATTER: ag}
        return lambda op, n_bytes, calls: _collective_s(n_bytes, n, c, eff, calls, factor[op])
    topo = topology(s, eff, c)
    return lambda op, n_bytes, calls: collective_s(op, n_bytes, topo, calls)


def _group(t: Topology, size: int) -> Topology:
    """The topology of one group of ``size`` consecutive ranks (inside a node, or whole nodes)."""
    return Topology(max(1, size // t.per_node), min(size, t.per_node), t.intra_bps, t.intra_latency_s,
                    t.net_bps, t.net_latency_s)


def zero_communication(s: TrainSetup, eff: Efficiencies, c: Ceilings, layer_calls: float) -> Comm:
    """Seconds of communication of one micro-batch and of one optimizer step (before any overlap).

    ``layer_calls``: ZeRO-3's all-gathers per pass (one per fetched module)."""
    case = s.case
    coll = collective_fn(s, eff, c)
    half = s.half_bytes
    grad_bytes = s.trainable * half
    all_16bit = (s.trainable + s.frozen_16bit) * half
    per_mb, per_step = 0.0, 0.0
    in_step = 0.0
    if case.engine == "pytorch" or s.zero == 0:
        per_step = coll(ALL_REDUCE, grad_bytes, 1 + grad_bytes / 1e9)
        if case.engine == "deepspeed":  # BF16_Optimizer gathers the updated 16-bit weights
            in_step = coll(ALL_GATHER, s.trainable * half, 1)
    elif s.zero in (1, 2):
        # ZeRO-2 reduce-scatters in every backward; ZeRO-1 reduces once at the accumulation boundary
        rs = coll(REDUCE_SCATTER, s.trainable * half, 1 + s.trainable / 2e8)
        if s.zero == 2:
            per_mb = rs
        else:
            per_step += rs
        in_step = coll(ALL_GATHER, s.trainable * half, 1 + s.trainable / 2e8)
    elif case.mics_shard_size or case.zero_quantized_weights or case.zero_hpz_partition_size > 1 or case.zero_quantized_gradients:
        return _zero3_variant(s, eff, c, coll, layer_calls)
    else:  # ZeRO-3: gather every weight in forward and again in backward
        per_mb = ZERO3_GATHER_PASSES * coll(ALL_GATHER, all_16bit, layer_calls)
        per_mb += coll(REDUCE_SCATTER, s.trainable * half, 1 + s.trainable / 2e8)
    return Comm(per_mb, per_step + in_step, in_step)


def _zero3_variant(s: TrainSetup, eff: Efficiencies, c: Ceilings, coll: Collective, calls: float) -> Comm:
    """ZeRO-3 with ZeRO++ (qwZ, hpZ, qgZ) or MiCS."""
    case = s.case
    t = topology(s, eff, c)
    weights = (s.trainable + s.frozen_16bit) * s.half_bytes
    grads = s.trainable * s.half_bytes
    grad_calls = 1 + s.trainable / 2e8
    passes = ZERO3_GATHER_PASSES
    mem_bps = c.memory_bps * eff.memory_eff
    if case.mics_shard_size:
        m = case.mics_shard_size
        group = _group(t, m)
        per_mb = passes * collective_s(ALL_GATHER, weights, group, calls)
        per_mb += collective_s(REDUCE_SCATTER, grads, group, grad_calls)
        # each of the node's min(m, per_node) shards all-reduces with its replicas in the other groups,
        # all at once: they share the node's NICs
        replicas = Topology(t.nodes // group.nodes, max(1, t.per_node // m), t.intra_bps, t.intra_latency_s,
                            t.net_bps / min(m, t.per_node), t.net_latency_s)
        return Comm(per_mb, collective_s(ALL_REDUCE, grads / m, replicas, grad_calls))
    # ZeRO++
    qw = case.zero_quantized_weights
    fwd = coll(ALL_GATHER, weights * (0.5 if qw else 1.0), calls)
    fwd += QWZ_DEQUANT_BYTES * (s.trainable + s.frozen_16bit) / mem_bps if qw else 0.0
    h = case.zero_hpz_partition_size
    bwd = collective_s(ALL_GATHER, weights, _group(t, h), calls) if h > 1 else fwd
    per_mb = fwd + (passes - 1) * bwd
    if case.zero_quantized_gradients:
        q = grads / 4  # int4
        per_mb += intra_s(ALL_GATHER, q, t.per_node, t, grad_calls) + inter_s(ALL_GATHER, q, t.nodes, t, grad_calls)
        per_mb += QGZ_BYTES * s.trainable / mem_bps
    else:
        per_mb += coll(REDUCE_SCATTER, grads, grad_calls)
    return Comm(per_mb, 0.0)
