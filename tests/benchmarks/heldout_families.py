"""Thirteen model types never run before (transformers 5.17's default configs of Gemma, GLM, Hunyuan-dense, VaultGemma,
DiffLlama, Jais-2, MiniCPM3, Youtu, PhiMoE, Llama-4 text, EXAONE-MoE, GLM-4.7-Flash, AFMoE; the MoE ones cut to a few
layers) on one H100, 2026-11-27: PyTorch/PEFT and DeepSpeed, LoRA, QLoRA and full, recomputation, ZeRO-2 and ZeRO-3
offload, one case at the GPU's boundary. The predictions were stored before the runs by the code of commit 232402a
(``knowledge/measurements/own/logs/h100-heldout-families-{a,b}-predictions[-profile]-2026-11-27.jsonl``); no fit and
no fix had seen these types. The "code of today" column changes only where code changed after the runs.

Then grid c: the cases whose host time or GPU time those runs showed off, again in one lease, twice: first without a
profile (c0: the probe had crashed on the machine's typer), then after ``advisor probe --quick`` on that host, with
predictions stored before the runs without a profile, with the bundled H100 profile, and with that host's own profile
(``logs/h100x1-profile-heldout-c-2026-11-27.json``: launch 7.1 us where the fit's H100 host launched at 9.9).

    python -m tests.benchmarks.heldout_families > tests/benchmarks/heldout_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import OWN, compare
from tests.benchmarks.unseen_families import main

DATE = "2026-11-27"
FRESH = str(OWN / "logs" / f"h100x1-profile-heldout-c-{DATE}.json")


def grid_c() -> None:
    for label, runs, suffix, profile in (
            ("first run, without profile", "c0", "", None),
            ("second run, without profile", "c", "", None),
            ("second run, with the bundled h100x1 profile (the fit's H100 host)", "c", "-bundled-profile", "h100x1"),
            ("second run, with the profile of the host it ran on", "c", "-profile", FRESH)):
        print(f"== h100-heldout-families-{runs}, {label}")
        compare([f"h100-heldout-families-{runs}-{DATE}.jsonl"], [f"h100-heldout-families-c-predictions{suffix}-{DATE}.jsonl"],
                profile)
        print()


if __name__ == "__main__":
    main(("h100-heldout-families-a", "h100-heldout-families-b"), "h100x1", DATE)
    grid_c()
