"""One decode step end to end: the kernels a dense transformer runs for B new tokens at context C, each timed by the
achievable-rate matmul model (x4lib.compute.matmul), plus the attention's KV reads and the cost of launching
every kernel, eager or captured as a CUDA graph.

Per layer (dense models; units in brackets):

    GEMMs        QKV [B × (H + 2·H_kv)·d × D], O [B × D × H·d], gate+up [B × 2·F × D], down [B × D × F]
                 each t_g = t₀ + t_p + max(t_c, t_m) from x4lib.compute.matmul (memory at the achievable
                 bandwidth φ·BW, tiles and waves on the device's SMs, η per precision)                        [s]
    attention    t_a = t₀ + t_f + B · min(C, W) · kv_bytes_per_token_per_layer / (φ·BW)                       [s]
    the rest     k − 5 small kernels (norms, rotary embedding, activation, residual adds): t₀ + t_f each       [s]
                 t_f: the matmul model's pipeline fill, a load and a store round trip to HBM that any kernel pays
                 k: kernels per layer of a serving engine, from the Hazy Research count (about a hundred kernels
                 for the 16 layers of Llama-3.2-1B in vLLM and SGLang)
    LM head      one GEMM [B × V × D]

    device       t_dev = L · (Σ_g t_g + t_a + (k − 5)·(t₀ + t_f)) + t_head                                    [s]
    graph        t = t_dev                     the step is one CUDA graph: no host launch per kernel
    eager        t = max(t_dev, n · t_L)        the host issues n = L·k + 1 kernels at t_L each, while the GPU runs

t₀ (a kernel's start-up and tail on the device) and t_L (the host's launch time) are the matmul model's
(x4lib/data/matmul.yaml; in graph mode t₀ is the one measured in CUDA graphs, x4lib.compute.matmul.graph_overhead,
where our runs measured it for the family: kernels of a graph start faster than kernels queued in a stream); φ is
the matmul model's achievable fraction of the datasheet bandwidth. ``bound`` is
``memory`` when the step's time is mostly bytes streamed at φ·BW, ``compute`` when mostly tensor-core work,
``launch`` when fixed per-kernel costs (t₀ on the device, or the host's launches in eager mode) are the largest
share. Mixture-of-experts and MLA models are refused (the kernel list above is a dense GQA layer's). Compared with
``x4lib.serving.inference.decode_step`` (the roofline bound: weights at the peak bandwidth), this is the achievable
estimate. Sources: hazy-megakernel-2025 (kernel count), amd-maf-part1-2025 (t₀), meta-hta-launch-stats (t_L).
Used in: book/02b-memory-and-decode.md.
"""
from __future__ import annotations

import dataclasses

from x4lib.catalog import specs
from x4lib.compute import kernels, matmul
from x4lib.serving import inference

#: kernels per layer of a serving engine: "around a hundred separate kernels" for a forward pass of Llama-3.2-1B
#: (16 layers) in vLLM and SGLang (Hazy Research, hazy-megakernel-2025)
SERVING_KERNELS_PER_FORWARD = 100
SERVING_KERNELS_LAYERS = 16
KERNELS_PER_LAYER = SERVING_KERNELS_PER_FORWARD / SERVING_KERNELS_LAYERS
#: the GEMMs and attention kernel of a layer that are timed one by one; the rest of its kernels pay t₀ each
TIMED_PER_LAYER = 5
MODES = ("graph", "eager")


@dataclasses.dataclass(frozen=True)
class DecodeEstimate:
    """One decode step's achievable time and its parts [s]."""
    model: str
    device: str
    batch: int
    context: int
    mode: str
    dtype: str
    kernels: float
    t_gemm_s: float
    t_attention_s: float
    t_small_s: float
    t_device_s: float
    t_host_s: float
    t_fixed_s: float
    t_compute_s: float
    weight_bytes: float
    kv_bytes: float
    achievable_bw_Bps: float
    kernels_per_layer: float = KERNELS_PER_LAYER

    @property
    def step_s(self) -> float:
        return max(self.t_device_s, self.t_host_s) if self.mode == "eager" else self.t_device_s

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.step_s

    @property
    def bound(self) -> str:
        fixed = max(self.t_fixed_s, self.t_host_s if self.mode == "eager" else 0.0)
        streamed = self.step_s - self.t_fixed_s - self.t_compute_s
        return max((("launch", fixed), ("compute", self.t_compute_s), ("memory", streamed)), key=lambda x: x[1])[0]

    def to_json(self) -> dict:
        return {"model": self.model, "device": self.device, "batch": self.batch, "context": self.context,
                "mode": self.mode, "dtype": self.dtype, "step_ms": self.step_s * 1e3,
                "tokens_per_s": self.tokens_per_s, "bound": self.bound,
                "basis": {"kernels": self.kernels, "gemm_ms": self.t_gemm_s * 1e3,
                          "attention_ms": self.t_attention_s * 1e3, "small_kernels_ms": self.t_small_s * 1e3,
                          "device_ms": self.t_device_s * 1e3, "host_launch_ms": self.t_host_s * 1e3,
                          "weight_gb": self.weight_bytes / 1e9, "kv_gb": self.kv_bytes / 1e9,
                          "achievable_bw_gb_s": self.achievable_bw_Bps / 1e9,
                          "kernels_per_layer": self.kernels_per_layer, "model_version": matmul.constants().model_version}}


def _gemm(dev, dtype, m, n, k, mode: str = "eager") -> matmul.Prediction:
    """One GEMM of the step: in a graph its start-up is the matmul model's t₀ measured in CUDA graphs, eager the
    family's t₀ in a stream."""
    return matmul.predict(dev, dtype, m, n, k, timing="graph" if mode == "graph" else "queued")


def estimate(model, device, batch: int, context: int, mode: str = "graph", dtype: str = "bf16",
             kernels_per_layer: float | None = None) -> DecodeEstimate:
    """The achievable time of one decode step (see the module docstring). ``kernels_per_layer``: the kernels one
    layer of the implementation launches (default: a serving engine's, :data:`KERNELS_PER_LAYER`; a plain-PyTorch
    decoder launches several times as many, which :func:`measured_checks` counts with the profiler)."""
    c = inference.get(model)
    dev = specs.get(device) if isinstance(device, str) else device
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if c.experts or c.attention != "gqa" and c.attention != "mha":
        raise ValueError(f"{c.id}: only dense models with multi-head or grouped-query attention are modelled")
    for name, v in (("batch", batch), ("context", context)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    dtype = specs.normalize_dtype(dtype)
    D, H, Hkv, d, F = c.hidden, c.heads, c.kv_heads, c.head_dim, c.ffn
    shapes = [(batch, (H + 2 * Hkv) * d, D), (batch, D, H * d), (batch, 2 * F, D), (batch, D, F)]
    gemms = [_gemm(dev, dtype, *s, mode) for s in shapes]
    head = _gemm(dev, dtype, batch, c.vocab, D, mode)

    def device_time(p: matmul.Prediction) -> float:
        return p.overhead_s + p.t_pipeline_s + max(p.t_compute_s, p.t_memory_s)
    tg = gemms[0].target
    t0, t_launch, bw = gemms[0].overhead_s, gemms[0].target.family.launch_floor_s, tg.achievable_bw_Bps
    kv = inference.model_kv_cache(c, context, batch, "bf16")
    kv_per_layer_B = kv.total_bytes / c.layers
    t_fill = tg.family.tile_latency_for(dtype)
    t_att = t0 + t_fill + kv_per_layer_B / bw
    k_layer = KERNELS_PER_LAYER if kernels_per_layer is None else float(kernels_per_layer)
    if not k_layer >= TIMED_PER_LAYER:
        raise ValueError(f"kernels per layer must be at least {TIMED_PER_LAYER} (the GEMMs and the attention), "
                         f"got {kernels_per_layer!r}")
    small = (k_layer - TIMED_PER_LAYER) * (t0 + t_fill)
    t_gemm = c.layers * sum(device_time(p) for p in gemms) + device_time(head)
    t_dev = t_gemm + c.layers * (t_att + small)
    n = c.layers * k_layer + 1
    compute = sum(p.t_compute_s for p in gemms if p.t_compute_s > p.t_memory_s) * c.layers \
        + (head.t_compute_s if head.t_compute_s > head.t_memory_s else 0.0)
    b = kernels.DTYPE_BYTES[dtype]
    weights = (sum(n_ * k_ for _, n_, k_ in shapes) * c.layers + c.vocab * D) * b
    return DecodeEstimate(c.id, dev.id, batch, context, mode, dtype, n, t_gemm, c.layers * t_att, c.layers * small,
                          t_dev, n * t_launch, n * (t0 + t_fill), compute, weights, kv.total_bytes, bw, k_layer)


def measured_checks(runs=None) -> list[dict]:
    """Every decode step of our committed GEMM sweeps (``book/runs/gemms/``, plain-PyTorch decoders with random
    weights, eager and as a CUDA graph) against :func:`estimate` with the kernel count that run's profiler gave
    (kernels per step − 1, over the layers). Nothing is fitted: t₀, t_L and φ are the matmul model's sourced
    constants; the kernel count is a property of the implementation that was timed, not of its times."""
    from x4lib.harness import runs as hruns
    runs = hruns.load_runs("gemms") if runs is None else runs
    out = []
    for run in runs:
        cat = run.device.get("catalog_id")
        if run.device.get("kind") != "gpu" or not cat:
            continue
        for r in run.results.get("decode", []):
            if r["status"] != "ok" or not r.get("kernels_per_step") or r["model"] not in inference.models():
                continue
            k_layer = (r["kernels_per_step"] - 1) / r["layers"]
            e = estimate(r["model"], cat, r["batch"], r["context"], r["mode"], r["dtype"], k_layer)
            meas = min(r["times_s"])
            out.append({"run": run.run_id, "device": cat, "model": r["model"], "batch": r["batch"],
                        "context": r["context"], "mode": r["mode"], "kernels_per_layer": k_layer,
                        "measured_s": meas, "predicted_s": e.step_s, "error": e.step_s / meas - 1,
                        "bound": e.bound})
    return out


# ------------------------------------------------------------------------------ command line: python -m x4lib decode

def cli_arguments(p) -> None:
    from x4lib import cli
    p.add_argument("--model", required=True, type=cli.choice_of("model", inference.models()),
                   help="a stored dense model, e.g. llama3-8b")
    p.add_argument("--device", required=True, help="catalog id, e.g. h100-sxm")
    p.add_argument("--batch", type=cli.number("sequences", 1, 1e6, integer=True), default=1)
    p.add_argument("--context", type=cli.number("context tokens", 1, 1e8, integer=True), required=True)
    p.add_argument("--dtype", default="bf16", help="weights and matmuls: bf16 (default), fp16 or fp8_e4m3")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--graph", dest="mode", action="store_const", const="graph",
                      help="the step captured as one CUDA graph (default)")
    mode.add_argument("--eager", dest="mode", action="store_const", const="eager",
                      help="every kernel launched by the host")
    p.set_defaults(mode="graph")
    p.add_argument("--kernels-per-layer", type=cli.number("kernels per layer", TIMED_PER_LAYER, 1000),
                   default=None, help=f"kernels one layer launches (default {KERNELS_PER_LAYER:g}, a serving "
                                      "engine's; a plain-PyTorch decoder launches about 40)")
    p.add_argument("--json", action="store_true", help="machine-readable output (schemas/decode_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    e = estimate(args.model, args.device, int(args.batch), int(args.context), args.mode, args.dtype,
                 args.kernels_per_layer)
    j = e.to_json()
    b = j["basis"]
    cli.emit(j, "\n".join([
        f"{e.model} on {e.device}, batch {e.batch}, context {e.context:,}, {e.dtype}, {e.mode}",
        f"step {j['step_ms']:.2f} ms = {j['tokens_per_s']:,.1f} tokens/s; {j['bound']}-bound",
        f"GEMMs {b['gemm_ms']:.2f} ms, attention (KV {b['kv_gb']:.3f} GB) {b['attention_ms']:.2f} ms, "
        f"{b['kernels']:.0f} kernels' fixed costs {b['small_kernels_ms']:.2f} ms beyond the timed ones; "
        f"host launches {b['host_launch_ms']:.2f} ms (hidden under a graph)",
        f"weights {b['weight_gb']:.2f} GB streamed at {b['achievable_bw_gb_s']:,.0f} GB/s achievable "
        f"(x4lib.compute.matmul's φ × the datasheet)",
    ]), as_json=args.json)
    return 0
