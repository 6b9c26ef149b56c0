"""Page helpers for book/capstone-8-to-1024.md: chapter 00's 70B run planned from 8 to 1024 GPUs, the same plan on
other devices, the planner checked against published runs, the explorer and the glued values."""
from __future__ import annotations

import functools
from typing import Mapping

from x4lib.training import memory, mfu, planner
from x4lib.catalog import specs
from x4lib.book.tables import Col, table

COUNTS = (8, 64, 256, 1024)
DEVICES = ("h100-sxm", "h200-sxm", "b200")
TOKENS = None  # chapter 00's quiz tokens, read in tokens()


def tokens() -> float:
    from x4lib.training import economics
    return economics.quiz_givens()["tokens"]


def model70() -> planner.Model:
    """Chapter 00's 70B model with the shape of givens.yaml ``quiz_run`` (a Llama-3-70B shape)."""
    r = mfu.quiz_run()
    return planner.Model(r.params, r.layers, r.d_model, r.heads, r.kv_heads, r.seq_len, r.ffn, True, "70B")


def batch_tokens() -> int:
    return mfu.quiz_run().global_batch_tokens


@functools.lru_cache(maxsize=64)
def _fallback(gpus: tuple) -> tuple:
    return tuple(_fallback_row(name, g) for name in MODELS for g in gpus)


@functools.lru_cache(maxsize=64)
def best(device: str, gpus: int, model: planner.Model | None = None) -> planner.Plan | None:
    plans = planner.search(model or model70(), specs.get(device), gpus, batch_tokens(), top=1)
    return plans[0] if plans else None


def scale_rows(device: str = "h100-sxm", counts=COUNTS) -> list[dict]:
    """The best layout at each GPU count, with what limits it (memory when nothing fits)."""
    rows = []
    for g in counts:
        p = best(device, g)
        if p is None:
            least = planner.min_gpus_to_fit(model70(), specs.get(device), batch_tokens())
            rows.append({"gpus": g, "layout": f"none fits (needs {least} GPUs)", "mem": None, "mfu": None,
                         "days": None, "gpu_h": None, "limit": "memory"})
            continue
        t = planner.run_totals(p, tokens())
        rows.append({"gpus": g, "layout": p.layout.label(), "mem": p.memory.total_B / 1e9, "mfu": p.mfu,
                     "days": t.wall_clock_days, "gpu_h": t.gpu_hours, "limit": p.limit,
                     "mwh": t.energy_J / 3.6e9, "usd": t.rental_usd})
    return rows


def scale_table(device: str = "h100-sxm"):
    return table(scale_rows(device), {
        "gpus": Col("GPUs", None, "{:,}"), "layout": Col("fastest layout that fits", wrap=True),
        "mem": Col("memory per GPU", "GB", "{:.0f}"), "mfu": Col("MFU (6ND)", None, "{:.1%}"),
        "days": Col("wall clock", "days", "{:,.1f}"), "gpu_h": Col("GPU-hours", None, "{:,.0f}"),
        "limit": Col("costs most after the matmuls")})


def breakdown_series(device: str = "h100-sxm", counts=COUNTS) -> list[tuple[str, dict]]:
    """(label, {part: seconds per step}) for plots.step_breakdown, counts where a layout fits."""
    out = []
    for g in counts:
        p = best(device, g)
        if p:
            out.append((f"{g} GPUs: {p.layout.label()}", p.breakdown()))
    return out


def device_rows(gpus=(256, 1024)) -> list[dict]:
    rows = []
    for d in DEVICES:
        dev = specs.get(d)
        for g in gpus:
            p = best(d, g)
            t = planner.run_totals(p, tokens())
            rows.append({"device": d, "gpus": g, "mem_gb": dev.values["memory_gb"].value,
                         "peak": dev.peak_flop_per_s("bf16") / 1e12, "layout": p.layout.label(), "mfu": p.mfu,
                         "days": t.wall_clock_days, "gpu_h": t.gpu_hours, "mwh": t.energy_J / 3.6e9,
                         "scope": {"server": "whole server", "gpu": "GPU TDP only"}[t.assumptions["power_scope"]]})
    return rows


def device_table():
    return table(device_rows(), {
        "device": "device", "gpus": Col("GPUs", None, "{:,}"), "mem_gb": Col("memory", "GB", "{:.0f}"),
        "peak": Col("dense BF16 peak", "TFLOP/s", "{:,.0f}"), "layout": Col("fastest layout", wrap=True),
        "mfu": Col("MFU", None, "{:.1%}"), "days": Col("days", None, "{:.1f}"),
        "mwh": Col("energy", "MWh", "{:,.0f}"), "scope": "power counted"})


# ------------------------------------------------------------------------------------------------ validation

#: the likely cause of a miss, per source (shown where the residual exceeds ±10 points); reasons, not fits
CAUSES = {
    "narayanan-2021": "2021 software: fused kernels but no FlashAttention; our rates are today's libraries'",
    "korthikanti-2022": "A100 software of 2022 below today's matmul rates; interleaved schedule not modelled",
    "bigscience-tr11": "DeepSpeed pipeline of 2022; full recomputation and a 250K vocabulary head not modelled",
    "jiang-2024-megascale": "Megatron-LM baseline without overlap; GPU model not named (A100 assumed)",
    "mosaicml-llmfoundry-benchmarks": "FSDP without tensor parallelism: per-layer gathers and CPU launch gaps",
    "hf-ultrascale-playbook-2025": "AWS EFA network and nanotron kernels, not the InfiniBand preset modelled",
    "llama3-2024": "layout exceeds our activation model (no FlashAttention term); interleaving not modelled",
    "nvidia-dgxc-benchmarking": "tuned NeMo recipe: overlap and interleaving beyond the model",
}


@functools.lru_cache(maxsize=1)
def checks() -> tuple:
    return tuple(planner.validation())


def validation_rows() -> list[dict]:
    rows = []
    for c in checks():
        r, p = c.run, c.plan
        res = c.residual_pp
        rows.append({"run": r["run"], "id": r["id"], "source": r["source"], "device": r["device"], "gpus": r["gpus"],
                     "layout": p.layout.label(), "stated": r["published"]["stated_utilisation_pct"],
                     "published": c.published_mfu, "predicted": c.predicted_mfu, "residual": res,
                     "within": abs(res) <= 10, "fits": not c.error,
                     "cause": "" if abs(res) <= 10 else CAUSES.get(r["source"], "")})
    return rows


def validation_table():
    return table(validation_rows(), {
        "id": "run", "source": "source", "gpus": Col("GPUs", None, "{:,}"), "layout": Col("layout", wrap=True),
        "stated": Col("stated", "%", "{:.1f}"), "published": Col("published, 6ND", None, "{:.1%}"),
        "predicted": Col("planner", None, "{:.1%}"), "residual": Col("residual", "points", "{:+.1f}"),
        "cause": Col("likely cause of a miss", wrap=True)})


def validation_groups() -> list[tuple[str, list[dict]]]:
    groups: dict[str, list] = {}
    for r in validation_rows():
        groups.setdefault(r["source"], []).append({"x": 100 * r["published"], "y": 100 * r["predicted"]})
    return list(groups.items())


# ------------------------------------------------------------------------------------------------ explorer

MODELS = {  # shapes from training_runs.yaml (Llama 3.1 rows) and chapter 00's 70B
    "8B (Llama 3.1 shape)": "dgxc-llama31-8b-bf16-64",
    "70B (chapter 00)": None,
    "405B (Llama 3.1 shape)": "dgxc-llama31-405b-bf16-1024",
}


def explorer_model(name: str) -> planner.Model:
    rid = MODELS[name]
    if rid is None:
        return model70()
    return planner.run_model(next(r for r in planner.published_runs() if r["id"] == rid))


def plan_rows(p: planner.Plan) -> list[dict]:
    t = planner.run_totals(p, tokens())
    b = p.breakdown()
    return [{"quantity": "layout", "value": p.layout.label()},
            {"quantity": "memory per GPU (GB)", "value": f"{p.memory.total_B / 1e9:.1f} of {p.usable_B / 1e9:.1f}"},
            {"quantity": "step (s): compute, comm, bubble, other",
             "value": f"{p.step_s:.2f}: {b['compute']:.2f}, {b['exposed_comm']:.2f}, {b['bubble']:.2f}, "
                      f"{b['other']:.2f}"},
            {"quantity": "MFU (6ND)", "value": f"{p.mfu:.1%}"},
            {"quantity": "days for the quiz's tokens", "value": f"{t.wall_clock_days:,.1f}"},
            {"quantity": "GPU-hours", "value": f"{t.gpu_hours:,.0f}"},
            {"quantity": "energy (MWh)", "value": f"{t.energy_J / 3.6e9:,.0f}"}]


def explorer():
    """Model, device, GPU count and (optionally) fixed degrees → the fastest layout that fits."""
    import ipywidgets as w
    from IPython.display import display

    def show(model, device, gpus, tp, pp, cp, zero):
        fixed = {k: (None if v == "auto" else int(v)) for k, v in (("tp", tp), ("pp", pp), ("cp", cp),
                                                                   ("zero", zero))}
        try:
            plans = planner.search(explorer_model(model), specs.get(device), int(gpus), batch_tokens(), fixed=fixed, top=1)
        except ValueError as exc:
            print(f"cannot plan: {exc}")
            return
        if not plans:
            print("no layout fits in memory with these choices")
            return
        display(table(plan_rows(plans[0]), {"quantity": "quantity", "value": "value"}))

    auto = ["auto", "1", "2", "4", "8"]
    return w.interactive(
        show, model=w.Dropdown(options=list(MODELS), value="70B (chapter 00)", description="model"),
        device=w.Dropdown(options=list(DEVICES) + ["a100-sxm-80gb"], value="h100-sxm", description="device"),
        gpus=w.Dropdown(options=[8, 16, 32, 64, 128, 256, 512, 1024, 2048], value=256, description="GPUs"),
        tp=w.Dropdown(options=auto, value="auto", description="TP"),
        pp=w.Dropdown(options=auto + ["16"], value="auto", description="PP"),
        cp=w.Dropdown(options=auto, value="auto", description="CP"),
        zero=w.Dropdown(options=["auto", "0", "1", "2", "3"], value="auto", description="ZeRO"))


def _fallback_row(name: str, g: int) -> dict:
    plans = planner.search(explorer_model(name), specs.get("h100-sxm"), g, batch_tokens(), top=1)
    p = plans[0] if plans else None
    return {"model": name, "gpus": g, "layout": p.layout.label() if p else "none fits",
            "mfu": p.mfu if p else None, "limit": p.limit if p else "memory"}


def explorer_fallback_rows(gpus=(64, 1024)) -> list[dict]:
    return [dict(r) for r in _fallback(tuple(gpus))]


def explorer_fallback_series(gpus=(64, 1024)):
    """(groups, series) for plots.grouped_bars: models × GPU counts, MFU in percent (0 where nothing fits)."""
    rows = explorer_fallback_rows(gpus)
    series = [(f"{g} GPUs", [100 * (r["mfu"] or 0.0) for r in rows if r["gpus"] == g]) for g in gpus]
    return list(MODELS), series


def explorer_fallback_table():
    return table(explorer_fallback_rows(), {
        "model": "model", "gpus": Col("H100 GPUs", None, "{:,}"), "layout": Col("fastest layout", wrap=True),
        "mfu": Col("MFU (6ND)", None, "{:.1%}"), "limit": Col("costs most after the matmuls")})


# ------------------------------------------------------------------------------------------ public ground truth

@functools.lru_cache(maxsize=1)
def ground_truth_report() -> dict:
    """``plan-validate --json`` over every source (x4lib.training.validate), leave-one-source-out."""
    from x4lib.training import ground_truth as gt, validate
    return validate.report(gt.SOURCES)


def ground_truth_rows() -> list[dict]:
    out = []
    for d in ground_truth_report()["sources"]:
        peer = d["peer"]
        err = (f"{d['mfu_points']['mean_abs']:.1f} MFU points" if d["mfu_points"]
               else f"{d['mean_abs_error_pct']:.1f} %")
        out.append({"source": d["source"], "rows": d["rows"], "error": err, "bias": d["signed_bias_pct"],
                    "within": d["within_10pct"], "tau": d["kendall_tau"],
                    "peer": "-" if peer["error_pct"] is None else f"{peer['name']}: {peer['error_pct']:.2f} %",
                    "target": ("met: " if d["target"]["met"] else "missed: ") + d["target"]["text"]})
    return out


def ground_truth_table():
    return table(ground_truth_rows(), {
        "source": "source", "rows": Col("rows", None, "{:,}"), "error": Col("mean |error|"),
        "bias": Col("signed bias", "%", "{:+.1f}"), "within": Col("within 10 %", None, "{:.0%}"),
        "tau": Col("ranking τ", None, "{:.2f}"), "peer": Col("the peer's own error", wrap=True),
        "target": Col("target (issue 30)", wrap=True)})


def ground_truth_misses() -> list[dict]:
    """The sources whose target the model misses, with the computed figures the page states."""
    return [d for d in ground_truth_report()["sources"] if not d["target"]["met"]]


def stack_plan_mfu(p: planner.Plan, stack_id: str = "nemo-mcore-2024") -> float:
    """The stack model's MFU (x4lib.training.stack, constants fitted on every source) of a planner layout."""
    from x4lib.training import stack as stk, validate
    from x4lib.network import clusters
    m, lay = p.model, p.layout
    gbs = p.global_batch_tokens // m.seq
    shape = stk.Shape(m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.gated_mlp, VOCAB_70B, m.seq)
    setup = stk.Setup(lay.tp, lay.pp, lay.dp, lay.cp, lay.zero, lay.micro_batch, gbs // (lay.dp * lay.micro_batch),
                      lay.recompute, 1, lay.tp > 1)
    st = stk.step(shape, setup, p.device, stk.stack(stack_id), clusters.get(mfu.TP_CLUSTER))
    t = st.time_s(validate.all_constants())
    return 6 * m.params * p.global_batch_tokens / (lay.n_gpus * p.device.peak_flop_per_s("bf16") * t)


#: Llama 3's vocabulary (the 70B shape's logits layer; the quiz run does not state one)
VOCAB_70B = 128256


@functools.lru_cache(maxsize=1)
def headline() -> dict:
    """One MFU for the 70B run on 1024 H100s: the stack model's best of every layout the planner finds that fits,
    with the spread of its leave-one-source-out residuals on the published H100 runs (MFU points), beside the
    planner's own best."""
    from x4lib.training import ground_truth as gt
    plans = planner.search(model70(), specs.get("h100-sxm"), 1024, batch_tokens())
    scored = sorted(((stack_plan_mfu(p), p) for p in plans), key=lambda x: -x[0])
    mfu_s, p = scored[0]
    pub = {d["source"]: d for d in ground_truth_report()["sources"]}["published"]
    h100 = {r.row_id for r in gt.rows("published") if r.device.id == "h100-sxm"}
    res = [r["points"] for r in pub["runs"] if r["id"] in h100]
    top = best("h100-sxm", 1024)
    return {"mfu": 100 * mfu_s, "layout": p.layout.label(), "planner_mfu": 100 * top.mfu,
            "planner_layout": top.layout.label(), "planner_layout_stack_mfu": 100 * stack_plan_mfu(top),
            "lo": min(res), "hi": max(res), "n": len(res), "layouts": len(plans)}


# ------------------------------------------------------------------------------------------------ glue values

@functools.lru_cache(maxsize=1)
def summary() -> dict:
    """Every number the page's prose quotes (glue key → value, display units)."""
    m = model70()
    s: dict = {"params_b": m.params / 1e9, "layers": m.layers, "seq": m.seq, "batch_m": batch_tokens() / 2 ** 20,
               "tokens_t": tokens() / 1e12, "reserve_pct": 100 * planner.RESERVE}
    s["state_gb_per_gpu_8"] = memory.model_state_bytes(m.params) / 8 / 1e9
    s["h100_gb"] = specs.get("h100-sxm").values["memory_gb"].value
    s["min_gpus"] = planner.min_gpus_to_fit(m, specs.get("h100-sxm"), batch_tokens())
    rows = {r["gpus"]: r for r in scale_rows()}
    for g in COUNTS[1:]:
        r = rows[g]
        s[f"mfu_{g}"] = 100 * r["mfu"]
        s[f"days_{g}"] = r["days"]
        s[f"layout_{g}"] = r["layout"]
        s[f"limit_{g}"] = r["limit"]
        s[f"gpuh_{g}_k"] = r["gpu_h"] / 1e3
    s["mwh_1024"] = rows[1024]["mwh"]
    s["usd_1024_m"] = rows[1024]["usd"] / 1e6
    p = best("h100-sxm", 1024)
    s["bubble_1024_pct"] = 100 * p.bubble_s / p.step_s
    s["comm_1024_pct"] = 100 * p.exposed_comm_s / p.step_s
    s["mm_eff_1024"] = 100 * p.matmul_efficiency
    dr = {(r["device"], r["gpus"]): r for r in device_rows()}
    for d in DEVICES:
        key = d.split("-")[0]
        s[f"{key}_mfu_1024"] = 100 * dr[(d, 1024)]["mfu"]
        s[f"{key}_days_1024"] = dr[(d, 1024)]["days"]
        s[f"{key}_layout_256"] = dr[(d, 256)]["layout"]
        s[f"{key}_mwh_1024"] = dr[(d, 1024)]["mwh"]
    v = validation_rows()
    s["n_runs"] = len(v)
    s["n_within"] = sum(r["within"] for r in v)
    s["n_over"] = sum(r["residual"] > 10 for r in v)
    s["n_under"] = sum(r["residual"] < -10 for r in v)
    s["median_residual"] = sorted(r["residual"] for r in v)[len(v) // 2]
    s["n_not_fit"] = sum(not r["fits"] for r in v)
    by = {d["source"]: d for d in ground_truth_report()["sources"]}
    for src, d in by.items():
        k = src.replace("-", "_")
        s[f"gt_{k}_err"] = d["mean_abs_error_pct"]
        s[f"gt_{k}_rows"] = d["rows"]
        s[f"gt_{k}_bias"] = d["signed_bias_pct"]
    for src, d in by.items():
        if d["peer"]["error_pct"] is not None:
            s[f"gt_{src.replace('-', '_')}_peer"] = d["peer"]["error_pct"]
    from x4lib.training import validate
    s["gt_kernel_mds_us"] = 1e6 * validate.loso_constants("vtrain-single").kernels_for("megatron-deepspeed")
    for k, val in validate.LIMITS.items():
        s[f"target_{k}"] = val
    s["gt_playbook_best"] = by["playbook"]["playbook"]["best_median_abs_error_pct"]
    s["gt_playbook_pick"] = by["playbook"]["playbook"]["pick_within_5pct"]
    s["gt_playbook_groups"] = by["playbook"]["playbook"]["groups"]
    s["gt_playbook_tau"] = by["playbook"]["kendall_tau"]
    s["gt_vtrain_single_tau"] = by["vtrain-single"]["kendall_tau"]
    s["gt_published_within"] = by["published"]["within_10_points"]
    s["gt_published_pts"] = by["published"]["mfu_points"]["mean_abs"]
    s["gt_n_missed"] = len(ground_truth_misses())
    h = headline()
    s["head_mfu"], s["head_lo"], s["head_hi"], s["head_n"] = h["mfu"], h["lo"], h["hi"], h["n"]
    s["head_gap"] = h["planner_mfu"] - h["mfu"]
    s["head_layout"], s["head_layouts"] = h["layout"], h["layouts"]
    s["head_planner_layout_stack_mfu"] = h["planner_layout_stack_mfu"]
    return s
