"""Four model types never run, on two H100 leases (2026-12-07, twenty-seventh session), grid ``h200-blind-families-4``
(a call for an H200 was lent an H100 both times): OLMo-Hybrid, LFM2-MoE, GLM-MoE-DSA and RecurrentGemma from their
transformers 5.17 config defaults, LoRA (default targets and all-linear), QLoRA, ZeRO-2, full training, recomputation.
Predictions were stored before the runs for an H200 and an H100, without a profile and with the bundled one (the
lease's fresh profile was of an H100, the cases said H200: refused, so not stored). The second lease ran seven of the
cases again after a launch probe: how much faster a faster host runs the same host-bound steps. Today's code is also
shown with each lease's own profile. A third lease (launch 9.5 us) ran the grid written for an H100
(``h100-blind-families-4c``, RecurrentGemma left out) after the refit that took in the day's fast-lease grids and the
rule that scales a learned platform's host by a profile's launch: its predictions, the lease's own profile's
included, were stored before it ran. Scored per family.

    python -m tests.benchmarks.blind_families_4 > tests/benchmarks/blind_families_4.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import OWN, compare, compare_three_ways, group_scores

DATE = "2026-12-07"
LEASES = (("h100-blind-families-4", "h100x1-profile-blind-4", "first lease (launch 9.7 us)"),
          ("h100-blind-families-4b", "h100x1-profile-blind-4b", "second lease (launch 6.3 us)"))
STORED = "h100-blind-families-4-predictions"


def family(cid: str) -> str:
    return cid.split("-")[1]


def main() -> None:
    for grid, profile, where in LEASES:
        runs = [f"logs/{grid}-{DATE}.jsonl"]
        for label, suffix, prof in (("without a profile", "", None),
                                    ("with the bundled h100x1 profile", "-bundled-profile", "h100x1"),
                                    ("today's code with the lease's own profile (stored: without one)", "",
                                     str(OWN / "logs" / f"{profile}-{DATE}.json"))):
            print(f"== {where}, {label}")
            stored, today = compare(runs, [f"{STORED}{suffix}-{DATE}.jsonl"], prof)
            group_scores("stored", stored, family)
            group_scores("today", today, family)
            print()
    compare_three_ways("h100-blind-families-4c", DATE, "third lease (launch 9.5 us)", "h100x1",
                       f"h100x1-profile-blind-4c-{DATE}.json", family)


if __name__ == "__main__":
    main()
