"""Llama-3.2-3B's runs held out (every other row fitted, traced families included, as the shipped fit is made), predicted
by the code of a commit: how a change to the step-time model moves the held-out error of one model's offload rows.

Used for the ZeRO-3 optimizer-offload change of 2026-11-28 (commit 64ac6b1, ``zero3_offload_extra_s``): run once in a
worktree of the commit before it (917e68e, the same rows and data) and once here, then compare the two JSON
files (an existing first file is read, not fitted again):

    git worktree add /tmp/old 917e68e
    (cd /tmp/old && PYTHONPATH=/tmp/old python /work/main/tests/benchmarks/heldout_model_offload_ab.py /tmp/ab_old.json)
    python -m tests.benchmarks.heldout_model_offload_ab /tmp/ab_new.json /tmp/ab_old.json > tests/benchmarks/heldout_model_offload_ab.out.txt

One fit each, about 5 minutes on one core.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import warnings

MODEL = "llama3.2-3b"


def held_out(path: str) -> dict:
    from advisor.calibrate import measurements
    from advisor.evaluation import fit_correction, training_rows
    from advisor.predictor import calibration_for

    rows, _ = training_rows(measurements("all")[0])
    # held out as ``advisor validate --holdout model`` groups runs (the paper's rows, grouped by server, stay in the fit)
    test = [r for r in rows if r.group("model") == MODEL and r.has_throughput]
    est = fit_correction([r for r in rows if r.group("model") != MODEL])
    out = [(r.case.id, r.case.zero_stage, r.case.offload,
            r.predict(calibration_for(r.platform, None, est.efficiencies_, est.platform_factors_)).tokens_per_s
            / r.m.measured.tokens_per_s - 1) for r in test]
    result = {"f": est.efficiencies_.zero3_offload_opt_overhead, "rows": out}
    with open(path, "w") as f:
        json.dump(result, f)
    return result


def compare(new: dict, old: dict) -> None:
    print(f"{MODEL} held out; zero3_offload_opt_overhead fitted without it: before {old['f']:.2f}, after {new['f']:.2f}")
    print(f"{'run':44} {'ZeRO':>4} {'offload':>18} {'before':>7} {'after':>7}")
    for o, n in zip(old["rows"], new["rows"]):
        if o[2] != "none":
            print(f"{o[0][:44]:44} {o[1]:>4} {o[2]:>18} {o[3]:>+7.0%} {n[3]:>+7.0%}")
    for label, keep in (("every run of the model", lambda r: True), ("offload", lambda r: r[2] != "none"),
                        ("ZeRO-3, optimizer offloaded only", lambda r: r[1] == 3 and r[2] == "optimizer")):
        a, b = [r[3] for r in old["rows"] if keep(r)], [r[3] for r in new["rows"] if keep(r)]
        print(f"{label:34} n={len(a):3}  before MAPE {statistics.mean(map(abs, a)):.1%} (signed {statistics.mean(a):+.1%})"
              f"  after {statistics.mean(map(abs, b)):.1%} (signed {statistics.mean(b):+.1%})")


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    if len(sys.argv) == 3:
        new = json.load(open(sys.argv[1])) if os.path.exists(sys.argv[1]) else held_out(sys.argv[1])
        compare(new, json.load(open(sys.argv[2])))
    else:
        held_out(sys.argv[1])
