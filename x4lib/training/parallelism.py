"""What each parallelism strategy sends, how long it takes on a cluster, and what hides behind compute.

    python -m x4lib comm-estimate --strategy {dp,zero1,zero2,zero3,fsdp,tp,cp,pp,ep} (--params N | --model ID)
                                  --cluster ID [--tp T --pp P --cp C --dp D --ep E] [--seq S ...] [--json]

A step trains on T = global batch × sequence length tokens. Ranks are laid out tensor-parallel first (inside a
node), then context-, data- and pipeline-parallel (Megatron's order tp-cp-dp-pp, narayanan-2021); the expert-
parallel group is carved out of the data-parallel ranks. Symbols: Ψ parameters, L layers, h hidden width,
h_kv key/value width (h·kv_heads/heads), b micro-batch (sequences), s sequence length, m = micro-batches per step,
β bytes per element (2 for BF16), G a group's size. Sizes are nccl-tests sizes S of one call (the whole array for
AllGather, ReduceScatter and AllToAll); a GPU sends F(G)·S per call on a ring (2(G−1)/G for AllReduce, (G−1)/G for
the others, 1 for a point-to-point send: nccl-tests' busbw factors, :func:`x4lib.network.nccl_tests.busbw_factor`).

    strategy   what, per step                                                       hides behind (if anything)
    dp         AllReduce of the gradients, S = β_g·Ψ/(tp·pp), once                  last micro-batch's backward
    zero1      ReduceScatter of the gradients + AllGather of the updated            backward / next forward
               parameters, S each, once (same bytes as dp; rajbhandari-2020)
    zero2      ReduceScatter per micro-batch (gradients are sharded, so they are    each backward / next forward
               reduced as they are made) + AllGather once
    zero3/fsdp AllGather before each forward and each backward, ReduceScatter       each forward / backward
               after it, per micro-batch: 1.5× dp's bytes when m = 1 (rajbhandari-2020, zhao-2023)
    tp         4 AllReduces per layer per micro-batch, S = β·b·s·h/cp: two in the  nothing: on the critical path
               forward, two in the backward (shoeybi-2019); sequence parallelism (korthikanti-2022) splits each
               into a ReduceScatter and an AllGather of the same total bytes
    cp         per layer per micro-batch: AllGather of K and V (S = 2β·b·s·h_kv/tp) in the forward, AllGather +
               ReduceScatter (dK, dV) in the backward (ring attention, liu-2023-ring-attention)   attention
    pp         per micro-batch: activations forward and their gradients backward    nothing: the sends sit between
               between neighbouring stages, S = β·b·s·h/(tp·cp) (scatter-gather,    a stage's compute steps; plus
               narayanan-2021)                                                      the bubble (pp−1)/m of compute
    ep         per MoE layer per micro-batch: AllToAll dispatch and combine in the  nothing
               forward and again in the backward, S = β·k·b·s·h/(tp·cp)·G (lepikhin-2020)

Compute per GPU and step: (6·Ψ·T + 6·b·s²·h·L·(m·dp))/(n·P·η) with P the dense peak of the training precision and η
the achievable fraction of it for large matmuls (default: the published maximum achievable matmul rate of the
device, stas00-ml-engineering-accelerators; an optimistic ceiling). The second term is causal attention, which
6ΨT leaves out (PaLM's 12·L·h·s FLOP per token, chowdhery-2022, halved by the causal mask); MFU here is chapter 00's: 6ΨT / (n·P·step time). The backward is 2/3 of the compute.

Overlap: a collective hides behind the compute window named above, minus its first (or last) layer's share, which
can never overlap (nothing to prefetch before the first layer; nothing left after the last one's gradients):
exposed = max(t − window, t/L_stage). Collectives without a window are exposed in full. Times come from
:func:`x4lib.network.collectives.predict` on the sub-cluster one group spans: a group inside a node uses the NVLink preset;
a group across nodes gets, per node, the NICs of its members (every group of a kind runs at the same time, so a
GPU gets its own share of the node's NICs: k/g NICs per GPU).
Sources: the keys above in references.bib. Used in: book/03-interconnects-and-topology.md.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from x4lib.network import clusters, collectives, nccl_tests
from x4lib.network.clusters import Cluster
from x4lib import paths

MODEL_VERSION = "parallelism/1"
SCHEMA_PATH = paths.SCHEMA_DIR / "parallelism.schema.json"
DATA_PATH = paths.DATA_DIR / "parallelism.yaml"

STRATEGIES = ("dp", "zero1", "zero2", "zero3", "fsdp", "tp", "cp", "pp", "ep")
ZERO_OF = MappingProxyType({"dp": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3})


class ParallelismError(ValueError):
    """parallelism.yaml breaks a rule (a broken data file: exit 1)."""
    exit_code = 1


# ------------------------------------------------------------------------------------------------ inputs

@dataclasses.dataclass(frozen=True)
class Model:
    """A decoder-only transformer. ``params`` is given or counted from the shape (:func:`count_params`).
    ``experts``/``top_k`` make the MLPs mixture-of-experts layers (for ep)."""
    id: str
    name: str
    params: float
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    ffn: int | None = None
    vocab: int | None = None
    experts: int = 1
    top_k: int = 1
    source: str | None = None

    @property
    def kv_hidden(self) -> int | None:
        """h_kv = h · kv_heads / heads (grouped-query attention shrinks K and V)."""
        if self.hidden is None:
            return None
        return self.hidden * self.kv_heads // self.heads if self.heads and self.kv_heads else self.hidden

    @property
    def has_shape(self) -> bool:
        return self.layers is not None and self.hidden is not None


def count_params(layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int,
                 experts: int = 1) -> int:
    """Parameters of a decoder with gated (SwiGLU) MLPs and separate input/output embeddings:
    L·(2h² + 2h·h_kv + 3h·f·E + 2h) + 2·V·h + h (norms included)."""
    kv = hidden * kv_heads // heads
    per_layer = 2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * ffn * experts + 2 * hidden
    return layers * per_layer + 2 * vocab * hidden + hidden


@dataclasses.dataclass(frozen=True)
class Layout:
    """How n = dp·tp·pp·cp GPUs share the work; ``zero`` is the data-parallel flavour (0 plain DDP, 1-3 ZeRO stage,
    3 = FSDP full sharding). ``global_batch_seqs`` sequences of ``seq`` tokens per step, ``micro_batch`` per
    micro-batch. Element sizes: ``act_bytes`` activations, ``param_bytes`` gathered weights, ``grad_bytes``
    reduced gradients. ``overlap`` lets collectives hide behind their compute window."""
    dp: int = 1
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    zero: int = 0
    micro_batch: int = 1
    seq: int = 4096
    global_batch_seqs: int = 1024
    act_bytes: int = 2
    param_bytes: int = 2
    grad_bytes: int = 2
    overlap: bool = True
    in_network: bool = False
    label: str = ""

    @property
    def n_gpus(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def micro_batches(self) -> int:
        """m: micro-batches per data-parallel replica and step."""
        return self.global_batch_seqs // (self.dp * self.micro_batch)

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch_seqs * self.seq


def check_layout(lay: Layout, model: Model, cluster: Cluster) -> None:
    """Raise ValueError naming the first thing that does not fit (degrees, batch, shape, cluster size)."""
    for name in ("dp", "tp", "pp", "cp", "ep", "micro_batch", "seq", "global_batch_seqs"):
        v = getattr(lay, name)
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v}")
    if lay.zero not in (0, 1, 2, 3):
        raise ValueError(f"zero must be 0, 1, 2 or 3, got {lay.zero}")
    if lay.n_gpus != cluster.n_ranks:
        raise ValueError(f"dp x tp x pp x cp = {lay.dp} x {lay.tp} x {lay.pp} x {lay.cp} = {lay.n_gpus} GPUs, "
                         f"but cluster {cluster.id} has {cluster.n_ranks}")
    if lay.global_batch_seqs % (lay.dp * lay.micro_batch):
        raise ValueError(f"the global batch of {lay.global_batch_seqs} sequences does not split into dp = {lay.dp} "
                         f"replicas of micro-batches of {lay.micro_batch}")
    if lay.seq % lay.cp:
        raise ValueError(f"sequence length {lay.seq} does not split into cp = {lay.cp} chunks")
    if lay.ep > 1:
        if model.experts < 2:
            raise ValueError("expert parallelism needs a mixture-of-experts model (--experts >= 2)")
        if (lay.dp * lay.cp) % lay.ep or model.experts % lay.ep:
            raise ValueError(f"ep = {lay.ep} must divide dp x cp = {lay.dp * lay.cp} and the {model.experts} experts")
    if (lay.tp > 1 or lay.pp > 1 or lay.cp > 1 or lay.ep > 1) and not model.has_shape:
        raise ValueError("tp, pp, cp and ep need the model's shape: give --layers and --hidden (or --model)")
    if model.has_shape:
        if lay.pp > model.layers:
            raise ValueError(f"pp = {lay.pp} exceeds the model's {model.layers} layers")
        if lay.tp > 1 and model.heads and model.heads % lay.tp:
            raise ValueError(f"tp = {lay.tp} does not divide the {model.heads} attention heads")


# ------------------------------------------------------------------------------------------------ data file

@functools.lru_cache(maxsize=2)
def load(path: Path = DATA_PATH) -> Mapping:
    """parallelism.yaml, validated (JSON Schema, then references to cluster presets)."""
    from x4lib.catalog import specs
    name = Path(path).name
    data = specs.load_document(path, SCHEMA_PATH, ParallelismError)
    for cid, c in data["clusters"].items():
        if c["base"] not in clusters.ids():
            raise ParallelismError(f"{name}: clusters.{cid}.base: unknown preset {c['base']!r}")
    return MappingProxyType(data)


def model(model_id: str) -> Model:
    """A model of parallelism.yaml, its parameters counted from the shape."""
    models = load()["models"]
    if model_id not in models:
        raise LookupError(f"unknown model {model_id!r}; known: {', '.join(models)}")
    m = models[model_id]
    e = m.get("experts", 1)
    return Model(id=model_id, name=m["name"], params=float(count_params(m["layers"], m["hidden"], m["heads"],
                 m["kv_heads"], m["ffn"], m["vocab"], e)), layers=m["layers"], hidden=m["hidden"], heads=m["heads"],
                 kv_heads=m["kv_heads"], ffn=m["ffn"], vocab=m["vocab"], experts=e, top_k=m.get("top_k", 1),
                 source=m["source"])


def cluster(cluster_id: str) -> Cluster:
    """A preset of clusters.yaml, or a cluster of parallelism.yaml: a preset with another node count (same links,
    efficiencies and latencies)."""
    derived = load()["clusters"]
    if cluster_id in derived:
        d = derived[cluster_id]
        base = clusters.get(d["base"])
        return dataclasses.replace(base, id=cluster_id, nodes=d["nodes"],
                                   name=f"{d['nodes']} x {base.gpus_per_node} GPUs, nodes as in {base.id}")
    try:
        return clusters.get(cluster_id)
    except clusters.UnknownClusterError:
        known = list(derived) + clusters.ids()
        raise LookupError(f"unknown cluster {cluster_id!r}; known: {', '.join(known)}") from None


def layout(layout_id: str, **overrides) -> Layout:
    """A layout (givens) of parallelism.yaml, with any field overridden."""
    lays = load()["layouts"]
    if layout_id not in lays:
        raise LookupError(f"unknown layout {layout_id!r}; known: {', '.join(lays)}")
    raw = {k: v for k, v in lays[layout_id].items() if k in {f.name for f in dataclasses.fields(Layout)}}
    return Layout(**{**raw, "label": layout_id, **overrides})


# ------------------------------------------------------------------------------------------------ placement

def group_cluster(base: Cluster, size: int, stride: int, in_network: bool = False) -> Cluster:
    """The sub-cluster one group of ``size`` ranks spans, ``stride`` ranks apart (the product of the degrees laid
    out inside it). Inside a node: ``size`` GPUs on the node's scale-up link. Across nodes: ``m`` members per node
    on ``size/m`` nodes, each node with m NICs at k/g of a NIC's rate apiece (every group of this kind runs at once,
    so each GPU gets its share of the node's k NICs)."""
    g = base.gpus_per_node
    kind = {} if base.intra.kind == "nvlink" else {"intra_kind": base.intra.kind}
    if size * stride <= g:
        return clusters.custom_cluster(1, size, base.intra.bw_Bps, **kind, **({"nvls": True} if in_network else {}))
    if base.nic is None:
        raise ValueError(f"a group of {size} ranks {stride} apart leaves the node, and {base.id} has no network")
    per_node = max(1, g // stride)
    nodes = math.ceil(size / per_node)
    share = base.nic.bw_Bps * base.nics_per_node / g
    kw = dict(kind)
    if in_network:
        kw.update(nvls=per_node > 1, ib_sharp=True)
    return clusters.custom_cluster(nodes, per_node, base.intra.bw_Bps, per_node, share, **kw)


def strides(lay: Layout) -> dict[str, int]:
    """Rank distance between members of each kind of group (Megatron order tp, cp, dp, pp; ep inside dp·cp)."""
    return {"tp": 1, "cp": lay.tp, "ep": lay.tp, "dp": lay.tp * lay.cp, "pp": lay.tp * lay.cp * lay.dp}


# ------------------------------------------------------------------------------------------------ the model

@dataclasses.dataclass(frozen=True)
class Comm:
    """One collective of a strategy: ``size_B`` is one call's nccl-tests size, ``calls`` per step and GPU,
    ``time_s`` all calls together, ``exposed_s`` the part no compute hides, ``window`` what may hide it."""
    strategy: str
    op: str
    size_B: float
    calls: int
    group_size: int
    time_s: float
    exposed_s: float
    sent_B: float
    window: str
    algorithm: str
    bottleneck: str


@dataclasses.dataclass(frozen=True)
class StepEstimate:
    """One training step of ``model`` on ``cluster`` laid out as ``layout`` (SI units, per GPU)."""
    model: Model
    cluster: Cluster
    layout: Layout
    comms: tuple[Comm, ...]
    compute_s: float
    forward_s: float
    backward_s: float
    attention_s: float
    bubble_s: float
    peak_flop_per_s: float
    efficiency: float
    state_B_per_gpu: float
    memory_B: float | None

    @property
    def exposed_comm_s(self) -> float:
        return sum(c.exposed_s for c in self.comms)

    @property
    def comm_s(self) -> float:
        return sum(c.time_s for c in self.comms)

    @property
    def step_s(self) -> float:
        """compute + pipeline bubble + exposed communication."""
        return self.compute_s + self.bubble_s + self.exposed_comm_s

    @property
    def model_flop(self) -> float:
        return 6 * self.model.params * self.layout.tokens_per_step

    @property
    def mfu(self) -> float:
        """6ΨT / (n·P·step): chapter 00's MFU, predicted."""
        return self.model_flop / (self.layout.n_gpus * self.peak_flop_per_s * self.step_s)

    @property
    def bytes_per_gpu(self) -> float:
        return sum(c.sent_B for c in self.comms)

    def by_strategy(self, strategy: str) -> tuple[Comm, ...]:
        return tuple(c for c in self.comms if c.strategy == strategy)

    @property
    def fits(self) -> bool | None:
        """Does the model state (activations left out) fit in one GPU's memory? None when unknown."""
        return None if self.memory_B is None else self.state_B_per_gpu <= self.memory_B


def _comm(strategy: str, op: str, size_B: float, calls: int, group: int, sub: Cluster, window: str,
          window_s: float, tail_calls: int, overlap: bool, in_network: bool) -> Comm:
    """``calls`` calls of ``size_B`` on ``sub``; with a window, everything beyond the window is exposed, and at
    least ``tail_calls`` calls are (the first layer's gather, the last layer's reduction: module docstring)."""
    if group < 2 or calls == 0 or size_B <= 0:
        return Comm(strategy, op, size_B, calls, group, 0.0, 0.0, 0.0, window, "none", "none")
    kw = {"in_network": True} if in_network and op == "all_reduce" else {}
    pr = collectives.predict(op, size_B, sub, **kw)
    t = pr.time_s * calls
    if window == "none" or not overlap:
        exposed = t
    else:
        exposed = min(t, max(t - window_s, tail_calls * pr.time_s))
    sent = calls * size_B * nccl_tests.busbw_factor(op, group)
    return Comm(strategy, op, size_B, calls, group, t, exposed, sent, window, pr.algorithm, pr.bottleneck)


def default_efficiency(dev, dtype: str = "bf16") -> tuple[float, str]:
    """η = the highest published best-shape matmul rate for the device (x4lib/data/published.yaml, ``kind: matmul``;
    each row cites its source) / its dense peak, and that row's id. ``dev`` is a catalog ``Device``."""
    from x4lib.catalog import published
    rows = published.measurements(device=dev.id, kind="matmul", dtype=dtype)
    if not rows:
        raise ValueError(f"no published matmul rate for {dev.id} {dtype}: give --compute-efficiency")
    best = max(rows, key=lambda r: r["value"])
    return best["value"] * 1e12 / dev.peak_flop_per_s(dtype), best["id"]


def attention_flop(mdl: Model, lay: Layout) -> float:
    """Causal attention FLOP of one step on all GPUs: PaLM's 12·L·h·s per token (chowdhery-2022, App. B), halved
    by the causal mask, over b·s·m·dp tokens = 6·b·s²·h·L·m·dp; 0 for a model without a shape."""
    if not mdl.has_shape:
        return 0.0
    return 6.0 * lay.micro_batch * lay.seq ** 2 * mdl.hidden * mdl.layers * lay.micro_batches * lay.dp


def step_flop(mdl: Model, lay: Layout) -> float:
    """The FLOP of one training step on all GPUs: 6·Ψ·T (T tokens per step) plus :func:`attention_flop`."""
    return 6.0 * mdl.params * lay.tokens_per_step + attention_flop(mdl, lay)


def estimate_step(mdl: Model, clu: Cluster, lay: Layout, efficiency: float | None = None,
                  dtype: str = "bf16", dev=None) -> StepEstimate:
    """Every collective of ``lay`` with its time and exposed part, the compute, the bubble (module docstring).
    ``dev`` is the catalog ``Device`` whose peak sets the compute time (default: the device the cluster preset
    names)."""
    from x4lib.training import memory
    from x4lib.catalog import specs
    check_layout(lay, mdl, clu)
    if dev is None and clu.device is None:
        raise ValueError(f"cluster {clu.id} names no device: its peak is unknown")
    dev = dev or specs.get(clu.device)
    peak = dev.peak_flop_per_s(dtype)
    eta = efficiency if efficiency is not None else default_efficiency(dev, dtype)[0]
    if not 0 < eta <= 1:
        raise ValueError(f"compute efficiency must be in (0, 1], got {eta}")
    rate = peak * eta
    m, b, s = lay.micro_batches, lay.micro_batch, lay.seq
    L = mdl.layers or 1
    Ls = max(1, L // lay.pp) if mdl.layers else 1
    h = mdl.hidden or 0
    attn_flop = attention_flop(mdl, lay)
    compute = step_flop(mdl, lay) / (lay.n_gpus * rate)
    mb_fwd, mb_bwd = compute / m / 3, 2 * compute / m / 3
    attention = attn_flop / (lay.n_gpus * rate)
    bubble = (lay.pp - 1) / m * compute if lay.pp > 1 else 0.0
    st, ov, inn = strides(lay), lay.overlap, lay.in_network
    comms: list[Comm] = []

    def sub(kind: str, size: int) -> Cluster:
        return group_cluster(clu, size, st[kind], inn)

    # data parallel family: weights and gradients of this GPU's model shard
    shard = mdl.params / (lay.tp * lay.pp)
    if lay.dp > 1:  # one call per layer of the stage (gradient buckets, per-layer gathers)
        name = {0: "dp", 1: "zero1", 2: "zero2", 3: "zero3"}[lay.zero]
        tail = 1 if mdl.has_shape else 0  # no layer count: assume pieces small enough to overlap fully
        c = sub("dp", lay.dp)
        grads, params_B = lay.grad_bytes * shard / Ls, lay.param_bytes * shard / Ls
        if lay.zero == 0:
            comms.append(_comm(name, "all_reduce", grads, Ls, lay.dp, c, "backward", mb_bwd, tail, ov, inn))
        elif lay.zero == 1:
            comms.append(_comm(name, "reduce_scatter", grads, Ls, lay.dp, c, "backward", mb_bwd, tail, ov, False))
            comms.append(_comm(name, "all_gather", params_B, Ls, lay.dp, c, "forward", mb_fwd, tail, ov, False))
        elif lay.zero == 2:
            comms.append(_comm(name, "reduce_scatter", grads, m * Ls, lay.dp, c, "backward", m * mb_bwd, m * tail, ov,
                               False))
            comms.append(_comm(name, "all_gather", params_B, Ls, lay.dp, c, "forward", mb_fwd, tail, ov, False))
        else:
            comms.append(_comm(name, "all_gather", params_B, 2 * m * Ls, lay.dp, c, "forward+backward",
                               m * (mb_fwd + mb_bwd), 2 * m * tail, ov, False))
            comms.append(_comm(name, "reduce_scatter", grads, m * Ls, lay.dp, c, "backward", m * mb_bwd, m * tail, ov,
                               False))
    if lay.tp > 1:
        size = lay.act_bytes * b * s * h / lay.cp
        comms.append(_comm("tp", "all_reduce", size, 4 * Ls * m, lay.tp, sub("tp", lay.tp), "none", 0, 0, ov, inn))
    if lay.cp > 1:
        kv = 2 * lay.act_bytes * b * s * mdl.kv_hidden / lay.tp
        c = sub("cp", lay.cp)
        comms.append(_comm("cp", "all_gather", kv, 2 * Ls * m, lay.cp, c, "attention", attention * 2 / 3, 0, ov, False))
        comms.append(_comm("cp", "reduce_scatter", kv, Ls * m, lay.cp, c, "attention", attention / 3, 0, ov, False))
    if lay.pp > 1:
        size = lay.act_bytes * b * s * h / (lay.tp * lay.cp)
        c = group_cluster(clu, 2, st["pp"])
        comms.append(_comm("pp", "sendrecv", size, 2 * m, 2, c, "none", 0, 0, ov, False))
    if lay.ep > 1:
        size = lay.act_bytes * mdl.top_k * b * s * h / (lay.tp * lay.cp) * lay.ep
        comms.append(_comm("ep", "all_to_all", size, 4 * Ls * m, lay.ep, sub("ep", lay.ep), "none", 0, 0, ov, False))
    zero_div = {0: (1, 1, 1), 1: (1, 1, lay.dp), 2: (1, lay.dp, lay.dp), 3: (lay.dp, lay.dp, lay.dp)}[lay.zero]
    per = memory.MIXED_ADAM_BYTES_PER_PARAM
    state = shard * (per["weights"] / zero_div[0] + per["gradients"] / zero_div[1] + per["optimizer"] / zero_div[2])
    mem = dev.get("memory_gb")
    return StepEstimate(mdl, clu, lay, tuple(comms), compute, m * mb_fwd, m * mb_bwd, attention, bubble, peak, eta,
                        state, mem.si if mem else None)


# ------------------------------------------------------------------------------------------------ one strategy

def default_layout(strategy: str, mdl: Model, clu: Cluster, **degrees) -> Layout:
    """The layout ``comm-estimate`` uses: the named degrees, the strategy's own degree filled in (dp family: every
    GPU left over; tp: one node), data parallelism on what remains."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    d = {k: v for k, v in degrees.items() if v is not None}
    n = clu.n_ranks
    if strategy == "tp" and "tp" not in d:
        d["tp"] = clu.gpus_per_node
    for needed in ("pp", "cp", "ep"):
        if strategy == needed and needed not in d:
            raise ValueError(f"--strategy {needed} needs --{needed} (the {needed} degree)")
    inner = d.get("tp", 1) * d.get("pp", 1) * d.get("cp", 1)
    if "dp" not in d:
        if n % inner:
            raise ValueError(f"tp x pp x cp = {inner} does not divide the cluster's {n} GPUs")
        d["dp"] = n // inner
    if strategy in ZERO_OF:
        d["zero"] = ZERO_OF[strategy]
    return Layout(**{k: d[k] for k in d if k in {f.name for f in dataclasses.fields(Layout)}})


def comm_estimate(strategy: str, mdl: Model, clu: Cluster, lay: Layout, efficiency: float | None = None) -> dict:
    """The ``comm-estimate --json`` document (x4lib/schemas/comm_estimate_output.schema.json) for one strategy of
    the layout; display units only in the ``assumptions`` (GB/s = 1e9 B/s)."""
    est = estimate_step(mdl, clu, lay, efficiency)
    names = {"fsdp", "zero3"} if strategy in ("fsdp", "zero3") else {strategy}
    if strategy in ZERO_OF:
        names = {"dp", "zero1", "zero2", "zero3", "fsdp"}
    mine = [c for c in est.comms if c.strategy in names]
    if strategy == "fsdp":
        mine = [dataclasses.replace(c, strategy="fsdp") for c in mine]
    notes = []
    if not mdl.has_shape and strategy in ZERO_OF:
        notes.append("no layer count (--layers): one call per step, assumed split finely enough to overlap "
                     "up to its compute window")
    if not mine:
        notes.append(f"{strategy} has degree 1 in this layout: nothing to send")
    if est.fits is False:
        notes.append(f"model state {est.state_B_per_gpu / 1e9:,.1f} GB per GPU exceeds the "
                     f"{est.memory_B / 1e9:,.0f} GB of one {clu.device}: this layout cannot run")
    lay_ = est.layout
    return {
        "strategy": strategy,
        "bytes_per_gpu_per_step": sum(c.sent_B for c in mine),
        "collectives": [{"op": c.op, "bytes": c.size_B, "group_size": c.group_size, "time_s": c.time_s,
                         "calls_per_step": c.calls, "exposed_s": c.exposed_s, "hides_behind": c.window,
                         "algorithm": c.algorithm, "bottleneck": c.bottleneck} for c in mine],
        "time_s": sum(c.time_s for c in mine),
        "exposed_time_s": sum(c.exposed_s for c in mine),
        "assumptions": {
            "model_version": MODEL_VERSION, "collective_model_version": collectives.MODEL_VERSION,
            "model": mdl.name, "params": mdl.params, "cluster": clu.id, "gpus": clu.n_ranks,
            "device": clu.device, "layout": {k: getattr(lay_, k) for k in ("dp", "tp", "pp", "cp", "ep", "zero")},
            "micro_batch": lay_.micro_batch, "micro_batches": lay_.micro_batches, "seq": lay_.seq,
            "tokens_per_step": lay_.tokens_per_step, "grad_bytes": lay_.grad_bytes, "act_bytes": lay_.act_bytes,
            "overlap": lay_.overlap, "compute_s": est.compute_s, "bubble_s": est.bubble_s,
            "compute_efficiency": est.efficiency, "peak_tflops_dense": est.peak_flop_per_s / 1e12,
            "state_gb_per_gpu": est.state_B_per_gpu / 1e9, "step_s": est.step_s, "mfu_predicted": est.mfu,
            "units": "bytes = nccl-tests size of one call; time_s = all calls of a step; GB = 1e9 B",
            "notes": notes,
        },
    }


# ------------------------------------------------------------------------------------------------ command line

def cli_arguments(p) -> None:
    from x4lib import cli
    p.usage = ("%(prog)s --strategy S (--params N | --model ID) --cluster ID [--tp T] [--pp P] [--cp C] [--dp D] "
               "[--ep E] [--layers L --hidden H ...] [--json]")
    p.description = ("Bytes and time per training step of one parallelism strategy on a cluster (α–β collective "
                     "model), and how much of it hides behind compute. GB = 1e9 B.")
    p.add_argument("--strategy", required=True, type=cli.choice_of("strategy", STRATEGIES))
    p.add_argument("--params", type=cli.number("parameters", 0, 1e15, low_open=True), help="parameter count, e.g. 70e9")
    p.add_argument("--model", type=cli.choice_of("model", lambda: tuple(load()["models"])),
                   help="a model of x4lib/data/parallelism.yaml (shape and parameters)")
    p.add_argument("--cluster", required=True,
                   type=cli.choice_of("cluster", lambda: tuple(load()["clusters"]) + tuple(clusters.ids())))
    for flag in ("tp", "pp", "cp", "dp", "ep"):
        p.add_argument(f"--{flag}", type=cli.number(f"{flag} degree", 1, 1e6, integer=True))
    shape = p.add_argument_group("model shape (needed by tp, pp, cp, ep)")
    shape.add_argument("--layers", type=cli.number("layers", 1, 1e5, integer=True))
    shape.add_argument("--hidden", type=cli.number("hidden width", 1, 1e7, integer=True))
    shape.add_argument("--heads", type=cli.number("heads", 1, 1e5, integer=True))
    shape.add_argument("--kv-heads", type=cli.number("key/value heads", 1, 1e5, integer=True))
    shape.add_argument("--experts", type=cli.number("experts", 1, 1e5, integer=True))
    shape.add_argument("--top-k", type=cli.number("experts per token", 1, 1e3, integer=True))
    batch = p.add_argument_group("batch (default: the quiz layout's givens)")
    batch.add_argument("--seq", type=cli.number("tokens", 1, 1e8, integer=True))
    batch.add_argument("--micro-batch", type=cli.number("sequences", 1, 1e6, integer=True))
    batch.add_argument("--global-batch", type=cli.number("sequences", 1, 1e9, integer=True))
    p.add_argument("--grad-bytes", type=int, choices=(2, 4), help="bytes per reduced gradient (2 BF16, 4 FP32)")
    p.add_argument("--compute-efficiency", type=cli.number("fraction of peak", 0, 1, low_open=True),
                   help="achievable fraction of the dense peak (default: published max achievable matmul)")
    p.add_argument("--no-overlap", action="store_true", help="expose every collective (no overlap with compute)")
    p.add_argument("--in-network", action="store_true", help="let AllReduce use NVLink SHARP / IB SHARP")
    p.add_argument("--json", action="store_true", help="machine-readable output "
                   "(x4lib/schemas/comm_estimate_output.schema.json)")


def _model_from_args(args) -> Model:
    from x4lib import cli
    if args.model:
        base = model(args.model)
        over = {k: getattr(args, k) for k in ("layers", "hidden", "heads", "kv_heads", "experts", "top_k")
                if getattr(args, k) is not None}
        if args.params is not None:
            over["params"] = args.params
        return dataclasses.replace(base, **over)
    if args.params is None:
        raise cli.UsageError("give --params N (a parameter count) or --model ID")
    heads = args.heads or (args.hidden // 128 if args.hidden and args.hidden >= 128 else None)
    return Model(id="custom", name=f"{args.params:.3g}-parameter model", params=args.params, layers=args.layers,
                 hidden=args.hidden, heads=heads, kv_heads=args.kv_heads or heads, experts=args.experts or 1,
                 top_k=args.top_k or 1)


def _text(doc: dict) -> str:
    a = doc["assumptions"]
    lay = ", ".join(f"{k} {v}" for k, v in a["layout"].items())
    lines = [f"{doc['strategy']} on {a['cluster']} ({a['gpus']} x {a['device']}), {a['model']} "
             f"({a['params']:.3g} parameters); layout {lay}; {a['micro_batches']} micro-batches of {a['micro_batch']} "
             f"x {a['seq']} tokens", ""]
    lines.append(f"{'op':>15} {'size (GB)':>10} {'group':>6} {'calls':>6} {'time (s)':>9} {'exposed (s)':>12}  "
                 f"hides behind / algorithm / bottleneck")
    for c in doc["collectives"]:
        lines.append(f"{c['op']:>15} {c['bytes'] / 1e9:>10.4g} {c['group_size']:>6} {c['calls_per_step']:>6} "
                     f"{c['time_s']:>9.4f} {c['exposed_s']:>12.4f}  {c['hides_behind']} / {c['algorithm']} / "
                     f"{c['bottleneck']}")
    lines += ["", f"per GPU and step: {doc['bytes_per_gpu_per_step'] / 1e9:,.3f} GB sent, {doc['time_s']:.4f} s of "
                  f"communication, {doc['exposed_time_s']:.4f} s exposed; compute {a['compute_s']:.3f} s, bubble "
                  f"{a['bubble_s']:.3f} s; predicted step {a['step_s']:.3f} s, MFU {a['mfu_predicted']:.2f}"]
    lines += [f"note: {n}" for n in a["notes"]]
    lines.append("Model predictions (α–β collectives, compute at the published achievable matmul rate), not "
                 "measurements. GB = 1e9 B.")
    return "\n".join(lines)


def cli_main(args) -> int:
    from x4lib import cli
    mdl = _model_from_args(args)
    clu = cluster(args.cluster)
    quiz = load()["layouts"]["quiz-70b"]
    batch = {"seq": args.seq or quiz["seq"], "micro_batch": args.micro_batch or quiz["micro_batch"],
             "global_batch_seqs": args.global_batch or quiz["global_batch_seqs"],
             "grad_bytes": args.grad_bytes or quiz["grad_bytes"]}
    lay = default_layout(args.strategy, mdl, clu, tp=args.tp, pp=args.pp, cp=args.cp, dp=args.dp, ep=args.ep)
    lay = dataclasses.replace(lay, overlap=not args.no_overlap, in_network=args.in_network, **batch)
    doc = comm_estimate(args.strategy, mdl, clu, lay, args.compute_efficiency)
    cli.emit(doc, _text(doc), as_json=args.json)
    return 0


# ------------------------------------------------------------------------------------------------ checks

def published_checks() -> list[dict]:
    """Measurements by others in parallelism.yaml, each row beside the model's prediction for the same collective,
    size, cluster and algorithm (times in s, busbw in B/s). Used in: book/03-interconnects-and-topology.md."""
    out = []
    for chk in load().get("published_checks", []):
        clu = cluster(chk["cluster"])
        rows = []
        for r in chk["rows"]:
            pr = collectives.predict(chk["collective"], r["size_B"], clu, algorithm=chk["algorithm"])
            rows.append({"size_B": r["size_B"], "measured_time_s": r["time_us"] * 1e-6,
                         "measured_busbw_Bps": r["busbw_gb_s"] * 1e9, "model_time_s": pr.time_s,
                         "model_busbw_Bps": pr.busbw_Bps, "model_bottleneck": pr.bottleneck})
        out.append({**{k: chk[k] for k in ("id", "cluster", "collective", "algorithm", "source", "note")},
                    "rows": rows})
    return out
