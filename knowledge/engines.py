"""Serving engines: how much of the GPU each gives its paged KV cache, how many tokens one scheduled step may
prefill, and the kernels of one decoder layer.

The layer structure is vLLM's ``LlamaDecoderLayer`` (read from its model code: residual add + RMSNorm, one merged
QKV GEMM, rotary embedding, attention over the grouped K/V heads as stored, the output GEMM, a second add + norm,
one merged gate/up GEMM, SiLU-and-multiply, the down GEMM). The kernels it launches per decode step are counted
as the project measures that structure (``probes.engine_model``, the runtime of every engine-style row: vLLM
cannot be installed on the GPU machines): ``ENGINE_LAYER_KERNELS``. vLLM's own compiled layer fuses the norms,
rotary and SiLU further (about 11 kernels), but splits its CUDA graph at every attention; neither is measured
here, so the counted structure stands for every engine. In a small decode step these kernels' floor (a few
microseconds each inside a graph) is a third of the step: counted as 10 fused kernels a layer, the 64 engine-style
decode steps (h100-engine-2026-11-23) were predicted 18.7% fast with the bundled fit and 9.6% off held out by model
(fast at every batch and model); counted as the layer launches them, 4.9% and 3.9% (tests/benchmarks/engine_decode.py).

A serving case without an ``engine`` is predicted as vLLM serves it (``DEFAULT_ENGINE``); ``transformers`` (the
probed runtime) only when named.
"""

from __future__ import annotations

from dataclasses import dataclass

# Kernels one engine-style decoder layer launches in a decode step, counted in ``probes.engine_model`` on CUDA
# (tests/test_engine_kernels.py counts the same calls): 2 RMSNorms (one fused kernel each on CUDA), 4 GEMMs (QKV,
# output, gate/up, down), rotary on q and on k (13 each: the position cast, the angle product, cos, sin, two casts,
# four products, a subtraction, an addition, the concatenation), 2 cache writes, attention, 2 residual adds, SiLU
# and the multiply (one query per sequence: laying attention's output out for the output GEMM is a view).
ROPE_KERNELS = 13
# Bytes per element of q and k that those rotary kernels move (per element: the four half-width products 2 B each, the
# subtraction and the addition 3 B each, the concatenation 4 B = 18), where a fused in-place rotary kernel moves 4: the
# emulation's prefill chunks spend 14-18% of their GPU time there and on the strided reads of q and k from the fused QKV
# output (probes/engine_profile.py, logs/h100x1-engine-profile-2026-11-28.jsonl: OLMo-2-1B, SmolLM2, whose K is as wide
# as Q, were predicted 13-15% fast in prefill with 4)
ROPE_BYTES_PER_ELEMENT = 18.0
ENGINE_LAYER_KERNELS = 2 + 4 + 2 * ROPE_KERNELS + 2 + 1 + 2 + 2  # = 39
QK_NORM_KERNELS = 2  # Qwen3 / OLMo-2 normalise q and k per head: one RMSNorm kernel each
QK_NORM_TYPES = ("qwen3", "qwen3_moe", "olmo2", "olmoe", "gemma3_text")  # model types whose attention normalises q and k
# Layers that differ from Llama's in kernel count (transformers' modeling files; the engine-style layer builds the same,
# counted by tests/test_engine_kernels.py): a plain MLP (fc -> activation -> proj, StarCoder2, GPT-NeoX) has no gate
# product, one kernel fewer; Gemma-2/3 normalise the attention's and the MLP's outputs too, two RMSNorms more
PLAIN_MLP_TYPES = ("starcoder2", "gpt_neox", "gpt2", "gpt_bigcode", "gptj", "phi", "falcon", "bloom", "opt")
POST_NORM_TYPES = ("gemma2", "gemma3_text", "gemma3")
POST_NORM_KERNELS = 2
# An MoE layer's MLP as vLLM's fused MoE runs it, counted in ``probes.engine_model`` like the layer above: the dense
# MLP's 4 kernels (gate/up GEMM, SiLU, multiply, down GEMM) become the router GEMM, softmax, top-k, the sort of the
# (token, expert) pairs and their tokens, the gathers of rows and weights, the per-expert row counts (one-hot, sum,
# cumulative sum, cast), one grouped GEMM for every expert's gate/up, SiLU and multiply, one grouped GEMM for the downs,
# back to token order (a sort and a gather, where vLLM's GEMM writes there), the routing weights' cast and product and
# the sum over the top k (vLLM's moe_sum): a constant, however many experts are hit
DENSE_MLP_KERNELS = 4
FUSED_MOE_KERNELS = 19
NORM_TOPK_KERNELS = 2  # renormalised top-k weights (norm_topk_prob): a sum and a division
# families whose code renormalises the top-k weights whatever the config says (Mixtral's block; vLLM's renormalize=True)
ALWAYS_RENORMALISE_TYPES = ("mixtral",)
SHARED_EXPERT_KERNELS = 5  # a shared expert beside the routed ones: gate/up GEMM, SiLU, multiply, down GEMM, the add
SHARED_GATE_KERNELS = 3  # its sigmoid gate (Qwen2-MoE): a GEMV, the sigmoid, the product
# Bytes per (token, expert) pair that the fused MoE above moves besides its GEMMs and SiLU-and-multiply, per unit of the
# hidden size (16-bit rows): the rows gathered into expert order (read 2, written 2) and back to token order (read 2,
# written 2), the product with the routing weights (read 2, written 2) and the sum over the top k (read 2; its 2-byte
# output is per token). The two gathers' reads follow the sort's order: ``MOE_INDEXED_ROW_BYTES`` of them pay the
# indexed rate (``Efficiencies.trace_irregular_bytes_eff``) on top. vLLM's Triton path folds the first gather into its
# gate/up GEMM and the weights into its down GEMM (its DeepGEMM and CUTLASS paths permute and unpermute as here).
MOE_ROW_BYTES = 2 * 2 + 2 * 2 + 2 * 2 + 2  # = 14
MOE_INDEXED_ROW_BYTES = 2 + 2
# Per token and expert of the router: bf16 logits written, a softmax in fp32 (read 2, written 4), top-k reading them (4);
# per (token, expert) pair: fp32 weight and int64 id written (12), the one-hot per-expert counts (int64, written and read:
# 16 per expert)
MOE_ROUTER_BYTES_PER_EXPERT = 2 + 2 + 4 + 4
MOE_PAIR_BYTES = 4 + 8
MOE_COUNT_BYTES_PER_EXPERT = 2 * 8


@dataclass(frozen=True)
class Engine:
    name: str
    label: str
    memory_fraction: float  # of the GPU's memory the engine may use (weights + activations + KV pool)
    of_free: bool  # True: the fraction applies to what is free after weights and activations (TensorRT-LLM)
    kv_block_tokens: int  # paged KV cache block size
    chunk_tokens: int  # tokens one scheduled step may process (chunked prefill budget) on a large GPU
    chunk_tokens_small_gpu: int  # the same on a GPU below ``small_gpu_gib``
    small_gpu_gib: float
    source: str
    kernels_per_layer: int = ENGINE_LAYER_KERNELS  # one decoder layer's decode-step kernels (module docstring)
    paged: bool = True  # False: the transformers runtime (static cache per batch, no pool, no chunking)
    # True: prefill replayed from CUDA graphs (the probed transformers runtime) or launched by a compiled runtime's C++
    # (TensorRT-LLM); False: prefill chunks run eagerly from Python, as vLLM V1 runs every chunk above its largest
    # captured size (512 tokens by default; its 8,192-token chunks never replay a graph) and SGLang its prefills
    # (CUDA graphs for decode only), and as the project's engine emulation runs them (probes/engine_sweep.py). vLLM's
    # steps of at most 512 tokens replay piecewise graphs; they are charged as eager too (no such step was measured)
    prefill_graphed: bool = False
    # True: a recurrent layer's states kept as vLLM keeps them (knowledge.catalog.SSM_STATE_DTYPE_FIELDS) and a model
    # whose layers cache unlike (a hybrid's recurrent layers, sliding and full attention) paged as vLLM's hybrid KV cache
    # manager pages it (models.kv_cache.paged_cache_bytes); False: transformers' states, token by token in whole blocks
    vllm_cache: bool = False

    def chunk_tokens_for(self, gpu_memory_gib: float, gpu_name: str = "") -> int:
        # vLLM counts an 80 GB A100 as small too (arg_utils.py: ``"a100" not in device_name``)
        small = gpu_memory_gib < self.small_gpu_gib or (self.name == "vllm" and "a100" in gpu_name.lower())
        return self.chunk_tokens_small_gpu if small else self.chunk_tokens

ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine("vllm", "vLLM", 0.90, False, 64, 8192, 2048, 70.0,
           "vLLM EngineArgs: gpu_memory_utilization=0.9 (weights, activation peak, CUDA graphs and the KV pool "
           "together; the advisor's launch line sets it: vLLM 0.34.0's own default is 0.92); block_size 64 "
           "(vLLM 0.34.0 CacheConfig.DEFAULT_BLOCK_SIZE, which FlashAttention takes: a multiple of 16; 16 before); "
           "a hybrid's attention block grown to a recurrent layer's state and its layers paged in groups "
           "(models.kv_cache.paged_cache_bytes); V1 chunked prefill on by default with max_num_batched_tokens=8192 for "
           "the OpenAI server on GPUs of >= 70 GiB other than the A100, 2048 below (arg_utils.py, usage-context "
           "defaults)", vllm_cache=True),
    Engine("sglang", "SGLang", 0.88, False, 1, 8192, 2048, 25.0,
           "SGLang ServerArgs: mem_fraction_static chosen from GPU memory and TP (about 0.88 on 80 GB cards) for "
           "weights + KV pool; token-granular RadixAttention pool (page_size=1); chunked_prefill_size=8192, 2048 on "
           "GPUs under 25 GB (server_args.py)"),
    Engine("trtllm", "TensorRT-LLM", 0.90, True, 32, 8192, 8192, 0.0,
           "TensorRT-LLM KvCacheConfig: free_gpu_memory_fraction=0.9 of the memory left after the engine's weights "
           "and activations; tokens_per_block=32; max_num_tokens=8192 (BuildConfig / trtllm-serve default)",
           prefill_graphed=True),
)}

# The runtime the serving fit was measured on: the model's own Hugging Face modules on a static cache holding the
# whole batch, grouped K/V heads repeated to the query heads, the whole batch's prompt in one forward, decode and
# prefill replayed from CUDA graphs (probes/serve_sweep.py). Chosen only when a case names it.
TRANSFORMERS = Engine("transformers", "transformers + CUDA graphs (as probed)", 1.0, False, 1, 1 << 30, 1 << 30, 0.0,
                      "probes/serve_sweep.py: Hugging Face modules, StaticCache, CUDA graphs; no pool, no chunking",
                      kernels_per_layer=0, paged=False, prefill_graphed=True)

DEFAULT_ENGINE = "vllm"  # what a serving case without an engine is predicted as (CONTRACT.md)
# transformers runs a hybrid's Mamba-2, gated delta-net and KDA layers on kernels from other packages where installed,
# else on its torch reference code, which materialises whole chunks of the scan: on an H100 (2026-12-07, grid
# h100x1-hybrid-serve, knowledge/measurements/own/logs/) Nemotron-H and Falcon-H1 asked for 128 GiB-1 TiB at 8-16 x 2,048
# tokens, Kimi-Linear 16-32 GiB, where the count (the fused kernels') said they fit
TRANSFORMERS_RECURRENT_NOTE = ("transformers runs this model's recurrent layers fast and within this memory only with "
                               "mamba-ssm, causal-conv1d or flash-linear-attention installed; its torch fallback "
                               "materialises whole chunks of the scan (measured: 128 GiB-1 TiB at 8-16 x 2,048 tokens "
                               "for Nemotron-H and Falcon-H1)")
CASE_ENGINES = (*ENGINES, TRANSFORMERS.name)  # what a case's ``engine`` may name


def engine_named(name: str | None) -> Engine:
    """The engine a case names (None: the default, vLLM)."""
    name = name or DEFAULT_ENGINE
    return TRANSFORMERS if name == TRANSFORMERS.name else ENGINES[name]
