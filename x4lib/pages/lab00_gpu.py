"""Page helpers of Lab 00's sections on our GPU runs (book/lab-00-roofline.md, "Our GPU runs" to "Decode, end to
end"): what each committed GPU run is and the clock evidence it holds; our committed GEMM calibration sweeps
(``book/runs/gemms/``, runners/gemms.py) against the matmul model and the decode model, per shape class and dtype,
with the clock each sustained shape ran at.

Every row here is ours, measured; nothing in it calibrates the models it is set against.
"""
from __future__ import annotations

import dataclasses
import re
import statistics

from x4lib.book.tables import Col, table, with_details
from x4lib.compute import kernels, matmul
from x4lib.compute import matmul_floors
from x4lib.compute import matmul_validation as mv
from x4lib.harness import device as hdevice
from x4lib.harness import runs as hruns
from x4lib.harness.runs import Run
from x4lib.catalog import specs

# ---------------------------------------------------------------------------------- what our GPU runs are

def gpu_runs(runs) -> list[Run]:
    """The committed full (not quick) GPU runs, in start order."""
    return [r for r in runs if r.committed and not r.quick and r.device["kind"] == "gpu"]


def gpu_run_rows(runs) -> list[dict]:
    """What each GPU run is: the device it detected, when, the software, the harness method and the host CPU."""
    out = []
    for r in gpu_runs(runs):
        d, env = r.device, r.device.get("env", {})
        smi = d.get("nvidia_smi_before") or d.get("nvidia_smi") or {}
        out.append({"run": r.run_id, "device detected": d["detected_name"], "catalog id": d.get("catalog_id") or "—",
                    "GPUs": d.get("count", 1), "started (UTC)": r.started_utc,
                    "driver": smi.get("driver_version", "—"), "CUDA": env.get("cuda") or "—",
                    "PyTorch": env.get("torch", "—"), "harness method": r.results.get("method_version"),
                    "host CPU": (d.get("cpu") or {}).get("model_name", "—")})
    return out


def gpu_run_table(runs):
    from x4lib.book.tables import Col, table
    return table(gpu_run_rows(runs), {
        "device detected": Col("device detected", wrap=True), "catalog id": "catalog id", "GPUs": "GPUs",
        "started (UTC)": "started (UTC)", "driver": "driver", "CUDA": "CUDA", "PyTorch": "PyTorch",
        "harness method": "harness method", "host CPU": Col("host CPU", wrap=True), "run": Col("run", wrap=True)})


@dataclasses.dataclass(frozen=True)
class ClockReading:
    """The clock evidence one GPU run holds: the SM clock nvidia-smi read after the matmul sweep [MHz], its maximum,
    the clock the catalog's tensor peak assumes, the power then [W] against the limit, and whether any clock-event
    reason was sampled while the kernels ran (harness method 3)."""
    run_id: str
    device: str
    after_mhz: float | None
    max_mhz: float | None
    peak_clock_mhz: float | None
    power_w: float | None
    power_limit_w: float | None
    temperature_c: float | None
    reasons_sampled: bool
    reasons_active: tuple[str, ...]

    @property
    def after_over_peak_clock(self) -> float | None:
        return self.after_mhz / self.peak_clock_mhz if self.after_mhz and self.peak_clock_mhz else None


def clock_readings(runs) -> list[ClockReading]:
    """:class:`ClockReading` of every committed GPU run."""
    from x4lib.harness import device as hdev
    out = []
    for r in gpu_runs(runs):
        after = r.device.get("nvidia_smi_after") or {}
        cat = r.device.get("catalog_id")
        basis = specs.get(cat).peak_basis if cat else None
        evs = [e for row in r.results["matmul"] if (e := hdev.clock_evidence(row.get("gpu_samples")))]
        active = sorted({a for e in evs for a in (e["reasons_active"] or ())})

        def num(key):
            v = after.get(key)
            return float(v) if isinstance(v, (int, float)) else None
        out.append(ClockReading(r.run_id, r.device_label, num("clocks.sm"), num("clocks.max.sm"),
                                float(basis["clock_mhz"]) if basis else None, num("power.draw"), num("power.limit"),
                                num("temperature.gpu"), bool(evs), tuple(active)))
    return out


def clock_rows(runs) -> list[dict]:
    return [{"device": c.device, "SM clock after the sweep (MHz)": c.after_mhz, "maximum SM clock (MHz)": c.max_mhz,
             "clock the tensor peak assumes (MHz)": c.peak_clock_mhz, "after / peak clock": c.after_over_peak_clock,
             "power then (W)": c.power_w, "power limit (W)": c.power_limit_w, "GPU temperature (°C)": c.temperature_c,
             "clock-event reasons during the sweep": (", ".join(c.reasons_active) or "sampled: none Active")
             if c.reasons_sampled else "not recorded"} for c in clock_readings(runs)]


def clock_table(runs):
    from x4lib.book.tables import Col, table
    return table(clock_rows(runs), {
        "device": Col("device", wrap=True),
        "SM clock after the sweep (MHz)": Col("SM clock after the sweep", "MHz", "{:,.0f}"),
        "maximum SM clock (MHz)": Col("maximum SM clock", "MHz", "{:,.0f}"),
        "clock the tensor peak assumes (MHz)": Col("clock the tensor peak assumes", "MHz", "{:,.0f}"),
        "after / peak clock": Col("after / peak clock", fmt="{:.2f}"),
        "power then (W)": Col("power then", "W", "{:,.0f}"), "power limit (W)": Col("power limit", "W", "{:,.0f}"),
        "GPU temperature (°C)": Col("GPU temperature", "°C", "{:.0f}"),
        "clock-event reasons during the sweep": Col("clock-event reasons during the sweep", wrap=True)})


def idle_capture_reasons(path) -> dict:
    """The clock-event reasons and their counters in a stored ``nvidia-smi -q`` capture: {"active": [...],
    "not_active": n, "counters_nonzero": [...], "counters": n} (read with x4lib.doctor.gpu_state)."""
    from pathlib import Path

    from x4lib.doctor import gpu_state
    (gpu,) = gpu_state.parse_smi(Path(path).read_text(encoding="utf-8"))
    reasons = [e for e in gpu if len(e.path) >= 2 and e.path[-2] in ("Clocks Event Reasons", "Clocks Throttle Reasons")]
    counters = [e for e in gpu if len(e.path) >= 2 and e.path[-2] == "Clocks Event Reasons Counters"]
    return {"active": [e.path[-1] for e in reasons if e.value == "Active"],
            "not_active": sum(e.value == "Not Active" for e in reasons),
            "counters_nonzero": [e.path[-1] for e in counters if e.value.split()[0] not in ("0", "N/A")],
            "counters": len(counters)}


# ------------------------------------------------------------------------------------- the GEMM sweep


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


def _swept(run_id: str) -> str:
    """The UTC date a run id carries (``...-20261127T053425.695Z-...`` -> 2026-11-27)."""
    m = re.search(r"(\d{4})(\d{2})(\d{2})T\d", run_id)
    return "-".join(m.groups()) if m else "?"


def decode_table(rows):
    out = [{"gpu": f"{r['device']}, {_swept(r['run'])}", "model": r["model"], "batch": r["batch"],
            "context": r["context"], "mode": r["mode"],
            "k": r["kernels_per_layer"], "meas": r["measured_s"] * 1e3, "pred": r["predicted_s"] * 1e3,
            "err": 100 * r["error"], "bound": r["bound"]} for r in rows]
    full = table(out, {"gpu": "GPU, swept (UTC)", "model": "model", "batch": "batch", "context": "context",
                       "mode": "mode", "k": Col("kernels per layer (profiler)", fmt="{:.1f}"),
                       "meas": Col("measured step", unit="ms", fmt="{:.2f}"),
                       "pred": Col("model", unit="ms", fmt="{:.2f}"), "err": Col("error", unit="%", fmt="{:+.0f}"),
                       "bound": "model's bound"})
    if len(out) <= 20:
        return full
    compact = [r for r in out if r["batch"] == 1 and r["context"] == 2048 and r["model"] == "llama3-8b"] \
        or [r for r in out if r["batch"] == 1 and r["context"] == 2048]
    return with_details(table(compact, {"gpu": "GPU, swept (UTC)", "model": "model", "batch": "batch",
                                        "context": "context", "mode": "mode",
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
        out.append({"device": run.device["detected_name"], "swept": run.results["started_utc"][:10],
                    "floor_bf16": host_floor_us(run, "bf16"),
                    "floor_fp8": host_floor_us(run, "fp8_e4m3"), "clock_bf16": b, "clock_fp8": f,
                    "drop": 100 * (1 - f / b)})
    return out


def mechanism_model_rows(runs) -> list[dict]:
    """Per sweep run and precision: the host floor and the sustained clock it measured, against what the matmul model
    predicts for that device with the device held out (the floor and the energy per clock of the other machines)."""
    out = []
    for run in runs:
        cat = run.device["catalog_id"]
        for dt in ("bf16", "fp8_e4m3"):
            tg = matmul.target(cat, dt, exclude={cat})
            pc = matmul_floors.power_limited_clock(cat, dt, exclude={cat})
            meas = sustained_clock(run, dt)
            out.append({"device": cat, "swept": run.results["started_utc"][:10], "dtype": dt, "api": tg.api,
                        "floor": host_floor_us(run, dt),
                        "floor_model": tg.floor_s * 1e6, "clock": meas,
                        "clock_model": pc[0] / 1e6 if pc else None,
                        "clock_err": 100 * (pc[0] / 1e6 / meas - 1) if pc else None})
    return out


def mechanism_model_table(runs):
    return table(mechanism_model_rows(runs), {
        "device": "device", "swept": "swept (UTC)", "dtype": "dtype", "api": "timing API",
        "floor": Col("least time per call, measured", unit="µs", fmt="{:.1f}"),
        "floor_model": Col("model's floor, this device held out", unit="µs", fmt="{:.1f}"),
        "clock": Col("sustained SM clock, measured", unit="MHz", fmt="{:,.0f}"),
        "clock_model": Col("power-limited clock, this device held out", unit="MHz", fmt="{:,.0f}"),
        "clock_err": Col("clock error", unit="%", fmt="{:+.0f}")})


def sglang_fp8_error() -> float:
    """Median |error| of SGLang's published H100 FP8 GEMMs (no calibration row), with the device held out."""
    rows = [r for r in mv.published_rows() if r.source.startswith("sglang") and r.dtype == "fp8_e4m3"]
    return statistics.median(abs(s.error("device")) for s in mv.score(rows))


def mechanism_table(runs):
    return table(mechanism_rows(runs), {
        "device": "GPU (as detected)", "swept": "swept (UTC)", "floor_bf16": Col("least time per call, BF16", unit="µs", fmt="{:.1f}"),
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
