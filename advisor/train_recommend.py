"""Ranking, presenting and writing the training recommendation (the search itself is advisor.search)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from advisor.explain import alternatives, describe, smallest_footprint, why
from advisor.output import console, err_console
from advisor.search import Candidate, Evaluator, SearchSpec, run_search
from knowledge.efficiency import Efficiencies
from knowledge.schema import Profile
from knowledge.store import atomic_write_json
from models.deepspeed_config import deepspeed_config


def launch_line(c: Candidate, gpus: int, config_path: Path) -> str:
    case = c.case
    if case.engine == "pytorch":
        return f"torchrun --nproc_per_node {gpus} train.py  # plain PyTorch{' + PEFT' if case.method != 'full' else ''}, no DeepSpeed config"
    return f"deepspeed --num_gpus {gpus} train.py --deepspeed {config_path}"


def usage_note(c: Candidate) -> str:
    """How to use the config with the Hugging Face stack for this method."""
    case = c.case
    steps = []
    if case.method == "qlora":
        steps.append("load the base with BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4', bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)")
    elif case.quantization == "int8":
        steps.append("load the base with BitsAndBytesConfig(load_in_8bit=True)")
    if case.method in ("lora", "qlora"):
        steps.append(f"wrap it with peft.get_peft_model(model, LoraConfig(r={case.lora_rank}, target_modules={case.lora_targets}))")
    if case.recompute:
        steps.append("call model.gradient_checkpointing_enable()")
    steps.append(f"attn_implementation='{'sdpa' if case.flash_attention else 'eager'}'")
    if case.engine == "deepspeed":
        steps.append("pass the JSON as TrainingArguments(deepspeed='ds_config.json', bf16=True) or to accelerate with --use_deepspeed --deepspeed_config_file")
    return "; ".join(steps)


def _item(rank: int, c: Candidate, best: Candidate, ev: Evaluator) -> dict[str, Any]:
    p = c.prediction
    knobs = {k: v for k, v in c.case.model_dump().items() if k not in ("id", "hardware", "model", "task")}
    return {
        "rank": rank,
        "configuration": knobs,
        "summary": describe(c.case),
        "tokens_per_s": p.tokens_per_s,
        "step_time_s": p.step_time_s,
        "peak_mem_gib": p.peak_mem_gib,
        "capacity_gib": p.capacity_gib,
        "fits": p.fits,
        "why": why(rank, p, best.prediction, c.case),
        "deepspeed_config": deepspeed_config(c.case, ev.platform.gpu, ev.gpus) if c.case.engine == "deepspeed" else None,
        "breakdown": p.breakdown.model_dump() if p.breakdown else None,
        "interval": p.interval,
    }


def recommend_train(
    spec: SearchSpec, eff: Efficiencies, profile: Profile | None, *, top: int, storage: str | None,
    study_name: str | None, sampler: str, trials: int | None, seed: int, out_dir: Path, as_json: bool,
) -> None:
    t0 = time.perf_counter()
    quiet = as_json or not sys.stderr.isatty()
    with Progress(TextColumn("searching"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True, disable=quiet) as bar:
        task_id = bar.add_task("search", total=None)
        ranked, ev, facts = run_search(
            spec, eff, profile, storage=storage, study_name=study_name, sampler=sampler, n_trials=trials, seed=seed,
            progress=lambda done, total: bar.update(task_id, completed=done, total=total),
        )
    facts["seconds"] = round(time.perf_counter() - t0, 2)
    header = {
        "hardware": ev.platform.id, "gpu": ev.platform.gpu.name, "gpus": ev.gpus, "model": ev.arch.name,
        "task": spec.task, "seq_len": spec.seq_len, "global_batch": spec.global_batch, "search": facts,
        "profile": profile.gpu_name if profile else None,
    }
    if not ranked:
        _nothing_fits(spec, ev, header, as_json)
        return
    best = ranked[0]
    items = [_item(i + 1, c, best, ev) for i, c in enumerate(ranked[:top])]
    config_path = out_dir / "ds_config.json"
    launch = launch_line(best, ev.gpus, config_path)
    if best.case.engine == "deepspeed":
        atomic_write_json(config_path, items[0]["deepspeed_config"])
    for it, c in zip(items, ranked[:top]):
        it["launch"] = launch_line(c, ev.gpus, config_path)
        it["usage"] = usage_note(c)
    if as_json:
        print(json.dumps({**header, "recommendations": items, "deepspeed_config_path": str(config_path)}, indent=2))
        return
    _table(header, items, ev)
    console.print(f"[bold]Top pick[/]: {items[0]['summary']}")
    if best.case.engine == "deepspeed":
        console.print(f"DeepSpeed config written to [cyan]{config_path}[/]")
    console.print(f"Launch: [green]{launch}[/]")
    console.print(f"With Hugging Face: {items[0]['usage']}", highlight=False)
    console.print(f"Prove it: advisor confirm --hardware {ev.platform.id} --task {spec.task} --model {ev.arch.name if isinstance(spec.model, str) else 'MODEL'} --seq-len {spec.seq_len}", highlight=False)


def _table(header: dict[str, Any], items: list[dict[str, Any]], ev: Evaluator) -> None:
    s = header["search"]
    t = Table(
        title=f"{header['model']} · {header['task']} · {header['gpus']}× {header['gpu']} · seq {header['seq_len']}",
        caption=f"{s['sampler']} search: {s['trials']} trials over {s['space_size']} configurations in {s['seconds']:.1f} s",
        title_justify="left",
    )
    for col, just in (("#", "right"), ("configuration", "left"), ("tokens/s", "right"), ("step (s)", "right"),
                      ("GiB/GPU", "right"), ("fits", "center"), ("why", "left")):
        t.add_column(col, justify=just)
    for it in items:
        t.add_row(str(it["rank"]), it["summary"], f"{it['tokens_per_s']:,.0f}", f"{it['step_time_s']:.3f}",
                  f"{it['peak_mem_gib']:.1f} / {it['capacity_gib']:.0f}", "[green]yes[/]" if it["fits"] else "[red]no[/]", it["why"])
    console.print(t)


def _nothing_fits(spec: SearchSpec, ev: Evaluator, header: dict[str, Any], as_json: bool) -> None:
    """Exit 0 with what would fit: more GPUs, QLoRA, shorter sequences, and the leanest option now."""
    lean = smallest_footprint(ev)
    options = alternatives(spec, lambda s: Evaluator(s, ev.eff, ev.profile))
    lean_d = None
    if lean:
        from models.training import predict_training

        reason = predict_training(lean[0], ev.arch, ev.platform, ev.eff).why_not_fits
        lean_d = {"configuration": describe(lean[0]), "peak_mem_gib": lean[1], "usable_gib": ev.limit_gib, "why_not": reason}
    if as_json:
        print(json.dumps({**header, "recommendations": [], "nothing_fits": True, "leanest": lean_d, "would_fit": options}, indent=2))
        return
    console.print(f"[bold red]Nothing fits[/] {header['model']} {spec.task} on {header['gpus']}× {header['gpu']} at seq {spec.seq_len}.")
    if lean_d:
        console.print(f"Leanest configuration: {lean_d['configuration']}: {lean_d['why_not'] or 'needs %.1f GiB per GPU' % lean_d['peak_mem_gib']}.")
    if options:
        t = Table(title="What would fit", title_justify="left")
        for col in ("change", "best configuration then", "tokens/s", "GiB/GPU"):
            t.add_column(col)
        for o in options:
            t.add_row(o["change"], o["configuration"], f"{o['tokens_per_s']:,.0f}", f"{o['peak_mem_gib']:.1f}")
        console.print(t)
    else:
        console.print("No single change (more GPUs, QLoRA, half the sequence length) makes it fit.")
