"""A training-run planner: lay out a dense transformer on n GPUs, predict its step, MFU, days, cost and energy.

    python -m x4lib plan --params N --layers L --hidden H --heads A [--kv-heads K] --seq S
                         --global-batch-tokens B --tokens D --device ID --gpus G [--gpus-per-node 8] [--cluster ID]
                         [--tp --pp --dp --cp --zero --micro-batch --recompute] [--json]

It composes the book's models; no constant is set here:

    memory      per-GPU weights, gradients, optimizer state and activations      x4lib.training.memory.training_plan (ch. 02)
                of the layer the model has, as its framework keeps them (FlashAttention: no score matrix; the 1F1B
                peak of the busiest stage; layers short of an even split on the first and last stages)
                fits when total <= (1 − reserve) · vendor capacity; the reserve (CUDA context, allocator slack,
                embeddings and logits the activation formula leaves out) is memory.inference_plan's workspace share
    compute     6ND at the peak, the layer GEMMs at their achievable rate, causal     x4lib.training.mfu.compute_terms (ch. 00,
                attention, element-wise traffic, recomputation                       on x4lib.compute.matmul, Lab 00)
    comm        every collective of the layout (DP/ZeRO, TP, CP, PP) with the part    x4lib.training.parallelism.estimate_step
                no compute window hides, on the cluster's links                       (ch. 03) on x4lib.network.collectives
                                                                                      (Lab 01's NCCL model)
    bubble      (pp − 1)/m of the per-micro-batch critical path (work + exposed TP, CP and PP traffic), 1F1B
    stage       with L layers over pp stages that do not divide evenly, every stage runs at the pace of the
                slowest: the work is scaled by ⌈L/pp⌉·pp/L
    step        t = compute + exposed comm + bubble + other (element-wise traffic)          [s]
    MFU         6·N·B / (n · P · t)     (the book's 6ND convention; ``mfu_with_attention`` adds PaLM's attention)
    wall clock  D / (B/t) / goodput, goodput from Daly's checkpoint interval on the cluster's MTBF
                (x4lib.datacenter.reliability, x4lib.datacenter.storage, ch. 04: Llama 3's failure rate per GPU)
    cost        GPU-hours · the device's dated on-demand rental price (x4lib.datacenter.facility) when one is stored
    energy      n · server power per GPU (TDP where no server figure is published) · load fraction · PUE · wall
                clock (runcost's rent-mode arithmetic, ch. 04)

The search enumerates tensor (divisors of the node size that divide the heads), pipeline, context and data
degrees, ZeRO stages 0-3 and micro-batches, keeps the layouts that fit, takes for each the least recomputation
that fits (more recomputation only adds time), and returns them fastest first. Degrees given on the command line
are held fixed; all of them given evaluates one layout. Used in: book/capstone-8-to-1024.md.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from types import MappingProxyType
from typing import Iterable, Mapping

from x4lib.network import clusters
from x4lib.training import memory, mfu, parallelism
from x4lib.catalog import specs

METHOD_VERSION = 1
RECOMPUTE = memory.RECOMPUTE
ZERO_STAGES = (0, 1, 2, 3)
MICRO_BATCHES = (1, 2, 4, 8)
CP_DEGREES = (1, 2, 4, 8)
#: planning reserve: the share of device memory kept free, memory.inference_plan's workspace default
RESERVE = 0.1


class PlanError(ValueError):
    """An impossible plan: the message names the constraint (exit 2 on the command line)."""


@dataclasses.dataclass(frozen=True)
class Model:
    """A dense decoder: ``params`` counts every parameter (the N of 6ND); ``ffn`` the MLP width; ``gated_mlp``
    SwiGLU (3 matrices) or a plain GELU MLP (2)."""
    params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    seq: int
    ffn: int
    gated_mlp: bool = True
    name: str = "model"
    #: what the framework keeps for the backward pass (x4lib.training.memory, issue 30): FlashAttention (no score
    #: matrix) and no dropout are the defaults of Megatron-Core with Transformer Engine and of nanotron
    flash_attention: bool = True
    dropout: bool = False

    def __post_init__(self):
        if not (math.isfinite(self.params) and self.params > 0):
            raise PlanError(f"params must be > 0, got {self.params}")
        for f in ("layers", "hidden", "heads", "kv_heads", "seq", "ffn"):
            v = getattr(self, f)
            if int(v) != v or v < 1:
                raise PlanError(f"{f} must be a whole number >= 1, got {v}")
        if self.hidden % self.heads:
            raise PlanError(f"hidden size {self.hidden} does not divide into {self.heads} heads")
        if self.heads % self.kv_heads:
            raise PlanError(f"{self.heads} heads do not divide into {self.kv_heads} key/value heads")


def default_ffn(params: float, layers: int, hidden: int, heads: int, kv_heads: int, gated: bool = True) -> int:
    """An MLP width that makes the layers hold ``params`` (embeddings ignored, so a little wide), rounded to 128:
    gated f = (N/L − 2h² − 2h·h_kv)/(3h); plain f = (N/L − 2h² − 2h·h_kv)/(2h). Used when --ffn is not given."""
    kv = hidden * kv_heads // heads
    rest = params / layers - 2 * hidden * hidden - 2 * hidden * kv
    f = rest / ((3 if gated else 2) * hidden)
    if f <= 0:
        raise PlanError(f"{params:.3g} parameters are too few for {layers} layers of width {hidden}")
    return max(128, int(round(f / 128)) * 128)


@dataclasses.dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    dp: int
    cp: int
    zero: int
    micro_batch: int
    recompute: str

    @property
    def n_gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def label(self) -> str:
        s = f"TP{self.tp} PP{self.pp} DP{self.dp}"
        if self.cp > 1:
            s += f" CP{self.cp}"
        return s + f" ZeRO-{self.zero} mb{self.micro_batch} rc:{self.recompute}"


@dataclasses.dataclass(frozen=True)
class Plan:
    """One layout evaluated (SI inside)."""
    model: Model
    layout: Layout
    device: specs.Device
    cluster: str
    global_batch_tokens: int
    memory: memory.MemoryPlan
    capacity_B: float
    compute_s: float
    exposed_comm_s: float
    bubble_s: float
    other_s: float
    ideal_s: float
    matmul_efficiency: float
    comm_by_strategy: Mapping
    stage_imbalance: float

    @property
    def usable_B(self) -> float:
        return self.capacity_B * (1 - RESERVE)

    @property
    def fits(self) -> bool:
        return self.memory.total_B <= self.usable_B

    @property
    def step_s(self) -> float:
        return self.compute_s + self.exposed_comm_s + self.bubble_s + self.other_s

    @property
    def mfu(self) -> float:
        """6·N·B / (n·P·t): the book's 6ND convention."""
        return self.ideal_s / self.step_s

    @property
    def mfu_with_attention(self) -> float:
        m = self.model
        return self.mfu * (1 + mfu.attention_share_for(m.params, m.layers, m.hidden, m.seq))

    @property
    def tokens_per_s(self) -> float:
        return self.global_batch_tokens / self.step_s

    def breakdown(self) -> dict:
        return {"compute": self.compute_s, "exposed_comm": self.exposed_comm_s, "bubble": self.bubble_s,
                "other": self.other_s}

    @property
    def limit(self) -> str:
        """What costs most after the matmuls themselves: the largest of exposed comm, bubble and other."""
        rest = {"communication": self.exposed_comm_s, "pipeline bubble": self.bubble_s,
                "element-wise work": self.other_s}
        return max(rest, key=rest.get)


# ------------------------------------------------------------------------------------------------ the cluster

def cluster_for(dev: specs.Device, gpus: int, gpus_per_node: int = 8,
                cluster_id: str | None = None) -> clusters.Cluster:
    """The cluster of ``gpus`` GPUs: the preset ``cluster_id`` (or the preset of ``device``; else the H100 preset's
    network with the device's own scale-up bandwidth from the catalog and its NCCL architecture), resized to
    ⌈gpus/gpus_per_node⌉ nodes."""
    if cluster_id:
        try:
            base = parallelism.cluster(cluster_id)
        except LookupError as exc:
            raise PlanError(str(exc).strip("'\"")) from None
    else:
        same = [c for c in clusters.load()["clusters"].values() if c.device == dev.id]
        if same:
            base = same[0]
        else:
            base = clusters.get(mfu.TP_CLUSTER)
            if "scaleup_bw_gb_s_per_direction" not in dev.values:
                raise PlanError(f"device {dev.id} has no scale-up bandwidth in the catalog: give --cluster")
            try:
                arch = clusters.arch_of(dev.id)
            except clusters.ClusterError:
                raise PlanError(f"device {dev.id} has no NCCL architecture (the collective model is NCCL's): "
                                f"give --cluster") from None
            intra = dataclasses.replace(base.intra, bw_Bps=dev.si("scaleup_bw_gb_s_per_direction"),
                                        name=f"scale-up link of {dev.id} (catalog)")
            base = dataclasses.replace(base, id=f"{dev.id}-on-{base.id}", intra=intra, arch=arch, device=dev.id,
                                       name=f"{dev.id} with the network of {base.id}")
    if gpus > gpus_per_node and gpus % gpus_per_node:
        raise PlanError(f"{gpus} GPUs do not fill whole nodes of {gpus_per_node} GPUs")
    nodes, per = (1, gpus) if gpus <= gpus_per_node else (gpus // gpus_per_node, gpus_per_node)
    return dataclasses.replace(base, nodes=nodes, gpus_per_node=per, id=f"{nodes}x{per} with the links of {base.id}")


# ------------------------------------------------------------------------------------------------ one layout

@functools.lru_cache(maxsize=4096)
def _compute(run: mfu.Run, dev: specs.Device, dtype: str) -> mfu.ComputeTerms:
    return mfu.compute_terms(run, dev, dtype)


def memory_plan(model: Model, lay: Layout, global_batch_tokens: int) -> memory.MemoryPlan:
    """x4lib.training.memory.training_plan of the layout (BF16 mixed precision, Adam) for the layer the model has
    (its K/V heads, MLP, dropout, and FlashAttention or not), with the 1F1B peak of the busiest stage over the
    step's micro-batches; layers that do not divide into the stages go short on the first and last."""
    micro = max(1, global_batch_tokens // model.seq // (lay.dp * lay.micro_batch))
    return memory.training_plan(model.params, lay.n_gpus, lay.zero, "adam", "bf16", lay.tp, lay.pp, model.layers,
                                model.hidden, model.seq, lay.micro_batch, lay.recompute, model.heads, cp=lay.cp,
                                kv_heads=model.kv_heads, ffn=model.ffn, gated_mlp=model.gated_mlp,
                                dropout=model.dropout, flash_attention=model.flash_attention,
                                micro_batches=micro, uneven_stages=True)


def check(model: Model, lay: Layout, gpus: int, global_batch_tokens: int) -> None:
    """Raise PlanError naming the first constraint the layout breaks."""
    if lay.n_gpus != gpus:
        raise PlanError(f"tp x pp x dp x cp = {lay.tp} x {lay.pp} x {lay.dp} x {lay.cp} = {lay.n_gpus}, "
                        f"but --gpus is {gpus}")
    if model.heads % lay.tp:
        raise PlanError(f"tp = {lay.tp} does not divide the {model.heads} attention heads")
    if lay.pp > model.layers:
        raise PlanError(f"pp = {lay.pp} exceeds the model's {model.layers} layers")
    if model.seq % lay.cp:
        raise PlanError(f"cp = {lay.cp} does not divide the sequence length {model.seq}")
    seqs = global_batch_tokens // model.seq
    if seqs % (lay.dp * lay.micro_batch):
        raise PlanError(f"the global batch of {seqs} sequences does not split into dp = {lay.dp} replicas of "
                        f"micro-batches of {lay.micro_batch}")
    if lay.zero not in ZERO_STAGES or lay.recompute not in RECOMPUTE:
        raise PlanError(f"zero must be 0-3 and recompute one of {', '.join(RECOMPUTE)}")


def evaluate(model: Model, lay: Layout, dev: specs.Device, global_batch_tokens: int, gpus_per_node: int = 8,
             cluster_id: str | None = None, dtype: str = "bf16", cluster: clusters.Cluster | None = None,
             mem: memory.MemoryPlan | None = None) -> Plan:
    """The step of one layout (module docstring). Raises PlanError for a layout that breaks a constraint."""
    check(model, lay, lay.n_gpus, global_batch_tokens)
    clu = cluster or cluster_for(dev, lay.n_gpus, gpus_per_node, cluster_id)
    mem = mem or memory_plan(model, lay, global_batch_tokens)
    stage_layers = math.ceil(model.layers / lay.pp)
    imbalance = stage_layers * lay.pp / model.layers
    run = mfu.Run(params=model.params, layers=stage_layers * lay.pp, d_model=model.hidden, ffn=model.ffn,
                  heads=model.heads, kv_heads=model.kv_heads, seq_len=model.seq,
                  global_batch_tokens=global_batch_tokens, tp=lay.tp, pp=lay.pp, dp=lay.dp,
                  microbatch_sequences=lay.micro_batch, cp=lay.cp, recompute=lay.recompute,
                  gated_mlp=model.gated_mlp)
    ct = _compute(run, dev, dtype)
    # the padded run already times ceil(L/pp)·pp layers for attention and element-wise work; the GEMM term is
    # 6·N·B at e_mm, so only it needs the slowest stage's share
    matmul = ct.matmul_s * imbalance
    rec = ct.recompute_s * (imbalance if lay.recompute == "full" else 1.0)
    compute = matmul + ct.attention_s + rec
    other = ct.elementwise_s
    work = compute + other
    pm = parallelism.Model(id="plan", name=model.name, params=model.params, layers=model.layers,
                           hidden=model.hidden, heads=model.heads, kv_heads=model.kv_heads, ffn=model.ffn)
    pl = parallelism.Layout(dp=lay.dp, tp=lay.tp, pp=lay.pp, cp=lay.cp, zero=lay.zero, micro_batch=lay.micro_batch,
                            seq=model.seq, global_batch_seqs=global_batch_tokens // model.seq)
    # chapter 03's estimate takes a compute efficiency; give it the one that reproduces this work, so that its
    # overlap windows are this step's forward and backward passes
    peak = dev.peak_flop_per_s(dtype)
    eta = parallelism.step_flop(pm, pl) / (lay.n_gpus * peak * work)
    est = parallelism.estimate_step(pm, clu, pl, efficiency=min(1.0, eta), dtype=dtype, dev=dev)
    by = {}
    for c in est.comms:
        by[c.strategy] = by.get(c.strategy, 0.0) + c.exposed_s
    critical = sum(v for k, v in by.items() if k in ("tp", "cp", "pp", "ep"))
    m = pl.micro_batches
    bubble = (work + critical) * (lay.pp - 1) / m
    return Plan(model, lay, dev, clu.id, global_batch_tokens, mem, memory.capacity_B(dev),
                compute, est.exposed_comm_s, bubble, other, ct.ideal_s, ct.matmul_efficiency,
                MappingProxyType(by), imbalance)


# ------------------------------------------------------------------------------------------------ the search

def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidates(model: Model, gpus: int, global_batch_tokens: int, gpus_per_node: int = 8,
               fixed: Mapping | None = None) -> Iterable[tuple[int, int, int, int, int, int]]:
    """(tp, pp, dp, cp, zero, micro_batch) that break no divisibility rule, with ``fixed`` degrees held."""
    fx = {k: v for k, v in (fixed or {}).items() if v is not None}
    seqs = global_batch_tokens // model.seq
    tps = [fx["tp"]] if "tp" in fx else [t for t in _divisors(min(gpus_per_node, gpus)) if model.heads % t == 0]
    cps = [fx["cp"]] if "cp" in fx else [c for c in CP_DEGREES if model.seq % c == 0]
    zs = [fx["zero"]] if "zero" in fx else list(ZERO_STAGES)
    mbs = [fx["micro_batch"]] if "micro_batch" in fx else list(MICRO_BATCHES)
    for tp in tps:
        for cp in cps:
            if gpus % (tp * cp):
                continue
            rest = gpus // (tp * cp)
            pps = [fx["pp"]] if "pp" in fx else [p for p in _divisors(rest) if p <= model.layers]
            for pp in pps:
                if rest % pp:
                    continue
                dp = rest // pp
                if "dp" in fx and fx["dp"] != dp:
                    continue
                for z in zs:
                    if z > 0 and dp * cp == 1:
                        continue  # nothing to shard over
                    for mb in mbs:
                        if seqs % (dp * mb):
                            continue
                        yield tp, pp, dp, cp, z, mb


def search(model: Model, dev: specs.Device, gpus: int, global_batch_tokens: int, gpus_per_node: int = 8,
           cluster_id: str | None = None, fixed: Mapping | None = None, dtype: str = "bf16",
           top: int | None = None) -> list[Plan]:
    """Every layout that fits, fastest first (module docstring). ``fixed`` holds degrees (tp, pp, dp, cp, zero,
    micro_batch, recompute) the caller chose. An empty list means nothing fits."""
    fx = dict(fixed or {})
    clu = cluster_for(dev, gpus, gpus_per_node, cluster_id)
    rcs = [fx["recompute"]] if fx.get("recompute") else list(RECOMPUTE)
    usable = memory.capacity_B(dev) * (1 - RESERVE)
    plans = []
    for tp, pp, dp, cp, z, mb in candidates(model, gpus, global_batch_tokens, gpus_per_node, fx):
        for rc in rcs:  # the least recomputation that fits
            lay = Layout(tp, pp, dp, cp, z, mb, rc)
            mem = memory_plan(model, lay, global_batch_tokens)
            if mem.total_B <= usable:
                plans.append(evaluate(model, lay, dev, global_batch_tokens, gpus_per_node, cluster_id, dtype,
                                      cluster=clu, mem=mem))
                break
    plans.sort(key=lambda p: p.step_s)
    return plans[:top] if top else plans


def min_gpus_to_fit(model: Model, dev: specs.Device, global_batch_tokens: int, gpus_per_node: int = 8,
                    counts: Iterable[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)) -> int | None:
    """The smallest count in ``counts`` at which some layout fits (memory alone, no timing)."""
    usable = memory.capacity_B(dev) * (1 - RESERVE)
    for g in counts:
        if g > gpus_per_node and g % gpus_per_node:
            continue
        for tp, pp, dp, cp, z, mb in candidates(model, g, global_batch_tokens, gpus_per_node):
            if memory_plan(model, Layout(tp, pp, dp, cp, z, mb, "full"), global_batch_tokens).total_B <= usable:
                return g
    return None


# ------------------------------------------------------------------------------------------------ the run

@dataclasses.dataclass(frozen=True)
class RunTotals:
    tokens: float
    wall_clock_s: float
    gpu_hours: float
    rental_usd: float | None
    usd_per_gpu_hour: float | None
    power_W: float
    energy_J: float
    goodput: float
    assumptions: Mapping

    @property
    def wall_clock_days(self) -> float:
        return self.wall_clock_s / 86400.0


def run_totals(plan: Plan, tokens: float, usd_per_gpu_hour: float | None = None) -> RunTotals:
    """Days, GPU-hours, rent, power and energy of training on ``tokens`` with ``plan`` (module docstring)."""
    return totals(plan.device, plan.layout.n_gpus, plan.model.params, plan.tokens_per_s, tokens, usd_per_gpu_hour)


def totals(dev: specs.Device, n: int, params: float, tokens_per_s: float, tokens: float,
           usd_per_gpu_hour: float | None = None) -> RunTotals:
    """:func:`run_totals` from a throughput [tokens/s] of ``n`` GPUs training a model of ``params`` parameters (any
    step model's: the capstone passes the stack model's, x4lib.training.stack)."""
    from x4lib.datacenter import facility as datacenter, reliability, runcost, storage, tco
    from x4lib.training import economics
    if not (math.isfinite(tokens) and tokens > 0):
        raise PlanError(f"tokens must be > 0, got {tokens}")
    d = {**tco.defaults(dev.id), **runcost.defaults()}
    ideal = tokens / tokens_per_s
    ck = reliability.checkpoint_plan(reliability.cluster_mtbf_s(d["failure_rate_per_gpu_s"], n),
                                     storage.checkpoint_bytes(params) / d["checkpoint_write_Bps"],
                                     d["restart_s"])
    wall = ideal / ck.goodput
    gpu_h = n * wall / 3600.0
    price_note = "given"
    if usd_per_gpu_hour is None:
        try:
            row = datacenter.rental_price(dev.id)
            usd_per_gpu_hour, price_note = row["value"], f"{row['provider']} on-demand, {row['date']} ({row['source']})"
        except LookupError:
            price_note = f"no dated rental price for {dev.id} is stored: give --usd-per-gpu-hour"
    scope = "server" if "server_power_w_per_gpu" in dev.values else "gpu"
    per_gpu_W = dev.si(economics.POWER_SCOPES[scope][0])
    power = n * per_gpu_W * d["load_fraction"] * d["pue"]
    return RunTotals(tokens, wall, gpu_h, None if usd_per_gpu_hour is None else gpu_h * usd_per_gpu_hour,
                     usd_per_gpu_hour, power, power * wall, ck.goodput, MappingProxyType({
                         "rental_price": price_note, "power_scope": scope, "power_w_per_gpu": per_gpu_W,
                         "load_fraction": d["load_fraction"], "pue": d["pue"], "goodput": ck.goodput,
                         "mtbf_h": ck.mtbf_s / 3600.0, "checkpoint_interval_s": ck.interval_s}))


def to_json(plan: Plan, totals: RunTotals, searched: int | None = None) -> dict:
    """The ``plan --json`` document (x4lib/schemas/plan_output.schema.json); display units only here."""
    mp = plan.memory.per_gpu_bytes()
    m = plan.model
    return {
        "layout": plan.layout.to_json(),
        "memory_per_gpu_gb": plan.memory.total_B / 1e9,
        "memory_breakdown_gb": {k: v / 1e9 for k, v in mp.items() if k != "total"},
        "usable_memory_gb": plan.usable_B / 1e9,
        "step_time_s": plan.step_s,
        "breakdown_s": plan.breakdown(),
        "exposed_comm_by_strategy_s": dict(plan.comm_by_strategy),
        "mfu_predicted": plan.mfu,
        "mfu_with_attention": plan.mfu_with_attention,
        "matmul_efficiency": plan.matmul_efficiency,
        "limit": plan.limit,
        "tokens_per_s": plan.tokens_per_s,
        "wall_clock_days": totals.wall_clock_days,
        "gpu_hours": totals.gpu_hours,
        "rental_cost_usd": totals.rental_usd,
        "power_kw": totals.power_W / 1e3,
        "energy_mwh": totals.energy_J / 3.6e9,
        "layouts_that_fit": searched,
        "assumptions": {
            "method_version": METHOD_VERSION, "device": plan.device.id, "cluster": plan.cluster, "dtype": "bf16",
            "n_gpus": plan.layout.n_gpus, "params": m.params, "layers": m.layers, "hidden": m.hidden,
            "heads": m.heads, "kv_heads": m.kv_heads, "ffn": m.ffn, "gated_mlp": m.gated_mlp, "seq": m.seq,
            "global_batch_tokens": plan.global_batch_tokens, "tokens": totals.tokens,
            "mfu_convention": "6·N·tokens/s over n·dense BF16 peak (attention FLOP not counted)",
            "memory_reserve": RESERVE, "stage_imbalance": plan.stage_imbalance,
            "usd_per_gpu_hour": totals.usd_per_gpu_hour, **dict(totals.assumptions),
        },
    }


# ------------------------------------------------------------------------ command line: python -m x4lib plan

def cli_arguments(p) -> None:
    from x4lib import cli
    p.add_argument("--params", type=cli.number("parameters", 0, 1e15, low_open=True), required=True)
    p.add_argument("--layers", type=cli.number("layers", 1, 100_000, integer=True), required=True)
    p.add_argument("--hidden", type=cli.number("hidden size", 1, 10_000_000, integer=True), required=True)
    p.add_argument("--heads", type=cli.number("attention heads", 1, 1_000_000, integer=True), required=True)
    p.add_argument("--kv-heads", type=cli.number("key/value heads", 1, 1_000_000, integer=True),
                   help="key/value heads (default: --heads, i.e. multi-head attention)")
    p.add_argument("--ffn", type=cli.number("MLP width", 1, 1e8, integer=True),
                   help="MLP width (default: the width that makes the layers hold --params)")
    p.add_argument("--mlp", type=cli.choice_of("MLP kind", ("gated", "plain")), default="gated")
    p.add_argument("--seq", type=cli.number("sequence length", 1, 1e8, integer=True), required=True)
    p.add_argument("--global-batch-tokens", type=cli.number("global batch", 1, 1e12, integer=True), required=True)
    p.add_argument("--tokens", type=cli.number("training tokens", 0, 1e16, low_open=True), required=True)
    p.add_argument("--device", required=True, help="a catalog id, e.g. h100-sxm")
    p.add_argument("--gpus", type=cli.number("GPUs", 1, 10_000_000, integer=True), required=True)
    p.add_argument("--gpus-per-node", type=cli.number("GPUs per node", 1, 1024, integer=True), default=8)
    p.add_argument("--cluster", help="a cluster preset for the links (default: the device's, or the H100 preset's "
                                     "network with the device's scale-up bandwidth)")
    for deg in ("tp", "pp", "dp", "cp"):
        p.add_argument(f"--{deg}", type=cli.number(f"{deg} degree", 1, 10_000_000, integer=True))
    p.add_argument("--zero", type=cli.choice_of("ZeRO stage", ("0", "1", "2", "3")))
    p.add_argument("--micro-batch", type=cli.number("micro-batch", 1, 1e6, integer=True))
    p.add_argument("--recompute", type=cli.choice_of("recompute", RECOMPUTE))
    p.add_argument("--usd-per-gpu-hour", type=cli.number("price per GPU-hour", 0, 1e4),
                   help="rental price (default: the device's dated on-demand snapshot, where stored)")
    p.add_argument("--calibration", metavar="RUN_DIR",
                   help="a Lab 02 run (book/runs/lab02/<id>): show the step with its measured rates beside this plan "
                        "(x4lib.training.calibration)")
    p.add_argument("--json", action="store_true", help="machine-readable output (schemas/plan_output.schema.json)")


def _text(doc: dict) -> str:
    a, lay, b = doc["assumptions"], doc["layout"], doc["breakdown_s"]
    rent = "n/a (no stored price)" if doc["rental_cost_usd"] is None else f"{doc['rental_cost_usd'] / 1e6:,.2f} M USD"
    lines = [f"{a['params']:.3g} parameters on {a['n_gpus']} x {a['device']} ({a['cluster']})",
             f"layout       TP {lay['tp']} x PP {lay['pp']} x DP {lay['dp']} x CP {lay['cp']}, ZeRO-{lay['zero']}, "
             f"micro-batch {lay['micro_batch']}, recompute {lay['recompute']}",
             f"memory       {doc['memory_per_gpu_gb']:.1f} GB per GPU of {doc['usable_memory_gb']:.1f} GB usable",
             f"step         {doc['step_time_s']:.3f} s = compute {b['compute']:.3f} + exposed comm "
             f"{b['exposed_comm']:.3f} + bubble {b['bubble']:.3f} + other {b['other']:.3f}",
             f"MFU          {doc['mfu_predicted']:.1%} (6ND convention; {doc['mfu_with_attention']:.1%} counting "
             f"attention); after the matmuls, the {doc['limit']} costs most",
             f"run          {doc['tokens_per_s']:,.0f} tokens/s, {doc['wall_clock_days']:.1f} days, "
             f"{doc['gpu_hours']:,.0f} GPU-hours, rent {rent}, {doc['energy_mwh']:,.0f} MWh"]
    if doc.get("layouts_that_fit"):
        lines.append(f"(best of {doc['layouts_that_fit']} layouts that fit)")
    return "\n".join(lines)


def cli_main(args) -> int:
    from x4lib import cli
    try:
        dev = specs.get(args.device)  # the one place the id becomes a device
        kv = args.kv_heads or args.heads
        gated = args.mlp == "gated"
        ffn = args.ffn or default_ffn(args.params, args.layers, args.hidden, args.heads, kv, gated)
        model = Model(args.params, args.layers, args.hidden, args.heads, kv, args.seq, ffn, gated)
        if args.global_batch_tokens % args.seq:
            raise PlanError(f"the global batch of {args.global_batch_tokens} tokens is not whole sequences of "
                            f"{args.seq}")
        fixed = {"tp": args.tp, "pp": args.pp, "dp": args.dp, "cp": args.cp,
                 "zero": None if args.zero is None else int(args.zero), "micro_batch": args.micro_batch,
                 "recompute": args.recompute}
        given = {k: v for k, v in fixed.items() if v is not None}
        inner = math.prod(given.get(k, 1) for k in ("tp", "pp", "dp", "cp"))
        if args.gpus % inner:
            raise PlanError(f"the degrees given ({' x '.join(f'{k} {given[k]}' for k in ('tp', 'pp', 'dp', 'cp') if k in given)}"
                            f" = {inner}) do not divide {args.gpus} GPUs")
        if all(k in given for k in ("tp", "pp", "dp", "cp")) and inner != args.gpus:
            raise PlanError(f"tp x pp x dp x cp = {inner}, but --gpus is {args.gpus}")
        if all(k in given for k in ("tp", "pp", "cp")) and "dp" not in given:
            given["dp"] = fixed["dp"] = args.gpus // inner
        if all(k in given for k in ("tp", "pp", "dp", "cp", "zero", "micro_batch", "recompute")):
            plan = evaluate(model, Layout(**{k: given[k] for k in ("tp", "pp", "dp", "cp", "zero", "micro_batch",
                                                                   "recompute")}),
                            dev, args.global_batch_tokens, args.gpus_per_node, args.cluster)
            if not plan.fits:
                raise PlanError(f"layout {plan.layout.label()} needs {plan.memory.total_B / 1e9:.1f} GB per GPU; "
                                f"{dev.id} has {plan.usable_B / 1e9:.1f} GB usable")
            n = None
        else:
            plans = search(model, dev, args.gpus, args.global_batch_tokens, args.gpus_per_node,
                           args.cluster, fixed)
            if not plans and not any(candidates(model, args.gpus, args.global_batch_tokens, args.gpus_per_node,
                                                fixed)):
                raise PlanError(f"no layout of {args.gpus} GPUs with {', '.join(f'{k}={v}' for k, v in given.items())}"
                                f" splits {args.global_batch_tokens // args.seq} sequences of {args.seq} tokens "
                                f"into whole micro-batches with tp dividing the {args.heads} heads")
            if not plans:
                least = min_gpus_to_fit(model, dev, args.global_batch_tokens, args.gpus_per_node)
                hint = f"; the smallest count that fits is {least}" if least else ""
                if least and least <= args.gpus and given:  # the count would fit: the settings given do not
                    free = search(model, dev, args.gpus, args.global_batch_tokens, args.gpus_per_node, args.cluster,
                                  {k: v for k, v in fixed.items() if k in ("tp", "pp", "dp", "cp") and v is not None},
                                  top=1) or search(model, dev, args.gpus, args.global_batch_tokens,
                                                   args.gpus_per_node, args.cluster, {}, top=1)
                    count = f"{args.gpus} GPU fits" if args.gpus == 1 else f"{args.gpus} GPUs fit"
                    hint = (f"; {count} with other settings ({free[0].layout.label()}), so change what was given"
                            if free else hint)
                raise PlanError(f"no layout of {args.gpus} x {args.device} fits the model in memory "
                                f"({', '.join(f'{k}={v}' for k, v in given.items()) or 'any degrees'}){hint}")
            plan, n = plans[0], len(plans)
        totals = run_totals(plan, args.tokens, args.usd_per_gpu_hour)
    except (PlanError, ValueError, LookupError) as exc:
        raise cli.UsageError(str(exc).strip("'\"")) from None
    doc, text = to_json(plan, totals, n), None
    if getattr(args, "calibration", None):  # Lab 02: the measured rates beside the plan
        from x4lib.training import calibration
        try:
            _, text, doc["calibrated"] = calibration.apply_to_cli(plan, args.calibration)
        except calibration.CalibrationError as exc:
            raise cli.UsageError(str(exc)) from None
    cli.emit(doc, _text(doc) + ("\n" + text if text else ""), as_json=args.json)
    return 0


# ------------------------------------------------------------------------------------------------ validation

RUNS_PATH = specs.DATA_DIR / "training_runs.yaml"
RUNS_SCHEMA = specs.DATA_DIR.parent / "schemas" / "training_runs.schema.json"


class RunsDataError(ValueError):
    """training_runs.yaml breaks a rule (a broken data file of the book: exit 1)."""
    exit_code = 1


@functools.lru_cache(maxsize=2)
def published_runs(path=RUNS_PATH) -> tuple:
    """The runs of training_runs.yaml, validated (JSON Schema, finite numbers, catalog devices, cluster presets,
    degrees that multiply to the GPU count)."""
    from pathlib import Path
    name = Path(path).name
    doc = specs.load_document(path, RUNS_SCHEMA, RunsDataError)
    for r in doc["runs"]:
        where = f"{name}: {r['id']}"
        try:
            specs.get(r["device"])
            parallelism.cluster(r["cluster"])
        except LookupError as exc:
            raise RunsDataError(f"{where}: {exc}") from None
        lay = r["layout"]
        if lay["tp"] * lay["pp"] * lay["dp"] * lay["cp"] != r["gpus"]:
            raise RunsDataError(f"{where}: tp x pp x dp x cp is not the {r['gpus']} GPUs")
        for f in r["not_stated"]:
            if lay[f] is not None:
                raise RunsDataError(f"{where}: layout.{f} is listed as not stated but has a value")
    return tuple(doc["runs"])


def run_model(r: Mapping) -> Model:
    """The run's model, with what its framework keeps in memory (FlashAttention, dropout) from its stack in
    x4lib/data/ground_truth.yaml (``published_stacks``)."""
    from x4lib.training import stack as stk
    m = r["model"]
    st = stk.stack(stk.document()["published_stacks"][r["id"]])
    return Model(m["params"], m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["seq"], m["ffn"],
                 m["mlp"] == "gated", r["id"], flash_attention=st.flash_attention, dropout=st.dropout)


def published_tokens_per_s(r: Mapping) -> float:
    """The run's throughput in tokens/s, from what it publishes (training_runs.yaml header: conventions).
    A utilisation is turned back into tokens/s with the FLOP per token of its own convention."""
    pub, m, lay = r["published"], r["model"], r["layout"]
    v, conv, n = pub["value"], pub["convention"], r["gpus"]
    peak = specs.get(r["device"]).peak_flop_per_s("bf16")
    L, h, s, V = m["layers"], m["hidden"], m["seq"], m["vocab"]
    if conv == "tokens_per_s":
        return v
    if conv == "tokens_per_s_per_gpu":
        return v * n
    if conv == "iteration_time":
        return lay["global_batch_tokens"] / v
    if conv == "korthikanti_eq7":
        flop = 72 * L * h * h * (1 + s / (6 * h) + V / (12 * h * L))
    else:  # palm_attention
        flop = 6 * m["params"] + 12 * L * h * s
    return v / 100 * n * peak / flop


def published_mfu(r: Mapping) -> float:
    """The run's MFU in the book's convention: 6·N·tokens/s / (n · dense BF16 peak of the catalog device)."""
    peak = specs.get(r["device"]).peak_flop_per_s("bf16")
    return 6 * r["model"]["params"] * published_tokens_per_s(r) / (r["gpus"] * peak)


@dataclasses.dataclass(frozen=True)
class Check:
    run: Mapping
    plan: Plan | None
    published_mfu: float
    error: str = ""

    @property
    def predicted_mfu(self) -> float | None:
        return self.plan.mfu if self.plan else None

    @property
    def residual_pp(self) -> float | None:
        """Predicted − published, in percentage points."""
        return None if self.plan is None else (self.plan.mfu - self.published_mfu) * 100


def check_run(r: Mapping) -> Check:
    """The planner on the run's published layout: stated degrees held, unstated ones chosen by the search."""
    model, lay = run_model(r), r["layout"]
    fixed = {k: lay[k] for k in ("tp", "pp", "dp", "cp", "zero", "micro_batch", "recompute")}
    try:
        plans = search(model, specs.get(r["device"]), r["gpus"], lay["global_batch_tokens"], 8, r["cluster"], fixed)
    except PlanError as exc:
        return Check(r, None, published_mfu(r), str(exc))
    if not plans:  # the published layout does not fit our memory model: time it anyway, say so
        layout = Layout(**{k: (v if v is not None else {"zero": 1, "micro_batch": 1, "recompute": "full"}[k])
                           for k, v in fixed.items()})
        p = evaluate(model, layout, specs.get(r["device"]), lay["global_batch_tokens"], 8, r["cluster"])
        return Check(r, p, published_mfu(r), "does not fit the memory model")
    return Check(r, plans[0], published_mfu(r))


def validation() -> list[Check]:
    return [check_run(r) for r in published_runs()]
