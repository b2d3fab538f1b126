"""Serving times and sizes a model outside the Llama count by its own projections, read from its trace: a plain
(non-gated) MLP, fused projections, shared experts and a dense first layer change the weights a decode step streams
and the memory the weights take, where the Llama formula would count a gated MLP and routed experts only."""

from __future__ import annotations

import pytest

from advisor.predictor import Predictor
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.schema import ServeCase
from knowledge.units import GiB
from models.architecture import param_counts
from models.serve_memory import weight_bytes
from models.serve_setup import make_setup
from models.serving import pass_time

CONFIGS = "knowledge/data/configs/"


@pytest.fixture(scope="module")
def predictor():
    return Predictor()


@pytest.mark.parametrize("name", ["starcoder2-3b", "pythia-1.4b", "qwen1.5-moe-a2.7b", "deepseek-v2-lite", "qwen3-8b"])
def test_parameters_are_the_traced_models(predictor, name):
    """The serving weights are the model's own parameter count (transformers' count on the fake model), which the
    Llama formula misses by 10-37% for StarCoder2, Pythia and Qwen1.5-MoE."""
    arch = predictor.serving_layout(resolve_model(CONFIGS + name + ".json"))
    trace = predictor.traces.forward_trace(arch)
    assert arch.projections and param_counts(arch).total == trace.params.total
    s = make_setup(arch, resolve_platform("h100x1"), predictor.serving_calibration(resolve_platform("h100x1")))
    assert weight_bytes(s) == pytest.approx(2.0 * trace.params.total, rel=1e-6)


def test_a_plain_mlp_streams_two_matrices_not_three(predictor):
    """StarCoder2's c_fc -> GELU -> c_proj: batch-1 decode streams 3.0 B parameters, not the 4.2 B of a gated MLP."""
    arch = resolve_model(CONFIGS + "starcoder2-3b.json")
    own = predictor.serving_layout(arch)
    plat = resolve_platform("h100x1")
    cal = predictor.serving_calibration(plat)
    llama = arch.model_copy(update={"kv_groups": own.kv_groups})  # the same KV, the Llama count's projections
    w_own, w_llama = (pass_time(make_setup(a, plat, cal), 1, 1, 512, decode=True).weights_s for a in (own, llama))
    assert w_own == pytest.approx(w_llama * 3.03 / 4.16, rel=0.06)  # streamed weights, the LM head (tied) included


def test_shared_experts_and_a_dense_first_layer_are_projections(predictor):
    qwen = predictor.serving_layout(resolve_model(CONFIGS + "qwen1.5-moe-a2.7b.json"))
    shapes = {(p.in_features, p.out_features, p.experts): p.per_layer for p in qwen.projections}
    assert shapes[(2048, 5632, 1)] == pytest.approx(3.0)  # the shared expert's gate, up and down
    assert any(e == 60 for (_, _, e) in shapes)  # the routed experts, one grouped weight of 60
    ds = predictor.serving_layout(resolve_model(CONFIGS + "deepseek-v2-lite.json"))
    dense = [p for p in ds.projections if p.experts == 1 and 10944 in (p.in_features, p.out_features)]
    assert dense and dense[0].per_layer == pytest.approx(3.0 / 27)  # layer 0's dense MLP, spread over 27 layers


def test_prediction_memory_follows_the_traced_weights(predictor):
    case = ServeCase(id="sc2", hardware="h100x1", model=CONFIGS + "starcoder2-3b.json", task="serve", batch_size=1,
                     prompt_len=512)
    p = predictor.predict(case)
    assert p.breakdown.weights_gib == pytest.approx(2.0 * 3_030_371_328 / GiB, rel=0.01)


def test_the_kv_layout_is_kept_beside_the_traces(tmp_path, monkeypatch):
    """A config's KV layout is read through its own code once (``probes.cache_trace``), then kept in its trace file
    under ADVISOR_HOME: the next process needs no import of transformers for it (5 s on two cores); the bundled
    configs carry theirs."""
    import json

    import knowledge.catalog
    import probes.cache_trace
    from advisor.traces import KV_GROUPS, TraceBook

    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    cfg = json.loads(open(CONFIGS + "starcoder2-3b.json").read()) | {"vocab_size": 49150}  # not bundled
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    arch = resolve_model(str(tmp_path / "c.json"))
    want = knowledge.catalog.kv_groups(arch.hf_config)
    assert want and want[0]["window"] == 4096
    assert TraceBook().kv_groups(arch) == want
    monkeypatch.setattr(probes.cache_trace, "traced_cache", lambda cfg: pytest.fail("read again"))
    assert TraceBook().kv_groups(arch) == want
    assert TraceBook().kv_groups(resolve_model(CONFIGS + "gemma-2-9b.json"))[1]["window"] == 4096  # bundled
    files = list((tmp_path / "traces").glob("*.json"))
    assert len(files) == 1 and KV_GROUPS in json.loads(files[0].read_text())


def test_a_layout_kept_under_an_older_key_is_read_again(tmp_path, monkeypatch):
    """A trace file under ADVISOR_HOME written before a layout knew the engine's state bytes (key ``_kv_layout``) is not
    trusted: the layout is read through the model's own code again and kept under today's key beside the old."""
    import json

    import probes.cache_trace
    from advisor.traces import KV_GROUPS, TraceBook

    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    cfg = json.loads(open(CONFIGS + "starcoder2-3b.json").read()) | {"vocab_size": 49150}  # not bundled
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    arch = resolve_model(str(tmp_path / "c.json"))
    TraceBook().kv_groups(arch)
    (path,) = (tmp_path / "traces").glob("*.json")
    stale = [{"layers": 30, "window": None, "values_per_token": 1, "split_by_tp": True}]
    path.write_text(json.dumps({"_kv_layout": stale}))
    calls = []
    real = probes.cache_trace.traced_cache
    monkeypatch.setattr(probes.cache_trace, "traced_cache", lambda c: calls.append(1) or real(c))
    got = TraceBook().kv_groups(arch)
    assert calls and got != stale and got[0]["window"] == 4096
    kept = json.loads(path.read_text())
    assert kept[KV_GROUPS] == got and kept["_kv_layout"] == stale


def test_facts_only_rewrites_a_bundled_file_s_facts_and_keeps_its_traces(tmp_path, monkeypatch):
    """``python -m probes.bundle_traces --facts-only``: each bundled file's config facts anew (today's KV layout key),
    its traces untouched, keys of facts no longer read dropped."""
    import json

    import probes.bundle_traces as bt
    from advisor.traces import KV_GROUPS, LORA_DEFAULT, WINDOW
    from probes.hf_model import config_dict
    from probes.trace import config_hash

    config = config_dict(resolve_model(CONFIGS + "gemma-3-1b.json"))
    h = config_hash(config)
    monkeypatch.setattr(bt, "BUNDLED_TRACES", tmp_path)
    monkeypatch.setattr(bt, "_configs", lambda: {h: config})
    (tmp_path / f"{h}.json").write_text(json.dumps({"a|variant": {"x": 1}, "_kv_layout": [], WINDOW: 7}))
    assert bt.main(["--facts-only"]) == 0
    data = json.loads((tmp_path / f"{h}.json").read_text())
    assert data["a|variant"] == {"x": 1} and "_kv_layout" not in data
    assert data[WINDOW] == 512 and LORA_DEFAULT in data
    assert {g["window"] for g in data[KV_GROUPS]} == {None, 512}
