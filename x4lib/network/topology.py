"""Network topologies as computable objects: fat tree, rail-optimised fat tree, 2D/3D torus, dragonfly.

    python -m x4lib topology --kind {fat-tree,rail-fat-tree,torus2d,torus3d,dragonfly} --endpoints N
                             [--radix K] [--link-gb-s B] [--gpus-per-node G] [--json]

Each builder takes the number of endpoints N (accelerators, or their NICs), the switch radix k (ports per switch,
for the switched networks) and the rate of one link B [B/s, per direction], and returns a :class:`Topology` with:

    switches       packet switches (a torus has none: each chip routes; TPU v4's optical circuit switches only
                   set up the wiring, jouppi2023tpuv4)
    links          cables or chip-to-chip links, counting each endpoint's link into the network
    diameter_hops  the most links a minimally routed message crosses between two endpoints (endpoint links included)
    bisection_Bps  per direction, across the worst cut into two equal halves: the sum of the cut links' rates

Formulas (all counts, B in B/s per direction):

* **Fat tree** (folded Clos of k-port switches, non-blocking; Al-Fares et al. 2008, alfares-2008-fattree).
  L tiers hold at most k (L = 1) or 2·(k/2)^L endpoints (k²/2 for two tiers, k³/4 for three). Every tier below
  the top has ⌈N/(k/2)⌉ switches (k/2 ports down, k/2 up); the top has ⌈N/k⌉ (all ports down). Links L·N,
  diameter 2L, bisection N/2·B (full: any half can send to the other at line rate).
* **Rail-optimised fat tree** (NVIDIA DGX SuperPOD, nvidia-superpod-h100-ra): nodes of G GPUs, GPU i of every node
  on rail i; a leaf serves k/2 nodes of one rail, so there are G·⌈nodes/(k/2)⌉ leaves, then fat-tree tiers above
  them. Same-rail traffic inside a group of k/2 nodes crosses one switch (2 links); other traffic goes up.
  For 1,024 GPUs on 64-port switches: 32 leaves + 16 spines = 48, the SuperPOD's four-SU compute fabric.
* **Torus** (k-ary n-cube with wraparound; TPU v4/v5p 3D, v5e/v6e 2D): the most balanced dims k_1 ≤ ... ≤ k_n
  with Π k_i = N. Links Σ_i N·(1 if k_i > 2, ½ if k_i = 2), diameter Σ ⌊k_i/2⌋, bisection 2·N/k_max·B (the cut
  across the longest dimension crosses two links per ring). For a 16 × 16 TPU v6e pod with 100 GB/s per port per
  direction this is 3.2 TB/s, Google's figure (google-tpu-v6e-docs).
* **Dragonfly** (Kim et al. 2008, kim-2008-dragonfly): routers with p endpoints, a−1 local links to the other
  routers of their group (all-to-all) and h global links; k = p + a − 1 + h, at most a·p·(a·h + 1) endpoints. The
  balanced choice a = 2p = 2h is used (p = ⌊(k+1)/4⌋). Minimal routes cross at most one global link: diameter 5
  (endpoint, local, global, local, endpoint). Bisection: the global links between the two halves of the groups,
  about N/4·B (half of a fat tree's) when the groups are full.

Costs: no dated public prices of switches, optics or cables were found, so the objects give the cost drivers
instead (switches, switch ports and links per endpoint); a price per item is the reader's given.
Used in: book/03-interconnects-and-topology.md.
"""
from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType
from typing import Mapping

KINDS = ("fat-tree", "rail-fat-tree", "torus2d", "torus3d", "dragonfly")

#: the largest network the builders accept (endpoints)
MAX_ENDPOINTS = 10_000_000


@dataclasses.dataclass(frozen=True)
class Topology:
    """A network of ``endpoints`` built from switches of ``radix`` ports (None for a torus) and links of
    ``link_Bps`` per direction. Counts are whole numbers; ``bisection_Bps`` is per direction."""
    kind: str
    endpoints: int
    radix: int | None
    link_Bps: float
    switches: int
    links: int
    endpoint_links: int
    diameter_hops: int
    bisection_Bps: float
    shape: Mapping  # tiers / dims / (p, a, h, groups): how it was built
    notes: tuple[str, ...] = ()

    @property
    def full_bisection_Bps(self) -> float:
        """N/2 × B: what a non-blocking network gives across any balanced cut (per direction)."""
        return self.endpoints // 2 * self.link_Bps

    @property
    def bisection_ratio(self) -> float:
        """bisection / full bisection (1 for a non-blocking fat tree)."""
        return self.bisection_Bps / self.full_bisection_Bps if self.full_bisection_Bps else 0.0

    @property
    def switches_per_endpoint(self) -> float:
        return self.switches / self.endpoints

    @property
    def switch_ports_per_endpoint(self) -> float:
        """Switch ports bought per endpoint (a cost driver: switches are priced by ports)."""
        return self.switches * (self.radix or 0) / self.endpoints

    @property
    def links_per_endpoint(self) -> float:
        return self.links / self.endpoints


def _check(endpoints: int, link_Bps: float, radix: int | None = None) -> None:
    if int(endpoints) != endpoints or not 2 <= endpoints <= MAX_ENDPOINTS:
        raise ValueError(f"endpoints must be a whole number in [2, {MAX_ENDPOINTS:,}], got {endpoints}")
    if not (math.isfinite(link_Bps) and link_Bps > 0):
        raise ValueError(f"the link rate must be > 0 B/s per direction, got {link_Bps}")
    if radix is not None and (int(radix) != radix or radix < 4 or radix % 2):
        raise ValueError(f"the switch radix must be an even whole number >= 4, got {radix}")


def fat_tree_tiers(endpoints: int, radix: int) -> int:
    """Fewest tiers L of ``radix``-port switches that hold ``endpoints``: L = 1 holds k, L >= 2 holds 2·(k/2)^L."""
    if endpoints <= radix:
        return 1
    tiers = 2
    while 2 * (radix // 2) ** tiers < endpoints:
        tiers += 1
    return tiers


def _clos(kind: str, endpoints: int, leaves: int, radix: int, link_Bps: float, shape: dict,
          notes: tuple[str, ...]) -> Topology:
    """Tiers above ``leaves`` leaf switches (k/2 ports down and k/2 up each) of a non-blocking folded Clos."""
    half = radix // 2
    if leaves == 1:
        tiers, switches, links, diameter = 1, 1, endpoints, 2
    else:
        # non-blocking: every tier above the leaves carries one link per endpoint
        tiers = max(fat_tree_tiers(leaves * half, radix), 2)  # enough tiers to join every leaf
        middle = (tiers - 2) * math.ceil(endpoints / half)
        top = math.ceil(endpoints / radix)
        switches = leaves + middle + top
        links = endpoints + (tiers - 1) * endpoints
        diameter = 2 * tiers
    shape = {**shape, "tiers": tiers, "leaves": leaves}
    return Topology(kind, endpoints, radix, link_Bps, switches, links, endpoints, diameter,
                    endpoints // 2 * link_Bps, MappingProxyType(shape), notes)


def fat_tree(endpoints: int, radix: int, link_Bps: float) -> Topology:
    """Non-blocking folded-Clos fat tree of ``radix``-port switches (module docstring; alfares-2008-fattree).
    Partly filled trees are counted with the switches they need, each tier sized for the endpoints present."""
    _check(endpoints, link_Bps, radix)
    leaves = 1 if endpoints <= radix else math.ceil(endpoints / (radix // 2))
    return _clos("fat-tree", endpoints, leaves, radix, link_Bps, {}, ())


def rail_fat_tree(endpoints: int, radix: int, link_Bps: float, gpus_per_node: int = 8) -> Topology:
    """Rail-optimised fat tree: GPU i of each node on rail i, a leaf per rail and group of k/2 nodes
    (nvidia-superpod-h100-ra). ``endpoints`` are GPUs, each with its own NIC."""
    _check(endpoints, link_Bps, radix)
    if int(gpus_per_node) != gpus_per_node or gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be a whole number >= 1, got {gpus_per_node}")
    nodes = math.ceil(endpoints / gpus_per_node)
    half = radix // 2
    groups = math.ceil(nodes / half)
    leaves = gpus_per_node * groups
    notes = (f"same-rail traffic inside a group of {half} nodes crosses one leaf (2 links)",)
    if nodes == 1:
        notes += ("one node: its GPUs talk over the scale-up link (NVLink), the rails are idle",)
    topo = _clos("rail-fat-tree", endpoints, leaves, radix, link_Bps,
                 {"gpus_per_node": gpus_per_node, "nodes": nodes, "rail_groups": groups}, notes)
    if leaves == 1:
        return topo
    return dataclasses.replace(topo, shape=MappingProxyType({**topo.shape, "same_rail_hops": 2}))


def balanced_dims(n: int, ndim: int) -> tuple[int, ...]:
    """The factorisation of n into ``ndim`` factors k_1 <= ... <= k_ndim with the smallest largest factor (then the
    smallest sum, i.e. the smallest diameter): 4096 -> (16, 16, 16), 100000 -> (40, 50, 50) in 3D."""
    if ndim == 1:
        return (n,)
    best = None
    d = 1
    while d ** ndim <= n:
        if n % d == 0:
            rest = balanced_dims(n // d, ndim - 1)
            if rest[0] >= d:
                cand = (d,) + rest
                key = (max(cand), sum(cand))
                if best is None or key < best[0]:
                    best = (key, cand)
        d += 1
    return best[1] if best else (1,) * (ndim - 1) + (n,)


def torus(endpoints: int, ndim: int, link_Bps: float, dims: tuple[int, ...] | None = None) -> Topology:
    """k-ary n-cube with wraparound (module docstring). ``dims`` default to :func:`balanced_dims`."""
    _check(endpoints, link_Bps)
    dims = tuple(sorted(dims)) if dims else balanced_dims(endpoints, ndim)
    if math.prod(dims) != endpoints or len(dims) != ndim or min(dims) < 1:
        raise ValueError(f"dims {dims} do not multiply to {endpoints} in {ndim} dimensions")
    links = sum(endpoints if k > 2 else endpoints // 2 if k == 2 else 0 for k in dims)
    diameter = sum(k // 2 for k in dims)
    kmax = dims[-1]
    crossing = endpoints // kmax * (2 if kmax > 2 else 1)
    notes = ()
    if dims[0] * 4 < kmax:
        notes = (f"{endpoints} has no balanced factorisation: dims {'x'.join(map(str, dims))}",)
    return Topology(f"torus{ndim}d", endpoints, None, link_Bps, 0, links, 0, diameter, crossing * link_Bps,
                    MappingProxyType({"dims": list(dims)}), notes)


def dragonfly_shape(radix: int) -> tuple[int, int, int]:
    """(p, a, h) of the balanced dragonfly a = 2p = 2h with p + a − 1 + h <= radix (kim-2008-dragonfly)."""
    p = (radix + 1) // 4
    if p < 1:
        raise ValueError(f"a dragonfly needs a radix of at least 3, got {radix}")
    return p, 2 * p, p


def dragonfly(endpoints: int, radix: int, link_Bps: float) -> Topology:
    """Balanced dragonfly of ``radix``-port routers (module docstring). The last group may be partly filled."""
    _check(endpoints, link_Bps, radix)
    p, a, h = dragonfly_shape(radix)
    most = a * p * (a * h + 1)
    if endpoints > most:
        raise ValueError(f"{endpoints:,} endpoints exceed a balanced dragonfly of radix {radix} "
                         f"(at most a·p·(a·h+1) = {most:,}); use a larger radix")
    routers = math.ceil(endpoints / p)
    groups = math.ceil(routers / a)
    last = routers - (groups - 1) * a

    def local_links(r: int) -> tuple[int, int]:  # (router pairs' parallel links, links) of a group of r routers
        if r < 2:
            return 0, 0
        per_pair = (a - 1) // (r - 1)  # a partly filled group cables its spare local ports in parallel
        return per_pair, per_pair * r * (r - 1) // 2
    local = (groups - 1) * local_links(a)[1] + local_links(last)[1]
    glob = routers * h // 2 if groups > 1 else 0
    if groups > 1:
        per_pair = glob / (groups * (groups - 1) / 2)
        bisection = (groups // 2) * ((groups + 1) // 2) * per_pair * link_Bps
        diameter = 5
    elif routers > 1:
        bisection = (routers // 2) * ((routers + 1) // 2) * local_links(routers)[0] * link_Bps
        diameter = 3
    else:
        bisection, diameter = endpoints // 2 * link_Bps, 2
    return Topology("dragonfly", endpoints, radix, link_Bps, routers, endpoints + local + glob, endpoints,
                    diameter, min(bisection, endpoints // 2 * link_Bps),
                    MappingProxyType({"p": p, "a": a, "h": h, "groups": groups, "global_links": glob,
                                      "local_links": local}), ())


def build(kind: str, endpoints: int, radix: int, link_Bps: float, gpus_per_node: int = 8) -> Topology:
    """One of :data:`KINDS`; ``radix`` is ignored by the tori."""
    if kind == "fat-tree":
        return fat_tree(endpoints, radix, link_Bps)
    if kind == "rail-fat-tree":
        return rail_fat_tree(endpoints, radix, link_Bps, gpus_per_node)
    if kind == "torus2d":
        return torus(endpoints, 2, link_Bps)
    if kind == "torus3d":
        return torus(endpoints, 3, link_Bps)
    if kind == "dragonfly":
        return dragonfly(endpoints, radix, link_Bps)
    raise ValueError(f"unknown topology kind {kind!r}; known: {', '.join(KINDS)}")


def sweep(kind: str, sizes, radix: int, link_Bps: float, gpus_per_node: int = 8) -> list[Topology]:
    """:func:`build` for each size (the scaling figures of chapter 03)."""
    return [build(kind, int(n), radix, link_Bps, gpus_per_node) for n in sizes]


def default_radix() -> int:
    """Ports of the NDR InfiniBand switch in the link data (Quantum-2 QM9700: 64)."""
    from x4lib.network import links
    q = links.get("quantum2-qm9700")
    return int(round(q.per_direction_Bps / links.get("ib-ndr").per_direction_Bps))


def default_link_Bps() -> float:
    """One InfiniBand NDR port, per direction (50 GB/s), from the link data."""
    from x4lib.network import links
    return links.get("ib-ndr").per_direction_Bps


# --------------------------------------------------------------------------- display edge and command line

def to_json(t: Topology) -> dict:
    """The --json contract (x4lib/schemas/topology_output.schema.json); GB/s = 1e9 B/s, per direction."""
    return {"kind": t.kind, "endpoints": t.endpoints, "switches": t.switches, "links": t.links,
            "diameter_hops": t.diameter_hops, "bisection_gb_s": t.bisection_Bps / 1e9,
            "radix": t.radix, "link_gb_s_per_direction": t.link_Bps / 1e9,
            "full_bisection_gb_s": t.full_bisection_Bps / 1e9, "bisection_ratio": t.bisection_ratio,
            "switches_per_endpoint": t.switches_per_endpoint, "links_per_endpoint": t.links_per_endpoint,
            "switch_ports_per_endpoint": t.switch_ports_per_endpoint, "shape": dict(t.shape), "notes": list(t.notes),
            "convention": "bisection per direction across the worst balanced cut; diameter in links crossed, "
                          "endpoint links included; GB/s = 1e9 B/s"}


def _text(d: dict) -> str:
    shape = ", ".join(f"{k} {v}" for k, v in d["shape"].items())
    lines = [f"{d['kind']}: {d['endpoints']:,} endpoints ({shape})",
             f"  switches {d['switches']:,} (radix {d['radix'] or '-'}), links {d['links']:,}, "
             f"diameter {d['diameter_hops']} links",
             f"  bisection {d['bisection_gb_s']:,.0f} GB/s per direction = {d['bisection_ratio']:.2f} of full "
             f"({d['link_gb_s_per_direction']:g} GB/s per link per direction)",
             f"  per endpoint: {d['switches_per_endpoint']:.3f} switches, {d['switch_ports_per_endpoint']:.2f} "
             f"switch ports, {d['links_per_endpoint']:.2f} links"]
    lines += [f"  note: {n}" for n in d["notes"]]
    return "\n".join(lines)


def cli_arguments(p) -> None:
    from x4lib import cli
    p.description = ("Switches, links, diameter and bisection bandwidth of a network topology of N endpoints. "
                     "Link rates are per direction; GB/s = 1e9 B/s.")
    p.add_argument("--kind", required=True, type=cli.choice_of("topology kind", KINDS))
    p.add_argument("--endpoints", required=True, type=cli.number("endpoints", 2, MAX_ENDPOINTS, integer=True),
                   help="accelerators (or NICs) attached to the network")
    p.add_argument("--radix", type=cli.number("ports", 4, 4096, integer=True),
                   help="ports per switch (default: 64, a Quantum-2 NDR switch); ignored by the tori")
    p.add_argument("--link-gb-s", type=cli.number("GB/s", 0, 1e6, low_open=True),
                   help="one link's rate per direction in GB/s (default 50: InfiniBand NDR, 400 Gb/s)")
    p.add_argument("--gpus-per-node", type=cli.number("GPUs per node", 1, 1024, integer=True), default=8,
                   help="rails of a rail-optimised fat tree (default 8)")
    p.add_argument("--json", action="store_true", help="machine-readable output "
                   "(x4lib/schemas/topology_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    radix = args.radix if args.radix is not None else default_radix()
    if radix % 2:
        raise cli.UsageError(f"--radix {radix}: a switch radix must be even (half the ports down, half up)")
    link = args.link_gb_s * 1e9 if args.link_gb_s is not None else default_link_Bps()
    doc = to_json(build(args.kind, args.endpoints, radix, link, args.gpus_per_node))
    cli.emit(doc, _text(doc), as_json=args.json)
    return 0
