"""Collective operations: nccl-tests' bandwidth conventions and α–β cost models.

algbw and busbw follow nccl-tests exactly (NVIDIA/nccl-tests doc/PERFORMANCE.md; references.bib:
nccl-tests-performance):

    algbw [B/s] = S / t      where S is the collective's "size" as nccl-tests prints it
                             (for AllGather, ReduceScatter and AllToAll, the whole array: count·typesize·n)
    busbw [B/s] = algbw × F(n)

    F(n) = 2(n−1)/n   AllReduce: each rank must receive n−1 pieces and send n−1 reduced pieces
                      (a reduce-scatter followed by an all-gather), i.e. 2(n−1)/n of the data per rank
    F(n) = (n−1)/n    AllGather, ReduceScatter, AllToAll: each rank receives (or sends) the n−1 pieces it
                      does not own
    F(n) = 1          Broadcast, Reduce, SendRecv: the data crosses the bottleneck link once

The factor makes busbw comparable with the bottleneck link's per-direction bandwidth whatever n is.
Other tools use other conventions (e.g. 2·S/t for AllReduce "throughput"): only busbw is comparable.
Used in: book/lab-01-collectives.md.

α–β cost models (Hockney's latency–bandwidth model as used by Thakur, Rabenseifner & Gropp 2005; references.bib:
thakur-2005). A message of m bytes over one link costs α + m·β, with α [s] the per-hop latency and β = 1/B [s/B]
the inverse bandwidth. For p ranks and a collective of nccl-tests size S [B]:

    ring (bandwidth-optimal; Patarasuk & Yuan 2009, patarasuk-2009)
      AllReduce       t = 2(p−1)·α + 2(p−1)/p · S·β        (reduce-scatter then all-gather)
      ReduceScatter   t =  (p−1)·α +  (p−1)/p · S·β
      AllGather       t =  (p−1)·α +  (p−1)/p · S·β
      Broadcast/Reduce (pipelined chain)  t = (p−1)·α + S·β
      AllToAll (pairwise exchange)        t = (p−1)·α + (p−1)/p · S·β
    log-depth ("tree") variants
      AllReduce, double binary tree (NCCL): t = 2⌈log2 p⌉·α + 2·S·β (pipelined, each tree carries S/2)
      Broadcast/Reduce, binomial tree:      t = ⌈log2 p⌉·(α + S·β)
      ReduceScatter (recursive halving), AllGather (recursive doubling): t = ⌈log2 p⌉·α + (p−1)/p · S·β
      AllToAll, Bruck:                      t = ⌈log2 p⌉·(α + S/2·β)

For a cluster of n nodes × g GPUs with k NICs per node (:class:`Cluster`), each algorithm is a list of phases;
a phase costs its latency plus the larger of (bytes through one GPU's intra-node port)/(η_intra·B_intra) and
(bytes through one node's k NICs)/(k·η_nic·B_nic). A flat ring over all n·g ranks moves 2(p−1)/p·S through every
GPU's NVLink port *and* through every node's NICs, so its bottleneck is min(η_intra·B_intra, k·η_nic·B_nic).
The hierarchical algorithm reduce-scatters inside the node, all-reduces the S/g shards across nodes over the k
rails in parallel, then all-gathers inside the node; its phases add up. :func:`predict` evaluates every candidate
and keeps the fastest, reporting the algorithm, the bottleneck link and whether latency or bandwidth dominates.

In-network reduction (NVLink SHARP on third-generation NVSwitch, IB SHARP in InfiniBand switches) is a modelled
option: each GPU sends its data once into the switch and receives the reduced result once, about half of the
2(g−1)/g·S of a ring. nccl-tests still reports busbw = algbw·2(n−1)/n, a factor derived for point-to-point
transfers, so busbw can then exceed the link's line rate (e.g. ~480 GB/s on 8 H100 whose NVLink is 450 GB/s per
direction; nccl-tests-issue-212). Such a busbw is not a link speed.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import json
import math
import re
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

#: version of the cost model, stored with every prediction so that different models never mix silently
MODEL_VERSION = "1"

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "sendrecv")


def busbw_factor(collective: str, n_ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor F(n) for ``collective`` over ``n_ranks`` ranks."""
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; use one of: {', '.join(COLLECTIVES)}")
    if int(n_ranks) != n_ranks or n_ranks < 1:
        raise ValueError(f"n_ranks must be a whole number >= 1, got {n_ranks}")
    n = n_ranks
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def busbw_Bps(collective: str, algbw_Bps: float, n_ranks: int) -> float:
    """busbw = algbw × F(n), both in B/s (nccl-tests convention, nccl-tests-performance).
    Used in: book/lab-01-collectives.md"""
    return algbw_Bps * busbw_factor(collective, n_ranks)


# ----------------------------------------------------------------------------------------------------------------
# Message sizes
# ----------------------------------------------------------------------------------------------------------------

#: size suffix -> bytes. K/M/G/T follow nccl-tests (powers of two, 1M = 2^20, either case); kB/KB/MB/GB/TB are
#: powers of ten (GB = 1e9 B as everywhere in the book); KiB/MiB/GiB/TiB are powers of two, explicitly.
SIZE_SUFFIXES: Mapping[str, int] = MappingProxyType({
    "": 1, "B": 1,
    "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40,
    "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
})
_SIZE_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)")


def parse_size(text: str) -> int:
    """Bytes from a size such as ``"1048576"``, ``"1M"`` (2^20, as nccl-tests), ``"1MB"`` (10^6) or ``"1MiB"`` (2^20).

    K/M/G/T without a B follow nccl-tests' ``-b``/``-e`` parsing (powers of two, upper or lower case); KB/MB/GB/TB
    are powers of ten; KiB/MiB/GiB/TiB powers of two. Lower-case ``kb``/``mb`` (kilobits? millibytes?) are refused.
    The result must be a whole number of bytes > 0; otherwise ValueError says why ("12XB", "-1MB", "0", "1.5").
    Used in: book/lab-01-collectives.md; shared with the nccl-tests log reader and the benchmark.
    """
    s = str(text).strip()
    if s.startswith("-"):
        raise ValueError(f"size {text!r} is negative; a size is > 0 bytes")
    m = _SIZE_RE.fullmatch(s)
    if not m:
        raise ValueError(f"size {text!r} is not a number with an optional suffix (e.g. 1048576, 1M, 1MB, 1MiB)")
    number, suffix = m.groups()
    if suffix in ("k", "m", "g", "t"):  # nccl-tests accepts either case for its binary suffixes
        suffix = suffix.upper()
    if len(suffix) == 3 and suffix.lower().endswith("ib"):  # kib, MIB, ... -> KiB, MiB
        suffix = suffix[0].upper() + "iB"
    if suffix not in SIZE_SUFFIXES:
        raise ValueError(f"size {text!r}: unknown suffix {m.group(2)!r}; use K/M/G (powers of two, as nccl-tests), "
                         f"KB/MB/GB (powers of ten) or KiB/MiB/GiB")
    value = float(number) * SIZE_SUFFIXES[suffix]
    if value != int(value):
        raise ValueError(f"size {text!r} is not a whole number of bytes ({value:g} B)")
    if value <= 0:
        raise ValueError(f"size {text!r} is zero; a size is > 0 bytes")
    return int(value)


def format_size(size_B: int) -> str:
    """A short label that names the convention: ``1MB`` for 10^6, ``1MiB`` for 2^20, else the byte count."""
    for suffix, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3),
                           ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_B >= factor and size_B % factor == 0:
            return f"{size_B // factor}{suffix}"
    return f"{size_B}B"


# ----------------------------------------------------------------------------------------------------------------
# Single-level α–β closed forms (the textbook formulas of the module docstring)
# ----------------------------------------------------------------------------------------------------------------

#: the algorithm each family uses for each collective
ALGORITHM_NAMES: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "ring": MappingProxyType({"all_reduce": "ring", "reduce_scatter": "ring", "all_gather": "ring",
                              "broadcast": "ring", "reduce": "ring", "all_to_all": "pairwise",
                              "sendrecv": "p2p"}),
    "tree": MappingProxyType({"all_reduce": "double_binary_tree", "reduce_scatter": "recursive_halving",
                              "all_gather": "recursive_doubling", "broadcast": "binomial_tree",
                              "reduce": "binomial_tree", "all_to_all": "bruck"}),
})


def _log2_ceil(p: int) -> int:
    return max(0, math.ceil(math.log2(p))) if p > 1 else 0


def _check_collective(collective: str) -> None:
    if collective not in COLLECTIVES:
        close = difflib.get_close_matches(collective, COLLECTIVES, n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown collective {collective!r}{hint}; known: {', '.join(COLLECTIVES)}")


def alpha_beta_time_s(collective: str, family: str, size_B: float, n_ranks: int, alpha_s: float,
                      bw_Bps: float) -> float:
    """Time [s] of ``collective`` on ``n_ranks`` ranks with one link kind: per-hop latency ``alpha_s`` [s] and
    per-rank, per-direction bandwidth ``bw_Bps`` [B/s]; ``size_B`` is the nccl-tests size S [B].

    ``family`` is ``"ring"`` (ring / pipelined chain / pairwise exchange) or ``"tree"`` (double binary tree for
    AllReduce, binomial tree for Broadcast/Reduce, recursive halving/doubling, Bruck); the formulas are in the module
    docstring. Sources: thakur-2005, patarasuk-2009. Used in: book/lab-01-collectives.md
    """
    _check_collective(collective)
    if family not in ALGORITHM_NAMES:
        raise ValueError(f"unknown algorithm family {family!r}; use 'ring' or 'tree'")
    if collective not in ALGORITHM_NAMES[family]:
        raise ValueError(f"{collective} has no {family} algorithm")
    p, S, a, beta = int(n_ranks), float(size_B), float(alpha_s), 1.0 / float(bw_Bps)
    if p < 1 or S < 0 or a < 0 or bw_Bps <= 0:
        raise ValueError("need n_ranks >= 1, size_B >= 0, alpha_s >= 0 and bw_Bps > 0")
    if p == 1:
        return 0.0
    L = _log2_ceil(p)
    if family == "ring":
        if collective == "all_reduce":
            return 2 * (p - 1) * a + 2 * (p - 1) / p * S * beta
        if collective in ("reduce_scatter", "all_gather", "all_to_all"):
            return (p - 1) * a + (p - 1) / p * S * beta
        if collective in ("broadcast", "reduce"):
            return (p - 1) * a + S * beta
        return a + S * beta  # sendrecv
    if collective == "all_reduce":
        return 2 * L * a + 2 * S * beta
    if collective in ("broadcast", "reduce"):
        return L * (a + S * beta)
    if collective in ("reduce_scatter", "all_gather"):
        return L * a + (p - 1) / p * S * beta
    return L * (a + S / 2 * beta)  # all_to_all, Bruck


# ----------------------------------------------------------------------------------------------------------------
# Clusters: two-level topology, loaded from x4lib/data/clusters.yaml
# ----------------------------------------------------------------------------------------------------------------

CLUSTERS_PATH = Path(__file__).parent / "data" / "clusters.yaml"

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
    """One link kind. ``bw_Bps`` is the line rate per direction: per GPU for an intra-node link, per NIC for a
    network link. ``efficiency`` is the fraction of it NCCL reaches; ``alpha_s`` the per-hop latency.
    ``in_network`` says whether the switch can reduce (NVLink SHARP / IB SHARP), at ``in_network_efficiency``
    of line rate and ``in_network_alpha_s`` latency."""
    name: str
    kind: str  # "nvlink" | "pcie" | "network"
    bw_Bps: float
    efficiency: float
    alpha_s: float
    in_network: bool = False
    in_network_kind: str = ""
    in_network_efficiency: float = 0.0
    in_network_alpha_s: float = 0.0

    @property
    def effective_Bps(self) -> float:
        """Line rate × efficiency, B/s per direction."""
        return self.bw_Bps * self.efficiency


@dataclasses.dataclass(frozen=True)
class Cluster:
    """n nodes × g GPUs: an intra-node link per GPU, and k NICs per node on the network."""
    id: str
    name: str
    nodes: int
    gpus_per_node: int
    intra: Link
    nic: Link | None
    nics_per_node: int
    base_latency_s: float
    device: str | None = None
    sources: Mapping = dataclasses.field(default_factory=lambda: MappingProxyType({}))  # field -> {value, unit, source, accessed, note} as in the data file

    @property
    def n_ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def node_net_Bps(self) -> float:
        """k × η × NIC line rate: what one node moves on the network per direction, B/s."""
        return self.nics_per_node * self.nic.effective_Bps if self.nic else 0.0


_VALUE_SCHEMA = {
    "type": "object", "required": ["value", "unit", "source", "accessed"],
    "properties": {"value": {"type": "number"}, "unit": {"type": "string"},
                   "source": {"type": "string", "minLength": 1},
                   "accessed": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
                   "note": {"type": "string"}, "direction": {"type": "string"}},
    "additionalProperties": False,
}
_IN_NETWORK_SCHEMA = {
    "type": "object", "required": ["available", "kind", "source", "accessed"],
    "properties": {"available": {"type": "boolean"}, "kind": {"type": "string"},
                   "source": {"type": "string", "minLength": 1},
                   "accessed": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}, "note": {"type": "string"},
                   "efficiency": _VALUE_SCHEMA, "alpha": _VALUE_SCHEMA},
    "additionalProperties": False,
}
_CATALOG_REF_SCHEMA = {
    "type": "object", "required": ["catalog"],
    "properties": {"catalog": {"type": "object", "required": ["device", "field"],
                               "properties": {"device": {"type": "string"}, "field": {"type": "string"}},
                               "additionalProperties": False}},
    "additionalProperties": False,
}
_LINK_SCHEMA = {
    "type": "object", "required": ["kind", "name", "efficiency", "alpha"],
    "properties": {"kind": {"enum": ["nvlink", "pcie", "network"]}, "name": {"type": "string"},
                   "bw_per_direction": {"oneOf": [_CATALOG_REF_SCHEMA, _VALUE_SCHEMA]},
                   "line_rate": _VALUE_SCHEMA, "efficiency": _VALUE_SCHEMA, "alpha": _VALUE_SCHEMA,
                   "in_network": _IN_NETWORK_SCHEMA},
    "additionalProperties": False,
}
#: JSON Schema of x4lib/data/clusters.yaml (the loader also checks units, ranges and catalog references)
CLUSTERS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "required": ["schema_version", "assumptions", "custom_defaults", "clusters"],
    "properties": {
        "schema_version": {"const": 1},
        "assumptions": {"type": "object", "additionalProperties": {"type": "string"}},
        "custom_defaults": {"type": "object", "additionalProperties": _VALUE_SCHEMA},
        "clusters": {"type": "object", "minProperties": 1, "propertyNames": {"pattern": r"^[a-z0-9][a-z0-9-]*$"},
                     "additionalProperties": {
                         "type": "object",
                         "required": ["name", "nodes", "gpus_per_node", "intra", "base_latency"],
                         "properties": {"name": {"type": "string"}, "device": {"type": "string"},
                                        "nodes": {"type": "integer", "minimum": 1},
                                        "gpus_per_node": {"type": "integer", "minimum": 1},
                                        "intra": _LINK_SCHEMA, "nic": _LINK_SCHEMA,
                                        "nics_per_node": _VALUE_SCHEMA, "base_latency": _VALUE_SCHEMA},
                         "additionalProperties": False}},
    },
    "additionalProperties": False,
}

#: which units each kind of quantity may be stored in
_ALLOWED_UNITS = {"bw": ("GB/s", "Gb/s"), "efficiency": ("1",), "latency": ("us",), "count": ("count",)}



def _si(raw: Mapping, where: str, quantity: str) -> float:
    """A sourced value of clusters.yaml in SI, after checking its unit and range."""
    if raw["unit"] not in _ALLOWED_UNITS[quantity]:
        raise ClusterError(f"{where}: unit {raw['unit']!r} is wrong for a {quantity}; "
                           f"use one of {', '.join(_ALLOWED_UNITS[quantity])}")
    v = raw["value"] * CLUSTER_UNITS[raw["unit"]]
    if quantity == "efficiency" and not 0 < v <= 1:
        raise ClusterError(f"{where}: an efficiency is a fraction of line rate in (0, 1], got {raw['value']}")
    if quantity in ("bw", "count") and v <= 0:
        raise ClusterError(f"{where}: must be > 0, got {raw['value']}")
    if quantity == "latency" and v < 0:
        raise ClusterError(f"{where}: a latency is >= 0, got {raw['value']}")
    return v


def _catalog_bw(ref: Mapping, where: str) -> tuple[float, dict]:
    from x4lib import specs
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
    eff = _si(raw["efficiency"], f"{where}.efficiency", "efficiency")
    alpha = _si(raw["alpha"], f"{where}.alpha", "latency")
    sources[f"{prefix}_efficiency"] = dict(raw["efficiency"])
    sources[f"{prefix}_alpha"] = dict(raw["alpha"])
    inr = raw.get("in_network") or {"available": False, "kind": ""}
    inr_eff = inr_alpha = 0.0
    if inr["available"]:
        if "efficiency" not in inr or "alpha" not in inr:
            raise ClusterError(f"{where}.in_network: available in-network reduction needs efficiency and alpha")
        inr_eff = _si(inr["efficiency"], f"{where}.in_network.efficiency", "efficiency")
        inr_alpha = _si(inr["alpha"], f"{where}.in_network.alpha", "latency")
    if "in_network" in raw:
        sources[f"{prefix}_in_network"] = dict(raw["in_network"])
    return Link(name=raw["name"], kind=raw["kind"], bw_Bps=bw, efficiency=eff, alpha_s=alpha,
                in_network=bool(inr["available"]), in_network_kind=inr.get("kind", ""),
                in_network_efficiency=inr_eff, in_network_alpha_s=inr_alpha)


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
    base = _si(raw["base_latency"], f"{where}.base_latency", "latency")
    sources["base_latency"] = dict(raw["base_latency"])
    return Cluster(id=cid, name=raw["name"], nodes=raw["nodes"], gpus_per_node=raw["gpus_per_node"],
                   intra=intra, nic=nic, nics_per_node=int(k), base_latency_s=base, device=raw.get("device"),
                   sources=MappingProxyType(sources))


@functools.lru_cache(maxsize=4)
def load_cluster_file(path: Path = CLUSTERS_PATH) -> Mapping:
    """clusters.yaml validated (JSON Schema, then units, ranges, catalog references): a read-only mapping with
    ``clusters`` (id -> :class:`Cluster`), ``assumptions`` and ``custom_defaults`` (raw sourced values)."""
    import jsonschema
    import yaml

    from x4lib import specs
    name = Path(path).name
    try:
        data = specs.plain(yaml.safe_load(Path(path).read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise ClusterError(f"{name}: cannot be read as YAML: {exc}") from None
    try:
        jsonschema.validate(data, CLUSTERS_SCHEMA)
    except jsonschema.ValidationError as exc:
        at = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ClusterError(f"{name}: {at}: {exc.message}") from None
    for key, raw in data["custom_defaults"].items():
        quantity = "efficiency" if key.endswith("efficiency") else "latency"
        _si(raw, f"{name}: custom_defaults.{key}", quantity)
    clusters = {cid: parse_cluster(cid, raw, name) for cid, raw in data["clusters"].items()}
    return MappingProxyType({"clusters": MappingProxyType(clusters),
                             "assumptions": MappingProxyType(data["assumptions"]),
                             "custom_defaults": MappingProxyType(data["custom_defaults"])})


def cluster_ids() -> list[str]:
    return list(load_cluster_file()["clusters"])


def get_cluster(cluster_id: str) -> Cluster:
    """The preset ``cluster_id``; an unknown id raises :class:`UnknownClusterError` naming the closest match."""
    clusters = load_cluster_file()["clusters"]
    if cluster_id in clusters:
        return clusters[cluster_id]
    close = difflib.get_close_matches(cluster_id.lower(), list(clusters), n=1, cutoff=0.3)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownClusterError(f"unknown cluster {cluster_id!r}{hint}; known: {', '.join(clusters)}")


def custom_cluster(nodes: int, gpus_per_node: int, intra_Bps: float, nics_per_node: int = 0,
                   nic_Bps: float = 0.0, *, intra_kind: str = "nvlink", intra_efficiency: float | None = None,
                   nic_efficiency: float | None = None, intra_alpha_s: float | None = None,
                   nic_alpha_s: float | None = None, base_latency_s: float | None = None, nvls: bool = False,
                   ib_sharp: bool = False, cluster_id: str = "custom") -> Cluster:
    """A cluster from plain numbers (SI: B/s per direction per GPU and per NIC, seconds); what is not given comes
    from ``custom_defaults`` of clusters.yaml (sourced there). Raises ValueError for impossible values."""
    d = {k: v["value"] * CLUSTER_UNITS[v["unit"]] for k, v in load_cluster_file()["custom_defaults"].items()}
    if int(nodes) != nodes or nodes < 1 or int(gpus_per_node) != gpus_per_node or gpus_per_node < 1:
        raise ValueError(f"nodes and gpus_per_node must be whole numbers >= 1, got {nodes} and {gpus_per_node}")
    if intra_Bps <= 0:
        raise ValueError(f"the intra-node bandwidth must be > 0 B/s, got {intra_Bps}")
    if nodes > 1 and (nics_per_node < 1 or int(nics_per_node) != nics_per_node or nic_Bps <= 0):
        raise ValueError(f"{nodes} nodes need nics_per_node >= 1 (whole) and a NIC rate > 0")

    def pick(v, key):
        return d[key] if v is None else v

    for label, eff in (("intra", intra_efficiency), ("nic", nic_efficiency)):
        if eff is not None and not 0 < eff <= 1:
            raise ValueError(f"{label} efficiency is a fraction of line rate in (0, 1], got {eff}")
    for label, a in (("intra alpha", intra_alpha_s), ("nic alpha", nic_alpha_s), ("base latency", base_latency_s)):
        if a is not None and a < 0:
            raise ValueError(f"{label} must be >= 0 s, got {a}")
    intra = Link(name=f"{intra_kind} (custom)", kind=intra_kind, bw_Bps=intra_Bps,
                 efficiency=pick(intra_efficiency, "intra_efficiency"), alpha_s=pick(intra_alpha_s, "intra_alpha"),
                 in_network=nvls, in_network_kind="NVLink SHARP (NVLS)" if nvls else "",
                 in_network_efficiency=d["nvls_efficiency"] if nvls else 0.0,
                 in_network_alpha_s=d["nvls_alpha"] if nvls else 0.0)
    nic = None
    if nics_per_node and nic_Bps > 0:
        nic = Link(name="network NIC (custom)", kind="network", bw_Bps=nic_Bps,
                   efficiency=pick(nic_efficiency, "nic_efficiency"), alpha_s=pick(nic_alpha_s, "nic_alpha"),
                   in_network=ib_sharp, in_network_kind="IB SHARP" if ib_sharp else "",
                   in_network_efficiency=d["sharp_efficiency"] if ib_sharp else 0.0,
                   in_network_alpha_s=d["sharp_alpha"] if ib_sharp else 0.0)
    return Cluster(id=cluster_id, name=f"{nodes} x {gpus_per_node} GPUs (custom)", nodes=int(nodes),
                   gpus_per_node=int(gpus_per_node), intra=intra, nic=nic, nics_per_node=int(nics_per_node or 0),
                   base_latency_s=pick(base_latency_s, "base_latency"))


def with_in_network(cluster: Cluster, nvls: bool | None = None, ib_sharp: bool | None = None) -> Cluster:
    """The same cluster with NVLink SHARP and/or IB SHARP switched on or off (defaults from custom_defaults)."""
    d = {k: v["value"] * CLUSTER_UNITS[v["unit"]] for k, v in load_cluster_file()["custom_defaults"].items()}
    intra, nic = cluster.intra, cluster.nic
    if nvls is not None and nvls != intra.in_network:
        intra = dataclasses.replace(
            intra, in_network=nvls, in_network_kind="NVLink SHARP (NVLS)" if nvls else "",
            in_network_efficiency=(intra.in_network_efficiency or d["nvls_efficiency"]) if nvls else 0.0,
            in_network_alpha_s=(intra.in_network_alpha_s or d["nvls_alpha"]) if nvls else 0.0)
    if ib_sharp is not None and nic is not None and ib_sharp != nic.in_network:
        nic = dataclasses.replace(
            nic, in_network=ib_sharp, in_network_kind="IB SHARP" if ib_sharp else "",
            in_network_efficiency=(nic.in_network_efficiency or d["sharp_efficiency"]) if ib_sharp else 0.0,
            in_network_alpha_s=(nic.in_network_alpha_s or d["sharp_alpha"]) if ib_sharp else 0.0)
    return dataclasses.replace(cluster, intra=intra, nic=nic)


# ----------------------------------------------------------------------------------------------------------------
# The two-level model: algorithms as phases
# ----------------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Phase:
    """One step of an algorithm: its latency [s], the bytes per direction through one GPU's intra-node port and
    through one node's network port (its k NICs together); a phase lasts latency + max(bytes / bandwidth).
    ``intra_Bps``/``net_Bps`` override the cluster's effective bandwidths (in-network reduction)."""
    latency_s: float
    intra_B: float = 0.0
    net_B: float = 0.0
    intra_Bps: float | None = None
    net_Bps: float | None = None


@dataclasses.dataclass(frozen=True)
class AlgorithmCost:
    """The predicted time of one algorithm, split into latency and the bandwidth time charged to each link."""
    algorithm: str
    time_s: float
    latency_s: float
    intra_s: float
    net_s: float
    in_network: bool = False

    @property
    def bottleneck(self) -> str:
        """``"intra"`` or ``"network"``: the link with the larger bandwidth time."""
        return "network" if self.net_s > self.intra_s else "intra"

    @property
    def bound(self) -> str:
        """``"latency"`` if the α terms exceed the bandwidth terms, else ``"bandwidth"``."""
        return "latency" if self.latency_s > self.intra_s + self.net_s else "bandwidth"


def _cost(name: str, cluster: Cluster, base_s: float, phases: list[Phase], in_network: bool = False) -> AlgorithmCost:
    lat, t_intra, t_net = base_s, 0.0, 0.0
    for ph in phases:
        lat += ph.latency_s
        ti = ph.intra_B / (ph.intra_Bps or cluster.intra.effective_Bps) if ph.intra_B else 0.0
        tn = ph.net_B / (ph.net_Bps or cluster.node_net_Bps) if ph.net_B else 0.0
        if tn > ti:
            t_net += tn
        else:
            t_intra += ti
    return AlgorithmCost(name, lat + t_intra + t_net, lat, t_intra, t_net, in_network)


def _ring(collective: str, S: float, c: Cluster) -> AlgorithmCost:
    """Flat ring (or pairwise exchange) over all n·g ranks, node-major, one ring per NIC (channels)."""
    n, g, p = c.nodes, c.gpus_per_node, c.n_ranks
    a_i, a_n = c.intra.alpha_s, (c.nic.alpha_s if c.nic else 0.0)
    multi = n > 1
    if collective == "all_reduce":
        steps, inter, intra_B, net_B = 2 * (p - 1), 2 * (n - 1), 2 * (p - 1) / p * S, 2 * (p - 1) / p * S
    elif collective in ("reduce_scatter", "all_gather"):
        steps, inter, intra_B, net_B = p - 1, n - 1, (p - 1) / p * S, (p - 1) / p * S
    elif collective in ("broadcast", "reduce"):
        steps, inter, intra_B, net_B = p - 1, n - 1, S, S
    elif collective == "all_to_all":  # pairwise exchange: S/p to every other rank; (n-1)/n of it leaves the node
        steps, inter = p - 1, (p - 1 if multi else 0)
        intra_B, net_B = (g - 1) / p * S, g * (n - 1) / n * S
    else:  # sendrecv: every rank sends S to the next; one GPU per node crosses, through one NIC (of k)
        steps, inter = 1, (1 if multi else 0)
        intra_B, net_B = (S if g > 1 else 0.0), c.nics_per_node * S
    if g == 1:
        intra_B = 0.0
    lat = (steps - inter) * a_i + inter * a_n
    return _cost(ALGORITHM_NAMES["ring"][collective], c, c.base_latency_s,
                 [Phase(lat, intra_B, net_B if multi else 0.0)])


def _tree(collective: str, S: float, c: Cluster) -> AlgorithmCost:
    """Log-depth algorithms: NCCL's double binary tree (chain inside a node) for AllReduce; binomial tree,
    recursive halving/doubling and Bruck (one phase per step) for the others."""
    n, g, p = c.nodes, c.gpus_per_node, c.n_ranks
    a_i, a_n = c.intra.alpha_s, (c.nic.alpha_s if c.nic else 0.0)
    name = ALGORITHM_NAMES["tree"][collective]
    if collective == "all_reduce":
        lat = 2 * ((g - 1) * a_i + _log2_ceil(n) * a_n)
        net_B = 0.0 if n == 1 else S if n == 2 else 2 * S  # node in one tree (interior) and a leaf in the other
        return _cost(name, c, c.base_latency_s, [Phase(lat, 2 * S if g > 1 else 0.0, net_B)])
    phases = []
    for j in range(_log2_ceil(p)):
        d = 2**j  # distance of the partner in this step (ranks are node-major)
        cross = min(1.0, d / g) if n > 1 else 0.0  # fraction of this step's transfers that leave the node
        if collective in ("broadcast", "reduce"):
            senders = min(g, d)  # binomial tree: 2^j ranks send the whole S in step j
            phases.append(Phase(a_n if d >= g and n > 1 else a_i,
                                S if d < g or n == 1 else 0.0, senders * S if d >= g and n > 1 else 0.0))
        elif collective in ("reduce_scatter", "all_gather"):
            m = S * d / 2 ** _log2_ceil(p)  # bytes exchanged per rank in this step
            phases.append(Phase(a_n if cross >= 1 else a_i, m if cross < 1 else 0.0, g * m if cross >= 1 else 0.0))
        else:  # all_to_all, Bruck: S/2 per rank per step
            phases.append(Phase(a_n if cross > 0 else a_i, S / 2 if cross < 1 else 0.0, g * cross * S / 2))
    return _cost(name, c, c.base_latency_s, phases)


def _hierarchical(collective: str, S: float, c: Cluster, nvls: bool, sharp: bool) -> AlgorithmCost:
    """Two levels: reduce-scatter in the node, the collective across nodes on S/g shards over the k rails in
    parallel, all-gather in the node (for AllReduce; ReduceScatter and AllGather use one half each)."""
    n, g = c.nodes, c.gpus_per_node
    a_i, a_n = c.intra.alpha_s, c.nic.alpha_s
    base = 0.0 if nvls else c.base_latency_s  # NCCL's NVLS has no separate base latency
    if nvls:  # NVLS reduce-scatter and multicast all-gather: S/2 each (calibrated on NVLS all-reduce algbw)
        nv_bw = c.intra.bw_Bps * c.intra.in_network_efficiency
        half_in = Phase(c.intra.in_network_alpha_s / 2, S / 2, 0.0, intra_Bps=nv_bw)
        half_out = half_in
    else:
        half_in = half_out = Phase((g - 1) * a_i, (g - 1) / g * S)
    if collective == "all_reduce":
        if sharp:  # each node sends its S (S/g per GPU) into the switches once and receives the result once
            middle = Phase(c.nic.in_network_alpha_s, 0.0, S, net_Bps=c.nics_per_node * c.nic.bw_Bps
                           * c.nic.in_network_efficiency)
        else:
            middle = Phase(2 * (n - 1) * a_n, 0.0, 2 * (n - 1) / n * S)
        phases = [half_in, middle, half_out]
    elif collective == "reduce_scatter":
        phases = [Phase((g - 1) * a_i, (g - 1) / g * S), Phase((n - 1) * a_n, 0.0, (n - 1) / n * S)]
    else:  # all_gather
        phases = [Phase((n - 1) * a_n, 0.0, (n - 1) / n * S), Phase((g - 1) * a_i, (g - 1) / g * S)]
    name = "hierarchical" + ("+nvls" if nvls else "") + ("+ib_sharp" if sharp else "")
    return _cost(name, c, base, phases, in_network=nvls or sharp)


def _nvls_single_node(S: float, c: Cluster) -> AlgorithmCost:
    """NVLink SHARP AllReduce inside one node: each GPU sends S once and receives S once."""
    return _cost("nvls", c, 0.0, [Phase(c.intra.in_network_alpha_s, S, 0.0,
                                        intra_Bps=c.intra.bw_Bps * c.intra.in_network_efficiency)], True)


def algorithm_costs(collective: str, size_B: float, cluster: Cluster, in_network: bool = False) -> list[AlgorithmCost]:
    """Every candidate algorithm for ``collective`` of nccl-tests size ``size_B`` [B] on ``cluster``, unsorted.
    With ``in_network`` the NVLS / IB SHARP variants of AllReduce are added where the cluster has them.
    Used in: book/lab-01-collectives.md"""
    _check_collective(collective)
    S = float(size_B)
    if S < 0:
        raise ValueError(f"size must be >= 0 bytes, got {size_B}")
    c = cluster
    if c.n_ranks == 1:
        return [AlgorithmCost("local", 0.0, 0.0, 0.0, 0.0)]
    out = [_ring(collective, S, c)]
    if collective in ALGORITHM_NAMES["tree"]:
        out.append(_tree(collective, S, c))
    if c.nodes > 1 and c.gpus_per_node > 1 and collective in ("all_reduce", "reduce_scatter", "all_gather"):
        out.append(_hierarchical(collective, S, c, nvls=False, sharp=False))
    if in_network and collective == "all_reduce":
        nvls, sharp = c.intra.in_network and c.gpus_per_node > 1, bool(c.nic and c.nic.in_network)
        if c.nodes == 1 and nvls:
            out.append(_nvls_single_node(S, c))
        if c.nodes > 1:
            for use_nvls, use_sharp in ((True, False), (False, True), (True, True)):
                if (use_nvls and not nvls) or (use_sharp and not sharp):
                    continue
                out.append(_hierarchical(collective, S, c, nvls=use_nvls, sharp=use_sharp))
    return out


@dataclasses.dataclass(frozen=True)
class Prediction:
    """The model's answer for one collective, size and cluster (SI units). ``algbw_Bps`` = S/t and ``busbw_Bps`` =
    algbw × F(n) follow nccl-tests; ``bottleneck`` names the link whose bandwidth term is largest."""
    collective: str
    size_B: int
    n_ranks: int
    time_s: float
    latency_s: float
    algorithm: str
    bottleneck: str
    bound: str
    in_network: bool
    alternatives: Mapping[str, float]  # algorithm -> time_s

    @property
    def algbw_Bps(self) -> float:
        return self.size_B / self.time_s if self.time_s > 0 else 0.0

    @property
    def busbw_Bps(self) -> float:
        return busbw_Bps(self.collective, self.algbw_Bps, self.n_ranks)


def _link_label(cluster: Cluster, which: str, in_network: bool) -> str:
    if which == "network":
        return f"inter-node: {cluster.nics_per_node} x {cluster.nic.name}"
    name = cluster.intra.name + (f" with {cluster.intra.in_network_kind}" if in_network and cluster.intra.in_network
                                 else "")
    return f"intra-node: {name}"


def predict(collective: str, size_B: float, cluster: Cluster | str, in_network: bool = False,
            algorithm: str | None = None) -> Prediction:
    """The fastest modelled algorithm (or the named one) for ``collective`` on ``cluster`` (a preset id or a
    :class:`Cluster`), nccl-tests size ``size_B`` [B]. Times in s, bandwidths in B/s.

    t = Σ_phases [α terms + max(bytes_intra/(η_i·B_i), bytes_node/(k·η_n·B_n))] + base latency; see the module
    docstring for the algorithms. Sources: thakur-2005, patarasuk-2009, nccl-tuning-model, nccl-tests-performance.
    Used in: book/lab-01-collectives.md
    """
    c = get_cluster(cluster) if isinstance(cluster, str) else cluster
    costs = algorithm_costs(collective, size_B, c, in_network=in_network)
    if algorithm is not None:
        chosen = [x for x in costs if x.algorithm == algorithm]
        if not chosen:
            raise ValueError(f"algorithm {algorithm!r} is not modelled for {collective} on {c.id}; "
                             f"choose one of: {', '.join(x.algorithm for x in costs)}")
        best = chosen[0]
    else:
        best = min(costs, key=lambda x: x.time_s)
    return Prediction(collective=collective, size_B=int(size_B), n_ranks=c.n_ranks, time_s=best.time_s,
                      latency_s=best.latency_s, algorithm=best.algorithm,
                      bottleneck=_link_label(c, best.bottleneck, best.in_network), bound=best.bound,
                      in_network=best.in_network,
                      alternatives=MappingProxyType({x.algorithm: x.time_s for x in costs}))


def bandwidth_limit_busbw_Bps(collective: str, cluster: Cluster | str, algorithm: str | None = None,
                              in_network: bool = False, size_B: float = 1e15) -> float:
    """busbw [B/s] of the model in its bandwidth-bound limit (a huge size): for a flat ring this is
    min(η_i·B_i, k·η_n·B_n), the bottleneck link's effective bandwidth."""
    return predict(collective, size_B, cluster, in_network=in_network, algorithm=algorithm).busbw_Bps


def assumptions(cluster: Cluster, in_network: bool = False) -> dict:
    """The cluster's parameters in display units with their sources, and the model's stated assumptions
    (for the CLI's JSON and the lab page)."""
    c = cluster
    out = {
        "model_version": MODEL_VERSION,
        "cluster_name": c.name,
        "nodes": c.nodes, "gpus_per_node": c.gpus_per_node, "n_ranks": c.n_ranks,
        "device": c.device,
        "intra_link": c.intra.name,
        "intra_bw_gb_s_per_direction_per_gpu": c.intra.bw_Bps / 1e9,
        "intra_efficiency": c.intra.efficiency,
        "intra_alpha_us": c.intra.alpha_s * 1e6,
        "nics_per_node": c.nics_per_node,
        "nic_link": c.nic.name if c.nic else None,
        "nic_line_rate_gbit_s_per_direction": c.nic.bw_Bps * 8 / 1e9 if c.nic else None,
        "nic_bw_gb_s_per_direction": c.nic.bw_Bps / 1e9 if c.nic else None,
        "nic_efficiency": c.nic.efficiency if c.nic else None,
        "nic_alpha_us": c.nic.alpha_s * 1e6 if c.nic else None,
        "node_network_gb_s_per_direction_effective": c.node_net_Bps / 1e9,
        "base_latency_us": c.base_latency_s * 1e6,
        "in_network_reduction_requested": bool(in_network),
        "nvls_available": c.intra.in_network,
        "ib_sharp_available": bool(c.nic and c.nic.in_network),
        "units": "GB = 1e9 B; Gb = 1e9 bit; link rates per direction; us = microseconds",
        "size_suffixes": "K/M/G = powers of two (nccl-tests); KB/MB/GB = powers of ten; KiB/MiB/GiB = powers of two",
        "sources": {k: dict(v) for k, v in c.sources.items()},
        "model": dict(load_cluster_file()["assumptions"]),
    }
    return out


# ----------------------------------------------------------------------------------------------------------------
# Command line: python -m x4lib collective-predict (the display edge: µs and GB/s only here)
# ----------------------------------------------------------------------------------------------------------------

def _positive(kind: str, integer: bool = False, upper: float | None = None):
    from x4lib.cli import number_arg
    return number_arg(kind, 0, high=upper, integer=integer)


def _non_negative(kind: str):
    from x4lib.cli import number_arg
    return number_arg(kind, 0, low_open=False)


def _sizes(text: str) -> list[int]:
    try:
        return [parse_size(t) for t in text.split(",") if t.strip()] or [parse_size("")]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m x4lib collective-predict",
        usage="%(prog)s [--collective C] (--cluster ID | --nodes N --gpus-per-node G --intra-gb-s B ...) "
              "[--sizes S,...] [--in-network] [--json]",
        description="α–β prediction of a collective's time, algbw and busbw (nccl-tests conventions) on a cluster "
                    "preset (x4lib/data/clusters.yaml) or a custom cluster. Link rates are per direction; "
                    "GB/s = 1e9 B/s, Gb/s = 1e9 bit/s.")
    p.add_argument("--collective", default="all_reduce", help="one of: " + ", ".join(COLLECTIVES))
    p.add_argument("--cluster", help="preset id, e.g. 2x8-h100-ib400 (the flags below override its values)")
    p.add_argument("--sizes", type=_sizes, default=_sizes("1MB,100MB,1GB"),
                   help="comma-separated sizes: bytes, K/M/G (powers of two, as nccl-tests), KB/MB/GB "
                        "(powers of ten) or KiB/MiB/GiB; default 1MB,100MB,1GB")
    p.add_argument("--algorithm", help="force one algorithm (e.g. ring, double_binary_tree, hierarchical)")
    p.add_argument("--in-network", action="store_true",
                   help="model in-network reduction (NVLink SHARP / IB SHARP) where the cluster has it")
    p.add_argument("--nvls", action="store_true", help="the NVSwitch can reduce (NVLink SHARP); implies --in-network")
    p.add_argument("--ib-sharp", action="store_true", help="the IB switches can reduce (SHARP); implies --in-network")
    c = p.add_argument_group("custom cluster (or overrides of --cluster)")
    c.add_argument("--nodes", type=_positive("nodes", integer=True))
    c.add_argument("--gpus-per-node", type=_positive("GPUs per node", integer=True))
    c.add_argument("--intra-gb-s", type=_positive("GB/s"),
                   help="intra-node line rate per GPU per direction, GB/s (1e9 B/s), e.g. 450 for H100 NVLink")
    c.add_argument("--intra-kind", choices=["nvlink", "pcie"], help="intra-node link kind of a custom cluster")
    c.add_argument("--nics-per-node", type=_positive("NICs per node", integer=True))
    c.add_argument("--nic-gbit-s", type=_positive("Gb/s"),
                   help="NIC line rate per direction, Gb/s (bits: 400 Gb/s = 50 GB/s)")
    c.add_argument("--intra-efficiency", type=_positive("efficiency", upper=1.0), help="fraction of line rate")
    c.add_argument("--nic-efficiency", type=_positive("efficiency", upper=1.0), help="fraction of line rate")
    c.add_argument("--alpha-us", type=_non_negative("us"), help="per-hop latency for both link kinds, µs")
    c.add_argument("--alpha-intra-us", type=_non_negative("us"), help="intra-node per-hop latency, µs")
    c.add_argument("--alpha-net-us", type=_non_negative("us"), help="network per-hop latency, µs")
    c.add_argument("--base-latency-us", type=_non_negative("us"), help="fixed cost per collective call, µs")
    p.add_argument("--json", action="store_true", help="machine-readable output "
                   "(x4lib/schemas/collective_predict_output.schema.json)")
    p._negative_number_matcher = re.compile(r"^-\.?\d")  # let "-1MB" reach the size check
    return p


def _cluster_from_args(args, parser: argparse.ArgumentParser) -> Cluster:
    custom_flags = ("nodes", "gpus_per_node", "intra_gb_s", "nics_per_node", "nic_gbit_s", "intra_kind")
    if args.cluster is not None:
        base = get_cluster(args.cluster)
    elif args.nodes is None:
        parser.error("give --cluster ID (known: " + ", ".join(cluster_ids()) + ") or a custom cluster "
                     "(--nodes, --gpus-per-node, --intra-gb-s, and for more than one node --nics-per-node, --nic-gbit-s)")
    else:
        missing = [f"--{f.replace('_', '-')}" for f in ("gpus_per_node", "intra_gb_s") if getattr(args, f) is None]
        if args.nodes > 1:
            missing += [f"--{f.replace('_', '-')}" for f in ("nics_per_node", "nic_gbit_s") if getattr(args, f) is None]
        if missing:
            parser.error(f"a custom cluster of {args.nodes} node(s) also needs {', '.join(missing)}")
        base = None
    a_intra = args.alpha_intra_us if args.alpha_intra_us is not None else args.alpha_us
    a_net = args.alpha_net_us if args.alpha_net_us is not None else args.alpha_us
    us = 1e-6
    if base is None:
        return custom_cluster(
            args.nodes, args.gpus_per_node, args.intra_gb_s * 1e9, args.nics_per_node or 0,
            (args.nic_gbit_s or 0) * 1e9 / 8, intra_kind=args.intra_kind or "nvlink",
            intra_efficiency=args.intra_efficiency, nic_efficiency=args.nic_efficiency,
            intra_alpha_s=None if a_intra is None else a_intra * us,
            nic_alpha_s=None if a_net is None else a_net * us,
            base_latency_s=None if args.base_latency_us is None else args.base_latency_us * us)
    # overrides of a preset
    intra = base.intra
    intra = dataclasses.replace(
        intra,
        bw_Bps=args.intra_gb_s * 1e9 if args.intra_gb_s else intra.bw_Bps,
        efficiency=args.intra_efficiency or intra.efficiency,
        alpha_s=a_intra * us if a_intra is not None else intra.alpha_s,
        kind=args.intra_kind or intra.kind)
    nic = base.nic
    nodes = args.nodes or base.nodes
    k = args.nics_per_node or base.nics_per_node
    if nic is not None:
        nic = dataclasses.replace(
            nic, bw_Bps=args.nic_gbit_s * 1e9 / 8 if args.nic_gbit_s else nic.bw_Bps,
            efficiency=args.nic_efficiency or nic.efficiency,
            alpha_s=a_net * us if a_net is not None else nic.alpha_s)
    elif nodes > 1:
        if not (args.nic_gbit_s and k):
            parser.error(f"cluster {base.id} has no network; {nodes} nodes also need --nics-per-node and --nic-gbit-s")
        nic = custom_cluster(2, 1, 1.0, k, args.nic_gbit_s * 1e9 / 8, nic_efficiency=args.nic_efficiency,
                             nic_alpha_s=None if a_net is None else a_net * us).nic
    changed = any(getattr(args, f) is not None for f in custom_flags + (
        "intra_efficiency", "nic_efficiency", "alpha_us", "alpha_intra_us", "alpha_net_us", "base_latency_us"))
    return dataclasses.replace(
        base, id=base.id + (" (modified)" if changed else ""), nodes=nodes,
        gpus_per_node=args.gpus_per_node or base.gpus_per_node, intra=intra, nic=nic, nics_per_node=k,
        base_latency_s=args.base_latency_us * us if args.base_latency_us is not None else base.base_latency_s)


def predict_table(collective: str, sizes_B: list[int], cluster: Cluster, in_network: bool = False,
                  algorithm: str | None = None) -> dict:
    """The CLI's JSON document (display units: µs, GB/s = 1e9 B/s); see collective_predict_output.schema.json."""
    rows = []
    for size in sizes_B:
        pr = predict(collective, size, cluster, in_network=in_network, algorithm=algorithm)
        rows.append({"size_bytes": int(size), "size_label": format_size(int(size)),
                     "time_us": pr.time_s * 1e6, "algbw_gb_s": pr.algbw_Bps / 1e9, "busbw_gb_s": pr.busbw_Bps / 1e9,
                     "algorithm": pr.algorithm, "bottleneck": pr.bottleneck, "bound": pr.bound,
                     "latency_us": pr.latency_s * 1e6,
                     "alternatives_us": {k: v * 1e6 for k, v in pr.alternatives.items()}})
    return {"collective": collective, "cluster": cluster.id, "n_ranks": cluster.n_ranks,
            "model_version": MODEL_VERSION, "rows": rows, "assumptions": assumptions(cluster, in_network)}


def _text(doc: dict, cluster: Cluster) -> str:
    a = doc["assumptions"]
    lines = [f"{doc['collective']} on {doc['cluster']}: {a['nodes']} node(s) x {a['gpus_per_node']} GPUs "
             f"= {doc['n_ranks']} ranks (α–β model v{doc['model_version']})",
             f"  intra-node: {a['intra_link']}, {a['intra_bw_gb_s_per_direction_per_gpu']:g} GB/s per GPU per "
             f"direction x {a['intra_efficiency']:g} = {cluster.intra.effective_Bps / 1e9:.0f} GB/s, "
             f"α = {a['intra_alpha_us']:g} µs"]
    if cluster.nic and cluster.nodes > 1:
        lines.append(f"  inter-node: {a['nics_per_node']} x {a['nic_link']}, {a['nic_line_rate_gbit_s_per_direction']:g}"
                     f" Gb/s = {a['nic_bw_gb_s_per_direction']:g} GB/s per NIC per direction x {a['nic_efficiency']:g}"
                     f" = {a['node_network_gb_s_per_direction_effective']:.0f} GB/s per node, α = {a['nic_alpha_us']:g} µs")
    lines.append(f"  base latency {a['base_latency_us']:g} µs; in-network reduction "
                 f"{'on' if a['in_network_reduction_requested'] else 'off'}")
    header = f"{'size (bytes)':>14} {'':>7} {'time (µs)':>11} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}  algorithm / bottleneck"
    lines += ["", header]
    for r in doc["rows"]:
        lines.append(f"{r['size_bytes']:>14} {r['size_label']:>7} {r['time_us']:>11.1f} {r['algbw_gb_s']:>13.1f} "
                     f"{r['busbw_gb_s']:>13.1f}  {r['algorithm']} / {r['bottleneck']} ({r['bound']}-bound)")
    lines += ["", "GB = 1e9 B, MB = 1e6 B; K/M/G sizes are powers of two as in nccl-tests; busbw = algbw x "
              "busbw_factor (nccl-tests). Model predictions, not measurements."]
    if any(r["busbw_gb_s"] * 1e9 > cluster.intra.bw_Bps for r in doc["rows"]):
        lines.append("note: busbw exceeds the intra-node line rate: the factor assumes point-to-point transfers, "
                     "which in-network reduction (or a hierarchy) avoids; it is not a link speed.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m x4lib collective-predict``. Exit 0 done, 2 bad input (usage line + one error line)."""
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        _check_collective(args.collective)
        cluster = _cluster_from_args(args, parser)
        if args.nvls or args.ib_sharp:
            cluster = with_in_network(cluster, nvls=True if args.nvls else None,
                                      ib_sharp=True if args.ib_sharp else None)
        in_network = args.in_network or args.nvls or args.ib_sharp
        doc = predict_table(args.collective, args.sizes, cluster, in_network=in_network, algorithm=args.algorithm)
    except ClusterError as exc:  # a broken data file, not the user's input
        print(f"x4lib: cluster data error: {exc}", file=sys.stderr)
        return 1
    except (UnknownClusterError, ValueError) as exc:
        parser.error(str(exc))
    print(json.dumps(doc, indent=2) if args.json else _text(doc, cluster))
    return 0
