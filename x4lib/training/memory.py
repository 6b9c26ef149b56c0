"""Memory needed to train: bytes of model state per parameter.

Mixed-precision training with Adam keeps, per parameter: the 16-bit weight (2 B) and gradient (2 B), and
in FP32 a master copy of the weight, Adam's momentum and its variance (4 + 4 + 4 = 12 B): 16 B in all,
before activations (Rajbhandari et al. 2020, ZeRO, section 3.1; references.bib: rajbhandari-2020).
Used in: book/00-motivation.md; the memory plans (training state, activations, inference) in book/02b-memory-and-decode.md.
"""
from __future__ import annotations

import argparse
import dataclasses
import math

MIXED_ADAM_BYTES_PER_PARAM = {"weights": 2, "gradients": 2, "optimizer": 12}


def model_state_bytes(params: float, bytes_per_param: dict | None = None) -> float:
    """Model-state bytes (weights + gradients + optimizer state), activations excluded."""
    if params <= 0:
        raise ValueError(f"params must be > 0, got {params:g}")
    per = bytes_per_param or MIXED_ADAM_BYTES_PER_PARAM
    return params * sum(per.values())


def min_devices_to_hold(state_bytes: float, device_memory_B: float) -> int:
    """The fewest devices whose memory can hold ``state_bytes`` if it is sharded perfectly
    (ZeRO stage 3 / FSDP), ignoring activations, buffers and fragmentation: a lower bound."""
    return math.ceil(state_bytes / device_memory_B)


# ------------------------------------------------------------------------------------------------------------
# Memory plans (book/02b-memory-and-decode.md): training state, activations and inference memory per GPU.
#
# Training, per GPU, with G GPUs = d (data parallel) × t (tensor parallel) × p (pipeline parallel), N parameters:
#     N_rank = N / (t·p)                                  each model-parallel rank holds an equal share
#     weights     = N_rank · b_w  / (d if ZeRO stage ≥ 3)  (ZeRO-3 = FSDP full sharding)
#     gradients   = N_rank · b_g  / (d if stage ≥ 2)
#     optimizer   = N_rank · (b_master + b_state) / (d if stage ≥ 1)
#   bytes per parameter (Rajbhandari et al. 2020, rajbhandari-2020): mixed precision BF16/FP16 keeps 2 B weights,
#   2 B gradients and an FP32 master copy (4 B) counted with the optimizer; Adam adds FP32 momentum and variance
#   (8 B), so 2 + 2 + 12 = 16 B; SGD with momentum adds 4 B; FP32 training has no separate master copy.
#     activations (Korthikanti et al. 2022, korthikanti-2022, Table 2; 16-bit activations, a GPT-style layer whose
#     MLP is 4h wide, a heads, s tokens, micro-batch b, hidden h, tensor-parallel degree t), per layer:
#       with sequence parallelism (the default; Megatron's --sequence-parallel):
#         none       s·b·h·(34 + 5·a·s/h) / t
#         selective  34·s·b·h / t                 (attention scores recomputed)
#         full       2·s·b·h / t                  (only each layer's input kept, split along the sequence)
#       tensor parallelism alone (layer norms, dropouts and the layer inputs replicated on every tensor rank):
#         none       s·b·h·(10 + 24/t + 5·a·s/(h·t))
#         selective  s·b·h·(10 + 24/t)
#         full       2·s·b·h                      (the paper's full-recomputation row)
#       at t = 1 the two agree: s·b·h·(34 + 5·a·s/h).
#     × L layers: with the 1F1B pipeline schedule the first stage holds L/p layers for p micro-batches in flight,
#     i.e. L layers' worth whatever p is. FP32 activations double it. Embeddings, logits and temporary buffers are
#     not counted.
# ------------------------------------------------------------------------------------------------------------


PRECISION_BYTES = {  # weights, gradients, FP32 master copy (per parameter)
    "bf16": {"weights": 2, "gradients": 2, "master": 4},
    "fp16": {"weights": 2, "gradients": 2, "master": 4},
    "fp32": {"weights": 4, "gradients": 4, "master": 0},
}
OPTIMIZER_STATE_BYTES = {"adam": 8, "adamw": 8, "sgd": 4}   # FP32 states per parameter
RECOMPUTE = ("none", "selective", "full")
PLAN_KINDS = ("gpu", "npu", "tpu")        # catalog kinds whose memory_gb is device memory (not on-chip SRAM)


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """Bytes per GPU of one plan; ``activations_B`` is None when the activation inputs were not given."""
    weights_B: float
    gradients_B: float
    optimizer_B: float
    activations_B: float | None
    assumptions: dict

    @property
    def total_B(self) -> float:
        return self.weights_B + self.gradients_B + self.optimizer_B + (self.activations_B or 0.0)

    def per_gpu_bytes(self) -> dict:
        return {"weights": self.weights_B, "gradients": self.gradients_B, "optimizer": self.optimizer_B,
                "activations": self.activations_B or 0.0, "total": self.total_B}


def activation_bytes_per_layer(seq: int, micro_batch: int, hidden: int, heads: int, tp: int = 1,
                               recompute: str = "none", precision: str = "bf16",
                               sequence_parallel: bool = True) -> float:
    """Activation bytes one transformer layer keeps for the backward pass (Korthikanti et al. 2022, Table 2, see
    above): with sequence parallelism (default) or with tensor parallelism alone (``sequence_parallel=False``)."""
    for name, v in (("seq", seq), ("micro_batch", micro_batch), ("hidden", hidden), ("heads", heads), ("tp", tp)):
        if not (isinstance(v, int) and v >= 1):
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    if not isinstance(sequence_parallel, bool):
        raise ValueError(f"sequence_parallel must be True or False, got {sequence_parallel!r}")
    sbh = seq * micro_batch * hidden
    attn = 5 * heads * seq / hidden            # the attention scores' share: 5·a·s/h
    if sequence_parallel:
        per = {"none": sbh * (34 + attn), "selective": 34 * sbh, "full": 2 * sbh}[recompute] / tp
    else:
        per = {"none": sbh * (10 + 24 / tp + attn / tp), "selective": sbh * (10 + 24 / tp),
               "full": 2 * sbh}[recompute]
    return per * (2 if precision == "fp32" else 1)


# ------------------------------------------------------------------------------------------------------------
# What the framework keeps (issue 30): the same count, term by term, for the layer a run really has.
# Korthikanti's 34 is a sum over the tensors one GPT layer saves for its backward pass, in bytes per token at 16-bit
# (their section 4.1): two layer-norm inputs (2h + 2h), the QKV input (2h), Q and K (4h), V (2h), the attention
# output that the output projection reads (2h), the MLP input (2h), the GeLU input and output (2·4h + 2·4h) and two
# dropout masks (1 B each, h + h); the score matrix adds a·s·(2 + 1 + 2) (softmax output, its dropout mask, the
# dropout output). Written for any dense decoder, with K/V width kv = kv_heads·h/heads and MLP width f:
#     norms 4h + attention (6h + 4·kv) + MLP 2h + (plain: 4f; gated SwiGLU: 6f, the gate and up projections kept
#     by a fused SwiGLU and its output read by the down projection) + dropout masks 2h (only if the model uses
#     dropout)
#     score matrix a·s·(2 + 3 if dropout), but NOT with FlashAttention: its backward recomputes the scores from Q, K,
#     V, the output and one FP32 log-sum-exp per head and token (4·a B), so memory is linear in s
#     (Dao et al. 2022, dao-2022-flashattention, section 3.1). Megatron-Core with Transformer Engine, nanotron and
#     PyTorch's scaled_dot_product_attention use it by default.
# At kv = h, f = 4h, a plain MLP and dropout the sum is Korthikanti's 34 (and 10 of it replicated on every tensor
# rank without sequence parallelism: the norms, the two layer inputs and the masks), so the function above is this
# one's special case. Selective recomputation drops the score matrix (what FlashAttention never stores); full keeps
# each layer's input (2h).
#
# Pipeline: with 1F1B, stage k holds min(p − k, m) micro-batches in flight, so the peak is max_k min(p − k, m)·n_k
# for n_k layers on stage k (Narayanan et al. 2021, narayanan-2021, section 2.2). When p does not divide L the
# first and last stages take the layers short of ⌈L/p⌉·p, as Llama 3 did ("one layer removed from the first and
# last stage", llama3-2024, section 3.3.2) and Megatron-Core allows (--decoder-first-pipeline-num-layers,
# --decoder-last-pipeline-num-layers); where that leaves a stage empty, every stage is counted at ⌈L/p⌉ layers.
# ------------------------------------------------------------------------------------------------------------


def layer_activation_bytes(seq: int, micro_batch: int, hidden: int, heads: int, tp: int = 1,
                           recompute: str = "none", precision: str = "bf16", sequence_parallel: bool = True, *,
                           kv_heads: int | None = None, ffn: int | None = None, gated_mlp: bool = False,
                           dropout: bool = True, flash_attention: bool = False) -> float:
    """Activation bytes one dense decoder layer keeps for its backward pass (the block comment above): GQA,
    gated MLPs, dropout or none, FlashAttention or a stored score matrix. With the defaults it is
    :func:`activation_bytes_per_layer`."""
    base = activation_bytes_per_layer(seq, micro_batch, hidden, heads, tp, recompute, precision, sequence_parallel)
    kv_heads = heads if kv_heads is None else kv_heads
    ffn = 4 * hidden if ffn is None else ffn
    for name, v in (("kv_heads", kv_heads), ("ffn", ffn)):
        if not (isinstance(v, int) and v >= 1):
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    h, t, T = hidden, tp, seq * micro_batch
    scale = 2 if precision == "fp32" else 1
    if recompute == "full":
        return base
    kv = kv_heads * hidden // heads
    drop = 1 if dropout else 0
    per_token = 4 * h + 6 * h + 4 * kv + 2 * h + (6 * ffn if gated_mlp else 4 * ffn) + 2 * h * drop
    replicated = 8 * h + 2 * h * drop          # norms, the two layer inputs, the masks
    scores = 0.0 if (flash_attention or recompute == "selective") else heads * seq * (2 + 3 * drop)
    lse = 4 * heads if flash_attention else 0   # FP32 log-sum-exp per head and token
    if sequence_parallel or t == 1:
        per = T * (per_token + scores + lse) / t
    else:
        per = T * (replicated + (per_token - replicated + scores + lse) / t)
    return per * scale


def stage_layers(layers: int, pp: int) -> tuple[int, ...]:
    """Layers per pipeline stage (block comment above): ⌈L/p⌉ each, the first and last stages short by the rest."""
    q = -(-layers // pp)
    d = q * pp - layers
    if pp == 1:
        return (layers,)
    first, last = q - (d + 1) // 2, q - d // 2
    if first < 1 or last < 1:
        return (q,) * pp
    return (first,) + (q,) * (pp - 2) + (last,)


def layers_in_flight(layers: int, pp: int, micro_batches: int | None = None) -> int:
    """Layer activations the busiest 1F1B stage holds at its peak: max_k min(p − k, m)·n_k."""
    n = stage_layers(layers, pp)
    m = pp if micro_batches is None else micro_batches
    return max(min(pp - k, m) * nk for k, nk in enumerate(n))


def training_plan(params: float, gpus: int, zero: int = 0, optimizer: str = "adam", precision: str = "bf16",
                  tp: int = 1, pp: int = 1, layers: int | None = None, hidden: int | None = None,
                  seq: int | None = None, micro_batch: int | None = None, recompute: str = "none",
                  heads: int | None = None, cp: int = 1, sequence_parallel: bool = True, *, kv_heads: int | None = None,
                  ffn: int | None = None, gated_mlp: bool = False, dropout: bool = True,
                  flash_attention: bool = False, micro_batches: int | None = None,
                  uneven_stages: bool = False) -> MemoryPlan:
    """Per-GPU training memory (see the block comment above). Raises ValueError naming a bad input.
    ``sequence_parallel``: activations with Megatron's sequence parallelism (default) or tensor parallelism alone.
    ``cp`` (context parallel) splits each sequence over cp GPUs: activations / cp, and ZeRO shards over the
    dp·cp GPUs that hold the same model shard (Megatron's distributed optimizer does so)."""
    if not params > 0:
        raise ValueError(f"params must be > 0, got {params:g}")
    for name, v in (("gpus", gpus), ("tp", tp), ("pp", pp), ("cp", cp)):
        if not (isinstance(v, int) and v >= 1):
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {zero!r}")
    if precision not in PRECISION_BYTES:
        raise ValueError(f"precision must be one of {', '.join(PRECISION_BYTES)}, got {precision!r}")
    if optimizer not in OPTIMIZER_STATE_BYTES:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZER_STATE_BYTES)}, got {optimizer!r}")
    if gpus % (tp * pp * cp):
        what = f"tensor {tp} x pipeline {pp}" + (f" x context {cp}" if cp > 1 else "")
        raise ValueError(f"{gpus} GPUs cannot be split into {what} groups "
                         f"(tp x pp{' x cp' if cp > 1 else ''} = {tp * pp * cp} must divide the GPU count)")
    act_inputs = {"layers": layers, "hidden": hidden, "seq": seq, "micro_batch": micro_batch}
    given = {k for k, v in act_inputs.items() if v is not None}
    if given and given != set(act_inputs):
        missing = ", ".join(sorted(set(act_inputs) - given))
        raise ValueError(f"activations need layers, hidden, seq and micro_batch together (missing: {missing})")
    dp = gpus // (tp * pp * cp)
    shard = dp * cp
    b = PRECISION_BYTES[precision]
    n_rank = params / (tp * pp)
    weights = n_rank * b["weights"] / (shard if zero >= 3 else 1)
    grads = n_rank * b["gradients"] / (shard if zero >= 2 else 1)
    opt = n_rank * (b["master"] + OPTIMIZER_STATE_BYTES[optimizer]) / (shard if zero >= 1 else 1)
    acts = None
    a = heads
    if given:
        if tp > 1 and hidden % tp:
            raise ValueError(f"hidden size {hidden} is not divisible by tensor-parallel degree {tp}")
        a = heads or max(1, hidden // 128)
        if pp > 1 and layers % pp and not uneven_stages:
            raise ValueError(f"{layers} layers cannot be split into {pp} pipeline stages evenly")
        if pp > layers:
            raise ValueError(f"{pp} pipeline stages exceed the {layers} layers")
        if seq % cp:
            raise ValueError(f"sequence length {seq} does not split into cp = {cp} chunks")
        acts = layers_in_flight(layers, pp, micro_batches) * layer_activation_bytes(
            seq, micro_batch, hidden, a, tp, recompute, precision, sequence_parallel, kv_heads=kv_heads, ffn=ffn,
            gated_mlp=gated_mlp, dropout=dropout, flash_attention=flash_attention) / cp
    return MemoryPlan(weights, grads, opt, acts, {
        "params": params, "gpus": gpus, "data_parallel": dp, "tp": tp, "pp": pp, **({"cp": cp} if cp > 1 else {}),
        "zero": zero,
        "optimizer": optimizer, "precision": precision, "recompute": recompute if given else None,
        "sequence_parallel": sequence_parallel if given else None,
        **({"flash_attention": flash_attention, "layers_in_flight": layers_in_flight(layers, pp, micro_batches)}
           if given else {}),
        "heads": a if given else None, "bytes_per_param": {**b, "optimizer_state": OPTIMIZER_STATE_BYTES[optimizer]},
    })


def capacity_B(dev) -> float:
    """Planning capacity of one device (a catalog ``Device``): its vendor memory figure read as GB = 1e9 B. HBM is
    binary-sized (the driver reports a little more), so this is conservative by a few per cent."""
    return dev.si("memory_gb")


def plan_devices() -> list[str]:
    """Catalog devices whose memory_gb is device memory (GPUs, NPUs, TPUs), in catalog order."""
    from x4lib.catalog import specs
    return [d.id for d in specs.load_catalog().values() if d.kind in PLAN_KINDS and "memory_gb" in d.values]


def fits(total_B: float, devices=None) -> dict:
    """{device id: total_B <= capacity} for the given devices (default: :func:`plan_devices`)."""
    from x4lib.catalog import specs
    return {d: total_B <= capacity_B(specs.get(d)) for d in (devices or plan_devices())}


@dataclasses.dataclass(frozen=True)
class InferencePlan:
    """Per-GPU inference memory of a model served with tensor parallelism over ``gpus``."""
    model: str
    gpus: int
    weights_B: float
    kv_cache_B: float
    workspace_B: float
    assumptions: dict

    @property
    def total_B(self) -> float:
        return self.weights_B + self.kv_cache_B + self.workspace_B


def inference_plan(model, dev, gpus: int = 1, context: int = 8192, batch: int = 1,
                   weight_dtype: str = "bf16", kv_dtype: str = "bf16", workspace_fraction: float = 0.1
                   ) -> InferencePlan:
    """Weights and KV cache split over ``gpus`` tensor-parallel ranks, plus a workspace reserve of
    ``workspace_fraction`` of the device (activations, CUDA context, allocator slack: an assumption, not a
    measurement). KV heads are split across ranks only as far as there are KV heads (beyond that they are
    replicated); an MLA latent cache is shared by all heads, so every rank keeps all of it. ``dev`` is a catalog
    ``Device``."""
    from x4lib.serving import inference
    cfg = inference.get(model)
    if not (isinstance(gpus, int) and gpus >= 1):
        raise ValueError(f"gpus must be a whole number >= 1, got {gpus!r}")
    if not 0 <= workspace_fraction < 1:
        raise ValueError(f"workspace_fraction must be in [0, 1), got {workspace_fraction}")
    kv = inference.model_kv_cache(cfg, context, batch, kv_dtype).total_bytes
    kv_split = 1 if cfg.attention == "mla" else min(gpus, cfg.kv_heads)
    return InferencePlan(cfg.id, gpus, inference.weight_bytes(cfg, weight_dtype) / gpus, kv / kv_split,
                         workspace_fraction * capacity_B(dev),
                         {"device": dev.id, "context": context, "batch": batch, "weight_dtype": weight_dtype,
                          "kv_dtype": kv_dtype, "workspace_fraction": workspace_fraction,
                          "kv_split_ways": kv_split})


def inference_fits(model, dev, gpus: int = 1, **kw) -> bool:
    plan = inference_plan(model, dev, gpus, **kw)
    return plan.total_B <= capacity_B(dev)


# ------------------------------------------------------------------------ command line: python -m x4lib memory-plan

def cli_arguments(p) -> None:
    from x4lib import cli
    p.add_argument("--params", type=cli.number("parameters", 0, 1e15, low_open=True), required=True,
                   help="parameter count N, e.g. 70e9")
    p.add_argument("--gpus", type=cli.number("GPUs", 1, 10_000_000, integer=True), required=True)
    p.add_argument("--zero", type=cli.choice_of("ZeRO stage", ("0", "1", "2", "3")), default="0",
                   help="ZeRO/FSDP stage: 1 shards optimizer states, 2 also gradients, 3 also weights")
    p.add_argument("--optimizer", type=cli.choice_of("optimizer", OPTIMIZER_STATE_BYTES), default="adam")
    p.add_argument("--precision", type=cli.choice_of("precision", PRECISION_BYTES), default="bf16")
    p.add_argument("--tp", type=cli.number("tensor-parallel degree", 1, 100_000, integer=True), default=1)
    p.add_argument("--pp", type=cli.number("pipeline-parallel degree", 1, 100_000, integer=True), default=1)
    p.add_argument("--layers", type=cli.number("layers", 1, 100_000, integer=True))
    p.add_argument("--hidden", type=cli.number("hidden size", 1, 10_000_000, integer=True))
    p.add_argument("--heads", type=cli.number("attention heads", 1, 1_000_000, integer=True),
                   help="attention heads (default: hidden / 128)")
    p.add_argument("--seq", type=cli.number("sequence length", 1, 1e9, integer=True))
    p.add_argument("--micro-batch", type=cli.number("micro-batch", 1, 1e7, integer=True))
    p.add_argument("--recompute", type=cli.choice_of("recompute", RECOMPUTE), default="none")
    p.add_argument("--sequence-parallel", action=argparse.BooleanOptionalAction, default=True,
                   help="activations with sequence parallelism (default), or with tensor parallelism alone "
                        "(--no-sequence-parallel): Korthikanti et al. 2022, Table 2")
    p.add_argument("--flash-attention", action=argparse.BooleanOptionalAction, default=False,
                   help="the framework uses FlashAttention (PyTorch SDPA, Transformer Engine): no s x s score matrix "
                        "kept (Dao et al. 2022); default: the score matrix is kept, as in Korthikanti et al. 2022")
    p.add_argument("--kv-heads", type=cli.number("key/value heads", 1, 1_000_000, integer=True),
                   help="key/value heads (default: --heads)")
    p.add_argument("--ffn", type=cli.number("MLP width", 1, 1e8, integer=True), help="MLP width (default: 4 x hidden)")
    p.add_argument("--mlp", type=cli.choice_of("MLP kind", ("gated", "plain")), default="plain")
    p.add_argument("--dropout", action=argparse.BooleanOptionalAction, default=True,
                   help="the model uses dropout (GPT-style, the default) or not (--no-dropout, Llama-style)")
    p.add_argument("--json", action="store_true",
                   help="machine-readable output (schemas/memory_plan_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    try:
        plan = training_plan(args.params, args.gpus, int(args.zero), args.optimizer, args.precision, args.tp,
                             args.pp, args.layers, args.hidden, args.seq, args.micro_batch, args.recompute,
                             args.heads, sequence_parallel=args.sequence_parallel, kv_heads=args.kv_heads,
                             ffn=args.ffn, gated_mlp=args.mlp == "gated", dropout=args.dropout,
                             flash_attention=args.flash_attention)
    except ValueError as exc:
        raise cli.UsageError(str(exc)) from None
    per = plan.per_gpu_bytes()
    doc = {"per_gpu_bytes": per, "fits": fits(plan.total_B),
           "activations_computed": plan.activations_B is not None, "assumptions": plan.assumptions}
    a = plan.assumptions
    lines = [f"{a['params']:.3g} parameters on {a['gpus']} GPUs (data {a['data_parallel']} x tensor {a['tp']} x "
             f"pipeline {a['pp']}), ZeRO stage {a['zero']}, {a['optimizer']}, {a['precision']}"
             + ("" if a["sequence_parallel"] is None else
                f", activations {'with' if a['sequence_parallel'] else 'without'} sequence parallelism")]
    lines += [f"  {k:<12}{v / 1e9:>12,.2f} GB" for k, v in per.items()]
    if plan.activations_B is None:
        lines.append("  (activations not counted: give --layers, --hidden, --seq and --micro-batch)")
    ok = [d for d, f in doc["fits"].items() if f]
    lines.append(f"fits on: {', '.join(ok) if ok else 'none of the catalog devices'} (GB = 1e9 B; capacity = the "
                 "vendor's memory figure)")
    cli.emit(doc, "\n".join(lines), as_json=args.json)
    return 0
