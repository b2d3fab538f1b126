"""Each common input mistake gets one `error:` line with a hint (issue 24, item 10)."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from advisor import cli
from knowledge.paths import BUNDLED_PROFILES


def run(*args: str, env: dict | None = None):
    cli._register()
    return CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "80", **(env or {})})


REC = ["recommend", "--task", "finetune", "--model", "7b"]


@pytest.mark.parametrize("args, code, hint", [
    (["recommend", "--hardware", "8xrtx4090", "--task", "finetune", "--model", "7b"], 1, "did you mean rtx4090x8?"),
    (["recommend", "--hardware", "rtx4090x8", "--task", "finetuning", "--model", "7b"], 2, "did you mean 'finetune'?"),
    (["recommend", "--hardware", "rtx4090x8", "--task", "finetune", "--model", "7b", "--gpus", "16"], 1, "--nodes 2"),
    (["recommend", "--hardware", "h100x1", "--task", "serve", "--model", "7b", "--engine", ""], 2, "names no engine"),
    (["recommend", "--hardware", "h100x1", "--task", "finetune", "--model", "7b", "--engine", " "], 2, "names no engine"),
    # a new user's trial (2026-12-07): these named a value the user never gave
    (["recommend", "--hardware", "h100x1", "--task", "finetune", "--model", ""], 1, "model '' names no model"),
    (["recommend", "--hardware", "h100x1", "--task", "finetune", "--model", "7b", "--engine", "jax,"], 2, "'jax'"),
])
def test_a_mistake_gets_one_line_and_a_hint(args, code, hint):
    r = run(*args)
    assert r.exit_code == code, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and hint in lines[0], r.stderr


def test_spaces_around_a_hardware_id_are_stripped(tmp_path):
    r = run("recommend", "--hardware", " h100x8 ", "--task", "finetune", "--model", "7b", "--json", "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["hardware"] == "h100x8"


def test_a_profile_of_another_schema_version_is_refused(tmp_path):
    prof = json.loads((BUNDLED_PROFILES / "h100x1.json").read_text())
    prof["schema_version"] = 99
    path = tmp_path / "future.json"
    path.write_text(json.dumps(prof))
    r = run(*REC, "--hardware", "h100x1", "--profile", str(path), "--out-dir", str(tmp_path / "o"))
    assert r.exit_code != 0 and "schema_version 99" in r.stderr and "Traceback" not in r.output


def test_an_unknown_hub_id_offline_fails_fast(tmp_path, monkeypatch):
    import knowledge.hub as hub

    hub.hub_model.cache_clear()
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    t0 = time.perf_counter()
    r = run("recommend", "--hardware", "h100x1", "--task", "finetune", "--model", "nobody/no-such-model-xyz",
            "--out-dir", str(tmp_path / "o"))
    took = time.perf_counter() - t0
    assert r.exit_code == 1 and "cannot be reached" in r.stderr, r.output
    assert took < 3.0, took  # ~0.8 s: the reachability check is bounded, transformers is not even imported


def test_help_shows_no_type_for_flags_and_describes_lora_rank():
    r = run("recommend", "--help")
    assert r.exit_code == 0 and "<bool>" not in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if "--lora-rank" in ln)
    assert "LoRA / QLoRA adapter" in line


def test_a_bad_choice_reads_plainly_and_names_the_value_once():
    r = run("recommend", "--hardware", "rtx4090x8", "--task", "finetuning", "--model", "7b")
    line = r.stderr.strip()
    assert "Value error" not in line and line.count("'finetuning'") == 1, line
    r = run("recommend", "--hardware", "h100x1", "--task", "finetune", "--model", "7b", "--lora-rank", "0")
    assert r.exit_code == 2 and "--lora-rank" in r.stderr and "(got '0')" in r.stderr, r.stderr


@pytest.mark.parametrize("case, hint", [
    ({"task": "finetune", "prompt_len": 512}, "training fields close to it: seq_len"),  # spelling alone said recompute
    ({"task": "serve", "micro_batch_size": 8}, "serving fields close to it: batch_size"),
    ({"task": "serve", "prompt_len": 8000}, "prompt_len=8000 (the KV length) exceeds"),  # it said kv_len=8000
])
def test_a_case_s_mistake_names_what_the_case_said(case, hint, tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "x", "hardware": "h100x1", "model": "7b", **case}) + "\n")
    r = run("predict", "--cases", str(path))
    assert r.exit_code == 1 and hint in " ".join(r.output.split()), r.output


def test_an_engine_is_read_whatever_its_case_and_a_trailing_comma(tmp_path):
    r = run(*REC, "--hardware", "h100x1", "--engine", "PyTorch,", "--top", "1", "--json", "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["recommendations"][0]["configuration"]["engine"] == "pytorch"



def test_a_pcie_server_of_a_gpu_with_a_pcie_card_is_that_card():
    """'h100x8-pcie' was read as SXM5 modules on a PCIe link, 40% above eight H100 PCIe cards: it is the card's server."""
    from knowledge.catalog import resolve_platform

    p = resolve_platform("h100x8-pcie")
    assert p.gpu.id == "h100-pcie" and p.interconnect == "pcie" and p.count == 8
    assert resolve_platform("h100x8").gpu.id == "h100" and resolve_platform("a100x8-pcie").gpu.id == "a100"


def test_a_host_by_rule_is_said_to_be_assumed(tmp_path):
    """A server the catalog does not list gets its host by rule (rtx4090x7: 56 cores, more than the listed rtx4090x8's
    40): the caption says it is assumed and how to give the real one; a listed server's does not."""
    said = {}
    for hw in ("rtx4090x7", "rtx4090x8"):
        r = run(*REC, "--hardware", hw, "--top", "1", "--out-dir", str(tmp_path / hw))
        assert r.exit_code == 0, r.output
        said[hw] = " ".join(r.stdout.split())
    assert "(assumed: --host-ram-gib, --cpu-cores give yours)" in said["rtx4090x7"]
    assert "assumed" not in said["rtx4090x8"]
