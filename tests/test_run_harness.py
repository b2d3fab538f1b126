"""CPU toy-size tests of the real-run harness: train / serve steps, run_case, campaign, grids."""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from knowledge.catalog import resolve_model, resolve_platform
from knowledge.schema import Case, Measured, Measurement, ModelArch, ServeCase, TrainCase
from probes import campaign, grids, hf_model, train_step
from probes.serve_step import run_serving
from probes.train_step import is_oom, run_training

REPO = Path(__file__).resolve().parent.parent
INLINE = dict(grids.TOY_ARCH)
ARCH = ModelArch(name="toy", **INLINE)


def _train(**kw) -> TrainCase:
    base = dict(id="t", hardware="h100x1", model=INLINE, engine="pytorch", seq_len=16)
    return TrainCase(**{**base, **kw})


def _pos(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def _check_train(m: Measured, case: TrainCase) -> None:
    assert m.error is None and not m.oom
    assert _pos(m.step_time_s) and _pos(m.forward_s) and _pos(m.backward_s) and _pos(m.optimizer_s)
    tokens = case.micro_batch_size * case.seq_len * case.grad_accum
    assert m.tokens_per_s == pytest.approx(tokens / m.step_time_s, rel=1e-9)
    assert m.peak_mem_gib is None  # no memory statistics off CUDA


@pytest.mark.parametrize("kw", [
    dict(task="pretrain", micro_batch_size=2),
    dict(task="finetune", grad_accum=2),
    dict(task="pretrain", recompute=True, flash_attention=False),
    dict(task="finetune", recompute=True),
])
def test_run_training_pytorch(kw: dict) -> None:
    case = _train(**kw)
    _check_train(run_training(case, ARCH, device="cpu", steps=2, warmup=1), case)


def test_apply_method_trainable_sets() -> None:
    import torch

    full = hf_model.apply_method(hf_model.build_model(ARCH, device="cpu", dtype=torch.float32), _train(task="pretrain"))
    total, trainable = hf_model.count_parameters(full)
    assert total == trainable > 0
    lora = hf_model.apply_method(hf_model.build_model(ARCH, device="cpu", dtype=torch.float32),
                                 _train(task="finetune", lora_rank=8, recompute=True))
    names = [n for n, p in lora.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    # r * (in + out) per target: q 64->64, k 64->32, v 64->32, o 64->64; two layers
    assert sum(p.numel() for p in lora.parameters() if p.requires_grad) == 2 * 8 * (128 + 96 + 96 + 128)
    assert all(layer.gradient_checkpointing for layer in hf_model.decoder_layers(lora))


def test_eager_and_sdpa_agree() -> None:
    import torch

    model = hf_model.build_model(ARCH, device="cpu", dtype=torch.float32, attn_impl="eager").eval()
    assert model.config._attn_implementation == "eager"
    x = torch.randint(0, 256, (2, 16))
    with torch.no_grad():
        eager = model(input_ids=x).logits
        model.config._attn_implementation = "sdpa"
        sdpa = model(input_ids=x).logits
    assert torch.allclose(eager, sdpa, atol=1e-4)


@pytest.mark.parametrize("name", ["tinyllama-1.1b", "llama3.2-3b", "mistral-7b", "qwen2.5-7b", "mixtral-8x7b"])
def test_hf_config_matches_catalog_param_count(name: str) -> None:
    arch = resolve_model(name)
    if arch.param_count is None:
        pytest.skip(f"{name} has no param_count")
    model = hf_model.build_model(arch, device="meta", dtype=__import__("torch").bfloat16)
    assert sum(p.numel() for p in model.parameters()) == arch.param_count
    assert hf_model.hf_config(arch, num_layers=3).num_hidden_layers == 3


def test_oom_becomes_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_oom(RuntimeError("CUDA error: out of memory")) and not is_oom(ValueError("shape"))

    def boom(*a, **k):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(train_step, "_run", boom)
    m = run_training(_train(task="pretrain"), ARCH, device="cpu")
    assert m.oom and m.error.startswith("CUDA out of memory") and m.tokens_per_s is None


def test_run_serving() -> None:
    info: dict = {}
    case = ServeCase(id="s", hardware="h100x1", model=INLINE, task="serve", batch_size=2, prompt_len=16,
                     kv_len=24, output_len=4)
    m = run_serving(case, ARCH, device="cpu", repeats=2, info=info)
    assert m.error is None and _pos(m.prefill_s) and _pos(m.decode_step_s) and _pos(m.e2e_output_tokens_per_s)
    assert m.prefill_s == m.prefill_eager_s  # on a CPU the eager forward is the only one
    assert "static cache" in info["decode_method"]
    tp = run_serving(ServeCase(**{**case.model_dump(), "tensor_parallel": 2}), ARCH, device="cpu")
    assert tp.error == "tensor_parallel>1 not measured" and tp.prefill_s is None


def test_static_cache_decoder_matches_generate() -> None:
    import torch

    from probes.serve_step import _Decoder

    torch.manual_seed(0)
    model = hf_model.build_model(ARCH, device="cpu", dtype=torch.float32, use_cache=True).eval()
    prompt, out_len = torch.randint(0, 256, (2, 8)), 6
    with torch.inference_mode():
        ref = model.generate(input_ids=prompt, max_new_tokens=out_len, min_new_tokens=out_len, do_sample=False,
                             pad_token_id=0)[:, 8:]
        dec = _Decoder(model, 2, 8 + out_len, torch.device("cpu"))
        dec.prefill(prompt)
        toks = [dec.tok.clone()]
        for i in range(out_len - 1):
            dec.set_position(8 + i)
            dec.run()
            toks.append(dec.tok.clone())
    assert torch.equal(torch.cat(toks, 1), ref)  # same greedy tokens: positions, mask and cache slots are right


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_run_training_deepspeed_cpu(stage: int, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("deepspeed")
    # DeepSpeed's CPU backend JIT-compiles a shared-memory allreduce (~1 min); one rank never needs it.
    monkeypatch.setattr(importlib.import_module("deepspeed.comm.torch"), "build_shm_op", lambda: None)
    case = _train(task="pretrain" if stage != 1 else "finetune", engine="deepspeed", zero_stage=stage,
                  grad_accum=2 if stage == 2 else 1)
    ds = {"zero_optimization": {"stage": stage}, "bf16": {"enabled": True}, "gradient_clipping": 1.0}
    _check_train(run_training(case, ARCH, device="cpu", steps=2, warmup=1, ds_config=ds), case)


def _rows(path: Path) -> list[Measurement]:
    return [Measurement.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def test_run_case_failure_still_writes_a_row(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    case = {"id": "bad", "hardware": "h100x1", "model": "no-such-model", "task": "pretrain"}
    p = subprocess.run([sys.executable, "-m", "probes.run_case", "--case", json.dumps(case), "--out", str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr[-2000:]
    (row,) = _rows(out)
    assert row.case["id"] == "bad" and "no-such-model" in row.measured.error and "\n" not in row.measured.error
    assert row.environment is not None and "probes.run_case" in row.environment.command


def test_run_case_lora_without_targets_runs_and_records_peft_s_default(tmp_path: Path) -> None:
    """The advisor predicts a LoRA case that names no targets on a GPT-NeoX with PEFT's default (query_key_value);
    the probe must run the same adapters, and its row must say which (it crashed on the H100 when it tried q/k/v/o)."""
    config = tmp_path / "neox.json"
    config.write_text(json.dumps({"model_type": "gpt_neox", "hidden_size": 128, "intermediate_size": 256,
                                  "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000,
                                  "rotary_pct": 0.25, "max_position_embeddings": 2048}))
    out = tmp_path / "rows.jsonl"
    case = {"id": "neox-lora", "hardware": "h100x1", "model": str(config), "task": "finetune", "method": "lora",
            "engine": "pytorch", "micro_batch_size": 1, "seq_len": 32}
    p = subprocess.run([sys.executable, "-m", "probes.run_case", "--case", json.dumps(case), "--out", str(out),
                        "--device", "cpu", "--steps", "1", "--warmup", "0", "--no-phase-timing"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    (row,) = _rows(out)
    assert row.measured.error is None and row.measured.tokens_per_s > 0, (row.measured.error, p.stderr[-2000:])
    assert row.case["lora_targets"] == ["query_key_value"]


def test_campaign_toy_cpu(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "probes.campaign", "--grid", "toy-cpu", "--out", str(tmp_path),
                        "--only", "toy-full-pt", "--budget-s", "300"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = {r.case["id"]: r for r in _rows(tmp_path / "measurements.jsonl")}
    assert set(rows) == {"toy-full-pt"}
    train = rows["toy-full-pt"].measured
    assert train.error is None and train.tokens_per_s == pytest.approx(2 * 16 / train.step_time_s)
    assert _pos(train.forward_s) and rows["toy-full-pt"].case["micro_batch_size"] == 2
    assert "1 run (1 measured, 0 OOM, 0 failed)" in p.stdout
    assert "===== toy-full-pt (rc=0" in (tmp_path / "campaign.log").read_text()


def test_campaign_timeout_and_budget(tmp_path: Path) -> None:
    # 2 s per case kills every case during start-up; a 5.5 s budget launches two and skips the third
    p = subprocess.run([sys.executable, "-m", "probes.campaign", "--grid", "toy-cpu", "--out", str(tmp_path),
                        "--timeout-s", "2", "--budget-s", "5.5"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = _rows(tmp_path / "measurements.jsonl")
    assert [r.case["id"] for r in rows] == ["toy-full-pt", "toy-lora-pt-rc"]
    assert all(r.measured.error == "timeout after 2 s" for r in rows)
    assert "1 skipped for the budget: toy-serve" in p.stdout


def test_grids_are_valid_cases() -> None:
    for name in grids.GRIDS:
        cases = grids.grid(name)
        assert len({c["id"] for c in cases}) == len(cases) > 0
        for c in cases:
            case = TypeAdapter(Case).validate_python({k: v for k, v in c.items() if not k.startswith("_")})
            resolve_model(case.model)
            assert resolve_platform(case.hardware).count >= (getattr(case, "gpus", None) or 1)


def test_auto_hardware_keeps_a_grids_platform_file(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # the P2P-off rows of 2026-11-27 came back labelled h200x2: 'auto' had replaced the grid's platform file
    monkeypatch.setattr(campaign, "gpu_inventory", lambda: ("NVIDIA H200", 2))
    assert campaign.main(["--grid", "h200x2-study-p2p-off", "--out", "/nonexistent/x", "--dry-run"]) == 0
    assert campaign.main(["--grid", "h200x2-study-p2p-on", "--out", "/nonexistent/y", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.count("probes/platforms/h200x2-p2p-off.json") >= 7 and '"hardware": "h200x2"' in out


def test_campaign_dry_run_uses_torchrun_for_two_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert campaign.main(["--grid", "h200x2", "--out", "/nonexistent/x", "--dry-run", "--hardware", "grid"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("h200x2-")]
    assert len(lines) == len(grids.grid("h200x2"))
    two = [ln for ln in lines if '"gpus": 2' in ln]
    assert two and all("torch.distributed.run --standalone --nproc_per_node=2 -m probes.run_case" in ln for ln in two)
    assert not Path("/nonexistent/x").exists()


def test_a_row_records_the_threads_its_ranks_ran_with() -> None:
    """torchrun starts each of several ranks on one OpenMP thread unless told otherwise: the row must say so, or it is
    predicted at the launch line's cores / ranks (a two-GPU ZeRO-Offload row ran 2.5x slower than that)."""
    import argparse

    args = argparse.Namespace(hostfile=None)
    two = {"task": "pretrain", "gpus": 2}
    assert campaign.run_omp_threads(two, {}, args) == 1
    assert campaign.run_omp_threads({**two, "omp_threads": 8}, {}, args) == 8
    assert campaign.run_omp_threads(two, {"OMP_NUM_THREADS": "4"}, args) == 4
    assert campaign.run_omp_threads({"task": "pretrain", "gpus": 1}, {}, args) is None
    assert campaign.run_omp_threads({"task": "serve", "gpus": 2}, {}, args) is None
    # a serving case's contract has no thread field: none is recorded, whatever the environment says
    assert campaign.run_omp_threads({"task": "serve"}, {"OMP_NUM_THREADS": "4"}, args) is None


def test_campaign_runs_a_serving_case(tmp_path: Path) -> None:
    """The thread count a training row records must never reach a serving case, whose contract has no such field."""
    p = subprocess.run([sys.executable, "-m", "probes.campaign", "--grid", "toy-cpu", "--out", str(tmp_path),
                        "--only", "toy-serve", "--budget-s", "200"],
                       cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert p.returncode == 0, p.stderr[-2000:]
    rows = _rows(tmp_path / "measurements.jsonl")
    assert [r.case["id"] for r in rows] == ["toy-serve"] and rows[0].measured.error is None
    assert "omp_threads" not in rows[0].case


def test_zero3_builds_a_model_whose_init_copies_into_its_parameters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Qwen3.5-MoE's init copies a tensor of A_log's size into it, which an empty shard under zero.Init cannot take
    (one H200, 2026-11-29: the grid's ZeRO-3 case crashed in the harness, never reaching a step); the harness builds it
    uninitialised and draws each partition instead."""
    pytest.importorskip("deepspeed")
    monkeypatch.setattr(importlib.import_module("deepspeed.comm.torch"), "build_shm_op", lambda: None)

    cfg = json.loads((REPO / "knowledge/data/configs/qwen3.5-moe-text-defaults-4l.json").read_text())
    cfg.update(hidden_size=128, moe_intermediate_size=32, shared_expert_intermediate_size=32, num_experts=4,
               num_experts_per_tok=2, num_attention_heads=2, num_key_value_heads=1, head_dim=64, vocab_size=256,
               linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=16, linear_value_head_dim=16)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    case = TrainCase(id="z3", hardware="h200x1", model=str(path), task="finetune", method="lora", engine="deepspeed",
                     zero_stage=3, seq_len=32)
    ds = {"zero_optimization": {"stage": 3}, "bf16": {"enabled": True}, "gradient_clipping": 1.0}
    _check_train(run_training(case, resolve_model(str(path)), device="cpu", steps=1, warmup=0, ds_config=ds), case)


def test_anatomy_runs_the_lora_targets_the_advisor_predicts(tmp_path: Path, monkeypatch) -> None:
    """probes.anatomy took the schema's q/k/v/o where probes.run_case runs the model's own default (Qwen3.5's anatomy
    adapted other modules than its grid run): both go through ``with_advised_targets`` now. Stopped before the GPU."""
    import probes.train_step as train_step
    from probes import anatomy

    class Stop(Exception):
        pass

    def stop(*_a, **_k):
        raise Stop

    monkeypatch.setattr(train_step, "setup_distributed", stop)
    config = tmp_path / "neox.json"
    config.write_text(json.dumps({"model_type": "gpt_neox", "hidden_size": 128, "intermediate_size": 256,
                                  "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000,
                                  "rotary_pct": 0.25, "max_position_embeddings": 2048}))
    case = {"id": "neox-lora", "hardware": "h100x1", "model": str(config), "task": "finetune", "method": "lora",
            "engine": "pytorch", "micro_batch_size": 1, "seq_len": 32}
    with pytest.raises(Stop):
        anatomy.run(case, warmup=0)
    assert case["lora_targets"] == ["query_key_value"]


@pytest.mark.parametrize("config", [
    # OLMo-3's layers come in two kinds (three sliding, one full): a shell of its first layer only lacked the full
    # kind's mask ("KeyError: 'full_attention'" on one H200, grid h200-qlora-host-check-2)
    {"model_type": "olmo3", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
     "num_key_value_heads": 4, "vocab_size": 128, "sliding_window": 8,
     "layer_types": ["sliding_attention"] * 3 + ["full_attention"]},
    # Falcon keeps its blocks in transformer.h, not model.layers ("'FalconForCausalLM' object has no attribute 'model'")
    {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128,
     "new_decoder_architecture": False, "multi_query": True, "parallel_attn": True, "bias": False},
])
def test_a_quantized_base_is_built_whatever_the_family_s_layers(config: dict, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import torch

    from knowledge.catalog import resolve_model

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))

    quantized: list[int] = []
    monkeypatch.setattr(hf_model, "_bnb", lambda: None)  # bitsandbytes needs a GPU: the layers stay bf16 linears
    monkeypatch.setattr(hf_model, "quantize_linears", lambda layer, q, d: quantized.append(1) or 0)
    model = hf_model.build_model(resolve_model(str(path)), device="cpu", dtype=torch.float32, quantization="nf4")
    assert len(hf_model.decoder_layers(model)) == config["num_hidden_layers"] == len(quantized)
    x = torch.randint(0, 128, (1, 16))
    assert torch.isfinite(model(input_ids=x, labels=x).loss)


def test_a_router_that_post_processes_its_product_is_not_quantized(monkeypatch: pytest.MonkeyPatch) -> None:
    """Llama-4's router is an nn.Linear subclass whose forward returns (scores, logits); a bitsandbytes layer in its
    place returns one tensor, and Llama-4's QLoRA stopped at "too many values to unpack" (one H100, grid
    h100-blind-recommend-groups, 2026-12-07). The projections beside it are still replaced."""
    import types

    import torch
    from transformers import Llama4TextConfig
    from transformers.models.llama4.modeling_llama4 import Llama4TextMoe

    class FourBit(torch.nn.Linear):
        pass

    class EightBit(torch.nn.Linear):
        pass

    fake_bnb = types.SimpleNamespace(nn=types.SimpleNamespace(Linear4bit=FourBit, Linear8bitLt=EightBit))
    monkeypatch.setattr(hf_model, "_bnb", lambda: fake_bnb)  # bitsandbytes needs a GPU: a stand-in class marks the swap
    monkeypatch.setattr(hf_model, "_to_bnb", lambda bnb, lin, q, d: FourBit(lin.in_features, lin.out_features,
                                                                              bias=lin.bias is not None))
    cfg = Llama4TextConfig(hidden_size=64, intermediate_size=128, num_local_experts=4, num_experts_per_tok=1)
    moe = Llama4TextMoe(cfg)
    replaced = hf_model.quantize_linears(moe, "nf4", "cpu")
    assert type(moe.router).__name__ == "Llama4Router"  # kept: its forward still returns the pair
    assert isinstance(moe.shared_expert.gate_proj, FourBit) and replaced == 3  # the shared expert's three projections
    scores, logits = moe.router(torch.randn(5, 64))
    assert scores.shape == logits.shape == (5, 4)
