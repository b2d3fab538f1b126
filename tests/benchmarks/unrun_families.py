"""Eleven model types never run before (transformers 5.17's default configs of nanochat, GPT-BigCode, Granite-SWA,
HyperCLOVA X, Mellum, Laguna, FlexOlmo, MiniMax-M2, ZAYA, Solar-Open, and DeepSeek-V3's code at a 16B-A3B model's
sizes; the MoE ones cut to a few layers, ``probes/grids.py`` FAMILIES nano ... dsv3), on one H100 (2026-11-27) and on
two H100s (2026-11-28; the leases were asked for two H200s): PyTorch/PEFT and DeepSpeed ZeRO-2/3, LoRA, QLoRA and
full, recomputation, DDP, one case at each GPU's boundary. The predictions were stored before the runs by the fit in
which the probe's cut models carry their own host factor (``advisor.evaluation.CUT_MODEL_FACTORS``), and, after the
runs, by the code before that change (commit 87b410a; no fit has ever seen these types, so both are held out).
Then seven of the one-GPU cases again on another H100 lease (2026-11-28), after ``advisor probe --quick`` there:
stored before, without a profile, with the bundled h100x1 profile and with that host's own
(``logs/h100x1-profile-unrun-again-2026-11-28.json``, launch 7.3 us).

    python -m tests.benchmarks.unrun_families > tests/benchmarks/unrun_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import OWN, compare


def main() -> None:
    for label, runs, preds in (
            ("one H100, without a profile", "h100-unrun-families-2026-11-27.jsonl", "h100-unrun-families-predictions-2026-11-27.jsonl"),
            ("one H100, the code before (commit 87b410a) in the stored column", "h100-unrun-families-2026-11-27.jsonl",
             "h100-unrun-families-predictions-commit-87b410a-2026-11-27.jsonl"),
            ("two H100s, without a profile", "h100x2-unrun-families-2026-11-28.jsonl",
             "h200x2-unrun-families-predictions-as-h100x2-2026-11-28.jsonl"),
            ("two H100s, the code before (commit 87b410a) in the stored column", "h100x2-unrun-families-2026-11-28.jsonl",
             "h200x2-unrun-families-predictions-as-h100x2-commit-87b410a-2026-11-28.jsonl")):
        print(f"== {label}")
        compare([runs], [preds])
        print()
    print("== one H100, with the bundled h100x1 profile")
    compare(["h100-unrun-families-2026-11-27.jsonl"], ["h100-unrun-families-predictions-profile-2026-11-27.jsonl"], "h100x1")
    fresh = str(OWN / "logs" / "h100x1-profile-unrun-again-2026-11-28.json")
    for label, suffix, profile in (("without a profile", "", None), ("with the bundled h100x1 profile", "-bundled-profile", "h100x1"),
                                   ("with the profile of the host it ran on", "-profile", fresh)):
        print(f"\n== another H100 lease, {label}")
        compare(["h100-unrun-families-again-2026-11-28.jsonl"],
                [f"h100-unrun-families-again-predictions{suffix}-2026-11-28.jsonl"], profile)


if __name__ == "__main__":
    main()
