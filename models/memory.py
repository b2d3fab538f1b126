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
class ModelStates:
    """Bytes of weights, gradients and optimizer states on one rank, and on the host for offload."""

    weights: float
    autocast_cache: float  # 16-bit copies of fp32 weights that autocast keeps until backward ends
    grads_kept: float  # gradient buffers alive through the whole step (DeepSpeed's fp32 accumulation)
    grads_end: float  # gradients alive at the end of backward
    optimizer_states: float
    host: float  # CPU RAM for offloaded states, whole server


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
    n, t = s.ranks, s.trainable
    half = s.half_bytes
    quant = s.quantized * QUANT_BYTES[s.case.quantization]
    frozen = s.frozen_16bit * half + quant
    if s.case.engine == "pytorch":
        # fp32 trainable weights (full training keeps fp32 masters, PEFT fp32 adapters) beside a 16-bit
        # or quantized frozen base; autocast caches 16-bit copies of the fp32 weights for the step
        w = t * 4 + frozen
        return ModelStates(w, t * half, 0.0, t * 4.0, t * 8.0, 0.0)
    z = s.zero
    largest = s.params.largest_module * 4  # DeepSpeed's largest_layer_memory
    if z == 0:
        # bf16 without ZeRO runs DeepSpeed's BF16_Optimizer: 16-bit gradients, an fp32 accumulation
        # buffer, and an fp32 master + Adam moments partitioned over the data-parallel ranks.
        return ModelStates(t * half + frozen, 0.0, t * (half + 4.0), t * (half + 4.0), t * 12.0 / n, 0.0)
    if z in (1, 2):
        if s.offload_optimizer:  # gradients stream to the host bucket by bucket
            return ModelStates(t * half + frozen, 0.0, 0.0, 0.0, 0.0, t * HOST_BYTES_PER_TRAINABLE)
        return ModelStates(t * half + frozen, 0.0, t * half / n, t * half / n, t * 16.0 / n, 0.0)
    # ZeRO-3: every parameter, frozen ones too, is partitioned; a working set is gathered.
    gathered = min(STAGE3_MAX_LIVE * half + largest, (t + s.frozen_16bit) * half + quant)
    if s.offload_params:
        return ModelStates(gathered, 0.0, 0.0, 0.0, 0.0, t * (HOST_BYTES_PER_TRAINABLE + half) + frozen)
    w = (t * half + frozen) / n + gathered
    if s.offload_optimizer:
        return ModelStates(w, 0.0, 0.0, 0.0, 0.0, t * HOST_BYTES_PER_TRAINABLE)
    return ModelStates(w, 0.0, 0.0, 0.0, t * 16.0 / n, 0.0)


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
    if s.case.engine == "pytorch" and s.case.method == "full":
        # fp32 master weights keep the residual stream in fp32 under autocast: both RMSNorm outputs
        # are fp32 (+2h each) and autocast saves their 16-bit casts for the projections (+2h each)
        total += 8.0 * h
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
    st = model_state_bytes(s)
    logits = eff.logits_bytes_per_vocab * s.arch.vocab_size * s.tokens
    comm = buffer_bytes(s, eff) - logits
    act = activation_bytes(s)
    start = st.weights + st.autocast_cache + st.grads_kept + act + logits
    end = st.weights + max(st.grads_kept, st.grads_end)
    if start >= end:
        return TrainMemory(st.weights + st.autocast_cache, st.grads_kept, st.optimizer_states, act, logits + comm,
                           eff.workspace_gib * GiB, st.host)
    return TrainMemory(st.weights, max(st.grads_kept, st.grads_end), st.optimizer_states, 0.0, comm,
                       eff.workspace_gib * GiB, st.host)


def usable_gib(memory_gib: float, eff: Efficiencies) -> float:
    """Device memory a process can fill with tensors: total less context, NCCL and fragmentation."""
    return memory_gib - eff.reserved_gib
