"""Several nodes from the command line: recommend's hostfile and launch lines, deepspeed-config, the search
space, confirm through DeepSpeed's launcher with a localhost hostfile, probe launched on two "nodes"."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor import cli
from advisor.multinode import hostfile_text, parse_hostfile
from advisor.search import SearchSpec, configurations, run_search
from knowledge.efficiency import load_efficiencies
from knowledge.errors import AdvisorError
from knowledge.schema import Measurement, Profile

REPO = Path(__file__).resolve().parents[1]
TOY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
       "num_key_value_heads": 2, "vocab_size": 256}


def app():
    names = {c.name or c.callback.__name__ for c in cli.app.registered_commands}
    if "recommend" not in names:
        cli._register()
    return cli.app


def run(args: list[str]):
    return CliRunner().invoke(app(), args)


def test_recommend_four_nodes_writes_hostfile_config_and_launch_lines(tmp_path: Path) -> None:
    r = run(["recommend", "--hardware", "h100x8", "--nodes", "4", "--network", "ib-ndr", "--task", "pretrain",
             "--model", "70b", "--out-dir", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["nodes"], d["gpus_per_node"], d["gpus"]) == (4, 8, 32)
    top = d["recommendations"][0]
    assert top["configuration"]["nodes"] == 4 and top["deepspeed_config"]["train_batch_size"] == 32 * top["configuration"]["micro_batch_size"]
    hostfile = Path(d["hostfile_path"])
    assert parse_hostfile(hostfile.read_text()) == {f"worker-{i}": 8 for i in range(1, 5)}
    assert top["launch"] == f"deepspeed --hostfile {hostfile} --num_nodes 4 --num_gpus 8 train.py --deepspeed {tmp_path / 'ds_config.json'}"
    assert "torchrun --nnodes 4 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint worker-1:29500" in top["launch_torchrun"]
    assert "--num_machines 4 --num_processes 32 --machine_rank RANK --main_process_ip worker-1" in top["launch_accelerate"]
    accel = (tmp_path / "ds_config_accelerate.yaml").read_text()
    assert "num_machines: 4" in accel and "num_processes: 32" in accel and "deepspeed_multinode_launcher: standard" in accel
    assert json.loads((tmp_path / "ds_config.json").read_text()) == top["deepspeed_config"]


def test_slow_network_picks_zeropp_and_its_config_passes_deepspeed(tmp_path: Path) -> None:
    from advisor.commands.deepspeed_config import validate_with_deepspeed

    r = run(["recommend", "--hardware", "h100x8", "--nodes", "4", "--network", "eth-100", "--task", "pretrain",
             "--model", "70b", "--out-dir", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    top = json.loads(r.stdout)["recommendations"][0]
    zero = top["deepspeed_config"]["zero_optimization"]
    # quantized weights across the slow network; hpZ's secondary copy halves the micro-batch that fits, which costs
    # more than its intra-node backward gathers save once ZeRO-3's gathers are not hidden (2026-11-25)
    assert zero["stage"] == 3 and zero.get("zero_quantized_weights")
    assert "ZeRO++" in top["summary"]
    assert validate_with_deepspeed(top["deepspeed_config"]) is None


def test_recommend_table_says_nodes_and_network(tmp_path: Path) -> None:
    r = run(["recommend", "--hardware", "h100x8", "--nodes", "4", "--task", "pretrain", "--model", "70b", "--out-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "4 nodes × 8× NVIDIA H100" in r.stdout and "ib-ndr x8 = 3200 Gb/s per node" in " ".join(r.stdout.split())
    assert "deepspeed --hostfile" in r.stdout and "placeholder host names" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--nodes", "4", "--network", "ib-nrd"], "unknown network 'ib-nrd'; closest: ib-ndr"),
    (["--network", "ib-ndr"], "give --nodes 2 or more"),
    (["--nodes", "4", "--gpus", "30"], "cannot be spread evenly over 4 nodes"),
    (["--nodes", "4", "--global-batch-tokens", "1000"], "not a multiple of --seq-len 2048"),
])
def test_recommend_bad_multinode_input_is_one_line(args, message, tmp_path: Path) -> None:
    r = run(["recommend", "--hardware", "h100x8", "--task", "pretrain", "--model", "70b", "--out-dir", str(tmp_path), *args])
    assert r.exit_code == 1 and message in r.output and "Traceback" not in r.output
    assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1


def test_search_space_adds_zeropp_only_across_nodes() -> None:
    one = list(configurations(SearchSpec(hardware="h100x8", model="70b", task="pretrain"), 8))
    four = list(configurations(SearchSpec(hardware="h100x8", model="70b", task="pretrain", nodes=4), 32))
    assert not any("zero_quantized_weights" in k for k in one)
    variants = {(k.get("zero_quantized_weights"), k.get("zero_hpz_partition_size"), k.get("zero_quantized_gradients"))
                for k in four if k["zero_stage"] == 3 and k["offload"] == "none"}
    assert len(variants) == 8  # plain + the 7 combinations of qwZ, hpZ, qgZ
    assert not any(k.get("mics_shard_size") for k in four)  # gone from DeepSpeed 0.19.8: never searched


def test_tpe_search_across_nodes_agrees_with_enumeration() -> None:
    spec = SearchSpec(hardware="h100x8", model="70b", task="pretrain", nodes=4, network="eth-100")
    exhaustive, _, _ = run_search(spec, load_efficiencies(), sampler="brute")
    tpe, _, facts = run_search(spec, load_efficiencies(), sampler="tpe", n_trials=60)
    assert facts["sampler"] == "tpe"
    assert tpe[0].case == exhaustive[0].case


def test_deepspeed_config_across_nodes(tmp_path: Path) -> None:
    out = tmp_path / "ds.json"
    r = run(["deepspeed-config", "-H", "h100x8", "--nodes", "4", "-t", "pretrain", "-m", "70b", "--zero-stage", "3",
             "--zeropp", "qwZ,hpZ,qgZ", "--recompute", "--micro-batch-size", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    zero = json.loads(out.read_text())["zero_optimization"]
    assert (zero["zero_quantized_weights"], zero["zero_hpz_partition_size"], zero["zero_quantized_gradients"]) == (True, 8, True)
    assert (tmp_path / "hostfile").exists() and "validated by DeepSpeed" in r.stdout
    mics = json.dumps({"id": "m", "hardware": "h100x8", "nodes": 4, "model": "70b", "task": "pretrain", "zero_stage": 3, "mics_shard_size": 8})
    r = run(["deepspeed-config", "--case", mics, "--out", str(out)])
    assert r.exit_code == 1 and "MiCS is no longer in DeepSpeed" in r.output


def test_hostfile_round_trip_and_bad_lines() -> None:
    assert parse_hostfile(hostfile_text(3, 4)) == {"worker-1": 4, "worker-2": 4, "worker-3": 4}
    with pytest.raises(AdvisorError, match="line 2: 'node-b slot=8' is not '<host> slots=<GPUs>'"):
        parse_hostfile("node-a slots=8\nnode-b slot=8\n")
    with pytest.raises(AdvisorError, match="listed twice"):
        parse_hostfile("a slots=1\na slots=1\n")
    with pytest.raises(AdvisorError, match="lists no host"):
        parse_hostfile("# nothing\n")


def test_confirm_runs_through_deepspeeds_launcher_with_a_localhost_hostfile(tmp_path: Path) -> None:
    """What really runs: `deepspeed --hostfile` (no ssh for localhost) starts probes.run_case on the CPU."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("# one local node\nlocalhost slots=1\n")
    case = {"id": "toy-hostfile", "hardware": "h100x1", "model": TOY, "task": "pretrain", "engine": "pytorch",
            "seq_len": 16, "micro_batch_size": 2}
    rows = tmp_path / "rows.jsonl"
    env = {**os.environ, "ADVISOR_HOME": str(tmp_path / "home")}
    p = subprocess.run([sys.executable, "-m", "advisor.cli", "confirm", "--hardware", "h100x1", "--hostfile", str(hostfile),
                        "--case", json.dumps(case), "--device", "cpu", "--steps", "2", "--warmup", "1", "--no-refit",
                        "--out", str(rows), "--json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    report = json.loads(p.stdout)
    assert report["measured"]["tokens_per_s"] > 0
    (row,) = [Measurement.model_validate_json(line) for line in rows.read_text().splitlines()]
    assert row.environment.command.startswith("deepspeed --num_nodes 1 --num_gpus 1 --module probes.run_case")
    log = rows.with_suffix(".log").read_text()
    assert "deepspeed.launcher.launch" in log  # DeepSpeed's launcher ran the rank, not torchrun


def test_confirm_refuses_a_bad_hostfile(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("a slots=8\nb slots=4\n")
    r = run(["confirm", "--hardware", "h100x8", "--hostfile", str(hostfile), "--dry-run"])
    assert r.exit_code == 1 and "hosts offer different slots" in r.output
    hostfile.write_text("a slots=eight\n")  # malformed: exit 2, naming the line
    r = run(["confirm", "--hardware", "h100x8", "--hostfile", str(hostfile), "--dry-run"])
    assert r.exit_code == 2 and "line 1" in r.output and "Traceback" not in r.output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_probe_launched_on_two_nodes_adds_the_network_to_the_profile(tmp_path: Path) -> None:
    """Two torchrun agents on this machine rendezvous as two nodes of one rank each (gloo on the CPU)."""
    from knowledge.schema import Environment

    out = tmp_path / "profile.json"
    env0 = Environment(gpu_name="cpu", gpu_count=0, date="2026-11-23T00:00:00+00:00", command="test")
    out.write_text(Profile(gpu_name="cpu", gpu_count=0, environment=env0, matmul_tflops=1.0, memory_bandwidth_gbs=10.0,
                           launch_overhead_s=1e-5).model_dump_json())
    port = _free_port()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "1", "--rdzv_backend", "c10d",
           "--rdzv_endpoint", f"127.0.0.1:{port}", "-m", "advisor.cli", "probe", "--device", "cpu", "--out", str(out)]
    env = {**os.environ, "ADVISOR_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-1500:] for o in outs]
    assert "added to" in "".join(o[0] for o in outs)
    probe = Profile.model_validate_json(out.read_text()).inter_node
    assert (probe.nodes, probe.gpus_per_node) == (2, 1) and probe.busbw_gbs > 0
    assert {p.op for p in probe.points} == {"all_reduce", "all_gather", "reduce_scatter"}
    assert Path(str(out) + ".bak").exists()
