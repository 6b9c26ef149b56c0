"""The software stack's step: a training step timed kernel by kernel at the real shapes, for one layout.

Per GPU and optimizer step of a dense decoder (L layers over pp stages, v virtual stages each, m micro-batches of
b sequences of s tokens, T = s·b/cp tokens per GPU and micro-batch), the terms are seconds, split into the parts a
fitted constant scales (``Features``) and the parts it does not:

    gemm        the layer's four linear GEMMs (QKV, O, up/gate, down) forward, input-gradient and weight-gradient,
                each at its own shape through x4lib.compute.matmul.predict (tensor-parallel shards; the logits
                GEMM on the last stage); full recomputation runs the forward GEMMs again
    attention   the attention core: FlashAttention as one kernel (causal half of 4·T·s·d FLOP forward, 2.5 times
                that backward; Dao et al. 2022) or, without it, two batched GEMMs per head over the s × s scores
    memory      the non-matmul work as memory-bound kernels over their bytes at the HBM bandwidth: norms,
                residual adds, dropout, bias-GeLU or SwiGLU, rotary embedding, the s × s softmax without
                FlashAttention, the logits' cross-entropy, and FP32 weights' casts where the stack autocasts
    kernels     the number of kernels launched (a per-kernel launch and framework overhead scales it)
    overlapped  communication that runs beside compute (which depends on the stack, x4lib/data/ground_truth.yaml
                ``stacks``): compute slows by a share of it while it runs (Calculon's processor_usage)
    exposed     communication on the critical path, never scaled: tensor-parallel collectives the stack does not
                overlap, pipeline sends, and the part of the data-parallel reduction longer than its window
                (x4lib.network.collectives: NCCL's own cost model on the cluster's links), and the optimizer
                step: its bytes per local parameter (the stack's optimizer_B_per_param: 38 B for a fused Adam with
                a 16-bit copy) at the bandwidth a streaming copy reaches on the device (φ × HBM bandwidth,
                x4lib.compute.matmul.memory_fraction), since those bytes are known exactly, not estimated

Pipeline: one micro-batch of the slowest stage (⌈L/pp⌉ layers, plus the logits on the last) sets the pace, and
the step is that time × (m + (pp − 1)/v) for 1F1B with v virtual stages (Narayanan et al. 2021); the data-parallel
reduction and the optimizer step follow.

    step = c_gemm·gemm + c_attn·attention + c_mem·memory + c_launch·kernels + c_overlap·overlapped + exposed

The constants c are fitted leave-one-source-out on the public ground truth (x4lib.training.validate), c_overlap
within [0, 1] (1: compute waits for the whole collective, as if it were exposed); with every c = 1 except
c_launch = 0 and c_overlap = 0 the model is the hardware alone. Used in: x4lib.training.planner,
book/capstone-8-to-1024.md.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from types import MappingProxyType
from typing import Mapping

from x4lib.catalog import specs
from x4lib.network import clusters, collectives

DATA_PATH = specs.DATA_DIR / "ground_truth.yaml"
SCHEMA_PATH = specs.DATA_DIR.parent / "schemas" / "ground_truth.schema.json"
FEATURES = ("gemm", "attention", "memory", "kernels", "overlapped")
#: bytes the optimizer step moves per local parameter: fused Adam reads the FP32 weight, gradient, m and v (16 B),
#: writes weight, m, v (12 B) and the 16-bit copy (2 B); the gradient norm reads the gradient again and zeroing
#: writes it (8 B)
OPTIMIZER_B_PER_PARAM = 38.0
ELEMENT_B = 2  # 16-bit activations


class StackError(ValueError):
    """An impossible layout or an unknown stack (exit 2 on the command line)."""


class GroundTruthDataError(ValueError):
    """ground_truth.yaml breaks a rule (a broken data file of the book: exit 1)."""
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class Stack:
    id: str
    name: str
    flash_attention: bool
    dropout: bool
    tp_overlap: str
    dp_overlap: bool
    param_gather_overlap: bool
    defaults: Mapping
    note: str
    #: bytes per gradient element the data-parallel reduction moves: 2 (the 16-bit gradients), or 4 where the stack
    #: accumulates and reduces gradients in FP32 (with its source)
    grad_reduce_bytes: int = ELEMENT_B
    grad_reduce_source: str = ""
    #: bytes the optimizer step moves per local parameter (OPTIMIZER_B_PER_PARAM: a fused Adam over FP32 master
    #: weights with a 16-bit copy), with its source where a stack's optimizer differs
    optimizer_B_per_param: float = OPTIMIZER_B_PER_PARAM
    optimizer_source: str = ""
    #: bytes per parameter and micro-batch that casting FP32 weights to 16 bits for the forward and the weight
    #: gradients back moves (torch.autocast over FP32 weights); 0 where the weights are kept in 16 bits
    weight_cast_B_per_param: float = 0.0
    weight_cast_source: str = ""


@functools.lru_cache(maxsize=2)
def document(path=DATA_PATH) -> dict:
    doc = specs.load_document(path, SCHEMA_PATH, GroundTruthDataError)
    for sid, src in doc["sources"].items():
        if src["stack"] is not None and src["stack"] not in doc["stacks"]:
            raise GroundTruthDataError(f"ground_truth.yaml: source {sid}: unknown stack {src['stack']!r}")
        mb = src["network"].get("measured_busbw")
        if mb and any(len(mb[k]) != len(mb["nodes"]) for k in ("all_reduce", "all_gather", "reduce_scatter")):
            raise GroundTruthDataError(f"ground_truth.yaml: source {sid}: measured_busbw needs one value per node count")
    for rid, st in doc["published_stacks"].items():
        if st not in doc["stacks"]:
            raise GroundTruthDataError(f"ground_truth.yaml: published_stacks.{rid}: unknown stack {st!r}")
    return doc


def stacks() -> Mapping[str, Stack]:
    return MappingProxyType({k: Stack(id=k, **v) for k, v in document()["stacks"].items()})


def stack(stack_id: str) -> Stack:
    try:
        return stacks()[stack_id]
    except KeyError:
        raise StackError(f"unknown stack {stack_id!r}; known: {', '.join(stacks())}") from None


@dataclasses.dataclass(frozen=True)
class Shape:
    """A dense decoder's shape (the counts the step needs)."""
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    gated_mlp: bool
    vocab: int
    seq: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def layer_params(self) -> float:
        kv = self.kv_heads * self.head_dim
        mats = 3 if self.gated_mlp else 2
        return 2 * self.hidden * self.hidden + 2 * self.hidden * kv + mats * self.hidden * self.ffn


@dataclasses.dataclass(frozen=True)
class Setup:
    """The layout and schedule of one run: degrees, micro-batch, micro-batches per step, recomputation."""
    tp: int
    pp: int
    dp: int
    cp: int
    zero: int
    micro_batch: int
    micro_batches: int
    recompute: str
    interleave: int = 1
    sequence_parallel: bool = False

    @property
    def n_gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp


@dataclasses.dataclass(frozen=True)
class Constants:
    """The fitted constants: multipliers on GEMM, attention and memory-bound time, seconds per kernel, and the share
    of overlapped communication time that compute loses."""
    gemm: float = 1.0
    attention: float = 1.0
    memory: float = 1.0
    kernels: float = 0.0
    overlapped: float = 0.0
    #: (stack id, seconds per kernel) where a stack's own launch and framework overhead was fitted; others use
    #: ``kernels``, the value pooled over every stack
    stack_kernels: tuple = ()

    def vector(self) -> tuple[float, ...]:
        return tuple(getattr(self, f) for f in FEATURES)

    def kernels_for(self, stack_id: str | None) -> float:
        return dict(self.stack_kernels).get(stack_id, self.kernels)

    def to_json(self) -> dict:
        return {**{f: getattr(self, f) for f in FEATURES}, "kernels_by_stack": dict(self.stack_kernels)}


HARDWARE_ONLY = Constants()


@dataclasses.dataclass(frozen=True)
class Step:
    """The terms of one step [s per GPU]; ``features`` scale with the constants, ``exposed`` does not."""
    features: Mapping
    exposed: Mapping
    bubble_factor: float
    notes: Mapping

    def _c(self, c: Constants, k: str) -> float:
        return c.kernels_for(self.notes.get("stack")) if k == "kernels" else getattr(c, k)

    def time_s(self, c: Constants = HARDWARE_ONLY) -> float:
        return sum(self._c(c, k) * self.features[k] for k in FEATURES) + sum(self.exposed.values())

    def terms_s(self, c: Constants = HARDWARE_ONLY) -> dict:
        out = {k: self._c(c, k) * self.features[k] for k in FEATURES}
        out.update({f"exposed {k}": v for k, v in self.exposed.items()})
        return out

    def parts_s(self, c: Constants = HARDWARE_ONLY) -> dict:
        """:meth:`terms_s` with the pipeline bubble taken out of every term that runs once per micro-batch into its
        own term, ``pipeline bubble`` (the same sum: the work of the m micro-batches, the bubble, and what runs after
        the pipeline, the data-parallel reduction and the optimizer step)."""
        after = self.notes.get("after_pipeline", {})
        out, bubble = {}, 0.0
        for k, v in self.terms_s(c).items():
            tail = (self._c(c, k) if k in FEATURES else 1.0) * after.get(k, 0.0)
            piped = v - tail
            out[k] = tail + piped / self.bubble_factor
            bubble += piped - piped / self.bubble_factor
        out["pipeline bubble"] = bubble
        return out


# ------------------------------------------------------------------------------------------------- kernels

@functools.lru_cache(maxsize=64)
def _copy_fraction(device_id: str) -> float:
    """φ, the fraction of the catalog's memory bandwidth a streaming copy reaches on the device (published copy and
    triad kernels, x4lib.compute.matmul.memory_fraction): the optimizer step's passes are such streams."""
    from x4lib.compute import matmul
    return matmul.memory_fraction(device_id)[0]


@functools.lru_cache(maxsize=65536)
def _gemm_s(dev: specs.Device, dtype: str, m: int, n: int, k: int) -> float:
    from x4lib.compute import matmul
    return matmul.predict(dev, dtype, max(1, int(m)), max(1, int(n)), max(1, int(k))).time_s


def _fwd_bwd(dev, dtype, m, n, k) -> tuple[float, float]:
    """Forward GEMM time and its two backward GEMMs (input gradient m×k×n, weight gradient k×n×m)."""
    return _gemm_s(dev, dtype, m, n, k), _gemm_s(dev, dtype, m, k, n) + _gemm_s(dev, dtype, k, n, m)


_CLUSTERS: dict = {}


def _collective_s(kind: str, size_B: float, base: clusters.Cluster, nodes: int, per_node: int, nics: int) -> float:
    if nodes * per_node <= 1 or size_B <= 0:
        return 0.0
    _CLUSTERS.setdefault(base.id, base)
    return _collective_cached(kind, float(size_B), base.id, nodes, per_node, max(1, nics))


@functools.lru_cache(maxsize=16384)
def _collective_cached(kind: str, size_B: float, base_id: str, nodes: int, per_node: int, nics: int) -> float:
    c = dataclasses.replace(_CLUSTERS[base_id], nodes=nodes, gpus_per_node=per_node, nics_per_node=nics)
    return collectives.predict(kind, size_B, c).time_s


def _group(size: int, stride: int, gpus_per_node: int) -> tuple[int, int]:
    """(nodes, ranks per node) of a group of ``size`` ranks spaced ``stride`` apart on nodes of ``gpus_per_node``."""
    per = max(1, min(size, gpus_per_node // stride)) if stride < gpus_per_node else 1
    return math.ceil(size / per), per


def step(shape: Shape, lay: Setup, dev: specs.Device, st: Stack, cluster: clusters.Cluster, dtype: str = "bf16",
         gpus_per_node: int = 8, nics_per_node: int | None = None) -> Step:
    """The terms of one training step (module docstring)."""
    if shape.heads % lay.tp or shape.seq % lay.cp:
        raise StackError(f"tp = {lay.tp} must divide the {shape.heads} heads and cp = {lay.cp} the sequence {shape.seq}")
    if lay.recompute not in ("none", "selective", "full"):
        raise StackError(f"recompute must be none, selective or full, got {lay.recompute!r}")
    nics = cluster.nics_per_node if nics_per_node is None else nics_per_node
    W = dev.memory_bw_Bps
    h, f, V, s = shape.hidden, shape.ffn, shape.vocab, shape.seq
    t, b, cp = lay.tp, lay.micro_batch, lay.cp
    T = s * b // cp                      # tokens per GPU and micro-batch
    kv = shape.kv_heads * shape.head_dim
    up = 2 * f if shape.gated_mlp else f
    sp = lay.sequence_parallel and t > 1
    # ---- GEMMs of one layer, one micro-batch
    g_f = g_b = 0.0
    for m, n, k in ((T, (h + 2 * kv) // t, h), (T, h, h // t), (T, up // t, h), (T, h, f // t)):
        a, c = _fwd_bwd(dev, dtype, m, n, k)
        g_f, g_b = g_f + a, g_b + c
    wgrad = g_b / 2  # roughly half of the backward GEMM time is weight gradients
    # ---- attention core (per GPU: heads/t heads, b sequences, T queries against s/cp·cp = s keys when cp splits)
    heads_local = shape.heads // t
    hd = shape.head_dim
    # a batched kernel over every (sequence, head) pair runs as one GEMM with the pairs stacked along m
    if st.flash_attention:
        at_f = _gemm_s(dev, dtype, heads_local * T, s, hd) * 2 * 0.5   # QK^T and PV, causal half
        at_b = 2.5 * at_f
        scores_B = 0.0
    else:
        at_f = _gemm_s(dev, dtype, b * heads_local * s, s, hd) + _gemm_s(dev, dtype, b * heads_local * s, hd, s)
        at_b = 2 * at_f
        # scale+mask+softmax (fused: read and write the scores) and dropout on the probabilities (read, write, mask)
        scores = b * heads_local * s * s
        scores_B = scores * (2 * ELEMENT_B + (2 * ELEMENT_B + 1 if st.dropout else 0))
    # ---- memory-bound element-wise work of one layer forward [bytes]
    act = T * h * ELEMENT_B / (t if sp else 1)   # one hidden-state tensor on this GPU
    el = 2 * 2 * act + 2 * 3 * act               # two norms (read, write), two residual adds (read 2, write 1)
    if st.dropout:
        el += 2 * (2 * act + act / ELEMENT_B)    # two dropouts before the residuals (read, write, 1-byte mask)
    mlp_act = T * f * ELEMENT_B / t
    el += 3 * mlp_act if shape.gated_mlp else 2 * mlp_act   # SwiGLU reads two, writes one; bias-GeLU reads, writes
    if st.flash_attention:
        el += 2 * T * (h + kv) * ELEMENT_B / t   # rotary embedding on q and k (read, write)
    el_f = el + scores_B
    n_kern_f = 4 + (1 if st.flash_attention else 4) + 2 + 2 + 1 + (2 if st.dropout else 2) + 4
    # ---- tensor-parallel traffic of one layer and micro-batch: 2 collectives forward, 2 backward
    tp_f = tp_b = 0.0
    if t > 1:
        nodes, per = _group(t, 1, gpus_per_node)
        size = s * b * h * ELEMENT_B / cp
        if sp:
            one = (_collective_s("all_gather", size, cluster, nodes, per, nics)
                   + _collective_s("reduce_scatter", size, cluster, nodes, per, nics)) / 2
        else:
            one = _collective_s("all_reduce", size, cluster, nodes, per, nics)
        tp_f = tp_b = 2 * one
        n_kern_f += 2
    # context parallel: the key/value blocks passed around the ring, overlapped with attention (TE's ring attention)
    cp_f = 0.0
    if cp > 1:
        nodes, per = _group(cp, t, gpus_per_node)
        cp_f = (cp - 1) * _collective_s("all_gather", 2 * T * kv * ELEMENT_B / t * cp, cluster, nodes, per, nics) / cp
    # ---- recomputation
    rec = lay.recompute
    r_g, r_at, r_el, r_tp = {"none": (0, 0, 0, 0), "selective": (0, 0 if st.flash_attention else 1, 0, 0),
                             "full": (1, 1, 1, 1)}[rec]
    rec_scores = scores_B if rec == "selective" else 0.0
    # ---- one layer, one micro-batch, forward + backward (+ recomputation)
    L_stage = math.ceil(shape.layers / lay.pp)
    gemm_l = g_f * (1 + r_g) + g_b
    att_l = at_f * (1 + r_at) + at_b
    mem_l = (el_f * (3 + r_el) + rec_scores) / W          # backward moves about twice the forward bytes
    kern_l = n_kern_f * (3 + r_el) + (2 if rec == "selective" and not st.flash_attention else 0)
    tp_total = tp_f * (1 + r_tp) + tp_b
    if st.tp_overlap == "all":
        tp_exp, tp_ovl = 0.0, tp_total
    elif st.tp_overlap == "backward":
        hidden_b = min(tp_b, wgrad)
        tp_exp, tp_ovl = tp_total - hidden_b, hidden_b
    else:
        tp_exp, tp_ovl = tp_total, 0.0
    cp_ovl = cp_f * (3 + r_el)
    # ---- logits and cross-entropy on the last stage
    lg_f, lg_b = _fwd_bwd(dev, dtype, T, V // t, h)
    ce_B = T * V / t * 4 * 4                               # FP32 logits: softmax read/write forward, again backward
    # ---- per micro-batch on the slowest stage
    gemm_mb = L_stage * gemm_l + lg_f + lg_b
    att_mb = L_stage * att_l
    cast_B = L_stage * shape.layer_params() / t * st.weight_cast_B_per_param   # autocast's casts, per micro-batch
    mem_mb = L_stage * mem_l + ce_B / W + cast_B / W
    kern_mb = L_stage * kern_l + 6
    ovl_mb = L_stage * (tp_ovl + cp_ovl)
    exp_mb = L_stage * tp_exp
    # pipeline sends: activations of one micro-batch to the next stage forward, gradients back (per virtual stage)
    p2p_mb = 0.0
    if lay.pp > 1:
        size = s * b * h * ELEMENT_B / cp / (t if sp or st.tp_overlap != "none" else 1)
        inside = t * cp * lay.pp <= gpus_per_node or cluster.nic is None
        bw = cluster.intra.bw_Bps if inside else cluster.nic.bw_Bps * max(1, nics) / gpus_per_node
        p2p_mb = 2 * lay.interleave * size / bw
    m = lay.micro_batches
    bubble = (m + (lay.pp - 1) / lay.interleave) if lay.pp > 1 else m
    # ---- after the pipeline: data-parallel reduction and the optimizer
    local_params = L_stage * shape.layer_params() / t + V * h / t   # the slowest stage holds an embedding too
    grad_B = local_params * st.grad_reduce_bytes
    dp_exp = dp_ovl = 0.0
    if lay.dp > 1:
        nodes, per = _group(lay.dp, t * cp * lay.pp, gpus_per_node)
        nic_g = nics if per >= gpus_per_node else max(1, nics * per // gpus_per_node)
        window = (gemm_l + att_l) * L_stage * (2 / 3)                 # the last micro-batch's backward pass
        if lay.zero >= 3:
            per_mb = 2 * _collective_s("all_gather", local_params * ELEMENT_B, cluster, nodes, per, nic_g) \
                + _collective_s("reduce_scatter", grad_B, cluster, nodes, per, nic_g)
            comm, window = per_mb * m, window * 1.5 * m
            ag = 0.0
        elif lay.zero >= 1:
            comm = _collective_s("reduce_scatter", grad_B, cluster, nodes, per, nic_g)
            ag = _collective_s("all_gather", local_params * ELEMENT_B, cluster, nodes, per, nic_g)
        else:
            comm = _collective_s("all_reduce", grad_B, cluster, nodes, per, nic_g)
            ag = 0.0
        if st.dp_overlap:
            dp_ovl = min(comm, window)
            dp_exp = comm - dp_ovl
        else:
            dp_exp = comm
        if st.param_gather_overlap:
            dp_ovl += ag
        else:
            dp_exp += ag
    shard = lay.dp * cp if lay.zero >= 1 else 1
    opt_B = local_params / shard * st.optimizer_B_per_param
    opt_s = opt_B / (_copy_fraction(dev.id) * W)
    features = {"gemm": gemm_mb * bubble, "attention": att_mb * bubble, "memory": mem_mb * bubble,
                "kernels": kern_mb * bubble, "overlapped": ovl_mb * bubble + dp_ovl}
    exposed = {"tensor-parallel": exp_mb * bubble, "pipeline sends": p2p_mb * bubble, "data-parallel": dp_exp,
               "optimizer": opt_s}
    return Step(MappingProxyType(features), MappingProxyType(exposed), bubble / m,
                MappingProxyType({"stage_layers": L_stage, "micro_batches": m, "stack": st.id,
                                  "after_pipeline": MappingProxyType({"overlapped": dp_ovl,
                                                                      "exposed data-parallel": dp_exp,
                                                                      "exposed optimizer": opt_s})}))
