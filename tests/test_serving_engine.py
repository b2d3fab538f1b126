"""Serving as people serve: a case without an engine is vLLM (chunked prefill, a KV pool), memory as the engine
allocates it, measured rows predicted as the runtime that ran them, and a table whose rows and advice hold."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from advisor.evaluation import serving_rows
from advisor.predictor import Predictor
from advisor.serve_recommend import nothing_fits_hint, serve_recommendation
from advisor.serve_search import Config, Job, Point, _verb, search_serving, weight_formats_for
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import Efficiencies
from knowledge.engines import ENGINES
from knowledge.schema import Measurement, ServeCase
from knowledge.units import GiB
from models import kv_cache
from models.calibration import from_fit
from models.serve_memory import chunk_tokens, engine_used_bytes, kv_pool_bytes
from models.serve_setup import make_setup
from models.serving import predict_serving, prefill_s

EFF = Efficiencies()


def serve(hardware: str, model: str, **kw):
    case = ServeCase(id="t", hardware=hardware, model=model, task="serve", **kw)
    platform = resolve_platform(hardware)
    return predict_serving(case, resolve_model(model), platform, from_fit(platform, EFF))


def setup(hardware: str, model: str, engine: str = "vllm"):
    platform = resolve_platform(hardware)
    return make_setup(resolve_model(model), platform, from_fit(platform, EFF), engine=engine)


def test_llama32_3b_64_sequences_of_4096_fit_an_80gib_card():
    """The issue's example: it ran (60 GiB peak) but was refused, the whole batch's prompt counted as one prefill."""
    p = serve("h100x1", "llama3.2-3b", batch_size=64, prompt_len=4096)
    assert p.engine == "vllm" and p.fits and p.note is None
    assert p.max_batch_size >= 64 and p.peak_mem_gib < 0.9 * 79.65
    # the transformers runtime prefills 64 x 4096 tokens in one forward: that is what did not fit
    assert not serve("h100x1", "llama3.2-3b", batch_size=64, prompt_len=4096, engine="transformers").fits


def test_more_sequences_than_the_pool_holds_is_preemption_not_a_crash():
    p = serve("h100x1", "llama2-7b", batch_size=256, prompt_len=4096)
    assert not p.fits and 0 < p.max_batch_size < 256
    assert "preempt" in p.note and "out of memory" in p.note
    assert "pool holds" in p.why_not_fits
    # the boundary is the pool's: max_batch_size sequences fit, one more does not
    m = p.max_batch_size
    assert serve("h100x1", "llama2-7b", batch_size=m, prompt_len=4096).fits
    assert not serve("h100x1", "llama2-7b", batch_size=m + 1, prompt_len=4096).fits


def test_a_serving_prediction_carries_p_oom_and_fits_only_below_five_percent():
    """Serving predictions carry p_oom as training's do (the contract): low well inside the pool, high past it, and
    "fits" never true above 5% (models.oom.SERVE_SPREAD), on the engine and on the transformers runtime."""
    for engine in ("vllm", "transformers"):
        inside = serve("h100x1", "llama2-7b", batch_size=4, prompt_len=1024, engine=engine)
        assert inside.p_oom is not None and inside.p_oom < 0.01 and inside.fits
    m = serve("h100x1", "llama2-7b", batch_size=256, prompt_len=4096).max_batch_size
    edge, past = (serve("h100x1", "llama2-7b", batch_size=b, prompt_len=4096) for b in (m, m + 1))
    assert edge.fits and edge.p_oom <= 0.05
    assert not past.fits and past.p_oom > 0.05


def test_weights_beyond_the_memory_fraction_leave_no_pool():
    p = serve("h100x1", "llama2-70b")  # 129 GiB of bf16 weights on an 80 GiB card
    assert not p.fits and p.kv_pool_gib == 0 and p.max_batch_size == 0 and "no room for a KV cache" in p.why_not_fits


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_pool_is_the_engine_fraction_less_what_it_holds(engine):
    s = setup("h100x1", "llama3-8b", engine)
    e, cap, used = ENGINES[engine], 79.65 * GiB, engine_used_bytes(s)
    expected = e.memory_fraction * (cap - used) if e.of_free else e.memory_fraction * cap - used
    assert kv_pool_bytes(s) == pytest.approx(expected)
    p = serve("h100x1", "llama3-8b", engine=engine)
    assert p.kv_cache_tokens * s.kv_bytes_per_token <= p.kv_pool_gib * GiB
    assert p.kv_cache_tokens % e.kv_block_tokens == 0


def test_chunk_sizes_follow_each_engines_defaults():
    assert chunk_tokens(setup("h100x1", "llama3-8b")) == 8192
    assert chunk_tokens(setup("h200x1", "llama3-8b")) == 8192
    assert chunk_tokens(setup("a100x1", "llama3-8b")) == 2048  # vLLM counts an A100 80 GB as small
    assert chunk_tokens(setup("l40sx1", "llama3-8b")) == 2048
    assert chunk_tokens(setup("rtx4090x1", "llama3.2-1b", "sglang")) == 2048
    assert chunk_tokens(setup("a100x1", "llama3-8b", "sglang")) == 8192
    assert chunk_tokens(setup("a100x1", "llama3-8b", "trtllm")) == 8192


def test_chunked_prefill_adds_up_chunk_by_chunk():
    s = setup("h100x1", "llama3-8b")
    # 64 prompts of 512 tokens = 4 chunks of 16 prompts
    assert prefill_s(s, 64, 512) == pytest.approx(4 * prefill_s(s, 16, 512), rel=1e-9)
    # a 32k prompt: four chunks, the later ones attending to more of the cache, so more than 4x the first
    assert prefill_s(s, 1, 32768) > 4.2 * prefill_s(s, 1, 8192)
    # its transients are one chunk's however long the prompt
    a16 = serve("h100x1", "llama3-8b", prompt_len=16384, kv_len=8000).breakdown.activations_gib
    assert serve("h100x1", "llama3-8b", prompt_len=8192, kv_len=8000).breakdown.activations_gib == pytest.approx(a16)
    # the transformers runtime prefills the whole batch in one forward
    t = setup("h100x1", "llama3-8b", "transformers")
    assert prefill_s(t, 64, 512) != pytest.approx(4 * prefill_s(t, 16, 512), rel=1e-3)


def test_an_eager_prefill_is_paced_by_its_launches_where_a_graphed_one_is_not():
    """vLLM runs its 8k-token chunks eagerly: a short prompt's prefill takes at least its kernels' launches, and a
    long one its GPU time (the launches hide behind it); the probed transformers runtime replays its prefill from a
    graph, so its launches never bound it."""
    from models.serving import graph_s, pass_time, prefill_passes, prefill_pass_s

    eff = EFF.model_copy(update={"prefill_kernel_s": 20e-6})
    platform = resolve_platform("h100x1")
    arch = resolve_model("llama3-8b")
    s = make_setup(arch, platform, from_fit(platform, eff), engine="vllm")
    (short, n), = prefill_passes(s, 1, 128)
    assert n == 1 and short.kernels * 20e-6 > 2 * short.gpu_s  # a launch-bound pass, else the test is empty
    assert prefill_pass_s(s, short) >= short.kernels * 20e-6
    long = pass_time(s, 1, 8192, 0, decode=False)
    assert long.gpu_s > 4 * long.kernels * 20e-6
    assert prefill_pass_s(s, long) == pytest.approx(long.gpu_s, rel=0.01)
    graphed = make_setup(arch, platform, from_fit(platform, eff), engine="transformers")
    (p, _), = prefill_passes(graphed, 1, 128)
    assert prefill_pass_s(graphed, p) == graph_s(p, graphed.eff) < p.kernels * 20e-6


def test_kv_bytes_come_from_one_function(monkeypatch):
    """A window cap in models.kv_cache reaches the decode step's reads, the memory and the pool's capacity."""
    full = serve("h100x1", "llama3-8b", batch_size=8, prompt_len=8192)
    monkeypatch.setattr(kv_cache, "kv_len_per_layer", lambda arch, n: [(arch.num_hidden_layers, min(n, 1024))])
    capped = serve("h100x1", "llama3-8b", batch_size=8, prompt_len=8192)
    assert capped.breakdown.kv_cache_gib == pytest.approx(full.breakdown.kv_cache_gib * 1024 / 8193, rel=1e-6)
    assert capped.breakdown.decode_kv_s < 0.3 * full.breakdown.decode_kv_s
    assert capped.max_batch_size > 4 * full.max_batch_size


def test_measured_rows_without_an_engine_are_the_transformers_runtime():
    row = {"dataset": "own-h100x1", "source": "probes.serve_sweep", "measured": {"decode_step_s": 0.01, "prefill_s": 0.1},
           "case": {"id": "r", "hardware": "h100x1", "model": "llama3-8b", "task": "serve", "batch_size": 4}}
    named = {**row, "case": {**row["case"], "id": "n", "engine": "vllm"}}
    rows = serving_rows([Measurement.model_validate(row), Measurement.model_validate(named)])
    assert [r.case.engine for r in rows] == ["transformers", "vllm"]


def test_an_emulated_windowed_run_past_its_window_scores_no_peak():
    """The emulation keeps every cached position of a sliding layer; an engine frees those behind the window, as the
    prediction counts them: past the window the run's peak is not the case's (its timings still are)."""
    def row(kv: int, notes: str) -> dict:
        return {"dataset": "own-h100x1", "source": "probes.engine_sweep", "notes": notes,
                "measured": {"decode_step_s": 0.01, "prefill_s": 0.1, "peak_mem_gib": 9.0},
                "case": {"id": f"r{kv}{len(notes)}", "hardware": "h100x1", "model": "knowledge/data/configs/phi-3-mini-4k.json",
                         "task": "serve", "batch_size": 4, "prompt_len": kv, "kv_len": kv, "engine": "vllm"}}
    windowed = "attention=sdpa; window=2047 on 32 of 32 layers (decode reads the window's positions)"
    rows = serving_rows([Measurement.model_validate(row(1024, windowed)), Measurement.model_validate(row(4095, windowed)),
                         Measurement.model_validate(row(4095, "attention=sdpa; window=none"))])
    assert [r.peak_comparable for r in rows] == [True, False, True]
    assert all(r.target[0] == 0.1 for r in rows)


def _cli(*args: str):
    from advisor import cli

    if "recommend" not in {c.name for c in cli.app.registered_commands}:
        cli._register()
    return CliRunner().invoke(cli.app, list(args), terminal_width=200)


def test_predict_without_engine_says_vllm(tmp_path):
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "a", "hardware": "h200x1", "model": "llama3-8b", "task": "serve",
                                 "batch_size": 64, "prompt_len": 4096}) + "\n")
    r = _cli("predict", "--cases", str(cases), "--json")
    assert r.exit_code == 0, r.output
    p = json.loads(r.output.splitlines()[0])
    assert p["engine"] == "vllm" and p["chunk_tokens"] == 8192 and p["kv_pool_gib"] > 0
    # the decode step: 14 ms measured for 64 x 4096 on an H200, 157 ms predicted as transformers
    assert p["decode_step_s"] < 0.03


def test_recommend_and_predict_agree_on_the_top_pick():
    rec = serve_recommendation("h100x1", "llama3-8b", prompt_len=1024, output_len=128, top=1)
    c, row = rec["recommendations"][0]["configuration"], rec["recommendations"][0]
    case = ServeCase(id="p", hardware="h100x1", model="llama3-8b", task="serve", batch_size=c["batch_size"], prompt_len=1024,
                     output_len=128, weight_format=c["weight_format"], kv_bits=c["kv_bits"],
                     tensor_parallel=c["tensor_parallel"], replicas=c["replicas"])  # no engine: the default
    p = Predictor().predict(case)
    assert p.engine == rec["engine"] == "vllm"
    assert p.decode_step_s == pytest.approx(row["decode_step_s"]) and p.prefill_s == pytest.approx(row["prefill_s"])


@pytest.fixture(scope="module")
def predictor():
    return Predictor()


def test_no_two_rows_of_the_table_carry_the_same_numbers(predictor):
    h100 = resolve_platform("h100x1")
    assert "int8" not in weight_formats_for(h100.gpu) and "fp8" in weight_formats_for(h100.gpu)
    assert "int8" in weight_formats_for(resolve_platform("a100x1").gpu)
    job = Job("h100x1", "llama3-8b", h100, resolve_model("llama3-8b"), 2048, 256)
    res = search_serving(predictor, job, top=10)
    figures = [(round(p.tokens_per_s, 6), round(p.ttft_s, 9), round(p.tpot_s, 9), round(p.peak_mem_gib, 6)) for p in res.picks]
    assert len(res.picks) == 6 and len(set(figures)) == len(figures)  # bf16, fp8, int4 x bf16, fp8 KV
    assert "int8" in res.spaces["not_searched"]


def test_meets_the_limits_only_when_every_limit_is_met():
    pt = Point(Config(1, 1, "bf16", 16, 8), True, 1000.0, ttft_s=0.020, tpot_s=0.0105, peak_mem_gib=20.0, prediction=None)
    assert _verb(pt, 3.0, 30.0) == "meets TTFT ≤ 30 ms"  # TPOT 10.5 ms misses 3 ms by 250%
    assert _verb(pt, 11.0, 30.0) == "meets the limits"
    assert _verb(pt, 3.0, 10.0) == "fits"
    assert _verb(pt, None, None) == "fits"


def test_nothing_fits_never_suggests_what_was_searched():
    rec = serve_recommendation("rtx4090x1", "llama2-70b")
    assert rec["nothing_fits"] and "int4" in rec["searched"]["weight_formats"] and 8 in rec["searched"]["kv_bits"]
    hint = nothing_fits_hint(rec)
    assert "4-bit" not in hint and "FP8 KV" not in hint and "more GPUs" in hint
    narrowed = {**rec, "searched": {**rec["searched"], "weight_formats": ["bf16"], "kv_bits": [16]}}
    assert "4-bit" in nothing_fits_hint(narrowed) and "FP8 KV" in nothing_fits_hint(narrowed)


def test_top_pick_ttft_is_printed_on_its_own_line():
    r = _cli("recommend", "--task", "serve", "--hardware", "h100x1", "--model", "llama3-8b", "--prompt-len", "2048",
             "--output-len", "256")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("Top pick:"))
    assert "TTFT" in line and "--max-ttft-ms" in line


GEMMA, DEEPSEEK = "knowledge/data/configs/gemma-2-9b.json", "knowledge/data/configs/deepseek-v2-lite.json"


@pytest.mark.parametrize("path", [GEMMA, DEEPSEEK])
def test_serving_memory_and_decode_reads_use_the_models_own_kv_layout(predictor, path):
    """Sliding-window layers capped at their window (Gemma-2), latent attention's compressed vector (DeepSeek-V2):
    the prediction's KV memory, its decode KV read and the pool's sequences all come from the model's layout."""
    arch = predictor.serving_layout(resolve_model(path))
    assert arch.kv_groups
    plain = arch.model_copy(update={"kv_groups": None})  # what a Llama formula would count
    case = ServeCase(id="kv", hardware="h100x1", model=path, task="serve", batch_size=4, prompt_len=16384)
    p = predictor.predict(case)
    s, s_plain = (make_setup(a, resolve_platform("h100x1"), predictor.serving_calibration(resolve_platform("h100x1")))
                  for a in (arch, plain))
    context = 16385
    assert p.breakdown.kv_cache_gib == pytest.approx(4 * kv_cache.kv_cache_bytes(arch, 1, 16, context) / GiB)
    assert s.kv_bytes(context) < 0.7 * s_plain.kv_bytes(context)
    q = predict_serving(case, plain, resolve_platform("h100x1"), predictor.serving_calibration(resolve_platform("h100x1")))
    assert p.breakdown.kv_cache_gib < 0.7 * q.breakdown.kv_cache_gib
    assert p.breakdown.decode_kv_s < 0.7 * q.breakdown.decode_kv_s
    assert p.max_batch_size > q.max_batch_size


def test_the_serving_search_load_and_the_measured_rows_use_the_layout_too(monkeypatch):
    """The load simulation of ``recommend --task serve`` and the serving fit's rows size the same KV as predict."""
    import models.serving

    seen = []
    real = models.serving.continuous_batching

    def spy(arch, *args, **kw):
        seen.append(arch)
        return real(arch, *args, **kw)

    monkeypatch.setattr(models.serving, "continuous_batching", spy)
    serve_recommendation("h100x1", GEMMA, prompt_len=8192, output_len=64, requests=64, top=1)
    assert seen and all(a.kv_groups for a in seen)
    row = {"dataset": "own-h100x1", "source": "probes.engine_sweep", "measured": {"decode_step_s": 0.01},
           "case": {"id": "g", "hardware": "h100x1", "model": GEMMA, "task": "serve", "engine": "vllm"}}
    (r,) = serving_rows([Measurement.model_validate(row)])
    assert r.arch.kv_groups and len(r.arch.kv_groups) == 2


def test_moe_routing_moves_its_rows_as_the_fused_moe_does():
    """OLMoE (64 experts, top 8, hidden 2048, no shared expert): 14 B a routed row (two gathers, the weighting, the sum)
    plus the router and the counts; Qwen1.5-MoE adds its shared expert's activation, gate product and add; a dense
    model moves none. The prefill pays exactly these bytes beyond the dense layer's."""
    from models.serving import moe_routing_bytes_per_token, pass_time, shared_expert_width

    olmoe = resolve_model("knowledge/data/configs/olmoe-1b-7b.json")
    total, indexed = moe_routing_bytes_per_token(olmoe)
    assert indexed == 8 * 2048 * 4
    assert total == 64 * (12 + 8 * 16) + 8 * 12 + 8 * 2048 * 14 + 2 * 2048
    qwen = resolve_model("knowledge/data/configs/qwen1.5-moe-a2.7b.json")
    assert shared_expert_width(qwen) == 5632
    assert moe_routing_bytes_per_token(qwen)[0] == (60 * (12 + 4 * 16) + 4 * 12 + 4 * 2048 * 14 + 2 * 2048
                                                    + 6 * 5632 + 10 * 2048)
    assert moe_routing_bytes_per_token(resolve_model("llama3-8b")) == (0.0, 0.0)
    platform = resolve_platform("h100x1")
    s = make_setup(olmoe, platform, from_fit(platform, EFF), engine="vllm")
    c = s.c
    with_routing = pass_time(s, 4, 2048, 0, decode=False).elementwise_s
    expected = olmoe.num_hidden_layers * 4 * 2048 * (total / (c.memory_bps * EFF.memory_eff)
                                                      + indexed / (c.memory_bps * EFF.trace_irregular_bytes_eff))
    from models.serving import _elementwise_bytes_per_token
    dense_part = olmoe.num_hidden_layers * 4 * 2048 * _elementwise_bytes_per_token(s) / (c.memory_bps * EFF.memory_eff)
    assert with_routing == pytest.approx(dense_part + expected, rel=1e-9)



def test_engine_elementwise_bytes_follow_the_layers_kernels():
    """The engine layer's memory-bound bytes a token: two add+norm passes, the rotary over q and k at its kernels' 18
    bytes an element, SiLU-and-multiply (a family's q/k norms are kernels only: their bytes, priced from one profile,
    moved the held-out prefill error by 0.1%)."""
    from knowledge.engines import ROPE_BYTES_PER_ELEMENT
    from models.serving import _elementwise_bytes_per_token

    for model in ("llama3-8b", "knowledge/data/configs/qwen3-4b.json"):
        s = setup("h100x1", model)
        a = s.arch
        q, kv = a.num_attention_heads * a.head_size, a.num_key_value_heads * a.head_size
        assert _elementwise_bytes_per_token(s) == (16.0 * a.hidden_size + ROPE_BYTES_PER_ELEMENT * (q + kv)
                                                   + 6.0 * a.intermediate_size)
