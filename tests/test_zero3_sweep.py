"""DeepSpeed's ZeRO-3 inter-node bandwidth sweep (tests/benchmarks/zero3_bandwidth_sweep.py): each
predicted throughput ratio to the 100 Gb/s point within 25% of the measured one. Not met yet (the
paper's micro-batch and sequence length are not quoted, and the model's ratios at the assumed ones are
too flat): strict xfail, so the day it passes the marker must go."""

import pytest

from tests.benchmarks.zero3_bandwidth_sweep import sweep


@pytest.mark.xfail(strict=True, reason="issue 23: ratios at 400 and 800 Gb/s off by 26% and 35% (see the benchmark's output)")
def test_zero3_bandwidth_ratios_within_25_percent():
    rows = sweep()
    base_p, base_m = rows[0][1], rows[0][2]
    for _, pred, meas in rows[1:]:
        assert abs((pred / base_p) / (meas / base_m) - 1) <= 0.25
