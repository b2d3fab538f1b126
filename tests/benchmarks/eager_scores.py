"""Eager attention's s x s scores at 4-8k tokens, on one H200 (2026-11-29, seventeenth session).

Five eager / SDPA pairs under ``probes.anatomy`` (``probes/anatomy_cases_29.jsonl``, rows in
``logs/h200-eager-anatomy-2026-11-29.jsonl``) showed two things the model missed: a layer's backward holds its scores'
gradients (10 B a score per head above the 6 autograd keeps), which every trace had missed because it takes its peak at
lengths too short for the scores to pass the loss; and the hand count of the catalog's Llama priced the softmax, mask
and cast at 14 B a score where the trace counts 32. Their predictions were stored before with the code of then (the
table's "stored" column); the rules then set (``models.memory.eager_scores_backward_bytes``,
``models.operators.EAGER_SCORE_BYTES_FWD``) were held out on two grids stored before they ran: ``h200-eager-long``
(catalog Llama-3.2-3B, TinyLlama, Llama-2-7B hand-counted; Gemma-2, Phi-3, OLMo-2 traced) and ``h200-eager-long-2``
(QLoRA, ZeRO-2 and ZeRO-3 adapters, Llama-3-8B, Mistral-7B, Gemma-2-9B). None of these runs is in the fit.

    python -m tests.benchmarks.eager_scores > tests/benchmarks/eager_scores.out.txt
"""

from __future__ import annotations

import json
import statistics

from advisor.predictor import Predictor
from knowledge.schema import TrainCase
from tests.benchmarks.stored_predictions import OWN, compare, compare_grid, lines


def anatomy_pairs() -> None:
    """The anatomy runs against their stored predictions and today's: tokens/s from the step's wall time, the peak."""
    stored = {p["id"]: p for p in lines(OWN / "logs" / "h200-eager-anatomy-predictions-2026-11-29.jsonl")}
    predictor = Predictor()
    print("== h200-eager-anatomy: one H200, eager against SDPA, PyTorch; stored before (the code of then) | today")
    print(f"{'run':30s} {'tok/s':>7s} {'GiB':>6s} | {'stored tok/s':>13s} {'GiB':>13s} | {'today tok/s':>13s} {'GiB':>13s}")
    errs: dict[str, list[tuple[float, float]]] = {"stored": [], "today": []}
    for r in lines(OWN / "logs" / "h200-eager-anatomy-2026-11-29.jsonl"):
        case = r["case"] if isinstance(r["case"], dict) else json.loads(r["case"].replace("'", '"').replace("None", "null")
                                                                          .replace("True", "true").replace("False", "false"))
        tok = case["seq_len"] * case["micro_batch_size"] / r["step_s"]
        mem = r["memory_gib"]["warmup_peak"]
        today = predictor.predict(TrainCase.model_validate(case)).model_dump()
        cols = []
        for label, p in (("stored", stored[r["id"]]), ("today", today)):
            e, em = p["tokens_per_s"] / tok - 1, p["peak_mem_gib"] / mem - 1
            errs[label].append((e, em))
            cols.append(f"{p['tokens_per_s']:7.0f} {e:+5.0%} {p['peak_mem_gib']:6.1f} {em:+5.0%}")
        print(f"{r['id']:30s} {tok:7.0f} {mem:6.1f} | {cols[0]} | {cols[1]}")
    for label, es in errs.items():
        eager = [e for (e, _), r in zip(es, lines(OWN / "logs" / "h200-eager-anatomy-2026-11-29.jsonl")) if "eager" in r["id"]]
        print(f"{label}: tokens/s MAPE {100 * statistics.mean(abs(e) for e, _ in es):.1f}% (eager runs "
              f"{100 * statistics.mean(map(abs, eager)):.1f}%, n={len(eager)}); peak memory MAPE "
              f"{100 * statistics.mean(abs(m) for _, m in es):.1f}% (n={len(es)})")
    print()


def main() -> None:
    anatomy_pairs()
    for grid, where in (("h200-eager-long", "one H200, eager attention at 2-8k tokens, held out"),
                        ("h200-eager-long-2", "one H200, eager attention under QLoRA, ZeRO-2/3 adapters, held out")):
        compare_grid(grid, where, "h200x1", measured=f"logs/{grid}-2026-11-29.jsonl", date="2026-11-29")
    # the code before these rules (commit 97a30af, predicted after the runs with that commit's tree: it saw none of them)
    for grid in ("h200-eager-long", "h200-eager-long-2"):
        print(f"== {grid}: the code before the rules (commit 97a30af), without a profile")
        compare([f"logs/{grid}-2026-11-29.jsonl"], [f"{grid}-predictions-code-97a30af-2026-11-29.jsonl"],
                label="the code of 97a30af")
        print()

if __name__ == "__main__":
    main()
