"""Refit the learned correction on every measurement and store it with its held-out error."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.evaluation import (
    fit_correction, fit_serving, held_out_serving, mape, serving_errors, serving_rows, training_rows,
)
from models.correction import SERVING_FITTED
from knowledge.efficiency import CALIBRATION_DIR, Efficiencies, load_efficiencies
from knowledge.measurements import all_measurements, load_own, load_profile_rows, load_published
from knowledge.schema import Measurement
from knowledge.store import atomic_write_json


def measurements(data: str = "all", own_dir: Path | None = None) -> tuple[list[Measurement], list[str]]:
    """The rows of a data set: 'published', 'own', 'all', or one dataset name (e.g. 'own-h100')."""
    own, problems = load_own(own_dir) if own_dir else load_own()
    own = own + load_profile_rows()
    pub = load_published()
    if data == "published":
        return pub, problems
    if data == "own":
        return own, problems
    if data == "all":
        return pub + own, problems
    rows = [m for m in pub + own if m.dataset == data]
    if not rows:
        names = sorted({m.dataset for m in pub + own})
        from knowledge.errors import unknown

        raise unknown("data set", data, ["all", "published", "own", *names])
    return rows, problems


def _previous_fit(out: Path) -> dict[str, Any]:
    """The fit ``out`` replaces: itself when it exists, else the package's bundled fit."""
    from knowledge.paths import calibration_file

    before = out if out.exists() else calibration_file()
    return json.loads(before.read_text()) if before.exists() else {}


def fast_refit(data: str = "all", out: Path = CALIBRATION_DIR / "fitted.json",
               progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """The default refit (seconds, not minutes): the shared parameters of the previous fit are kept and only the
    per-platform factors are refitted on every row, starting from the previous ones, with a loose tolerance. A
    `confirm` row on a machine teaches that machine's factors; serving's parameters and every held-out figure
    are kept from the previous fit (and marked so). ``progress(fraction)`` follows the solver."""
    previous = _previous_fit(out)
    if not previous.get("parameters"):
        return refit(data, out=out, measure_holdout=False)
    from knowledge.efficiency import load_probe_ratios
    from models.correction import EfficiencyCorrection
    from models.platform_factors import PLATFORM_PARAMS

    ms = measurements(data)[0]
    rows, _ = training_rows(ms)
    usable = [r for r in rows if r.has_throughput]
    prior = Efficiencies(**{k: v for k, v in previous["parameters"].items() if k in Efficiencies.model_fields})
    unknowns = len({r.sample[2].id for r in usable}) * len(PLATFORM_PARAMS)
    budget = 4 * (unknowns + 1)  # about three Jacobians: enough from a start this close
    est = EfficiencyCorrection(prior=prior, params=(), ratio_table=load_probe_ratios())
    model = est.fit([r.sample for r in usable], [r.m.measured.tokens_per_s for r in usable], [r.phases for r in usable],
                    start=(prior, previous.get("platform_factors", {})), max_nfev=budget, ftol=1e-3,
                    progress=(lambda n: progress(min(n / budget, 1.0))) if progress else None)
    keep = {k: v for k, v in previous.items() if k.startswith(("held_out", "serving_"))}
    result = {
        **keep,
        "parameters": model.efficiencies_.model_dump(),
        "platform_factors": model.platform_factors_,
        "fitted_on": {"data": data, "rows": model.n_samples_, "datasets": sorted({r.m.dataset for r in rows})},
        "train_mape": round(model.train_mape_, 4),
        "held_out_from_previous_fit": True,
        "refit": "fast: platform factors only, over the previous fit's shared and serving parameters",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    atomic_write_json(out, result)
    all_measurements.cache_clear()
    return result


def refit(
    data: str = "all", holdout: str = "server", out: Path = CALIBRATION_DIR / "fitted.json",
    progress: Callable[[str], None] | None = None, measure_holdout: bool = True,
) -> dict[str, Any]:
    """The full refit: every parameter on all training rows, serving's over them; with ``measure_holdout`` the
    held-out MAPE per task (the leave-one-group-out fits: many minutes); write ``out`` atomically.

    Without ``measure_holdout`` the previous held-out figures are kept (and marked as such).
    """
    ms = measurements(data)[0]
    rows, _ = training_rows(ms)
    model = fit_correction(rows)
    by_task: dict[str, list[tuple[float, float]]] = {}
    report, by_class = None, {}
    if measure_holdout:
        from advisor.validation import validation_report

        report = validation_report(data, holdout, progress)
        from advisor.validation import held_out_by_class

        by_class = held_out_by_class(report["_held"])
        for g in report["_held"]:
            if not g.row.m.dataset.startswith("zhang"):  # the intervals are for the machines people probe
                by_task.setdefault(g.row.case.task, []).append((g.predicted, g.measured))
        del report["_held"]
    # the fit this one replaces: a user's first refit keeps the bundled held-out figures when it skips them
    previous = _previous_fit(out)
    parameters = model.efficiencies_.model_dump()  # dispatch_launch_exponent included (fit_correction sets it)
    result = {
        "parameters": parameters,
        "platform_factors": model.platform_factors_,
        "fitted_on": {"data": data, "rows": model.n_samples_, "datasets": sorted({r.m.dataset for r in rows})},
        "train_mape": round(model.train_mape_, 4),
        "held_out_by": holdout if measure_holdout else previous.get("held_out_by"),
        "held_out_mape": {task: round(mape(pairs), 4) for task, pairs in by_task.items()} if measure_holdout else previous.get("held_out_mape", {}),
        "held_out_n": {task: len(pairs) for task, pairs in by_task.items()} if measure_holdout else previous.get("held_out_n", {}),
        "held_out_from_previous_fit": not measure_holdout,
        "refit": "full",
        # the intervals' relative error (knowledge.platform_class), from the same held-out predictions
        "held_out_by_class": {"train": by_class, "held_out_by": holdout} if measure_holdout else previous.get("held_out_by_class", {}),
        **serving_fit(ms, model.efficiencies_, measure_holdout, previous),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    atomic_write_json(out, result)
    all_measurements.cache_clear()
    return {**result, "_report": report}


def serving_fit(ms, prior, measure_holdout: bool, previous: dict[str, Any]) -> dict[str, Any]:
    """The serving part of a fit: parameters over the training fit ``prior``, held out by GPU and by model."""
    srows = serving_rows(ms)
    serving = fit_serving(srows, prior=prior) if srows else None
    if serving is None:
        return {"serving_parameters": {}, "serving_fitted_on": {}}
    out: dict[str, Any] = {
        "serving_parameters": {k: getattr(serving.efficiencies_, k) for k in SERVING_FITTED},
        "serving_fitted_on": {"rows": serving.n_samples_, "train_mape": round(serving.train_mape_, 4)},
    }
    for by in ("gpu", "model"):
        key = f"serving_held_out_by_{by}"
        out[key] = serving_errors(held_out_serving(srows, by, prior)) if measure_holdout else previous.get(key, {})
    return out


def refit_serving(data: str = "all", out: Path = CALIBRATION_DIR / "fitted.json") -> dict[str, Any]:
    """Refit only the serving parameters of the fit in ``out`` (its training parameters are the prior) and
    measure their held-out errors; the training fit and its figures are kept as they are."""
    previous = json.loads(out.read_text())
    prior = Efficiencies(**{k: v for k, v in previous["parameters"].items() if k in Efficiencies.model_fields})
    result = {**previous, **serving_fit(measurements(data)[0], prior, True, previous)}
    atomic_write_json(out, result)
    return result


def probe_ratio_table() -> dict[str, Any]:
    """Probe/datasheet ratios averaged per GPU generation (and over all) from the bundled profiles."""
    import statistics

    from knowledge.catalog import resolve_platform
    from knowledge.paths import BUNDLED_PROFILES
    from knowledge.schema import Profile
    from models.calibration import ratios_from_profile
    from models.roofline import ProbeRatios

    per: dict[str, list[tuple[str, Any]]] = {}
    for path in sorted(BUNDLED_PROFILES.glob("*.json")):
        prof = Profile.model_validate_json(path.read_text())
        if not prof.gpu_id or prof.gpu_count < 1:
            continue
        platform = resolve_platform(f"{prof.gpu_id}x{prof.gpu_count}")
        r = ratios_from_profile(prof, platform, ProbeRatios())
        for key in (platform.gpu.arch, "all"):
            per.setdefault(key, []).append((f"{path.name} ({prof.environment.date[:10]})", r, platform))
    table: dict[str, dict] = {}
    for key, items in per.items():
        row: dict[str, Any] = {k: round(statistics.mean(getattr(r, k) for _, r, _ in items), 4) for k in ("matmul", "memory", "h2d")}
        for ic in sorted({p.interconnect for _, _, p in items if p.count > 1}):
            row[f"link_{ic}"] = round(statistics.mean(r.link for _, r, p in items if p.interconnect == ic and p.count > 1), 4)
        launches = [r.launch_s for _, r, _ in items if r.launch_s]
        if launches:  # the hosts' side: geometric mean, as the per-kernel cost scales by ratios (host_dispatch_scale)
            row["launch_s"] = float(f"{math.exp(statistics.mean(math.log(x) for x in launches)):.4g}")
        row["source"] = "advisor probe: " + ", ".join(src for src, _, _ in items)
        table[key] = row
    return {"note": "probe / datasheet: large square bf16 GEMM, device copy, pinned host->device, NCCL all-reduce "
                    "bus bandwidth; launch_s: one small kernel launched from Python (seconds, the hosts' geometric mean); written by advisor.calibrate.probe_ratio_table from the bundled profiles",
            "ratios": table}
