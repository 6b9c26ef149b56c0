"""Page helpers of Lab 00's GEMM calibration sweep (book/lab-00-roofline.md, "The GEMMs of real models" and
"Decode, end to end"): our committed sweeps (``book/runs/gemms/``, runners/gemms.py) against the matmul model and
the decode model, per shape class and dtype, with the clock each sustained shape ran at.

Every row here is ours, measured; nothing in it calibrates the models it is set against.
"""
from __future__ import annotations

import statistics

from x4lib.book.tables import Col, table, with_details
from x4lib.compute import kernels, matmul
from x4lib.compute import matmul_validation as mv
from x4lib.harness import device as hdevice
from x4lib.harness import runs as hruns


def sweep_runs():
    """Our committed GEMM sweeps on GPUs (quick runs left out)."""
    return [r for r in hruns.load_runs("gemms") if r.device["kind"] == "gpu" and not r.quick]


def scored_sweep(runs=None):
    return mv.score(mv.sweep_rows(runs))


def class_dtype_rows(scored) -> list[dict]:
    """Per (shape class, dtype): rows, median |error| with the device held out, the signed median."""
    out = []
    for c in mv.CLASSES:
        for d in kernels.DTYPE_BYTES:
            xs = [s.error("device") for s in scored if s.row.shape_class == c and s.row.dtype == d]
            if xs:
                out.append({"class": c, "dtype": d, "rows": len(xs), "abs": 100 * statistics.median(abs(x) for x in xs),
                            "signed": 100 * statistics.median(xs)})
    return out


def class_dtype_table(scored):
    return table(class_dtype_rows(scored), {
        "class": "shape class", "dtype": "dtype", "rows": "rows",
        "abs": Col("median |error|, device held out", unit="%", fmt="{:.1f}"),
        "signed": Col("median error (+: model optimistic)", unit="%", fmt="{:+.1f}")})


def summary(scored) -> dict:
    """Median |error| overall and per dtype, the share of rows where the model is optimistic."""
    errs = [s.error("device") for s in scored]
    by = {d: statistics.median(abs(s.error("device")) for s in scored if s.row.dtype == d)
          for d in sorted({s.row.dtype for s in scored})}
    return {"rows": len(errs), "overall": statistics.median(abs(e) for e in errs), "by_dtype": by,
            "optimistic": sum(e > 0 for e in errs) / len(errs)}


def worst_rows(scored, n: int = 10) -> list[dict]:
    worst = sorted(scored, key=lambda s: -abs(s.error("device")))[:n]
    return [{"device": s.row.device, "dtype": s.row.dtype, "shape": s.row.shape, "what": s.row.note.removeprefix("GEMM sweep: "),
             "meas": s.row.measured_flop_per_s / 1e12, "pred": s.lodo.rate_flop_per_s / 1e12,
             "err": 100 * s.error("device"), "bound": s.lodo.bound} for s in worst]


def worst_table(scored, n: int = 10):
    return table(worst_rows(scored, n), {
        "device": "device", "dtype": "dtype", "shape": "M×N×K", "what": Col("GEMM", wrap=True),
        "meas": Col("measured", unit="TFLOP/s", fmt="{:,.1f}"), "pred": Col("model", unit="TFLOP/s", fmt="{:,.1f}"),
        "err": Col("error", unit="%", fmt="{:+.0f}"), "bound": "model's bound"})


def host_floor_us(run, dtype: str) -> float:
    """The least time per call over the sweep's rows of ``dtype`` [µs]: below it, no shape ran faster, whatever its
    size (the rate at which the host issues that call, back to back)."""
    return 1e6 * min(r["best_s"] for r in run.results["matmul"] if r["status"] == "ok" and r["dtype"] == dtype)


def sustained_rows(run) -> list[dict]:
    """Each sustained shape: its rate over the whole sustained run, the SM clock and power nvidia-smi sampled while
    it ran, and the clock-event reasons Active (NVML's names)."""
    out = []
    for r in run.results["sustained"]:
        if r["status"] != "ok":
            continue
        ev = hdevice.clock_evidence(r.get("gpu_samples")) or {}
        out.append({"dtype": r["dtype"], "shape": f"{r['m']}×{r['n']}×{r['k']}", "seconds": r["total_s"],
                    "tflops": kernels.matmul_flop(r["m"], r["n"], r["k"]) * r["calls"] / r["total_s"] / 1e12,
                    "clock": ev.get("sm_mhz_median"), "clock_min": ev.get("sm_mhz_min"),
                    "power": ev.get("power_w_max"), "limit": ev.get("power_limit_w"),
                    "reasons": ", ".join(ev.get("reasons_active") or []) or "none Active"})
    return out


def sustained_table(run):
    return table(sustained_rows(run), {
        "dtype": "dtype", "shape": "M×N×K", "seconds": Col("ran for", unit="s", fmt="{:.1f}"),
        "tflops": Col("rate", unit="TFLOP/s", fmt="{:,.0f}"), "clock": Col("SM clock, median", unit="MHz", fmt="{:,.0f}"),
        "clock_min": Col("SM clock, least", unit="MHz", fmt="{:,.0f}"), "power": Col("power, most", unit="W", fmt="{:.0f}"),
        "limit": Col("power limit", unit="W", fmt="{:.0f}"), "reasons": Col("clock-event reasons Active", wrap=True)})


def sustained_clock(run, dtype: str) -> float:
    """The median over the sustained shapes of ``dtype`` of each one's median SM clock [MHz]."""
    return statistics.median(r["clock"] for r in sustained_rows(run) if r["dtype"] == dtype and r["clock"])


def tokens_series(run, model: str, op: str, dtype: str, device_id: str):
    """For one forward GEMM of ``model``: (tokens, measured TFLOP/s, model TFLOP/s) over the sweep's token counts."""
    rows = sorted((r for r in run.results["matmul"] if r["status"] == "ok" and r["set"] == "model"
                   and r["model"] == model and r["op"] == op and r["pass"] == "fwd" and r["dtype"] == dtype),
                  key=lambda r: r["tokens"])
    toks = [r["tokens"] for r in rows]
    meas = [kernels.matmul_flop(r["m"], r["n"], r["k"]) / r["best_s"] / 1e12 for r in rows]
    pred = [matmul.predict(device_id, dtype, r["m"], r["n"], r["k"], exclude={device_id}).rate_flop_per_s / 1e12
            for r in rows]
    return toks, meas, pred


def tokens_axes(ax, run, device_id: str, model: str = "llama3-8b", ops=("qkv", "gate_up", "down"),
                dtypes=("bf16", "fp8_e4m3")):
    """Measured (markers) and modelled (lines, device held out) rate of each forward GEMM against the tokens in the
    batch, log-log: the decode end is memory-bound (rate ∝ tokens), the training end compute-bound."""
    styles = {"bf16": "-", "fp8_e4m3": "--"}
    for j, dtype in enumerate(dtypes):
        for i, op in enumerate(ops):
            toks, meas, pred = tokens_series(run, model, op, dtype, device_id)
            if not toks:
                continue
            color = f"C{i}"
            ax.plot(toks, pred, styles.get(dtype, ":"), color=color, lw=1.2, label=f"{op}, {dtype}: model")
            ax.plot(toks, meas, "o" if j == 0 else "s", color=color, ms=4, mfc=color if j == 0 else "none",
                    label=f"{op}, {dtype}: measured (ours)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("tokens in the batch (M)")
    ax.set_ylabel("TFLOP/s")
    ax.legend(fontsize="small", ncols=2, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    return ax


def decode_rows() -> list[dict]:
    from x4lib.serving import decode
    return decode.measured_checks()


def decode_table(rows):
    out = [{"model": r["model"], "batch": r["batch"], "context": r["context"], "mode": r["mode"],
            "k": r["kernels_per_layer"], "meas": r["measured_s"] * 1e3, "pred": r["predicted_s"] * 1e3,
            "err": 100 * r["error"], "bound": r["bound"]} for r in rows]
    full = table(out, {"model": "model", "batch": "batch", "context": "context", "mode": "mode",
                       "k": Col("kernels per layer (profiler)", fmt="{:.1f}"),
                       "meas": Col("measured step", unit="ms", fmt="{:.2f}"),
                       "pred": Col("model", unit="ms", fmt="{:.2f}"), "err": Col("error", unit="%", fmt="{:+.0f}"),
                       "bound": "model's bound"})
    if len(out) <= 20:
        return full
    compact = [r for r in out if r["batch"] == 1 and r["context"] == 2048 or r["batch"] == 128]
    return with_details(table(compact, {"model": "model", "batch": "batch", "context": "context", "mode": "mode",
                                        "meas": Col("measured step", unit="ms", fmt="{:.2f}"),
                                        "pred": Col("model", unit="ms", fmt="{:.2f}"),
                                        "err": Col("error", unit="%", fmt="{:+.0f}")}), full)


def decode_summary(rows) -> dict:
    from x4lib.serving import decode
    by = {m: [r["error"] for r in rows if r["mode"] == m] for m in ("eager", "graph")}
    return {"rows": len(rows), "kernels_per_layer_median": statistics.median(r["kernels_per_layer"] for r in rows),
            "kernels_per_layer_engine": decode.KERNELS_PER_LAYER, "median_abs": statistics.median(abs(r["error"]) for r in rows),
            "worst": max((abs(r["error"]) for r in rows), default=float("nan")),
            **{f"{m}_median": statistics.median(v) for m, v in by.items() if v}}


def mechanism_rows(runs) -> list[dict]:
    """Per sweep run: the host floor of each dtype's call [µs] and the median sustained clock of each dtype [MHz]."""
    out = []
    for run in runs:
        b, f = sustained_clock(run, "bf16"), sustained_clock(run, "fp8_e4m3")
        out.append({"device": run.device["detected_name"], "floor_bf16": host_floor_us(run, "bf16"),
                    "floor_fp8": host_floor_us(run, "fp8_e4m3"), "clock_bf16": b, "clock_fp8": f,
                    "drop": 100 * (1 - f / b)})
    return out


def mechanism_table(runs):
    return table(mechanism_rows(runs), {
        "device": "GPU (as detected)", "floor_bf16": Col("least time per call, BF16", unit="µs", fmt="{:.1f}"),
        "floor_fp8": Col("least time per call, FP8", unit="µs", fmt="{:.1f}"),
        "clock_bf16": Col("sustained SM clock, BF16", unit="MHz", fmt="{:,.0f}"),
        "clock_fp8": Col("sustained SM clock, FP8", unit="MHz", fmt="{:,.0f}"),
        "drop": Col("FP8 clock below BF16's", unit="%", fmt="{:.0f}")})


def sampled_clock_rows(lab00_runs) -> list[dict]:
    """The largest shape of each dtype in our Lab 00 runs of harness method 3: what nvidia-smi sampled while it ran."""
    out = []
    for run in lab00_runs:
        for r in run.results["matmul"]:
            ev = hdevice.clock_evidence(r.get("gpu_samples"))
            if not ev:
                continue
            out.append({"device": run.device["detected_name"], "dtype": r["dtype"],
                        "shape": f"{r['m']}×{r['n']}×{r['k']}", "clock": ev["sm_mhz_median"],
                        "clock_min": ev["sm_mhz_min"], "power": ev["power_w_max"], "limit": ev["power_limit_w"],
                        "reasons": ", ".join(ev["reasons_active"] or []) or "none Active"})
    return out


def sampled_clock_table(lab00_runs):
    return table(sampled_clock_rows(lab00_runs), {
        "device": "GPU (as detected)", "dtype": "dtype", "shape": "M×N×K",
        "clock": Col("SM clock, median", unit="MHz", fmt="{:,.0f}"),
        "clock_min": Col("SM clock, least", unit="MHz", fmt="{:,.0f}"), "power": Col("power, most", unit="W", fmt="{:.0f}"),
        "limit": Col("power limit", unit="W", fmt="{:.0f}"), "reasons": Col("clock-event reasons Active", wrap=True)})
