"""`advisor validate` and `advisor calibrate`: measured error on held-out groups, and the refit."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import typer
from rich.table import Table

from advisor.output import console, err_console, fail


class Holdout(str, Enum):
    gpu = "gpu"
    platform = "platform"
    model = "model"
    dataset = "dataset"


def _status(msg: str):
    return err_console.status(msg, spinner="dots")


def validation_report(data: str, holdout: str, progress=None) -> dict[str, Any]:
    """Every accuracy figure of the project, computed on held-out groups only (throughput)."""
    from advisor.calibrate import measurements
    from advisor.evaluation import fit_verdicts, held_out_throughput, mape, memory_pairs, regrets, training_rows
    from knowledge.efficiency import load_efficiencies

    ms, problems = measurements(data)
    rows, skipped = training_rows(ms)
    if not rows:
        raise ValueError(f"no training measurements in data set {data!r}")
    held = held_out_throughput(rows, holdout, progress)
    groups = []
    all_pairs = []
    by_dataset: dict[str, list[tuple[float, float]]] = {}
    for g, pairs in held.items():
        pm = [(p, r.m.measured.tokens_per_s) for r, p in pairs]
        all_pairs += pairs
        groups.append({"group": g, "n": len(pm), "mape_tokens_per_s": mape(pm)})
        for r, p in pairs:
            by_dataset.setdefault(r.m.dataset, []).append((p, r.m.measured.tokens_per_s))
    # memory and the fit verdict use no fitted parameter (efficiencies only set times): no fit needed
    eff = load_efficiencies()
    mem = memory_pairs(rows, eff)
    verdicts = fit_verdicts(rows, eff)
    reg = regrets(all_pairs)
    return {
        "data": data, "holdout": holdout, "rows": len(rows), "skipped": len(skipped) + len(problems),
        "throughput_by_group": groups,
        "throughput_by_dataset": {k: {"n": len(v), "mape": mape(v)} for k, v in by_dataset.items()},
        "throughput_overall": {"n": len(all_pairs), "mape": mape([(p, r.m.measured.tokens_per_s) for r, p in all_pairs])},
        "memory_by_dataset": {k: {"n": len(v), "mape": mape(v), "within_10pct": sum(abs(p - m) / m <= 0.10 for p, m in v) / len(v)} for k, v in mem.items()},
        "fit_verdict_by_dataset": {k: {"n": t, "accuracy": ok / t} for k, (ok, t) in verdicts.items()},
        "regret_by_grid": {k: v for k, v in sorted(reg.items())},
        "regret_within_5pct": (sum(v <= 0.05 for v in reg.values()) / len(reg)) if reg else None,
    }


def validate(
    data: str = typer.Option("all", "--data", help="all, published, own, or one data set name (e.g. own-h100)."),
    holdout: Holdout = typer.Option(Holdout.platform, "--holdout", help="Group held out of each fit."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Prediction error against real runs, each group predicted by a fit that never saw it."""
    from knowledge.errors import AdvisorError

    try:
        with _status(f"leave-one-{holdout.value}-out fits") as st:
            rep = validation_report(data, holdout.value, progress=lambda g: st.update(f"fitting without {g}"))
    except (AdvisorError, ValueError) as e:
        fail(str(e))
    if as_json:
        print(json.dumps(rep, indent=2))
        return
    t = Table(title=f"Throughput, held out by {holdout.value} ({rep['rows']} rows of '{data}')", title_justify="left")
    for c in ("held-out group", "n", "MAPE tokens/s"):
        t.add_column(c, justify="left" if c == "held-out group" else "right")
    for g in rep["throughput_by_group"]:
        t.add_row(g["group"], str(g["n"]), f"{g['mape_tokens_per_s']:.1%}")
    o = rep["throughput_overall"]
    t.add_row("[bold]all held-out[/]", str(o["n"]), f"[bold]{o['mape']:.1%}[/]")
    console.print(t)
    t2 = Table(title="Per data set", title_justify="left")
    for c in ("data set", "tokens/s MAPE (n)", "peak memory MAPE (n)", "memory within 10%", "fit/OOM right (n)"):
        t2.add_column(c, justify="right" if c != "data set" else "left")
    names = sorted(set(rep["throughput_by_dataset"]) | set(rep["memory_by_dataset"]) | set(rep["fit_verdict_by_dataset"]))
    for k in names:
        tp, mm, fv = rep["throughput_by_dataset"].get(k), rep["memory_by_dataset"].get(k), rep["fit_verdict_by_dataset"].get(k)
        t2.add_row(
            k, f"{tp['mape']:.1%} ({tp['n']})" if tp else "-", f"{mm['mape']:.1%} ({mm['n']})" if mm else "-",
            f"{mm['within_10pct']:.0%}" if mm else "-", f"{fv['accuracy']:.1%} ({fv['n']})" if fv else "-",
        )
    console.print(t2)
    if rep["regret_by_grid"]:
        t3 = Table(title="Regret of the best-predicted configuration in each measured grid (held-out predictions)", title_justify="left")
        t3.add_column("grid")
        t3.add_column("regret", justify="right")
        for k, v in rep["regret_by_grid"].items():
            t3.add_row(k, f"{v:.1%}")
        console.print(t3)
        console.print(f"grids within 5% of the best measured: {rep['regret_within_5pct']:.0%}")
    console.print("Memory and fit verdicts use no fitted parameter; published peak memory is the paper's 'GB' figure (not max_memory_allocated).", style="dim")


def calibrate(
    data: str = typer.Option("all", "--data", help="Rows to fit on: all, published, own, or a data set name."),
    holdout: Holdout = typer.Option(Holdout.platform, "--holdout", help="Group held out to measure the stored error."),
) -> None:
    """Refit the learned correction on the measurements and store it (knowledge/calibration/fitted.json)."""
    from advisor.calibrate import refit
    from knowledge.errors import AdvisorError

    try:
        with _status("fitting") as st:
            res = refit(data, holdout.value, progress=lambda g: st.update(f"held-out fit without {g}"))
    except (AdvisorError, ValueError) as e:
        fail(str(e))
    console.print(f"fitted on {res['fitted_on']['rows']} rows ({', '.join(res['fitted_on']['datasets'])}); "
                  f"train MAPE {res['train_mape']:.1%}; held-out by {holdout.value}: "
                  + ", ".join(f"{k} {v:.1%} (n={res['held_out_n'][k]})" for k, v in res["held_out_mape"].items()))


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
    app.command("calibrate")(calibrate)
