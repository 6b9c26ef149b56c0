"""Rules of thumb for scaling a training run, each one line of arithmetic on catalog numbers: the capstone's answer
card (book/capstone-8-to-1024.md). Every function takes catalog objects (a ``Device`` from x4lib.catalog.specs, a
``Cluster`` from x4lib.network.clusters, a planner ``Model``) and returns SI values; ids are resolved by the caller.

    memory floor      bytes/param b = 2 (BF16 weight) + 2 (BF16 gradient) + 4 (FP32 master) + 8 (Adam's two FP32
                      moments) = 16;  GPUs ≥ ⌈N·b / (C·(1 − reserve))⌉      (rajbhandari-2020)
    tensor parallel   per layer and micro-batch in the forward pass (the backward pass does twice the matmuls for
                      the same two all-reduces, so the forward pass is the bound), on each of t tensor ranks:
                        t_matmul = 2·b·s·N_layer / (t·P),  N_layer = 2h² + 2h·h_kv + m_f·h·f (m_f: 3 or 2)
                        t_comm   = 2 all-reduces × 2·(t−1)/t × (2 B · b·s·h) / W    (ring, BF16 activations)
                      ratio R = t_matmul / t_comm = N_layer·W / (4·h·(t−1)·P); compute-bound while R ≥ 1, i.e.
                      t ≤ 1 + N_layer·W / (4·h·P); the MLP alone is the scaling book's f/t ≳ P/W
                      (jax-scaling-book-training). W is the link's rate per direction: NVLink inside the domain,
                      the NIC's share per GPU beyond it.
    data parallel     per step each GPU computes 6·N·B/(n·P) and moves k·N/(t·p) bytes of parameters or
                      gradients over its network share W (per direction); compute-bound while the tokens per
                      replica B/(d·c) ≥ (k/6)·P/W. k (BF16, ring, (n−1)/n ≈ 1): 4 B/param for DP and ZeRO-1
                      (reduce-scatter + all-gather), 2 + 2m for ZeRO-2 (gradients reduce-scattered every
                      micro-batch), 6m for ZeRO-3 (weights gathered twice and gradients reduce-scattered every
                      micro-batch); so the data-parallel degree d·c ≤ B / ((k/6)·P/W).
    pipeline bubble   (p − 1)/m of the ideal work for 1F1B with m ≥ p micro-batches per replica (narayanan-2021)
    goodput           job MTBF M = 1/(n·λ); at Young's interval √(2δM) the time lost is to first order
                      √(2δ/M) + R/M, so goodput ≈ 1 − √(2δ/M) − R/M (young-1974; chapter 04: exact)

Used in: book/capstone-8-to-1024.md (the answer card, the model answer and the decision exercises).
"""
from __future__ import annotations

import math

from x4lib.catalog import specs
from x4lib.datacenter import reliability
from x4lib.training import memory, planner

BF16_BYTES = 2


def state_bytes_per_param(precision: str = "bf16", optimizer: str = "adam") -> float:
    """Bytes of training state per parameter: weight, gradient and master copy of ``precision`` plus the
    optimizer's FP32 states (16 for BF16 with Adam)."""
    if precision not in memory.PRECISION_BYTES:
        raise ValueError(f"precision must be one of {', '.join(memory.PRECISION_BYTES)}, got {precision!r}")
    if optimizer not in memory.OPTIMIZER_STATE_BYTES:
        raise ValueError(f"optimizer must be one of {', '.join(memory.OPTIMIZER_STATE_BYTES)}, got {optimizer!r}")
    return sum(memory.PRECISION_BYTES[precision].values()) + memory.OPTIMIZER_STATE_BYTES[optimizer]


def memory_floor_gpus(model: planner.Model, dev: specs.Device, reserve: float = planner.RESERVE) -> int:
    """The fewest GPUs whose usable memory (capacity less ``reserve``) holds the training state, sharded perfectly
    and before any activation: ⌈N·16 B / (C·(1 − reserve))⌉."""
    if not 0 <= reserve < 1:
        raise ValueError(f"reserve must be in [0, 1), got {reserve}")
    return math.ceil(model.params * state_bytes_per_param() / (memory.capacity_B(dev) * (1 - reserve)))


# ------------------------------------------------------------------------------------------------ tensor parallel

def layer_params(model: planner.Model) -> float:
    """Weights of one layer's matmuls: 2h² (query, output) + 2h·h_kv (key, value) + 3h·f (gated) or 2h·f."""
    h, kv = model.hidden, model.hidden * model.kv_heads // model.heads
    return 2 * h * h + 2 * h * kv + (3 if model.gated_mlp else 2) * h * model.ffn


def _check_tp(tp: int) -> None:
    if int(tp) != tp or tp < 1:
        raise ValueError(f"tensor degree must be a whole number >= 1, got {tp}")


def tp_ratio(model: planner.Model, dev: specs.Device, tp: int, link_Bps: float, dtype: str = "bf16") -> float:
    """Matmul time over tensor-parallel all-reduce time per layer, R = N_layer·W / (4·h·(t−1)·P), at the dense
    ``dtype`` peak P and the link's rate W per direction; infinite at t = 1 (nothing to reduce)."""
    _check_tp(tp)
    if not (math.isfinite(link_Bps) and link_Bps > 0):
        raise ValueError(f"link bandwidth must be > 0 B/s, got {link_Bps}")
    if tp == 1:
        return math.inf
    return layer_params(model) * link_Bps / (4 * model.hidden * (tp - 1) * dev.peak_flop_per_s(dtype))


def tp_crossover(model: planner.Model, dev: specs.Device, link_Bps: float, dtype: str = "bf16") -> float:
    """The tensor degree at which the all-reduces take as long as the matmuls: 1 + N_layer·W / (4·h·P)."""
    if not (math.isfinite(link_Bps) and link_Bps > 0):
        raise ValueError(f"link bandwidth must be > 0 B/s, got {link_Bps}")
    return 1 + layer_params(model) * link_Bps / (4 * model.hidden * dev.peak_flop_per_s(dtype))


def network_Bps_per_gpu(cluster) -> float:
    """Each GPU's share of its node's NICs, per direction."""
    if not cluster.nic or cluster.nics_per_node < 1:
        raise ValueError(f"cluster {cluster.id} has no network")
    return cluster.node_line_rate_Bps / cluster.gpus_per_node


def tp_link(cluster, tp: int) -> tuple[float, str]:
    """(W per direction, where the tensor group runs): the scale-up link while the group fits in one NVLink
    domain (a node of the cluster), else the network share per GPU, which then bounds the all-reduce."""
    _check_tp(tp)
    if tp <= cluster.gpus_per_node:
        return cluster.intra.bw_Bps, f"inside the {cluster.intra.kind} domain of {cluster.gpus_per_node} GPUs"
    return network_Bps_per_gpu(cluster), (f"across nodes: {tp} exceeds the {cluster.intra.kind} domain of "
                                          f"{cluster.gpus_per_node} GPUs, so the network bounds the all-reduce")


def tp_check(model: planner.Model, dev: specs.Device, cluster, tp: int) -> dict:
    """The tensor rule for one degree on one cluster: the link used, R, and whether the matmuls still dominate."""
    bw, where = tp_link(cluster, tp)
    r = tp_ratio(model, dev, tp, bw)
    return {"tp": tp, "link_Bps": bw, "where": where, "ratio": r, "compute_bound": r >= 1,
            "ffn_per_gpu": model.ffn / tp, "crossover": tp_crossover(model, dev, bw)}


# ------------------------------------------------------------------------------------------------ data parallel

def sync_bytes_per_param(zero: int, micro_batches: int = 1) -> float:
    """BF16 bytes per parameter each GPU sends per step (and receives) to keep its data-parallel group in step:
    4 for DP and ZeRO-1, 2 + 2m for ZeRO-2, 6m for ZeRO-3 with m micro-batches per step."""
    if zero not in planner.ZERO_STAGES:
        raise ValueError(f"ZeRO stage must be one of {planner.ZERO_STAGES}, got {zero}")
    if int(micro_batches) != micro_batches or micro_batches < 1:
        raise ValueError(f"micro-batches must be a whole number >= 1, got {micro_batches}")
    m = micro_batches
    return {0: 2 * BF16_BYTES, 1: 2 * BF16_BYTES, 2: BF16_BYTES * (1 + m), 3: 3 * BF16_BYTES * m}[zero]


def dp_min_tokens(dev: specs.Device, cluster, zero: int = 1, micro_batches: int = 1, dtype: str = "bf16") -> float:
    """Tokens each data-parallel replica must process per step for its compute (6 FLOP per parameter and token)
    to outlast its gradient or parameter traffic: (k/6)·P/W, W the network share per GPU per direction."""
    return sync_bytes_per_param(zero, micro_batches) / 6 * dev.peak_flop_per_s(dtype) / network_Bps_per_gpu(cluster)


def dp_max_degree(dev: specs.Device, cluster, batch_tokens: int, zero: int = 1, micro_batches: int = 1) -> int:
    """The largest data-parallel degree (replicas, d·c) that keeps every replica compute-bound at a global batch of
    ``batch_tokens``: ⌊B / min tokens⌋; the batch itself is capped by the critical batch size."""
    if batch_tokens <= 0:
        raise ValueError(f"global batch must be > 0 tokens, got {batch_tokens}")
    return math.floor(batch_tokens / dp_min_tokens(dev, cluster, zero, micro_batches))


def dp_check(dev: specs.Device, cluster, batch_tokens: int, replicas: int, zero: int, micro_batches: int = 1) -> dict:
    """The data rule for one layout: tokens per replica against the minimum, and the ratio of the two."""
    if int(replicas) != replicas or replicas < 1:
        raise ValueError(f"replicas must be a whole number >= 1, got {replicas}")
    need = dp_min_tokens(dev, cluster, zero, micro_batches)
    have = batch_tokens / replicas
    return {"tokens_per_replica": have, "min_tokens": need, "ratio": have / need, "compute_bound": have >= need,
            "bytes_per_param": sync_bytes_per_param(zero, micro_batches)}


# ------------------------------------------------------------------------------------------------ pipeline

def pipeline_bubble(pp: int, micro_batches: int, virtual_stages: int = 1) -> float:
    """(p − 1)/(v·m): the 1F1B bubble as a fraction of the ideal work, divided by the virtual stages each GPU holds
    when the schedule is interleaved (Narayanan et al. 2021). m < p is refused: the pipeline never fills and the
    stages idle most of the step."""
    for name, v in (("pipeline degree", pp), ("micro-batches", micro_batches), ("virtual stages", virtual_stages)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v}")
    if micro_batches < pp:
        raise ValueError(f"{micro_batches} micro-batches cannot fill {pp} pipeline stages: use at least {pp} "
                         f"(the bubble would be (p - 1)/m = {(pp - 1) / micro_batches:.0%} of the work)")
    return (pp - 1) / (virtual_stages * micro_batches)


def micro_batches_for(pp: int, bubble: float) -> int:
    """The fewest micro-batches per replica that bring the 1F1B bubble (p − 1)/m to at most ``bubble``."""
    if not 0 < bubble <= 1:
        raise ValueError(f"bubble must be in (0, 1], got {bubble}")
    return max(pp, math.ceil((pp - 1) / bubble - 1e-9))


# ------------------------------------------------------------------------------------------------ goodput

def goodput_first_order(rate_per_gpu_s: float, gpus: int, checkpoint_s: float, restart_s: float = 0.0) -> float:
    """1 − √(2δ/M) − R/M with M = 1/(n·λ): the hand estimate at Young's interval (chapter 04's is exact)."""
    m = reliability.cluster_mtbf_s(rate_per_gpu_s, gpus)
    reliability.young_interval_s(m, checkpoint_s)  # checks δ and M
    if restart_s < 0:
        raise ValueError(f"restart time must be >= 0 s, got {restart_s}")
    return 1 - math.sqrt(2 * checkpoint_s / m) - restart_s / m
