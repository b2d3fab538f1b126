"""`advisor recommend --task serve`: the serving recommendation (one library call) and its table, JSON and files.

``serve_recommendation`` is the one function the CLI and the explorer call; they only format its dict.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from advisor.output import console, print_hanging
from advisor.tables import relative_range, with_error
from advisor.serve_search import SLO_DEFINITIONS, Job, Point, search_serving, tpot_text
from knowledge.schema import FORMAT_BITS, ModelArch, Profile
from knowledge.engines import engine_named
from models.kv_cache import attention_layers, hybrid_block_tokens, kv_bytes_per_token, state_bytes
from models.serve_launch import ENGINE_NAMES, Launch, hub_id, launch_lines, launch_script

SLO_STATISTIC = "mean"


def _short(p) -> str:
    """The decode step's largest part, in a word and a share: 'weights 71%'."""
    bd = getattr(p, "breakdown", None)
    if bd is None or not p.decode_step_s:
        return ""
    parts = {"weights": bd.decode_weights_s, "KV cache": bd.decode_kv_s, "compute": bd.decode_compute_s,
             "all-reduce": bd.communication_s}
    top = max(parts, key=parts.get)  # type: ignore[arg-type]
    return f"{top} {parts[top] / p.decode_step_s:.0%}"


def _rel_range(p) -> tuple[float, float] | None:
    """The prediction's throughput interval as relative errors below and above the value (they apply to the
    deployment's figure too)."""
    return relative_range(p.e2e_output_tokens_per_s, (getattr(p, "interval", None) or {}).get("e2e_output_tokens_per_s"))


def _row(rank: int, pt: Point) -> dict:
    c, p = pt.config, pt.prediction
    kv_tokens = getattr(p, "kv_cache_tokens", None)
    rel = _rel_range(p)
    return {
        "rank": rank,
        "configuration": {"tensor_parallel": c.tensor_parallel, "replicas": c.replicas, "gpus": c.gpus,
                          "weight_format": c.weight_format, "weight_bits": FORMAT_BITS[c.weight_format],
                          "kv_bits": c.kv_bits, "kv_cache_dtype": c.kv_dtype, "max_num_seqs": c.max_num_seqs,
                          "batch_size": c.batch_size},
        "e2e_output_tokens_per_s": pt.tokens_per_s, "ttft_s": pt.ttft_s, "tpot_s": pt.tpot_s,
        "decode_step_s": p.decode_step_s, "prefill_s": p.prefill_s, "peak_mem_gib": pt.peak_mem_gib, "fits": pt.fits,
        "kv_cache_tokens": kv_tokens, "rel_error": max(rel) if rel else None, "rel_error_range": rel, "why_short": _short(p),
        "why": f"{c.describe()}: {pt.tokens_per_s:,.0f} output tok/s over {c.gpus} GPU(s), {pt.peak_mem_gib:.1f} GiB/GPU"
               + (f"; decode time mostly {_short(p)}" if _short(p) else ""),
        "load": pt.load,
    }


def serve_recommendation(hardware: str, model: str | dict, profile: Profile | None = None, *, prompt_len: int = 512,
                         output_len: int = 256, engine: str = "vllm", gpus: int | None = None,
                         weight_formats: tuple[str, ...] | None = None, max_tpot_ms: float | None = None,
                         max_ttft_ms: float | None = None, requests: int | None = None, rate_per_s: float | None = None,
                         top: int = 5) -> dict:
    """The ranked serving deployments for a job, the top pick's launch line, and, when nothing meets the
    limits, the closest miss and what would meet them. JSON-able. Raises AdvisorError for bad input."""
    from advisor.predictor import Predictor
    from knowledge.catalog import resolve_model, resolve_platform

    platform = resolve_platform(hardware)
    predictor = Predictor(profile)
    arch = predictor.serving_layout(resolve_model(model))  # the load simulation sizes the model's own KV cache
    job = Job(hardware, model, platform, arch, prompt_len, output_len, engine)
    res = search_serving(predictor, job, gpus=gpus, weight_formats=weight_formats, max_tpot_ms=max_tpot_ms,
                         max_ttft_ms=max_ttft_ms, requests=requests, rate_per_s=rate_per_s, top=top)
    rows = [_row(i, pt) for i, pt in enumerate(res.picks, start=1)]
    launch = None
    if res.picks:
        c = res.picks[0].config
        spec = Launch(engine, hub_id(arch.name, arch.source), c.tensor_parallel, c.replicas, c.max_num_seqs,
                      prompt_len + output_len, c.weight_format, c.kv_bits)
        launch = {"engine": engine, "lines": launch_lines(spec), "script": launch_script(spec)}
    return {
        "hardware": platform.id, "gpu": platform.gpu.name, "gpus": gpus or platform.count, "platform_gpus": platform.count,
        "model": arch.name,
        "task": "serve", "engine": engine, "prompt_len": prompt_len, "output_len": output_len,
        "max_tpot_ms": max_tpot_ms, "max_ttft_ms": max_ttft_ms, "requests": requests, "rate_per_s": rate_per_s,
        "slo_statistic": SLO_STATISTIC, "definitions": SLO_DEFINITIONS, "searched": res.spaces,
        "recommendations": rows, "nothing_fits": not res.points, "nothing_meets": not rows,
        "closest_miss": res.closest_miss, "would_meet": res.would_meet, "launch": launch,
        "burst": rows[0]["load"] if rows else None, "cache": cache_summary(arch, engine),
    }


def cache_summary(arch: ModelArch, engine: str | None = None) -> dict:
    """What one sequence keeps in the cache of one 16-bit replica (``models.kv_cache``, the model's own layout): layers
    that attend, their bytes per token, the sliding ones' windows, the recurrent layers' fixed state as ``engine`` keeps
    it (vLLM by default) and the attention block its allocator pages a hybrid in."""
    groups = arch.kv_groups or []
    e = engine_named(engine)
    block = hybrid_block_tokens(arch, 1, 16, e.kv_block_tokens) if e.vllm_cache else None
    return {"layers": arch.num_hidden_layers, "attention_layers": attention_layers(arch),
            "kv_bytes_per_token": kv_bytes_per_token(arch, 1, 16),
            "sliding": [{"layers": g.layers, "window": g.window} for g in groups if g.window],
            "state_bytes": state_bytes(arch, 1, vllm=e.vllm_cache), "state_layers": sum(g.layers for g in groups if g.state_bytes),
            "engine": e.label, "block_tokens": block if block and block != e.kv_block_tokens else None}


def cache_text(cache: dict) -> str | None:
    """One line on a cache that is not every layer's K/V at every position; None for one that is."""
    parts = []
    if cache["attention_layers"] < cache["layers"]:
        parts.append(f"K/V in {cache['attention_layers']} of {cache['layers']} layers "
                     f"({cache['kv_bytes_per_token'] / 1024:,.1f} KiB per token)")
    parts += [f"{s['layers']} layers keep the last {s['window']:,} tokens" for s in cache["sliding"]]
    if cache["state_bytes"]:
        parts.append(f"{cache['state_bytes'] / 2**20:,.1f} MiB of recurrent state per sequence "
                     f"({cache['state_layers']} recurrent layers, as {cache['engine']} keeps it)")
    if cache.get("block_tokens"):
        parts.append(f"{cache['engine']} pages its attention in {cache['block_tokens']:,}-token blocks, one state per page")
    return ("Cache (the model's own layout, 16-bit, one replica): " + "; ".join(parts)) if parts else None


def _load_text(rec: dict) -> str:
    if rec["rate_per_s"]:
        return f"{rec['requests'] or 1000:,} requests arriving at {rec['rate_per_s']:g}/s (Poisson, seed 0)"
    if rec["requests"]:
        return f"{rec['requests']:,} requests arriving at once"
    return "each batch of requests arriving at once"


def write_serve_files(rec: dict, out_dir: Path) -> list[Path]:
    """``serve.sh`` (the top pick's launch line) and ``serve.json`` (the recommendation), written atomically."""
    from knowledge.store import atomic_write_json, atomic_write_text

    written = [out_dir / "serve.json"]
    atomic_write_json(out_dir / "serve.json", rec)
    if rec["launch"]:
        atomic_write_text(out_dir / "serve.sh", rec["launch"]["script"], mode=0o755)  # run as ./serve.sh
        written.insert(0, out_dir / "serve.sh")
    return written


def print_serve(rec: dict, *, wide: bool = False, as_json: bool = False) -> None:
    if as_json:
        print(json.dumps(rec, indent=2))
        return
    engine = ENGINE_NAMES[rec["engine"]]
    head = f"{rec['model']} · serve on {engine} · {rec['gpus']}× {rec['gpu']} · prompt {rec['prompt_len']} → {rec['output_len']} tokens"
    if not rec["recommendations"]:
        _print_miss(rec, head)
        return
    t = Table(title=head, title_justify="left", caption_justify="left",
              caption=f"TPxR = tensor parallel x replicas; batch = sequences per replica; GiB per GPU; tok/s = output tokens/s of all "
                      f"replicas, ± = held-out error; load: {_load_text(rec)}. {SLO_DEFINITIONS}.")
    cols = [("#", "right"), ("TPxR", "right"), ("weights", "left"), ("KV", "left"), ("batch", "right"),
            ("out tok/s", "right"), ("TTFT ms", "right"), ("TPOT ms", "right"), ("GiB", "right")]
    if wide:
        cols.append(("why", "left"))
    for col, just in cols:
        t.add_column(col, justify=just, no_wrap=col != "why")
    for r in rec["recommendations"]:
        c = r["configuration"]
        tps = with_error(r["e2e_output_tokens_per_s"], r.get("rel_error_range"), wrap=not wide)
        cells = [str(r["rank"]), f"{c['tensor_parallel']}x{c['replicas']}", c["weight_format"], c["kv_cache_dtype"],
                 str(c["max_num_seqs"]), tps, f"{r['ttft_s'] * 1e3:,.0f}", tpot_text(r["tpot_s"]), f"{r['peak_mem_gib']:.1f}"]
        t.add_row(*cells, *([r["why"]] if wide else []))
    console.print(t)
    cache = cache_text(rec["cache"]) if rec.get("cache") else None
    if cache:
        print_hanging(cache)
    print_hanging(top_pick_text(rec))
    for fmt, why in rec["searched"].get("not_searched", {}).items():
        print_hanging(f"{fmt} not searched: {why}")
    console.print(f"Launch the top pick ({engine}):", highlight=False)
    for line in rec["launch"]["lines"]:
        console.print(f"  {line}", highlight=False, soft_wrap=True, markup=False)


def nothing_fits_hint(rec: dict) -> str:
    """What to try when nothing fits: only what the search did not already try."""
    searched = rec["searched"]
    tries = []
    if rec["gpus"] < rec.get("platform_gpus", rec["gpus"]):
        tries.append(f"all {rec['platform_gpus']} GPUs (--gpus)")
    tries.append("more GPUs (a larger server)")
    if "int4" not in searched["weight_formats"]:
        tries.append("a 4-bit format (--weight-format int4)")
    if 8 not in searched["kv_bits"]:
        tries.append("an FP8 KV cache")
    return ", ".join(tries) + ", or a shorter --prompt-len/--output-len"


def top_pick_text(rec: dict) -> str:
    """The top pick's figures in one line, TTFT first: without a TTFT limit the throughput pick can keep each
    request waiting seconds for its first token."""
    r = rec["recommendations"][0]
    tpot = f"TPOT {tpot_text(r['tpot_s'])} ms, " if r["tpot_s"] is not None else ""
    text = (f"Top pick: TTFT {r['ttft_s'] * 1e3:,.0f} ms, {tpot}"
            f"{r['e2e_output_tokens_per_s']:,.0f} output tok/s")
    if rec["max_ttft_ms"] is None:
        text += " (no --max-ttft-ms given: the pick maximises throughput; set one to bound the wait for the first token)"
    return text


def _print_miss(rec: dict, head: str) -> None:
    limits = " and ".join(x for x in (f"TPOT ≤ {rec['max_tpot_ms']:g} ms" if rec["max_tpot_ms"] is not None else "",
                                       f"TTFT ≤ {rec['max_ttft_ms']:g} ms" if rec["max_ttft_ms"] is not None else "") if x)
    console.print(head, highlight=False)
    if rec["nothing_fits"]:
        console.print(f"[bold red]Nothing fits[/] one batch of a {rec['prompt_len']}+{rec['output_len']}-token request "
                      f"on {rec['gpus']} GPU(s), in any searched format ({', '.join(rec['searched']['weight_formats'])}).")
    else:
        console.print(f"[bold red]No configuration meets {limits}[/] (means, load: {_load_text(rec)}).", highlight=False)
        cm = rec["closest_miss"]
        if cm:
            print_hanging(f"Closest miss: {cm['text']}; {cm['e2e_output_tokens_per_s']:,.0f} tok/s.")
    for w in rec["would_meet"]:
        print_hanging(f"  • {w['text']}")
    if rec["nothing_fits"]:
        console.print(f"  • try {nothing_fits_hint(rec)}", highlight=False)
    console.print(f"[dim]{SLO_DEFINITIONS}.[/]", highlight=False)


def recommend_serve(hardware: str, model: str | dict, profile: Profile | None, *, top: int, prompt_len: int,
                    output_len: int, engine: str = "vllm", weight_formats: tuple[str, ...] | None = None,
                    max_tpot_ms: float | None = None, max_ttft_ms: float | None = None, requests: int | None = None,
                    rate_per_s: float | None = None, gpus: int | None = None, as_json: bool = False, wide: bool = False,
                    out_dir: Path | None = None) -> dict:
    """The CLI's serving answer: compute, print, and with ``out_dir`` write serve.sh and serve.json. Returns the
    recommendation (``serve_recommendation``'s dict)."""
    rec = serve_recommendation(hardware, model, profile, prompt_len=prompt_len, output_len=output_len, engine=engine,
                               gpus=gpus, weight_formats=weight_formats, max_tpot_ms=max_tpot_ms, max_ttft_ms=max_ttft_ms,
                               requests=requests, rate_per_s=rate_per_s, top=top)
    written = write_serve_files(rec, out_dir) if out_dir is not None else []
    print_serve(rec, wide=wide, as_json=as_json)
    if written and not as_json:
        console.print(f"wrote {', '.join(str(p) for p in written)}", highlight=False, soft_wrap=True)
    return rec
