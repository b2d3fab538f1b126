"""What `advisor probe` reads of the host: usable RAM and swap, each within its cgroup limit."""

from __future__ import annotations

from probes import host

GiB = 2**30


def test_swap_is_read_and_capped_by_the_cgroup(monkeypatch) -> None:
    info = {"MemTotal": 128 * GiB, "MemAvailable": 120 * GiB, "SwapTotal": 64 * GiB}
    monkeypatch.setattr(host, "_meminfo", lambda: info)
    limits = {"memory.max": None, "memory.swap.max": None}
    monkeypatch.setattr(host, "cgroup_limit_bytes", lambda v2="memory.max", v1=None: limits[v2])
    f = host.host_facts()
    assert f.usable_ram_gib == 128 and f.swap_gib == 64
    limits["memory.swap.max"] = 8 * GiB  # a container may swap less than the machine has
    assert host.host_facts().swap_gib == 8
    info["SwapTotal"] = 0
    assert host.host_facts().swap_gib == 0
