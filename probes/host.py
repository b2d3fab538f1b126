"""The host side of this machine: usable RAM, cores, and how much RAM a run really took. No torch needed.

Usable RAM is the smallest of the cgroup limit, MemTotal, and (for a machine that is not idle)
MemAvailable plus what is already in use: on some servers (the lent 2×H200 microVM) MemTotal starts small
and grows as memory is used, so MemTotal alone under-reports, while the cgroup limit holds from the start.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from dataclasses import dataclass
from pathlib import Path

GiB = 2**30


def _meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes ({} where there is none)."""
    out: dict[str, int] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                out[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    except OSError:
        pass
    return out


def cgroup_limit_bytes(v2_file: str = "memory.max", v1_file: str | None = "memory.limit_in_bytes") -> int | None:
    """A limit of this process's cgroup (v2 ``memory.max`` or v1 ``limit_in_bytes``; ``memory.swap.max`` for its
    swap), None when unlimited or not set."""
    candidates = [Path("/sys/fs/cgroup") / v2_file] + ([Path("/sys/fs/cgroup/memory") / v1_file] if v1_file else [])
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            rel = line.split(":", 2)[-1].strip()
            if rel and rel != "/":
                candidates.insert(0, Path("/sys/fs/cgroup") / rel.lstrip("/") / v2_file)
    except OSError:
        pass
    for p in candidates:
        try:
            text = p.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # v1 writes a huge number for "no limit"
            return int(text)
    return None


@dataclass(frozen=True)
class HostFacts:
    cpu_cores: int  # cores this process may run on
    mem_total_gib: float  # MemTotal now
    mem_available_gib: float  # MemAvailable now
    cgroup_limit_gib: float | None
    usable_ram_gib: float  # what a job may fill before the kernel or the cgroup kills it
    swap_gib: float = 0.0  # SwapTotal, within the cgroup's swap limit: where pageable memory spills beyond RAM
    cpu_model: str | None = None  # /proc/cpuinfo's model name (None where it cannot be read)


def cpu_model() -> str | None:
    """The CPU's model name as /proc/cpuinfo gives it (None off Linux or where it says none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return None


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity; the machine's count where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_facts() -> HostFacts:
    info = _meminfo()
    total = info.get("MemTotal", 0) / GiB
    avail = info.get("MemAvailable", info.get("MemFree", 0)) / GiB
    limit = cgroup_limit_bytes()
    limit_gib = limit / GiB if limit else None
    # a cgroup limit is the real ceiling even where MemTotal grows on demand (a balloon VM); without
    # one, MemTotal now is all the machine will admit to (a lower bound on such a VM: said in the profile)
    usable = min(limit_gib, total) if limit_gib and total >= limit_gib else (limit_gib or total)
    swap = info.get("SwapTotal", 0)
    swap_limit = cgroup_limit_bytes("memory.swap.max", None)  # (v1 only limits memory and swap together)
    if swap_limit is not None:
        swap = min(swap, swap_limit)
    return HostFacts(usable_cores(), round(total, 2), round(avail, 2), round(limit_gib, 2) if limit_gib else None, round(usable, 2),
                     round(swap / GiB, 2), cpu_model())


def used_bytes() -> int:
    """Host memory in use by everything (MemTotal - MemAvailable), bytes."""
    info = _meminfo()
    return max(0, info.get("MemTotal", 0) - info.get("MemAvailable", info.get("MemFree", 0)))


def max_rss_gib() -> float:
    """Peak resident set of this process so far, GiB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GiB


class HostPeak:
    """Samples the machine's used RAM in a thread; ``peak_gib`` is the largest rise over the start.

    Used beside ``max_rss_gib``: RSS misses pinned buffers on some kernels and the other ranks' memory,
    the machine-wide figure catches both (and anything else running, which on a probe machine is nothing).
    """

    def __init__(self, period_s: float = 0.1) -> None:
        self.period_s = period_s
        self.base = used_bytes()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, used_bytes())
            time.sleep(self.period_s)

    def __enter__(self) -> "HostPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=1)
        self.peak = max(self.peak, used_bytes())

    @property
    def rise_gib(self) -> float:
        return (self.peak - self.base) / GiB

    @property
    def peak_gib(self) -> float:
        return self.peak / GiB
