"""ZeRO-3 parameter offload to pinned memory: host RAM and tokens/s (2026-11-29, seventeenth session).

Pinned parameter-offload runs had used 3.8-10.0 GiB more host RAM than predicted (pageable ones within 1.3 GiB): each
parameter's 16-bit partition is pinned on its own by ``zero.Init`` (a power of two each) and stays in PyTorch's pinned
cache after DeepSpeed moves it into the flat buffers (``models.memory.offloaded_param_partitions_cached_bytes``). Set
from those earlier rows (in sample, the first table: today's count without the term and with it), then held out on
grid ``h200-param-offload-pinned`` (six families that never ran it pinned; predictions stored before; the rows then
joined the fit).

    python -m tests.benchmarks.param_offload_pinned > tests/benchmarks/param_offload_pinned.out.txt
"""

from __future__ import annotations

import statistics

from advisor.calibrate import measurements
from advisor.evaluation import training_rows
from advisor.predictor import calibration_for
from knowledge.units import GiB
from models.memory import offloaded_param_partitions_cached_bytes
from models.setup import derive
from tests.benchmarks.stored_predictions import OWN, compare_grid, lines

GRID = "h200-param-offload-pinned"


def host_rows() -> None:
    """Every own ZeRO-3 parameter-offload run with its host peak: measured, today's count without the pinned cache, with it."""
    rows, _ = training_rows([m for m in measurements("all")[0] if m.dataset.startswith("own")])
    print("own ZeRO-3 parameter-offload runs: host GiB measured | today without the cached partitions | today")
    errs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for r in rows:
        c, meas = r.case, r.m.measured.host_peak_gib
        if c.offload != "optimizer+params" or r.failure or not meas:
            continue
        p = r.predict(calibration_for(r.platform))
        cached = offloaded_param_partitions_cached_bytes(derive(c, r.arch, r.platform, r.trace)) / GiB if c.offload_pin_memory else 0.0
        before = p.host_mem_gib - cached
        errs[c.offload_pin_memory].append((before / meas - 1, p.host_mem_gib / meas - 1))
        print(f"  {c.id:44s} {'pinned  ' if c.offload_pin_memory else 'pageable'} {meas:6.1f} | {before:6.1f} ({before / meas - 1:+5.1%}) "
              f"| {p.host_mem_gib:6.1f} ({p.host_mem_gib / meas - 1:+5.1%})")
    for pinned, es in errs.items():
        if es:
            print(f"  {'pinned' if pinned else 'pageable'}: MAPE without {100 * statistics.mean(abs(a) for a, _ in es):.1f}% "
                  f"(signed {100 * statistics.mean(a for a, _ in es):+.1f}%), with {100 * statistics.mean(abs(b) for _, b in es):.1f}% "
                  f"(signed {100 * statistics.mean(b for _, b in es):+.1f}%), n={len(es)}")
    print()


def stored_host() -> None:
    """The held-out grid's host RAM against the predictions stored before it ran."""
    stored = {p["id"]: p for p in lines(OWN / "logs" / f"{GRID}-predictions-2026-11-29.jsonl")}
    print(f"== {GRID}: host GiB measured | stored before")
    es = []
    for r in lines(OWN / f"{GRID}-2026-11-29.jsonl"):
        m, p = r["measured"], stored[r["case"]["id"]]
        es.append(p["host_mem_gib"] / m["host_peak_gib"] - 1)
        print(f"  {r['case']['id']:30s} {m['host_peak_gib']:6.1f} | {p['host_mem_gib']:6.1f} ({es[-1]:+5.1%})")
    print(f"  host RAM MAPE {100 * statistics.mean(map(abs, es)):.1f}% (signed {100 * statistics.mean(es):+.1f}%, n={len(es)})")
    print()


def main() -> None:
    host_rows()
    stored_host()
    compare_grid(GRID, "one H200, ZeRO-3 optimizer and parameters offloaded to pinned memory", "h200x1", date="2026-11-29")


if __name__ == "__main__":
    main()
