"""Benchmark: how fast `advisor recommend` answers, and how close its pick is to exhaustive enumeration.

Run: python tests/benchmarks/search_speed.py > tests/benchmarks/search_speed.out.txt
Wall time is the whole CLI (Python start, imports, search, table) as a user sees it; the gap compares
the predicted tokens/s of each sampler's top pick with the best of plain enumeration of the same space.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
import warnings

warnings.filterwarnings("ignore")

from advisor.search import SearchSpec, exhaustive_best, run_search  # noqa: E402
from knowledge.efficiency import load_efficiencies  # noqa: E402

JOBS = [
    ("rtx4090x8", "finetune", "70b", 2048),
    ("rtx4090x8", "pretrain", "7b", 350),
    ("a800x8", "pretrain", "7b", 2048),
    ("a800x8", "finetune", "70b", 2048),
    ("h100x1", "finetune", "13b", 4096),
    ("h200x2", "pretrain", "llama2-13b", 2048),
    ("rtx3090x8-pcie", "finetune", "13b", 512),
    ("l40sx4", "finetune", "llama3-8b", 8192),
]


def main() -> None:
    eff = load_efficiencies()
    exe = os.path.join(os.path.dirname(sys.executable), "advisor")
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"{'job':42s} {'CLI s':>6s} {'exhaustive tok/s':>17s} {'auto gap':>9s} {'tpe gap':>8s} {'tpe s':>6s} {'tpe trials':>10s}")
    for hw, task, model, seq in JOBS:
        t0 = time.perf_counter()
        subprocess.run([exe, "recommend", "--hardware", hw, "--task", task, "--model", model, "--seq-len", str(seq),
                        "--json", "--out-dir", "/tmp/advisor-bench"], check=True, capture_output=True)
        cli_s = time.perf_counter() - t0
        spec = SearchSpec(hardware=hw, model=model, task=task, seq_len=seq)
        best = exhaustive_best(spec, eff)
        ref = best.prediction.tokens_per_s if best else 0.0
        auto, _, _ = run_search(spec, eff)
        t1 = time.perf_counter()
        tpe, _, facts = run_search(spec, eff, sampler="tpe")
        tpe_s = time.perf_counter() - t1

        def gap(r):
            return "-" if not ref else f"{1 - r[0].prediction.tokens_per_s / ref:.2%}" if r else "none"

        print(f"{hw + ' ' + task + ' ' + model + ' seq ' + str(seq):42s} {cli_s:6.2f} {ref:17,.0f} {gap(auto):>9s} {gap(tpe):>8s} {tpe_s:6.2f} {facts['trials']:10d}")


if __name__ == "__main__":
    main()
