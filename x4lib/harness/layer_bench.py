"""One transformer layer timed per operation, and a small real model trained with data parallelism (Lab 02).

A layer of a dense decoder (pre-norm, grouped-query attention, SwiGLU MLP) with hidden size h, a heads of
d = h/a, kv key/value heads, MLP width f, sequence s and micro-batch b, its matrices split as tensor parallelism
(degree t) splits them (column-parallel QKV, gate, up; row-parallel O, down; a/t heads per rank). T = b·s tokens.

    GEMM         forward (m, n, k)        backward: data grad (m, k, n), weight grad (k, n, m)
    qkv          (T, (a + 2·kv)·d/t, h)
    o            (T, h, a·d/t)
    gate, up     (T, f/t, h)   (two of them)
    down         (T, h, f/t)
    attention    from the QKV projection's output to the attention output, as the layer runs it: split, heads to the
                 front, key/value heads repeated, causal scaled_dot_product_attention (b × a/t heads × s × d),
                 heads back
    norms        RMSNorm on (T, h), two per layer
    activation   SiLU(gate)·up on (T, f/t)
    residual     x + y on (T, h), two per layer
    optimizer    torch.optim.AdamW step over the layer's parameters on this rank
    overhead     one tiny kernel (an add on one element), per call
    copy         dst.copy_(src) on a large buffer (2·N·bytes moved per call)
    layer        the whole layer as the training runs it (:func:`measure_layer_as_trained`): FP32 weights and an
                 FP32 residual stream, under ``torch.autocast`` when the training is mixed precision, forward and
                 forward+backward; what it takes beyond the ops above is the glue between them (casts of the
                 weights and their gradients, norms and residual adds at FP32 width, gradient sums where a tensor
                 feeds two ops); on a CPU also run at the same time in n processes (:func:`measure_concurrent`):
                 what ranks sharing one host's cores, caches and memory cost each other
    loopback     (CPU only) bytes through a TCP socket to this same process, the link of ranks on one host

Every row keeps the shape and the raw per-repeat times; rates, fits and predictions are derived when a page is
drawn (x4lib.training.calibration). An out-of-memory at one op is a row with status "oom". The real model of the
check (:class:`Layer` stacked ``layers`` times) uses the same operations; :func:`train_spawned` runs it under
torch.distributed DDP over gloo on n processes of this machine (one thread each).

Imports only the standard library and torch (a bare PyTorch pod runs it). Used in: book/lab-02-calibrate.md.
"""
from __future__ import annotations

import json
import math
import os
import socket
import sys
import threading
import time
from pathlib import Path

from x4lib.harness import bench

METHOD_VERSION = 3  # 2: attention timed from the QKV output as the layer runs it (layout copies included);
#                     3: the whole layer timed as the training runs it (:func:`measure_layer_as_trained`)
DIMS = ("hidden", "heads", "kv_heads", "ffn", "seq", "micro_batch", "tp")
#: GEMMs of one layer: name -> how many of that shape
GEMM_COUNT = {"qkv": 1, "o": 1, "gate_up": 2, "down": 1}
#: element-wise ops of one layer: name -> how many per layer
ELEMENTWISE_COUNT = {"rmsnorm": 2, "swiglu": 1, "residual": 2}


class BadDims(ValueError):
    """Dimensions that do not make a layer (a usage error, exit 2)."""


def check_dims(cfg: dict) -> None:
    """Raise BadDims naming the first dimension that breaks the layer."""
    for k in DIMS + ("layers",):
        v = cfg.get(k, 1)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise BadDims(f"{k} must be a whole number >= 1, got {v!r}")
    h, a, kv, t = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["tp"]
    if h % a:
        raise BadDims(f"hidden size {h} does not divide into {a} heads")
    if a % kv:
        raise BadDims(f"{a} heads do not divide into {kv} key/value heads")
    if a % t or kv % t and t % kv:
        raise BadDims(f"tensor-parallel degree {t} must divide the {a} heads and the {kv} key/value heads")
    if cfg["ffn"] % t:
        raise BadDims(f"tensor-parallel degree {t} does not divide the MLP width {cfg['ffn']}")


def gemm_shapes(cfg: dict) -> dict:
    """name -> forward (m, n, k) of the layer's GEMMs on one tensor-parallel rank."""
    h, a, kv, f, t = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["ffn"], cfg["tp"]
    d, T = h // a, cfg["micro_batch"] * cfg["seq"]
    kv_rank = max(1, kv // t)
    return {"qkv": (T, (a // t + 2 * kv_rank) * d, h), "o": (T, h, a // t * d),
            "gate_up": (T, f // t, h), "down": (T, h, f // t)}


def pass_shapes(m: int, n: int, k: int) -> dict:
    """The three GEMMs of a linear layer: forward, data gradient, weight gradient."""
    return {"fwd": (m, n, k), "bwd_data": (m, k, n), "bwd_weight": (k, n, m)}


def layer_params(cfg: dict) -> int:
    """Weights of one layer on one tensor-parallel rank (two norm vectors included)."""
    return sum(GEMM_COUNT[g] * n * k for g, (m, n, k) in gemm_shapes(cfg).items()) + 2 * cfg["hidden"]


# ------------------------------------------------------------------------------------------------ the layer

def _dtype(torch, name: str):
    return getattr(torch, bench.TORCH_DTYPES[name])


def rmsnorm(torch, x, w, eps: float = 1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def swiglu(torch, g, u):
    return torch.nn.functional.silu(g) * u


def attention(torch, q, k, v):
    """q (b, a, s, d); k, v (b, kv, s, d): key/value heads repeated to a, then causal SDPA."""
    rep = q.shape[1] // k.shape[1]
    if rep > 1:
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def attention_block(torch, qkv, a: int, kv: int, d: int):
    """From the QKV projection (b, s, (a + 2·kv)·d) to the attention output (b, s, a·d), as the layer runs it:
    split, heads to the front, :func:`attention`, heads back (a copy)."""
    b, s, _ = qkv.shape
    q, k, v = qkv.split([a * d, kv * d, kv * d], dim=-1)
    q = q.view(b, s, a, d).transpose(1, 2)
    k = k.view(b, s, kv, d).transpose(1, 2)
    v = v.view(b, s, kv, d).transpose(1, 2)
    return attention(torch, q, k, v).transpose(1, 2).reshape(b, s, a * d)


def make_layer_class(torch):
    """The layer as a torch Module (built lazily so that importing this module needs no torch)."""
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self, cfg: dict):
            super().__init__()
            h, f, t = cfg["hidden"], cfg["ffn"], cfg["tp"]
            (_, nqkv, _), (_, _, ko) = gemm_shapes(cfg)["qkv"], gemm_shapes(cfg)["o"]
            self.a, self.d = cfg["heads"] // t, h // cfg["heads"]
            self.kv = max(1, cfg["kv_heads"] // t)
            self.qkv = nn.Linear(h, nqkv, bias=False)
            self.o = nn.Linear(ko, h, bias=False)
            self.gate = nn.Linear(h, f // t, bias=False)
            self.up = nn.Linear(h, f // t, bias=False)
            self.down = nn.Linear(f // t, h, bias=False)
            self.n1, self.n2 = nn.Parameter(torch.ones(h)), nn.Parameter(torch.ones(h))

        def forward(self, x):
            y = attention_block(torch, self.qkv(rmsnorm(torch, x, self.n1)), self.a, self.kv, self.d)
            x = x + self.o(y)
            z = rmsnorm(torch, x, self.n2)
            return x + self.down(swiglu(torch, self.gate(z), self.up(z)))

    return Layer


# ------------------------------------------------------------------------------------------------ measuring

def time_calls(fn, torch, device: str, warmup: int, repeats: int) -> dict:
    """Per-call times: on CUDA the harness's events (``times_s``); on CPU ``times_s`` from time.perf_counter and
    ``cpu_times_s`` from time.process_time (the CPU time of this process, every thread; on a shared machine other
    processes' work inflates the wall clock but not this one)."""
    if device == "cuda":
        return {"times_s": list(bench.time_calls(fn, torch, device, warmup, repeats).times_s)}
    if warmup < 0 or repeats < 1:
        raise ValueError("warmup must be >= 0 and repeats >= 1")
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    before = getattr(fn, "before", None)  # untimed work before each timed call (a cache flush)
    for _ in range(repeats):
        if before:
            before()
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        t1, c1 = time.perf_counter(), time.process_time()
        wall.append(t1 - t0)
        cpu.append(c1 - c0)
    return {"times_s": wall, "cpu_times_s": cpu}


def _row(base: dict, fn, torch, device: str, warmup: int, repeats: int) -> dict:
    try:
        t = time_calls(fn, torch, device, warmup, repeats)
    except Exception as exc:  # noqa: BLE001 — OOM or an unsupported op becomes a row, the sweep goes on
        if device == "cuda":
            torch.cuda.empty_cache()
        status = "oom" if bench._is_oom(torch, exc) else "error"
        return {**base, "status": status, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    return {**base, "status": "ok", **t}


def _guard(base: dict, build, torch, device: str, warmup: int, repeats: int) -> dict:
    """Build the op's inputs (an OOM while allocating is recorded too) and time it."""
    try:
        fn = build()
    except Exception as exc:  # noqa: BLE001
        if device == "cuda":
            torch.cuda.empty_cache()
        status = "oom" if bench._is_oom(torch, exc) else "error"
        return {**base, "status": status, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    row = _row(base, fn, torch, device, warmup, repeats)
    fn = None  # noqa: F841
    if device == "cuda":
        torch.cuda.empty_cache()
    return row


#: inputs of a timed op rotate through enough copies to exceed this many bytes, so that a repeat does not find its
#: inputs in a cache the real model's step would have evicted (stas00: flush the cache between iterations)
ROTATE_B = 8 * 2**20
MAX_SETS = 8
#: on a CPU the whole layer is timed after writing this many bytes elsewhere: between two visits of a layer a
#: training step runs the other layers and the optimizer, which evict it from the last-level cache (32 MiB on the
#: machine building the book); on a GPU the real layers are larger than the L2 by themselves
FLUSH_B = 64 * 2**20


def _sets(set_B: int) -> int:
    return max(1, min(MAX_SETS, -(-ROTATE_B // max(1, set_B))))


def _rotating(op, sets):
    state = {"i": 0}

    def call():
        xs = sets[state["i"] % len(sets)]
        state["i"] += 1
        return op(*xs)
    return call


def measure_layer(torch, cfg: dict, device: str, dtype: str, warmup: int, repeats: int, seed: int = 0,
                  progress=None) -> list[dict]:
    """Every op of one layer (module docstring), fwd and bwd, as results.json rows."""
    check_dims(cfg)
    tdt = _dtype(torch, dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    rnd = lambda *shape, grad=False: torch.randn(*shape, device=device, generator=gen).to(tdt).requires_grad_(grad)  # noqa: E731
    rows = []
    tick = progress.update if progress else (lambda n=1: None)
    for name, (m, n, k) in gemm_shapes(cfg).items():
        for pas in ("fwd", "bwd_data", "bwd_weight"):
            pm, pn, pk = pass_shapes(m, n, k)[pas]

            def build(pas=pas, m=m, n=n, k=k):
                # as autograd runs a linear layer y = x·Wᵀ (W stored n × k): forward x·Wᵀ, data gradient dy·W,
                # weight gradient dyᵀ·x; inputs rotate through sets larger than a core's L2 cache
                sets = [(rnd(m, k), rnd(n, k), rnd(m, n)) for _ in range(_sets(4 * (m * k + n * k + m * n)))]
                ops = {"fwd": lambda x, w, dy: torch.nn.functional.linear(x, w),
                       "bwd_data": lambda x, w, dy: torch.matmul(dy, w),
                       "bwd_weight": lambda x, w, dy: torch.matmul(dy.t(), x)}
                return _rotating(ops[pas], sets)
            rows.append(_guard({"op": name, "kind": "matmul", "pass": pas, "count": GEMM_COUNT[name],
                                "m": pm, "n": pn, "k": pk}, build, torch, device, warmup, repeats))
            tick()
    b, s, t = cfg["micro_batch"], cfg["seq"], cfg["tp"]
    a, d, kv = cfg["heads"] // t, cfg["hidden"] // cfg["heads"], max(1, cfg["kv_heads"] // t)
    T, h, f = b * s, cfg["hidden"], cfg["ffn"] // t
    elementwise = {
        "attention": (lambda: (rnd(b, s, (a + 2 * kv) * d, grad=True),),
                      lambda qkv: attention_block(torch, qkv, a, kv, d),
                      {"batch": b, "heads": a, "kv_heads": kv, "seq": s, "head_dim": d}),
        "rmsnorm": (lambda: (rnd(T, h, grad=True), rnd(h, grad=True)), lambda x, w: rmsnorm(torch, x, w),
                    {"numel": T * h}),
        "swiglu": (lambda: (rnd(T, f, grad=True), rnd(T, f, grad=True)), lambda g, u: swiglu(torch, g, u),
                   {"numel": T * f}),
        "residual": (lambda: (rnd(T, h, grad=True), rnd(T, h, grad=True)), lambda x, y: x + y, {"numel": T * h}),
    }
    for name, (inputs, op, shape) in elementwise.items():
        kind = "attention" if name == "attention" else "elementwise"
        count = 1 if name == "attention" else ELEMENTWISE_COUNT[name]

        def build_fwd(inputs=inputs, op=op):
            first = inputs()
            sets = [first] + [inputs() for _ in range(_sets(sum(x.numel() * x.element_size() for x in first)) - 1)]
            return _rotating(op, sets)

        def build_fwdbwd(inputs=inputs, op=op):
            first = inputs()
            sets = [first] + [inputs() for _ in range(_sets(sum(x.numel() * x.element_size() for x in first)) - 1)]

            def step(*xs):
                y = op(*xs)
                y.backward(torch.ones_like(y))
            return _rotating(step, sets)
        for pas, build in (("fwd", build_fwd), ("fwd+bwd", build_fwdbwd)):
            rows.append(_guard({"op": name, "kind": kind, "pass": pas, "count": count, **shape}, build, torch,
                               device, warmup, repeats))
            tick()
    return rows


def measure_layer_as_trained(torch, cfg: dict, device: str, amp: str | None, warmup: int, repeats: int,
                             seed: int = 0) -> list[dict]:
    """The whole layer as :func:`train_single` and :func:`train_rank` train it: FP32 weights, an FP32 input (the
    residual stream) that needs its gradient, forward under ``torch.autocast(amp)`` when ``amp`` is set (mixed
    precision) and the backward of an FP32 upstream gradient to the input and every weight. The backward runs
    through ``torch.autograd.grad`` so that repeats do not accumulate into ``.grad`` (a training step with
    ``zero_grad(set_to_none=True)`` does not either). Rows ``layer fwd`` and ``layer fwd+bwd``."""
    check_dims(cfg)
    base = {"op": "layer", "kind": "layer", "count": 1, "amp": amp or "none"}

    def build(backward: bool):
        def make():
            torch.manual_seed(seed)
            layer = make_layer_class(torch)(cfg).to(device)
            params = list(layer.parameters())
            gen = torch.Generator(device=device).manual_seed(seed)
            x = torch.randn(cfg["micro_batch"], cfg["seq"], cfg["hidden"], device=device, generator=gen)
            x.requires_grad_(True)
            dy = torch.randn(x.shape, device=device, generator=gen)
            amp_dt = _dtype(torch, amp) if amp else None

            def fwd():
                with torch.autocast(device_type=device, dtype=amp_dt or torch.float32, enabled=amp_dt is not None):
                    return layer(x)
            call = (lambda: torch.autograd.grad(fwd(), [x] + params, dy)) if backward else fwd
            if device == "cpu":  # a training step evicts the layer from the caches before it comes back to it
                flush = torch.empty(FLUSH_B // 4)
                timed = call
                call = lambda: timed()  # noqa: E731 — a function object that can carry the flush
                call.before = lambda: flush.fill_(1.0)
            return call
        return make
    return [_guard({**base, "pass": pas}, build(pas == "fwd+bwd"), torch, device, warmup, repeats)
            for pas in ("fwd", "fwd+bwd")]


def _gloo_init(rank: int, world: int, port: int):
    """Join this host's gloo group as ``rank`` of ``world``, one thread; returns (torch, torch.distributed)."""
    import datetime

    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    if sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300))
    return torch, dist


def _spawned(worker, n: int, args: tuple, prefix: str) -> list[dict]:
    """Run ``worker(rank, n, port, *args, out_dir)`` in ``n`` processes of this machine; every rank's JSON record.
    A rank that raises becomes a RuntimeError with its last line."""
    import tempfile

    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        try:
            mp.spawn(worker, args=(n, free_port(), *args, tmp), nprocs=n, join=True)
        except mp.ProcessRaisedException as exc:
            last = [ln for ln in str(exc).strip().splitlines() if ln.strip()][-1]
            raise RuntimeError(f"a gloo rank failed: {last}") from None
        return [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(n)]


def _concurrent_worker(rank: int, world: int, port: int, cfg: dict, warmup: int, repeats: int, out_dir: str) -> None:
    """One process of :func:`measure_concurrent` (module-level so torch.multiprocessing can pickle it by name)."""
    torch, dist = _gloo_init(rank, world, port)
    try:
        torch.manual_seed(0)
        layer = make_layer_class(torch)(cfg)
        params = list(layer.parameters())
        x = torch.randn(cfg["micro_batch"], cfg["seq"], cfg["hidden"], requires_grad=True)
        dy = torch.randn(x.shape)
        wall, cpu = [], []
        flush = torch.empty(FLUSH_B // 4)
        for i in range(warmup + repeats):
            flush.fill_(1.0)  # as measure_layer_as_trained: the layer comes back to caches a step has evicted
            dist.barrier()  # the processes run the layer at the same time, as the ranks of the check do
            c0, t0 = time.process_time(), time.perf_counter()
            torch.autograd.grad(layer(x), [x] + params, dy)
            t1, c1 = time.perf_counter(), time.process_time()
            if i >= warmup:
                wall.append(t1 - t0)
                cpu.append(c1 - c0)
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps({"times_s": wall, "cpu_times_s": cpu}))
    finally:
        dist.destroy_process_group()


def measure_concurrent(n: int, cfg: dict, warmup: int, repeats: int) -> dict:
    """The whole layer (FP32, forward + backward, one thread) run at the same time in ``n`` processes of this CPU, no
    communication between them: per repeat the slowest process's time. Against the same layer alone it measures what
    ranks on one host cost each other through the cores, caches and memory they share (row ``layer fwd+bwd`` with
    ``concurrent`` = n)."""
    row = {"op": "layer", "kind": "layer", "pass": "fwd+bwd", "count": 1, "amp": "none", "concurrent": n}
    try:
        ranks = _spawned(_concurrent_worker, n, (cfg, warmup, repeats), "lab02-concurrent-")
    except RuntimeError as exc:
        return {**row, "status": "error", "error": str(exc)[:200]}
    return {**row, "status": "ok", **{k: [max(r[k][i] for r in ranks) for i in range(repeats)]
                                      for k in ("times_s", "cpu_times_s")}}


def merge_windows(rows: list[dict], again: list[dict]) -> list[dict]:
    """``rows`` with the times of ``again`` (the same measurements repeated later) appended to each matching row
    (same op, pass and process count): a statistic over both windows does not depend on which side of the other
    work a slow minute of a shared machine fell. A row that failed in either window keeps its first status."""
    def key(r):
        return r["op"], r["pass"], r.get("concurrent")
    later = {key(r): r for r in again if r["status"] == "ok"}
    out = []
    for r in rows:
        a = later.get(key(r))
        if r["status"] == "ok" and a is not None:
            r = {**r, **{k: list(r[k]) + list(a[k]) for k in ("times_s", "cpu_times_s") if k in r and k in a},
                 "windows": r.get("windows", 1) + 1}
        out.append(r)
    return out


def join_steps(first: list[dict], second: list[dict]) -> list[dict]:
    """Two trainings of the same ranks, later apart in time (:func:`train_spawned`'s results): each rank's steps of
    the second appended to its steps of the first, so that step i of every rank is still the same step."""
    later = {r["rank"]: r for r in second}
    if later.keys() != {r["rank"] for r in first}:
        raise ValueError("the two trainings ran different ranks")
    return [{**r, "steps": list(r["steps"]) + list(later[r["rank"]]["steps"])} for r in first]


def param_shapes(cfg: dict) -> list[tuple[int, ...]]:
    """The shapes of one layer's weights on one tensor-parallel rank (as :class:`Layer` holds them)."""
    shapes = [(n, k) for g, (m, n, k) in gemm_shapes(cfg).items() for _ in range(GEMM_COUNT[g])]
    return shapes + [(cfg["hidden"],), (cfg["hidden"],)]


def measure_optimizer(torch, cfg: dict, device: str, warmup: int, repeats: int) -> dict:
    """One AdamW step (torch's default implementation) over one layer's FP32 weights on this rank, gradients set;
    the first step (state creation) is a warm-up call."""
    shapes = param_shapes(cfg)

    def build():
        ps = [torch.nn.Parameter(torch.zeros(s, device=device)) for s in shapes]
        for p in ps:
            p.grad = torch.full_like(p, 1e-3)
        return torch.optim.AdamW(ps, lr=1e-4).step
    return _guard({"op": "adamw", "kind": "optimizer", "pass": "step", "count": 1,
                   "params": sum(math.prod(s) for s in shapes), "tensors": len(shapes)}, build,
                  torch, device, max(1, warmup), repeats)


def measure_overhead(torch, device: str, warmup: int, repeats: int, calls: int = 200) -> dict:
    """The time of ``calls`` tiny kernels (an add on one element) per repeat: the per-kernel launch/dispatch cost."""
    def build():
        x = torch.zeros(1, device=device)
        def many():
            for _ in range(calls):
                x.add_(1.0)
        return many
    return _guard({"op": "tiny_add", "kind": "overhead", "pass": "fwd", "count": 1, "calls": calls}, build, torch,
                  device, warmup, repeats)


def measure_copy(torch, numel: int, device: str, warmup: int, repeats: int) -> dict:
    """dst.copy_(src) of ``numel`` FP32 elements: 2·numel·4 B moved per call."""
    def build():
        src = torch.ones(numel, device=device)
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)
    return _guard({"op": "copy", "kind": "copy", "pass": "fwd", "count": 1, "numel": numel, "element_bytes": 4},
                  build, torch, device, warmup, repeats)


def measure_loopback(size_B: int, repeats: int, chunk_B: int = 1 << 20) -> dict:
    """``size_B`` bytes through a TCP socket on 127.0.0.1 to a thread of this process, ``repeats`` times: the
    link that gloo ranks on one host use (one direction)."""
    row = {"op": "loopback_tcp", "kind": "link", "pass": "send", "count": 1, "size_B": size_B}
    try:
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        cli = socket.create_connection(srv.getsockname())
        conn, _ = srv.accept()
        buf = bytearray(chunk_B)
        times, cpu = [], []

        def drain(n):
            view = memoryview(bytearray(chunk_B))
            while n > 0:
                n -= conn.recv_into(view, min(chunk_B, n))
        for i in range(repeats + 1):
            rx = threading.Thread(target=drain, args=(size_B,))
            c0, t0 = time.process_time(), time.perf_counter()
            rx.start()
            left = size_B
            while left > 0:
                left -= cli.send(memoryview(buf)[:min(chunk_B, left)])
            rx.join()
            if i:  # the first transfer warms the socket buffers
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
        for s in (cli, conn, srv):
            s.close()
    except OSError as exc:
        return {**row, "status": "error", "error": f"{type(exc).__name__}: {exc}"[:200]}
    return {**row, "status": "ok", "times_s": times, "cpu_times_s": cpu}


# ------------------------------------------------------------------------------------------------ the real model

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train_rank(torch, dist, cfg: dict, steps: int, warmup: int, seed: int = 0) -> dict:
    """Train ``cfg['layers']`` layers (tp = 1) with DDP for ``warmup`` + ``steps`` steps; per step the times of
    forward, backward (DDP's gradient all-reduce inside) and the optimizer step, on this rank."""
    torch.manual_seed(seed)
    Layer = make_layer_class(torch)
    model = torch.nn.Sequential(*[Layer({**cfg, "tp": 1}) for _ in range(cfg["layers"])])
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(cfg["micro_batch"], cfg["seq"], cfg["hidden"])
    rows = []
    clocks = (time.perf_counter, time.process_time)
    for i in range(warmup + steps):
        dist.barrier()
        t0 = [c() for c in clocks]
        loss = ddp(x).pow(2).mean()
        t1 = [c() for c in clocks]
        loss.backward()
        t2 = [c() for c in clocks]
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = [c() for c in clocks]
        if i >= warmup:
            rows.append({f"{what}{sfx}": b[j] - a[j] for j, sfx in enumerate(("_s", "_cpu_s"))
                         for what, a, b in (("forward", t0, t1), ("backward", t1, t2), ("optimizer", t2, t3),
                                            ("step", t0, t3))})
    return {"rank": dist.get_rank(), "params": sum(p.numel() for p in model.parameters()), "steps": rows}


def train_single(torch, cfg: dict, steps: int, warmup: int, device: str = "cuda", dtype: str = "bf16",
                 seed: int = 0) -> dict:
    """Train ``cfg['layers']`` layers (tp = 1) in this one process on ``device``, as plain PyTorch trains a model on
    one GPU: FP32 weights and AdamW (torch's default implementation), forward and backward under
    ``torch.autocast`` in ``dtype`` (mixed precision); per step the times of forward, backward and the optimizer
    step (the device synchronised at each boundary), in the same record as :func:`train_rank`'s (rank 0)."""
    torch.manual_seed(seed)
    Layer = make_layer_class(torch)
    model = torch.nn.Sequential(*[Layer({**cfg, "tp": 1}) for _ in range(cfg["layers"])]).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(cfg["micro_batch"], cfg["seq"], cfg["hidden"], device=device)
    amp = _dtype(torch, dtype) if dtype in ("bf16", "fp16") else None
    sync = (lambda: torch.cuda.synchronize()) if device == "cuda" else (lambda: None)
    rows = []
    clocks = (time.perf_counter, time.process_time)
    for i in range(warmup + steps):
        sync()
        t0 = [c() for c in clocks]
        with torch.autocast(device_type=device, dtype=amp, enabled=amp is not None):
            loss = model(x).float().pow(2).mean()
        sync()
        t1 = [c() for c in clocks]
        loss.backward()
        sync()
        t2 = [c() for c in clocks]
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        t3 = [c() for c in clocks]
        if i >= warmup:
            rows.append({f"{what}{sfx}": b[j] - a[j] for j, sfx in enumerate(("_s", "_cpu_s"))
                         for what, a, b in (("forward", t0, t1), ("backward", t1, t2), ("optimizer", t2, t3),
                                            ("step", t0, t3))})
    out = {"rank": 0, "params": sum(p.numel() for p in model.parameters()), "steps": rows}
    if device == "cuda":
        out["max_memory_allocated_B"] = int(torch.cuda.max_memory_allocated())
    del model, opt, x
    if device == "cuda":
        torch.cuda.empty_cache()
    return out


def _train_worker(rank: int, world: int, port: int, cfg: dict, steps: int, warmup: int, out_dir: str) -> None:
    """One gloo rank (module-level so torch.multiprocessing can pickle it by name)."""
    torch, dist = _gloo_init(rank, world, port)
    try:
        res = train_rank(torch, dist, cfg, steps, warmup)
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(res))
    finally:
        dist.destroy_process_group()


def train_spawned(n_ranks: int, cfg: dict, steps: int, warmup: int) -> list[dict]:
    """Train the small model on ``n_ranks`` gloo processes of this machine; every rank's step times."""
    return _spawned(_train_worker, n_ranks, (cfg, steps, warmup), "lab02-ddp-")
