"""Page helpers of Lab 01 (book/lab-01-collectives.md): expected (NCCL's cost model, x4lib.network.collectives) against
measured collectives, ours and others' (public nccl-tests logs read with x4lib.network.nccl_log), the model's validation
on every stored public log (x4lib/data/public_logs.yaml), and the busbw-against-size curves.

A run stores the times it measured (every iteration of a measured run; the values printed in an imported log);
time statistics, algbw, busbw and the α–β fits are derived here when the page is drawn.
"""
from __future__ import annotations

import statistics

import math

from x4lib import paths
from x4lib.network import clusters, collectives as coll, nccl_log, nccl_tests, nccl_tuner, sizes, validation
from x4lib.harness import fitting
from x4lib.catalog import published
from x4lib.harness.runs import Run
from x4lib.book.tables import md_text

ROOT = paths.REPO_ROOT
LOG_DIR = published.LOG_DIR
#: the lab's three sizes, as nccl-tests parses "-b 1M", "-b 100M", "-b 1G" (powers of two)
LAB_SIZES = ("1M", "100M", "1G")
#: the targets the lab reports (computed, never asserted as a timed test): |measured/model - 1| <= 15 % on rows of
#: 128 MiB and more, and measured/model within a factor of 2 at the 1 MiB row, on the two-node InfiniBand runs
TARGET_LARGE_REL = 0.15
TARGET_SMALL_FACTOR = 2.0
TARGET_KIND = "two-node InfiniBand"
#: public logs drawn on the busbw-against-size figure: file -> (bib key, what it is)
PUBLIC_LOGS = {
    "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-qoofyk.log":
        ("nccltests-issue-309-2025", "2 × 8 H100, InfiniBand 8 × 400 Gb/s per node, default algorithm"),
    "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-gjaion-ring.log":
        ("nccltests-issue-309-2025", "2 × 8 H100, InfiniBand 8 × 400 Gb/s per node, NCCL_ALGO=Ring"),
    "nccl-tests-old_a100-x16_2node_all_reduce_deepops-k8s.log":
        ("deepops-network-operator-2022", "2 × 8 A100 (DGX A100), InfiniBand 8 × 200 Gb/s per node"),
}


def lab_sizes_B() -> list[int]:
    return [sizes.parse_size(s) for s in LAB_SIZES]


# ------------------------------------------------------------------------------------- rows of a run

def place_stats(run_results: dict, collective: str, row: dict, variant: str = "in_place") -> dict:
    """time (µs: mean, and median where every iteration was kept), algbw and busbw (GB/s) of one placement of a
    row: derived from its per-iteration times when the run kept them, else the values the log printed."""
    place = row["in_place"] if variant == "in_place" else row
    times = place.get("times_us") or []
    if times:
        mean = statistics.fmean(times)
        algbw = row["size_bytes"] / (mean * 1e-6) / 1e9
        return {"time_us": mean, "time_us_median": statistics.median(times), "algbw_gb_s": algbw,
                "busbw_gb_s": algbw * nccl_tests.busbw_factor(collective, run_results["nranks"]), "wrong": place.get("wrong")}
    return {"time_us": place["time_us"], "time_us_median": None, "algbw_gb_s": place["algbw_gb_s"],
            "busbw_gb_s": place["busbw_gb_s"], "wrong": place.get("wrong")}


def _supported(results: dict):
    return [c for c in results["collectives"] if c.get("supported", True) and c["rows"]]


def run_rows(results: dict) -> list[dict]:
    """One row per collective and size of a run (in-place column: median time where the run kept every
    iteration, else the mean nccl-tests prints), busbw and #wrong; display units."""
    rows = []
    for c in results["collectives"]:
        if not c.get("supported", True):
            rows.append({"collective": c["collective"], "size": "—", "time (µs)": None, "busbw (GB/s)": None,
                         "#wrong": c.get("note", "not supported")})
            continue
        for r in c["rows"]:
            st = place_stats(results, c["collective"], r)
            rows.append({"collective": c["collective"], "size": sizes.label(r["size_bytes"]),
                         "time (µs)": st["time_us_median"] or st["time_us"], "busbw (GB/s)": st["busbw_gb_s"],
                         "#wrong": "N/A" if st["wrong"] is None else str(st["wrong"])})
    return rows


def busbw_pivot(results: dict) -> dict:
    """The compact view of a run: busbw (GB/s) for each collective (rows) and size (columns); unsupported
    collectives are named with None."""
    out = {}
    for c in results["collectives"]:
        out[c["collective"]] = {sizes.label(r["size_bytes"]): place_stats(results, c["collective"], r)["busbw_gb_s"]
                                for r in c["rows"]} if c.get("supported", True) else {}
    return out


def run_points(results: dict, collective: str = "all_reduce") -> list[dict]:
    """Our measured busbw (in-place column) from a lab01 results.json: {x: bytes, y: GB/s}."""
    for c in _supported(results):
        if c["collective"] == collective:
            return [{"x": r["size_bytes"], "y": place_stats(results, collective, r)["busbw_gb_s"]} for r in c["rows"]]
    return []


def describe_run(results: dict) -> str:
    """One sentence saying what a lab01 run is: device as detected, backend, ranks, hosts, and where it came from."""
    how = "imported from an nccl-tests log" if results.get("source") != "measured" \
        else "measured with the book's benchmark"
    return (f"{results['nranks']} {results['backend']} ranks on {results.get('nhosts', 1)} host(s) of "
            f"{results['device']['detected_name']}, {how} (run started {results['started_utc']})")


def run_fit(results: dict, collective: str = "all_reduce") -> fitting.AlphaBetaFit | None:
    """α–β fit of a run's collective (relative least squares over the in-place column, on the median of the
    per-iteration times where the run kept them: robust to a shared CPU's spikes); None with fewer than two
    sizes."""
    for c in _supported(results):
        if c["collective"] != collective:
            continue
        pts = [(r["size_bytes"], place_stats(results, collective, r)) for r in c["rows"] if r["size_bytes"] > 0]
        if len({s for s, _ in pts}) < 2:
            return None
        return fitting.fit_alpha_beta([s for s, _ in pts], [(st["time_us_median"] or st["time_us"]) * 1e-6
                                                             for _, st in pts], relative=True)
    return None


def fit_text(fit: fitting.AlphaBetaFit | None) -> tuple[float | None, str]:
    """(α in µs, a phrase for its bandwidth term) for the page's prose."""
    if fit is None:
        return None, "no fit (fewer than two sizes)"
    if fit.inv_beta_gb_s is None:
        return fit.alpha_s * 1e6, "no resolvable bandwidth term (the sweep is too short or too noisy)"
    return fit.alpha_s * 1e6, f"a bandwidth term of {fit.inv_beta_gb_s:.2f} GB/s"


def cluster_runs(runs) -> list[Run]:
    """Committed lab01 runs made on (or imported from) two or more nodes."""
    return [r for r in runs if r.results.get("nhosts", 1) >= 2]


# ----------------------------------------------------------------------------------- expected and measured

def expected_rows(cluster_ids, collective: str = "all_reduce", sizes_B=None, algorithm: str | None = None) -> list[dict]:
    """Model predictions in display units (µs, GB/s) for each preset and size: NCCL's choice of algorithm and
    protocol (or the forced ``algorithm``), its time, algbw and busbw."""
    rows = []
    for cid in cluster_ids:
        for S in sizes_B or lab_sizes_B():
            p = coll.predict(collective, S, cid, algorithm=algorithm)
            rows.append({"cluster": cid, "size": sizes.label(S), "size (B)": S, "time (µs)": p.time_s * 1e6,
                         "algbw (GB/s)": p.algbw_Bps / 1e9, "busbw (GB/s)": p.busbw_Bps / 1e9,
                         "algorithm": f"{p.algorithm}/{p.protocol}", "bottleneck": p.bottleneck, "bound": p.bound})
    return rows


def preset_rows(cluster_ids=None) -> list[dict]:
    """Each cluster preset's parameters (display units, per direction) and what NCCL's graph makes of them;
    ``cluster_ids``: the presets shown (default: every preset, clusters.ids())."""
    keep = ("nodes", "gpus_per_node", "intra_link", "intra_bw_gb_s_per_direction_per_gpu",
            "intra_nccl_gb_s_per_direction_per_gpu", "nics_per_node", "nic_link", "nic_bw_gb_s_per_direction",
            "ring_channels", "ring_gb_s_per_channel")
    return [{"preset": cid, **{k: coll.cluster_summary(clusters.get(cid))[k] for k in keep}}
            for cid in (clusters.ids() if cluster_ids is None else cluster_ids)]


def read_public(name: str) -> nccl_log.ParsedLog:
    return nccl_log.read_path(LOG_DIR / name)


def measured_vs_expected(name: str, cluster_id, collective: str = "all_reduce") -> list[dict]:
    """For each lab size: the nearest row of a public log (theirs, cited) beside the model for a preset."""
    key = published.public_logs()[name]["source"]
    log = read_public(name)
    rows = []
    for S in lab_sizes_B():
        r = sizes.nearest(log.rows, S, key=lambda x: x.size_B)
        p = coll.predict(collective, r.size_B, cluster_id)
        meas = r.out_of_place
        rows.append({"lab size": sizes.label(S), "log row": sizes.label(r.size_B),
                     "model time (µs)": p.time_s * 1e6, "measured time (µs)": meas.time_us,
                     "model busbw (GB/s)": p.busbw_Bps / 1e9, "measured busbw (GB/s)": meas.busbw_gb_s,
                     "measured / model": meas.busbw_gb_s / (p.busbw_Bps / 1e9),
                     "model bottleneck": p.bottleneck, "measured by": f"{key} (theirs)"})
    return rows


def run_vs_expected(results: dict, cluster_id: str, collective: str = "all_reduce") -> list[dict]:
    """For each lab size: the nearest row of one of our runs (committed results.json) beside the model."""
    rows = []
    for c in _supported(results):
        if c["collective"] != collective:
            continue
        for S in lab_sizes_B():
            r = sizes.nearest(c["rows"], S, key=lambda x: x["size_bytes"])
            st = place_stats(results, collective, r)
            p = coll.predict(collective, r["size_bytes"], cluster_id)
            rows.append({"lab size": sizes.label(S), "run row": sizes.label(r["size_bytes"]),
                         "model time (µs)": p.time_s * 1e6, "measured time (µs)": st["time_us"],
                         "model busbw (GB/s)": p.busbw_Bps / 1e9, "measured busbw (GB/s)": st["busbw_gb_s"],
                         "measured / model": st["busbw_gb_s"] / (p.busbw_Bps / 1e9),
                         "measured by": f"us: {results['device']['detected_name']} ({results['started_utc']})"})
    return rows


def cluster_for(results: dict) -> str:
    """The preset a cluster run is compared with (H100 or A100 two-node preset, by the detected GPU)."""
    return "2x8-h100-ib400" if "H100" in results["device"]["detected_name"] else "2x8-a100-ib200"


def model_curve(cluster_id, collective: str = "all_reduce", lo_B: int = 2**10, hi_B: int = 2**33,
                algorithm: str | None = None, protocol: str | None = None) -> list[dict]:
    """busbw [GB/s] against size for the model (NCCL's choice, or the forced algorithm/protocol), powers of two
    from ``lo_B`` to ``hi_B``; ``cluster_id`` is a preset id or a Cluster."""
    out, S = [], lo_B
    while S <= hi_B:
        p = coll.predict(collective, S, cluster_id, algorithm=algorithm, protocol=protocol)
        out.append({"x": S, "y": p.busbw_Bps / 1e9})
        S *= 2
    return out


def log_points(log: nccl_log.ParsedLog) -> list[dict]:
    return [{"x": r.size_B, "y": r.out_of_place.busbw_gb_s} for r in log.rows
            if r.out_of_place and r.out_of_place.busbw_gb_s]


def fit_vs_model(sizes_B, times_s, cluster_id: str, source: str, collective: str = "all_reduce") -> list[dict]:
    """α–β fit (relative least squares) of measured times, beside the same fit of the model's times at the same
    sizes: α [µs] and 1/β [GB/s of algbw]. Sizes below 1 KiB are left out (launch noise)."""
    pts = [(S, t) for S, t in zip(sizes_B, times_s) if S >= 1024]
    S = [p[0] for p in pts]
    meas = fitting.fit_alpha_beta(S, [p[1] for p in pts], relative=True)
    model = fitting.fit_alpha_beta(S, [coll.predict(collective, s, cluster_id).time_s for s in S], relative=True)
    return [{"fit of": label, "α (µs)": f.alpha_s * 1e6, "1/β (GB/s, algbw)": f.inv_beta_gb_s,
             "relative RMS residual": f.residual_rel_rms, "points": f.n_points}
            for label, f in ((f"measured: {source}", meas), (f"model: {cluster_id}", model))]


def log_fit_vs_model(name: str, cluster_id) -> list[dict]:
    key = published.public_logs()[name]["source"]
    log = read_public(name)
    rows = [r for r in log.rows if r.out_of_place and r.out_of_place.time_us]
    return fit_vs_model([r.size_B for r in rows], [r.out_of_place.time_us * 1e-6 for r in rows], cluster_id,
                        f"{key} (theirs)")


# ---------------------------------------------------------------------------------------------- explorer

def collective_explorer(cluster: str = "2x8-h100-ib400", collective: str = "all_reduce", algorithm: str = "auto",
                        protocol: str = "auto"):
    """Pick a cluster preset, a collective, an algorithm and a protocol (auto: NCCL's choice) → busbw against
    size (model); the arguments are the explorer's starting values."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from x4lib.book import plots

    def show(cluster, collective, algorithm, protocol):
        try:
            curve = model_curve(cluster, collective, algorithm=algorithm, protocol=protocol)
        except ValueError as exc:
            print(f"cannot model this: {exc}")
            return
        fig, ax = plots.new_axes()
        plots.busbw_vs_size(ax, [("prediction", f"model: {collective}, {algorithm}/{protocol}, {cluster}", curve)])
        plt.show()

    return w.interactive(show, cluster=w.Dropdown(options=clusters.ids(), value=cluster, description="cluster"),
                         collective=w.Dropdown(options=[c for c in nccl_tests.COLLECTIVES if c != "sendrecv"],
                                               value=collective, description="collective"),
                         algorithm=w.Dropdown(options=["auto", "ring", "tree", "nvls"], value=algorithm,
                                              description="algorithm"),
                         protocol=w.Dropdown(options=["auto", "LL", "LL128", "Simple"], value=protocol,
                                             description="protocol"))


def run_markdown(results: dict) -> str:
    """The paragraph about the run shown on the page, as Markdown (a cell's output: its numbers are computed)."""
    alpha_us, bw = fit_text(run_fit(results))
    fit = (f"Fitting t = α + β·S to its AllReduce rows gives α = {alpha_us:,.0f} µs and {bw}."
           if alpha_us is not None else f"Its AllReduce rows give {bw}.")
    return f"The run shown: {md_text(describe_run(results))}. {fit}"


# ---------------------------------------------------------------------------------------------- validation

#: the lab's size -> its label in public_logs.yaml notes
_SIZE_NAMES = {2**20: "1 MiB", 100 * 2**20: "100 MiB", 2**30: "1 GiB"}


def nearest_row(log: nccl_log.ParsedLog, size_B: int):
    """The log's row nearest to ``size_B`` on a log scale, or None when the nearest is more than a factor of 2
    away (a sweep that starts at 1 GiB has no 1 MiB row)."""
    rows = [r for r in log.rows if r.out_of_place and r.size_B > 0]
    if not rows:
        return None
    r = sizes.nearest(rows, size_B, key=lambda x: x.size_B)
    return r if abs(math.log2(r.size_B / size_B)) <= 1 else None


def apparent_latency_us(log: nccl_log.ParsedLog, lo_B: int = 2**29, hi_B: int = 2**30) -> float | None:
    """The fixed cost [µs] a log's own 512 MiB and 1 GiB rows imply: t(hi) − hi·(t(hi) − t(lo))/(hi − lo)
    (out-of-place times), i.e. where the straight line through the two rows meets size 0. None without both rows.
    A diagnostic of the log, never a model constant."""
    by = {r.size_B: r.out_of_place.time_us for r in log.rows if r.out_of_place}
    if lo_B not in by or hi_B not in by or by[hi_B] <= by[lo_B]:
        return None
    return by[hi_B] - hi_B * (by[hi_B] - by[lo_B]) / (hi_B - lo_B)


def _short_name(name: str) -> str:
    """A log's name for a table cell: GPU, ranks, nodes and source (the file name without tool and collective)."""
    stem = name.removesuffix(".log").split("_")
    return " ".join(p for p in (stem[1], stem[2] if stem[2].endswith("node") else "", stem[-1]) if p)


def _within(row_B: int, ratio: float) -> bool:
    if row_B >= 2**27:
        return abs(ratio - 1) <= TARGET_LARGE_REL
    return 1 / TARGET_SMALL_FACTOR <= ratio <= TARGET_SMALL_FACTOR


def _auto_cause(log, row, pred, ratio, compared, cluster) -> str:
    """The residual's cause, named from the log and the model (the first rule that applies)."""
    oop, ip = row.out_of_place.time_us, row.in_place.time_us if row.in_place else None
    if ip and max(oop, ip) > 1.5 * min(oop, ip):
        return (f"start-up outlier in the log: out-of-place {oop:,.0f} µs against in-place {ip:,.0f} µs at the same "
                f"size")
    if compared == "tree (two-node bound)":
        return ("busbw above what a ring can reach, so NCCL ran its tree: on two nodes a tree sends each byte across "
                "the network once; compared with that wire bound (a bound, not a time), as the model's choice here "
                "is the ring")
    if _within(row.size_B, ratio):
        return "within the target"
    if pred.algorithm in ("nvls", "nvls_tree") and row.size_B <= 2**28 and ratio < 1:
        app = apparent_latency_us(log)
        if app is not None:
            return (f"NVLink SHARP start-up: the log's 512 MiB and 1 GiB rows imply {app:,.0f} µs of fixed cost, "
                    f"NCCL's tuner {pred.latency_s * 1e6:,.0f} µs")
    if pred.bound == "latency":
        return (f"latency-bound: NCCL's constants give {pred.latency_s * 1e6:,.0f} µs for {pred.algorithm}/"
                f"{pred.protocol}, the log {oop:,.0f} µs in all")
    return (f"bandwidth: {ratio:.0%} of the {pred.algorithm}/{pred.protocol} bus bandwidth NCCL's tuner assumes for "
            f"{cluster.nics_per_node} × {cluster.nic.bw_Bps * 8 / 1e9:g} Gb/s NICs" if cluster.nic else
            f"bandwidth: {ratio:.0%} of the {pred.algorithm}/{pred.protocol} bus bandwidth NCCL's tuner assumes")


def validation_rows() -> list[dict]:
    """Every stored public log (x4lib/data/public_logs.yaml) at the lab's three sizes: the nearest row (within a
    factor of 2; named "128 MiB row"), measured busbw (out-of-place, as printed), the model's busbw for the
    algorithm the run used (NCCL_ALGO when forced, else the model's own choice; a default two-node run whose busbw
    exceeds what a ring can reach is set against the two-node tree's wire bound instead), measured / model, and
    the named cause of the residual. Display units (GB/s). Nothing here is fitted to a log."""
    out = []
    for name, entry in published.public_logs().items():
        log = read_public(name)
        cluster = published.log_cluster(name)
        status, why = validation.log_status(name)
        for S in lab_sizes_B():
            row = nearest_row(log, S)
            base = {"log": _short_name(name), "file": name, "source": entry["source"], "kind": entry["kind"],
                    "status": status, "lab size": sizes.label(S),
                    "row": f"{sizes.label(row.size_B)} row" if row else "no row", "row (B)": row.size_B if row else None,
                    "measured busbw (GB/s)": row.out_of_place.busbw_gb_s if row else None,
                    "forced": entry["nccl_algo"] or "default"}
            if row is None or cluster is None:
                out.append({**base, "compared with": "—", "model busbw (GB/s)": None, "measured / model": None,
                            "counted": False,
                            "cause": why or "no row of the log within a factor of 2 of this size"})
                continue
            pred = coll.predict("all_reduce", row.size_B, cluster, algorithm=entry["nccl_algo"])
            model = pred.busbw_Bps / 1e9
            compared = f"{pred.algorithm}/{pred.protocol}"
            if (entry["nccl_algo"] is None and cluster.nodes == 2 and pred.algorithm == "ring"
                    and row.out_of_place.busbw_gb_s * 1e9 > coll.wire_bound_busbw_Bps(cluster, "ring")):
                compared, model = "tree (two-node bound)", coll.wire_bound_busbw_Bps(cluster, "tree") / 1e9
            ratio = row.out_of_place.busbw_gb_s / model
            note = entry["notes"].get(_SIZE_NAMES[S]) or entry["notes"].get("all")
            auto = _auto_cause(log, row, pred, ratio, compared, cluster)
            cause = why if status != "use" else \
                (auto if auto.startswith(("within", "start-up", "busbw above")) or not note else note)
            out.append({**base, "compared with": compared, "model busbw (GB/s)": model, "measured / model": ratio,
                        "counted": status == "use", "cause": cause})
    return out


def target_report(rows: list[dict] | None = None) -> dict:
    """The lab's targets on the counted two-node InfiniBand rows: how many rows of 128 MiB and more are within
    ±15 %, how many 1 MiB rows within a factor of 2, and which miss (computed, reported, never asserted)."""
    rows = validation_rows() if rows is None else rows
    mine = [r for r in rows if r["kind"] == TARGET_KIND and r["counted"] and r["measured / model"] is not None]
    large = [r for r in mine if r["row (B)"] >= 2**27]
    small = [r for r in mine if r["row (B)"] == 2**20]
    miss = [r for r in large + small if not _within(r["row (B)"], r["measured / model"])]
    return {"large_n": len(large), "large_ok": sum(_within(r["row (B)"], r["measured / model"]) for r in large),
            "small_n": len(small), "small_ok": sum(_within(r["row (B)"], r["measured / model"]) for r in small),
            "misses": [f"{r['log']}, {r['row']}: {r['measured / model']:.0%} of the model ({r['compared with']})"
                       for r in miss],
            "logs": len({r["file"] for r in mine})}


def kind_summary(rows: list[dict] | None = None) -> list[dict]:
    """Per cluster kind: logs counted, and the median |measured/model − 1| on rows of 128 MiB and more and on the
    1 MiB rows (counted logs only; flagged and unmodelled logs are listed apart, never averaged in)."""
    rows = validation_rows() if rows is None else rows
    out = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = [r for r in rows if r["kind"] == kind and r["counted"] and r["measured / model"] is not None]
        large = [abs(r["measured / model"] - 1) for r in mine if r["row (B)"] >= 2**27]
        small = [abs(r["measured / model"] - 1) for r in mine if r["row (B)"] == 2**20]
        logs = {r["file"] for r in rows if r["kind"] == kind}
        counted = {r["file"] for r in mine}
        out.append({"cluster kind": kind, "logs": len(logs), "counted": len(counted),
                    "median |error|, 128 MiB and more": statistics.median(large) if large else None,
                    "median |error|, 1 MiB": statistics.median(small) if small else None})
    return out


def validation_points(rows: list[dict] | None = None) -> list[tuple[str, list[dict]]]:
    """Predicted (x) against measured (y) busbw [GB/s] for the figure: one series per cluster kind of counted
    rows, then one of flagged rows; rows without a prediction are left out."""
    rows = validation_rows() if rows is None else rows
    series: dict[str, list[dict]] = {}
    for r in rows:
        if r["measured / model"] is None:
            continue
        key = r["kind"] if r["counted"] else "flagged (not counted)"
        series.setdefault(key, []).append({"x": r["model busbw (GB/s)"], "y": r["measured busbw (GB/s)"],
                                           "size": r["row"]})
    return list(series.items())


def validation_table(rows: list[dict] | None = None):
    """Compact: measured/model per log (rows) and lab size (columns) for the counted logs (described by the model and
    not flagged); below it, collapsed, every row of every log with measured and model busbw, the algorithm compared
    and the named cause."""
    from x4lib.book.tables import Col, pivot, table, with_details
    rows = validation_rows() if rows is None else rows
    modelled = [r for r in rows if r["status"] == "use"]
    compact = pivot(modelled, index=("log", Col("log (theirs)", wrap=True)), columns="lab size",
                    values={"measured / model": Col("measured / model", fmt="{:.0%}")})
    full = table(rows, {"log": Col("log (theirs)", wrap=True), "source": "source", "kind": Col("cluster kind", wrap=True),
                        "forced": "NCCL_ALGO", "row": "row",
                        "measured busbw (GB/s)": Col("measured busbw", "GB/s", "{:,.1f}"),
                        "compared with": Col("model: algorithm/protocol", wrap=True),
                        "model busbw (GB/s)": Col("model busbw", "GB/s", "{:,.1f}"),
                        "measured / model": Col("measured / model", fmt="{:.0%}"),
                        "cause": Col("cause of the residual", wrap=True)})
    return with_details(compact, full, summary="every log and size: measured and model busbw, the algorithm "
                                               "compared and the named cause")


def kind_table(rows: list[dict] | None = None):
    from x4lib.book.tables import Col, table
    return table(kind_summary(rows), {
        "cluster kind": Col("cluster kind", wrap=True), "logs": "logs", "counted": "counted",
        "median |error|, 128 MiB and more": Col("median |error|, rows of 128 MiB and more", fmt="{:.0%}"),
        "median |error|, 1 MiB": Col("median |error|, 1 MiB rows", fmt="{:.0%}")})


# ------------------------------------------------------------------------------------- NCCL's model, shown

#: what each protocol puts on the wire (src/include/device.h at v2.30.7-1, via the research notes)
_PROTOCOL_WIRE = {"LL": "8 bytes of data and 8 of flags in each 16-byte line",
                  "LL128": "120 bytes of data in each 128-byte line",
                  "Simple": "data only (no flags in the data path)"}


def protocol_rows(protocols=coll.PROTOCOLS, tuning=None) -> list[dict]:
    """NCCL's protocols as its tuner prices them on a ring (``tuning``: the tuner's constants, default
    x4lib/data/nccl_tuning.yaml): what a line carries, the bandwidth factor, the fixed cost per call and the latency
    per NVLink and per network step."""
    t = nccl_tuner.tuning() if tuning is None else tuning
    f = t["protocol_factors"]["value"]
    factor = {"LL": f["ring_ll"], "LL128": f["ring_ll128"], "Simple": 1.0}
    out = []
    for p in protocols:
        i = coll.PROTOCOLS.index(p)  # the tuner's latency lists are in NCCL's protocol order
        out.append({"protocol": p, "on the wire": _PROTOCOL_WIRE[p], "ring bandwidth factor": factor[p],
                    "base latency (µs)": t["base_latency_us"]["value"]["ring"][i],
                    "per NVLink step (µs)": t["hw_latency_us"]["value"]["nvlink"]["ring"][i],
                    "per network step (µs)": t["hw_latency_us"]["value"]["net"]["ring"][i]})
    return out


def protocols_table(protocols=coll.PROTOCOLS, tuning=None):
    """:func:`protocol_rows` as a book table."""
    from x4lib.book.tables import Col, table
    return table(protocol_rows(protocols, tuning), {
        "protocol": "protocol", "on the wire": Col("on the wire", wrap=True),
        "ring bandwidth factor": Col("ring bandwidth factor", fmt="{:.2f}"),
        "base latency (µs)": Col("base latency", "µs", "{:.1f}"),
        "per NVLink step (µs)": Col("per NVLink step", "µs", "{:.1f}"),
        "per network step (µs)": Col("per network step", "µs", "{:.1f}")})


#: NCCL's algorithms for AllReduce in words: how the data moves, the latency NCCL charges, algbw from bus bandwidth
ALGORITHM_ROWS = (
    ("ring", "reduce-scatter then all-gather around a ring through every GPU: 2(n−1) steps",
     "base + steps inside nodes × NVLink step + 2(N−1) × network step", "bus × n / (2(n−1))"),
    ("tree", "double binary tree across nodes, a chain inside each node; reduce up, broadcast down",
     "base + 2 × ((g−1) × NVLink step + log2(N) × network step)", "bus × 1/2"),
    ("nvls", "NVLink SHARP: the NVSwitch adds the GPUs' data and multicasts the sum (one node)",
     "one NVLS step", "bus × n / (2(n−1))"),
    ("nvls_tree", "NVLS inside each node, a tree between nodes", "NVLS step + 2 log2(N) × network step",
     "bus × n / (2(n−1))"),
    ("collnet_direct / chain", "IB SHARP: the InfiniBand switches add the nodes' data (needs the CollNet plugin)",
     "local steps + one network step", "bus × 1/2"),
)


def algorithms_table(algorithms=ALGORITHM_ROWS):
    """``algorithms`` (rows of :data:`ALGORITHM_ROWS`: name, how the data moves, latency, algbw) as a book table."""
    from x4lib.book.tables import Col, table
    return table([{"algorithm": a, "how the data moves": how, "latency NCCL charges": lat, "algbw": bw}
                  for a, how, lat, bw in algorithms],
                 {"algorithm": "algorithm", "how the data moves": Col("how the data moves", wrap=True),
                  "latency NCCL charges": Col("latency NCCL charges", wrap=True), "algbw": Col("algbw", wrap=True)})


def choice_rows(cluster_id, collective: str = "all_reduce", algorithm: str | None = None) -> list[dict]:
    """Size ranges with the same choice of the model (NCCL's tuner), powers of two from 1 KiB to 8 GiB."""
    return [{"from": sizes.label(r["from_B"]), "to": sizes.label(r["to_B"]),
             "algorithm": r["algorithm"], "protocol": r["protocol"]}
            for r in coll.choice_table(collective, cluster_id, algorithm=algorithm)]


def choice_table(cluster_id, collective: str = "all_reduce", algorithm: str | None = None):
    from x4lib.book.tables import table
    return table(choice_rows(cluster_id, collective, algorithm))


def two_node_rows(cluster_ids=("2x8-h100-ib400", "2x8-a100-ib200"), size_B: int = 2**30) -> list[dict]:
    """For each two-node preset: the NICs' line rate per node, the wire bounds of ring and two-node tree (busbw,
    x4lib.network.collectives.wire_bound_busbw_Bps), and the model's busbw at ``size_B`` for the ring, the tree (as NCCL's
    tuner prices it) and its own choice. Display units (GB/s, per direction)."""
    out = []
    for cid in cluster_ids:
        c = clusters.get(cid)
        auto = coll.predict("all_reduce", size_B, c)
        out.append({"cluster": cid, "NICs' line rate (GB/s)": c.node_line_rate_Bps / 1e9,
                    "ring bound (GB/s)": coll.wire_bound_busbw_Bps(c, "ring") / 1e9,
                    "two-node tree bound (GB/s)": coll.wire_bound_busbw_Bps(c, "tree") / 1e9,
                    "model ring (GB/s)": coll.predict("all_reduce", size_B, c, algorithm="ring").busbw_Bps / 1e9,
                    "model tree (GB/s)": coll.predict("all_reduce", size_B, c, algorithm="tree").busbw_Bps / 1e9,
                    "model choice": f"{auto.algorithm}/{auto.protocol}", "model choice (GB/s)": auto.busbw_Bps / 1e9})
    return out


def two_node_table(cluster_ids=("2x8-h100-ib400", "2x8-a100-ib200"), size_B: int = 2**30):
    from x4lib.book.tables import Col, table
    g = "{:,.0f}"
    return table(two_node_rows(cluster_ids, size_B), {
        "cluster": "cluster", "NICs' line rate (GB/s)": Col("NICs' line rate per node", "GB/s", g),
        "ring bound (GB/s)": Col("ring bound", "GB/s", g),
        "two-node tree bound (GB/s)": Col("two-node tree bound", "GB/s", g),
        "model ring (GB/s)": Col("model: ring", "GB/s", g), "model tree (GB/s)": Col("model: tree", "GB/s", g),
        "model choice": "model's choice", "model choice (GB/s)": Col("model's choice", "GB/s", g)},
        caption=f"busbw per direction at {sizes.label(size_B)}")


def targets_markdown(report: dict) -> str:
    """The target sentence of the validation section (a cell's output: every number in it is computed)."""
    lines = [f"On the {report['logs']} counted two-node InfiniBand logs, {report['large_ok']} of "
             f"{report['large_n']} rows of 128 MiB and more are within ±{TARGET_LARGE_REL:.0%} of the model, "
             f"and {report['small_ok']} of {report['small_n']} rows of 1 MiB within a factor of "
             f"{TARGET_SMALL_FACTOR:g}."]
    if report["misses"]:
        lines.append("Misses: " + "; ".join(md_text(m) for m in report["misses"]) + ".")
    return " ".join(lines)


# --------------------------------------------------------------------------------------- the commands printed

def describe_sweep(sizes_B: list[int]) -> str:
    """The sizes an nccl-tests command runs, in the words the page's ``# runs ...`` comments use: ``1 MiB`` for one
    size, ``8 B to 8 GiB, ×2, 31 sizes`` for a factor sweep, ``... in steps of 1 MiB, N sizes`` for an additive one
    (x4lib.network.sizes.nccl_tests_sizes gives the list)."""
    if len(sizes_B) == 1:
        return sizes.label(sizes_B[0])
    first, last, n = sizes.label(sizes_B[0]), sizes.label(sizes_B[-1]), len(sizes_B)
    if sizes_B[0] and all(b == a * (sizes_B[1] // sizes_B[0]) for a, b in zip(sizes_B, sizes_B[1:])):
        return f"{first} to {last}, ×{sizes_B[1] // sizes_B[0]}, {n} sizes"
    return f"{first} to {last} in steps of {sizes.label(sizes_B[1] - sizes_B[0])}, {n} sizes"


#: every flag the lab's commands print: (command, flag, what it does, source key)
COMMAND_FLAGS = (
    ("make (nccl-tests)", "MPI=1 MPI_HOME=...", "build the binaries with MPI, from the MPI installed at MPI_HOME: "
                                                "needed to run one process per GPU across nodes", "nccl-tests-v2-19-6"),
    ("make (nccl-tests)", "NCCL_HOME=/usr CUDA_HOME=/usr/local/cuda -j", "where NCCL and CUDA are installed (these "
                                                                          "are the defaults); -j compiles in parallel",
     "nccl-tests-v2-19-6"),
    ("mpirun (Open MPI)", "-np 16", "start 16 processes, one per GPU", "nccl-tests-v2-19-6"),
    ("mpirun (Open MPI)", "-H node1:8,node2:8", "the two hosts, 8 slots each; with Open MPI's default mapping by "
                                                "slot, ranks 0-7 run on node1 and 8-15 on node2", ""),
    ("mpirun (Open MPI)", "--bind-to numa", "pin each process to one NUMA domain, so the operating system does not "
                                            "move it to the other socket (nvidia-smi topo -m shows each GPU's)", ""),
    ("mpirun (Open MPI)", "-x NAME=value", "export an environment variable to every rank", ""),
    ("NCCL", "NCCL_DEBUG=INFO", "print NCCL's version, the network it uses (NET/IB or NET/Socket), the rings, trees "
                                "and channel counts", "nccl-v2-30-7"),
    ("NCCL", "NCCL_IB_HCA=mlx5", "use the InfiniBand adapters whose names start with mlx5 (a prefix; =name for an "
                                 "exact name, ^name to exclude)", "nccl-v2-30-7"),
    ("NCCL", "NCCL_SOCKET_IFNAME=eth0", "the IP interface for NCCL's bootstrap (and its socket transport)",
     "nccl-v2-30-7"),
    ("NCCL", "NCCL_ALGO=Ring", "let NCCL choose only among ring variants (it still picks LL, LL128 or Simple); "
                               "for tests, never for production", "nccl-v2-30-7"),
    ("all_reduce_perf", "-b S -e S", "smallest and largest size; equal, one size. 1M = 2^20 bytes, 1G = 2^30; "
                                     "'1MB' is read as 1M", "nccl-tests-v2-19-6"),
    ("all_reduce_perf", "-f 2", "multiply the size by 2 after each row, while it stays at or below -e; without -f "
                                "the step is -i (default 1M) bytes", "nccl-tests-v2-19-6"),
    ("all_reduce_perf", "-g 1", "one GPU per process (ranks = processes × threads × GPUs per thread)",
     "nccl-tests-v2-19-6"),
    ("all_reduce_perf", "-c 1", "after the timed loop, one untimed check of the result; #wrong counts the wrong "
                                "elements (0 = correct)", "nccl-tests-v2-19-6"),
    ("all_reduce_perf", "-n 50", "50 timed iterations per size; the time printed is their mean wall-clock time per "
                                 "operation, averaged over the ranks", "nccl-tests-v2-19-6"),
    ("all_reduce_perf", "-w 10", "10 untimed warm-up iterations before the timed ones (nccl-tests from 2.16.8 warms "
                                 "up at every size of a ×2 ladder from -b to -e)", "nccl-tests-v2-19-6"),
    ("shell", "| tee FILE", "keep the output in a file for nccl-parse and --import-log", ""),
    ("torchrun", "--nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint node1:29500",
     "two nodes, eight processes each, meeting at node1 on TCP port 29500; run the same line on both nodes", ""),
    ("runners lab01", "--profile cluster-2x8 --measure-only", "the book's benchmark at 1 MiB, 100 MiB and 1 GiB "
                                                              "with NCCL, writing results.json only", ""),
    ("runners lab01", "--import-log FILE", "read an nccl-tests log, check it and store it as a run labelled with the "
                                           "GPUs its rank lines name", ""),
)


def command_flags_table(flags=COMMAND_FLAGS):
    """The flags the lab's commands print (rows of :data:`COMMAND_FLAGS`), what each does, and where that is
    stated."""
    from x4lib.book.tables import Col, table
    return table([{"command": c, "flag": f, "what it does": w, "source": src or "—"} for c, f, w, src in flags],
                 {"command": "command", "flag": "flag", "what it does": Col("what it does", wrap=True),
                  "source": "source"})


# ------------------------------------------------------------------------------------------------- tables

def _cols():
    from x4lib.book.tables import Col
    return {"cluster": "cluster", "size": "size", "lab size": "lab size", "run row": "run row", "log row": "log row",
            "time (µs)": Col("time", "µs", "{:,.1f}"), "algbw (GB/s)": Col("algbw", "GB/s", "{:,.1f}"),
            "busbw (GB/s)": Col("busbw", "GB/s", "{:,.1f}"), "algorithm": "algorithm",
            "bottleneck": Col("bottleneck", wrap=True), "bound": "bound",
            "model time (µs)": Col("model time", "µs", "{:,.1f}"),
            "measured time (µs)": Col("measured time", "µs", "{:,.1f}"),
            "model busbw (GB/s)": Col("model busbw", "GB/s", "{:,.1f}"),
            "measured busbw (GB/s)": Col("measured busbw", "GB/s", "{:,.1f}"),
            "measured / model": Col("measured / model", fmt="{:.0%}"),
            "model bottleneck": Col("model bottleneck", wrap=True), "measured by": Col("measured by", wrap=True)}


def _table(rows: list[dict]):
    from x4lib.book.tables import table
    cols = _cols()
    return table(rows, {k: cols[k] for k in rows[0] if k in cols})


def expected_table(cluster_ids):
    """The model's time, algbw and busbw at the lab's sizes for each preset."""
    return _table(expected_rows(cluster_ids))


def vs_table(rows: list[dict]):
    """Measured (ours or theirs) beside the model at the lab's sizes."""
    return _table(rows)


def presets_table(cluster_ids=None):
    """Each cluster preset's parameters (per direction; GB/s = 1e9 B/s) and NCCL's ring graph on it
    (``cluster_ids``: default every preset)."""
    from x4lib.book.tables import Col, table
    return table(preset_rows(cluster_ids), {
        "preset": "preset", "nodes": "nodes", "gpus_per_node": "GPUs per node",
        "intra_link": Col("intra-node link", wrap=True),
        "intra_bw_gb_s_per_direction_per_gpu": Col("intra-node line rate, per GPU per direction", "GB/s", "{:,.0f}"),
        "intra_nccl_gb_s_per_direction_per_gpu": Col("as NCCL sees it", "GB/s", "{:,.1f}"),
        "nics_per_node": "NICs per node", "nic_link": Col("NIC", wrap=True),
        "nic_bw_gb_s_per_direction": Col("per NIC per direction", "GB/s", "{:,.0f}"),
        "ring_channels": "ring channels", "ring_gb_s_per_channel": Col("per channel", "GB/s", "{:,.0f}")})


def fits_table(rows: list[dict]):
    from x4lib.book.tables import Col, table
    return table(rows, {"fit of": Col("fit of", wrap=True), "α (µs)": Col("α", "µs", "{:,.1f}"),
                        "1/β (GB/s, algbw)": Col("1/β (algbw)", "GB/s", "{:,.1f}"),
                        "relative RMS residual": Col("relative RMS residual", fmt="{:.0%}"), "points": "points"})


def run_table(results: dict):
    """A run at a glance: busbw per collective × size, and every row in a collapsed table below it."""
    from x4lib.book.tables import Col, pivot, table, with_details
    rows = run_rows(results)
    busbw = Col("busbw", "GB/s", "{:,.3g}")
    return with_details(pivot(rows, index=("collective", "collective"), columns="size", values={"busbw (GB/s)": busbw}),
                        table(rows, {"collective": "collective", "size": "size",
                                     "time (µs)": Col("time", "µs", "{:,.1f}"), "busbw (GB/s)": busbw,
                                     "#wrong": Col("#wrong", wrap=True)}),
                        summary="every row of the run (in-place column; time: median of the iterations where the "
                                "run kept them, else the mean nccl-tests prints)")
