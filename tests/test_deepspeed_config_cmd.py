"""`advisor deepspeed-config`: writes a JSON DeepSpeed's parser accepts, refuses impossible combinations."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from advisor.cli import _register, app
from advisor.commands.deepspeed_config import validate_with_deepspeed

_register()


def test_writes_a_config_deepspeed_accepts(tmp_path):
    out = tmp_path / "ds.json"
    r = CliRunner().invoke(app, ["deepspeed-config", "--hardware", "rtx4090x8", "--task", "finetune", "--model", "70b",
                                 "--method", "qlora", "--zero-stage", "3", "--offload", "optimizer", "--recompute",
                                 "--micro-batch-size", "2", "--grad-accum", "4", "--out", str(out)])
    assert r.exit_code == 0, r.output
    cfg = json.loads(out.read_text())
    assert cfg["zero_optimization"]["stage"] == 3
    assert cfg["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert cfg["train_batch_size"] == 2 * 4 * 8
    assert "bf16" in cfg  # the RTX 4090 has bf16
    assert validate_with_deepspeed(cfg) is None
    assert "deepspeed --num_gpus 8" in r.output


def test_fp16_on_a_gpu_without_bf16(tmp_path):
    out = tmp_path / "ds.json"
    r = CliRunner().invoke(app, ["deepspeed-config", "--hardware", "v100x8", "--task", "pretrain", "--zero-stage", "2", "--model", "llama3.2-1b",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    cfg = json.loads(out.read_text())
    assert "fp16" in cfg and "bf16" not in cfg


def test_deepspeed_rejects_a_broken_config():
    assert validate_with_deepspeed({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 7}}) is not None


def test_impossible_combination_is_one_line(tmp_path):
    r = CliRunner().invoke(app, ["deepspeed-config", "--zero-stage", "0", "--offload", "optimizer", "--out", str(tmp_path / "x.json")])
    assert r.exit_code == 1
    assert "zero_stage" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "x.json").exists()


def _run(*args: str):
    return CliRunner().invoke(app, ["deepspeed-config", *args])


def test_refuses_what_does_not_fit_with_the_gib_and_force_writes_it(tmp_path):
    out = tmp_path / "ds.json"
    r = _run("--hardware", "rtx4090x1", "--task", "finetune", "--model", "70b", "--method", "lora", "--zero-stage", "0", "--out", str(out))
    assert r.exit_code == 1
    line = r.output.strip()
    assert "not to fit" in line and "GiB" in line and "--force" in line and "\n" not in line
    assert not out.exists()
    r = _run("--hardware", "rtx4090x1", "--task", "finetune", "--model", "70b", "--method", "lora", "--zero-stage", "0",
             "--out", str(out), "--force")
    assert r.exit_code == 0, r.output
    assert out.exists() and "--force" in r.output


def test_refuses_offload_that_needs_more_host_ram_than_given(tmp_path):
    args = ["--hardware", "rtx4090x8", "--task", "finetune", "--model", "70b", "--method", "full", "--zero-stage", "3",
            "--offload", "optimizer+params", "--recompute", "--out", str(tmp_path / "ds.json")]
    r = _run(*args, "--host-ram-gib", "64")
    assert r.exit_code == 1 and "host RAM" in r.output and "62 GiB usable" in r.output  # 98.3% of 64 GiB, rounded down


def test_refuses_meaningless_combinations(tmp_path):
    out = str(tmp_path / "x.json")
    r = _run("--task", "pretrain", "--method", "lora", "--out", out)
    assert r.exit_code == 1 and "pre-training" in r.output
    r = _run("--task", "pretrain", "--method", "qlora", "--out", out)
    assert r.exit_code == 1 and "method 'qlora'" in r.output
    r = _run("--task", "serve", "--out", out)
    assert r.exit_code == 2 and "for training" in r.output and "advisor recommend --task serve" in r.output
    r = _run("--case", '{"id": "s", "hardware": "h100x1", "model": "7b", "task": "serve", "zero_stage": 2}', "--out", out)
    assert r.exit_code == 2 and "unknown field" not in r.output and "launch line" in r.output
    r = _run("--method", "qlra", "--out", out)
    assert r.exit_code == 2 and "qlora" in r.output  # the closest valid value; a usage error, as recommend's
    r = _run("--task", "pretrian", "--out", out)
    assert r.exit_code == 2 and "pretrain" in r.output
    assert not (tmp_path / "x.json").exists()


def test_prints_the_paths_it_wrote_and_an_accelerate_config_beside(tmp_path):
    out = tmp_path / "sub" / "ds.json"
    r = _run("--hardware", "h100x1", "--model", "7b", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert str(out.resolve()) in r.output.replace("\n", "")
    accel = out.with_name(out.stem + "_accelerate.yaml").read_text()
    assert "distributed_type: DEEPSPEED" in accel and str(out.resolve()) in accel
    assert "Setting accelerator" not in r.stdout  # DeepSpeed's import noise stays off stdout


def test_two_configs_in_one_folder_keep_their_own_accelerate_configs(tmp_path):
    """A second config written beside the first rewrote the one accelerate file both launch lines named, so the first
    job's `accelerate launch` ran the second job's DeepSpeed JSON (a new user's trial, 2026-12-07)."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert _run("--hardware", "h100x1", "--model", "7b", "--out", str(a)).exit_code == 0
    assert _run("--hardware", "h100x1", "--model", "7b", "--method", "qlora", "--out", str(b)).exit_code == 0
    assert str(a.resolve()) in (tmp_path / "a_accelerate.yaml").read_text()
    assert str(b.resolve()) in (tmp_path / "b_accelerate.yaml").read_text()


def test_hints_fit_the_box_and_the_pick(tmp_path):
    r = _run("--hardware", "rtx4090x8", "--task", "finetune", "--model", "70b", "--method", "qlora", "--zero-stage", "3",
             "--recompute", "--out", str(tmp_path / "ds.json"))
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "NCCL_P2P_DISABLE=1 deepspeed" in text  # GeForce 40-series: no P2P over PCIe
    assert "bnb_4bit_quant_storage=torch.bfloat16" in text  # ZeRO-3 QLoRA
    assert f"deepspeed='{tmp_path / 'ds_hf.json'}'" in r.output  # the Hugging Face hint names the Trainer's file written, unbroken
    assert json.loads((tmp_path / 'ds_hf.json').read_text())['train_micro_batch_size_per_gpu'] == 'auto'
    r = _run("--hardware", "a800x8", "--task", "finetune", "--model", "7b", "--zero-stage", "2", "--out", str(tmp_path / "a.json"))
    assert r.exit_code == 0, r.output
    assert "NCCL_P2P_DISABLE" not in r.output and "quant_storage" not in r.output


def test_a_case_on_the_command_line_needs_no_id(tmp_path):
    """One case given with --case is told from no other: its id was demanded anyway ("id: missing")."""
    r = _run("--case", '{"hardware": "h100x1", "model": "7b", "task": "finetune"}', "--out", str(tmp_path / "c.json"))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "c.json").exists()
