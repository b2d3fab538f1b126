"""PyTorch DDP's reducer costs the host a hook per trainable tensor in the backward that all-reduces
(``Efficiencies.ddp_hook_s``): anatomy 34 on two H200s, StableLM-2 LoRA's backward 37 ms on one rank, 50-57 ms on two."""

from __future__ import annotations

import pytest

from advisor.predictor import calibration_for
from knowledge.catalog import resolve_platform
from knowledge.schema import TrainCase
from tests.step_times import step_time

KW = dict(hardware="h200x2", model="tinyllama-1.1b", task="finetune", method="lora", seq_len=512, micro_batch_size=1)


def _backward_host_s(case: TrainCase, hook_s: float) -> float:
    """Exposed host seconds of the backward of ``case`` with DDP's hook set to ``hook_s``."""
    return step_time(case, ddp_hook_s=hook_s).backward_cpu_exposed


def test_only_pytorch_on_several_ranks_pays_the_reducer():
    one = TrainCase(id="a", gpus=1, engine="pytorch", **KW)
    ds = TrainCase(id="b", gpus=2, engine="deepspeed", zero_stage=2, **KW)
    for case in (one, ds):  # one rank has no DDP; DeepSpeed has its own hooks (zero12_hook_s)
        assert _backward_host_s(case, 1e-3) == pytest.approx(_backward_host_s(case, 0.0))
    two = TrainCase(id="c", gpus=2, engine="pytorch", **KW)
    assert _backward_host_s(two, 1e-3) > _backward_host_s(two, 0.0) + 0.05  # 88 adapter tensors x 1 ms, host-bound


def test_the_hook_counts_tensors_every_linear_more_than_the_attention_projections():
    attn = TrainCase(id="q", gpus=2, engine="pytorch", **KW)
    every = TrainCase(id="e", gpus=2, engine="pytorch", lora_targets="all-linear", **KW)
    grow = [_backward_host_s(c, 1e-3) - _backward_host_s(c, 0.0) for c in (attn, every)]
    assert grow[1] > 1.5 * grow[0]  # seven adapted linears a layer against four


def test_accumulation_pays_it_once_a_step():
    """Micro-batches under ``no_sync`` fire no reducer copies: a step of four pays the hooks of one backward."""
    once = TrainCase(id="o", gpus=2, engine="pytorch", **KW)
    four = TrainCase(id="f", gpus=2, engine="pytorch", grad_accum=4, **{**KW, "seq_len": 512})
    grow1 = _backward_host_s(once, 1e-3) - _backward_host_s(once, 0.0)
    grow4 = _backward_host_s(four, 1e-3) - _backward_host_s(four, 0.0)
    assert grow1 > 0.05 and grow4 == pytest.approx(grow1, rel=0.35)  # not four times


def test_the_bundled_fit_prices_the_reducer_as_the_anatomies_measured_it():
    """Anatomies 34-35 (one rank against two): 40-250 us of a two-rank backward per trainable tensor (SmolLM2 on every
    linear, StableLM-2, Helium); the bundled fit must keep the cost inside what they span."""
    platform = resolve_platform("h200x2", 2)
    assert 20e-6 < calibration_for(platform).eff.ddp_hook_s < 300e-6
