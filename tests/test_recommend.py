"""`advisor recommend` through the CLI: ranking, the DeepSpeed JSON it writes, nothing-fits, storage.

The written ds_config.json is checked with DeepSpeed's own parser (``DeepSpeedConfig``), which needs
the data-parallel world size: without a distributed backend it falls back to a world of 1, so the
tests give it the recommendation's GPU count through ``deepspeed.comm``'s rank/world-size getters.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor import cli
from advisor.search import SearchSpec, exhaustive_best, run_search
from knowledge.catalog import resolve_platform
from knowledge.efficiency import load_efficiencies

KEYS = ("configuration", "tokens_per_s", "step_time_s", "peak_mem_gib", "fits", "why", "deepspeed_config", "launch")


def app():
    names = {c.name or c.callback.__name__ for c in cli.app.registered_commands}
    if "recommend" not in names:  # advisor.cli._register is not idempotent
        cli._register()
    return cli.app


def recommend(*args: str):
    return CliRunner().invoke(app(), ["recommend", *args])


@pytest.fixture(scope="module")
def finetune_70b(tmp_path_factory):
    out = tmp_path_factory.mktemp("rec")
    r = recommend("--hardware", "rtx4090x8", "--task", "finetune", "--model", "70b", "--json", "--out-dir", str(out))
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), out


def ds_parse(cfg: dict, world: int, monkeypatch):
    import deepspeed.runtime.config as ds_config_mod

    monkeypatch.setattr(ds_config_mod.dist, "get_rank", lambda *a, **k: 0)
    monkeypatch.setattr(ds_config_mod.dist, "get_world_size", lambda *a, **k: world)
    return ds_config_mod.DeepSpeedConfig(json.loads(json.dumps(cfg)))


def test_recommendations_have_the_fields(finetune_70b):
    doc, _ = finetune_70b
    recs = doc["recommendations"]
    assert recs and len(recs) <= 5
    usable = resolve_platform("rtx4090x8").gpu.memory_gib - load_efficiencies().reserved_gib
    for i, rec in enumerate(recs, start=1):
        for k in KEYS:
            assert k in rec, k
        assert rec["rank"] == i
        assert rec["fits"] is True
        assert 0 < rec["peak_mem_gib"] <= usable
        assert rec["tokens_per_s"] > 0 and rec["step_time_s"] > 0
        assert isinstance(rec["why"], str) and rec["why"] and "\n" not in rec["why"]
        c = rec["configuration"]
        assert c["gpus"] == 8
        assert rec["tokens_per_s"] == pytest.approx(c["micro_batch_size"] * c["grad_accum"] * c["seq_len"] * 8 / rec["step_time_s"], rel=1e-9)
        if c["engine"] == "deepspeed":
            assert isinstance(rec["deepspeed_config"], dict)
            # GeForce 40-series: no peer-to-peer over PCIe, so NCCL must not try it
            assert rec["launch"].startswith("NCCL_P2P_DISABLE=1 ") and "deepspeed --num_gpus 8 " in rec["launch"]
            assert rec["launch_env"]["NCCL_P2P_DISABLE"] == "1"
    assert doc["recommendations"][0]["why"].startswith("fastest that fits")


def test_ranking_sorted_by_tokens_per_s_less_the_tight_penalty(finetune_70b):
    from advisor.search import TIGHT_MARGIN, TIGHT_PENALTY

    recs = finetune_70b[0]["recommendations"]
    scores = [r["rank_score"] for r in recs]
    assert scores == sorted(scores, reverse=True)
    for r in recs:  # the score is tokens/s, less a penalty only for a pick close to a memory limit
        spare = r["memory_margin"]["spare"]
        penalty = TIGHT_PENALTY * min(max((TIGHT_MARGIN - spare) / TIGHT_MARGIN, 0.0), 1.0)
        assert r["rank_score"] == pytest.approx(r["tokens_per_s"] * (1 - penalty))
        # a tight pick says so: 'tight: …', or, when it is faster than #1, 'ranked below #1: 95% of GPU memory'
        assert ("tight:" in r["why"] or "ranked below #1" in r["why"]) == (spare < TIGHT_MARGIN)


def test_written_config_is_the_top_pick_and_deepspeed_accepts_it(finetune_70b, monkeypatch):
    doc, out = finetune_70b
    path = out / "ds_config.json"
    assert doc["deepspeed_config_path"] == str(path)
    written = json.loads(path.read_text())
    top = doc["recommendations"][0]
    assert written == top["deepspeed_config"]
    assert str(path) in top["launch"]
    c = top["configuration"]
    ds = ds_parse(written, 8, monkeypatch)
    assert ds.world_size == 8
    assert ds.zero_optimization_stage == c["zero_stage"]
    assert ds.train_micro_batch_size_per_gpu == c["micro_batch_size"]
    assert ds.gradient_accumulation_steps == c["grad_accum"]
    assert ds.train_batch_size == c["micro_batch_size"] * c["grad_accum"] * 8
    assert ds.bfloat16_config.enabled  # RTX 4090 has bf16
    offload = ds.zero_config.offload_optimizer
    assert (offload is not None and str(offload.device).endswith("cpu")) == (c["offload"] != "none")


def test_every_listed_deepspeed_config_is_accepted(finetune_70b, monkeypatch):
    for rec in finetune_70b[0]["recommendations"]:
        if rec["deepspeed_config"] is not None:
            ds = ds_parse(rec["deepspeed_config"], 8, monkeypatch)
            assert ds.zero_optimization_stage == rec["configuration"]["zero_stage"]


def test_deepspeed_parser_is_not_a_rubber_stamp(finetune_70b, monkeypatch):
    # the same config with the wrong world size, or an unknown key, is rejected: the check above means something
    cfg = finetune_70b[0]["recommendations"][0]["deepspeed_config"]
    with pytest.raises(AssertionError):
        ds_parse(cfg, 7, monkeypatch)
    with pytest.raises(Exception):
        ds_parse({**cfg, "zero_optimization": {**cfg["zero_optimization"], "not_a_knob": 1}}, 8, monkeypatch)


def test_fp16_gpu_config_is_accepted(tmp_path, monkeypatch):
    r = recommend("--hardware", "v100x8", "--task", "finetune", "--model", "7b", "--json", "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    cfg = json.loads((tmp_path / "ds_config.json").read_text())
    assert "fp16" in cfg and "bf16" not in cfg  # V100 has no bf16
    ds = ds_parse(cfg, 8, monkeypatch)
    assert ds.float16_config.enabled and not ds.bfloat16_config.enabled
    assert ds.train_batch_size == cfg["train_batch_size"]
    assert doc["recommendations"][0]["configuration"]["gpus"] == 8


def test_deterministic_across_runs(tmp_path):
    args = ["--hardware", "rtx4090x8", "--task", "finetune", "--model", "70b", "--json"]
    a = recommend(*args, "--out-dir", str(tmp_path / "a"))
    b = recommend(*args, "--out-dir", str(tmp_path / "b"))
    assert a.exit_code == b.exit_code == 0
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    for d in (da, db):
        d["search"].pop("seconds")
        d.pop("deepspeed_config_path")
        d.pop("accelerate_config_path")
        d.pop("hf_trainer_config_path")
        for rec in d["recommendations"]:
            rec.pop("launch")
            rec.pop("usage")  # both name the --out-dir
            rec["training_arguments"].pop("deepspeed")
    assert json.dumps(da, sort_keys=True) == json.dumps(db, sort_keys=True)
    assert (tmp_path / "a" / "ds_config.json").read_bytes() == (tmp_path / "b" / "ds_config.json").read_bytes()


def test_nothing_fits_70b_pretrain_on_one_4090(tmp_path):
    r = recommend("--hardware", "rtx4090x1", "--task", "pretrain", "--model", "70b", "--json", "--out-dir", str(tmp_path))
    assert r.exit_code == 1, r.output  # README: exit 1 for a job predicted not to fit, its JSON still on stdout
    assert r.stderr.startswith("error: nothing fits") and len(r.stderr.strip().splitlines()) == 1
    doc = json.loads(r.stdout)
    assert doc["nothing_fits"] is True
    assert doc["recommendations"] == []
    assert isinstance(doc["would_fit"], list)
    lean = doc["leanest"]
    assert lean["configuration"] and lean["why_not"]  # the leanest option and why it still fails
    assert not (tmp_path / "ds_config.json").exists()


def test_nothing_fits_suggests_what_would(tmp_path):
    # 7B full pre-training does not fit one RTX 4090 (its offload needs more host RAM than the default
    # 64 GiB host); more GPUs do, and every suggestion must itself fit
    r = recommend("--hardware", "rtx4090x1", "--task", "pretrain", "--model", "7b", "--json", "--out-dir", str(tmp_path))
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["nothing_fits"] is True
    assert doc["would_fit"], "expected at least one suggestion"
    for s in doc["would_fit"]:
        assert s["change"] and s["configuration"] and s["tokens_per_s"] > 0
        assert s["peak_mem_gib"] <= 23.99 - load_efficiencies().reserved_gib
    assert any("GPUs" in s["change"] for s in doc["would_fit"])


@pytest.mark.parametrize("hw, closest", [("rtx4091x8", "rtx4090"), ("h10x8", "h100"), ("a80x8", "a800")])
def test_bad_hardware_one_line_naming_closest(tmp_path, hw, closest):
    r = recommend("--hardware", hw, "--task", "finetune", "--model", "70b", "--json", "--out-dir", str(tmp_path))
    assert r.exit_code != 0
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert closest in lines[0]


@pytest.mark.parametrize("gb", [64, 24])
def test_global_batch_is_reached_exactly(tmp_path, gb, monkeypatch):
    r = recommend("--hardware", "rtx4090x8", "--task", "finetune", "--model", "70b", "--json", "--global-batch", str(gb),
                  "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["global_batch"] == gb
    assert doc["recommendations"]
    for rec in doc["recommendations"]:
        c = rec["configuration"]
        assert c["grad_accum"] * c["micro_batch_size"] * c["gpus"] == gb
        assert rec["deepspeed_config"]["train_batch_size"] == gb
    assert ds_parse(json.loads((tmp_path / "ds_config.json").read_text()), 8, monkeypatch).train_batch_size == gb


def test_unreachable_global_batch_is_a_clear_error(tmp_path):
    r = recommend("--hardware", "rtx4090x8", "--task", "finetune", "--model", "70b", "--json", "--global-batch", "12",
                  "--out-dir", str(tmp_path))
    assert r.exit_code != 0
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert len(r.stderr.strip().splitlines()) == 1 and "12" in r.stderr


SPECS = [
    SearchSpec(hardware="rtx4090x8", model="70b", task="finetune"),
    SearchSpec(hardware="a800x8", model="7b", task="pretrain", global_batch=64),
    SearchSpec(hardware="h100x1", model="llama3-8b", task="finetune", seq_len=4096, engines=("deepspeed", "pytorch")),
]


@pytest.mark.parametrize("spec", SPECS, ids=["4090-70b-ft", "a800-7b-pt-gb64", "h100-8b-ft-both"])
def test_search_top_pick_equals_exhaustive_best(spec):
    eff = load_efficiencies()
    ranked, _, facts = run_search(spec, eff)
    best = exhaustive_best(spec, eff)
    assert best is not None and ranked
    assert facts["trials"] == facts["space_size"]  # auto: small spaces are enumerated
    top = ranked[0]
    if top.rank_score != best.rank_score:  # only the safety rule may put a slower pick first: a safe one within 5%
        assert top.prediction.p_oom <= 0.02 < best.prediction.p_oom, (top.case, best.case)
        assert top.prediction.tokens_per_s >= 0.95 * best.prediction.tokens_per_s
        assert best.rank_score in [c.rank_score for c in ranked]
    elif len(ranked) == 1 or ranked[1].rank_score < ranked[0].rank_score:
        assert ranked[0].case == best.case
    # the ranked list holds every fitting configuration once, best first (tokens/s, less the penalty of a
    # pick within 8% of running out of memory)
    # best first, except where the safety rule lifts a safer pick (p_oom <= 2%) over a riskier one within 5% of its speed
    for ahead, behind in zip(ranked, ranked[1:]):
        if behind.rank_score > ahead.rank_score:
            assert ahead.prediction.p_oom < behind.prediction.p_oom and behind.prediction.p_oom > 0.02
            assert ahead.prediction.tokens_per_s >= 0.95 * behind.prediction.tokens_per_s
    assert all(c.prediction.fits for c in ranked)


def test_sqlite_storage_twice_loads_the_study(tmp_path):
    db = tmp_path / "x.db"
    args = ["--hardware", "a800x8", "--task", "pretrain", "--model", "7b", "--json", "--trials", "12",
            "--storage", f"sqlite:///{db}", "--study-name", "s", "--out-dir", str(tmp_path / "out")]
    first = recommend(*args)
    assert first.exit_code == 0, first.output
    second = recommend(*args)
    assert second.exit_code == 0, second.output
    d1, d2 = json.loads(first.stdout), json.loads(second.stdout)
    assert d1["search"]["trials"] == 12
    assert d2["search"]["trials"] == 12  # the second run found its 12 configurations stored and added no duplicate
    assert d1["recommendations"][0]["configuration"] == d2["recommendations"][0]["configuration"]
    with sqlite3.connect(db) as con:
        assert con.execute("select study_name from studies").fetchall() == [("s",)]
        assert con.execute("select count(*) from trials").fetchone()[0] == 12


def test_lora_on_a_model_without_q_k_v_o_uses_peft_s_default_for_it(tmp_path):
    """A Pythia (GPT-NeoX) has query_key_value, no q/k/v/o_proj: LoRA that names no target is what PEFT picks for it,
    and the printed recipe says so (this job failed before; its traces are bundled, so it needs no trace here)."""
    from knowledge.paths import BUNDLED

    model = str(BUNDLED / "data" / "configs" / "pythia-1.4b.json")
    r = recommend("--hardware", "h100x1", "--task", "finetune", "--model", model, "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert "target_modules=['query_key_value']" in " ".join(r.stdout.split())


def test_configurations_the_models_code_cannot_run_are_skipped_with_their_reason(tmp_path, monkeypatch):
    """A variant the trace cannot run (OLMoE's grouped-GEMM experts on fp32 weights) is not a pick, and says why;
    the rest of the search still answers."""
    from advisor.traces import TraceBook
    from knowledge.errors import AdvisorError

    real = TraceBook.trace

    def trace(self, arch, case):
        if case.engine == "pytorch":
            raise AdvisorError("cannot trace model_type 'toy': RuntimeError: Expected inputs of BF16 type")
        return real(self, arch, case)

    monkeypatch.setattr(TraceBook, "trace", trace)
    r = recommend("--hardware", "h100x1", "--task", "finetune", "--model", "llama3.2-1b", "--engine", "deepspeed,pytorch",
                  "--json", "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["recommendations"] and all(it["configuration"]["engine"] == "deepspeed" for it in d["recommendations"])
    assert len(d["cannot_run"]) == 1 and "BF16" in d["cannot_run"][0]["why"]
    assert "PyTorch" in d["cannot_run"][0]["example"]


def test_lora_targets_as_peft_takes_them_reach_every_adapter_pick_and_the_recipe(tmp_path):
    """Phi-3 fuses q/k/v into qkv_proj: LoRA on the model's own names is searched, each adapter pick carries them, and
    the printed recipe passes them to PEFT (recommend had no way to name them: only predict did)."""
    from knowledge.paths import BUNDLED

    model = str(BUNDLED / "data" / "configs" / "phi-3-mini-4k.json")
    args = ("--hardware", "h100x1", "--task", "finetune", "--model", model, "--lora-targets", "qkv_proj,o_proj")
    r = recommend(*args, "--method", "lora,qlora", "--json", "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    picks = json.loads(r.stdout)["recommendations"]
    assert picks and all(p["configuration"]["method"] in ("lora", "qlora") for p in picks)
    assert all(p["configuration"]["lora_targets"] == ["qkv_proj", "o_proj"] for p in picks)
    r = recommend(*args, "--top", "1", "--out-dir", str(tmp_path))
    assert "target_modules=['qkv_proj', 'o_proj']" in " ".join(r.stdout.split()), r.stdout


@pytest.mark.parametrize("args, words", [
    (("--lora-targets", "q_proj,v_proj"), ("q_proj", "qkv_proj")),  # names Phi-3 lacks: PEFT's reason, the names it has
    (("--method", "lora,dora"), ("'dora'", "full, lora, qlora")),
    (("--lora-targets", "all-linear,o_proj"), ("all-linear",)),
])
def test_bad_methods_and_lora_targets_are_one_line_naming_the_valid_ones(tmp_path, args, words):
    from knowledge.paths import BUNDLED

    model = str(BUNDLED / "data" / "configs" / "phi-3-mini-4k.json")
    r = recommend("--hardware", "h100x1", "--task", "finetune", "--model", model, *args, "--out-dir", str(tmp_path))
    assert r.exit_code != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and all(w in lines[0] for w in words), r.stderr


def test_fused_attention_is_no_pick_of_a_model_that_has_none(tmp_path):
    """GPT-Neo's code has no SDPA path: asked for flash it runs eager, so a "flash" row would repeat an eager one under
    a name that is not what runs (the table listed each configuration twice, with one prediction)."""
    from knowledge.paths import BUNDLED

    model = str(BUNDLED / "data" / "configs" / "gpt-neo-defaults.json")
    r = recommend("--hardware", "h200x2", "--task", "pretrain", "--model", model, "--top", "6", "--json",
                  "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    picks = json.loads(r.stdout)["recommendations"]
    assert len(picks) == 6 and not any(p["configuration"]["flash_attention"] for p in picks)
    assert len({(p["tokens_per_s"], p["peak_mem_gib"]) for p in picks}) == 6
