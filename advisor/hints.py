"""How to launch a pick on this box: environment, the launcher line, the Hugging Face / PEFT / bitsandbytes
settings, and an accelerate config beside the DeepSpeed JSON. Each hint follows from the case and the platform.
"""

from __future__ import annotations

from pathlib import Path

from knowledge.schema import PlatformSpec, TrainCase
from models.step_time import launch_omp_threads


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
        env["OMP_NUM_THREADS"] = str(case.omp_threads or launch_omp_threads(platform.host.cpu_cores, gpus))
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
    # the attention kernel is chosen when the model is loaded, so it comes first; PEFT wraps the loaded model
    steps: list[str] = [f"load the model (AutoModelForCausalLM.from_pretrained) with attn_implementation="
                        f"'{'sdpa' if case.flash_attention else 'eager'}'"]
    zero3 = case.engine == "deepspeed" and case.zero_stage == 3
    if case.method == "qlora":
        storage = f", bnb_4bit_quant_storage={dtype}" if zero3 else ""
        steps.append("quantize it as it loads: quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4', "
                     f"bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype={dtype}{storage}) and torch_dtype={dtype}")
        if zero3:
            steps.append(f"ZeRO-3 shards the 4-bit weights only when they are stored as {dtype} (bnb_4bit_quant_storage) "
                         "and every other weight has that dtype too, so skip peft.prepare_model_for_kbit_training (it upcasts to fp32)")
    elif case.quantization == "int8":
        steps.append("quantize it as it loads: quantization_config=BitsAndBytesConfig(load_in_8bit=True)")
    elif case.method == "qlora" or case.quantization == "nf4":
        steps.append("quantize it as it loads: quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4')")
    if case.method in ("lora", "qlora"):
        if case.quantization != "none" and not zero3:
            steps.append(f"call peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing={case.recompute})")
        steps.append(f"wrap it with peft.get_peft_model(model, LoraConfig(r={case.lora_rank}, target_modules={case.lora_targets}))")
    steps.append(f"train with Trainer(model, {training_arguments_text(case, config_path, bf16)}, ...)")
    return steps


def hf_config_path(config_path: Path | str) -> Path:
    """Where the Hugging Face Trainer's DeepSpeed JSON goes: beside the plain one, ``ds_config_hf.json``."""
    p = Path(config_path)
    return p.with_name(p.stem + "_hf" + p.suffix)


def accelerate_config_path(config_path: Path | str) -> Path:
    """Where the accelerate config goes: beside the plain DeepSpeed JSON and named after it (``ds_config_accelerate.yaml``),
    so a second config written into the same folder never rewrites the first one's (it points at its own JSON)."""
    p = Path(config_path)
    return p.with_name(p.stem + "_accelerate.yaml")


def training_arguments(case: TrainCase, config_path: Path | str, bf16: bool = True) -> dict:
    """The ``TrainingArguments`` keywords of this pick: micro-batch, accumulation, precision, recomputation,
    learning rate (and the plain JSON's Adam betas), and ``deepspeed=`` the Trainer's JSON (values it owns "auto")."""
    from models.deepspeed_config import ADAM_BETAS, learning_rate

    args: dict = {}
    if case.engine == "deepspeed":
        args["deepspeed"] = str(hf_config_path(config_path))
    args.update(per_device_train_batch_size=case.micro_batch_size, gradient_accumulation_steps=case.grad_accum)
    args["bf16" if bf16 else "fp16"] = True
    if case.recompute:
        args["gradient_checkpointing"] = True
        if case.engine == "deepspeed" and case.zero_stage == 3:
            args["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    args.update(learning_rate=learning_rate(case), adam_beta2=ADAM_BETAS[1], max_grad_norm=1.0)
    return args


def training_arguments_text(case: TrainCase, config_path: Path | str, bf16: bool = True) -> str:
    """'TrainingArguments(output_dir='out', deepspeed='advisor-out/ds_config_hf.json', ...)' as Python."""
    args = training_arguments(case, config_path, bf16)
    return "TrainingArguments(output_dir='out', " + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


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


def write_configs(config_path: Path, cfg: dict, case: TrainCase, gpus: int, nodes: int = 1) -> dict[str, Path]:
    """Write the plain DeepSpeed JSON (explicit numbers, for ``deepspeed train.py``), the Hugging Face Trainer's
    (``ds_config_hf.json``: what the Trainer sets is "auto") and the accelerate config (pointing at the plain
    one), atomically; one node: without the hostfile an earlier several-node run left there. Returns their paths by kind."""
    from knowledge.store import atomic_write_json, atomic_write_text
    from models.deepspeed_config import hf_trainer_config

    paths = {"deepspeed": Path(config_path), "hf_trainer": hf_config_path(config_path),
             "accelerate": accelerate_config_path(config_path)}
    atomic_write_json(paths["deepspeed"], cfg)
    atomic_write_json(paths["hf_trainer"], hf_trainer_config(cfg))
    atomic_write_text(paths["accelerate"], accelerate_config(case, gpus, config_path, nodes))
    if nodes == 1:  # after the new configs are whole: an earlier several-node run's hostfile would contradict them
        from advisor.multinode import remove_stale_launch_files

        remove_stale_launch_files(Path(config_path).parent)
    return paths


def wrote_lines(paths: dict[str, Path]) -> list[str]:
    """What each written file is for, one line each."""
    return [f"  {paths['deepspeed']}: plain DeepSpeed, explicit numbers (deepspeed train.py --deepspeed …)",
            f"  {paths['hf_trainer']}: for the Hugging Face Trainer's deepspeed= argument "
            "(what the Trainer sets is \"auto\")",
            f"  {paths['accelerate']}: accelerate launch --config_file …, points at the plain JSON"]


def usage_lines(case: TrainCase, config_path: Path | str, bf16: bool = True) -> list[str]:
    """The Hugging Face steps as a numbered list, the Trainer's arguments as Python to copy, one per line."""
    steps = hf_usage(case, config_path, bf16)[:-1]
    lines = ["With Hugging Face (transformers, PEFT):"] + [f"  {i}. {s}" for i, s in enumerate(steps, 1)]
    lines.append(f"  {len(steps) + 1}. train with Trainer(model, args=TrainingArguments(")
    lines += [f"         {k}={v!r}," for k, v in {"output_dir": "out", **training_arguments(case, config_path, bf16)}.items()]
    lines.append("     ), ...)")
    return lines
