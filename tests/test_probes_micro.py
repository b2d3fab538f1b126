"""CPU toy-size tests of the micro probes, the collectives probe, run_profile and `advisor probe`."""

from __future__ import annotations

import json
import math
import os
import socket
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from advisor.commands import probe
from knowledge.schema import AttentionPoint, CollectivePoint, GemmPoint, Profile
from probes import collectives, micro, profile
from probes.timing import time_fn


def _ok(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def test_time_fn_is_median_per_call() -> None:
    calls = []

    def nap() -> None:
        calls.append(1)
        time.sleep(0.005)

    t = time_fn(nap, "cpu", warmup=2, repeats=3, inner=2)
    assert len(calls) == 2 + 3 * 2
    assert 0.0049 < t < 0.0095  # per call: a region of two calls takes at least 0.01 s


def test_gemm_tflops_and_sweep() -> None:
    assert 0 < micro.gemm_tflops(64, 96, 128, "fp32", "cpu", repeats=2) < 100  # no CPU does 100 TFLOP/s
    pts = micro.gemm_sweep(list(micro.TOY_GEMM_SHAPES), "cpu", repeats=2)
    assert [(p.m, p.n, p.k) for p in pts] == list(micro.TOY_GEMM_SHAPES)
    assert all(isinstance(p, GemmPoint) and _ok(p.tflops) for p in pts)


def test_default_gemm_shapes_are_the_models_own() -> None:
    full = micro.default_gemm_shapes()
    assert len(full) == len(set(full))
    must = [(256, 4096, 4096), (256, 11008, 4096), (1024, 4096, 11008), (16384, 28672, 8192), (4096, 13824, 5120)]
    assert all(shape in full for shape in must)
    assert {m for m, _, _ in full} == set(micro.TOKENS)
    assert {h for _, _, h in full} >= {2048, 4096, 5120, 8192}
    assert set(micro.default_gemm_shapes(quick=True)) < set(full)


def test_memory_launch_and_link() -> None:
    assert 0.1 < micro.copy_bandwidth_gbs("cpu", 4 * 2**20) < 10_000
    launch = micro.launch_overhead_s("cpu", n_launches=64)
    assert 1e-8 < launch < 1e-3
    h2d, d2h = micro.host_device_gbs("cpu", 2**20)
    assert _ok(h2d) and _ok(d2h)


def test_cpu_adam_fallback_and_deepspeed_choice() -> None:
    rate = micro.cpu_adam_gparams_per_s(200_000, use_deepspeed=False, repeats=2)
    assert rate.impl in ("torch-adamw-fused", "torch-adamw") and _ok(rate.gparams_per_s)
    # Without leave to build, DeepSpeed's op is used only when prebuilt or cached; either way a rate.
    rate = micro.cpu_adam_gparams_per_s(200_000, allow_build=False, repeats=2)
    assert rate.impl in ("deepspeed-cpu-adam", "torch-adamw-fused", "torch-adamw") and _ok(rate.gparams_per_s)


def test_attention_fused_and_eager() -> None:
    a = micro.attention_fwd_bwd(1, 64, 2, 16, "cpu", repeats=2)
    assert isinstance(a, AttentionPoint) and (a.batch, a.seq_len, a.heads, a.head_dim) == (1, 64, 2, 16)
    assert _ok(a.fused_fwd_bwd_s) and _ok(a.eager_fwd_bwd_s)


def test_bus_factor_nccl_tests_convention() -> None:
    assert collectives.bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert collectives.bus_factor("all_gather", 8) == pytest.approx(0.875)
    assert collectives.bus_factor("reduce_scatter", 2) == pytest.approx(0.5)
    assert collectives.bus_factor("all_reduce", 1) == 0.0
    with pytest.raises(ValueError):
        collectives.bus_factor("broadcast", 2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        pts = collectives.measure_collectives(collectives.TOY_SIZES, repeats=2, warmup=1)
        Path(f"{out}.{rank}").write_text("".join(p.model_dump_json() + "\n" for p in pts))
    finally:
        dist.destroy_process_group()


def test_collectives_two_gloo_ranks(tmp_path: Path) -> None:
    import torch.multiprocessing as mp

    out = str(tmp_path / "coll")
    mp.spawn(_worker, args=(2, _free_port(), out), nprocs=2, join=True)
    lines = [Path(f"{out}.{r}").read_text().splitlines() for r in (0, 1)]
    per_rank = [[CollectivePoint(**json.loads(ln)) for ln in rank_lines] for rank_lines in lines]
    pts = per_rank[0]
    assert per_rank[0] == per_rank[1]  # every rank reports the slowest rank's time
    assert sorted((p.op, p.size_bytes) for p in pts) == sorted(
        (op, s) for op in collectives.OPS for s in collectives.TOY_SIZES
    )
    for p in pts:
        assert p.ranks == 2 and _ok(p.time_s) and _ok(p.busbw_gbs)
        factor = 1.0 if p.op == "all_reduce" else 0.5
        assert p.busbw_gbs == pytest.approx(p.size_bytes / p.time_s / 1e9 * factor)
    assert os.environ.get("NCCL_NVLS_ENABLE", "0") == "0"


def test_collectives_entry_alone_and_launcher_timeout(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    assert collectives.main(["--out", str(out), "--toy", "--repeats", "2"]) == 0
    pts = [CollectivePoint(**json.loads(ln)) for ln in out.read_text().splitlines()]
    assert len(pts) == 3 * len(collectives.TOY_SIZES) and all(p.ranks == 1 and p.busbw_gbs == 0 for p in pts)
    assert os.environ["NCCL_NVLS_ENABLE"] == "0"
    warnings: list[str] = []
    assert profile.run_collectives(2, quick=True, toy=True, timeout_s=0.3, warn=warnings.append) == []
    assert warnings and "timed out" in warnings[0]


@pytest.mark.slow
def test_collectives_through_torchrun() -> None:
    # The launcher run_profile uses on several GPUs, here with two gloo ranks (about 6 s of CPU).
    warnings: list[str] = []
    pts = profile.run_collectives(2, quick=True, toy=True, timeout_s=60, warn=warnings.append)
    assert not warnings and len(pts) == 3 * len(collectives.TOY_SIZES)
    assert all(p.ranks == 2 and _ok(p.busbw_gbs) for p in pts)


def _check_profile(p: Profile) -> None:
    assert p.gpu_name == "cpu" and p.environment.gpu_name == "cpu" and p.gpu_id is None
    ceilings = (p.matmul_tflops, p.memory_bandwidth_gbs, p.launch_overhead_s, p.h2d_gbs, p.d2h_gbs)
    assert all(_ok(x) for x in (*ceilings, p.cpu_adam_gparams_per_s)), p
    assert p.gemm and all(_ok(g.tflops) for g in p.gemm)
    assert p.attention and all(_ok(a.fused_fwd_bwd_s) and _ok(a.eager_fwd_bwd_s) for a in p.attention)
    assert p.environment.torch and p.environment.date.startswith("20")


def test_run_profile_cpu_progress() -> None:
    seen: list[tuple[str, float]] = []
    p = profile.run_profile(quick=True, device="cpu", progress=lambda m, f: seen.append((m, f)))
    _check_profile(p)
    fracs = [f for _, f in seen if f >= 0]
    assert fracs == sorted(fracs) and fracs[0] == 0.0 and fracs[-1] == 1.0
    assert any(m.startswith("note: CPU Adam measured with") for m, f in seen if f < 0)


def _app() -> typer.Typer:
    app = typer.Typer()
    probe.register(app)

    @app.callback()
    def _root() -> None:  # keeps `probe` a named subcommand, as under the real root app
        pass

    return app


def test_cli_probe_writes_profile_and_keeps_backup(tmp_path: Path) -> None:
    out = tmp_path / "tmp" / "profile.json"
    out.parent.mkdir()
    out.write_text('{"old": true}\n')
    r = CliRunner().invoke(_app(), ["probe", "--device", "cpu", "--quick", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "TFLOP/s" in r.stdout and "toy" in r.stderr
    _check_profile(Profile.model_validate_json(out.read_text()))
    assert Path(f"{out}.bak").read_text() == '{"old": true}\n'


def test_cli_probe_unwritable_out_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = CliRunner().invoke(_app(), ["probe", "--device", "cpu", "--out", str(blocker / "profile.json")])
    assert r.exit_code == 1
    assert r.stderr.startswith("advisor probe: error:") and r.stderr.count("\n") == 1
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)


def test_cli_probe_failure_keeps_existing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "profile.json"
    out.write_text("good\n")

    def broken(**_: object) -> Profile:
        raise RuntimeError("probe crashed\nsecond line")

    monkeypatch.setattr(profile, "run_profile", broken)
    r = CliRunner().invoke(_app(), ["probe", "--device", "cpu", "--out", str(out)])
    assert r.exit_code == 1 and "probe crashed" in r.stderr and "second line" not in r.stderr
    assert out.read_text() == "good\n" and not Path(f"{out}.bak").exists()
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


def test_anatomy_rows_become_measurements_of_rank_0_with_failures_kept_apart() -> None:
    """Each case's first anatomy row (rank 0) becomes a measurement row: the warm-up's peak, the timed step, a device OOM
    kept as one, a crash dropped (it says nothing of speed or memory); the rows load as measurements."""
    from knowledge.measurements import Measurement
    from probes.anatomy import measurement_rows

    cases = [{"id": c, "hardware": "h100x2", "model": "llama2-7b", "task": "pretrain", "gpus": 2} for c in ("a", "b", "c")]
    ran = {"id": "a", "tokens_per_s": 1000.0, "step_s": 8.2, "memory_gib": {"warmup_peak": 40.5, "forward_end": 30.0}}
    rows = measurement_rows(
        [ran, {**ran, "tokens_per_s": 999.0}, {"id": "b", "failure": "device_oom", "error": "CUDA out of memory"},
         {"id": "c", "failure": "crash", "error": "boom"}, {"id": "z", "tokens_per_s": 1.0}],
        cases, {"gpu_name": "NVIDIA H100 80GB HBM3", "gpu_count": 2, "date": "2026-11-27T17:00:00+00:00",
                "command": "bash probes/device_anatomy.sh cases.jsonl"}, "pre")
    assert [r["case"]["id"] for r in rows] == ["pre-a", "pre-b"]
    a, b = rows
    assert a["measured"]["tokens_per_s"] == 1000.0 and a["measured"]["peak_mem_gib"] == 40.5 and not a["measured"]["oom"]
    assert b["measured"]["oom"] and b["measured"]["tokens_per_s"] is None and b["measured"]["failure"] == "device_oom"
    for r in rows:
        Measurement.model_validate(r)


def test_anatomy_cpu_profile_names_the_function_that_held_the_host_and_times_each_phase() -> None:
    """``--cpu-profile``: each phase's wall with the device drained around it, and the step's host time by function,
    the heaviest first (the anatomy of a hook-bound ZeRO-3 step reads the hooks' calls from it)."""
    import time

    from probes.anatomy import cpu_top, phase_walls

    drained: list[str] = []
    box: dict = {}
    walls = phase_walls((("forward", lambda: box.update(loss=time.sleep(0.02))), ("backward", lambda: box.pop("loss"))),
                        lambda: drained.append("sync"))
    assert list(walls) == ["forward", "backward"] and walls["forward"] >= 0.02 > walls["backward"]
    assert drained == ["sync"] * 4 and not box

    def busy_hook() -> None:
        sum(i * i for i in range(20_000))

    def step() -> None:
        for _ in range(30):
            busy_hook()

    top = cpu_top(step, lambda: None, n=5)
    assert top["wall_s"] > 0 and len(top["top"]) <= 5 and len(top["top_cumulative"]) <= 10
    hook = next(r for r in top["top_cumulative"] if r["fn"].endswith(":busy_hook"))
    assert hook["calls"] == 30 and hook["cumtime_s"] <= top["wall_s"]
    assert top["top"] == sorted(top["top"], key=lambda r: -r["tottime_s"])
