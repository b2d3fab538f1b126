"""Your own hardware and models: platform files, host overrides, hub ids, `advisor hardware` / `advisor models`;
the recommend table (80 columns, --wide, ± error, host GiB, MFU, folded ZeRO stages); compare's PNG."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from advisor import cli
from knowledge.catalog import resolve_model, resolve_platform, with_host
from knowledge.errors import AdvisorError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def app():
    if not cli.app.registered_commands:
        cli._register()
    return cli.app


def run(*args: str, **kw):
    return CliRunner().invoke(app(), list(args), **kw)


@pytest.fixture
def box(tmp_path):
    path = tmp_path / "box.json"
    path.write_text(json.dumps({"gpu": "rtx4090", "count": 2, "interconnect": "pcie", "host_ram_gib": 64, "cpu_cores": 16}))
    return path


# --- platform files and host overrides ----------------------------------------------------------------


def test_platform_file_resolves_with_its_host(box):
    p = resolve_platform(str(box))
    assert (p.id, p.gpu.id, p.count) == ("box", "rtx4090", 2)
    assert p.interconnect == "pcie-no-p2p"  # the RTX 4090 has no peer-to-peer over PCIe
    assert (p.host.host_ram_gib, p.host.cpu_cores) == (64, 16)


def test_platform_file_with_a_gpu_spec_of_its_own(tmp_path):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"gpu": {"like": "rtx4090", "id": "rtx4090-48g", "memory_gib": 47.5}, "count": 4}))
    p = resolve_platform(str(path))
    assert p.gpu.memory_gib == 47.5 and p.gpu.sources["memory_gib"].startswith("platform file")


@pytest.mark.parametrize("content, words", [
    ('{"gpu": "rtx4091", "count": 2}', ["rtx4091", "rtx4090"]),
    ('{"gpus": 2}', ["'gpus'", "gpu"]),
    ('{"gpu": "h100", "count": 0}', ["count"]),
    ('{"gpu": {"id": "x"}, "count": 2}', ["memory_gib", "like"]),
    ('not json', ["not valid JSON"]),
])
def test_bad_platform_file_is_one_line_naming_the_value(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(AdvisorError) as e:
        resolve_platform(str(path))
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_missing_platform_file_is_one_line(tmp_path):
    r = run("recommend", "--hardware", str(tmp_path / "nope.json"), "--task", "finetune", "--model", "7b")
    assert r.exit_code == 1 and "not found" in r.output and r.output.strip().count("\n") == 0


def test_recommend_and_predict_on_a_platform_file(box, tmp_path):
    r = run("recommend", "--hardware", str(box), "--task", "finetune", "--model", "7b", "--json", "--out-dir", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["hardware"] == "box" and doc["gpus"] == 2 and doc["host_ram_gib"] == 64
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c", "hardware": str(box), "model": "7b", "task": "finetune", "method": "qlora"}) + "\n")
    r = run("predict", "--cases", str(cases), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout.splitlines()[-1])["tokens_per_s"] > 0


def test_host_overrides_change_what_fits(tmp_path):
    hw = with_host("rtx4090x8", host_ram_gib=64)
    assert resolve_platform(hw).host.host_ram_gib == 64 and resolve_platform(hw).id == "rtx4090x8"
    assert with_host("rtx4090x8") == "rtx4090x8"

    def picks(*extra):
        r = run("recommend", "--hardware", "rtx4090x8", "--task", "pretrain", "--model", "13b", "--json", "--top", "100",
                "--out-dir", str(tmp_path / "o"), *extra)
        doc = json.loads(r.stdout)
        assert r.exit_code == (1 if doc.get("nothing_fits") else 0), r.output  # nothing fitting is exit 1
        return doc

    big, small = picks(), picks("--host-ram-gib", "32", "--cpu-cores", "8")
    assert small["host_ram_gib"] == 32 and small["cpu_cores"] == 8
    assert all((it["host_mem_gib"] or 0) <= 0.95 * 32 for it in small["recommendations"])
    assert len(small["recommendations"]) < len(big["recommendations"])  # offload rows needing the RAM are gone


def test_pageable_offload_spills_into_swap_but_pinned_buffers_need_the_ram(tmp_path):
    """A host with swap runs pageable offload past its RAM (the study's 128 GB RTX 3090 box ran 7B and 13B ZeRO-3
    offload), says how much went to swap, and still refuses pinned buffers the RAM cannot hold."""
    from advisor.predictor import Predictor
    from knowledge.schema import TrainCase

    def box(swap, ram=128):
        path = tmp_path / f"box{swap}-{ram}.json"
        path.write_text(json.dumps({"platform": "rtx4090x8", "host_ram_gib": ram, "swap_gib": swap}))
        return str(path)

    def pred(hw, pin):
        case = TrainCase(id="c", hardware=hw, model="7b", task="pretrain", zero_stage=3, offload="optimizer+params",
                         micro_batch_size=1, seq_len=350, offload_pin_memory=pin)
        return Predictor().predict(case)

    none, some = pred(box(0), False), pred(box(64), False)
    assert 125 < none.host_mem_gib < 192 and not none.fits and none.failure == "host_oom" and none.host_swap_gib is None
    assert some.fits and some.host_swap_gib == pytest.approx(some.host_mem_gib - 128 * 0.983, abs=0.01)
    assert some.host_capacity_gib == pytest.approx(128 * 0.983 + 64)
    assert pred(box(512, ram=64), False).fits
    pinned = pred(box(512, ram=64), True)  # 80 GiB of pinned buffers (powers of two) exceed the RAM itself
    assert not pinned.fits and pinned.failure == "host_oom" and "pins" in pinned.why_not_fits
    # 7B sweeps 124 GiB a step by our count, within the box's RAM: what overflows is paged out once, the step runs
    # as fast as with the RAM (the study's 3090 rows fit so); 13B sweeps 226 GiB and pages the rest every step
    ram = pred(box(0, ram=512), False)
    assert some.step_time_s == pytest.approx(pred(box(64, ram=138), False).step_time_s)
    big = TrainCase(id="c", hardware=box(256), model="13b", task="pretrain", zero_stage=3, offload="optimizer+params",
                    micro_batch_size=1, seq_len=350, offload_pin_memory=False)
    big_ram = big.model_copy(update={"hardware": box(0, ram=512)})
    paged, in_ram = Predictor().predict(big), Predictor().predict(big_ram)
    assert paged.fits and in_ram.fits and ram.fits
    swept_beyond = 226 - 128 * 0.983  # GiB, each way, at the swap's 2 GB/s prior
    assert paged.step_time_s - in_ram.step_time_s == pytest.approx(2 * swept_beyond * 2**30 / 2e9, rel=0.05)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"platform": "rtx4090x8", "swap_gib": -1}))
    out = run("recommend", "--hardware", str(bad), "--task", "pretrain", "--model", "7b")
    assert out.exit_code != 0 and "swap_gib" in out.output and "Traceback" not in out.output


# --- models ----------------------------------------------------------------------------------------------


def test_hub_id_of_a_catalog_model_resolves_offline():
    assert resolve_model("Qwen/Qwen2.5-7B").name == "qwen2.5-7b"
    assert resolve_model("meta-llama/Llama-2-7b-hf").name == "llama2-7b"


def test_hub_id_read_through_autoconfig(monkeypatch):
    import transformers

    from knowledge import hub

    cfg = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 4,
           "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000}
    calls = []

    def from_pretrained(repo, local_files_only=False, **kw):
        calls.append(local_files_only)
        return SimpleNamespace(to_dict=lambda: dict(cfg))

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", staticmethod(from_pretrained))
    monkeypatch.setattr(hub, "_in_local_cache", lambda repo: True)  # the cache holds it (checked before transformers)
    hub.hub_model.cache_clear()
    arch = resolve_model("someone/tiny-llama-test")
    assert arch.hidden_size == 1024 and arch.name == "someone/tiny-llama-test"
    assert calls == [True]  # the local cache answered; the hub was not asked
    hub.hub_model.cache_clear()


def test_unknown_hub_id_offline_is_one_line(monkeypatch):
    import transformers

    from knowledge import hub

    def missing(*a, **k):
        raise OSError("not cached")

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", staticmethod(missing))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.hub_model.cache_clear()
    with pytest.raises(AdvisorError) as e:
        resolve_model("nobody/no-such-model")
    assert "'nobody/no-such-model'" in str(e.value) and "\n" not in str(e.value)


# --- catalog commands ------------------------------------------------------------------------------------


def test_hardware_command_lists_gpus_servers_and_sources():
    r = run("hardware", terminal_width=120)
    assert r.exit_code == 0, r.output
    assert "rtx4090" in r.output and "a800x8" in r.output and "datasheet" in r.output and "box.json" in r.output
    doc = json.loads(run("hardware", "--json").stdout)
    ids = {g["id"] for g in doc["gpus"]}
    assert {"h100", "rtx4090", "a800"} <= ids
    assert all(g["sources"] for g in doc["gpus"]) and all(p["source"] for p in doc["platforms"])
    r = run("hardware", "--gpu", "rtx4090", "--json")
    assert json.loads(r.stdout)["p2p_over_pcie"] is False
    r = run("hardware", "--gpu", "rtx4091")
    assert r.exit_code == 1 and "rtx4090" in r.output


def test_models_command_lists_models_with_sources():
    r = run("models", terminal_width=120)
    assert r.exit_code == 0 and "llama2-70b" in r.output and "Qwen/Qwen2.5-7B" in r.output
    rows = json.loads(run("models", "--json").stdout)
    by = {m["name"]: m for m in rows}
    assert by["llama2-7b"]["aliases"] == ["7b"] and 6 < by["llama2-7b"]["params_b"] < 7
    assert all(m["source"] for m in rows)


# --- the recommend table ---------------------------------------------------------------------------------


def test_recommend_table_fits_80_columns_and_wide_shows_all(tmp_path):
    narrow = run("recommend", "--hardware", "h100x1", "--task", "finetune", "--model", "7b", "--out-dir", str(tmp_path), terminal_width=80)
    assert narrow.exit_code == 0, narrow.output
    table = [ln for ln in narrow.output.splitlines() if ln.startswith(("┏", "│", "└"))]
    assert table and max(len(ln) for ln in table) <= 80
    assert "host GiB" in narrow.output and "±" in narrow.output and "step (s)" not in narrow.output
    assert "1/2" in narrow.output  # one GPU: the equivalent stages are one row ("ZeRO 1/2", maybe wrapped)
    wide = run("recommend", "--hardware", "h100x1", "--task", "finetune", "--model", "7b", "--out-dir", str(tmp_path), "--wide",
               terminal_width=200)
    assert "step (s)" in wide.output and "fits" in wide.output and "fastest that fits" in wide.output


def test_equivalent_stages_fold_only_when_the_prediction_is_the_same(tmp_path):
    r = run("recommend", "--hardware", "h100x1", "--task", "finetune", "--model", "7b", "--json", "--top", "20", "--out-dir", str(tmp_path))
    recs = json.loads(r.stdout)["recommendations"]
    # one GPU: ZeRO-1 and -2 run the same code on one rank (ZeRO-0's BF16_Optimizer differs: no hooks)
    assert [1, 2] in [it["equivalent_zero_stages"] for it in recs[:3]]
    seen = [(json.dumps({k: v for k, v in it["configuration"].items() if k != "zero_stage"}, sort_keys=True), s)
            for it in recs for s in it["equivalent_zero_stages"]]
    assert len(seen) == len(set(seen))  # no configuration listed twice
    r8 = run("recommend", "--hardware", "a800x8", "--task", "pretrain", "--model", "7b", "--json", "--top", "30",
             "--out-dir", str(tmp_path))
    recs8 = json.loads(r8.stdout)["recommendations"]
    by_config: dict[str, list[dict]] = {}
    for it in recs8:
        by_config.setdefault(json.dumps({k: v for k, v in it["configuration"].items() if k != "zero_stage"}, sort_keys=True), []).append(it)
    # rows of one configuration that stay apart differ by more than 1% in tokens/s or in memory
    apart = [(a, b) for rows in by_config.values() for i, a in enumerate(rows) for b in rows[i + 1:]]
    assert apart, "eight GPUs: some stages of one configuration predict apart"
    for a, b in apart:
        assert set(a["equivalent_zero_stages"]).isdisjoint(b["equivalent_zero_stages"])
        assert (abs(a["tokens_per_s"] / b["tokens_per_s"] - 1) > 0.01
                or abs(a["peak_mem_gib"] / b["peak_mem_gib"] - 1) > 0.01), (a["summary"], b["summary"])


def test_mfu_shown_only_when_the_prediction_carries_model_tflops():
    from advisor.output import console
    from advisor.train_recommend import _table, mfu

    assert mfu(SimpleNamespace(model_tflops_per_gpu=None), 989.0) is None
    assert mfu(SimpleNamespace(model_tflops_per_gpu=494.5), 989.0) == pytest.approx(0.5)
    header = {"model": "m", "task": "finetune", "gpus": 1, "gpu": "H100", "seq_len": 2048, "host_ram_gib": 128, "cpu_cores": 16,
              "search": {"sampler": "exhaustive", "trials": 1, "space_size": 1, "seconds": 0.1}}
    item = {"rank": 1, "summary": "LoRA · ZeRO-1", "tokens_per_s": 1000.0, "interval": {"tokens_per_s": [800.0, 1200.0]},
            "step_time_s": 1.0, "peak_mem_gib": 10.0, "capacity_gib": 80.0, "host_mem_gib": None, "fits": True,
            "why": "fastest", "why_short": "fastest", "mfu": None}
    for value, shown in ((None, False), (0.42, True)):
        with console.capture() as cap:
            _table(header, [dict(item, mfu=value)], None)  # type: ignore[arg-type]
        text = cap.get()
        assert ("MFU" in text) is shown and ("42%" in text) is shown
        assert "1,000 ±20%" in text


# --- compare -----------------------------------------------------------------------------------------------


def test_compare_saves_the_png_by_default_and_masks_what_does_not_fit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run("compare", "--hardware", "a100x1", "--vs", "rtx4090x1", "--model", "llama2-13b", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    png = tmp_path / doc["png"]
    assert png.read_bytes()[:8] == PNG_SIGNATURE and png.parent.name == "advisor-out"
    assert all(not b for row in doc["fits"] for _, b in row)  # 13B in 16-bit never fits a 24 GiB card
    assert any("only A100 fits" in line for line in doc["regions"])
    r = run("compare", "--hardware", "a100x1", "--vs", "h20x1", "--model", "llama2-7b", "--no-png", terminal_width=150)
    assert r.exit_code == 0 and "heatmap written" not in r.output
    assert "blue" in r.output and "red" in r.output and "green" not in r.output  # the table's colours are the heatmap's


def test_serving_table_fits_80_columns_with_error_bars(tmp_path):
    r = run("recommend", "--hardware", "h100x1", "--task", "serve", "--model", "llama3-8b", "--top", "3")
    assert r.exit_code == 0, r.output
    table = [ln for ln in r.output.splitlines() if ln.startswith(("┏", "│", "└"))]
    assert table and max(len(ln) for ln in table) <= 80 and "±" in r.output and "…" not in r.output


def test_a_host_override_keeps_the_servers_wiring_but_not_swap_stated_for_other_ram():
    """``--host-ram-gib`` / ``--cpu-cores`` describe the same box with another host: its sockets, root ports and DRAM
    stay (they set the offload copies' rates), the study box's swap (stated for its 128 GB) goes with a new RAM size."""
    from knowledge.catalog import resolve_platform, with_host

    base = resolve_platform("rtx3090x8")
    ram = resolve_platform(with_host("rtx3090x8", host_ram_gib=256)).host
    cores = resolve_platform(with_host("rtx3090x8", cpu_cores=16)).host
    assert (ram.sockets, ram.dram_gbs, ram.host_pcie_gen) == (base.host.sockets, base.host.dram_gbs, base.host.host_pcie_gen)
    assert ram.host_ram_gib == 256 and ram.swap_gib == 0 and base.host.swap_gib > 0
    assert cores.cpu_cores == 16 and cores.swap_gib == base.host.swap_gib and cores.sockets == base.host.sockets
