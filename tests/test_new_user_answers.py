"""What a new user's QA pass found answered wrongly: each test fails on the answer it gave.

Platform files and config.json of the wrong JSON types (exit 2, naming the field), messages that contradicted
themselves or leaked pydantic's internals, a stale hostfile beside a single-node config, "±99%" for a lopsided
interval, exit 0 when nothing fits, deepspeed-config pointing at a recommend that finds nothing, and options the
task never reads dropped without a word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor import cli

TINY_JOB = ["-t", "finetune", "-m", "tinyllama-1.1b", "--json"]


def run(*args: str):
    cli._register()
    r = CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "80"})
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


def one_error(r) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    return lines[0]


# --- 1. platform files and config.json: a field of the wrong JSON type is a malformed file (exit 2) ----------------


@pytest.mark.parametrize("body, field", [
    ({"gpu": "rtx4090", "count": True}, "count"),  # was taken as 1 GPU, exit 0
    ({"gpu": "rtx4090", "count": "2"}, "count"),
    ({"gpu": "rtx4090", "count": 4.5}, "count"),  # was exit 1
    ({"gpu": "rtx4090", "count": 2, "host_ram_gib": "64"}, "host_ram_gib"),
    ({"gpu": "rtx4090", "count": 2, "cpu_cores": "16"}, "cpu_cores"),
    ({"gpu": "rtx4090", "count": 2, "interconnect": 5}, "interconnect"),
    ({"gpu": {"like": "rtx4090", "memory_gib": "47.5"}, "count": 2}, "memory_gib"),
])
def test_a_platform_file_field_of_the_wrong_type_exits_2_naming_it(tmp_path, body, field):
    box = tmp_path / "box.json"
    box.write_text(json.dumps(body))
    r = run("recommend", "-H", str(box), *TINY_JOB, "--out-dir", str(tmp_path / "o"))
    assert r.exit_code == 2, (r.exit_code, r.stderr)
    assert field in one_error(r) and r.stdout == ""


def test_a_platform_file_of_the_right_types_still_runs_and_a_bad_value_exits_1(tmp_path):
    box = tmp_path / "box.json"
    box.write_text(json.dumps({"gpu": "rtx4090", "count": 2, "host_ram_gib": 64, "cpu_cores": 16}))
    r = run("recommend", "-H", str(box), *TINY_JOB, "--out-dir", str(tmp_path / "o"))
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["gpus"] == 2 and json.loads(r.stdout)["host_ram_gib"] == 64
    box.write_text(json.dumps({"gpu": "rtx4090", "count": 0}))  # the right type, a count no server has: a value error
    assert run("recommend", "-H", str(box), *TINY_JOB, "--out-dir", str(tmp_path / "o")).exit_code == 1
    r = run("recommend", "-H", "{not json", *TINY_JOB, "--out-dir", str(tmp_path / "o"))
    assert r.exit_code == 2 and "not valid JSON" in one_error(r)


TINY_CONFIG = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000}


@pytest.mark.parametrize("text, code, words", [
    ('{"hidden_size":', 2, "not valid JSON"),
    ("[1, 2]", 2, "not a JSON object"),
    (json.dumps({**TINY_CONFIG, "num_hidden_layers": "2"}), 2, "num_hidden_layers"),
    # a whole-config check: its message alone, not "': : Value error, …"
    (json.dumps({**TINY_CONFIG, "num_key_value_heads": 3}), 1, "num_attention_heads=4 is not a multiple of num_key_value_heads=3"),
])
def test_a_config_json_is_malformed_or_unsupported_as_the_readme_says(tmp_path, text, code, words):
    cfg = tmp_path / "config.json"
    cfg.write_text(text)
    r = run("recommend", "-H", "h100x1", "-t", "finetune", "-m", str(cfg), "--json", "--out-dir", str(tmp_path / "o"))
    line = one_error(r)
    assert r.exit_code == code and words in line, (r.exit_code, line)
    assert ": :" not in line and "Value error" not in line


# --- 2. a field of the other task is not "unknown" ---------------------------------------------------------------


def test_a_field_of_the_other_task_says_so_and_names_this_tasks_field(tmp_path):
    cases = tmp_path / "c.jsonl"
    base = {"hardware": "h100x1", "model": "7b"}
    cases.write_text("\n".join(json.dumps(c) for c in (
        {"id": "s", **base, "task": "serve", "batch_size": 8, "micro_batch_size": 4},
        {"id": "t", **base, "task": "finetune", "batch_size": 8},
        {"id": "u", **base, "task": "finetune", "seq_length": 2048},
    )) + "\n")
    r = run("predict", "--cases", str(cases), "--json")
    serve, train, typo = (json.loads(x)["error"] for x in r.stdout.splitlines())
    assert "'micro_batch_size' is a training field" in serve and "task 'serve'" in serve and "batch_size" in serve
    assert "unknown" not in serve and "micro_batch_size, " not in serve  # never its own closest name
    assert "'batch_size' is a serving field" in train and "task 'finetune'" in train and "micro_batch_size" in train
    assert typo.endswith("unknown field 'seq_length'; closest: seq_len")


# --- 3. messages that say what was wrong ---------------------------------------------------------------------------


@pytest.mark.parametrize("option, task", [("--host-ram-gib", "finetune"), ("--max-tpot-ms", "serve"),
                                          ("--headroom", "finetune"), ("--rate", "serve")])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_float_option_given_nan_or_infinity_must_be_finite(option, task, value):
    r = run("recommend", "-H", "h100x1", "-t", task, "-m", "7b", f"{option}={value}")
    line = one_error(r)
    assert r.exit_code == 2 and option in line and "must be a finite number" in line and "should be" not in line, line


def test_lora_targets_of_the_wrong_shape_say_what_they_take(tmp_path):
    cases = tmp_path / "c.jsonl"
    for bad in ("qkv", 5, {"q_proj": 1}):
        cases.write_text(json.dumps({"id": "l", "hardware": "h100x1", "model": "7b", "task": "finetune", "lora_targets": bad}))
        line = one_error(run("predict", "--cases", str(cases), "--json"))
        assert "'lora_targets'" in line and "list of module names" in line and '"all-linear"' in line, line
        assert "list[" not in line and "constrained" not in line


@pytest.mark.parametrize("flag, given, wanted", [("-m", "8b", "llama3-8b"), ("-H", "a100x8-nvlnk", "a100x8-nvlink"),
                                                 ("-H", "a100x4-nvlnk", "a100x4-nvlink")])
def test_the_closest_names_include_the_one_meant(flag, given, wanted):
    args = {"-m": "7b", "-H": "h100x1"} | {flag: given}
    line = one_error(run("recommend", "-H", args["-H"], "-t", "finetune", "-m", args["-m"]))
    closest = line.split("closest: ")[1].split(", ")
    assert wanted in closest, line


# --- 4. a single-node run leaves no stale hostfile ------------------------------------------------------------------


def test_a_single_node_run_removes_the_hostfile_a_several_node_run_left(tmp_path):
    out = tmp_path / "o"
    several = run("recommend", "-H", "h100x8", "--nodes", "2", "-t", "pretrain", "-m", "tinyllama-1.1b", "--json",
                  "--out-dir", str(out))
    assert several.exit_code == 0 and (out / "hostfile").exists(), several.stderr
    (out / ".deepspeed_env").write_text("NCCL_IB_DISABLE=0\n")  # as a job that needs an environment writes it
    (out / "notes.txt").write_text("mine")
    single = run("recommend", "-H", "h100x1", *TINY_JOB, "--out-dir", str(out))
    assert single.exit_code == 0, single.stderr
    left = sorted(p.name for p in out.iterdir())
    assert left == ["ds_config.json", "ds_config_accelerate.yaml", "ds_config_hf.json", "notes.txt"], left


def test_a_hostfile_with_the_users_hosts_in_it_stays(tmp_path):
    from advisor.multinode import hostfile_text, remove_stale_launch_files

    (tmp_path / "hostfile").write_text(hostfile_text(2, 8).replace("worker-1", "gpu-node-a"))
    (tmp_path / ".deepspeed_env").write_text("A=1\n")
    assert remove_stale_launch_files(tmp_path) == []
    assert (tmp_path / "hostfile").exists() and (tmp_path / ".deepspeed_env").exists()
    (tmp_path / "hostfile").write_text(hostfile_text(2, 8))
    assert remove_stale_launch_files(tmp_path) == [tmp_path / "hostfile", tmp_path / ".deepspeed_env"]
    assert remove_stale_launch_files(Path(tmp_path / "none")) == []


# --- 5. a lopsided interval is not "±" -----------------------------------------------------------------------------


def test_a_lopsided_interval_shows_both_sides():
    from advisor.tables import error_bar, with_error
    from advisor.train_recommend import plus_minus

    assert error_bar(0.50, 0.99) == " −50/+99%"
    assert error_bar(0.09, 0.10) == " ±10%" and error_bar(0.20, 0.20) == " ±20%"
    assert plus_minus(14286.0, {"tokens_per_s": (7171.0, 28462.0)}, "tokens_per_s") == "14,286 −50/+99%"
    assert plus_minus(1000.0, {"tokens_per_s": (800.0, 1200.0)}, "tokens_per_s") == "1,000 ±20%"
    assert with_error(14286.0, (0.5, 0.99), wrap=True) == "14,286\n−50/+99%"  # the 80-column table: two lines
    assert with_error(1000.0, (0.2, 0.2), wrap=True) == "1,000 ±20%"


def test_the_recommend_table_prints_the_interval_it_returns(tmp_path):
    r = run("recommend", "-H", "rtx4090x8", "-t", "finetune", "-m", "7b", "--json", "--out-dir", str(tmp_path))
    top = json.loads(r.stdout)["recommendations"][0]
    value, (lo, hi) = top["tokens_per_s"], top["interval"]["tokens_per_s"]
    below, above = round((value - lo) / value * 100), round((hi - value) / value * 100)
    assert above - below > 2, "this job's interval is lopsided (a factor of ~2 each way)"
    table = run("recommend", "-H", "rtx4090x8", "-t", "finetune", "-m", "7b", "--out-dir", str(tmp_path)).stdout
    assert f"−{below}/+{above}%" in table and f"±{above}%" not in table


# --- 6. nothing fits: exit 1, as the README says ---------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["-H", "h100x1", "-t", "pretrain", "-m", "70b"],
    ["-H", "rtx4090x1", "-t", "serve", "-m", "llama2-70b"],
])
def test_nothing_fits_exits_1_after_saying_what_would(tmp_path, args):
    r = run("recommend", *args, "--out-dir", str(tmp_path))
    assert r.exit_code == 1 and "nothing fits" in one_error(r) and "Nothing fits" in r.stdout
    doc = json.loads(run("recommend", *args, "--json", "--out-dir", str(tmp_path)).stdout)
    assert doc["nothing_fits"] is True and doc["recommendations"] == []
    assert not (tmp_path / "ds_config.json").exists()


# --- 7. deepspeed-config points at recommend only where recommend finds one -------------------------------------------


def test_deepspeed_configs_hint_agrees_with_recommend(tmp_path):
    job = ["-H", "h100x1", "-t", "pretrain", "-m", "70b"]
    r = run("deepspeed-config", *job, "--method", "full", "--zero-stage", "3", "--offload", "optimizer+params",
            "--recompute", "--out", str(tmp_path / "ds.json"))
    line = one_error(r)
    assert r.exit_code == 1 and "finds one that fits" not in line and "no configuration of this job" in line, line
    assert run("recommend", *job, "--json", "--out-dir", str(tmp_path / "o")).exit_code == 1  # recommend agrees
    job = ["-H", "rtx4090x1", "-t", "finetune", "-m", "7b"]
    line = one_error(run("deepspeed-config", *job, "--method", "full", "--out", str(tmp_path / "ds.json")))
    assert "`advisor recommend` for this job finds one that fits (" in line, line
    assert run("recommend", *job, "--json", "--out-dir", str(tmp_path / "o")).exit_code == 0


# --- 8. an option the task does not read is named, not dropped silently ------------------------------------------------


@pytest.mark.parametrize("task, option", [("pretrain", "--lora-rank=8"), ("serve", "--lora-rank=8"),
                                          ("finetune", "--prompt-len=4000"), ("serve", "--seq-len=4096")])
def test_an_option_the_task_ignores_gets_a_warning_and_the_run_goes_on(tmp_path, task, option):
    r = run("recommend", "-H", "h100x1", "-t", task, "-m", "tinyllama-1.1b", option, "--json", "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [f"warning: {option.split('=')[0]} does not apply to --task {task}: ignored"], lines


def test_options_the_task_reads_give_no_warning(tmp_path):
    r = run("recommend", "-H", "h100x1", "-t", "finetune", "-m", "tinyllama-1.1b", "--lora-rank", "8", "--json",
            "--out-dir", str(tmp_path))
    assert r.exit_code == 0 and r.stderr.strip() == "", r.stderr
    r = run("deepspeed-config", "-t", "pretrain", "-m", "tinyllama-1.1b", "--lora-rank", "8", "--out", str(tmp_path / "ds.json"))
    assert "--lora-rank does not apply to --method full" in r.stderr


# --- 9. what would fit names servers that exist; a lower rank says the rule that put it there; --trials is told --------


def test_what_would_fit_past_eight_gpus_is_more_nodes_not_a_bigger_server():
    r = run("recommend", "--hardware", "a800x8", "-t", "pretrain", "-m", "70b", "--json")
    assert r.exit_code == 1
    changes = [o["change"] for o in json.loads(r.stdout)["would_fit"]]
    assert changes and all("nodes" in c for c in changes), changes  # was "16 GPUs (a800x16)": no such server
    assert not any("a800x16" in c for c in changes)


def test_a_faster_zeropp_pick_below_an_exact_one_says_why():
    from advisor.explain import ranked_below
    from advisor.predictor import Predictor
    from knowledge.schema import TrainCase

    case = TrainCase(id="q", hardware="h100x8", model="70b", task="pretrain", nodes=4, network="ib-ndr", zero_stage=3,
                     recompute=True, micro_batch_size=8, zero_quantized_weights=True)
    p = Predictor().predict(case)
    assert p.peak_mem_gib < 0.8 * p.capacity_gib  # not tight: the memory margin is not why
    text = ranked_below(p, case)
    assert "ZeRO++" in text and "2%" in text, text  # was "75% of GPU memory, p_oom 0%"


def test_a_tpe_search_says_what_it_sampled_and_what_its_polish_added():
    from advisor.train_recommend import _trials_text

    assert _trials_text({"sampler": "tpe", "trials": 202, "sampled": 60}) == "tpe search: 60 sampled + 142 around the best"
    assert _trials_text({"sampler": "exhaustive", "trials": 420, "sampled": 420}) == "exhaustive search: 420 trials"


def test_a_hub_config_that_contradicts_itself_says_so_cleanly(monkeypatch):
    from knowledge import hub
    from knowledge.errors import AdvisorError

    cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 5, "vocab_size": 32000}
    monkeypatch.setattr(hub, "hub_config", lambda repo: cfg)
    hub.hub_model.cache_clear()
    with pytest.raises(AdvisorError) as e:
        hub.hub_model("acme/contradicts")
    hub.hub_model.cache_clear()
    assert ": :" not in str(e.value) and "Value error" not in str(e.value)  # was "'model': : Value error, …"
    assert "num_key_value_heads=5" in str(e.value)


# --- 10. one request is one request; the same RAM keeps its swap; what a launch line and an error line name -------------


def test_fewer_requests_than_replicas_are_not_multiplied_by_the_replicas():
    one = json.loads(run("recommend", "-H", "h100x1", "-t", "serve", "-m", "llama3-8b", "--requests", "1", "--json").stdout)
    eight = json.loads(run("recommend", "-H", "h100x8", "-t", "serve", "-m", "llama3-8b", "--requests", "1", "--json").stdout)
    single = one["recommendations"][0]["e2e_output_tokens_per_s"]
    top = eight["recommendations"][0]
    # was 1,391 tok/s on 1x8: one request's 174 tok/s counted on each of eight replicas
    assert top["e2e_output_tokens_per_s"] < 2 * single, (top["configuration"], top["e2e_output_tokens_per_s"], single)
    burst = eight["burst"]
    assert burst["output_tokens_per_s"] == pytest.approx(256 / burst["duration_s"], rel=1e-6)


def test_restating_the_catalog_ram_keeps_the_catalog_swap():
    from knowledge.catalog import resolve_platform, with_host

    listed = resolve_platform("rtx3090x8").host
    assert listed.swap_gib > 0
    assert resolve_platform(with_host("rtx3090x8", host_ram_gib=listed.host_ram_gib)).host.swap_gib == listed.swap_gib
    assert resolve_platform(with_host("rtx3090x8", host_ram_gib=512)).host.swap_gib == 0  # swap stated for other RAM


def test_serve_script_is_executable_and_a_config_json_is_served_from_its_folder(tmp_path):
    from models.serve_launch import hub_id

    assert run("recommend", "-H", "h100x1", "-t", "serve", "-m", "7b", "--out-dir", str(tmp_path / "o")).exit_code == 0
    assert (tmp_path / "o" / "serve.sh").stat().st_mode & 0o111  # ./serve.sh runs
    assert hub_id("/data/my-model/config.json", None) == "/data/my-model"  # vLLM loads a folder, not the JSON
    assert hub_id("cfg/q.json", None) == "./cfg" and hub_id("Qwen/Qwen3-8B", None) == "Qwen/Qwen3-8B"


def test_confirm_plan_repeats_the_hostfile_it_was_given(tmp_path):
    hosts = tmp_path / "hostfile"
    hosts.write_text("a slots=8\nb slots=8\n")
    r = run("confirm", "--dry-run", "--hardware", "rtx4090x8", "--task", "pretrain", "--model", "13b", "--hostfile", str(hosts))
    assert r.exit_code == 0, r.output
    line = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("advisor confirm")][0]
    assert f"--hostfile {hosts}" in line  # without it the command runs on one node


def test_serving_past_one_server_is_not_told_to_add_nodes():
    r = run("recommend", "-H", "rtx4090x8", "-t", "serve", "-m", "7b", "--gpus", "16")
    assert r.exit_code != 0 and "--nodes" not in r.output and "one server" in r.output


def test_every_error_line_of_predict_names_its_line_and_no_case_dump(tmp_path):
    cases = tmp_path / "c.jsonl"
    cases.write_text("\n".join(json.dumps(c) for c in [
        {"id": "ok", "task": "finetune", "hardware": "h100x1", "model": "7b"},
        {"id": "tp", "task": "serve", "hardware": "h100x1", "model": "7b", "tensor_parallel": 4},
        {"id": "wf", "task": "serve", "hardware": "h100x1", "model": "7b", "weight_format": "int4", "weight_bits": 16},
    ]) + "\n")
    r = run("predict", "--cases", str(cases), "--json")
    out = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert r.exit_code == 1 and "error" not in out[0]
    assert out[1]["error"].startswith("line 2: tensor_parallel=4")
    assert out[2]["error"].startswith("line 3: ") and "{" not in out[2]["error"]  # was the whole case as a Python dict


def test_the_hf_steps_load_with_the_attention_kernel_before_peft_wraps():
    from advisor.hints import hf_usage
    from knowledge.schema import TrainCase

    steps = hf_usage(TrainCase(id="q", hardware="h100x1", model="7b", task="finetune", method="qlora",
                               quantization="nf4"), "ds.json")
    attn = next(i for i, s in enumerate(steps) if "attn_implementation" in s)
    wrap = next(i for i, s in enumerate(steps) if "get_peft_model" in s)
    assert attn == 0 < wrap


def test_a_serving_band_over_unmeasured_links_is_no_narrower_than_trainings():
    from advisor.calibrate import measurements
    from advisor.predictor import rel_error_for
    from knowledge.catalog import resolve_platform
    from knowledge.platform_class import SERVING_MEASURED_CLASSES, platform_class

    served = {platform_class(resolve_platform(m.case["hardware"]))
              for m in measurements("all")[0] if m.case.get("task") == "serve"}
    assert served == set(SERVING_MEASURED_CLASSES)  # the constant says where the serving fit has runs
    box = resolve_platform("rtx4090x8")
    assert rel_error_for("serve", box, tensor_parallel=2) >= rel_error_for("pretrain", box) > 0.3  # was ±11%
    assert rel_error_for("serve", box, tensor_parallel=1) == rel_error_for("serve", resolve_platform("h100x1"), tensor_parallel=1)


def test_a_tensor_parallel_prefill_over_pcie_names_its_all_reduces(tmp_path):
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "p", "task": "serve", "hardware": "rtx4090x8", "model": "13b", "tensor_parallel": 2,
                                 "batch_size": 8, "prompt_len": 2048, "output_len": 16}) + "\n")
    d = json.loads(run("predict", "--cases", str(cases), "--json").stdout)
    b = d["breakdown"]
    # was compute + memory = 0.63 of a 2.3 s prefill, the rest unexplained
    assert b["prefill_communication_s"] > b["prefill_compute_s"]
    assert b["prefill_compute_s"] + b["prefill_memory_s"] + b["prefill_communication_s"] == pytest.approx(d["prefill_s"], rel=0.1)


def test_predict_warns_of_an_id_two_cases_share(tmp_path):
    cases = tmp_path / "c.jsonl"
    cases.write_text("".join(json.dumps({"id": "a", "task": "finetune", "hardware": "h100x1", "model": m}) + "\n"
                             for m in ("7b", "13b")))
    r = run("predict", "--cases", str(cases), "--json")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 2  # both answered
    assert "'a' (lines 1, 2)" in r.stderr


def test_compare_refuses_one_platform_twice_names_every_bad_batch_and_says_what_it_left_out(tmp_path):
    r = run("compare", "--hardware", "h100x1", "--vs", "h100x1", "--model", "7b", "--no-png")
    assert r.exit_code == 1 and "same platform" in r.output  # was "blue: h100x1 faster, red: h100x1 faster"
    r = run("compare", "--hardware", "h100x1", "--vs", "a100x1", "--model", "7b", "--batch", "0,-1", "--no-png")
    assert r.exit_code == 2 and "'0', '-1'" in r.output
    r = run("compare", "--hardware", "h100x1", "--vs", "a100x1", "--model", "7b", "--no-png", "--json")
    d = json.loads(r.stdout)
    assert 32768 in d["omitted_seq_lens"] and 32768 not in d["seq_lens"]  # Llama-2's 4k context: said, not silent


def test_confirm_of_a_serving_task_is_a_bad_choice_exit_2():
    r = run("confirm", "--task", "serve", "--dry-run", "--hardware", "h100x1")
    assert r.exit_code == 2 and "recommend --task serve" in r.output


def test_the_leanest_configuration_is_judged_by_the_limit_that_binds():
    # host RAM binds (a 13B full fine-tune's offload on a 100 GiB host): the leanest was picked by GPU memory alone,
    # offloading parameters too (260 GiB of host) where offloading nothing overfills its GPUs least
    d = json.loads(run("recommend", "-H", "rtx3090x8", "-t", "finetune", "-m", "13b", "--method", "full",
                       "--host-ram-gib", "100", "--json").stdout)
    assert d["nothing_fits"] and "offload opt+params" not in d["leanest"]["configuration"], d["leanest"]


def test_a_malformed_file_names_its_malformed_lines_at_once(tmp_path):
    cases = tmp_path / "c.jsonl"
    cases.write_text("\n".join([
        json.dumps({"id": "ok", "task": "finetune", "hardware": "h100x1", "model": "7b"}),
        json.dumps({"id": "b", "task": "serve", "hardware": "h100x1", "model": "7b", "batch_size": "8"}),
        "this is not json",
    ]) + "\n")
    r = run("predict", "--cases", str(cases), "--json")
    assert r.exit_code == 2  # the contract: a malformed file exits 2, naming the line and the field
    err = one_error(r)
    assert "line 2: field 'batch_size'" in err and "line 3: not JSON" in err  # was line 2 alone, one run per line


@pytest.mark.parametrize("flag", ["--max-tpot-ms", "--max-ttft-ms", "--rate"])
def test_a_negative_limit_states_the_rule_zero_also_breaks(flag: str) -> None:
    """-3 was told 'greater than or equal to 0', and 0 was then refused as not positive: one rule, one message."""
    for value in ("-3", "0"):
        r = run("recommend", "-H", "h100x1", "-t", "serve", "-m", "llama3-8b", flag, value)
        assert r.exit_code == 2 and f"{flag} must be a positive number, got {value}" in r.output, r.output
