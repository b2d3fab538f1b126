"""Time of one training step, phase by phase, in seconds. Pure functions.

Each phase is a roofline term (FLOPs over a compute ceiling, bytes over a bandwidth) divided by a named
efficiency from ``knowledge.efficiency``; GPU work and the CPU's kernel dispatch run concurrently, so a
micro-batch takes the larger of the two.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.efficiency import Efficiencies
from models.operators import training_operators
from models.roofline import Ceilings
from models.setup import TrainSetup

# Kernels an eager Hugging Face decoder layer launches in forward (2 RMSNorms of ~7 kernels, RoPE ~12,
# 7 projections, SDPA, SwiGLU 2, residuals 2, views/copies ~6); backward launches about twice as many.
KERNELS_PER_LAYER_FWD = 45
KERNELS_EAGER_ATTENTION = 6
KERNELS_PER_LORA_TARGET = 4
KERNELS_PER_QUANT_LINEAR = 2
MODULES_PER_LAYER = 9  # ZeRO-3 fetches: 7 projections + 2 norms (+ 2 per LoRA target: A and B)


@dataclass(frozen=True)
class StepTime:
    forward: float  # per optimizer step (all micro-batches)
    backward: float
    optimizer: float
    communication: float  # exposed
    offload: float
    overhead: float  # CPU-bound time not hidden by GPU work, plus per-step bookkeeping

    @property
    def total(self) -> float:
        return self.forward + self.backward + self.optimizer + self.communication + self.offload + self.overhead


@dataclass(frozen=True)
class _Pass:
    gpu_s: float
    kernels: float


def _forward_pass(s: TrainSetup, eff: Efficiencies, c: Ceilings, layers_only: bool = False) -> _Pass:
    """One forward of one micro-batch on one rank: the operators of ``models.operators``, summed."""
    a, case = s.arch, s.case
    ops = training_operators(s, eff, c)
    t = a.num_hidden_layers * sum(op.time_s for op in ops if op.per_layer)
    kernels = KERNELS_PER_LAYER_FWD + (0 if case.flash_attention else KERNELS_EAGER_ATTENTION)
    kernels += KERNELS_PER_LORA_TARGET * len(case.lora_targets) * s.is_lora
    kernels += KERNELS_PER_QUANT_LINEAR * 7 * (case.quantization != "none")
    kernels *= a.num_hidden_layers
    if not layers_only:
        t += sum(op.time_s for op in ops if not op.per_layer)
        kernels += 20
    return _Pass(t, kernels)


def _backward_factor(s: TrainSetup) -> float:
    """Backward GEMM work over forward: input grads always, weight grads only where weights train."""
    if s.case.method == "full" and s.case.quantization == "none":
        return 2.0
    return 1.0 + (0.1 if s.is_lora else 0.0)


def _soft_max(a: float, b: float, p: float = 4.0) -> float:
    """max(a, b) with a smooth corner: GPU work and CPU dispatch overlap imperfectly near equality."""
    return (a**p + b**p) ** (1 / p) if a > 0 or b > 0 else 0.0


def _collective_s(n_bytes: float, ranks: int, c: Ceilings, eff: Efficiencies, calls: float, factor: float) -> float:
    """Ring collective: ``factor`` = 2(n-1)/n for all-reduce, (n-1)/n for all-gather/reduce-scatter."""
    if ranks <= 1 or c.link_bps <= 0:
        return 0.0
    return factor * n_bytes / (c.link_bps * c.link_eff) + calls * eff.collective_latency_s


def training_step_time(s: TrainSetup, eff: Efficiencies, c: Ceilings) -> StepTime:
    case, n, accum = s.case, s.ranks, s.case.grad_accum
    fwd = _forward_pass(s, eff, c)
    layers_fwd = _forward_pass(s, eff, c, layers_only=True)
    bwd_gpu = fwd.gpu_s * _backward_factor(s) + (layers_fwd.gpu_s if case.recompute else 0.0)
    bwd_kernels = 2 * fwd.kernels + (layers_fwd.kernels if case.recompute else 0)
    # micro-batch: GPU and CPU dispatch overlap; the CPU side shows as overhead when it dominates
    gpu_mb = fwd.gpu_s + bwd_gpu
    cpu_mb = (fwd.kernels + bwd_kernels) * eff.kernel_time_s
    mb = _soft_max(gpu_mb, cpu_mb)
    overhead_mb = mb - gpu_mb

    # --- communication ----------------------------------------------------------------------
    ag, ar = (n - 1) / max(n, 1), 2 * (n - 1) / max(n, 1)
    half = s.half_bytes
    grad_bytes = s.trainable * half
    all_16bit = (s.trainable + s.frozen_16bit) * half
    per_mb_comm, per_step_comm, zero3_hooks = 0.0, 0.0, 0.0
    if case.engine == "pytorch" or s.zero == 0:
        per_step_comm = _collective_s(grad_bytes, n, c, eff, 1 + grad_bytes / 1e9, ar)
        if case.engine == "deepspeed":  # BF16_Optimizer gathers the updated 16-bit weights
            per_step_comm += _collective_s(s.trainable * half, n, c, eff, 1, ag)
    elif s.zero in (1, 2):
        # ZeRO-2 reduce-scatters in every backward; ZeRO-1 reduces once at the accumulation boundary
        rs = _collective_s(s.trainable * half, n, c, eff, 1 + s.trainable / 2e8, ag)
        if s.zero == 2:
            per_mb_comm = rs
        else:
            per_step_comm += rs
        per_step_comm += _collective_s(s.trainable * half, n, c, eff, 1 + s.trainable / 2e8, ag)
    else:  # ZeRO-3: gather every weight in forward, again in backward (and for recompute)
        passes = 2 + case.recompute
        calls = s.arch.num_hidden_layers * (MODULES_PER_LAYER + 2 * len(case.lora_targets) * s.is_lora)
        per_mb_comm = passes * _collective_s(all_16bit, n, c, eff, calls, ag)
        per_mb_comm += _collective_s(s.trainable * half, n, c, eff, 1 + s.trainable / 2e8, ag)
        zero3_hooks = passes * calls * eff.zero3_module_overhead_s
    hidden = eff.grad_overlap * min(per_mb_comm, bwd_gpu + (fwd.gpu_s if s.zero == 3 else 0.0))
    exposed_mb = per_mb_comm - hidden

    # --- optimizer and offload ---------------------------------------------------------------
    local = s.trainable / (n if (case.engine == "deepspeed") else 1)
    opt_bytes = {0: 36.0, 1: 30.0, 2: 30.0, 3: 30.0}[s.zero] if case.engine == "deepspeed" else 28.0
    optimizer, offload = 0.0, 0.0
    h2d = c.pcie_bps * eff.h2d_eff
    if s.offload_optimizer:
        cpu_rate = c.cpu_cores * eff.cpu_adam_gparams_per_core_s * 1e9 / n  # ranks share the host's cores
        offload = local * 4.0 / h2d + local / cpu_rate + local * half / h2d
    else:
        optimizer = local * opt_bytes / (c.memory_bps * eff.optimizer_eff)
    if s.offload_params:
        offload += accum * (2 + case.recompute) * all_16bit / n / h2d

    return StepTime(
        forward=accum * fwd.gpu_s,
        backward=accum * bwd_gpu,
        optimizer=optimizer,
        communication=accum * exposed_mb + per_step_comm,
        offload=offload,
        overhead=accum * (overhead_mb + zero3_hooks) + eff.step_overhead_s,
    )


def tokens_per_step(s: TrainSetup) -> int:
    return s.case.micro_batch_size * s.case.seq_len * s.case.grad_accum * s.ranks
