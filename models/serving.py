"""A serving prediction as an engine runs it: per-operator roofline of prefill and decode (the case's meaning in
``models.serve_setup``, its memory in ``models.serve_memory``).

Every operator of one decoder layer (7 projections, attention, elementwise) takes max(FLOPs / compute
ceiling, bytes / bandwidth) on one GPU of the tensor-parallel group (LLM-Viewer's method), times the
layers, plus the LM head, the tensor-parallel all-reduces, and the kernels' own floor: inside a CUDA graph
each kernel still costs a few microseconds however little it does, which is most of a small decode step.
Ceilings and efficiencies come from the one ``Calibration`` object training uses (probed ceilings, a
profile's measurements); the serving fit only adds what serving alone exercises (weight streaming, KV
reads, the graph kernel floor, quantized kernels, MoE experts).

What the timings mean (``probes/serve_sweep.py`` measures the same): ``prefill_s`` is the forward over the
prompts of one replica's sequences, graph-captured (engines compile or capture it, so host dispatch does
not show); ``decode_step_s`` one CUDA-graph step of those sequences; an engine's per-step host work
(scheduling, sampling) is added between steps end to end. Weight formats are engines' (FP8 / int8 W8A8 on
the tensor cores, int4 W4A16 Marlin-class), bitsandbytes only when named (``knowledge.serving_formats``).

Engine: a case without an ``engine`` is predicted as vLLM serves it (``knowledge.engines``): its fused decoder
layer, paged attention over the grouped K/V heads as stored, CUDA-graph decode, the prefill chunked at its
``max_num_batched_tokens`` (each chunk a causal FlashAttention forward attending to the cache so far), and memory
as its KV pool allocates it (``models.serve_memory``). ``engine: transformers`` is the runtime the serving fit
measured: the model's own modules (unfused norms and rotary, grouped K/V heads repeated to the query heads before
attention) replayed from CUDA graphs, the whole batch's prompt in one forward. Both use the same fitted efficiencies.

Placement: ``replicas`` copies of a ``tensor_parallel``-GPU engine; the case's ``batch_size`` concurrent
sequences spread over the replicas, which step together, so throughputs are the whole deployment's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from knowledge.efficiency import Efficiencies
from knowledge.engines import (
    ALWAYS_RENORMALISE_TYPES, DEFAULT_ENGINE, DENSE_MLP_KERNELS, FUSED_MOE_KERNELS, MOE_COUNT_BYTES_PER_EXPERT,
    MOE_INDEXED_ROW_BYTES, MOE_PAIR_BYTES, MOE_ROUTER_BYTES_PER_EXPERT, MOE_ROW_BYTES, NORM_TOPK_KERNELS, PLAIN_MLP_TYPES,
    ROPE_BYTES_PER_ELEMENT, POST_NORM_KERNELS, POST_NORM_TYPES, QK_NORM_KERNELS, QK_NORM_TYPES, SHARED_EXPERT_KERNELS, SHARED_GATE_KERNELS,
)
from knowledge.errors import AdvisorError
from knowledge.schema import ModelArch, PlatformSpec, ServeBreakdown, ServeCase, ServePrediction
from knowledge.units import GiB
from models.architecture import linears, unfused_elementwise_bytes
from models.calibration import Calibration
from models.operators import gemm_efficiency, head_size_factor, indexed_byte_s
from models.kv_cache import attended_pairs
from models.serve_memory import chunk_tokens, engine_kv_tokens, max_batch, memory_verdict, weight_bytes
from models.serve_setup import (
    ServeSetup, expanded_kv_bytes_per_token_layer, expected_experts, make_setup, replicas_of, resolve_format,
)
from models.step_time import KERNELS_PER_LAYER_FWD, soft_max

COLUMN_PARALLEL = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")  # output split over TP ranks
KERNELS_HEAD = 20  # final norm, LM head, slicing, sampling
KERNELS_PER_EXPERT = 8  # routing gather, three GEMMs, activation, weighting, scatter-add of one expert
INTEGRATION_POINTS = 17  # decode time is piecewise linear in kv_len: a few points integrate it closely


@dataclass(frozen=True)
class Op:
    """One operator's roofline terms (seconds). ``serial_s`` runs before it (a dequantize kernel)."""

    compute_s: float
    memory_s: float
    kind: str  # "weights", "kv" or "act": what its bytes mostly are
    serial_s: float = 0.0

    @property
    def time_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.serial_s

    @property
    def compute_bound(self) -> bool:
        return self.compute_s >= self.memory_s


@dataclass(frozen=True)
class PassTime:
    """One forward pass (a prefill or one decode step) on one GPU, seconds."""

    compute_bound_s: float  # operators limited by FLOPs
    weights_s: float  # memory-bound operators streaming weights
    kv_s: float  # memory-bound attention over the KV cache
    communication_s: float
    kernels: float  # kernels one pass runs
    floor_s: float  # those kernels' own floor inside a graph
    elementwise_s: float = 0.0  # norms, RoPE, SwiGLU, residuals: bytes over bandwidth

    @property
    def small_kernels_s(self) -> float:
        """The many small kernels (elementwise, bookkeeping) take their bytes' time or their floor, whichever
        is longer: at decode the floor, at a long prefill the bytes. The big GEMMs' floors are negligible."""
        return max(self.elementwise_s, self.floor_s)

    @property
    def gpu_s(self) -> float:
        return self.compute_bound_s + self.weights_s + self.kv_s + self.communication_s + self.small_kernels_s

    @property
    def compute_share(self) -> float:
        return self.compute_bound_s / self.gpu_s if self.gpu_s > 0 else 0.0


def _linear_ops(s: ServeSetup, tokens: float, decode: bool) -> list[Op]:
    a, e, c, t, f = s.arch, s.eff, s.c, s.tp, s.fmt
    bw = c.memory_bps
    ops = []
    for lin in linears(a):
        copies = expected_experts(lin.experts, a.num_experts_per_tok, tokens) if lin.experts > 1 else 1.0
        params = lin.in_features * lin.out_features * copies * lin.per_layer / t
        flops = lin.flops(tokens) / t
        routed = lin.tokens_fraction * lin.experts  # each token visits top-k experts
        split_in, split_out = (1, t) if lin.name in COLUMN_PARALLEL else (t, 1)
        act = 2.0 * tokens * routed * (lin.in_features / split_in + lin.out_features / split_out) * lin.per_layer
        stream = bw * e.weight_stream_eff * (e.moe_stream_eff if lin.experts > 1 else 1.0)
        # decode: the skinny GEMM's small-M slowness *is* its memory-boundedness, modelled by the bytes
        # term, so compute runs at the large-GEMM ceiling; prefill uses the fitted small-M curve
        ce = e.gemm_eff_max if decode else gemm_efficiency(tokens * lin.tokens_fraction, e)
        if f.name == "bf16":
            ops.append(Op(flops / (c.matmul_flops * ce), (params * 2.0 + act) / stream, "weights"))
        elif f.name in ("fp8", "int8"):
            compute = flops / (s.quant_flops * ce * e.quant_gemm_eff)
            ops.append(Op(compute, (params * f.bytes_per_weight + act) / stream, "weights"))
        elif f.name == "int4":  # W4A16: packed weights streamed, dequantized in registers, 16-bit MMA
            compute = flops / (c.matmul_flops * ce * e.int4_gemm_eff)
            ops.append(Op(compute, (params * f.bytes_per_weight + act) / (stream * e.int4_stream_eff), "weights"))
        elif f.name == "bnb-nf4" and tokens == 1:  # bitsandbytes' fused gemv_4bit reads NF4 directly
            ops.append(Op(flops / (c.matmul_flops * ce), (params * f.bytes_per_weight + act) / (stream * e.nf4_gemv_eff), "weights"))
        elif f.name == "bnb-nf4":  # dequantize the whole weight to bf16, then a bf16 GEMM
            dequant = params * e.dequant_bytes_per_param / (bw * e.memory_eff)
            ops.append(Op(flops / (c.matmul_flops * ce), (params * 2.0 + act) / stream, "weights", dequant))
        else:  # LLM.int8: int8 weights, but quantize/outlier/dequantize kernels make it slower overall
            compute = flops / (c.matmul_flops * ce)
            mem = (params * f.bytes_per_weight + act) / stream
            ops.append(Op(compute * e.int8_matmul_slowdown, mem * e.int8_matmul_slowdown, "weights"))
    return ops


def _elementwise_bytes_per_token(s: ServeSetup) -> float:
    """Norms, RoPE, residuals, SwiGLU activation of one layer, bytes per token. Unfused (the probed runtime):
    norms upcast to fp32, each step its own kernel. An engine's fused kernels: two add+norm passes (read x and
    the residual, write both), rotary on q and k as the emulation runs it (ROPE_BYTES_PER_ELEMENT), SiLU-and-multiply (read two, write one)."""
    a, t = s.arch, s.tp
    hq, kv = a.num_attention_heads * a.head_size / t, s.kv_heads_per_gpu * a.head_size
    mlp = a.intermediate_size * a.num_experts_per_tok / t
    if s.engine_style:
        return 2 * 8.0 * a.hidden_size + ROPE_BYTES_PER_ELEMENT * (hq + kv) + 6.0 * mlp
    return unfused_elementwise_bytes(a.hidden_size, hq, kv, mlp)


def layer_ops(s: ServeSetup, batch: int, new_tokens: int, kv_len: int, decode: bool) -> list[Op]:
    """One decoder layer on one GPU: ``batch`` sequences each adding ``new_tokens`` to a cache of ``kv_len``
    (a prefill chunk with ``kv_len`` > 0 attends to the cache so far as well as causally to itself)."""
    a, e, c = s.arch, s.eff, s.c
    tokens = batch * new_tokens
    ops = _linear_ops(s, tokens, decode)
    hq = a.num_attention_heads * a.head_size / s.tp
    kv_tok = s.kv_bytes_per_token_layer
    keys = attended_pairs(a, new_tokens, kv_len)  # per sequence, averaged over layers: windows and recurrent layers
    if decode:
        flops = 4.0 * batch * keys * hq  # QK^T and AV for one query per sequence
        # the cache read, and a recurrent layer's state read with it and written back
        kv_read = batch * s.kv_bytes(kv_len) / a.num_hidden_layers + batch * s.state_bytes_per_layer
        # a runtime that repeats grouped K/V heads to the query heads before attention (Hugging Face's SDPA
        # path with a mask) writes and re-reads the expanded copy: kv_expand_factor passes over it
        expand = batch * keys * expanded_kv_bytes_per_token_layer(s) * e.kv_expand_factor if not s.engine_style else 0.0
        mem = (kv_read / (c.memory_bps * e.kv_read_eff) + expand / (c.memory_bps * e.memory_eff)
               + (4.0 * tokens * hq * s.attention_share + tokens * kv_tok) / (c.memory_bps * e.memory_eff))
        ops.append(Op(flops / (c.matmul_flops * e.attention_eff), mem, "kv"))
    else:
        flops = 4.0 * batch * keys * hq
        cached = batch * s.kv_bytes(kv_len) / a.num_hidden_layers  # a later chunk reads the cache so far
        qkvo = 2.0 * tokens * (2 * hq + 2 * s.kv_heads_per_gpu * a.head_size) * s.attention_share
        mem = (qkvo + tokens * kv_tok + cached) / (c.memory_bps * e.memory_eff)
        # the probed runtime's captured prefill attends through a mask; engines run causal FlashAttention, whose
        # efficiency the training fit measured (forward and backward)
        att_eff = e.prefill_attention_eff if not s.engine_style else e.attention_eff
        # at the rate of the model's head size, as training's fused attention (head 64: 0.82, 96: 0.73, > 128: 0.76)
        att_eff *= head_size_factor(a.head_size, e)
        ops.append(Op(flops / (c.matmul_flops * att_eff), mem, "kv"))
    ops.append(Op(0.0, _elementwise_bytes_per_token(s) * tokens / (c.memory_bps * e.memory_eff), "act"))
    streamed, indexed = moe_routing_bytes_per_token(a)
    if streamed:
        ops.append(Op(0.0, tokens * (streamed / (c.memory_bps * e.memory_eff) + indexed * indexed_byte_s(c.memory_bps, e)), "act"))
    return ops


def shared_expert_width(a: ModelArch) -> int:
    """The MLP width of an MoE layer's always-on shared experts, from the config (Qwen2-MoE's one expert, DeepSeek's
    n_shared_experts of the routed width, Granite's shared_intermediate_size); 0 without."""
    cfg = a.hf_config or {}
    if cfg.get("shared_expert_intermediate_size"):
        return int(cfg["shared_expert_intermediate_size"])
    if cfg.get("n_shared_experts"):
        return int(cfg["n_shared_experts"]) * int(cfg.get("moe_intermediate_size") or a.intermediate_size)
    return int(cfg.get("shared_intermediate_size") or 0)


def moe_routing_bytes_per_token(a: ModelArch) -> tuple[float, float]:
    """(all, indexed) bytes per token of an MoE layer's routing beyond its GEMMs and the routed SiLU-and-multiply
    (``knowledge.engines``: the router, the counts, the rows gathered to expert order and back, weighted and summed over
    the top k; a shared expert's SiLU-and-multiply, and with a gate its product and the add). The indexed bytes are
    also in the first figure. Whole rows on every tensor-parallel rank (the tokens are replicated). (0, 0) if dense."""
    if not a.is_moe:
        return 0.0, 0.0
    k, h, e = a.num_experts_per_tok, a.hidden_size, a.num_local_experts
    routing = (e * (MOE_ROUTER_BYTES_PER_EXPERT + k * MOE_COUNT_BYTES_PER_EXPERT) + k * MOE_PAIR_BYTES
               + k * h * MOE_ROW_BYTES + 2.0 * h)
    shared = shared_expert_width(a)
    if shared:  # its SiLU-and-multiply as the routed one's (6 B a unit), the gate's product (4 B) and the add (6 B)
        routing += 6.0 * shared + 10.0 * h
    return routing, k * h * MOE_INDEXED_ROW_BYTES


def _head_op(s: ServeSetup, rows: int) -> Op:
    """LM head on the last position of each sequence (logits_to_keep=1), vocabulary split over ranks."""
    a, e, c = s.arch, s.eff, s.c
    hv = a.hidden_size * a.vocab_size / s.tp
    compute = 2.0 * rows * hv / (c.matmul_flops * e.gemm_eff_max)  # few rows: the bytes term rules
    mem = (2.0 * hv + 6.0 * rows * a.vocab_size / s.tp) / (c.memory_bps * e.weight_stream_eff)
    return Op(compute, mem, "weights")


def qk_norm_kernels(a: ModelArch) -> int:
    """An engine's per-head q and k RMSNorms (Qwen3-type attention): two kernels more per layer."""
    return QK_NORM_KERNELS if a.hf_model_type in QK_NORM_TYPES else 0


def fused_moe_kernels(a: ModelArch) -> int:
    """An engine's MoE layer beyond the dense layer it replaces: the fused experts (``knowledge.engines``), the top-k
    renormalisation and a shared expert with its gate where the model's config has them."""
    if not a.is_moe:
        return 0
    cfg = a.hf_config or {}
    shared = shared_expert_width(a) > 0
    renormalise = bool(cfg.get("norm_topk_prob")) or a.hf_model_type in ALWAYS_RENORMALISE_TYPES
    return (FUSED_MOE_KERNELS - DENSE_MLP_KERNELS + NORM_TOPK_KERNELS * renormalise
            + SHARED_EXPERT_KERNELS * shared + SHARED_GATE_KERNELS * (shared and a.hf_model_type == "qwen2_moe"))


def structure_kernels(a: ModelArch) -> int:
    """An engine layer's kernels beyond Llama's for the family's own structure: a plain MLP's missing gate product,
    Gemma's output norms (``knowledge.engines``)."""
    return -1 * (a.hf_model_type in PLAIN_MLP_TYPES) + POST_NORM_KERNELS * (a.hf_model_type in POST_NORM_TYPES)


def engine_layer_kernels(a: ModelArch, base: int) -> int:
    """One decoder layer's decode kernels in an engine whose Llama layer launches ``base``: the family's q/k norms,
    its fused MoE, its structure."""
    return base + qk_norm_kernels(a) + fused_moe_kernels(a) + structure_kernels(a)


def kernels_per_pass(s: ServeSetup, tokens: float) -> float:
    """Kernels of one forward: the layer's own, quantize steps, the routed experts (an engine's fused MoE; the
    transformers runtime's loop over the experts hit), all-reduces, the head."""
    a = s.arch
    if s.engine_style:
        layer = engine_layer_kernels(a, s.engine.kernels_per_layer)
    else:
        layer = KERNELS_PER_LAYER_FWD
        if a.is_moe:
            layer += KERNELS_PER_EXPERT * expected_experts(a.num_local_experts, a.num_experts_per_tok, tokens)
    extra = s.fmt.extra_kernels_per_linear * (7 if not s.engine_style else 4)  # engines merge QKV and gate/up
    per_layer = layer + extra + 2 * (s.tp > 1)
    return per_layer * a.num_hidden_layers + KERNELS_HEAD


def pass_time(s: ServeSetup, batch: int, new_tokens: int, kv_len: int, decode: bool) -> PassTime:
    """A whole forward on one GPU: layers x one layer's operators + LM head + TP all-reduces + kernel floor."""
    L = s.arch.num_hidden_layers
    ops = [(op, L) for op in layer_ops(s, batch, new_tokens, kv_len, decode)] + [(_head_op(s, batch), 1)]
    comp = sum(op.time_s * n for op, n in ops if op.compute_bound and op.kind != "act")
    weights = sum(op.time_s * n for op, n in ops if not op.compute_bound and op.kind == "weights")
    kv = sum(op.time_s * n for op, n in ops if not op.compute_bound and op.kind == "kv")
    elementwise = sum(op.time_s * n for op, n in ops if op.kind == "act")
    comm = 0.0
    if s.tp > 1:
        if s.c.link_bps <= 0:
            raise AdvisorError(f"tensor_parallel={s.tp} needs a GPU link on {s.platform.id!r}")
        msg = batch * new_tokens * s.arch.hidden_size * 2.0
        ring = 2.0 * (s.tp - 1) / s.tp * msg / (s.c.link_bps * s.c.link_eff)
        comm = 2 * L * (ring + s.eff.tp_allreduce_latency_s)  # after attention and after the MLP
    kernels = kernels_per_pass(s, batch * new_tokens)
    return PassTime(comp, weights, kv, comm, kernels, kernels * s.eff.graph_kernel_s, elementwise)


def graph_s(p: PassTime, eff: Efficiencies) -> float:
    """A graph-replayed forward: the GPU's time plus the replay's own (launch, input copies, sync)."""
    return p.gpu_s + eff.decode_graph_overhead_s


def decode_step_s(s: ServeSetup, batch: int, kv_len: int) -> float:
    return graph_s(pass_time(s, batch, 1, kv_len, decode=True), s.eff)


def prefill_passes(s: ServeSetup, batch: float, prompt_len: int) -> list[tuple[PassTime, int]]:
    """The forwards that prefill ``batch`` prompts of ``prompt_len`` tokens, each with how often it runs.

    transformers: the whole batch's prompt in one forward. An engine: chunks of ``chunk_tokens`` tokens. Prompts
    no longer than a chunk share chunks (a chunk holds chunk / prompt_len sequences on average, so the attention
    summed over chunks is the batch's); a longer prompt runs its chunks in turn, each attending to the cache so far.
    """
    chunk = chunk_tokens(s) if s.engine_style else 0
    if not chunk or batch * prompt_len <= chunk:
        return [(pass_time(s, batch, prompt_len, 0, decode=False), 1)]
    if prompt_len <= chunk:
        full, rest = divmod(batch * prompt_len, chunk)
        out = [(pass_time(s, chunk / prompt_len, prompt_len, 0, decode=False), int(full))]
        return out + ([(pass_time(s, rest / prompt_len, prompt_len, 0, decode=False), 1)] if rest else [])
    return [(pass_time(s, 1, min(chunk, prompt_len - start), start, decode=False), int(batch))
            for start in range(0, prompt_len, chunk)]


def prefill_pass_s(s: ServeSetup, p: PassTime) -> float:
    """One prefill forward: replayed from a CUDA graph where the engine captures its prefill, else launched eagerly,
    where the CPU's launches overlap the GPU's work and set the pace once each kernel's work is short (a single
    1k-token prompt of a 2B model: the engine rows ran 37-58% slower than a graph's floor made them). The overlap is
    training's (``soft_max``): one rule for eager dispatch."""
    if s.engine.prefill_graphed:
        return graph_s(p, s.eff)
    return soft_max(p.gpu_s, p.kernels * s.eff.prefill_kernel_s)


def prefill_s(s: ServeSetup, batch: int, prompt_len: int) -> float:
    return sum(prefill_pass_s(s, p) * n for p, n in prefill_passes(s, batch, prompt_len))


def mean_decode_s(step, first_kv: int, steps: int) -> float:
    """Average of ``step(kv)`` over kv = first_kv .. first_kv + steps - 1 (trapezoid on a fixed grid)."""
    if steps <= INTEGRATION_POINTS:
        return sum(step(first_kv + i) for i in range(steps)) / steps
    xs = [first_kv + (steps - 1) * i / (INTEGRATION_POINTS - 1) for i in range(INTEGRATION_POINTS)]
    ys = [step(round(x)) for x in xs]
    return sum((ys[i] + ys[i + 1]) / 2 for i in range(len(ys) - 1)) / (len(ys) - 1)


# --- predictions ----------------------------------------------------------------------------------


def _interval(values: dict[str, float | None], rel: float | None) -> dict[str, tuple[float, float]] | None:
    if not rel:
        return None
    return {k: (v / (1 + rel), v * (1 + rel)) for k, v in values.items() if v is not None}


def predict_serving(case: ServeCase, arch: ModelArch, platform: PlatformSpec, cal: Calibration,
                    rel_error: float | None = None) -> ServePrediction:
    """Predict one serving case on ``cal`` (the platform's calibration), as ``case.engine`` serves it (vLLM unless
    named). ``rel_error`` widens the intervals."""
    eff = cal.eff
    fmt = resolve_format(case, platform.gpu)
    r = replicas_of(case, platform)
    s = make_setup(arch, platform, cal, case.tensor_parallel, fmt, case.kv_bits, case.engine)
    B, P, kv = case.batch_size, case.prompt_len, case.kv_len_effective
    b = math.ceil(B / r)  # sequences on the busiest replica; the replicas step together
    passes = prefill_passes(s, b, P)
    prefill = sum(prefill_pass_s(s, p) * n for p, n in passes)
    dec = pass_time(s, b, 1, kv, decode=True)
    decode = graph_s(dec, eff)
    ttft = tpot = e2e = None
    if case.output_len:
        # the prefill yields the first token; output_len - 1 decode steps follow at growing kv_len, each with
        # the engine's host work between steps (scheduling, sampling)
        # (vLLM's benchmark_serving defines no TPOT for a one-token output: None, never the decode step)
        steps = case.output_len - 1
        tpot = mean_decode_s(lambda k: decode_step_s(s, b, k), P + 1, steps) + eff.generate_token_overhead_s if steps else None
        ttft = prefill
        e2e = B * case.output_len / (prefill + (steps * tpot if steps else 0.0))
    context = max(kv + 1, P + (case.output_len or 0))
    mem = memory_verdict(s, b, P, context, kv)
    bd = ServeBreakdown(
        prefill_compute_s=sum(p.compute_bound_s * n for p, n in passes),
        prefill_memory_s=sum((p.weights_s + p.kv_s + p.small_kernels_s) * n for p, n in passes),
        prefill_communication_s=sum(p.communication_s * n for p, n in passes),
        decode_weights_s=dec.weights_s, decode_kv_s=dec.kv_s, decode_compute_s=dec.compute_bound_s,
        communication_s=dec.communication_s, overhead_s=dec.small_kernels_s + eff.decode_graph_overhead_s,
        weights_gib=weight_bytes(s) / GiB, kv_cache_gib=mem.kv / GiB, activations_gib=mem.activations / GiB,
    )
    tps = B / decode
    return ServePrediction(
        id=case.id, prefill_s=prefill, decode_step_s=decode, decode_tokens_per_s=tps,
        e2e_output_tokens_per_s=e2e, ttft_s=ttft, tpot_s=tpot, peak_mem_gib=mem.peak / GiB, fits=mem.fits, p_oom=round(mem.p_oom, 4),
        required_gib=mem.required / GiB, usable_gib=mem.capacity / GiB, max_batch_size=mem.max_batch * r, breakdown=bd, capacity_gib=platform.gpu.memory_gib,
        why_not_fits=mem.why, note=mem.note, engine=s.engine.name, weight_format=fmt.name, replicas=r,
        kv_cache_tokens=engine_kv_tokens(s) if s.engine_style else None,
        kv_pool_gib=mem.pool / GiB if mem.pool is not None else None,
        chunk_tokens=chunk_tokens(s) if s.engine_style else None,
        interval=_interval({"prefill_s": prefill, "decode_step_s": decode, "decode_tokens_per_s": tps,
                            "e2e_output_tokens_per_s": e2e}, rel_error),
    )


def continuous_batching(arch: ModelArch, platform: PlatformSpec, cal: Calibration, n_requests: int, prompt_len: int,
                        output_len: int, max_batch_size: int | None = None, *, weight_bits: int = 16, kv_bits: int = 16,
                        tensor_parallel: int = 1, weight_format: str | None = None, replicas: int | None = None,
                        engine: str | None = None) -> dict:
    """``n_requests`` identical requests arriving at once, served with continuous batching by every replica.

    Each replica runs up to the memory limit (or ``max_batch_size`` if smaller). Identical requests finish
    together, so a new wave is admitted when one completes: waves of prefill + (output_len - 1) decode
    steps. TTFT counts the queueing of later waves; TPOT is the mean time between output tokens.
    """
    if n_requests < 1 or prompt_len < 1 or output_len < 1:
        raise AdvisorError("n_requests, prompt_len and output_len must be at least 1")
    case = ServeCase(id="load", hardware=platform.id, model=arch.name, task="serve", weight_bits=weight_bits,
                     weight_format=weight_format, kv_bits=kv_bits, tensor_parallel=tensor_parallel, replicas=replicas,
                     engine=engine or DEFAULT_ENGINE)
    fmt = resolve_format(case, platform.gpu)
    r = replicas_of(case, platform)
    s = make_setup(arch, platform, cal, tensor_parallel, fmt, kv_bits, engine)
    limit = max_batch(s, prompt_len, prompt_len + output_len)
    if limit < 1:
        raise AdvisorError(f"{arch.name} with one {prompt_len}+{output_len}-token request does not fit on {platform.id!r}")
    per_replica = math.ceil(n_requests / r)
    batch = min(limit, per_replica, max_batch_size or limit)
    eff = cal.eff

    def wave_s(b: int) -> tuple[float, float]:
        steps = output_len - 1
        if not steps:
            return prefill_s(s, b, prompt_len), 0.0
        tpot = mean_decode_s(lambda k: decode_step_s(s, b, k), prompt_len + 1, steps) + eff.generate_token_overhead_s
        return prefill_s(s, b, prompt_len), steps * tpot

    full, rest = divmod(per_replica, batch)
    t, ttft_sum = 0.0, 0.0
    for b, count in ((batch, full), (rest, 1 if rest else 0)):
        if not count:
            continue
        prefill, decode = wave_s(b)
        # wave j starts at t + j * (prefill + decode); its requests see their first token after its prefill
        ttft_sum += b * (count * t + (prefill + decode) * count * (count - 1) / 2 + count * prefill)
        t += count * (prefill + decode)
    waves = full + (1 if rest else 0)
    tpot = (mean_decode_s(lambda k: decode_step_s(s, batch, k), prompt_len + 1, output_len - 1) + eff.generate_token_overhead_s
            if output_len > 1 else None)  # no TPOT for a one-token output, as benchmark_serving
    return {
        "batch_size": batch, "memory_limited_batch": limit, "waves": waves, "total_s": t, "replicas": r,
        "output_tokens_per_s": n_requests * output_len / t, "requests_per_s": n_requests / t,
        "mean_ttft_s": ttft_sum / per_replica, "tpot_s": tpot,
    }
