"""Sixty-five runs on one H100 and forty-four on one H200, 2026-11-24, in shapes no fit or fix had seen, predicted by the final code and fit and
stored before they ran (``knowledge/measurements/own/logs/h100-holdout-final*-predictions-2026-11-24.jsonl``):
- the first grid: QLoRA on routed experts and latent attention, LoRA on DeepSpeed, PyTorch full with recomputation,
  sliding windows past and below their length;
- the second: CPU offload of the new families (ZeRO-1/2 optimizer, ZeRO-3 optimizer and parameters), 1k and 8k
  sequences, LoRA under ZeRO-1/2, QLoRA with recomputation;
- the third, after the per-tensor DeepSpeed step term the first grid showed (``ds_step_tensor_s``): DeepSpeed LoRA and
  full fine-tunes of the families at ZeRO-0/1/2, QLoRA on PyTorch;
- one H200 (no family had run on one alone): what fills its 141 GB, offload, 8k sequences, predicted with and without
  the machine's profile (``advisor probe``'s ``h200x1``);
- after the memory-bound kernels' SM share (``kernel_rates.py``, found on the H200 grid): 14 new shapes on each GPU
  (the H100's at half the batch), with and without the profile;
- the last, on the final code (Gemma-2's layer pattern, attention by head size): 14 shapes of every head size on the
  H100 and the same 14 on the H200, with and without the profile.
Per family: every grid's predictions stored before, without a profile.
"Code of today" differs from "stored before" only by what changed after the runs.

    python tests/benchmarks/holdout_final.py > tests/benchmarks/holdout_final.out.txt
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tests.benchmarks.stored_predictions import OWN, compare, lines, score


def family(model: str) -> str:
    """The architecture family of a config path: its file name less the size."""
    return Path(model).stem.rsplit("-", 1)[0]

GRIDS = ("h100-holdout-final", "h100-holdout-final-2", "h100-holdout-final-3")


def both_gpus(grid: str, gpus: tuple[str, ...], ids: dict[str, str]) -> tuple[list, list, list]:
    """``{gpu}-{grid}`` on each GPU, without and with the machine's profile: (stored, stored with the profile, code
    of today without it) pairs; ``ids`` learns each run's model."""
    stored, profiled, today = [], [], []
    for gpu in gpus:
        name = f"{gpu}-{grid}"
        for profile in (None, f"{gpu}x1"):
            print(f"== {name}, {'with the profile ' + profile if profile else 'without a profile'}")
            s, n = compare([f"{name}-2026-11-24.jsonl"],
                           [f"{name}-predictions{'-profile' if profile else ''}-2026-11-24.jsonl"], profile=profile)
            if profile:
                profiled += s
            else:
                stored, today = stored + s, today + n
            print()
        ids.update({r["case"]["id"]: r["case"]["model"] for r in lines(OWN / f"{name}-2026-11-24.jsonl")})
    return stored, profiled, today

if __name__ == "__main__":
    stored, now = [], []
    for name in GRIDS:
        print(f"== {name}")
        s, n = compare([f"{name}-2026-11-24.jsonl"], [f"{name}-predictions-2026-11-24.jsonl"])
        stored, now = stored + s, now + n
        print()
    score("all three grids, stored before the runs", stored)
    score("all three grids, code of today", now)
    print()
    ids = {r["case"]["id"]: r["case"]["model"] for name in GRIDS for r in lines(OWN / f"{name}-2026-11-24.jsonl")}
    h200 = "h200-holdout-final"
    print(f"== {h200}, without the machine's profile")
    s200, _ = compare([f"{h200}-2026-11-24.jsonl"], [f"{h200}-predictions-2026-11-24.jsonl"])
    print(f"\n== {h200}, with the machine's profile (h200x1)")
    compare([f"{h200}-2026-11-24.jsonl"], [f"{h200}-predictions-profile-2026-11-24.jsonl"], profile="h200x1")
    print()
    score("H100 and H200, stored before the runs, without a profile", stored + s200)
    print()
    # after the kernel-rate change (tests/benchmarks/kernel_rates.py), new shapes on both GPUs
    last, last_profile, last_today = both_gpus("holdout-kernel-rates", ("h200", "h100"), ids)
    score("after the kernel-rate change, both GPUs, stored before the runs, without a profile", last)
    score("after the kernel-rate change, both GPUs, stored before the runs, with the profiles", last_profile)
    score("after the kernel-rate change, both GPUs, code of today, without a profile", last_today)
    print()
    # after the layer pattern and attention by head size: the final code, held out, on both GPUs
    final_pairs, final_profile, _ = both_gpus("holdout-last", ("h100", "h200"), ids)
    score("final code, H100 and H200, stored before the runs, without a profile", final_pairs)
    score("final code, H100 and H200, stored before the runs, with the profiles", final_profile)
    print()
    ids.update({r["case"]["id"]: r["case"]["model"] for r in lines(OWN / f"{h200}-2026-11-24.jsonl")})
    by: dict[str, list] = defaultdict(list)
    for p, m in stored + s200 + last + final_pairs:
        by[family(ids[p["id"]])].append((p, m))
    for fam, pairs in sorted(by.items()):
        if any(m.get("tokens_per_s") for _, m in pairs):
            score(f"  {fam}, stored before", pairs)
