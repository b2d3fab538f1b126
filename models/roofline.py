"""The ceilings a prediction divides by: the catalog's datasheet times probed ratios (a profile's own, via models.calibration)."""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.efficiency import Efficiencies
from knowledge.schema import PlatformSpec
from knowledge.units import GBps, TFLOP
from models.host_links import concurrent_copy_bps, ring_link_bps


@dataclass(frozen=True)
class Ceilings:
    """The roofline of one GPU and its server: compute, memory, links, host."""

    matmul_flops: float  # FLOP/s, dense 16-bit
    memory_bps: float  # bytes/s
    link_bps: float  # per-GPU one-direction collective link, bytes/s (0 for one GPU)
    link_eff: float
    pcie_bps: float
    cpu_cores: int
    sm_cycles_per_s: float = 0.0  # SMs x clock (datasheet; strided memory-bound kernels scale with it, not bandwidth)
    fp32_flops: float = 0.0  # FLOP/s of FP32 on the CUDA cores (datasheet): products of fp32 inputs
    cpu_adam_gparams_s: float | None = None  # DeepSpeed CPU Adam measured on this host (catalog or profile)
    cpu_adam_threads: int | None = None  # ... on this many threads
    # ((processes, threads of each, Gparam/s of each), ...): CPU Adam run by that many processes at once (advisor probe)
    cpu_adam_concurrent: tuple[tuple[int, int, float], ...] = ()
    # the network between nodes (several nodes only; ``models.calibration.with_network``)
    net_bps: float = 0.0  # per node, one direction, all NICs, line rate, bytes/s
    net_eff: float = 1.0  # achieved / line rate
    net_latency_s: float = 0.0  # one network step of a collective


def link_efficiency(platform: PlatformSpec, eff: Efficiencies) -> float:
    return {
        "nvswitch": eff.link_eff_nvswitch,
        "nvlink-pairs": eff.link_eff_pcie,
        "pcie": eff.link_eff_pcie,
        "pcie-no-p2p": eff.link_eff_pcie,
        "single": 1.0,
    }[platform.interconnect]


@dataclass(frozen=True)
class ProbeRatios:
    """What a probe achieves over the datasheet: a large square GEMM, a device copy, a pinned host->device
    copy, NCCL's bus bandwidth over the link. The efficiencies are fitted as fractions of these probed
    ceilings, so a profile of the machine replaces the ratios and nothing is corrected twice. ``launch_s`` is
    the host's side: one small kernel launched from Python (the probed hosts' geometric mean in the fit's
    frame, the machine's own in a profile), None where nobody measured it."""

    matmul: float = 1.0
    memory: float = 1.0
    h2d: float = 1.0
    link: float = 1.0
    source: str = "datasheet"
    launch_s: float | None = None


def ceilings(platform: PlatformSpec, eff: Efficiencies, ratios: ProbeRatios | None = None) -> Ceilings:
    g = platform.gpu
    r = ratios or ProbeRatios()
    return Ceilings(
        matmul_flops=g.matmul_tflops * TFLOP * r.matmul,
        memory_bps=g.memory_bandwidth_gbs * GBps * r.memory,
        # the server as it is wired (models.host_links): shared uplinks, host memory without peer-to-peer
        link_bps=0.0 if platform.count == 1 else ring_link_bps(platform, platform.count) * r.link,
        link_eff=link_efficiency(platform, eff),
        pcie_bps=concurrent_copy_bps(platform, platform.count) * r.h2d,
        cpu_cores=platform.host.cpu_cores,
        sm_cycles_per_s=g.sm_cycles_per_s,
        fp32_flops=g.fp32_tflops * TFLOP,
        cpu_adam_gparams_s=platform.host.cpu_adam_gparams_per_s,
        cpu_adam_threads=platform.host.cpu_adam_threads or platform.host.cpu_cores,
    )
