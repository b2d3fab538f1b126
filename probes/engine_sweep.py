"""Measure serving as an engine runs it, without the engine: decode steps and chunked prefills over batch x KV length.

vLLM cannot be installed on the GPU machines, so this builds vLLM's decoder structure in plain torch from a
model's shapes with random weights (``probes.engine_model``, whose docstring says what is vLLM-like and what is not:
fused QKV and gate/up GEMMs, RMSNorm or StarCoder2's LayerNorm, RoPE, q/k norms (per head, or over all heads for
OLMoE/OLMo-2), MoE as vLLM's fused MoE (grouped GEMMs over the experts; a shared expert), StarCoder2's plain MLP,
Gemma-2's four norms, GeGLU and soft-capped logits, sliding windows, attention over the grouped K/V heads as stored:
SDPA ``enable_gqa=True`` on FlashAttention, or a batched GEMM per KV head where that does not run). The notes say
which attention, MLP or MoE path and window ran. Per point (batch B, KV length P; the case's ``prompt_len`` =
``kv_len`` = P):

- ``decode_step_s``: one token for each of B sequences over a cache of P tokens (the new one written at P),
  captured in one CUDA graph and replayed (eagerly where the MoE fell back to its per-expert loop, whose shapes
  depend on the routing); CUDA-event median of ``--repeats`` after warm-up.
- ``prefill_s``: the B prompts in chunks of ``--chunk`` tokens (vLLM's ``max_num_batched_tokens``): a chunk holds
  chunk // P whole prompts (a prompt longer than a chunk runs in chunks, each attending to the cache so far).
  Each chunk shape is timed once per model and KV length (event median) and the batch's prefill is their sum;
  the notes give the sum. Chunks run eagerly (vLLM V1 captures graphs only for small token counts).
- ``peak_mem_gib``: ``torch.cuda.max_memory_allocated`` over the point: weights, the cache of B x (P + 1)
  tokens, one chunk's activations, the decode graph.

Rows are ``Measurement`` JSON lines like ``probes.serve_sweep``'s, with ``engine: vllm`` in the case (what the
contract's engine means: paged attention over grouped heads, chunked prefill, CUDA-graph decode) and the runtime
named honestly in ``source`` and ``notes``: this is vLLM's structure in torch, not vLLM.

    python -m probes.engine_sweep --model llama3-8b --model llama2-7b --hardware h100x1 --out rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from typing import Any, Callable

from knowledge.schema import Measured, Measurement
from probes.engine_model import EngineDecoder, Shapes, attention_that_runs
from probes.run_case import environment, resolve_arch
from probes.train_step import is_oom, one_line

BATCHES = (1, 4, 16, 64, 128)
KV_LENS = (512, 2048, 8192)
CHUNK = 8192  # vLLM V1's max_num_batched_tokens for online serving on >= 70 GiB GPUs (knowledge.engines)
RUNTIME = "vllm-style (probes.engine_model: torch ops, SDPA enable_gqa over a contiguous cache, CUDA-graph decode; not vLLM)"


def timed_s(fn: Callable[[], Any], cuda: bool, repeats: int, warmup: int) -> float:
    """Median seconds of ``fn`` over ``repeats`` runs after ``warmup``: CUDA events on a GPU, wall clock on CPU."""
    import torch

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def chunk_plan(batch: int, prompt_len: int, chunk: int) -> list[tuple[int, int, int, int]]:
    """The prefill's chunks as (sequences, tokens each, cache start, how many times): whole prompts per chunk when a
    prompt fits one, else each prompt's chunks in turn."""
    if prompt_len <= chunk:
        per = max(1, min(batch, chunk // prompt_len))
        full, rest = divmod(batch, per)
        return [(per, prompt_len, 0, full)] + ([(rest, prompt_len, 0, 1)] if rest else [])
    return [(1, min(chunk, prompt_len - s), s, batch) for s in range(0, prompt_len, chunk)]


class Point:
    """Time one (batch, KV length) point of a built decoder; chunk timings are kept across batch sizes."""

    def __init__(self, dec: EngineDecoder, args: argparse.Namespace) -> None:
        import torch

        self.dec, self.args, self.cuda = dec, args, dec.device.type == "cuda"
        self.chunk_s: dict[tuple[int, int, int], float] = {}
        self.torch = torch

    def prefill(self, B: int, P: int) -> tuple[float, str]:
        torch, dec = self.torch, self.dec
        total, parts = 0.0, []
        for seqs, tokens, start, times in chunk_plan(B, P, self.args.chunk):
            ids = torch.randint(0, dec.s.vocab, (seqs, tokens), device=dec.device)
            run = lambda: dec.forward(ids, start, rows=slice(0, seqs), attn=self.args.attn)  # noqa: E731
            key = (seqs, tokens, start)
            if key not in self.chunk_s:
                self.chunk_s[key] = timed_s(run, self.cuda, self.args.prefill_repeats, 1)
            else:
                run()  # once at this batch, so the point's peak memory holds a chunk's activations
            total += times * self.chunk_s[key]
            parts.append(f"{times} x {self.chunk_s[key]:.4g} s ({seqs} x {tokens} tokens from {start})")
        return total, " + ".join(parts)

    def decode(self, B: int, P: int) -> tuple[float, str]:
        torch, dec = self.torch, self.dec
        ids = torch.randint(0, dec.s.vocab, (B, 1), device=dec.device)
        start = torch.tensor([P], device=dec.device)
        step = lambda: dec.forward(ids, start, attn=self.args.attn)  # noqa: E731
        if not self.cuda:
            return timed_s(step, False, self.args.repeats, 1), "eager (no GPU)"
        if dec.moe_path == "loop":  # the per-expert fallback's shapes depend on the routing: no graph
            return timed_s(step, True, self.args.repeats, 3), "eager (MoE loop fallback: no CUDA graph)"
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        try:
            return timed_s(graph.replay, True, self.args.repeats, 3), "CUDA graph"
        finally:
            del graph

    def run(self, B: int, P: int) -> tuple[Measured, str]:
        torch, dec = self.torch, self.dec
        if self.cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(dec.device)
        stage, prefill, notes = "cache", None, ""
        try:
            with torch.inference_mode():
                dec.allocate(B, P + 1)
                stage = "prefill"
                prefill, how = self.prefill(B, P)
                stage = "decode"
                decode, method = self.decode(B, P)
            notes = f"decode_method={method}; prefill = {how}"
        except Exception as e:
            dec.allocate(0, 0)
            if not is_oom(e):
                return Measured(error=f"{stage}: {one_line(e, 200)}", failure="crash"), notes
            peak = torch.cuda.max_memory_allocated(dec.device) / 2**30 if self.cuda else None
            if self.cuda:
                torch.cuda.empty_cache()
            return Measured(oom=True, failure="device_oom", peak_mem_gib=peak, prefill_s=prefill,
                            error=f"CUDA out of memory in {stage}: {one_line(e, 160)}"), notes
        peak = torch.cuda.max_memory_allocated(dec.device) / 2**30 if self.cuda else None
        dec.allocate(0, 0)
        return Measured(prefill_s=prefill, decode_step_s=decode, peak_mem_gib=peak), notes


def needed_gib(dec: EngineDecoder, B: int, P: int) -> float:
    """The built decoder's weights and the cache of a point (B x (P + 1) positions, every layer's kept whole), GiB:
    to skip points far beyond the GPU without trying them."""
    weights = dec.parameter_count() * dec.embed.element_size()
    return (weights + dec.cache_bytes(B, P + 1)) / 2**30


def point_case(args: argparse.Namespace, arch_arg: Any, name: str, B: int, P: int) -> dict[str, Any]:
    """The contract case of one point: what a row records, and what ``--cases-only`` prints for predictions stored
    before a run."""
    return {"id": f"{args.tag}-engine-{name}-b{B}-p{P}", "hardware": args.hardware, "model": arch_arg, "task": "serve",
            "batch_size": B, "prompt_len": P, "kv_len": P, "weight_bits": 16, "kv_bits": 16, "weight_format": "bf16",
            "tensor_parallel": 1, "replicas": 1, "engine": "vllm"}


def parse_model(text: str) -> Any:
    return json.loads(text) if text.strip().startswith("{") else text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", required=True, help="catalog name or inline JSON architecture (repeat)")
    ap.add_argument("--hardware", required=True, help="platform id written into each case (e.g. h100x1)")
    ap.add_argument("--out", required=True, help="JSON-lines file the rows are appended to")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    ap.add_argument("--kv", default=",".join(map(str, KV_LENS)), help="KV lengths (= prompt lengths)")
    ap.add_argument("--chunk", type=int, default=CHUNK, help="prefill tokens per step (max_num_batched_tokens)")
    ap.add_argument("--attn", choices=("sdpa", "bmm"), default="sdpa")
    ap.add_argument("--repeats", type=int, default=10, help="timed decode replays")
    ap.add_argument("--prefill-repeats", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=220.0, help="stop starting points after this many seconds")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--tag", default="engine")
    ap.add_argument("--dataset", default="own")
    ap.add_argument("--cases-only", action="store_true",
                    help="print every point's case as a JSON line, without the engine field (as a user gives it: "
                         "`advisor predict --cases` of it stores the predictions before a run), and run nothing")
    args = ap.parse_args(argv)
    if args.cases_only:
        for text in args.model:
            arch_arg = parse_model(text)
            name = resolve_arch(arch_arg).name
            for P in (int(x) for x in args.kv.split(",")):
                for B in sorted(int(x) for x in args.batches.split(",")):
                    print(json.dumps({k: v for k, v in point_case(args, arch_arg, name, B, P).items() if k != "engine"}))
        return 0
    import torch

    begin = time.monotonic()
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    env = environment("python -m probes.engine_sweep " + shlex.join(sys.argv[1:] if argv is None else argv))
    total_gib = torch.cuda.get_device_properties(device).total_memory / 2**30 if device.type == "cuda" else float("inf")
    batches, kvs = [int(x) for x in args.batches.split(",")], [int(x) for x in args.kv.split(",")]
    for text in args.model:
        arch_arg = parse_model(text)
        arch = resolve_arch(arch_arg)
        t0 = time.monotonic()
        dec = EngineDecoder(Shapes.of(arch), device, dtype)
        print(f"{arch.name}: built in {time.monotonic() - t0:.1f} s", flush=True)
        attn = attention_that_runs(dec, args.attn)
        if attn != args.attn:
            print(f"{arch.name}: --attn {args.attn} does not run here on grouped heads; using {attn}", flush=True)
        point = Point(dec, argparse.Namespace(**{**vars(args), "attn": attn}))
        out_of_memory: dict[int, int] = {}
        for P in kvs:
            for B in sorted(batches):
                if time.monotonic() - begin > args.budget_s:
                    print("budget spent", flush=True)
                    return 0
                need = needed_gib(dec, B, P)
                if need > 1.1 * total_gib or P in out_of_memory:
                    why = f"needs {need:.0f} GiB" if P not in out_of_memory else f"b{out_of_memory[P]} ran out"
                    print(f"  b{B} p{P}: skipped, {why}", flush=True)
                    continue
                m, notes = point.run(B, P)
                if m.oom:
                    out_of_memory[P] = B  # a larger batch at this length needs more memory still
                case = point_case(args, arch_arg, arch.name, B, P)
                # the attention, then what the layer ran: norms, q/k norms, the MLP or MoE path, the windows
                extra = f"runtime={RUNTIME}; chunk_tokens={args.chunk}; attention={attn}; {dec.paths()}"
                row = Measurement(dataset=args.dataset, source="probes.engine_sweep", case=case, measured=m,
                                  environment=env, notes=f"{extra}; {notes}" if notes else extra)
                with open(args.out, "a") as f:
                    f.write(row.model_dump_json() + "\n")
                print(f"  b{B} p{P}: prefill {m.prefill_s} decode {m.decode_step_s} peak {m.peak_mem_gib} {m.error or ''}",
                      flush=True)
        del dec, point
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
