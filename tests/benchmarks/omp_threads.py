"""ZeRO-Offload on one H200 with DeepSpeed's CPU Adam on 1, 2, 4 and 16 OpenMP threads (grid ``h200-omp-threads``,
2026-11-26; a step the host's optimizer dominates): each run beside the prediction stored before it ran (commit
0f90e12: CPU Adam's per-thread rate fitted, 0.29 Gparam/s), today's code with a fit that never saw the grid (the
per-thread rate measured on the host, 0.85, no longer fitted), and today's bundled fit (which has seen the Llama rows;
Qwen3-4B is traced and stays out of every fit). A repeat of the first three Llama runs (same cases, same machine,
minutes later) is scored too: it shows the runs' own spread.

    python -m tests.benchmarks.omp_threads > tests/benchmarks/omp_threads.out.txt
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from tests.benchmarks.stored_predictions import compare

OWN = Path(__file__).parents[2] / "knowledge/measurements/own"
GRID, DATE = "h200-omp-threads", "2026-11-26"


def held_out() -> dict[str, float]:
    """{run id: tokens/s} for the grid's catalog-model runs, predicted by a fit on every other row."""
    from advisor.calibrate import measurements
    from advisor.evaluation import fit_correction, training_rows
    from advisor.predictor import calibration_for
    from models.training import predict_training

    rows, _ = training_rows(measurements("all")[0])
    mine = [r for r in rows if r.m.source.endswith(f"--grid {GRID}")]  # the runs and their repeats
    est = fit_correction([r for r in rows if not r.m.source.endswith(f"--grid {GRID}")])
    return {r.m.case["id"]: predict_training(r.case, r.arch, r.platform,
                                             calibration_for(r.platform, None, est.efficiencies_, est.platform_factors_)).tokens_per_s
            for r in mine}


def main() -> None:
    fit_out = held_out()
    stored, now = compare([f"{GRID}-{DATE}.jsonl"], [f"{GRID}-predictions-{DATE}.jsonl"], None)
    repeat = {json.loads(x)["case"]["id"]: json.loads(x)["measured"]["tokens_per_s"]
              for x in (OWN / f"{GRID}-repeat-{DATE}.jsonl").read_text().splitlines() if x.strip()}
    print(f"{'run':28s} {'measured':>9s} {'repeat':>7s} | {'stored before':>13s} | {'held out, today':>15s} | {'bundled today':>13s}")
    errs: dict[str, list[float]] = {"stored": [], "held": [], "today": []}
    for (b, m), (q, _) in zip(stored, now):
        rid, meas = q["id"], m["tokens_per_s"]
        ho = fit_out.get(rid)
        for k, v in (("stored", b["tokens_per_s"]), ("held", ho), ("today", q["tokens_per_s"])):
            if v is not None:
                errs[k].append(v / meas - 1)
        rep = repeat.get(rid)
        if rep:  # the repeat scored against the same predictions
            for k, v in (("stored", b["tokens_per_s"]), ("held", ho), ("today", q["tokens_per_s"])):
                if v is not None:
                    errs[k].append(v / rep - 1)
        cell = lambda v: f"{v:6.0f} {100 * (v / meas - 1):+5.1f}%" if v is not None else f"{'traced':>13s}"  # noqa: E731
        print(f"{rid:28s} {meas:9.0f} {rep or 0:7.0f} | {cell(b['tokens_per_s'])} | {cell(ho):>15s} | {cell(q['tokens_per_s'])}")
    print()
    for k, label in (("stored", "stored before"), ("held", "held out, today's code"), ("today", "bundled fit of today")):
        e = errs[k]
        print(f"{label:24s} tokens/s MAPE {100 * statistics.mean(map(abs, e)):5.1f}% (mean signed {100 * statistics.mean(e):+5.1f}%, "
              f"n={len(e)} with the repeats)")


if __name__ == "__main__":
    main()
