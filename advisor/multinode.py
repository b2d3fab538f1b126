"""Launching one job on several nodes: the DeepSpeed hostfile, the launch lines (DeepSpeed's launcher,
torchrun, accelerate) and the environment every node needs.

Host names are placeholders (``worker-1`` …): the user replaces them with their nodes' names. DeepSpeed's
launcher starts the other nodes through pdsh over passwordless ssh from the first host of the hostfile;
torchrun and accelerate are started on every node by hand (or by the cluster's scheduler).
"""

from __future__ import annotations

import re
from pathlib import Path

from knowledge.errors import AdvisorError

PORT = 29500
# DeepSpeed's own hostfile grammar (deepspeed.launcher.runner._parse_hostfile): "<host> slots=<n>", '#' comments
_LINE = re.compile(r"^(\S+)\s+slots=(\d+)")


def host_names(nodes: int) -> list[str]:
    return [f"worker-{i + 1}" for i in range(nodes)]


def hostfile_text(nodes: int, per_node: int) -> str:
    """A DeepSpeed hostfile for ``nodes`` nodes of ``per_node`` GPUs, with placeholder host names."""
    head = ("# DeepSpeed hostfile written by `advisor recommend`. The host names are placeholders: replace each\n"
            "# worker-N with a node's hostname (the first is where you run `deepspeed`; it reaches the others\n"
            "# by passwordless ssh, and pdsh must be installed there).\n")
    return head + "".join(f"{h} slots={per_node}\n" for h in host_names(nodes))


def parse_hostfile(text: str, name: str = "hostfile") -> dict[str, int]:
    """{host: slots} from a DeepSpeed hostfile, in order; a bad line raises AdvisorError naming it."""
    hosts: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m or int(m[2]) < 1:
            raise AdvisorError(f"{name} line {n}: {line[:80]!r} is not '<host> slots=<GPUs>'")
        if m[1] in hosts:
            raise AdvisorError(f"{name} line {n}: host {m[1]!r} is listed twice")
        hosts[m[1]] = int(m[2])
    if not hosts:
        raise AdvisorError(f"{name} lists no host ('<host> slots=<GPUs>' lines)")
    return hosts


def env_file_text(env: dict[str, str]) -> str:
    """``.deepspeed_env``: DeepSpeed's launcher exports these to every node (it passes only NCCL_*, PYTHON*,
    UCX*, MV2* and MLFLOW* variables of its own environment)."""
    return "".join(f"{k}={v}\n" for k, v in sorted(env.items()))


def deepspeed_line(nodes: int, per_node: int, hostfile: Path | str, config_path: Path | str, script: str = "train.py") -> str:
    return f"deepspeed --hostfile {hostfile} --num_nodes {nodes} --num_gpus {per_node} {script} --deepspeed {config_path}"


def torchrun_line(nodes: int, per_node: int, config_path: Path | str | None, script: str = "train.py", env: str = "") -> str:
    """Run on every node; the rendezvous host is the first node."""
    args = f" --deepspeed {config_path}" if config_path else ""
    return (f"{env}torchrun --nnodes {nodes} --nproc_per_node {per_node} --rdzv_backend c10d "
            f"--rdzv_endpoint {host_names(nodes)[0]}:{PORT} --rdzv_id advisor-job {script}{args}")


def accelerate_line(nodes: int, per_node: int, accelerate_path: Path | str, script: str = "train.py", env: str = "") -> str:
    """Run on every node with its own --machine_rank (0 on the first)."""
    return (f"{env}accelerate launch --config_file {accelerate_path} --num_machines {nodes} --num_processes {nodes * per_node} "
            f"--machine_rank RANK --main_process_ip {host_names(nodes)[0]} --main_process_port {PORT} {script}")


def accelerate_fields(nodes: int, per_node: int) -> list[str]:
    """The multi-node lines of an accelerate config (the rank is edited on each node)."""
    return [
        f"machine_rank: 0  # 0 on {host_names(nodes)[0]}, 1 on the next node, ...",
        f"main_process_ip: {host_names(nodes)[0]}",
        f"main_process_port: {PORT}",
        f"num_machines: {nodes}",
        f"num_processes: {nodes * per_node}",
        "rdzv_backend: static",
        "same_network: true",
    ]


def launch_lines(nodes: int, per_node: int, env: dict[str, str], hostfile: Path | str, config_path: Path | str,
                 accelerate_path: Path | str) -> dict[str, str]:
    """The three ways to start the job: DeepSpeed's launcher from the first node (it starts the others, the
    environment travels in ``.deepspeed_env``), or torchrun / accelerate on every node."""
    prefix = "".join(f"{k}={v} " for k, v in sorted(env.items()))
    return {
        "deepspeed": deepspeed_line(nodes, per_node, hostfile, config_path),
        "torchrun": torchrun_line(nodes, per_node, config_path, env=prefix),
        "accelerate": accelerate_line(nodes, per_node, accelerate_path, env=prefix),
    }


def write_launch_files(out_dir: Path, nodes: int, per_node: int, env: dict[str, str]) -> dict[str, Path]:
    """Write the hostfile (and ``.deepspeed_env`` when the job needs environment variables) into ``out_dir``."""
    from knowledge.store import atomic_write_text

    paths = {"hostfile": out_dir / "hostfile"}
    atomic_write_text(paths["hostfile"], hostfile_text(nodes, per_node))
    if env:
        paths["deepspeed_env"] = out_dir / ".deepspeed_env"
        atomic_write_text(paths["deepspeed_env"], env_file_text(env))
    return paths


def remove_stale_launch_files(out_dir: Path) -> list[Path]:
    """Remove the hostfile (and ``.deepspeed_env``) an earlier several-node run wrote into ``out_dir``: beside a
    single-node config they would describe another job. Only a hostfile exactly as we write it goes: one the user
    wrote, or ours with their host names put in, stays, and ``.deepspeed_env`` goes only with ours. Each removal is
    one unlink, so a file is either there whole or gone. Returns what was removed."""
    from knowledge.store import read_bounded_text

    hostfile, env = out_dir / "hostfile", out_dir / ".deepspeed_env"
    try:
        text = read_bounded_text(hostfile, 1 << 20, "hostfile")
        hosts = parse_hostfile(text)
    except (ValueError, OSError):  # none there, unreadable or not a hostfile: nothing of ours to judge
        return []
    slots = set(hosts.values())
    if len(slots) != 1 or text != hostfile_text(len(hosts), slots.pop()):
        return []
    removed = []
    for path in (hostfile, env):
        try:
            path.unlink()
            removed.append(path)
        except FileNotFoundError:
            pass
    return removed
