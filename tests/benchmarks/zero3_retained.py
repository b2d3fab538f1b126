"""Peak GPU memory where ZeRO-3 holds gathered parameters from forward to backward (views a product saves of a MoE
layer's stacked experts), and the runs of 2026-11-27 that looked at it, each beside the prediction stored before it ran
(``knowledge/measurements/own/logs/*-predictions-2026-11-27.jsonl``) and today's.

- Anatomy on two H200s (Qwen1.5-MoE cut to 6, 12 and 24 layers, OLMoE, ZeRO-2 beside): where the term was found;
  stored before it existed.
- Grid h200x2-heldout-families, which the lease ran on two H100s (stored predictions were for two H200s: their peaks
  hold, their verdicts were against 140 GiB): Llama-4's experts, which the rule "every MoE" held, are released (``bmm``
  saves the parameter itself); the trace now says which parameters a saved view holds.
- Anatomy on two H100s, stored by the trace that says so: PhiMoE (held), GPT-OSS (released), and Youtu on one and two
  ranks (its ZeRO-2 mb 4 x 4k ran out in the grid, ran in the anatomy: the same peak, the allocator's luck).
- Grid h100x2-recommend-moe: ``recommend``'s picks 1, 2 and 5 of OLMoE pre-training on two H100s, and ZeRO-3 without
  recomputation, predicted out for its held experts.

    python -m tests.benchmarks.zero3_retained > tests/benchmarks/zero3_retained.out.txt
"""

from __future__ import annotations

import statistics

from advisor.predictor import Predictor
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.schema import TrainCase
from models.memory import zero3_retained_param_bytes
from models.setup import derive
from tests.benchmarks.stored_predictions import OWN, lines

SETS = (  # (measurements, stored predictions, id prefix the measurement rows added)
    ("h200x2-moe-zero3-2026-11-27.jsonl", "h200x2-moe-zero3-anatomy-predictions-2026-11-27.jsonl", "h200x2a-"),
    ("h100x2-heldout-families-2026-11-27.jsonl", "h200x2-heldout-families-predictions-2026-11-27.jsonl", ""),
    ("h100x2-anatomy-2026-11-27.jsonl", "h100x2-zero3-retained-anatomy-predictions-2026-11-27.jsonl", "h100x2a-"),
    ("h100x2-anatomy-2026-11-27.jsonl", "h100-youtu-anatomy-2-predictions-2026-11-27.jsonl", "h100x2a-"),
    ("h100-anatomy-2026-11-27.jsonl", "h100-youtu-anatomy-predictions-2026-11-27.jsonl", "h100a-"),
    ("h100-anatomy-2026-11-27.jsonl", "h100-youtu-anatomy-2-predictions-2026-11-27.jsonl", "h100a-"),
    ("h100x2-recommend-moe-2026-11-27.jsonl", "h100x2-recommend-moe-predictions-2026-11-27.jsonl", ""),
)


def main() -> None:
    p = Predictor()
    errs: dict[str, list[float]] = {"stored": [], "today": []}
    verdicts = {"stored": [0, 0], "today": [0, 0]}
    for measured, stored, prefix in SETS:
        before = {b["id"]: b for b in lines(OWN / "logs" / stored)}
        print(f"== {measured} (stored before: logs/{stored})")
        print(f"  {'run':40s} {'measured GiB':>14s} | {'stored':>16s} | {'today':>16s} {'held GiB':>8s}")
        for r in lines(OWN / measured):
            cid = r["case"]["id"].removeprefix(prefix)
            if cid not in before:
                continue
            case = TrainCase.model_validate(r["case"])
            q = p.predict(case)
            b, m = before[cid], r["measured"]
            arch = resolve_model(case.model)
            held = zero3_retained_param_bytes(derive(case, arch, resolve_platform(case.hardware, case.gpus),
                                                     p.traces.trace(arch, case))) / 2**30
            ran = not m["oom"]
            meas = f"{m['peak_mem_gib']:.1f}" if ran else ("OOM" + (f" >{m['peak_mem_gib']:.0f}" if m["peak_mem_gib"] else ""))
            cols = []
            for key, pred in (("stored", b), ("today", q.model_dump())):
                cols.append(f"{pred['peak_mem_gib']:6.1f} {'fits' if pred['fits'] else 'no':4s}"
                            + (f" {pred['peak_mem_gib'] / m['peak_mem_gib'] - 1:+4.0%}" if ran else "     "))
                if ran:
                    errs[key].append(pred["peak_mem_gib"] / m["peak_mem_gib"] - 1)
                if key == "stored" and "h100x2-heldout" in measured:
                    continue  # stored against two H200s' 140 GiB, the lease ran two H100s: no verdict of that run
                verdicts[key][0] += pred["fits"] == ran
                verdicts[key][1] += 1
            print(f"  {cid:40s} {meas:>14s} | {cols[0]:>16s} | {cols[1]:>16s} {held:8.1f}")
        print()
    for key in ("stored", "today"):
        e = errs[key]
        print(f"{key:7s} peak memory MAPE {100 * statistics.fmean(map(abs, e)):.1f}% (signed {100 * statistics.fmean(e):+.1f}%, "
              f"n={len(e)}, within 4%: {sum(abs(x) <= 0.04 for x in e)}); fit verdicts {verdicts[key][0]}/{verdicts[key][1]}"
              + (" (the H100 grid's stored verdicts, made for 140 GiB, left out)" if key == "stored" else ""))


if __name__ == "__main__":
    main()
