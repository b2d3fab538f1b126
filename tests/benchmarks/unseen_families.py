"""Ten families no run of ours had seen (GLM-4, Cohere/Aya, Falcon, Phi-2, Nemotron, SmolLM3, ERNIE-4.5, OLMo-1,
Granite-MoE, Qwen3-MoE; config.json shapes in knowledge/data/configs), one H100, 2026-11-25, two grids: each run
beside the prediction stored before it ran and the code of today, without and with the machine's profile; then the
signed error per run and the scores per family.

- grid 1 (``h100-unseen-families``): stored by commit cd8480f, before any run of these families;
- grid 2 (``h100-unseen-families-2``): other configurations of the same families, stored by commit d240613, which had
  learned from grid 1 (fp32 products priced on the CUDA cores, fitted on grid 1's Falcon anatomy).

    python -m tests.benchmarks.unseen_families > tests/benchmarks/unseen_families.out.txt
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from tests.benchmarks.stored_predictions import compare

GRIDS = ("h100-unseen-families", "h100-unseen-families-2")
DATE = "2026-11-25"


def family(run_id: str) -> str:
    return run_id.split("-")[1]


def main(grids: tuple[str, ...] = GRIDS, machine: str = "h100x1", date: str = DATE) -> None:
    """Each grid's runs beside their stored predictions and today's, without and with ``machine``'s profile."""
    for label, suffix, profile in (("without profile", "", None), (f"with the {machine} profile", "-profile", machine)):
        per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for g in grids:
            print(f"== {g}, {label}")
            stored, now = compare([f"{g}-{date}.jsonl"], [f"{g}-predictions{suffix}-{date}.jsonl"], profile)
            for (b, m), (q, _) in zip(stored, now):
                if not m.get("tokens_per_s"):  # ran out of memory: its verdict is in the table above
                    continue
                f = family(q["id"])
                per[f]["stored"].append(b["tokens_per_s"] / m["tokens_per_s"] - 1)
                per[f]["today"].append(q["tokens_per_s"] / m["tokens_per_s"] - 1)
                per[f]["memory"].append(q["peak_mem_gib"] / m["peak_mem_gib"] - 1)
                print(f"  {q['id']:36s} tokens/s {100 * per[f]['stored'][-1]:+6.1f}% -> {100 * per[f]['today'][-1]:+6.1f}%   "
                      f"memory {100 * (b['peak_mem_gib'] / m['peak_mem_gib'] - 1):+5.1f}% -> {100 * per[f]['memory'][-1]:+5.1f}%")
            print()
        print(f"== per family, both grids, {label}: tokens/s MAPE stored before -> code of today (n), peak memory MAPE today")
        for f, d in sorted(per.items()):
            mape = [100 * statistics.mean(map(abs, d[k])) for k in ("stored", "today", "memory")]
            print(f"  {f:7s} {mape[0]:5.1f}% -> {mape[1]:5.1f}% (n={len(d['today'])})   memory {mape[2]:4.1f}%")
        print()


if __name__ == "__main__":
    main()
