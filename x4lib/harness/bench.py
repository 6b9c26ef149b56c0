"""A timing harness done right, for matmuls and memory-bound kernels, on CPU and CUDA.

- warm-up calls are discarded; then ``repeats`` timings, each of ``N`` calls issued back to back between one pair
  of CUDA events (or of ``time.perf_counter`` readings on a CPU, where torch ops are synchronous), with N chosen
  from the warm-up so that each timed region lasts at least ``min_region_s`` (about 1 ms; N = 1 for any call
  longer than that). One call per event pair, as harness version 2 did, times the host's launch of each short
  kernel as well as the kernel; back-to-back calls hide it, as careful benchmarks do (stas00's swiglu benchmark
  times 100 calls between one event pair). The raw time of every event pair is kept (``pair_times_s``) with N
  (``calls_per_timing``); ``times_s`` = pair time / N, the time per call the book reports (best and median);
- on a GPU with ``nvidia-smi``, the runner's ``x4lib.harness.device.GpuSampler`` records the SM clock, power, temperature and the clock-event
  reasons while the largest shapes run (NVML's definitions: nvml-clocks-event-reasons), so that a low clock is
  attributed from evidence, not guessed; on a CPU, or without nvidia-smi, nothing is sampled;
- inputs are random (seeded), never zeros (zeros hit fast paths and lower power);
- every call's time is kept (raw per-repeat seconds) with the shape it timed; FLOP, bytes and rates are
  derived from them when a page is drawn (``x4lib.compute.kernels``: 2·m·n·k FLOP per matmul, 2·N·b bytes per copy,
  3·N·b per triad), so a later fix of a FLOP count never means editing a measurement;
- an out-of-memory at one shape becomes a row with ``status: "oom"``; the sweep goes on.

Imports only the standard library and torch (a bare PyTorch pod can run it).
Method after stas00's mamf-finder (ml-engineering) and nccl-tests' practice. Used in: book/lab-00-roofline.md.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
import time

#: version 2: rows keep times and shapes only (rates are derived when drawn); version 3: N calls back to back per
#: event pair (N chosen so the timed region lasts >= MIN_REGION_S), raw pair times kept, GPU state sampled during the
#: largest shapes; version 4: a call shorter than GRAPH_BELOW_S is also timed as a CUDA graph (graph_* fields)
HARNESS_VERSION = 4
#: the shortest timed region [s]: calls shorter than this are repeated back to back between one pair of events
MIN_REGION_S = 1e-3
#: the most calls in one timed region (bounds the time a tiny kernel's sweep takes)
MAX_CALLS_PER_TIMING = 1000

TORCH_DTYPES = {"fp64": "float64", "fp32": "float32", "tf32": "float32", "bf16": "bfloat16",
                "fp16": "float16", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}
#: calls shorter than this [s] (back to back) are also timed as a CUDA graph of GRAPH_CALLS calls, replayed: the
#: GPU's own time per call, without the host's launch of each (version 4)
GRAPH_BELOW_S = 100e-6
GRAPH_CALLS = 20
#: the STREAM-style kernels the harness times, on fp32 arrays
MEMORY_KERNELS = ("copy", "triad")
MEMORY_ELEMENT_BYTES = 4


@dataclasses.dataclass(frozen=True)
class Timing:
    """Per-call times of one kernel, in seconds: each the time of one event pair divided by the ``calls`` issued
    back to back inside it (``pair_times_s`` keeps the raw pair times)."""
    times_s: tuple[float, ...]
    calls: int = 1
    pair_times_s: tuple[float, ...] = ()

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def best_s(self) -> float:
        return min(self.times_s)

    @property
    def spread(self) -> float:
        """(max − min) / median: how noisy the repeats were."""
        return (max(self.times_s) - min(self.times_s)) / self.median_s


def calls_per_timing(single_call_s: float, min_region_s: float = MIN_REGION_S,
                     max_calls: int = MAX_CALLS_PER_TIMING) -> int:
    """N = ⌈min_region_s / t_call⌉, between 1 and ``max_calls``: how many calls one timed region needs to last at
    least ``min_region_s``."""
    if not single_call_s > 0:
        return max_calls
    return max(1, min(max_calls, math.ceil(min_region_s / single_call_s)))


def _region_s(fn, torch, device: str, calls: int) -> float:
    """One timed region: ``calls`` calls of ``fn`` back to back, in seconds."""
    if device == "cuda":
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / 1e3
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return time.perf_counter() - t0


def time_calls(fn, torch, device: str, warmup: int = 3, repeats: int = 10, min_region_s: float = MIN_REGION_S,
               max_calls: int = MAX_CALLS_PER_TIMING) -> Timing:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeats`` regions of N back-to-back calls each, N from
    :func:`calls_per_timing` on the warm-up's time per call (``min_region_s=0`` gives N = 1: one call per event
    pair, harness version 2's method)."""
    if warmup < 0 or repeats < 1:
        raise ValueError("warmup must be >= 0 and repeats >= 1")
    for _ in range(warmup):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    calls = 1
    if min_region_s > 0:  # one call alone includes its launch; a short batch then refines N
        calls = calls_per_timing(_region_s(fn, torch, device, 1), min_region_s, max_calls)
        if calls > 1:
            few = min(calls, 10)
            calls = calls_per_timing(_region_s(fn, torch, device, few) / few, min_region_s, max_calls)
    pairs = [_region_s(fn, torch, device, calls) for _ in range(repeats)]
    return Timing(tuple(p / calls for p in pairs), calls, tuple(pairs))


def _is_oom(torch, exc: BaseException) -> bool:
    oom = getattr(torch.cuda, "OutOfMemoryError", ())
    return isinstance(exc, oom) or "out of memory" in str(exc).lower()


def _matmul_fn(torch, dtype: str, m: int, n: int, k: int, device: str, gen):
    """Build inputs and return a zero-argument callable computing one product."""
    if dtype.startswith("fp8"):
        # FP8 GEMM: A row-major, B column-major, per-tensor scales, BF16 output (torch._scaled_mm)
        fp8 = getattr(torch, TORCH_DTYPES[dtype])
        a = torch.randn(m, k, device=device, generator=gen).to(fp8)
        b = torch.randn(n, k, device=device, generator=gen).to(fp8).t()
        one = torch.tensor(1.0, device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    tdt = getattr(torch, TORCH_DTYPES[dtype])
    a = torch.randn(m, k, device=device, generator=gen, dtype=torch.float32).to(tdt)
    b = torch.randn(k, n, device=device, generator=gen, dtype=torch.float32).to(tdt)
    return lambda: torch.matmul(a, b)


def matmul_row(torch, dtype: str, m: int, n: int, k: int, device: str, warmup: int, repeats: int,
               seed: int = 0) -> dict:
    """Time one matmul shape; a results.json row: shape, status, raw per-repeat times, median and best."""
    row = {"dtype": dtype, "m": m, "n": n, "k": k}
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    gen = torch.Generator(device=device).manual_seed(seed)
    try:
        fn = _matmul_fn(torch, dtype, m, n, k, device, gen)
        t = time_calls(fn, torch, device, warmup, repeats)
        graph = graph_row(torch, fn, warmup, repeats) if device == "cuda" and t.best_s < GRAPH_BELOW_S else {}
    except Exception as exc:  # noqa: BLE001 — OOM or an unsupported dtype becomes a row, the sweep goes on
        if device == "cuda":
            torch.cuda.empty_cache()
        status = "oom" if _is_oom(torch, exc) else "error"
        return {**row, "status": status, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    finally:
        fn = None  # noqa: F841 — free the inputs before the next shape
        if device == "cuda":
            torch.cuda.empty_cache()
    return {**row, "status": "ok", **_times(t), **graph}


def graph_timing(fn, torch, warmup: int, repeats: int, calls: int = GRAPH_CALLS) -> Timing:
    """Time ``fn()`` as the GPU runs it without the host: ``calls`` calls captured once as a CUDA graph (after three
    calls on a side stream, as PyTorch's graph capture asks), the graph replayed back to back (:func:`time_calls`);
    per-call times are the replay's divided by ``calls``."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    t = time_calls(graph.replay, torch, "cuda", warmup, repeats)
    return Timing(tuple(x / calls for x in t.times_s), t.calls * calls, t.pair_times_s)


def graph_row(torch, fn, warmup: int, repeats: int) -> dict:
    """The ``graph_*`` fields of a matmul row (``fn``: the row's own product, already warm), or ``graph_error``
    where the capture fails: the back-to-back figure stands either way."""
    try:
        t = graph_timing(fn, torch, warmup, repeats)
    except Exception as exc:  # noqa: BLE001 — a capture this torch refuses leaves the queued figure alone
        return {"graph_error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    finally:
        torch.cuda.synchronize()
    return {"graph_times_s": list(t.times_s), "graph_best_s": t.best_s, "graph_median_s": t.median_s,
            "graph_calls_per_timing": t.calls, "graph_pair_times_s": list(t.pair_times_s)}


def _times(t: Timing) -> dict:
    return {"times_s": list(t.times_s), "median_s": t.median_s, "best_s": t.best_s, "spread": t.spread,
            "calls_per_timing": t.calls, "pair_times_s": list(t.pair_times_s or t.times_s)}


def memory_row(torch, kernel: str, n_elements: int, device: str, warmup: int, repeats: int,
               seed: int = 0) -> dict:
    """Time a memory-bound kernel on fp32 arrays: ``copy`` (b = a) or ``triad`` (a = b + s·c); the bytes each
    moves are ``kernels.vector_bytes`` (derived when drawn)."""
    if kernel not in MEMORY_KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; use one of {', '.join(MEMORY_KERNELS)}")
    row = {"kernel": kernel, "elements": n_elements, "element_bytes": MEMORY_ELEMENT_BYTES}
    gen = torch.Generator(device=device).manual_seed(seed)
    try:
        a = torch.rand(n_elements, device=device, generator=gen)
        b = torch.rand(n_elements, device=device, generator=gen)
        c = torch.rand(n_elements, device=device, generator=gen)
        fn = (lambda: b.copy_(a)) if kernel == "copy" else (lambda: torch.add(b, c, alpha=3.0, out=a))
        t = time_calls(fn, torch, device, warmup, repeats)
    except Exception as exc:  # noqa: BLE001
        status = "oom" if _is_oom(torch, exc) else "error"
        return {**row, "status": status, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    return {**row, "status": "ok", **_times(t)}


def square_and_skinny_shapes(max_n: int) -> list[tuple[int, int, int]]:
    """Square shapes 64..max_n (powers of two) and skinny ones (m = 1, 16 against n = k = max_n // 2)."""
    shapes, n = [], 64
    while n <= max_n:
        shapes.append((n, n, n))
        n *= 2
    half = max(64, max_n // 2)
    shapes += [(1, half, half), (16, half, half), (half, half, 64)]
    return shapes


def environment(torch) -> dict:
    """Library versions and threading: what a reader needs to reproduce a number."""
    import platform
    import sys
    import re
    cfg = torch.__config__.show()
    blas = (re.search(r"\bBLAS_INFO=([^,\s]+)", cfg) or [None, None])[1]
    lapack = (re.search(r"\bLAPACK_INFO=([^,\s]+)", cfg) or [None, None])[1]
    cpu_capability = (re.search(r"CPU capability usage: (\S+)", cfg) or [None, None])[1]
    env = {"python": sys.version.split()[0], "platform": platform.platform(), "torch": torch.__version__,
           "torch_threads": torch.get_num_threads(), "blas": blas, "lapack": lapack, "cpu_capability": cpu_capability,
           "mkldnn": bool(getattr(torch.backends, "mkldnn", None) and torch.backends.mkldnn.is_available()),
           "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None,
           "harness_version": HARNESS_VERSION}
    return env


def independent_check(torch, n: int, dtype: str = "fp32", calls: int = 5) -> dict:
    """A plain, independent check of the harness on the CPU: ``calls`` back-to-back torch.matmul of n³ timed as one
    block with perf_counter, after one untimed call. Returns the raw timing ({n, dtype, calls, elapsed_s});
    the page derives the rate and compares it with the harness's."""
    tdt = getattr(torch, TORCH_DTYPES[dtype])
    a, b = torch.rand(n, n).to(tdt), torch.rand(n, n).to(tdt)
    torch.matmul(a, b)
    t0 = time.perf_counter()
    for _ in range(calls):
        torch.matmul(a, b)
    return {"n": n, "dtype": dtype, "calls": calls, "elapsed_s": time.perf_counter() - t0}


# ------------------------------------------------------------------------------ memory hierarchy sweep (CPU)

#: the hierarchy sweep's method; bump when what it times changes
CACHE_SWEEP_VERSION = 1


def working_set_sizes(low_B: int = 4 * 2**10, high_B: int = 512 * 2**20, per_octave: int = 2) -> list[int]:
    """Working-set sizes from ``low_B`` to ``high_B``, ``per_octave`` points per doubling, each a multiple of
    4 KiB (a page), without repeats: the x axis of the hierarchy sweep."""
    if not 0 < low_B <= high_B or per_octave < 1:
        raise ValueError("need 0 < low_B <= high_B and per_octave >= 1")
    sizes, i = [], 0
    while True:
        s = int(round(low_B * 2 ** (i / per_octave) / 4096)) * 4096
        if s > high_B:
            break
        if s >= 4096 and (not sizes or s > sizes[-1]):
            sizes.append(s)
        i += 1
    return sizes


def cache_sweep(torch, sizes_B, threads: int = 1, bytes_per_call: int = 256 * 2**20, warmup: int = 1,
                repeats: int = 5, seed: int = 0) -> list[dict]:
    """Read bandwidth of this CPU against working-set size: the memory-hierarchy sweep.

    For each size S, one fp32 buffer of S bytes is read ``passes`` times per timed call by summing a stride-0
    view of it (``x.expand(passes, n).sum()``): the same S bytes are read again and again, so while S fits in a
    cache level, the reads come from that level; passes = max(1, bytes_per_call // S), so every call reads
    about the same number of bytes and per-call overhead stays negligible. The process is pinned to the first
    ``threads`` CPUs it may use, and torch to ``threads`` threads; both are restored afterwards.

    Rows keep raw per-repeat times and the shape (working_set_B, passes); the read rate is
    passes × working_set_B / time, derived when drawn. What it measures is the rate a summing loop reads at,
    which at the smallest sizes can be limited by the adds rather than by the L1 cache: say so when quoting it.
    Standard library + torch only. Used in: book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md.
    """
    import os
    if threads < 1 or bytes_per_call < 1:
        raise ValueError("threads and bytes_per_call must be >= 1")
    old_threads = torch.get_num_threads()
    can_pin = hasattr(os, "sched_getaffinity") and hasattr(os, "sched_setaffinity")
    old_cpus = os.sched_getaffinity(0) if can_pin else None
    rows = []
    try:
        if can_pin:
            allowed = sorted(old_cpus)
            if threads > len(allowed):
                raise ValueError(f"{threads} threads asked for, but only {len(allowed)} CPUs are usable")
            os.sched_setaffinity(0, set(allowed[:threads]))
        torch.set_num_threads(threads)
        gen = torch.Generator().manual_seed(seed)
        for size in sizes_B:
            n = max(1, int(size) // MEMORY_ELEMENT_BYTES)
            passes = max(1, bytes_per_call // (n * MEMORY_ELEMENT_BYTES))
            row = {"working_set_B": n * MEMORY_ELEMENT_BYTES, "passes": passes,
                   "element_bytes": MEMORY_ELEMENT_BYTES, "threads": threads}
            try:
                x = torch.rand(n, generator=gen)
                view = x.expand(passes, n)
                t = time_calls(lambda: view.sum(), torch, "cpu", warmup, repeats)
            except Exception as exc:  # noqa: BLE001 — one failed size becomes a row, the sweep goes on
                rows.append({**row, "status": "oom" if _is_oom(torch, exc) else "error",
                             "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"})
                continue
            rows.append({**row, "status": "ok", **_times(t)})
    finally:
        torch.set_num_threads(old_threads)
        if can_pin:
            os.sched_setaffinity(0, old_cpus)
    return rows
