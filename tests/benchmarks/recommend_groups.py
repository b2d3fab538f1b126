"""What `advisor recommend` ranked first, run: each job's top-ranked configurations (ranks in the run ids) on one H100
(two sets: eight jobs) and on two H200s, 2026-11-24, and Phi-3 LoRA with its default targets, Falcon-7B and GLM-4-9B
LoRA (families never run before that day) on one H100, 2026-11-25, and OLMoE pre-training on two H100s with ZeRO-3's held
experts counted, 2026-11-27; GLM-4-MoE, GPT-Neo and Doge (model types never run on two GPUs) on two H200s, 2026-11-29
(held out: ``logs/``);
predictions stored before each call (``knowledge/measurements/own/logs/<set>-predictions-<date>.jsonl``; the code that made them is the commit that added that file). Per
job: did the configuration ranked first (the stored prediction's fastest fitting) run, and was it within 5% of the
fastest measured? Runs that crashed for a reason of the harness (a package not carried) are not scored.

    python -m tests.benchmarks.recommend_groups > tests/benchmarks/recommend_groups.out.txt
"""

from __future__ import annotations

import re
from collections import defaultdict

from tests.benchmarks.stored_predictions import OWN, Pair, compare, lines, score

SETS = {"h100-recommend-groups": "2026-11-24", "h100-recommend-groups-2": "2026-11-24", "h200x2-recommend-groups": "2026-11-24",
        "h100-phi3-default-targets": "2026-11-25", "h100-recommend-unseen": "2026-11-25", "h100x2-recommend-moe": "2026-11-27",
        "h200x2-new-type-groups": "2026-11-29"}
WITHIN = 0.05


def job(run_id: str) -> str:
    """'h100g-g9-ft-r1-lora-pt-mb1' -> 'h100g-g9-ft': what comes before the rank (machine, model and task); a
    comparator run that no pick ranked carries 'x' for its rank ('h100r2-falcon-ft-x-z0-sdpa-mb1')."""
    return re.split(r"-(?:r\d+|x)-", run_id, maxsplit=1)[0]


def groups(pairs: list[Pair], ids: list[str]) -> None:
    by: dict[str, list[tuple[dict, dict, str]]] = defaultdict(list)
    for (p, m), cid in zip(pairs, ids):
        by[job(cid)].append((p, m, cid))
    ok_n = 0
    for name, rows in sorted(by.items()):
        fitting = [r for r in rows if r[0]["fits"]] or rows
        p, m, cid = max(fitting, key=lambda r: r[0]["tokens_per_s"])
        ran = [r[1]["tokens_per_s"] for r in rows if r[1].get("tokens_per_s")]
        best = max(ran) if ran else 0.0
        got = m.get("tokens_per_s") or 0.0
        ok = bool(ran) and got >= (1 - WITHIN) * best
        ok_n += ok
        what = f"{got:7.0f} tokens/s" if got else f"OOM at {m.get('peak_mem_gib') or 0:.1f} GiB"
        print(f"  {name:16s} n={len(rows)}  pick {cid:34s} {what:>20s}  fastest measured {best:7.0f}  "
              f"{'yes' if ok else 'NO'}")
    print(f"  the pick ran and was within {WITHIN:.0%} of the fastest measured in {ok_n} of {len(by)} jobs")


if __name__ == "__main__":
    for m, date in SETS.items():
        files = [f"{m}-{date}.jsonl" if (OWN / f"{m}-{date}.jsonl").exists() else f"logs/{m}-{date}.jsonl"]  # held out
        stored, today = compare(files, [f"{m}-predictions-{date}.jsonl"])
        ids = [r["case"]["id"] for f in files for r in lines(OWN / f)
               if r["measured"].get("failure") in (None, "device_oom", "host_oom")]
        print(f"{m}: jobs (stored predictions)")
        groups(stored, ids)
        print(f"{m}: jobs (code of today; not held out where it changed after these runs)")
        groups(today, ids)
        score(f"{m}, stored", stored)
        print()
