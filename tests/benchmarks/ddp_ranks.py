"""PyTorch DDP on two ranks and mixture-of-experts training on two ranks, held out (2026-11-30, twenty-second session).

``Efficiencies.ddp_hook_s`` (DDP's reducer: a host hook per trainable tensor of the backward that all-reduces) was
added with its prior from anatomy 34 and fitted (79 us) before two grids ran on one two-H200 machine, their predictions
stored first: ``h200x2-ddp-check`` (DDP on families never run under it: LoRA on the attention projections and on every
linear, QLoRA, full, one under accumulation, two on one rank) and ``h200x2-moe-check`` (Qwen3-MoE, GPT-OSS,
Granite-MoE, Mixtral, OLMoE, DeepSeek-V2-Lite under DDP and ZeRO-2/3). Each is scored as stored, as predicted today,
and today with the hook switched off (the same fit otherwise). Then the same grid's one-rank / two-rank pairs, and the
DDP rows of the held-out ``h200x2-rank-contention-check`` (stored before the hook existed).

    python -m tests.benchmarks.ddp_ranks > tests/benchmarks/ddp_ranks.out.txt
"""

from __future__ import annotations

import statistics
import warnings

warnings.filterwarnings("ignore")

from advisor.predictor import Predictor  # noqa: E402
from knowledge.efficiency import load_efficiencies  # noqa: E402
from knowledge.schema import TrainCase  # noqa: E402
from tests.benchmarks.stored_predictions import OWN, compare_grids, lines, rank_pairs  # noqa: E402

DATE = "2026-11-30"
GRIDS = {"h200x2-ddp-check": "PyTorch DDP on two ranks, families never run under it (held out)",
         "h200x2-moe-check": "mixture-of-experts training on two ranks (held out)"}


def _signed(pairs: list[tuple[float, float]]) -> str:
    es = [p / m - 1 for p, m in pairs]
    return f"MAPE {100 * statistics.mean(map(abs, es)):.1f}% (mean signed {100 * statistics.mean(es):+.1f}%, n={len(es)})"


def without_the_hook(files: list[str], engine: str = "pytorch") -> None:
    """The two-rank ``engine`` runs of ``files``: today, and today with ``ddp_hook_s`` = 0."""
    on = Predictor()
    off = Predictor(efficiencies=load_efficiencies().model_copy(update={"ddp_hook_s": 0.0}))
    rows = [r for f in files for r in lines(OWN / f) if r["measured"].get("tokens_per_s")
            and r["case"].get("engine") == engine and (r["case"].get("gpus") or 1) > 1]
    pairs_on, pairs_off = [], []
    print(f"{'run':46s} {'measured':>9s} {'today':>9s} {'no hook':>9s}")
    for r in rows:
        case, m = TrainCase.model_validate(r["case"]), r["measured"]["tokens_per_s"]
        a, b = on.predict(case).tokens_per_s, off.predict(case).tokens_per_s
        pairs_on.append((a, m))
        pairs_off.append((b, m))
        print(f"{case.id:46s} {m:9.0f} {a:9.0f} {b:9.0f}   {a / m - 1:+6.1%} {b / m - 1:+6.1%}")
    print(f"today:            {_signed(pairs_on)}")
    print(f"with no DDP hook: {_signed(pairs_off)}")


def main() -> None:
    compare_grids(GRIDS, "h200x2", DATE)
    print("== DDP runs on two ranks: today, and today without DDP's hook (ddp_hook_s = 0)")
    print("-- h200x2-ddp-check (held out, stored after the hook was fitted)")
    without_the_hook([f"logs/h200x2-ddp-check-{DATE}.jsonl"])
    print("-- h200x2-moe-check, its DDP runs (held out)")
    without_the_hook([f"logs/h200x2-moe-check-{DATE}.jsonl"])
    print("-- h200x2-rank-contention-check, its DDP runs (held out, stored 2026-11-29 before the hook existed)")
    without_the_hook(["logs/h200x2-rank-contention-check-2026-11-29.jsonl"])
    print()
    print("== one rank against two, same lease (h200x2-ddp-check)")
    rank_pairs(f"logs/h200x2-ddp-check-{DATE}.jsonl", "h200x2dc-")


if __name__ == "__main__":
    main()
