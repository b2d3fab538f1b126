"""The prediction contract (shared/CONTRACT.md) through the real CLI: `advisor predict --cases F --json`.

Every test drives ``advisor.cli.app`` with Typer's CliRunner, in process, and checks the JSON lines
the contract promises: same order and ids, the prediction fields, one-line errors naming the bad
value and the closest valid names, exit 1 after all lines for per-case errors, exit 2 for malformed
files, and byte-identical output for identical input.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor import cli
from knowledge.catalog import gpus, resolve_platform

TRAIN_FIELDS = ("tokens_per_s", "step_time_s", "peak_mem_gib", "fits")
PHASES = ("forward_s", "backward_s", "optimizer_s", "communication_s", "offload_s")
MEMORY_ITEMS = ("weights_gib", "grads_gib", "optimizer_states_gib", "activations_gib", "buffers_gib")
LLAMA2_7B = {
    "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 32, "vocab_size": 32000,
}  # fmt: skip


def app():
    """The root app with its commands registered exactly once (``_register`` is not idempotent:
    a second call appends every command again)."""
    names = {c.name or c.callback.__name__ for c in cli.app.registered_commands}
    if "predict" not in names:
        cli._register()
    return cli.app


def run_predict(tmp_path: Path, lines: list, *extra: str, name: str = "cases.jsonl"):
    """Write ``lines`` (dicts, or raw strings written as they are) and run the contract command."""
    path = tmp_path / name
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    result = CliRunner().invoke(app(), ["predict", "--cases", str(path), "--json", *extra])
    return result


def out_lines(result) -> list[dict]:
    return [json.loads(x) for x in result.stdout.splitlines() if x.strip()]


def train(id_: str, **kw) -> dict:
    return {"id": id_, "hardware": "rtx4090x8", "model": "llama2-7b", "task": "finetune", **kw}


def assert_no_traceback(result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------------ shape of the output


def test_one_line_per_case_same_order_same_ids(tmp_path):
    ids = ["z-last-alphabetically", "a", "m", "serve-1", "0"]
    cases = [
        train(ids[0]),
        train(ids[1], task="pretrain", zero_stage=3, hardware="a800x8"),
        train(ids[2], method="qlora", micro_batch_size=2),
        {"id": ids[3], "hardware": "h100x1", "model": "llama3-8b", "task": "serve", "batch_size": 4},
        train(ids[4], engine="pytorch", method="full", hardware="h100x1", model="tinyllama-1.1b"),
    ]
    r = run_predict(tmp_path, cases)
    assert r.exit_code == 0, r.output
    rows = out_lines(r)
    assert [row["id"] for row in rows] == ids
    assert not any("error" in row for row in rows)


def test_a_file_of_no_cases_answers_nothing_and_says_so(tmp_path):
    result = run_predict(tmp_path, ["", "  "])
    assert_no_traceback(result)
    assert result.exit_code == 0 and result.stdout == ""
    assert "no cases" in result.stderr


def test_train_case_fields_and_breakdown(tmp_path):
    r = run_predict(tmp_path, [train("t", micro_batch_size=2, grad_accum=3, seq_len=1024, zero_stage=2)])
    assert r.exit_code == 0, r.output
    (row,) = out_lines(r)
    for f in TRAIN_FIELDS:
        assert f in row
    assert isinstance(row["fits"], bool)
    for f in ("tokens_per_s", "step_time_s", "peak_mem_gib"):
        assert isinstance(row[f], float) and math.isfinite(row[f]) and row[f] > 0
    # tokens_per_s is micro_batch x seq_len x gpus x grad_accum / step time (contract definition)
    assert row["tokens_per_s"] == pytest.approx(2 * 1024 * 8 * 3 / row["step_time_s"], rel=1e-9)
    b = row["breakdown"]
    for k in PHASES + MEMORY_ITEMS:
        assert k in b and b[k] >= 0, k
    # the phases add up to the step and the memory items to (at most) the peak
    assert sum(v for k, v in b.items() if k.endswith("_s")) == pytest.approx(row["step_time_s"], rel=1e-9)
    assert sum(b[k] for k in MEMORY_ITEMS) <= row["peak_mem_gib"] + 1e-9
    assert sum(v for k, v in b.items() if k.endswith("_gib")) == pytest.approx(row["peak_mem_gib"], rel=1e-9)


def test_serve_case_fields(tmp_path):
    r = run_predict(tmp_path, [{"id": "s", "hardware": "a100x1", "model": "llama2-13b", "task": "serve",
                                "batch_size": 8, "prompt_len": 256, "output_len": 64}])
    assert r.exit_code == 0, r.output
    (row,) = out_lines(r)
    for f in ("prefill_s", "decode_step_s", "decode_tokens_per_s", "e2e_output_tokens_per_s", "peak_mem_gib", "fits"):
        assert f in row, f
    assert row["decode_tokens_per_s"] == pytest.approx(8 / row["decode_step_s"], rel=1e-12)


# ------------------------------------------------------------------------------- per-case errors


@pytest.mark.parametrize(
    "case, bad, closest",
    [
        (train("hw", hardware="rtx4091x8"), "rtx4091", "rtx4090"),
        (train("gpu", hardware="h10x2"), "h10", "h100"),
        (train("model", model="llama2-7c"), "llama2-7c", "llama2-7b"),
        (train("model2", model="mistral-7"), "mistral-7", "mistral-7b"),
    ],
    ids=["unknown-gpu", "unknown-gpu-short", "unknown-model", "unknown-model-2"],
)
def test_unknown_names_give_error_line_with_closest(tmp_path, case, bad, closest):
    good = train("good")
    r = run_predict(tmp_path, [good, case, train("good2")])
    assert r.exit_code == 1
    assert_no_traceback(r)
    rows = out_lines(r)
    assert [row["id"] for row in rows] == ["good", case["id"], "good2"]
    assert "tokens_per_s" in rows[0] and "tokens_per_s" in rows[2]  # the other cases still ran
    err = rows[1]
    assert set(err) == {"id", "error"}
    assert "\n" not in err["error"]
    assert bad in err["error"] and closest in err["error"]


def test_hardware_without_count_names_the_value_and_a_close_platform(tmp_path):
    r = run_predict(tmp_path, [train("hw", hardware="rtx4090")])
    assert r.exit_code == 1
    (err,) = out_lines(r)
    assert "'rtx4090'" in err["error"] and "rtx4090x" in err["error"]


@pytest.mark.parametrize(
    "case, words",
    [
        (train("off0", task="pretrain", method="full", offload="optimizer", zero_stage=0), ("optimizer", "zero_stage")),
        (train("offp", task="pretrain", method="full", offload="optimizer+params", zero_stage=2), ("optimizer+params", "3")),
        (train("qint8", method="qlora", quantization="int8"), ("qlora", "int8")),
        (train("lora-nf4", method="lora", quantization="nf4"), ("nf4", "qlora")),
        (train("pt-z2", engine="pytorch", zero_stage=2), ("zero_stage", "deepspeed")),
        (train("gpus", gpus=16), ("16", "8")),
        (train("nvlink", hardware="rtx4090x8-nvlink"), ("rtx4090", "NVLink")),
        (train("target", lora_targets=["q_proj", "w_proj"]), ("w_proj", "q_proj")),
        (train("tp", task="serve", tensor_parallel=3, hardware="a800x8"), ("tensor_parallel", "3")),
    ],
    ids=lambda v: v["id"] if isinstance(v, dict) else None,
)
def test_impossible_combinations_give_error_line(tmp_path, case, words):
    r = run_predict(tmp_path, [case, train("ok")])
    assert r.exit_code == 1
    assert_no_traceback(r)
    rows = out_lines(r)
    assert len(rows) == 2 and rows[1]["id"] == "ok" and "tokens_per_s" in rows[1]
    assert set(rows[0]) == {"id", "error"} and rows[0]["id"] == case["id"]
    assert "\n" not in rows[0]["error"]
    for w in words:
        assert w in rows[0]["error"], (w, rows[0]["error"])


def test_errors_are_written_after_every_other_line(tmp_path):
    cases = [train(f"c{i}", hardware=("nope9x1" if i % 3 == 0 else "a800x8")) for i in range(9)]
    r = run_predict(tmp_path, cases)
    assert r.exit_code == 1
    rows = out_lines(r)
    assert [x["id"] for x in rows] == [c["id"] for c in cases]
    assert [("error" in x) for x in rows] == [i % 3 == 0 for i in range(9)]


def test_model_path_with_nul_byte_is_a_case_error(tmp_path):
    r = run_predict(tmp_path, [train("nul", model="x\x00.json"), train("ok")])
    assert r.exit_code == 1
    assert_no_traceback(r)
    assert [row["id"] for row in out_lines(r)] == ["nul", "ok"]


def test_overlong_model_path_is_a_case_error(tmp_path):
    r = run_predict(tmp_path, [train("long", model="a" * 300 + ".json"), train("ok")])
    assert r.exit_code == 1
    assert_no_traceback(r)
    assert [row["id"] for row in out_lines(r)] == ["long", "ok"]


@pytest.mark.parametrize("case", [
    train("mb", micro_batch_size=10**400),
    train("h", model={**LLAMA2_7B, "hidden_size": 10**400, "num_attention_heads": 1, "num_key_value_heads": 1}),
], ids=["micro_batch", "hidden_size"])
def test_huge_integers_do_not_crash(tmp_path, case):
    r = run_predict(tmp_path, [case, train("ok")])
    assert_no_traceback(r)
    assert [row["id"] for row in out_lines(r)] == [case["id"], "ok"]


# ------------------------------------------------------------------------------- malformed files


@pytest.mark.parametrize(
    "lines, line_no, field",
    [
        ([train("a"), '{"id": "b", "hardware": ', train("c")], 2, None),
        ([train("a"), train("b"), "[1, 2]"], 3, None),
        ([train("a"), train("b", micro_batch_size="two")], 2, "micro_batch_size"),
        ([train("a", recompute="sometimes")], 1, "recompute"),
        ([train("a"), train("b"), train("c", hardware=8)], 3, "hardware"),
        ([train("a", lora_targets="q_proj")], 1, "lora_targets"),
        ([{"id": 7, "hardware": "h100x1", "model": "7b", "task": "pretrain"}], 1, "id"),
    ],
    ids=["not-json", "not-object", "int-as-text", "bool-as-text", "str-as-int", "list-as-str", "id-int"],
)
def test_malformed_file_exits_2_naming_line_and_field(tmp_path, lines, line_no, field):
    r = run_predict(tmp_path, lines)
    assert r.exit_code == 2, r.output
    assert_no_traceback(r)
    assert r.stdout == ""  # rejected whole: no prediction lines
    msg = r.stderr.strip()
    assert len(msg.splitlines()) == 1
    assert f"line {line_no}" in msg
    if field:
        assert field in msg


@pytest.mark.parametrize("bad", [{"method": 5}, {"zero_stage": "two"}], ids=["method-int", "zero-str"])
def test_wrong_type_for_literal_field_is_malformed(tmp_path, bad):
    r = run_predict(tmp_path, [train("a", **bad)])
    assert r.exit_code == 2


def test_deeply_nested_json_is_malformed(tmp_path):
    r = run_predict(tmp_path, ["[" * 100_000])
    assert r.exit_code == 2
    assert_no_traceback(r)


def test_missing_cases_file_exits_2_one_line(tmp_path):
    r = CliRunner().invoke(app(), ["predict", "--cases", str(tmp_path / "absent.jsonl"), "--json"])
    assert r.exit_code == 2
    assert_no_traceback(r)
    assert len(r.stderr.strip().splitlines()) == 1 and "absent.jsonl" in r.stderr


# -------------------------------------------------------------------------------- names and forms


@pytest.mark.parametrize("alias, name", [("7b", "llama2-7b"), ("13b", "llama2-13b"), ("70b", "llama2-70b")])
def test_size_aliases_are_llama2(tmp_path, alias, name):
    r = run_predict(tmp_path, [train("alias", model=alias, task="pretrain", zero_stage=3, hardware="a800x8"),
                               train("name", model=name, task="pretrain", zero_stage=3, hardware="a800x8")])
    assert r.exit_code == 0, r.output
    a, b = out_lines(r)
    assert {k: v for k, v in a.items() if k != "id"} == {k: v for k, v in b.items() if k != "id"}


@pytest.mark.parametrize("count", [1, 3, 4, 7, 16])
def test_any_catalog_gpu_with_any_count_parses(tmp_path, count):
    ids = sorted({g.id for g in gpus().values()})
    cases = [{"id": g, "hardware": f"{g}x{count}", "model": "tinyllama-1.1b", "task": "pretrain"} for g in ids]
    cases.append({"id": "l40sx4", "hardware": "l40sx4", "model": "tinyllama-1.1b", "task": "pretrain"})
    r = run_predict(tmp_path, cases)
    assert r.exit_code == 0, r.output
    rows = out_lines(r)
    assert [x["id"] for x in rows] == [c["id"] for c in cases]
    for g, row in zip(ids, rows):
        # the capacity reported is the catalog GPU's, so the id resolved to the right GPU
        assert row["capacity_gib"] == gpus()[g].memory_gib
        assert row["tokens_per_s"] > 0


def test_platform_parse_gpu_and_count():
    p = resolve_platform("l40sx4")
    assert (p.gpu.id, p.count, p.interconnect) == ("l40s", 4, "pcie")
    p = resolve_platform("rtx3090x8-pcie")
    assert (p.gpu.id, p.count, p.interconnect) == ("rtx3090", 8, "pcie-no-p2p")  # GeForce: through host memory
    assert resolve_platform("rtx3090x8").interconnect == "nvlink-pairs"
    assert resolve_platform("h100x1").interconnect == "single"


def test_rtx3090_pcie_variant_is_slower_on_communication(tmp_path):
    base = dict(task="pretrain", method="full", model="llama2-7b", zero_stage=3, seq_len=512)
    r = run_predict(tmp_path, [train("nv", hardware="rtx3090x8", **base), train("pcie", hardware="rtx3090x8-pcie", **base)])
    assert r.exit_code == 0, r.output
    nv, pcie = out_lines(r)
    # NVLink bridge pairs still cross PCIe between pairs: the ring is PCIe-bound either way, but the
    # plain-PCIe box can never be faster, and memory does not depend on the link
    assert pcie["step_time_s"] >= nv["step_time_s"]
    assert pcie["peak_mem_gib"] == nv["peak_mem_gib"]
    assert pcie["breakdown"]["communication_s"] > 0


def test_inline_architecture_matches_catalog(tmp_path):
    r = run_predict(tmp_path, [train("inline", model=dict(LLAMA2_7B)), train("catalog", model="llama2-7b")])
    assert r.exit_code == 0, r.output
    a, b = out_lines(r)
    for f in TRAIN_FIELDS:
        assert a[f] == b[f], f
    assert a["breakdown"] == b["breakdown"]


def test_inline_moe_architecture(tmp_path):
    moe = {**LLAMA2_7B, "intermediate_size": 14336, "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2}
    r = run_predict(tmp_path, [train("moe", model=moe, task="pretrain", method="full", hardware="h100x8", zero_stage=3),
                               train("cat", model="mixtral-8x7b", task="pretrain", method="full", hardware="h100x8", zero_stage=3)])
    assert r.exit_code == 0, r.output
    a, b = out_lines(r)
    assert a["peak_mem_gib"] == pytest.approx(b["peak_mem_gib"], rel=1e-12)
    assert a["tokens_per_s"] == pytest.approx(b["tokens_per_s"], rel=1e-12)


def test_inline_architecture_errors_name_the_field(tmp_path):
    r = run_predict(tmp_path, [train("bad", model={**LLAMA2_7B, "num_key_value_heads": 5})])
    assert r.exit_code == 1
    (row,) = out_lines(r)
    assert "num_key_value_heads" in row["error"] and "\n" not in row["error"]


def test_hf_config_json_path(tmp_path):
    cfg = {**LLAMA2_7B, "model_type": "llama", "architectures": ["LlamaForCausalLM"], "rms_norm_eps": 1e-5,
           "max_position_embeddings": 4096, "tie_word_embeddings": False, "torch_dtype": "float16"}
    path = tmp_path / "llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg))
    r = run_predict(tmp_path, [train("file", model=str(path)), train("dir", model=str(path.parent)),
                               train("catalog", model="llama2-7b")])
    assert r.exit_code == 0, r.output
    f, d, c = out_lines(r)
    for f_ in TRAIN_FIELDS:
        assert f[f_] == c[f_] and d[f_] == c[f_], f_


def test_hf_config_missing_keys_is_a_case_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt2", "n_embd": 768}))
    r = run_predict(tmp_path, [train("gpt2", model=str(path))])
    assert r.exit_code == 1
    (row,) = out_lines(r)
    # GPT-2's n_embd is its hidden_size; what it lacks is named in both tongues, never taken from a class default
    err = row["error"]
    assert "num_hidden_layers (n_layer)" in err and "hidden_size" not in err and "\n" not in err
    path.write_text(json.dumps({"model_type": "gpt2", "vocab_size": 50257}))
    (row,) = out_lines(run_predict(tmp_path, [train("gpt2", model=str(path))]))
    assert "hidden_size (n_embd)" in row["error"]


# ------------------------------------------------------------------------------- profile, determinism


def test_missing_profile_exits_nonzero_with_one_line(tmp_path):
    r = run_predict(tmp_path, [train("a")], "--profile", str(tmp_path / "nope.json"))
    assert r.exit_code != 0
    assert_no_traceback(r)
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope.json" in lines[0]


def test_broken_profile_exits_nonzero_with_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"gpu_name": "x"}')
    r = run_predict(tmp_path, [train("a")], "--profile", str(bad))
    assert r.exit_code != 0
    assert_no_traceback(r)
    assert len(r.stderr.strip().splitlines()) == 1 and "bad.json" in r.stderr


def test_deterministic_byte_identical(tmp_path):
    cases = [
        train("a", zero_stage=2, micro_batch_size=4),
        train("b", task="pretrain", method="full", model="mixtral-8x7b", hardware="h100x8", zero_stage=3, recompute=True),
        train("c", method="qlora", model="70b", hardware="a800x8", flash_attention=False, seq_len=512),
        {"id": "d", "hardware": "h200x2", "model": "qwen2.5-72b", "task": "serve", "tensor_parallel": 2, "output_len": 32},
        train("e", hardware="nonexistentx8"),
    ]
    r1 = run_predict(tmp_path, cases, name="one.jsonl")
    r2 = run_predict(tmp_path, cases, name="two.jsonl")
    assert r1.exit_code == r2.exit_code == 1
    assert r1.stdout == r2.stdout and len(r1.stdout.splitlines()) == 5
