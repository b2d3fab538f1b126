"""The Streamlit explorer, driven headless through streamlit.testing (no browser, no GPU)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parents[1] / "app" / "explorer.py")
TABS = ("Prediction", "Recommendations", "Roofline", "Compare", "Accuracy")


def _app(tab: str = "Prediction") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if tab != "Prediction":
        at.session_state["tab"] = tab
    at.run()
    _ok(at)
    return at


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def test_starts_with_a_prediction():
    at = _app()
    m = _metrics(at)
    assert {"tokens/s", "step time", "GiB/GPU", "fits"} <= set(m)
    assert not _errors(at)
    assert [t.label for t in at.tabs] == list(TABS)


@pytest.mark.parametrize("tab", TABS[1:])
def test_each_tab_renders(tab):
    at = _app(tab)
    assert not _errors(at), _errors(at)
    if tab == "Recommendations":
        assert at.dataframe and any(b.label.startswith("Download the top pick") for b in at.get("download_button"))
    if tab in ("Roofline", "Accuracy"):
        assert at.dataframe
    if tab == "Compare":
        assert at.get("image") and any("wins" in md.value or "within 2%" in md.value for md in at.markdown)
    if tab == "Accuracy":
        assert any("in-sample" in c.value or "advisor validate" in c.value for c in at.caption)


@pytest.mark.parametrize("key, value, metric", [
    ("task", "pretrain", "GiB/GPU"),
    ("gpu", "h100", "tokens/s"),
    ("model", "llama2-13b", "GiB/GPU"),
    ("method", "qlora", "GiB/GPU"),
    ("zero_stage", 3, "GiB/GPU"),
])
def test_selectbox_changes_the_prediction(key, value, metric):
    at = _app()
    before = _metrics(at)[metric]
    at.selectbox(key=key).set_value(value).run()
    _ok(at)
    assert not _errors(at), _errors(at)
    assert _metrics(at)[metric] != before


@pytest.mark.parametrize("key, value, metric", [
    ("micro_batch_size", 8, "GiB/GPU"),
    ("seq_len", 4096, "tokens/s"),
])
def test_number_input_changes_the_prediction(key, value, metric):
    at = _app()
    before = _metrics(at)[metric]
    at.number_input(key=key).set_value(value).run()
    _ok(at)
    assert _metrics(at)[metric] != before


def test_serving_knobs():
    at = _app()
    at.selectbox(key="task").set_value("serve").run()
    _ok(at)
    m = _metrics(at)
    assert "decode tokens/s" in m and not _errors(at)
    at.number_input(key="batch_size").set_value(16).run()
    _ok(at)
    assert _metrics(at)["decode tokens/s"] != m["decode tokens/s"]
    before = _metrics(at)["GiB/GPU"]
    at.selectbox(key="weight_bits").set_value(4).run()
    _ok(at)
    assert _metrics(at)["GiB/GPU"] != before


def test_controls_offer_only_the_configuration_space():
    """The sidebar's choices come from advisor.space: the combinations the search and deepspeed-config accept."""
    at = _app()
    at.selectbox(key="zero_stage").set_value(0).run()
    _ok(at)
    assert list(at.selectbox(key="offload").options) == ["none"]  # ZeRO-0 cannot offload
    at.selectbox(key="zero_stage").set_value(3).run()
    assert len(at.selectbox(key="offload").options) == 3
    at.selectbox(key="offload").set_value("optimizer+params").run()
    _ok(at)
    at.selectbox(key="zero_stage").set_value(2).run()  # the stale offload falls back to a valid one
    _ok(at)
    assert not _errors(at) and at.selectbox(key="offload").value in ("none", "optimizer")
    at.selectbox(key="task").set_value("pretrain").run()
    _ok(at)
    method = at.selectbox(key="method")
    assert len(method.options) == 1 and method.value == "full"  # pre-training with LoRA means nothing


def test_labels_are_words_not_field_names():
    at = _app()
    labels = [w.label for kind in ("selectbox", "number_input", "checkbox") for w in at.get(kind)]
    raw = {"micro_batch_size", "grad_accum", "seq_len", "zero_stage", "flash_attention", "lora_rank", "method", "offload"}
    assert not raw & set(labels), raw & set(labels)
    assert not any("tokens_per_s" in c.value for c in at.caption)


def test_serving_objectives_and_burst_in_recommendations():
    at = _app()
    at.selectbox(key="task").set_value("serve").run()
    _ok(at)
    at.number_input(key="max_tpot_ms").set_value(1000.0).run()
    _ok(at)
    assert any("time per output token" in s.value for s in [*at.success, *at.warning])
    at.session_state["tab"] = "Recommendations"
    at.number_input(key="requests").set_value(64).run()
    _ok(at)
    assert not _errors(at), _errors(at)
    assert at.dataframe and any("64 requests at once" in md.value for md in at.markdown)
    at.number_input(key="max_tpot_ms").set_value(0.1).run()  # nothing decodes a token in 0.1 ms
    _ok(at)
    assert any("time per output token ≤ 0.1 ms" in e for e in _errors(at))


@pytest.mark.parametrize("text, fragment", [
    ("{not json", "not valid JSON"),
    ('{"hidden_size": 4096, "num_hidden_layers": 32}', "inline model"),
    ('{"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32, '
     '"num_key_value_heads": 5, "vocab_size": 32000}', "multiple"),
    ('{"model_type": "llama", "hidden_size": 4096}', "config.json"),
])
def test_bad_pasted_architecture_shows_an_error(text, fragment):
    at = _app()
    at.radio(key="model_src").set_value("paste JSON").run()
    _ok(at)
    at.text_area(key="model_json").set_value(text).run()
    _ok(at)
    errs = _errors(at)
    assert errs and any(fragment in e for e in errs), errs
    assert not at.metric


def test_pasted_hf_config_predicts():
    cfg = ('{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 5632, '
           '"num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000}')
    at = _app()
    at.radio(key="model_src").set_value("paste JSON").run()
    at.text_area(key="model_json").set_value(cfg).run()
    _ok(at)
    assert not _errors(at) and "tokens/s" in _metrics(at)


def test_operators_add_up_to_the_forward_pass():
    """models.operators (the roofline's points) charges exactly what the step-time model charges."""
    from knowledge.catalog import resolve_model, resolve_platform
    from knowledge.efficiency import load_efficiencies
    from knowledge.schema import TrainCase
    from models.operators import layer_operators
    from models.roofline import ceilings
    from models.setup import derive
    from models.step_time import _pass as _forward_pass

    eff = load_efficiencies()
    for kw in (dict(task="finetune"), dict(task="pretrain", flash_attention=False), dict(task="finetune", method="qlora")):
        case = TrainCase(id="x", hardware="a800x8", model="mixtral-8x7b", micro_batch_size=2, seq_len=1024, **kw)
        arch, platform = resolve_model(case.model), resolve_platform(case.hardware)
        ops = layer_operators(case, arch, platform, eff)
        total = sum(o.time_s * (arch.num_hidden_layers if o.per_layer else 1) for o in ops)
        assert total == pytest.approx(_forward_pass(derive(case, arch, platform), eff, ceilings(platform, eff)).gpu_s, rel=1e-9)
        assert all(o.flops > 0 and o.bytes > 0 and o.achieved_flops <= platform.gpu.matmul_tflops * 1e12 for o in ops)


def test_host_override_changes_what_fits_and_reads_as_words():
    at = _app()
    at.selectbox(key="gpu").set_value("rtx4090").run()
    at.selectbox(key="zero_stage").set_value(3).run()
    at.selectbox(key="offload").set_value("optimizer+params").run()
    _ok(at)
    assert _metrics(at)["fits"] == "yes"
    at.number_input(key="host_ram_gib").set_value(8).run()  # far too little for CPU optimizer states
    _ok(at)
    assert _metrics(at)["fits"] == "no"
    assert any("rtx4090x8 (host 8 GiB RAM" in md.value for md in at.markdown)
    assert not any('{"' in md.value for md in at.markdown)  # no raw JSON platform strings


def test_a_configuration_that_does_not_fit_shows_what_it_would_need_not_a_throughput():
    at = _app()
    for key, value in (("gpu", "rtx4090"), ("model", "llama2-70b"), ("method", "full"), ("zero_stage", 0)):
        at.selectbox(key=key).set_value(value).run()
    _ok(at)
    m = _metrics(at)
    assert m["fits"] == "no" and m["tokens/s"] == "—" and m["step time"] == "—"
    assert any(re.search(r"would need [\d,]+ GiB per GPU", e) for e in _errors(at)), _errors(at)


def test_unpinned_offload_is_slower_in_the_explorer():
    at = _app()
    assert at.checkbox(key="offload_pin_memory").disabled  # nothing offloaded yet
    at.selectbox(key="task").set_value("pretrain").run()  # full training: fp32 partitions of every weight
    at.selectbox(key="offload").set_value("optimizer").run()
    before = _metrics(at)
    at.checkbox(key="offload_pin_memory").uncheck().run()
    _ok(at)
    after = _metrics(at)
    # pageable copies run at the host's memcpy, not overlapped with backward: slower, same GPU memory, less host RAM
    assert not _errors(at) and float(after["tokens/s"].replace(",", "")) < float(before["tokens/s"].replace(",", ""))
    assert after["GiB/GPU"] == before["GiB/GPU"] and float(after["host GiB"]) < float(before["host GiB"])
