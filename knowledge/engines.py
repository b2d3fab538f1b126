"""Serving engines: how much of the GPU each gives its paged KV cache, and the kernels of one decoder layer.

The kernel structure is what the engines' model code fuses (read from vLLM's ``LlamaDecoderLayer``: a fused
residual-add + RMSNorm, one merged QKV GEMM, rotary embedding, paged / flash attention over the grouped K/V heads
as stored, the output GEMM, a second fused add + norm, one merged gate/up GEMM, SiLU-and-multiply, the down
GEMM; SGLang and TensorRT-LLM fuse at least as much). The serving model's efficiencies were fitted on a runtime
that does none of this fusing (``RUNTIME``): an engine's prediction swaps in its structure, and that swap is
physics, not checked against an engine's own runs."""

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
    kernels_per_layer: int = 10  # fused decoder layer (see the module docstring)


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

# What a case without an engine describes, and what the serving fit was measured on: the model's own
# Hugging Face modules on a static cache, decode and prefill replayed from CUDA graphs (probes/serve_sweep.py).
RUNTIME = "transformers + CUDA graphs (as probed)"
