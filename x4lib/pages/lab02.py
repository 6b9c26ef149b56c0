"""Page helpers of Lab 02 (book/lab-02-calibrate.md): a measured layer's per-term rates and their fit
(x4lib.training.calibration), the CPU check against a real DDP training, and the calibrated planner at scale.

A run stores raw per-op times; every rate, fit, residual and prediction is derived here when the page is drawn.
"""
from __future__ import annotations

from pathlib import Path

from x4lib.book.tables import Col, table
from x4lib.training import calibration as cal_mod

#: the device the scale prediction plans for, and the GPU counts of the issue
SCALE_DEVICE = "h100-sxm"
SCALE_GPUS = (8, 64, 256, 1024)


def shape_rows(c: cal_mod.Calibration) -> list[dict]:
    """The measured layer's shape, one row per quantity (the page shows it as a small table, not a sentence)."""
    s = c.shape
    return [{"what": "model the layer is taken from", "value": s["model"]},
            {"what": "hidden size", "value": s["hidden"]},
            {"what": "attention heads (key/value heads)", "value": f"{s['heads']} ({s['kv_heads']})"},
            {"what": "MLP width", "value": s["ffn"]},
            {"what": "tokens per sequence × micro-batch", "value": f"{s['seq']} × {s['micro_batch']}"},
            {"what": "matrices split as tensor parallelism of degree", "value": s["tp"]},
            {"what": "precision", "value": c.dtype.upper()}]


def shape_table(c: cal_mod.Calibration):
    return table(shape_rows(c), {"what": Col("measured layer", wrap=True), "value": "value"})


def gemm_rows(c: cal_mod.Calibration) -> list[dict]:
    return [{"op": r["op"], "pass": r["pass"].replace("_", " "), "shape": f"{r['m']}×{r['n']}×{r['k']}",
             "count": r["count"], "gflop": r["flop"] / 1e9, "ms": r["time_s"] * 1e3,
             "gflops": r["flop"] / r["time_s"] / 1e9,
             "eff": None if r["efficiency"] is None else 100 * r["efficiency"],
             "res": 100 * (r["time_s"] / r["fitted_s"] - 1)} for r in c.gemm_rows]


def gemm_table(c: cal_mod.Calibration):
    return table(gemm_rows(c), {
        "op": "GEMM", "pass": "pass", "shape": "m×n×k", "count": "per layer",
        "gflop": Col("work", unit="GFLOP", fmt="{:.3g}"), "ms": Col("time", unit="ms", fmt="{:.3g}"),
        "gflops": Col("rate", unit="GFLOP/s", fmt="{:.3g}"), "eff": Col("of peak", unit="%", fmt="{:.0f}"),
        "res": Col("measured vs one-rate fit", unit="%", fmt="{:+.0f}")})


def elementwise_rows(c: cal_mod.Calibration) -> list[dict]:
    return [{"op": r["op"], "pass": r["pass"], "count": r["count"], "mb": r["bytes"] / 1e6, "ms": r["time_s"] * 1e3,
             "gbs": r["bytes"] / r["time_s"] / 1e9, "res": 100 * (r["time_s"] / r["fitted_s"] - 1)}
            for r in c.elementwise_rows]


def elementwise_table(c: cal_mod.Calibration):
    return table(elementwise_rows(c), {
        "op": "op", "pass": "pass", "count": "per layer", "mb": Col("bytes moved", unit="MB", fmt="{:.3g}"),
        "ms": Col("time", unit="ms", fmt="{:.3g}"), "gbs": Col("rate", unit="GB/s", fmt="{:.3g}"),
        "res": Col("measured vs fit", unit="%", fmt="{:+.0f}")})


def term_rows(c: cal_mod.Calibration) -> list[dict]:
    t = c.terms()
    rows = [("matmul rate (one-rate fit)", t["matmul_rate_flop_per_s"] / 1e9, "GFLOP/s"),
            ("matmul efficiency (FLOP-weighted, of peak)", None if t["matmul_efficiency"] is None
             else 100 * t["matmul_efficiency"], "%"),
            ("matmul fixed cost per call (fit)", t["matmul_overhead_s"] * 1e6, "µs"),
            ("element-wise bytes per second (fit)", t["elementwise_Bps"] / 1e9, "GB/s"),
            ("element-wise share of the copy bandwidth", 100 * c.elementwise_share_of_copy, "%"),
            ("overhead per kernel (tiny add)", t["overhead_per_kernel_s"] * 1e6, "µs"),
            ("optimizer step per parameter (AdamW)", t["optimizer_s_per_param"] * 1e9, "ns"),
            ("copy bandwidth", t["copy_Bps"] / 1e9, "GB/s")]
    if t["link_Bps"]:
        rows.append(("loopback TCP link", t["link_Bps"] / 1e9, "GB/s"))
    rows.append(("one layer's ops, forward + backward (their sum)", t["ops_layer_s"] * 1e3, "ms"))
    if c.as_trained:
        rows.append(("one layer as trained, forward + backward", t["layer_s"] * 1e3, "ms"))
        rows.append(("glue: the whole layer beyond its ops", 100 * c.glue["share"], "%"))
    rows += [(f"{n} processes at once: the layer's time against alone", k, "×")
             for n, k in sorted(c.contention.items())]
    return [{"term": a, "value": b, "unit": u} for a, b, u in rows]


def terms_table(c: cal_mod.Calibration):
    return table(term_rows(c), {"term": Col("calibrated term", wrap=True), "value": Col("value", fmt="{:.3g}"),
                                "unit": "unit"})


def check_table(rows: list[dict], target: float = cal_mod.CHECK_TARGET, what: str = "processes (DDP, gloo)"):
    out = [{"ranks": r["ranks"], "meas": r["measured_s"] * 1e3, "pred": r["predicted_s"] * 1e3,
            "err": 100 * r["error"], "ok": "yes" if abs(r["error"]) <= target else "no"}
           for r in rows]
    return table(out, {"ranks": what, "meas": Col("measured step", unit="ms", fmt="{:.1f}"),
                       "pred": Col("calibrated prediction", unit="ms", fmt="{:.1f}"),
                       "err": Col("error", unit="%", fmt="{:+.1f}"),
                       "ok": f"within {100 * target:.0f} %"})


def term_check_table(row: dict):
    """One check row term by term: measured, predicted and their ratio."""
    out = [{"term": t, "meas": row["measured"][t] * 1e3, "pred": row["predicted"][t] * 1e3,
            "ratio": row["measured"][t] / row["predicted"][t]} for t in ("forward", "backward", "optimizer", "step")]
    return table(out, {"term": "term", "meas": Col("measured", unit="ms", fmt="{:.1f}"),
                       "pred": Col("calibrated", unit="ms", fmt="{:.1f}"),
                       "ratio": Col("measured / calibrated", fmt="{:.2f}")})


def check_run(shown, backend: str):
    """The run whose training check has ``backend`` ("gloo": the CPU check; "none": one GPU): the run the page is
    drawn for when it has one, else the newest committed one, else None."""
    def has(run):
        return run is not None and (run.results.get("check") or {}).get("backend") == backend
    if has(shown.this):
        return shown.this
    return next((r for r in reversed(shown.committed) if has(r)), None)


def cpu_check_runs(shown) -> list:
    """The runs of the machine whose CPU check the page shows, the committed ones and the run the page is drawn for
    (:func:`same_machine_checks`): the runs the check's median is taken over. The shown run is always among them."""
    cpu = check_run(shown, "gloo")
    if cpu is None:
        return []
    same = same_machine_checks(shown.runs, cpu)
    return same if any(r.path == cpu.path for r in same) else same + [cpu]


def same_machine_checks(runs, like) -> list:
    """Of ``runs``, those with a CPU check (DDP over gloo) on the CPU model of run ``like``, calibrated on the whole
    layer as trained (harness method 3; older runs summed the ops)."""
    model = like.results["device"].get("cpu", {}).get("model_name")

    def same(run):
        chk = run.results.get("check") or {}
        return (chk.get("backend") == "gloo" and run.results["device"].get("cpu", {}).get("model_name") == model
                and any(r["op"] == "layer" for r in chk["calibration"]["ops"]))
    return [r for r in runs if same(r)]


def check_runs_table(summary: list[dict], target: float = cal_mod.CHECK_TARGET):
    out = [{"ranks": r["ranks"], "runs": r["runs"], "med": 100 * r["median"], "lo": 100 * r["least"],
            "hi": 100 * r["most"], "ok": "yes" if abs(r["median"]) <= target else "no"} for r in summary]
    return table(out, {"ranks": "processes (DDP, gloo)", "runs": "runs", "med": Col("median error", unit="%",
                                                                                     fmt="{:+.1f}"),
                       "lo": Col("least", unit="%", fmt="{:+.1f}"), "hi": Col("most", unit="%", fmt="{:+.1f}"),
                       "ok": f"median within {100 * target:.0f} %"})


def software_text(run) -> str:
    """The measuring software as the run recorded it (torch, CUDA, driver)."""
    dev = run.results["device"]
    env = dev.get("env") or {}
    parts = [f"PyTorch {env['torch']}" if env.get("torch") else None,
             f"CUDA {env['cuda']}" if env.get("cuda") else None,
             f"driver {dev['nvidia_smi']['driver_version']}" if (dev.get("nvidia_smi") or {}).get("driver_version")
             else None]
    return ", ".join(p for p in parts if p) or "software not recorded"


def check_term_rows(rows: list[dict]) -> list[dict]:
    return [{"ranks": r["ranks"], "term": t, "meas": r["measured"][t] * 1e3, "pred": r["predicted"][t] * 1e3}
            for r in rows for t in ("forward", "backward", "optimizer")]


def scale_table(rows: list[dict]):
    out = [{"gpus": r["gpus"], "layout": r["layout"], "u": r["uncalibrated_step_s"], "c": r["calibrated_step_s"],
            "um": 100 * r["uncalibrated_mfu"], "cm": 100 * r["calibrated_mfu"], "comm": r["exposed_comm_s"]}
           for r in rows]
    return table(out, {"gpus": "GPUs", "layout": Col("layout", wrap=True),
                       "u": Col("step, spec sheet", unit="s", fmt="{:.3g}"),
                       "c": Col("step, calibrated", unit="s", fmt="{:.3g}"),
                       "um": Col("MFU, spec sheet", unit="%", fmt="{:.1f}"),
                       "cm": Col("MFU, calibrated", unit="%", fmt="{:.1f}"),
                       "comm": Col("exposed comm", unit="s", fmt="{:.3g}")})


def fit_axes(ax, c: cal_mod.Calibration):
    """Measured against fitted time of every GEMM and element-wise row (log-log, the diagonal is a perfect fit)."""
    g = [(r["fitted_s"] * 1e3, r["time_s"] * 1e3) for r in c.gemm_rows]
    e = [(r["fitted_s"] * 1e3, r["time_s"] * 1e3) for r in c.elementwise_rows]
    ax.scatter(*zip(*g), marker="o", label="GEMMs: one rate + fixed cost")
    ax.scatter(*zip(*e), marker="s", label="element-wise: bytes/s + fixed cost")
    lo = min(min(p) for p in g + e) / 1.5
    hi = max(max(p) for p in g + e) * 1.5
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="measured = fitted")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("fitted time [ms]")
    ax.set_ylabel("measured time [ms]")
    ax.legend(loc="upper left", fontsize="small")
    return ax


def _explorer_base(c: cal_mod.Calibration):
    """The spec-sheet plan the explorer rescales: the 1024-GPU row of the scale table (scale_rows)."""
    from x4lib.catalog import specs
    return _fixed_layout_plan(c, scale_model(c), specs.get(SCALE_DEVICE), 1024)[2]


def _at_efficiency(base, efficiency: float):
    """``base`` with its matmuls at ``efficiency`` (a fraction of the dense peak) instead of the planner's."""
    import dataclasses
    return dataclasses.replace(base, compute_s=base.compute_s * base.matmul_efficiency / efficiency,
                               matmul_efficiency=efficiency)


def efficiency_rows(c: cal_mod.Calibration, efficiencies_pct=range(5, 101, 5)) -> list[dict]:
    """The explorer's answer for each matmul efficiency (%): the 1024-GPU step and MFU (model prediction)."""
    base = _explorer_base(c)
    return [{"efficiency_pct": e, "step_s": (p := _at_efficiency(base, e / 100)).step_s, "mfu_pct": 100 * p.mfu}
            for e in efficiencies_pct]


def efficiency_marks(c: cal_mod.Calibration) -> dict[str, tuple[float, float]]:
    """{label: (matmul efficiency %, MFU %)} of the spec-sheet planner and, if the run has a peak, the measurement."""
    base = _explorer_base(c)
    marks = {f"spec-sheet planner ({base.matmul_efficiency:.0%} efficiency)":
             (100 * base.matmul_efficiency, 100 * base.mfu)}
    if c.matmul_efficiency:
        p = _at_efficiency(base, c.matmul_efficiency)
        marks[f"this run's measured efficiency ({c.matmul_efficiency:.0%})"] = (100 * c.matmul_efficiency, 100 * p.mfu)
    return marks


def explorer_fallback_axes(ax, c: cal_mod.Calibration):
    """The explorer's static version: the 1024-GPU MFU over the slider's range of matmul efficiencies."""
    from x4lib.book import plots
    rows = efficiency_rows(c)
    return plots.mfu_vs_efficiency(ax, [r["efficiency_pct"] for r in rows], [r["mfu_pct"] for r in rows],
                                   f"{c.shape['model']} on 1024 {SCALE_DEVICE} (model prediction)",
                                   marks=efficiency_marks(c))


def explorer(c: cal_mod.Calibration | None = None, rows_model=None):
    """A slider over the matmul efficiency: the 1024-GPU step and MFU the planner gives with it. Without ``c``,
    the calibration of the newest committed Lab 02 run."""
    if c is None:
        from x4lib import paths
        c = cal_mod.load(sorted((paths.REPO_ROOT / "book" / "runs" / "lab02").glob("*/results.json"))[-1].parent)
    import ipywidgets as w
    base = _explorer_base(c)
    start = round(100 * (c.matmul_efficiency or 0.5))

    def show(efficiency=start):
        p = _at_efficiency(base, efficiency / 100)
        print(f"matmul efficiency {efficiency} %: step {p.step_s:.3f} s, MFU {p.mfu:.1%} "
              f"(spec-sheet planner: {base.step_s:.3f} s, {base.mfu:.1%}); {c.shape['model']}")
    return w.interactive(show, efficiency=w.IntSlider(value=start, min=5, max=100, step=5))


def scale_model(c: cal_mod.Calibration):
    """The planner's model of the measured layer's whole model (parameters counted from its shape)."""
    from x4lib.training import parallelism, planner
    s = c.shape
    params = parallelism.count_params(s["layers"], s["hidden"], s["heads"], s["kv_heads"], s["ffn"], s["vocab"])
    return planner.Model(params=params, layers=s["layers"], hidden=s["hidden"], heads=s["heads"],
                         kv_heads=s["kv_heads"], seq=s["seq"], ffn=s["ffn"], name=s["model"])


def scale_rows(c: cal_mod.Calibration, device_id: str = SCALE_DEVICE, gpus=SCALE_GPUS) -> list[dict]:
    return plan_rows(c, device_id, gpus, model=scale_model(c))


def plan_rows(cal: cal_mod.Calibration, device_id: str, gpus_list=SCALE_GPUS, global_batch_tokens: int | None = None,
              model=None) -> list[dict]:
    """For each GPU count, the planner's plan for the calibrated layer's model (the shape measured, or ``model``), with
    the layout fixed to the measured tensor-parallel degree and micro-batch (ZeRO-1, pipeline 1, data parallelism
    filling the rest), uncalibrated beside calibrated."""
    from x4lib.catalog import specs
    from x4lib.training import planner
    dev = specs.get(device_id)
    s = cal.shape
    mdl = model or planner.Model(params=s["params"], layers=s["layers"], hidden=s["hidden"], heads=s["heads"],
                                 kv_heads=s["kv_heads"], seq=s["seq"], ffn=s["ffn"], name=s.get("model", "model"))
    rows = []
    for g in gpus_list:
        lay, gbt, base = _fixed_layout_plan(cal, mdl, dev, g, global_batch_tokens)
        cal_plan, warn = cal_mod.calibrated_plan(base, cal)
        rows.append({"gpus": g, "layout": lay.label(), "global_batch_tokens": gbt,
                     "uncalibrated_step_s": base.step_s, "calibrated_step_s": cal_plan.step_s,
                     "uncalibrated_mfu": base.mfu, "calibrated_mfu": cal_plan.mfu,
                     "exposed_comm_s": base.exposed_comm_s, "fits": base.fits, "warnings": warn})
    return rows



def _fixed_layout_plan(cal: cal_mod.Calibration, mdl, dev, gpus: int, global_batch_tokens: int | None = None):
    """(layout, global batch in tokens, spec-sheet plan) on ``gpus`` devices: the measured tensor-parallel degree
    and micro-batch, ZeRO-1, pipeline 1, data parallelism filling the rest; without ``global_batch_tokens``, at least
    1024 sequences, a whole number of micro-batches per replica."""
    from x4lib.training import planner
    s = cal.shape
    dp = gpus // s["tp"]
    gbt = global_batch_tokens or max(dp * s["micro_batch"] * mdl.seq, 1024 * mdl.seq)
    gbt -= gbt % (dp * s["micro_batch"] * mdl.seq)
    lay = planner.Layout(tp=s["tp"], pp=1, dp=dp, cp=1, zero=1, micro_batch=s["micro_batch"], recompute="none")
    return lay, gbt, planner.evaluate(mdl, lay, dev, gbt)


def run_dir_of(run) -> Path:
    return Path(run.path)


def gpu_check_table(shown):
    """The single-GPU check of every GPU run shown (committed, or this one): device, measured, predicted, error."""
    runs = [r for r in shown.runs if (r.results.get("check") or {}).get("backend") == "none"]
    out = []
    for run in runs:
        row = cal_mod.check_rows(run.path)[0]
        target = cal_mod.check_target(run.results)
        out.append({"device": run.results["device"]["detected_name"], "meas": row["measured_s"] * 1e3,
                    "pred": row["predicted_s"] * 1e3, "err": 100 * row["error"],
                    "ok": "yes" if abs(row["error"]) <= target else "no"})
    return table(out, {"device": "GPU (as detected)", "meas": Col("measured step", unit="ms", fmt="{:.1f}"),
                       "pred": Col("calibrated prediction", unit="ms", fmt="{:.1f}"),
                       "err": Col("error", unit="%", fmt="{:+.1f}"),
                       "ok": f"within {100 * cal_mod.GPU_CHECK_TARGET:.0f} %"})
