"""Peak GPU memory of one training rank, item by item, in bytes. Pure functions.

Model states follow DeepSpeed's own accounting (``estimate_zero2_model_states_mem_needs`` and
``estimate_zero3_model_states_mem_needs``, checked by a test); activations follow what PyTorch's
autograd keeps for a Hugging Face Llama layer (see ``activation_bytes_per_token_layer``); the peak is
taken at the start of backward, when every saved activation and the loss buffers are alive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from knowledge.efficiency import Efficiencies
from knowledge.units import GiB
from models.architecture import linears, weight_tensors
from models.setup import QUANT_BYTES, TrainSetup

# DeepSpeed's defaults that the config writer (models.deepspeed_config) sets explicitly, in elements.
REDUCE_BUCKET = 200_000_000
ALLGATHER_BUCKET = 200_000_000
STAGE3_MAX_LIVE = 300_000_000
STAGE3_PREFETCH = 50_000_000
# parameters smaller than this stay whole on every rank under ZeRO-3 (the config we write; DeepSpeed's default is 1e5)
STAGE3_PERSISTENCE_THRESHOLD = 10 * 4096
SUB_GROUP = 1_000_000_000  # DeepSpeed's ZeRO-3 sub_group_size default: its optimizer works group by group
# Host RAM. Measured on the lent H100 (1 rank) and 2xH200 (2 ranks) hosts as the rise of MemTotal -
# MemAvailable over a run (knowledge/measurements/own/*-2026-11-23.jsonl, host_peak_gib): a training
# process and its CUDA context take 0.7-0.8 GiB (PyTorch) and 1.3-1.4 GiB (DeepSpeed) per rank.
HOST_PROCESS_GIB = {"pytorch": 0.8, "deepspeed": 1.4}
# An offloading rank also keeps a 16-bit staging copy of its partition and a few buffers (the largest
# parameter's gradient, swap buckets): 2.5 B per parameter from the same rows (1B/3B/7B on 1 rank, 3B/8B
# on 2: each within 5% but 3B ZeRO-3 with parameter offload, 11% under).
HOST_OFFLOAD_STAGING_BYTES = 2.5
# MemTotal is 98.3% of the installed RAM on both lent hosts (125.9 of 128 GiB, 251.8 of 256 GiB): the
# firmware and the kernel keep the rest, and a job that needs more is killed (signal 9).
HOST_USABLE_FRACTION = 0.983


def pinned_bytes(n_bytes: float) -> float:
    """What a pinned host buffer of ``n_bytes`` really takes: PyTorch's CachingHostAllocator rounds each
    block up to a power of two (a 12 GiB fp32 partition takes 16 GiB)."""
    if n_bytes <= 0:
        return 0.0
    return float(2 ** math.ceil(math.log2(n_bytes)))


def offload_buffer_bytes(n_bytes: float, pinned: bool) -> float:
    """Host RAM of one ZeRO-Offload buffer of ``n_bytes``: pinned, a power of two; pageable (``pin_memory``
    false), its size (Llama-2-7B ZeRO-2 offload on two H200s: 135.3 GiB pinned, 116.1 pageable; 132.7 and 118.9
    predicted)."""
    return pinned_bytes(n_bytes) if pinned else max(n_bytes, 0.0)


def host_offload_parts(s: TrainSetup) -> tuple[float, float]:
    """(pinned, pageable) host RAM of the whole node for ZeRO-Offload: per rank, the fp32 master partition and the
    fp32 gradient partition in pinned memory (one block per rank for ZeRO-1/2, one per sub-group for ZeRO-3), the Adam
    moments (8 B per parameter, pageable), the staging copy and buffers, and with parameter offload the 16-bit weights
    (pinned); with ``pin_memory`` false every buffer is pageable."""
    if not s.offload_optimizer:
        return 0.0, 0.0
    pin = s.case.offload_pin_memory
    local = s.trainable / s.ranks
    groups = _sub_groups(local) if s.zero == 3 else [local]
    buffers = 2 * sum(offload_buffer_bytes(4.0 * g, pin) for g in groups)
    pageable = 8.0 * local + HOST_OFFLOAD_STAGING_BYTES * local
    if s.zero2_accumulates_on_host:  # one 16-bit host buffer per parameter of the partition
        buffers += offload_buffer_bytes(s.half_bytes * local, pin)
    if s.offload_params:
        pageable += s.quantized * QUANT_BYTES[s.case.quantization] / s.ranks
        buffers += sum(offload_buffer_bytes(s.half_bytes * g, pin) for g in _sub_groups((s.trainable + s.frozen_16bit) / s.ranks))
        if pin:
            buffers += offloaded_param_partitions_cached_bytes(s)
    ranks = _ranks_per_node(s)
    return (buffers if pin else 0.0) * ranks, (pageable + (0.0 if pin else buffers)) * ranks


def offloaded_param_partitions_cached_bytes(s: TrainSetup) -> float:
    """Pinned host RAM of one rank that ZeRO-3's parameter offload leaves in PyTorch's pinned-memory cache: ``zero.Init``
    pins each parameter's 16-bit partition on its own (a power of two each, ``pinned_bytes``), then DeepSpeed moves them
    into the sub-groups' flat pinned buffers, and the freed blocks stay with the CachingHostAllocator, which does not
    give them back (DeepSpeed 0.19.8 ``partition_parameters._partition_param``, ``stage3._move_to_flat_buffer``). With
    ``pin_memory`` false they are freed to the OS. Pinned runs were 3.8-10.0 GiB over the count without it, pageable
    ones within 1.3 GiB (Llama-3.2-3B, Qwen3-1.7B/4B, Phi-3-mini, MiniCPM3 on one H100 / H200, Llama-3.2-3B on two
    H200s; own rows of 2026-11-23 to 11-29: 6.0-10.6 GiB by this count)."""
    sizes = weight_tensors(s.arch, s.params, projections=s.quantized == 0)
    return sum(n * pinned_bytes(s.half_bytes * math.ceil(elements / s.shard_ranks)) for elements, n in sizes)


def host_offload_bytes(s: TrainSetup) -> float:
    """Host RAM of the whole node for ZeRO-Offload, pinned and pageable (``host_offload_parts``)."""
    return sum(host_offload_parts(s))


def _sub_groups(n: float) -> list[float]:
    full, rest = divmod(n, SUB_GROUP)
    return [float(SUB_GROUP)] * int(full) + ([rest] if rest else [])


def _ranks_per_node(s: TrainSetup) -> int:
    return s.per_node


def _process_bytes(s: TrainSetup) -> float:
    """Host RAM of the node's training processes and their CUDA contexts (``HOST_PROCESS_GIB`` a rank)."""
    return HOST_PROCESS_GIB[s.case.engine] * GiB * _ranks_per_node(s)


def host_bytes(s: TrainSetup) -> float:
    """Peak host RAM of the node: the processes, offloaded states, and for ZeRO-3 the 16-bit weights
    that ``zero.Init`` materialises on the host before partitioning them (2 B per parameter, node-wide)."""
    process = _process_bytes(s)
    if s.offload_optimizer:
        return process + host_offload_bytes(s)
    if s.case.engine == "deepspeed" and s.zero == 3:
        return process + s.half_bytes * (s.trainable + s.frozen_16bit) * _ranks_per_node(s) / s.ranks
    return process


def host_swept_bytes(s: TrainSetup) -> float:
    """Of ``host_bytes``, what every step reads and writes, node-wide: the processes, and for ZeRO-Offload CPU Adam's
    fp32 masters, gradients and two moments (16 B a trainable parameter) and, with parameter offload, the 16-bit weights
    each forward and backward fetch. The rest (staging copies, ``zero.Init``'s leftovers) is touched once in a while:
    beyond RAM the kernel pages it out once, these it must page every step. The study's RTX 3090 box (125.8 GiB usable)
    ran Llama-2-7B ZeRO-3 offload at 139.9 GiB by our count, sweeping 124.4 (its rows fit with no paging), and
    Llama-2-13B's at 260, sweeping 226 (issue 23: predicted 2.3-2.5x too fast)."""
    process = _process_bytes(s)
    if not s.offload_optimizer:
        return process
    swept = 16.0 * s.trainable
    if s.offload_params:
        swept += s.half_bytes * (s.trainable + s.frozen_16bit)
    return process + swept * _ranks_per_node(s) / s.ranks


def host_pinned_bytes(s: TrainSetup) -> float:
    """Of ``host_bytes``, what is page-locked: it must sit in RAM (the kernel cannot swap it out)."""
    return host_offload_parts(s)[0]


def usable_host_gib(host_ram_gib: float) -> float:
    return host_ram_gib * HOST_USABLE_FRACTION


@dataclass(frozen=True)
class ModelStates:
    """Bytes of weights, gradients and optimizer states on one rank, and on the host for offload."""

    weights: float
    autocast_cache: float  # 16-bit copies of fp32 weights that autocast keeps until backward ends
    grads_kept: float  # gradient buffers alive through the whole step (DeepSpeed's fp32 accumulation)
    grads_end: float  # gradients alive at the end of backward
    optimizer_states: float  # alive through the whole step (fp32 master + Adam moments)
    host: float  # CPU RAM of the whole node
    step_extra: float = 0.0  # only during the optimizer step: the fp32 gradient partition and its 16-bit flat copy


@dataclass(frozen=True)
class TrainMemory:
    """Bytes on the busiest GPU at its peak (and on the host for offload).

    Two moments compete for the peak: the start of backward (every saved activation and the loss
    buffers alive, gradients not yet made) and the end of backward (activations freed, all gradients
    present). The items are those of whichever is larger.
    """

    weights: float
    grads: float
    optimizer_states: float
    activations: float
    buffers: float
    overhead: float
    host: float

    @property
    def peak(self) -> float:
        return self.weights + self.grads + self.optimizer_states + self.activations + self.buffers + self.overhead


def model_state_bytes(s: TrainSetup) -> ModelStates:
    """Weights, gradients and optimizer states of one rank for the engine and ZeRO stage.

    ZeRO-1/2 follow DeepSpeed's estimator (2P + 18P/N): the full 16-bit gradients never coexist,
    they are reduced bucket by bucket into a 16-bit partition (2/N) and the fp32 one (in the 16/N).
    """
    st = _gpu_model_states(s)
    return ModelStates(st.weights, st.autocast_cache, st.grads_kept, st.grads_end, st.optimizer_states,
                       host_bytes(s), st.step_extra)


def _gpu_model_states(s: TrainSetup) -> ModelStates:
    n, t = s.shard_ranks, s.trainable  # MiCS partitions within its shard group only
    half = s.half_bytes
    quant = s.quantized * QUANT_BYTES[s.case.quantization]
    frozen = s.frozen_16bit * half + quant
    if s.case.engine == "pytorch":
        # fp32 trainable weights (full training keeps fp32 masters, PEFT fp32 adapters) beside a 16-bit
        # or quantized frozen base; autocast caches 16-bit copies of the fp32 weights for the step
        w = t * 4 + frozen
        # a trace under autocast saw those 16-bit copies alive itself (saved for the products' backward)
        return ModelStates(w, t * half if s.trace is None else 0.0, ddp_bucket_bytes(s), t * 4.0, t * 8.0, 0.0)
    z = s.zero
    if z == 0 and s.case.grad_accum_dtype == "fp32":
        # BF16_Optimizer: fp32 masters and Adam moments split over the ranks, an fp32 gradient of every parameter
        # allocated at start-up beside the 16-bit ones of backward (deepspeed/runtime/bf16_optimizer.py)
        return ModelStates(t * half + frozen, 0.0, t * 4.0, t * (4.0 + half), t * 12.0 / n, 0.0, 0.0)
    if z == 0:
        # bf16 without ZeRO (DeepSpeed 0.19's default accumulation) wraps the optimizer in its FP16_Optimizer: an fp32
        # master of every parameter and its Adam moments on every rank, nothing split (Qwen3-8B ZeRO-0 on two H200s ran
        # out of memory at 137 GiB where split states would peak at 127); the 16-bit gradients exist from backward on,
        # their fp32 flat copy during the step. Memory read at each moment of a Qwen3-1.7B step on one H100
        # (probes/anatomy.py, P = 1.72 B): 14P after the step, 16P at the end of backward, 24P at the step's peak.
        return ModelStates(t * half + frozen, 0.0, accumulated_grads_kept_bytes(s), t * half, t * 12.0, 0.0, t * 8.0)
    if z in (1, 2):
        kept = accumulated_grads_kept_bytes(s)
        if s.offload_optimizer:  # gradients stream to the host bucket by bucket, freed as the GPU copies them out
            return ModelStates(t * half + frozen, 0.0, kept, t * half if s.offload_grads_piled else 0.0, 0.0, 0.0)
        # ZeRO-1 holds every 16-bit gradient until the reduction at the accumulation boundary, ZeRO-2
        # only its partition. The fp32 gradient partition and a flat 16-bit copy exist during the step
        # only (own rows: 3B ZeRO-1 on one H100 peaks at 22 B/param, 7B ZeRO-1/2 on two H200 at 75.4 GiB).
        grads_end = t * half if z == 1 else t * half / n
        return ModelStates(t * half + frozen, 0.0, kept, max(grads_end, kept), t * 12.0 / n, 0.0, t * (half + 4.0) / n)
    # ZeRO-3: every parameter, frozen ones too, is partitioned; a working set is gathered: up to
    # stage3_max_live_parameters, or one module above that alone, in the 16-bit type. At the start of backward the LM
    # head is the module gathered, so the larger of the two (DeepSpeed's estimator counts 4 B of the largest layer on
    # top of the live set: 1.3-2.6 GiB above what eleven ZeRO-3 runs of ours peaked at, each by about 2 B of its
    # embedding plus the live set; with the larger of the two, -0.3 to +0.6 GiB, ``zero3_gathered_bytes``)
    # one rank's gathers point each parameter at its own partition (one H200, 2026-11-29: fourteen ZeRO-1/3 runs
    # peaked 0.9-1.7 GiB under a count with the working set, OLMoE and DeepSeek-V2-Lite LoRA 12.5 and 28 GiB under
    # one with their experts held; knowledge/measurements/own/h200-zero3-single-2026-11-29.jsonl)
    gathered = 0.0 if s.zero3_gathers_in_place else min(zero3_gathered_bytes(s), (t + s.frozen_16bit) * half + quant)
    if s.offload_params:
        return ModelStates(gathered, 0.0, 0.0, 0.0, 0.0, 0.0)
    w = (t * half + frozen) / n + gathered
    if s.case.zero_hpz_partition_size > 1:  # ZeRO++ hpZ: a secondary copy partitioned within its group
        w += (t * half + frozen) / s.case.zero_hpz_partition_size
    if s.offload_optimizer:
        return ModelStates(w, 0.0, 0.0, 0.0, 0.0, 0.0)
    # the flat 16-bit gradient partition is allocated at start-up (contiguous_gradients); the fp32
    # gradients exist one sub-group at a time during the step
    return ModelStates(w, 0.0, t * half / n, t * half / n, t * 12.0 / n, 0.0, 4.0 * min(t / n, SUB_GROUP))


def accumulated_grads_kept_bytes(s: TrainSetup) -> float:
    """Gradients DeepSpeed keeps on the GPU from one micro-batch's backward to the next, optimizer offloaded or not: ZeRO-0/1
    every 16-bit gradient across the micro-batches of a step (it reduces at the boundary), ZeRO-2 with fp32
    accumulation its fp32 partition (DeepSpeed 0.19.8's compact gradient buffer, allocated on the GPU). Llama-3.2-1B on
    one H200 with the optimizer offloaded, four micro-batches: ZeRO-1 7.4 GiB, ZeRO-2 with fp32 accumulation 10.7, with
    16-bit 6.0 (own/h200-zero2-offload-accum-2-2026-11-29). ZeRO-1 frees them at its step (not counted there)."""
    t, c = s.trainable, s.case
    if s.zero in (0, 1) and c.grad_accum > 1:  # ZeRO-0 likewise (its 16-bit gradients accumulate in place)
        return t * s.half_bytes
    if s.zero == 2 and c.grad_accum_dtype == "fp32":
        return t * 4.0 / s.shard_ranks
    return 0.0


def offload_grad_transient_bytes(s: TrainSetup) -> float:
    """What ZeRO-3's offloaded optimizer makes on the GPU at the end of backward as it hands the largest gradient to the
    host (DeepSpeed 0.19.8 ``stage3.partition_grads``): the partition brought back from the host buffer in the
    accumulation dtype and its fp32 conversion for the copy down. Full training only (an adapter's tensors are small).
    One micro-batch of 350 tokens on one H200, where this moment is the peak: Llama-3.2-1B with the optimizer
    offloaded 5.6 GiB measured, 4.1 predicted without it, 4.5 with; Llama-3.2-3B with parameters too 4.5, 3.1 and 3.7
    (h200-study-offload-batch, logs/h200-zero3-offload-copies, 2026-11-29). ZeRO-1/2's ``.float()`` of each slice is
    not counted: under 0.19.8 they peak at every 16-bit gradient piled up and no more (``offload_grads_piled``)."""
    if s.zero != 3 or not s.offload_optimizer or s.case.engine != "deepspeed" or s.case.method != "full":
        return 0.0
    fp32_copy = 0.0 if s.grad_accum_bytes == 4.0 else 4.0  # an fp32 partition is copied down as it is
    return s.params.largest_module / s.shard_ranks * (s.grad_accum_bytes + fp32_copy)


def zero3_gathered_bytes(s: TrainSetup) -> float:
    """ZeRO-3's gathered working set on a rank at its peak: the live parameters the config allows
    (``STAGE3_MAX_LIVE``) or the largest module, gathered alone (a big vocabulary's LM head), whichever is larger."""
    return max(STAGE3_MAX_LIVE, s.params.largest_module) * s.half_bytes


# DistributedDataParallel's reducer copies every gradient into flat buckets of the gradients' dtype that live as long as
# the model (gradient_as_bucket_view=False, its default), and after the first iteration it rebuilds them in the order
# the gradients came: PyTorch full training of SmolLM2-1.7B on two GPUs (fp32 gradients, P = 1.71 B) holds 6.4 GiB
# (4 B/param) more than on one from construction on (probes/anatomy_cases_9.jsonl, after warm-up), and its runs peak
# another 6.4 GiB higher over the whole run (max_memory_allocated since start: 64.6 / 94.0 GiB at mb 4 / 8, against
# 58.2 after warm-up at mb 4; grid h200x2-new-fam, 2026-11-27)
DDP_BUCKET_COPIES = 2


def ddp_bucket_bytes(s: TrainSetup) -> float:
    """DDP's gradient buckets on one rank of a plain PyTorch run over several GPUs (fp32 gradients: full training's fp32
    weights, PEFT's fp32 adapters); none on one GPU."""
    if s.case.engine != "pytorch" or s.ranks <= 1:
        return 0.0
    return DDP_BUCKET_COPIES * 4.0 * s.trainable


def activation_bytes_per_token_layer(s: TrainSetup, eager_scores: bool) -> float:
    """Bytes autograd keeps per token for one decoder layer, without recomputation.

    RMSNorm keeps its fp32 input (4h) twice per layer; a projection keeps its 16-bit input when
    something behind it trains; RoPE keeps only cos/sin (shared); fused attention keeps q, k, v, the
    output and an fp32 log-sum-exp per head; eager attention keeps repeated k/v and the s x s scores
    (fp32 softmax output + bf16 copy = 6 bytes each); SwiGLU keeps gate, SiLU(gate) and up.
    """
    a = s.arch
    h, hq, kv, heads = a.hidden_size, a.num_attention_heads * a.head_size, a.num_key_value_heads * a.head_size, a.num_attention_heads
    i = a.intermediate_size * a.num_experts_per_tok
    saves = s.linear_saves_input
    total = 8.0 * h  # two RMSNorm fp32 inputs
    total += 2.0 * h * (saves("q_proj") or saves("k_proj") or saves("v_proj"))
    total += 2.0 * h * (saves("gate_proj") or saves("up_proj"))
    if eager_scores:
        total += 2.0 * (3 * hq) + EAGER_SCORE_SAVED_BYTES * heads * s.case.seq_len
    else:
        total += 2.0 * (2 * hq + 2 * kv) + 4.0 * heads
    total += 2.0 * hq * saves("o_proj")
    total += 2.0 * 3 * i + 2.0 * i * saves("down_proj")
    if s.zero3_adapters:  # each fp32 adapter keeps its own fp32 copy of its input (q, k and v each cast theirs)
        total += 4.0 * sum(lin.in_features * lin.experts for lin in linears(a) if lin.name in s.lora_target_names)
    if s.case.engine == "pytorch" and s.case.method == "full":
        # fp32 master weights keep the residual stream in fp32 under autocast: both RMSNorm outputs
        # are fp32 (+2h each) and autocast saves their 16-bit casts for the projections (+2h each)
        total += 8.0 * h
    return total


def activation_bytes(s: TrainSetup) -> float:
    """Saved activations of one micro-batch on one rank, at the start of backward: what the trace saw alive when
    forward ended (the loss's buffers included), else the hand count below (with recomputation, the one layer
    backward rebuilds at a time included: ``rebuilt_layer_bytes``)."""
    if s.trace is not None:
        return max(s.trace.total("saved_bytes", s.case.micro_batch_size, s.case.seq_len), 0.0)
    layers = s.arch.num_hidden_layers
    if s.case.recompute:
        # checkpointed: each layer keeps its 16-bit input; one layer is rebuilt at a time in backward
        layer_part = layers * 2.0 * s.arch.hidden_size * s.tokens + rebuilt_layer_bytes(s)
    else:
        layer_part = layers * activation_bytes_per_token_layer(s, eager_scores=s.eager_attention) * s.tokens
    head = (4.0 + 2.0) * s.arch.hidden_size * s.tokens  # final norm fp32 input + LM-head input
    return layer_part + head


def zero3_retained_param_bytes(s: TrainSetup) -> float:
    """Gathered parameters ZeRO-3 cannot release between a layer's forward and its backward.

    DeepSpeed releases a gathered parameter by giving it an empty storage, and its own linear function saves the
    parameter itself; a product that saves a view of a parameter instead (a MoE layer's stacked experts, transposed for
    a grouped GEMM) keeps the gathered 16-bit storage alive until the layer's backward. The trace records which
    parameters a saved view holds (``zero3_retained_per_layer``); the hand count's only MoE, Mixtral, holds its experts.
    Anatomy on two H200s (knowledge/measurements/own/logs/h200x2-moe-zero3-anatomy-2026-11-27.jsonl): Qwen1.5-MoE cut to
    6 and 12 layers and OLMoE held 5.4, 11.2 and 11.3 GiB above the saved activations at the end of forward, against
    5.8, 11.6 and 12.0 of experts (0.97 and 0.75 GiB a layer); the 12-layer cut under ZeRO-2 held none, and the whole
    24-layer model ran out of memory where 120 GiB was predicted. Llama-4's experts, multiplied by ``bmm`` (which saves
    the parameter itself), are released: its LoRA under ZeRO-3 peaked at 40.2 GiB on two H100s, 55.7 predicted with its
    experts held (grid h200x2-heldout-families). With recomputation a checkpointed forward saves nothing, and the layer
    being rebuilt holds only what ZeRO-3 has gathered for it anyway (the working set): OLMoE pre-training on two H100s
    with recomputation, 58.2-63.5 GiB, within 0.2% without a held layer (grid h100x2-recommend-moe)."""
    if s.case.engine != "deepspeed" or s.zero != 3 or s.case.recompute or s.zero3_gathers_in_place:
        return 0.0
    if s.trace is not None:
        per_layer = s.trace.params.zero3_retained_per_layer
    else:
        per_layer = sum(lin.params for lin in linears(s.arch) if lin.experts > 1)
    return per_layer * s.half_bytes * s.arch.num_hidden_layers


def rebuilt_layer_bytes(s: TrainSetup) -> float:
    """Hand count, recomputation: the activations of the one checkpointed layer backward rebuilds at a time (0 without
    recomputation, and with a trace, whose backward peak holds the rebuilt layer itself)."""
    if s.trace is not None or not s.case.recompute:
        return 0.0
    return activation_bytes_per_token_layer(s, eager_scores=s.eager_attention) * s.tokens


# Eager attention's s x s scores, bytes a score per head: autograd keeps the fp32 softmax output and its 16-bit copy
# (6: the hand count's and every trace's saved s^2 term), and a layer's backward holds their gradients besides (16-bit
# from the AV product, fp32 into and out of the softmax's backward: 10). Llama-3.2-1B and Qwen3-1.7B LoRA, 8,192
# tokens, recomputation, one H200: 35.4 and 20.9 GiB at their peak, 16.1 and 16.5 bytes a score above the rest
# (logs/h200-eager-anatomy-2026-11-29.jsonl); every trace had put the peak at the loss (16.0 and 18.8 predicted), its
# lengths too short for the scores to pass it.
EAGER_SCORE_SAVED_BYTES = 6.0
EAGER_SCORE_GRAD_BYTES = 10.0


def eager_scores_backward_bytes(s: TrainSetup) -> float:
    """What one layer's eager-attention backward holds above the saved activations: the gradients of its scores and,
    under recomputation with a trace (the hand count has them in ``rebuilt_layer_bytes``), the rebuilt layer's saved
    scores. Every query head of an attention layer (GQA repeats k/v; sliding windows are masks on the whole square)."""
    if not s.eager_attention:
        return 0.0
    per_score = EAGER_SCORE_GRAD_BYTES + (EAGER_SCORE_SAVED_BYTES if s.trace is not None and s.case.recompute else 0.0)
    return per_score * s.case.micro_batch_size * s.arch.num_attention_heads * s.case.seq_len ** 2


# transformers' causal-LM loss upcasts the logits: in forward the 16-bit logits and their fp32 copy (2 + 4 bytes per
# vocabulary entry per token) live beside what forward keeps for backward; its backward holds two fp32 gradients of
# that size at once (of the log-softmax's output and of its input): 8 bytes, what the anatomy of OLMo-2, StableLM-2 and
# Granite-3 on one H100 measured above the end of forward (8.0 each), where some traces see less
LOSS_FORWARD_BYTES_PER_VOCAB = 6.0
LOSS_BACKWARD_BYTES_PER_VOCAB = 8.0
# of which forward keeps the fp32 log-probabilities for the loss's backward (the rest are transients): Qwen3-1.7B LoRA
# with eager attention at 8,192 tokens peaked in a layer's backward at 20.9 GiB, its trace's saved activations less
# these (4.6 GiB) plus the scores' backward (logs/h200-eager-anatomy-2026-11-29.jsonl)
LOSS_SAVED_BYTES_PER_VOCAB = 4.0


def transient_bytes(s: TrainSetup, eff: Efficiencies) -> float:
    """What backward adds above the saved activations at its peak: with a trace, its measured peak (the loss's fp32
    gradient over the vocabulary, a layer's backward temporaries); else the hand count's logits buffers."""
    if s.trace is not None:
        traced = s.trace.peak_extra_bytes.at(s.case.micro_batch_size, s.case.seq_len)
        return max(traced, LOSS_BACKWARD_BYTES_PER_VOCAB * s.arch.vocab_size * s.tokens, 0.0)
    return eff.logits_bytes_per_vocab * s.arch.vocab_size * s.tokens


def buffer_bytes(s: TrainSetup, eff: Efficiencies) -> float:
    """Loss buffers (or the traced backward's transients) and DeepSpeed's communication buckets."""
    logits = transient_bytes(s, eff)
    if s.case.engine != "deepspeed" or s.ranks == 1 and s.zero == 0:
        comm = 0.0
    elif s.zero in (1, 2):
        comm = 2.0 * min(REDUCE_BUCKET, s.trainable) * s.half_bytes  # overlap_comm double-buffers
    elif s.zero == 3:
        comm = (min(REDUCE_BUCKET, s.trainable) + STAGE3_PREFETCH) * s.half_bytes
    else:
        comm = 0.0
    return logits + comm




def forward_peak_extra(s: TrainSetup, st: ModelStates, eff: Efficiencies) -> float:
    """What a traced forward holds at its peak beyond what it keeps for backward: the loss's upcast logits (at most what
    the trace saw backward add) and, for fp32 weights under autocast with recomputation, autocast's 16-bit copies of
    them, alive until forward ends but not saved (anatomy of Granite-3 and StarCoder2 on one H100: forward peaks
    4.8 GiB, 2 bytes per parameter, above the same step under DeepSpeed's bf16)."""
    if s.trace is None:
        return 0.0
    loss = min(transient_bytes(s, eff), LOSS_FORWARD_BYTES_PER_VOCAB * s.arch.vocab_size * s.tokens)
    copies = s.trainable * s.half_bytes if s.case.engine == "pytorch" and s.case.recompute and not st.autocast_cache else 0.0
    return loss + copies


def training_memory(s: TrainSetup, eff: Efficiencies) -> TrainMemory:
    st = model_state_bytes(s)
    logits = transient_bytes(s, eff)
    comm = buffer_bytes(s, eff) - logits
    act = activation_bytes(s)
    # the loss's buffers are freed once backward has passed the LM head, before the last layer is rebuilt: under
    # recomputation the hand count's rebuilt layer and the logits never coexist (Llama-2-7B, ZeRO-3, recomputation,
    # mb 32 x 2k on one H100: 54.4 GiB measured, 66.2 predicted with both, 55.3 with the larger)
    rebuilt = rebuilt_layer_bytes(s)
    layer_extra = eager_scores_backward_bytes(s)
    # a trace's saved activations include what forward kept for the loss's backward, also gone by a layer's backward
    loss_kept = min(LOSS_SAVED_BYTES_PER_VOCAB * s.arch.vocab_size * s.tokens, act) if s.trace is not None and layer_extra else 0.0
    if rebuilt + layer_extra - loss_kept >= logits:  # a layer's backward is the peak: the loss's buffers are gone by then
        act -= loss_kept
        logits = layer_extra
    else:
        act -= rebuilt
    # from forward to backward the weights include what ZeRO-3 cannot release (the gathered parameters saved views hold)
    held = st.weights + st.autocast_cache + zero3_retained_param_bytes(s)
    start = held + st.grads_kept + act + logits
    forward = held + st.grads_kept + act + forward_peak_extra(s, st, eff)
    copying = offload_grad_transient_bytes(s)
    end = st.weights + max(st.grads_kept, st.grads_end) + copying
    step = st.weights + (max(st.grads_kept, st.grads_end) if s.zero != 1 else st.grads_end / s.ranks) + st.step_extra
    if forward > max(start, end, step):
        return TrainMemory(held, st.grads_kept, st.optimizer_states, act, forward - (held + st.grads_kept + act) + comm,
                           eff.workspace_gib * GiB, st.host)
    if start >= max(end, step):
        return TrainMemory(held, st.grads_kept, st.optimizer_states, act, logits + comm, eff.workspace_gib * GiB, st.host)
    if end >= step:
        return TrainMemory(st.weights, max(st.grads_kept, st.grads_end), st.optimizer_states, 0.0,
                           (0.0 if s.offload_grads_piled else comm) + copying,
                           eff.workspace_gib * GiB, st.host)
    # at the step the reduce buckets are the flat gradient copy already counted (tinyllama on one H100:
    # ZeRO-0, whose BF16_Optimizer has no buckets, and ZeRO-2 peak at the same 32.1 GiB)
    return TrainMemory(st.weights, step - st.weights, st.optimizer_states, 0.0, 0.0, eff.workspace_gib * GiB, st.host)


def fragmentation_bytes(s: TrainSetup, eff: Efficiencies) -> float:
    """What the caching allocator holds beside the tensors when a decoder layer's largest temporary is asked for again:
    the tensors a layer saves after it are carved from its freed block, so the next layer's request finds no free block
    that large and the allocator reserves a new one, beside what is left of the old (``layer_block_reserved_fraction``
    of the block). The trace's largest allocation inside a layer's forward; 0 for the hand count, whose largest (the
    MLP's intermediate) the fitted spread of ``models.oom`` covers. Falcon-H1's Mamba-2 torch path asks for 8 GiB per
    256-token chunk: LoRA on two H200s ran at 1k (78.5 GiB allocated, 102.6 reserved) and at 1.5k, 114.6 GiB predicted,
    asked for 48 GiB more with 66 allocated and 104 reserved (grid h200x2-falcon-h1-memory, 2026-11-29)."""
    if s.trace is None:
        return 0.0
    block = max(s.trace.largest_layer_alloc_bytes.at(s.case.micro_batch_size, s.case.seq_len), 0.0)
    return eff.layer_block_reserved_fraction * block


def usable_gib(memory_gib: float, eff: Efficiencies) -> float:
    """Device memory a process can fill with tensors: total less context, NCCL and fragmentation."""
    return memory_gib - eff.reserved_gib
