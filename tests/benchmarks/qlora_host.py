"""bitsandbytes' 4-bit projections on the host: QLoRA against LoRA of the same model, host-bound, and QLoRA runs held out.

Anatomy 38 (one H200, 2026-11-30, ``logs/h200x1-anatomy-38-2026-11-30.jsonl``) ran Qwen3-8B and Qwen2.5-3B LoRA and
QLoRA at 1 x 1,024 on one lease: QLoRA took 0.089 and 0.091 s more a step, 354-362 us per quantized linear. The model
priced two kernels a call (79 us) and, through the trace, none for a LoRA-adapted projection (PEFT's wrapper hid it from
quantization: trace schema 24 mends it). Since the twenty-fourth session the cost is measured apart by
``probes.bnb_host`` on tiny shapes on another lease (``knowledge/data/bnb_host.json``: a 4-bit projection 2.5 / 3.0 bf16
projection calls more forward / backward, PEFT's LoRA on one 2.5 / 2.1 more than on a bf16 one) and priced per call
(``models.step_time.bnb_host_calls``). Printed: the ratios as today's code predicts them, then the QLoRA runs of the
held-out grids, stored before they ran and as predicted today; grid ``h200-qlora-host-check`` ran on the probe's lease
before the change, so its "today" column is the change scored on runs it was not built from, not a blind test; grid
``h200-qlora-host-check-2`` was stored after the change and its refit (fbec335), before it ran. The code before the
change (6faaa1d, a worktree, predicted after the runs) had that grid's QLoRA runs at 29.1% (mean signed +27.6%, n=9).

    python -m tests.benchmarks.qlora_host > tests/benchmarks/qlora_host.out.txt
"""

from __future__ import annotations

import statistics
import warnings

warnings.filterwarnings("ignore")

from advisor.predictor import Predictor  # noqa: E402
from knowledge.schema import TrainCase  # noqa: E402
from tests.benchmarks.stored_predictions import OWN, lines  # noqa: E402

ANATOMY = "logs/h200x1-anatomy-38-2026-11-30.jsonl"
PAIRS = (("a38-qwen3-8b-qlora", "a38-qwen3-8b-lora"), ("a38-qwen25-3b-qlora", "a38-qwen25-3b-lora"))
# measured rows -> the predictions stored before they ran; grouped by what the stored predictions knew
HELD_OUT = {
    "grids of the twenty-second and twenty-third sessions (stored before this change)": {
        "logs/h200-moe-launches-check-2026-11-30.jsonl": "logs/h200-moe-launches-check-predictions-2026-11-30.jsonl",
        "logs/h200x2-ddp-check-2026-11-30.jsonl": "logs/h200x2-ddp-check-predictions-2026-11-30.jsonl",
        "logs/h200x2-moe-check-2026-11-30.jsonl": "logs/h200x2-moe-check-predictions-2026-11-30.jsonl"},
    "grid h200-qlora-host-check (stored before this change; the change was built beside it)": {
        "logs/h200-qlora-host-check-2026-11-30.jsonl": "logs/h200-qlora-host-check-predictions-2026-11-30.jsonl"},
    "grid h200-qlora-host-check-2 (stored after this change and its refit, before the runs; two leases)": {
        "logs/h200-qlora-host-check-2-2026-11-30.jsonl": "logs/h200-qlora-host-check-2-predictions-2026-11-30.jsonl",
        "logs/h200-qlora-host-check-2b-2026-11-30.jsonl": "logs/h200-qlora-host-check-2-predictions-2026-11-30.jsonl"},
}


def ratios() -> None:
    rows = {r["id"]: r for r in lines(OWN / ANATOMY)}
    now = Predictor()
    print("== anatomy 38 (one H200, host-bound, 1 x 1,024): QLoRA / LoRA step, measured | predicted today")
    for q, lo in PAIRS:
        cases = [TrainCase.model_validate(rows[i]["case"]) for i in (q, lo)]
        m = rows[q]["step_s"] / rows[lo]["step_s"]
        p = [now.predict(c).step_time_s for c in cases]
        print(f"{q[4:]:<16} {rows[q]['step_s']:.3f} / {rows[lo]['step_s']:.3f} s = {m:.2f} | "
              f"{p[0]:.3f} / {p[1]:.3f} s = {p[0] / p[1]:.2f}")


def held_out() -> None:
    now = Predictor()
    print("\n== QLoRA runs of held-out grids (and the LoRA host references beside them, not in the figures): tokens/s,")
    print("   measured | stored before the run | today")
    for label, files in HELD_OUT.items():
        print(f"-- {label}")
        errs: dict[str, list[float]] = {"stored": [], "today": []}
        for measured, stored in files.items():
            before = {p["id"]: p for p in lines(OWN / stored)}
            for r in lines(OWN / measured):
                m = r["measured"].get("tokens_per_s")
                quantized = r["case"].get("quantization") == "nf4"
                if not m or not (quantized or "qlora-host" in measured):
                    continue
                case = TrainCase.model_validate(r["case"])
                s, t = before[case.id]["tokens_per_s"], now.predict(case).tokens_per_s
                if quantized:
                    errs["stored"].append(s / m - 1)
                    errs["today"].append(t / m - 1)
                print(f"{case.id:<40} {m:8.0f} | {s:8.0f} {s / m - 1:+6.1%} | {t:8.0f} {t / m - 1:+6.1%}"
                      f"{'' if quantized else '   (LoRA: the lease host reference)'}")
        for k, es in errs.items():
            print(f"  {k}: MAPE {100 * statistics.mean(map(abs, es)):.1f}% (mean signed {100 * statistics.mean(es):+.1f}%, "
                  f"n={len(es)})")


if __name__ == "__main__":
    ratios()
    held_out()
