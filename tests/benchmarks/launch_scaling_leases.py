"""Would a lease's launch time have told its host's speed? (2026-12-07, twenty-sixth session.) The day's four H100
lease grids, each predicted with its own profile two ways: the learned platform's host as today (the profile brings
its ceilings), and the per-kernel host costs scaled by the profile's launch as for a machine the fit never saw
(``models.calibration.from_profile(new_machine=True)``). Not taken: it helps three leases and hurts the fourth.

    python -m tests.benchmarks.launch_scaling_leases > tests/benchmarks/launch_scaling_leases.out.txt
"""

from __future__ import annotations

import statistics

import advisor.predictor as predictor
import models.calibration as calibration
from advisor.cases import load_profile_checked
from advisor.predictor import Predictor
from knowledge.schema import TrainCase
from tests.benchmarks.stored_predictions import OWN, lines

GRIDS = [("h100-blind-families-3-2026-12-07.jsonl", "h100x1-profile-blind-3-2026-12-07.json"),
         ("h100-frozen-prefix-2026-12-07.jsonl", "h100x1-profile-frozen-prefix-2026-12-07.json"),
         ("h100-host-reference-2026-12-07.jsonl", "h100x1-profile-host-reference-2026-12-07.json"),
         ("h100-host-reference-b-2026-12-07.jsonl", "h100x1-profile-host-reference-b-2026-12-07.json")]


def errors(rows: str, profile: str) -> list[float]:
    p = Predictor(load_profile_checked(str(OWN / "logs" / profile)))
    out = []
    for r in lines(OWN / "logs" / rows):
        if r["measured"].get("tokens_per_s"):
            # the fourth lease ran a grid written for an H200 on an H100: its rows say h100x1, as the case is taken here
            q = p.predict_or_error(TrainCase.model_validate({**r["case"], "hardware": "h100x1"}))
            if not getattr(q, "error", None):
                out.append(q.tokens_per_s / r["measured"]["tokens_per_s"] - 1)
    return out


def main() -> None:
    original = calibration.from_profile
    for rows, profile in GRIDS:
        launch_us = 1e6 * load_profile_checked(str(OWN / "logs" / profile)).launch_overhead_s
        predictor.from_profile = original
        learned = errors(rows, profile)
        predictor.from_profile = lambda platform, base, prof, new_machine=False: original(platform, base, prof, True)
        scaled = errors(rows, profile)
        predictor.from_profile = original
        print(f"{rows:44s} launch {launch_us:4.1f} us: learned host {100 * statistics.mean(map(abs, learned)):5.1f}% "
              f"({100 * statistics.mean(learned):+5.1f}%), scaled by launch {100 * statistics.mean(map(abs, scaled)):5.1f}% "
              f"({100 * statistics.mean(scaled):+5.1f}%), n={len(learned)}")


if __name__ == "__main__":
    main()
