"""`advisor validate` and `advisor calibrate`: measured error on held-out groups, and the refit."""

from __future__ import annotations

import sys

import json
from enum import Enum
from typing import Any  # noqa: F401

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
    as_json: bool = typer.Option(False, "--json", help="The whole report as JSON (every figure, for programs)."),
    recompute: bool = typer.Option(False, "--recompute", help="Refit every held-out group even if the cached report is current."),
) -> None:
    """Prediction error against real runs, each group predicted by a fit that never saw it, with and without its machine's profile.

    The report is cached by a fingerprint of the data, the fit and the model code (--recompute refits).
    """
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
    from advisor.validation_display import print_report

    print_report(rep, console)
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
