"""The collective model against the stored public logs: fitted on some logs, scored on the others.

NCCL's tuner (x4lib.network.nccl_tuner, by the NCCL version a log ran) picks the algorithm and protocol; its estimate
is a price for choosing, not a time. A :class:`x4lib.network.collectives.Calibration` turns it into a time: per
chosen algorithm/protocol, an extra fixed cost and a bandwidth efficiency, fitted (weighted least squares on the
relative error of the time) on the logs public_logs.yaml marks ``role: fit`` (only the pairs its ``fit_pairs``
names, when it names some); every other counted row is held out and only scored. NVLS on one node also gets a
fitted cost per chunk loop (collectives.chunk_loops: NCCL shrinks the chunk for smaller calls, and its estimate has no
loops). Each log is priced with its own NCCL version (printed, or assumed with the reason in
public_logs.yaml), its own network's plugin latency and, when the run forced one, its algorithm.

No row is predicted faster than the host can issue it (:func:`host_s`): the least time of its own log's calls below
64 KiB (:func:`log_floor_s`: the host issues nccl-tests' calls back to back, one thread launching on all its GPUs in
turn; rows that are never scored), plus the host's work for each further channel the call launches on each GPU the
thread drives, a cost fitted only on the logs public_logs.yaml lists under ``host_fit`` (:func:`fit_host_channel`:
other collectives of a run whose AllReduce log is scored).
Scores are model busbw / measured busbw (= measured time / model time) per row, grouped by fabric (the log's
``kind``) and size class (<= 1 MiB, 1-64 MiB, >= 128 MiB). Targets (issue 29): rows of 128 MiB and more within
10 % median per fabric and no cluster's median above 15 %; the 1 MiB row within a factor of 1.5 on every cluster.
Logs the model does not describe (status not_modelled) are listed with that label and never predicted; a counted
log whose measured times are not those of a steady run (:func:`first_unsteady_doubling`, a test of the measurements
alone) is flagged like the logs public_logs.yaml flags, shown and never counted (:func:`log_status`).
Used in: book/lab-01-collectives.md.
"""
from __future__ import annotations

import functools
import statistics
from types import MappingProxyType

from x4lib.network import collectives as coll
from x4lib.network.collectives import Calibration

#: size classes of the validation: (label, smallest row [B], largest row [B])
SIZE_CLASSES = (("≤ 1 MiB", 2**16, 2**20), ("1–64 MiB", 2**20 + 1, 2**26), ("≥ 128 MiB", 2**27, 2**40))
#: rows below this size are left out (launch jitter of the benchmark, not the collective)
MIN_ROW_B = 2**16
TARGET_LARGE_MEDIAN = 0.10
TARGET_LARGE_CLUSTER = 0.15
TARGET_SMALL_FACTOR = 1.5
#: the steady-rate test (:func:`unsteady_step`) reads a log's rows from this size
STEADY_FROM_B = 2**27
#: a fit row whose relative residual exceeds this after a first fit is dropped (an outlier row of a log), then refit
OUTLIER_REL = 0.5
#: fewest rows a pair needs to be fitted; fewer: NCCL's own price
MIN_FIT_ROWS = 3


def _logs() -> dict:
    from x4lib.catalog import published
    return published.public_logs()


def log_version(entry: dict) -> str | None:
    """The NCCL version a log is priced with: as printed or stated, else the assumed one (public_logs.yaml
    ``nccl_version_assumed``), else None (2.30.7). RCCL versions are not NCCL's: None."""
    v = entry.get("nccl_version")
    if v and not str(v).startswith("RCCL"):
        return v
    return (entry.get("nccl_version_assumed") or {}).get("version")


@functools.lru_cache(maxsize=64)
def _log(name: str):
    from x4lib.catalog import published
    from x4lib.network import nccl_log
    return nccl_log.read_path(published.LOG_DIR / name), published.log_cluster(name)


def _rows(name: str):
    log, _ = _log(name)
    return [r for r in log.rows if r.out_of_place and r.out_of_place.time_us and r.size_B >= MIN_ROW_B]


def measured_s(row) -> float:
    """A row's measured time [s]: the faster of nccl-tests' two columns (out-of-place, in-place), so that a
    start-up spike in one column (e.g. 317 µs out-of-place against 2 MiB's 227 µs in one log) is not scored."""
    t = [p.time_us for p in (row.out_of_place, row.in_place) if p is not None and p.time_us]
    return min(t) * 1e-6


def rows_floor_s(log) -> float | None:
    """The least time [s] of a parsed log's rows below MIN_ROW_B; None where it has none."""
    ts = [measured_s(r) for r in log.rows if r.out_of_place and r.out_of_place.time_us and 0 < r.size_B < MIN_ROW_B]
    return min(ts) if ts else None


@functools.lru_cache(maxsize=None)
def log_floor_s(name: str) -> float | None:
    """The least time of a log's rows below MIN_ROW_B (nccl-tests' empty to 32 KiB calls), None where it has none.
    No larger call of the same run finishes faster than it: nccl-tests issues its calls back to back from the host,
    and where one thread drives all of a node's GPUs (``nThread 1 nGpus 8``) the host launches each call on every
    GPU in turn (about 35 µs per call in the stored A100 log, against 25 µs for one process per GPU on two H100
    nodes). Read from rows that are never scored, like a run's own copy bandwidth in Lab 00. Those calls launch one
    channel each; a larger call's host time adds its further channels (:func:`host_s`)."""
    log, _ = _log(name)
    return rows_floor_s(log)


def gpus_per_thread(log) -> int:
    """The GPUs one thread of the run drove (the log's "nThread T nGpus G" line); 1 where the line is not printed
    (one process per GPU, as every stored log without it was launched)."""
    return log.gpus_per_thread or 1


def host_floor_s(log, own: float | None) -> float | None:
    """A run's host time for a one-channel call [s]: ``own``, its least time below MIN_ROW_B, where it has such
    rows; else, where one thread drove several GPUs, the host-fit logs' floor per GPU times its GPUs per thread
    (:func:`host_call_s`); else None (the host is not modelled)."""
    if own is not None:
        return own
    g = gpus_per_thread(log)
    return g * host_call_s() if g >= 2 else None


def host_s(name: str, option, size_B: int, calib: Calibration) -> float:
    """The host's time for one call of a stored log's run (collectives.host_time_s: its floor, :func:`host_floor_s`,
    plus the fitted cost of each further channel on each GPU its thread drives); 0 where the host is not
    modelled."""
    log, cluster = _log(name)
    floor = host_floor_s(log, log_floor_s(name))
    if floor is None:
        return 0.0
    return coll.host_time_s(option, size_B, cluster, floor, gpus_per_thread(log), calib.host_channel_s)


@functools.lru_cache(maxsize=None)
def _host_fit_log(name: str):
    from x4lib.catalog import published
    from x4lib.network import nccl_log
    return nccl_log.read_path(published.LOG_DIR / name)


@functools.lru_cache(maxsize=1)
def host_call_s() -> float:
    """The host's time per call and GPU [s] of a run whose thread drives several GPUs: the median over the host-fit
    logs (public_logs.yaml ``host_fit``) of their floor over their GPUs per thread; 0 without such a log."""
    from x4lib.catalog import published
    xs = []
    for name in published.host_fit_logs():
        log = _host_fit_log(name)
        floor = rows_floor_s(log)
        if floor is not None:
            xs.append(floor / gpus_per_thread(log))
    return statistics.median(xs) if xs else 0.0


def host_fit_points(names=None) -> list[tuple[float, float, float, str, int]]:
    """The rows the host's cost per channel is fitted on (public_logs.yaml ``host_fit``, never an AllReduce log
    that is scored): (x = further channels × GPUs per thread, y = measured − floor [s], measured [s], file, size),
    for rows from MIN_ROW_B where NCCL's own estimate of the call (its chosen pair, the run's NCCL version) is below
    the log's floor, i.e. where the GPU's work hides under the host's and the call's time is the host's."""
    from x4lib.catalog import published
    host_logs = published.host_fit_logs()
    out = []
    for name in (host_logs if names is None else names):
        e = host_logs[name]
        log = _host_fit_log(name)
        _, cluster = _log(e["same_run_as"])
        floor, g = rows_floor_s(log), gpus_per_thread(log)
        version = log_version(_logs()[e["same_run_as"]])
        if floor is None or cluster is None:
            continue
        for r in log.rows:
            if not (r.out_of_place and r.out_of_place.time_us and r.size_B >= MIN_ROW_B):
                continue
            o = min(coll.options(e["collective"], r.size_B, cluster, nccl_version=version), key=lambda o: o.time_s)
            if o.time_s >= floor:
                continue
            x = (coll.call_channels(o, r.size_B, cluster) - 1) * g
            out.append((float(x), measured_s(r) - floor, measured_s(r), name, r.size_B))
    return out


@functools.lru_cache(maxsize=4)
def fit_host_channel(names: tuple[str, ...] | None = None) -> tuple[float, tuple[str, ...]]:
    """The host's time per further channel and GPU [s]: weighted least squares through the origin of
    y = x · c on :func:`host_fit_points` (weights 1/measured: the relative error of the time), and the logs it
    used; (0, ()) where no row launches more than one channel."""
    pts = [p for p in host_fit_points(names) if p[0] > 0]
    if not pts:
        return 0.0, ()
    num = sum(x * y / t ** 2 for x, y, t, *_ in pts)
    den = sum(x * x / t ** 2 for x, _, t, *_ in pts)
    return max(0.0, num / den), tuple(dict.fromkeys(p[3] for p in pts))


def _option(name: str, size_B: int):
    """NCCL's chosen option for one row of a log (its version, its forced algorithm)."""
    entry = _logs()[name]
    _, cluster = _log(name)
    algos = coll._select(entry["nccl_algo"])
    opts = [o for o in coll.options("all_reduce", size_B, cluster, nccl_version=log_version(entry))
            if algos is None or o.algorithm in algos]
    return min(opts, key=lambda o: o.time_s), cluster


def fit_names() -> list[str]:
    """The logs the calibration is fitted on (public_logs.yaml role: fit, counted logs only)."""
    return [n for n, e in _logs().items() if e.get("role") == "fit" and log_status(n)[0] == "use"]


def fit_pairs(name: str) -> frozenset | None:
    """The "algorithm/protocol" pairs a fit log fits (public_logs.yaml ``fit_pairs``); None: every pair. Its rows
    of other pairs stay held out."""
    pairs = _logs()[name].get("fit_pairs")
    return None if pairs is None else frozenset(pairs)


def is_fit_row(name: str, pair: str, calib: Calibration) -> bool:
    """The row (of log ``name``, picked pair ``pair``) was fitted on, not held out."""
    pairs = fit_pairs(name)
    return name in calib.fitted_on and (pairs is None or pair in pairs)


def fit(names: list[str] | tuple[str, ...] | None = None, ring_channel: bool = True) -> Calibration:
    """Per chosen "algorithm/protocol": extra fixed cost Δ [s] and efficiency η, minimising the relative error of
    t = NCCL latency + Δ + (NCCL bandwidth term at the launched channels) / η (+ λ per chunk loop where the kernel
    loops over chunks NCCL sizes by the call: collectives.chunk_loops) over the rows of ``names`` (default:
    fit_names(); a log's ``fit_pairs`` limit which of its rows) where NCCL picks that pair; a first fit's rows off
    by more than OUTLIER_REL are dropped and the pair refitted; Δ and λ are kept >= 0 (refit without them
    otherwise). Pairs with fewer than MIN_FIT_ROWS rows keep NCCL's price. The ring's rate per channel across
    nodes is fitted first (:func:`fit_ring_channel_rate`; ``ring_channel=False``: no such limit, the model before
    it, which Lab 01 shows beside it)."""
    names = tuple(fit_names() if names is None else names)
    pts: dict[str, list[tuple[float, float, float, int]]] = {}
    rate = fit_ring_channel_rate(names) if ring_channel else 0.0
    one = Calibration({}, {}, ring_channel_Bps=rate)  # Δ = 0, η = 1: the bandwidth term alone
    for name in names:
        pairs = fit_pairs(name)
        for r in _rows(name):
            o, c = _option(name, r.size_B)
            if pairs is not None and f"{o.algorithm}/{o.protocol}" not in pairs:
                continue
            x = coll.achieved_time_s(o, r.size_B, c, one) - o.latency_s
            key = coll.calibration_key(o, c)
            for k in (key, key.split("@")[0]):
                pts.setdefault(k, []).append((o.latency_s, x, measured_s(r), coll.chunk_loops(o, r.size_B, c)))
    extra, eff, loop = {}, {}, {}
    for key, p in pts.items():
        d, k, lam = _fit_pair(p)
        if d is None:
            continue
        keep = [q for q in p if abs((q[0] + d + k * q[1] + lam * q[3]) / q[2] - 1) <= OUTLIER_REL]
        d2, k2, lam2 = _fit_pair(keep)
        if d2 is not None:
            d, k, lam = d2, k2, lam2
        extra[key], eff[key] = d, 1.0 / k
        if lam:
            loop[key] = lam
    host, host_names = fit_host_channel()
    return Calibration(MappingProxyType(extra), MappingProxyType(eff), names, MappingProxyType(loop), host, host_names,
                       rate)


#: the per-channel rates [B/s] the ring's fit tries: 5 to 60 GB/s by 0.1 GB/s (a channel of 5 GB/s would leave a
#: 400 Gb/s NIC at a fifth with two channels; 60 GB/s is above any single NIC the logs have)
RING_CHANNEL_GRID_BPS = tuple(x * 1e8 for x in range(50, 601))


def ring_channel_points(names) -> dict[str, list[tuple[float, float, float, float]]]:
    """The Ring/Simple rows across nodes of ``names`` where NCCL picks that pair, per calibration key ("@N2", "@N4"):
    (NCCL latency, NCCL's bandwidth term at the launched channels, measured time, the time at 1 B/s per channel)."""
    pts: dict[str, list[tuple[float, float, float, float]]] = {}
    one = Calibration({}, {})
    for name in names:
        pairs = fit_pairs(name)
        for r in _rows(name):
            o, c = _option(name, r.size_B)
            if (o.algorithm, o.protocol) != ("ring", "Simple") or c.nodes < 2 or \
                    (pairs is not None and "ring/Simple" not in pairs):
                continue
            x = coll.achieved_time_s(o, r.size_B, c, one) - o.latency_s
            pts.setdefault(coll.calibration_key(o, c), []).append(
                (o.latency_s, x, measured_s(r), coll.ring_channel_time_s(o, r.size_B, c, per_channel_Bps=1.0)))
    return pts


def fit_ring_channel_rate(names) -> float:
    """The rate per channel [B/s] of Ring/Simple across nodes (collectives.ring_channel_time_s) that lets the
    ring's Δ and η (refitted at each rate of RING_CHANNEL_GRID_BPS, per scale) fit the rows of ``names`` best: the
    least sum of squared relative residuals. 0 (no cap) where no rate does better than none, or no such rows. The
    rows where the cap binds fix the rate; the rows of runs that reach the NIC's rate fix η."""
    pts = ring_channel_points(names)
    if not pts:
        return 0.0

    def cost(rate: float) -> float:
        total = 0.0
        for p in pts.values():
            q = [(lat, max(x, cap / rate) if rate else x, y, 0) for lat, x, y, cap in p]
            d, k, lam = _fit_pair(q)
            if d is None:
                continue
            total += sum(((lat + d + k * x) / y - 1) ** 2 for lat, x, y, _ in q)
        return total
    best, best_cost = 0.0, cost(0.0)
    for rate in RING_CHANNEL_GRID_BPS:
        c = cost(rate)
        if c < best_cost * (1 - 1e-9):
            best, best_cost = rate, c
    return float(best)


def _fit_pair(p):
    """Weighted least squares of y - lat = Δ + k·x (+ λ·loops where any point has loops) with weights 1/y (relative
    error); Δ and λ >= 0, k > 0, else the largest model without the offending terms; (None, None, None) if too few
    points."""
    import numpy as np
    if len(p) < MIN_FIT_ROWS:
        return None, None, None
    w = np.array([1 / y for _, _, y, _ in p])
    target = np.array([y - lat for lat, _, y, _ in p]) * w
    cols = {"d": np.ones(len(p)), "k": np.array([x for _, x, _, _ in p]),
            "lam": np.array([n for *_, n in p], dtype=float)}
    tries = ([("d", "k", "lam"), ("k", "lam")] if cols["lam"].any() else []) + [("d", "k"), ("k",)]
    for names in tries:
        a = np.column_stack([cols[n] * w for n in names])
        sol = dict(zip(names, np.linalg.lstsq(a, target, rcond=None)[0]))
        if sol["k"] > 0 and sol.get("d", 0.0) >= 0 and sol.get("lam", 0.0) >= 0:
            return float(sol.get("d", 0.0)), float(sol["k"]), float(sol.get("lam", 0.0))
    return None, None, None


@functools.lru_cache(maxsize=1)
def calibration() -> Calibration:
    """The calibration fitted on fit_names() (cached; the stored logs do not change while a page runs)."""
    return fit()


def row_scores(calib: Calibration | None = None) -> list[dict]:
    """Every row (>= 64 KiB) of every stored log: model busbw / measured busbw with the calibration (default: the
    fitted one) and with NCCL's bare estimate, the pair NCCL picks, the log's split (fit, held out, flagged, not
    modelled) and its fabric. Not-modelled logs get no prediction (None)."""
    calib = calibration() if calib is None else calib
    out = []
    for name, e in _logs().items():
        state = log_status(name)[0]
        status = state.replace("_", " ")
        log, cluster = _log(name)
        for r in _rows(name) if state != "not_modelled" else [x for x in log.rows if x.out_of_place and
                                                                     x.size_B >= MIN_ROW_B]:
            base = {"file": name, "fabric": e["kind"], "split": status, "size (B)": r.size_B,
                    "measured time (µs)": measured_s(r) * 1e6, "version": log_version(e)}
            if cluster is None:
                out.append({**base, "pair": "not modelled", "model / measured": None, "NCCL estimate / measured": None})
                continue
            o, _ = _option(name, r.size_B)
            t = max(coll.achieved_time_s(o, r.size_B, cluster, calib), host_s(name, o, r.size_B, calib))
            meas = measured_s(r)
            pair = f"{o.algorithm}/{o.protocol}"
            if state == "use":
                base["split"] = "fit" if is_fit_row(name, pair, calib) else "held out"
            out.append({**base, "pair": pair, "model time (µs)": t * 1e6,
                        "model / measured": meas / t, "NCCL estimate / measured": meas / o.time_s})
    return out


def first_unsteady_doubling(times_s: dict[int, float], from_B: int = STEADY_FROM_B) -> tuple[int, float, float] | None:
    """The first size S >= ``from_B`` of a run's times (size [B] -> time [s]) where the time added by doubling 2S is
    less than the time added by doubling S (t(4S) − t(2S) < t(2S) − t(S)), as (S [B], that first increment [s], the
    next [s]); None where every such triple of sizes passes. Measurements alone, no model: a steady cost a + S/B adds
    twice as much per doubling; where NCCL switches at 2S to a faster algorithm (B1 ≤ B2, fixed costs a1, a2), the
    first increment is a2 − a1 + S(2/B2 − 1/B1) and the next 2S/B2, larger by S/B1 − (a2 − a1): positive unless the
    fixed costs differ by more than the time of S bytes at the slower rate, which from 128 MiB (half a millisecond
    on the stored fabrics, Lab 01) no NCCL latency does. A run failing it did not run its smaller rows at the steady
    rate its larger ones reached (too few warm-up iterations, another job, a link still training)."""
    t = {s: x for s, x in times_s.items() if s >= from_B}
    for s in sorted(t):
        if 2 * s in t and 4 * s in t and t[4 * s] - t[2 * s] < t[2 * s] - t[s]:
            return s, t[2 * s] - t[s], t[4 * s] - t[2 * s]
    return None


def unsteady_step(name: str, from_B: int = STEADY_FROM_B) -> tuple[int, float, float] | None:
    """:func:`first_unsteady_doubling` of a stored log's measured times (:func:`measured_s`)."""
    return first_unsteady_doubling({r.size_B: measured_s(r) for r in _rows(name)}, from_B)


def log_status(name: str) -> tuple[str, str | None]:
    """A stored log's status for scoring and why: public_logs.yaml's (use, flagged, not_modelled; its ``why``),
    except that a counted log failing the steady-rate test (:func:`unsteady_step`) is flagged, with the rows that
    fail it as the reason."""
    e = _logs()[name]
    if e["status"] == "use":
        bad = unsteady_step(name)
        if bad is not None:
            from x4lib.network import sizes
            s, d1, d2 = bad
            return "flagged", (f"not at a steady rate: doubling {sizes.label(2 * s)} to {sizes.label(4 * s)} adds "
                               f"{d2 * 1e6:,.0f} µs, less than the {d1 * 1e6:,.0f} µs that doubling "
                               f"{sizes.label(s)} added")
    return e["status"], e.get("why")


def short_name(name: str) -> str:
    """A log's name for a table cell: GPU, ranks, nodes and source (the file name without tool and collective)."""
    stem = name.removesuffix(".log").split("_")
    return " ".join(p for p in (stem[1], stem[2] if stem[2].endswith("node") else "", stem[-1]) if p)


def size_class(size_B: int) -> str | None:
    return next((label for label, lo, hi in SIZE_CLASSES if lo <= size_B <= hi), None)


def _err(ratio: float) -> float:
    return abs(ratio - 1)


def validation_rows(calib: Calibration | None = None, key: str = "model / measured") -> list[dict]:
    """The validation table: one row per fabric, size class and split (fit / held out; flagged and not modelled
    listed apart): logs, rows, median |model/measured − 1|, the worst log's median, and at 1 MiB the worst factor
    max(r, 1/r); ``key`` "NCCL estimate / measured" scores NCCL's bare estimate instead. Not-modelled fabrics get
    the label "not modelled" and no numbers."""
    rows = row_scores(calib)
    out = []
    fabrics = list(dict.fromkeys(r["fabric"] for r in rows))
    for fab in fabrics:
        for label, _, _ in SIZE_CLASSES:
            for split in ("fit", "held out", "flagged", "not modelled"):
                mine = [r for r in rows if r["fabric"] == fab and r["split"] == split and size_class(r["size (B)"])
                        == label]
                if not mine:
                    continue
                logs = sorted({r["file"] for r in mine})
                if split == "not modelled":
                    out.append({"fabric": fab, "size class": label, "split": split, "logs": len(logs),
                                "rows": len(mine), "median |error|": None, "worst log median |error|": None,
                                "worst 1 MiB factor": None, "worst log": None, "worst log model / measured": None,
                                "status": "not modelled"})
                    continue
                errs = [_err(r[key]) for r in mine]
                per_log = [statistics.median(_err(r[key]) for r in mine if r["file"] == f) for f in logs]
                worst = logs[per_log.index(max(per_log))]
                mib = {r["file"]: max(r[key], 1 / r[key]) for r in mine if r["size (B)"] == 2**20}
                worst_mib = max(mib, key=mib.get) if mib else None
                worst_ratio = statistics.median(r[key] for r in mine if r["file"] == worst)
                out.append({"fabric": fab, "size class": label, "split": split, "logs": len(logs), "rows": len(mine),
                            "median |error|": statistics.median(errs), "worst log median |error|": max(per_log),
                            "worst 1 MiB factor": mib[worst_mib] if mib else None,
                            "worst log": short_name(worst_mib if (label == "≤ 1 MiB" and mib) else worst),
                            "worst log model / measured": worst_ratio,
                            "status": _status(label, statistics.median(errs), max(per_log),
                                              mib[worst_mib] if mib else None)
                            if split != "flagged" else "flagged (not counted)"})
    return out


def _status(label: str, median: float, worst: float, mib: float | None) -> str:
    if label == "≥ 128 MiB":
        ok = median <= TARGET_LARGE_MEDIAN and worst <= TARGET_LARGE_CLUSTER
        return "met" if ok else ("missed: median" if median > TARGET_LARGE_MEDIAN else "missed: one cluster")
    if label == "≤ 1 MiB" and mib is not None:
        return "met" if mib <= TARGET_SMALL_FACTOR else "missed: 1 MiB"
    return "no target"


def cluster_rows(calib: Calibration | None = None) -> list[dict]:
    """Per log and size class: its split, NCCL version priced, the pairs NCCL picks, and the median model/measured
    with the calibration and with NCCL's bare estimate (None where not modelled)."""
    rows = row_scores(calib)
    out = []
    for f in dict.fromkeys(r["file"] for r in rows):
        for label, _, _ in SIZE_CLASSES:
            mine = [r for r in rows if r["file"] == f and size_class(r["size (B)"]) == label]
            if not mine:
                continue
            m = mine[0]
            have = [r for r in mine if r["model / measured"] is not None]
            out.append({"file": f, "fabric": m["fabric"], "split": m["split"], "size class": label,
                        "NCCL version": m["version"] or "2.30.7 (not stated)",
                        "pairs": ", ".join(dict.fromkeys(r["pair"] for r in mine)), "rows": len(mine),
                        "model / measured": statistics.median(r["model / measured"] for r in have) if have else None,
                        "NCCL estimate / measured": statistics.median(r["NCCL estimate / measured"] for r in have)
                        if have else None})
    return out


def target_summary(rows: list[dict] | None = None) -> dict:
    """Held-out rows only: which (fabric, size class) targets are met and which are missed."""
    rows = validation_rows() if rows is None else rows
    held = [r for r in rows if r["split"] == "held out" and (r["status"] == "met" or r["status"].startswith("missed"))]
    return {"met": [f"{r['fabric']}, {r['size class']}" for r in held if r["status"] == "met"],
            "missed": [f"{r['fabric']}, {r['size class']} ({r['status'].removeprefix('missed: ')})" for r in held
                       if r["status"].startswith("missed")],
            "not_modelled": sorted({r["fabric"] for r in rows if r["status"] == "not modelled"})}


def calibration_rows(calib: Calibration | None = None) -> list[dict]:
    """The fitted constants, display units: pair and scale, extra fixed cost (µs), efficiency, cost per chunk loop
    (µs; None for the pairs without one), most per channel on the network (GB/s; Ring/Simple across nodes, None
    elsewhere)."""
    calib = calibration() if calib is None else calib
    per_channel = calib.ring_channel_Bps / 1e9 if calib.ring_channel_Bps else None
    return [{"algorithm/protocol@scale": k, "extra fixed cost (µs)": calib.extra_latency_s[k] * 1e6,
             "bandwidth efficiency": calib.efficiency[k],
             "cost per loop (µs)": calib.loop_s[k] * 1e6 if k in calib.loop_s else None,
             "most per channel (GB/s)": per_channel if k in ("ring/Simple@N2", "ring/Simple@N4") else None}
            for k in sorted(calib.extra_latency_s)]



# ------------------------------------------------------------------------------------ NCCL's own numbers

#: NCCL's algorithm and protocol ids in its per-call TUNING lines (src/include/device.h / nccl_tuner.h)
_ALGO_IDS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
_PROTO_IDS = ("LL", "LL128", "Simple")
#: the stored TUNING outputs compared with the model: file -> (cluster as the thread describes it, NCCL version
#: inferred from the output's format and constants, what is comparable)
TUNING_FILES = {
    "nccl-1453_h100-3node-ib_percall-time.txt": (
        {"nodes": 3, "gpus_per_node": 8, "nics_per_node": 8, "nic_gbit_s": 400}, "2.22.3",
        "latency comparable (same nodes and GPUs); bandwidth not: the NICs are not stated in the excerpt "
        "(8 × 400 Gb/s assumed) and the thread's cluster misbehaved"),
    "nccl-1519_h100-2node_tuning-table_partial.txt": (
        {"nodes": 2, "gpus_per_node": 8, "nics_per_node": 8, "nic_gbit_s": 400}, "2.22.3",
        "latency comparable; bandwidth not: the thread's system used one NIC (its problem)"),
}


def _tuning_path(name: str):
    from x4lib import paths
    return paths.REPO_ROOT / "tests" / "data" / "nccl_tuning" / name


def parse_tuning(text: str) -> dict:
    """NCCL's TUNING output: per-call lines ("N Bytes -> Algo a proto p time t", 2.21-2.23 numeric form) and the
    table's AllReduce... rows ("Name | lat/ bw | ...", first block Tree, Ring, CollNetDirect). Returns {"calls":
    [{size_B, algorithm, protocol, time_us}], "table": {(collective, algorithm, protocol): (latency_us, algbw)}}."""
    import re
    calls, seen, table = [], set(), {}
    for m in re.finditer(r"(\d+) Bytes -> Algo (\d+) proto (\d+) time ([0-9.]+)", text):
        key = (int(m[1]), int(m[2]), int(m[3]))
        if key not in seen:
            seen.add(key)
            calls.append({"size_B": key[0], "algorithm": _ALGO_IDS[key[1]], "protocol": _PROTO_IDS[key[2]],
                          "time_us": float(m[4])})
    for line in text.splitlines():
        m = re.search(r"INFO\s+(Broadcast|Reduce|AllGather|ReduceScatter|AllReduce)\s*\|(.*)", line)
        if not m:
            continue
        cells = re.findall(r"([0-9.]+)/\s*([0-9.]+)", m[2])
        for i, (lat, bw) in enumerate(cells):
            table[(m[1], _ALGO_IDS[i // 3], _PROTO_IDS[i % 3])] = (float(lat), float(bw))
    return {"calls": calls, "table": table}


def tuning_rows() -> list[dict]:
    """NCCL's own predicted numbers beside the model's, priced with the same NCCL version on the same nodes and
    GPUs: per call (size, NCCL's pick and time, the model's time for that pair and its pick) and, from a TUNING
    table, each AllReduce latency. Display units (µs). ``comparable`` says what the topology allows."""
    from x4lib.network import clusters
    out = []
    for name, (cl, version, comparable) in TUNING_FILES.items():
        parsed = parse_tuning(_tuning_path(name).read_text(encoding="utf-8"))
        c = clusters.custom_cluster(cl["nodes"], cl["gpus_per_node"], 450e9, cl["nics_per_node"],
                                    cl["nic_gbit_s"] * 1e9 / 8, nvls=True, cluster_id=name)
        for call in parsed["calls"]:
            opts = {f"{o.algorithm}/{o.protocol}": o for o in coll.options("all_reduce", call["size_B"], c,
                                                                           nccl_version=version)}
            pair = f"{call['algorithm']}/{call['protocol']}"
            mine = opts.get(pair)
            best = min(opts.values(), key=lambda o: o.time_s)
            out.append({"source": name, "NCCL version priced": version, "what": "per-call time",
                        "size (B)": call["size_B"], "NCCL's pick": pair, "NCCL (µs)": call["time_us"],
                        "model, same pair (µs)": mine.time_s * 1e6 if mine else None,
                        "model's latency (µs)": mine.latency_s * 1e6 if mine else None,
                        "model's pick": f"{best.algorithm}/{best.protocol}", "comparable": comparable})
        for (fn, a, p), (lat, bw) in sorted(parsed["table"].items()):
            if fn != "AllReduce" or bw == 0 and lat == 0:
                continue
            mine = {f"{o.algorithm}/{o.protocol}": o for o in coll.options("all_reduce", 1, c,
                                                                           nccl_version=version)}.get(f"{a}/{p}")
            out.append({"source": name, "NCCL version priced": version, "what": "table latency",
                        "size (B)": None, "NCCL's pick": f"{a}/{p}", "NCCL (µs)": lat,
                        "model, same pair (µs)": mine.latency_s * 1e6 if mine else None,
                        "model's latency (µs)": mine.latency_s * 1e6 if mine else None,
                        "model's pick": None, "comparable": comparable})
    return out
