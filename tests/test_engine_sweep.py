"""CPU toy-size tests of the engine-style serving probe (probes.engine_model, probes.engine_sweep)."""

from __future__ import annotations

import json

import pytest
import torch

from advisor.evaluation import serving_rows
from knowledge.schema import Measurement, ModelArch
from probes import engine_sweep
from probes.engine_model import EngineDecoder, Shapes
from probes.engine_sweep import chunk_plan

TOY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
       "num_key_value_heads": 2, "vocab_size": 256}


def _decoder(qk_norm: bool = False, bias: bool = False) -> EngineDecoder:
    arch = ModelArch(name="toy", attention_bias=bias, **TOY)
    return EngineDecoder(Shapes.of(arch, qk_norm=qk_norm), torch.device("cpu"), torch.float64)


def _reference_attention(q, k, v):
    """Causal attention with K/V repeated to every query head (the transformers way), bottom-right aligned."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    t, L = q.shape[2], k.shape[2]
    scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    scores = scores.masked_fill(~torch.ones(t, L, dtype=torch.bool).tril(L - t), float("-inf"))
    return scores.softmax(-1) @ v


@pytest.mark.parametrize("attn", ["sdpa", "bmm"])
@pytest.mark.parametrize("start,t", [(0, 5), (7, 1), (6, 4)])
def test_grouped_attention_equals_repeated_heads(attn, start, t):
    dec = _decoder()
    q = torch.randn(2, 4, t, 16, dtype=torch.float64)
    kc, vc = torch.randn(2, 2, start + t, 16, dtype=torch.float64), torch.randn(2, 2, start + t, 16, dtype=torch.float64)
    got = dec._attend(q, kc, vc, start, t, attn)
    assert torch.allclose(got, _reference_attention(q, kc, vc), atol=1e-10)


@pytest.mark.parametrize("qk_norm,bias", [(False, False), (True, True)])
def test_chunked_prefill_then_decode_equals_one_forward(qk_norm, bias):
    """A prompt prefilled in chunks (each attending to the cache so far), then one decode step, predicts the same
    tokens and leaves the same cache as the whole prompt and that token in one forward."""
    torch.manual_seed(0)
    ids = torch.randint(0, 256, (2, 11))
    whole, chunked = _decoder(qk_norm, bias), _decoder(qk_norm, bias)
    for d in (whole, chunked):
        d.allocate(2, 12)
    ref = whole.forward(ids, 0)
    for s in range(0, 11, 4):
        out = chunked.forward(ids[:, s:s + 4], s)
    assert torch.equal(out, ref)
    nxt = ref[:, None]
    assert torch.equal(whole.forward(nxt, torch.tensor([11])), chunked.forward(nxt, torch.tensor([11])))
    for a, b in zip(whole.k_cache + whole.v_cache, chunked.k_cache + chunked.v_cache):
        assert torch.allclose(a, b, atol=1e-10)


def test_chunk_plan_covers_every_prompt_token_once():
    for B, P, C in [(128, 512, 8192), (5, 3000, 8192), (3, 20000, 8192), (1, 8192, 8192), (7, 100, 64)]:
        plan = chunk_plan(B, P, C)
        assert sum(seqs * tokens * times for seqs, tokens, _, times in plan) == B * P
        assert all(seqs * tokens <= max(C, P) for seqs, tokens, _, _ in plan)
    assert chunk_plan(128, 512, 8192) == [(16, 512, 0, 8)]
    assert chunk_plan(2, 20000, 8192) == [(1, 8192, 0, 2), (1, 8192, 8192, 2), (1, 3616, 16384, 2)]


def test_sweep_writes_rows_the_evaluation_reads_as_vllm(tmp_path):
    out = tmp_path / "rows.jsonl"
    qwen3ish = {**TOY, "head_dim": 32, "hf_model_type": "qwen3"}
    rc = engine_sweep.main(["--model", json.dumps(TOY), "--model", json.dumps(qwen3ish), "--hardware", "h100x1",
                            "--out", str(out), "--batches", "1,3", "--kv", "8,40", "--chunk", "32", "--repeats", "2",
                            "--prefill-repeats", "1", "--device", "cpu", "--tag", "toy", "--dataset", "own-toy"])
    assert rc == 0
    rows = [Measurement.model_validate_json(line) for line in out.read_text().splitlines()]
    assert len(rows) == 8
    for r in rows:
        m = r.measured
        assert m.error is None and m.decode_step_s > 0 and m.prefill_s > 0
        assert r.case["engine"] == "vllm" and r.source == "probes.engine_sweep" and "not vLLM" in r.notes
        assert r.environment.command.startswith("python -m probes.engine_sweep --model")
    assert sum("qk_norm" in r.notes for r in rows) == 4
    # a prompt of 40 tokens in chunks of 32: its two chunks' times, summed per sequence
    assert "3 x " in next(r.notes for r in rows if r.case["batch_size"] == 3 and r.case["prompt_len"] == 40)
    parsed = serving_rows(rows)
    assert len(parsed) == 8 and {r.case.engine for r in parsed} == {"vllm"}
