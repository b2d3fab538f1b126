"""`advisor validate` and `advisor calibrate`: measured error on held-out groups, and the refit."""

from __future__ import annotations

import sys

import json
from enum import Enum
from typing import Any

import typer
from rich.table import Table

from advisor.output import console, fail


class Holdout(str, Enum):
    gpu = "gpu"
    platform = "platform"
    server = "server"
    model = "model"
    dataset = "dataset"
    regime = "regime"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def validate(
    data: str = typer.Option("all", "--data", help="all, published, own, or one data set name (e.g. own-h100)."),
    holdout: Holdout = typer.Option(Holdout.model, "--holdout", help="Group held out of each fit."),
    as_json: bool = typer.Option(False, "--json"),
    recompute: bool = typer.Option(False, "--recompute", help="Refit every held-out group even if the cached report is current."),
) -> None:
    """Prediction error against real runs, each group predicted by a fit that never saw it, with and without
    the machine's profile. The report is cached by a fingerprint of the data, the fit and the model code."""
    from advisor.validation import validation_report
    from advisor.validation_cache import cached_report, store_report
    from knowledge.errors import AdvisorError

    try:
        rep = None if recompute else cached_report(data, holdout.value)
        if rep is None:
            from advisor.progress import steps_bar

            with steps_bar(f"leave-one-{holdout.value}-out fits") as step:
                rep = validation_report(data, holdout.value, progress=step)
            rep.pop("_held", None)
            store_report(data, holdout.value, rep)
    except (AdvisorError, ValueError) as e:
        fail(str(e))
    from knowledge.efficiency import load_serving_held_out

    serving = load_serving_held_out()
    if as_json:
        print(json.dumps({**rep, "serving": serving}, indent=2))
        return
    _print_report(rep, data)
    _print_serving(serving)


def _print_serving(serving: dict[str, dict]) -> None:
    """Serving's held-out errors, from the serving fit (``advisor calibrate`` measures them)."""
    if not serving:
        return
    t = Table(title="Serving (our runs): held-out MAPE (n)", title_justify="left")
    for col in ("held out by", "prefill", "decode step", "end to end", "peak GPU memory"):
        t.add_column(col, justify="left" if col == "held out by" else "right")
    for by, e in serving.items():
        cells = [f"{_pct(e[k]['mape'])} ({e[k]['n']})" if k in e else "-" for k in
                 ("prefill_s", "decode_step_s", "e2e_output_tokens_per_s", "peak_mem_gib")]
        t.add_row(by, *cells)
    console.print(t)


def _print_report(rep: dict[str, Any], data: str) -> None:
    holdout = rep["holdout"]
    t = Table(title=f"Throughput (tokens/s), held out by {holdout}: {rep['rows']} rows of '{data}'", title_justify="left")
    for c in ("held-out group", "n", "MAPE", "n profiled", "w/o profile", "with profile"):
        t.add_column(c, justify="left" if c == "held-out group" else "right")
    for g in rep["throughput_by_group"]:
        t.add_row(g["group"], str(g["n"]), _pct(g["mape"]), str(g["n_profiled"]), _pct(g["mape_profiled_without"]), _pct(g["mape_profiled_with"]))
    o = rep["throughput_overall"]
    t.add_row("[bold]all held-out[/]", str(o["n"]), f"[bold]{_pct(o['mape'])}[/]", str(o["n_profiled"]),
              _pct(o["mape_profiled_without"]), _pct(o["mape_profiled_with"]))
    console.print(t)
    t1 = Table(title="Own runs by regime (same held-out predictions)", title_justify="left")
    for c in ("regime", "n", "MAPE", "n profiled", "w/o profile", "with profile"):
        t1.add_column(c, justify="left" if c == "regime" else "right")
    for g in rep["throughput_by_regime"]:
        t1.add_row(g["regime"], str(g["n"]), _pct(g["mape"]), str(g["n_profiled"]), _pct(g["mape_profiled_without"]), _pct(g["mape_profiled_with"]))
    console.print(t1)
    t2 = Table(title="Per data set", title_justify="left")
    for c in ("data set", "tokens/s MAPE (n)", "peak memory MAPE (n)", "memory within 10%", "fit verdict right (n)"):
        t2.add_column(c, justify="right" if c != "data set" else "left")
    names = sorted(set(rep["throughput_by_dataset"]) | set(rep["memory_by_dataset"]) | set(rep["fit_verdict_by_dataset"]))
    for k in names:
        tp, mm, fv = rep["throughput_by_dataset"].get(k), rep["memory_by_dataset"].get(k), rep["fit_verdict_by_dataset"].get(k)
        t2.add_row(
            k, f"{_pct(tp['mape'])} ({tp['n']})" if tp else "-", f"{_pct(mm['mape'])} ({mm['n']})" if mm else "-",
            f"{mm['within_10pct']:.0%}" if mm else "-", f"{fv['accuracy']:.1%} ({fv['n']})" if fv else "-",
        )
    console.print(t2)
    if rep.get("host_memory_offload"):
        h = rep["host_memory_offload"]
        console.print(f"Host RAM of offload runs: MAPE {_pct(h['mape'])} (n={h['n']}, measured as the rise of the node's used RAM); "
                      f"host kills among the runs: {rep['host_kills']}", highlight=False)
    if rep["regret_by_grid"]:
        t3 = Table(title="Regret of the best-predicted configuration in each measured grid (held-out predictions)", title_justify="left")
        t3.add_column("grid")
        t3.add_column("regret", justify="right")
        for k, v in rep["regret_by_grid"].items():
            t3.add_row(k, f"{v:.1%}")
        console.print(t3)
        console.print(f"grids within 5% of the best measured: {rep['regret_within_5pct']:.0%}")
    console.print("Memory and fit verdicts use the bundled calibration (bytes, not fitted efficiencies); published peak "
                  "memory is the paper's 'GB' figure (not max_memory_allocated).", style="dim")


def calibrate(
    data: str = typer.Option("all", "--data", help="Rows to fit on: all, published, own, or a data set name."),
    holdout: Holdout = typer.Option(Holdout.model, "--holdout", help="Group held out to measure the stored error."),
    full: bool = typer.Option(False, "--full", help="Refit every parameter, serving's too, and measure the held-out error again (20-30 minutes on 2 cores)."),
    quick: bool = typer.Option(False, "--quick", hidden=True, help="Kept for old scripts: the default is the quick refit."),
    bundled: bool = typer.Option(False, "--bundled", help="Maintainers: write the package's own fit and reports, not ADVISOR_HOME's."),
) -> None:
    """Refit the learned correction on every measurement (bundled and yours) into ADVISOR_HOME.

    By default (well under a minute): the per-platform factors are refitted over the previous fit's shared parameters, so rows `advisor confirm` added teach their machine; the held-out figures are the previous fit's. --full refits everything and measures the held-out error again.
    """
    from advisor.calibrate import fast_refit, refit
    from advisor.progress import steps, steps_bar
    from advisor.validation_cache import store_report
    from knowledge.efficiency import CALIBRATION_DIR
    from knowledge.errors import AdvisorError
    from knowledge.paths import user_calibration_path

    out = CALIBRATION_DIR / "fitted.json" if bundled else user_calibration_path()
    try:
        report = None
        if not full:
            with steps("refitting the platform factors", disable=not sys.stderr.isatty()) as update:
                res = fast_refit(data, out=out, progress=lambda f: update("refitting the platform factors", f))
            res.pop("_report", None)
        else:
            with steps_bar("calibrating") as step:
                step("fitting every row")
                res = refit(data, holdout.value, out=out, progress=step, measure_holdout=True)
                report = res.pop("_report", None)
        if report is not None:
            store_report(data, holdout.value, report, bundled=bundled)
    except (AdvisorError, ValueError) as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot write {out}: {e.strerror or e}")
    kept = " (the previous fit's; --full measures them again)" if res.get("held_out_from_previous_fit") else ""
    console.print(f"wrote {out}", highlight=False, soft_wrap=True)
    console.print(f"{'full refit' if full else 'quick refit (platform factors)'} on {res['fitted_on']['rows']} rows "
                  f"({', '.join(res['fitted_on']['datasets'])}); train MAPE {res['train_mape']:.1%}; held-out by "
                  f"{res.get('held_out_by')}{kept}: "
                  + ", ".join(f"{k} {v:.1%} (n={res.get('held_out_n', {}).get(k)})" for k, v in res.get("held_out_mape", {}).items()),
                  highlight=False)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
    app.command("calibrate")(calibrate)
