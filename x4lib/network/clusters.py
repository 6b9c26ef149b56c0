"""Clusters for the collective model: n nodes × g GPUs, an intra-node link per GPU and k NICs per node.

Presets live in ``x4lib/data/clusters.yaml`` (validated against ``x4lib/schemas/clusters.schema.json``, then for
units, ranges and catalog references); every link figure there is a reference into the spec catalog or a value with
its unit, source and access date. Link rates are per direction: per GPU for the intra-node link, per NIC for the
network. Inside this module everything is SI (B/s, s). Used in: book/lab-01-collectives.md.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import math
from pathlib import Path
from types import MappingProxyType
from typing import Mapping
from x4lib import paths

SCHEMA_PATH = paths.SCHEMA_DIR / "clusters.schema.json"
CLUSTERS_PATH = paths.DATA_DIR / "clusters.yaml"

#: display unit -> factor to SI for the quantities clusters.yaml may hold (Gb/s is bits: 1 Gb/s = 0.125e9 B/s)
CLUSTER_UNITS: Mapping[str, float] = MappingProxyType({
    "GB/s": 1e9, "Gb/s": 1e9 / 8, "us": 1e-6, "1": 1.0, "count": 1.0})


class ClusterError(ValueError):
    """clusters.yaml breaks a rule; the message names the entry, the field and the fix."""


class UnknownClusterError(KeyError):
    """No preset has this id; the message lists the known ids and the closest match."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclasses.dataclass(frozen=True)
class Link:
    """One link kind. ``bw_Bps`` is the line rate per direction: per GPU for an intra-node link (``nvlink`` or
    ``pcie``), per NIC for a ``network`` link (``network`` names the fabric: infiniband, roce, efa, tcpxo,
    ethernet). ``in_network`` says whether the switch can reduce (NVLink SHARP / IB SHARP). ``efficiency``, when
    set, overrides the fraction of the line rate NCCL's graph uses (None: NCCL's own figure, see x4lib.network.nccl_tuner)."""
    name: str
    kind: str  # "nvlink" | "pcie" | "network"
    bw_Bps: float
    in_network: bool = False
    in_network_kind: str = ""
    network: str = ""
    efficiency: float | None = None


@dataclasses.dataclass(frozen=True)
class Cluster:
    """n nodes × g GPUs of architecture ``arch`` (NCCL's compute-capability class: ampere, hopper, blackwell): an
    intra-node link per GPU, and k NICs per node on the network; ``cpu`` (intel or amd) selects NCCL's CPU-dependent
    constants on several nodes. ``min_channels``: the channels a run asks NCCL for at least (NCCL_MIN_CTAS or
    NCCL_MIN_NCHANNELS, 0: NCCL's own count), which raise the channels NCCL launches (connect.cc 484, nvls.cc 178
    in v2.26.2) but not the graph its tuner prices (tuning.cc prices graph channels)."""
    id: str
    name: str
    nodes: int
    gpus_per_node: int
    intra: Link
    nic: Link | None
    nics_per_node: int
    arch: str = "hopper"
    cpu: str = "intel"
    device: str | None = None
    sources: Mapping = dataclasses.field(default_factory=lambda: MappingProxyType({}))  # field -> {value, unit, source, accessed, note} as in the data file
    min_channels: int = 0

    @property
    def n_ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def node_line_rate_Bps(self) -> float:
        """k × NIC line rate: what one node's NICs carry per direction at line rate, B/s."""
        return self.nics_per_node * self.nic.bw_Bps if self.nic else 0.0


#: which units each kind of quantity may be stored in
_ALLOWED_UNITS = {"bw": ("GB/s", "Gb/s"), "efficiency": ("1",), "latency": ("us",), "count": ("count",)}
#: NCCL's compute-capability classes the model has constants for (x4lib/data/nccl_tuning.yaml)
ARCHES = ("ampere", "hopper", "blackwell")
#: NCCL's MAXCHANNELS (src/include/device.h: 64 since 2.12); NCCL_MIN_CTAS above it is cut to it (init.cc 1517)
MAX_CHANNELS = 64



def _si(raw: Mapping, where: str, quantity: str) -> float:
    """A sourced value of clusters.yaml in SI, after checking its unit and range."""
    if raw["unit"] not in _ALLOWED_UNITS[quantity]:
        raise ClusterError(f"{where}: unit {raw['unit']!r} is wrong for a {quantity}; "
                           f"use one of {', '.join(_ALLOWED_UNITS[quantity])}")
    if not math.isfinite(raw["value"]):
        raise ClusterError(f"{where}: {raw['value']} is not a finite number")
    v = raw["value"] * CLUSTER_UNITS[raw["unit"]]
    if quantity == "efficiency" and not 0 < v <= 1:
        raise ClusterError(f"{where}: an efficiency is a fraction of line rate in (0, 1], got {raw['value']}")
    if quantity in ("bw", "count") and v <= 0:
        raise ClusterError(f"{where}: must be > 0, got {raw['value']}")
    if quantity == "latency" and v < 0:
        raise ClusterError(f"{where}: a latency is >= 0, got {raw['value']}")
    return v


def _catalog_bw(ref: Mapping, where: str) -> tuple[float, dict]:
    from x4lib.catalog import specs
    try:
        dev = specs.get(ref["device"])
    except specs.UnknownDeviceError as exc:
        raise ClusterError(f"{where}: {exc}") from None
    val = dev.get(ref["field"])
    if val is None:
        raise ClusterError(f"{where}: catalog device {dev.id} has no {ref['field']}")
    if val.unit not in _ALLOWED_UNITS["bw"] or val.direction != "per_direction":
        raise ClusterError(f"{where}: {dev.id}.{ref['field']} is not a per-direction bandwidth")
    return val.si, {"catalog": f"{dev.id}.{ref['field']}", **val.to_json()}


def _parse_link(raw: Mapping, where: str, sources: dict, prefix: str) -> Link:
    if raw["kind"] == "network":
        if "line_rate" not in raw:
            raise ClusterError(f"{where}: a network link needs line_rate (per NIC, per direction, in Gb/s)")
        bw = _si(raw["line_rate"], f"{where}.line_rate", "bw")
        sources[f"{prefix}_line_rate"] = dict(raw["line_rate"])
    else:
        if "bw_per_direction" not in raw:
            raise ClusterError(f"{where}: an intra-node link needs bw_per_direction (a catalog reference or a value)")
        ref = raw["bw_per_direction"]
        if "catalog" in ref:
            bw, shown = _catalog_bw(ref["catalog"], f"{where}.bw_per_direction")
        else:
            bw, shown = _si(ref, f"{where}.bw_per_direction", "bw"), dict(ref)
        sources[f"{prefix}_bw_per_direction"] = shown
    inr = raw.get("in_network") or {"available": False, "kind": ""}
    if "in_network" in raw:
        sources[f"{prefix}_in_network"] = dict(raw["in_network"])
    return Link(name=raw["name"], kind=raw["kind"], bw_Bps=bw, in_network=bool(inr["available"]),
                in_network_kind=inr.get("kind", ""), network=raw.get("network", ""))


def parse_cluster(cid: str, raw: Mapping, origin: str = "clusters.yaml") -> Cluster:
    """Build one :class:`Cluster` from its clusters.yaml entry (already schema-valid); SI inside."""
    where = f"{origin}: {cid}"
    sources: dict = {}
    intra = _parse_link(raw["intra"], f"{where}.intra", sources, "intra")
    if intra.kind == "network":
        raise ClusterError(f"{where}.intra: the intra-node link must be nvlink or pcie")
    nic, k = None, 0
    if "nic" in raw:
        nic = _parse_link(raw["nic"], f"{where}.nic", sources, "nic")
        if nic.kind != "network":
            raise ClusterError(f"{where}.nic: kind must be network")
        if "nics_per_node" not in raw:
            raise ClusterError(f"{where}: a nic needs nics_per_node")
        k = _si(raw["nics_per_node"], f"{where}.nics_per_node", "count")
        if k != int(k):
            raise ClusterError(f"{where}.nics_per_node: a whole number, got {k}")
        sources["nics_per_node"] = dict(raw["nics_per_node"])
    if raw["nodes"] > 1 and nic is None:
        raise ClusterError(f"{where}: {raw['nodes']} nodes need a nic and nics_per_node")
    arch = arch_of(raw["device"], where)
    return Cluster(id=cid, name=raw["name"], nodes=raw["nodes"], gpus_per_node=raw["gpus_per_node"],
                   intra=intra, nic=nic, nics_per_node=int(k), arch=arch, cpu=raw.get("cpu", "intel"),
                   device=raw.get("device"), sources=MappingProxyType(sources))


def arch_of(device: str, where: str = "cluster") -> str:
    """NCCL's architecture class of a catalog GPU (nccl_tuning.yaml ``devices``); ClusterError if it has none."""
    from x4lib.network import nccl_tuner
    arches = nccl_tuner.tuning()["devices"]["value"]
    if device not in arches:
        raise ClusterError(f"{where}: device {device!r} has no NCCL architecture in nccl_tuning.yaml "
                           f"(known: {', '.join(sorted(arches))})")
    return arches[device]


@functools.lru_cache(maxsize=4)
def load(path: Path = CLUSTERS_PATH) -> Mapping:
    """clusters.yaml validated (JSON Schema, then units, ranges, catalog references): a read-only mapping with
    ``clusters`` (id -> :class:`Cluster`) and ``assumptions``."""
    from x4lib.catalog import specs
    name = Path(path).name
    data = specs.load_document(path, SCHEMA_PATH, ClusterError)
    clusters = {cid: parse_cluster(cid, raw, name) for cid, raw in data["clusters"].items()}
    return MappingProxyType({"clusters": MappingProxyType(clusters),
                             "assumptions": MappingProxyType(data["assumptions"])})


def ids() -> list[str]:
    return list(load()["clusters"])


def get(cluster_id: str) -> Cluster:
    """The preset ``cluster_id``; an unknown id raises :class:`UnknownClusterError` naming the closest match."""
    clusters = load()["clusters"]
    if cluster_id in clusters:
        return clusters[cluster_id]
    close = difflib.get_close_matches(cluster_id.lower(), list(clusters), n=1, cutoff=0.3)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownClusterError(f"unknown cluster {cluster_id!r}{hint}; known: {', '.join(clusters)}")


def custom_cluster(nodes: int, gpus_per_node: int, intra_Bps: float, nics_per_node: int = 0,
                   nic_Bps: float = 0.0, *, intra_kind: str = "nvlink", arch: str = "hopper", cpu: str = "intel",
                   intra_efficiency: float | None = None, nic_efficiency: float | None = None, nvls: bool = False,
                   ib_sharp: bool = False, network: str = "infiniband", cluster_id: str = "custom",
                   min_channels: int = 0) -> Cluster:
    """A cluster from plain numbers (SI: B/s per direction per GPU and per NIC). ``arch`` is NCCL's architecture
    class (ampere, hopper, blackwell); efficiencies, when given, replace NCCL's own fraction of line rate;
    ``min_channels``: NCCL_MIN_CTAS as the run sets it (0: unset). Raises ValueError for impossible values."""
    if int(nodes) != nodes or nodes < 1 or int(gpus_per_node) != gpus_per_node or gpus_per_node < 1:
        raise ValueError(f"nodes and gpus_per_node must be whole numbers >= 1, got {nodes} and {gpus_per_node}")
    if intra_Bps <= 0:
        raise ValueError(f"the intra-node bandwidth must be > 0 B/s, got {intra_Bps}")
    if nodes > 1 and (nics_per_node < 1 or int(nics_per_node) != nics_per_node or nic_Bps <= 0):
        raise ValueError(f"{nodes} nodes need nics_per_node >= 1 (whole) and a NIC rate > 0")
    if arch not in ARCHES:
        raise ValueError(f"unknown architecture {arch!r}; use one of: {', '.join(ARCHES)}")
    if intra_kind not in ("nvlink", "pcie"):
        raise ValueError(f"intra-node link kind {intra_kind!r}: use nvlink or pcie")
    if int(min_channels) != min_channels or not 0 <= min_channels <= MAX_CHANNELS:
        raise ValueError(f"min_channels must be a whole number from 0 to {MAX_CHANNELS}, got {min_channels}")
    for label, eff in (("intra", intra_efficiency), ("nic", nic_efficiency)):
        if eff is not None and not 0 < eff <= 1:
            raise ValueError(f"{label} efficiency is a fraction of line rate in (0, 1], got {eff}")
    intra = Link(name=f"{intra_kind} (custom)", kind=intra_kind, bw_Bps=intra_Bps, efficiency=intra_efficiency,
                 in_network=nvls, in_network_kind="NVLink SHARP (NVLS)" if nvls else "")
    nic = None
    if nics_per_node and nic_Bps > 0:
        nic = Link(name=f"{network} NIC (custom)", kind="network", bw_Bps=nic_Bps, efficiency=nic_efficiency,
                   in_network=ib_sharp, in_network_kind="IB SHARP" if ib_sharp else "", network=network)
    return Cluster(id=cluster_id, name=f"{nodes} x {gpus_per_node} GPUs (custom)", nodes=int(nodes),
                   gpus_per_node=int(gpus_per_node), intra=intra, nic=nic, nics_per_node=int(nics_per_node or 0),
                   arch=arch, cpu=cpu, min_channels=int(min_channels))


def with_in_network(cluster: Cluster, nvls: bool | None = None, ib_sharp: bool | None = None) -> Cluster:
    """The same cluster with NVLink SHARP and/or IB SHARP switched on or off (None: unchanged)."""
    intra, nic = cluster.intra, cluster.nic
    if nvls is not None:
        intra = dataclasses.replace(intra, in_network=nvls, in_network_kind="NVLink SHARP (NVLS)" if nvls else "")
    if ib_sharp is not None and nic is not None:
        nic = dataclasses.replace(nic, in_network=ib_sharp, in_network_kind="IB SHARP" if ib_sharp else "")
    return dataclasses.replace(cluster, intra=intra, nic=nic)
