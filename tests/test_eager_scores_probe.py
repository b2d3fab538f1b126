"""The eager score kernels' probe runs end to end at toy size on the CPU and writes one line per kernel and shape."""

from __future__ import annotations

import json

from probes.eager_scores import measure


def test_eager_scores_probe_times_every_kernel_at_every_shape():
    rows = measure([32, 64], [2], toy=True, repeats=1)
    kinds = {r["kernel"] for r in rows}
    assert {"softmax_fwd_fp32_of_16bit", "softmax_bwd_fp32", "mask_add"} <= kinds
    assert len(rows) == 2 * len(kinds)
    assert all(r["s"] > 0 and r["gbs"] > 0 for r in rows)
    json.dumps(rows)  # what --out writes
