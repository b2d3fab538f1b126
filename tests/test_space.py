"""advisor.space is the one definition of the configuration space: the search, the explorer and
deepspeed-config read it, and it agrees with what the models accept."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from advisor import space
from advisor.search import SearchSpec, configurations
from knowledge.schema import TrainCase
from models.setup import check_combination

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("task", space.TRAIN_TASKS)
def test_every_combination_the_space_allows_the_model_accepts(task):
    for method, engine, zero, offload, quant in itertools.product(space.METHODS, space.ENGINES, space.ZERO_STAGES,
                                                                   space.OFFLOADS, space.QUANTIZATIONS):
        reason = space.invalid_reason(task, method, engine, zero, offload, quant)
        case = TrainCase(id="x", hardware="h100x1", model="7b", task=task, method=method, engine=engine, zero_stage=zero,
                         offload=offload, quantization=quant)
        if reason is None:
            check_combination(case)  # raises if the space allowed something the engines cannot run
        else:
            assert "\n" not in reason and len(reason) < 200


def test_search_enumerates_exactly_the_valid_combinations():
    spec = SearchSpec(hardware="h100x1", model="7b", task="finetune", engines=("deepspeed", "pytorch"))
    seen = {tuple(sorted((k, v) for k, v in c.items() if k not in ("micro_batch_size", "grad_accum"))) for c in configurations(spec, 1)}
    valid = {
        tuple(sorted(dict(method=m, engine=e, zero_stage=z, offload=o, quantization=q, recompute=r, flash_attention=f).items()))
        for m, e, z, o, q, r, f in itertools.product(space.METHODS, space.ENGINES, space.ZERO_STAGES, space.OFFLOADS,
                                                     space.QUANTIZATIONS, (False, True), (True, False))
        if space.invalid_reason("finetune", m, e, z, o, q) is None
    }
    assert seen == valid
    assert sum(1 for _ in configurations(SearchSpec(hardware="h100x1", model="7b", task="finetune"), 1)) == 896


def test_pretraining_has_no_adapters():
    assert space.methods_for("pretrain") == ("full",)
    assert "pre-training" in space.invalid_reason("pretrain", "lora")
    assert "serving" in space.invalid_reason("serve", "full")


def test_the_space_is_written_once():
    """The knob value lists live in advisor/space.py only (the schema's Literal types aside)."""
    for rel in ("advisor/search.py", "app/sidebar.py", "advisor/commands/deepspeed_config.py", "advisor/serve_search.py"):
        text = (ROOT / rel).read_text()
        assert '("none", "optimizer", "optimizer+params")' not in text, rel
        assert '("full", "lora", "qlora")' not in text, rel
        assert "(0, 1, 2, 3)" not in text and "[0, 1, 2, 3]" not in text, rel
