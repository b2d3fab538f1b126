"""The DeepSpeed JSON for a training case. Pure function; DeepSpeed's own parser validates it in tests.

Bucket sizes are written explicitly (not "auto") because the memory model counts them
(``models.memory``): what we predict is what this config allocates.
"""

from __future__ import annotations

from typing import Any

from knowledge.schema import GPUSpec, TrainCase
from models.memory import ALLGATHER_BUCKET, REDUCE_BUCKET, STAGE3_MAX_LIVE, STAGE3_PERSISTENCE_THRESHOLD, STAGE3_PREFETCH


ADAM_BETAS = (0.9, 0.95)


def learning_rate(case: TrainCase) -> float:
    """The usual peak learning rate: 1e-4 for full training, 2e-4 for LoRA/QLoRA adapters."""
    return 1e-4 if case.method == "full" else 2e-4


def deepspeed_config(case: TrainCase, gpu: GPUSpec, gpus: int) -> dict[str, Any]:
    """A DeepSpeed config dict for ``case`` on ``gpus`` GPUs of type ``gpu``."""
    precision = "bf16" if gpu.supports_bf16 else "fp16"
    cfg: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": case.micro_batch_size,
        "gradient_accumulation_steps": case.grad_accum,
        "train_batch_size": case.micro_batch_size * case.grad_accum * gpus,
        "gradient_clipping": 1.0,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
        "optimizer": {
            "type": "AdamW",
            "params": {"lr": learning_rate(case), "betas": list(ADAM_BETAS), "eps": 1e-8, "weight_decay": 0.0},
        },
        precision: {"enabled": True} if precision == "bf16" else {"enabled": True, "loss_scale": 0, "initial_scale_power": 16},
    }
    zero: dict[str, Any] = {"stage": case.zero_stage}
    if case.zero_stage in (1, 2):
        zero.update(
            overlap_comm=True, contiguous_gradients=True, reduce_scatter=True,
            reduce_bucket_size=REDUCE_BUCKET, allgather_bucket_size=ALLGATHER_BUCKET,
        )
    elif case.zero_stage == 3:
        zero.update(
            overlap_comm=True, contiguous_gradients=True, reduce_bucket_size=REDUCE_BUCKET,
            stage3_prefetch_bucket_size=STAGE3_PREFETCH, stage3_max_live_parameters=STAGE3_MAX_LIVE,
            stage3_max_reuse_distance=STAGE3_MAX_LIVE, stage3_param_persistence_threshold=STAGE3_PERSISTENCE_THRESHOLD,
            stage3_gather_16bit_weights_on_model_save=True,
        )
    # ZeRO++ and MiCS (ZeRO-3 across nodes): DeepSpeed's own keys, written only when on
    if case.zero_quantized_weights:
        zero["zero_quantized_weights"] = True
    if case.zero_hpz_partition_size > 1:
        zero["zero_hpz_partition_size"] = case.zero_hpz_partition_size
    if case.zero_quantized_gradients:
        zero["zero_quantized_gradients"] = True
    if case.mics_shard_size:
        zero["mics_shard_size"] = case.mics_shard_size
        # a shard group spanning nodes gathers inside each node first, then across
        zero["mics_hierarchical_params_gather"] = case.mics_shard_size > gpus // max(case.nodes, 1)
    if case.offload != "none":
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": case.offload_pin_memory}
    if case.offload == "optimizer+params":
        zero["offload_param"] = {"device": "cpu", "pin_memory": case.offload_pin_memory}
    cfg["zero_optimization"] = zero
    if case.grad_accum_dtype:
        cfg["data_types"] = {"grad_accum_dtype": case.grad_accum_dtype}
    if case.recompute:
        # Hugging Face models checkpoint through model.gradient_checkpointing_enable(); this block
        # configures DeepSpeed's own checkpointing for models that call deepspeed.checkpointing.
        cfg["activation_checkpointing"] = {"partition_activations": False, "contiguous_memory_optimization": False}
    return cfg


def launch_command(case: TrainCase, gpus: int, config_path: str = "ds_config.json", script: str = "train.py") -> str:
    """The line that starts the job on one node with DeepSpeed's launcher."""
    return f"deepspeed --num_gpus {gpus} {script} --deepspeed {config_path}"


# what the Hugging Face Trainer sets itself from TrainingArguments (transformers' HfTrainerDeepSpeedConfig):
# written as "auto" so the Trainer fills them, instead of raising on a mismatch
_TRAINER_OWNED = ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size", "gradient_clipping")
_TRAINER_OWNED_OPTIMIZER = ("lr", "betas", "eps", "weight_decay")


def hf_trainer_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` for ``TrainingArguments(deepspeed=...)``: every value the Trainer owns is ``"auto"`` (batch sizes,
    accumulation, clipping, the optimizer's hyper-parameters, the precision switch, any scheduler's values); the
    ZeRO settings the memory model counts (stage, offload, buckets) stay explicit."""
    out = {k: v for k, v in cfg.items()}
    for key in _TRAINER_OWNED:
        if key in out:
            out[key] = "auto"
    if "optimizer" in out:
        params = dict(out["optimizer"].get("params", {}))
        params.update({k: "auto" for k in _TRAINER_OWNED_OPTIMIZER})
        out["optimizer"] = {**out["optimizer"], "params": params}
    if "scheduler" in out:
        out["scheduler"] = {**out["scheduler"], "params": {k: "auto" for k in out["scheduler"].get("params", {})}}
    for precision in ("bf16", "fp16"):
        if precision in out:
            out[precision] = {**out[precision], "enabled": "auto"}
    return out
