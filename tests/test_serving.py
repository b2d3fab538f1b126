"""Serving model physics: each test states a roofline fact the predictions must obey, and can fail."""

from __future__ import annotations

import json
import math

import pytest
import typer
from typer.testing import CliRunner

from knowledge.catalog import resolve_model, resolve_platform
from advisor.predictor import Predictor
from knowledge.efficiency import Efficiencies
from knowledge.errors import AdvisorError
from knowledge.schema import ServeCase, ServePrediction
from knowledge.units import GBps, GiB, TFLOP
from models.architecture import linears, param_counts
from advisor.commands.compare import serving_comparison
from models.compare import describe_regions
from models.calibration import from_fit
from models.serve_memory import weight_bytes
from models.serve_setup import expected_experts, make_setup
from models.serving import continuous_batching, decode_step_s, pass_time, predict_serving

EFF = Efficiencies()  # the priors: physics tests must not move when the correction is refitted


def cal(hardware: str, eff: Efficiencies = EFF):
    """The calibration of ``hardware`` on ``eff`` against the datasheet (no probe ratios)."""
    return from_fit(resolve_platform(hardware), eff)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def serve(hardware: str, model: str, eff: Efficiencies = EFF, **kw) -> ServePrediction:
    case = ServeCase(id="t", hardware=hardware, model=model, task="serve", **kw)
    return predict_serving(case, resolve_model(model), resolve_platform(hardware), cal(hardware, eff))


def test_decode_batch1_is_bandwidth_bound_at_weight_bytes_over_bandwidth():
    p = serve("a100x1", "llama2-13b")
    bw = resolve_platform("a100x1").gpu.memory_bandwidth_gbs * GBps
    s = make_setup(resolve_model("llama2-13b"), resolve_platform("a100x1"), cal("a100x1"))
    w = weight_bytes(s)
    floor = pass_time(s, 1, 1, 512, decode=True).small_kernels_s
    assert p.breakdown.decode_compute_s == 0.0
    assert p.breakdown.decode_weights_s + floor > 0.9 * p.decode_step_s
    assert p.decode_step_s >= w / bw  # never beats the roofline
    # reading the weights once at the streaming efficiency, the small kernels' floor, KV and graph replay
    assert p.decode_step_s == pytest.approx(w / (bw * EFF.weight_stream_eff) + floor, rel=0.08)


def test_prefill_of_long_prompt_is_compute_bound():
    b = serve("h100x1", "llama2-7b", prompt_len=8192).breakdown
    # unfused eager norms/RoPE/SwiGLU stay bandwidth-bound, but the GEMMs and attention dominate
    assert b.prefill_compute_s > 0.7 * (b.prefill_compute_s + b.prefill_memory_s)
    short = serve("h100x1", "llama2-7b", prompt_len=16).breakdown
    assert short.prefill_compute_s < 0.5 * (short.prefill_compute_s + short.prefill_memory_s)


def test_gqa_shrinks_kv_cache_by_heads_over_kv_heads():
    gqa = resolve_model("llama2-70b")
    mha = gqa.model_dump() | {"num_key_value_heads": gqa.num_attention_heads, "name": "mha"}
    kw = dict(batch_size=8, prompt_len=2048)
    p_gqa = serve("h100x8", "llama2-70b", tensor_parallel=1, **kw)
    case = ServeCase(id="t", hardware="h100x8", model=mha, task="serve", **kw)
    p_mha = predict_serving(case, resolve_model(mha), resolve_platform("h100x8"), cal("h100x8"))
    ratio = gqa.num_attention_heads / gqa.num_key_value_heads
    assert p_mha.breakdown.kv_cache_gib / p_gqa.breakdown.kv_cache_gib == pytest.approx(ratio, rel=1e-9)


def test_moe_decode_reads_top_k_experts_but_holds_all():
    arch = resolve_model("mixtral-8x7b")
    p = serve("h100x1", "mixtral-8x7b", weight_bits=4)  # 16-bit Mixtral does not fit one H100
    assert expected_experts(8, 2, 1) == pytest.approx(2.0)
    assert expected_experts(8, 2, 10_000) == pytest.approx(8.0)
    pc = param_counts(arch)
    assert p.breakdown.weights_gib * GiB > 0.95 * pc.decoder_linear * 0.5  # all 8 experts resident
    p16 = serve("h200x1", "mixtral-8x7b")
    bw = resolve_platform("h200x1").gpu.memory_bandwidth_gbs * GBps
    expert = sum(lin.params for lin in linears(arch) if lin.experts > 1) * arch.num_hidden_layers
    active = (pc.total - expert + expert * 2 / 8) * 2.0
    s = make_setup(arch, resolve_platform("h200x1"), cal("h200x1"))
    floor = pass_time(s, 1, 1, 512, decode=True).small_kernels_s
    expert_s = expert * 2 / 8 * 2.0 / (bw * EFF.weight_stream_eff * EFF.moe_stream_eff)
    dense_s = (pc.total - expert) * 2.0 / (bw * EFF.weight_stream_eff)
    assert p16.decode_step_s == pytest.approx(dense_s + expert_s + floor, rel=0.1)
    every_expert_s = expert * 2.0 / (bw * EFF.weight_stream_eff * EFF.moe_stream_eff) + dense_s
    assert p16.decode_step_s - floor < 0.5 * every_expert_s  # far less than reading every expert


def test_4bit_weights_shrink_batch1_decode():
    assert serve("a100x1", "llama2-13b", weight_bits=4).decode_step_s < 0.6 * serve("a100x1", "llama2-13b").decode_step_s


def test_tensor_parallel_2_halves_weights_per_gpu():
    one, two = serve("h100x2", "llama2-13b"), serve("h100x2", "llama2-13b", tensor_parallel=2)
    assert two.breakdown.weights_gib == pytest.approx(one.breakdown.weights_gib / 2)
    assert two.breakdown.communication_s > 0 and one.breakdown.communication_s == 0


def test_tensor_parallel_errors():
    with pytest.raises(AdvisorError, match="exceeds"):
        serve("h100x2", "llama2-13b", tensor_parallel=4)
    with pytest.raises(AdvisorError, match="heads"):
        serve("h100x8", "llama2-13b", tensor_parallel=3)  # 40 heads; 3 GPUs of 8 are fine, 40 % 3 is not


def test_tpot_is_integrated_over_growing_cache_and_e2e_adds_up():
    P, out, B = 1024, 512, 32
    p = serve("a100x1", "llama2-7b", batch_size=B, prompt_len=P, output_len=out)
    s = make_setup(resolve_model("llama2-7b"), resolve_platform("a100x1"), cal("a100x1"))
    # decode steps are CUDA-graph replays on a static cache (what probes.serve_sweep measures), with the
    # engine's host work between them
    first, last = decode_step_s(s, B, P + 1), decode_step_s(s, B, P + out - 1)
    tpot = p.tpot_s - EFF.generate_token_overhead_s
    assert first < tpot < last
    assert tpot == pytest.approx((first + last) / 2, rel=0.02)  # linear in kv_len here
    total = p.prefill_s + (out - 1) * p.tpot_s
    assert p.e2e_output_tokens_per_s == pytest.approx(B * out / total)
    assert p.ttft_s == p.prefill_s


def test_max_batch_size_is_the_memory_edge():
    p = serve("a100x1", "llama2-13b", prompt_len=2048)
    mb = p.max_batch_size
    assert mb and serve("a100x1", "llama2-13b", prompt_len=2048, batch_size=mb).fits
    assert not serve("a100x1", "llama2-13b", prompt_len=2048, batch_size=mb + 1).fits


@pytest.mark.parametrize("hw,model", [("rtx4090x8", "llama2-7b"), ("h100x8", "mixtral-8x7b"), ("l4x1", "tinyllama-1.1b")])
@pytest.mark.parametrize("batch,prompt,wb,kb", [(1, 1, 16, 16), (7, 300, 8, 8), (256, 4096, 4, 16)])
def test_finite_positive_deterministic_and_above_roofline(hw, model, batch, prompt, wb, kb):
    kw = dict(batch_size=batch, prompt_len=prompt, output_len=33, weight_bits=wb, kv_bits=kb)
    p = serve(hw, model, **kw)
    assert p == serve(hw, model, **kw)
    nums = [v for v in p.model_dump(exclude={"breakdown"}).values() if isinstance(v, float)] + list(p.breakdown.model_dump().values())
    assert all(math.isfinite(v) and v >= 0 for v in nums)
    g = resolve_platform(hw).gpu
    arch = resolve_model(model)
    s = make_setup(arch, resolve_platform(hw), cal(hw), 1, p.weight_format, kb)
    flops = 2.0 * batch * param_counts(arch).total * arch.num_experts_per_tok / arch.num_local_experts
    assert p.decode_step_s >= max(weight_bytes(s) * 0.2 / (g.memory_bandwidth_gbs * GBps), flops / (g.matmul_tflops * TFLOP) * 0.2)
    assert p.decode_step_s >= weight_bytes(s) * (0.25 if arch.is_moe else 1.0) / (g.memory_bandwidth_gbs * GBps)


def test_continuous_batching_beats_one_request_at_a_time():
    arch, plat = resolve_model("llama2-7b"), resolve_platform("h100x1")
    many = continuous_batching(arch, plat, cal("h100x1"), 1000, 512, 128)
    alone = continuous_batching(arch, plat, cal("h100x1"), 1000, 512, 128, max_batch_size=1)
    assert many["batch_size"] == many["memory_limited_batch"] > 1
    assert many["waves"] == math.ceil(1000 / many["batch_size"])
    assert many["output_tokens_per_s"] > 10 * alone["output_tokens_per_s"]
    assert many["mean_ttft_s"] < many["total_s"]


# --- the comparison mesh (SEEDS.md section 2) -------------------------------------------------------

BATCH, SEQ = [1, 4, 16, 64, 256], [128, 512, 2048, 8192, 32768]
SEQ_13B = [128, 512, 1024, 2048, 4000]  # Llama-2-13B's context is 4096 tokens


def test_a100_vs_h20_mesh_llama2_13b():
    m = serving_comparison("a100x1", "h20x1", "llama2-13b", "decode", BATCH, SEQ_13B)
    ratio, bound = m["ratio"], m["bound"]
    assert ratio[-1][0] > 1.1 and bound[-1][0] == ("compute", "compute")  # large batch, short sequence: A100
    assert all(row[-1] < 0.9 for row in ratio)  # long sequences: H20 at any batch
    assert bound[0][0] == ("memory", "memory")
    lines = describe_regions("A100", "H20", BATCH, SEQ_13B, ratio, bound)
    assert any(line.startswith("A100 wins where both are compute-bound") for line in lines)


def test_mixtral_decode_is_memory_bound_and_h20_wins_everywhere():
    m = serving_comparison("a100x1", "h20x1", "mixtral-8x7b", "decode", BATCH, SEQ)
    cells = [r for row, past in zip(m["ratio"], m["beyond"]) for r, x in zip(row, past) if not x]
    assert len(cells) == len(BATCH) * (len(SEQ) - 1)  # a decode at 32768 would write past the context
    assert all(r < 1 for r in cells)


def test_a_server_of_several_cards_is_compared_as_one_engine_over_all_of_them():
    """Llama-2-70B (129 GiB of weights) fits on no single A100 or H20, but on 8 x H20 (768 GB) in tensor parallel it
    does: each GPU count was taken as one card, and every cell said "neither card fits"."""
    m = serving_comparison("a100x2", "h20x8", "70b", "decode", [1, 16], [512])
    assert (m["a"], m["b"]) == ("2×A100", "8×H20")
    assert all(fits == (True, True) for row in m["fits"] for fits in row)  # 2 x 80 GB hold them too, at short contexts
    assert all(r < 1 for row in m["ratio"] for r in row)  # eight H20s stream the weights faster than two A100s
    one = serving_comparison("a100x1", "h20x1", "70b", "decode", [1], [512])
    assert one["fits"] == [[(False, False)]]


# --- commands -----------------------------------------------------------------------------------------


@pytest.fixture
def compare_app() -> typer.Typer:
    from advisor.commands import compare

    app = typer.Typer()
    app.callback()(lambda: None)
    compare.register(app)
    return app


def test_compare_command_writes_png(compare_app, tmp_path):
    out = tmp_path / "sub" / "compare.png"
    r = CliRunner().invoke(compare_app, ["compare", "--hardware", "a100x1", "--vs", "h20x1", "--model", "llama2-13b",
                                         "--png", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    assert "A100 wins" in r.output and "H20 wins" in r.output
    assert [p.name for p in out.parent.iterdir()] == ["compare.png"]  # no temp file left behind


def test_compare_command_unknown_gpu_is_one_line(compare_app):
    r = CliRunner().invoke(compare_app, ["compare", "--hardware", "a100x1", "--vs", "zz9x1", "--model", "llama2-13b"])
    assert r.exit_code != 0
    assert r.output.strip().startswith("error:") and "zz9" in r.output and r.output.strip().count("\n") == 0


def test_predict_serve_case_returns_contract_fields(tmp_path):
    from advisor import cli

    if "predict" not in {c.name for c in cli.app.registered_commands}:
        cli._register()
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "s1", "hardware": "h100x1", "model": "llama3-8b", "task": "serve",
                                 "batch_size": 4, "prompt_len": 256, "output_len": 64}) + "\n")
    r = CliRunner().invoke(cli.app, ["predict", "--cases", str(cases), "--json"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.output.strip().splitlines()[-1])
    for field in ("id", "prefill_s", "decode_step_s", "decode_tokens_per_s", "e2e_output_tokens_per_s", "peak_mem_gib", "fits"):
        assert field in row, field
    assert row["id"] == "s1" and row["fits"] is True
    assert row["decode_tokens_per_s"] == pytest.approx(4 / row["decode_step_s"])


def test_default_engine_is_vllm_reading_grouped_kv_as_stored_and_fusing_kernels():
    kw = dict(batch_size=16, prompt_len=8192)
    # GQA: the transformers runtime repeats K/V to the 32 query heads before attention; vLLM reads the 8 as stored
    runtime, default = serve("h100x1", "llama3-8b", engine="transformers", **kw), serve("h100x1", "llama3-8b", **kw)
    assert runtime.breakdown.decode_kv_s > 2 * default.breakdown.decode_kv_s
    assert runtime.engine == "transformers" and default.engine == "vllm"
    assert default == serve("h100x1", "llama3-8b", engine="vllm", **kw)  # no engine = vLLM, field for field
    # MHA has nothing to repeat: the attention's time is the same, only the small kernels differ
    mha_rt, mha_engine = serve("h100x1", "llama2-7b", engine="transformers", **kw), serve("h100x1", "llama2-7b", **kw)
    assert mha_rt.breakdown.decode_kv_s == pytest.approx(mha_engine.breakdown.decode_kv_s)
    # the engine-style layer launches 39 kernels a decode step (knowledge.engines, counted), the transformers layer 45
    assert mha_engine.breakdown.overhead_s < mha_rt.breakdown.overhead_s
    # the same weights and KV either way; the engine's transients are one 8192-token chunk, not 16 x 8192 tokens
    assert mha_rt.breakdown.weights_gib == pytest.approx(mha_engine.breakdown.weights_gib)
    assert mha_rt.breakdown.kv_cache_gib == pytest.approx(mha_engine.breakdown.kv_cache_gib)
    assert mha_engine.breakdown.activations_gib < mha_rt.breakdown.activations_gib / 8
    assert mha_engine.chunk_tokens == 8192 and mha_rt.chunk_tokens is None and mha_rt.kv_pool_gib is None
