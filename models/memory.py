"""Peak GPU memory of one training rank, item by item, in bytes. Pure functions.

Model states follow DeepSpeed's own accounting (``estimate_zero2_model_states_mem_needs`` and
``estimate_zero3_model_states_mem_needs``, checked by a test); activations follow what PyTorch's
autograd keeps for a Hugging Face Llama layer (see ``activation_bytes_per_token_layer``); the peak is
taken at the start of backward, when every saved activation and the loss buffers are alive.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.efficiency import Efficiencies
from knowledge.units import GiB
from models.setup import QUANT_BYTES, TrainSetup

# DeepSpeed's defaults that the config writer (models.deepspeed_config) sets explicitly, in elements.
REDUCE_BUCKET = 200_000_000
ALLGATHER_BUCKET = 200_000_000
STAGE3_MAX_LIVE = 300_000_000
STAGE3_PREFETCH = 50_000_000
# Host RAM of offload: what DeepSpeed actually allocates (fp32 master, Adam moments and fp32 gradient
# partitions = 16 B per trainable parameter over the whole node, + 16-bit weights when parameters are
# offloaded), not its estimators' worst case (x1.5 buffer factor, and 4 B x GPUs per node for ZeRO-2),
# which would call the published 8x RTX 3090 / 128 GB offload runs impossible though they ran.
HOST_BYTES_PER_TRAINABLE = 16.0


@dataclass(frozen=True)
class TrainMemory:
    """Bytes on the busiest GPU (and on the host for offload)."""

    weights: float
    grads: float
    optimizer_states: float
    activations: float
    buffers: float
    overhead: float
    host: float  # CPU RAM for offloaded states, whole server

    @property
    def peak(self) -> float:
        return self.weights + self.grads + self.optimizer_states + self.activations + self.buffers + self.overhead


def model_state_bytes(s: TrainSetup) -> tuple[float, float, float, float]:
    """(weights, grads, optimizer states, host) bytes of one rank for the engine and ZeRO stage."""
    n, t = s.ranks, s.trainable
    half = s.half_bytes
    quant = s.quantized * QUANT_BYTES[s.case.quantization]
    frozen = s.frozen_16bit * half + quant
    if s.case.engine == "pytorch":
        if s.case.method == "full":
            # fp32 master weights + the bf16 copies autocast caches for the step
            w = t * 4 + t * half + quant
        else:
            w = frozen + t * 4  # PEFT keeps adapters in fp32 beside a bf16 base
        return w, t * 4.0, t * 8.0, 0.0
    z = s.zero
    largest = s.params.largest_module * 4  # DeepSpeed's largest_layer_memory
    if z == 0:
        # bf16 without ZeRO runs DeepSpeed's BF16_Optimizer: fp32 gradient accumulation buffer and
        # an fp32 master + Adam moments partitioned over the data-parallel ranks.
        return t * half + frozen, t * (half + 4.0), t * 12.0 / n, 0.0
    if z in (1, 2):
        if s.offload_optimizer:
            return t * half + frozen, 0.0, 0.0, t * HOST_BYTES_PER_TRAINABLE  # gradients stream to the host bucket by bucket
        return t * half + frozen, t * half, t * 16.0 / n, 0.0
    # ZeRO-3: every parameter, frozen ones too, is partitioned; a working set is gathered.
    gathered = min(STAGE3_MAX_LIVE * half + largest, (t + s.frozen_16bit) * half + quant)
    if s.offload_params:
        return gathered, 0.0, 0.0, t * (HOST_BYTES_PER_TRAINABLE + half) + frozen
    w = (t * half + frozen) / n + gathered
    if s.offload_optimizer:
        return w, 0.0, 0.0, t * HOST_BYTES_PER_TRAINABLE
    return w, 0.0, t * 16.0 / n, 0.0


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
        total += 2.0 * (3 * hq) + 6.0 * heads * s.case.seq_len
    else:
        total += 2.0 * (2 * hq + 2 * kv) + 4.0 * heads
    total += 2.0 * hq * saves("o_proj")
    total += 2.0 * 3 * i + 2.0 * i * saves("down_proj")
    return total


def activation_bytes(s: TrainSetup) -> float:
    """Saved activations of one micro-batch on one rank, at the start of backward."""
    per_layer = activation_bytes_per_token_layer(s, eager_scores=not s.case.flash_attention) * s.tokens
    layers = s.arch.num_hidden_layers
    if s.case.recompute:
        # checkpointed: each layer keeps its 16-bit input; one layer is rebuilt at a time in backward
        layer_part = layers * 2.0 * s.arch.hidden_size * s.tokens + per_layer
    else:
        layer_part = layers * per_layer
    head = (4.0 + 2.0) * s.arch.hidden_size * s.tokens  # final norm fp32 input + LM-head input
    return layer_part + head


def buffer_bytes(s: TrainSetup, eff: Efficiencies) -> float:
    """Loss buffers (logits and their fp32 copies) and DeepSpeed's communication buckets."""
    logits = eff.logits_bytes_per_vocab * s.arch.vocab_size * s.tokens
    if s.case.engine != "deepspeed" or s.ranks == 1 and s.zero == 0:
        comm = 0.0
    elif s.zero in (1, 2):
        comm = 2.0 * min(REDUCE_BUCKET, s.trainable) * s.half_bytes  # overlap_comm double-buffers
    elif s.zero == 3:
        comm = (min(REDUCE_BUCKET, s.trainable) + STAGE3_PREFETCH) * s.half_bytes
    else:
        comm = 0.0
    return logits + comm


def training_memory(s: TrainSetup, eff: Efficiencies) -> TrainMemory:
    w, g, o, host = model_state_bytes(s)
    return TrainMemory(
        weights=w, grads=g, optimizer_states=o, activations=activation_bytes(s), buffers=buffer_bytes(s, eff),
        overhead=eff.workspace_gib * GiB, host=host,
    )


def usable_gib(memory_gib: float, eff: Efficiencies) -> float:
    """Device memory a process can fill with tensors: total less context, NCCL and fragmentation."""
    return memory_gib - eff.reserved_gib
