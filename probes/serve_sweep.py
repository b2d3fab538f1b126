"""Measure prefills and decode steps of one model over a grid of batch x prompt, as an engine runs them.

One model load serves the whole grid (a fresh process per point would spend the lease building models).
Per point (batch B, prompt P):

- ``prefill_s``: the B x P prompt forward captured in a CUDA graph and replayed (engines run prefill
  compiled / graph-captured, so host dispatch is not timed); the eager forward is kept as
  ``prefill_eager_s``, with the KV cache built as Hugging Face does.
- ``decode_step_s``: one token for each of B sequences over a StaticCache holding P tokens, CUDA graph
  (``probes.serve_step._Decoder``). The cache is not filled by a real prefill (a decode step's time does
  not depend on the values), so points with large B x P cost no prefill.
- ``peak_mem_gib``: ``max_memory_allocated`` over the point (eager prefill with its cache, then decode).

``--formats`` bf16 / fp8 / int8 / int4 (``probes.engine_linears``); under ``torchrun --nproc_per_node N``
the model is split N ways (Megatron-style tensor parallelism: attention heads and MLP columns per rank,
an all-reduce after the attention and the MLP output projections). Writes one JSON line per point.

    python -m probes.serve_sweep --model llama2-7b --hardware h100x1 --formats bf16,fp8 --out rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from knowledge.schema import Measured, Measurement, ModelArch
from probes.run_case import command_line, environment, resolve_arch
from probes.serve_step import _Decoder, _timed, generate_s, graph_prefill_s as _graph_prefill_s
from probes.train_step import is_oom, one_line, setup_distributed

BITS = {"bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
PROMPTS = (128, 512, 2048, 8192)
BATCHES = (1, 4, 16, 64, 256)
MAX_TOKENS = 131072  # batch x prompt of the largest point (its KV cache fills an 80 GB GPU for a 7B MHA model)
MAX_PREFILL_TOKENS = 32768  # larger prefills take seconds each and add nothing: compute-bound already


def grid(quick: bool = False) -> list[tuple[int, int]]:
    pts = [(b, p) for p in PROMPTS for b in BATCHES if b * p <= MAX_TOKENS]
    if quick:
        pts = [(1, 128), (4, 512), (16, 2048)]
    return sorted(pts, key=lambda bp: (bp[0] * bp[1], bp[0]))


def rank_arch(arch: ModelArch, tp: int) -> ModelArch:
    """One tensor-parallel rank's share: heads, KV heads (replicated below one per rank) and MLP columns."""
    if tp == 1:
        return arch
    if arch.num_attention_heads % tp or arch.intermediate_size % tp:
        raise ValueError(f"tensor parallel {tp} does not divide {arch.name}'s heads / MLP")
    return arch.model_copy(update={
        "num_attention_heads": arch.num_attention_heads // tp,
        "num_key_value_heads": max(1, arch.num_key_value_heads // tp),
        "intermediate_size": arch.intermediate_size // tp,
        "head_dim": arch.head_size,
    })


def add_all_reduces(model: Any) -> None:
    """Sum the partial outputs of the row-parallel projections over the ranks, as Megatron does."""
    import torch.distributed as dist

    def hook(_m: Any, _inp: Any, out: Any) -> Any:
        dist.all_reduce(out)
        return out

    for layer in model.model.layers:
        layer.self_attn.o_proj.register_forward_hook(hook)
        layer.mlp.down_proj.register_forward_hook(hook)


def parse_points(text: str) -> list[tuple[int, int]]:
    """'8x300,32x1000' -> [(8, 300), (32, 1000)] (batch x prompt)."""
    pts = []
    for item in text.split(","):
        b, _, p = item.strip().partition("x")
        pts.append((int(b), int(p)))
    return pts


def measure_point(model: Any, arch: ModelArch, B: int, P: int, d: Any, info: dict, output_len: int | None = None,
                  max_prefill_tokens: int = MAX_PREFILL_TOKENS) -> Measured:
    import torch

    def sync() -> None:
        torch.cuda.synchronize(d.device)

    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(d.device)
    prefill = eager = None
    stage = "prefill"
    try:
        with torch.inference_mode():
            if B * P <= max_prefill_tokens:
                ids = torch.randint(0, arch.vocab_size, (B, P), device=d.device)
                eager = _timed(lambda: model(input_ids=ids, use_cache=True, logits_to_keep=1), 3, sync)
                torch.cuda.empty_cache()
                try:
                    prefill = _graph_prefill_s(model, ids, 5, sync)
                except Exception as e:  # capture is best effort; the eager time stays
                    if is_oom(e):
                        raise
                    info["prefill_graph"] = f"failed: {one_line(e, 100)}"
                torch.cuda.empty_cache()
            stage = "decode"
            dec = _Decoder(model, B, P + 1, d.device)
            dec.prefill(torch.randint(0, arch.vocab_size, (B, 1), device=d.device))
            dec.mask[..., :P] = True
            dec.set_position(P)  # every timed step writes slot P over a cache of P tokens
            info["decode_method"] = dec.try_capture()
            decode = _timed(dec.run, 10, sync, warmup=2)
            del dec
            e2e = None
            if output_len and prefill is not None:
                stage = "generate"
                torch.cuda.empty_cache()
                # end to end = the graph prefill + output_len - 1 decode steps at growing cache lengths
                ids = torch.randint(0, arch.vocab_size, (B, P), device=d.device)
                e2e = B * output_len / (prefill + generate_s(model, ids, output_len, d.device, sync))
    except Exception as e:
        if not is_oom(e):
            return Measured(error=f"{stage}: {one_line(e, 200)}", failure="crash")
        peak = torch.cuda.max_memory_allocated(d.device) / 2**30
        torch.cuda.empty_cache()
        return Measured(oom=True, failure="device_oom", peak_mem_gib=peak,
                        error=f"CUDA out of memory in {stage}: {one_line(e, 160)}", prefill_s=prefill, prefill_eager_s=eager)
    return Measured(prefill_s=prefill if prefill is not None else None, prefill_eager_s=eager, decode_step_s=decode,
                    e2e_output_tokens_per_s=e2e, peak_mem_gib=torch.cuda.max_memory_allocated(d.device) / 2**30)


def _case(args: argparse.Namespace, arch_arg: Any, fmt: str, B: int, P: int, tp: int) -> dict:
    case = {"id": f"{args.tag}-{fmt}-tp{tp}-b{B}-p{P}", "hardware": args.hardware, "model": arch_arg, "task": "serve",
            "batch_size": B, "prompt_len": P, "kv_len": P, "weight_bits": BITS[fmt], "kv_bits": 16,
            "weight_format": fmt, "tensor_parallel": tp, "replicas": 1, "engine": "transformers"}
    if args.output_len:
        case["output_len"] = args.output_len
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="catalog name or inline JSON architecture")
    ap.add_argument("--hardware", required=True, help="platform id written into each case (e.g. h100x1)")
    ap.add_argument("--formats", default="bf16")
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--points", help="batch x prompt list instead of the grid, e.g. 8x300,32x1000")
    ap.add_argument("--max-prefill-tokens", type=int, default=MAX_PREFILL_TOKENS)
    ap.add_argument("--output-len", type=int, help="also time end to end: the prefill + output_len - 1 decode steps")
    ap.add_argument("--tag", default="sweep")
    ap.add_argument("--dataset", default="own")
    args = ap.parse_args(argv)
    import torch

    start = time.monotonic()
    d = setup_distributed("cuda", need_group=False)
    tp = d.world
    arch_arg = json.loads(args.model) if args.model.strip().startswith("{") else args.model
    arch = resolve_arch(arch_arg)
    env = environment(command_line(sys.argv if argv is None else ["probes.serve_sweep", *argv]))
    from probes.hf_model import build_model

    for fmt in args.formats.split(","):
        if time.monotonic() - start > args.budget_s:
            break
        t0 = time.monotonic()
        try:
            model = build_model(rank_arch(arch, tp), device=d.device, dtype=torch.bfloat16, attn_impl="sdpa",
                                quantization="none" if fmt == "bf16" else f"engine:{fmt}", use_cache=True)
        except Exception as e:
            print(f"{arch.name} {fmt}: cannot build: {one_line(e, 200)}", flush=True)
            continue
        model.eval()
        if tp > 1:
            add_all_reduces(model)
        print(f"{arch.name} {fmt} tp{tp}: built in {time.monotonic() - t0:.1f} s", flush=True)
        for B, P in (parse_points(args.points) if args.points else grid(args.quick)):
            if time.monotonic() - start > args.budget_s:
                print("budget spent", flush=True)
                break
            info: dict = {}
            m = measure_point(model, arch, B, P, d, info, args.output_len, args.max_prefill_tokens)
            if d.rank == 0:
                row = Measurement(dataset=args.dataset, source="probes.serve_sweep", case=_case(args, arch_arg, fmt, B, P, tp),
                                  measured=m, environment=env, notes="; ".join(f"{k}={v}" for k, v in info.items()))
                with open(args.out, "a") as f:
                    f.write(row.model_dump_json() + "\n")
                print(f"  b{B} p{P}: prefill {m.prefill_s} eager {m.prefill_eager_s} decode {m.decode_step_s} "
                      f"peak {m.peak_mem_gib} {m.error or ''} {info.get('decode_method', '')[:40]}", flush=True)
        del model
        torch.cuda.empty_cache()
    if tp > 1:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
