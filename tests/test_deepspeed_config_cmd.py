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
    r = CliRunner().invoke(app, ["deepspeed-config", "--hardware", "v100x8", "--task", "pretrain", "--zero-stage", "2",
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
