"""One line of why a configuration ranks where it does, and what would fit when nothing does."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from knowledge.catalog import GPUS_PER_SERVER_MAX
from knowledge.errors import AdvisorError
from knowledge.schema import TrainCase, TrainPrediction

PHASES = ("forward", "backward", "optimizer", "communication", "offload", "overhead")


def describe(case: TrainCase, zero_label: str | None = None) -> str:
    """'LoRA · ZeRO-2 · offload opt · recompute · flash · mb 4×8' — the knobs that were chosen.

    ``zero_label`` replaces 'ZeRO-2' for a row that stands for several equivalent stages ('ZeRO 0/1/2').
    """
    parts = [{"full": "full", "lora": "LoRA", "qlora": "QLoRA"}[case.method]]
    if case.quantization == "int8":
        parts.append("int8 base")
    if case.engine == "pytorch":
        parts.append("PyTorch DDP")
    else:
        parts.append(zero_label or f"ZeRO-{case.zero_stage}")
    zeropp = [n for n, on in (("qwZ", case.zero_quantized_weights), ("hpZ", case.zero_hpz_partition_size > 1),
                              ("qgZ", case.zero_quantized_gradients)) if on]
    if zeropp:
        parts.append("ZeRO++ " + "+".join(zeropp))
    if case.mics_shard_size:
        parts.append(f"MiCS {case.mics_shard_size}")
    if case.offload != "none":
        parts.append({"optimizer": "offload opt", "optimizer+params": "offload opt+params"}[case.offload]
                     + ("" if case.offload_pin_memory else " pageable"))
    if case.recompute:
        parts.append("recompute")
    parts.append("flash" if case.flash_attention else "eager attn")
    parts.append(f"mb {case.micro_batch_size}×{case.grad_accum}" + (" fp32 accum" if case.grad_accum_dtype == "fp32" else ""))
    return " · ".join(parts)


def _phases(p: TrainPrediction) -> dict[str, float]:
    b = p.breakdown
    return {} if b is None else {k: getattr(b, f"{k}_s") for k in PHASES}


def why(rank: int, p: TrainPrediction, best: TrainPrediction, case: TrainCase) -> str:
    """The dominant phase, the memory margin, and for lower ranks what it costs against #1."""
    text = _why(rank, p, best, case)
    return (text if "ranked below" in text else text + tight(p)) + swapped(p)


def swap_gib(p) -> float | None:
    """GiB a prediction pages into swap to fit (None where it stays in RAM or says nothing of it)."""
    return getattr(p, "host_swap_gib", None) or None


def swapped(p) -> str:
    """'; 12 GiB of host memory in swap (paged every step where the step sweeps it)' when a pick only fits by spilling
    into swap: the step time prices the paging of what every step reads beyond RAM at the swap prior
    (``models.training.swap_paging_s``), which no lent host could measure."""
    spill = swap_gib(p)
    return (f"; {spill:,.0f} GiB of host memory in swap (what every step reads beyond RAM is paged each step, "
            "at an assumed swap speed)") if spill else ""


def _dominant(p: TrainPrediction) -> tuple[str, float]:
    """The phase taking the most time, and its share of the step."""
    ph = _phases(p)
    if not ph:
        return "forward", 1.0
    top, t = max(ph.items(), key=lambda kv: kv[1])
    return top, t / (sum(ph.values()) or 1.0)


def _why(rank: int, p: TrainPrediction, best: TrainPrediction, case: TrainCase | None = None) -> str:
    top, share = _dominant(p)
    bound = {"forward": "compute-bound", "backward": "compute-bound", "optimizer": "optimizer-bound",
             "communication": "link-bound", "offload": "PCIe/CPU-bound (offload)", "overhead": "launch/CPU-bound"}[top]
    margin = (p.capacity_gib or 0) - p.peak_mem_gib
    head = f"{bound} ({top} {share:.0%})"
    gap = _gap(rank, p, best)
    if gap is None:
        return f"fastest that fits; {head}; {margin:.1f} GiB spare per GPU"
    if abs(gap) < TIE:
        return f"ties #1; {head}; {margin:.1f} GiB spare"
    if gap < 0:
        return f"{-gap:.1%} faster than #1 but {ranked_below(p, case)}; {head}"
    return f"{gap:.0%} slower than #1, mostly {_worst_phase(p, best)} time per token; {head}"


def p_oom(p) -> float | None:
    """The prediction's probability of running out of memory, when it carries one (None: not predicted)."""
    value = getattr(p, "p_oom", None)
    return float(value) if value is not None else None


def ranked_below(p, case: TrainCase | None = None, short: bool = False) -> str:
    """Why a faster pick ranks below #1, each rule of ``Candidate.rank_score`` and ``safe_order`` that applies:
    'ranked below #1: 95% of GPU memory, p_oom 7%', 'ranked below #1: ZeRO++ quantizes (2% asked)'."""
    from advisor.search import LOSSY_COMM_PENALTY, RISKY_P_OOM, SWAP_PENALTY, TIGHT_MARGIN, memory_margin

    reasons = []
    spare, which = memory_margin(p)
    risk = p_oom(p)
    margin = (f"{1 - spare:.0%} of {host_label(p) if which == 'host' else 'GPU memory'}"
              + (f", p_oom {risk:.0%}" if risk is not None else ""))
    if spare < TIGHT_MARGIN or (risk is not None and risk > RISKY_P_OOM):
        reasons.append(margin)
    if case is not None and (case.zero_quantized_weights or case.zero_quantized_gradients):
        reasons.append(f"ZeRO++ needs +{LOSSY_COMM_PENALTY:.0%}" if short else
                       f"ZeRO++ quantizes what training sees: it must be {LOSSY_COMM_PENALTY:.0%} faster")
    if swap_gib(p):
        reasons.append(f"swap needs +{SWAP_PENALTY:.0%}" if short else f"it pages host memory: it must be {SWAP_PENALTY:.0%} faster")
    if not reasons:  # none of the rules by itself: the memory margin is what is left
        reasons.append(margin)
    return "ranked below #1: " + "; ".join(reasons)


TIE = 0.005  # within half a percent of #1's throughput is a tie


def _gap(rank: int, p: TrainPrediction, best: TrainPrediction) -> float | None:
    """How much slower than #1 a pick is (a fraction); None for #1 itself."""
    return None if rank == 1 else 1 - p.tokens_per_s / best.tokens_per_s


def _worst_phase(p: TrainPrediction, best: TrainPrediction) -> str:
    """The phase whose time per token grows most against #1 (per token, so a smaller micro-batch is
    charged for what it really costs)."""
    mine = {k: v / (p.step_time_s * p.tokens_per_s) for k, v in _phases(p).items()}
    theirs = {k: v / (best.step_time_s * best.tokens_per_s) for k, v in _phases(best).items()}
    return max(PHASES, key=lambda k: mine.get(k, 0) - theirs.get(k, 0))


BOUND_SHORT = {"forward": "compute", "backward": "compute", "optimizer": "optimizer", "communication": "link",
               "offload": "offload", "overhead": "CPU/launch"}


def tight(p: TrainPrediction) -> str:
    """'; tight: host RAM 98% full' when a pick is within 8% of running out of memory, else ''."""
    from advisor.search import TIGHT_MARGIN, memory_margin

    spare, which = memory_margin(p)
    return f"; tight: {host_label(p) if which == 'host' else 'GPU memory'} {1 - spare:.0%} full" if spare < TIGHT_MARGIN else ""


def host_label(p) -> str:
    """'host RAM', or 'host RAM + swap' where the verdict counted the node's swap."""
    return "host RAM + swap" if swap_gib(p) else "host RAM"


def short_why(rank: int, p: TrainPrediction, best: TrainPrediction, case: TrainCase | None = None) -> str:
    """A few words for a narrow table: 'fastest; compute' or '−12%: link'; 'swaps' when it pages host memory."""
    text = _short_why(rank, p, best, case)
    return (text if "ranked below" in text else text + tight(p)) + ("; swaps" if swap_gib(p) else "")


def _short_why(rank: int, p: TrainPrediction, best: TrainPrediction, case: TrainCase | None = None) -> str:
    top = _dominant(p)[0]
    gap = _gap(rank, p, best)
    if gap is None:
        return f"fastest; {BOUND_SHORT[top]}-bound"
    if abs(gap) < TIE:
        return f"ties #1; {BOUND_SHORT[top]}-bound"
    if gap < 0:
        return f"+{-gap:.1%} but {ranked_below(p, case, short=True)}"
    return f"−{gap:.0%}: more {_worst_phase(p, best)}"


def alternatives(spec, evaluator_factory) -> list[dict[str, Any]]:
    """When nothing fits, try the usual levers one at a time and report those that would fit.

    ``evaluator_factory(spec)`` builds an Evaluator for a modified spec; errors (e.g. an impossible
    GPU count) just drop that option.
    """
    from advisor.search import Evaluator

    ideas: list[tuple[str, Any]] = []
    ev0: Evaluator = evaluator_factory(spec)
    count = ev0.platform.count
    gpu_id = ev0.platform.gpu.id
    if spec.nodes > 1:  # already several servers: more of them
        for k in (spec.nodes * 2, spec.nodes * 4):
            ideas.append((f"{k} nodes ({k * count} GPUs)", replace(spec, nodes=k, gpus=None)))
    else:  # a bigger server while one holds them (HGX boards: 8), else more servers of this one
        for k in (2, 4):
            n = count * k
            if n <= GPUS_PER_SERVER_MAX:
                ideas.append((f"{n} GPUs ({gpu_id}x{n})", replace(spec, hardware=f"{gpu_id}x{n}", gpus=None)))
            else:
                ideas.append((f"{k} nodes ({n} GPUs): --nodes {k}", replace(spec, nodes=k, gpus=None)))
    if spec.task == "finetune" and "qlora" not in spec.method_choices():
        ideas.append(("QLoRA (4-bit base)", replace(spec, methods=("qlora",))))
    if spec.seq_len > 256:
        ideas.append((f"sequence length {spec.seq_len // 2}", replace(spec, seq_len=spec.seq_len // 2)))
    if spec.global_batch:
        ideas.append(("no fixed global batch (gradient accumulation chosen freely)", replace(spec, global_batch=None)))
    out = []
    for label, s in ideas:
        try:
            ev = evaluator_factory(s)
        except AdvisorError:
            continue
        best = ev.best()
        if best:
            out.append({"change": label, "configuration": describe(best.case), "tokens_per_s": best.prediction.tokens_per_s,
                        "peak_mem_gib": best.prediction.peak_mem_gib})
    return out


def smallest_footprint(ev) -> tuple[TrainCase, float] | None:
    """The configuration of the current space that overfills its tighter limit least (GPU memory, or host RAM and
    swap where offload binds), and its GPU memory (GiB). By GPU memory alone, a job bound by host RAM was told to
    offload parameters too (260 GiB of host) where offloading the optimizer alone needs 235."""
    from advisor.search import configurations
    from models.training import host_capacity_gib

    host_cap = host_capacity_gib(ev.cal)
    scored = []  # ((how far it overfills its tighter limit, GPU GiB), case)
    for knobs in configurations(ev.spec, ev.gpus):
        case = ev.case(knobs)
        try:
            gib, host = ev.footprint_gib(case)
        except AdvisorError:
            continue
        scored.append(((max(gib / ev.limit_gib, host / host_cap if host_cap > 0 else 0.0), gib), case))
    if not scored:
        return None
    (_, gib), case = min(scored, key=lambda x: x[0])
    return case, gib
