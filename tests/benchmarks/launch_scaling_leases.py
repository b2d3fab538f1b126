"""Does a lease's launch time tell its host's speed? Every H100 lease grid with a profile of its own lease, predicted
with that profile three ways: the learned platform's host kept (what the advisor did until 2026-12-07), the per-kernel
host costs scaled by the profile's launch against the launch of the lease whose profile is bundled (what it does
since, ``advisor.predictor.host_reference_launch_s``), and against the probed hosts' mean (as for a machine the fit
never saw). The first four 2026-12-07 grids are fitted since the twenty-seventh session (their rows are in-sample for
the learned host, the rule is not fitted on them), so are the November ones; the two blind-families-4 leases are held
out.

    python -m tests.benchmarks.launch_scaling_leases > tests/benchmarks/launch_scaling_leases.out.txt
"""

from __future__ import annotations

import statistics

import advisor.predictor as predictor
from advisor.cases import load_profile_checked
from advisor.predictor import Predictor
from knowledge.schema import TrainCase
from tests.benchmarks.stored_predictions import OWN, runs

GRIDS = [("h100-heldout-families-c-2026-11-27.jsonl", "h100x1-profile-heldout-c-2026-11-27.json"),
         ("h100-unrun-families-again-2026-11-28.jsonl", "h100x1-profile-unrun-again-2026-11-28.json"),
         ("h100-blind-families-2026-11-28.jsonl", "h100x1-profile-blind-2026-11-28.json"),
         ("h100-blind-families-3-2026-12-07.jsonl", "h100x1-profile-blind-3-2026-12-07.json"),
         ("h100-frozen-prefix-2026-12-07.jsonl", "h100x1-profile-frozen-prefix-2026-12-07.json"),
         ("h100-host-reference-2026-12-07.jsonl", "h100x1-profile-host-reference-2026-12-07.json"),
         ("h100-host-reference-b-2026-12-07.jsonl", "h100x1-profile-host-reference-b-2026-12-07.json"),
         # the twenty-seventh session's two leases, held out: grid h200-blind-families-4 on an H100, then seven of its
         # cases again on a faster host
         ("h100-blind-families-4-2026-12-07.jsonl", "h100x1-profile-blind-4-2026-12-07.json"),
         ("h100-blind-families-4b-2026-12-07.jsonl", "h100x1-profile-blind-4b-2026-12-07.json"),
         # and a third lease, whose predictions with its own profile were stored before it ran under this rule
         ("h100-blind-families-4c-2026-12-07.jsonl", "h100x1-profile-blind-4c-2026-12-07.json")]
RULES = {
    "learned host": lambda platform, base, factors: None,
    "bundled profile's launch": predictor.host_reference_launch_s,
    "probed hosts' launch": lambda platform, base, factors: base.ratios.launch_s,
}


def errors(rows: str, profile: str) -> list[float]:
    p = Predictor(load_profile_checked(str(OWN / "logs" / profile)))
    out = []
    for r in runs(f"logs/{rows}"):
        if r["measured"].get("tokens_per_s"):
            # a lease lent for an H200 grid ran it on an H100: its rows say h100x1, as the case is taken here
            q = p.predict_or_error(TrainCase.model_validate({**r["case"], "hardware": "h100x1"}))
            if not getattr(q, "error", None):
                out.append(q.tokens_per_s / r["measured"]["tokens_per_s"] - 1)
    return out


def main() -> None:
    rule = predictor.host_reference_launch_s
    totals: dict[str, list[tuple[float, float]]] = {name: [] for name in RULES}
    print(f"{'lease grid':44s} launch | " + " | ".join(f"{name:>24s}" for name in RULES))
    try:
        for rows, profile in GRIDS:
            launch_us = 1e6 * load_profile_checked(str(OWN / "logs" / profile)).launch_overhead_s
            cells = []
            for name, reference in RULES.items():
                predictor.host_reference_launch_s = reference
                es = errors(rows, profile)
                mape, signed = statistics.mean(map(abs, es)), statistics.mean(es)
                totals[name].append((mape, signed))
                cells.append(f"{100 * mape:5.1f}% ({100 * signed:+5.1f}%) n={len(es):2d}")
            print(f"{rows:44s} {launch_us:4.1f} us | " + " | ".join(f"{c:>24s}" for c in cells))
    finally:
        predictor.host_reference_launch_s = rule
    print("mean over the lease grids: " + "; ".join(
        f"{name} {100 * statistics.mean(m for m, _ in v):.1f}% (signed {100 * statistics.mean(s for _, s in v):+.1f}%)"
        for name, v in totals.items()))


if __name__ == "__main__":
    main()
