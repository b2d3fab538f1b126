"""How many launches an ATen operator makes on a GPU where it is several kernels, not one.

Measured, not fitted (``data/op_launches.json``, written by ``python -m probes.op_launches`` from anatomy rows run with
``--op-launches``): CUB's radix sort behind ``sort`` (a histogram, a pass per digit, memsets of its counters: 22 launches
above 4,096 keys, 5 at or below, the large path taken here since a training step's routing sorts tokens x top-k keys),
``index_put`` with accumulation (the backward of indexing: it sorts its indices first, 20), ``slice_backward`` (a zero
fill and a copy, 2). The fake-tensor trace counts every other operator as one kernel. A change of the table changes what
the traces count: bump ``knowledge.traces.TRACE_SCHEMA`` with it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

OP_LAUNCHES = Path(__file__).parent / "data" / "op_launches.json"
INDEX_PUT = ("index_put", "index_put_", "_index_put_impl_")
ACCUMULATING_INDEX_PUT = "index_put:accumulate"  # the table's key of an index_put that accumulates (the backward of indexing)


@lru_cache(maxsize=1)
def launches_per_call() -> dict[str, float]:
    """{operator: launches per call} of the operators that launch several kernels (the bundled measured table)."""
    return dict(json.loads(OP_LAUNCHES.read_text())["launches_per_call"])


def launches(name: str, accumulate: bool = False) -> float:
    """GPU launches of one call of ATen operator ``name`` (``accumulate``: an ``index_put`` that accumulates)."""
    if name in INDEX_PUT:
        return launches_per_call().get(ACCUMULATING_INDEX_PUT, 1.0) if accumulate else 1.0
    return launches_per_call().get(name, 1.0)
