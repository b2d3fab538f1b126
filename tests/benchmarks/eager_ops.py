"""Benchmark: what the host spends per traced kernel, from probes/eager_ops.py's rows (one H200 host, 2026-11-27).

Tiny cuts (1 and 5 layers, hidden 256) of eight families ran full training host-bound at 512 and 2048 tokens; one
layer's CPU seconds (forward + backward) beside the kernels the trace counts for the same tiny config: a Llama layer's
kind (up to its 45 forward + 73 backward), the layer's own beyond them, and a scan's loop body per token. Least squares
over the 16 gives each kind's seconds per traced kernel; ``Efficiencies.extra_kernel_ratio`` is the two-kind fit's
ratio (a kernel beyond a Llama layer's over one of its kind); the H100 host's rows, taken later, check how hosts differ.
The first lease's rows (1- and 3-layer cuts, one
synchronisation per call: logs/h200-eager-ops-first-2026-11-27.jsonl) scattered too much to use.

    python -m tests.benchmarks.eager_ops > tests/benchmarks/eager_ops.out.txt
"""

from __future__ import annotations

import json
import warnings

import numpy as np

from knowledge.traces import TraceVariant
from models.step_time import KERNELS_PER_LAYER_BWD, KERNELS_PER_LAYER_FWD
from probes.eager_ops import tiny_config
from tests.benchmarks.stored_predictions import OWN

ROWS = OWN / "logs" / "h200-eager-ops-2026-11-27.jsonl"
# the same probe on the one-H100 host, later that day (not used for the ratio: a check of how hosts differ)
OTHER_HOST = OWN / "logs" / "h100-eager-ops-2026-11-27.jsonl"


def main() -> None:
    report(ROWS, "  <- extra_kernel_ratio")
    print("\n== the H100 host (the ratio above is the H200 host's)")
    report(OTHER_HOST, "")


def report(path, mark: str) -> None:
    warnings.filterwarnings("ignore")
    from advisor.traces import run_trace

    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    per = {(r["family"], r["seq"]): r["per_layer_fwd_s"] + r["per_layer_bwd_s"] for r in rows if "per_layer_fwd_s" in r}
    variant = TraceVariant(trains="all", autocast=False)  # the probe's model: bf16 weights, no autocast
    traces = {f: run_trace(tiny_config(f), variant).layer for f in sorted({f for f, _ in per})}
    hand = KERNELS_PER_LAYER_FWD + KERNELS_PER_LAYER_BWD
    x, y, labels = [], [], []
    print(f"{'family':14} {'tokens':>6} {'CPU ms/layer':>12} {'fwd':>6} {'bwd':>6} {'loop':>7} {'us/kernel':>9}")
    for (f, s), t in per.items():
        L = traces[f]
        fixed = L.kernels_fwd + L.kernels_bwd
        loop = (L.kernels_seq_fwd + L.kernels_seq_bwd) * s
        x.append([min(fixed, hand), max(fixed - hand, 0.0), loop])
        y.append(t)
        labels.append(f)
        print(f"{f:14} {s:>6} {t * 1e3:>12.2f} {L.kernels_fwd:>6.0f} {L.kernels_bwd:>6.0f} {loop:>7.0f} {t * 1e6 / (fixed + loop):>9.1f}")
    X, Y = np.array(x), np.array(y)
    three, *_ = np.linalg.lstsq(X, Y, rcond=None)
    two_x = np.c_[X[:, 0], X[:, 1] + X[:, 2]]
    two, *_ = np.linalg.lstsq(two_x, Y, rcond=None)
    plain = [i for i, f in enumerate(labels) if X[i, 2] == 0]
    plain_fit, *_ = np.linalg.lstsq(two_x[plain], Y[plain], rcond=None)
    print(f"\nus per traced kernel, least squares (n={len(Y)}): a Llama layer's kind {three[0] * 1e6:.1f}, beyond it "
          f"{three[1] * 1e6:.1f}, a scan's loop body {three[2] * 1e6:.1f}")
    print(f"two kinds (n={len(Y)}): a Llama layer's {two[0] * 1e6:.1f}, any beyond it {two[1] * 1e6:.1f}: "
          f"ratio {two[1] / two[0]:.2f}{mark}")
    print(f"two kinds, the families without a scan (n={len(plain)}): {plain_fit[0] * 1e6:.1f}, {plain_fit[1] * 1e6:.1f}: "
          f"ratio {plain_fit[1] / plain_fit[0]:.2f}")
    res = Y - two_x @ two
    print(f"two-kind fit's residual per layer: median |{np.median(np.abs(res)) * 1e3:.2f}| ms, largest "
          f"{np.max(np.abs(res)) * 1e3:.2f} ms ({labels[int(np.argmax(np.abs(res)))]})")


if __name__ == "__main__":
    main()
