"""Anatomy grids 19 and 20 on two H100s (two 32-core hosts), predictions stored before each run: ZeRO-2 / ZeRO-1 with
the optimizer offloaded on models no fit has seen (every 16-bit gradient on the GPU at the end of backward, DeepSpeed
0.19.8: ``knowledge.deepspeed_releases``), and ZeRO-3 steps bound by DeepSpeed's module hooks (Qwen3-4B LoRA and full,
Gemma-2-2B LoRA), without a profile, with the bundled one-H100 profile, and (grid 20) with the profile `advisor probe`
wrote on the host itself before the runs. Also what the study's release (no gradients held) would have said.

    python -m tests.benchmarks.offload_grads_zero3_host > tests/benchmarks/offload_grads_zero3_host.out.txt
"""

from __future__ import annotations

from advisor.predictor import Predictor
from knowledge.schema import TrainCase
from tests.benchmarks.stored_predictions import OWN, compare, lines

MEASURED = ["h100x2-anatomy-19-2026-11-27.jsonl", "h100x2-anatomy-20-2026-11-27.jsonl"]
STORED = ["h100x2-anatomy-19-predictions-2026-11-27.jsonl", "h100x2-anatomy-20-predictions-2026-11-27.jsonl"]
FRESH = OWN / "logs" / "h100x2-profile-2026-11-27.json"  # grid 20's host, probed before its runs


def main() -> None:
    print("== without a profile")
    compare(MEASURED, STORED)
    print("\n== with the bundled h100x1 profile (today's code only; the stored column is the profile-free prediction)")
    compare(MEASURED, STORED, profile="h100x1")
    print("\n== grid 20 with its host's own fresh profile (stored: predicted there, before the runs, by the code of that commit)")
    compare(MEASURED[1:], ["h100x2-anatomy-20-predictions-fresh-profile-2026-11-27.jsonl"], profile=str(FRESH))
    print("\n== ZeRO-1/2 offload peaks as the study's release (deepspeed_version 0.12) would hold them")
    p = Predictor()
    for r in (r for name in MEASURED for r in lines(OWN / name)):
        c = r["case"]
        if c.get("offload", "none") == "none" or not r["measured"].get("peak_mem_gib"):
            continue
        old = p.predict(TrainCase.model_validate({**c, "deepspeed_version": "0.12"})).peak_mem_gib
        print(f"{c['id']:38s} measured {r['measured']['peak_mem_gib']:5.1f} GiB, as 0.12: {old:5.1f} ({old / r['measured']['peak_mem_gib'] - 1:+.0%})")


if __name__ == "__main__":
    main()
