"""ZeRO-Offload's pin_memory as a case knob: pageable buffers take their size, pinned ones the next power of two; pageable
copies run at the host's memcpy and hide nothing behind backward; the config, the label and the search carry it."""

from __future__ import annotations

from advisor.predictor import calibration_for
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.schema import TrainCase
from models.deepspeed_config import deepspeed_config
from models.memory import host_offload_bytes, offload_buffer_bytes
from models.setup import derive
from models.training import predict_training


def _case(**kw) -> TrainCase:
    fields = dict(id="p", hardware="h200x2", model="llama2-7b", task="pretrain", zero_stage=2, offload="optimizer",
                  micro_batch_size=1, seq_len=512, omp_threads=1)
    return TrainCase(**{**fields, **kw})


def _setup(case: TrainCase):
    return derive(case, resolve_model(case.model), resolve_platform(case.hardware, case.gpus))


def test_pageable_buffers_take_their_size_pinned_ones_a_power_of_two():
    assert offload_buffer_bytes(3 * 2**30, pinned=True) == 4 * 2**30
    assert offload_buffer_bytes(3 * 2**30, pinned=False) == 3 * 2**30
    pinned = host_offload_bytes(_setup(_case()))
    pageable = host_offload_bytes(_setup(_case(offload_pin_memory=False)))
    # 2 ranks x 3.37 B parameters: the fp32 master and gradient partitions, 13.5 GB each, pinned as 16 GiB blocks
    saved_gib = (pinned - pageable) / 2**30
    assert 2 * 2 * (16 - 13.48e9 / 2**30) - 0.1 < saved_gib < 2 * 2 * (16 - 13.48e9 / 2**30) + 0.1


def test_pageable_offload_is_slower_and_lighter_on_the_host():
    platform = resolve_platform("h200x2")
    arch = resolve_model("llama2-7b")
    cal = calibration_for(platform)
    pinned = predict_training(_case(), arch, platform, cal)
    pageable = predict_training(_case(offload_pin_memory=False), arch, platform, cal)
    assert pageable.step_time_s > pinned.step_time_s * 1.1
    assert pageable.host_mem_gib < pinned.host_mem_gib - 5


def test_the_config_writes_the_cases_pin_memory():
    gpu = resolve_platform("h200x2").gpu
    for pin in (True, False):
        zero = deepspeed_config(_case(zero_stage=3, offload="optimizer+params", offload_pin_memory=pin), gpu, 2)["zero_optimization"]
        assert zero["offload_optimizer"]["pin_memory"] is pin and zero["offload_param"]["pin_memory"] is pin


def test_a_host_short_of_ram_for_pinned_buffers_gets_the_offload_pageable():
    from advisor.explain import describe
    from advisor.search import Evaluator, SearchSpec
    from knowledge.catalog import with_host
    from knowledge.efficiency import load_efficiencies

    knobs = dict(method="full", engine="deepspeed", zero_stage=2, offload="optimizer", quantization="none",
                 recompute=False, flash_attention=True, micro_batch_size=1)
    # two H200s: pinned 132.7 GiB of host RAM, pageable 118.9 (measured 135.3 and 116.1); 134 GiB leave 131.7 usable
    roomy = Evaluator(SearchSpec(hardware="h200x2", model="llama2-7b", task="pretrain", seq_len=512), load_efficiencies())
    assert roomy.evaluate(knobs).case.offload_pin_memory is True
    short = Evaluator(SearchSpec(hardware=with_host("h200x2", 134), model="llama2-7b", task="pretrain", seq_len=512),
                      load_efficiencies())
    pick = short.evaluate(knobs)
    assert pick is not None and pick.case.offload_pin_memory is False
    assert "offload opt pageable" in describe(pick.case) and "pageable" not in describe(_case())
    tiny = Evaluator(SearchSpec(hardware=with_host("h200x2", 64), model="llama2-7b", task="pretrain", seq_len=512),
                     load_efficiencies())
    assert tiny.evaluate(knobs) is None


def test_zero3_fetches_offloaded_parameters_as_fast_pageable_and_copies_gradients_every_micro_batch():
    """Measured on one H200 (grid h200-study-offload-batch): ZeRO-3's forward took the same pinned or not, and four
    micro-batches a step repeated the gradient copy to the host in each backward."""
    from tests.step_times import step_time

    z3o = dict(hardware="h200x1", model="llama3.2-3b", zero_stage=3, offload="optimizer+params", seq_len=350)

    def step(**kw):
        return step_time(_case(**{**z3o, **kw}))

    pinned, pageable = step(), step(offload_pin_memory=False)
    assert pageable.forward_offload == pinned.forward_offload > 0
    assert pageable.backward_offload > pinned.backward_offload + 1.0  # the gradients go down through the staging copy
    accum = step(offload_pin_memory=False, grad_accum=4)
    one = pageable.backward_offload - pinned.backward_offload  # the copies beyond what pinned ones cost
    four = accum.backward_offload - step(grad_accum=4).backward_offload
    # measured beyond the pinned runs: 2.3 s at one micro-batch a step, 5.8 s at four (2.5x): each micro-batch's
    # 16-bit round trip through the host buffer, and the fp32 partition once (8 B a parameter, then 20 B)
    assert 2.2 < four / one < 2.8


def test_zero3_offload_moves_gradients_through_the_host_buffer_and_back():
    """DeepSpeed 0.19.8 (stage3.partition_grads): every micro-batch's gradient partition goes into the host buffer and
    back, in the accumulation dtype; the fp32 partition goes down once, for CPU Adam. ZeRO-2 copies the fp32 partition
    once, and its 16-bit round trips only under 16-bit accumulation."""
    from models.step_time import offload_grad_copy_bytes

    platform = resolve_platform("h200x1")

    def copied(**kw):
        case = _case(hardware="h200x1", model="llama3.2-1b", offload="optimizer", seq_len=350, **kw)
        return offload_grad_copy_bytes(derive(case, resolve_model(case.model), platform))

    assert copied(zero_stage=3) == 8.0
    assert copied(zero_stage=3, grad_accum=3) == 16.0
    assert copied(zero_stage=3, grad_accum=3, grad_accum_dtype="fp32") == 28.0
    assert copied(zero_stage=2) == copied(zero_stage=2, grad_accum=3, grad_accum_dtype="fp32") == 4.0
    assert copied(zero_stage=2, grad_accum=3) == 16.0
    assert copied(zero_stage=1, grad_accum=3) == 4.0


def test_zero3_offload_brings_the_largest_gradient_back_and_converts_it_at_the_end_of_backward():
    """A one-micro-batch ZeRO-3 offload step of 350 tokens peaks at the end of backward, where DeepSpeed brings the
    largest gradient partition (a 128k-vocabulary embedding) back from the host buffer and converts it to fp32 for the
    copy down: Llama-3.2-1B peaked at 5.6 GiB on one H200 (logs/h200-zero3-offload-copies-2026-11-29), 4.1 predicted
    without the two copies."""
    from models.memory import offload_grad_transient_bytes, training_memory

    platform = resolve_platform("h200x1")
    cal = calibration_for(platform)

    def setup(**kw):
        case = _case(**{**dict(hardware="h200x1", model="llama3.2-1b", zero_stage=3, offload="optimizer", seq_len=350,
                               offload_pin_memory=False), **kw})
        return derive(case, resolve_model(case.model), platform)

    s = setup()
    assert offload_grad_transient_bytes(s) == (2 + 4) * s.params.embedding == 6 * 128256 * 2048
    assert 4.4 < training_memory(s, cal.eff).peak / 2**30 < 5.6
    assert offload_grad_transient_bytes(setup(grad_accum_dtype="fp32")) == 4 * s.params.embedding
    assert offload_grad_transient_bytes(setup(method="lora", task="finetune")) == 0.0
    assert offload_grad_transient_bytes(setup(zero_stage=2)) == 0.0
