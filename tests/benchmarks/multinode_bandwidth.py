"""Benchmark: how predicted ZeRO-3 throughput grows with the network between nodes.

Run: python tests/benchmarks/multinode_bandwidth.py > tests/benchmarks/multinode_bandwidth.out.txt

The issue asks to check `predict` against published multi-node DeepSpeed runs (each throughput's ratio to
the slowest network's, within 25%). No such rows are bundled: the ZeRO++ (arXiv 2306.10209) and MiCS
(arXiv 2205.00119) papers report them in figures whose exact values we could not read with confidence,
and a number not read from its source is not written down (knowledge/measurements/published/README.md).
So this prints the predicted ratios, for a reader who has those figures at hand to compare, and the
physics they follow: communication-bound on slow networks (ratio ~ bandwidth), compute-bound once the
network outruns NVLink. The network terms come from bandwidths and latencies only (models/collectives.py):
nothing here is fitted to a cluster's throughput.
"""

from __future__ import annotations

import warnings

warnings.filterwarnings("ignore")

from advisor.predictor import Predictor  # noqa: E402
from knowledge.schema import TrainCase  # noqa: E402

GBPS = (100, 200, 400, 800, 1600, 3200)
JOBS = [
    ("Llama-2-70B pre-train, 4 x h100x8, ZeRO-3, recompute, mb 2", dict(hardware="h100x8", model="70b", nodes=4, micro_batch_size=2)),
    ("Llama-2-13B pre-train, 4 x a800x8, ZeRO-3, recompute, mb 4", dict(hardware="a800x8", model="13b", nodes=4, micro_batch_size=4)),
    ("Llama-2-7B pre-train, 8 x a100x8, ZeRO-3, recompute, mb 8", dict(hardware="a100x8", model="7b", nodes=8, micro_batch_size=8)),
]
ZEROPP = dict(zero_quantized_weights=True, zero_hpz_partition_size=8, zero_quantized_gradients=True)


def main() -> None:
    p = Predictor()
    for title, kw in JOBS:
        print(title)
        print(f"  {'Gb/s per node':>13} {'ZeRO-3 tok/s':>13} {'ratio':>6} {'comm s':>8} {'ZeRO++ tok/s':>13} {'ratio':>6}")
        base = None
        base_pp = None
        for g in GBPS:
            case = TrainCase(id="b", task="pretrain", zero_stage=3, recompute=True, inter_node_gbps=g, **kw)
            z3 = p.predict(case)
            pp = p.predict(case.model_copy(update=ZEROPP))
            base = base or z3.tokens_per_s
            base_pp = base_pp or pp.tokens_per_s
            print(f"  {g:>13,} {z3.tokens_per_s:>13,.0f} {z3.tokens_per_s / base:>6.2f} {z3.breakdown.communication_s:>8.2f}"
                  f" {pp.tokens_per_s:>13,.0f} {pp.tokens_per_s / base_pp:>6.2f}")
        print()


if __name__ == "__main__":
    main()
