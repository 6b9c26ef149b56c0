"""Inference memory and the decode roofline: KV-cache bytes, parameter counts of published models, and an upper bound
on decode throughput from a device's bandwidth and peak.

KV cache (bytes; b = bytes per element of the cache dtype, C tokens of context, B sequences):

    multi-head / grouped-query   per token  2 · L · H_kv · d_head · b          (a K and a V vector per KV head)
    multi-head latent (MLA)      per token  L · (d_c + d_rope) · b             (DeepSeek-V2: one latent + one RoPE key)
    total                        B · min(C, W) · per-token                      (W: sliding window, Mistral's rolling buffer)

Decode step (one new token for each of B sequences at context C; one device or a tensor-parallel group of g, whose
bandwidth and peak add up and whose communication is ignored):

    bytes   Q = W_read(B) + B · C · kv_per_token          W_read: every weight once (MoE: the experts the batch
                                                            touches, E·(1 − (1 − k/E)^B) per layer under uniform routing)
    FLOP    F = B · (2 · N_active + attention(C))          attention: 4 · L · H · d_head · C (QKᵀ and AV)
    time    t = max(Q / BW, F / P)                          [s]; tokens/s ≤ B / t
    memory  weights (all of them) + B · C · kv_per_token ≤ capacity

The batch at which decode turns compute-bound solves F(B)/P = Q(B)/BW; with the KV traffic growing as fast as the
FLOP (attention's intensity is about 2·H/H_kv/b FLOP/B), that batch may not exist at long contexts. Everything here is
a model prediction (an upper bound), not a measurement. Parameter counts are computed from the architecture
(``x4lib/data/models.yaml``), never typed. Sources: touvron-2023-llama2, llama3-2024, jiang-2023-mistral,
jiang-2024-mixtral, deepseek-v2-2024, deepseek-v3-repo (references.bib). Used in: book/02b-memory-and-decode.md.
"""
from __future__ import annotations

import dataclasses
import functools
from types import MappingProxyType
from typing import Mapping

from x4lib.catalog import specs
from x4lib.compute.kernels import DTYPE_BYTES
from x4lib import paths

DATA_PATH = paths.DATA_DIR / "models.yaml"
SCHEMA_PATH = paths.SCHEMA_DIR / "models.schema.json"
KV_DTYPES = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8", "fp4")
WEIGHT_DTYPES = ("fp32", "bf16", "fp16", "fp8_e4m3", "int8", "fp4")


class ModelsDataError(ValueError):
    """models.yaml breaks its schema; the message names the field. The book's fault: exit code 1."""
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A published transformer configuration (fields as in models.yaml; 0 where a field does not apply)."""
    id: str
    name: str
    attention: str                # mha, gqa or mla
    layers: int
    hidden: int
    heads: int
    vocab: int
    source: str
    kv_heads: int = 0
    head_dim: int = 0
    ffn: int = 0
    context: int = 0
    window: int = 0
    tied_embeddings: bool = False
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    experts: int = 0
    experts_active: int = 0
    shared_experts: int = 0
    moe_ffn: int = 0
    dense_layers: int = 0
    note: str = ""

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.experts else 0


@functools.lru_cache(maxsize=1)
def models() -> Mapping[str, ModelConfig]:
    """Every stored configuration, validated (JSON Schema) on first use."""
    import json

    import jsonschema

    from x4lib.catalog.specs import read_yaml
    try:
        raw = read_yaml(DATA_PATH, ModelsDataError)
        jsonschema.validate(raw, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ModelsDataError(f"{DATA_PATH.name}: {where}: {exc.message}") from None
    out = {}
    for mid, v in raw["models"].items():
        fields = {k: v[k] for k in v if k not in ("accessed",)}
        fields["note"] = fields.get("note", "").strip()
        cfg = ModelConfig(id=mid, **fields)
        if cfg.attention == "mha" and cfg.kv_heads != cfg.heads:
            raise ModelsDataError(f"{DATA_PATH.name}: models/{mid}: multi-head attention needs kv_heads == heads")
        out[mid] = cfg
    return MappingProxyType(out)


def get(model: str | ModelConfig) -> ModelConfig:
    """A stored configuration by id; unknown ids raise LookupError naming the known ones."""
    if isinstance(model, ModelConfig):
        return model
    known = models()
    if model not in known:
        raise LookupError(f"unknown model {model!r}; known: {', '.join(known)}")
    return known[model]


def _dtype_bytes(dtype: str, allowed=KV_DTYPES) -> float:
    d = specs.DTYPE_ALIASES.get(dtype, dtype)
    if d not in allowed:
        raise ValueError(f"dtype {dtype!r} not supported here; use one of: {', '.join(allowed)}")
    return DTYPE_BYTES[d]


# ------------------------------------------------------------------------------------------------- parameters

def attention_params(cfg: ModelConfig) -> int:
    """Weights of one attention block (projections only)."""
    h, a = cfg.hidden, cfg.heads
    if cfg.attention == "mla":
        qk = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
        q = h * cfg.q_lora_rank + cfg.q_lora_rank * a * qk if cfg.q_lora_rank else h * a * qk
        kv = h * (cfg.kv_lora_rank + cfg.qk_rope_head_dim) + cfg.kv_lora_rank * a * (cfg.qk_nope_head_dim
                                                                                       + cfg.v_head_dim)
        return q + kv + a * cfg.v_head_dim * h
    d = cfg.head_dim
    return h * a * d + 2 * h * cfg.kv_heads * d + a * d * h


def param_counts(cfg: str | ModelConfig) -> dict:
    """Parameters computed from the architecture: {"total", "active", "embedding", "expert", "per_layer_attention"}.
    SwiGLU feed-forward = 3·hidden·ffn; a MoE layer holds (experts + shared)·3·hidden·moe_ffn plus a router of
    hidden·experts, of which (experts_active + shared) experts are active; input and output embeddings are separate
    matrices unless tied. Norms and biases are ignored (< 0.01 % here)."""
    c = get(cfg)
    attn = attention_params(c)
    emb = c.vocab * c.hidden
    embeddings = emb if c.tied_embeddings else 2 * emb
    dense_layers = c.layers if not c.experts else c.dense_layers
    dense = dense_layers * (attn + 3 * c.hidden * c.ffn)
    expert = 3 * c.hidden * c.moe_ffn if c.experts else 0
    moe_attn = c.moe_layers * attn
    router = c.hidden * c.experts
    total = embeddings + dense + moe_attn + c.moe_layers * ((c.experts + c.shared_experts) * expert + router)
    active = embeddings + dense + moe_attn + c.moe_layers * ((c.experts_active + c.shared_experts) * expert + router)
    return {"total": total, "active": active, "embedding": emb, "expert": expert, "per_layer_attention": attn}


def weight_bytes(cfg: str | ModelConfig, dtype: str = "bf16") -> float:
    """Bytes to store every weight in ``dtype`` (no quantisation scales counted)."""
    return param_counts(cfg)["total"] * _dtype_bytes(dtype, WEIGHT_DTYPES)


# --------------------------------------------------------------------------------------------------- KV cache

def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, dtype: str = "bf16") -> float:
    """2 · L · H_kv · d_head · b bytes: one K and one V vector per KV head and layer."""
    for name, v in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim)):
        if not (isinstance(v, int) and v >= 1):
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    return 2 * layers * kv_heads * head_dim * _dtype_bytes(dtype)


def model_kv_bytes_per_token(cfg: str | ModelConfig, dtype: str = "bf16") -> float:
    """Per-token KV bytes of a stored model (MLA: L · (d_c + d_rope) · b)."""
    c = get(cfg)
    if c.attention == "mla":
        return c.layers * (c.kv_lora_rank + c.qk_rope_head_dim) * _dtype_bytes(dtype)
    return kv_bytes_per_token(c.layers, c.kv_heads, c.head_dim, dtype)


def cached_tokens(context: int, window: int = 0) -> int:
    """Tokens a sequence keeps in its cache: the context, or the sliding window if smaller."""
    if not (isinstance(context, int) and context >= 1):
        raise ValueError(f"context must be a whole number of tokens >= 1, got {context!r}")
    return min(context, window) if window else context


@dataclasses.dataclass(frozen=True)
class KVCache:
    """KV-cache size of B sequences at context C."""
    bytes_per_token: float
    tokens_cached: int
    batch: int
    total_bytes: float

    @property
    def total_gb(self) -> float:
        return self.total_bytes / 1e9


def kv_cache(bytes_per_token: float, context: int, batch: int = 1, window: int = 0) -> KVCache:
    if not (isinstance(batch, int) and batch >= 1):
        raise ValueError(f"batch must be a whole number >= 1, got {batch!r}")
    tokens = cached_tokens(context, window)
    return KVCache(bytes_per_token, tokens, batch, bytes_per_token * tokens * batch)


def model_kv_cache(cfg: str | ModelConfig, context: int, batch: int = 1, dtype: str = "bf16") -> KVCache:
    c = get(cfg)
    return kv_cache(model_kv_bytes_per_token(c, dtype), context, batch, c.window)


# ------------------------------------------------------------------------------------------------------ decode

def experts_touched(experts: int, active: int, batch: int) -> float:
    """Expected distinct experts a batch of B tokens routes to in one layer if each token picks ``active`` of
    ``experts`` uniformly at random: E · (1 − (1 − k/E)^B). An assumption: real routers are not uniform."""
    if not experts:
        return 0.0
    return experts * (1 - (1 - active / experts) ** batch)


def attention_flop_per_token(cfg: ModelConfig, context: int) -> float:
    """FLOP of one new token attending to C cached tokens: QKᵀ and AV, 2·C·d each per head and layer
    (MLA with absorbed projections: 2·C·(2·d_c + d_rope) per head and layer)."""
    if cfg.attention == "mla":
        return cfg.layers * cfg.heads * 2 * context * (2 * cfg.kv_lora_rank + cfg.qk_rope_head_dim)
    return 4 * cfg.layers * cfg.heads * cfg.head_dim * context


@dataclasses.dataclass(frozen=True)
class DecodeStep:
    """One decode step of B sequences at context C on a device (or a tensor-parallel group): the roofline bound."""
    model: str
    device: str
    gpus: int
    batch: int
    context: int
    weight_dtype: str
    kv_dtype: str
    compute_dtype: str
    weight_read_B: float
    kv_read_B: float
    flop: float
    t_mem_s: float
    t_math_s: float
    memory_needed_B: float
    capacity_B: float

    @property
    def bytes_moved(self) -> float:
        return self.weight_read_B + self.kv_read_B

    @property
    def time_s(self) -> float:
        return max(self.t_mem_s, self.t_math_s)

    @property
    def tokens_per_s(self) -> float:
        """Upper bound on generated tokens per second for the whole batch."""
        return self.batch / self.time_s

    @property
    def bound(self) -> str:
        return "compute" if self.t_math_s >= self.t_mem_s else "memory"

    @property
    def fits(self) -> bool:
        return self.memory_needed_B <= self.capacity_B


def device_capacity_B(device: specs.Device) -> float:
    """Usable memory assumed for planning: the vendor's figure read as GB = 1e9 B. HBM is binary-sized, so this is
    a few per cent below the physical size: a conservative capacity (x4lib.training.memory says the same)."""
    return device.si("memory_gb")


def compute_dtype_for(device: specs.Device, weight_dtype: str) -> str:
    """The matmul precision: the weights' dtype where the device has a peak for it, else BF16 (weights are
    converted on the fly)."""
    d = specs.DTYPE_ALIASES.get(weight_dtype, weight_dtype)
    return d if d in device.dtypes() else "bf16"


def decode_step(model: str | ModelConfig, device: str | specs.Device, batch: int, context: int,
                weight_dtype: str = "bf16", kv_dtype: str = "bf16", gpus: int = 1) -> DecodeStep:
    """The roofline bound of one decode step (see the module docstring)."""
    c = get(model)
    dev = specs.get(device) if isinstance(device, str) else device
    if not (isinstance(gpus, int) and gpus >= 1):
        raise ValueError(f"gpus must be a whole number >= 1, got {gpus!r}")
    kv = model_kv_cache(c, context, batch, kv_dtype)
    p = param_counts(c)
    wb = _dtype_bytes(weight_dtype, WEIGHT_DTYPES)
    read_params = p["total"] - (0 if c.tied_embeddings else p["embedding"])   # the input embedding: B rows only
    if c.experts:
        untouched = c.experts - experts_touched(c.experts, c.experts_active, batch)
        read_params -= c.moe_layers * untouched * p["expert"]
    flop_per_token = 2 * (p["active"] - (0 if c.tied_embeddings else p["embedding"])) \
        + attention_flop_per_token(c, kv.tokens_cached)
    cdt = compute_dtype_for(dev, weight_dtype)
    peak = dev.peak_flop_per_s(cdt) * gpus
    bw = dev.memory_bw_Bps * gpus
    weight_read = read_params * wb
    flop = batch * flop_per_token
    return DecodeStep(model=c.id, device=dev.id, gpus=gpus, batch=batch, context=context,
                      weight_dtype=weight_dtype, kv_dtype=kv_dtype, compute_dtype=cdt,
                      weight_read_B=weight_read, kv_read_B=kv.total_bytes, flop=flop,
                      t_mem_s=(weight_read + kv.total_bytes) / bw, t_math_s=flop / peak,
                      memory_needed_B=p["total"] * wb + kv.total_bytes,
                      capacity_B=device_capacity_B(dev) * gpus)


def asymptotic_intensity(model, context: int, kv_dtype: str = "bf16") -> float:
    """FLOP per byte of a decode step as the batch grows without bound (weights fully amortised): the FLOP of one
    token over the KV bytes of one sequence. Decode can turn compute-bound only where this exceeds the device's ridge
    point (peak / bandwidth)."""
    c = get(model)
    p = param_counts(c)
    kv = model_kv_cache(c, context, 1, kv_dtype)
    flop = 2 * (p["active"] - (0 if c.tied_embeddings else p["embedding"])) \
        + attention_flop_per_token(c, kv.tokens_cached)
    return flop / kv.total_bytes


def crossover_batch(model, device, context: int, weight_dtype: str = "bf16", kv_dtype: str = "bf16",
                    gpus: int = 1, max_batch: int = 1 << 16) -> int | None:
    """The smallest batch at which a decode step is compute-bound (memory capacity ignored), or None if it stays
    memory-bound up to ``max_batch``."""
    lo, hi = 1, max_batch

    def compute_bound(b: int) -> bool:
        return decode_step(model, device, b, context, weight_dtype, kv_dtype, gpus).bound == "compute"

    if not compute_bound(hi):
        return None
    while lo < hi:             # the step's FLOP grow faster than its bytes once weights are amortised: bisect
        mid = (lo + hi) // 2
        if compute_bound(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def max_batch(model, device, context: int, weight_dtype: str = "bf16", kv_dtype: str = "bf16", gpus: int = 1,
              reserve_fraction: float = 0.0) -> int:
    """The largest batch whose weights and KV cache fit in ``(1 − reserve_fraction)`` of the capacity (0 if the
    weights alone do not fit)."""
    c, dev = get(model), (specs.get(device) if isinstance(device, str) else device)
    if not 0 <= reserve_fraction < 1:
        raise ValueError(f"reserve_fraction must be in [0, 1), got {reserve_fraction}")
    free = device_capacity_B(dev) * gpus * (1 - reserve_fraction) - weight_bytes(c, weight_dtype)
    per_seq = model_kv_cache(c, context, 1, kv_dtype).total_bytes
    return max(0, int(free // per_seq))


def decode_curve(model, device, context: int, batches, weight_dtype: str = "bf16", kv_dtype: str = "bf16",
                 gpus: int = 1) -> list[DecodeStep]:
    return [decode_step(model, device, int(b), context, weight_dtype, kv_dtype, gpus) for b in batches]


# --------------------------------------------------------------------------- command line: python -m x4lib kv-cache

def cli_arguments(p) -> None:
    from x4lib import cli
    p.add_argument("--model", type=cli.choice_of("model", models), help="a stored configuration "
                   "(x4lib/data/models.yaml); or give --layers, --kv-heads and --head-dim")
    p.add_argument("--layers", type=cli.number("layers", 1, 10_000, integer=True))
    p.add_argument("--kv-heads", type=cli.number("KV heads", 1, 100_000, integer=True))
    p.add_argument("--head-dim", type=cli.number("head dimension", 1, 100_000, integer=True))
    p.add_argument("--window", type=cli.number("window tokens", 1, 1e9, integer=True), default=0,
                   help="sliding-window size (tokens kept per sequence); default: none")
    p.add_argument("--dtype", type=cli.choice_of("KV dtype", KV_DTYPES), default="bf16")
    p.add_argument("--context", type=cli.number("context tokens", 1, 1e9, integer=True), required=True)
    p.add_argument("--batch", type=cli.number("sequences", 1, 1e7, integer=True), default=1)
    p.add_argument("--json", action="store_true", help="machine-readable output (schemas/kv_cache_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    shape = (args.layers, args.kv_heads, args.head_dim)
    if args.model and any(v is not None for v in shape):
        raise cli.UsageError("give either --model or --layers/--kv-heads/--head-dim, not both")
    if args.model:
        cfg = get(args.model)
        per_token = model_kv_bytes_per_token(cfg, args.dtype)
        window = args.window or cfg.window
        label = f"{cfg.name} ({cfg.attention.upper()}, source {cfg.source})"
    else:
        if any(v is None for v in shape):
            raise cli.UsageError("--layers, --kv-heads and --head-dim are all required without --model")
        per_token = kv_bytes_per_token(*shape, args.dtype)
        window, label = args.window, f"{args.layers} layers x {args.kv_heads} KV heads x {args.head_dim}"
    kv = kv_cache(per_token, args.context, args.batch, window)
    doc = {"bytes_per_token": kv.bytes_per_token, "total_bytes": kv.total_bytes, "total_gb": kv.total_gb,
           "model": args.model, "dtype": args.dtype, "context": args.context, "tokens_cached": kv.tokens_cached,
           "batch": args.batch}
    text = (f"{label}, {args.dtype}\n"
            f"KV cache per token: {kv.bytes_per_token:,.0f} B ({kv.bytes_per_token / 2**20:.3f} MiB)\n"
            f"{args.batch} sequence(s) x {kv.tokens_cached:,} cached tokens: {kv.total_gb:,.2f} GB "
            f"(GB = 1e9 B; {kv.total_bytes / 2**30:,.2f} GiB)")
    cli.emit(doc, text, as_json=args.json)
    return 0
