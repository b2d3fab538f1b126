"""Measured links (a ``LinksProbe``) against what ``models.host_links`` predicts for a catalog platform.

``python -m probes.links_check LINKS.json PLATFORM`` prints, per collective at the largest size, the bus
bandwidth measured with P2P on and off next to the model's ceiling x the fitted NCCL efficiency, then the
concurrent copies and CPU Adam per process with 1..N processes at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

from knowledge.catalog import resolve_platform
from knowledge.efficiency import load_efficiencies
from knowledge.schema import LinksProbe
from knowledge.units import GBps
from models.host_links import concurrent_copy_bps, ring_link_bps
from models.roofline import ceilings, link_efficiency
from models.step_time import cpu_adam_gparams_per_s


def report(probe: LinksProbe, platform_id: str) -> list[str]:
    p = resolve_platform(platform_id)
    eff = load_efficiencies()
    n = max(probe.gpus, 2)
    out = [f"P2P matrix: {probe.p2p_matrix}"]
    for p2p in (True, False):
        ring = ring_link_bps(p, n, p2p=None if p2p else False) / GBps
        e = link_efficiency(p, eff) if p2p else eff.link_eff_pcie
        for op in ("all_reduce", "all_gather", "reduce_scatter"):
            pts = [c for c in probe.collectives if c.op == op and c.p2p == p2p]
            if pts:
                big = max(pts, key=lambda c: c.size_bytes)
                out.append(f"{op:15} p2p={'on ' if p2p else 'off'} {big.size_bytes / 2**20:6.0f} MiB measured {big.busbw_gbs:7.1f} GB/s"
                           f"  model {ring * e:7.1f} (ceiling {ring:.1f} x eff {e:.2f})")
    copy = concurrent_copy_bps(p, n) / GBps
    out.append(f"pinned H2D: one GPU {probe.single_h2d_gbs or 0:.1f} GB/s, all at once {probe.concurrent_h2d_gbs or 0:.1f}"
               f" per GPU (model ceiling {copy:.1f} x h2d_eff {eff.h2d_eff:.2f} = {copy * eff.h2d_eff:.1f})")
    c = ceilings(p, eff)
    for pt in probe.cpu_adam:
        model = cpu_adam_gparams_per_s(pt.threads, eff, c, pt.processes)
        out.append(f"CPU Adam x{pt.processes} ({pt.threads} thread each): measured {pt.gparams_per_s:.2f} Gparam/s per process, model {model:.2f}")
    return out


if __name__ == "__main__":
    print("\n".join(report(LinksProbe.model_validate_json(Path(sys.argv[1]).read_text()), sys.argv[2])))
