"""Launch hints follow the pick and the box (advisor.hints)."""

from __future__ import annotations

from advisor import hints
from knowledge.catalog import resolve_platform, with_host
from knowledge.schema import TrainCase


def _case(**kw) -> TrainCase:
    return TrainCase(id="x", hardware="rtx4090x8", model="70b", task="finetune", **kw)


def test_nccl_p2p_off_only_where_the_gpus_lack_peer_to_peer():
    case = _case()
    assert hints.launch_env(case, resolve_platform("rtx4090x8"), 8)["NCCL_P2P_DISABLE"] == "1"
    assert "NCCL_P2P_DISABLE" not in hints.launch_env(case, resolve_platform("rtx4090x8"), 1)
    # the RTX 3090 box without its bridges has no peer-to-peer either; with them, NVLink stays on
    assert hints.launch_env(case, resolve_platform("rtx3090x8-pcie"), 8)["NCCL_P2P_DISABLE"] == "1"
    assert "NCCL_P2P_DISABLE" not in hints.launch_env(case, resolve_platform("rtx3090x8"), 8)
    assert "NCCL_P2P_DISABLE" not in hints.launch_env(case, resolve_platform("a800x8"), 8)


def test_cpu_adam_threads_follow_the_host_cores():
    case = _case(zero_stage=2, offload="optimizer")
    assert hints.launch_env(case, resolve_platform(with_host("a800x8", cpu_cores=64)), 8)["OMP_NUM_THREADS"] == "8"
    assert "OMP_NUM_THREADS" not in hints.launch_env(_case(), resolve_platform("a800x8"), 8)


def test_zero3_qlora_stores_nf4_in_bf16_and_skips_the_fp32_upcast():
    z3 = " ".join(hints.hf_usage(_case(method="qlora", zero_stage=3, recompute=True), "out/ds.json"))
    assert "bnb_4bit_quant_storage=torch.bfloat16" in z3 and "skip peft.prepare_model_for_kbit_training" in z3
    assert "'use_reentrant': False" in z3 and "deepspeed='out/ds_hf.json'" in z3  # the Trainer's JSON beside the plain one
    z2 = " ".join(hints.hf_usage(_case(method="qlora", zero_stage=2), "ds.json"))
    assert "quant_storage" not in z2 and "call peft.prepare_model_for_kbit_training" in z2
    fp16 = " ".join(hints.hf_usage(_case(method="qlora", zero_stage=3), "ds.json", bf16=False))
    assert "bnb_4bit_quant_storage=torch.float16" in fp16 and "fp16=True" in fp16


def test_accelerate_config_points_at_the_json(tmp_path):
    text = hints.accelerate_config(_case(zero_stage=3), 8, tmp_path / "ds.json")
    assert f"deepspeed_config_file: {tmp_path / 'ds.json'}" in text and "num_processes: 8" in text
    assert "zero3_init_flag: true" in text
    assert "zero3_init_flag: false" in hints.accelerate_config(_case(zero_stage=2), 8, "ds.json")


def test_the_model_steps_cpu_adam_on_the_threads_the_launch_line_sets():
    """What the launch line exports is what the prediction assumes: the node's cores over its ranks, or the
    case's own ``omp_threads`` (a torchrun job's 1), in the line and in the CPU Adam time alike."""
    from advisor.predictor import calibration_for
    from knowledge.catalog import resolve_model
    from models.setup import derive
    from models.step_time import omp_threads
    from models.training import predict_training

    platform = resolve_platform("a800x8")
    arch = resolve_model("llama2-7b")
    case = TrainCase(id="x", hardware="a800x8", model="llama2-7b", task="pretrain", zero_stage=2, offload="optimizer")
    exported = int(hints.launch_env(case, platform, 8)["OMP_NUM_THREADS"])
    assert exported == omp_threads(derive(case, arch, platform)) == platform.host.cpu_cores // 8
    one = case.model_copy(update={"omp_threads": 1})
    assert hints.launch_env(one, platform, 8)["OMP_NUM_THREADS"] == "1"
    cal = calibration_for(platform)
    shared = predict_training(case, arch, platform, cal).breakdown.offload_s
    single = predict_training(one, arch, platform, cal).breakdown.offload_s
    assert shared < single  # six threads a rank step the optimizer faster than one
