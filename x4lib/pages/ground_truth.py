"""Page helpers for book/appendix-ground-truth.md: the stack model (x4lib.training.stack) scored on public ground
truth, each source left out of its own fit (x4lib.training.validate, as ``plan-validate`` prints it): the table of
sources and targets, the stated pipeline schedules, the overlap constant's bound, the Playbook's sweep
(x4lib.pages.ground_truth_playbook) and every number the appendix quotes. The capstone shows the table and a summary
(``page.ground_truth_table`` and the ``gt_*`` values of its ``summary()``)."""
from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

from x4lib.book.tables import Col, table
from x4lib.training import ground_truth as gt
from x4lib.pages.ground_truth_playbook import (  # noqa: F401  (page.playbook_* in the appendix)
    playbook_by_nodes, playbook_layer_floor, playbook_network_table, playbook_nodes_table)


def ground_truth_report(sources: Sequence[str] = gt.SOURCES) -> dict:
    """``plan-validate --json`` over ``sources`` (default: every source; x4lib.training.validate),
    leave-one-source-out."""
    return _report(tuple(sources))


@functools.lru_cache(maxsize=8)
def _report(sources: tuple) -> dict:
    from x4lib.training import validate
    return validate.report(sources)


def ground_truth_rows(sources: Sequence[str] = gt.SOURCES) -> list[dict]:
    out = []
    for d in ground_truth_report(sources)["sources"]:
        peer = d["peer"]
        err = (f"{d['mfu_points']['mean_abs']:.1f} MFU points" if d["mfu_points"]
               else f"{d['mean_abs_error_pct']:.1f} %")
        out.append({"source": d["source"], "rows": d["rows"], "error": err, "bias": d["signed_bias_pct"],
                    "within": d["within_10pct"], "tau": d["kendall_tau"],
                    "peer": "-" if peer["error_pct"] is None else f"{peer['name']}: {peer['error_pct']:.2f} %",
                    "target": ("met: " if d["target"]["met"] else "missed: ") + d["target"]["text"]})
    return out


def ground_truth_table(sources: Sequence[str] = gt.SOURCES):
    return table(ground_truth_rows(sources), {
        "source": "source", "rows": Col("rows", None, "{:,}"), "error": Col("mean |error|"),
        "bias": Col("signed bias", "%", "{:+.1f}"), "within": Col("within 10 %", None, "{:.0%}"),
        "tau": Col("ranking τ", None, "{:.2f}"), "peer": Col("the peer's own error", wrap=True),
        "target": Col("target (issue 30)", wrap=True)})


def ground_truth_misses() -> list[dict]:
    """The sources whose target the model misses, with the computed figures the page states."""
    return [d for d in ground_truth_report()["sources"] if not d["target"]["met"]]


@functools.lru_cache(maxsize=1)
def stated_interleave() -> dict:
    """The published runs whose virtual pipeline stages the source states (training_runs.yaml ``interleave``): how
    many, the range of stages, and the stack model's residuals on the NeMo rows (leave-one-source-out) as scored and
    with the same constants but a plain 1F1B schedule (one stage per rank), in MFU points."""
    from x4lib.training import validate
    sc = validate.scored("published")
    vs = [x.row.setup.interleave for x in sc if x.row.setup.interleave > 1]
    nemo = [x for x in sc if x.row.stack.id == "nemo-mcore-2024"]
    plain = [validate.Scored(x.row, validate.row_step(x.row, dataclasses.replace(x.row.setup, interleave=1))
                             .time_s(validate.loso_constants("published", x.row.origin))).mfu_points for x in nemo]
    pts = [x.mfu_points for x in nemo]
    return {"n": len(vs), "v_lo": min(vs), "v_hi": max(vs), "nemo_n": len(nemo), "nemo_lo": min(pts),
            "nemo_hi": max(pts), "plain_lo": min(plain), "plain_hi": max(plain),
            "plain_outside": sum(abs(p) > validate.LIMITS["published_points"] for p in plain)}


@functools.lru_cache(maxsize=1)
def overlap_bound() -> dict:
    """What bounding the overlap constant by validate.OVERLAP_MAX changes: the constant each leave-one-source-out fit
    reaches with and without the bound, and on the published runs the NeMo residuals (MFU points) and the runs within
    the ±10-point band, both ways."""
    import math
    from x4lib.training import validate
    free = [validate.loso_constants(src, "", math.inf).overlapped for src in gt.FIT_SOURCES]
    bound = [validate.loso_constants(src).overlapped for src in gt.FIT_SOURCES]
    out = {"max": validate.OVERLAP_MAX, "sources": len(gt.FIT_SOURCES), "free_lo": min(free), "free_hi": max(free),
           "at_bound": sum(c == validate.OVERLAP_MAX for c in bound)}
    for key, om in (("free", math.inf), ("bound", validate.OVERLAP_MAX)):
        sc = validate.scored("published", overlap_max=om)
        nemo = [x.mfu_points for x in sc if x.row.stack.id == "nemo-mcore-2024"]
        out[f"{key}_nemo_lo"], out[f"{key}_nemo_hi"] = min(nemo), max(nemo)
        out[f"{key}_within"] = sum(abs(x.mfu_points) <= validate.LIMITS["published_points"] for x in sc)
        out[f"{key}_mean_abs"] = sum(abs(x.mfu_points) for x in sc) / len(sc)
        out[f"{key}_outside_stacks"] = sorted({x.row.stack.name for x in sc
                                               if abs(x.mfu_points) > validate.LIMITS["published_points"]})
    return out


@functools.lru_cache(maxsize=1)
def numbers() -> dict:
    """Every ground-truth number the appendix and the capstone's summary quote (glue key → value, display units):
    per source its error, rows, bias and peer's error (``gt_*``), the targets (``target_*``), the Playbook's targets,
    twins and measured network (``gt_playbook_*``, ``gt_pb_*``, ``pb_net_*``) and the stated schedules (``vp_*``)."""
    s: dict = {}
    by = {d["source"]: d for d in ground_truth_report()["sources"]}
    for src, d in by.items():
        k = src.replace("-", "_")
        s[f"gt_{k}_err"] = d["mean_abs_error_pct"]
        s[f"gt_{k}_rows"] = d["rows"]
        s[f"gt_{k}_bias"] = d["signed_bias_pct"]
        if d["peer"]["error_pct"] is not None:
            s[f"gt_{k}_peer"] = d["peer"]["error_pct"]
    from x4lib.training import validate
    s["gt_kernel_mds_us"] = 1e6 * validate.loso_constants("vtrain-single").kernels_for("megatron-deepspeed")
    for k, val in validate.LIMITS.items():
        s[f"target_{k}"] = val
    s["gt_playbook_best"] = by["playbook"]["playbook"]["best_median_abs_error_pct"]
    s["gt_playbook_pick"] = by["playbook"]["playbook"]["pick_within_5pct"]
    s["gt_playbook_groups"] = by["playbook"]["playbook"]["groups"]
    s["gt_playbook_tau"] = by["playbook"]["kendall_tau"]
    pb_met = validate.playbook_targets(by["playbook"])
    for k, ok in pb_met.items():
        s[f"gt_playbook_{k}_met"] = "met" if ok else "missed"
    s["gt_playbook_n_met"] = sum(pb_met.values())
    rp = by["playbook"]["playbook"]["repeatability"]
    for k in ("twins", "twin_groups", "retest_tau", "model_tau", "retest_pick", "model_pick", "repeats",
              "repeat_spread_median", "repeat_spread_max"):
        s[f"gt_pb_{k}"] = rp[k]
    s["gt_pb_twin_ratio"] = rp["twin_ratio_median"]
    s["gt_pb_twins_off_pct"] = 100 * rp["twins_outside_1_5x"]
    s["gt_pb_spread"] = validate.TWIN_SPREAD
    s["gt_pb_model_twin_hi_pct"] = 100 * (rp["model_twin_ratio_p5_p95"][1] - 1)
    net = validate.measured_network("playbook")
    two, top = net[1], net[-1]
    s["pb_net_top_nodes"] = top["nodes"]
    s["pb_net_ag_top"], s["pb_net_ag_top_model"] = top["all_gather"], top["all_gather_model"]
    s["pb_net_ag_top_ib"] = top["all_gather_ib"]
    s["pb_net_ar_two"], s["pb_net_ar_two_model"] = two["all_reduce"], two["all_reduce_model"]
    s["pb_net_ag_below_lo"] = min(r["all_gather_model"] / r["all_gather"] for r in net[2:])
    s["pb_net_ag_below_hi"] = max(r["all_gather_model"] / r["all_gather"] for r in net[2:])
    s["pb_net_size_mib"] = gt.source_info("playbook")["network"]["measured_busbw"]["size_MiB"]
    s["gt_vtrain_single_tau"] = by["vtrain-single"]["kendall_tau"]
    s["gt_published_within"] = by["published"]["within_10_points"]
    s["gt_published_pts"] = by["published"]["mfu_points"]["mean_abs"]
    s["gt_n_missed"] = len(ground_truth_misses())
    for k, val in stated_interleave().items():
        s[f"vp_{k}"] = val
    return s



def single_gpu_terms() -> dict:
    """This book's single-GPU steps (the ``single-gpu`` source, Lab 02's GPU runs) split as the runs time them:
    the optimizer step (the stack model's optimizer bytes at the device's copy bandwidth) and the forward and backward passes
    (the rest), predicted against measured, per device; display units (ms, %). The runs' devices, the model's
    optimizer bytes per parameter and autocast's cast bytes come with them."""
    import statistics
    from x4lib.training import stack as stk, validate
    c = validate.loso_constants("single-gpu")
    out: dict = {}
    by_dev: dict = {}
    rows = gt.rows("single-gpu")
    for r, s in zip(rows, validate.steps("single-gpu")):
        m = gt.lab02_measured(r.row_id)
        opt = s.exposed["optimizer"]
        # the same bytes through the memory term's fitted multiplier at the full HBM bandwidth (the way before)
        opt_mult = c.memory * opt * stk._copy_fraction(r.device.id)
        by_dev.setdefault(r.device.id, []).append(((s.time_s(c) - opt) / (m["forward"] + m["backward"]) - 1,
                                                   opt / m["optimizer"] - 1, r.params, opt_mult / m["optimizer"] - 1))
    for dev, v in by_dev.items():
        k = dev.split("-")[0]
        out[f"sg_{k}_runs"] = len(v)
        out[f"sg_{k}_fb_err"] = 100 * statistics.median(x[0] for x in v)
        out[f"sg_{k}_opt_err"] = 100 * statistics.median(x[1] for x in v)
        out[f"sg_{k}_opt_mult_err"] = 100 * statistics.median(x[3] for x in v)
    st = rows[0].stack
    out["sg_params_b"] = next(iter(by_dev.values()))[0][2] / 1e9
    out["sg_opt_B"] = st.optimizer_B_per_param
    out["sg_fused_B"] = stk.OPTIMIZER_B_PER_PARAM
    out["sg_cast_B"] = st.weight_cast_B_per_param
    return out
