"""The validation report: every accuracy figure of the project, on held-out groups only.

``advisor validate`` prints it (from the cache of ``advisor.validation_cache`` when current) and
``advisor calibrate`` computes it with the refit, taking the intervals' held-out error from it.
"""

from __future__ import annotations

from typing import Any


def validation_report(data: str, holdout: str, progress=None) -> dict[str, Any]:
    """Every accuracy figure of the project, computed on held-out groups only (throughput), with and
    without the bundled profile of the machine each run was measured on."""
    from advisor.calibrate import measurements
    from advisor.evaluation import (
        REGIMES, fit_verdicts, held_out_report, host_pairs, mape, memory_pairs, regimes, regrets, training_rows,
    )
    from advisor.predictor import calibration_for
    from knowledge.measurements import load_bundled_profiles

    ms, problems = measurements(data)
    # the held-out fits learn from the catalog's runs and the probes' real layers only, as before 2026-11-28: with the
    # traced families' runs in each of them (the shipped fit has them) one report would take about two hours on two cores.
    # The traced runs are scored held out by family, by fits that do have the other families' runs, in
    # tests/benchmarks/traced_rows.py; these figures are thus of a fit with less data than the shipped one.
    rows, skipped = training_rows(ms, traced_families=False)
    if not rows:
        raise ValueError(f"no training measurements in data set {data!r}")
    profiles = load_bundled_profiles()
    held = held_out_report(rows, holdout, profiles, test=lambda r: not r.from_probe, progress=progress)

    def summary(items) -> dict[str, Any]:
        prof = [h for h in items if h.with_profile is not None]
        return {
            "n": len(items), "mape": mape([(h.predicted, h.measured) for h in items]),
            "n_profiled": len(prof),
            "mape_profiled_without": mape([(h.predicted, h.measured) for h in prof]) if prof else None,
            "mape_profiled_with": mape([(h.with_profile, h.measured) for h in prof]) if prof else None,
        }

    by_group: dict[str, list] = {}
    by_regime: dict[str, list] = {}
    by_dataset: dict[str, list] = {}
    by_class: dict[str, list] = {}
    from knowledge.platform_class import platform_class

    for h in held:
        by_class.setdefault(platform_class(h.row.platform, h.row.case.nodes), []).append(h)
        by_group.setdefault(h.group, []).append(h)
        by_dataset.setdefault(h.row.m.dataset, []).append(h)
        if not h.row.m.dataset.startswith("zhang"):  # regimes of the runs on our machines; the paper by server
            for tag in regimes(h.row.case, h.row.platform):
                by_regime.setdefault(tag, []).append(h)
    order = {t: i for i, t in enumerate(REGIMES)}
    cal_for = lambda p: calibration_for(p)  # noqa: E731  memory and verdicts: the bundled calibration
    mem = memory_pairs(rows, cal_for)  # the traced families' memory and verdicts: their benchmarks
    verdicts = fit_verdicts(rows, cal_for)
    host = host_pairs([r for r in rows if not r.from_probe], cal_for)
    offload_host = [(p, m) for r, p, m in host if r.case.offload != "none"]
    reg = regrets([(h.row, h.predicted) for h in held])
    return {
        "data": data, "holdout": holdout, "rows": len(rows), "skipped": len(skipped) + len(problems),
        "profiles": sorted(profiles),
        "throughput_by_group": [{"group": g, **summary(v)} for g, v in sorted(by_group.items())],
        "throughput_by_regime": [{"regime": k, **summary(v)} for k, v in sorted(by_regime.items(), key=lambda kv: (order.get(kv[0], 99), kv[0]))],
        "throughput_by_dataset": {k: summary(v) for k, v in sorted(by_dataset.items())},
        "throughput_overall": summary(held),
        # the error bars' source (knowledge.platform_class): meaningful when held out by platform
        "throughput_by_class": {k: summary(v) for k, v in sorted(by_class.items())},
        "memory_by_dataset": {k: {"n": len(v), "mape": mape(v), "within_10pct": sum(abs(p - m) / m <= 0.10 for p, m in v) / len(v)} for k, v in mem.items()},
        "host_memory_offload": {"n": len(offload_host), "mape": mape(offload_host)} if offload_host else None,
        "fit_verdict_by_dataset": {k: {"n": t, "accuracy": ok / t} for k, (ok, t) in verdicts.items()},
        "host_kills": sum(1 for r in rows if r.failure == "host_oom"),
        "regret_by_grid": {k: v for k, v in sorted(reg.items())},
        "regret_within_5pct": (sum(v <= 0.05 for v in reg.values()) / len(reg)) if reg else None,
        "_held": held,  # for advisor calibrate's intervals; removed before the report is stored or printed
    }


def held_out_by_class(held) -> dict[str, dict[str, Any]]:
    """{platform class: {"mape", "n"}} of held-out throughput predictions (``validation_report``'s
    ``_held``): the error bar of every prediction on a platform of that class (knowledge.platform_class)."""
    from advisor.evaluation import mape
    from knowledge.platform_class import platform_class

    pairs: dict[str, list[tuple[float, float]]] = {}
    for h in held:
        pairs.setdefault(platform_class(h.row.platform, h.row.case.nodes), []).append((h.predicted, h.measured))
    return {k: {"mape": round(mape(v), 4), "n": len(v)} for k, v in sorted(pairs.items())}
