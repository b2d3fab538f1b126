"""How a server's GPUs reach each other and the host over PCIe, in bytes/s. Pure functions.

A PCIe server as it is wired (``HostSpec``'s topology: sockets, the root ports' PCIe generation, GPUs
behind one x16 switch uplink, the host DRAM's bandwidth):

- Each GPU's link runs at the slower of its own and the host's PCIe generation (a Gen4 RTX 4090 in a
  Cascade Lake host runs at Gen3). PCIe is full duplex: a direction's bandwidth is independent.
- Peer-to-peer on (``pcie``): a ring enters and leaves each switch once per direction, so it runs at one
  link's pace.
- Peer-to-peer off (``pcie-no-p2p``, GeForce 40-series, or ``NCCL_P2P_DISABLE=1``): NCCL's SHM transport
  stages every hop in host memory: each byte crosses PCIe twice, so the ring runs at half a link's rate
  (the catalog's rule before this module, now checked against the H200 P2P-off measurement). The ``k``
  GPUs behind one uplink share it, and each byte is written to and read from DRAM once: the node's DRAM
  carries 2 x ranks x the bus bandwidth.
- NVLink pairs: the bridged hop is NVLink, the hop between pairs crosses PCIe (through host memory when
  the GPU has no PCIe peer-to-peer): half the ring's hops load the uplinks and DRAM.
- Concurrent pinned copies (offload): every rank copies at once; they share the uplinks and the DRAM.

These are ceilings; NCCL's protocol efficiency (``link_eff_pcie``) and the copy engine's (``h2d_eff``) apply
on top, as before. A profile's measured bandwidths replace them (``models.calibration``).
"""

from __future__ import annotations

from knowledge.schema import PlatformSpec
from knowledge.units import GBps

# one direction of an x16 link, GB/s after line coding (PCI-SIG: Gen3 8 GT/s 128b/130b = 15.75; each
# generation since doubles the rate)
X16_GBS = {1: 4.0, 2: 8.0, 3: 15.75, 4: 31.5, 5: 63.0, 6: 126.0}
# prior: a two-socket host streams ~60% of its DRAM peak when GPUs' DMA crosses both sockets (STREAM on
# one socket reaches ~75-80% of peak; remote-socket traffic over UPI / Infinity Fabric less). Applied only
# where the host's DMA bandwidth was measured (``HostSpec.dram_measured``): as an unmeasured prior it made
# the study's held-out error worse (rtx4090x8 37.2% -> 40.9%, n=46)
DRAM_DMA_EFF = 0.6


def link_gen(p: PlatformSpec) -> int:
    """The PCIe generation a GPU's link trains at: the slower of the GPU and the host's root ports."""
    return min(p.gpu.pcie_gen, p.host.host_pcie_gen or p.gpu.pcie_gen)


def gpu_link_bps(p: PlatformSpec) -> float:
    """One GPU's x16 link, one direction, bytes/s (datasheet rate at the trained generation)."""
    return min(p.gpu.pcie_gbs, X16_GBS[link_gen(p)]) * GBps


def _dram_bps(p: PlatformSpec) -> float:
    return (p.host.dram_gbs or 0.0) * GBps * DRAM_DMA_EFF


def _shared(p: PlatformSpec, flows_per_gpu: float, ranks: int, dram_passes: float) -> float:
    """Per-GPU bandwidth when every one of ``ranks`` GPUs moves ``flows_per_gpu`` flows through its uplink
    at once and each byte crosses DRAM ``dram_passes`` times."""
    share = max(1, min(p.host.gpus_per_uplink, ranks))
    uplink = X16_GBS[p.host.host_pcie_gen or link_gen(p)] * GBps
    bw = min(gpu_link_bps(p), uplink / (share * flows_per_gpu))
    dram = _dram_bps(p) if p.host.dram_measured else 0.0
    if dram > 0:
        bw = min(bw, dram / (dram_passes * ranks * flows_per_gpu))
    return bw


def _staged(p: PlatformSpec, ranks: int) -> float:
    """A ring hop staged through host memory (NCCL's SHM transport): every byte crosses PCIe twice, out
    of the sender and into the receiver, so a GPU's link carries the ring at half its rate (checked on the
    two H200s with ``NCCL_P2P_DISABLE=1``: 28 / 25 / 25 GB/s all-reduce / all-gather / reduce-scatter bus
    bandwidth at 256 MiB against 55 GB/s pinned copies, tests/test_host_links.py); GPUs sharing an
    uplink, and the node's DRAM, cap it further."""
    return min(gpu_link_bps(p) / 2.0, _shared(p, 1.0, ranks, 2.0))


def ring_link_bps(p: PlatformSpec, ranks: int, p2p: bool | None = None) -> float:
    """Per-GPU one-direction bandwidth a ring collective over ``ranks`` GPUs of this server can reach
    (before NCCL's efficiency). ``p2p`` overrides the catalog (``NCCL_P2P_DISABLE=1`` -> False)."""
    ic = p.interconnect
    if ic == "single" or ranks <= 1:
        return 0.0
    if p2p is False:  # NCCL_P2P_DISABLE=1 turns NVLink and PCIe peer access off alike: host memory
        return _staged(p, ranks)
    if ic == "nvswitch":
        return p.gpu.nvlink_gbs * GBps
    peer = p.gpu.p2p_over_pcie and ic != "pcie-no-p2p"
    if ic == "nvlink-pairs":
        # the hops between pairs cross PCIe; with peer-to-peer they run at a link's pace
        return gpu_link_bps(p) if peer else _staged(p, ranks)  # the ring runs at its slowest hop's pace
    return gpu_link_bps(p) if peer else _staged(p, ranks)


def concurrent_copy_bps(p: PlatformSpec, ranks: int) -> float:
    """Per-GPU pinned host<->device bandwidth, one direction, when ``ranks`` GPUs of the node copy at once."""
    return _shared(p, 1.0, max(ranks, 1), 1.0)
