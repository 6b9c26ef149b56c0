"""The reading of the Ultra-Scale Playbook's sweep (x4lib.training.validate, source ``playbook``): its
misses by node count, its own network benchmark beside the collective model, and the per-layer floor where each GPU
has little work. Re-exported by x4lib.pages.ground_truth (``page.playbook_*`` in book/appendix-ground-truth.md)."""
from __future__ import annotations

import functools

from x4lib.book.tables import Col, sig, table


@functools.lru_cache(maxsize=8)
def playbook_by_nodes(source: str = "playbook") -> dict:
    """The Playbook's misses by node count (leave-one-source-out, as plan-validate scores them): per node count the
    groups, the median error of each group's measured best layout, of every layout, and of the layouts whose tensor
    parallelism crosses nodes; and the models whose measured best got slower from the second-largest node count to
    the largest (error: t_predicted / t_measured − 1, negative = predicted too fast). ``source``: the ground-truth
    source scored (default: the Playbook's)."""
    import statistics
    from x4lib.training import validate
    sc = validate.scored(source)
    nodes = lambda x: x.row.gpus // x.row.gpus_per_node  # noqa: E731
    bests = [min(g, key=lambda x: x.row.measured_step_s) for g in validate._groups(sc).values()]
    rows = []
    for n in sorted({nodes(x) for x in sc}):
        at = [x for x in sc if nodes(x) == n]
        cross = [x.error for x in at if x.row.setup.tp > x.row.gpus_per_node]
        rows.append({"nodes": n, "groups": sum(nodes(b) == n for b in bests),
                     "best": statistics.median(b.error for b in bests if nodes(b) == n),
                     "all": statistics.median(x.error for x in at),
                     "cross": statistics.median(cross) if cross else None})
    top, second = rows[-1]["nodes"], rows[-2]["nodes"]
    step = {(b.row.label, nodes(b)): b.row.measured_step_s for b in bests}
    slower = sorted({m for m, n in step if n == top and (m, second) in step and step[(m, top)] > step[(m, second)]})
    below = [r["best"] for r in rows if r["nodes"] < top]
    return {"rows": rows, "top": top, "second": second, "slower_models": slower,
            "below_lo": min(below), "below_hi": max(below), "top_best": rows[-1]["best"],
            "cross_all": statistics.median(x.error for x in sc if x.row.setup.tp > x.row.gpus_per_node)}


def playbook_nodes_table(source: str = "playbook"):
    def pct(v):
        return "-" if v is None else f"{100 * v:+.0f}"
    return table(playbook_by_nodes(source)["rows"], {
        "nodes": "nodes (8 H100 each)", "groups": "model groups",
        "best": Col("each group's measured best: median error", "%", pct),
        "all": Col("every layout: median error", "%", pct),
        "cross": Col("tensor parallelism across nodes: median error", "%", pct)})


def playbook_network_table(source: str = "playbook"):
    """The bus bandwidth the Playbook measured on its own cluster beside the collective model on its fabric (EFA)
    and on the InfiniBand preset (validate.measured_network); reduce-scatter measured as all-gather did."""
    cols = {"nodes": "nodes (8 H100 each)"}
    for kind, name in (("all_reduce", "all-reduce"), ("all_gather", "all-gather")):
        cols[kind] = Col(f"{name}: measured", "GB/s", sig(3))
        cols[f"{kind}_model"] = Col(f"{name}: model on EFA", "GB/s", sig(3))
        cols[f"{kind}_ib"] = Col(f"{name}: model on the IB preset", "GB/s", sig(3))
    from x4lib.training import validate
    return table(validate.measured_network(source), cols)


def playbook_layer_floor(min_tp: int = 4, max_nodes: int = 8) -> dict:
    """The Playbook's time per layer and micro-batch [ms] where each GPU has little work: one sequence per
    micro-batch, no pipeline, tensor parallelism of ``min_tp`` or more inside a node, up to ``max_nodes`` nodes (the
    64-node slowdown is a separate miss). Per (model, TP degree) the median measured and predicted time per layer and
    micro-batch (step / micro-batches / layers) and the part of the prediction that is the stack model's kernel
    launches; then their ranges (leave-one-source-out, as plan-validate scores them), and how many of these runs are
    their group's measured best."""
    import statistics
    from x4lib.training import validate
    sc = validate.scored("playbook")
    bests = {id(min(g, key=lambda x: x.row.measured_step_s)) for g in validate._groups(sc).values()}
    per: dict = {}
    n_best = 0
    for x, st in zip(sc, validate.steps("playbook")):
        r, s = x.row, x.row.setup
        if (s.pp == 1 and s.micro_batch == 1 and min_tp <= s.tp <= r.gpus_per_node
                and r.gpus <= max_nodes * r.gpus_per_node):
            n_best += id(x) in bests
            n = s.micro_batches * r.shape.layers / 1e3      # ms per layer and micro-batch
            kern = st.terms_s(validate.loso_constants("playbook", r.origin))["kernels"]   # the constants scored with
            per.setdefault((r.label, s.tp), []).append((r.measured_step_s / n, x.predicted_step_s / n, kern / n))
    rows = [{"model": m, "tp": tp, "measured_ms": statistics.median(v[0] for v in vals),
             "predicted_ms": statistics.median(v[1] for v in vals), "kernels_ms": statistics.median(v[2] for v in vals),
             "runs": len(vals)} for (m, tp), vals in sorted(per.items())]
    rng = lambda k: (min(r[k] for r in rows), max(r[k] for r in rows))  # noqa: E731
    return {"rows": rows, "measured": rng("measured_ms"), "predicted": rng("predicted_ms"),
            "kernels": rng("kernels_ms"), "models": sorted({r["model"] for r in rows}, key=lambda m: float(m[:-1])),
            "tps": sorted({r["tp"] for r in rows}), "runs": sum(r["runs"] for r in rows), "group_bests": n_best}
