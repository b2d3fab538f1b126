"""The catalog's models given as their config.json: the trace of their own code against the hand count the fit was
made on, over every measured run of a catalog model (ours and the published), by platform.

The bundled fit's efficiencies were fitted through the hand count on these very rows, so the hand count's figures here
are in-sample and the trace's are not: the question is whether a config.json of a catalog model may take the trace
without losing what the fit learned (``advisor.traces.hand_counted``).

    python -m tests.benchmarks.trace_on_catalog > tests/benchmarks/trace_on_catalog.out.txt
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from advisor.calibrate import measurements
from advisor.evaluation import training_rows
from advisor.predictor import Predictor
from models.training import predict_training


def main() -> None:
    p = Predictor()
    rows, _ = training_rows(measurements("all")[0])
    errs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if not r.has_throughput or r.trace is not None:  # the catalog's runs: the hand count's own
            continue
        cal = p.calibration(r.platform)
        measured = r.m.measured.tokens_per_s
        hand = predict_training(r.case, r.arch, r.platform, cal).tokens_per_s
        try:
            trace = p.traces.own_code(r.arch, r.case)  # its config.json's trace, which a prediction does not take
            traced = predict_training(r.case, r.arch, r.platform, cal, trace=trace).tokens_per_s
        except Exception as e:  # noqa: BLE001 - a variant the trace cannot run is reported, not scored
            print(f"  {r.m.case['id']}: trace failed: {str(e)[:100]}")
            continue
        for group in (r.platform.id, "all"):
            errs[group]["hand"].append(hand / measured - 1)
            errs[group]["trace"].append(traced / measured - 1)
    print(f"{'platform':14s} {'n':>4s} | {'hand count MAPE (signed)':>26s} | {'trace MAPE (signed)':>22s}")
    for group, d in sorted(errs.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        cols = [f"{100 * statistics.mean(map(abs, d[k])):5.1f}% ({100 * statistics.mean(d[k]):+6.1f}%)" for k in ("hand", "trace")]
        print(f"{group:14s} {len(d['hand']):4d} | {cols[0]:>26s} | {cols[1]:>22s}")


if __name__ == "__main__":
    main()
