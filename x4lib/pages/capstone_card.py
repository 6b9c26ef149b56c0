"""Page helpers for the capstone's answer card (book/capstone-8-to-1024.md): the rules of thumb of
x4lib.training.rules on the catalog's H100 and the capstone's 70B run, the planner as their check with its measured
bias as a range, the published anchors, the final range, the model answer and the decision exercises. The plan and
its range come from x4lib.pages.capstone (one number); goodput from chapter 04's own functions."""
from __future__ import annotations

import functools

from x4lib.book import spanish
from x4lib.book.tables import Col, table
from x4lib.catalog import specs
from x4lib.pages import capstone
from x4lib.training import planner, rules

DEVICE = "h100-sxm"
GPUS = 1024
#: the published anchors the card sets beside the plan (ids of x4lib/data/training_runs.yaml)
ANCHORS = {"dgxc-llama31-70b-bf16-1024": "NVIDIA's tuned NeMo recipe, Llama 3.1 70B",
           "llama3-405b-8192-seq8192": "Llama 3 405B, production pre-training"}


def cluster(device: str = DEVICE, gpus: int = GPUS):
    """The planner's cluster for ``gpus`` of ``device`` (the H100 preset's NVLink and NICs)."""
    return planner.cluster_for(specs.get(device), gpus)


def replicas(lay: planner.Layout) -> int:
    """Ranks that hold the same weights and synchronise gradients: d·c."""
    return lay.dp * lay.cp


def micro_batches(lay: planner.Layout, batch_tokens: int, seq: int) -> int:
    """Micro-batches each replica runs per step: sequences per step / (d · micro-batch)."""
    return batch_tokens // seq // (lay.dp * lay.micro_batch)


def goodput_inputs() -> dict:
    """Chapter 04's failure rate per GPU (Llama 3's interruptions), checkpoint write and restart times."""
    from x4lib.datacenter import facility as dc, storage
    from x4lib.pages import ch04
    return {"rate": ch04.failure_scenarios()["Llama 3 interruptions"],
            "checkpoint_s": storage.checkpoint_bytes(ch04.quiz()["params"]) / (dc.given("checkpoint_write_GBps") * 1e9),
            "restart_s": dc.given("restart_s")}


def goodput_ch04(gpus: int) -> dict:
    """Chapter 04's row for ``gpus`` (job MTBF, Daly interval, goodput): the same function chapter 04 calls."""
    from x4lib.pages import ch04
    return ch04.mtbf_vs_gpus_rows((gpus,))[0]


@functools.lru_cache(maxsize=1)
def card() -> dict:
    """Every number of the answer card, the check, the anchors, the final range and the model answer (glue keys)."""
    m, dev, clu, B = capstone.model70(), specs.get(DEVICE), cluster(), capstone.batch_tokens()
    S = capstone.summary()
    peak, nvl, net = dev.peak_flop_per_s("bf16"), clu.intra.bw_Bps, rules.network_Bps_per_gpu(clu)
    c: dict = {"card_params_b": m.params / 1e9, "card_bpp": rules.state_bytes_per_param(),
               "card_state_tb": m.params * rules.state_bytes_per_param() / 1e12,
               "card_usable_gb": capstone.memory.capacity_B(dev) * (1 - planner.RESERVE) / 1e9,
               "card_floor": rules.memory_floor_gpus(m, dev), "card_min_gpus": S["min_gpus"]}
    # tensor parallelism
    c.update({"card_peak_tf": peak / 1e12, "card_nvl_gbs": nvl / 1e9, "card_net_gbs": net / 1e9,
              "card_pw_nvl": peak / nvl, "card_pw_net": peak / net, "card_ffn": m.ffn, "card_hidden": m.hidden,
              "card_layer_m": rules.layer_params(m) / 1e6, "card_domain": clu.gpus_per_node,
              "card_ffn_per_gpu": m.ffn / clu.gpus_per_node,
              "card_tp_cross_nvl": rules.tp_crossover(m, dev, nvl),
              "card_tp_cross_net": rules.tp_crossover(m, dev, net),
              "card_tp_ratio_domain": rules.tp_ratio(m, dev, clu.gpus_per_node, nvl),
              "card_tp_ratio_2net": rules.tp_ratio(m, dev, 2 * clu.gpus_per_node, net)})
    c["card_tp_cost_domain_pct"] = 100 / c["card_tp_ratio_domain"]
    # data parallelism
    head = capstone.stack_best(DEVICE, GPUS)
    lay = head.layout
    top = capstone.best(DEVICE, GPUS).layout
    c.update({"card_k1": rules.sync_bytes_per_param(1), "card_k3": rules.sync_bytes_per_param(3),
              "card_dp_min_z1": rules.dp_min_tokens(dev, clu, 1), "card_dp_min_z3": rules.dp_min_tokens(dev, clu, 3),
              "card_batch_mi": B / 2 ** 20, "card_dp_max_z1": rules.dp_max_degree(dev, clu, B, 1),
              "card_dp_max_z3": rules.dp_max_degree(dev, clu, B, 3),
              "card_mp_min": GPUS / rules.dp_max_degree(dev, clu, B, 1),
              "card_head_replicas": replicas(lay), "card_head_tokens_rep": B / replicas(lay),
              "card_head_dp_ratio": B / replicas(lay) / rules.dp_min_tokens(dev, clu, lay.zero),
              "card_fsdp_replicas": replicas(top), "card_fsdp_tokens_rep": B / replicas(top),
              "card_fsdp_zero": top.zero, "card_fsdp_layout": top.label()})
    # pipeline
    mb = micro_batches(lay, B, m.seq)
    c.update({"card_pp": lay.pp, "card_m": mb, "card_vp": head.interleave,
              "card_plain_bubble_pct": 100 * rules.pipeline_bubble(lay.pp, mb),
              "card_bubble_pct": 100 * rules.pipeline_bubble(lay.pp, mb, head.interleave),
              "card_m_for_5pct": rules.micro_batches_for(lay.pp, 0.05),
              "card_k3_m": rules.sync_bytes_per_param(3, mb), "card_k2_m": rules.sync_bytes_per_param(2, mb),
              "card_k3_ratio": rules.sync_bytes_per_param(3, mb) / rules.sync_bytes_per_param(1),
              "card_head_zero": lay.zero, "card_head_tp": lay.tp, "card_head_cp": lay.cp, "card_head_dp": lay.dp,
              "card_head_pp": lay.pp})
    c["card_head_tp_cost_pct"] = 100 / rules.tp_ratio(m, dev, lay.tp, nvl) if lay.tp > 1 else 0.0
    # goodput: the hand rule and chapter 04's exact model, the same inputs
    g = goodput_inputs()
    row = goodput_ch04(GPUS)
    c.update({"card_gpu_mtbf_y": 1 / g["rate"] / (86400 * 365.25), "card_mtbf_h": row["mtbf_h"],
              "card_mtbf_ks": row["mtbf_h"] * 3.6, "card_interval_min": row["interval_min"],
              "card_ckpt_s": g["checkpoint_s"], "card_restart_s": g["restart_s"],
              "card_goodput_hand_pct": 100 * rules.goodput_first_order(g["rate"], GPUS, g["checkpoint_s"],
                                                                      g["restart_s"]),
              "card_goodput_pct": 100 * row["goodput"], "card_mtbf_8_h": goodput_ch04(8)["mtbf_h"]})
    # the check, the anchors and the final range
    c.update({"card_mfu": S["mfu_1024"], "card_mfu_lo": S["mfu_1024_lo"], "card_mfu_hi": S["mfu_1024_hi"],
              "card_layout": S["layout_1024"], "card_days": S["days_1024"], "card_planner_mfu": S["planner_mfu_1024"],
              "card_res_lo": S["head_lo"], "card_res_hi": S["head_hi"], "card_res_n": S["head_n"]})
    a = anchors()
    nv, ll = a["dgxc-llama31-70b-bf16-1024"], a["llama3-405b-8192-seq8192"]
    c.update({"card_nv_mfu": 100 * nv["published"], "card_nv_stated": nv["stated"], "card_nv_layout": nv["layout"],
              "card_nv_batch_mi": nv["batch_tokens"] / 2 ** 20, "card_nv_gpus": nv["gpus"],
              "card_nv_batch_x": nv["batch_tokens"] / B,
              "card_ll_mfu": 100 * ll["published"], "card_ll_stated": ll["stated"], "card_ll_gpus": ll["gpus"],
              "card_ll_batch_mi": ll["batch_tokens"] / 2 ** 20, "card_ll_params_b": ll["params"] / 1e9})
    lo, hi = final_range(c)
    c.update({"card_final_lo": lo, "card_final_hi": hi, "card_final_days_lo": S["days_1024"] * S["mfu_1024"] / hi,
              "card_final_days_hi": S["days_1024"] * S["mfu_1024"] / lo})
    return c


def final_range(c: dict) -> tuple[float, float]:
    """The final MFU range (percent): from the lower of the plan and the production anchor (Llama 3) to the higher
    of the plan and the tuned recipe (NVIDIA's, at a larger batch): the band the residuals allow narrowed by the
    two runs nearest to this one, never beyond the residuals' band."""
    lo = max(min(c["card_mfu"], c["card_ll_mfu"]), c["card_mfu_lo"])
    hi = min(max(c["card_mfu"], c["card_nv_mfu"]), c["card_mfu_hi"])
    return lo, hi


@functools.lru_cache(maxsize=1)
def anchors() -> dict:
    """The published anchors from training_runs.yaml with their one-convention MFU (capstone.validation_rows)."""
    runs = {r["id"]: r for r in planner.published_runs()}
    rows = {r["id"]: r for r in capstone.validation_rows()}
    out = {}
    for rid, label in ANCHORS.items():
        r, v = runs[rid], rows[rid]
        out[rid] = {"run": label, "source": r["source"], "gpus": r["gpus"], "params": r["model"]["params"],
                    "layout": v["layout"], "batch_tokens": r["layout"]["global_batch_tokens"],
                    "stated": v["stated"], "published": v["published"], "convention": r["published"]["convention"]}
    return out


def card_rows(c: dict | None = None) -> list[dict]:
    """The answer card as one table: each rule, its one line of arithmetic and what it says for this run (``c``: the
    card's numbers, default :func:`card`)."""
    c = c or card()
    return [
        {"rule": "memory floor",
         "arithmetic": f"{c['card_params_b']:.0f}e9 × {c['card_bpp']:.0f} B = {c['card_state_tb']:.2f} TB "
                       f"÷ {c['card_usable_gb']:.0f} GB usable",
         "says": f"at least {c['card_floor']} GPUs before one activation"},
        {"rule": "tensor parallelism",
         "arithmetic": f"1 + {c['card_layer_m']:.0f}e6 × {c['card_nvl_gbs']:.0f} GB/s ÷ (4 × {c['card_hidden']} × "
                       f"{c['card_peak_tf']:.0f} TFLOP/s)",
         "says": f"compute-bound up to TP {c['card_tp_cross_nvl']:.1f} on NVLink, "
                 f"{c['card_tp_cross_net']:.1f} over the network: TP ≤ {c['card_domain']}"},
        {"rule": "data parallelism",
         "arithmetic": f"({c['card_k1']:.0f} B ÷ 6) × {c['card_peak_tf']:.0f} TFLOP/s ÷ {c['card_net_gbs']:.0f} GB/s"
                       f" = {c['card_dp_min_z1']:,.0f} tokens per replica",
         "says": f"at most {c['card_dp_max_z1']} replicas at {c['card_batch_mi']:.0f} Mi tokens "
                 f"({c['card_dp_max_z3']} with ZeRO-3)"},
        {"rule": "pipeline bubble",
         "arithmetic": (f"(p − 1)/m = ({c['card_pp']} − 1)/{c['card_m']} = {c['card_plain_bubble_pct']:.1f} %"
                        + (f"; ÷ {c['card_vp']} virtual stages = {c['card_bubble_pct']:.1f} %" if c["card_vp"] > 1
                           else "")),
         "says": f"pair it with ZeRO-0 or 1: ZeRO-3 would send {c['card_k3_m']:.0f} B per parameter per step, "
                 f"{c['card_k3_ratio']:.0f}× as much"},
        {"rule": "goodput",
         "arithmetic": f"1 − √(2 × {c['card_ckpt_s']:.1f} s ÷ {c['card_mtbf_ks']:.0f} ks) − "
                       f"{c['card_restart_s']:.0f} s ÷ {c['card_mtbf_ks']:.0f} ks  (M = {c['card_mtbf_h']:.1f} h)",
         "says": f"{c['card_goodput_hand_pct']:.1f} % by hand, {c['card_goodput_pct']:.1f} % in chapter 04's model"},
    ]


def card_table(c: dict | None = None):
    return table(card_rows(c), {"rule": "rule", "arithmetic": Col("one line of arithmetic (H100, BF16 dense, "
                                                                  "rates per direction)", wrap=True),
                               "says": Col("for the 70B run on 1024 GPUs", wrap=True)})


def check_rows(c: dict | None = None) -> list[dict]:
    """The plan, its range, the anchors and the final range side by side (MFU in the 6ND convention; ``c``: the
    card's numbers, default :func:`card`)."""
    c, a = c or card(), anchors()
    rows = [{"what": "the planner alone (hardware only)", "layout": capstone.headline()["planner_layout"],
             "gpus": GPUS, "batch": c["card_batch_mi"], "mfu": c["card_planner_mfu"],
             "reason": "an upper bound: no launches, no compute lost to overlap"},
            {"what": "the stack model (the book's one number)", "layout": c["card_layout"], "gpus": GPUS,
             "batch": c["card_batch_mi"], "mfu": c["card_mfu"],
             "reason": f"its leave-one-source-out residuals on {c['card_res_n']} H100 runs give "
                       f"{c['card_mfu_lo']:.0f} to {c['card_mfu_hi']:.0f} %"}]
    for rid, r in a.items():
        rows.append({"what": f"{r['run']} ({r['source']})", "layout": r["layout"], "gpus": r["gpus"],
                     "batch": r["batch_tokens"] / 2 ** 20, "mfu": 100 * r["published"],
                     "reason": (f"published {r['stated']:g} % in its own convention; "
                                + ("tuned by the vendor, a batch "
                                   f"{r['batch_tokens'] / 2 ** 20 / c['card_batch_mi']:.0f}× ours (fewer bubbles)"
                                   if rid.startswith("dgxc") else
                                   f"a production run of {r['params'] / 1e9:.0f}B on {r['gpus']:,} GPUs"))})
    rows.append({"what": "final range", "layout": c["card_layout"], "gpus": GPUS, "batch": c["card_batch_mi"],
                 "mfu": None, "range": f"{c['card_final_lo']:.0f} to {c['card_final_hi']:.0f} %",
                 "reason": f"{c['card_final_days_lo']:.1f} to {c['card_final_days_hi']:.1f} days: the production "
                           "run below, the tuned recipe above, inside the residuals"})
    return rows


def check_table(c: dict | None = None):
    return table(check_rows(c), {
        "what": Col("plan or run", wrap=True), "layout": Col("layout", wrap=True), "gpus": Col("GPUs", None, "{:,}"),
        "batch": Col("global batch", "Mi tokens", "{:.0f}"), "mfu": Col("MFU (6ND)", "%", "{:.1f}"),
        "range": Col("range"), "reason": Col("why it sits there", wrap=True)})


def spanish_numbers() -> dict:
    """The Spanish text of the card's numbers the summary quotes (glued as ``<key>_es``)."""
    c = card()
    return spanish.numbers(c, {"card_bpp": 0, "card_floor": 0, "card_tp_cross_nvl": 1, "card_domain": 0,
                               "card_dp_min_z1": 0, "card_dp_max_z1": 0, "card_bubble_pct": 1,
                               "card_goodput_pct": 1, "card_mfu": 1, "card_final_lo": 0, "card_final_hi": 0,
                               "card_final_days_hi": 1, "card_final_days_lo": 1, "card_min_gpus": 0})


# ------------------------------------------------------------------------------------------------ exercises

def layout_defence(device: str, gpus: int, model: planner.Model | None = None) -> list[dict]:
    """The stack model's layout for ``gpus`` of ``device`` and each rule of the card checked on it."""
    model = model or capstone.model70()
    sp = capstone.stack_best(device, gpus, model)
    if sp is None:
        return [{"check": "memory", "value": "no layout fits"}]
    lay, dev, clu, B = sp.layout, specs.get(device), cluster(device, gpus), capstone.batch_tokens()
    tp = rules.tp_check(model, dev, clu, lay.tp)
    dp = rules.dp_check(dev, clu, B, replicas(lay), lay.zero)
    mb = micro_batches(lay, B, model.seq)
    return [{"check": "layout (stack model)", "value": f"{sp.label}: MFU {sp.mfu:.1%}"},
            {"check": "memory per GPU", "value": f"{sp.plan.memory.total_B / 1e9:.0f} of "
                                                 f"{sp.plan.usable_B / 1e9:.0f} GB usable"},
            {"check": "tensor: matmul ÷ all-reduce", "value": f"R = {tp['ratio']:.1f} ({tp['where']})"},
            {"check": "data: tokens per replica",
             "value": f"{dp['tokens_per_replica']:,.0f} against {dp['min_tokens']:,.0f} needed "
                      f"({dp['ratio']:.1f}×)"},
            {"check": "pipeline bubble", "value": "no pipeline" if lay.pp == 1 else
             f"({lay.pp} − 1)/{mb} = {rules.pipeline_bubble(lay.pp, mb):.1%}" if sp.interleave == 1 else
             f"({lay.pp} − 1)/({sp.interleave} × {mb}) = {rules.pipeline_bubble(lay.pp, mb, sp.interleave):.1%}"}]


def fsdp_limits(device: str = DEVICE, gpus: int = GPUS) -> dict:
    """Plain FSDP (ZeRO-3, one micro-batch, every GPU a replica): the most GPUs the capstone's batch keeps
    compute-bound, and the batch ``gpus`` would need."""
    dev, clu, B = specs.get(device), cluster(device, gpus), capstone.batch_tokens()
    need = rules.dp_min_tokens(dev, clu, 3)
    return {"min_tokens": need, "max_gpus": rules.dp_max_degree(dev, clu, B, 3), "batch_needed": gpus * need,
            "batch_needed_mi": gpus * need / 2 ** 20, "batch_mi": B / 2 ** 20, "gpus": gpus}


def pipeline_rows(layouts, device: str = DEVICE) -> list[dict]:
    """Each layout's micro-batches per replica at the capstone's batch, its 1F1B bubble (or why the pipeline cannot
    fill) and its memory per GPU (planner.memory_plan) against the usable memory of ``device``."""
    model, dev, B = capstone.model70(), specs.get(device), capstone.batch_tokens()
    usable = capstone.memory.capacity_B(dev) * (1 - planner.RESERVE)
    out = []
    for lay in layouts:
        m = micro_batches(lay, B, model.seq)
        try:
            bubble, note = rules.pipeline_bubble(lay.pp, m), ""
        except ValueError as exc:
            bubble, note = None, str(exc)
        mem = planner.memory_plan(model, lay, B)
        out.append({"layout": lay.label(), "m": m, "bubble": bubble, "mem_gb": mem.total_B / 1e9,
                    "state_gb": (mem.weights_B + mem.gradients_B + mem.optimizer_B) / 1e9,
                    "fits": "yes" if mem.total_B <= usable else "no", "note": note})
    return out


def pipeline_table(layouts, device: str = DEVICE):
    return table(pipeline_rows(layouts, device), {
        "layout": Col("layout", wrap=True), "m": Col("micro-batches per replica", None, "{:,}"),
        "bubble": Col("bubble (p − 1)/m", None, "{:.1%}"), "state_gb": Col("model state", "GB", "{:.1f}"),
        "mem_gb": Col("memory per GPU", "GB", "{:.1f}"), "fits": "fits", "note": Col("note", wrap=True)})
