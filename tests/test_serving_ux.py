"""Serving as a user meets it: placement search, SLO search, load simulation, launch lines, CLI messages."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from advisor.predictor import Predictor
from advisor.serve_search import (
    Config, Job, placements, predict_point, search_serving, serve_load, weight_formats_for,
)
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.errors import AdvisorError
from models.serve_launch import Launch, hub_id, launch_lines, launch_script, per_replica
from models.serve_load import poisson_arrivals, simulate


def job(hw="l40sx4", model="llama2-7b", prompt=512, output=256, engine="vllm") -> Job:
    return Job(hw, model, resolve_platform(hw), resolve_model(model), prompt, output, engine)


@pytest.fixture(scope="module")
def predictor():
    return Predictor()


# --- launch lines (pure) -------------------------------------------------------------------------


def test_vllm_line_has_every_flag_of_the_pick():
    line = launch_lines(Launch("vllm", "meta-llama/Llama-2-7b-hf", 2, 4, 64, 768, "fp8", 8))[-1]
    assert line.startswith("vllm serve meta-llama/Llama-2-7b-hf ")
    for flag in ("--tensor-parallel-size 2", "--data-parallel-size 4", "--max-num-seqs 64", "--max-model-len 768",
                 "--gpu-memory-utilization 0.90", "--quantization fp8", "--kv-cache-dtype fp8"):
        assert flag in line, flag
    plain = launch_lines(Launch("vllm", "m", 1, 1, 8, 100))
    assert plain == ["vllm serve m --tensor-parallel-size 1 --max-num-seqs 8 --max-model-len 100 --gpu-memory-utilization 0.90"]


def test_int4_needs_a_quantized_checkpoint_and_says_so():
    lines = launch_lines(Launch("vllm", "m", 1, 1, 8, 100, "int4"))
    assert lines[0].startswith("# ") and "AWQ" in lines[0] and "--quantization awq" in lines[-1]
    assert "--quantization bitsandbytes" in launch_lines(Launch("vllm", "m", 1, 1, 8, 100, "bnb-nf4"))[-1]


def test_sglang_and_trtllm_use_their_own_flags():
    sg = launch_lines(Launch("sglang", "m", 2, 2, 32, 4096, "fp8", 8))[-1]
    assert sg.startswith("python -m sglang.launch_server --model-path m --tp 2 --dp 2 --max-running-requests 32")
    assert "--context-length 4096" in sg and "--quantization fp8" in sg and "--kv-cache-dtype fp8_e5m2" in sg
    tr = launch_lines(Launch("trtllm", "m", 2, 2, 32, 4096, "fp8", 8))
    assert any(x.startswith("#") and "ModelOpt" in x for x in tr)  # quantization is a checkpoint step there
    cmds = [x for x in tr if x.startswith("CUDA_VISIBLE_DEVICES")]
    assert cmds[0].startswith("CUDA_VISIBLE_DEVICES=0,1 trtllm-serve \"$MODEL\" --tp_size 2 --max_batch_size 32 --max_seq_len 4096")
    assert cmds[1].startswith("CUDA_VISIBLE_DEVICES=2,3 ") and "--port 8001" in cmds[1]
    assert "--quantization" not in " ".join(cmds)


def test_launch_rejects_bad_values_and_script_is_a_script():
    with pytest.raises(ValueError, match="engine"):
        launch_lines(Launch("tgi", "m", 1, 1, 1, 1))
    with pytest.raises(ValueError, match="weight format"):
        launch_lines(Launch("vllm", "m", 1, 1, 1, 1, "int3"))
    script = launch_script(Launch("vllm", "m", 1, 1, 1, 10))
    assert script.startswith("#!/usr/bin/env bash\n") and script.endswith("\n") and "vllm serve m" in script


def test_hub_id_from_the_catalog_source():
    arch = resolve_model("llama3-8b")
    assert hub_id(arch.name, arch.source) == "meta-llama/Meta-Llama-3-8B"
    assert hub_id("my-model", "inline") == "my-model"
    assert per_replica(257, 4) == 65 and per_replica(1, 8) == 1


# --- load simulation (pure) --------------------------------------------------------------------------


def test_simulation_one_request_alone_is_prefill_plus_decode_steps():
    r = simulate([0.0], 100, 11, 8, lambda k: 0.5, lambda b, kv: 0.01)
    assert r["mean_ttft_s"] == pytest.approx(0.5)
    assert r["mean_tpot_s"] == pytest.approx(0.01)
    assert r["duration_s"] == pytest.approx(0.5 + 10 * 0.01)


def test_simulation_queueing_shows_in_ttft():
    # two requests, room for one: the second waits for the first to finish
    r = simulate([0.0, 0.0], 100, 3, 1, lambda k: 1.0, lambda b, kv: 0.1)
    assert r["mean_ttft_s"] == pytest.approx((1.0 + (1.0 + 0.2 + 1.0)) / 2)
    fast = simulate(poisson_arrivals(200, 1.0), 100, 50, 64, lambda k: 0.01 * k, lambda b, kv: 0.01)
    slow = simulate(poisson_arrivals(200, 1000.0), 100, 50, 64, lambda k: 0.01 * k, lambda b, kv: 0.01)
    assert slow["mean_ttft_s"] > 10 * fast["mean_ttft_s"]  # an overloaded engine queues
    assert poisson_arrivals(5, 2.0) == poisson_arrivals(5, 2.0)  # fixed seed


# --- placement search ------------------------------------------------------------------------------


def test_placements_are_tp_times_replicas():
    a, p = resolve_model("llama2-7b"), resolve_platform("l40sx4")
    assert placements(a, p) == [(1, 4), (2, 2), (4, 1)]
    assert placements(a, p, gpus=2) == [(1, 2), (2, 1)]
    with pytest.raises(AdvisorError, match="exceeds"):
        placements(a, p, gpus=8)


def test_fp8_only_where_the_gpu_has_it_and_bitsandbytes_only_when_asked():
    assert "fp8" in weight_formats_for(resolve_platform("h100x1").gpu)
    assert "fp8" not in weight_formats_for(resolve_platform("a100x1").gpu)
    assert not any(f.startswith("bnb") for f in weight_formats_for(resolve_platform("h100x1").gpu))
    assert weight_formats_for(resolve_platform("h100x1").gpu, ("bnb-nf4",)) == ("bnb-nf4",)
    with pytest.raises(AdvisorError, match="FP8"):
        weight_formats_for(resolve_platform("a100x1").gpu, ("fp8",))


def test_tp1_on_l40sx4_counts_four_replicas(predictor):
    j = job()
    four = predict_point(predictor, j, Config(1, 4, "bf16", 16, 16))
    one = predict_point(predictor, j, Config(1, 1, "bf16", 16, 16))
    assert four.tokens_per_s == pytest.approx(4 * one.tokens_per_s, rel=0.02)
    res = search_serving(predictor, j, top=3)
    top = res.picks[0].config
    assert top.tensor_parallel * top.replicas == 4  # the whole box serves
    assert all(p.tokens_per_s >= q.tokens_per_s * 0.99 for p, q in zip(res.picks, res.picks[1:]))


def test_slo_limits_are_met_by_every_pick(predictor):
    res = search_serving(predictor, job(), max_tpot_ms=40, max_ttft_ms=2000)
    assert res.picks
    assert all(p.tpot_s * 1e3 <= 40 and p.ttft_s * 1e3 <= 2000 for p in res.picks)
    free = search_serving(predictor, job())
    assert free.picks[0].tokens_per_s >= res.picks[0].tokens_per_s


def test_nothing_meets_gives_closest_miss_and_what_would_meet(predictor):
    # a limit just under the fastest TPOT one H100 can give Llama-2-70B: nothing meets it there
    best = min(p.tpot_s for p in search_serving(predictor, job("h100x1", "llama2-70b")).points) * 1e3
    limit = 0.9 * best
    res = search_serving(predictor, job("h100x1", "llama2-70b"), max_tpot_ms=limit)
    assert not res.picks and res.closest_miss
    assert res.closest_miss["tpot_ms"] > limit and "misses by" in res.closest_miss["text"]
    closest = res.closest_miss["tpot_ms"]
    assert closest == pytest.approx(best)
    assert all(p.tpot_s * 1e3 >= closest - 1e-9 for p in res.points)  # it is the smallest violation
    assert res.would_meet and all(w["tpot_ms"] <= limit for w in res.would_meet if w["change"] != "none found")
    assert any("twice the GPUs" in w["change"] for w in res.would_meet)


def test_a_rate_load_is_deterministic_and_queues(predictor):
    j = job()
    c = Config(1, 4, "bf16", 16, 32)
    light = serve_load(predictor, j, c, requests=200, rate_per_s=1.0)
    heavy = serve_load(predictor, j, c, requests=200, rate_per_s=500.0)
    assert light == serve_load(predictor, j, c, requests=200, rate_per_s=1.0)
    assert heavy["mean_ttft_s"] > light["mean_ttft_s"]
    assert heavy["output_tokens_per_s"] > light["output_tokens_per_s"]
    burst = serve_load(predictor, j, c, requests=256)
    assert burst["arrivals"] == "all at once" and burst["mean_ttft_s"] > 0


# --- the command -------------------------------------------------------------------------------------


def run(*args):
    from advisor import cli

    if "recommend" not in {c.name for c in cli.app.registered_commands}:
        cli._register()
    return CliRunner().invoke(cli.app, list(args), terminal_width=80)


def test_recommend_serve_table_names_engine_placement_and_launch_line():
    r = run("recommend", "-H", "l40sx4", "-t", "serve", "-m", "llama2-7b", "--top", "3")
    assert r.exit_code == 0, r.output
    assert "vLLM" in r.output and "TPxR" in r.output and "1x4" in r.output and "TTFT = time from" in r.output
    table = [ln for ln in r.output.splitlines() if ln.startswith(("┏", "│", "└"))]
    assert table and max(len(ln) for ln in table) <= 80
    assert "vllm serve meta-llama/Llama-2-7b-hf --tensor-parallel-size 1 --data-parallel-size 4" in r.output


def test_recommend_serve_json_and_out_dir(tmp_path):
    r = run("recommend", "-H", "h100x2", "-t", "serve", "-m", "llama3-8b", "--engine", "sglang", "--json",
            "--out-dir", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["engine"] == "sglang" and d["slo_statistic"] == "mean" and "TPOT" in d["definitions"]
    c = d["recommendations"][0]["configuration"]
    assert c["tensor_parallel"] * c["replicas"] == 2
    assert (tmp_path / "o" / "serve.sh").read_text() == d["launch"]["script"]
    assert json.loads((tmp_path / "o" / "serve.json").read_text())["recommendations"] == d["recommendations"]
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["serve.json", "serve.sh"]


def test_recommend_serve_nothing_meets_in_json():
    # 5 ms per token is below the roofline of one H100 for 70B even at 4 bits (35 GB / 3.35 TB/s = 10 ms)
    r = run("recommend", "-H", "h100x1", "-t", "serve", "-m", "llama2-70b", "--max-tpot-ms", "5", "--json")
    assert r.exit_code == 1, r.output  # no deployment to recommend: the answer is no, as when nothing fits
    d = json.loads(r.stdout)
    assert d["recommendations"] == [] and d["closest_miss"]["tpot_ms"] > 10 and d["would_meet"]
    r = run("recommend", "-H", "h100x1", "-t", "serve", "-m", "llama2-70b", "--max-tpot-ms", "5")
    assert "Closest miss" in r.output and "Nothing fits" not in r.output


@pytest.mark.parametrize("args,word", [
    (["--engine", "tgi"], "vllm, sglang, trtllm"),
    (["--weight-format", "int3"], "bf16, fp8"),
    (["--max-tpot-ms", "0"], "positive"),
    (["--rate", "0"], "positive"),
    (["--max-ttft-ms", "-5"], "-5"),
])
def test_recommend_serve_bad_input_is_one_line_exit_2(args, word):
    r = run("recommend", "-H", "h100x1", "-t", "serve", "-m", "7b", *args)
    assert r.exit_code == 2, r.output
    assert word in r.output and "Traceback" not in r.output


def test_compare_masks_cells_past_the_context():
    r = run("compare", "--hardware", "a100x1", "--vs", "h20x1", "--model", "llama2-13b", "--seq", "512,8192",
            "--json", "--no-png")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert [row[1] for row in d["beyond_context"]] == [True] * len(d["batch_sizes"])
    assert not any(row[0] for row in d["beyond_context"])
    assert any("4,096-token context" in line for line in d["regions"])
    r = run("compare", "--hardware", "a100x1", "--vs", "h20x1", "--model", "llama2-13b", "--seq", "512,8192", "--no-png")
    assert "> context" in r.output and "past the model's" in r.output


def test_search_fills_the_kv_pool_not_only_powers_of_two(predictor):
    """The largest batch that fits is searched (the pool full, as an engine tuned for throughput runs it): for each
    (placement, format, KV dtype) the largest fitting batch is one whose next batch does not fit, and it is the pick of
    a throughput search when more sequences than the pool holds are waiting."""
    j = job(hw="h100x1", model="llama3.1-8b", prompt=128, output=2048, engine="trtllm")
    res = search_serving(predictor, j, weight_formats=("fp8",), kv_bits=(8,), requests=3000)
    largest = max(p.config.max_num_seqs for p in res.points)
    assert largest & (largest - 1), f"largest batch searched {largest} is a power of two: the pool was not filled"
    assert predict_point(predictor, j, Config(1, 1, "fp8", 8, largest)).fits
    assert not predict_point(predictor, j, Config(1, 1, "fp8", 8, largest + 1)).fits
    assert res.picks[0].config.max_num_seqs == largest


def test_a_batch_beyond_the_engine_pool_says_the_rest_queue_not_a_crash(tmp_path):
    """vLLM runs what its KV pool holds and queues the rest: the table says so instead of 'would need N GiB'."""
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "big", "hardware": "h100x1", "model": "llama3.1-8b", "task": "serve",
                                 "batch_size": 2048, "prompt_len": 4096, "output_len": 512}) + "\n")
    r = run("predict", "--cases", str(cases))
    cell = " ".join(line.split("│")[4].strip() for line in r.stdout.splitlines() if line.count("│") >= 7)
    assert " ".join(cell.split()) == "vllm pool holds 98 at once; the rest queue", r.stdout
    assert "would need" not in r.stdout


# --- a one-token output has no TPOT (benchmark_serving's definition) -----------------------------


def test_a_one_token_output_prints_no_tpot_and_a_tpot_limit_on_it_is_refused(predictor):
    r = run("recommend", "-H", "h100x1", "-t", "serve", "-m", "7b", "--output-len", "1", "--requests", "50", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["recommendations"][0]["tpot_s"] is None  # was the decode step: a time per token no request has
    assert d["burst"]["mean_tpot_s"] is None and d["burst"]["output_tokens_per_s"] > 0  # was a ZeroDivisionError
    r = run("recommend", "-H", "h100x1", "-t", "serve", "-m", "7b", "--output-len", "1")
    assert "TPOT" not in r.output.split("Top pick:")[1].split("\n")[0]
    r = run("recommend", "-H", "h100x1", "-t", "serve", "-m", "7b", "--output-len", "1", "--max-tpot-ms", "30")
    assert r.exit_code != 0 and "--output-len" in r.output and "Traceback" not in r.output
    one, two = (predict_point(predictor, job("h100x1", "7b", output=n), Config(1, 1, "bf16", 16, 8)) for n in (1, 2))
    assert one.tpot_s is None and two.tpot_s > 0


def test_a_quantized_checkpoint_is_required_not_the_16_bit_hub_id():
    """int4 on vLLM and anything quantized on TensorRT-LLM load another checkpoint: the command serves "$MODEL", which
    the script demands before it runs; bf16 and vLLM's on-load fp8 keep the hub id."""
    import subprocess

    from models.serve_launch import Launch, launch_script

    awq = launch_lines(Launch("vllm", "org/m", 1, 1, 8, 100, "int4"))
    assert 'vllm serve "$MODEL"' in awq[-1] and "org/m" not in awq[-1]
    assert any(line.startswith('MODEL="${MODEL:?') and "org/m" in line for line in awq)
    trt = launch_lines(Launch("trtllm", "org/m", 1, 2, 8, 100, "bf16", kv_bits=8))
    assert all('"$MODEL"' in line for line in trt if line.startswith("CUDA_VISIBLE_DEVICES"))
    assert "vllm serve org/m" in launch_lines(Launch("vllm", "org/m", 1, 1, 8, 100, "fp8", kv_bits=8))[-1]
    assert "vllm serve org/m" in launch_lines(Launch("vllm", "org/m", 1, 1, 8, 100, "bnb-nf4"))[-1]
    run = subprocess.run(["bash", "-c", launch_script(Launch("vllm", "org/m", 1, 1, 8, 100, "int4"))],
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert run.returncode != 0 and "set MODEL to the int4 checkpoint of org/m" in run.stderr
