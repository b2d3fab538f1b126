"""`advisor recommend --task serve`: present the serving search (advisor.serve_search)."""

from __future__ import annotations

import json

from rich.table import Table

from advisor.output import console
from advisor.train_recommend import plus_minus
from advisor.predictor import serving_calibration_for
from advisor.serve_search import recommend_serving
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import Efficiencies
from knowledge.schema import Profile


def _short(p) -> str:
    """The decode step's largest part, in a word and a share: 'weights 71%'."""
    bd = p.breakdown
    if bd is None or not p.decode_step_s:
        return ""
    parts = {"weights": bd.decode_weights_s, "KV cache": bd.decode_kv_s, "compute": bd.decode_compute_s,
             "all-reduce": bd.communication_s}
    top = max(parts, key=parts.get)  # type: ignore[arg-type]
    return f"{top} {parts[top] / p.decode_step_s:.0%}"


def recommend_serve(hardware: str, model: str | dict, eff: Efficiencies, profile: Profile | None, *, top: int,
                    prompt_len: int, output_len: int, max_tpot_ms: float | None, max_ttft_ms: float | None,
                    as_json: bool, requests: int | None = None, gpus: int | None = None, wide: bool = False) -> None:
    """``gpus``: the most GPUs one replica may use (tensor parallelism up to it); default all of the platform."""
    from advisor.predictor import held_out_error

    platform = resolve_platform(hardware, gpus)
    arch = resolve_model(model)
    cal = serving_calibration_for(platform, profile, eff)
    items = recommend_serving(arch, platform, cal, prompt_len=prompt_len, output_len=output_len,
                              max_tpot_ms=max_tpot_ms, max_ttft_ms=max_ttft_ms, top=top,
                              max_tensor_parallel=gpus, rel_error=held_out_error().get("serve"))
    header = {"hardware": platform.id, "gpu": platform.gpu.name, "model": arch.name, "task": "serve",
              "prompt_len": prompt_len, "output_len": output_len, "max_tpot_ms": max_tpot_ms, "max_ttft_ms": max_ttft_ms}
    rows = []
    for i, it in enumerate(items, start=1):
        p = it["prediction"]
        rows.append({"rank": i, "configuration": {k: it[k] for k in ("batch_size", "tensor_parallel", "weight_bits", "kv_bits")},
                     "e2e_output_tokens_per_s": p.e2e_output_tokens_per_s, "ttft_s": p.ttft_s, "tpot_s": p.tpot_s,
                     "decode_step_s": p.decode_step_s, "prefill_s": p.prefill_s, "peak_mem_gib": p.peak_mem_gib,
                     "fits": p.fits, "why": it["why"], "why_short": _short(p), "interval": p.interval})
    burst = None
    if requests and rows:  # the top pick's configuration serving a burst of identical requests
        from models.serving import continuous_batching

        c = rows[0]["configuration"]
        burst = continuous_batching(arch, platform, cal, requests, prompt_len, output_len, weight_bits=c["weight_bits"],
                                    kv_bits=c["kv_bits"], tensor_parallel=c["tensor_parallel"])
    if as_json:
        print(json.dumps({**header, "recommendations": rows, "nothing_fits": not rows, "burst": burst}, indent=2))
        return
    if not rows:
        console.print(f"[bold red]Nothing fits or meets the limits[/] for {arch.name} on {platform.id}; "
                      "try more GPUs (tensor parallel), 4-bit weights, or looser --max-tpot-ms / --max-ttft-ms.")
        return
    t = Table(title=f"{arch.name} · serve · {platform.count}× {platform.gpu.name} · prompt {prompt_len} → {output_len} tokens",
              caption="bits = weights/KV cache; ± = held-out error", title_justify="left", caption_justify="left")
    for col, just in (("#", "right"), ("batch", "right"), ("TP", "right"), ("bits", "right"), ("out tok/s", "right"),
                      ("TTFT ms", "right"), ("TPOT ms", "right"), ("GiB/GPU", "right"), ("why", "left")):
        t.add_column(col, justify=just, no_wrap=col != "why")
    for r in rows:
        c = r["configuration"]
        t.add_row(str(r["rank"]), str(c["batch_size"]), str(c["tensor_parallel"]), f"{c['weight_bits']}/{c['kv_bits']}",
                  plus_minus(r["e2e_output_tokens_per_s"], r["interval"], "e2e_output_tokens_per_s"),
                  f"{r['ttft_s'] * 1e3:,.0f}", f"{r['tpot_s'] * 1e3:.1f}", f"{r['peak_mem_gib']:.1f}",
                  r["why"].split("; ", 1)[-1] if wide else r["why_short"])
    console.print(t)
    if burst:
        console.print(f"{requests} requests at once (continuous batching, {burst['batch_size']} running, {burst['waves']} waves): "
                      f"{burst['total_s']:.1f} s, {burst['output_tokens_per_s']:,.0f} output tokens/s, "
                      f"mean TTFT {burst['mean_ttft_s']:.2f} s, TPOT {burst['tpot_s'] * 1e3:.1f} ms")
