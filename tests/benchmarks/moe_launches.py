"""Mixtures of experts on one H200 after the trace counts each operator as a GPU launches it, held out (2026-11-30,
twenty-third session).

Trace schema 23 counts a router's ``sort`` as the 22 launches of CUB's radix sort and the accumulating ``index_put`` of
an expert gather's backward as 20 (``knowledge.op_launches``, measured in anatomy 37). Then the refit, then grid
``h200-moe-launches-check`` ran on one H200, its predictions stored first (without a profile and with the bundled
h200x1 one): ten MoE configurations never run (Qwen3-30B-A3B whole, PhiMoE, Llama-4, ERNIE-4.5-MoE, Granite-MoE-Shared,
OLMoE on every linear at 2k, Mixtral at 4k, DeepSeek-V3's small config, GLM-4-MoE-Lite, Qwen1.5-MoE QLoRA) and three
dense steps run on earlier leases, which say how fast this lease's host was. Then anatomy 37's fourteen steps (measured
before the change; their predictions were stored before it too) as predicted today.

    python -m tests.benchmarks.moe_launches > tests/benchmarks/moe_launches.out.txt
"""

from __future__ import annotations

import statistics
import warnings

warnings.filterwarnings("ignore")

from advisor.predictor import Predictor  # noqa: E402
from knowledge.schema import TrainCase  # noqa: E402
from tests.benchmarks.stored_predictions import OWN, compare_grids, lines  # noqa: E402

DATE = "2026-11-30"
GRIDS = {"h200-moe-launches-check": "one H200, mixtures of experts never run and three dense references (held out)"}
ANATOMY = "logs/h200x1-anatomy-37-2026-11-30.jsonl"
STORED = "logs/h200x1-anatomy-37-predictions-2026-11-30.jsonl"


def anatomy_steps() -> None:
    """Anatomy 37's measured steps beside the predictions stored before the change and today's."""
    stored = {p["id"]: p for p in lines(OWN / STORED)}
    now = Predictor()
    print("== anatomy 37 (one H200): step seconds, measured | stored before the change | today (signed: tokens/s)")
    errs: dict[str, list[float]] = {"stored": [], "today": []}
    for r in lines(OWN / ANATOMY):
        case = TrainCase.model_validate(r["case"])
        p = now.predict(case)
        s, m = stored[r["id"]]["step_time_s"], r["step_s"]
        moe = "MoE" if _is_moe(case.model) else ""
        errs["stored"].append(m / s - 1)
        errs["today"].append(m / p.step_time_s - 1)
        print(f"{r['id']:<30} {m:7.3f} | {s:7.3f} {m / s - 1:+6.1%} | {p.step_time_s:7.3f} {m / p.step_time_s - 1:+6.1%}  {moe}")
    for k, es in errs.items():
        print(f"  {k}: tokens/s MAPE {100 * statistics.mean(map(abs, es)):.1f}% (mean signed {100 * statistics.mean(es):+.1f}%, "
              f"n={len(es)})")


def _is_moe(model: str) -> bool:
    from knowledge.catalog import resolve_model

    return resolve_model(model).is_moe


if __name__ == "__main__":
    compare_grids(GRIDS, "h200x1", DATE)
    anatomy_steps()
