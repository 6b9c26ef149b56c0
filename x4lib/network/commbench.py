"""A collective benchmark with torch.distributed that prints the same table as nccl-tests.

    python -m runners lab01 --profile local-cpu                   # gloo ranks spawned on this CPU
    torchrun --nnodes 2 --nproc-per-node 8 ... -m runners lab01 --profile cluster-2x8 --measure-only  # NCCL

Any backend: gloo on CPU (2–4 processes on one machine, spawned here with torch.multiprocessing, or run under
torchrun), NCCL on GPUs under torchrun (RANK, WORLD_SIZE, LOCAL_RANK from the environment).

Conventions (nccl-tests, NVIDIA/nccl-tests src/*.cu and doc/PERFORMANCE.md; references.bib:
nccl-tests-performance):

- ``-b S`` means S bytes of the collective's "size": count = S / typesize elements for AllReduce, Broadcast
  and Reduce; for AllGather, ReduceScatter and AllToAll each rank's piece is ``count/n`` elements rounded down
  to 16 bytes, and the printed size is the whole array (piece · n · typesize) while the printed count is the
  piece, exactly as nccl-tests prints them.
- algbw [B/s] = size / time; busbw = algbw × F(n) with F from :func:`x4lib.network.nccl_tests.busbw_factor`;
  GB/s = 10⁹ B/s.
- Timing: ``warmup`` untimed calls, a barrier, then ``iters`` calls each timed on its own (CUDA events on
  GPU, ``time.perf_counter`` on CPU, where gloo calls block until done). Each iteration's time is the
  **maximum over ranks** (the slowest rank finishes the collective), kept raw in ``times_us``; the table's
  time is the mean of those per-iteration maxima. nccl-tests' own time column (default ``-a 1``) averages
  each rank's mean iteration time over ranks instead; its per-iteration report (``i_*`` columns) uses the
  maximum over ranks, as we do. On a quiet machine the two agree closely; on a noisy one ours is higher.
- #wrong: after timing, inputs are filled with known values (rank- and index-dependent small integers, exact
  in float32), the collective runs once, and the elements that differ from the expected result are counted
  and summed over ranks (nccl-tests does the same with its own patterns).
- Out-of-place vs in-place: AllGather, ReduceScatter and AllToAll have out-of-place torch calls; in place,
  the output is a view of the input as in nccl-tests. AllToAll in place (one buffer as both) is timed but not
  checked (#wrong N/A), as in nccl-tests ("We don't support in-place alltoall"); with gloo its result is wrong.
  torch has only in-place AllReduce, Broadcast and Reduce: their out-of-place column is "copy the input into
  the output buffer, then the in-place call", which is what torch's own out-of-place (functional)
  collectives do; the copy is inside the timed region. Use the in-place column to compare with NCCL.
- A collective the backend does not implement is reported as not supported (with the error), not a crash.
  Checked here: gloo in torch 2.13 CPU runs all six (all_reduce, all_gather, broadcast, reduce,
  reduce_scatter, all_to_all); older torch releases lacked gloo reduce_scatter, which is why we probe.

Measuring imports only the standard library and torch. Used in: book/lab-01-collectives.md.
"""
from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

from x4lib.network import nccl_tests
from x4lib.network.sizes import parse_size

METHOD_VERSION = 1

#: Collectives this benchmark runs, in nccl-tests' order of its binaries; names as in x4lib.network.collectives.
SUPPORTED = ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "all_to_all")
REDOP = {"all_reduce": "sum", "reduce": "sum", "reduce_scatter": "sum"}  # others print "none"
ROOTED = ("broadcast", "reduce")
DTYPES = {"float": ("float32", 4)}  # nccl-tests' default type; the check values are exact in float32
TIMING_NOTE = ("time = mean over iterations of the slowest rank's time per iteration (max over ranks); "
               "nccl-tests' default -a 1 averages ranks instead")


# --------------------------------------------------------------------------------------------- sizes
def layout(collective: str, size_B: int, n_ranks: int, elt_B: int = 4) -> dict:
    """nccl-tests' buffer layout for ``-b size_B``: elements sent and received per rank, and the size and count
    it prints. Source: nccl-tests src/<collective>.cu, *GetCollByteCount and writeBenchmarkLinePreamble."""
    count = size_B // elt_B
    if collective in ("all_reduce", "broadcast", "reduce"):
        send = recv = piece = count
    elif collective in ("all_gather", "reduce_scatter", "all_to_all"):
        piece = (count // n_ranks) & ~(16 // elt_B - 1)
        send, recv = {"all_gather": (piece, piece * n_ranks), "reduce_scatter": (piece * n_ranks, piece),
                      "all_to_all": (piece * n_ranks, piece * n_ranks)}[collective]
    else:
        raise ValueError(f"unsupported collective {collective!r}; use one of: {', '.join(SUPPORTED)}")
    return {"send": send, "recv": recv, "count": piece, "size_B": max(send, recv) * elt_B}


def bandwidths_gb_s(collective: str, size_B: int, time_s: float, n_ranks: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (10⁹ B/s): algbw = size / time, busbw = algbw × busbw_factor(collective, n)."""
    algbw = size_B / time_s / 1e9
    return algbw, algbw * nccl_tests.busbw_factor(collective, n_ranks)


# ----------------------------------------------------------------------------------------- measuring
def _coll_fns(dist):
    ag = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    rs = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return ag, rs


def _make_case(torch, dist, collective, lay, rank, n, dev, root, in_place):
    """Buffers, the call, and a function that fills known inputs and returns (result view, expected, check?)."""
    f32 = torch.float32
    ag, rs = _coll_fns(dist)
    piece = lay["count"]
    send = torch.zeros(lay["send"], dtype=f32, device=dev)
    recv = send if in_place and collective in ("all_reduce", "broadcast", "reduce", "all_to_all") \
        else torch.zeros(lay["recv"], dtype=f32, device=dev)
    pat = lambda m, off=0: (torch.arange(off, off + m, device=dev) % 13).to(f32)  # noqa: E731
    tri = n * (n + 1) / 2

    if collective in ("all_reduce", "broadcast", "reduce"):
        call_one = {"all_reduce": lambda t: dist.all_reduce(t),
                    "broadcast": lambda t: dist.broadcast(t, src=root),
                    "reduce": lambda t: dist.reduce(t, dst=root)}[collective]
        if in_place:
            call = lambda: call_one(recv)  # noqa: E731
        else:
            def call():
                recv.copy_(send)
                call_one(recv)

        def fill():
            base = pat(piece)
            if collective == "broadcast":
                send.copy_(base + 1 if rank == root else torch.full_like(base, -1.0))
                expected = base + 1
            else:
                send.copy_(base + (rank + 1))
                expected = base * n + tri
            if not in_place:
                recv.fill_(-7.0)
            return recv, expected, collective != "reduce" or rank == root
    elif collective == "all_gather":
        inp = recv.narrow(0, rank * piece, piece) if in_place else send
        call = lambda: ag(recv, inp)  # noqa: E731

        def fill():
            recv.fill_(-7.0)
            inp.copy_(pat(piece) + (rank + 1))
            expected = torch.cat([pat(piece) + (j + 1) for j in range(n)])
            return recv, expected, True
    elif collective == "reduce_scatter":
        out = send.narrow(0, rank * piece, piece) if in_place else recv
        call = lambda: rs(out, send)  # noqa: E731

        def fill():
            send.copy_(pat(piece * n) + (rank + 1))
            if not in_place:
                out.fill_(-7.0)
            return out, pat(piece, rank * piece) * n + tri, True
    else:  # all_to_all: chunk j of rank r goes to rank j
        call = lambda: dist.all_to_all_single(recv, send)  # noqa: E731

        def fill():
            send.copy_(torch.cat([pat(piece) + (1 + rank * n + j) for j in range(n)]))
            if not in_place:
                recv.fill_(-7.0)
            expected = torch.cat([pat(piece) + (1 + j * n + rank) for j in range(n)])
            return recv, expected, True
    return call, fill


def _time_calls(torch, dist, call, warmup, iters, dev, barrier):
    """Per-iteration seconds on this rank after ``warmup`` calls and a barrier."""
    for _ in range(warmup):
        call()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    barrier()
    if dev.type == "cuda":
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        for s, e in ev:
            s.record()
            call()
            e.record()
        torch.cuda.synchronize(dev)
        return [s.elapsed_time(e) / 1e3 for s, e in ev]
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return times


def _agree(torch, dist, dev, ok: bool) -> bool:
    """True on every rank only if ``ok`` is true on every rank."""
    flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=dev)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def bench_rank(torch, dist, cfg: dict, dev) -> dict | None:
    """Run the benchmark on this rank of an initialised process group; rank 0 gets the result dict
    ({"backend", "nranks", "nhosts", "ranks", "collectives": [...], "warnings"}), other ranks None.

    ``cfg``: {"collectives": [...], "sizes": [bytes...], "warmup": int, "iters": int, "dtype": "float",
    "root": 0}."""
    rank, n = dist.get_rank(), dist.get_world_size()
    backend = str(dist.get_backend())
    dtype = cfg.get("dtype", "float")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r}: only {', '.join(DTYPES)} (nccl-tests' default) is supported")
    elt = DTYPES[dtype][1]
    root = int(cfg.get("root", 0))
    warmup, iters = int(cfg.get("warmup", 5)), int(cfg.get("iters", 20))
    if iters < 1 or warmup < 0:
        raise ValueError("iters must be >= 1 and warmup >= 0")
    sizes = [parse_size(s) for s in cfg["sizes"]]
    if dev.type == "cuda":
        barrier = lambda: dist.barrier(device_ids=[dev.index])  # noqa: E731
    else:
        barrier = dist.barrier
    me = {"rank": rank, "host": socket.gethostname(), "pid": os.getpid(),
          "device": dev.index if dev.type == "cuda" else 0,
          "bus_id": _pci_bus_id(torch, dev), "name": _device_name(torch, dev)}
    ranks = [None] * n
    dist.all_gather_object(ranks, me)
    warnings: list[str] = []
    out = []
    for coll in cfg["collectives"]:
        if coll not in SUPPORTED:
            raise ValueError(f"unsupported collective {coll!r}; use one of: {', '.join(SUPPORTED)}")
        rec = {"collective": coll, "nccl_tests_binary": nccl_tests.NCCL_TESTS_BINARY[coll], "redop": REDOP.get(coll, "none"),
               "root": root if coll in ROOTED else -1, "type": dtype, "supported": True, "note": "",
               "out_of_place_method": ("copy input to output, then the in-place call (torch has no out-of-place "
                                       f"{coll}); the copy is timed") if coll in ("all_reduce", "broadcast", "reduce")
               else "native out-of-place call",
               "in_place_method": "one buffer as input and output; not checked (#wrong N/A): nccl-tests does not "
                                  "support in-place alltoall, and gloo's result is wrong when the buffers alias"
               if coll == "all_to_all" else "native in-place call" if coll in ("all_reduce", "broadcast", "reduce")
               else "output is a view of the input at this rank's offset (nccl-tests' in-place layout)",
               "rows": []}
        # probe: does the backend implement it? (tiny, untimed; every rank must agree before going on)
        err = None
        try:
            call, fill = _make_case(torch, dist, coll, layout(coll, 16 * n * elt, n, elt), rank, n, dev, root, False)
            call()
        except Exception as exc:  # noqa: BLE001 — a backend without the op raises; anything else is reported
            err = _first_line(exc)
        if not _agree(torch, dist, dev, err is None):
            rec["supported"] = False
            rec["note"] = f"not supported by {backend} (torch {torch.__version__}): {err or 'failed on another rank'}"
            warnings.append(f"{coll}: {rec['note']}")
            out.append(rec)
            continue
        for size in sizes:
            lay = layout(coll, size, n, elt)
            if lay["count"] == 0:
                warnings.append(f"{coll} {size} B: no whole element per rank at this size; row skipped")
                continue
            row = {"size_bytes": lay["size_B"], "count": lay["count"], "type": dtype, "redop": rec["redop"],
                   "root": rec["root"]}
            failed = None
            for in_place in (False, True):
                try:
                    call, fill = _make_case(torch, dist, coll, lay, rank, n, dev, root, in_place)
                    err = None
                except Exception as exc:  # noqa: BLE001 — e.g. out of memory at this size on this rank
                    call, err = None, _first_line(exc)
                if not _agree(torch, dist, dev, err is None):
                    failed = err or "failed on another rank"
                    break
                t = _time_calls(torch, dist, call, warmup, iters, dev, barrier)
                tt = torch.tensor(t, dtype=torch.float64, device=dev)
                dist.all_reduce(tt, op=dist.ReduceOp.MAX)
                times_us = [x * 1e6 for x in tt.tolist()]
                got, expected, check = fill()
                if dev.type == "cuda":
                    torch.cuda.synchronize(dev)
                barrier()
                call()
                wrong = int((got != expected).sum().item()) if check else 0
                w = torch.tensor([wrong], dtype=torch.int64, device=dev)
                dist.all_reduce(w)
                wrong = int(w.item())
                if in_place and coll == "all_to_all":  # nccl-tests: "We don't support in-place alltoall"
                    wrong = None                         # timed, but not checked: #wrong prints N/A
                del call, fill, got, expected
                time_us = statistics.fmean(times_us)
                algbw, busbw = bandwidths_gb_s(coll, lay["size_B"], time_us * 1e-6, n)
                res = {"times_us": times_us, "time_us": time_us, "time_us_median": statistics.median(times_us),
                       "algbw_gb_s": algbw, "busbw_gb_s": busbw, "wrong": wrong}
                if in_place:
                    row["in_place"] = res
                else:
                    row.update(res)
                if res["wrong"]:
                    warnings.append(f"{coll} {lay['size_B']} B {'in' if in_place else 'out-of'}-place: "
                                    f"{res['wrong']} wrong elements")
            if failed:
                warnings.append(f"{coll} {lay['size_B']} B: skipped ({failed})")
                continue
            rec["rows"].append(row)
        out.append(rec)
    if rank != 0:
        return None
    return {"backend": backend, "nranks": n, "nhosts": len({r["host"] for r in ranks}), "ranks": ranks,
            "warmup": warmup, "iters": iters, "timing": TIMING_NOTE, "method_version": METHOD_VERSION,
            "torch": torch.__version__, "collectives": out, "warnings": warnings}


def _device_name(torch, dev) -> str:
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine() or "CPU"


def _pci_bus_id(torch, dev) -> str:
    if dev.type != "cuda":
        return "cpu"
    p = torch.cuda.get_device_properties(dev)
    if hasattr(p, "pci_bus_id"):
        return f"{getattr(p, 'pci_domain_id', 0):04x}:{p.pci_bus_id:02x}:{getattr(p, 'pci_device_id', 0):02x}"
    return "cuda"


# ------------------------------------------------------------------------------------ process groups
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn_worker(rank: int, n_ranks: int, port: int, cfg: dict, out_path: str, timeout_s: float) -> None:
    """One gloo rank on this machine (module-level so torch.multiprocessing can pickle it by name)."""
    import datetime
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(n_ranks),
                      LOCAL_RANK=str(rank))
    if sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    elif sys.platform == "darwin":
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo0")
    torch.set_num_threads(1)  # one core per rank; more ranks than cores halves the bandwidth (stack.md)
    dist.init_process_group("gloo", rank=rank, world_size=n_ranks, timeout=datetime.timedelta(seconds=timeout_s))
    try:
        res = bench_rank(torch, dist, cfg, torch.device("cpu"))
        if rank == 0:
            Path(out_path).write_text(json.dumps(res))
    finally:
        dist.destroy_process_group()


def run_spawned(n_ranks: int, cfg: dict, timeout_s: float = 300.0) -> dict:
    """Run the benchmark on ``n_ranks`` gloo processes on this machine; returns rank 0's result dict."""
    import tempfile
    import torch.multiprocessing as mp
    if n_ranks < 2:
        raise ValueError("a collective benchmark needs at least 2 ranks")
    with tempfile.TemporaryDirectory(prefix="commbench-") as tmp:
        out = Path(tmp) / "rank0.json"
        try:
            mp.spawn(_spawn_worker, args=(n_ranks, free_port(), cfg, str(out), timeout_s), nprocs=n_ranks, join=True)
        except mp.ProcessRaisedException as exc:  # the child's traceback is in the message; keep its last line
            last = [ln for ln in str(exc).strip().splitlines() if ln.strip()][-1]
            raise RuntimeError(f"a gloo rank failed: {last}") from None
        return json.loads(out.read_text(encoding="utf-8"))


def under_torchrun(environ=None) -> bool:
    env = os.environ if environ is None else environ
    return all(k in env for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))


def run_torchrun(cfg: dict, backend: str | None = None) -> dict | None:
    """Run under torchrun (env RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): NCCL on GPUs when
    available, else gloo. Returns the result dict on rank 0 and None on the others."""
    import torch
    import torch.distributed as dist
    local = int(os.environ["LOCAL_RANK"])
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        torch.set_num_threads(1)
        dev = torch.device("cpu")
    dist.init_process_group(backend)
    try:
        return bench_rank(torch, dist, cfg, dev)
    finally:
        dist.destroy_process_group()


# ------------------------------------------------------------------------------------------- the table
def _fstr(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: %.2f, then %.1f, %.0f, then an exponent, whatever fits ``width``."""
    for fmt in (f"%{width}.2f", f"%{width}.1f", f"%{width}.0f"):
        s = fmt % value
        if len(s) <= width:
            return s
    return (f"%{width}.1e" if width >= 7 else f"%{width}.0e") % value


def _g(value) -> str:
    return "%6s" % ("N/A" if value is None else "%g" % value)


def format_table(result: dict, coll: dict) -> str:
    """One collective as nccl-tests prints it: a '#' header (device lines, column names), one line per size
    with out-of-place and in-place time (us), algbw and busbw (GB/s, 10⁹ B/s) and #wrong, and the footer with
    '# Avg bus bandwidth' (the mean busbw over all rows, both columns, as nccl-tests computes it)."""
    name = coll["nccl_tests_binary"]
    rows = coll.get("rows", [])
    L = [f"# x4lib.network.commbench method_version {result.get('method_version', METHOD_VERSION)}: torch.distributed "
         f"backend {result['backend']}, torch {result.get('torch', '?')}, {result['nranks']} ranks on "
         f"{result['nhosts']} host(s)",
         f"# {result.get('timing', TIMING_NOTE)}",
         f"# Collective test starting: {name}"]
    sizes = [r["size_bytes"] for r in rows] or [0]
    L.append(f"# nThread 1 nGpus 1 minBytes {min(sizes)} maxBytes {max(sizes)} step: list warmup iters: "
             f"{result.get('warmup', 0)} iters: {result.get('iters', 0)} agg iters: 1 validation: 1 graph: 0")
    L.append("#")
    L.append("# Using devices")
    for r in result.get("ranks", []):
        L.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s"
                 % (r["rank"], 0, r["pid"], r["host"], r["device"], r["bus_id"], r["name"]))
    if not coll.get("supported", True):
        L += ["#", f"# {coll['collective']}: {coll['note']}", f"# Collective test concluded: {name}"]
        return "\n".join(L) + "\n"
    L.append("#")
    L.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
             % ("", "", "", "", ""))
    L.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
             % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                "time", "algbw", "busbw", "#wrong"))
    L.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
             % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    bus, errors = [], 0
    for r in rows:
        line = "%12d  %12d  %8s  %6s  %6s" % (r["size_bytes"], r["count"], r["type"], r["redop"], "%6i" % r["root"])
        for v in (r, r["in_place"]):
            line += "  %7s  %6s  %6s  %6s" % (_fstr(v["time_us"], 7), _fstr(v["algbw_gb_s"], 6),
                                              _fstr(v["busbw_gb_s"], 6), _g(v["wrong"]))
            bus.append(v["busbw_gb_s"])
            errors += bool(v["wrong"])
        L.append(line)
    L.append("# %-20s : %d %s" % ("Out of bounds values", errors, "FAILED" if errors else "OK"))
    L.append("# %-20s : %g " % ("Avg bus bandwidth", statistics.fmean(bus) if bus else 0.0))
    L.append("#")
    L.append(f"# Collective test concluded: {name}")
    return "\n".join(L) + "\n"


def format_tables(result: dict) -> str:
    """All collectives of a result, one nccl-tests block each, separated by a blank line."""
    return "\n".join(format_table(result, c) for c in result["collectives"])
