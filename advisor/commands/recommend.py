"""`advisor recommend --hardware rtx4090x8 --task finetune --model 70b`: search, rank, write the config."""

from __future__ import annotations

import json
import math
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from advisor.output import check_writable, console, fail, fail_input, warn


class Task(str, Enum):
    pretrain = "pretrain"
    finetune = "finetune"
    serve = "serve"


class Objective(str, Enum):
    throughput = "throughput"
    headroom = "headroom"


class Sampler(str, Enum):
    auto = "auto"
    tpe = "tpe"
    brute = "brute"


# --help panels: the three required options stay in the first ("Options"), the rest by what they describe
JOB, HARDWARE, SERVING, SEARCH, OUTPUT = "Job", "Hardware", "Serving (--task serve)", "Search", "Output"

MAX_TOKENS = 1 << 20  # longer than any model's context
MAX_GLOBAL_BATCH = 1 << 20
MAX_TRIALS = 10_000
MAX_MS = 1e9  # a latency limit of 11 days is no limit
MAX_REQUESTS = 10_000_000


def _model_arg(model: str) -> str | dict:
    """A catalog name, a config.json path, or an inline JSON architecture."""
    if model.strip().startswith("{"):
        try:
            return json.loads(model)
        except (ValueError, RecursionError) as e:
            fail(f"--model is not valid JSON: {getattr(e, 'msg', type(e).__name__)}", code=2)
    return model


def recommend(
    context: typer.Context,
    hardware: str = typer.Option(..., "--hardware", "-H", help="Platform id: <gpu>x<count>[-pcie|-nvlink], e.g. rtx4090x8, a800x8, h100x1; or a platform file box.json (see `advisor hardware`)."),
    task: Task = typer.Option(..., "--task", "-t", help="pretrain, finetune or serve."),
    model: str = typer.Option(..., "--model", "-m", help="Catalog name (7b, llama3-8b, …; see `advisor models`), a hub id (Qwen/Qwen2.5-7B), a config.json path, or inline JSON."),
    seq_len: int = typer.Option(2048, "--seq-len", min=1, max=MAX_TOKENS, help="Tokens per training sequence (at most the model's context).", rich_help_panel=JOB),
    global_batch: Optional[int] = typer.Option(None, "--global-batch", min=1, max=MAX_GLOBAL_BATCH, help="Sequences per optimizer step over all GPUs (sets gradient accumulation).", rich_help_panel=JOB),
    global_batch_tokens: Optional[int] = typer.Option(None, "--global-batch-tokens", min=1, max=1 << 40, help="Tokens per optimizer step over all GPUs (a multiple of --seq-len; instead of --global-batch).", rich_help_panel=JOB),
    lora_rank: int = typer.Option(64, "--lora-rank", min=1, max=1 << 16, help="LoRA / QLoRA adapter rank r (PEFT's LoraConfig(r=...)); at most the model's hidden size.", rich_help_panel=JOB),
    method: Optional[str] = typer.Option(None, "--method", help="Training methods to search, comma-separated: full, lora, qlora (default: full for pretrain, all three for finetune).", rich_help_panel=JOB),
    lora_targets: Optional[str] = typer.Option(None, "--lora-targets", help="LoRA / QLoRA target modules, PEFT's target_modules: comma-separated names as the model's code calls them (qkv_proj,o_proj) or all-linear (default: q/k/v/o projections, or the model's own attention projections).", rich_help_panel=JOB),
    gpus: Optional[int] = typer.Option(None, "--gpus", min=1, max=1 << 16, help="GPUs to use (default: all of the platform, times --nodes; serve: the most tensor parallelism may use).", rich_help_panel=HARDWARE),
    nodes: int = typer.Option(1, "--nodes", min=1, max=1 << 12, help="Identical servers of --hardware joined by a network (training).", rich_help_panel=HARDWARE),
    network: Optional[str] = typer.Option(None, "--network", help="With --nodes: the fabric between them, NAME[:NICs per node]: ib-hdr, ib-ndr, ib-xdr, roce-400, efa-p5, eth-100 … (default: what such a server usually has; see `advisor hardware`).", rich_help_panel=HARDWARE),
    inter_node_gbps: Optional[float] = typer.Option(None, "--inter-node-gbps", min=0.001, max=1e6, help="With --nodes: each node's network, Gb/s one direction over all its NICs (overrides the fabric's).", rich_help_panel=HARDWARE),
    host_ram_gib: Optional[float] = typer.Option(None, "--host-ram-gib", min=1.0, max=float(1 << 20), help="Host RAM of each server, GiB (overrides the platform's).", rich_help_panel=HARDWARE),
    cpu_cores: Optional[int] = typer.Option(None, "--cpu-cores", min=1, max=1 << 16, help="CPU cores of each server (overrides the platform's).", rich_help_panel=HARDWARE),
    profile: Optional[str] = typer.Option(None, "--profile", help="Calibration profile from `advisor probe`: a path, or a name under ADVISOR_HOME/profiles or bundled (h100x1, h200x1, h200x2).", rich_help_panel=HARDWARE),
    engine: Optional[str] = typer.Option(None, "--engine", help="Training: deepspeed (default), pytorch, or both (comma-separated). Serve: vllm (default), sglang or trtllm: the engine named in the table and launch line.", rich_help_panel=SEARCH),
    objective: Objective = typer.Option(Objective.throughput, "--objective", help="throughput, or throughput within --headroom of free memory.", rich_help_panel=SEARCH),
    headroom: float = typer.Option(0.1, "--headroom", min=0.0, max=0.9, help="With --objective headroom: fraction of GPU memory to keep free.", rich_help_panel=SEARCH),
    sampler: Sampler = typer.Option(Sampler.auto, "--sampler", help="auto = exhaustive for small spaces, else TPE.", rich_help_panel=SEARCH),
    trials: Optional[int] = typer.Option(None, "--trials", min=1, max=MAX_TRIALS, help="Trials (default: the whole space, or 200 for TPE).", rich_help_panel=SEARCH),
    seed: int = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Sampler seed: same inputs, same answer.", rich_help_panel=SEARCH),
    storage: Optional[str] = typer.Option(None, "--storage", help="Optuna storage: a URL (sqlite:///study.db, postgresql://…), or 'sqlite' / NAME.db for a SQLite file under ADVISOR_HOME/studies; default in memory.", rich_help_panel=SEARCH),
    study_name: Optional[str] = typer.Option(None, "--study-name", help="Share one study between workers (default storage then: the SQLite file under ADVISOR_HOME/studies); a study serves one job.", rich_help_panel=SEARCH),
    prompt_len: int = typer.Option(512, "--prompt-len", min=1, max=MAX_TOKENS, help="serve: prompt tokens.", rich_help_panel=SERVING),
    output_len: int = typer.Option(256, "--output-len", min=1, max=MAX_TOKENS, help="serve: generated tokens.", rich_help_panel=SERVING),
    max_tpot_ms: Optional[float] = typer.Option(None, "--max-tpot-ms", max=MAX_MS, help="serve: limit on the mean time per output token, ms. TPOT = (request latency - TTFT) / (output tokens - 1), as vLLM's benchmark_serving defines it.", rich_help_panel=SERVING),
    max_ttft_ms: Optional[float] = typer.Option(None, "--max-ttft-ms", max=MAX_MS, help="serve: limit on the mean time to first token, ms. TTFT = time from a request's arrival to its first output token, queueing included.", rich_help_panel=SERVING),
    requests: Optional[int] = typer.Option(None, "--requests", min=1, max=MAX_REQUESTS, help="serve: the load: this many requests arriving at once (with --rate: how many arrive, default 1000). Without either, each batch arrives at once.", rich_help_panel=SERVING),
    rate: Optional[float] = typer.Option(None, "--rate", max=1e9, help="serve: the load: requests arriving per second (Poisson, fixed seed), spread over the replicas.", rich_help_panel=SERVING),
    weight_format: Optional[str] = typer.Option(None, "--weight-format", help="serve: weight formats to search, comma-separated: bf16, fp8, int8, int4 (default: those the GPU runs), bnb-int8, bnb-nf4 (bitsandbytes, only when named).", rich_help_panel=SERVING),
    top: int = typer.Option(5, "--top", min=1, max=100, help="How many configurations to list.", rich_help_panel=OUTPUT),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="Where the top pick's files are written: the DeepSpeed JSON (training, default advisor-out), serve.sh and serve.json (serve, only when given).", rich_help_panel=OUTPUT),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output.", rich_help_panel=OUTPUT),
    wide: bool = typer.Option(False, "--wide", help="All columns: step time, fits and the full why (default fits 80 columns).", rich_help_panel=OUTPUT),
) -> None:
    """Search the configuration space and rank what runs fastest and fits."""
    from knowledge.efficiency import load_efficiencies
    from knowledge.catalog import with_host
    from knowledge.errors import AdvisorError
    from knowledge.paths import default_storage_url, storage_url

    from advisor.cases import check_profile_matches, context_length, load_profile_checked
    from knowledge.catalog import oversized_server_note, resolve_model, resolve_platform

    for flag, value in (("--max-tpot-ms", max_tpot_ms), ("--max-ttft-ms", max_ttft_ms), ("--headroom", headroom),
                        ("--inter-node-gbps", inter_node_gbps), ("--rate", rate)):
        if value is not None and not math.isfinite(value):
            fail(f"{flag} must be a finite number, got {value!r}", code=2)
    for flag, value in (("--max-tpot-ms", max_tpot_ms), ("--max-ttft-ms", max_ttft_ms), ("--rate", rate)):
        if value is not None and value <= 0:
            fail(f"{flag} must be a positive number, got {value:g}", code=2)
    if engine is not None and not engine.strip():
        fail("--engine '' names no engine: leave --engine out for the default, or name one "
             f"({'vllm, sglang, trtllm' if task == Task.serve else 'deepspeed, pytorch'})", code=2)
    _note_ignored(context, task)
    if task == Task.serve:
        serve_engine, formats = _serve_choices(engine, weight_format)
    elif weight_format or rate is not None:
        fail("--weight-format and --rate are serving options: give --task serve", code=2)
    if study_name is not None and not (study_name.strip() and study_name.isprintable() and len(study_name) <= 200):
        fail(f"--study-name must be 1-200 printable characters, got {study_name[:40]!r}", code=2)
    confirm_hardware = hardware + _host_flags(host_ram_gib, cpu_cores)
    try:
        hardware = with_host(hardware, host_ram_gib, cpu_cores)
        storage = storage_url(storage)
        if study_name and storage is None:
            storage = default_storage_url()
        arch_model = _model_arg(model)
        if global_batch_tokens is not None:
            if global_batch is not None:
                raise AdvisorError("give --global-batch (sequences) or --global-batch-tokens, not both")
            if global_batch_tokens % seq_len:
                raise AdvisorError(f"--global-batch-tokens {global_batch_tokens} is not a multiple of --seq-len {seq_len}")
            global_batch = global_batch_tokens // seq_len
        if nodes > 1 and task == Task.serve:
            raise AdvisorError(f"--nodes {nodes}: serving across nodes is not modelled; recommend for one server")
        if (network or inter_node_gbps) and nodes == 1:
            raise AdvisorError("--network and --inter-node-gbps describe the network between nodes: give --nodes 2 or more")
        if network:
            from knowledge.fabrics import parse_network

            parse_network(network)
        # serving's --gpus is checked where its placements are (one server: no --nodes to offer)
        platform = resolve_platform(hardware, None if task == Task.serve else gpus, nodes=nodes)
        note = oversized_server_note(hardware, platform)
        if note:
            warn(note)
        arch = resolve_model(arch_model)
        prof = load_profile_checked(profile) if profile else None
        check_profile_matches(prof, platform)
        ctx = context_length(arch)
        eff = load_efficiencies()
        if task == Task.serve:
            from advisor.serve_recommend import recommend_serve

            if ctx is not None and prompt_len + output_len > ctx:
                raise AdvisorError(f"--prompt-len {prompt_len} + --output-len {output_len} exceeds the {ctx}-token context of {arch.name}")
            if out_dir is not None:
                check_writable(out_dir, "--out-dir", folder=True)
                check_writable(out_dir / "serve.sh", "--out-dir")
            rec = recommend_serve(hardware, arch_model, prof, top=top, prompt_len=prompt_len, output_len=output_len,
                                  engine=serve_engine, weight_formats=formats, max_tpot_ms=max_tpot_ms,
                                  max_ttft_ms=max_ttft_ms, requests=requests, rate_per_s=rate, gpus=gpus, as_json=as_json,
                                  wide=wide, out_dir=out_dir)
            if rec["nothing_fits"]:  # the answer is no: exit 1 (README), after the output that says what would fit
                fail(f"nothing fits: no deployment of {arch.name} on {platform.id} is predicted to fit; "
                     "the output says what to try")
            if not rec["recommendations"]:
                fail("no deployment meets the latency limits; the output gives the closest miss and what would meet them")
            return
        out_dir = out_dir or Path("advisor-out")
        if ctx is not None and seq_len > ctx:
            raise AdvisorError(f"--seq-len {seq_len} exceeds the {ctx}-token context of {arch.name}")
        if task == Task.finetune and lora_rank > arch.hidden_size:
            raise AdvisorError(f"--lora-rank {lora_rank} exceeds the hidden size {arch.hidden_size} of {arch.name}")
        check_writable(out_dir, "--out-dir", folder=True)
        check_writable(out_dir / "ds_config.json", "--out-dir")
        # "pytorch," is pytorch and "PyTorch" is pytorch, as --hardware H100x8 is h100x8
        engines = _names((engine or "deepspeed").lower())
        bad = [e for e in engines if e not in ("deepspeed", "pytorch")]
        if bad:
            fail(f"--engine {bad[0]!r} is not one of deepspeed, pytorch", code=2)
        from advisor.search import SearchSpec
        from advisor.train_recommend import recommend_train

        methods = _methods(method, task)
        targets = _lora_targets(lora_targets) if task == Task.finetune else None
        spec = SearchSpec(
            hardware=hardware, model=arch_model, task=task.value, gpus=gpus, seq_len=seq_len, global_batch=global_batch,
            methods=methods, engines=engines, headroom=headroom if objective == Objective.headroom else 0.0,
            lora_rank=lora_rank, lora_targets=targets, nodes=nodes, network=network, inter_node_gbps=inter_node_gbps,
        )
        found = recommend_train(spec, eff, prof, top=top, storage=storage, study_name=study_name, sampler=sampler.value,
                                trials=trials, seed=seed, out_dir=out_dir, as_json=as_json, wide=wide,
                                confirm_hardware=confirm_hardware)
        if not found:  # the answer is no: exit 1 (README), after the output that says what would fit
            fail(f"nothing fits: no configuration of {arch.name} {task.value} on {platform.id} is predicted to fit; "
                 "the output gives the leanest one and what would fit")
    except AdvisorError as e:
        fail_input(e)
    except OSError as e:  # the config could not be written after all (disk full, a race)
        fail(f"cannot write into --out-dir {str(out_dir)!r}: {e.strerror or e}")


def _names(value: str) -> tuple[str, ...]:
    """A comma-separated option's names, stripped, empties and repeats dropped, in the order given."""
    return tuple(dict.fromkeys(x.strip() for x in value.split(",") if x.strip()))


def _methods(method: str | None, task: Task) -> tuple[str, ...] | None:
    """--method as a tuple of training methods (None: the task's own); a bad name exits 2 naming the valid ones."""
    from advisor.space import methods_for

    if method is None:
        return None
    valid = methods_for(task.value)
    names = _names(method)
    bad = next((m for m in names if m not in valid), None) if names else method
    if bad is not None:
        why = " (pre-training trains every weight)" if task == Task.pretrain and bad in ("lora", "qlora") else ""
        fail(f"--method {bad!r} is not a method for --task {task.value}{why}; valid: {', '.join(valid)}", code=2)
    return names


def _lora_targets(targets: str | None) -> tuple[str, ...] | str | None:
    """--lora-targets as PEFT takes them: "all-linear", or module names (checked against the model by the search)."""
    if targets is None:
        return None
    names = _names(targets)
    if not names:
        fail(f"--lora-targets {targets!r} names no module: give names (q_proj,v_proj) or all-linear, or leave it out", code=2)
    if "all-linear" in names:
        if len(names) > 1:
            fail("--lora-targets all-linear stands alone: give it, or module names, not both", code=2)
        return "all-linear"
    return names


# options only some tasks read: given to another, they would be dropped without a word
_SERVING_ONLY = ("prompt_len", "output_len", "max_tpot_ms", "max_ttft_ms", "requests")
_TRAINING_ONLY = ("seq_len", "global_batch", "global_batch_tokens", "objective", "headroom", "sampler", "trials", "seed",
                  "storage", "study_name")
_IGNORED_BY = {
    Task.pretrain: ("lora_rank", "lora_targets", *_SERVING_ONLY),  # pre-training trains every weight: no adapter
    Task.finetune: _SERVING_ONLY,
    Task.serve: ("lora_rank", "lora_targets", "method", *_TRAINING_ONLY),
}


def _note_ignored(context: typer.Context, task: Task) -> None:
    """One warning line on stderr naming the options given on the command line that ``task`` does not read; the run
    goes on (they change nothing, so they are no error)."""
    given = [name for name in _IGNORED_BY[task] if getattr(context.get_parameter_source(name), "name", "") == "COMMANDLINE"]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        warn(f"{flags} {'does' if len(given) == 1 else 'do'} not apply to --task {task.value}: ignored")


def _serve_choices(engine: str | None, weight_format: str | None) -> tuple[str, tuple[str, ...] | None]:
    """--engine and --weight-format of a serving job; a bad value exits 2 naming the valid ones."""
    from knowledge.schema import FORMAT_BITS
    from models.serve_launch import ENGINES

    engine = (engine or "vllm").strip().lower()  # VLLM is vllm
    if engine not in ENGINES:
        fail(f"--engine {engine!r} is not a serving engine; valid: {', '.join(ENGINES)}", code=2)
    if weight_format is None:
        return engine, None
    formats = tuple(f.strip() for f in weight_format.split(",") if f.strip())
    bad = next((f for f in formats if f not in FORMAT_BITS), None) if formats else weight_format
    if bad is not None:
        fail(f"--weight-format {bad!r} is not a weight format; valid: {', '.join(FORMAT_BITS)}", code=2)
    return engine, formats


def _host_flags(host_ram_gib: float | None, cpu_cores: int | None) -> str:
    return (f" --host-ram-gib {host_ram_gib:g}" if host_ram_gib else "") + (f" --cpu-cores {cpu_cores}" if cpu_cores else "")


def register(app: typer.Typer) -> None:
    app.command("recommend")(recommend)
