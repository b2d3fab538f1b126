"""Ten families no run of ours had seen (GLM-4, Cohere/Aya, Falcon, Phi-2, Nemotron, SmolLM3, ERNIE-4.5, OLMo-1,
Granite-MoE, Qwen3-MoE; config.json shapes in knowledge/data/configs), one H100, 2026-11-25: each run beside the
prediction stored before it ran (commit cd8480f: ``knowledge/measurements/own/logs/h100-unseen-families-predictions*``)
and the code of today, without and with the machine's profile; then the error per family.

    python -m tests.benchmarks.unseen_families > tests/benchmarks/unseen_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare

RUNS = ["h100-unseen-families-2026-11-25.jsonl"]


def family(run_id: str) -> str:
    return run_id.split("-")[1]


def main() -> None:
    for label, preds, profile in (("without profile", "h100-unseen-families-predictions-2026-11-25.jsonl", None),
                                  ("with the h100x1 profile", "h100-unseen-families-predictions-profile-2026-11-25.jsonl", "h100x1")):
        print(f"== {label}")
        stored, now = compare(RUNS, [preds], profile)
        print("per family, signed tokens/s error (stored before -> code of today):")
        ids = [p["id"] for p, _ in now]
        for (b, m), (q, _), cid in zip(stored, now, ids):
            print(f"  {family(cid):7s} {cid:36s} {100 * (b['tokens_per_s'] / m['tokens_per_s'] - 1):+6.1f}% -> "
                  f"{100 * (q['tokens_per_s'] / m['tokens_per_s'] - 1):+6.1f}%   memory {100 * (b['peak_mem_gib'] / m['peak_mem_gib'] - 1):+5.1f}% -> "
                  f"{100 * (q['peak_mem_gib'] / m['peak_mem_gib'] - 1):+5.1f}%")
        print()


if __name__ == "__main__":
    main()
