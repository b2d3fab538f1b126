"""Engine-style serving rows (``probes.engine_sweep``: vLLM's layer structure in torch, CUDA-graph decode, chunked
prefill) predicted as ``advisor predict`` predicts them by default (no ``engine`` field: vLLM), each model held out:
the serving fit is refitted on every serving row but that model's, then predicts that model's rows. Prints the
decode-step, prefill and peak-memory errors by model, batch, KV length and weight format, with the signed mean (a
negative decode error is an optimistic prediction) and n.

    python tests/benchmarks/engine_decode.py > tests/benchmarks/engine_decode.out.txt
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

from advisor.evaluation import fit_serving, serving_rows
from knowledge.efficiency import load_efficiencies, load_probe_ratios
from knowledge.measurements import all_measurements
from models.calibration import from_fit
from models.serving import predict_serving

SOURCE = "probes.engine_sweep"
FIELDS = ("decode_step_s", "prefill_s", "peak_mem_gib")


def model_of(r) -> str:
    return r.arch.name.split("[:")[0]


def held_out_pairs(rows, prior):
    """(row, prediction without an engine) for every engine-style row, its model held out of the serving fit."""
    ratios, out = load_probe_ratios(), []
    for model in sorted({model_of(r) for r in rows if r.m.source == SOURCE}):
        eff = fit_serving([r for r in rows if model_of(r) != model], prior).efficiencies_
        for r in rows:
            if r.m.source == SOURCE and model_of(r) == model:
                case = r.case.model_copy(update={"engine": None})  # predicted as a user's case: no engine field
                out.append((r, predict_serving(case, r.arch, r.platform, from_fit(r.platform, eff, None, ratios))))
    return out


def errors(pairs, field):
    out = []
    for r, p in pairs:
        measured = getattr(r.m.measured, field)
        if measured and not r.m.measured.oom:
            out.append(getattr(p, field) / measured - 1.0)
    return out


def line(label, errs):
    if not errs:
        return f"  {label:28s} n=0"
    mape = statistics.fmean(abs(e) for e in errs)
    return f"  {label:28s} MAPE {mape:6.1%}  signed mean {statistics.fmean(errs):+6.1%}  worst {max(errs, key=abs):+6.1%}  n={len(errs)}"


def bundled_pairs(rows):
    """(row, prediction without an engine) with the bundled serving fit as it stands (no refit)."""
    eff, ratios = load_efficiencies(task="serve"), load_probe_ratios()
    return [(r, predict_serving(r.case.model_copy(update={"engine": None}), r.arch, r.platform,
                                from_fit(r.platform, eff, None, ratios))) for r in rows if r.m.source == SOURCE]


def main() -> None:
    rows = serving_rows(all_measurements())
    if "--bundled-only" in sys.argv:  # quick: the bundled fit's errors only
        bundled = bundled_pairs(rows)
        print("with the bundled serving fit (knowledge/calibration/fitted.json as committed, not refitted):")
        for field in FIELDS:
            print(line(field, errors(bundled, field)))
        return
    prior = load_efficiencies()
    pairs = held_out_pairs(rows, prior)
    print(f"engine-style rows ({SOURCE}), held out by model, predicted without an engine field: n={len(pairs)}")
    print("\nper row: model, batch, KV length, format: decode / prefill / peak memory error (predicted / measured - 1)")
    for r, p in pairs:
        c, m = r.case, r.m.measured
        print(f"  {model_of(r):15s} b{c.batch_size:<4d} kv{c.kv_len_effective:<6d} {c.weight_format or 'bf16':5s} "
              f"decode {p.decode_step_s / m.decode_step_s - 1:+6.1%} ({m.decode_step_s * 1e3:6.2f} ms)  "
              f"prefill {p.prefill_s / m.prefill_s - 1:+6.1%}  peak {p.peak_mem_gib / m.peak_mem_gib - 1:+6.1%}  "
              f"[{p.engine}]")
    for field in FIELDS:
        print(f"\n{field}")
        print(line("all", errors(pairs, field)))
        for name, key in (("model", model_of), ("batch", lambda r: f"b{r.case.batch_size}"),
                          ("kv_len", lambda r: f"kv{r.case.kv_len_effective}"),
                          ("format", lambda r: r.case.weight_format or "bf16")):
            groups = defaultdict(list)
            for r, p in pairs:
                groups[key(r)].append((r, p))
            for g in sorted(groups, key=lambda k: (len(k), k)):
                print(line(f"{name} {g}", errors(groups[g], field)))
    bundled = bundled_pairs(rows)
    print("\nwith the bundled serving fit (knowledge/calibration/fitted.json as committed, not refitted):")
    for field in FIELDS:
        print(line(field, errors(bundled, field)))
    print("\nfit verdicts (the four runs that ran out of memory included):")
    verdict_rows = [r for r in serving_rows(all_measurements(), include_oom=True) if r.m.source == SOURCE]
    eff = load_efficiencies(task="serve")
    right = sum(predict_serving(r.case.model_copy(update={"engine": None}), r.arch, r.platform,
                                from_fit(r.platform, eff, None, load_probe_ratios())).fits == (not r.m.measured.oom)
                for r in verdict_rows)
    print(f"  right {right} of {len(verdict_rows)} (bundled serving fit)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
