"""The operators of one decoder layer's forward for a training case, as roofline points. Pure functions.

For one micro-batch on one rank: each projection (and its LoRA adapter), attention, the elementwise
ops, and the LM head (once per model). FLOPs and bytes are the physical work; ``time_s`` is the time
``models.step_time`` charges for it (same ceilings, same efficiencies), so layers x these times + the
head and loss is the forward pass the step-time model predicts. Used by the app's roofline chart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from knowledge.efficiency import Efficiencies
from knowledge.schema import ModelArch, PlatformSpec, TrainCase
from knowledge.traces import ArchTrace, Part
from models.architecture import attention_flops, linears, unfused_elementwise_bytes
from models.roofline import Ceilings, ceilings
from models.setup import QUANT_BYTES, TrainSetup, derive


def gemm_efficiency(tokens: float, eff: Efficiencies) -> float:
    return eff.gemm_eff_max * tokens / (tokens + eff.gemm_half_tokens)


def trace_gemm_efficiency(rows: float, eff: Efficiencies) -> float:
    """A traced GEMM's fraction of the matmul ceiling at ``rows`` rows (per expert for a grouped GEMM): kernel-level
    rates from ``probes.anatomy``, not the step-level fit of the hand count (whose GEMM rate absorbs the elementwise
    time the hand count leaves out)."""
    return eff.trace_gemm_eff_max * rows / (rows + eff.trace_gemm_half_rows)


def indexed_byte_s(memory_bps: float, eff: Efficiencies) -> float:
    """Seconds a byte moved by a kernel that follows an index (a gather, scatter, sort or lookup: MoE routing) costs on
    top of streaming it: kernel-level rates from ``probes.anatomy``, one rule for training's traces and serving."""
    return 1.0 / (memory_bps * eff.trace_irregular_bytes_eff)


def alignment_factor(k: int, n: int, backward: bool, eff: Efficiencies) -> float:
    """A 16-bit GEMM's share of its aligned rate: 1 where both sizes are multiples of 8 (16 bytes: the tensor cores'
    aligned path), else what probes/gemm_alignment.py measured (an odd vocabulary's LM head: 14% forward, 19% back)."""
    if k % 8 == 0 and n % 8 == 0:
        return 1.0
    return eff.unaligned_gemm_bwd_factor if backward else eff.unaligned_gemm_fwd_factor


def elementwise_bytes_per_token_layer(s: TrainSetup) -> float:
    """Forward bytes of the memory-bound ops of one layer: norms, RoPE, residuals, SwiGLU."""
    a = s.arch
    hq, kv = a.num_attention_heads * a.head_size, a.num_key_value_heads * a.head_size
    return unfused_elementwise_bytes(a.hidden_size, hq, kv, a.intermediate_size * a.num_experts_per_tok)


ELEMENTWISE_NAME = "norms, RoPE, SwiGLU, residuals"


def head_size_factor(head_size: int, eff: Efficiencies) -> float:
    """Fused attention's rate at ``head_size`` over its rate at 128, the size ``attention_eff`` was fitted on."""
    if head_size <= 64:
        return eff.attention_hd64_factor
    if head_size <= 96:
        return eff.attention_hd96_factor
    return 1.0 if head_size <= 128 else eff.attention_hd256_factor


@dataclass(frozen=True)
class Operator:
    name: str
    kind: str  # "matmul", "attention", "elementwise", "lora"
    flops: float  # forward FLOPs, one micro-batch on one rank
    bytes: float  # bytes moved to and from device memory
    time_s: float  # the step-time model's time for it (forward)
    per_layer: bool = True  # False for the LM head (once per model)
    backward_s: float = 0.0  # its backward: activation gradients always, weight gradients where weights train

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per byte."""
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def achieved_flops(self) -> float:
        """FLOP/s the model predicts it reaches."""
        return self.flops / self.time_s if self.time_s else 0.0


def layer_operators(case: TrainCase, arch: ModelArch, platform: PlatformSpec, eff: Efficiencies,
                    trace: ArchTrace | None = None) -> list[Operator]:
    """Every operator of one layer forward (and the LM head) for ``case``, with FLOPs, bytes and time."""
    return training_operators(derive(case, arch, platform, trace), eff, ceilings(platform, eff))


def training_operators(s: TrainSetup, eff: Efficiencies, c: Ceilings) -> list[Operator]:
    """The operators of one layer forward and the LM head: what ``models.step_time`` sums."""
    if s.trace is not None:
        return _part_operators(s, s.trace.layer, eff, c, True) + _part_operators(s, s.trace.head(), eff, c, False)
    return _llama_operators(s, eff, c)


def _part_operators(s: TrainSetup, part: Part, eff: Efficiencies, c: Ceilings, per_layer: bool) -> list[Operator]:
    """Roofline points of a traced part: products by weight shape (forward and backward as the trace ran them:
    weight gradients only where weights train), attention, and the memory-bound kernels' bytes."""
    case = s.case
    b, n = case.micro_batch_size, case.seq_len
    T = s.tokens
    bw = c.memory_bps * eff.trace_gemm_bytes_eff
    # a layer's quantities are never below zero (a polynomial through three lengths can dip); the head's are signed
    # (``ArchTrace.head``: less than average layers where the base cut's own layers do less), so it is priced linearly
    pos = (lambda x: max(x, 0.0)) if per_layer else (lambda x: x)  # noqa: E731
    w_bytes = QUANT_BYTES[case.quantization]
    shapes: dict[tuple, dict[str, float]] = {}
    for g in part.gemms:
        key = (g.k, g.n, g.quantizable, g.adapter, g.grouped)
        d = shapes.setdefault(key, {"fwd": 0.0, "bwd": 0.0, "flops": 0.0, "bytes": 0.0})
        flops = g.flops.at(b, n)
        # a call's rows, as its FLOPs at this length say: a product whose rows do not follow the tokens (PEFT's LoRA on
        # an MoE's expert parameters forms each B x A delta over all experts, whatever the batch: GLM-MoE-DSA under
        # "all-linear", 2**19 rows a call) is not scaled by them; a grouped product's tiles as traced
        rows = max(g.rows_per_token * T if g.grouped else abs(flops / (2.0 * g.k * g.n * g.calls)), 1.0)
        quant = g.quantizable and case.quantization != "none"
        gemm = flops / (c.matmul_flops * trace_gemm_efficiency(rows, eff) * alignment_factor(g.k, g.n, g.phase == "bwd", eff))
        weight_bytes = g.k * g.n * g.calls * (w_bytes if quant else 2.0)
        nbytes = weight_bytes + 2.0 * rows * (g.k + g.n) * g.calls
        t = math.copysign(max(abs(gemm), abs(nbytes) / bw), g.calls)  # the head's negative calls: the same per call
        if quant and case.quantization == "int8":
            t *= eff.int8_matmul_slowdown
        elif quant and case.quantization == "nf4":
            t += g.k * g.n * g.calls * eff.dequant_bytes_per_param / (c.memory_bps * eff.dequant_eff)
        d[g.phase] += t
        if g.phase == "fwd":
            d["flops"] += flops
            d["bytes"] += nbytes
    ops = [Operator(f"{'LoRA ' if a else ''}{k}x{nn}{' experts' if e else ''}"
                    f"{' (quantized)' if q and case.quantization != 'none' else ''}",
                    "lora" if a else "matmul", d["flops"], d["bytes"], d["fwd"], per_layer, d["bwd"])
           for (k, nn, q, a, e), d in sorted(shapes.items())]
    att_f, att_b = part.attention_flops_fwd.at(b, n), part.attention_flops_bwd.at(b, n)
    fused = case.flash_attention and s.trace is not None and s.trace.attention_used == "sdpa"
    if att_f > 0 or (not per_layer and (att_f or att_b)):
        if fused:
            rate = c.matmul_flops * eff.attention_eff * head_size_factor(s.arch.head_size, eff)
            masked_f = pos(part.masked_attention_flops_fwd.at(b, n))
            masked_b = pos(part.masked_attention_flops_bwd.at(b, n))
            slow = 1.0 / eff.masked_attention_factor - 1.0  # the masked share runs the slower kernel
            wide_f = pos(part.wide_attention_flops_fwd.at(b, n))  # heads over 256: the generic path, at its own rate
            wide_b = pos(part.wide_attention_flops_bwd.at(b, n))
            t_f = (att_f - wide_f + slow * masked_f) / rate + wide_f / (c.matmul_flops * eff.wide_head_attention_fwd_eff)
            t_b = (att_b - wide_b + slow * masked_b) / rate + wide_b / (c.matmul_flops * eff.wide_head_attention_bwd_eff)
        else:  # eager: the score products are batched GEMMs over s x s tiles, bound by FLOPs or by the scores' bytes
            rate = c.matmul_flops * trace_gemm_efficiency(T, eff)
            att_bytes_f, att_bytes_b = pos(part.attention_bytes_fwd.at(b, n)), pos(part.attention_bytes_bwd.at(b, n))
            t_f = math.copysign(max(abs(att_f) / rate, abs(att_bytes_f) / bw), att_f)
            t_b = math.copysign(max(abs(att_b) / rate, abs(att_bytes_b) / bw), att_b)
        ops.append(Operator("attention (fused)" if fused else "attention QKᵀ, AV (eager)", "attention",
                            att_f, 0.0, t_f, per_layer, t_b))
    f32_f, f32_b = pos(part.fp32_flops_fwd.at(b, n)), pos(part.fp32_flops_bwd.at(b, n))
    if (f32_f or f32_b) and c.fp32_flops > 0:  # SDPA's math path upcasts to fp32; fp32 experts: CUDA cores
        rate = c.fp32_flops * eff.fp32_gemm_eff
        ops.append(Operator("fp32 products (CUDA cores)", "matmul", f32_f, 0.0, f32_f / rate, per_layer, f32_b / rate))
    # memory-bound kernels: contiguous ones stream (a bandwidth-bound and a small SM-bound share per byte), strided ones
    # wait on the SMs, and those that follow an index (routing) pay more at the bandwidth
    per_byte_s = eff.trace_stream_hbm_fraction / c.memory_bps + eff.trace_stream_sm_cycles_per_byte / c.sm_cycles_per_s
    per_strided_s = eff.trace_strided_sm_cycles_per_byte / c.sm_cycles_per_s
    per_elem_dim_s = eff.trace_strided_sm_cycles_per_elem_dim / c.sm_cycles_per_s
    per_irregular_s = indexed_byte_s(c.memory_bps, eff)

    def memory_bound_s(phase: str) -> tuple[float, float]:
        """(bytes, seconds) of one pass's memory-bound kernels: contiguous bytes, strided ones (per byte and per
        element-dimension of their offset work), and the indexed ones' extra."""
        moved = pos(getattr(part, f"other_bytes_{phase}").at(b, n))
        st = pos(getattr(part, f"strided_bytes_{phase}").at(b, n))
        st = min(st, moved) if per_layer else st
        offsets = pos(getattr(part, f"strided_elem_dims_{phase}").at(b, n))
        indexed = pos(getattr(part, f"irregular_bytes_{phase}").at(b, n))
        return moved, (moved - st) * per_byte_s + st * per_strided_s + offsets * per_elem_dim_s + indexed * per_irregular_s

    (ew_f, t_f), (_, t_b) = memory_bound_s("fwd"), memory_bound_s("bwd")
    ops.append(Operator(ELEMENTWISE_NAME if per_layer else "LM head's loss and the rest", "elementwise", 0.0, ew_f,
                        t_f, per_layer, t_b))
    return ops


def _llama_operators(s: TrainSetup, eff: Efficiencies, c: Ceilings) -> list[Operator]:
    """The hand count of a Llama layer (no trace). Elementwise FLOPs are an estimate (RMSNorm ~4, RoPE ~3,
    residual 1, SwiGLU ~5 per element)."""
    case = s.case
    a, T = s.arch, s.tokens
    bw = c.memory_bps * eff.memory_eff
    w_bytes = QUANT_BYTES[case.quantization]
    ops: list[Operator] = []
    weights_train = case.method == "full" and case.quantization == "none"
    for lin in linears(a):
        rows = T * lin.tokens_fraction * lin.experts  # token rows over all expert copies
        flops = lin.flops(T)
        gemm = flops / (c.matmul_flops * gemm_efficiency(T * lin.tokens_fraction, eff))
        gemm_bwd = gemm / alignment_factor(lin.in_features, lin.out_features, True, eff)
        gemm /= alignment_factor(lin.in_features, lin.out_features, False, eff)
        t, dequant = gemm, 0.0
        if case.quantization == "int8":
            t = gemm * eff.int8_matmul_slowdown
        elif case.quantization == "nf4":
            dequant = lin.params * eff.dequant_bytes_per_param / (c.memory_bps * eff.dequant_eff)
            t = gemm + dequant
        nbytes = lin.params * w_bytes + 2.0 * rows * (lin.in_features + lin.out_features)
        # backward: the activation gradient (a GEMM of the same size, at the backward's alignment rate; a quantized
        # weight is dequantized again: the forward's t less its GEMM), plus the weight gradient only where the weight trains
        ops.append(Operator(lin.name, "matmul", flops, nbytes, t,
                            backward_s=t - gemm + gemm_bwd * (1 + weights_train)))
        if s.is_lora and lin.name in s.lora_target_names:
            lora_bytes = 4.0 * T * (lin.in_features + lin.out_features) * lin.experts
            lora_flops = 2.0 * T * case.lora_rank * (lin.in_features + lin.out_features) * lin.experts
            t_lora = lora_bytes / bw
            if s.zero3_adapters and c.fp32_flops > 0:
                # fp32 adapters (ZeRO-3 leaves them uncast): the input cast to fp32 (2 B read, 4 B written) and the
                # products on the CUDA cores, as a trace prices its fp32 products
                cast = 6.0 * T * lin.in_features * lin.experts
                t_lora = max(2.0 * lora_bytes / bw, lora_flops / (c.fp32_flops * eff.fp32_gemm_eff)) + cast / bw
            ops.append(Operator(f"LoRA {lin.name}", "lora", lora_flops, lora_bytes, t_lora, backward_s=2.0 * t_lora))
    hq, kv = a.num_attention_heads * a.head_size, a.num_key_value_heads * a.head_size
    qkvo = 2.0 * T * (2 * hq + 2 * kv)
    att = attention_flops(a, case.micro_batch_size, case.seq_len, causal_skip=case.flash_attention)
    if case.flash_attention:
        t_att = att / (c.matmul_flops * eff.attention_eff)
        # FlashAttention's backward recomputes the scores: 2.5x the forward's FLOPs (Dao 2023, FA2 section 3)
        ops.append(Operator("attention (fused)", "attention", att, qkvo, t_att, backward_s=ATTENTION_BACKWARD * t_att))
    else:
        ge = gemm_efficiency(T * a.num_experts_per_tok / a.num_local_experts, eff)
        scores = case.micro_batch_size * a.num_attention_heads * case.seq_len**2
        # the score products are bound by their FLOPs or by the scores they write and read, as a trace prices them
        t_att = max(att / (c.matmul_flops * ge), EAGER_PRODUCT_BYTES_FWD * scores / bw)
        t_att_b = max(2.0 * att / (c.matmul_flops * ge), EAGER_PRODUCT_BYTES_BWD * scores / bw)
        ops.append(Operator("attention QKᵀ, AV (eager)", "attention", att, qkvo + EAGER_PRODUCT_BYTES_FWD * scores, t_att,
                            backward_s=t_att_b))
        ops.append(Operator("softmax, mask (eager scores)", "elementwise", 5.0 * scores, EAGER_SCORE_BYTES_FWD * scores,
                            EAGER_SCORE_BYTES_FWD * scores / bw, backward_s=EAGER_SCORE_BYTES_BWD * scores / bw))
    ew_bytes = elementwise_bytes_per_token_layer(s) * T
    i = a.intermediate_size * a.num_experts_per_tok
    ew_flops = T * (2 * 4.0 * a.hidden_size + 3.0 * (hq + kv) + 2 * 1.0 * a.hidden_size + 5.0 * i)
    # each elementwise op's backward reads the saved input and the incoming gradient, writes one gradient
    ops.append(Operator(ELEMENTWISE_NAME, "elementwise", ew_flops, ew_bytes, ew_bytes / bw, backward_s=2.0 * ew_bytes / bw))
    hv = a.hidden_size * a.vocab_size
    head_flops = 2.0 * T * hv
    head_gemm = head_flops / (c.matmul_flops * gemm_efficiency(T, eff))
    loss_t = 20.0 * T * a.vocab_size / bw
    head_bytes = 2.0 * hv + 2.0 * T * a.hidden_size + 20.0 * T * a.vocab_size
    head_trains = case.method == "full"  # LoRA and QLoRA freeze the LM head
    fwd_f, bwd_f = (alignment_factor(a.hidden_size, a.vocab_size, b, eff) for b in (False, True))
    ops.append(Operator("LM head + loss", "matmul", head_flops, head_bytes, head_gemm / fwd_f + loss_t, per_layer=False,
                        backward_s=head_gemm / bwd_f * (1 + head_trains) + loss_t))
    return ops


ATTENTION_BACKWARD = 2.5
# Eager attention's memory traffic a score per head, as the trace of transformers' ``eager_attention_forward`` counts it
# (Llama-3.2-1B, Llama-2-7B, Qwen3-1.7B alike): the products write and read the 16-bit scores (4 B forward, 8 backward);
# scaling, the mask, the fp32 softmax and its cast move 32 B forward and 28 backward. The hand count had 14 and 28 and
# priced the products by their FLOPs alone: Llama-3.2-1B LoRA at 8,192 tokens with recomputation ran its eager step in
# 1.54 s on one H200, 0.85 predicted (logs/h200-eager-anatomy-2026-11-29.jsonl).
EAGER_PRODUCT_BYTES_FWD = 4.0
EAGER_PRODUCT_BYTES_BWD = 8.0
EAGER_SCORE_BYTES_FWD = 32.0
EAGER_SCORE_BYTES_BWD = 28.0
