"""The memory model against DeepSpeed's own estimators, and hand-checkable activation/LoRA/NF4 counts.

DeepSpeed 0.19.8 ships ``estimate_zero2_model_states_mem_needs`` and
``estimate_zero3_model_states_mem_needs`` (pure arithmetic, no GPU). They return
``(cpu_bytes, gpu_bytes)`` and ``(cpu_bytes, gpu_bytes, largest_layer_memory)``. ``models.memory``
claims to follow them; here its weights + grads + optimizer states of one rank are compared with
DeepSpeed's GPU figure, and its host bytes with DeepSpeed's CPU figure where states are offloaded.

Deliberate difference on the host (documented in models.memory): the advisor counts what DeepSpeed
allocates, not the estimators' worst case, so host bytes are compared with the estimators called with
``additional_buffer_factor=1.0``, and ZeRO-2's ``max(4 * gpus_per_node, 16)`` bytes per parameter is
taken as its 16-byte floor (fp32 master + Adam moments + fp32 gradient partition).
"""

from __future__ import annotations

import pytest
from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import Efficiencies
from knowledge.schema import TrainCase
from models.architecture import param_counts
from models.memory import (
    HOST_OFFLOAD_STAGING_BYTES, STAGE3_MAX_LIVE, SUB_GROUP, activation_bytes, model_state_bytes, pinned_bytes,
    training_memory,
)
from models.setup import QUANT_BYTES, derive

EFF = Efficiencies()
MODELS = ["tinyllama-1.1b", "llama2-7b", "mistral-7b", "qwen2.5-7b", "llama2-13b", "mixtral-8x7b", "llama2-70b"]
COUNTS = [1, 2, 4, 8]


def setup(model="llama2-7b", n=8, gpu="h100", **kw):
    fields = dict(id="m", hardware=f"{gpu}x{n}", model=model, task="pretrain", method="full", engine="deepspeed")
    fields.update(kw)
    case = TrainCase(**fields)
    return derive(case, resolve_model(case.model), resolve_platform(case.hardware, case.gpus))


def gpu_states(s) -> float:
    st = model_state_bytes(s)
    return st.weights + max(st.grads_kept, st.grads_end) + st.optimizer_states


# ------------------------------------------------------------------------------------ ZeRO-2


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n", COUNTS)
def test_zero2_gpu_states_are_deepspeeds_estimate_plus_the_step_buffers(model, n):
    # DeepSpeed's estimator counts the fp32 master, moments and gradient partition but not the 16-bit
    # gradient buffers alive at the step. Measured instead: at the
    # optimizer step the 16-bit weights (2P), the 16-bit gradient partition and its flat copy (4P/N) and
    # the fp32 states (16P/N) = 2P + 20P/N: own runs, 3B ZeRO-1 on one H100 peaks at 22.0 B/param,
    # 7B ZeRO-1/2 on two H200 at 75.4 GiB (predicted 75.3).
    s = setup(model, n, zero_stage=2)
    assert s.trainable == s.params.total
    st = model_state_bytes(s)
    P = s.params.total
    _, ds_gpu = estimate_zero2_model_states_mem_needs(
        total_params=P, num_gpus_per_node=n, num_nodes=1, cpu_offload=False, additional_buffer_factor=1.0)
    assert ds_gpu < 2 * P + 20 * P / n  # DeepSpeed's estimate misses the step's gradient buffers
    step = st.weights + st.grads_end + st.step_extra + st.optimizer_states
    assert step == pytest.approx(2 * P + 20 * P / n, rel=1e-9)
    # at the start of backward only the persistent states: 2P + 12P/N
    assert st.weights + st.optimizer_states == pytest.approx(2 * P + 12 * P / n, rel=1e-9)


def test_zero1_keeps_the_full_16bit_gradients_until_the_reduction():
    s1, s2 = setup("llama2-7b", 8, zero_stage=1), setup("llama2-7b", 8, zero_stage=2)
    assert model_state_bytes(s1).grads_end == pytest.approx(2 * s1.params.total)
    assert model_state_bytes(s2).grads_end == pytest.approx(2 * s2.params.total / 8)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n", COUNTS)
def test_zero2_offload_gpu_states_match_deepspeed_and_host_is_the_measured_model(model, n):
    # DeepSpeed's estimator (2P on the GPU) is the study's 2023 release; the pinned one adds every 16-bit gradient
    # at the end of backward (knowledge.deepspeed_releases), measured on two H200s
    s = setup(model, n, zero_stage=2, offload="optimizer", deepspeed_version="0.12")
    st = model_state_bytes(s)
    ds_cpu, ds_gpu = estimate_zero2_model_states_mem_needs(
        total_params=s.params.total, num_gpus_per_node=n, num_nodes=1, cpu_offload=True, additional_buffer_factor=1.0)
    assert st.weights + max(st.grads_kept, st.grads_end) + st.optimizer_states == pytest.approx(ds_gpu, rel=0.02)
    now = model_state_bytes(setup(model, n, zero_stage=2, offload="optimizer"))
    assert now.weights + now.grads_end == pytest.approx(ds_gpu + 2 * s.params.total, rel=0.02)
    # host: per rank two pinned fp32 partitions (rounded up to a power of two), pageable Adam moments,
    # the staging copy, and the processes (1.4 GiB each)
    local = s.params.total / n
    per_rank = 2 * pinned_bytes(4 * local) + 8 * local + HOST_OFFLOAD_STAGING_BYTES * local + 1.4 * 2**30
    assert st.host == pytest.approx(per_rank * n, rel=1e-9)
    assert st.host >= 16 * s.params.total  # never below DeepSpeed's own floor of 16 B per parameter


# ------------------------------------------------------------------------------------ ZeRO-3
#
# Deliberate difference: DeepSpeed's ZeRO-3 estimator counts ``4 * largest_layer_params`` of gathered parameters on
# the GPU. The advisor counts the working set as DeepSpeed gathers it in the 16-bit type: the live parameters that the
# config it writes allows (stage3_max_live_parameters = 300M), or the largest module gathered alone, whichever is
# larger, capped at the whole 16-bit model: gathered = min(2 * max(STAGE3_MAX_LIVE, largest), 2 * P) (``zero3_gathered
# _bytes``; measured, below). The comparison below swaps exactly that term for the estimator's, so everything else
# must match.
#
# DeepSpeed's CPU figure is compared only where states are offloaded (zero_init=True, the Hugging Face
# ZeRO-3 path); without offload its CPU figure is the transient model-loading memory, which the
# advisor's ``host`` (offloaded states) deliberately does not count.


def _zero3_extra(s) -> float:
    # one rank with its parameters on the GPU gathers in place: nothing of its own (test_one_rank_zero3_...)
    gathered = 0.0 if s.zero3_gathers_in_place else min(2 * max(STAGE3_MAX_LIVE, s.params.largest_module), 2 * s.params.total)
    return gathered - 4 * s.params.largest_module


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n", COUNTS)
@pytest.mark.parametrize("offload", ["none", "optimizer", "optimizer+params"])
def test_zero3_gpu_states_match_deepspeed_less_the_fp32_gradients(model, n, offload):
    # DeepSpeed's ZeRO-3 estimator counts the fp32 gradient partition (4P/N) through the step; ZeRO-3
    # converts it one sub-group (1e9 parameters) at a time, so the persistent states are 16P/N
    # (own 2xH200 7B runs: 57.3 and 63.5 GiB measured, 57.0 and 62.6 predicted).
    s = setup(model, n, zero_stage=3, offload=offload)
    st = model_state_bytes(s)
    w, g, o = st.weights, max(st.grads_kept, st.grads_end), st.optimizer_states
    ds_cpu, ds_gpu, largest_mem = estimate_zero3_model_states_mem_needs(
        total_params=s.params.total, largest_layer_params=s.params.largest_module, num_gpus_per_node=n, num_nodes=1,
        cpu_offload=offload != "none", cpu_offload_params=offload == "optimizer+params", zero_init=True,
        additional_buffer_factor=1.0)
    assert largest_mem == 4 * s.params.largest_module
    # no offload: less the fp32 gradient partition (4P/N), plus the flat 16-bit gradient partition that
    # contiguous_gradients allocates at start-up (2P/N), which the estimator does not count
    delta = -2 * s.params.total / n if offload == "none" else 0.0
    assert (w + g + o) - _zero3_extra(s) == pytest.approx(ds_gpu + delta, rel=0.02)
    if offload == "none":
        assert st.step_extra == pytest.approx(4 * min(s.params.total / n, SUB_GROUP))
    else:
        assert st.host >= 16 * s.params.total


@pytest.mark.parametrize("model", MODELS)
def test_zero3_working_set_is_the_live_parameters_or_the_largest_module(model):
    # every catalog model here exceeds 600 MB in 16-bit: the working set is the live set or, where a module alone is
    # larger (a big vocabulary's head), that module, in the 16-bit type
    s = setup(model, 8, zero_stage=3)
    assert _zero3_extra(s) + 4 * s.params.largest_module == 2 * max(STAGE3_MAX_LIVE, s.params.largest_module)


def test_zero3_peaks_as_measured_with_a_big_vocabulary():
    """Eleven ZeRO-3 runs of ours: the estimator's 4 B of the largest layer on top of the live set put every peak
    1.3-2.6 GiB high, by about 2 B of each model's embedding (Mistral-Nemo's 131k x 5120: +1.8 GiB); the larger of the
    live set and the largest module in 16-bit puts them within 4%."""
    import json
    from pathlib import Path

    from advisor.predictor import Predictor

    own = Path(__file__).resolve().parents[1] / "knowledge/measurements/own"
    rows = [json.loads(x) for name in ("h200x2-new-fam-2a-2026-11-27.jsonl", "h200x2-new-fam-a-2026-11-27.jsonl")
            for x in (own / name).read_text().splitlines()]
    z3 = [r for r in rows if r["case"]["zero_stage"] == 3 and r["measured"].get("peak_mem_gib")]
    assert len(z3) >= 4
    p = Predictor()
    for r in z3:
        got = p.predict(TrainCase.model_validate(r["case"])).peak_mem_gib
        assert got == pytest.approx(r["measured"]["peak_mem_gib"], rel=0.04), r["case"]["id"]


def test_zero3_working_set_capped_at_the_whole_model():
    # a 100M-parameter model is smaller than the live set the config allows: ZeRO-3 can't gather more than the model
    from knowledge.schema import ModelArch

    arch = ModelArch(name="small", hf_model_type="llama", hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                     num_attention_heads=12, num_key_value_heads=12, head_dim=64, vocab_size=32000)
    case = TrainCase(id="m", hardware="h100x1", model="small", task="pretrain", method="full", engine="deepspeed",
                     zero_stage=3, offload="optimizer+params")
    s = derive(case, arch, resolve_platform("h100x1"))
    assert 2 * s.params.total < 2 * STAGE3_MAX_LIVE
    st = model_state_bytes(s)
    w, g, o = st.weights, max(st.grads_kept, st.grads_end), st.optimizer_states
    assert w + g + o == pytest.approx(2 * s.params.total, rel=1e-12)


def test_total_params_match_the_catalog_count():
    # the estimators above are fed param_counts().total: it must be the real (transformers) count
    for m in MODELS:
        a = resolve_model(m)
        assert param_counts(a).total == a.param_count, m


# ------------------------------------------------------------------------------------ hand checks


def test_lora_trainable_count_llama2_7b_rank64_qkvo():
    s = setup("llama2-7b", 1, task="finetune", method="lora", lora_rank=64,
              lora_targets=["q_proj", "k_proj", "v_proj", "o_proj"])
    expected = 32 * 4 * (4096 + 4096) * 64
    assert expected == 67_108_864
    assert s.lora == expected
    assert s.trainable == expected
    assert s.frozen_16bit == 6_738_415_616  # the whole base stays frozen in 16-bit


def test_lora_trainable_count_mlp_targets_and_gqa():
    # llama3-8b: hidden 4096, kv 8 heads x 128 = 1024, intermediate 14336, 32 layers
    s = setup("llama3-8b", 1, task="finetune", method="lora", lora_rank=16,
              lora_targets=["k_proj", "gate_proj", "down_proj"])
    per_layer = (4096 + 1024) * 16 + (4096 + 14336) * 16 + (14336 + 4096) * 16
    assert s.lora == 32 * per_layer


def test_nf4_bytes_per_param():
    assert QUANT_BYTES["nf4"] == pytest.approx(0.516, abs=0.0005)
    s = setup("llama2-7b", 1, task="finetune", method="qlora")
    # llama2-7b decoder projections: 32 x (4 x 4096^2 + 3 x 4096 x 11008)
    assert s.quantized == 32 * (4 * 4096**2 + 3 * 4096 * 11008) == 6_476_005_376
    w = model_state_bytes(s).weights
    quant_bytes = w - 2 * s.trainable - 2 * s.frozen_16bit  # ZeRO-0: 16-bit adapters + 16-bit rest + NF4
    assert quant_bytes / s.quantized == pytest.approx(0.516, abs=0.0005)
    # the 16-bit remainder is embeddings, LM head and norms
    assert s.frozen_16bit == 2 * 32000 * 4096 + 33 * 4096 + 32 * 4096


def test_int8_bytes_per_param():
    s = setup("llama2-7b", 1, task="finetune", method="lora", quantization="int8")
    w = model_state_bytes(s).weights
    assert (w - 2 * s.trainable - 2 * s.frozen_16bit) / s.quantized == pytest.approx(1.0)


@pytest.mark.parametrize("kw", [
    dict(), dict(recompute=True), dict(flash_attention=False), dict(task="finetune", method="qlora"),
    dict(model="mixtral-8x7b", zero_stage=3),
], ids=["full", "recompute", "eager", "qlora", "moe"])
def test_activations_grow_linearly_with_micro_batch(kw):
    a = [activation_bytes(setup(micro_batch_size=m, seq_len=1024, **kw)) for m in (1, 2, 3, 8)]
    assert a[0] > 0
    for m, v in zip((1, 2, 3, 8), a):
        assert v == pytest.approx(m * a[0], rel=1e-12)
    # and the peak grows by the same activations plus the logits buffer, nothing else (ZeRO-3 on 8 GPUs:
    # the start of backward is the peak, not the optimizer step)
    z3 = {"zero_stage": 3, **kw}
    m1 = 8 if kw.get("recompute") else 1  # enough checkpointed activations to outweigh the step's buffers
    p1 = training_memory(setup(micro_batch_size=m1, seq_len=1024, **z3), EFF)
    p2 = training_memory(setup(micro_batch_size=2 * m1, seq_len=1024, **z3), EFF)
    assert p2.peak - p1.peak == pytest.approx(p1.activations + EFF.logits_bytes_per_vocab * resolve_model(
        kw.get("model", "llama2-7b")).vocab_size * 1024 * m1, rel=1e-9)


def test_activation_bytes_per_token_llama2_7b_by_hand():
    # Hugging Face LlamaDecoderLayer, bf16, full training, SDPA/flash, per token per layer:
    #   two RMSNorm fp32 inputs 2 x 4h; q/k/v input 2h; flash keeps q, k, v, out 2 x 4h (MHA) and an fp32
    #   LSE per head 4 x 32; o_proj input 2h; gate/up input 2h; gate, SiLU(gate), up 3 x 2i; down input 2i
    h, i = 4096, 11008
    per_token_layer = 8 * h + 2 * h + 8 * h + 4 * 32 + 2 * h + 2 * h + 6 * i + 2 * i
    assert per_token_layer == 178_304
    T = 2048
    s = setup("llama2-7b", 1, seq_len=T)
    head = (4 + 2) * h * T  # final norm fp32 input + LM-head input
    assert activation_bytes(s) == pytest.approx(32 * per_token_layer * T + head, rel=1e-12)


@pytest.mark.parametrize("seq", [1024, 2048, 4096])
def test_eager_attention_adds_the_score_matrix(seq):
    b = 2

    def extra(s_len):
        flash = activation_bytes(setup(micro_batch_size=b, seq_len=s_len))
        return activation_bytes(setup(micro_batch_size=b, seq_len=s_len, flash_attention=False)) - flash

    scores = 32 * b * 32 * seq * seq  # layers x batch x heads x s^2
    # extra(s) = a s^2 + c s: the second difference isolates the score matrix exactly. The softmax output
    # in fp32 (4 B) and its bf16 copy for A.V (2 B) are kept: 6 B per score.
    assert (extra(2 * seq) - 2 * extra(seq)) / 2 == pytest.approx(6 * scores, rel=1e-9)
    # the linear part (eager keeps q and repeated k/v but no output/LSE) is a few percent at most
    assert extra(seq) == pytest.approx(6 * scores, rel=0.05)
    assert extra(seq) > 4 * scores


def test_eager_extra_is_quadratic_in_seq_len():
    d = [activation_bytes(setup(seq_len=s, flash_attention=False)) - activation_bytes(setup(seq_len=s)) for s in (2048, 4096)]
    assert d[1] / d[0] == pytest.approx(4.0, rel=0.03)


@pytest.mark.parametrize("model", ["tinyllama-1.1b", "llama2-7b", "mixtral-8x7b"])
@pytest.mark.parametrize("flash", [True, False])
def test_recompute_reduces_activations(model, flash):
    plain = setup(model, 1, seq_len=2048, micro_batch_size=2, flash_attention=flash)
    rc = setup(model, 1, seq_len=2048, micro_batch_size=2, flash_attention=flash, recompute=True)
    a_plain, a_rc = activation_bytes(plain), activation_bytes(rc)
    L, h, T = plain.arch.num_hidden_layers, plain.arch.hidden_size, plain.tokens
    assert a_rc < a_plain / 4  # >= 22 layers: most of the saved tensors are gone
    assert a_rc >= L * 2 * h * T  # but every layer's 16-bit input checkpoint stays
    # the peak never rises (it may stay put when the optimizer step, not the activations, sets it)
    assert training_memory(rc, EFF).peak <= training_memory(plain, EFF).peak


@pytest.mark.parametrize("n", [2, 8])
def test_zero0_states_are_whole_on_every_rank_unless_fp32_accumulation_splits_them(n):
    """DeepSpeed 0.19 with bf16 and ZeRO-0: its default (16-bit accumulation) wraps Adam in FP16_Optimizer, whose fp32
    masters and moments are whole on each rank (12 bytes/param whatever the GPU count); with grad_accum_dtype fp32 it
    runs BF16_Optimizer, which splits them (12/n) and keeps an fp32 gradient of every parameter (4 bytes/param)."""
    whole = model_state_bytes(setup(n=n, zero_stage=0))
    split = model_state_bytes(setup(n=n, zero_stage=0, grad_accum_dtype="fp32"))
    p = setup(n=n, zero_stage=0).trainable
    assert whole.optimizer_states == pytest.approx(12.0 * p)
    assert split.optimizer_states == pytest.approx(12.0 * p / n)
    assert split.grads_kept == pytest.approx(4.0 * p)
    assert whole.grads_kept == 0.0


def test_zero0_optimizer_step_covers_every_parameter_on_each_rank():
    from advisor.predictor import calibration_for
    from models.step_time import training_step_time

    cal = calibration_for(resolve_platform("h100x8"))
    whole = training_step_time(setup(zero_stage=0), cal.eff, cal.ceilings).optimizer
    split = training_step_time(setup(zero_stage=0, grad_accum_dtype="fp32"), cal.eff, cal.ceilings).optimizer
    assert whole == pytest.approx(8 * split)


def test_the_paper_runs_zero0_with_fp32_accumulation():
    from knowledge.measurements import flags_to_case

    assert flags_to_case("Naive", "pretrain")["grad_accum_dtype"] == "fp32"
    assert "grad_accum_dtype" not in flags_to_case("Z2+O", "pretrain")


def test_forward_peak_of_fp32_weights_with_recomputation_matches_the_anatomy():
    """PyTorch full training (fp32 weights under bf16 autocast) with recomputation peaks in forward: autocast's 16-bit
    copies of the weights live until forward ends and the loss upcasts the logits, though neither is kept for backward.
    Granite-3.0-2B, mb 8 x 4096 on one H100 (probes/anatomy.py): forward peak 58.98 GiB, backward's 57.19; the same
    step under DeepSpeed's bf16 peaks in backward at 56.60."""
    import json
    from pathlib import Path

    from advisor.predictor import Predictor

    log = Path(__file__).resolve().parents[1] / "knowledge/measurements/own/logs/h100-anatomy-4-2026-11-24.jsonl"
    measured = {r["id"]: r.get("memory_gib") for r in map(json.loads, log.read_text().splitlines())}
    base = dict(id="x", hardware="h100x1", model="knowledge/data/configs/granite-3.0-2b.json", task="pretrain",
                recompute=True, flash_attention=True, micro_batch_size=8, seq_len=4096)
    pt = Predictor().predict(TrainCase(**base, engine="pytorch")).peak_mem_gib
    ds = Predictor().predict(TrainCase(**base, engine="deepspeed", zero_stage=1)).peak_mem_gib
    assert pt == pytest.approx(measured["h100a4-gran-pt-rc-mb8-s4096"]["forward_peak"], rel=0.03)
    assert ds == pytest.approx(measured["h100a4-gran-z1-rc-mb8-s4096"]["backward_peak"], rel=0.03)


def test_loss_backward_holds_two_fp32_gradients_of_the_logits():
    """The anatomy of OLMo-2-1B (mb 16 x 2048) and StableLM-2-1.6B (mb 8 x 4096) on one H100: backward peaks 24.5 GiB
    above the end of forward, 8 bytes per vocabulary entry per token (100,352 x 32,768); their traces saw 3 GiB less."""
    import json
    from pathlib import Path

    from advisor.predictor import Predictor

    log = Path(__file__).resolve().parents[1] / "knowledge/measurements/own/logs/h100-anatomy-5-2026-11-24.jsonl"
    for r in map(json.loads, log.read_text().splitlines()):
        case = TrainCase.model_validate(r["case"])
        assert Predictor().predict(case).peak_mem_gib == pytest.approx(r["memory_gib"]["backward_peak"], rel=0.03)


def test_recomputation_never_holds_the_loss_buffers_and_a_rebuilt_layer_at_once():
    """Backward frees the loss's buffers at the LM head, before it rebuilds the last layer: the start-of-backward peak
    holds the larger of the two, not both (Llama-2-7B, ZeRO-3 with optimizer offload, recomputation, mb 32 x 2k on
    one H100: 54.4 GiB measured; with both counted the hand count said 66.2)."""
    import json
    from pathlib import Path

    from models.memory import rebuilt_layer_bytes, transient_bytes

    s = setup(n=1, zero_stage=3, offload="optimizer", recompute=True, micro_batch_size=32, seq_len=2048)
    rebuilt, logits = rebuilt_layer_bytes(s), transient_bytes(s, EFF)
    assert 0 < rebuilt < logits
    m = training_memory(s, EFF)
    assert m.activations == pytest.approx(activation_bytes(s) - rebuilt)
    assert rebuilt_layer_bytes(setup(n=1, recompute=False)) == 0
    row = next(json.loads(x) for x in (Path(__file__).resolve().parents[1] / "knowledge/measurements/own/"
                                       "h100-confirm-offload-2026-11-23.jsonl").read_text().splitlines()
               if "-z3-mb32-" in x)
    case = TrainCase.model_validate(row["case"])
    got = training_memory(derive(case, resolve_model(case.model), resolve_platform(case.hardware)), EFF).peak / 2**30
    assert got == pytest.approx(row["measured"]["peak_mem_gib"], rel=0.04)


def test_zero3_keeps_each_layers_gathered_expert_weights_until_its_backward():
    """MoE layers' stacked expert weights saved for backward as views of the gathered parameter: under ZeRO-3 every
    layer's 16-bit experts stay on the GPU until its backward (anatomy on two H200s: Qwen1.5-MoE cut to 6 and 12 layers
    and OLMoE, within 4% with them; 11-17% under without), none under ZeRO-2 nor with recomputation; the whole
    24-layer Qwen1.5-MoE, which ran out of memory, no longer fits. Llama-4's experts, multiplied by bmm (which saves the
    parameter itself), are released: its LoRA under ZeRO-3 on two H100s within 4% without them."""
    import json
    from pathlib import Path

    from advisor.predictor import Predictor
    from models.memory import zero3_retained_param_bytes

    s = setup("mixtral-8x7b", 8, zero_stage=3)
    experts = 8 * 3 * 4096 * 14336
    assert zero3_retained_param_bytes(s) == pytest.approx(2 * experts * 32)
    assert zero3_retained_param_bytes(setup("mixtral-8x7b", 8, zero_stage=3, recompute=True)) == 0
    assert zero3_retained_param_bytes(setup("mixtral-8x7b", 8, zero_stage=2)) == 0
    assert zero3_retained_param_bytes(setup("llama2-7b", 8, zero_stage=3)) == 0

    own = Path(__file__).resolve().parents[1] / "knowledge/measurements/own"
    rows = [json.loads(x) for x in (own / "h200x2-moe-zero3-2026-11-27.jsonl").read_text().splitlines()]
    p = Predictor()
    ran = [r for r in rows if not r["measured"]["oom"]]
    assert len(ran) == 4 and any(r["case"]["zero_stage"] == 2 for r in ran)
    for r in ran:
        got = p.predict(TrainCase.model_validate(r["case"])).peak_mem_gib
        assert got == pytest.approx(r["measured"]["peak_mem_gib"], rel=0.04), r["case"]["id"]
    oom = next(r for r in rows if r["measured"]["oom"])
    assert not p.predict(TrainCase.model_validate(oom["case"])).fits
    l4 = next(json.loads(x) for x in (own / "h100x2-heldout-families-2026-11-27.jsonl").read_text().splitlines()
              if "-l4-lora-z3-" in x)
    case = TrainCase.model_validate(l4["case"])
    assert p.traces.trace(resolve_model(case.model), case).params.zero3_retained_per_layer == 0
    assert p.predict(case).peak_mem_gib == pytest.approx(l4["measured"]["peak_mem_gib"], rel=0.04)


def test_zero2_offload_under_the_pinned_release_peaks_at_weights_plus_every_16bit_gradient():
    """ZeRO-2 with the optimizer offloaded at 350 tokens (knowledge.deepspeed_releases): Llama-3.2-3B on one and two
    H200s and Llama-2-7B on two peak at their weights plus their 16-bit gradients; the study's release held none."""
    import json
    from pathlib import Path

    from advisor.predictor import Predictor

    logs = Path(__file__).resolve().parents[1] / "knowledge/measurements/own/logs"
    anatomy = [(r["case"], r["memory_gib"]["warmup_peak"])
               for r in map(json.loads, (logs / "h200x2-z2off-anatomy-2026-11-27.jsonl").read_text().splitlines())]
    runs = [(r["case"], r["measured"]["peak_mem_gib"])
            for r in map(json.loads, (logs / "h200x2-study-p2p-2026-11-27.jsonl").read_text().splitlines())
            if r["case"]["zero_stage"] == 2 and r["case"]["offload"] == "optimizer" and r["measured"].get("peak_mem_gib")]
    assert len(anatomy) == 3 and runs
    for case, peak_gib in anatomy + runs:
        assert Predictor().predict(TrainCase.model_validate(case)).peak_mem_gib == pytest.approx(peak_gib, rel=0.04)
        older = TrainCase.model_validate({**case, "deepspeed_version": "0.12"})
        assert Predictor().predict(older).peak_mem_gib < 0.8 * peak_gib


def test_one_rank_zero3_gathers_nothing_of_its_own():
    """With one rank (parameters on the GPU), DeepSpeed's gather points each parameter at its own partition: no working
    set, no expert weights held apart from it (one H200, 2026-11-29: fourteen ZeRO-1/3 runs, OLMoE and DeepSeek-V2-Lite
    LoRA under ZeRO-3 peaked 12.5 and 28 GiB under a count that held their experts). Two ranks still gather."""
    import json
    from pathlib import Path

    from advisor.predictor import Predictor
    from models.memory import zero3_retained_param_bytes

    assert zero3_retained_param_bytes(setup("mixtral-8x7b", 1, zero_stage=3)) == 0
    assert zero3_retained_param_bytes(setup("mixtral-8x7b", 2, zero_stage=3)) > 0
    assert zero3_retained_param_bytes(setup("mixtral-8x7b", 1, zero_stage=3, offload="optimizer+params")) > 0
    own = Path(__file__).resolve().parents[1] / "knowledge/measurements/own"
    rows = [json.loads(x) for x in (own / "h200-zero3-single-2026-11-29.jsonl").read_text().splitlines()]
    p = Predictor()
    assert len(rows) == 14
    for r in rows:
        got = p.predict(TrainCase.model_validate(r["case"])).peak_mem_gib
        assert got == pytest.approx(r["measured"]["peak_mem_gib"], rel=0.04), r["case"]["id"]
