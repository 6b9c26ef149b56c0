"""NCCL's own cost model, as its tuner prices a collective: the constants of x4lib/data/nccl_tuning.yaml (each with
its line in NCCL's source), the graph NCCL searches on a cluster (channels and per-channel bandwidth inside a node
and across the network), and the (algorithm, protocol) options with their latency and bus bandwidth.

x4lib.network.collectives picks among these options as NCCL does and predicts a collective's time (its docstring has the
formulas); this module is the tuner's data and arithmetic. Sources: nccl-src (src/graph/tuning.cc, search.cc,
src/include/plugin/nccl_tuner.h) and the notes of nccl_tuning.yaml. Used in: book/lab-01-collectives.md,
book/03-interconnects-and-topology.md (through x4lib.network.collectives).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the type only: clusters reads NCCL's architecture table from this module
    from x4lib.network.clusters import Cluster
from x4lib import paths

TUNING_PATH = paths.DATA_DIR / "nccl_tuning.yaml"
TUNING_SCHEMA_PATH = paths.SCHEMA_DIR / "nccl_tuning.schema.json"
#: NCCL's algorithms in its own index order (src/include/plugin/nccl_tuner.h): on an exact tie the lower one wins
ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree")
PROTOCOLS = ("LL", "LL128", "Simple")
#: what --algorithm accepts: NCCL's names, "nvls" for the NVLink SHARP family (NVLS on one node, NVLS tree across
#: nodes), "collnet" for both IB SHARP algorithms, and "p2p" (AllToAll, SendRecv: not in NCCL's tuner)
ALGORITHM_CHOICES = ("auto", "ring", "tree", "nvls", "nvls_tree", "collnet", "collnet_direct", "collnet_chain", "p2p")
FAMILIES = {"nvls": ("nvls", "nvls_tree"), "collnet": ("collnet_direct", "collnet_chain")}
#: the collectives NCCL's tuner prices (AllToAll and SendRecv are point-to-point in NCCL)
TUNED = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")


class TuningError(ValueError):
    """nccl_tuning.yaml breaks a rule; the message names the field (a broken data file of the book: exit 1)."""
    exit_code = 1


@functools.lru_cache(maxsize=2)
def tuning(path: Path = TUNING_PATH) -> Mapping:
    """nccl_tuning.yaml, validated against its JSON Schema; every number finite (TuningError names the field)."""
    from x4lib.catalog import specs
    return MappingProxyType(specs.load_document(path, TUNING_SCHEMA_PATH, TuningError))


def _v(key: str):
    return tuning()[key]["value"]


def parse_version(version: str | None) -> tuple[int, int, int] | None:
    """"2.26.2" (or "v2.26.2-1", "NCCL 2.21.5") -> (2, 26, 2); None -> None (the latest modelled, 2.30.7).
    ValueError for anything else."""
    if version is None:
        return None
    import re
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", str(version))
    if not m:
        raise ValueError(f"not an NCCL version: {version!r} (use e.g. 2.26.2)")
    return int(m[1]), int(m[2]), int(m[3] or 0)


def band(version: str | None) -> Mapping | None:
    """The nccl_tuning.yaml ``version_bands`` entry that models NCCL ``version`` (the first whose ``until`` is at or
    above it); None for 2.28.9 and later (and for None): the 2.30.7 tables. Versions before 2.18 get the 2.18 band
    (NVLS did not run across nodes before 2.18, so only ring and tree matter there)."""
    v = parse_version(version)
    if v is None:
        return None
    for b in _v("version_bands"):
        if v <= tuple(b["until"]):
            return b
    return None


def _table(key: str, b: Mapping | None) -> dict:
    """base_latency_us or hw_latency_us with a band's overrides applied."""
    base = tuning()[key]["value"]
    if b is None or key not in b:
        return base
    if key == "base_latency_us":
        return {**base, **b[key]}
    return {link: {**rows, **b[key].get(link, {})} for link, rows in base.items()}


def plugin_latency_us(c: Cluster) -> float:
    """latencyInter of NCCL's graph: what the cluster's network plugin reports (0 on IB/RoCE, 75 us on AWS EFA)."""
    if c.nic is None or c.nodes == 1:
        return 0.0
    return float(_v("net_plugin_latency_us").get(c.nic.network, 0.0))


def achieved_plugin_latency_us(c: Cluster) -> float:
    """The latency a network step takes on the plugin's fabric (net_plugin_achieved_latency_us: by the plugin's
    protocol, which follows the platform), where that differs from what the plugin reports; else the reported one."""
    if c.nic is None or c.nodes == 1:
        return 0.0
    by_arch = _v("net_plugin_achieved_latency_us").get(c.nic.network)
    return float(by_arch[c.arch]) if by_arch and c.arch in by_arch else plugin_latency_us(c)


def _log2i(x: float) -> int:
    """NCCL's log2i: floor(log2(x)), -1 for 0."""
    return int(x).bit_length() - 1 if x >= 1 else -1


def _scale(c: Cluster) -> int:
    """NCCL's "N1/N2/N4" column: 0 on one node, 1 on two, 2 on more (tuning.cc line 267)."""
    return 0 if c.nodes == 1 else 1 if c.nodes == 2 else 2


def _cc(c: Cluster) -> float:
    return tuning()["architectures"][c.arch]["compute_capability"]


def nvls_supported(c: Cluster) -> bool:
    """NVLink SHARP is possible: the switch can reduce, the architecture has an NVLS efficiency, > 1 GPU per node."""
    return bool(c.intra.in_network and c.intra.kind == "nvlink" and _v("nvls_efficiency")[c.arch] > 0
                and c.gpus_per_node > 1)


def intra_bw_Bps(c: Cluster) -> float:
    """The intra-node bandwidth per GPU per direction NCCL's topology sees [B/s]: for NVLink, the number of links
    (line rate / line rate per link) × NCCL's per-link figure (topo.h), e.g. 18 × 20.6 = 370.8 GB/s for H100 SXM
    (0.824 of its 450 GB/s line rate); for PCIe, NCCL's x16 figure for the GPU's generation. A Link efficiency,
    when set, replaces NCCL's fraction. Source: nccl-v2-30-7. Used in: book/lab-01-collectives.md"""
    if c.intra.efficiency is not None:
        return c.intra.bw_Bps * c.intra.efficiency
    arch = tuning()["architectures"][c.arch]
    if c.intra.kind == "nvlink":
        per_link_line = arch["nvlink_line_rate_per_link"]["value"] * 1e9
        return c.intra.bw_Bps / per_link_line * _v("nvlink_bw_per_link_gb_s")[c.arch] * 1e9
    gen = arch.get("pcie_gen")
    return min(c.intra.bw_Bps, _v("pci_bw_gb_s")[f"gen{gen['value']}"] * 1e9) if gen else c.intra.bw_Bps


def nic_path_Bps(c: Cluster, nics: int = 1) -> float:
    """Bandwidth of one GPU's path to ``nics`` NICs per direction [B/s]: their rate (NCCL: Mb/s / 8000), or the
    GPU's PCIe x16 link if slower (Gen5 48 GB/s, Gen4 24 GB/s in NCCL's units); a NIC efficiency, when set,
    scales the NIC's rate instead. Source: nccl-v2-30-7."""
    if c.nic is None:
        return 0.0
    nic = nics * c.nic.bw_Bps * (c.nic.efficiency if c.nic.efficiency is not None else 1.0)
    gen = tuning()["architectures"][c.arch].get("pcie_gen")
    return min(nic, _v("pci_bw_gb_s")[f"gen{gen['value']}"] * 1e9) if gen else nic


@dataclasses.dataclass(frozen=True)
class Graph:
    """What NCCL's topology search hands its tuner for one algorithm: channels and the bandwidth of each channel
    inside the node and across nodes [GB/s, NCCL's unit], and which link set that bandwidth."""
    channels: int
    bw_intra_GBps: float
    bw_inter_GBps: float
    limited_by: str  # "intra" or "network"

    @property
    def bw_GBps(self) -> float:
        return min(self.bw_intra_GBps, self.bw_inter_GBps)


def _speeds(kind: str, arch: str) -> list[float]:
    table = _v("search_speeds_gb_s")[kind]
    return table.get(arch, table["default"])


def _fastest_at_most(speeds: list[float], limit: float) -> float:
    return next((s for s in speeds if s <= limit * (1 + 1e-9)), speeds[-1])


def graphs(c: Cluster) -> dict[str, Graph]:
    """The model's stand-in for NCCL's topology search (src/graph/search.cc; a short rule, not the search):

    - ring (the tree uses the same channels): on one node, the largest per-channel speed of the search's list that
      fits the GPU's NVLink bandwidth B (intra_bw_Bps), floor(B / speed) channels; across nodes, the largest speed
      under the GPU-NIC path, one channel per NIC per multiple of that speed, until the channels carry B (at most
      32). Then ncclTopoDupChannels: twice the channels at half the speed, unless the speed is under 25 GB/s, or
      (Hopper and later) under 50 GB/s with more than four channels. Across nodes the tree's bwIntra then climbs
      the list, same channels, while under twice bwInter and within B (the search's second pass); the tuner uses it
      on two nodes, where each node sends its data across the network once.
    - nvls: one channel (head) per GPU; the largest speed s with (g + 1)·s <= B inside the node (each GPU carries
      every head's traffic plus its own twice); across nodes the path from the head GPU to all the NICs next to
      it (two 200 Gb/s NICs per GPU count as 400 Gb/s), on one node the list's top speed.

    Hand-traced by the research notes for 8 × H100 (24 execution channels from 12 search channels of 30 GB/s) and
    2 × 8 H100 with eight 400 Gb/s NICs (8 channels of 48 GB/s); tested in tests/test_collectives.py."""
    B = intra_bw_Bps(c) / 1e9
    cc = _cc(c)
    dup = _v("dup_channels")
    if c.nodes == 1 or c.nic is None:
        s = _fastest_at_most(_speeds("intra", c.arch), B)
        n, inter, limited = max(1, int(B / s + 1e-9)), s, "intra"
    else:
        path = nic_path_Bps(c) / 1e9
        s = _fastest_at_most(_speeds("inter", c.arch), path)
        per_nic = max(1, int(c.nic.bw_Bps / 1e9 * (c.nic.efficiency or 1.0) / s + 1e-9))
        n = min(c.nics_per_node * per_nic, max(1, math.ceil(B / s - 1e-9)), _v("max_ring_channels"))
        limited = "network" if n * s < B * (1 - 1e-9) else "intra"
        inter = s
    if not (s < dup["min_bw_gb_s"] or (cc > 8.0 and s < dup["sm90_min_bw_gb_s"] and n > dup["sm90_max_channels"])):
        doubled = min(2 * n, _v("max_ring_channels"))
        s, inter, n = s / math.ceil(doubled / n), inter / math.ceil(doubled / n), doubled
    tree = s
    if c.nodes > 1:  # search.cc pass 2: a tree's bwIntra climbs the list while < 2 x bwInter and NVLink carries it
        for x in sorted(v for v in _speeds("inter", c.arch) if v > s):
            if tree >= _v("tree_bw_intra_raise")["max_ratio"] * inter or n * x > B * (1 + 1e-9):
                break
            tree = x
    out = {"ring": Graph(n, s, inter, limited), "tree": Graph(n, tree, inter, limited)}
    if nvls_supported(c):
        heads = min(c.gpus_per_node, _v("max_nvls_arity"))
        kind = "intra" if c.nodes == 1 else "inter"
        s_in = _fastest_at_most(_speeds(kind, c.arch), B / (heads + 1))
        nics_per_gpu = max(1, c.nics_per_node // c.gpus_per_node)  # a head uses every NIC next to its GPU
        s_out = _speeds("intra", c.arch)[0] if c.nodes == 1 else _fastest_at_most(
            _speeds("inter", c.arch), nic_path_Bps(c, nics_per_gpu) / 1e9)
        out["nvls"] = out["nvls_tree"] = Graph(heads, s_in, s_out, "network" if c.nodes > 1 else "intra")
    if c.nic is not None and c.nic.in_network and c.nodes > 1:
        out["collnet_direct"] = out["collnet_chain"] = out["ring"]  # assumption: CollNet uses the ring's channels
    return out


def _exec_channels(c: Cluster, ring: Graph) -> int:
    """Execution channels: the search's, doubled (connect.cc line 460), doubled again on Hopper and later across
    nodes when under 16 with ring bwIntra > 45 GB/s (lines 480-483), then raised to the run's NCCL_MIN_CTAS
    (``c.min_channels``, line 484 in v2.26.2: copies of the same rings). NCCL's tuner prices the search's channels
    (its Ring/Simple plateau test uses these); the launch runs these."""
    n = min(64, 2 * ring.channels)
    if _cc(c) >= 9.0 and c.nodes > 1 and ring.bw_intra_GBps > 45.0 and n < 16:
        n *= 2
    return max(n, min(64, c.min_channels))


@dataclasses.dataclass(frozen=True)
class Option:
    """One (algorithm, protocol) as NCCL's tuner prices it: latency [s] and algorithm bandwidth [B/s] (NCCL's
    bus bandwidth × its algbw ratio), and the resulting time for one size [s] (after NCCL's size corrections)."""
    algorithm: str
    protocol: str
    latency_s: float
    algbw_Bps: float
    time_s: float
    channels: int
    bottleneck: str  # "intra" or "network"
    plugin_latency_s: float = 0.0  # the part of latency_s that is the network plugin's reported latency


def _enabled(collective: str, a: str, p: str, c: Cluster, in_network: bool) -> bool:
    """Which pairs NCCL considers (tuning.cc lines 294-304, 495-541), simplified to the cluster's description."""
    if p != "Simple" and a in ("nvls", "nvls_tree", "collnet_direct", "collnet_chain"):
        return False
    if p == "LL128" and c.intra.kind != "nvlink":  # LL128 needs NVLink inside the node (typeIntra <= NVB)
        return False
    if collective in ("broadcast", "reduce") and a != "ring":
        return False
    if collective in ("all_gather", "reduce_scatter") and a not in ("ring", "nvls"):
        return False
    nvls, sharp = in_network and nvls_supported(c), in_network and bool(c.nic and c.nic.in_network)
    if a == "nvls":
        return nvls and (c.nodes == 1 or (sharp and collective == "all_reduce"))
    if a == "nvls_tree":
        return nvls and c.nodes > 1 and collective == "all_reduce"
    if a.startswith("collnet"):
        return sharp and c.nodes > 1 and collective == "all_reduce" and (a == "collnet_chain" or
                                                                         c.intra.kind == "nvlink")
    return True


def _bus_bw_GBps(collective: str, a: str, p: str, c: Cluster, g: Graph, b: Mapping | None = None) -> float:
    """NCCL's bus bandwidth for one pair (tuning.cc lines 305-374), by version band ``b`` (None: 2.30.7)."""
    t, arch, col, ppn = tuning(), c.arch, _scale(c), c.gpus_per_node
    f = {**_v("protocol_factors"), **(b.get("protocol_factors", {}) if b else {})}
    collnet = a.startswith("collnet")
    bw = g.bw_intra_GBps if (c.nodes <= 2 or collnet) else g.bw_inter_GBps
    rule = b["nvls_bandwidth"] if b else "v2_28"
    if a in ("nvls", "nvls_tree") and rule == "v2_19":
        bw = min(g.bw_intra_GBps, g.bw_inter_GBps if (a == "nvls" or c.nodes <= 2) else g.bw_inter_GBps / 2)
    elif a in ("nvls", "nvls_tree") and rule == "v2_28":
        intra = g.bw_intra_GBps * _v("nvls_efficiency")[arch] * (g.channels - 1) / g.channels
        intra *= 2.0 if collective == "all_reduce" else (ppn - 1) / ppn
        inter = g.bw_inter_GBps * (2 if (c.nodes <= 2 and a == "nvls_tree") else 1)
        caps = [intra, inter] + ([_v("per_channel_max_nvls_tree_gb_s")[arch][col]] if a == "nvls_tree" else [])
        bw = min(caps)
    bus = g.channels * bw
    ll_row = arch if c.nodes == 1 else ("ampere" if c.cpu == "amd" else "volta")  # by CPU vendor across nodes
    ll_max = t["ll_max_bw_gb_s"]["value"][ll_row][col]
    if a == "ring" and p == "LL":
        bus = min(ll_max, bus * f["ring_ll"])
    if a == "ring" and p == "LL128":
        bus = min(bus * f["ring_ll128"], g.channels * _v("per_channel_max_ring_ll128_gb_s")[arch][col])
    if a == "tree" and collective == "all_reduce":
        bus = min(bus * f["tree"], g.channels * _v("per_channel_max_tree_gb_s")[arch][col])
    if a == "tree" and p == "LL":
        bus = min(bus / f["tree_ll_divisor"], ll_max)
    if a == "tree" and p == "LL128":
        bus = min(bus * (f["tree_ll128_one_node"] if c.nodes == 1 else f["tree_ll128_multi_node"]),
                  g.channels * _v("per_channel_max_tree_ll128_gb_s")[arch][col])
    if a == "collnet_direct":
        factor = ppn / g.channels
        factor -= (factor - 1) / 2
        bus /= factor
        if _cc(c) >= 9.0:
            bus *= f["collnet_direct_sm90"]
    return bus


def _nsteps(collective: str, n: int) -> int:
    return 2 * (n - 1) if collective == "all_reduce" else n - 1 if collective in ("all_gather", "reduce_scatter") \
        else n


def _latency_us(collective: str, a: str, p: str, c: Cluster, b: Mapping | None = None) -> float:
    """NCCL's latency for one pair (tuning.cc lines 384-435), by version band ``b`` (None: 2.30.7); the graph's
    latencyInter is the network plugin's (plugin_latency_us), added to every network step, twice for Simple."""
    pi = PROTOCOLS.index(p)
    hw = _table("hw_latency_us", b)
    intra_hw = "nvlink" if c.intra.kind == "nvlink" else "pci"
    n, N, ppn = c.n_ranks, c.nodes, c.gpus_per_node
    lat0 = _table("base_latency_us", b)[a][pi]
    intra = hw[intra_hw][a][pi]
    inter = hw["net"]["tree" if ppn == 1 else a][pi]
    inter += plugin_latency_us(c) * (2 if p == "Simple" else 1)
    if a == "ring":
        if collective in ("broadcast", "reduce"):  # the channels are identical (sameChannels): one step's latency
            return lat0 + hw[intra_hw if N == 1 else "net"]["ring"][pi]
        if N > 1:
            overhead = _v("net_overhead_us")[c.cpu] * (_v("simple_net_overhead_factor") if p == "Simple" else 1)
            intra = max(intra, overhead)
        per_node = b is not None and b["ring_inter_steps"] == "2N"
        n_inter = 0 if N == 1 else (2 * N if per_node else 2 * (N - 1)) if collective == "all_reduce" else N - 1
        return lat0 + (_nsteps(collective, n) - n_inter) * intra + n_inter * inter
    if a == "tree":
        return lat0 + 2 * ((ppn - 1) * intra + _log2i(N) * inter)
    if a == "collnet_direct":
        return lat0 + 2 * (min(1, ppn - 1) * intra + (ppn - 1) * _v("collnet_direct_arity_latency_us")) + inter
    if a == "collnet_chain":
        return lat0 + 2 * (ppn - 1) * intra + inter
    if a == "nvls":
        return lat0 + intra + (inter if N > 1 else 0.0)
    if b is not None and b.get("nvls_tree_latency") == "linear":
        return lat0 + intra + 2 * (N - 1) * inter
    return lat0 + intra + 2 * _log2i(N) * inter  # nvls_tree


def _network_steps(collective: str, a: str, c: Cluster, b: Mapping | None) -> float:
    """How many times _latency_us charges the network latency for one pair (0 on one node)."""
    N = c.nodes
    if N == 1:
        return 0.0
    if a == "ring":
        if collective in ("broadcast", "reduce"):
            return 1.0
        if collective != "all_reduce":
            return N - 1
        return 2 * N if (b is not None and b["ring_inter_steps"] == "2N") else 2 * (N - 1)
    if a == "tree":
        return 2 * _log2i(N)
    if a == "nvls_tree":
        return 2 * (N - 1) if (b is not None and b.get("nvls_tree_latency") == "linear") else 2 * _log2i(N)
    return 1.0  # nvls, collnet


def _p2p_option(collective: str, S: float, c: Cluster) -> Option:
    """AllToAll and SendRecv are point-to-point in NCCL, outside its tuner: a bandwidth bound with the Simple
    protocol's one-step latency (Ring/Simple base + one hop). AllToAll: each GPU sends S/p to every other rank,
    (g-1)/p·S inside its node and (N-1)/N·S to other nodes (g GPUs share the node's NICs); SendRecv: S to the
    next rank, through one NIC when it crosses nodes."""
    n, N, g = c.n_ranks, c.nodes, c.gpus_per_node
    hw = "net" if N > 1 else ("nvlink" if c.intra.kind == "nvlink" else "pci")
    lat = (_v("base_latency_us")["ring"][2] + _v("hw_latency_us")[hw]["ring"][2]) * 1e-6
    node_net = c.nics_per_node * nic_path_Bps(c) if N > 1 else math.inf
    if collective == "all_to_all":
        t_intra = (g - 1) / n * S / intra_bw_Bps(c)
        t_net = g * (N - 1) / N * S / node_net if N > 1 else 0.0
    else:
        t_intra = S / intra_bw_Bps(c) if g > 1 else 0.0
        t_net = S / nic_path_Bps(c) if N > 1 else 0.0
    bw_time = max(t_intra, t_net)
    return Option("p2p", "Simple", lat, S / bw_time if bw_time > 0 else math.inf, lat + bw_time, 1,
                  "network" if t_net > t_intra else "intra")


def _algbw_ratio(collective: str, a: str, c: Cluster, b: Mapping | None) -> float:
    """NCCL's bus -> algorithm bandwidth ratio (tuning.cc lines 376-383; 2.19-2.27: 5/6 for NVLS and NVLS tree,
    2.18: .75 for NVLS and .70 nNodes / (2(nNodes-1)) for NVLS tree)."""
    rule = b["nvls_bandwidth"] if b else "v2_28"
    if a in ("nvls", "nvls_tree") and rule == "v2_19":
        return 5.0 / 6.0
    if a in ("nvls", "nvls_tree") and rule == "v2_18":
        return 0.75 if a == "nvls" else 0.70 * c.nodes / (2 * (c.nodes - 1))
    if a in ("ring", "nvls", "nvls_tree"):
        return c.n_ranks / _nsteps(collective, c.n_ranks)
    return _v("algbw_ratio")[a]


def nvls_chunk_B(size_B: float, channels: int, heads: int) -> int:
    """The chunk [B] NVLS on one node moves per head and loop for a call of ``size_B`` bytes on ``channels``
    channels of ``heads`` heads (nccl_tuning.yaml nvls_chunk: 128 KiB, halved down to 16 KiB as the call gets small
    against channels × heads × chunk; enqueue.cc 2263-2274)."""
    rule = _v("nvls_chunk")
    chunk = int(rule["default_bytes"])
    ops = channels * heads
    for factor, smaller in rule["steps"]:
        if size_B < factor * ops * chunk and chunk > smaller:
            chunk = int(smaller)
    return chunk


def nvls_loops(size_B: float, channels: int, heads: int) -> int:
    """The loops each NVLS channel runs for a call of ``size_B`` bytes: its share over nHeads × chunk, rounded up
    (src/device/all_reduce.h 411-415). At least 1."""
    return max(1, math.ceil(size_B / (channels * heads * nvls_chunk_B(size_B, channels, heads))))


def launch_channels(algorithm: str, protocol: str, size_B: float, channels: int, n_ranks: int) -> int:
    """The channels NCCL launches for one call (enqueue.cc topoGetAlgoInfo): Ring and Tree drop channels while
    size < channels × threads × threshold (Ring/LL's threshold × nRanks); NVLS keeps its own. At least 1."""
    if algorithm not in ("ring", "tree"):
        return channels
    lc = _v("launch_channels")
    per = lc["threads"][protocol] * lc["threshold_bytes_per_thread"][protocol] * (
        n_ranks if (algorithm == "ring" and protocol == "LL") else 1)
    nc = channels
    while nc >= 2 and size_B < nc * per:
        nc -= 1
    return nc


def options(collective: str, size_B: float, cluster: Cluster, in_network: bool | None = None,
            nccl_version: str | None = None) -> list[Option]:
    """Every (algorithm, protocol) NCCL would consider for ``collective`` of nccl-tests size ``size_B`` [B] on
    ``cluster``, priced by NCCL's tuner (src/graph/tuning.cc, nccl-v2-30-7):

        time = latency × (1.4 for Ring/Simple AllReduce across nodes) + S / (algbw × tree correction)

    with algbw = bus bandwidth × nRanks / nsteps (ring, NVLS) or × 0.5 (tree, CollNet). ``in_network=False``
    switches NVLS and CollNet off (NCCL_NVLS_ENABLE=0, NCCL_COLLNET_ENABLE=0); None or True: as the cluster says.
    ``nccl_version`` (e.g. "2.26.2") prices with that version's tables (nccl_tuning.yaml ``version_bands``);
    None: 2.30.7. Used in: book/lab-01-collectives.md"""
    c = cluster
    from x4lib.network import nccl_tests
    nccl_tests.check_collective(collective)
    S = float(size_B)
    if not S >= 0:
        raise ValueError(f"size must be >= 0 bytes, got {size_B}")
    if c.n_ranks == 1:
        return [Option("local", "Simple", 0.0, math.inf, 0.0, 0, "intra")]
    if collective not in TUNED:
        return [_p2p_option(collective, S, c)]
    allow = in_network is not False
    b = band(nccl_version)
    g = graphs(c)
    out = []
    n = c.n_ranks
    for a in ALGORITHMS:
        if a not in g:
            continue
        for p in PROTOCOLS:
            if not _enabled(collective, a, p, c, allow):
                continue
            bus = _bus_bw_GBps(collective, a, p, c, g[a], b)
            if a in ("nvls", "nvls_tree") and g[a].channels < 2 or bus <= 0:
                continue
            algbw = bus * _algbw_ratio(collective, a, c, b) * 1e9
            lat = _latency_us(collective, a, p, c, b)
            log_size = _log2i(S / 64)
            plateau = 1.0
            bw = algbw
            if collective == "all_reduce" and 0 <= log_size and (
                    (a == "tree" and log_size < 23) or (a == "nvls_tree" and log_size < 24 and _cc(c) >= 10.0
                                             and (b is None or b["nvls_bandwidth"] == "v2_28"))):
                bw *= _v("tree_correction")[p][log_size]
            if a == "ring" and p == "Simple" and c.nodes > 1 and collective == "all_reduce" and \
                    S / (_exec_channels(c, g["ring"]) * n) >= _v("ring_simple_plateau")["min_bytes_per_channel_rank"]:
                plateau = _v("ring_simple_plateau")["sm80_and_later" if _cc(c) >= 8.0 else "before_sm80"]
            limited = g[a].limited_by
            if a in ("nvls", "nvls_tree") and c.nodes > 1:
                limited = "network" if g[a].bw_inter_GBps * (2 if c.nodes == 2 else 1) < \
                    g[a].bw_intra_GBps * _v("nvls_efficiency")[c.arch] * 2 else "intra"
            lat *= plateau
            plug = plugin_latency_us(c) * (2 if p == "Simple" else 1) * _network_steps(collective, a, c, b) * plateau
            out.append(Option(a, p, lat * 1e-6, algbw, lat * 1e-6 + S / bw, g[a].channels, limited, plug * 1e-6))
    return out
