"""Rich tables for people; the JSON output is for programs."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from advisor.output import console
from knowledge.schema import ErrorLine, ServePrediction, TrainPrediction


SYMMETRIC_WITHIN = 2  # percentage points: bounds this close to equal read as one "±"


def error_bar(below: float, above: float) -> str:
    """' ±24%' for an interval about as far below the value as above it, else ' −50/+99%'. ``below`` and ``above`` are
    fractions of the value. A held-out error applied as a factor (value / 2 .. value x 2) is lopsided, and "±99%"
    would claim the run may reach 1% of the prediction when the floor is half of it."""
    lo, hi = round(below * 100), round(above * 100)
    if abs(lo - hi) <= SYMMETRIC_WITHIN:
        return f" ±{max(lo, hi)}%"
    return f" −{lo}/+{hi}%"


def relative_range(value: float | None, bounds: tuple[float, float] | list[float] | None) -> tuple[float, float] | None:
    """An interval (low, high) around ``value`` as fractions of it below and above; None without either."""
    if not bounds or not value:
        return None
    return (value - bounds[0]) / value, (bounds[1] - value) / value


def with_error(value: float, rel: tuple[float, float] | None, wrap: bool = False) -> str:
    """'13,309 ±24%', or '14,286 −50/+99%' (``wrap``: the lopsided bar on a line of its own, so an 80-column table
    keeps the width of '±'); just the value without ``rel``, the error (below, above) as fractions of it."""
    text = f"{value:,.0f}"
    if rel is None:
        return text
    bar = error_bar(*rel)
    return text + ("\n" + bar.lstrip() if wrap and "±" not in bar else bar)


def _fits(ok: bool) -> str:
    return "[green]yes[/]" if ok else "[red]no[/]"


def not_run(p) -> str:
    """What a configuration that does not fit shows instead of a throughput: 'would need 1,414 GiB per GPU'
    (or the host RAM it would need): it cannot run, so no tokens/s is shown as if it did. A serving batch larger than
    the engine's KV pool is no crash: the engine runs the sequences the pool holds and queues the rest (its ``note``)."""
    if getattr(p, "failure", None) == "host_oom" and getattr(p, "host_mem_gib", None):
        return f"does not fit: would need {p.host_mem_gib:,.0f} GiB of host RAM"
    if getattr(p, "note", None) and getattr(p, "max_batch_size", None):
        # an engine's KV pool too small for the batch: it runs what the pool holds and queues the rest (not a crash)
        return f"{p.engine} pool holds {p.max_batch_size:,} at once; the rest queue"
    need = getattr(p, "required_gib", None) or p.peak_mem_gib
    return f"does not fit: would need {need:,.0f} GiB per GPU"


def predictions_table(results: Sequence[TrainPrediction | ServePrediction | ErrorLine]) -> None:
    train = Table(title="Training predictions", title_justify="left")
    for col in ("id", "tokens/s", "step (s)", "GiB/GPU", "fits", "where the time goes"):
        train.add_column(col, justify="right" if col not in ("id", "where the time goes") else "left")
    serve = Table(title="Serving predictions", title_justify="left")
    for col in ("id", "prefill (s)", "decode step (ms)", "decode tok/s", "e2e out tok/s", "GiB/GPU", "fits"):
        serve.add_column(col, justify="right" if col != "id" else "left")
    errors = []
    for r in results:
        if isinstance(r, TrainPrediction):
            if r.fits:
                train.add_row(r.id, f"{r.tokens_per_s:,.0f}", f"{r.step_time_s:.3f}", f"{r.peak_mem_gib:.1f}", _fits(r.fits), time_summary(r))
            else:  # it cannot run: no throughput shown as if it did
                train.add_row(r.id, "-", "-", f"{r.peak_mem_gib:.1f}", _fits(r.fits), not_run(r))
        elif isinstance(r, ServePrediction):
            e2e = f"{r.e2e_output_tokens_per_s:,.0f}" if r.e2e_output_tokens_per_s else "-"
            if r.fits:
                serve.add_row(r.id, f"{r.prefill_s:.3f}", f"{r.decode_step_s * 1e3:.2f}", f"{r.decode_tokens_per_s:,.0f}", e2e, f"{r.peak_mem_gib:.1f}", _fits(r.fits))
            else:
                serve.add_row(r.id, "-", "-", not_run(r), "-", f"{r.peak_mem_gib:.1f}", _fits(r.fits))
        else:
            errors.append(r)
    if train.row_count:
        console.print(train)
    if serve.row_count:
        console.print(serve)
    for e in errors:
        console.print(f"[red]{e.id}[/]: {e.error}", markup=True, highlight=False)


def time_summary(p: TrainPrediction) -> str:
    """The two largest phases of the step, as shares: 'backward 48%, communication 30%'."""
    if p.breakdown is None:
        return ""
    b = p.breakdown
    phases = {
        "forward": b.forward_s, "backward": b.backward_s, "optimizer": b.optimizer_s,
        "communication": b.communication_s, "offload": b.offload_s, "overhead": b.overhead_s,
    }
    total = sum(phases.values()) or 1.0
    top = sorted(phases.items(), key=lambda kv: -kv[1])[:2]
    return ", ".join(f"{k} {v / total:.0%}" for k, v in top if v > 0)
