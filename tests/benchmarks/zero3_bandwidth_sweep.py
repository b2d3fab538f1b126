"""Benchmark: DeepSpeed's ZeRO-3 sweep over inter-node bandwidth, against the advisor's collective model.

Run: python tests/benchmarks/zero3_bandwidth_sweep.py > tests/benchmarks/zero3_bandwidth_sweep.out.txt

Measured (as quoted in issue 23 of this project, from DeepSpeed's published ZeRO-3 sweep): 24 nodes x 16
V100 32GB, an 18B-parameter model, 26, 37, 40 and 47 TFLOP/s per GPU at 1, 2, 4 and 8 x 100 Gb/s per node.
Nothing is fitted to these numbers: the network terms are bandwidths and latencies (models/collectives.py).
The model is a Llama-style proxy of the same size (40 layers, hidden 6144: 12 x 40 x 6144^2 = 18.1B);
Tokens per GPU are not quoted with the sweep, and they decide its shape: ZeRO-3 moves the same bytes per
micro-batch whatever the batch, so the fewer tokens per GPU the more of each step the network sets. The
benchmark takes the batch of GPT-3 at this size (Brown et al. 2020, arXiv 2005.14165, Table 2.1: 2M tokens
for the 6.7B and 13B models) over the 384 GPUs, 5,461 tokens each, as whole 1024-token sequences: mb 5 x
1024, with activation recomputation (without it the 18B proxy does not fit 32 GB at that batch). The
second table shows the same sweep at other batches, since the verdict could depend on this unquoted input (before
2026-11-25 only 4 and 5 sequences passed; now every batch printed does). Since 2026-11-25 ZeRO-3 gathers each
weight twice under recomputation (DeepSpeed's reuse distance keeps the recomputed forward's gather for the backward;
the study's comm-bound rows agree) and its gathers are not hidden behind compute (DeepSpeed fetches a module's weights
as it runs): before, with a third gather and ZeRO-1/2's overlap, the ratios at mb 5 x 1024 were -12%, -13%, -23% and
31.7 TFLOP/s at 100 Gb/s (measured 26); two gathers alone made them -22%, -24%, -34%; both, refitted: -10%, -4%,
-11% and 25.3 TFLOP/s. The choice to leave ZeRO-3's gathers unhidden
was made looking at this sweep, so the sweep is no held-out test of it (no parameter is fitted to it).
The check (tests/test_zero3_sweep.py) is on each ratio to the 100 Gb/s point, within 25%.
"""

from __future__ import annotations

import warnings

warnings.filterwarnings("ignore")

from advisor.predictor import Predictor  # noqa: E402
from knowledge.schema import TrainCase  # noqa: E402

MEASURED_TFLOPS = {100: 26.0, 200: 37.0, 400: 40.0, 800: 47.0}
MODEL_18B = {"hidden_size": 6144, "intermediate_size": 16384, "num_hidden_layers": 40, "num_attention_heads": 48,
             "num_key_value_heads": 48, "vocab_size": 50257}


MICRO_BATCH, SEQ_LEN = 5, 1024  # GPT-3's 2M-token batch at this size over 384 GPUs (see above)


def sweep(micro_batch: int = MICRO_BATCH, seq_len: int = SEQ_LEN) -> list[tuple[int, float, float]]:
    """(Gb/s per node, predicted TFLOP/s per GPU, measured)."""
    p = Predictor()
    out = []
    for gbps, measured in MEASURED_TFLOPS.items():
        case = TrainCase(id=str(gbps), task="pretrain", hardware="v100x16", model=MODEL_18B, nodes=24, zero_stage=3,
                         recompute=True, micro_batch_size=micro_batch, seq_len=seq_len, inter_node_gbps=gbps)
        out.append((gbps, p.predict(case).model_tflops_per_gpu, measured))
    return out


def ratio_errors(rows: list[tuple[int, float, float]]) -> list[float]:
    """Each predicted ratio to the 100 Gb/s point over the measured one, minus 1."""
    base_p, base_m = rows[0][1], rows[0][2]
    return [(pred / base_p) / (meas / base_m) - 1 for _, pred, meas in rows[1:]]


def main() -> None:
    rows = sweep()
    base_p, base_m = rows[0][1], rows[0][2]
    print(f"ZeRO-3, 24 x v100x16, 18B proxy, mb {MICRO_BATCH} x {SEQ_LEN}, recompute")
    print(f"{'Gb/s':>6} {'pred TFLOP/s':>13} {'meas':>6} {'pred ratio':>11} {'meas ratio':>11} {'ratio err':>10}")
    for g, pr, me in rows:
        rp, rm = pr / base_p, me / base_m
        print(f"{g:>6} {pr:>13.1f} {me:>6.1f} {rp:>11.2f} {rm:>11.2f} {rp / rm - 1:>+10.0%}")
    print("\nthe same sweep at other tokens per GPU (recompute): predicted TFLOP/s at 100/200/400/800, ratio errors")
    for mb, seq in ((2, 1024), (4, 1024), (5, 1024), (6, 1024), (8, 1024), (2, 2048), (3, 2048)):
        r = sweep(mb, seq)
        errs = ratio_errors(r)
        verdict = "pass" if all(abs(e) <= 0.25 for e in errs) else "fail"
        print(f"  mb {mb} x {seq:<5} {' '.join(f'{x[1]:5.1f}' for x in r)}   "
              f"{' '.join(f'{e:+5.0%}' for e in errs)}   {verdict}")


if __name__ == "__main__":
    main()
