"""The named parameters of the performance model, with where each default comes from.

The analytic model is physics (FLOPs, bytes, bandwidths) times these efficiencies and overheads. The
defaults below are the analytic v1 priors; ``models.correction`` fits the ``FITTED`` ones to measured
runs and stores them in ``knowledge/calibration/fitted.json``. Efficiencies are fractions of a ceiling
(catalog datasheet, or the probe's measurement when a profile is given) and are capped at 1, so no
prediction can beat the roofline.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

CALIBRATION_DIR = Path(__file__).parent / "calibration"


def _p(default: float, source: str, lo: float = 0.0, hi: float = float("inf")) -> float:
    return Field(default=default, ge=lo, le=hi, description=source)  # type: ignore[return-value]


class Efficiencies(BaseModel):
    """Named efficiency and overhead parameters (unitless fractions unless the name has a unit)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # --- compute ------------------------------------------------------------------------------
    gemm_eff_max: float = _p(0.75, "prior: cuBLAS bf16 GEMMs reach ~75-80% of dense peak at large sizes (H100 790/989)", 0.05, 1)
    gemm_half_tokens: float = _p(256.0, "prior: GEMM efficiency reaches half its maximum at this many tokens (rows)", 1)
    memory_eff: float = _p(0.7, "prior: elementwise kernels reach ~70% of HBM bandwidth", 0.05, 1)
    # kernel-level rates of a traced model's own operators, fitted to the kernel times of real steps (probes/anatomy.py:
    # 8 steps of Qwen3, Phi-3, Qwen1.5-MoE, OLMoE, DeepSeek-V2-Lite on one H100, 2026-11-24, knowledge/measurements/own/
    # logs/h100-anatomy-2026-11-24.jsonl; leaving each family out: GEMM time 5.5%, memory-bound time 10.5% MAPE, n=8)
    trace_gemm_eff_max: float = _p(0.98, "fitted (anatomy, above): a traced model's GEMM kernels reach 98% of the probed matmul ceiling at large row counts", 0.05, 1)
    fp32_gemm_eff: float = _p(0.6, "measured: products of fp32 inputs (SDPA's math path, fp32 experts) reach ~60% of the datasheet FP32 rate on the CUDA cores (own H100 anatomy of Falcon-7B LoRA, 2026-11-25, probes/anatomy_cases_6b.jsonl: 7.3 TFLOP of fp32 attention products in 0.186 s, 0.58 of 67 TFLOP/s)", 0.05, 1)
    trace_gemm_half_rows: float = _p(273.0, "fitted (anatomy, above): rows per GEMM (per expert for routed experts' grouped GEMM) at which the efficiency is half its maximum", 1)
    # memory-bound kernels: contiguous ones stream at the bandwidth, strided ones (off PyTorch's vectorized path: a
    # broadcast or non-contiguous operand, a concatenation, an outer reduction; and a softmax's row passes) are bound by
    # the SMs; the trace tells them apart since schema 19/20 (``probes.trace.strided``, ``ROW_PASSES``): on an H200
    # (same SMs and clock, 1.41x the bandwidth) the first ran 0.71x as long as on an H100, the second 0.94-1.00x.
    # Fitted by non-negative least squares on both GPUs' kernel times (15 PyTorch and DeepSpeed cases each, 2026-11-24,
    # logs/h{100,200}-anatomy*; tests/benchmarks/kernel_rates.py): memory-bound time of the PyTorch steps 3.9% MAPE,
    # 5.6% with each family left out (one rate per byte for both kinds: 4.7% / 5.7%); never fitted, the six anatomies
    # of grid h200-blind-families (logs/h200-anatomy-30-2026-11-29.jsonl): Bamba's and Granite-MoE-Hybrid's Mamba-2
    # scans -38% -> -28%, DeepSeek-V4 -18% -> -12%, Doge -10% -> -3%, GPT-Neo's eager attention +2% -> +2%, GLM-4-MoE
    # +15% -> +20%. Since schema 22 the strided kernels' offset work (output elements x dimensions x operands) is priced
    # beside their bytes, refitted on the same steps (2026-11-29, nineteenth): 3.4% MAPE, 5.3% with each family left out;
    # the six never fitted 15.3% -> 9.1% (the Mamba-2 scans -28% -> +12%, DeepSeek-V4 -6%, Doge -10%, GPT-Neo +1%,
    # GLM-4-MoE +14%)
    trace_stream_hbm_fraction: float = _p(0.696, "fitted (kernel_rates, above): the share of a traced contiguous memory-bound byte that costs HBM time at the probed bandwidth (the trace counts every op's reads and writes; some stay in L2)", 0.05, 1)
    trace_gemm_bytes_eff: float = _p(0.80, "fitted (the bandwidth-only fit of kernel_rates, above, as before it): a traced GEMM bound by its bytes (weights streamed for few rows) moves them at 80% of the probed bandwidth", 0.05, 1)
    trace_stream_sm_cycles_per_byte: float = _p(0.0217, "fitted (kernel_rates, above): the SM-bound share of a traced contiguous memory-bound byte, in SM clock cycles over all SMs (GPUSpec.sm_cycles_per_s)", 0, 1)
    trace_strided_sm_cycles_per_byte: float = _p(0.0475, "fitted (kernel_rates, above): a traced strided memory-bound byte (off the vectorized path, or a softmax's) in SM clock cycles over all SMs: the generic kernel computes each element's offsets", 0, 2)
    trace_strided_sm_cycles_per_elem_dim: float = _p(0.0477, "fitted (kernel_rates, above): a strided kernel's offset work, SM clock cycles over all SMs per output element x dimension x operand (schema 22; Mamba-2's 6-D broadcasts address 3.5 element-dimensions per byte, a Llama layer's strided kernels 1.0-1.7)", 0, 1)
    trace_irregular_bytes_eff: float = _p(0.386, "fitted (kernel_rates, above): kernels that follow an index (MoE routing's gathers and scatters, sorts, lookups) cost 1/(bandwidth x this) per byte beyond the streaming cost", 0.02, 5)
    attention_eff: float = _p(0.5, "prior: FlashAttention-2 forward+backward ~50% of dense peak", 0.05, 1)
    # fused attention's rate by head size, against the head size 128 that attention_eff was fitted on (FlashAttention /
    # cuDNN tile a head of 64 with less work per load, run 96 in the 128 kernel padded, shrink the tiles for 256).
    # Medians of measured / priced attention kernel time on real steps (probes/anatomy.py, H100 and H200, 2026-11-24,
    # logs/h{100,200}-anatomy*; tests/benchmarks/kernel_rates.py): 128: 0.99 (n=24), 64: 0.82 (n=5), 96: 0.73 (n=2),
    # 256: 0.76 (n=4)
    attention_hd64_factor: float = _p(0.82, "fitted (attention by head size, above): fused attention with head size <= 64 runs at this share of the head-128 rate", 0.1, 1.5)
    attention_hd96_factor: float = _p(0.73, "fitted (attention by head size, above): head size 65-96 (the 128 kernel, padded: 96/128 = 0.75)", 0.1, 1.5)
    attention_hd256_factor: float = _p(0.76, "fitted (attention by head size, above): head size above 128", 0.1, 1.5)
    # heads wider than FlashAttention takes (over 256) run the memory-efficient kernel's generic path (cutlass
    # fmha_cutlassF/B ..._k65536): forward and backward at their own share of the matmul ceiling, measured as traced FLOPs
    # over kernel time of Gemma-4's five full-attention layers (head size 512, mb 2 x 4096, one H200: 10.5 ms forward,
    # 111.9 ms backward; probes/anatomy.py, logs/h200-anatomy-7-2026-11-25.jsonl)
    wide_head_attention_fwd_eff: float = _p(0.164, "measured: fused attention forward with heads over 256, share of the matmul ceiling (Gemma-4, head 512, one H200 anatomy)", 0.005, 1)
    wide_head_attention_bwd_eff: float = _p(0.038, "measured: fused attention backward with heads over 256, share of the matmul ceiling (Gemma-4, head 512, one H200 anatomy)", 0.001, 1)
    masked_attention_factor: float = _p(0.71, "measured: with an explicit mask (a sliding window, from kv_length >= window on) SDPA runs cuDNN's masked kernel at 0.69-0.73 of the rate the unmasked fused kernel is priced at (StarCoder2-3B, s4096 and s8192, kernel times on one H100: probes/anatomy.py, logs/h100-anatomy-2-2026-11-24.jsonl)", 0.05, 1)
    # measured (probes/gemm_alignment.py on one H100, 2026-11-27, logs/h100-gemm-alignment-2026-11-27.jsonl): a bf16 GEMM
    # with a size that is no multiple of 8 (16 bytes: an odd vocabulary, Hunyuan-7B's 290,943, a tokenizer resized by
    # one token) leaves the aligned tensor-core path: 98-119 TFLOP/s forward and 131-148 for the input's gradient against
    # 707-816 for the aligned neighbour (n=5 shapes each); its anatomy: the GEMMs of a Hunyuan-7B LoRA step 0.31 s, 0.19
    # predicted without this
    unaligned_gemm_fwd_factor: float = _p(0.138, "measured (gemm_alignment, above): a 16-bit GEMM with a size not a multiple of 8 runs at this share of the aligned rate, forward (mean of 5 shapes, 0.124-0.158)", 0.01, 1)
    unaligned_gemm_bwd_factor: float = _p(0.187, "measured (gemm_alignment, above): the same for the backward's products (the input's gradient, mean of 5 shapes, 0.164-0.199)", 0.01, 1)
    # measured (probes/eager_ops.py on the one-H200 host, 2026-11-27, logs/h200-eager-ops-2026-11-27.jsonl; tests/
    # benchmarks/eager_ops.py): tiny cuts (1 and 5 layers) of eight families at 512 and 2048 tokens, host-bound; their
    # CPU seconds per layer against the trace's kernels, least squares over the 16: 25.1 us per traced kernel of a Llama
    # layer's kind, 17.6 us per traced kernel beyond them (15.3 from the six families without a scan alone)
    extra_kernel_ratio: float = _p(0.70, "measured (eager_ops, above): a traced kernel beyond a Llama layer's (q/k norms, soft-capping, routers, a scan's loop body) costs the host 0.70 of what a Llama layer's CPU time comes to per traced kernel", 0, 5)
    # --- framework overhead -------------------------------------------------------------------
    kernel_time_s: float = _p(6e-6, "prior: eager PyTorch dispatch + launch per kernel, CPU side (~5-10 µs)", 1e-7, 1e-3)
    dispatch_launch_exponent: float = _p(1.0, "how kernel_time_s follows a new host's measured launch of one small kernel from Python (advisor probe), as (launch / the probed hosts' launch) ** exponent; prior 1 (all of it the core's speed); advisor calibrate --full sets it to the log-log slope of the fitted per-host kernel_time_s factors on the probed hosts' launch (advisor.evaluation.dispatch_launch_exponent, called by fit_correction)", 0, 1)
    # a node's ranks slow each other's host work (dispatch, autograd, DeepSpeed's hooks) when it bounds the step: the
    # same host-bound step run by one rank and by two on one two-H200 machine (grid h200x2-rank-pairs, 2026-11-29):
    # PyTorch LoRA of Qwen3-1.7B 0.116 -> 0.179 s, ZeRO-2 OLMo-2-1B full 0.142 -> 0.176, ZeRO-3 LoRA of Qwen2.5-3B
    # 0.944 -> 1.545, while three other host-bound pairs kept their step (0.94-1.01x), and another lease gave 1.04-1.33x
    # (anatomy 34); Qwen3.5's PyTorch step 1.87 s alone, 2.05 / 2.95 s with two ranks (anatomies 32-33). Small
    # autograd steps dispatched by two processes at once did not slow (192 us alone, 197 / 176 with two, 211 / 161
    # with a process group: logs/h200x2-host-contention-2026-11-29.jsonl), so it is not the dispatch itself but the
    # ranks' lockstep: each collective waits for the slower rank. Measured with two ranks only; more ranks on a node
    # get the same factor (not fitted on more)
    node_ranks_host_factor: float = _p(1.0, "fitted (ranks contend, above): a rank's host work (kernel dispatch, autograd, DeepSpeed's hooks) takes this much longer when the node runs more than one rank; prior 1 (no contention: a fit without one-rank and two-rank runs of one machine keeps it; with the pairs' prior of 1.2, the held-out fits of catalog rows alone took it and moved two-H200 runs held out by platform from 14.4 to 16.9%)", 0.8, 3)
    deepspeed_dispatch_factor: float = _p(1.2, "prior: DeepSpeed's engine wraps every module call (hooks, its own autocast, bookkeeping): CPU cost per kernel over plain PyTorch", 0.5, 5)
    lora_kernels_per_target: float = _p(7.0, "prior: kernels + Python of one PEFT LoRA layer's forward (input cast, A, B, scale, add; adapter loop)", 1, 30)
    backward_dispatch_factor: float = _p(1.5, "prior: autograd's CPU cost per forward kernel in backward (one node per op, 1-2 kernels each)", 0.5, 5)
    recompute_dispatch_factor: float = _p(1.0, "prior: the CPU cost of a checkpointed layer's forward run again inside backward, per forward kernel, over a forward's (torch.utils.checkpoint re-enters autocast, restores RNG state, detaches inputs)", 0.3, 10)
    step_overhead_s: float = _p(0.005, "prior: per optimizer step Python/engine bookkeeping", 0, 10)
    ds_step_param_s: float = _p(25e-12, "measured prior: beyond the predicted overhead the GPU idles 15-29 ps per trainable parameter of the rank in a DeepSpeed bf16 / ZeRO-1/2 step (own H100 kernel timelines of Qwen3-1.7B, Granite-3-2B, StableLM-2-1.6B, StarCoder2-3B full training, probes/anatomy.py); fitted", 0, 1e-9)
    ds_step_tensor_s: float = _p(250e-6, "measured prior: DeepSpeed's bf16 / ZeRO-1/2 step of LoRA adapters takes 0.23-0.27 ms per trainable tensor of the rank, serial after backward (own optimizer phases of Llama-2 7B LoRA ZeRO-1/2 on one H100, 59-67 ms for 256 tensors, 13B ZeRO-1 on one H200, 85 ms for 320); fitted", 0, 0.01)
    zero12_hook_s: float = _p(30e-6, "prior: DeepSpeed ZeRO-1/2 gradient hook per trainable tensor per backward (Python, bucketing)", 0, 0.01)
    # PyTorch's DistributedDataParallel, more than one rank: its reducer's autograd hook copies each gradient into its
    # bucket and, once all-reduced, back (two kernels a trainable tensor: StableLM-2-1.6B LoRA 3,946 -> 4,339 kernels a
    # step for 192 adapter tensors); the backward of that step took 37 ms on one rank and 50 / 57 ms on two, the forward
    # unchanged (anatomy 34, one two-H200 machine, logs/h200x2-anatomy-34-2026-11-29.jsonl): 13-19 ms over 192 tensors
    ddp_hook_s: float = _p(80e-6, "measured prior (DDP's reducer, above): PyTorch DDP's gradient hook per trainable tensor of a backward that all-reduces (the last micro-batch of a step), more than one rank; fitted", 0, 0.01)
    # --- optimizer ----------------------------------------------------------------------------
    optimizer_eff: float = _p(0.5, "prior: fused Adam streams its states at ~50% of HBM bandwidth", 0.01, 1)
    # CPU Adam on T threads: 1 / (1 / (T x per-thread rate) + 1 / memory-bound rate): linear in threads
    # until the host's memory bandwidth caps it (16 B read + 16 B written per parameter).
    cpu_adam_thread_gparams_s: float = _p(0.85, "measured: DeepSpeed CPU Adam on one thread, 0.924 Gparam/s on the one-H200 host (100M parameters, 2026-11-26, knowledge/measurements/own/logs/h200x1-host-contention-2026-11-26.jsonl) and 0.775 on the 2xH200 host (50M, 2026-11-23, h200x2-links-2026-11-23.jsonl): their mean; not fitted (a shared rate fitted through the study's slow offload rows came out at 0.29 and put one-H200 ZeRO-Offload on 1-4 threads 36-53% too slow, grid h200-omp-threads), each server's factor carries its own host", 1e-3, 10)
    cpu_adam_bandwidth_gparams_s: float = _p(10.0, "prior: ~320 GB/s of host DRAM / 32 B per parameter; probes: 4.4 Gparam/s on 16 threads, 5.6 on 32", 0.1, 100)
    offload_step_overhead: float = _p(1.5, "prior: DeepSpeed's offloaded step beyond the Adam kernel (grad norm, fp32<->16-bit copies, sub-group loop)", 1, 20)
    zero3_offload_opt_overhead: float = _p(2.0, "prior: ZeRO-3 with the optimizer offloaded but parameters on the GPU: its step's host time over ZeRO-2's is 1 + (this - 1) x CPU Adam's time on at most a few threads (models.step_time.zero3_offload_extra_s)", 1, 20)
    # --- communication ------------------------------------------------------------------------
    link_eff_nvswitch: float = _p(0.75, "prior: NCCL ring bus bandwidth ~75% of NVLink one-direction peak", 0.01, 1)
    # one efficiency for every PCIe path (with or without peer-to-peer, NVLink bridge pairs whose ring
    # still crosses PCIe): the no-P2P path's halved bandwidth is in the catalog's link_gbs already, and
    # one shared parameter generalises to an unseen PCIe server far better than one per variant
    # (held-out RTX 4090: 94% -> 37% MAPE, RTX 3090: 269% -> 126%).
    link_eff_pcie: float = _p(0.6, "prior: NCCL over PCIe ~60% of the per-hop bandwidth", 0.001, 1)
    collective_latency_s: float = _p(30e-6, "prior: NCCL small-message latency within a node", 0, 0.1)
    grad_overlap: float = _p(0.5, "prior: share of gradient reduction hidden behind backward (overlap_comm)", 0, 1)
    zero3_module_overhead_s: float = _p(150e-6, "prior: ZeRO-3 hooks per module call per pass (models.step_time: fetched modules, parameter-free ones, PEFT's)", 0, 0.1)
    # --- offload ------------------------------------------------------------------------------
    # the node's staged memcpy, shared by its ranks: one rank copied 10.6 GB/s (Llama-3.2-1B ZeRO-2 offload, one H200: four
    # micro-batches' accumulation through the host, 19.8 GB, took the step from 4.15 to 6.02 s, own/h200-zero2-offload-
    # accum-2-2026-11-29), two ranks 5 GB/s each (Llama-2-7B ZeRO-2 offload on two H200s, pinned 9.9 s, pageable 13.2 s,
    # own/h200x2-pin-memory-2026-11-28)
    pageable_copy_node_gbs: float = _p(10.0, "measured: with pin_memory false the offload copies (gradients down, 16-bit weights up, ZeRO-2's accumulation through the host) run at the host's staged memcpy, not the link, and do not overlap backward; one rank 10.6 GB/s, two ranks 5 each (own/h200-zero2-offload-accum-2-2026-11-29, own/h200x2-pin-memory-2026-11-28); the node's rate, split over its ranks; not fitted", 0.1, 1000)
    # a step that needs more host memory than RAM runs only through swap; what it sweeps every step beyond RAM is paged
    # out and back in each step (models.training.swap_paging_s)
    swap_gbs: float = _p(2.0, "prior, not measured (no lent host has swap): the kernel's swap of an NVMe SSD, each way; the drives read and write 3-7 GB/s in sequence, swap moves 4-32 KiB page clusters; not fitted", 0.01, 100)
    h2d_eff: float = _p(0.6, "prior: pinned host<->device copies ~60% of PCIe x16 (H100 probe: 55 of 63 GB/s)", 0.01, 1)
    # --- quantization -------------------------------------------------------------------------
    dequant_bytes_per_param: float = _p(2.5, "NF4 dequantize reads 0.5 B and writes 2 B per weight before each GEMM", 0, 20)
    dequant_eff: float = _p(0.3, "prior: bitsandbytes dequantize kernels reach a fraction of HBM bandwidth", 0.001, 1)
    int8_matmul_slowdown: float = _p(3.0, "prior: bitsandbytes LLM.int8 matmul ~3x slower than bf16", 1, 50)
    # --- memory -------------------------------------------------------------------------------
    logits_bytes_per_vocab: float = _p(12.0, "bf16 logits 2 B + fp32 upcast 4 B + log-softmax 4 B + grad transient, per token per vocab entry", 0, 64)
    workspace_gib: float = _p(0.3, "prior: cuBLAS/cuDNN workspaces and small buffers counted by max_memory_allocated", 0, 8)
    reserved_gib: float = _p(1.0, "prior: CUDA context, NCCL buffers and fragmentation outside max_memory_allocated", 0, 16)
    layer_block_reserved_fraction: float = _p(0.7, "measured: of a decoder layer's largest single block (the trace's), what the caching allocator reserved beyond the tensors at the peak on the five Mamba-2 torch-path runs that ran (Falcon-H1 at 512 and 1,024, Granite-MoE-Hybrid at 256 and 512, Bamba at 512; 0.67-0.75, 2026-11-29, logs/h200*-strided-check, -blind-families, h200x2-new-type-regimes, h200x2-falcon-h1-memory); the three that ran out are in sample (models.memory.fragmentation_bytes)", 0, 1)
    # --- serving
    weight_stream_eff: float = _p(0.8, "prior: skinny decode GEMMs (GEMV) stream weights at ~75-90% of HBM peak (cuBLAS; TensorRT-LLM batch-1 decode)", 0.05, 1)
    kv_read_eff: float = _p(0.6, "prior: decode attention (SDPA / FlashDecoding) reads the KV cache at ~50-70% of HBM peak; few heads leave SMs idle", 0.05, 1)
    nf4_gemv_eff: float = _p(0.6, "prior: bitsandbytes' fused 4-bit GEMV (one token row) dequantizes in registers, ~50-70% of the 16-bit streaming rate", 0.05, 1)
    prefill_kernel_s: float = _p(1.5e-5, "prior: an engine's prefill chunk above its CUDA-graph sizes launches its kernels eagerly, ~5-20 µs of CPU per counted kernel (PyTorch dispatch and launch): what bounds a short prompt's prefill", 1e-7, 1e-3)
    graph_kernel_s: float = _p(2.5e-6, "prior: a kernel inside a CUDA graph costs ~2-4 µs however little it does (launch and drain between dependent kernels on H100)", 0, 1e-4)
    prefill_attention_eff: float = _p(0.4, "prior: prefill attention (SDPA, causal) reaches ~30-50% of dense peak", 0.02, 1)
    kv_expand_factor: float = _p(1.0, "passes over GQA K/V repeated to every query head in decode (prior between 0 in engines' paged kernels; and 2 for Hugging Face SDPA with a mask: a write and a read of the repeated copy); fitted", 0, 8)
    moe_stream_eff: float = _p(0.6, "prior: routed-expert GEMMs stream their weights slower than dense ones (gather, per-expert launches)", 0.02, 1)
    quant_gemm_eff: float = _p(0.7, "prior: FP8 / int8 GEMMs reach ~70% of their datasheet rate relative to bf16's large-GEMM efficiency", 0.05, 1)
    int4_gemm_eff: float = _p(0.85, "prior: Marlin W4A16 GEMMs run near the 16-bit rate at large batch (Frantar et al. 2024, Marlin)", 0.05, 1)
    int4_stream_eff: float = _p(0.85, "prior: W4A16 GEMV kernels stream packed weights ~80-90% as fast as 16-bit ones (dequantize in registers)", 0.05, 1)
    tp_allreduce_latency_s: float = _p(20e-6, "prior: one small NCCL all-reduce inside a CUDA graph on NVLink, ~10-30 µs", 0, 1e-2)
    prefill_act_hidden_bytes: float = _p(12.0, "bytes per token per hidden unit a prefill holds at its peak: residual, fp32 norm input, attention output", 0, 64)
    prefill_act_mlp_bytes: float = _p(6.0, "bytes per token per MLP unit: gate and up outputs in bf16, the activation", 0, 64)
    decode_graph_overhead_s: float = _p(50e-6, "prior: replaying a CUDA-graph-captured decode step plus input copies and sync, ~20-100 µs", 0, 0.1)
    generate_token_overhead_s: float = _p(0.3e-3, "prior: an engine's host work between decode steps (scheduling, sampling, next inputs), ~0.1-1 ms", 0, 1)


# Parameters the learned correction may move; the rest are bytes and structure, not efficiencies.
FITTED = (
    "gemm_eff_max", "gemm_half_tokens", "memory_eff", "attention_eff", "kernel_time_s", "backward_dispatch_factor", "recompute_dispatch_factor",
    "deepspeed_dispatch_factor", "node_ranks_host_factor", "lora_kernels_per_target", "step_overhead_s", "zero12_hook_s", "ddp_hook_s", "ds_step_param_s", "ds_step_tensor_s", "optimizer_eff", "cpu_adam_bandwidth_gparams_s",
    "offload_step_overhead", "zero3_offload_opt_overhead", "link_eff_nvswitch", "link_eff_pcie",
    "grad_overlap", "zero3_module_overhead_s", "h2d_eff", "int8_matmul_slowdown", "dequant_eff",
    "weight_stream_eff", "kv_read_eff", "nf4_gemv_eff", "decode_graph_overhead_s", "generate_token_overhead_s",
)  # serving's own terms are fitted by models.correction.ServingCorrection (SERVING_FITTED), not here


def _fit_file(name: str) -> dict:
    """The fit's JSON: the user's refit (ADVISOR_HOME) or the bundled one; {} when neither exists."""
    from knowledge.paths import calibration_file

    path = calibration_file() if name == "fitted" else CALIBRATION_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def load_efficiencies(name: str = "fitted", task: str = "train") -> Efficiencies:
    """The fitted parameters when present, else the priors (read each call: nothing fitted is cached).

    ``task="serve"`` overlays the serving fit (decode and prefill were fitted separately from training).
    Names the current model no longer has are dropped, so an older fit still loads.
    """
    data = _fit_file(name)
    values = dict(data.get("parameters", {}))
    if task == "serve":
        values.update(data.get("serving_parameters", {}))
    return Efficiencies(**{k: v for k, v in values.items() if k in Efficiencies.model_fields})


def load_platform_factors(name: str = "fitted") -> dict[str, dict[str, float]]:
    """Per-platform factors the fit learned for servers with measurements ({} when none)."""
    return _fit_file(name).get("platform_factors", {})


def load_held_out_error(name: str = "fitted") -> dict[str, float]:
    """Held-out MAPE per task from the last fit, for prediction intervals."""
    data = _fit_file(name)
    out = dict(data.get("held_out_mape", {}))
    decode = data.get("serving_held_out_by_gpu", {}).get("decode_step_s", {}).get("mape")
    if decode:
        out["serve"] = decode
    return out


def load_held_out_by_class(name: str = "fitted") -> dict[str, dict[str, dict]]:
    """{task: {platform class: {"mape", "n"}}}: held-out error per platform class (knowledge.platform_class)."""
    return _fit_file(name).get("held_out_by_class", {})


PROBE_RATIOS = Path(__file__).parent / "data" / "probe_ratios.json"


def load_probe_ratios() -> dict[str, dict]:
    """Probe/datasheet ratios by GPU generation, averaged over the bundled profiles (``advisor calibrate``
    writes them); {} when the file is absent (then the datasheet is the frame)."""
    return json.loads(PROBE_RATIOS.read_text()).get("ratios", {}) if PROBE_RATIOS.exists() else {}


def load_serving_held_out(name: str = "fitted") -> dict[str, dict]:
    """The serving fit's held-out errors: {"gpu": {...}, "model": {...}}, each field with MAPE and n."""
    data = _fit_file(name)
    return {by: data[f"serving_held_out_by_{by}"] for by in ("model", "gpu") if data.get(f"serving_held_out_by_{by}")}
