"""A serving prediction: per-operator roofline of prefill and decode, KV-cache memory. Pure functions.

Every operator of one decoder layer (7 projections, attention, elementwise) takes max(FLOPs / compute
ceiling, bytes / bandwidth) on one GPU of the tensor-parallel group (LLM-Viewer's method), times the
layers, plus the LM head, the tensor-parallel all-reduces and the framework overhead. Efficiencies are
capped at 1, so no prediction beats the pure roofline.

What the timings mean follows the serving probe (``probes/serve_step.py``): ``decode_step_s`` is one
CUDA-graph-captured step on a static cache (GPU time + a small replay overhead); ``e2e`` is Hugging Face
``generate()``, eager, whose DynamicCache copies the whole cache every token. Quantized weights are
bitsandbytes': NF4 uses a fused GEMV only for a single token row and dequantizes the whole weight first
otherwise; LLM.int8 is slower than bf16 by ``int8_matmul_slowdown``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from knowledge.efficiency import Efficiencies
from knowledge.errors import AdvisorError
from knowledge.schema import ModelArch, PlatformSpec, Profile, ServeBreakdown, ServeCase, ServePrediction
from knowledge.units import GiB
from models.architecture import attention_flops, linears, param_counts
from models.memory import usable_gib
from models.roofline import apply_profile, ceilings
from models.training import round_down, round_up
from models.setup import QUANT_BYTES
from models.operators import gemm_efficiency
from models.roofline import Ceilings
from models.step_time import KERNELS_PER_LAYER_FWD, KERNELS_PER_QUANT_LINEAR, soft_max as _soft_max

QUANT_NAME = {16: "none", 8: "int8", 4: "nf4"}
COLUMN_PARALLEL = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")  # output split over TP ranks
KERNELS_HEAD = 20  # final norm, LM head, slicing, sampling
INTEGRATION_POINTS = 17  # decode time is piecewise linear in kv_len: a few points integrate it closely


@dataclass(frozen=True)
class ServeSetup:
    arch: ModelArch
    platform: PlatformSpec
    eff: Efficiencies
    c: Ceilings
    tp: int
    weight_bits: int
    kv_bits: int

    @property
    def kv_heads_per_gpu(self) -> int:
        # fewer KV heads than ranks: engines replicate a KV head rather than split it
        return math.ceil(self.arch.num_key_value_heads / self.tp)

    @property
    def kv_bytes_per_token_layer(self) -> float:
        """K and V of one token in one layer on one GPU."""
        return 2.0 * self.kv_heads_per_gpu * self.arch.head_size * self.kv_bits / 8


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
    weights_s: float  # memory-bound operators streaming weights (and elementwise activations)
    kv_s: float  # memory-bound attention over the KV cache
    communication_s: float
    kernels: float  # launches an eager framework issues

    @property
    def gpu_s(self) -> float:
        return self.compute_bound_s + self.weights_s + self.kv_s + self.communication_s

    @property
    def compute_share(self) -> float:
        return self.compute_bound_s / self.gpu_s if self.gpu_s > 0 else 0.0


def make_setup(arch: ModelArch, platform: PlatformSpec, eff: Efficiencies, tp: int = 1, weight_bits: int = 16,
               kv_bits: int = 16) -> ServeSetup:
    if tp > platform.count:
        raise AdvisorError(f"tensor_parallel={tp} exceeds the {platform.count} GPUs of {platform.id!r}")
    if arch.num_attention_heads % tp:
        raise AdvisorError(f"tensor_parallel={tp} does not divide the {arch.num_attention_heads} attention heads of {arch.name}")
    return ServeSetup(arch, platform, eff, ceilings(platform, eff), tp, weight_bits, kv_bits)


def expected_experts(experts: int, top_k: int, tokens: float) -> float:
    """Distinct experts a batch of ``tokens`` routes to, uniform routing: E(1 - (1 - k/E)^tokens)."""
    if experts <= 1:
        return 1.0
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def _linear_ops(s: ServeSetup, tokens: float, decode: bool) -> list[Op]:
    a, e, c, t = s.arch, s.eff, s.c, s.tp
    bw = c.memory_bps
    ops = []
    for lin in linears(a):
        copies = expected_experts(lin.experts, a.num_experts_per_tok, tokens) if lin.experts > 1 else 1.0
        params = lin.in_features * lin.out_features * copies / t
        flops = lin.flops(tokens) / t
        routed = lin.tokens_fraction * lin.experts  # each token visits top-k experts
        split_in, split_out = (1, t) if lin.name in COLUMN_PARALLEL else (t, 1)
        act = 2.0 * tokens * routed * (lin.in_features / split_in + lin.out_features / split_out)
        # decode: the skinny GEMM's small-M slowness *is* its memory-boundedness, modelled by the bytes
        # term, so compute runs at the large-GEMM ceiling; prefill uses the fitted small-M curve
        ce = e.gemm_eff_max if decode else gemm_efficiency(tokens * lin.tokens_fraction, e)
        compute = flops / (c.matmul_flops * ce)
        if s.weight_bits == 16:
            ops.append(Op(compute, (params * 2.0 + act) / (bw * e.weight_stream_eff), "weights"))
        elif s.weight_bits == 4 and tokens == 1:  # bitsandbytes' fused gemv_4bit reads NF4 directly
            mem = (params * QUANT_BYTES["nf4"] + act) / (bw * e.weight_stream_eff * e.nf4_gemv_eff)
            ops.append(Op(compute, mem, "weights"))
        elif s.weight_bits == 4:  # dequantize the whole weight to bf16, then a bf16 GEMM
            dequant = params * e.dequant_bytes_per_param / (bw * e.memory_eff)
            ops.append(Op(compute, (params * 2.0 + act) / (bw * e.weight_stream_eff), "weights", dequant))
        else:  # LLM.int8: int8 weights, but quantize/outlier/dequantize kernels make it slower overall
            mem = (params * QUANT_BYTES["int8"] + act) / (bw * e.weight_stream_eff)
            ops.append(Op(compute * e.int8_matmul_slowdown, mem * e.int8_matmul_slowdown, "weights"))
    return ops


def _elementwise_bytes_per_token(s: ServeSetup) -> float:
    """Norms (fp32 upcast), RoPE, residuals, SwiGLU activation of one layer, bytes per token."""
    a, t = s.arch, s.tp
    hq, kv = a.num_attention_heads * a.head_size / t, s.kv_heads_per_gpu * a.head_size
    return 2 * 20.0 * a.hidden_size + 12.0 * (hq + kv) + 2 * 6.0 * a.hidden_size + 10.0 * a.intermediate_size * a.num_experts_per_tok / t


def layer_ops(s: ServeSetup, batch: int, new_tokens: int, kv_len: int, decode: bool, kv_copy: float = 0.0) -> list[Op]:
    """One decoder layer on one GPU: ``batch`` sequences each adding ``new_tokens`` to a cache of ``kv_len``."""
    a, e, c = s.arch, s.eff, s.c
    tokens = batch * new_tokens
    ops = _linear_ops(s, tokens, decode)
    hq = a.num_attention_heads * a.head_size / s.tp
    kv_tok = s.kv_bytes_per_token_layer
    if decode:
        flops = 4.0 * batch * kv_len * hq  # QK^T and AV for one query per sequence
        kv_read = batch * kv_len * kv_tok * (1.0 + kv_copy)  # kv_copy: DynamicCache's torch.cat
        mem = kv_read / (c.memory_bps * e.kv_read_eff) + (4.0 * tokens * hq + tokens * kv_tok) / (c.memory_bps * e.memory_eff)
        ops.append(Op(flops / (c.matmul_flops * e.attention_eff), mem, "kv"))
    else:
        flops = attention_flops(a, batch, new_tokens, causal_skip=True) / s.tp
        mem = (2.0 * tokens * (2 * hq + 2 * s.kv_heads_per_gpu * a.head_size) + tokens * kv_tok) / (c.memory_bps * e.memory_eff)
        ops.append(Op(flops / (c.matmul_flops * e.attention_eff), mem, "kv"))
    ops.append(Op(0.0, _elementwise_bytes_per_token(s) * tokens / (c.memory_bps * e.memory_eff), "act"))
    return ops


def _head_op(s: ServeSetup, rows: int) -> Op:
    """LM head on the last position of each sequence (logits_to_keep=1), vocabulary split over ranks."""
    a, e, c = s.arch, s.eff, s.c
    hv = a.hidden_size * a.vocab_size / s.tp
    compute = 2.0 * rows * hv / (c.matmul_flops * e.gemm_eff_max)  # few rows: the bytes term rules
    mem = (2.0 * hv + 6.0 * rows * a.vocab_size / s.tp) / (c.memory_bps * e.weight_stream_eff)
    return Op(compute, mem, "weights")


def pass_time(s: ServeSetup, batch: int, new_tokens: int, kv_len: int, decode: bool, kv_copy: float = 0.0) -> PassTime:
    """A whole forward on one GPU: layers x one layer's operators + LM head + TP all-reduces."""
    L = s.arch.num_hidden_layers
    ops = [(op, L) for op in layer_ops(s, batch, new_tokens, kv_len, decode, kv_copy)] + [(_head_op(s, batch), 1)]
    comp = sum(op.time_s * n for op, n in ops if op.compute_bound)
    weights = sum(op.time_s * n for op, n in ops if not op.compute_bound and op.kind != "kv")
    kv = sum(op.time_s * n for op, n in ops if not op.compute_bound and op.kind == "kv")
    comm = 0.0
    if s.tp > 1:
        if s.c.link_bps <= 0:
            raise AdvisorError(f"tensor_parallel={s.tp} needs a GPU link on {s.platform.id!r}")
        msg = batch * new_tokens * s.arch.hidden_size * 2.0
        ring = 2.0 * (s.tp - 1) / s.tp * msg / (s.c.link_bps * s.c.link_eff)
        comm = 2 * L * (ring + s.eff.collective_latency_s)  # after attention and after the MLP
    per_layer = KERNELS_PER_LAYER_FWD + KERNELS_PER_QUANT_LINEAR * 7 * (s.weight_bits != 16) + 2 * (s.tp > 1)
    return PassTime(comp, weights, kv, comm, per_layer * L + KERNELS_HEAD)


def eager_s(p: PassTime, eff: Efficiencies) -> float:
    """An eager forward: GPU work and the CPU's kernel dispatch overlap; the slower one shows."""
    return _soft_max(p.gpu_s, p.kernels * eff.kernel_time_s)


def decode_graph_s(s: ServeSetup, batch: int, kv_len: int) -> float:
    return pass_time(s, batch, 1, kv_len, decode=True).gpu_s + s.eff.decode_graph_overhead_s


def decode_generate_s(s: ServeSetup, batch: int, kv_len: int) -> float:
    """One token of an eager generate() loop (DynamicCache copy, Python per-token work)."""
    p = pass_time(s, batch, 1, kv_len, decode=True, kv_copy=s.eff.e2e_kv_copy_factor)
    return eager_s(p, s.eff) + s.eff.generate_token_overhead_s


def mean_decode_s(step, first_kv: int, steps: int) -> float:
    """Average of ``step(kv)`` over kv = first_kv .. first_kv + steps - 1 (trapezoid on a fixed grid)."""
    if steps <= INTEGRATION_POINTS:
        return sum(step(first_kv + i) for i in range(steps)) / steps
    xs = [first_kv + (steps - 1) * i / (INTEGRATION_POINTS - 1) for i in range(INTEGRATION_POINTS)]
    ys = [step(round(x)) for x in xs]
    return sum((ys[i] + ys[i + 1]) / 2 for i in range(len(ys) - 1)) / (len(ys) - 1)


# --- memory ---------------------------------------------------------------------------------------


def weight_bytes(s: ServeSetup) -> float:
    """Per GPU: decoder projections at the weight format, embeddings, head and norms in 16-bit."""
    pc = param_counts(s.arch)
    return (pc.decoder_linear * QUANT_BYTES[QUANT_NAME[s.weight_bits]] + pc.non_linear * 2.0) / s.tp


def activation_bytes_per_seq(s: ServeSetup, prompt_len: int) -> float:
    """Prefill transients of one layer per sequence: fp32 norm input, q/k/v, SwiGLU, last-row logits."""
    a, t = s.arch, s.tp
    hq, kv = a.num_attention_heads * a.head_size, s.kv_heads_per_gpu * a.head_size
    per_token = 12.0 * a.hidden_size + 4.0 * (hq / t + 2 * kv) + 6.0 * a.intermediate_size * a.num_experts_per_tok / t
    return prompt_len * per_token + 6.0 * a.vocab_size / t


def fixed_bytes(s: ServeSetup) -> float:
    """Weights + workspace + the bf16 copy NF4 dequantizes one projection into."""
    largest = max(lin.in_features * lin.out_features for lin in linears(s.arch)) / s.tp
    return weight_bytes(s) + s.eff.workspace_gib * GiB + (2.0 * largest if s.weight_bits == 4 else 0.0)


def max_batch(s: ServeSetup, prompt_len: int, context_len: int) -> int:
    """Largest batch whose KV cache (at ``context_len``) and prefill transients fit beside the weights."""
    free = usable_gib(s.platform.gpu.memory_gib, s.eff) * GiB - fixed_bytes(s)
    per_seq = context_len * s.arch.num_hidden_layers * s.kv_bytes_per_token_layer + activation_bytes_per_seq(s, prompt_len)
    return max(0, int(free // per_seq))


# --- predictions ----------------------------------------------------------------------------------


def _interval(values: dict[str, float | None], rel: float | None) -> dict[str, tuple[float, float]] | None:
    if not rel:
        return None
    return {k: (v / (1 + rel), v * (1 + rel)) for k, v in values.items() if v is not None}


def predict_serving(case: ServeCase, arch: ModelArch, platform: PlatformSpec, eff: Efficiencies,
                    profile: Profile | None = None, rel_error: float | None = None) -> ServePrediction:
    """Predict one serving case. ``rel_error`` (held-out MAPE) widens the intervals."""
    eff = apply_profile(eff, platform, profile)
    s = make_setup(arch, platform, eff, case.tensor_parallel, case.weight_bits, case.kv_bits)
    B, P, kv = case.batch_size, case.prompt_len, case.kv_len_effective
    pre = pass_time(s, B, P, 0, decode=False)
    prefill_s = eager_s(pre, eff)
    dec = pass_time(s, B, 1, kv, decode=True)
    decode_s = dec.gpu_s + eff.decode_graph_overhead_s
    ttft = tpot = e2e = None
    if case.output_len:
        # the prefill yields the first token; output_len - 1 generate steps follow at growing kv_len
        # decode steps replayed from a CUDA graph on a static cache, as an optimised engine (and our
        # probe, probes.serve_step) runs them
        steps = case.output_len - 1
        tpot = mean_decode_s(lambda k: decode_graph_s(s, B, k), P + 1, steps) if steps else decode_graph_s(s, B, P)
        ttft = prefill_s
        # plus the host's work between steps (sampling, the next input), a fitted per-step overhead
        e2e = B * case.output_len / (prefill_s + steps * (tpot + eff.generate_token_overhead_s))
    context = max(kv + 1, P + (case.output_len or 0))
    w, kv_b, act = weight_bytes(s), B * context * arch.num_hidden_layers * s.kv_bytes_per_token_layer, B * activation_bytes_per_seq(s, P)
    peak = fixed_bytes(s) + kv_b + act
    cap = usable_gib(platform.gpu.memory_gib, eff)
    fits = peak / GiB <= cap
    why = None if fits else f"needs {round_up(peak / GiB)} GiB per GPU, {round_down(cap)} GiB usable of {platform.gpu.memory_gib:.1f}"
    bd = ServeBreakdown(
        prefill_compute_s=pre.compute_bound_s, prefill_memory_s=pre.weights_s + pre.kv_s,
        decode_weights_s=dec.weights_s, decode_kv_s=dec.kv_s, decode_compute_s=dec.compute_bound_s,
        communication_s=dec.communication_s, overhead_s=eff.decode_graph_overhead_s,
        weights_gib=w / GiB, kv_cache_gib=kv_b / GiB, activations_gib=act / GiB,
    )
    tps = B / decode_s
    return ServePrediction(
        id=case.id, prefill_s=prefill_s, decode_step_s=decode_s, decode_tokens_per_s=tps,
        e2e_output_tokens_per_s=e2e, ttft_s=ttft, tpot_s=tpot, peak_mem_gib=peak / GiB, fits=fits,
        max_batch_size=max_batch(s, P, context), breakdown=bd, capacity_gib=platform.gpu.memory_gib, why_not_fits=why,
        interval=_interval({"prefill_s": prefill_s, "decode_step_s": decode_s, "decode_tokens_per_s": tps,
                            "e2e_output_tokens_per_s": e2e}, rel_error),
    )


def continuous_batching(arch: ModelArch, platform: PlatformSpec, eff: Efficiencies, n_requests: int, prompt_len: int,
                        output_len: int, max_batch_size: int | None = None, *, weight_bits: int = 16, kv_bits: int = 16,
                        tensor_parallel: int = 1, cuda_graph: bool = True) -> dict:
    """``n_requests`` identical requests arriving at once, served with continuous batching.

    The running batch is the memory limit (or ``max_batch_size`` if smaller). Identical requests finish
    together, so a new wave is admitted when one completes: waves of prefill + (output_len - 1) decode
    steps. ``cuda_graph`` = decode steps captured in graphs (vLLM-style engines) rather than eager.
    """
    if n_requests < 1 or prompt_len < 1 or output_len < 1:
        raise AdvisorError("n_requests, prompt_len and output_len must be at least 1")
    s = make_setup(arch, platform, eff, tensor_parallel, weight_bits, kv_bits)
    limit = max_batch(s, prompt_len, prompt_len + output_len)
    if limit < 1:
        raise AdvisorError(f"{arch.name} with one {prompt_len}+{output_len}-token request does not fit on {platform.id!r}")
    batch = min(limit, n_requests, max_batch_size or limit)
    step = (lambda b, k: decode_graph_s(s, b, k)) if cuda_graph else (lambda b, k: decode_generate_s(s, b, k))
    def wave_s(b: int) -> tuple[float, float]:
        prefill = eager_s(pass_time(s, b, prompt_len, 0, decode=False), eff)
        steps = output_len - 1
        per_step = eff.generate_token_overhead_s if cuda_graph else 0.0  # host work between replays
        return prefill, (steps * (mean_decode_s(lambda k: step(b, k), prompt_len + 1, steps) + per_step) if steps else 0.0)

    full, rest = divmod(n_requests, batch)
    t, ttft_sum = 0.0, 0.0
    for b, count in ((batch, full), (rest, 1 if rest else 0)):
        if not count:
            continue
        prefill, decode = wave_s(b)
        # wave j starts at t + j * (prefill + decode); its requests see their first token after its prefill
        ttft_sum += b * (count * t + (prefill + decode) * count * (count - 1) / 2 + count * prefill)
        t += count * (prefill + decode)
    waves = full + (1 if rest else 0)
    tpot = mean_decode_s(lambda k: step(batch, k), prompt_len + 1, max(output_len - 1, 1))
    return {
        "batch_size": batch, "memory_limited_batch": limit, "waves": waves, "total_s": t,
        "output_tokens_per_s": n_requests * output_len / t, "requests_per_s": n_requests / t,
        "mean_ttft_s": ttft_sum / n_requests, "tpot_s": tpot,
    }
