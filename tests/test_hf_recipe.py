"""The printed Hugging Face recipe is accepted as it is: transformers' own DeepSpeed-config check (the one the
Trainer runs, ``HfTrainerDeepSpeedConfig``) and accelerate's config loader take the files `recommend` writes."""

from __future__ import annotations

import ast
import json
import re
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from advisor import cli


def make_app():
    cli._register()
    return cli.app

transformers = pytest.importorskip("transformers", reason="transformers is not installed")
pytest.importorskip("deepspeed", reason="deepspeed is not installed (the Trainer's DeepSpeed check needs it)")

JOBS = [
    ["--hardware", "rtx4090x8", "--task", "finetune", "--model", "70b"],  # QLoRA, ZeRO-3, offload, recompute
    ["--hardware", "h100x1", "--task", "pretrain", "--model", "tinyllama-1.1b"],
    ["--hardware", "v100x4", "--task", "finetune", "--model", "7b"],  # fp16
]


def _recommend(tmp_path, job):
    out = tmp_path / "out"
    r = CliRunner().invoke(make_app(), ["recommend", *job, "--out-dir", str(out), "--top", "1"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    return out, r.output


def _printed_arguments(text: str) -> dict:
    """The keywords of the printed TrainingArguments(...), read back as Python literals."""
    m = re.search(r"TrainingArguments\(\n(.*?)\n +\), \.\.\.\)", text, re.S)
    assert m, text
    call = ast.parse(f"f({m.group(1)})", mode="eval").body
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}


# transformers 5 renames gradient_checkpointing (activation_checkpointing) and warns; 4.x knows only the old name
@pytest.mark.filterwarnings("ignore:`gradient_checkpointing:FutureWarning")
@pytest.mark.parametrize("job", JOBS, ids=lambda j: j[1] + "-" + j[5])
def test_trainer_accepts_the_printed_arguments_and_the_hf_config(tmp_path, job):
    from transformers import TrainingArguments

    out, text = _recommend(tmp_path, job)
    args = _printed_arguments(text)
    assert args["deepspeed"].endswith("ds_config_hf.json")
    hf = json.loads((out / "ds_config_hf.json").read_text())
    plain = json.loads((out / "ds_config.json").read_text())
    assert hf["train_micro_batch_size_per_gpu"] == "auto" and hf["optimizer"]["params"]["lr"] == "auto"
    assert args["per_device_train_batch_size"] == plain["train_micro_batch_size_per_gpu"]
    assert args["gradient_accumulation_steps"] == plain["gradient_accumulation_steps"]
    assert args["learning_rate"] == plain["optimizer"]["params"]["lr"]
    assert ("bf16" in plain) == bool(args.get("bf16")) and ("fp16" in plain) == bool(args.get("fp16"))
    args.pop("output_dir", None)
    ta = TrainingArguments(output_dir=str(tmp_path / "run"), use_cpu=True, **args)  # runs trainer_config_process
    model = SimpleNamespace(config=SimpleNamespace(hidden_size=4096))
    ta.hf_deepspeed_config.trainer_config_finalize(ta, model, num_training_steps=100)  # raises on a mismatch
    filled = ta.hf_deepspeed_config.config
    assert filled["train_micro_batch_size_per_gpu"] == plain["train_micro_batch_size_per_gpu"]
    assert filled["optimizer"]["params"] == plain["optimizer"]["params"]
    assert filled["zero_optimization"] == plain["zero_optimization"]


def test_the_plain_config_is_what_the_trainer_would_refuse(tmp_path):
    """The check above can fail: the explicit JSON with the Trainer's defaults is refused, as issue 24 saw."""
    from transformers import TrainingArguments

    out, _ = _recommend(tmp_path, JOBS[0])
    with pytest.raises(ValueError, match="mismatch"):
        ta = TrainingArguments(output_dir=str(tmp_path / "run"), use_cpu=True, deepspeed=str(out / "ds_config.json"), bf16=True)
        ta.hf_deepspeed_config.trainer_config_finalize(ta, SimpleNamespace(config=SimpleNamespace(hidden_size=8)), 10)


def test_accelerate_loads_the_config_and_the_json_it_points_at(tmp_path):
    accelerate = pytest.importorskip("accelerate", reason="accelerate is not installed")
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.utils import DeepSpeedPlugin

    out, _ = _recommend(tmp_path, JOBS[0])
    cfg = load_config_from_file(str(out / "ds_config_accelerate.yaml"))
    assert cfg.distributed_type == "DEEPSPEED" and cfg.num_processes == 8, accelerate.__version__
    path = cfg.deepspeed_config["deepspeed_config_file"]
    plugin = DeepSpeedPlugin(hf_ds_config=path)
    assert plugin.zero_stage == 3 and plugin.hf_ds_config.config["train_micro_batch_size_per_gpu"] == 4
    for name in ("ds_config.json", "ds_config_hf.json"):
        assert DeepSpeedPlugin(hf_ds_config=str(out / name)).zero_stage == 3
