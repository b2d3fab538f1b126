"""`advisor compare --hardware a100x1 --vs h20x1 --model llama2-13b`: the two-card comparison mesh.

The ratio of the second card's predicted time to the first's over batch size x sequence length
(> 1: the first card is faster), as a table, the regions in words, and a heatmap PNG (LLMRoofline's mesh).
"""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Optional

import typer

from advisor.output import check_writable, console, fail, fail_input
from knowledge.errors import AdvisorError
from knowledge.store import atomic_write_bytes

DEFAULT_BATCH = "1,4,16,64,256"
DEFAULT_SEQ = "128,512,2048,8192,32768"


MAX_VALUES = 32  # points per axis of the mesh
MAX_BATCH = 1 << 20
MAX_SEQ = 1 << 24


def _ints(text: str, flag: str, limit: int) -> list[int]:
    """Comma-separated ASCII integers in 1..limit (``int`` alone would take "１" and "1_0")."""
    parts = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in parts if not re.fullmatch(r"[0-9]{1,9}", x) or not 1 <= int(x) <= limit]
    if bad:  # every bad value named, not the first of them
        fail(f"{flag} must be comma-separated integers in 1..{limit}, got {', '.join(repr(x[:40]) for x in bad[:5])}", code=2)
    values = sorted({int(x) for x in parts})
    if not values or values[0] < 1 or values[-1] > limit:
        fail(f"{flag} must list integers in 1..{limit}, got {text[:60]!r}", code=2)
    if len(values) > MAX_VALUES:
        fail(f"{flag} lists {len(values)} values; at most {MAX_VALUES}", code=2)
    return values


A_COLOUR, B_COLOUR = "blue", "red"  # the heatmap's RdBu ends: ratio > 1 (A faster) is blue, < 1 (B faster) red
MASK_COLOUR = "#c8c8c8"


def heatmap_png(ratio: list[list[float]], bound: list[list[tuple[str, str]]], batch_sizes: list[int],
                seq_lens: list[int], name_a: str, name_b: str, model: str, phase: str,
                fits: list[list[tuple[bool, bool]]] | None = None, beyond: list[list[bool]] | None = None) -> bytes:
    """PNG bytes of the annotated mesh: blue = A faster, red = B faster, white = a draw, grey = does not fit
    or lies beyond the model's context (the cell says which)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Patch

    ok = [[(fits[i][j][0] and fits[i][j][1]) if fits else True for j in range(len(seq_lens))] for i in range(len(batch_sizes))]
    shown = [r for i, row in enumerate(ratio) for j, r in enumerate(row) if ok[i][j]] or [1.0]
    # symmetric in log space around 1 so that 2x and 0.5x get equally strong colours
    span = max(abs(math.log(min(shown))), abs(math.log(max(shown))), math.log(1.05))
    norm = TwoSlopeNorm(vmin=math.exp(-span), vcenter=1.0, vmax=math.exp(span))
    data = np.ma.masked_array(np.array(ratio, dtype=float), mask=~np.array(ok))
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad=MASK_COLOUR)
    fig, ax = plt.subplots(figsize=(1.7 * len(seq_lens) + 3.5, 1.0 * len(batch_sizes) + 2.6), dpi=120)
    im = ax.imshow(data, cmap=cmap, norm=norm, origin="lower", aspect="auto")
    letters = {"compute": "C", "memory": "M"}
    for i, row in enumerate(ratio):
        for j, r in enumerate(row):
            if not ok[i][j]:
                fa, fb = fits[i][j]  # type: ignore[index]
                text = f"only {name_a}\nfits" if fa else f"only {name_b}\nfits" if fb else "does not\nfit"
                if beyond and beyond[i][j]:
                    text = "beyond\ncontext"
                ax.text(j, i, text, ha="center", va="center", fontsize=9, color="#333333")
                continue
            ba, bb = bound[i][j]
            ax.text(j, i, f"{r:.2f}×\n{letters[ba]}/{letters[bb]}", ha="center", va="center", fontsize=10,
                    color="white" if abs(math.log(r)) > 0.6 * span else "black")
    ax.set_xticks(range(len(seq_lens)), [f"{s:,}" for s in seq_lens], fontsize=10)
    ax.set_yticks(range(len(batch_sizes)), [str(b) for b in batch_sizes], fontsize=10)
    seq_label = "KV-cache length (tokens)" if phase == "decode" else "prompt length (tokens)"
    ax.set_xlabel(seq_label, fontsize=11)
    ax.set_ylabel("batch size (sequences)", fontsize=11)
    ax.set_title(f"{name_a} vs {name_b}: {model} {phase}, time({name_b}) / time({name_a})\n"
                 f"C = compute-bound, M = bandwidth-bound ({name_a}/{name_b})", fontsize=11)
    cbar = fig.colorbar(im, ax=ax)
    cbar.set_label(f"← {name_b} faster    time ratio    {name_a} faster →", fontsize=10)
    handles = [Patch(color=matplotlib.colormaps["RdBu"](0.9), label=f"{name_a} faster (> 1)"),
               Patch(color=matplotlib.colormaps["RdBu"](0.1), label=f"{name_b} faster (< 1)")]
    if not all(all(r) for r in ok):
        label = "does not fit on one card or both"
        if beyond and any(any(r) for r in beyond):
            label += ", or beyond the model's context"
        handles.append(Patch(color=MASK_COLOUR, label=label))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=len(handles), fontsize=9, frameon=False)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def default_png(name_a: str, name_b: str, model: str, phase: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in ".-" else "-" for ch in f"{name_a}-vs-{name_b}-{model}-{phase}".lower())
    return Path("advisor-out") / f"compare-{safe}.png"


def compare(
    hardware: str = typer.Option(..., "--hardware", help="First card, e.g. a100x1 (A in the ratio); a100x2: two in tensor parallel."),
    vs: str = typer.Option(..., "--vs", help="Second card, e.g. h20x1 (B in the ratio); h20x8: eight in tensor parallel."),
    model: str = typer.Option(..., "--model", help="Catalog model name, hub id, inline JSON or config.json path."),
    phase: str = typer.Option("decode", "--phase", help="decode (one step at a KV length) or prefill (prompt length)."),
    batch: str = typer.Option(DEFAULT_BATCH, "--batch", help="Batch sizes, comma-separated."),
    seq: str = typer.Option(DEFAULT_SEQ, "--seq", help="Sequence lengths in tokens, comma-separated."),
    png: Optional[Path] = typer.Option(None, "--png", help="Where to write the heatmap (default: advisor-out/compare-A-vs-B-MODEL-PHASE.png)."),
    no_png: bool = typer.Option(False, "--no-png", help="Do not write the heatmap."),
    as_json: bool = typer.Option(False, "--json", help="Print the mesh as one JSON object instead of a table."),
) -> None:
    """Which of two cards serves a model faster, over batch size x sequence length (roofline mesh)."""
    if phase not in ("decode", "prefill"):
        fail(f"--phase must be 'decode' or 'prefill', got {phase!r}", code=2)
    batches, seqs = _ints(batch, "--batch", MAX_BATCH), _ints(seq, "--seq", MAX_SEQ)
    if png is not None:
        check_writable(png, "--png")
    try:
        if model.lstrip().startswith("{"):
            try:
                model_arg = json.loads(model)
            except (ValueError, RecursionError) as e:
                fail(f"--model is not valid JSON: {getattr(e, 'msg', type(e).__name__)}", code=2)
        else:
            model_arg = model
        m = serving_comparison(hardware, vs, model_arg, phase, batches, seqs, default_seqs=seq == DEFAULT_SEQ)
    except AdvisorError as e:
        fail_input(e)
    except (ArithmeticError, ValueError) as e:  # sizes so extreme the arithmetic breaks
        fail(f"cannot compute this mesh ({type(e).__name__}: {str(e)[:120]})")
    ratio, bound, fits, beyond, seqs = m["ratio"], m["bound"], m["fits"], m["beyond"], m["seq_lens"]
    name_a, name_b, ctx, regions = m["a"], m["b"], m["context"], m["regions"]
    pa_id, pb_id, arch_name = m["a_id"], m["b_id"], m["model"]
    if not no_png:
        png = png or default_png(name_a, name_b, arch_name, phase)
        try:
            atomic_write_bytes(png, heatmap_png(ratio, bound, batches, seqs, name_a, name_b, arch_name, phase, fits, beyond))
        except OSError as e:
            fail(f"cannot write {str(png)!r}: {e.strerror or e}")
    if as_json:
        out = {"a": pa_id, "b": pb_id, "model": arch_name, "phase": phase, "batch_sizes": batches, "seq_lens": seqs,
               "ratio_b_over_a": ratio, "bound": [[list(c) for c in row] for row in bound],
               "fits": [[list(c) for c in row] for row in fits], "beyond_context": beyond, "context": ctx,
               "regions": regions, "omitted_seq_lens": m["omitted_seq_lens"]}
        if not no_png:
            out["png"] = str(png)
        typer.echo(json.dumps(out))
        return
    _print_table(ratio, bound, batches, seqs, name_a, name_b, arch_name, phase, fits, beyond, ctx)
    for line in regions:
        console.print(f"• {line}")
    if m["omitted_seq_lens"]:
        console.print(f"[dim]left out of the default lengths: {', '.join(f'{x:,}' for x in m['omitted_seq_lens'])} "
                      f"(at or past the model's {ctx:,}-token context)[/]", highlight=False)
    if not no_png:
        console.print(f"heatmap written to {png}", highlight=False, soft_wrap=True)


def serving_comparison(hardware: str, vs: str, model, phase: str, batches: list[int], seqs: list[int],
                       default_seqs: bool = False) -> dict:
    """The one comparison the CLI and the explorer format: both cards through the serving model, cells that
    do not fit or pass the model's context masked, the regions in words. Raises AdvisorError."""
    from advisor.cases import context_length
    from advisor.predictor import Predictor
    from knowledge.catalog import resolve_model, resolve_platform
    from models.compare import describe_regions, predicted_mesh

    if phase not in ("decode", "prefill"):
        raise AdvisorError(f"phase must be 'decode' or 'prefill', got {phase!r}")
    pa, pb = resolve_platform(hardware), resolve_platform(vs)
    if pa == pb:  # every cell a draw, and "h100x1 faster" printed for both colours
        raise AdvisorError(f"--hardware {hardware} and --vs {vs} are the same platform: compare two different ones")
    arch = resolve_model(model)
    ctx = context_length(arch)
    seqs = list(seqs)
    omitted: list[int] = []
    if ctx is not None and seqs[-1] > ctx and default_seqs:  # the default grid stops at the context
        omitted = [x for x in seqs if x > ctx]
        seqs = sorted({*(x for x in seqs if x <= ctx), ctx})
    if ctx is not None and seqs[0] > ctx:
        raise AdvisorError(f"--seq {seqs[0]} exceeds the {ctx}-token context of {arch.name}: every cell would be masked")
    predictor = Predictor()
    cell_a, cell_b = (serve_cell(predictor, hw, model, phase, p.count) for hw, p in ((hardware, pa), (vs, pb)))
    ratio, bound, fits, beyond = predicted_mesh(cell_a, cell_b, list(batches), seqs, phase, ctx)
    dropped: list[int] = []
    if default_seqs:  # the default grid shows no column that is all past the context (decode at the full context)
        keep = [j for j in range(len(seqs)) if not all(row[j] for row in beyond)]
        if keep and len(keep) < len(seqs):
            dropped = [seqs[j] for j in range(len(seqs)) if j not in keep]
            seqs = [seqs[j] for j in keep]
            ratio, bound, beyond = ([[row[j] for j in keep] for row in m] for m in (ratio, bound, beyond))
            fits = [[row[j] for j in keep] for row in fits] if fits else fits
    # a server of several cards serves as one engine over all of them (tensor parallelism): "8×H20"
    name_a, name_b = (p.gpu.id.upper() if p.count == 1 else f"{p.count}×{p.gpu.id.upper()}" for p in (pa, pb))
    if name_a == name_b:
        name_a, name_b = pa.id, pb.id
    regions = describe_regions(name_a, name_b, list(batches), seqs, ratio, bound, fits=fits, beyond=beyond, context=ctx)
    return {"a": name_a, "b": name_b, "a_id": pa.id, "b_id": pb.id, "model": arch.name, "phase": phase,
            "batch_sizes": list(batches), "seq_lens": seqs, "ratio": ratio, "bound": bound, "fits": fits,
            "beyond": beyond, "context": ctx, "regions": regions,
            "omitted_seq_lens": sorted({*omitted, *dropped} - set(seqs))}


def serve_cell(predictor, hardware: str, model, phase: str, tensor_parallel: int):
    """One side's cell for the mesh, from the serving model (``Predictor``): one engine over ``tensor_parallel`` GPUs
    (all of the side's: ``a100x1`` one card, ``h20x8`` eight in tensor parallel), 16-bit weights and KV, a decode step
    at a KV length of ``seq`` or a prefill of ``seq`` tokens. Returns (seconds, bound, fits). Each GPU count was once
    taken as one card: Llama-2-70B on 8 x H20 (768 GB) came out "neither card fits"."""
    from knowledge.schema import ServeCase

    def cell(batch: int, seq: int) -> tuple[float, str, bool]:
        p = predictor.predict(ServeCase(id=f"{hardware}-b{batch}-s{seq}", hardware=hardware, model=model, task="serve",
                                        batch_size=batch, prompt_len=seq, kv_len=seq, tensor_parallel=tensor_parallel, replicas=1,
                                        weight_bits=16, kv_bits=16))
        bd = p.breakdown
        if phase == "prefill":
            t, compute = p.prefill_s, bd.prefill_compute_s if bd else 0.0
            rest = bd.prefill_memory_s if bd else 1.0
        else:
            t, compute = p.decode_step_s, bd.decode_compute_s if bd else 0.0
            rest = (bd.decode_weights_s + bd.decode_kv_s) if bd else 1.0
        return t, ("compute" if compute >= rest else "memory"), p.fits

    return cell


def _print_table(ratio, bound, batches, seqs, name_a: str, name_b: str, model: str, phase: str, fits=None,
                 beyond=None, context: int | None = None) -> None:
    from rich.table import Table

    from models.compare import TIE

    t = Table(title=f"{model} {phase}: time {name_b} / time {name_a} (> 1: {name_a} faster; C/M = compute/bandwidth-bound {name_a}/{name_b})",
              title_justify="left")
    t.add_column("batch \\ seq", justify="right")
    for s in seqs:
        t.add_column(f"{s:,}", justify="right")
    letters = {"compute": "C", "memory": "M"}
    for i, b in enumerate(batches):
        cells = []
        for j, r in enumerate(ratio[i]):
            fa, fb = fits[i][j] if fits else (True, True)
            if beyond and beyond[i][j]:
                cells.append("[dim]> context[/]")
                continue
            if not (fa and fb):
                cells.append(f"[dim]{'only ' + name_a if fa else 'only ' + name_b if fb else 'no fit'}[/]")
                continue
            colour = A_COLOUR if r > 1 + TIE else B_COLOUR if r < 1 - TIE else "default"
            ba, bb = bound[i][j]
            cells.append(f"[{colour}]{r:.2f}[/] [dim]{letters[ba]}/{letters[bb]}[/]")
        t.add_row(str(b), *cells)
    console.print(t)
    console.print(f"[{A_COLOUR}]blue[/]: {name_a} faster, [{B_COLOUR}]red[/]: {name_b} faster, plain: within {TIE:.0%}, "
                  "[dim]grey[/]: does not fit on that card (as in the heatmap)"
                  + (f"; [dim]> context[/]: past the model's {context:,}-token context, not predicted" if beyond and any(any(r) for r in beyond) else ""))


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
