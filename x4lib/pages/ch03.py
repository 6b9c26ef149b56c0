"""Page helpers of chapter 03 (book/03-interconnects-and-topology.md): the link hierarchy table, topology tables and
scaling series, collective algorithms on the quiz cluster and a published 1,024-GPU check, the parallelism
strategies' traffic, the quiz's step breakdown, the topo reader's tables and the explorer. The models are
``x4lib.network.links``, ``x4lib.network.topology``, ``x4lib.network.collectives``, ``x4lib.training.parallelism`` and ``x4lib.network.topo``.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

from x4lib.network import collectives, links, topo, topology
from x4lib.training import parallelism as par
from x4lib.book.tables import Col, fmt_value, table
from x4lib import paths

ROOT = paths.REPO_ROOT
TOPO_DIR = ROOT / "tests" / "data" / "topo"
QUIZ_CLUSTER = "128x8-h100-ib400"
QUIZ_MODEL = "llama3-70b"
QUIZ_LAYOUT = "quiz-70b"

HIERARCHY = ["pcie-gen4-x16", "pcie-gen5-x16", "pcie-gen6-x16", "nvlink2-v100", "nvlink3-a100",
             "nvlink4-h100", "nvlink5-b200", "nvswitch3-chip", "nvl72-domain", "ib-hdr", "ib-ndr", "ib-xdr",
             "eth-400g", "eth-800g", "tpu-v4-ici", "tpu-v5e-ici", "tpu-v5p-ici", "tpu-v6e-ici",
             "mi300x-infinity-fabric"]
#: sizes of the scaling figures: 8 to 65,536 in powers of two, then 100,000
SCALING_SIZES = [2 ** k for k in range(3, 17)] + [100_000]


# ------------------------------------------------------------------------------------------------ links

def link_table(ids=HIERARCHY):
    """The hierarchy: per direction and both directions side by side, per link, line code, source."""
    rows = links.hierarchy_rows(ids)
    return table(rows, {"link": Col("link", wrap=True), "per_direction_gb_s": Col("per direction", "GB/s", "{:,.1f}"),
                        "bidirectional_gb_s": Col("both directions", "GB/s", "{:,.1f}"),
                        "per_link_gb_s": Col("per link, per direction", "GB/s", "{:,.0f}"),
                        "encoding": Col("line code", wrap=True), "source": "source"})


#: a representative link of each kind a latency figure applies to (for the side-by-side table)
LATENCY_LINK = {"nvlink": "nvlink4-h100", "pcie": "pcie-gen5-x16", "infiniband": "ib-ndr", "ib-switch": "ib-ndr"}


def latency_rows(link_of: Mapping[str, str] = LATENCY_LINK) -> list[dict]:
    rows = []
    for x in links.latencies():
        lk = link_of.get(x.applies_to)
        rows.append({"hop": x.applies_to, "kind": x.kind, "value_us": x.value_s * 1e6,
                     "low_us": x.low_s * 1e6 if x.low_s is not None else None, "source": x.source,
                     "link": links.get(lk).name if lk else "—",
                     "bw": links.get(lk).per_direction_Bps / 1e9 if lk else None})
    return rows


def latency_table(link_of: Mapping[str, str] = LATENCY_LINK):
    """Latency and bandwidth side by side: each latency figure beside the per-direction rate of a link of its kind
    (``link_of``: what a latency applies to -> the link shown for it)."""
    return table(latency_rows(link_of), {
        "hop": "applies to", "kind": "what it is", "value_us": Col("latency", "µs", "{:.1f}"),
        "low_us": Col("low end", "µs", "{:.1f}"), "source": "source", "link": Col("a link of this kind", wrap=True),
        "bw": Col("its rate, per direction", "GB/s", "{:,.0f}")})


def rate_gb_s(link_id: str, both: bool = False) -> float:
    x = links.get(link_id)
    return (x.bidirectional_Bps if both else x.per_direction_Bps) / 1e9


# ------------------------------------------------------------------------------------------------ topologies

def topology_rows(sizes, radix: int | None = None, link_Bps: float | None = None) -> list[dict]:
    radix = radix or topology.default_radix()
    link_Bps = link_Bps or topology.default_link_Bps()
    rows = []
    for n in sizes:
        for kind in topology.KINDS:
            t = topology.build(kind, n, radix, link_Bps)
            rows.append({"kind": kind, "endpoints": n, "switches": t.switches, "links": t.links,
                         "diameter": t.diameter_hops, "bisection_tb_s": t.bisection_Bps / 1e12,
                         "ratio": t.bisection_ratio, "ports_per_endpoint": t.switch_ports_per_endpoint,
                         "links_per_endpoint": t.links_per_endpoint})
    return rows


def topology_table(sizes=(1024, 16384, 100_000)):
    """Each topology at a few sizes, radix 64 and NDR links (50 GB/s per direction)."""
    return table(topology_rows(sizes), {
        "kind": "topology", "endpoints": Col("endpoints", None, "{:,}"), "switches": Col("switches", None, "{:,}"),
        "links": Col("links", None, "{:,}"), "diameter": Col("diameter", "links", "{:d}"),
        "bisection_tb_s": Col("bisection, per direction", "TB/s", "{:,.1f}"),
        "ratio": Col("bisection / full", None, "{:.2f}"),
        "ports_per_endpoint": Col("switch ports per endpoint", None, "{:.2f}")})


def topology_series(metric: str, sizes=None, radix: int | None = None) -> list[tuple[str, list, list]]:
    """(kind, sizes, values) for a metric of :func:`topology_rows` (``diameter``, ``ratio``, ``ports_per_endpoint``)."""
    rows = topology_rows(sizes or SCALING_SIZES, radix)
    return [(k, [r["endpoints"] for r in rows if r["kind"] == k], [r[metric] for r in rows if r["kind"] == k])
            for k in topology.KINDS]


def published_topology_rows(systems=("superpod-h100-4su", "tpu-v5e-pod", "tpu-v6e-pod", "tpu-v4-pod")) -> list[dict]:
    """Computed against published, for each system named: the DGX SuperPOD's four-SU compute fabric
    (``superpod-h100-4su``), Google's TPU pod bisections (``tpu-v5e-pod``, ``tpu-v6e-pod``, ``tpu-v4-pod``)."""
    ndr = links.get("ib-ndr").per_direction_Bps
    sp = topology.rail_fat_tree(1024, topology.default_radix(), ndr)
    v5e = topology.torus(256, 2, links.get("tpu-v5e-ici").per_link_per_direction_Bps)
    v6e = topology.torus(256, 2, links.get("tpu-v6e-ici").per_link_per_direction_Bps)
    v4 = topology.torus(4096, 3, links.get("tpu-v4-ici").per_link_per_direction_Bps)
    rows = {
        "superpod-h100-4su": [
            {"system": "DGX SuperPOD H100, 4 SU", "quantity": "compute-fabric switches", "computed": sp.switches,
             "published": 48, "source": "nvidia-superpod-h100-ra"},
            {"system": "DGX SuperPOD H100, 4 SU", "quantity": "leaf-spine cables",
             "computed": sp.links - sp.endpoint_links, "published": 1024, "source": "nvidia-superpod-h100-ra"}],
        "tpu-v5e-pod": [{"system": "TPU v5e pod, 16 × 16", "quantity": "bisection (TB/s)",
                         "computed": v5e.bisection_Bps / 1e12, "published": 1.6, "source": "google-tpu-v5e-docs"}],
        "tpu-v6e-pod": [{"system": "TPU v6e pod, 16 × 16", "quantity": "bisection (TB/s)",
                         "computed": v6e.bisection_Bps / 1e12, "published": 3.2, "source": "google-tpu-v6e-docs"}],
        "tpu-v4-pod": [{"system": "TPU v4 pod, 16 × 16 × 16", "quantity": "bisection (TB/s)",
                        "computed": v4.bisection_Bps / 1e12, "published": 24, "source": "google-tpu-v4-docs"}],
    }
    return [r for s in systems for r in rows[s]]


def published_topology_table(systems=("superpod-h100-4su", "tpu-v5e-pod", "tpu-v6e-pod", "tpu-v4-pod")):
    return table(published_topology_rows(systems), {"system": Col("system", wrap=True), "quantity": "quantity",
                                             "computed": Col("computed", None, "{:,.4g}"),
                                             "published": Col("published", None, "{:,.4g}"), "source": "source"})


# ------------------------------------------------------------------------------------------------ collectives

def algorithm_rows(size_B: float, cluster_id: str = QUIZ_CLUSTER, collective: str = "all_reduce") -> list[dict]:
    """Every modelled algorithm for one collective and size, in-network variants included."""
    clu = par.cluster(cluster_id)
    best = collectives.predict(collective, size_B, clu, in_network=True)
    rows = []
    for choice, t in sorted(best.alternatives.items(), key=lambda kv: kv[1]):
        alg, _, proto = choice.partition("/")
        pr = collectives.predict(collective, size_B, clu, in_network=True, algorithm=alg, protocol=proto or "auto")
        rows.append({"algorithm": choice, "time_ms": t * 1e3, "busbw_gb_s": pr.busbw_Bps / 1e9,
                     "bottleneck": pr.bottleneck, "bound": pr.bound})
    return rows


def algorithm_table(size_B: float, cluster_id: str = QUIZ_CLUSTER):
    return table(algorithm_rows(size_B, cluster_id), {
        "algorithm": "algorithm", "time_ms": Col("time", "ms", "{:,.2f}"), "busbw_gb_s": Col("busbw", "GB/s", "{:,.0f}"),
        "bottleneck": Col("bottleneck link", wrap=True), "bound": "bound by"})


def check_rows(check_id: str = "nccltests-322-allreduce-1024-h100") -> list[dict]:
    """One published check of parallelism.yaml (by id), row by row beside the model."""
    chk = next(c for c in par.published_checks() if c["id"] == check_id)
    return [{"size": f"{r['size_B'] / 2**30:g} GiB", "measured_ms": r["measured_time_s"] * 1e3,
             "model_ms": r["model_time_s"] * 1e3, "measured_busbw": r["measured_busbw_Bps"] / 1e9,
             "model_busbw": r["model_busbw_Bps"] / 1e9, "ratio": r["model_time_s"] / r["measured_time_s"]}
            for r in chk["rows"]]


def check_summary(from_B: int = 4 * 2**30) -> dict:
    """The published 1,024-GPU check summed up over every row at or above ``from_B``: the range of model/measured
    time and of the model's busbw shortfall (1 - model/measured busbw, in %), and the smallest size's
    measured/model time. Used in: book/03-interconnects-and-topology.md."""
    (chk,) = par.published_checks()
    big = [r for r in chk["rows"] if r["size_B"] >= from_B]
    small = min(chk["rows"], key=lambda r: r["size_B"])
    ratios = [r["model_time_s"] / r["measured_time_s"] for r in big]
    short = [100 * (1 - r["model_busbw_Bps"] / r["measured_busbw_Bps"]) for r in big]
    return {"from": f"{from_B / 2**30:g} GiB", "to": f"{max(r['size_B'] for r in big) / 2**30:g} GiB",
            "ratio_lo": min(ratios), "ratio_hi": max(ratios), "short_lo_pct": min(short), "short_hi_pct": max(short),
            "small": f"{small['size_B'] / 2**30:g} GiB", "small_ratio": small["measured_time_s"] / small["model_time_s"]}


def check_table(check_id: str = "nccltests-322-allreduce-1024-h100"):
    return table(check_rows(check_id), {"size": "size", "measured_ms": Col("measured", "ms", "{:,.1f}"),
                                "model_ms": Col("model", "ms", "{:,.1f}"),
                                "measured_busbw": Col("measured busbw", "GB/s", "{:,.0f}"),
                                "model_busbw": Col("model busbw", "GB/s", "{:,.0f}"),
                                "ratio": Col("model / measured time", None, "{:.2f}")})


def check_series():
    """busbw_vs_size series: the model (dashed) and the 1,024-GPU measurement (hollow, cited)."""
    from x4lib.network import sizes as sz
    (chk,) = par.published_checks()
    clu = par.cluster(chk["cluster"])
    grid = [2 ** k for k in range(20, 35)]
    model = [{"x": s, "y": collectives.predict("all_reduce", s, clu, algorithm="ring").busbw_Bps / 1e9} for s in grid]
    meas = [{"x": r["size_B"], "y": r["measured_busbw_Bps"] / 1e9} for r in chk["rows"]]
    del sz
    return [("prediction", "model: ring on 128 × 8 H100, 8 × NDR per node", model),
            ("theirs", "measured, 1,024 H100, Ring/LL128 (nccl-tests issue 322)", meas)]


# ------------------------------------------------------------------------------------------------ parallelism

def quiz_inputs():
    return par.model(QUIZ_MODEL), par.cluster(QUIZ_CLUSTER)


def estimate(layout_id: str = QUIZ_LAYOUT, **overrides) -> par.StepEstimate:
    mdl, clu = quiz_inputs()
    return par.estimate_step(mdl, clu, par.layout(layout_id, **overrides))


def fsdp_with_recompute(est: par.StepEstimate | None = None) -> dict:
    """The fully sharded layout with the recomputation its activations need. Per-GPU memory for each recompute
    mode (memory.training_plan, activations by Korthikanti et al.), the first mode that fits the device, and the
    MFU once that mode's extra work is in the step: full recomputation runs the forward pass again, one third of
    the step's arithmetic (6 -> 8 FLOP per parameter and token), so MFU <= 3/4 of the compute efficiency.
    Selective recomputation's extra (the attention scores) is left out, so its MFU is an upper bound."""
    from x4lib.catalog import specs
    from x4lib.training import memory
    est = est or estimate(tp=1, pp=1, dp=1024, zero=3)
    mdl, lay = est.model, est.layout
    cap = memory.capacity_B(specs.get(est.cluster.device))
    totals = {r: memory.training_plan(mdl.params, lay.n_gpus, lay.zero, tp=lay.tp, pp=lay.pp, layers=mdl.layers,
                                      hidden=mdl.hidden, seq=lay.seq, micro_batch=lay.micro_batch, recompute=r,
                                      heads=mdl.heads, cp=lay.cp).total_B
              for r in memory.RECOMPUTE}
    needed = next((r for r in memory.RECOMPUTE if totals[r] <= cap), None)
    extra_s = est.compute_s / 3 if needed == "full" else 0.0
    step = est.step_s + extra_s
    return {"mfu_no_recompute": est.mfu, "needed": needed, "capacity_gb": cap / 1e9,
            "total_gb": {r: v / 1e9 for r, v in totals.items()}, "extra_s": extra_s, "step_s": step,
            "mfu": est.model_flop / (lay.n_gpus * est.peak_flop_per_s * step),
            "bound": (0.75 if needed == "full" else 1.0) * est.efficiency, "efficiency": est.efficiency}


def published_fsdp_70b(run_id: str = "mpt-h100-70b-512") -> dict:
    """A published fully sharded 70B run on H100 (x4lib/data/training_runs.yaml): GPUs, sequence, recompute, MFU."""
    from x4lib.training import planner
    r = next(r for r in planner.published_runs() if r["id"] == run_id)
    return {"gpus": r["gpus"], "seq": r["model"]["seq"], "params_b": r["model"]["params"] / 1e9,
            "zero": r["layout"]["zero"], "recompute": r["layout"]["recompute"],
            "mfu_pct": r["published"]["stated_utilisation_pct"], "source": r["source"]}


def comm_rows(est: par.StepEstimate) -> list[dict]:
    return [{"strategy": c.strategy, "collective": c.op, "size_mb": c.size_B / 1e6, "calls": c.calls,
             "group": c.group_size, "link": c.bottleneck.split(":")[0], "time_ms": c.time_s * 1e3,
             "exposed_ms": c.exposed_s * 1e3, "hides": c.window, "sent_gb": c.sent_B / 1e9} for c in est.comms]


def comm_table(est: par.StepEstimate):
    return table(comm_rows(est), {
        "strategy": "strategy", "collective": "collective", "size_mb": Col("size of one call", "MB", "{:,.1f}"),
        "calls": Col("calls per step", None, "{:,}"), "group": Col("group", "GPUs", "{:,}"), "link": "bottleneck",
        "sent_gb": Col("sent per GPU", "GB", "{:,.1f}"), "time_ms": Col("time", "ms", "{:,.0f}"),
        "exposed_ms": Col("exposed", "ms", "{:,.0f}"), "hides": "can hide behind"})


def breakdown(est: par.StepEstimate) -> dict:
    """Seconds per part of a step: compute, pipeline bubble, and each strategy's exposed communication."""
    parts = {"compute": est.compute_s, "pipeline bubble": est.bubble_s}
    for c in est.comms:
        key = f"exposed {c.strategy}"
        parts[key] = parts.get(key, 0.0) + c.exposed_s
    return parts


PARTS = ["compute", "pipeline bubble", "exposed tp", "exposed dp", "exposed zero1", "exposed zero2",
         "exposed zero3", "exposed pp", "exposed cp", "exposed ep"]

def compared(layouts: Mapping[str, Mapping]) -> list[tuple[str, par.StepEstimate]]:
    """Each layout (label → overrides of the quiz layout's fields, e.g. dict(tp=8, pp=1, dp=128, zero=1)) estimated
    on the quiz model and cluster; the page states the layouts it compares in the cell that tables them."""
    return [(label, estimate(**over)) for label, over in layouts.items()]


def compared_rows(layouts: Mapping[str, Mapping]) -> list[dict]:
    rows = []
    for label, est in compared(layouts):
        rows.append({"layout": label, "compute_s": est.compute_s, "bubble_s": est.bubble_s,
                     "exposed_s": est.exposed_comm_s, "step_s": est.step_s, "mfu": est.mfu,
                     "sent_gb": est.bytes_per_gpu / 1e9, "state_gb": est.state_B_per_gpu / 1e9})
    return rows


def compared_table(layouts: Mapping[str, Mapping]):
    return table(compared_rows(layouts), {
        "layout": Col("layout", wrap=True), "compute_s": Col("compute", "s", "{:.2f}"),
        "bubble_s": Col("bubble", "s", "{:.2f}"), "exposed_s": Col("exposed comm.", "s", "{:.2f}"),
        "step_s": Col("step", "s", "{:.2f}"), "mfu": Col("predicted MFU", None, "{:.2f}"),
        "sent_gb": Col("sent per GPU", "GB", "{:,.0f}"), "state_gb": Col("model state per GPU", "GB", "{:,.1f}")})


def breakdown_rows(layouts: Mapping[str, Mapping]) -> list[tuple[str, dict]]:
    return [(label, breakdown(est)) for label, est in compared(layouts)]


def used_parts(rows) -> list[str]:
    return [p for p in PARTS if any(r[1].get(p, 0) > 0 for r in rows)]


def strategy_rows(model: str = QUIZ_MODEL, cluster: str = QUIZ_CLUSTER, layout: str = QUIZ_LAYOUT) -> list[dict]:
    """Each strategy alone (the others at the layout's degrees) on the cluster: what comm-estimate says. Context
    parallelism splits sequences twice as long over 2 GPUs, taken from data parallelism (same GPUs, same tokens)."""
    mdl, clu = par.model(model), par.cluster(cluster)
    base = par.layout(layout)
    cases = {"dp": dict(zero=0), "zero1": dict(zero=1), "zero2": dict(zero=2), "zero3": dict(zero=3),
             "tp": {}, "pp": {}, "cp": dict(cp=2, dp=base.dp // 2, seq=2 * base.seq,
                                            global_batch_seqs=base.global_batch_seqs // 2)}
    rows = []
    for s, over in cases.items():
        lay = dataclasses.replace(base, **over)
        doc = par.comm_estimate(s, mdl, clu, lay)
        ops = ", ".join(dict.fromkeys(c["op"] for c in doc["collectives"]))
        link = ", ".join(dict.fromkeys(c["bottleneck"].split(":")[0] for c in doc["collectives"]))
        rows.append({"strategy": s, "collectives": ops, "link": link,
                     "sent_gb": doc["bytes_per_gpu_per_step"] / 1e9, "time_s": doc["time_s"],
                     "exposed_s": doc["exposed_time_s"]})
    return rows


def strategy_table(model: str = QUIZ_MODEL, cluster: str = QUIZ_CLUSTER, layout: str = QUIZ_LAYOUT):
    return table(strategy_rows(model, cluster, layout), {
        "strategy": "strategy", "collectives": Col("collectives", wrap=True), "link": "bottleneck",
        "sent_gb": Col("sent per GPU and step", "GB", "{:,.1f}"), "time_s": Col("time", "s", "{:.3f}"),
        "exposed_s": Col("exposed", "s", "{:.3f}")})


def layout_givens_table(model: str = QUIZ_MODEL, cluster: str = QUIZ_CLUSTER, layout: str = QUIZ_LAYOUT):
    raw = par.load()["layouts"][layout]
    mdl, clu = par.model(model), par.cluster(cluster)
    lay = par.layout(layout)
    rows = [{"given": "model", "value": f"{mdl.name}: {mdl.layers} layers, width {mdl.hidden}, "
                                        f"{mdl.params / 1e9:.1f} billion parameters"},
            {"given": "cluster", "value": f"{clu.nodes} nodes x {clu.gpus_per_node} {clu.device}, "
                                          f"{clu.nics_per_node} NICs per node"},
            {"given": "degrees", "value": f"tensor {lay.tp}, pipeline {lay.pp}, data {lay.dp} (ZeRO stage {lay.zero})"},
            {"given": "batch", "value": f"{lay.global_batch_seqs} sequences of {lay.seq} tokens, micro-batches of "
                                        f"{lay.micro_batch}: {lay.micro_batches} per step"},
            {"given": "precision", "value": f"BF16 activations and gradients ({raw['grad_bytes']} bytes)"}]
    return table(rows, {"given": "given", "value": Col("value", wrap=True)})


# ------------------------------------------------------------------------------------------------ a real machine

def read_topo(name: str) -> dict:
    t, notes = topo.read_topo(TOPO_DIR / name)
    return topo.topo_doc(t, notes)


def matrix_table(name: str, gpus_only: bool = False):
    doc = read_topo(name)
    cols = [g["name"] for g in doc["gpus"]] + ([] if gpus_only else [n["name"] for n in doc["nics"]])
    rows = []
    for g in doc["gpus"]:
        row = {"device": g["name"], **{c: doc["matrix"].get(g["name"], {}).get(c, "—") for c in cols}}
        row["CPU affinity"] = g["cpu_affinity"] or "—"
        row["NUMA"] = g["numa_affinity"] or "—"
        rows.append(row)
    return table(rows, {k: k for k in rows[0]})


def findings_table(name: str):
    doc = read_topo(name)
    rows = [{"severity": f["severity"], "finding": f["message"]} for f in doc["findings"]]
    rows += [{"severity": "input", "finding": w} for w in doc["warnings"]]
    return table(rows, {"severity": "severity", "finding": Col("finding", wrap=True)})


def captures_rows(folder=TOPO_DIR, pattern: str = "topo_*.txt") -> list[dict]:
    rows = []
    for path in sorted(folder.glob(pattern)):
        t, notes = topo.read_topo(path)
        doc = topo.topo_doc(t, notes)
        nv = sorted({p["path"] for p in doc["pairs"]})
        warn = [f["code"] for f in doc["findings"] if f["severity"] == "warning"]
        rows.append({"file": path.stem.removeprefix("topo_"), "gpus": len(doc["gpus"]), "nics": len(doc["nics"]),
                     "gpu_pairs": ", ".join(nv), "warnings": ", ".join(dict.fromkeys(warn)) or "—",
                     "cut": "yes" if doc["warnings"] else "no"})
    return rows


def captures_table(folder=TOPO_DIR, pattern: str = "topo_*.txt"):
    """Every ``nvidia-smi topo -m`` capture in ``folder`` matching ``pattern``, read."""
    return table(captures_rows(folder, pattern), {"file": Col("capture", wrap=True), "gpus": "GPUs", "nics": "NICs",
                                   "gpu_pairs": "GPU-GPU paths", "warnings": Col("warnings", wrap=True),
                                   "cut": "read with input warnings"})


def ib_table(name: str):
    text, notes = topo.read_text(TOPO_DIR / name)
    tool, ports, warns = topo.parse_ib(text, name)
    doc = topo.ib_doc(tool, ports, notes + warns)
    rows = [{"port": f"{p['ca']} port {p['port']}", "state": p["state"] or "—",
             "rate": fmt_value(p["rate_gbit_s"], fmt="{:g}"), "per_dir": p["rate_gb_s_per_direction"],
             "layer": p["link_layer"] or "—"} for p in doc["ports"]]
    return table(rows, {"port": "port", "state": "state", "rate": Col("rate", "Gb/s"),
                        "per_dir": Col("per direction", "GB/s", "{:g}"), "layer": "link layer"})


# ------------------------------------------------------------------------------------------------ explorer

def comm_explorer(model: str = QUIZ_MODEL, cluster: str = QUIZ_CLUSTER, tp: int = 8, pp: int = 4, cp: int = 1,
                  zero: int = 1, global_batch: int = 1024, in_network: bool = False):
    """Dropdowns for the layout (degrees, ZeRO stage, batch, in-network reduction) on ``model`` and a cluster,
    starting at the arguments; shows each collective's bytes, time and exposed part, and the step's breakdown."""
    import ipywidgets as w
    from IPython.display import Markdown, display

    mdl = par.model(model)
    cluster_ids = list(par.load()["clusters"]) + ["2x8-h100-ib400", "2x8-a100-ib200"]

    def show(cluster, tp, pp, cp, zero, global_batch, in_network):
        clu = par.cluster(cluster)
        inner = tp * pp * cp
        if clu.n_ranks % inner:
            print(f"tp x pp x cp = {inner} does not divide the {clu.n_ranks} GPUs of {cluster}")
            return
        try:
            lay = par.Layout(tp=tp, pp=pp, cp=cp, dp=clu.n_ranks // inner, zero=zero, seq=4096 * cp,
                             global_batch_seqs=global_batch // cp, in_network=in_network)
            est = par.estimate_step(mdl, clu, lay)
        except ValueError as exc:
            print(f"cannot estimate: {exc}")
            return
        display(comm_table(est))
        fit = "fits" if est.fits else "does NOT fit"
        display(Markdown(f"compute {est.compute_s:.2f} s, bubble {est.bubble_s:.2f} s, exposed communication "
                         f"{est.exposed_comm_s:.2f} s: step {est.step_s:.2f} s, predicted MFU {est.mfu:.2f}; model "
                         f"state {est.state_B_per_gpu / 1e9:.1f} GB per GPU ({fit} in memory)."))

    return w.interactive(
        show,
        cluster=w.Dropdown(options=cluster_ids, value=cluster, description="cluster"),
        tp=w.Dropdown(options=[1, 2, 4, 8], value=tp, description="tensor"),
        pp=w.Dropdown(options=[1, 2, 4, 8, 16], value=pp, description="pipeline"),
        cp=w.Dropdown(options=[1, 2, 4], value=cp, description="context"),
        zero=w.Dropdown(options=[("DDP", 0), ("ZeRO-1", 1), ("ZeRO-2", 2), ("ZeRO-3 / FSDP", 3)], value=zero,
                        description="data par."),
        global_batch=w.Dropdown(options=[256, 512, 1024, 2048], value=global_batch, description="batch (seq.)"),
        in_network=w.Checkbox(value=in_network, description="NVLink/IB SHARP"),
    )


# ------------------------------------------------------------------------------------------------ ring ceiling

#: nccl-tests issue 309: 2 × 8 H100, eight 400 Gb/s InfiniBand NICs per node, NCCL_ALGO=Ring (tests/data/README.md)
RING_RUN_309 = "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-gjaion-ring.log"


def ring_ceiling() -> dict:
    """The model's bandwidth-bound ring busbw on the quiz cluster, where the model puts its limit, the node's
    network line rate per direction, and the best busbw a forced-Ring run on 2 × 8 H100 with the same NICs
    measured (GB/s = 1e9 B/s). Used in: book/03-interconnects-and-topology.md, "Collectives on the quiz cluster"."""
    from x4lib.catalog import published
    from x4lib.network import nccl_log
    clu = quiz_inputs()[1]
    ring = collectives.predict("all_reduce", 1e15, clu, algorithm="ring")     # the bandwidth-bound limit
    log = nccl_log.read_path(published.LOG_DIR / RING_RUN_309)
    measured = max(p.busbw_gb_s for r in log.rows for _, p in r.placements())
    model, network = ring.busbw_Bps / 1e9, clu.node_line_rate_Bps / 1e9
    return {"model_gb_s": model, "model_limit": ring.bottleneck.split(":")[0], "network_gb_s": network,
            "model_vs_network": "below" if model < network else "at or above", "measured_gb_s": measured,
            "measured_vs_model": "above" if measured > model else "below"}
