"""One decode step of a dense decoder, timed on this device eager and as a CUDA graph (the GEMM sweep's decode part).

The model is a plain-PyTorch Llama-shaped decoder with random weights (timing does not depend on their values): an
embedding, ``layers`` layers (RMSNorm, one fused QKV projection, rotary embedding, the new key and value written into
a preallocated KV cache, grouped-query ``scaled_dot_product_attention`` of one new token per sequence over
``context`` cached tokens, O projection, residual, RMSNorm, one fused gate+up projection, SiLU·up, down projection,
residual), a final RMSNorm and the LM head, then the greedy next token. One step decodes one token for each of
``batch`` sequences at context ``context``.

Timed as a serving engine runs it: ``eager`` (the host issues every kernel each step) and ``graph`` (the step
captured once as a CUDA graph and replayed). Each measurement keeps its raw per-repeat times (the harness's method)
and the number of GPU kernels one eager step launched (counted once with torch.profiler, where it works). An
out-of-memory is a row with status "oom".

Imports only the standard library and torch. Used by runners/gemms.py; compared with x4lib.serving.decode.
"""
from __future__ import annotations

import math

from x4lib.harness import bench

MODES = ("eager", "graph")


def _norm(torch, x, w, eps: float = 1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _rotate(torch, x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def build(torch, cfg: dict, batch: int, context: int, device: str = "cuda", dtype: str = "bf16", seed: int = 0):
    """The weights and KV cache on ``device`` and a step function ``step(tokens) -> next tokens``."""
    tdt = getattr(torch, bench.TORCH_DTYPES[dtype])
    gen = torch.Generator(device=device).manual_seed(seed)
    h, a, kv, f, L, V = (cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["ffn"], cfg["layers"], cfg["vocab"])
    d = h // a

    def w(*shape):
        t = torch.empty(*shape, device=device, dtype=tdt)
        return t.normal_(0.0, 1.0 / math.sqrt(shape[-1]), generator=gen)
    layers = [{"n1": torch.ones(h, device=device, dtype=tdt), "qkv": w((a + 2 * kv) * d, h), "o": w(h, a * d),
               "n2": torch.ones(h, device=device, dtype=tdt), "gu": w(2 * f, h), "down": w(h, f),
               "k": torch.zeros(batch, kv, context + 1, d, device=device, dtype=tdt),
               "v": torch.zeros(batch, kv, context + 1, d, device=device, dtype=tdt)} for _ in range(L)]
    for lay in layers:  # the cached context holds values, not zeros
        lay["k"].normal_(generator=gen)
        lay["v"].normal_(generator=gen)
    emb, head, nf = w(V, h), w(V, h), torch.ones(h, device=device, dtype=tdt)
    pos = context  # the new token's position: the cache holds `context` tokens before it
    inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
    ang = pos * inv
    cos = torch.cat((ang.cos(), ang.cos())).to(tdt)
    sin = torch.cat((ang.sin(), ang.sin())).to(tdt)
    F = torch.nn.functional

    def step(tokens):
        x = emb[tokens].unsqueeze(1)                                   # (B, 1, h)
        for lay in layers:
            qkv = F.linear(_norm(torch, x, lay["n1"]), lay["qkv"])
            q, k, v = qkv.split([a * d, kv * d, kv * d], dim=-1)
            q = _rotate(torch, q.view(batch, 1, a, d).transpose(1, 2), cos, sin)
            k = _rotate(torch, k.view(batch, 1, kv, d).transpose(1, 2), cos, sin)
            lay["k"][:, :, pos:pos + 1].copy_(k)
            lay["v"][:, :, pos:pos + 1].copy_(v.view(batch, 1, kv, d).transpose(1, 2))
            y = F.scaled_dot_product_attention(q, lay["k"], lay["v"], enable_gqa=kv != a)
            x = x + F.linear(y.transpose(1, 2).reshape(batch, 1, a * d), lay["o"])
            g, u = F.linear(_norm(torch, x, lay["n2"]), lay["gu"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(g) * u, lay["down"])
        logits = F.linear(_norm(torch, x, nf), head)
        return logits.argmax(-1).squeeze(1)
    return step


def count_kernels(torch, fn) -> int | None:
    """GPU kernels one call of ``fn`` launches (torch.profiler), or None where the profiler does not answer."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        n = sum(1 for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")
                and not e.name.startswith(("Memcpy", "Memset")))
        return n or None
    except Exception:  # noqa: BLE001 — a profiler that does not work here leaves the count out
        return None


def measure(torch, cfg: dict, batch: int, context: int, warmup: int, repeats: int, device: str = "cuda",
            dtype: str = "bf16") -> list[dict]:
    """Rows for one (model, batch, context): the step eager and as a CUDA graph (graph on CUDA only)."""
    base = {"model": cfg["name"], "batch": batch, "context": context, "dtype": dtype,
            **{k: cfg[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")}}
    rows = []
    empty = torch.cuda.empty_cache if device == "cuda" else (lambda: None)
    try:
        step = build(torch, cfg, batch, context, device, dtype)
        tokens = torch.zeros(batch, dtype=torch.long, device=device)
        with torch.inference_mode():
            t = bench.time_calls(lambda: step(tokens), torch, device, warmup, repeats, min_region_s=0)
            kernels = count_kernels(torch, lambda: step(tokens)) if device == "cuda" else None
        rows.append({**base, "mode": "eager", "status": "ok", "times_s": list(t.times_s),
                     "kernels_per_step": kernels})
        if device == "cuda":
            with torch.inference_mode():
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        step(tokens)
                torch.cuda.current_stream().wait_stream(s)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    step(tokens)
                t = bench.time_calls(graph.replay, torch, device, warmup, repeats, min_region_s=0)
            rows.append({**base, "mode": "graph", "status": "ok", "times_s": list(t.times_s),
                         "kernels_per_step": kernels})
            graph = None
    except Exception as exc:  # noqa: BLE001 — an OOM (or a kernel this torch lacks) is a row, the sweep goes on
        status = "oom" if bench._is_oom(torch, exc) else "error"
        have = {r["mode"] for r in rows}
        rows += [{**base, "mode": m, "status": status, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
                 for m in MODES if m not in have and (m == "eager" or device == "cuda")]
    finally:
        step = None  # noqa: F841
        empty()
    return rows
