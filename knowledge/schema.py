"""Typed schema of everything the advisor reads or writes: catalogs, cases, predictions, measurements.

The case and prediction models are the prediction contract of ``shared/CONTRACT.md``: extend, never
rename or drop a field. Units are in the field names (``_gib``, ``_s``, ``_gbs`` = GB/s, ``_tflops`` =
10^12 FLOP/s).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_VERSION = 1


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------------------------------
# Catalog entries


class GPUSpec(Strict):
    """One GPU model. Every number carries a source in ``sources`` (field name -> citation)."""

    id: str
    name: str
    aliases: list[str] = []
    arch: str  # volta, ampere, ada, hopper
    compute_capability: float
    # bounds keep a platform file's GPU physical: 0 or negative GiB read as "-6.0 GiB usable of -5.0", not an error;
    # the largest card of 2026 holds 288 GB, the fastest moves 8 TB/s
    memory_gib: float = Field(gt=0, le=1 << 12)  # usable device memory as nvidia-smi reports it, GiB
    memory_bandwidth_gbs: float = Field(gt=0, le=1e5)  # HBM/GDDR peak, GB/s
    bf16_tflops: float | None = Field(gt=0, le=1e5)  # dense tensor-core, fp32 accumulate; None = no bf16
    fp16_tflops: float = Field(gt=0, le=1e5)  # dense tensor-core, fp32 accumulate
    fp8_tflops: float | None = Field(default=None, gt=0, le=1e5)  # dense
    int8_tops: float | None = Field(default=None, gt=0, le=1e5)  # dense
    fp32_tflops: float = Field(gt=0, le=1e5)  # non-tensor FP32
    nvlink_gbs: float = Field(default=0.0, ge=0, le=1e5)  # per GPU, one direction, GB/s; 0 = none
    nvlink_kind: Literal["none", "nvswitch", "bridge-pairs"] = "none"
    pcie_gen: int = Field(ge=1, le=10)
    pcie_gbs: float = Field(gt=0, le=1e4)  # x16 one direction, GB/s
    p2p_over_pcie: bool = True  # GeForce 40-series has peer-to-peer disabled
    tdp_w: float | None = None
    sources: dict[str, str]

    @model_validator(mode="after")
    def _every_number_sourced(self) -> "GPUSpec":
        numeric = [k for k, v in self if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None]
        missing = [k for k in numeric if k not in self.sources and k not in ("compute_capability",)]
        if missing:
            raise ValueError(f"GPU {self.id}: numbers without a source: {', '.join(missing)}")
        return self

    @property
    def matmul_tflops(self) -> float:
        """Dense 16-bit tensor-core peak used for training (bf16, or fp16 where bf16 is missing)."""
        return self.bf16_tflops if self.bf16_tflops else self.fp16_tflops

    @property
    def supports_bf16(self) -> bool:
        return bool(self.bf16_tflops)

    @property
    def sm_cycles_per_s(self) -> float:
        """SM clock cycles per second over all SMs (SMs x clock), from the datasheet's FP32 peak: an SM issues
        one FP32 FMA (2 FLOPs) per lane per cycle, 64 lanes on compute capability 7.0 / 8.0 (V100, A100), 128 on
        8.6 / 8.9 / 9.0 (GA10x, Ada, Hopper): CUDA C++ Programming Guide, "Arithmetic Instructions" throughput table
        (H100 SXM: 66.9 TFLOP/s = 132 SMs x 128 x 2 x 1.98 GHz). What strided memory-bound kernels are bound by."""
        lanes = 64 if self.compute_capability in (7.0, 8.0) else 128
        return self.fp32_tflops * 1e12 / (2 * lanes)


class HostSpec(Strict):
    cpu_cores: int
    host_ram_gib: float
    cpu_adam_gparams_per_s: float | None = None  # measured DeepSpeed CPU Adam, whole host
    cpu_adam_threads: int | None = None  # the threads that rate was measured on
    source: str = "default"
    # how the GPUs are wired to the host (models.host_links); defaults describe one GPU per root port
    sockets: int = Field(default=1, ge=1)
    host_pcie_gen: int | None = Field(default=None, ge=1, le=6)  # the root ports' generation (None: the GPU's)
    gpus_per_uplink: int = Field(default=1, ge=1)  # GPUs behind one x16 uplink to the CPU (PCIe switch)
    dram_gbs: float | None = Field(default=None, gt=0)  # host DRAM peak, all sockets, GB/s
    dram_measured: bool = False  # the DRAM cap on GPU DMA (models.host_links) applies only when measured
    topology_source: str = ""
    # swap the kernel may page host memory out to, GiB: pageable offload buffers (DeepSpeed's ``pin_memory`` false)
    # spill into it where RAM runs out instead of the run being killed; pinned ones cannot (models.training)
    swap_gib: float = Field(default=0.0, ge=0)
    swap_source: str = ""


class PlatformSpec(Strict):
    """A server: ``count`` GPUs of one kind, how they are linked, and the host they sit in."""

    id: str
    gpu: GPUSpec
    count: int = Field(ge=1)
    interconnect: Literal["nvswitch", "nvlink-pairs", "pcie", "pcie-no-p2p", "single"]
    link_gbs: float  # per-GPU one-direction bandwidth of the link collectives use, GB/s
    host: HostSpec
    notes: str = ""


# Decoders whose catalog summary (``ModelArch`` fields) reads the config.json the same way. Any other causal LM
# that transformers builds is accepted too: its operators come from the trace of its own code (probes.trace).
DECODER_MODEL_TYPES = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "yi", "internlm2", "deepseek",
    "baichuan", "gemma", "gemma2", "gemma3_text", "phi3", "olmo", "olmo2", "olmoe", "granite", "granitemoe",
    "cohere", "stablelm", "starcoder2", "deepseek_v2", "deepseek_v3", "glm4", "exaone4", "smollm3", "ministral",
})


class KVGroup(Strict):
    """Layers that cache alike: how many, the window they keep (None: every token), the values each caches per
    token (K and V of every KV head; latent attention caches one compressed vector, the same on every TP rank; none
    in a Mamba or linear-attention layer) and the bytes of fixed state each keeps per sequence (a recurrent layer's
    convolution and scan states, as the model's own code holds them, and as vLLM keeps them:
    ``knowledge.catalog.SSM_STATE_DTYPE_FIELDS``; None: the same)."""

    layers: int = Field(ge=0)
    window: int | None = Field(default=None, gt=0)
    values_per_token: int = Field(ge=0)
    split_by_tp: bool = True  # KV heads (and a recurrent layer's heads) split over tensor-parallel ranks; a latent vector is replicated
    state_bytes: float = Field(default=0.0, ge=0)
    vllm_state_bytes: float | None = Field(default=None, ge=0)


class Projection(Strict):
    """One weight shape of a decoder layer as the model's own code multiplies by it (from its trace): ``in_features``
    x ``out_features`` (the trace keeps the pair sorted: orientation is not known), ``experts`` copies of which each
    token visits ``tokens_fraction`` (top-k / experts), present ``per_layer`` times per layer on average (several
    alike projections; a dense prefix layer of an MoE model spreads over all layers)."""

    in_features: int = Field(gt=0)
    out_features: int = Field(gt=0)
    experts: int = Field(default=1, ge=1)
    tokens_fraction: float = Field(default=1.0, gt=0, le=1)
    per_layer: float = Field(default=1.0, gt=0)


class ModelArch(Strict):
    """A Llama-style decoder (RMSNorm, RoPE, SwiGLU MLP, GQA; optional MoE)."""

    name: str
    aliases: list[str] = []
    hf_model_type: str = "llama"
    # upper bounds keep arithmetic finite; real models are far below them
    hidden_size: int = Field(gt=0, le=1 << 20)
    intermediate_size: int = Field(gt=0, le=1 << 22)
    num_hidden_layers: int = Field(gt=0, le=10_000)
    num_attention_heads: int = Field(gt=0, le=1 << 14)
    num_key_value_heads: int = Field(gt=0, le=1 << 14)
    vocab_size: int = Field(gt=0, le=1 << 24)
    # Doge's cross-domain mixture has 16,384 single-neuron experts by default
    num_local_experts: int = Field(default=1, ge=1, le=1 << 20)
    num_experts_per_tok: int = Field(default=1, ge=1, le=1 << 20)
    head_dim: int | None = Field(default=None, gt=0, le=1 << 14)
    tie_word_embeddings: bool = False
    attention_bias: bool = False  # Qwen2 has q/k/v biases
    max_position_embeddings: int = Field(default=4096, gt=0, le=1 << 24)
    param_count: int | None = Field(default=None, gt=0)  # total parameters as transformers counts them, checked by a test
    source: str = "inline"
    # the model's own config.json (model_type included) when it came from one: what the trace builds; None = a
    # Llama-family decoder built from the fields above
    hf_config: dict[str, Any] | None = None
    # the KV cache as the model's config lays it out (sliding layers capped at their window, latent attention's
    # compressed vector), read through transformers' own config class; None = every layer, every KV head
    kv_groups: list[KVGroup] | None = None
    # one average decoder layer's projections as the model's own code runs them (its trace: fused QKV, a plain MLP,
    # shared experts, a dense first layer), what serving streams and multiplies; None = the Llama count
    projections: list[Projection] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "ModelArch":
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads={self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads={self.num_key_value_heads}"
            )
        if self.num_experts_per_tok > self.num_local_experts:
            raise ValueError("num_experts_per_tok exceeds num_local_experts")
        if self.head_dim is None and self.hidden_size % self.num_attention_heads:
            raise ValueError("hidden_size is not a multiple of num_attention_heads")
        return self

    @model_validator(mode="after")
    def _decoder(self) -> "ModelArch":
        if self.hf_config is None and self.hf_model_type not in DECODER_MODEL_TYPES:
            raise ValueError(f"model_type {self.hf_model_type!r} needs its config.json; inline architectures are "
                             f"decoders the Llama count describes: {', '.join(sorted(DECODER_MODEL_TYPES))}")
        return self

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def is_moe(self) -> bool:
        return self.num_local_experts > 1


# --------------------------------------------------------------------------------------------------
# Cases (contract input)

InlineModel = dict[str, Any]


class _CaseBase(Strict):
    id: str
    hardware: str
    model: Union[str, InlineModel]
    nodes: int = Field(default=1, ge=1, le=1 << 12)  # identical servers joined by a network (contract)
    inter_node_gbps: float | None = Field(default=None, gt=0, le=1e6)  # each node's network, Gb/s one direction
    network: str | None = Field(default=None, max_length=80)  # fabric of the catalog, "ib-ndr" or "ib-ndr:4" (NICs per node)


class TrainCase(_CaseBase):
    task: Literal["pretrain", "finetune"]
    method: Literal["full", "lora", "qlora"] = None  # type: ignore[assignment]  # task-dependent default
    gpus: int | None = Field(default=None, ge=1, le=1 << 16)
    engine: Literal["deepspeed", "pytorch"] = "deepspeed"
    zero_stage: Literal[0, 1, 2, 3] = 0
    offload: Literal["none", "optimizer", "optimizer+params"] = "none"
    quantization: Literal["none", "int8", "nf4"] = None  # type: ignore[assignment]
    recompute: bool = False
    flash_attention: bool = True
    micro_batch_size: int = Field(default=1, ge=1, le=1 << 20)
    grad_accum: int = Field(default=1, ge=1, le=1 << 20)
    seq_len: int = Field(default=2048, ge=1, le=1 << 24)
    lora_rank: int = Field(default=64, ge=1, le=1 << 16)
    # PEFT's target_modules: the model's own module names (a Phi-3 has qkv_proj, gate_up_proj) or "all-linear";
    # PEFT resolves them on the traced model, which says which names exist
    lora_targets: Union[list[Annotated[str, Field(min_length=1, max_length=200)]], Literal["all-linear"]] = ["q_proj", "k_proj", "v_proj", "o_proj"]
    # ZeRO++ (Wang et al. 2023, arXiv 2306.10209) and MiCS (Zhang et al. 2022, arXiv 2205.00119), ZeRO-3 only;
    # the names are DeepSpeed's own config keys
    zero_quantized_weights: bool = False  # qwZ: int8 weights in the forward all-gather
    zero_hpz_partition_size: int = Field(default=1, ge=1, le=1 << 16)  # hpZ: secondary weight partition over this many GPUs (1 = off)
    zero_quantized_gradients: bool = False  # qgZ: int4 gradients through a hierarchical all-to-all
    mics_shard_size: int | None = Field(default=None, ge=1, le=1 << 16)  # MiCS: shard within groups of this many GPUs
    # DeepSpeed's data_types.grad_accum_dtype (None: its default, the 16-bit type). ZeRO 0 with "fp32" runs
    # BF16_Optimizer (fp32 masters and Adam states split over the ranks, fp32 gradients of the whole model kept); its
    # default runs an optimizer that keeps them whole on every rank (DeepSpeed 0.19's engine._do_optimizer_sanity_check)
    grad_accum_dtype: Literal["bf16", "fp32"] | None = None
    # OMP_NUM_THREADS of each rank: the threads ZeRO-Offload's CPU Adam runs on (None: what advisor's launch line
    # sets, the node's cores shared out over its ranks; torchrun sets 1; the DeepSpeed launcher leaves it unset,
    # so each rank takes every core)
    omp_threads: int | None = Field(default=None, ge=1, le=1 << 16)
    # ZeRO-Offload's "pin_memory" (offload_optimizer and offload_param): True is what the advisor writes (copies at the
    # link's speed; PyTorch's pinned allocator rounds each buffer up to a power of two), False is DeepSpeed's default
    # (pageable: no rounding, each copy staged by the host's memcpy). Measured on two H200s, Llama-2-7B ZeRO-2 offload:
    # 135.3 GiB of host RAM and 9.9 s a step pinned, 116.1 GiB and 13.2 s pageable
    # (knowledge/measurements/own/h200x2-pin-memory-2026-11-28.jsonl)
    offload_pin_memory: bool = True
    # The DeepSpeed release that runs the case, MAJOR.MINOR[.PATCH] (None: the one the advisor pins and writes configs
    # for, 0.19.8). Releases differ in what ZeRO-Offload keeps on the GPU (``knowledge.deepspeed_releases``)
    deepspeed_version: str | None = Field(default=None, max_length=20)

    @model_validator(mode="before")
    @classmethod
    def _task_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if data.get("method") is None:
                data["method"] = "full" if data.get("task") == "pretrain" else "lora"
            if data.get("quantization") is None:
                data["quantization"] = "nf4" if data.get("method") == "qlora" else "none"
        return data

    @field_validator("deepspeed_version")
    @classmethod
    def _release(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"\d{1,3}\.\d{1,3}(\.\d{1,3})?", v):
            raise ValueError(f"{v!r} is not a release: MAJOR.MINOR[.PATCH], e.g. 0.19.8 (the pinned one) or 0.12")
        return v

    @field_validator("lora_targets")
    @classmethod
    def _known_targets(cls, v: list[str] | str) -> list[str] | str:
        if isinstance(v, str):
            return v
        if not v:
            raise ValueError("must name at least one module (e.g. q_proj) or be 'all-linear'")
        if len(v) > 64:
            raise ValueError(f"names {len(v)} modules; at most 64")
        if len(set(v)) != len(v):
            raise ValueError(f"names a module twice: {sorted(t for t in set(v) if v.count(t) > 1)[0]!r}")
        return v


# Weight formats of served models and their bits (models.serving_quant says how each runs).
FORMAT_BITS = {"bf16": 16, "fp8": 8, "int8": 8, "int4": 4, "bnb-int8": 8, "bnb-nf4": 4}
WEIGHT_FORMATS = tuple(FORMAT_BITS)


class ServeCase(_CaseBase):
    task: Literal["serve"]
    batch_size: int = Field(default=1, ge=1, le=1 << 20)
    prompt_len: int = Field(default=512, ge=1, le=1 << 24)
    kv_len: int | None = Field(default=None, ge=1, le=1 << 24)
    output_len: int | None = Field(default=None, ge=1, le=1 << 24)
    weight_bits: Literal[16, 8, 4] = 16
    kv_bits: Literal[16, 8] = 16
    tensor_parallel: int = Field(default=1, ge=1, le=1 << 12)
    # how the weights are stored and multiplied, as engines serve them (default from weight_bits and the GPU:
    # 8 = FP8 W8A8 where the GPU has FP8 tensor cores, else int8 W8A8; 4 = int4 W4A16, AWQ/GPTQ-style);
    # bitsandbytes only when named
    weight_format: Literal[WEIGHT_FORMATS] | None = None  # type: ignore[valid-type]
    replicas: int | None = Field(default=None, ge=1, le=1 << 16)  # data-parallel copies; default GPUs // TP
    # the engine that serves (knowledge.engines): its memory policy (a KV pool of the GPU's memory fraction),
    # chunked prefill, fused kernels and paged attention over the grouped heads. "transformers" = the runtime the
    # serving fit measured (the model's own modules, K/V repeated per query head, CUDA graphs), only when named
    engine: Literal["vllm", "sglang", "trtllm", "transformers"] = "vllm"

    @model_validator(mode="before")
    @classmethod
    def _bits_from_format(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("weight_format"), str) and data["weight_format"] in FORMAT_BITS:
            bits = FORMAT_BITS[data["weight_format"]]
            if data.get("weight_bits") is None:
                data = {**data, "weight_bits": bits}
            elif data["weight_bits"] != bits:
                raise ValueError(f"weight_format {data['weight_format']!r} has {bits}-bit weights, "
                                 f"not weight_bits={data['weight_bits']!r}")
        return data

    @property
    def kv_len_effective(self) -> int:
        return self.kv_len if self.kv_len is not None else self.prompt_len


Case = Annotated[Union[TrainCase, ServeCase], Field(discriminator="task")]

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")  # a Llama layer's projections


# --------------------------------------------------------------------------------------------------
# Predictions (contract output)


class TrainBreakdown(BaseModel):
    """Seconds per phase of one optimizer step and GiB per memory item of the busiest rank."""

    model_config = ConfigDict(extra="forbid")
    forward_s: float
    backward_s: float
    optimizer_s: float
    communication_s: float  # exposed (not hidden behind compute)
    offload_s: float  # exposed host<->device transfers and CPU optimizer
    overhead_s: float  # framework / launch time not hidden behind GPU work
    weights_gib: float
    grads_gib: float
    optimizer_states_gib: float
    activations_gib: float
    buffers_gib: float  # logits/loss, communication buckets, quantization workspace
    overhead_gib: float  # CUDA workspace (cuBLAS), allocator slack


class TrainPrediction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    tokens_per_s: float
    step_time_s: float
    peak_mem_gib: float
    fits: bool
    breakdown: TrainBreakdown | None = None
    interval: dict[str, tuple[float, float]] | None = None
    host_mem_gib: float | None = None  # peak host RAM of the node, all ranks together
    capacity_gib: float | None = None  # device memory of one GPU
    why_not_fits: str | None = None
    # when fits is false: which memory runs out, or "crash": the configuration cannot run this model at all
    failure: Literal["device_oom", "host_oom", "crash"] | None = None
    # probability of running out of GPU memory or host RAM, from the memory model's held-out error in its regime;
    # fits is true only when it is at most 0.05 (models.oom)
    p_oom: float | None = None
    # what the verdict weighs against the usable memory: the peak + the block the caching allocator must find again
    required_gib: float | None = None
    model_tflops_per_gpu: float | None = None  # model FLOPs per second per GPU (MFU numerator)
    host_capacity_gib: float | None = None  # usable host RAM of the node (plus its swap) the verdict was made against
    host_swap_gib: float | None = None  # of host_mem_gib, what only fits by spilling beyond RAM into the node's swap
    network: str | None = None  # several nodes: the network between them the prediction assumed, and its source


class ServeBreakdown(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prefill_compute_s: float
    prefill_memory_s: float
    prefill_communication_s: float = 0.0  # tensor parallelism's all-reduces over the prompt (PCIe: most of a prefill)
    decode_weights_s: float  # reading weights once per step
    decode_kv_s: float  # reading the KV cache
    decode_compute_s: float
    communication_s: float
    overhead_s: float
    weights_gib: float
    kv_cache_gib: float
    activations_gib: float


class ServePrediction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    prefill_s: float
    decode_step_s: float
    decode_tokens_per_s: float
    e2e_output_tokens_per_s: float | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None
    peak_mem_gib: float
    fits: bool
    p_oom: float | None = None  # P(its sequences need more than it may use: the usable memory, or the engine's pool)
    max_batch_size: int | None = None  # largest batch whose KV cache fits at this length
    breakdown: ServeBreakdown | None = None
    interval: dict[str, tuple[float, float]] | None = None
    capacity_gib: float | None = None
    why_not_fits: str | None = None
    engine: str | None = None  # the engine the prediction assumed (its memory policy, kernels and launch line)
    weight_format: str | None = None  # resolved: bf16, fp8, int8, int4, bnb-int8, bnb-nf4
    replicas: int | None = None  # data-parallel copies of the tensor-parallel group (resolved)
    kv_cache_tokens: int | None = None  # tokens the engine's paged KV pool holds on one replica
    required_gib: float | None = None  # what the verdict compares with the usable memory: the peak + the prefill's
    # transients the caching allocator cannot reuse while the cache grows (transformers); an engine's weights,
    # workspace, one chunk's activations and the sequences' KV
    usable_gib: float | None = None  # what ``required_gib`` is compared with: the usable memory (transformers), or
    # weights + workspace + one chunk's activations + the KV pool (an engine's memory fraction)
    kv_pool_gib: float | None = None  # the paged KV pool the engine sets aside per GPU (None: transformers, no pool)
    chunk_tokens: int | None = None  # tokens one prefill step processes (the engine's max_num_batched_tokens)
    note: str | None = None  # what the engine would do that is not a crash (more sequences than its pool holds)


class ErrorLine(BaseModel):
    id: str | None
    error: str


# --------------------------------------------------------------------------------------------------
# Measurements


class Environment(Strict):
    gpu_name: str
    gpu_count: int
    driver: str | None = None
    torch: str | None = None
    cuda: str | None = None
    deepspeed: str | None = None
    transformers: str | None = None
    peft: str | None = None
    bitsandbytes: str | None = None
    date: str
    command: str
    cpu_cores: int | None = None
    host_ram_gib: float | None = None  # usable host RAM (cgroup limit or MemTotal)
    omp_threads: int | None = None  # torch.get_num_threads() of rank 0: what CPU Adam runs on


class Measured(Strict):
    """What a real run showed. ``oom`` runs carry no throughput."""

    oom: bool = False
    tokens_per_s: float | None = None
    step_time_s: float | None = None
    peak_mem_gib: float | None = None  # torch.cuda.max_memory_allocated, GiB
    peak_reserved_gib: float | None = None  # torch.cuda.max_memory_reserved, GiB (recorded since 2026-11-28)
    peak_mem_gb_reported: float | None = None  # a published figure in decimal GB of unstated meaning
    forward_s: float | None = None
    backward_s: float | None = None
    optimizer_s: float | None = None
    prefill_s: float | None = None
    prefill_eager_s: float | None = None  # the same prefill dispatched eagerly (serve_sweep), host included
    decode_step_s: float | None = None
    e2e_output_tokens_per_s: float | None = None
    error: str | None = None  # why the run failed, when it did not produce numbers
    # how it failed: out of GPU memory, killed by the host (signal 9 with host RAM at its limit), ran past
    # its wall limit, or anything else
    failure: Literal["device_oom", "host_oom", "timeout", "crash"] | None = None
    host_peak_gib: float | None = None  # rise of the node's used RAM (MemTotal - MemAvailable) over the run
    host_rss_gib: float | None = None  # peak resident set, summed over the ranks of the node


class Measurement(Strict):
    schema_version: int = SCHEMA_VERSION
    dataset: str  # e.g. "zhang2023", "own-h100"
    source: str  # citation or file of origin
    case: dict[str, Any]  # a contract case (validated on use)
    measured: Measured
    environment: Environment | None = None
    notes: str = ""


# --------------------------------------------------------------------------------------------------
# Calibration profile written by `advisor probe`


def _positive_finite(v: Any) -> Any:
    """Field validator of measured ceilings: None passes, else a finite number above zero."""
    if v is not None and (isinstance(v, bool) or not math.isfinite(v) or v <= 0):
        raise ValueError(f"must be a finite number above zero, got {v!r}")
    return v


def _non_negative_finite(v: Any) -> Any:
    if isinstance(v, bool) or not math.isfinite(v) or v < 0:
        raise ValueError(f"must be a finite number, 0 or more, got {v!r}")
    return v


class GemmPoint(Strict):
    m: int
    n: int
    k: int
    tflops: float  # achieved, bf16 (fp16 where bf16 is missing)

    _positive = field_validator("m", "n", "k", "tflops")(lambda v: _positive_finite(v))


class AttentionPoint(Strict):
    batch: int
    seq_len: int
    heads: int
    head_dim: int
    fused_fwd_bwd_s: float | None
    eager_fwd_bwd_s: float | None

    _positive = field_validator("batch", "seq_len", "heads", "head_dim", "fused_fwd_bwd_s", "eager_fwd_bwd_s")(
        lambda v: _positive_finite(v))


class CollectivePoint(Strict):
    op: Literal["all_reduce", "all_gather", "reduce_scatter"]
    ranks: int
    size_bytes: int
    time_s: float
    busbw_gbs: float  # nccl-tests convention

    _positive = field_validator("ranks", "size_bytes", "time_s")(lambda v: _positive_finite(v))
    # one rank moves nothing between GPUs: a bus bandwidth of 0 (nccl-tests' factor (n-1)/n)
    _finite = field_validator("busbw_gbs")(lambda v: _non_negative_finite(v))


class HostProbe(Strict):
    """The host as `advisor probe` read it."""

    cpu_cores: int
    mem_total_gib: float
    mem_available_gib: float
    cgroup_limit_gib: float | None = None
    usable_ram_gib: float
    swap_gib: float | None = None  # SwapTotal (within the cgroup's swap limit); None in profiles older than it
    # /proc/cpuinfo's model name: leases of one GPU kind come on hosts of different CPUs, whose host-bound steps differ
    # by up to 1.6x (knowledge/measurements/README.md, twenty-sixth session); None in profiles older than it
    cpu_model: str | None = None


class InterNodeProbe(Strict):
    """Collectives across nodes as `advisor probe` measured them when launched on several nodes."""

    nodes: int = Field(ge=2)
    gpus_per_node: int = Field(ge=1)
    # what one node's NICs carried, GB/s one direction: the ranks of equal local rank on every node run
    # concurrent rings (one per GPU, as NCCL's rails do); their bus bandwidths summed over the node
    busbw_gbs: float
    points: list[CollectivePoint] = []  # per ring, nccl-tests conventions

    _positive = field_validator("busbw_gbs")(lambda v: _positive_finite(v))


class LinkCollectivePoint(CollectivePoint):
    p2p: bool  # peer-to-peer allowed (False: run with NCCL_P2P_DISABLE=1)


class CpuAdamPoint(Strict):
    processes: int = Field(ge=1)  # DeepSpeed CPU Adam run by this many processes at once
    threads: int = Field(ge=1)  # torch threads of each
    params: int = Field(ge=1)  # parameters each updates
    gparams_per_s: float  # per process, the slowest process's rate

    _positive = field_validator("gparams_per_s")(lambda v: _positive_finite(v))


class LinksProbe(Strict):
    """How the box is wired, as `advisor probe --links` (probes/links.py) measured it."""

    gpus: int = Field(ge=0)
    p2p_matrix: list[list[bool]] = []  # torch.cuda.can_device_access_peer(i, j)
    collectives: list[LinkCollectivePoint] = []  # all-reduce / all-gather / reduce-scatter, P2P on and off
    single_h2d_gbs: float | None = None  # one GPU copying alone, pinned
    concurrent_h2d_gbs: float | None = None  # per GPU, every GPU copying at once (the slowest GPU)
    concurrent_d2h_gbs: float | None = None
    cpu_adam: list[CpuAdamPoint] = []

    _finite = field_validator("single_h2d_gbs", "concurrent_h2d_gbs", "concurrent_d2h_gbs")(
        lambda v: v if v is None else _positive_finite(v))

    def large_busbw_gbs(self, p2p: bool | None = None, op: str = "all_reduce") -> float | None:
        """The best bus bandwidth at >= 64 MiB of ``op`` (with that P2P setting; None: whichever was the
        machine's default, i.e. P2P on), GB/s; None when not measured."""
        want = True if p2p is None else p2p
        big = [c.busbw_gbs for c in self.collectives if c.op == op and c.p2p == want and c.size_bytes >= 64 * 2**20]
        return max(big) if big else None


class Profile(Strict):
    """Ceilings measured on the local GPUs; they replace catalog numbers in the performance model."""

    schema_version: int = SCHEMA_VERSION
    gpu_name: str
    gpu_id: str | None = None  # catalog id it was matched to
    gpu_count: int
    environment: Environment
    quick: bool = False
    matmul_tflops: float  # large square bf16 GEMM
    gemm: list[GemmPoint] = []
    memory_bandwidth_gbs: float  # device copy, read + write bytes over time
    launch_overhead_s: float  # one small kernel launched from Python, back to back
    h2d_gbs: float | None = None  # pinned host -> device
    d2h_gbs: float | None = None
    cpu_adam_gparams_per_s: float | None = None  # DeepSpeed CPU Adam, all cores of this process
    cpu_adam_impl: str | None = None  # which optimizer that rate is of
    cpu_adam_threads: int | None = None  # the threads it ran on
    host: HostProbe | None = None
    attention: list[AttentionPoint] = []
    collectives: list[CollectivePoint] = []
    macro: list[Measurement] = []
    inter_node: InterNodeProbe | None = None  # measured only when probed on several nodes
    links: LinksProbe | None = None  # P2P matrix, collectives P2P on/off, concurrent copies, CPU Adam x N

    # a ceiling that is zero, negative, NaN or infinite would turn every prediction into nonsense
    # (gpu_count may be 0: a CPU profile is a valid file, refused only when a prediction would use it)
    _ceilings = field_validator(
        "matmul_tflops", "memory_bandwidth_gbs", "launch_overhead_s", "h2d_gbs", "d2h_gbs",
        "cpu_adam_gparams_per_s",
    )(lambda v: _positive_finite(v))

    @field_validator("gpu_count")
    @classmethod
    def _gpu_count(cls, v: int) -> int:
        if v < 0:  # 0 is a CPU profile
            raise ValueError(f"must be 0 or more, got {v}")
        return v
