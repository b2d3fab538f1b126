"""Every training run of ours on a model the trace predicts (a config.json outside the catalog's hand count), held out
by family: the families are split into five folds (by a hash of the model type), and each fold is predicted by a fit
on every other row (the catalog's runs, the probes' real layers and the other folds' traced runs), as ``advisor
predict`` predicts it, without a profile and with the bundled profile of its platform. A sixth fit on the catalog's
rows alone (as before 2026-11-28, when no traced run was fitted) gives the first column. Several families were run to
find what the trace missed, and fixed after, so not all of it is a blind test (``unrun_families``, ``blind_families``
and ``heldout_families`` are). The share of the step the host's dispatch is predicted to hold (``overhead / step``)
splits host-bound runs from GPU-bound ones.

    python -m tests.benchmarks.traced_rows > tests/benchmarks/traced_rows.out.txt   (six fits: ~20 min on 2 cores)
"""

from __future__ import annotations

import os
import statistics
import time
import zlib
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor

FOLDS = 5


def fold_of(family: str) -> int:
    return zlib.crc32(family.encode()) % FOLDS


def _predict_fold(fold: int) -> list[dict]:
    """The traced runs of ``fold`` (-1: all of them, by the catalog-only fit), each predicted by a fit without them."""
    from advisor.calibrate import measurements
    from advisor.evaluation import fit_correction, training_rows
    from advisor.predictor import calibration_for
    from knowledge.measurements import load_bundled_profiles

    rows, _ = training_rows(measurements("all")[0])
    test = [r for r in rows if r.trace is not None and r.has_throughput and (fold < 0 or fold_of(r.arch.hf_model_type) == fold)]
    held = {id(r) for r in test}
    train = [r for r in rows if r.trace is None] if fold < 0 else [r for r in rows if id(r) not in held]
    est = fit_correction(train)
    profiles = load_bundled_profiles()
    out = []
    for r in test:
        p0 = r.predict(calibration_for(r.platform, None, est.efficiencies_, est.platform_factors_))
        prof = profiles.get(r.platform.id)
        p1 = r.predict(calibration_for(r.platform, prof, est.efficiencies_, est.platform_factors_)) if prof else None
        measured = r.m.measured.tokens_per_s
        out.append({"key": (r.m.source, r.case.id), "family": r.arch.hf_model_type, "platform": r.platform.id,
                    "engine": r.case.engine, "zero": r.case.zero_stage, "method": r.case.method, "recompute": r.case.recompute,
                    "host_share": p0.breakdown.overhead_s / p0.step_time_s, "e0": p0.tokens_per_s / measured - 1,
                    "e1": p1.tokens_per_s / measured - 1 if p1 else None})
    return out


def rows(workers: int | None = None) -> list[dict]:
    """One dict per traced run: ``e_cat`` (catalog-only fit, no profile), ``e0`` and ``e1`` (held out by family, without
    and with the bundled profile)."""
    with ProcessPoolExecutor(workers or min(os.cpu_count() or 1, 3)) as pool:
        results = list(pool.map(_predict_fold, [-1, *range(FOLDS)]))
    catalog_only = {r["key"]: r["e0"] for r in results[0]}
    return [{**r, "e_cat": catalog_only[r["key"]]} for fold in results[1:] for r in fold]


def line(label: str, sel: list[dict]) -> str:
    def cols(k: str) -> str:
        es = [r[k] for r in sel if r[k] is not None]
        return f"{100 * statistics.mean(map(abs, es)):5.1f}% {100 * statistics.mean(es):+5.1f}% {len(es):4d}" if es else " " * 17
    return f"{label:34s} {cols('e_cat')} | {cols('e0')} | {cols('e1')}"


def main() -> None:
    t0 = time.perf_counter()
    rs = rows()
    print(f"traced runs, MAPE / mean signed error / n (signed > 0: predicted faster than measured); {FOLDS} folds of families")
    print(f"{'group':34s} {'catalog-only fit':>17s} | {'held out by family':>17s} | {'and bundled profile':>17s}")
    print(line("all", rs))
    bands = (("host share < 0.1", 0, 0.1), ("host share 0.1-0.35", 0.1, 0.35), ("host share >= 0.35", 0.35, 2))
    for label, lo, hi in bands:
        print(line(f"{label} (not ZeRO-3)", [r for r in rs if lo <= r["host_share"] < hi and r["zero"] != 3]))
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rs:
        groups[f"platform {r['platform']}"].append(r)
        groups[f"{r['engine']} ZeRO-{r['zero']}" if r["engine"] == "deepspeed" else "pytorch"].append(r)
        groups[f"method {r['method']}"].append(r)
        groups["recompute" if r["recompute"] else "no recompute"].append(r)
    for k in sorted(groups):
        print(line(k, groups[k]))
    print("\nby family (fold)")
    fam: dict[str, list[dict]] = defaultdict(list)
    for r in rs:
        fam[r["family"]].append(r)
    for k in sorted(fam):
        print(line(f"{k} ({fold_of(k)})", fam[k]))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
