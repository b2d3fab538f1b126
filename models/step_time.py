"""Time of one training step, phase by phase, in seconds. Pure functions.

Each operator is a roofline term (FLOPs over a compute ceiling, bytes over a bandwidth) divided by a named
efficiency from ``knowledge.efficiency``; its backward is counted operator by operator (activation
gradients always, weight gradients only where weights train), so a frozen base costs what it costs.
The CPU launches every kernel: forward and backward each take the larger of their GPU time and their
dispatch time (kernels launched x the per-kernel cost, plus DeepSpeed's hooks and PEFT's adapters),
which is what makes micro-batch 1, recomputation and LoRA right. The offloaded optimizer runs DeepSpeed's
CPU Adam on the threads each rank gets.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.bnb_host import BNB_HOST_COST
from knowledge.efficiency import Efficiencies
from knowledge.traces import Part
from models.architecture import linears
from models.operators import training_operators
from models.roofline import Ceilings
from models.setup import TrainSetup
from models.zero_comm import ZERO3_GATHER_PASSES, _collective_s, zero3_hook_passes, zero_communication  # noqa: F401  (_collective_s: its old home)

# Kernels an eager Hugging Face decoder layer launches in forward (2 RMSNorms of ~8 kernels, RoPE ~10,
# 7 projections, SDPA, SwiGLU 2, residuals 2, views/copies ~4); backward's CPU cost is this times
# ``backward_dispatch_factor`` (autograd runs one node per op). The trace of a Llama layer (full training, SDPA)
# counts 45 forward and 77 backward kernels (RoPE's four slices each launch two in backward: knowledge.op_launches).
KERNELS_PER_LAYER_FWD = 45
KERNELS_PER_LAYER_BWD = 77
KERNELS_EAGER_ATTENTION = 6
KERNELS_PER_QUANT_LINEAR = 2  # LLM.int8()'s split per call (NF4's whole host cost: knowledge.bnb_host)
KERNELS_HEAD = 20  # embedding, final norm, LM head, the loss's upcast, log-softmax and NLL
MODULES_PER_LAYER = 9  # ZeRO-3 fetches: 7 projections + 2 norms (+ 2 per LoRA target: A and B)
# DeepSpeed's ZeRO-3 hooks every module a forward calls, parameters or not (_register_hooks_recursively): beyond the
# modules it fetches, a layer's parameter-free ones (the decoder layer, its attention, its MLP, its activation) and, per
# LoRA target, PEFT's layer and its dropout (lora.Linear calls base_layer, lora_dropout, lora_A and lora_B)
HOOKED_CONTAINERS_PER_LAYER = 4
HOOKED_PEFT_CALLS_PER_TARGET = 2
TENSORS_PER_LAYER = 9  # trainable tensors of a fully trained layer: 7 weights + 2 norm scales


@dataclass(frozen=True)
class StepTime:
    forward: float  # per optimizer step (all micro-batches), GPU time
    backward: float
    optimizer: float
    communication: float  # exposed
    offload: float
    overhead: float  # CPU-bound time not hidden by GPU work, plus per-step bookkeeping
    forward_cpu_exposed: float = 0.0  # the part of ``overhead`` spent in forward (for the phase fit)
    backward_cpu_exposed: float = 0.0
    forward_offload: float = 0.0  # the part of ``offload`` inside the forward (ZeRO-3's parameter copies)
    backward_offload: float = 0.0  # ... inside the backward (gradients to the host, the backward's parameter copies)
    step_communication: float = 0.0  # the part of ``communication`` inside DeepSpeed's optimizer step (its all-gather
    # of the updated weights: timed in the step's phase, where it had been counted in the backward's)

    @property
    def total(self) -> float:
        return self.forward + self.backward + self.optimizer + self.communication + self.offload + self.overhead

    @property
    def phases(self) -> tuple[float, float, float]:
        """(forward, backward, optimizer) as the measurement harness times them (synchronised phases)."""
        fwd = self.forward + self.forward_cpu_exposed + self.forward_offload
        bwd = self.backward + self.backward_cpu_exposed + self.communication - self.step_communication + self.backward_offload
        rest = self.overhead - self.forward_cpu_exposed - self.backward_cpu_exposed + self.step_communication
        return fwd, bwd, self.optimizer + self.offload - self.forward_offload - self.backward_offload + rest


@dataclass(frozen=True)
class _Pass:
    gpu_s: float  # forward GPU time, one micro-batch
    backward_gpu_s: float  # backward GPU time (recomputation not included)
    kernels: float  # forward kernels launched, in a Llama layer's kind (what kernel_time_s is fitted per)
    # the forward kernels whose backward runs: those of ``TrainSetup.backward_layers`` and the head
    backward_kernels: float
    extra_fwd: float  # traced kernels beyond a Llama layer's: forward
    extra_bwd: float  # ... and backward (a recomputed forward's included)


def _pass(s: TrainSetup, eff: Efficiencies, c: Ceilings, layers_only: bool = False) -> _Pass:
    """One forward (and its backward) of one micro-batch on one rank: the operators of ``models.operators``."""
    a, case = s.arch, s.case
    ops = training_operators(s, eff, c)
    layer = [op for op in ops if op.per_layer]
    fwd = a.num_hidden_layers * sum(op.time_s for op in layer)
    bwd = a.num_hidden_layers * sum(op.backward_s for op in layer)
    # int8's split launches; an NF4 projection's host cost is measured whole instead (bnb_host_calls)
    quant_linears = _quantized_linears_per_layer(s) * (case.quantization == "int8")
    hand_layer = KERNELS_PER_LAYER_FWD + (KERNELS_EAGER_ATTENTION if s.eager_attention else 0)
    extra_fwd = extra_bwd = extra_head_fwd = extra_head_bwd = 0.0
    if s.trace is not None:
        # CPU time: a Llama layer's kernels at the fitted per-Llama-kernel cost (kernel_time_s, its modules' Python
        # included), an adapter at what the fit learned per PEFT module, and every kernel the model's own layer
        # launches beyond a Llama layer's (q/k norms, soft-capping, routers, a scan's loop body per chunk) apart, forward
        # and backward (``extra_kernel_cpu_s``), backward at the trace's own counts (a scan's loop body: Qwen3.5's
        # delta-net launches 2.5 backward kernels per forward one; routing under no_grad launches none)
        t, head = s.trace, s.trace.head()
        base = t.layer.kernels_fwd - t.layer.adapter_kernels_fwd
        extra_fwd, extra_bwd = _extra_kernels(t.layer, base - hand_layer, case.seq_len)
        per_layer = min(base, hand_layer) + eff.lora_kernels_per_target * s.adapted_modules_per_layer
        rest = min(head.kernels_fwd, KERNELS_HEAD)
        extra_head_fwd, extra_head_bwd = _extra_kernels(head, head.kernels_fwd - KERNELS_HEAD, case.seq_len)
    else:
        per_layer = hand_layer + eff.lora_kernels_per_target * s.adapted_modules_per_layer
        rest = KERNELS_HEAD
    kernels = (per_layer + KERNELS_PER_QUANT_LINEAR * quant_linears) * a.num_hidden_layers
    backward_kernels = kernels * s.backward_layers / a.num_hidden_layers
    extra_fwd, extra_bwd = extra_fwd * a.num_hidden_layers, extra_bwd * s.backward_layers
    if not layers_only:
        fwd += sum(op.time_s for op in ops if not op.per_layer)
        bwd += sum(op.backward_s for op in ops if not op.per_layer)
        kernels += rest
        backward_kernels += rest
        extra_fwd, extra_bwd = extra_fwd + extra_head_fwd, extra_bwd + extra_head_bwd
    return _Pass(fwd, bwd, kernels, backward_kernels, extra_fwd, extra_bwd)


def _extra_kernels(part: Part, beyond: float, seq: int) -> tuple[float, float]:
    """(forward, backward) kernels of a traced part beyond the hand count's (``beyond`` of its forward ones, none if
    negative), a scan's loop body per token included; backward at the part's own backward/forward ratio outside the
    loop (a recomputed forward included: a Llama layer's 77/45 under full training, fewer where forward ops run
    under no_grad, as routing does)."""
    beyond = max(beyond, 0.0)
    per_forward = part.kernels_bwd / part.kernels_fwd if part.kernels_fwd > 0 else 0.0
    return beyond + part.kernels_seq_fwd * seq, beyond * per_forward + part.kernels_seq_bwd * seq


def extra_kernel_cpu_s(eff: Efficiencies) -> float:
    """CPU seconds of one traced kernel beyond a Llama layer's (forward or backward): ``extra_kernel_ratio`` of what a
    Llama layer's CPU time comes to per traced kernel (kernel_time_s per forward kernel, backward_dispatch_factor more
    for its backward, over its 45 + 77 traced kernels), so it follows the fitted cost and the host's speed."""
    per_traced = eff.kernel_time_s * KERNELS_PER_LAYER_FWD * (1 + eff.backward_dispatch_factor) / (
        KERNELS_PER_LAYER_FWD + KERNELS_PER_LAYER_BWD)
    return eff.extra_kernel_ratio * per_traced


def _quantized_linears_per_layer(s: TrainSetup) -> float:
    """Projections per layer that weight quantization replaces (each adds a dequantize or an int8 split)."""
    if s.trace is None:
        return 7.0
    return sum(g.calls for g in s.trace.layer.gemms if g.quantizable and g.phase == "fwd")


def soft_max(a: float, b: float, p: float = 4.0) -> float:
    """max(a, b) with a smooth corner: GPU work and CPU dispatch overlap imperfectly near equality."""
    return (a**p + b**p) ** (1 / p) if a > 0 or b > 0 else 0.0


# DeepSpeed CPU Adam with more OpenMP threads than the node has cores (ranks x threads > cores: the DeepSpeed
# launcher leaves OMP_NUM_THREADS unset, so every rank's OpenMP takes every core): each rank gets its share of the
# cores at this fraction of the rate it has with that many threads of its own. Measured on the one-H200 host (16
# cores, DeepSpeedCPUAdam on 100M parameters per process; knowledge/measurements/own/logs/
# h200x1-host-contention-2026-11-26.jsonl): 2, 4 and 8 processes of 16 threads ran at 0.82, 0.72 and 0.93 of the
# rate of 2 x 8, 4 x 4 and 8 x 2 threads (mean 0.82).
OVERSUBSCRIBED_OMP_EFF = 0.82


def launch_omp_threads(cores: int, ranks_on_node: int) -> int:
    """OMP_NUM_THREADS advisor's launch line sets for ZeRO-Offload (advisor.hints.launch_env): the node's cores
    shared out over its ranks."""
    return max(cores // max(ranks_on_node, 1), 1)


def omp_threads(s: TrainSetup) -> int:
    """OpenMP threads each rank's CPU Adam is started with: the case's, else what advisor's launch line sets."""
    return s.case.omp_threads or launch_omp_threads(s.platform.host.cpu_cores, s.per_node)


# ZeRO-3 with only the optimizer offloaded does more host work a step than ZeRO-2's offload (its optimizer phase ran
# 1.8-2.2x ZeRO-2's on one H200 with 16 threads and 1.8x with one; on two H200s, one thread a rank, 1.5x), work that
# stops speeding up past a few threads where CPU Adam keeps scaling: priced as CPU Adam's time on at most this many
# threads (knowledge/measurements/own/h200{,x2}-zero3-offload-optimizer-2026-11-28.jsonl; with the whole extra
# scaling like CPU Adam, the one-thread cases came out 18-31% slow)
ZERO3_OFFLOAD_EXTRA_THREADS = 4


def offloaded_step_s(s: TrainSetup, local: float, threads: int, eff: Efficiencies, c: Ceilings) -> float:
    """Host seconds of DeepSpeed's offloaded optimizer step over ``local`` parameters: CPU Adam on ``threads`` threads
    (every rank of the node stepping) and the step's work beyond its kernel (``offload_step_overhead``)."""
    return local / (cpu_adam_gparams_per_s(threads, eff, c, s.per_node) * 1e9) * eff.offload_step_overhead


def zero3_offload_extra_s(s: TrainSetup, local: float, eff: Efficiencies, c: Ceilings) -> float:
    """Seconds ZeRO-3's offloaded optimizer step spends beyond ZeRO-2's (parameters left on the GPU): the fitted
    multiple of the offloaded step's time on at most ``ZERO3_OFFLOAD_EXTRA_THREADS`` threads."""
    threads = min(omp_threads(s), ZERO3_OFFLOAD_EXTRA_THREADS)
    return offloaded_step_s(s, local, threads, eff, c) * (eff.zero3_offload_opt_overhead - 1.0)


def effective_threads(threads: int, ranks_on_node: int, cores: int) -> float:
    """Threads' worth of cores one rank's CPU Adam gets: its own threads while the node's ranks fit its cores,
    else its share of the cores, time-shared (``OVERSUBSCRIBED_OMP_EFF``)."""
    ranks = max(ranks_on_node, 1)
    if threads * ranks <= cores:
        return float(threads)
    return max(cores / ranks, 1.0) * OVERSUBSCRIBED_OMP_EFF  # here threads > cores / ranks


def cpu_adam_gparams_per_s(threads: int, eff: Efficiencies, c: Ceilings, ranks_on_node: int = 1) -> float:
    """CPU Adam rate of one rank started with ``threads`` OpenMP threads, 1 / (1 / (threads x per-thread rate) +
    ranks / node cap): linear in threads until the host's memory bandwidth caps it, and that cap is the node's,
    shared by every rank of the node stepping at once; threads beyond the node's cores time-share them
    (``effective_threads``). Where the host's rate was measured (catalog or profile), the cap is what makes the
    curve pass through that measurement; where ``advisor probe --links`` ran as many concurrent processes as
    the node's ranks with these threads, their measured per-process rate is used.
    Checked on the 2xH200 host (knowledge/measurements/own/logs/h200x2-links-2026-11-23.*): one thread 0.775
    Gparam/s and the node's 5.56 on 32 threads give 1 / (1/0.775 + 2/5.56) = 0.61 per process for two
    processes; measured 0.612."""
    for procs, procs_threads, per_proc in c.cpu_adam_concurrent:
        if procs == ranks_on_node and procs_threads == threads and ranks_on_node > 1:
            return per_proc
    r1 = eff.cpu_adam_thread_gparams_s
    cap = eff.cpu_adam_bandwidth_gparams_s
    if c.cpu_adam_gparams_s and c.cpu_adam_threads:
        linear = c.cpu_adam_threads * r1
        cap = 1.0 / (1.0 / c.cpu_adam_gparams_s - 1.0 / linear) if c.cpu_adam_gparams_s < 0.95 * linear else 20.0 * linear
    t = effective_threads(threads, ranks_on_node, c.cpu_cores)
    return 1.0 / (1.0 / (t * r1) + max(ranks_on_node, 1) / cap)


def bnb_host_calls(s: TrainSetup) -> tuple[float, float]:
    """(forward, backward) CPU time that bitsandbytes' 4-bit projections of one micro-batch add beyond the bf16
    product the trace stands in for each, in bf16 projection calls (``knowledge.bnb_host``, measured by
    ``probes.bnb_host``): every NF4 projection (QLoRA's base and the study's Q pre-training), and PEFT's LoRA on those
    it adapts. Anatomy 38's host-bound QLoRA ran 1.37-1.47x LoRA of the same model, predicted 1.10x without it."""
    if s.case.quantization != "nf4":
        return 0.0, 0.0
    cost = BNB_HOST_COST
    per_layer = _quantized_linears_per_layer(s)
    wrapped = min(s.adapted_modules_per_layer, per_layer)
    return (s.arch.num_hidden_layers * (per_layer * cost.nf4_fwd_calls + wrapped * cost.qlora_wrapper_fwd_calls),
            s.backward_layers * (per_layer * cost.nf4_bwd_calls + wrapped * cost.qlora_wrapper_bwd_calls))


def _dispatch(s: TrainSetup, eff: Efficiencies, full: _Pass, layers: _Pass) -> tuple[float, float]:
    """(forward, backward) CPU seconds of one micro-batch: kernel launches, bitsandbytes' 4-bit projections,
    DeepSpeed's hooks and DDP's reducer."""
    case = s.case
    scale = eff.deepspeed_dispatch_factor if case.engine == "deepspeed" else 1.0
    per_kernel = eff.kernel_time_s * scale
    extra = extra_kernel_cpu_s(eff) * scale
    # a bf16 projection call costs the host one traced kernel each way, the unit bitsandbytes' extra is measured in
    bnb_fwd, bnb_bwd = bnb_host_calls(s)
    fwd = (full.kernels + bnb_fwd) * per_kernel + full.extra_fwd * extra
    bwd = (full.backward_kernels + bnb_bwd) * per_kernel * eff.backward_dispatch_factor + full.extra_bwd * extra
    if case.recompute:  # the checkpointed forward runs again (its extra kernels: in extra_bwd)
        bwd += (layers.kernels + bnb_fwd) * per_kernel * eff.recompute_dispatch_factor
    if case.engine == "deepspeed" and s.zero in (1, 2):
        bwd += trainable_tensors(s) * eff.zero12_hook_s
    if case.engine == "pytorch" and s.ranks > 1:  # DDP's hooks copy only in the backward that all-reduces (no_sync)
        bwd += trainable_tensors(s) * eff.ddp_hook_s / case.grad_accum
    return fwd, bwd


def ranks_contend(s: TrainSetup, eff: Efficiencies) -> float:
    """How much longer a rank's host work of a micro-batch (dispatch and hooks) takes beside the node's other ranks
    (``node_ranks_host_factor``): 1 for a node's only rank."""
    return eff.node_ranks_host_factor if s.per_node > 1 else 1.0


def trainable_tensors(s: TrainSetup) -> float:
    """Trainable tensors of the decoder layers (DeepSpeed's per-tensor hooks and step loops run once per tensor). The
    hand count's full training of a quantized base trains the layer's norms only: its projections are frozen 4- or
    8-bit weights, as the trace of the model's own code counts them (Qwen3-4B: 4 a layer, 11 unquantized). The study's
    Q pre-training of Llama-2-7B on one H200 spent 0.014 s in its optimizer phase, where 288 tensors' loops said 0.05
    (own/h200-study-quant-2026-11-29)."""
    if s.trace is not None:
        per_layer = s.trace.params.tensors_trainable_per_layer
    elif s.is_lora:
        per_layer = 2 * s.adapted_modules_per_layer
    elif s.case.quantization != "none":
        per_layer = TENSORS_PER_LAYER - _quantized_linears_per_layer(s)
    else:
        per_layer = TENSORS_PER_LAYER
    return per_layer * s.arch.num_hidden_layers


def training_step_time(s: TrainSetup, eff: Efficiencies, c: Ceilings) -> StepTime:
    case, n, accum = s.case, s.ranks, s.case.grad_accum
    full = _pass(s, eff, c)
    layers = _pass(s, eff, c, layers_only=True)
    # a traced recomputation already ran its forward again inside backward
    bwd_gpu = full.backward_gpu_s + (layers.gpu_s if case.recompute and s.trace is None else 0.0)
    fwd_cpu, bwd_cpu = _dispatch(s, eff, full, layers)

    # --- communication ----------------------------------------------------------------------
    zero3_hooks = 0.0
    fetched = s.trace.params.modules_per_layer if s.trace is not None else MODULES_PER_LAYER + 2 * s.adapted_modules_per_layer
    comm = zero_communication(s, eff, c, s.arch.num_hidden_layers * fetched)
    per_mb_comm, per_step_comm = comm.per_micro_batch_s, comm.per_step_s
    if case.engine == "deepspeed" and s.zero == 3:
        passes = zero3_hook_passes(case.recompute)
        hooked = fetched + HOOKED_CONTAINERS_PER_LAYER + HOOKED_PEFT_CALLS_PER_TARGET * s.adapted_modules_per_layer
        zero3_hooks = passes * s.arch.num_hidden_layers * hooked * eff.zero3_module_overhead_s
        bwd_cpu += zero3_hooks * (passes - 1) / passes
        fwd_cpu += zero3_hooks / passes
    contend = ranks_contend(s, eff)  # the node's other ranks slow this one's host work
    fwd_cpu, bwd_cpu = fwd_cpu * contend, bwd_cpu * contend
    # ZeRO-3's gathers sit on the critical path (DeepSpeed fetches a module's weights as the module runs): unhidden,
    # with two gathers (zero_comm), DeepSpeed's inter-node ZeRO-3 sweep (24 x 16 V100, 18B) comes out within 4-11% of
    # each measured ratio and 3% of its TFLOP/s at 100 Gb/s (hidden like ZeRO-1/2's reduce-scatters, with three gathers:
    # -12 to -23%, +22%); the choice was made looking at that sweep, so it is no held-out test of it. The study's
    # servers left out whole moved from 28/52/147% to 28/47/142% (A800 / RTX 4090 / RTX 3090).
    hidden = (0.0 if s.zero == 3 else eff.grad_overlap) * min(per_mb_comm, bwd_gpu)
    exposed_mb = per_mb_comm - hidden

    # micro-batch: per phase, GPU work and the CPU's dispatch overlap; the CPU side shows when it dominates
    fwd_exposed = soft_max(full.gpu_s, fwd_cpu) - full.gpu_s
    bwd_exposed = soft_max(bwd_gpu, bwd_cpu) - bwd_gpu

    # --- optimizer and offload ---------------------------------------------------------------
    half = s.half_bytes
    all_16bit = (s.trainable + s.frozen_16bit) * half
    # the parameters this rank's optimizer steps: split over the ranks, except ZeRO-0's default optimizer (whole)
    split = case.engine == "deepspeed" and (s.zero > 0 or case.grad_accum_dtype == "fp32")
    local = s.trainable / (s.shard_ranks if split else 1)
    opt_bytes = {0: 36.0, 1: 30.0, 2: 30.0, 3: 30.0}[s.zero] if case.engine == "deepspeed" else 28.0
    optimizer, offload, fwd_offload, bwd_offload = 0.0, 0.0, 0.0, 0.0
    # every rank of the node copies at once: ``pcie_bps`` is each GPU's share of the uplinks and DRAM; what the
    # optimizer moves through pageable memory (``pin_memory`` false: gradients down, ZeRO-1/2's updated weights up) goes
    # through the host's staging memcpy instead, synchronously (nothing of it hides behind backward). ZeRO-3's fetches of
    # offloaded parameters do not slow down: its forward took the same pinned or not (0.26-0.39 s against 0.29,
    # Llama-3.2-3B on one H200, grid h200-study-offload-batch)
    pinned = case.offload_pin_memory
    h2d = pinned_copy_bps(eff, c)
    staged = staged_copy_bps(s, eff, c)
    overlap = eff.grad_overlap if pinned else 0.0
    if s.offload_optimizer:
        cpu = offloaded_step_s(s, local, omp_threads(s), eff, c)
        if s.zero == 3 and not s.offload_params:
            cpu += zero3_offload_extra_s(s, local, eff, c)
        # gradients stream to the host inside the backward (DeepSpeed copies each reduced bucket to the host
        # partition), partly hidden behind it (grad_overlap): the harness times the exposed part there, 0.42 s of a
        # Llama-3.2-3B ZeRO-2 step whatever CPU Adam's threads (grid h200-omp-threads). The updated 16-bit weights
        # return in the step, except where the parameters live on the host (ZeRO-3's parameter offload: fetched at the
        # next forward)
        grads_d2h = offload_grad_copy_bytes(s) * local / staged
        bwd_offload = grads_d2h * (1 - overlap)
        offload = cpu + bwd_offload + (0.0 if s.offload_params else local * half / staged)
    else:
        optimizer = local * opt_bytes / (c.memory_bps * eff.optimizer_eff)
    if s.offload_params:
        # ZeRO-3 parameter offload: every fetch (forward, backward) first copies the rank's 16-bit partition
        # from host memory, then all-gathers it (``zero_communication``)
        fetch = accum * all_16bit / n / h2d
        fwd_offload = fetch
        bwd_offload += (ZERO3_GATHER_PASSES - 1) * fetch
        offload += ZERO3_GATHER_PASSES * fetch

    # DeepSpeed's bf16 / ZeRO optimizer step leaves the GPU idle for a time that grows with the trainable parameters
    # of the rank (gradient norm, copies between the 16-bit and fp32 partitions) and with its trainable tensors
    # (Python loops over the rank's parameters: what a LoRA step, of few parameters in many tensors, shows). ZeRO-3
    # partitions every tensor over the ranks, so each rank loops over all of them: its optimizer phases ran 1.5-2.3x
    # what Adam's bytes alone predicted (0.07-0.29 ms per tensor beyond them, full training and LoRA, one H100 and two
    # H200s), until this term covered it too
    ds_step = 0.0
    if case.engine == "deepspeed" and (s.zero in (0, 1, 2) or s.zero == 3 and not s.offload_optimizer):
        tensors = trainable_tensors(s) / (n if s.zero in (1, 2) else 1)
        ds_step = local * eff.ds_step_param_s + tensors * eff.ds_step_tensor_s

    return StepTime(
        forward=accum * full.gpu_s,
        backward=accum * bwd_gpu,
        optimizer=optimizer,
        communication=accum * exposed_mb + per_step_comm,
        offload=offload,
        overhead=accum * (fwd_exposed + bwd_exposed) + eff.step_overhead_s + ds_step,
        forward_cpu_exposed=accum * fwd_exposed,
        backward_cpu_exposed=accum * bwd_exposed,
        forward_offload=fwd_offload,
        backward_offload=bwd_offload,
        step_communication=comm.in_step_s,
    )


def offload_grad_copy_bytes(s: TrainSetup) -> float:
    """Bytes per parameter of the rank's partition that its offloaded optimizer's gradients move between the GPU and
    the host in a step, as DeepSpeed 0.19.8 moves them. ZeRO-1/2 copy the fp32 gradient partition down once, at the
    boundary, and ZeRO-2 under 16-bit accumulation also takes every micro-batch's 16-bit partition through the host
    (``TrainSetup.zero2_accumulates_on_host``). ZeRO-3 copies every micro-batch's gradient partition into its host
    buffer and back to the GPU to accumulate there (``stage3.partition_grads``), and at the boundary the fp32 partition
    down for CPU Adam (``_offload_grad_partition_at_boundary``). Llama-3.2-3B on one H200, pageable: the backward
    took 2.3 s beyond the pinned run's at one micro-batch a step (8 B a parameter at 11 GB/s) and 5.8 s at four
    (20 B, 11 GB/s), grid h200-study-offload-batch; the model's 4 B a micro-batch left its one-micro-batch steps 12-21%
    fast."""
    if not s.offload_optimizer:
        return 0.0
    accum = s.case.grad_accum
    if s.zero == 3:
        return accum * 2 * s.grad_accum_bytes + 4.0
    return 4.0 + (accum * 2 * s.half_bytes if s.zero2_accumulates_on_host else 0.0)


def pinned_copy_bps(eff: Efficiencies, c: Ceilings) -> float:
    """A rank's host<->device copy rate from pinned memory: its share of the uplinks (``pcie_bps``) at the fitted
    efficiency of DeepSpeed's copies."""
    return c.pcie_bps * eff.h2d_eff


def staged_copy_bps(s: TrainSetup, eff: Efficiencies, c: Ceilings) -> float:
    """A rank's rate for the optimizer's offload copies: the link's share when its buffers are pinned; with
    ``pin_memory`` false the host's staged memcpy, one rate for the node that its ranks share (one rank 10.6 GB/s, two
    ranks 5 each, on the H200 hosts), never above the link."""
    h2d = pinned_copy_bps(eff, c)
    return h2d if s.case.offload_pin_memory else min(h2d, eff.pageable_copy_node_gbs * 1e9 / s.per_node)


def tokens_per_step(s: TrainSetup) -> int:
    return s.case.micro_batch_size * s.case.seq_len * s.case.grad_accum * s.ranks


def model_flops_per_step(s: TrainSetup) -> float:
    """Model FLOPs of one optimizer step on one rank (MFU's numerator): 6·N per token for trained weights,
    4·N for a frozen base (no weight gradients), plus attention (12·layers·q-width·seq per token, the
    PaLM appendix B convention); recomputation not counted. N = parameters that multiply activations."""
    a, case = s.arch, s.case
    # the embedding only looks up (a tied one still multiplies as the LM head); a token multiplies only the experts
    # routed to it (top-k of them): the others' weights count no FLOPs (MoE MFU from all experts passed 75%)
    if s.trace is not None:  # what its own code multiplies: latent attention's and shared experts' products included
        n_mult = s.trace.forward_gemm_flops_per_token() / 2.0
    else:
        idle_experts = a.num_hidden_layers * sum(lin.params * (1 - lin.tokens_fraction) for lin in linears(a))
        n_mult = s.params.total - (0 if a.tie_word_embeddings else s.params.embedding) - idle_experts
    per_token = (6.0 if case.method == "full" and case.quantization == "none" else 4.0) * n_mult
    per_token += 12.0 * a.num_hidden_layers * a.num_attention_heads * a.head_size * case.seq_len
    return per_token * case.micro_batch_size * case.seq_len * case.grad_accum
