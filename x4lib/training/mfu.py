"""Where the peak goes in a training run: an MFU budget computed term by term, for one model, layout and cluster.

Per optimizer step of B tokens on n accelerators of dense peak P [FLOP/s] (everything per GPU, in seconds):

    ideal          t_ideal = 6·N·B / (n·P)                        the 6ND work at the peak (Kaplan et al. 2020)
    matmuls        t_mm    = t_ideal / e_mm                       e_mm: x4lib.compute.matmul on the layer's GEMM shapes
                                                                  (forward, and the two backward GEMMs of each)
    attention      t_att   = (12·L·d·T · B/2) / (n·P·e_att)      PaLM's 12·L·d·T FLOP per token (Chowdhery et
                                                                  al. 2022, App. B), halved by the causal mask
    elementwise    t_el    = 3·(a·d + b·f)·2 B · L·B / (n·W)       norms, residuals, SwiGLU at the memory
                                                                  bandwidth W (forward traffic, backward twice it)
    tensor-par.    t_tp    = 4·(L/pp)·mb · t_allreduce(s·d·2 B)   4 all-reduces per layer and microbatch
                                                                  (Narayanan et al. 2021), not overlapped
    bubble         (t_mm + t_att + t_el + t_tp) · (pp−1)/mb       1F1B pipeline (Narayanan et al. 2021)
    data-parallel  reduce-scatter of the gradients and all-gather of the parameters over dp ranks
                   (x4lib.network.collectives); exposed only where longer than the window that hides it: the last
                   microbatch's backward pass
    failures       lost share = interruptions per GPU-hour × n × (time lost per interruption), from Llama 3's
                   54-day snapshot (at most 10 % lost over 466 interruptions on 16,384 GPUs)

    MFU = t_ideal / t_step, with t_step = (sum of the terms) / (1 − lost share)

Context parallelism (``cp``) splits each sequence over cp GPUs (the GEMMs see s/cp rows); recomputation adds the
forward pass again (full) or the attention core's forward (selective); a plain GELU MLP has two matrices where
SwiGLU has three. :func:`compute_terms` gives the compute terms alone and :func:`lost_share` the failures term,
for the training-run planner (x4lib.training.planner, book/capstone-8-to-1024.md).

MFU here counts only the 6ND model FLOP (the book's convention for C = 6ND); PaLM and Llama 3 count attention
FLOP too: :attr:`Budget.mfu_with_attention` gives that convention. Used in: book/00-motivation.md.
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Mapping

from x4lib.training import economics
from x4lib.catalog import specs

TP_CLUSTER = "2x8-h100-ib400"
RECOMPUTE = ("none", "selective", "full")  # as x4lib.training.memory  # the preset whose links (NVLink 4 + NVSwitch, 400 Gb/s NDR per GPU) the run uses


@dataclasses.dataclass(frozen=True)
class Run:
    """A training run's shape: model, tokens per step, layout. Counts only; givens.yaml ``quiz_run``."""
    params: float
    layers: int
    d_model: int
    ffn: int
    heads: int
    kv_heads: int
    seq_len: int
    global_batch_tokens: int
    tp: int
    pp: int
    dp: int
    microbatch_sequences: int = 1
    elementwise_elements_per_layer: tuple[float, float] = (10.0, 3.0)
    grad_bytes_per_param: float = 2.0
    cp: int = 1                 # context parallel: each sequence split into cp chunks (x4lib.training.planner)
    recompute: str = "none"     # activation recomputation: none, selective (attention core) or full (every layer)
    gated_mlp: bool = True      # SwiGLU (gate, up, down: 3 matrices) or a plain GELU MLP (up, down: 2 matrices)

    def __post_init__(self):
        for name in ("layers", "d_model", "ffn", "heads", "kv_heads", "seq_len", "global_batch_tokens", "tp", "pp",
                     "dp", "microbatch_sequences", "cp"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {v}")
        if self.params <= 0:
            raise ValueError(f"params must be > 0, got {self.params}")
        if self.d_model % self.heads or self.heads % self.kv_heads or self.layers % self.pp:
            raise ValueError("d_model must divide into heads, heads into kv_heads groups, layers into pp stages")
        if self.global_batch_tokens % (self.seq_len * self.dp * self.microbatch_sequences):
            raise ValueError("the global batch must be whole microbatches of whole sequences on every replica")
        if self.seq_len % self.cp:
            raise ValueError(f"sequence length {self.seq_len} does not split into cp = {self.cp} chunks")
        if self.recompute not in RECOMPUTE:
            raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")

    @property
    def n_gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def microbatches(self) -> int:
        """Microbatches per replica and step."""
        return self.global_batch_tokens // (self.seq_len * self.dp * self.microbatch_sequences)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    def layer_gemms(self) -> list[tuple[int, int, int]]:
        """The forward GEMMs (m, n, k) of one layer on one GPU for one microbatch (tensor-parallel shards:
        QKV and gate/up split their outputs, O and down their inputs), and for each the two backward GEMMs
        (input gradient: m×k×n; weight gradient: k×n×m). With context parallelism a GPU holds s/cp tokens of each
        sequence; a plain MLP has one up-projection where SwiGLU has two (gate and up)."""
        s = self.seq_len * self.microbatch_sequences // self.cp
        d, t = self.d_model, self.tp
        kv = self.kv_heads * self.head_dim
        up = 2 * self.ffn if self.gated_mlp else self.ffn
        fwd = [(s, (d + 2 * kv) // t, d), (s, d, d // t), (s, up // t, d), (s, d, self.ffn // t)]
        return [g for (m, n, k) in fwd for g in ((m, n, k), (m, k, n), (k, n, m))]


def quiz_run() -> Run:
    """The quiz's 70B run with the layout assumptions of givens.yaml ``quiz_run``."""
    from x4lib.catalog import specs
    raw = dict(specs.read_yaml(economics.GIVENS_PATH)["quiz_run"])
    raw["elementwise_elements_per_layer"] = tuple(raw["elementwise_elements_per_layer"])
    return Run(params=economics.quiz_givens()["params"], **raw)


def attention_flop_per_token(run: Run, causal: bool = False) -> float:
    """PaLM's attention FLOP per token for training (forward + backward): 12·L·H·Q·T = 12·L·d·T (Chowdhery et al.
    2022, App. B); ``causal`` halves it (a causal kernel skips the masked half)."""
    full = 12.0 * run.layers * run.d_model * run.seq_len
    return full / 2 if causal else full


def attention_share_for(params: float, layers: int, d_model: int, seq_len: int) -> float:
    """How much PaLM's attention term adds to 6N FLOP per token: 12·L·d·T / (6·N)."""
    if min(params, layers, d_model, seq_len) <= 0:
        raise ValueError("params, layers, d_model and seq_len must be > 0")
    return 12.0 * layers * d_model * seq_len / (6.0 * params)


def attention_share(run: Run) -> float:
    """:func:`attention_share_for` of a run."""
    return attention_share_for(run.params, run.layers, run.d_model, run.seq_len)


def llama3_mfu_6nd() -> tuple[float, float]:
    """Llama 3's quoted MFU (which counts attention FLOP, PaLM's convention) read in this book's 6ND convention:
    (6ND MFU, attention share of the 405B model at its 8K sequences), from economics.yaml."""
    ref = economics.sourced()["reference_points"]
    share = attention_share_for(ref["llama3_405b_params"]["value"], ref["llama3_405b_layers"]["value"],
                                ref["llama3_405b_d_model"]["value"], ref["llama3_mfu_seq_len"]["value"])
    return economics.sourced_value("mfu")["value"] / (1 + share), share


def matmul_efficiency(run: Run, dev: specs.Device, dtype: str = "bf16") -> float:
    """FLOP-weighted efficiency of one layer's GEMMs (forward and backward) on ``dev``, by x4lib.compute.matmul."""
    from x4lib.compute import matmul
    flop = time = 0.0
    for m, n, k in run.layer_gemms():
        p = matmul.predict(dev, dtype, m, n, k)
        flop += p.flop
        time += p.time_s
    return flop / time / dev.peak_flop_per_s(dtype)


@dataclasses.dataclass(frozen=True)
class Term:
    """One line of the budget: seconds per step on each GPU, and where the number comes from."""
    name: str
    seconds: float
    basis: str


@dataclasses.dataclass(frozen=True)
class Budget:
    run: Run
    device: str
    dtype: str
    terms: tuple[Term, ...]
    step_s: float
    ideal_s: float
    matmul_efficiency: float
    lost_share: float
    dp_collective_s: float
    dp_window_s: float
    tp_allreduce_s: float
    attention_share: float
    notes: Mapping

    @property
    def mfu(self) -> float:
        """6ND MFU: model FLOP (6N per token) per second over the dense peak."""
        return self.ideal_s / self.step_s

    @property
    def mfu_with_attention(self) -> float:
        """The same run's MFU in PaLM's and Llama 3's convention (attention FLOP counted as model FLOP)."""
        return self.mfu * (1 + self.attention_share)

    @property
    def dp_hidden(self) -> bool:
        return self.notes["rs_s"] <= self.dp_window_s and self.notes["ag_s"] <= self.dp_window_s

    @property
    def non_matmul_factor(self) -> float:
        """MFU / matmul efficiency: the share of the matmul rate that survives everything else."""
        return self.mfu / self.matmul_efficiency

    def rows(self) -> list[dict]:
        """Display rows: term, seconds per step, share of the step, basis."""
        return [{"term": t.name, "s per step": t.seconds, "share of step": t.seconds / self.step_s,
                 "basis": t.basis} for t in self.terms]


@dataclasses.dataclass(frozen=True)
class ComputeTerms:
    """The work of one step on each GPU, in seconds, before any communication (see the module docstring):
    the 6ND work at the peak, the layer GEMMs at their achievable rate, causal attention, element-wise traffic,
    and what recomputation adds (full: the whole forward pass again, a third of the forward + backward work;
    selective: the attention core's forward again, a third of the attention term; Korthikanti et al. 2022)."""
    ideal_s: float
    matmul_s: float
    attention_s: float
    elementwise_s: float
    recompute_s: float
    matmul_efficiency: float
    attention_efficiency: float

    @property
    def work_s(self) -> float:
        return self.matmul_s + self.attention_s + self.elementwise_s + self.recompute_s


def compute_terms(run: Run, dev: specs.Device, dtype: str = "bf16",
                  attention_key: str = "attention_efficiency_fa2_h100") -> ComputeTerms:
    """The compute terms of :func:`budget` (matmuls, attention, element-wise, recomputation) for ``run`` on ``dev``."""
    P, W = dev.peak_flop_per_s(dtype), dev.memory_bw_Bps
    ref = economics.sourced()["reference_points"]
    n, B, L = run.n_gpus, run.global_batch_tokens, run.layers
    ideal = 6.0 * run.params * B / (n * P)
    e_mm = matmul_efficiency(run, dev, dtype)
    t_mm = ideal / e_mm
    e_att = ref[attention_key]["value"]
    t_att = attention_flop_per_token(run, causal=True) * B / (n * P * e_att)
    a, b = run.elementwise_elements_per_layer
    el_bytes = 3 * (a * run.d_model + b * run.ffn) * 2 * L * B  # forward traffic, backward twice it; BF16
    t_el = el_bytes / (n * W)
    rec = {"none": 0.0, "selective": t_att / 3, "full": (t_mm + t_att + t_el) / 3}[run.recompute]
    return ComputeTerms(ideal, t_mm, t_att, t_el, rec, e_mm, e_att)


def lost_share(n_gpus: int) -> tuple[float, float, float]:
    """Failures: (share of the time lost, hours lost per interruption, interruptions per hour on ``n_gpus``), from
    Llama 3's 54-day snapshot (see the module docstring)."""
    ref = economics.sourced()["reference_points"]
    days, total = ref["llama3_interruption_snapshot_days"]["value"], ref["llama3_interruptions_total"]["value"]
    unexpected, gpus = ref["llama3_unexpected_interruptions"]["value"], ref["llama3_interruption_gpus"]["value"]
    lost_per_interruption_h = (1 - ref["llama3_effective_training_time_min"]["value"]) * days * 24 / total
    rate_per_h = unexpected / (days * 24) * n_gpus / gpus
    return rate_per_h * lost_per_interruption_h, lost_per_interruption_h, rate_per_h


def _cluster(nodes: int, gpus_per_node: int, nics: int):
    from x4lib.network import clusters
    base = clusters.get(TP_CLUSTER)
    return dataclasses.replace(base, id=f"{nodes}x{gpus_per_node}", name=f"{nodes} x {gpus_per_node} of {base.name}",
                               nodes=nodes, gpus_per_node=gpus_per_node, nics_per_node=nics)


def budget(run: Run, dev: specs.Device, dtype: str = "bf16", attention_key: str =
           "attention_efficiency_fa2_h100") -> Budget:
    """The MFU budget of ``run`` on ``dev``, a catalog ``Device`` (see the module docstring for every term)."""
    from x4lib.network import collectives
    ref = economics.sourced()["reference_points"]
    n, L = run.n_gpus, run.layers
    ct = compute_terms(run, dev, dtype, attention_key)
    ideal, e_mm, t_mm, e_att, t_att, t_el = (ct.ideal_s, ct.matmul_efficiency, ct.matmul_s, ct.attention_efficiency,
                                             ct.attention_s, ct.elementwise_s)
    s_tokens = run.seq_len * run.microbatch_sequences
    ar = collectives.predict("all_reduce", s_tokens * run.d_model * 2, _cluster(1, run.tp, 0), in_network=True)
    t_tp = 4 * (L // run.pp) * run.microbatches * ar.time_s
    work = t_mm + t_att + t_el + ct.recompute_s + t_tp
    bubble = work * (run.pp - 1) / run.microbatches
    grad_B = run.grad_bytes_per_param * run.params / (run.tp * run.pp)
    dp_cluster = _cluster(run.dp, 1, 1)
    rs = collectives.predict("reduce_scatter", grad_B, dp_cluster).time_s
    ag = collectives.predict("all_gather", grad_B, dp_cluster).time_s
    window = (t_mm + t_att + t_el) * (2 / 3) / run.microbatches  # the last microbatch's backward pass
    exposed = max(0.0, rs - window) + max(0.0, ag - window)
    # failures: the rate per GPU-hour of Llama 3's snapshot, the time lost per interruption bounded by its >= 90 %
    lost, lost_per_interruption_h, rate_per_h = lost_share(n)
    subtotal = work + bubble + exposed
    step = subtotal / (1 - lost)
    terms = (
        Term("6ND work at the dense peak (ideal)", ideal, "6·N·B / (n·P): the model FLOP of one step"),
        Term("matmuls below the peak", t_mm - ideal,
             f"the layer GEMMs at {e_mm:.0%} of the peak (x4lib.compute.matmul, forward and backward shapes)"),
        Term("attention", t_att, f"PaLM's 12·L·d·T FLOP per token, halved by the causal mask, at {e_att:.0%} "
                                 f"of the peak ({ref[attention_key]['source']})"),
        Term("norms, residuals, activations", t_el,
             "memory-bound element-wise traffic at the datasheet bandwidth (assumed passes, givens.yaml)"),
    ) + ((Term("recomputation", ct.recompute_s, f"{run.recompute} recomputation (Korthikanti et al. 2022)"),)
         if run.recompute != "none" else ()) + (
        Term("tensor-parallel all-reduces", t_tp, f"4 per layer and microbatch of {s_tokens * run.d_model * 2 / 1e6:.0f} "
                                                  f"MB, {ar.time_s * 1e3:.2f} ms each (x4lib.network.collectives, {ar.algorithm}),"
                                                  f" not overlapped"),
        Term("pipeline bubble", bubble, f"(pp − 1)/microbatches = {run.pp - 1}/{run.microbatches} of the work (1F1B)"),
        Term("data-parallel reduce-scatter + all-gather, exposed", exposed,
             f"{rs * 1e3:.0f} + {ag * 1e3:.0f} ms against a {window * 1e3:.0f} ms window each"),
        Term("failures and restarts", step - subtotal, f"{lost:.2%} of the time lost (Llama 3's interruption rate "
                                                       f"per GPU, scaled to {n} GPUs)"),
    )
    return Budget(run, dev.id, dtype, terms, step, ideal, e_mm, lost, rs + ag, window, ar.time_s,
                  attention_share(run), MappingProxyType({"rs_s": rs, "ag_s": ag, "grad_bytes": grad_B,
                                                          "allreduce_bytes": s_tokens * run.d_model * 2,
                                                          "lost_per_interruption_h": lost_per_interruption_h,
                                                          "interruptions_per_day": rate_per_h * 24}))
