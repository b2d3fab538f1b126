"""What a profile does on a server the fit never saw, taken apart: the held-out-by-server report as shipped (each fit's
``dispatch_launch_exponent`` from the hosts it learned, the prior 1 where it cannot tell: ``fit_correction``) beside
the same report with the exponent at 0 in every held-out fit (a profile's ceilings applied, its launch scaling not).
An experiment: the shipped rule is unchanged.

    python -m tests.benchmarks.launch_exponent_holdout > tests/benchmarks/launch_exponent_holdout.out.txt
"""

from __future__ import annotations

import time
from typing import Any

import advisor.evaluation as evaluation
from advisor.validation import validation_report
from advisor.validation_cache import cached_report


def _profiled(report: dict[str, Any]) -> dict[str, tuple[int, float, float]]:
    """{server: (n, MAPE without its profile, MAPE with it)} for the servers with a bundled profile."""
    return {g["group"]: (g["n_profiled"], g["mape_profiled_without"], g["mape_profiled_with"])
            for g in report["throughput_by_group"] if g["n_profiled"]}


def main() -> None:
    start = time.monotonic()
    shipped = cached_report("all", "server")
    if shipped is None:
        raise SystemExit("no cached held-out-by-server report for this code: run `advisor validate --holdout server --recompute`")
    evaluation.dispatch_launch_exponent = lambda factors, profiles: 0.0
    zero = validation_report("all", "server", progress=None)
    a, b = _profiled(shipped), _profiled(zero)
    print("held out by server, own runs with a bundled profile of their server: tokens/s MAPE")
    print(f"{'server':10} {'n':>4} {'no profile':>11} {'profile, shipped rule':>22} {'profile, exponent 0':>20}")
    for g in sorted(a):
        print(f"{g:10} {a[g][0]:>4} {100 * a[g][1]:>10.1f}% {100 * a[g][2]:>21.1f}% {100 * b[g][2]:>19.1f}%")
    every, every_zero = shipped["throughput_overall"], zero["throughput_overall"]  # the same rows, pooled
    print(f"{'all':10} {every['n_profiled']:>4} {100 * every['mape_profiled_without']:>10.1f}% "
          f"{100 * every['mape_profiled_with']:>21.1f}% {100 * every_zero['mape_profiled_with']:>19.1f}%")
    print(f"\n({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
