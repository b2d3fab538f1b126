"""`advisor deepspeed-config`: a configuration as a DeepSpeed JSON that DeepSpeed's own parser accepts.

It refuses what would not run: a combination outside the configuration space (``advisor.space``:
pre-training with LoRA, offload without ZeRO, a serving task…) and a configuration the advisor predicts
will not fit in GPU memory or host RAM, naming the GiB needed and available (``--force`` writes it anyway).
Beside the JSON it writes an accelerate config that points at it.
"""

from __future__ import annotations

import contextlib
import io
import logging
from pathlib import Path
from typing import Optional

import typer

from advisor.output import check_writable, console, fail, fail_input, print_hanging, warn


def quiet_deepspeed_import():
    """Import DeepSpeed's config parser without its import-time log lines on stdout (they go nowhere)."""
    with contextlib.redirect_stdout(io.StringIO()):
        from deepspeed.runtime.config import DeepSpeedConfig
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    return DeepSpeedConfig


def validate_with_deepspeed(cfg: dict) -> str | None:
    """Run DeepSpeed's config parser on ``cfg``; the error in one line, or None when it is accepted.

    Without a distributed backend DeepSpeed assumes one rank, so the global batch (which it derives
    from micro-batch x accumulation x ranks) is left for it to compute. Nothing reaches stdout.
    """
    try:
        DeepSpeedConfig = quiet_deepspeed_import()
    except Exception as e:  # noqa: BLE001 - deepspeed missing or broken: say so, don't crash
        return f"deepspeed not importable ({type(e).__name__}); config not validated"
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            DeepSpeedConfig({k: v for k, v in cfg.items() if k != "train_batch_size"})
    except Exception as e:  # noqa: BLE001 - DeepSpeed raises assorted types for a bad config
        return " ".join(str(e).split())[:300]
    return None


SERVE_MESSAGE = ("DeepSpeed configs are for training (pretrain, finetune); for serving use "
                 "`advisor recommend --task serve`, which prints the engine's launch line (vLLM, SGLang, TensorRT-LLM)")


def _is_serve_case(text: str) -> bool:
    """Whether --case (inline JSON or a file) is a serving case, before its fields are checked: a serving case
    with training keys would otherwise be answered with an unknown-field error."""
    import json

    from advisor.cases import MAX_CASE_FILE_BYTES
    from knowledge.store import read_bounded_text

    try:
        obj = json.loads(text if text.strip().startswith("{") else read_bounded_text(text, MAX_CASE_FILE_BYTES, "case file"))
    except Exception:  # noqa: BLE001 - unreadable or not JSON: case_from_arg says why
        return False
    return isinstance(obj, dict) and obj.get("task") == "serve"


def _choice(value: str, valid: tuple, flag: str) -> str:
    """A choice option's value; one that is not a choice is a usage error (exit 2, as ``recommend`` gives it)."""
    from knowledge.errors import unknown

    if value not in valid:
        fail(str(unknown(f"{flag} value", value, valid)), code=2)
    return value


def deepspeed_config_cmd(
    context: typer.Context,
    case: Optional[str] = typer.Option(None, "--case", help="A contract training case (inline JSON or a file)."),
    hardware: str = typer.Option("h100x1", "--hardware", "-H", help="Platform id or platform file (see `advisor hardware`)."),
    task: str = typer.Option("finetune", "--task", "-t", help="pretrain or finetune."),
    model: str = typer.Option("7b", "--model", "-m", help="Catalog name, hub id, config.json path or inline JSON."),
    method: Optional[str] = typer.Option(None, "--method", help="full, lora, qlora (default: full for pretrain, lora for finetune)."),
    zero_stage: int = typer.Option(2, "--zero-stage", min=0, max=3, help="DeepSpeed ZeRO stage: 0 (data parallel), 1 optimizer, 2 + gradients, 3 + weights sharded over the GPUs."),
    offload: str = typer.Option("none", "--offload", help="none, optimizer (ZeRO 1-3), optimizer+params (ZeRO-3)."),
    quantization: Optional[str] = typer.Option(None, "--quantization", help="none or int8 for LoRA (nf4 is --method qlora)."),
    recompute: bool = typer.Option(False, "--recompute/--no-recompute", help="Activation recomputation (gradient checkpointing): less activation memory for one more forward pass."),
    flash_attention: bool = typer.Option(True, "--flash/--eager", help="Fused attention (default) or eager."),
    micro_batch_size: int = typer.Option(1, "--micro-batch-size", min=1, max=1 << 20, help="Sequences per GPU per forward pass (train_micro_batch_size_per_gpu)."),
    grad_accum: int = typer.Option(1, "--grad-accum", min=1, max=1 << 20, help="Micro-batches per optimizer step (gradient_accumulation_steps)."),
    seq_len: int = typer.Option(2048, "--seq-len", min=1, max=1 << 20, help="Tokens per sequence (decides the activation memory)."),
    lora_rank: int = typer.Option(64, "--lora-rank", min=1, max=1 << 16, help="LoRA / QLoRA adapter rank r (PEFT's LoraConfig(r=...))."),
    gpus: Optional[int] = typer.Option(None, "--gpus", min=1, max=1 << 16, help="GPUs in all (default: all of the platform, times --nodes)."),
    nodes: int = typer.Option(1, "--nodes", min=1, max=1 << 12, help="Identical servers joined by a network; a hostfile is written beside the JSON."),
    network: Optional[str] = typer.Option(None, "--network", help="With --nodes: the fabric, NAME[:NICs per node] (ib-ndr, eth-100, …)."),
    zeropp: str = typer.Option("", "--zeropp", help="ZeRO++ with ZeRO-3: any of qwZ,hpZ,qgZ (comma-separated; hpZ partitions within each node)."),
    host_ram_gib: Optional[float] = typer.Option(None, "--host-ram-gib", min=1.0, max=float(1 << 20), help="Host RAM of the server, GiB (overrides the platform's)."),
    cpu_cores: Optional[int] = typer.Option(None, "--cpu-cores", min=1, max=1 << 16, help="CPU cores of the server (overrides the platform's)."),
    out: Path = typer.Option(Path("ds_config.json"), "--out", help="Where to write the JSON (an accelerate config goes beside it)."),
    force: bool = typer.Option(False, "--force", help="Write it even when the advisor predicts it does not fit."),
) -> None:
    """Write the DeepSpeed JSON of a configuration (and an accelerate config beside it); say how to launch it."""
    from advisor import hints
    from advisor.cases import MalformedFile, case_from_arg, check_plausible, parse_case
    from advisor.predictor import Predictor
    from advisor.space import METHODS, OFFLOADS, QUANTIZATIONS, TASKS, invalid_reason
    from knowledge.catalog import oversized_server_note, resolve_platform, with_host
    from knowledge.errors import AdvisorError
    from knowledge.schema import TrainCase
    from models.deepspeed_config import deepspeed_config
    from models.setup import check_combination

    if task == "serve" or (case and _is_serve_case(case)):
        fail(SERVE_MESSAGE, code=2)
    try:
        if case:
            c = case_from_arg(case)
            if host_ram_gib is not None or cpu_cores is not None:
                c = c.model_copy(update={"hardware": with_host(c.hardware, host_ram_gib, cpu_cores)})
        else:
            _choice(task, TASKS, "--task")
            _choice(offload, OFFLOADS, "--offload")
            if method:
                _choice(method, METHODS, "--method")
            if quantization:
                _choice(quantization, QUANTIZATIONS, "--quantization")
            fields = dict(id="cli", hardware=with_host(hardware, host_ram_gib, cpu_cores), model=model, task=task,
                          zero_stage=zero_stage, offload=offload, recompute=recompute, flash_attention=flash_attention,
                          micro_batch_size=micro_batch_size, grad_accum=grad_accum, seq_len=seq_len, lora_rank=lora_rank, gpus=gpus)
            if nodes > 1:
                fields.update(nodes=nodes, network=network)
            elif network:
                fail("--network describes the network between nodes: give --nodes 2 or more")
            fields.update(_zeropp_fields(zeropp, resolve_platform(fields["hardware"]).count))
            if method:
                fields["method"] = method
            if quantization:
                fields["quantization"] = quantization
            c = parse_case(fields)
        if not isinstance(c, TrainCase):
            fail(SERVE_MESSAGE, code=2)
        if c.method == "full" and getattr(context.get_parameter_source("lora_rank"), "name", "") == "COMMANDLINE":
            warn("--lora-rank does not apply to --method full (every weight trains, no adapter): ignored")
        if c.engine != "deepspeed":
            fail("engine 'pytorch' runs without DeepSpeed; there is no config to write")
        reason = invalid_reason(c.task, c.method, c.engine, c.zero_stage, c.offload, c.quantization)
        if reason:
            fail(reason)
        if c.mics_shard_size:
            from advisor.space import MICS_REMOVED

            fail(MICS_REMOVED)
        check_combination(c)
        platform = resolve_platform(c.hardware, c.gpus, nodes=c.nodes)
        note = oversized_server_note(c.hardware, platform)
        if note:
            warn(note)
        check_plausible(c)
        pred = Predictor().predict(c)
    except MalformedFile as e:
        fail(str(e), code=2)
    except AdvisorError as e:
        fail_input(e)
    check_writable(out, "--out")
    n = c.gpus or platform.count * c.nodes
    if not pred.fits:
        detail = pred.why_not_fits or f"needs {pred.peak_mem_gib:.1f} GiB per GPU, {platform.gpu.memory_gib:.1f} GiB on each {platform.gpu.id}"
        if not force:
            fail(f"predicted not to fit on {platform.id}: {detail}; {_what_fits(c, platform.id)}, "
                 "--force writes this one anyway")
        warn(f"predicted not to fit ({detail}); written anyway because of --force")
    cfg = deepspeed_config(c, platform.gpu, n)
    problem = validate_with_deepspeed(cfg)
    if problem and problem.startswith("deepspeed not importable"):
        warn(problem)
    elif problem:
        fail(f"DeepSpeed rejects the generated config: {problem}")
    accel = hints.accelerate_config_path(out)
    try:
        written = hints.write_configs(out, cfg, c, n, c.nodes)
        if c.nodes > 1:
            from advisor import multinode

            env = hints.launch_env(c, platform, n // c.nodes)
            paths = multinode.write_launch_files(out.parent, c.nodes, n // c.nodes, env)
            lines = multinode.launch_lines(c.nodes, n // c.nodes, env, paths["hostfile"], out, accel)
    except OSError as e:
        fail(f"cannot write --out {str(out)!r}: {e.strerror or e}")
    console.print(f"wrote {out.resolve()} ({'validated by DeepSpeed' if not problem else 'not validated'}); "
                  f"predicted {pred.peak_mem_gib:.1f} GiB per GPU of {platform.gpu.memory_gib:.0f}, {pred.tokens_per_s:,.0f} tokens/s", highlight=False, soft_wrap=True)
    console.print(f"wrote {written['hf_trainer'].resolve()} (for the Hugging Face Trainer: what it sets is \"auto\")", highlight=False, soft_wrap=True)
    console.print(f"wrote {accel.resolve()} (accelerate, points at the plain JSON)", highlight=False, soft_wrap=True)
    if c.nodes > 1:
        console.print(f"wrote {paths['hostfile'].resolve()} (placeholder host names worker-N: put your nodes' names in)", highlight=False, soft_wrap=True)
        console.print(f"launch from the first node: {lines['deepspeed']}", highlight=False, soft_wrap=True)
        console.print(f"    or on every node: {lines['torchrun']}", highlight=False, soft_wrap=True)
        console.print(f"    or on every node: {lines['accelerate']} (RANK = 0 on worker-1, 1, 2, …)", highlight=False, soft_wrap=True)
    else:
        console.print(f"launch: {hints.launch_line(c, platform, n, out)}", highlight=False, soft_wrap=True)
        console.print(f"    or: {hints.accelerate_line(c, platform, n, accel)}", highlight=False, soft_wrap=True)
    for line in hints.usage_lines(c, out, platform.gpu.supports_bf16):
        print_hanging(line)


def _what_fits(c, platform_id: str) -> str:
    """Where to turn instead, true of this job: `advisor recommend`'s answer, found by the same enumeration it falls
    back on (``exhaustive_best``), or that nothing of the job fits. (Promising recommend "finds one that fits" when it
    then said nothing fits sent users in a circle.)"""
    from advisor.explain import describe
    from advisor.search import SearchSpec, exhaustive_best
    from knowledge.efficiency import load_efficiencies
    from knowledge.errors import AdvisorError

    spec = SearchSpec(hardware=c.hardware, model=c.model, task=c.task, gpus=c.gpus, seq_len=c.seq_len, lora_rank=c.lora_rank,
                      nodes=c.nodes, network=c.network, inter_node_gbps=c.inter_node_gbps)
    try:
        best = exhaustive_best(spec, load_efficiencies())
    except AdvisorError:  # the search cannot run this job: claim nothing about it
        return "`advisor recommend` searches the other configurations of this job"
    if best is None:
        return (f"no configuration of this job is predicted to fit on {platform_id} "
                "(`advisor recommend` names the leanest and what would fit)")
    return f"`advisor recommend` for this job finds one that fits ({describe(best.case)})"


def _zeropp_fields(text: str, per_node: int) -> dict:
    """--zeropp qwZ,hpZ,qgZ as case fields (hpZ: the secondary partition spans one node)."""
    from knowledge.errors import unknown

    names = {"qwz": "zero_quantized_weights", "hpz": "zero_hpz_partition_size", "qgz": "zero_quantized_gradients"}
    out: dict = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key = names.get(part.lower())
        if key is None:
            raise unknown("--zeropp part", part, ["qwZ", "hpZ", "qgZ"])
        out[key] = per_node if key == "zero_hpz_partition_size" else True
    return out


def register(app: typer.Typer) -> None:
    app.command("deepspeed-config")(deepspeed_config_cmd)
