"""The catalog data files: every GPU and model validates, parameter counts match transformers, ids are unique."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowledge.schema import GPUSpec, ModelArch

DATA = Path(__file__).resolve().parent.parent / "knowledge" / "data"
GPU_FILES = sorted((DATA / "gpus").glob("*.json"))
MODEL_FILES = sorted((DATA / "models").glob("*.json"))
PLATFORMS = DATA / "platforms.json"

EXPECTED_GPUS = {
    "a100-40gb", "a100", "a800", "h100", "h100-pcie", "h200", "h20",
    "l20", "l40s", "l4", "a10", "rtx4090", "rtx3090", "v100",
}  # fmt: skip
EXPECTED_MODELS = {
    "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-8b", "llama3.2-1b",
    "llama3.2-3b", "mistral-7b", "mixtral-8x7b", "tinyllama-1.1b", "qwen2.5-0.5b", "qwen2.5-7b", "qwen2.5-72b",
}  # fmt: skip
INTERCONNECTS = {"nvswitch", "nvlink-pairs", "pcie", "pcie-no-p2p", "single"}


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _gpus() -> list[GPUSpec]:
    return [GPUSpec(**_load(p)) for p in GPU_FILES]


def _models() -> list[ModelArch]:
    return [ModelArch(**_load(p)) for p in MODEL_FILES]


# ------------------------------------------------------------------------------------------------ GPUs


@pytest.mark.parametrize("path", GPU_FILES, ids=lambda p: p.stem)
def test_gpu_file_validates(path: Path) -> None:
    spec = GPUSpec(**_load(path))
    assert spec.id == path.stem, "file name must be the id"
    assert spec.memory_gib > 0 and spec.memory_bandwidth_gbs > 0 and spec.fp16_tflops > 0 and spec.fp32_tflops > 0
    assert spec.arch in {"volta", "ampere", "ada", "hopper"}
    assert spec.pcie_gbs == {3: 15.75, 4: 31.5, 5: 63.0}[spec.pcie_gen]
    assert (spec.nvlink_gbs > 0) == (spec.nvlink_kind != "none")
    # every source is a non-empty citation
    assert all(isinstance(v, str) and v.strip() for v in spec.sources.values())


def test_gpu_set_and_key_facts() -> None:
    gpus = {g.id: g for g in _gpus()}
    assert set(gpus) == EXPECTED_GPUS
    assert gpus["h100"].memory_gib == pytest.approx(81559 / 1024, abs=0.01)
    assert gpus["h200"].memory_gib == pytest.approx(143771 / 1024, abs=0.01)
    assert gpus["a100"].memory_gib == 80.0
    assert gpus["v100"].bf16_tflops is None and not gpus["v100"].supports_bf16
    # GeForce: no peer-to-peer over PCIe (the RTX 3090 only across its NVLink bridge)
    geforce = {"rtx4090", "rtx3090"}
    assert all(gpus[k].p2p_over_pcie is False for k in geforce)
    assert all(g.p2p_over_pcie for k, g in gpus.items() if k not in geforce)
    assert {k: g.nvlink_gbs for k, g in gpus.items() if g.nvlink_gbs} == {
        "h100": 450, "a100": 300, "a100-40gb": 300, "a800": 200, "h200": 450, "h20": 450, "v100": 150, "rtx3090": 56.25,
    }  # fmt: skip
    assert gpus["rtx4090"].bf16_tflops == 165.2 and gpus["rtx3090"].bf16_tflops == 71
    assert gpus["a100"].aliases == ["a100-80gb"] and gpus["h100"].aliases == ["h100-sxm"]


def test_unsourced_number_is_rejected() -> None:
    d = _load(DATA / "gpus" / "h100.json")
    del d["sources"]["memory_gib"]
    with pytest.raises(ValueError, match="memory_gib"):
        GPUSpec(**d)


# ------------------------------------------------------------------------------------------------ models


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_model_file_validates(path: Path) -> None:
    m = ModelArch(**_load(path))
    assert m.name == path.stem, "file name must be the name"
    assert m.param_count is not None and m.param_count > 0
    assert m.source.endswith("config.json") or "config.json" in m.source


def _hf_config(m: ModelArch):
    from transformers import LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config

    cls = {"llama": LlamaConfig, "mistral": MistralConfig, "mixtral": MixtralConfig, "qwen2": Qwen2Config}[
        m.hf_model_type
    ]
    kw = dict(
        hidden_size=m.hidden_size,
        intermediate_size=m.intermediate_size,
        num_hidden_layers=m.num_hidden_layers,
        num_attention_heads=m.num_attention_heads,
        num_key_value_heads=m.num_key_value_heads,
        vocab_size=m.vocab_size,
        max_position_embeddings=m.max_position_embeddings,
        tie_word_embeddings=m.tie_word_embeddings,
    )
    if m.head_dim is not None:
        kw["head_dim"] = m.head_dim
    if m.hf_model_type == "mixtral":
        kw.update(num_local_experts=m.num_local_experts, num_experts_per_tok=m.num_experts_per_tok)
    else:
        assert m.num_local_experts == 1, f"{m.name}: MoE fields set on a dense {m.hf_model_type} model"
    if m.hf_model_type == "llama":
        kw["attention_bias"] = m.attention_bias
    else:  # qwen2 always has q/k/v biases; mistral/mixtral never do
        assert m.attention_bias == (m.hf_model_type == "qwen2"), f"{m.name}: attention_bias disagrees with type"
    return cls(**kw)


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_param_count_matches_transformers(path: Path) -> None:
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM

    m = ModelArch(**_load(path))
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(_hf_config(m))
    built = sum(p.numel() for p in model.parameters())
    assert m.param_count == built, f"{m.name}: file says {m.param_count:,}, transformers builds {built:,}"


def test_model_set_and_anchor() -> None:
    models = {m.name: m for m in _models()}
    assert set(models) == EXPECTED_MODELS
    assert models["llama2-7b"].param_count == 6_738_415_616
    assert models["mixtral-8x7b"].is_moe and models["mixtral-8x7b"].num_experts_per_tok == 2
    assert models["llama3.1-8b"].max_position_embeddings == 131072
    for tied in ("qwen2.5-0.5b", "llama3.2-1b", "llama3.2-3b"):
        assert models[tied].tie_word_embeddings


# ------------------------------------------------------------------------------------------------ ids


def test_ids_and_aliases_unique() -> None:
    for kind, entries in (
        ("gpu", [(g.id, g.aliases) for g in _gpus()]),
        ("model", [(m.name, m.aliases) for m in _models()]),
    ):
        seen: dict[str, str] = {}
        for ident, aliases in entries:
            for key in [ident, *aliases]:
                k = key.lower()
                assert k not in seen, f"{kind} key {key!r} of {ident} collides with {seen[k]}"
                seen[k] = ident


# ------------------------------------------------------------------------------------------------ platforms


def test_platforms() -> None:
    items = _load(PLATFORMS)["platforms"]
    ids = [p["id"] for p in items]
    assert len(ids) == len(set(ids))
    assert set(ids) == {
        "a800x8", "rtx4090x8", "rtx3090x8", "rtx3090x8-pcie", "h100x1", "h200x1", "h200x2", "h200x8", "v100x16",
    }  # fmt: skip
    for p in items:
        measured = {"cpu_adam_gparams_per_s", "cpu_adam_threads", "cpu_adam_source"}
        topology = {"sockets", "host_pcie_gen", "gpus_per_uplink", "dram_gbs", "dram_measured", "topology_source"}
        swap = {"swap_gib", "swap_source"}
        assert set(p) - measured - topology - swap == {"id", "cpu_cores", "host_ram_gib", "interconnect", "notes", "source"}, p["id"]
        if set(p) & topology:  # the host's wiring carries its own source
            assert "topology_source" in p and len(p["topology_source"]) > 20, p["id"]
        assert not set(p) & swap or set(p) >= swap and len(p["swap_source"]) > 20, p["id"]  # swap says why
        assert not set(p) & measured or set(p) >= measured, p["id"]  # a measured rate says where it came from
        assert isinstance(p["cpu_cores"], int) and p["cpu_cores"] > 0
        assert p["host_ram_gib"] > 0
        assert p["interconnect"] in INTERCONNECTS
        assert p["source"].strip()
    by_id = {p["id"]: p for p in items}
    assert by_id["rtx4090x8"]["interconnect"] == "pcie-no-p2p"
    assert by_id["a800x8"]["cpu_cores"] == 48


def test_the_causal_lm_table_is_the_pinned_transformers_own() -> None:
    """The shipped table answers for the pinned release only; it must say what that release says (rewrite it with
    ``python -m knowledge.causal_lm_types`` when the pin moves)."""
    from knowledge.causal_lm_types import TABLE, installed_transformers, lm_model_types, table_of_installed

    shipped = json.loads(TABLE.read_text())
    assert shipped["transformers"] == installed_transformers()
    assert shipped == table_of_installed()
    causal, masked = lm_model_types()
    assert "llama" in causal and "falcon" in causal and "bert" in masked


def test_what_transformers_said_of_a_config_json_is_asked_once(tmp_path, monkeypatch) -> None:
    """Falcon's config.json names its sizes Falcon's way and a multimodal checkpoint wraps its text config: reading
    either imports transformers (6-8 s on two cores) the first time only."""
    import knowledge.catalog as catalog

    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    configs = Path(catalog.DATA) / "configs"
    first = [catalog.resolve_model(str(configs / f"{n}.json")) for n in ("falcon-7b", "gemma-3-4b-multimodal")]
    assert len(list((tmp_path / "home" / "config_reads").glob("*.json"))) >= 2

    def asked(*_a, **_k):
        raise AssertionError("transformers asked again")

    monkeypatch.setattr(catalog, "_summary_from_transformers", asked)
    monkeypatch.setattr(catalog, "language_model_config", asked)
    again = [catalog.resolve_model(str(configs / f"{n}.json")) for n in ("falcon-7b", "gemma-3-4b-multimodal")]
    assert again == first
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "elsewhere"))  # nothing kept there: asked, and it says so
    with pytest.raises(AssertionError, match="asked again"):
        catalog.resolve_model(str(configs / "falcon-7b.json"))


def test_a_context_window_under_the_family_s_own_name_is_read(tmp_path) -> None:
    """CTRL and GPT-2 name their learned position table ``n_positions``: a case past it hit a device-side assert on two
    H200s (CTRL at 1,024 tokens, 256 positions), so the advisor reads it and refuses the case in one line."""
    from advisor.cases import check_plausible, parse_case
    from knowledge.catalog import resolve_model
    from knowledge.errors import AdvisorError

    path = Path(__file__).resolve().parents[1] / "knowledge" / "data" / "configs" / "ctrl-defaults-12l.json"
    assert "max_position_embeddings" not in json.loads(path.read_text())
    assert resolve_model(str(path)).max_position_embeddings == 256
    case = {"id": "c", "hardware": "h200x2", "model": str(path), "task": "finetune", "seq_len": 1024}
    with pytest.raises(AdvisorError, match="seq_len=1024 exceeds the 256-token context"):
        check_plausible(parse_case(case))
    check_plausible(parse_case({**case, "seq_len": 256}))


def test_more_gpus_than_a_server_holds_parse_with_a_note_naming_nodes():
    # the contract parses any count; h100x16 is then one 16-GPU NVSwitch box with a host by rule, which no one sells
    from knowledge.catalog import oversized_server_note, resolve_platform

    def note(hw: str) -> str | None:
        return oversized_server_note(hw, resolve_platform(hw))

    assert "--hardware h100x8 --nodes 2" in note("h100x16")
    assert "--hardware rtx4090x6-pcie --nodes 2" in note("rtx4090x12-pcie")
    assert "--nodes" not in note("a100x11") and "one box of 11" in note("a100x11")
    assert note("v100x16") is None and note("h100x8") is None  # listed (the DGX-2); a usual server
