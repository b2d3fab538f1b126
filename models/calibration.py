"""The calibration a prediction uses: one immutable object per (platform, profile), built at the entry point.

Without a profile: the parameters fitted on every measured run (``knowledge/calibration/fitted.json``), with
the platform's own learned factors where that server has rows, against probed ceilings: the datasheet times
what probed machines of its GPU generation achieved (``ProbeRatios``; the efficiencies are fitted in that
same frame).

With a profile written by ``advisor probe`` on that machine, its own ratios replace the generation's (large
GEMM, device copy, pinned host->device, NCCL bus bandwidth), and its host's DeepSpeed CPU Adam rate the
catalog's. For a machine the fit has not seen, the CPU's cost per launched kernel also follows the host's
measured launch time (``host_dispatch_scale``). So nothing is corrected twice: a measured ceiling replaces a
ratio, never multiplies a fitted efficiency that absorbed it, and a machine the fit learned keeps its factors.

Pure functions: the profile and the fitted values come in as arguments; nothing here reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from knowledge.efficiency import Efficiencies
from knowledge.fabrics import Network
from knowledge.schema import PlatformSpec, Profile
from knowledge.units import GBps
from models.host_links import concurrent_copy_bps, gpu_link_bps, ring_link_bps
from models.memory import usable_host_gib
from models.platform_factors import platform_values
from models.roofline import Ceilings, ProbeRatios, ceilings


@dataclass(frozen=True)
class Calibration:
    """What every prediction on one platform divides by."""

    eff: Efficiencies
    ceilings: Ceilings
    host_ram_gib: float  # usable host RAM of one node
    source: str  # "fit" or "profile <gpu> <date>"
    ratios: ProbeRatios = ProbeRatios()
    measured: dict[str, float] = field(default_factory=dict)  # what the profile's micro probes replaced
    host_swap_gib: float = 0.0  # swap of one node: where its pageable host memory may spill beyond RAM


def default_ratios(platform: PlatformSpec, table: dict[str, dict] | None) -> ProbeRatios:
    """The probe/datasheet ratios of a machine nobody probed: the average of the probed machines of its GPU
    generation (``knowledge/data/probe_ratios.json``), else of every probed machine, else the datasheet."""
    if not table:
        return ProbeRatios()
    row = table.get(platform.gpu.arch) or table.get("all")
    if not row:
        return ProbeRatios()
    link = row.get(f"link_{platform.interconnect}", 1.0)
    return ProbeRatios(row["matmul"], row["memory"], row["h2d"], link, row.get("source", "probed machines"), row.get("launch_s"))


def ratios_from_profile(profile: Profile, platform: PlatformSpec, fallback: ProbeRatios) -> ProbeRatios:
    """This machine's probe/datasheet ratios, each from the profile where it measured it."""
    g = platform.gpu
    link = fallback.link
    big = [p for p in profile.collectives if p.size_bytes >= 64 * 2**20 and p.op == "all_reduce"]
    ring_gbs = ring_link_bps(platform, platform.count) / GBps
    if big and platform.count > 1 and ring_gbs > 0:
        link = max(p.busbw_gbs for p in big) / ring_gbs
    h2d = (profile.h2d_gbs / (gpu_link_bps(platform) / GBps)) if profile.h2d_gbs else fallback.h2d
    links = profile.links
    if links is not None and profile.gpu_count == platform.count:
        # measured on this very box: the ring with its own peer-to-peer setting, every GPU copying at once
        ring = links.large_busbw_gbs(p2p=None if platform.interconnect != "pcie-no-p2p" else False)
        if ring and ring_gbs > 0:
            link = ring / ring_gbs
        copy_gbs = concurrent_copy_bps(platform, platform.count) / GBps
        if links.concurrent_h2d_gbs and copy_gbs > 0:
            h2d = links.concurrent_h2d_gbs / copy_gbs
    return ProbeRatios(
        matmul=profile.matmul_tflops / g.matmul_tflops,
        memory=profile.memory_bandwidth_gbs / g.memory_bandwidth_gbs,
        h2d=h2d,
        link=link,
        source=f"profile {profile.gpu_name} ({profile.environment.date[:10]})",
        launch_s=profile.launch_overhead_s or None,
    )


def from_fit(platform: PlatformSpec, fitted: Efficiencies, platform_factors: dict[str, dict[str, float]] | None = None,
             ratio_table: dict[str, dict] | None = None) -> Calibration:
    """The calibration without a profile: the global fit with the platform's learned factors, against the
    datasheet times what probed machines of its generation achieved."""
    eff = Efficiencies(**platform_values(fitted.model_dump(), platform, platform_factors or {}))
    ratios = default_ratios(platform, ratio_table)
    return Calibration(eff, ceilings(platform, eff, ratios), usable_host_gib(platform.host.host_ram_gib), "fit", ratios,
                       host_swap_gib=platform.host.swap_gib)


def check_profile(profile: Profile, platform: PlatformSpec) -> str | None:
    """Why ``profile`` cannot calibrate ``platform`` (another GPU, a CPU profile), or None."""
    if profile.gpu_count == 0 or profile.gpu_name == "cpu":
        return "the profile was measured on a CPU, not a GPU"
    if profile.gpu_id and profile.gpu_id != platform.gpu.id:
        return f"the profile is of {profile.gpu_id} ({profile.gpu_name}), the case runs on {platform.gpu.id}"
    return None


# The host's Python per call: a kernel's dispatch, a ZeRO-3 module hook, a ZeRO-1/2 gradient hook, the step's loops over
# tensors and its bookkeeping. All run on the same core, so a host whose launch is slower is slower at each by the same
# scale: on a two-H100 host (32 cores) ZeRO-3 steps of Qwen3-4B bound by the hooks took 1.45x what the fit's hook cost
# says (LoRA mb 1 and 4, full mb 1: 1.93 / 1.93 / 1.31 s against 1.48 / 1.50 / 0.92, probes.anatomy --cpu-profile,
# logs/h100x2-anatomy-19-2026-11-27.jsonl), the H100 hosts' launch being 1.6x the H200 hosts' (bundled profiles)
HOST_CPU_COSTS = ("kernel_time_s", "zero3_module_overhead_s", "zero12_hook_s", "ddp_hook_s", "ds_step_tensor_s", "step_overhead_s")


def host_dispatch_scale(launch_s: float | None, reference_launch_s: float | None, exponent: float) -> float:
    """How much longer than on the fit's hosts each launched kernel keeps this host's CPU busy:
    (measured launch / the probed hosts' launch) ** ``exponent`` (1 where either was not measured).

    Per kernel, a training step's CPU runs the module's Python, autograd and the launch itself; all follow the
    core's speed, the micro probe times only the last, so the exponent is fitted (``dispatch_launch_exponent``)."""
    if not launch_s or not reference_launch_s:
        return 1.0
    return (launch_s / reference_launch_s) ** exponent


def from_profile(platform: PlatformSpec, base: Calibration, profile: Profile,
                 host_reference_launch_s: float | None = None) -> Calibration:
    """The calibration of a probed machine: its measured ceilings replace the generation's, and the CPU cost per kernel
    follows its measured launch against ``host_reference_launch_s``, the launch at which ``base``'s host costs hold
    (``host_dispatch_scale``; None: they stay). The caller says which: for a machine the fit has not seen, the probed
    hosts' launch; for a platform the fit learned, the launch of the lease whose profile is bundled (H100: 9.9 us). The
    learned host is an average over the leases its runs came from, and a lease's launch tells only part of how fast it
    runs host-bound steps: on the H100 leases of 2026-12-07 (launch 6.0-6.5 us; the four first are fitted since)
    scaling took the nine lease grids probed so far from 11.2 to 10.3% on average and their mean signed error from -5.2
    to -0.3%; the two held out 12.7 / 18.8 -> 12.8 / 11.0% (9.7 and 6.3 us, n=15 and 7); the November leases at 7.1 and
    7.3 us, which ran like the 9.9 us one, 8.6 / 8.7 -> 9.6 / 12.7% (tests/benchmarks/launch_scaling_leases.py).
    The host facts (CPU Adam, usable RAM) are taken only from a profile of a machine with as many GPUs as the
    platform: one GPU of a bigger server sits in another host."""
    why = check_profile(profile, platform)
    if why:
        raise ValueError(why)
    ratios = ratios_from_profile(profile, platform, base.ratios)
    measured = {"matmul_ratio": ratios.matmul, "memory_ratio": ratios.memory, "h2d_ratio": ratios.h2d, "link_ratio": ratios.link}
    eff = base.eff
    same_host = profile.gpu_count == platform.count
    if same_host and profile.cpu_adam_gparams_per_s and profile.cpu_adam_impl == "deepspeed-cpu-adam":
        # the host's CPU Adam as measured there (the catalog's figure for a known host is the same probe)
        host = platform.host.model_copy(update={"cpu_adam_gparams_per_s": profile.cpu_adam_gparams_per_s,
                                                "cpu_adam_threads": profile.cpu_adam_threads or platform.host.cpu_cores})
        platform = platform.model_copy(update={"host": host})
        measured["cpu_adam_gparams_per_s"] = profile.cpu_adam_gparams_per_s
    if host_reference_launch_s:
        # (the profile's real layers are not refitted here: one- and two-layer cuts timed over a few steps put the
        # per-kernel cost at 59 us on the H100 host where its full models show 53, and moved the H200 host's the
        # wrong way; with each platform held out that refit made the profile cost 1.2 points, 15.4% -> 16.6%, n=56)
        scale = host_dispatch_scale(ratios.launch_s, host_reference_launch_s, eff.dispatch_launch_exponent)
        eff = eff.model_copy(update={name: getattr(eff, name) * scale for name in HOST_CPU_COSTS})
        measured["kernel_dispatch_scale"] = scale
    # the probe read this node's usable RAM (MemTotal or the cgroup limit)
    host = profile.host.usable_ram_gib if same_host and profile.host and profile.host.usable_ram_gib > 0 else base.host_ram_gib
    # and its swap (profiles written before the probe read it say nothing: the platform's)
    swap = profile.host.swap_gib if same_host and profile.host and profile.host.swap_gib is not None else base.host_swap_gib
    source = f"profile {profile.gpu_name} x{profile.gpu_count} ({profile.environment.date[:10]})"
    ceil = ceilings(platform, eff, ratios)
    if same_host and profile.links and profile.links.cpu_adam:
        # CPU Adam with N processes at once on this host: each rank's rate under the node's contention
        best: dict[tuple[int, int], float] = {}
        for pt in profile.links.cpu_adam:
            key = (pt.processes, pt.threads)
            best[key] = max(best.get(key, 0.0), pt.gparams_per_s)
        ceil = replace(ceil, cpu_adam_concurrent=tuple(sorted((p, t, r) for (p, t), r in best.items())))
        measured.update({f"cpu_adam_x{p}_t{t}_gparams_per_s": r for (p, t), r in best.items()})
    return Calibration(eff, ceil, host, source, ratios, measured, swap)


def with_network(cal: Calibration, network: Network) -> Calibration:
    """``cal`` for a job spanning several nodes joined by ``network`` (the one place the network enters)."""
    net = replace(cal.ceilings, net_bps=network.gbps * 1e9 / 8, net_eff=network.efficiency, net_latency_s=network.latency_s)
    return replace(cal, ceilings=net)
