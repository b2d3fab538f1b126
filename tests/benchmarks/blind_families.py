"""Seven model types never run before (Mixtral's first 4 layers, Qwen2.5-3B, GPT-J's first 8 layers, BLOOM-1b7, MPT,
Cohere2-MoE and Granite-MoE with shared experts at transformers 5.17's defaults cut to 4 layers: ``probes/grids.py``
FAMILIES mixtral ... gmoes), on one H100 and on two H200s (2026-11-28): PyTorch/PEFT and DeepSpeed ZeRO-2/3, DDP,
LoRA, QLoRA and full, recomputation. Stored before they ran: by the fit that first learned from the traced families'
runs (commit 268f2d0), without a profile and with the bundled one, and by the catalog-only fit before it; on the H100,
also with that lease's own profile (``advisor probe --quick`` there, written on the device before the runs).

    python -m tests.benchmarks.blind_families > tests/benchmarks/blind_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import OWN, compare

DATE = "2026-11-28"


def main() -> None:
    for machine, runs, grid, profile in (("one H100", "h100-blind-families", "h100-blind-families", "h100x1"),
                                         ("two H200s", "h200x2-blind-families", "h200x2-blind-families", "h200x2")):
        for label, suffix, prof in (("without a profile", "", None),
                                    ("the catalog-only fit before (stored column), without a profile", "-catalog-fit", None),
                                    (f"with the bundled {profile} profile", "-bundled-profile", profile)):
            print(f"== {machine}, {label}")
            compare([f"{runs}-{DATE}.jsonl"], [f"{grid}-predictions{suffix}-{DATE}.jsonl"], prof)
            print()
    fresh = str(OWN / "logs" / f"h100x1-profile-blind-{DATE}.json")
    print("== one H100, with the profile of the lease it ran on (launch 10.3 us)")
    compare([f"h100-blind-families-{DATE}.jsonl"], [f"h100-blind-families-predictions-profile-{DATE}.jsonl"], fresh)


if __name__ == "__main__":
    main()
