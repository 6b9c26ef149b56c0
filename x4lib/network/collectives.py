"""Collective operations: nccl-tests' bandwidth conventions, α–β closed forms, and NCCL's own cost model.

algbw and busbw follow nccl-tests exactly; the names and the bus-bandwidth factor F(n) are in
:mod:`x4lib.network.nccl_tests`.

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

For a cluster of n nodes × g GPUs with k NICs per node (:class:`Cluster`) the model is NCCL's own cost model, the
"tuner" of src/graph/tuning.cc (NVIDIA/nccl v2.30.7-1; references.bib: nccl-v2-30-7), with its constants as data
(x4lib/data/nccl_tuning.yaml, each with file and line). For every algorithm NCCL has (ring; tree; NVLS = NVLink
SHARP on one node; NVLS tree across nodes; CollNet direct and chain = IB SHARP) and every protocol (LL: 8 bytes of
data per 16-byte line, lowest latency; LL128: 120 of every 128 bytes; Simple: full bandwidth, highest latency):

    time = latency(algorithm, protocol, link kinds, n, N) + S / algbw(algorithm, protocol, channels)

and the fastest pair is the prediction, as NCCL picks it (:func:`predict`). The channels and per-channel bandwidths
come from a short rule standing in for NCCL's topology search (``x4lib.network.nccl_tuner.graphs``). AllToAll and SendRecv are
point-to-point in NCCL, outside its tuner; they get a bandwidth bound with one Simple-protocol step of latency.

In-network reduction (NVLink SHARP on third-generation NVSwitch, IB SHARP in InfiniBand switches): each GPU sends
its data into the switch once and receives the reduced result once, about half of the 2(g−1)/g·S of a ring.
nccl-tests still reports busbw = algbw·2(n−1)/n, a factor derived for point-to-point transfers, so busbw can then
exceed the link's line rate (e.g. ~480 GB/s on 8 H100 whose NVLink is 450 GB/s per direction;
nccl-tests-issue-212). On exactly two nodes a tree does the same across the network: each node sends its data
once. Such a busbw is not a link speed.
"""
from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType
from typing import Mapping

from x4lib.network import clusters, nccl_tests, nccl_tuner
from x4lib.network.clusters import Cluster
from x4lib.network.nccl_tuner import ALGORITHM_CHOICES, ALGORITHMS, FAMILIES, PROTOCOLS, Option, options

#: version of the cost model, stored with every prediction so that different models never mix silently
MODEL_VERSION = "2"

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


def alpha_beta_time_s(collective: str, family: str, size_B: float, n_ranks: int, alpha_s: float,
                      bw_Bps: float) -> float:
    """Time [s] of ``collective`` on ``n_ranks`` ranks with one link kind: per-hop latency ``alpha_s`` [s] and
    per-rank, per-direction bandwidth ``bw_Bps`` [B/s]; ``size_B`` is the nccl-tests size S [B].

    ``family`` is ``"ring"`` (ring / pipelined chain / pairwise exchange) or ``"tree"`` (double binary tree for
    AllReduce, binomial tree for Broadcast/Reduce, recursive halving/doubling, Bruck); the formulas are in the module
    docstring. Sources: thakur-2005, patarasuk-2009. Used in: book/lab-01-collectives.md
    """
    nccl_tests.check_collective(collective)
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




@dataclasses.dataclass(frozen=True)
class Prediction:
    """The model's answer for one collective, size and cluster (SI units): the (algorithm, protocol) NCCL's tuner
    picks and its time. ``algbw_Bps`` = S/t and ``busbw_Bps`` = algbw × F(n) follow nccl-tests; ``bottleneck`` names
    the link that sets the chosen graph's bandwidth; ``alternatives`` maps "algorithm/protocol" to its time [s]."""
    collective: str
    size_B: int
    n_ranks: int
    time_s: float
    latency_s: float
    algorithm: str
    protocol: str
    bottleneck: str
    bound: str
    in_network: bool
    channels: int
    alternatives: Mapping[str, float]

    @property
    def algbw_Bps(self) -> float:
        return self.size_B / self.time_s if self.time_s > 0 else 0.0

    @property
    def busbw_Bps(self) -> float:
        return nccl_tests.busbw_Bps(self.collective, self.algbw_Bps, self.n_ranks)


def _link_label(c: Cluster, option: Option) -> str:
    if option.algorithm == "local":
        return "none (one rank)"
    if option.bottleneck == "network" and c.nic is not None:
        return f"inter-node: {c.nics_per_node} x {c.nic.name}"
    nvls = option.algorithm in ("nvls", "nvls_tree")
    return f"intra-node: {c.intra.name}" + (f" with {c.intra.in_network_kind}" if nvls else "")


def _select(algorithm: str | None) -> tuple[str, ...] | None:
    if algorithm in (None, "auto"):
        return None
    if algorithm in FAMILIES:
        return FAMILIES[algorithm]
    if algorithm not in ALGORITHMS + ("p2p",):
        raise ValueError(f"unknown algorithm {algorithm!r}; use one of: {', '.join(ALGORITHM_CHOICES)}")
    return (algorithm,)


def _protocol(protocol: str | None) -> str | None:
    if protocol in (None, "auto"):
        return None
    named = {p.lower(): p for p in PROTOCOLS}.get(str(protocol).lower())
    if named is None:
        raise ValueError(f"unknown protocol {protocol!r}; use auto, LL, LL128 or Simple")
    return named


@dataclasses.dataclass(frozen=True)
class Calibration:
    """What NCCL's estimate misses, fitted on measured logs (x4lib.network.validation.fit): per "algorithm/protocol",
    an extra fixed cost [s] added to NCCL's latency and the fraction of NCCL's bandwidth the kernels reach, keyed
    "algorithm/protocol@scale" with NCCL's own scale columns (calibration_key: one node, two nodes, more), and
    "algorithm/protocol" fitted over every scale for the scales without their own fit. A pair without any fit keeps
    NCCL's own price (0 s, 1.0). ``loop_s``: for the pairs whose kernel loops over chunks NCCL sizes by the call
    (NVLS on one node: :func:`chunk_loops`), the cost of one loop [s], fitted beside the other two. ``fitted_on``
    names the logs. ``host_channel_s``: the host's time per launched channel beyond the first, on each GPU a
    thread drives (:func:`host_time_s`), fitted on ``host_fitted_on``. ``ring_channel_Bps``: the most one launched
    channel of Ring/Simple across nodes carries on the network [B/s] (:func:`ring_channel_time_s`; 0: no cap),
    fitted beside the ring's Δ and η on the fit logs."""
    extra_latency_s: Mapping[str, float]
    efficiency: Mapping[str, float]
    fitted_on: tuple[str, ...] = ()
    loop_s: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    host_channel_s: float = 0.0
    host_fitted_on: tuple[str, ...] = ()
    ring_channel_Bps: float = 0.0


def chunk_loops(option: Option, size_B: float, cluster: Cluster) -> int:
    """The loops each channel of NVLS on one node runs for a call of ``size_B`` bytes, with the chunk NCCL sizes by
    the call (nccl_tuner.nvls_loops: the launched NVLS channels, one head per GPU); 0 for every other algorithm
    and for NVLS across nodes (not modelled: no stored log runs it). Below 1 GiB on eight H100s the chunk is 64,
    32 or 16 KiB instead of 128, so a mid-size call runs more loops per byte than a large one."""
    if option.algorithm != "nvls" or cluster.nodes != 1:
        return 0
    return nccl_tuner.nvls_loops(size_B, launched_channels("nvls", cluster), option.channels)


def call_channels(option: Option, size_B: float, cluster: Cluster) -> int:
    """The channels NCCL launches for one call of ``option``: ring and tree cut from comm->nChannels (the search's
    channels, doubled: :func:`launched_channels`) while the call is small (nccl_tuner.launch_channels), NVLS and
    NVLS tree all of theirs. The bandwidth term counts distinct rings instead (nccl_tuner.launch_channels from the
    search's channels): a channel and its duplicate share links."""
    return nccl_tuner.launch_channels(option.algorithm, option.protocol, size_B,
                                      launched_channels(option.algorithm, cluster), cluster.n_ranks)


def host_time_s(option: Option, size_B: float, cluster: Cluster, floor_s: float, gpus_per_thread: int = 1,
                per_channel_s: float = 0.0) -> float:
    """The host's time per call [s] when calls are issued back to back: a one-channel call's (``floor_s``, as a
    run measures it) plus ``per_channel_s`` for each further channel the call launches (:func:`call_channels`), on
    each of the ``gpus_per_thread`` GPUs one thread drives in turn. For every call NCCL's host code builds a work
    item for each channel it launches, copies each channel's work into the work FIFO the kernel reads and walks
    the channels for proxy operations (src/enqueue.cc, v2.18.1: addCollToPlan 265-350, uploadWork 766-829,
    uploadProxyOps 831-863); a thread that drives g GPUs (nccl-tests' -g g) does that g times per call.
    AllToAll and SendRecv (p2p) keep the floor."""
    if option.algorithm in ("local", "p2p"):
        return floor_s
    extra = call_channels(option, size_B, cluster) - 1
    return floor_s + extra * max(1, int(gpus_per_thread)) * per_channel_s


def ring_channel_time_s(option: Option, size_B: float, cluster: Cluster, collective: str = "all_reduce",
                        per_channel_Bps: float = 0.0) -> float:
    """The least time [s] Ring/Simple across nodes needs when each channel it launches (:func:`call_channels`)
    carries at most ``per_channel_Bps`` across the network: a ring link carries the collective's bus bytes (size ×
    nccl-tests' busbw factor), split over the channels, so busbw <= channels × per-channel rate. A channel is one
    CTA and one connection per peer; it alternates between moving data and waiting (flushes, synchronisation),
    which is why NCCL gives a NIC two channels ("Having two channels per NIC makes the NIC utilization closer to
    peak", nccl-issue-438). With NCCL's 16 channels on eight 400 Gb/s NICs a channel would have to carry 25 GB/s;
    NCCL_MIN_CTAS=24 gives the NIC a third. 0 for every other pair, one node, or no rate."""
    if (option.algorithm != "ring" or option.protocol != "Simple" or cluster.nodes < 2 or per_channel_Bps <= 0
            or collective not in nccl_tests.COLLECTIVES):
        return 0.0
    bus_B = float(size_B) * nccl_tests.busbw_factor(collective, cluster.n_ranks)
    return bus_B / (call_channels(option, size_B, cluster) * per_channel_Bps)


def calibration_key(option: Option, cluster: Cluster) -> str:
    """"algorithm/protocol@N1|N2|N4": NCCL's scale columns (one node, two nodes, more than two)."""
    return f"{option.algorithm}/{option.protocol}@{'N1' if cluster.nodes == 1 else 'N2' if cluster.nodes == 2 else 'N4'}"


def _calibrated_key(calibration: Calibration, option: Option, cluster: Cluster) -> str:
    """The scale's own fit when there is one, else the pair's fit over every scale ("algorithm/protocol")."""
    key = calibration_key(option, cluster)
    return key if key in calibration.extra_latency_s else key.split("@")[0]


#: the NCCL version whose NVLS-tree bandwidth rule a run achieves: 2.30's on two nodes (its x2 for the two-node tree,
#: where each byte crosses the network once), 2.19-2.27's on more (bwInter / 2: an interior tree node sends and
#: receives twice, which 2.30's per-channel cap of 45.5 GB/s on Hopper does not reach); see achieved_time_s
ACHIEVED_NVLS_TREE_RULE = {"two_nodes": None, "more_nodes": "2.26.2"}


def achieved_time_s(option: Option, size_B: float, cluster: Cluster, calibration: Calibration | None,
                    collective: str = "all_reduce") -> float:
    """The time a run of ``option`` takes: NCCL's latency, with the network plugin's part at what a step of the
    plugin's protocol takes (nccl_tuner.achieved_plugin_latency_us: on AWS EFA the reported 75 us for send/receive
    on A100 platforms, 35 us for RDMA writes on H100 and later; NCCL chooses with the reported value), plus the
    calibration's extra cost, and
    NCCL's bandwidth term at the channels the launch keeps (nccl_tuner.launch_channels) over the calibration's
    efficiency. NVLS tree's bandwidth term is that of the rule in ACHIEVED_NVLS_TREE_RULE, whatever version chose
    it (the stored 2-, 4- and 8-node H100 logs: nccl_tuning.yaml version_bands). NVLS on one node adds the
    calibration's cost per loop for each loop its channels run (chunk_loops). Ring/Simple across nodes takes at
    least the time its launched channels need at the calibration's rate per channel (ring_channel_time_s).
    Without a calibration: NCCL's own estimate (option.time_s)."""
    if calibration is None or option.algorithm in ("local", "p2p"):
        return option.time_s
    key = _calibrated_key(calibration, option, cluster)
    bw_term = option.time_s - option.latency_s
    if option.algorithm == "nvls_tree":
        rule = ACHIEVED_NVLS_TREE_RULE["two_nodes" if cluster.nodes <= 2 else "more_nodes"]
        same = [o for o in options(collective, size_B, cluster, nccl_version=rule)
                if (o.algorithm, o.protocol) == (option.algorithm, option.protocol)]
        bw_term = same[0].time_s - same[0].latency_s if same else bw_term
    nc = nccl_tuner.launch_channels(option.algorithm, option.protocol, size_B, option.channels, cluster.n_ranks)
    bw_term *= option.channels / max(1, nc)
    bw_term = max(bw_term, ring_channel_time_s(option, size_B, cluster, collective, calibration.ring_channel_Bps))
    reported = nccl_tuner.plugin_latency_us(cluster)
    plugin_s = option.plugin_latency_s * (nccl_tuner.achieved_plugin_latency_us(cluster) / reported if reported else 1)
    return (option.latency_s - option.plugin_latency_s + plugin_s + calibration.extra_latency_s.get(key, 0.0)
            + bw_term / calibration.efficiency.get(key, 1.0)
            + calibration.loop_s.get(key, 0.0) * chunk_loops(option, size_B, cluster))


def predict(collective: str, size_B: float, cluster: Cluster | str, in_network: bool | None = None,
            algorithm: str | None = None, protocol: str | None = None, nccl_version: str | None = None,
            calibration: Calibration | None = None) -> Prediction:
    """The (algorithm, protocol) NCCL's tuner would pick for ``collective`` of nccl-tests size ``size_B`` [B] on
    ``cluster`` (a preset id or a :class:`Cluster`), and its time [s]: the fastest of :func:`options`, the lower
    algorithm then protocol index winning a tie (enqueue.cc, topoGetAlgoInfo). ``algorithm`` and ``protocol``
    restrict the choice as NCCL_ALGO and NCCL_PROTO do (``"nvls"`` = NVLS or NVLS tree, ``"collnet"`` = either
    CollNet algorithm); ValueError when nothing is left. ``nccl_version`` prices with that NCCL's tables (None:
    2.30.7); NCCL's choice is always by its own estimate, while ``calibration`` (fitted on logs) turns the chosen
    pair's estimate into the time a run takes (achieved_time_s; None: NCCL's estimate is the prediction).
    Sources: nccl-v2-30-7, nccl-tests-performance. Used in: book/lab-01-collectives.md"""
    c = clusters.get(cluster) if isinstance(cluster, str) else cluster
    opts = options(collective, size_B, c, in_network=in_network, nccl_version=nccl_version)
    algos, proto = _select(algorithm), _protocol(protocol)
    chosen = [o for o in opts if (algos is None or o.algorithm in algos or o.algorithm == "local")
              and (proto is None or o.protocol == proto or o.algorithm in ("local", "p2p"))]
    if not chosen:
        avail = sorted({f"{o.algorithm}/{o.protocol}" for o in opts})
        raise ValueError(f"{algorithm or 'auto'}/{protocol or 'auto'} is not available for {collective} on {c.id}; "
                         f"available: {', '.join(avail)}")
    best = min(chosen, key=lambda o: o.time_s)  # min() keeps the first of equals: NCCL's index order
    time_s = achieved_time_s(best, size_B, c, calibration, collective)
    latency_s = best.latency_s + (calibration.extra_latency_s.get(_calibrated_key(calibration, best, c), 0.0)
                                  if calibration else 0.0)
    return Prediction(collective=collective, size_B=int(size_B), n_ranks=c.n_ranks, time_s=time_s,
                      latency_s=latency_s, algorithm=best.algorithm, protocol=best.protocol,
                      bottleneck=_link_label(c, best),
                      bound="latency" if latency_s > time_s / 2 else "bandwidth",
                      in_network=best.algorithm in ("nvls", "nvls_tree", "collnet_direct", "collnet_chain"),
                      channels=best.channels,
                      alternatives=MappingProxyType({f"{o.algorithm}/{o.protocol}": o.time_s for o in opts}))


def bandwidth_limit_busbw_Bps(collective: str, cluster: Cluster | str, algorithm: str | None = None,
                              protocol: str | None = None, in_network: bool | None = None,
                              size_B: float = 1e15) -> float:
    """busbw [B/s] of the model in its bandwidth-bound limit (a huge size): for the ring, the graph's channels ×
    per-channel bandwidth (NCCL's bus bandwidth), e.g. 8 × 48 = 384 GB/s on 2 × 8 H100 with 400 Gb/s NICs."""
    return predict(collective, size_B, cluster, in_network=in_network, algorithm=algorithm,
                   protocol=protocol).busbw_Bps


def wire_bound_busbw_Bps(cluster: Cluster | str, algorithm: str = "ring") -> float:
    """The most busbw [B/s] an AllReduce ``algorithm`` ("ring" or "tree") can report on ``cluster``: the bytes each
    link carries per direction over the links' line rates (no protocol, no latency, no NCCL derating). A bound, not
    a prediction. Used in: book/lab-01-collectives.md

    - ring: every GPU's NVLink port and every node's NICs carry 2(n-1)/n·S, which is busbw·t, so
      busbw <= min(B_intra, k·B_nic), the GPU's intra-node line rate and the node's k NICs at line rate;
    - tree on exactly two nodes: each GPU's chain inside the node carries 2S (S up and S down), but each node
      sends its S across the network once and receives the result once, so
      algbw <= min(B_intra / 2, k·B_nic) and busbw = algbw·2(n-1)/n: up to 1.875 times the NICs' line rate on
      16 ranks. On more nodes an interior tree node carries 2S on the network too: algbw <= min(B_intra, k·B_nic)/2.
    """
    c = clusters.get(cluster) if isinstance(cluster, str) else cluster
    intra = c.intra.bw_Bps
    net = c.node_line_rate_Bps if c.nodes > 1 else math.inf
    if algorithm == "ring":
        return min(intra, net)
    if algorithm != "tree":
        raise ValueError(f"wire bound for 'ring' or 'tree', not {algorithm!r}")
    algbw = min(intra / 2, net if c.nodes == 2 else net / 2)
    return algbw * nccl_tests.busbw_factor("all_reduce", c.n_ranks)


def choice_table(collective: str, cluster: Cluster | str, lo_B: int = 2**10, hi_B: int = 2**33,
                 algorithm: str | None = None, protocol: str | None = None) -> list[dict]:
    """Runs of sizes (powers of two) with the same model choice: [{from_B, to_B, algorithm, protocol}].
    Used in: book/lab-01-collectives.md"""
    out: list[dict] = []
    S = lo_B
    while S <= hi_B:
        p = predict(collective, S, cluster, algorithm=algorithm, protocol=protocol)
        if out and (out[-1]["algorithm"], out[-1]["protocol"]) == (p.algorithm, p.protocol):
            out[-1]["to_B"] = S
        else:
            out.append({"from_B": S, "to_B": S, "algorithm": p.algorithm, "protocol": p.protocol})
        S *= 2
    return out


# ---------------------------------------------------------- NCCL's example tuner plugin, as a CSV

#: x4lib's collective names -> the names of NCCL's example tuner plugin (plugins/tuner/example/nccl_tuner.conf)
TUNER_CSV_COLLECTIVES = MappingProxyType({"broadcast": "broadcast", "reduce": "reduce", "all_gather": "allgather",
                                          "reduce_scatter": "reducescatter", "all_reduce": "allreduce"})
TUNER_CSV_HEADER = ("# Format: collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,"
                    "numPipeOps,regBuff")
#: the largest size a row covers (size_t): no call may fall through to the plugin's default of one channel
TUNER_CSV_MAX_BYTES = 2**64 - 1


def launched_channels(algorithm: str, cluster: Cluster) -> int:
    """The channels NCCL runs ``algorithm`` with at full size: comm->nChannels for ring and tree (the search's, doubled,
    nccl_tuner._exec_channels), comm->nvlsChannels for NVLS and NVLS tree (nccl_tuning.yaml nvls_channels, and
    nvls_channels_one_node within one node: 24 on Blackwell since NCCL 2.27); either raised to the run's
    NCCL_MIN_CTAS (``cluster.min_channels``; nvls.cc 178 in v2.26.2)."""
    if algorithm in ("nvls", "nvls_tree"):
        t = nccl_tuner.tuning()
        one = t["nvls_channels_one_node"]["value"] if cluster.nodes == 1 else {}
        return max(cluster.min_channels, int(one.get(cluster.arch, t["nvls_channels"]["value"].get(cluster.arch, 16))))
    return nccl_tuner._exec_channels(cluster, nccl_tuner.graphs(cluster)["ring"])


def tuner_csv_rows(cluster: Cluster, collectives: tuple[str, ...] = tuple(TUNER_CSV_COLLECTIVES),
                   nccl_version: str | None = None, max_log2: int = 40) -> list[dict]:
    """The model's choice as rows of NCCL's example tuner plugin: for each collective, contiguous size ranges
    [min_bytes, max_bytes] (inclusive, the first from 0, the last to 2^64 - 1) with the same (algorithm, protocol)
    at the powers of two 1 B ... 2^max_log2 B, each with an explicit channel count (launched_channels: the plugin
    otherwise sets one channel) and the cluster's nNodes and nRanks. A choice's range begins at the first power of
    two that has it; the range before ends one byte earlier. Sources: tuner_csv_format in the lab's notes, NVIDIA/nccl
    plugins/tuner/example (nccl_tuner.conf, plugin.c)."""
    rows = []
    for coll in collectives:
        runs: list[dict] = []
        for k in range(0, max_log2 + 1):
            pr = predict(coll, 2**k, cluster, nccl_version=nccl_version)
            if runs and (runs[-1]["algorithm"], runs[-1]["protocol"]) == (pr.algorithm, pr.protocol.lower()):
                runs[-1]["max_bytes"] = 2**k
                continue
            if runs:
                runs[-1]["max_bytes"] = 2**k - 1 if k else 0
            runs.append({"collective_type": TUNER_CSV_COLLECTIVES[coll], "min_bytes": runs[-1]["max_bytes"] + 1
                         if runs else 0, "max_bytes": 2**k, "algorithm": pr.algorithm,
                         "protocol": pr.protocol.lower(), "channels": launched_channels(pr.algorithm, cluster),
                         "nNodes": cluster.nodes, "nRanks": cluster.n_ranks})
        runs[-1]["max_bytes"] = TUNER_CSV_MAX_BYTES
        rows += runs
    return rows


def tuner_csv(cluster: Cluster, nccl_version: str | None = None) -> str:
    """tuner_csv_rows as the text of an nccl_tuner.conf (a comment header, then one row per range)."""
    fields = ("collective_type", "min_bytes", "max_bytes", "algorithm", "protocol", "channels", "nNodes", "nRanks")
    head = [f"# NCCL tuner configuration written by x4lib collective-predict --tuner-csv (model v{MODEL_VERSION})",
            f"# cluster {cluster.id}: {cluster.nodes} node(s) x {cluster.gpus_per_node} GPUs; NCCL "
            f"{nccl_version or nccl_tuner.tuning()['nccl']['tag']} cost model's choice at every power of two",
            "# Load with NCCL_TUNER_PLUGIN=<example plugin> NCCL_TUNER_CONFIG_FILE=<this file>",
            TUNER_CSV_HEADER]
    return "\n".join(head + [",".join(str(r[f]) for f in fields) for r in tuner_csv_rows(cluster,
                                                                                           nccl_version=nccl_version)]) + "\n"


def cluster_summary(cluster: Cluster) -> dict:
    """Display edge: the cluster's parameters in display units (GB/s, Gb/s) with their sources, what NCCL's graph
    makes of them (channels and per-channel bandwidth, x4lib.network.nccl_tuner.graphs), and the model's stated
    assumptions (collective-predict --json and the lab page's preset table)."""
    c = cluster
    g = nccl_tuner.graphs(c)
    return {
        "model_version": MODEL_VERSION,
        "nccl_version": nccl_tuner.tuning()["nccl"]["tag"],
        "cluster_name": c.name,
        "nodes": c.nodes, "gpus_per_node": c.gpus_per_node, "n_ranks": c.n_ranks,
        "device": c.device, "arch": c.arch, "cpu": c.cpu,
        "intra_link": c.intra.name,
        "intra_bw_gb_s_per_direction_per_gpu": c.intra.bw_Bps / 1e9,
        "intra_efficiency": nccl_tuner.intra_bw_Bps(c) / c.intra.bw_Bps,
        "intra_nccl_gb_s_per_direction_per_gpu": nccl_tuner.intra_bw_Bps(c) / 1e9,
        "nics_per_node": c.nics_per_node,
        "network": c.nic.network if c.nic else None,
        "nic_link": c.nic.name if c.nic else None,
        "nic_line_rate_gbit_s_per_direction": c.nic.bw_Bps * 8 / 1e9 if c.nic else None,
        "nic_bw_gb_s_per_direction": c.nic.bw_Bps / 1e9 if c.nic else None,
        "node_network_gb_s_per_direction_line_rate": c.node_line_rate_Bps / 1e9,
        "ring_channels": g["ring"].channels, "ring_gb_s_per_channel": g["ring"].bw_GBps,
        "ring_bus_gb_s": g["ring"].channels * g["ring"].bw_GBps,
        "nvls_available": bool(c.intra.in_network and nccl_tuner.nvls_supported(c)),
        "ib_sharp_available": bool(c.nic and c.nic.in_network),
        "units": "GB = 1e9 B; Gb = 1e9 bit; link rates per direction",
        "size_suffixes": "K/M/G = powers of two (nccl-tests); KB/MB/GB = powers of ten; KiB/MiB/GiB = powers of two",
        "sources": {k: dict(v) for k, v in c.sources.items()},
        "model": dict(clusters.load()["assumptions"]),
    }
