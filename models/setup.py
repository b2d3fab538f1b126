"""What a training case means physically: which parameters train, which are quantized, how many ranks.

Both the memory model and the step-time model start from this one derivation, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.deepspeed_releases import offload_grads_pile_up
from knowledge.errors import AdvisorError
from knowledge.schema import ModelArch, PlatformSpec, TrainCase
from knowledge.traces import ArchTrace
from models.architecture import LINEAR_NAMES, ParamCounts, lora_params_per_layer, param_counts

# Bytes per quantized weight. NF4 with double quantization: 4 bits + an 8-bit absmax per 64 weights +
# an fp32 scale per 256 absmax (QLoRA paper, Dettmers et al. 2023, section 3). LLM.int8: 1 byte + fp32
# row statistics (negligible).
QUANT_BYTES = {"none": 2.0, "nf4": 0.5 + 1 / 64 + 4 / (64 * 256), "int8": 1.0}


def zero2_accumulates_on_host(zero: int, offload_optimizer: bool, grad_accum: int, grad_accum_dtype: str | None) -> bool:
    """Does DeepSpeed add each micro-batch's gradients to a host buffer (``TrainSetup.zero2_accumulates_on_host``)?"""
    return zero == 2 and offload_optimizer and grad_accum > 1 and grad_accum_dtype != "fp32"


@dataclass(frozen=True)
class TrainSetup:
    case: TrainCase
    arch: ModelArch
    platform: PlatformSpec
    params: ParamCounts
    ranks: int  # data-parallel ranks (GPUs used)
    trainable: int  # parameters the optimizer updates
    frozen_16bit: int  # frozen parameters kept in 16-bit
    quantized: int  # frozen parameters stored quantized
    lora: int  # adapter parameters (part of trainable)
    half_bytes: int  # 2: bf16 or fp16
    nodes: int = 1  # servers the ranks are spread over, evenly
    # the model's own code traced under this case's method, attention and recomputation (probes.trace); None =
    # the hand count of a Llama decoder in models.architecture, which a test holds to the trace
    trace: ArchTrace | None = None

    @property
    def per_node(self) -> int:
        """Ranks on each node."""
        return self.ranks // self.nodes

    @property
    def shard_ranks(self) -> int:
        """Ranks the model states are partitioned over: all of them, or MiCS's shard group."""
        return self.case.mics_shard_size or self.ranks

    @property
    def zero3_gathers_in_place(self) -> bool:
        """ZeRO-3 whose every partition is the whole parameter, on the GPU (one rank, or MiCS shards of one, parameters
        not offloaded, not quantized): DeepSpeed's gather then points the parameter at its partition
        (``_no_gather_coalesced``: ``param.data = ds_tensor.data.to(device)``, no copy), so nothing is gathered into
        memory of its own and nothing a saved view holds outlives the partition."""
        return (self.zero == 3 and self.shard_ranks == 1 and not self.offload_params
                and not self.case.zero_quantized_weights)

    @property
    def eager_attention(self) -> bool:
        """Does attention materialise its s x s scores: eager attention asked for, or a family whose code has no
        fused path (its trace ran eager)?"""
        return not self.case.flash_attention or (self.trace is not None and self.trace.attention_used == "eager")

    @property
    def backward_layers(self) -> int:
        """Decoder layers whose backward runs: all but the model's first layers before its first trained one (nothing
        in them trains and their input needs no gradient, so autograd runs nothing back through them:
        ``ArchTrace.layers_without_backward``; the hand count has none)."""
        return self.arch.num_hidden_layers - (self.trace.layers_without_backward if self.trace is not None else 0)

    @property
    def tokens(self) -> int:
        """Tokens in one micro-batch on one rank."""
        return self.case.micro_batch_size * self.case.seq_len

    @property
    def is_lora(self) -> bool:
        return self.case.method in ("lora", "qlora")

    @property
    def zero(self) -> int:
        return self.case.zero_stage if self.case.engine == "deepspeed" else 0

    @property
    def offload_optimizer(self) -> bool:
        return self.case.offload != "none"

    @property
    def offload_params(self) -> bool:
        return self.case.offload == "optimizer+params"

    @property
    def grad_accum_bytes(self) -> float:
        """Bytes of a gradient element while micro-batches accumulate: fp32 under ``grad_accum_dtype`` fp32, else the
        16-bit dtype (DeepSpeed's default without ``data_types``)."""
        return 4.0 if self.case.grad_accum_dtype == "fp32" else float(self.half_bytes)

    @property
    def zero2_accumulates_on_host(self) -> bool:
        """ZeRO-2 with the optimizer offloaded, several micro-batches a step and 16-bit gradient accumulation
        (DeepSpeed's default without ``data_types``) adds each micro-batch's gradient partition to a host buffer
        through the GPU: host to device, add, back (DeepSpeed 0.19.8 ``async_accumulate_grad_in_cpu_via_gpu``, one
        host buffer per parameter). With fp32 accumulation it keeps them on the GPU until the boundary, and ZeRO-1
        reduces only there. Llama-3.2-1B on one H200, four micro-batches, pageable: 6.02 s a step against 3.99 with fp32
        accumulation and 3.72 under ZeRO-1, host RAM +2.2 GiB (own/h200-zero2-offload-accum-2-2026-11-29)."""
        c = self.case
        return zero2_accumulates_on_host(self.zero, self.offload_optimizer, c.grad_accum, c.grad_accum_dtype)

    @property
    def offload_grads_piled(self) -> bool:
        """ZeRO-1/2 with the optimizer offloaded, under a release whose 16-bit gradients pile up on the GPU until the GPU has
        copied them out (``knowledge.deepspeed_releases.offload_grads_pile_up``): about every one is allocated at the
        end of backward, and no reduce bucket beside them (Llama-3.2-3B and Llama-2-7B on two H200s peak at their
        weights plus their 16-bit gradients, 11.97 and 25.1 GiB, within 0.05 GiB)."""
        return self.zero in (1, 2) and self.offload_optimizer and offload_grads_pile_up(self.case.deepspeed_version)

    @property
    def lora_target_names(self) -> tuple[str, ...]:
        """The adapted projections of a Llama layer (the hand count's view of PEFT's target_modules)."""
        t = self.case.lora_targets
        return LINEAR_NAMES if t == "all-linear" else tuple(t)

    @property
    def adapted_modules_per_layer(self) -> float:
        """Modules PEFT wrapped per layer: from the trace (two trainable tensors each, A and B: counted whatever dtype
        their products run in; under ZeRO-3 the fp32 adapters' products are no bf16 GEMMs, and counting those had
        dropped every adapter's dispatch cost), else the targets named."""
        if not self.is_lora:
            return 0.0
        if self.trace is not None:
            return self.trace.params.tensors_trainable_per_layer / 2
        return float(len(self.lora_target_names))

    @property
    def zero3_adapters(self) -> bool:
        """LoRA under DeepSpeed's ZeRO-3, as DeepSpeed 0.19.8 runs it: ``torch.nn.functional.linear`` is its
        memory-efficient linear (every projection keeps its input, frozen or not) and PEFT's adapters stay fp32 (a model
        built under ``zero.Init`` is not cast), each casting its input to fp32. ``probes.trace`` runs the same. A
        quantized base (bitsandbytes' own matmul) is not DeepSpeed's linear: not counted so."""
        return self.zero == 3 and self.case.method == "lora" and self.case.quantization == "none"

    def linear_saves_input(self, name: str) -> bool:
        """Does autograd keep this projection's input for backward? Only when some weight behind it trains, or under
        ZeRO-3's memory-efficient linear (``zero3_adapters``), which keeps it always.

        A frozen base, 16-bit or quantized, needs only its weight for the activation gradient (bitsandbytes'
        4-bit matmul keeps the input only when the weight itself requires grad): measured QLoRA peaks on
        the H100 sit below LoRA's at every shape (7B mb 1 seq 2048: 15.4 vs 24.4 GiB).
        """
        if self.case.method == "full" and self.case.quantization == "none" or self.zero3_adapters:
            return True
        if self.is_lora and name in self.lora_target_names:
            return True  # the LoRA A matrix trains on the same input
        return False


def check_combination(case: TrainCase) -> None:
    """Reject combinations the engines cannot run, with the reason in one line."""
    if case.offload == "optimizer+params" and (case.engine != "deepspeed" or case.zero_stage != 3):
        raise AdvisorError("offload 'optimizer+params' needs engine deepspeed with zero_stage 3")
    if case.offload != "none" and (case.engine != "deepspeed" or case.zero_stage == 0):
        raise AdvisorError(f"offload {case.offload!r} needs engine deepspeed with zero_stage 1-3, got zero_stage {case.zero_stage}")
    if case.engine == "pytorch" and case.zero_stage != 0:
        raise AdvisorError(f"zero_stage {case.zero_stage} needs engine deepspeed (engine pytorch is plain data parallel)")
    if case.method == "qlora" and case.quantization != "nf4":
        raise AdvisorError(f"method qlora means an NF4 base; quantization {case.quantization!r} contradicts it")
    if case.method == "lora" and case.quantization == "nf4":
        raise AdvisorError("method lora with quantization nf4 is QLoRA: use method qlora")
    zeropp = [k for k in ("zero_quantized_weights", "zero_quantized_gradients") if getattr(case, k)]
    zeropp += ["zero_hpz_partition_size"] if case.zero_hpz_partition_size > 1 else []
    if case.mics_shard_size:
        if zeropp:
            raise AdvisorError(f"mics_shard_size with {zeropp[0]}: MiCS and ZeRO++ are alternatives, use one")
        zeropp = ["mics_shard_size"]
    if zeropp and (case.engine != "deepspeed" or case.zero_stage != 3 or case.offload != "none"):
        raise AdvisorError(f"{zeropp[0]} needs engine deepspeed with zero_stage 3 and no offload, got zero_stage "
                           f"{case.zero_stage}, offload {case.offload!r}")


def check_partitions(case: TrainCase, ranks: int, per_node: int) -> None:
    """ZeRO++'s secondary partition and MiCS's shard group must tile the ranks: inside a node (a divisor of
    the ranks per node) or whole nodes (a multiple of it that divides the ranks)."""
    for name, size in (("zero_hpz_partition_size", case.zero_hpz_partition_size), ("mics_shard_size", case.mics_shard_size)):
        if not size or size == 1:
            continue
        if ranks % size or (per_node % size and size % per_node):
            raise AdvisorError(f"{name}={size} must divide the {ranks} ranks and either divide or be a multiple of the "
                               f"{per_node} GPUs per node (e.g. {per_node})")


def derive(case: TrainCase, arch: ModelArch, platform: PlatformSpec, trace: ArchTrace | None = None) -> TrainSetup:
    check_combination(case)
    nodes = case.nodes
    ranks = case.gpus or platform.count * nodes
    if ranks > platform.count * nodes:
        where = f"{platform.id!r}" if nodes == 1 else f"{nodes} nodes of {platform.id!r}"
        raise AdvisorError(f"gpus={ranks} exceeds the {platform.count * nodes} GPUs of {where}")
    if ranks % nodes:
        raise AdvisorError(f"gpus={ranks} cannot be spread evenly over nodes={nodes}: use a multiple of {nodes}")
    check_partitions(case, ranks, ranks // nodes)
    if trace is not None:
        pc = traced_param_counts(trace)
        quantized = trace.params.quantizable if case.quantization != "none" else 0
        lora = trace.params.adapter if case.method != "full" else 0
    else:
        targets = list(LINEAR_NAMES) if case.lora_targets == "all-linear" else case.lora_targets
        bad = [t for t in targets if t not in LINEAR_NAMES]
        if bad:
            raise AdvisorError(f"unknown LoRA target {bad[0]!r}; valid: {', '.join(LINEAR_NAMES)}")
        pc = param_counts(arch)
        quantized = pc.decoder_linear if case.quantization != "none" else 0
        lora = lora_params_per_layer(arch, case.lora_rank, targets) * arch.num_hidden_layers if case.method != "full" else 0
    if case.method == "full":
        trainable = pc.total - quantized  # quantized projections are frozen (the published "Q" rows)
        frozen16 = 0
    else:
        trainable = lora
        frozen16 = pc.total - quantized
    return TrainSetup(
        case=case, arch=arch, platform=platform, params=pc, ranks=ranks, trainable=trainable,
        frozen_16bit=frozen16, quantized=quantized, lora=lora, half_bytes=2, nodes=nodes, trace=trace,
    )


def traced_param_counts(t: ArchTrace) -> ParamCounts:
    """The parameters the model and PEFT created on the fake model, in the hand count's shape."""
    p = t.params
    per_layer = p.quantizable // max(t.layers, 1)
    other = (p.total - p.embedding - p.lm_head - p.quantizable) // max(t.layers, 1)
    return ParamCounts(p.total, p.embedding, p.lm_head, per_layer, other, 0, t.layers, largest=p.largest)
