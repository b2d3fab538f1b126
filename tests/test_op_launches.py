"""Operators that a GPU runs as several kernels: how a real step's launches are attributed to them, the measured
table, and the trace counting them (a MoE layer's routing sorts; the backward of its gathers accumulates)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from knowledge.op_launches import OP_LAUNCHES, launches, launches_per_call
from probes.op_launches import PREFIX, attribute, table

ROOT = Path(__file__).resolve().parents[1]


def _event(name: str, start: float, end: float, thread: int = 1, device: str = "CPU") -> SimpleNamespace:
    return SimpleNamespace(name=name, time_range=SimpleNamespace(start=start, end=end), thread=thread,
                           device_type=SimpleNamespace(name=device))


def test_each_launch_goes_to_the_operator_around_it() -> None:
    events = [
        _event(f"{PREFIX}fwd:sort", 0, 10), _event(f"{PREFIX}fwd:sort", 0, 10, thread=7, device="CUDA"),  # its GPU copy
        *[_event("cudaLaunchKernel", t, t + 0.5) for t in (1, 2, 3)], _event("cudaMemsetAsync", 4, 4.5),
        _event(f"{PREFIX}fwd:add", 20, 25), _event("cudaLaunchKernel", 21, 21.5),
        _event("aten::mul", 30, 40, thread=2), _event("aten::mul", 31, 39, thread=2),  # a thread the mode missed
        _event("cudaLaunchKernel", 32, 32.5, thread=2),
    ]
    out = attribute(events)
    assert out["ops"] == {"fwd:add": [1, 1], "fwd:sort": [1, 4]}
    assert out["unattributed"] == {"mul": 1}
    assert out["launches"] == 6


def test_the_table_takes_each_models_launches_per_call() -> None:
    def row(ops: dict, ranges: str | None = "cpu") -> dict:
        return {"op_launches": {"ops": ops, **({"ranges": ranges} if ranges else {})}}

    rows = [row({"fwd:sort": [12, 264], "bwd:index_put": [36, 720], "fwd:add": [100, 100], "fwd:mm": [50, 100]}),
            row({"fwd:sort": [8, 40], "bwd:index_put": [24, 480]}),
            row({"fwd:sort": [24, 264]}, ranges=None)]  # counted each range twice (CPU and GPU copies): 12 calls
    t = table(rows)
    assert t["sort"] == pytest.approx(22.0)  # the median of 22, 5, 22
    assert t["index_put:accumulate"] == pytest.approx(20.0)
    assert "add" not in t and "mm" not in t  # one launch; products are split by cuBLAS by shape, not taken


def test_the_bundled_table_is_measured_and_counts_what_a_gpu_launches() -> None:
    doc = json.loads(OP_LAUNCHES.read_text())
    assert all((ROOT / p).is_file() for p in doc["rows"]) and "H200" in doc["source"]
    assert launches("sort") == launches_per_call()["sort"] >= 5
    assert launches("index_put", accumulate=True) >= 10
    assert launches("index_put", accumulate=False) == launches("index_put_") == 1.0
    assert launches("add") == launches("mm") == 1.0


def test_a_moe_layer_counts_its_routings_launches() -> None:
    """Qwen3-MoE's layer (top-k routing, a sort, gathers whose backward accumulates): a real H200 step launched 4,468
    kernels for the 12-layer LoRA cut (anatomy 37); one kernel per operator counted 3,387."""
    from unittest import mock

    from knowledge.catalog import resolve_model
    from knowledge.traces import TraceVariant
    from probes.hf_model import config_dict
    from probes.trace import trace_model

    config = config_dict(resolve_model(str(ROOT / "knowledge/data/configs/qwen3-30b-a3b-12l.json")))
    config = {**config, "num_hidden_layers": 2, "hidden_size": 256, "moe_intermediate_size": 64, "intermediate_size": 512,
              "num_experts": 16, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024}
    v = TraceVariant(trains="all")
    as_launched = trace_model(config, v).layer
    with mock.patch("knowledge.op_launches.launches_per_call", return_value={}):
        one_each = trace_model(config, v).layer
    sort_extra = launches("sort") - 1
    assert as_launched.kernels_fwd - one_each.kernels_fwd >= sort_extra
    assert as_launched.kernels_bwd - one_each.kernels_bwd >= launches("index_put", accumulate=True) - 1
