"""Issue 21's regret rule on architectures no recommend group had run (2026-12-07, thirtieth session), grids
``h100-blind-recommend-groups`` (one H100) and ``h200-blind-recommend-groups`` (one H200): three fine-tuning jobs at
2,048 tokens (Llama-4-Scout's text shape, GLM-4.5-Air's shape and Qwen3.5-MoE's text model, each cut to 4 layers), each
the top four configurations ``advisor recommend --engine deepspeed,pytorch`` ranked for that GPU. Predictions were
stored before the runs without a profile, with the bundled profile and with the lease's own (written on the device
before its runs). Per job: the error, and the regret of the configuration predicted fastest (how much slower it ran
than the fastest measured of the group).

    python -m tests.benchmarks.blind_recommend_groups > tests/benchmarks/blind_recommend_groups.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_three_ways, lines, OWN

DATE = "2026-12-07"
GRIDS = (("h100-blind-recommend-groups", "one H100 (launch 7.6 us)", "h100x1"),
         ("h200-blind-recommend-groups", "one H200 (launch 9.1 us)", "h200x1"))


def job(cid: str) -> str:
    return cid.split("-")[1]


def regrets(grid: str) -> None:
    """Each job's configuration predicted fastest (stored, no profile) against the fastest measured of its group."""
    predicted = {p["id"]: p for p in lines(OWN / "logs" / f"{grid}-predictions-{DATE}.jsonl")}
    groups: dict[str, list[tuple[str, float, float]]] = {}
    for r in lines(OWN / "logs" / f"{grid}-{DATE}.jsonl"):
        cid, m = r["case"]["id"], r["measured"]
        if m.get("tokens_per_s"):
            groups.setdefault(job(cid), []).append((cid, m["tokens_per_s"], predicted[cid]["tokens_per_s"]))
        else:
            print(f"  {cid}: did not run ({m.get('failure')}: {m.get('error', '')[:70]})")
    for g, rows in groups.items():
        top = max(rows, key=lambda x: x[2])
        best = max(rows, key=lambda x: x[1])
        print(f"  job {g}: {len(rows)} ran; predicted fastest {top[0].split('-', 2)[2]} ran at {top[1]:,.0f} tokens/s, "
              f"fastest measured {best[0].split('-', 2)[2]} at {best[1]:,.0f}: regret {1 - top[1] / best[1]:.1%}")


def main() -> None:
    for grid, where, bundled in GRIDS:
        compare_three_ways(grid, DATE, where, bundled, f"{grid.split('-')[0]}x1-blind-recommend-groups-profile-{DATE}.json",
                           job)
        print(f"== {where}: regret of the predicted fastest in each job")
        regrets(grid)
        print()


if __name__ == "__main__":
    main()
