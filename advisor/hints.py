"""How to launch a pick on this box: environment, the launcher line, the Hugging Face / PEFT / bitsandbytes
settings, and an accelerate config beside the DeepSpeed JSON. Each hint follows from the case and the platform.
"""

from __future__ import annotations

from pathlib import Path

from knowledge.schema import PlatformSpec, TrainCase


def launch_env(case: TrainCase, platform: PlatformSpec, gpus: int) -> dict[str, str]:
    """Environment variables the launch needs on this server.

    - ``NCCL_P2P_DISABLE=1`` where the GPUs cannot talk peer to peer over PCIe (GeForce 40-series: the
      driver refuses P2P and NCCL's P2P transport hangs or fails instead of falling back).
    - ``OMP_NUM_THREADS`` = cores per rank when the optimizer runs on the CPU (ZeRO-Offload's CPU Adam).
    """
    env: dict[str, str] = {}
    if gpus > 1 and not platform.gpu.p2p_over_pcie and platform.interconnect in ("pcie", "pcie-no-p2p"):
        env["NCCL_P2P_DISABLE"] = "1"
    if case.offload != "none":
        env["OMP_NUM_THREADS"] = str(max(platform.host.cpu_cores // max(gpus, 1), 1))
    return env


def env_prefix(env: dict[str, str]) -> str:
    return "".join(f"{k}={v} " for k, v in sorted(env.items()))


def launch_line(case: TrainCase, platform: PlatformSpec, gpus: int, config_path: Path | str, script: str = "train.py") -> str:
    """The command that starts the job on one node, with the environment it needs."""
    env = env_prefix(launch_env(case, platform, gpus))
    if case.engine == "pytorch":
        return f"{env}torchrun --nproc_per_node {gpus} {script}  # plain PyTorch{' + PEFT' if case.method != 'full' else ''}, no DeepSpeed config"
    return f"{env}deepspeed --num_gpus {gpus} {script} --deepspeed {config_path}"


def accelerate_line(case: TrainCase, platform: PlatformSpec, gpus: int, accelerate_path: Path | str, script: str = "train.py") -> str:
    return f"{env_prefix(launch_env(case, platform, gpus))}accelerate launch --config_file {accelerate_path} {script}"


def hf_usage(case: TrainCase, config_path: Path | str, bf16: bool = True) -> list[str]:
    """The Hugging Face steps for this configuration, in order (transformers, PEFT, bitsandbytes)."""
    dtype = "torch.bfloat16" if bf16 else "torch.float16"
    steps: list[str] = []
    zero3 = case.engine == "deepspeed" and case.zero_stage == 3
    if case.method == "qlora":
        storage = f", bnb_4bit_quant_storage={dtype}" if zero3 else ""
        steps.append("load the base with BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4', "
                     f"bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype={dtype}{storage}) and torch_dtype={dtype}")
        if zero3:
            steps.append(f"ZeRO-3 shards the 4-bit weights only when they are stored as {dtype} (bnb_4bit_quant_storage) "
                         "and every other weight has that dtype too, so skip peft.prepare_model_for_kbit_training (it upcasts to fp32)")
    elif case.quantization == "int8":
        steps.append("load the base with BitsAndBytesConfig(load_in_8bit=True)")
    elif case.method == "qlora" or case.quantization == "nf4":
        steps.append("load the base with BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4')")
    if case.method in ("lora", "qlora"):
        if case.quantization != "none" and not zero3:
            steps.append(f"call peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing={case.recompute})")
        steps.append(f"wrap it with peft.get_peft_model(model, LoraConfig(r={case.lora_rank}, target_modules={case.lora_targets}))")
    if case.recompute:
        steps.append("call model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={'use_reentrant': False})" if zero3
                     else "call model.gradient_checkpointing_enable()")
    steps.append(f"attn_implementation='{'sdpa' if case.flash_attention else 'eager'}'")
    if case.engine == "deepspeed":
        steps.append(f"pass TrainingArguments(deepspeed='{config_path}', {'bf16' if bf16 else 'fp16'}=True)")
    return steps


def accelerate_config(case: TrainCase, gpus: int, config_path: Path | str, nodes: int = 1) -> str:
    """An accelerate config (YAML) that points at the DeepSpeed JSON: ``accelerate launch --config_file``.
    ``gpus`` counts every node's; across several nodes each one launches with its own machine rank."""
    zero3 = case.zero_stage == 3
    lines = [
        "# written by `advisor`: accelerate launch --config_file THIS_FILE train.py",
        "compute_environment: LOCAL_MACHINE",
        "distributed_type: DEEPSPEED",
        "deepspeed_config:",
        f"  deepspeed_config_file: {Path(config_path).resolve()}",
        f"  zero3_init_flag: {'true' if zero3 else 'false'}",
    ]
    if nodes > 1:
        from advisor.multinode import accelerate_fields

        lines += ["  deepspeed_multinode_launcher: standard", "main_training_function: main"]
        lines += accelerate_fields(nodes, gpus // nodes) + ["use_cpu: false"]
        return "\n".join(lines) + "\n"
    lines += [
        "machine_rank: 0",
        "main_training_function: main",
        "num_machines: 1",
        f"num_processes: {gpus}",
        "rdzv_backend: static",
        "same_network: true",
        "use_cpu: false",
    ]
    return "\n".join(lines) + "\n"
