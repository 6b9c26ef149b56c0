"""Lab 01's analysis: expected (α–β model) against measured AllReduce, ours and others' (public nccl-tests logs
read with x4lib.nccl_log), and the busbw-against-size curves. Used in: book/lab-01-collectives.md.
"""
from __future__ import annotations

import math
from pathlib import Path

from x4lib import collectives as coll
from x4lib import nccl_log

ROOT = Path(__file__).resolve().parent.parent
LOG_DIR = ROOT / "tests" / "data" / "nccl"
#: the lab's three sizes, as nccl-tests parses "-b 1M", "-b 100M", "-b 1G" (powers of two)
LAB_SIZES = ("1M", "100M", "1G")
#: public logs shown in the lab: file -> (bib key, what it is)
PUBLIC_LOGS = {
    "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log":
        ("a3mega-nccl-log-2025", "2 × 8 H100 80GB HBM3, Google Cloud A3 Mega (GPUDirect-TCPXO over Ethernet)"),
    "rccl-tests_mi300x-x16_2node_all_reduce_hisohara.log":
        ("hisohara-rccl-log-2025", "2 × 8 AMD Instinct MI300X (rccl-tests)"),
}


def lab_sizes_B() -> list[int]:
    return [coll.parse_size(s) for s in LAB_SIZES]


def expected_rows(cluster_ids, collective: str = "all_reduce", sizes=None, in_network: bool = False) -> list[dict]:
    """Model predictions in display units (µs, GB/s) for each preset and size."""
    rows = []
    for cid in cluster_ids:
        for S in sizes or lab_sizes_B():
            p = coll.predict(collective, S, cid, in_network=in_network)
            rows.append({"cluster": cid, "size": coll.format_size(S), "size (B)": S,
                         "time (µs)": round(p.time_s * 1e6, 1), "algbw (GB/s)": round(p.algbw_Bps / 1e9, 1),
                         "busbw (GB/s)": round(p.busbw_Bps / 1e9, 1), "algorithm": p.algorithm,
                         "bottleneck": p.bottleneck, "bound": p.bound})
    return rows


def read_public(name: str) -> nccl_log.ParsedLog:
    return nccl_log.read_path(LOG_DIR / name)


def nearest_row(log: nccl_log.ParsedLog, size_B: int):
    """The log row nearest to ``size_B`` on a log scale (published sweeps go in powers of two)."""
    return min(log.rows, key=lambda r: abs(math.log(r.size_bytes / size_B)))


def measured_vs_expected(name: str, cluster_id: str, collective: str = "all_reduce") -> list[dict]:
    """For each lab size: the nearest row of a public log (theirs, cited) beside the model for a preset."""
    key, _ = PUBLIC_LOGS[name]
    log = read_public(name)
    rows = []
    for S in lab_sizes_B():
        r = nearest_row(log, S)
        p = coll.predict(collective, r.size_bytes, cluster_id)
        meas = r.out_of_place
        rows.append({"lab size": coll.format_size(S), "log row": coll.format_size(r.size_bytes),
                     "model time (µs)": round(p.time_s * 1e6, 1), "measured time (µs)": meas.time_us,
                     "model busbw (GB/s)": round(p.busbw_Bps / 1e9, 1), "measured busbw (GB/s)": meas.busbw_gb_s,
                     "measured / model": f"{meas.busbw_gb_s / (p.busbw_Bps / 1e9):.0%}",
                     "model bottleneck": p.bottleneck, "measured by": f"{key} (theirs)"})
    return rows


def model_curve(cluster_id: str, collective: str = "all_reduce", lo_B: int = 2**10, hi_B: int = 2**33,
                in_network: bool = False) -> list[dict]:
    """busbw [GB/s] against size for the model, powers of two from ``lo_B`` to ``hi_B``."""
    out, S = [], lo_B
    while S <= hi_B:
        p = coll.predict(collective, S, cluster_id, in_network=in_network)
        out.append({"x": S, "y": p.busbw_Bps / 1e9})
        S *= 2
    return out


def log_points(log: nccl_log.ParsedLog) -> list[dict]:
    return [{"x": r.size_bytes, "y": r.out_of_place.busbw_gb_s} for r in log.rows
            if r.out_of_place and r.out_of_place.busbw_gb_s]


def run_points(results: dict, collective: str = "all_reduce") -> list[dict]:
    """Our measured busbw (in-place column) from a lab01 results.json."""
    for c in results["collectives"]:
        if c["collective"] == collective and c.get("supported", True):
            return [{"x": r["size_bytes"], "y": r["in_place"]["busbw_gb_s"]} for r in c["rows"]
                    if r.get("in_place") and r["in_place"].get("busbw_gb_s")]
    return []


def run_table(results: dict) -> list[dict]:
    """One row per collective and size of a run (in-place column; median time where the run kept every
    iteration, else the mean nccl-tests prints), busbw and #wrong."""
    rows = []
    for c in results["collectives"]:
        if not c.get("supported", True):
            rows.append({"collective": c["collective"], "size": "—", "note": c.get("note", "not supported")})
            continue
        for r in c["rows"]:
            ip = r.get("in_place") or r
            rows.append({"collective": c["collective"], "size": coll.format_size(r["size_bytes"]),
                         "time (µs)": round(ip.get("time_us_median", ip["time_us"]), 1),
                         "busbw (GB/s)": round(ip["busbw_gb_s"], 3),
                         "#wrong": "N/A" if ip.get("wrong") is None else str(ip["wrong"])})
    return rows


def describe_run(results: dict) -> str:
    """One sentence saying what a lab01 run is: device as detected, backend, ranks, hosts, and where it came from."""
    src = results.get("source", "measured")
    how = "imported from an nccl-tests log" if src != "measured" else "measured with the book's benchmark"
    return (f"{results['nranks']} {results['backend']} ranks on {results.get('nhosts', 1)} host(s) of "
            f"{results['device']['detected_name']}, {how} (run started {results['started_utc']})")


def _nearest(rows: list[dict], size_B: int) -> dict:
    return min(rows, key=lambda r: abs(math.log(r["size_bytes"] / size_B)))


def run_vs_expected(results: dict, cluster_id: str, collective: str = "all_reduce") -> list[dict]:
    """For each lab size: the nearest row of one of our runs (committed results.json) beside the model."""
    rows = []
    for c in results["collectives"]:
        if c["collective"] != collective or not c.get("supported", True) or not c["rows"]:
            continue
        for S in lab_sizes_B():
            r = _nearest(c["rows"], S)
            ip = r.get("in_place") or r
            p = coll.predict(collective, r["size_bytes"], cluster_id)
            rows.append({"lab size": coll.format_size(S), "run row": coll.format_size(r["size_bytes"]),
                         "model time (µs)": round(p.time_s * 1e6, 1), "measured time (µs)": round(ip["time_us"], 1),
                         "model busbw (GB/s)": round(p.busbw_Bps / 1e9, 1),
                         "measured busbw (GB/s)": round(ip["busbw_gb_s"], 2),
                         "measured / model": f"{ip['busbw_gb_s'] / (p.busbw_Bps / 1e9):.0%}",
                         "measured by": f"us: {results['device']['detected_name']} ({results['started_utc']})"})
    return rows


def cluster_runs(runs) -> list:
    """Committed lab01 runs made on (or imported from) a 2 × 8 cluster."""
    return [r for r in runs if r.results.get("nhosts", 1) >= 2]


def fit_vs_model(sizes_B, times_s, cluster_id: str, source: str, collective: str = "all_reduce") -> list[dict]:
    """α–β fit (relative least squares, x4lib.commbench) of measured times, beside the same fit of the model's
    times at the same sizes: α [µs] and 1/β [GB/s of algbw]. Sizes below 1 KiB are left out (launch noise)."""
    from x4lib import commbench
    pts = [(S, t) for S, t in zip(sizes_B, times_s) if S >= 1024]
    S = [p[0] for p in pts]
    meas = commbench.fit_alpha_beta(S, [p[1] for p in pts], relative=True)
    model = commbench.fit_alpha_beta(S, [coll.predict(collective, s, cluster_id).time_s for s in S], relative=True)
    return [{"fit of": label, "α (µs)": round(f.alpha_s * 1e6, 1),
             "1/β (GB/s, algbw)": None if f.inv_beta_gb_s is None else round(f.inv_beta_gb_s, 1),
             "relative RMS residual": f"{f.residual_rel_rms:.0%}", "points": f.n_points}
            for label, f in ((f"measured: {source}", meas), (f"model: {cluster_id}", model))]


def log_fit_vs_model(name: str, cluster_id: str) -> list[dict]:
    key, _ = PUBLIC_LOGS[name]
    log = read_public(name)
    rows = [r for r in log.rows if r.out_of_place and r.out_of_place.time_us]
    return fit_vs_model([r.size_bytes for r in rows], [r.out_of_place.time_us * 1e-6 for r in rows], cluster_id,
                        f"{key} (theirs)")
