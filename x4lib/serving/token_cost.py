"""The cost of a token served: decode limited by memory bandwidth, prefill by arithmetic.

A dense decoder of N parameters with L layers, h_kv key/value heads of dimension d_h, served on n GPUs with tensor
parallelism (weights and KV cache split evenly), at b bytes per weight and per cache element:

    KV cache per token    k = 2 · L · h_kv · d_h · b                        [B/token]  (a key and a value per layer)
    one decode step       bytes  Q = N·b + B·c·k                            [B]   B sequences of c cached tokens each
                          FLOP   F = 2·N·B                                  [FLOP] (attention over the cache ignored)
                          t = max(Q / (n·W·η_mem), F / (n·P·η_mfu))          [s]   W HBM bandwidth, P dense peak per GPU
    decode throughput     B / t                                             [token/s]
    prefill throughput    n·P·η_mfu / (2N)                                  [token/s]  (compute-bound)
    cost per 1e6 tokens   n · price / (3600 · throughput · u) · 1e6          [USD]  u: fraction of hours busy

Memory must hold the weights and the cache: N·b + B·c·k ≤ n · capacity. Capacity uses the vendor's stated
figure in GB (10⁹ B), a slight underestimate for HBM stacks that are really GiB.
Sources: the model's shape from llama3-2024 (x4lib/data/datacenter.yaml ``models``); peaks, bandwidths and
capacities from the catalog. Used in: book/04-datacenter-economics.md.
"""
from __future__ import annotations

import dataclasses
import math

from x4lib.datacenter import facility as dc
from x4lib.catalog import specs


@dataclasses.dataclass(frozen=True)
class ServedModel:
    id: str
    name: str
    params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def kv_bytes_per_token(self, bytes_per_element: float) -> float:
        """k = 2 · L · h_kv · d_h · b."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * bytes_per_element


def model(model_id: str = "llama3-70b") -> ServedModel:
    """A served model's shape from datacenter.yaml ``models``."""
    m = dc.data()["models"].get(model_id)
    if m is None:
        raise LookupError(f"unknown model {model_id!r}; have: {', '.join(dc.data()['models'])}")
    return ServedModel(model_id, m["name"], float(m["params"]), m["layers"], m["hidden"], m["heads"], m["kv_heads"])


@dataclasses.dataclass(frozen=True)
class ServingPoint:
    """Throughput and cost of serving one model on n GPUs (token/s, USD per 10⁶ tokens)."""
    device: str
    n_gpus: int
    dtype: str
    batch: int
    context_tokens: int
    weights_B: float
    kv_cache_B: float
    memory_B: float
    step_mem_s: float
    step_compute_s: float
    decode_tokens_per_s: float
    prefill_tokens_per_s: float
    usd_per_gpu_hour: float
    utilisation: float

    @property
    def fits(self) -> bool:
        return self.weights_B + self.kv_cache_B <= self.memory_B

    @property
    def decode_bound(self) -> str:
        return "memory" if self.step_mem_s >= self.step_compute_s else "compute"

    def usd_per_million(self, tokens_per_s: float) -> float:
        return self.n_gpus * self.usd_per_gpu_hour / (3600.0 * tokens_per_s * self.utilisation) * 1e6

    @property
    def decode_usd_per_million(self) -> float:
        return self.usd_per_million(self.decode_tokens_per_s)

    @property
    def prefill_usd_per_million(self) -> float:
        return self.usd_per_million(self.prefill_tokens_per_s)


def serve(model_id: str = "llama3-70b", device: str = "h100-sxm", n_gpus: int = 8, dtype: str = "bf16",
          batch: int = 64, context_tokens: int = 4096, memory_efficiency: float = 0.8, mfu: float = 0.5,
          usd_per_gpu_hour: float = 2.99, utilisation: float = 0.5) -> ServingPoint:
    """Decode and prefill throughput and cost (module docstring). Raises ValueError for impossible inputs and
    when the weights and cache do not fit in the GPUs' memory."""
    for name, v, lo in (("gpus", n_gpus, 1), ("batch", batch, 1), ("context tokens", context_tokens, 1)):
        if not isinstance(v, (int, float)) or int(v) != v or v < lo:
            raise ValueError(f"{name} must be a whole number >= {lo}, got {v}")
    for name, v in (("memory efficiency", memory_efficiency), ("MFU", mfu), ("utilisation", utilisation)):
        if not math.isfinite(v) or not 0 < v <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {v}")
    if not math.isfinite(usd_per_gpu_hour) or usd_per_gpu_hour < 0:
        raise ValueError(f"price must be >= 0 USD/GPU-hour, got {usd_per_gpu_hour}")
    m = model(model_id)
    dev = specs.get(device)
    dt = specs.normalize_dtype(dtype)
    b = specs.DTYPE_BYTES[dt]
    peak = dev.peak_flop_per_s(dt)
    weights = m.params * b
    cache = batch * context_tokens * m.kv_bytes_per_token(b)
    memory = n_gpus * dev.values["memory_gb"].value * 1e9
    if weights + cache > memory:
        raise ValueError(f"{m.name} in {dt.upper()} needs {(weights + cache) / 1e9:,.0f} GB for weights and cache "
                         f"but {n_gpus} × {dev.id} hold {memory / 1e9:,.0f} GB: use more GPUs, a smaller batch "
                         f"or context, or a narrower dtype")
    t_mem = (weights + cache) / (n_gpus * dev.memory_bw_Bps * memory_efficiency)
    t_cmp = 2.0 * m.params * batch / (n_gpus * peak * mfu)
    decode = batch / max(t_mem, t_cmp)
    prefill = n_gpus * peak * mfu / (2.0 * m.params)
    return ServingPoint(dev.id, int(n_gpus), dt, int(batch), int(context_tokens), weights, cache, memory, t_mem,
                        t_cmp, decode, prefill, usd_per_gpu_hour, utilisation)
