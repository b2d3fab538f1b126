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

from advisor.output import check_writable, console, fail
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
    bad = next((x for x in parts if not re.fullmatch(r"[0-9]{1,9}", x)), None)
    if bad is not None:
        fail(f"{flag} must be comma-separated positive integers, got {bad[:40]!r}", code=2)
    values = sorted({int(x) for x in parts})
    if not values or values[0] < 1 or values[-1] > limit:
        fail(f"{flag} must list integers in 1..{limit}, got {text[:60]!r}", code=2)
    if len(values) > MAX_VALUES:
        fail(f"{flag} lists {len(values)} values; at most {MAX_VALUES}", code=2)
    return values


def heatmap_png(ratio: list[list[float]], bound: list[list[tuple[str, str]]], batch_sizes: list[int],
                seq_lens: list[int], name_a: str, name_b: str, model: str, phase: str) -> bytes:
    """PNG bytes of the annotated mesh; blue = A faster, red = B faster, white = a draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    flat = [r for row in ratio for r in row]
    # symmetric in log space around 1 so that 2x and 0.5x get equally strong colours
    span = max(abs(math.log(min(flat))), abs(math.log(max(flat))), math.log(1.05))
    norm = TwoSlopeNorm(vmin=math.exp(-span), vcenter=1.0, vmax=math.exp(span))
    fig, ax = plt.subplots(figsize=(1.3 * len(seq_lens) + 2.5, 0.8 * len(batch_sizes) + 2.0), dpi=110)
    im = ax.imshow(ratio, cmap="RdBu", norm=norm, origin="lower", aspect="auto")
    letters = {"compute": "C", "memory": "M"}
    for i, row in enumerate(ratio):
        for j, r in enumerate(row):
            ba, bb = bound[i][j]
            ax.text(j, i, f"{r:.2f}\n{letters[ba]}/{letters[bb]}", ha="center", va="center", fontsize=8,
                    color="white" if abs(math.log(r)) > 0.6 * span else "black")
    ax.set_xticks(range(len(seq_lens)), [str(s) for s in seq_lens])
    ax.set_yticks(range(len(batch_sizes)), [str(b) for b in batch_sizes])
    seq_label = "KV-cache length (tokens)" if phase == "decode" else "prompt length (tokens)"
    ax.set_xlabel(seq_label)
    ax.set_ylabel("batch size (sequences)")
    ax.set_title(f"{name_a} vs {name_b}, {model} {phase}\ntime({name_b}) / time({name_a}); > 1: {name_a} faster"
                 " (C = compute-bound, M = bandwidth-bound)", fontsize=9)
    fig.colorbar(im, ax=ax, label=f"time ratio {name_b} / {name_a}")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def compare(
    hardware: str = typer.Option(..., "--hardware", help="First card, e.g. a100x1 (A in the ratio)."),
    vs: str = typer.Option(..., "--vs", help="Second card, e.g. h20x1 (B in the ratio)."),
    model: str = typer.Option(..., "--model", help="Catalog model name, inline JSON or config.json path."),
    phase: str = typer.Option("decode", "--phase", help="decode (one step at a KV length) or prefill (prompt length)."),
    batch: str = typer.Option(DEFAULT_BATCH, "--batch", help="Batch sizes, comma-separated."),
    seq: str = typer.Option(DEFAULT_SEQ, "--seq", help="Sequence lengths in tokens, comma-separated."),
    png: Optional[Path] = typer.Option(None, "--png", help="Write the heatmap here (PNG)."),
    as_json: bool = typer.Option(False, "--json", help="Print the mesh as one JSON object instead of a table."),
) -> None:
    """Which of two cards serves a model faster, over batch size x sequence length (roofline mesh)."""
    from knowledge.catalog import resolve_model, resolve_platform
    from knowledge.efficiency import load_efficiencies
    from models.compare import comparison_mesh, describe_regions

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
        pa, pb = resolve_platform(hardware), resolve_platform(vs)
        arch = resolve_model(model_arg)
        from advisor.cases import context_length

        ctx = context_length(arch)
        if ctx is not None and seqs[-1] > ctx and seq == DEFAULT_SEQ:  # the default grid stops at the context
            seqs = sorted({*(x for x in seqs if x <= ctx), ctx})
        if ctx is not None and seqs[-1] > ctx:
            raise AdvisorError(f"--seq {seqs[-1]} exceeds the {ctx}-token context of {arch.name}")
        ratio, bound = comparison_mesh(arch, pa, pb, load_efficiencies(task="serve"), batches, seqs, phase)
    except AdvisorError as e:
        fail(str(e))
    except (ArithmeticError, ValueError) as e:  # sizes so extreme the arithmetic breaks
        fail(f"cannot compute this mesh ({type(e).__name__}: {str(e)[:120]})")
    name_a, name_b = pa.gpu.id.upper(), pb.gpu.id.upper()
    if name_a == name_b:
        name_a, name_b = pa.id, pb.id
    regions = describe_regions(name_a, name_b, batches, seqs, ratio, bound)
    if png is not None:
        try:
            atomic_write_bytes(png, heatmap_png(ratio, bound, batches, seqs, name_a, name_b, arch.name, phase))
        except OSError as e:
            fail(f"cannot write {str(png)!r}: {e.strerror or e}")
    if as_json:
        out = {"a": pa.id, "b": pb.id, "model": arch.name, "phase": phase, "batch_sizes": batches, "seq_lens": seqs,
               "ratio_b_over_a": ratio, "bound": [[list(c) for c in row] for row in bound], "regions": regions}
        if png is not None:
            out["png"] = str(png)
        typer.echo(json.dumps(out))
        return
    _print_table(ratio, bound, batches, seqs, name_a, name_b, arch.name, phase)
    for line in regions:
        console.print(f"• {line}")
    if png is not None:
        console.print(f"heatmap written to {png}")


def _print_table(ratio, bound, batches, seqs, name_a: str, name_b: str, model: str, phase: str) -> None:
    from rich.table import Table

    from models.compare import TIE

    t = Table(title=f"{model} {phase}: time {name_b} / time {name_a} (> 1: {name_a} faster; C/M = compute/bandwidth-bound {name_a}/{name_b})",
              title_justify="left")
    t.add_column("batch \\ seq", justify="right")
    for s in seqs:
        t.add_column(str(s), justify="right")
    letters = {"compute": "C", "memory": "M"}
    for i, b in enumerate(batches):
        cells = []
        for j, r in enumerate(ratio[i]):
            colour = "green" if r > 1 + TIE else "red" if r < 1 - TIE else "yellow"
            ba, bb = bound[i][j]
            cells.append(f"[{colour}]{r:.2f}[/] [dim]{letters[ba]}/{letters[bb]}[/]")
        t.add_row(str(b), *cells)
    console.print(t)
    console.print(f"[green]green[/]: {name_a} faster, [red]red[/]: {name_b} faster, [yellow]yellow[/]: within {TIE:.0%}")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
