"""The fit verdict of models whose decoder layers ask for one large block each (trace schema 21,
``models.memory.fragmentation_bytes``): what the caching allocator reserved beside the tensors, and which runs ran.

- ``h200x2-falcon-h1-memory`` (two H200s): the runs the rule was made after (in sample).
- ``h200-layer-block-check`` (one H200): stored after the rule and before the runs, with the code before it (commit
  c8d5799) beside it: Bamba and Granite-MoE-Hybrid by length (held out).

    python -m tests.benchmarks.layer_block > tests/benchmarks/layer_block.out.txt
"""

from __future__ import annotations

from advisor.cases import parse_case
from advisor.predictor import Predictor
from tests.benchmarks.stored_predictions import OWN, compare, lines

GRIDS = {"h200x2-falcon-h1-memory": "two H200s, Falcon-H1 by length (the rule was made after these: in sample)",
         "h200-layer-block-check": "one H200, Bamba and Granite-MoE-Hybrid by length (held out)"}
BEFORE = {"h200-layer-block-check": "h200-layer-block-check-predictions-commit-c8d5799-2026-11-29.jsonl"}


def reserved_table(grid: str) -> None:
    """Runs that ran: the allocator's reserve (``max_memory_reserved``) against ``required_gib``, the peak beside."""
    p = Predictor(None)
    print(f"{'run':38s} {'allocated':>9s} {'reserved':>9s} | {'peak':>6s} {'required':>8s}  (GiB)")
    for r in lines(OWN / "logs" / f"{grid}-2026-11-29.jsonl"):
        m = r["measured"]
        if m.get("tokens_per_s"):
            q = p.predict(parse_case(r["case"]))
            print(f"{r['case']['id']:38s} {m['peak_mem_gib']:9.1f} {m['peak_reserved_gib']:9.1f} | {q.peak_mem_gib:6.1f} "
                  f"{q.required_gib:8.1f}  ({100 * (q.required_gib / m['peak_reserved_gib'] - 1):+.1f}% of reserved)")


def main() -> None:
    for grid, where in GRIDS.items():
        print(f"== {grid}: {where}, without a profile")
        compare([f"logs/{grid}-2026-11-29.jsonl"], [f"{grid}-predictions-2026-11-29.jsonl"])
        if grid in BEFORE:
            print(f"== {grid}: the code before the rule (commit c8d5799), predicted before the runs")
            compare([f"logs/{grid}-2026-11-29.jsonl"], [BEFORE[grid]], label="the code of c8d5799")
        reserved_table(grid)
        print()


if __name__ == "__main__":
    main()
