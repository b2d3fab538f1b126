"""Anatomy grids 19, 20 and 21 on three two-H100 hosts (32 cores each), predictions stored before each run.

- ZeRO-2 / ZeRO-1 with the optimizer offloaded on models no fit has seen: every 16-bit gradient on the GPU at the end of
  backward under DeepSpeed 0.19.8 (``knowledge.deepspeed_releases``), and what the study's release would have held.
- ZeRO-3 steps bound by DeepSpeed's module hooks (Qwen3-4B LoRA and full, Gemma-2-2B LoRA): without a profile, with the
  bundled one-H100 profile, with the profile `advisor probe` wrote on the host itself before the runs (grids 20, 21),
  and, for comparison, with a profile that scales only the kernel dispatch (as before ``HOST_CPU_COSTS``).

Grid 21 was asked of two H200s and ran on two H100s: its on-device predictions named the H200 and were refused, so its
fresh-profile predictions were made after the runs by the code of the commit before them (283528d), with the profile
measured on that host before them.

    python -m tests.benchmarks.offload_grads_zero3_host > tests/benchmarks/offload_grads_zero3_host.out.txt
"""

from __future__ import annotations

import statistics

import models.calibration as calibration
from advisor.cases import load_profile_checked
from advisor.predictor import Predictor
from knowledge.schema import TrainCase
from tests.benchmarks.stored_predictions import OWN, compare, lines

MEASURED = ["h100x2-anatomy-19-2026-11-27.jsonl", "h100x2-anatomy-20-2026-11-27.jsonl",
            "logs/h100x2-anatomy-21-rows-2026-11-27.jsonl"]
STORED = ["h100x2-anatomy-19-predictions-2026-11-27.jsonl", "h100x2-anatomy-20-predictions-2026-11-27.jsonl",
          "h100x2-anatomy-21-predictions-2026-11-27.jsonl"]
FRESH = {"a20": OWN / "logs" / "h100x2-profile-2026-11-27.json", "a21": OWN / "logs" / "h100x2-profile-b-2026-11-27.json"}
FRESH_STORED = {"a20": "h100x2-anatomy-20-predictions-fresh-profile-2026-11-27.jsonl",
                "a21": "h100x2-anatomy-21-predictions-fresh-profile-2026-11-27.jsonl"}


def rows() -> list[dict]:
    return [r for name in MEASURED for r in lines(OWN / name)]


def hook_bound(costs: tuple[str, ...]) -> None:
    """Each ZeRO-3 row's step-time error with its host's profile (the bundled h100x1 one where none was taken)."""
    saved, calibration.HOST_CPU_COSTS = calibration.HOST_CPU_COSTS, costs
    try:
        # one predictor per profile, built under the scaling being compared (its calibration is built on first use)
        predictors = {grid: Predictor(load_profile_checked(str(path))) for grid, path in FRESH.items()}
        bundled = Predictor(load_profile_checked("h100x1"))
        errs = []
        for r in rows():
            c = r["case"]
            if c.get("zero_stage") != 3:
                continue
            q = predictors.get(c["id"][:3], bundled).predict(TrainCase.model_validate(c))
            errs.append(q.tokens_per_s / r["measured"]["tokens_per_s"] - 1)
        print(f"  the profile scales {', '.join(costs)}: tokens/s MAPE {100 * statistics.mean(map(abs, errs)):.1f}% "
              f"(mean signed {100 * statistics.mean(errs):+.1f}%, n={len(errs)})")
    finally:
        calibration.HOST_CPU_COSTS = saved


def main() -> None:
    print("== without a profile")
    compare(MEASURED, STORED)
    print("\n== with the bundled h100x1 profile (today's code only; the stored column is the profile-free prediction)")
    compare(MEASURED, STORED, profile="h100x1")
    for grid, path in FRESH.items():
        print(f"\n== grid {grid[1:]} with its host's own fresh profile")
        compare([m for m in MEASURED if f"-{grid[1:]}-" in m], [FRESH_STORED[grid]], profile=str(path))
    print("\n== the ZeRO-3 rows, each with its host's profile (fresh where taken, else the bundled h100x1)")
    hook_bound(calibration.HOST_CPU_COSTS)
    hook_bound(("kernel_time_s",))
    print("\n== the same case on three hosts whose launch probe agrees (10.6 and 10.8 us where measured)")
    for cid in ("q4-lora-z3-mb1-s512", "q4-full-z3-mb1-s2048", "g2-lora-z3-mb2-s1024"):
        steps = [f"{r['case']['id'][:3]} {r['measured']['step_time_s']:.3f} s" for r in rows() if r["case"]["id"].endswith(cid)]
        print(f"  {cid:24s} {', '.join(steps)}")
    print("\n== ZeRO-1/2 offload peaks as the study's release (deepspeed_version 0.12) would hold them")
    p = Predictor()
    for r in rows():
        c = r["case"]
        if c.get("offload", "none") == "none" or not r["measured"].get("peak_mem_gib"):
            continue
        old = p.predict(TrainCase.model_validate({**c, "deepspeed_version": "0.12"})).peak_mem_gib
        print(f"{c['id']:38s} measured {r['measured']['peak_mem_gib']:5.1f} GiB, as 0.12: {old:5.1f} ({old / r['measured']['peak_mem_gib'] - 1:+.0%})")


if __name__ == "__main__":
    main()
