"""What a serving case means on one GPU of its tensor-parallel group: the model, the calibration, the weight
format, the KV cache's bytes (``models.kv_cache``), the engine (vLLM unless the case names another; ``transformers``
is the probed runtime), the replicas. Pure functions."""

from __future__ import annotations

import math
from dataclasses import dataclass

from knowledge.efficiency import Efficiencies
from knowledge.engines import Engine, engine_named
from knowledge.errors import AdvisorError
from knowledge.schema import ModelArch, PlatformSpec, ServeCase
from knowledge.serving_formats import FORMATS, WeightFormat, default_format, unsupported
from models.calibration import Calibration
from models.kv_cache import (attention_layers, kv_bytes_per_token, kv_cache_bytes, kv_heads_per_gpu, paged_cache_bytes,
                             state_bytes)
from models.roofline import Ceilings


@dataclass(frozen=True)
class ServeSetup:
    arch: ModelArch
    platform: PlatformSpec
    cal: Calibration
    tp: int
    fmt: WeightFormat
    kv_bits: int
    engine: Engine = engine_named(None)

    @property
    def engine_style(self) -> bool:
        """An engine's structure (fused kernels, paged attention over the grouped heads, a KV pool, chunked prefill);
        False for the transformers runtime (unfused modules, K/V repeated per query head, a static cache)."""
        return self.engine.paged

    @property
    def eff(self) -> Efficiencies:
        return self.cal.eff

    @property
    def c(self) -> Ceilings:
        return self.cal.ceilings

    @property
    def kv_heads_per_gpu(self) -> int:
        return kv_heads_per_gpu(self.arch, self.tp)

    def kv_bytes(self, kv_len: float) -> float:
        """One sequence's KV cache on one GPU at ``kv_len`` tokens, all layers, its states as the engine keeps them
        (``models.kv_cache``)."""
        return kv_cache_bytes(self.arch, self.tp, self.kv_bits, kv_len, self.engine.vllm_cache)

    def pooled_bytes(self, kv_len: int) -> float:
        """What the engine's paged pool reserves for one sequence of ``kv_len`` tokens on one GPU: whole blocks, as its
        allocator pages the model (``models.kv_cache.paged_cache_bytes``)."""
        e = self.engine
        return paged_cache_bytes(self.arch, self.tp, self.kv_bits, kv_len, e.kv_block_tokens, e.vllm_cache)

    @property
    def kv_bytes_per_token_layer(self) -> float:
        """K and V of one new token on one GPU, averaged over the layers (what a prefill writes per token and layer;
        none in a hybrid's recurrent layers)."""
        return self.kv_bytes_per_token / self.arch.num_hidden_layers

    @property
    def kv_bytes_per_token(self) -> float:
        return kv_bytes_per_token(self.arch, self.tp, self.kv_bits)

    @property
    def state_bytes_per_layer(self) -> float:
        """One sequence's fixed recurrent state on one GPU, averaged over the layers (a decode step reads and writes it)."""
        return state_bytes(self.arch, self.tp, self.engine.vllm_cache) / self.arch.num_hidden_layers

    @property
    def attention_share(self) -> float:
        """The share of layers that attend over a KV cache (a hybrid's others run a recurrent scan)."""
        return attention_layers(self.arch) / self.arch.num_hidden_layers

    @property
    def quant_flops(self) -> float:
        """The tensor-core rate the projections run at: FP8 / int8 GEMMs at their own (datasheet-scaled) rate."""
        g = self.platform.gpu
        if self.fmt.compute == "fp8" and g.fp8_tflops:
            return self.c.matmul_flops * g.fp8_tflops / g.matmul_tflops
        if self.fmt.compute == "int8" and g.int8_tops:
            return self.c.matmul_flops * g.int8_tops / g.matmul_tflops
        return self.c.matmul_flops


def resolve_format(case: ServeCase, gpu) -> WeightFormat:
    name = case.weight_format or default_format(case.weight_bits, gpu)
    why = unsupported(name, gpu)
    if why:
        raise AdvisorError(f"weight_format={name!r}: {why}")
    return FORMATS[name]


def replicas_of(case: ServeCase, platform: PlatformSpec) -> int:
    """Data-parallel copies: the case's, else every GPU of the platform in groups of ``tensor_parallel``."""
    tp = case.tensor_parallel
    if tp > platform.count:
        raise AdvisorError(f"tensor_parallel={tp} exceeds the {platform.count} GPUs of {platform.id!r}")
    r = case.replicas or max(1, platform.count // tp)
    if r * tp > platform.count:
        raise AdvisorError(f"replicas={r} x tensor_parallel={tp} needs {r * tp} GPUs; {platform.id!r} has {platform.count}")
    return r


def make_setup(arch: ModelArch, platform: PlatformSpec, cal: Calibration, tp: int = 1, fmt: str | WeightFormat = "bf16",
               kv_bits: int = 16, engine: str | None = None) -> ServeSetup:
    if tp > platform.count:
        raise AdvisorError(f"tensor_parallel={tp} exceeds the {platform.count} GPUs of {platform.id!r}")
    if arch.num_attention_heads % tp:
        raise AdvisorError(f"tensor_parallel={tp} does not divide the {arch.num_attention_heads} attention heads of {arch.name}")
    wf = FORMATS[fmt] if isinstance(fmt, str) else fmt
    return ServeSetup(arch, platform, cal, tp, wf, kv_bits, engine_named(engine))


def expected_experts(experts: int, top_k: int, tokens: float) -> float:
    """Distinct experts a batch of ``tokens`` routes to, uniform routing: E(1 - (1 - k/E)^tokens)."""
    if experts <= 1:
        return 1.0
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def expanded_kv_bytes_per_token_layer(s: ServeSetup) -> float:
    """K and V repeated to every query head of one GPU, 16-bit; 0 when there is nothing to repeat (MHA)."""
    a = s.arch
    if a.num_key_value_heads >= a.num_attention_heads:
        return 0.0
    return 2.0 * a.num_attention_heads / s.tp * a.head_size * 2.0
