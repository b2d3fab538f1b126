"""Serving engines' memory policy: how much of the GPU each gives its paged KV cache. Each with its source."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Engine:
    name: str
    label: str
    memory_fraction: float  # of the GPU's memory the engine may use (weights + activations + KV pool)
    of_free: bool  # True: the fraction applies to what is free after weights and activations (TensorRT-LLM)
    kv_block_tokens: int  # paged KV cache block size
    source: str


ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine("vllm", "vLLM", 0.90, False, 16,
           "vLLM EngineArgs: gpu_memory_utilization=0.9 (weights, activation peak, CUDA graphs and the KV pool "
           "together), block_size=16"),
    Engine("sglang", "SGLang", 0.88, False, 1,
           "SGLang ServerArgs: mem_fraction_static chosen from GPU memory and TP (about 0.88 on 80 GB cards) for "
           "weights + KV pool; token-granular RadixAttention pool (page_size=1)"),
    Engine("trtllm", "TensorRT-LLM", 0.90, True, 32,
           "TensorRT-LLM KvCacheConfig: free_gpu_memory_fraction=0.9 of the memory left after the engine's weights "
           "and activations; tokens_per_block=32"),
)}
