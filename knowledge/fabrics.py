"""Networks between nodes: the fabrics catalog (``data/fabrics.json``) and the network a multi-node case runs on.

A network is named ``<fabric>[:<nics>]`` (``ib-ndr``, ``ib-hdr:4``, ``eth-100``): the fabric's line rate
per NIC times the NICs of each node. A case's ``inter_node_gbps`` replaces that bandwidth (the fabric's
efficiency and latency stay), and a profile written by ``advisor probe`` on several nodes replaces it with
what NCCL achieved there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import Field

from knowledge.errors import AdvisorError, unknown
from knowledge.schema import PlatformSpec, Profile, Strict

FABRICS = Path(__file__).parent / "data" / "fabrics.json"
_NAME_RE = re.compile(r"^(?P<fabric>[a-z0-9][a-z0-9.\-]*)(?::(?P<nics>[0-9]{1,4}))?$", re.ASCII)


class FabricSpec(Strict):
    """One kind of network. ``efficiency`` and ``latency_us`` are priors unless its source says measured."""

    id: str
    name: str
    aliases: list[str] = []
    nic_gbps: float = Field(gt=0)  # one NIC port, one direction
    nics: int = Field(ge=1)  # per node, by default
    transport: str
    efficiency: float = Field(gt=0, le=1)  # NCCL bus bandwidth / line rate, large messages
    latency_us: float = Field(ge=0)  # one network step of a collective
    source: str


@dataclass(frozen=True)
class Network:
    """The network of one node as a prediction uses it."""

    gbps: float  # line rate, one direction, all NICs of the node (Gb/s)
    efficiency: float  # achieved / line rate (1.0 when measured)
    latency_s: float  # one network step
    label: str  # what the prediction says it assumed, with where it came from

    @property
    def bytes_per_s(self) -> float:
        """Achieved bytes/s per node, one direction."""
        return self.gbps * 1e9 / 8 * self.efficiency


@lru_cache(maxsize=1)
def _catalog() -> dict:
    return json.loads(FABRICS.read_text())


@lru_cache(maxsize=1)
def fabrics() -> dict[str, FabricSpec]:
    """Every fabric by id and alias."""
    table: dict[str, FabricSpec] = {}
    for raw in _catalog()["fabrics"]:
        f = FabricSpec.model_validate(raw)
        for key in [f.id, *f.aliases]:
            table[key] = f
    return table


def parse_network(text: str) -> tuple[FabricSpec, int]:
    """``ib-ndr`` or ``ib-ndr:4`` -> (the fabric, NICs per node); an unknown name raises AdvisorError."""
    if not isinstance(text, str) or not text.isascii() or not text.isprintable() or len(text) > 80:
        raise AdvisorError(f"network {ascii(str(text)[:80])} is not a fabric name such as ib-ndr, ib-hdr:4, eth-100")
    m = _NAME_RE.match(text.strip().lower())
    if not m:
        raise unknown("network", text, fabrics().keys())
    fabric = fabrics().get(m["fabric"])
    if fabric is None:
        raise unknown("network", m["fabric"], fabrics().keys())
    nics = int(m["nics"]) if m["nics"] else fabric.nics
    if not 1 <= nics <= 64:
        raise AdvisorError(f"network {text!r}: {nics} NICs per node is out of range 1..64")
    return fabric, nics


def default_fabric(platform: PlatformSpec) -> str:
    """The fabric a server like ``platform`` usually has (``defaults`` of the catalog)."""
    d = _catalog()["defaults"]
    if platform.interconnect == "nvswitch":
        return d["nvswitch"].get(platform.gpu.arch, d["other"])
    return d["other"]


def _fabric_network(fabric: FabricSpec, nics: int, gbps: float | None, why: str) -> Network:
    line = gbps if gbps is not None else fabric.nic_gbps * nics
    what = f"{line:g} Gb/s per node (given), {fabric.id} efficiency and latency" if gbps is not None else \
        f"{fabric.id} x{nics} = {line:g} Gb/s per node"
    return Network(line, fabric.efficiency, fabric.latency_us * 1e-6, f"{what}; {why}")


def network_for(platform: PlatformSpec, nodes: int, network: str | None = None, inter_node_gbps: float | None = None,
                profile: Profile | None = None) -> Network | None:
    """The network between ``nodes`` servers of ``platform`` (None for one node).

    Precedence: the case's own ``network`` / ``inter_node_gbps``; then a profile that measured this fabric
    (``advisor probe`` on several nodes of this GPU); then the catalog's default fabric for the server.
    """
    if nodes <= 1:
        return None
    if network is not None:
        fabric, nics = parse_network(network)
        return _fabric_network(fabric, nics, inter_node_gbps, "network named by the case")
    fabric, nics = parse_network(default_fabric(platform))
    if inter_node_gbps is not None:
        return _fabric_network(fabric, nics, inter_node_gbps, f"the kind of fabric a {platform.id} usually has")
    measured = getattr(profile, "inter_node", None)
    if measured is not None and (profile.gpu_id in (None, platform.gpu.id)):
        return Network(measured.busbw_gbs * 8, 1.0, fabric.latency_us * 1e-6,
                       f"{measured.busbw_gbs * 8:,.0f} Gb/s per node measured by advisor probe on {measured.nodes} nodes "
                       f"({profile.environment.date[:10]})")
    return _fabric_network(fabric, nics, None, f"catalog default for {platform.id}")
