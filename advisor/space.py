"""The one definition of the configuration space: which knob values exist and which combinations mean something.

The search (``advisor.search``: the exhaustive enumeration and the Optuna suggestions), the explorer's
controls (``app.sidebar``) and ``advisor deepspeed-config`` all read it, so a combination the search
would never try is also one the other two refuse or grey out, with the same reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from models.setup import zero2_accumulates_on_host

TASKS = ("pretrain", "finetune", "serve")
TRAIN_TASKS = ("pretrain", "finetune")
METHODS = ("full", "lora", "qlora")
ENGINES = ("deepspeed", "pytorch")
ZERO_STAGES = (0, 1, 2, 3)
OFFLOADS = ("none", "optimizer", "optimizer+params")
QUANTIZATIONS = ("none", "int8", "nf4")
MICRO_BATCHES = (1, 2, 4, 8, 16, 32, 64)
WEIGHT_BITS = (16, 8, 4)
KV_BITS = (16, 8)

LABELS = {  # how people say each value (the explorer's and the tables' words)
    "full": "full fine-tune / training", "lora": "LoRA", "qlora": "QLoRA (4-bit NF4 base)",
    "deepspeed": "DeepSpeed", "pytorch": "plain PyTorch (DDP)",
    "none": "none", "optimizer": "optimizer states to CPU", "optimizer+params": "optimizer states and parameters to CPU",
    "int8": "int8 (LLM.int8)", "nf4": "NF4 4-bit",
}


def methods_for(task: str) -> tuple[str, ...]:
    """Pre-training trains every weight from scratch; adapters over a random frozen base mean nothing."""
    return ("full",) if task == "pretrain" else METHODS


def zero_stages_for(engine: str) -> tuple[int, ...]:
    return ZERO_STAGES if engine == "deepspeed" else (0,)


def offloads_for(engine: str, zero_stage: int) -> tuple[str, ...]:
    """ZeRO-Offload moves optimizer states with stage 1-3, and parameters too with stage 3 only."""
    if engine != "deepspeed" or zero_stage == 0:
        return ("none",)
    return OFFLOADS if zero_stage == 3 else ("none", "optimizer")


def quantizations_for(method: str) -> tuple[str, ...]:
    """QLoRA is the NF4 base by definition; LoRA may freeze its base in int8; full training trains 16-bit weights."""
    return {"full": ("none",), "lora": ("none", "int8"), "qlora": ("nf4",)}[method]


MICS_REMOVED = ("MiCS is no longer in DeepSpeed (0.19.8's config parser rejects mics_shard_size, "
                "deepspeedai/DeepSpeed#8489): predicted for comparison only, no DeepSpeed config is written")


def invalid_reason(task: str, method: str, engine: str = "deepspeed", zero_stage: int = 0, offload: str = "none",
                   quantization: str | None = None) -> str | None:
    """Why a combination is outside the space (one line), or None when it is valid."""
    if task not in TRAIN_TASKS:
        return f"task {task!r} is serving: it has no training configuration (use `advisor recommend --task serve`)"
    if method not in methods_for(task):
        return f"method {method!r} with task {task!r}: pre-training trains every weight, so only method 'full' applies"
    if zero_stage not in zero_stages_for(engine):
        return f"zero_stage {zero_stage} needs engine deepspeed (engine {engine!r} is plain data parallel)"
    if offload not in offloads_for(engine, zero_stage):
        valid = "zero_stage 3" if offload == "optimizer+params" else "zero_stage 1-3"
        return f"offload {offload!r} needs engine deepspeed with {valid}, got zero_stage {zero_stage}"
    quant = quantization if quantization is not None else ("nf4" if method == "qlora" else "none")
    if quant not in quantizations_for(method):
        return f"quantization {quant!r} with method {method!r}: valid {', '.join(quantizations_for(method))}"
    return None


def comm_variants(engine: str, zero_stage: int, offload: str, nodes: int = 1, per_node: int = 1) -> dict[str, dict[str, Any]]:
    """ZeRO-3's answers to a slow network, by name: ZeRO++'s qwZ, hpZ and qgZ in every combination. Searched
    across several nodes only, with ZeRO-3 and no offload; on one node there is no network for them to spare.
    MiCS is predicted (``mics_shard_size``) but never searched: DeepSpeed 0.19.8, the version the advisor
    targets, no longer has it (its config parser rejects ``mics_shard_size``), so no pick could run."""
    if nodes <= 1 or engine != "deepspeed" or zero_stage != 3 or offload != "none":
        return {"": {}}
    out: dict[str, dict[str, Any]] = {"": {}}
    hpz_sizes = (1, per_node) if per_node > 1 else (1,)
    for qw, hpz, qg in itertools.product((False, True), hpz_sizes, (False, True)):
        name = "+".join(n for n, on in (("qwZ", qw), ("hpZ", hpz > 1), ("qgZ", qg)) if on)
        if name:
            out[name] = dict(zero_quantized_weights=qw, zero_hpz_partition_size=hpz, zero_quantized_gradients=qg)
    return out


def accum_dtype_variants(knobs: dict[str, Any], grad_accum: int) -> list[dict[str, Any]]:
    """ZeRO-2 with the optimizer offloaded, over several micro-batches a step, runs two ways: 16-bit accumulation
    (DeepSpeed's default) adds each micro-batch's gradients to host buffers through the GPU, fp32 accumulation keeps an
    fp32 gradient partition on the GPU instead (``models.setup.TrainSetup.zero2_accumulates_on_host``: Llama-3.2-1B on
    one H200, four micro-batches, 6.0 against 4.0 s a step); elsewhere the default only."""
    offloaded = knobs.get("engine") == "deepspeed" and knobs.get("offload", "none") != "none"
    if zero2_accumulates_on_host(knobs.get("zero_stage", 0), offloaded, grad_accum, None):
        return [{}, {"grad_accum_dtype": "fp32"}]
    return [{}]


def training_knobs(task: str, methods: tuple[str, ...] | None = None, engines: tuple[str, ...] = ("deepspeed",),
                   nodes: int = 1, per_node: int = 1) -> Iterator[dict[str, Any]]:
    """Every valid (method, engine, zero, offload, quantization, recompute, flash) combination, micro-batch
    aside; across several nodes also ZeRO++ and MiCS (``comm_variants``)."""
    for method in methods or methods_for(task):
        for engine in engines:
            for zero in zero_stages_for(engine):
                for offload, quant, recompute, flash in itertools.product(
                    offloads_for(engine, zero), quantizations_for(method), (False, True), (True, False)
                ):
                    for variant in comm_variants(engine, zero, offload, nodes, per_node).values():
                        yield dict(method=method, engine=engine, zero_stage=zero, offload=offload, quantization=quant,
                                   recompute=recompute, flash_attention=flash, **variant)
