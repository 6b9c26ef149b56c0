"""Page helpers of Lab 00 (book/lab-00-roofline.md): the views of a run that the page draws.

A run (x4lib.harness.runs.Run) stores shapes and raw times only; everything here is derived when the page is drawn: rates
from times and ``x4lib.compute.kernels``' FLOP and byte counts, the peak a run is judged against (the catalog's for a GPU;
cores × FLOP per cycle × the reported clock for a CPU), efficiencies, the gap table, others' published points
(``x4lib.catalog.published``), the roofline prediction, and the lab's budget. The model's check against others'
measurements is ``x4lib.pages.lab00_model``. Runs of every results.json version load.
"""
from __future__ import annotations

import dataclasses
import json

from x4lib.compute import kernels, matmul
from x4lib.compute import matmul_validation
from x4lib.catalog import published, specs
from x4lib.compute import roofline as rl
from x4lib.harness.runs import Run
from x4lib import paths

CPU_UARCH_PATH = paths.DATA_DIR / "cpu_uarch.json"
SQUARE_SWEEP = tuple(2**i for i in range(6, 15))  # 64 .. 16384


# ------------------------------------------------------------------------------------ rates from raw times

def matmul_rows(run: Run, dtype: str | None = None) -> list[dict]:
    """The run's successful matmul rows with their derived rates (TFLOP/s at the best and the median repeat)."""
    out = []
    for r in run.results["matmul"]:
        if r["status"] != "ok" or (dtype and r["dtype"] != dtype):
            continue
        flop = kernels.matmul_flop(r["m"], r["n"], r["k"])
        out.append({**r, "flop": flop, "tflops_best": flop / r["best_s"] / 1e12,
                    "tflops_median": flop / r["median_s"] / 1e12})
    return out


def dtypes(run: Run) -> list[str]:
    """The dtypes with at least one successful matmul, in the book's vocabulary order."""
    have = {r["dtype"] for r in matmul_rows(run)}
    return [d for d in kernels.DTYPE_BYTES if d in have]


def best(run: Run, dtype: str) -> dict | None:
    """The matmul row with the highest best-of-repeats rate for ``dtype``."""
    rows = matmul_rows(run, dtype)
    return max(rows, key=lambda r: r["tflops_best"]) if rows else None


def memory_rows(run: Run) -> list[dict]:
    """The run's successful memory-kernel rows with the bytes they move and their rates (GB/s, 1e9 B/s)."""
    out = []
    for m in run.results["memory_bw"]:
        if m["status"] != "ok":
            continue
        nbytes = kernels.vector_bytes(m["kernel"], m["elements"], m.get("element_bytes", 4))
        out.append({**m, "bytes": nbytes, "gb_s_best": nbytes / m["best_s"] / 1e9,
                    "gb_s_median": nbytes / m["median_s"] / 1e9})
    return out


# ------------------------------------------------------------------------------------------------ peaks

@dataclasses.dataclass(frozen=True)
class Peak:
    """The peak a run is judged against: TFLOP/s, how it was obtained, and the bibliography key behind it."""
    tflops: float
    basis: str
    source: str


def _uarch(run: Run) -> dict | None:
    """The run's CPU microarchitecture record, from today's table (so a corrected table corrects the page),
    else the copy the run stored when it measured."""
    stored = run.device.get("cpu_uarch")
    if not stored:
        return None
    table = json.loads(CPU_UARCH_PATH.read_text(encoding="utf-8"))["microarchitectures"]
    return next((a for a in table if a["id"] == stored["id"]), stored)


def peak(run: Run, dtype: str) -> Peak | None:
    """GPU: the catalog's dense peak. CPU: physical cores × FLOP/cycle/core (microarchitecture table) × the clock
    /proc/cpuinfo reported (nominal; in a VM the sustained clock is not readable). None when unknown."""
    d = run.device
    if d["kind"] == "cpu":
        arch, cpu = _uarch(run), d["cpu"]
        per_cycle = (arch or {}).get("flop_per_cycle_per_core", {}).get(dtype)
        if not per_cycle or not cpu.get("mhz_reported"):
            return None
        tflops = cpu["physical_cores"] * per_cycle * cpu["mhz_reported"] * 1e6 / 1e12
        return Peak(tflops, f"{cpu['physical_cores']} cores × {per_cycle} {dtype.upper()} FLOP/cycle/core "
                            f"({arch['id']}) × {cpu['mhz_reported']:.0f} MHz as /proc/cpuinfo reports it",
                    arch["source"])
    if not d.get("catalog_id"):
        return None
    dev = specs.get(d["catalog_id"])
    try:
        field = dev.peak_field(dtype)
    except specs.UnsupportedDtypeError:
        return None
    v = dev.values[field]
    return Peak(v.value, f"catalog {dev.id}: {field} ({v.sparsity or 'dense'})", v.source)


def run_roofline(run: Run, dtype: str) -> rl.Roofline | None:
    """The roofline a run is judged against: its peak, and the catalog's memory bandwidth or, for a CPU without
    a datasheet figure, the run's own best memory-kernel bandwidth."""
    pk = peak(run, dtype)
    if pk is None:
        return None
    cat = run.device.get("catalog_id")
    if cat and "memory_bw_gb_s" in specs.get(cat).values and run.device["kind"] != "cpu":
        return rl.Roofline(cat, dtype, pk.basis, pk.tflops * 1e12, specs.get(cat).memory_bw_Bps)
    bw = max((m["gb_s_best"] for m in memory_rows(run)), default=None)
    if bw is None:
        return None
    return rl.Roofline(run.device["detected_name"], dtype, pk.basis, pk.tflops * 1e12, bw * 1e9)


def measured_points(run: Run, dtype: str) -> list[dict]:
    """(intensity FLOP/B, best TFLOP/s) of every successful matmul of ``dtype`` in a run."""
    b = kernels.DTYPE_BYTES[dtype]
    return [{"x": kernels.matmul_intensity(r["m"], r["n"], r["k"], b), "y": r["tflops_best"],
             "shape": f"{r['m']}×{r['n']}×{r['k']}"} for r in matmul_rows(run, dtype)]


def implied_clock_ghz(run: Run, dtype: str) -> float | None:
    """For a CPU: the sustained clock its best rate implies (rate / (cores × FLOP per cycle))."""
    arch, b = _uarch(run), best(run, dtype)
    if run.device["kind"] != "cpu" or not arch or not b or dtype not in arch["flop_per_cycle_per_core"]:
        return None
    per_cycle = run.device["cpu"]["physical_cores"] * arch["flop_per_cycle_per_core"][dtype]
    return b["tflops_best"] * 1e12 / per_cycle / 1e9


def efficiency_text(run: Run, dtype: str) -> str:
    """The efficiency of a run's best ``dtype`` matmul as a sentence fragment. Above 100 % it is not printed:
    for a CPU it names the sustained clock the measurement implies instead (the clock assumption is wrong)."""
    b, pk = best(run, dtype), peak(run, dtype)
    if b is None or pk is None:
        return "no peak to compare with"
    eff = b["tflops_best"] / pk.tflops
    if eff <= 1:
        return f"{100 * eff:.0f} % of that peak"
    ghz = implied_clock_ghz(run, dtype)
    if ghz is not None:
        return (f"above the computed peak: at the FLOP per cycle assumed it would need a sustained clock of at "
                f"least {ghz:.2f} GHz rather than the {run.device['cpu']['mhz_reported']:.0f} MHz the CPU reports, "
                f"so an assumption behind the peak is wrong, not the kernel (the clock; or, in a virtual machine "
                f"that hides the real CPU model, the FLOP per cycle of its vector units), and no efficiency is "
                f"printed")
    return "above the catalog peak: check the peak's precision (dense vs sparse) and the device detected"


def warnings(run: Run) -> list[str]:
    """The run's own warnings (errors, out-of-memory shapes, clocks) and those derived now: one line per dtype whose
    rates exceed its peak, naming how many shapes did and the highest of them."""
    out = list(run.warnings)
    for d in dtypes(run):
        pk = peak(run, d)
        if pk is None:
            continue
        over = [r for r in matmul_rows(run, d) if r["tflops_best"] > pk.tflops]
        if over:
            top = max(over, key=lambda r: r["tflops_best"])
            shapes = "1 shape" if len(over) == 1 else f"{len(over)} of {len(matmul_rows(run, d))} shapes"
            out.append(f"{d}: {shapes} ran above the peak {pk.tflops:.3g} TFLOP/s ({pk.basis}), the highest "
                       f"{top['tflops_best']:.3g} TFLOP/s at {top['m']}x{top['n']}x{top['k']}: the clock or core "
                       f"assumption is wrong")
    return out


def independent_check_text(run: Run) -> str:
    """The harness checked against a plain loop of torch.matmul timed as one block (CPU runs that have it)."""
    chk = run.results.get("independent_check")
    if not chk:
        return "The independent timing check runs only when a CPU run measures it (runs from before it have none)."
    n = chk["n"]
    plain = chk["calls"] * kernels.matmul_flop(n, n, n) / chk["elapsed_s"] / 1e9
    harness = next((r["tflops_best"] * 1e3 for r in matmul_rows(run, chk["dtype"]) if r["m"] == r["n"] == r["k"] == n),
                   None)
    if harness is None:
        return "The independent timing check has no harness row of the same shape to compare with."
    return (f"As a check that the harness itself wastes no time, a plain loop of torch.matmul at {n}³ in the same "
            f"run ran at {plain:.1f} GFLOP/s against the harness's best {harness:.1f} GFLOP/s "
            f"({100 * (harness / plain - 1):+.0f} %).")


@dataclasses.dataclass(frozen=True)
class Summary:
    """What the page's prose quotes about the run it shows (display units: GFLOP/s)."""
    name: str
    dtype: str
    peak_gflops: float | None
    peak_basis: str
    best_gflops: float
    best_shape: str
    efficiency_text: str
    independent_check: str
    n_warnings: int


def summary(run: Run) -> Summary:
    d = "fp32" if run.device["kind"] == "cpu" else "bf16"
    b, pk = best(run, d), peak(run, d)
    if b is None:
        raise ValueError(f"run {run.run_id} has no successful {d} matmul")
    return Summary(run.device_label, d.upper(), pk.tflops * 1e3 if pk else None,
                   pk.basis if pk else "no peak known for this device", b["tflops_best"] * 1e3,
                   f"{b['m']}×{b['n']}×{b['k']}", efficiency_text(run, d), independent_check_text(run),
                   len(warnings(run)))


# ------------------------------------------------------------------------------- predictions and others

def i5_peaks_tflops(dtype: str = "fp32") -> dict:
    """The i5-8250U's peak from first principles at its base clock and at its maximum turbo clock."""
    dev = specs.get("i5-8250u")
    return {"base": specs.peak_from_basis(dev, dtype) / 1e12,
            "max_turbo": specs.peak_from_basis(dev, dtype, dev.values["max_turbo_ghz"].si) / 1e12,
            "base_ghz": dev.values["base_clock_ghz"].value, "max_turbo_ghz": dev.values["max_turbo_ghz"].value}


def _points(preds) -> list[dict]:
    return [{"x": kernels.matmul_intensity(p.m, p.n, p.k, kernels.DTYPE_BYTES[p.target.dtype]),
             "y": p.rate_flop_per_s / 1e12, "shape": f"{p.m}³"} for p in preds]


def device_target(device_id: str, dtype: str) -> matmul.Target:
    """The matmul model's view of a catalog device, with the i5-8250U's DRAM peak as this page uses it
    (:func:`i5_memory_bw_Bps`)."""
    tg = matmul.target(device_id, dtype)
    return dataclasses.replace(tg, memory_bw_Bps=i5_memory_bw_Bps()) if device_id == "i5-8250u" else tg


def device_roofline(device_id: str, dtype: str) -> rl.Roofline:
    """The catalog roofline, or for the i5-8250U the one with its DRAM peak (:func:`i5_roofline`)."""
    return i5_roofline(dtype) if device_id == "i5-8250u" else rl.for_device(device_id, dtype)


def predicted_points(device_id: str, dtype: str, sizes=SQUARE_SWEEP) -> list[dict]:
    """The matmul model's prediction (x4lib.compute.matmul) for square n³ matmuls on a catalog device: {x: FLOP/B,
    y: TFLOP/s}."""
    tg = device_target(device_id, dtype)
    eta = matmul.eta_of(tg)
    return _points([matmul.predict_target(tg, n, n, n, eta) for n in sizes])


def run_target(run: Run, dtype: str) -> matmul.Target | None:
    """The matmul model's view of a run's machine: a catalog device as the catalog has it; a CPU with the peak and
    memory roof the page judges it against (:func:`run_roofline`) and its physical cores."""
    cat = run.device.get("catalog_id")
    if run.device["kind"] != "cpu" and cat:
        try:
            return matmul.target(cat, dtype)
        except (matmul.NoModelError, specs.UnsupportedDtypeError):
            return None
    roof = run_roofline(run, dtype)
    if roof is None or run.device["kind"] != "cpu":
        return None
    return matmul.cpu_target(run.device_label, dtype, roof.peak_flop_per_s, roof.memory_bw_Bps,
                             run.device["cpu"]["physical_cores"])


def run_prediction(run: Run, dtype: str, m: int, n: int, k: int) -> matmul.Prediction | None:
    tg = run_target(run, dtype)
    if tg is None:
        return None
    return matmul.predict_target(tg, m, n, k, matmul.eta_of(tg))


def predicted_points_run(run: Run, dtype: str, sizes=None) -> list[dict]:
    """The matmul model for the square shapes a run measured, on the run's machine."""
    sizes = sizes or sorted({r["m"] for r in matmul_rows(run, dtype) if r["m"] == r["n"] == r["k"]})
    preds = [run_prediction(run, dtype, s, s, s) for s in sizes]
    return _points([p for p in preds if p])


def panel_for_run(run: Run, dtype_list=None) -> tuple[list, list]:
    """(rooflines, series) for one run: its roofs and our measured points."""
    roofs, series = [], []
    for d in dtype_list or dtypes(run):
        roof = run_roofline(run, d)
        if roof is None:
            continue
        roofs.append(roof)
        pred = predicted_points_run(run, d)
        if pred:
            series.append(("prediction", f"{d} matmul model (n³)", pred))
        series.append(("ours", f"{d} measured: {run.device_label}", measured_points(run, d)))
    return roofs, series


def _run_when(run: Run) -> str:
    """A run as a legend names it: ours, and when it started (the runs table above the figures gives its id)."""
    return f"our run of {run.started_utc[:16].replace('T', ' ')} UTC"


def panel_for_device(device_id: str, dtype_list, runs=()) -> tuple[list, list]:
    """(rooflines, series) for a catalog device: predictions, others' published points (cited), and any of our
    runs detected as this device."""
    specs.get(device_id)  # an unknown id fails here, before anything is drawn
    roofs, series = [], []
    for d in dtype_list:
        try:
            roof = device_roofline(device_id, d)
        except specs.UnsupportedDtypeError:
            continue
        roofs.append(roof)
        series.append(("prediction", f"{d} matmul model (n³)", predicted_points(device_id, d)))
        for m in published.measurements(device_id, "matmul", d):
            s = m.get("shape") or {}
            x = kernels.matmul_intensity(s["m"], s["n"], s["k"], kernels.DTYPE_BYTES[d]) if s \
                else roof.ridge_flop_per_B * 10
            series.append(("theirs", f"{d} published [{m['source']}]", [{"x": x, "y": m["value"]}]))
        for run in runs:
            if run.device.get("catalog_id") == device_id:
                series.append(("ours", f"{d} measured: {_run_when(run)}", measured_points(run, d)))
    return roofs, series


# ----------------------------------------------------------------------------------------------- gap table

def _roofline_tflops(roof: rl.Roofline, m: int, n: int, k: int) -> float:
    b = kernels.DTYPE_BYTES[roof.dtype]
    return rl.point(kernels.matmul_flop(m, n, k), kernels.matmul_bytes(m, n, k, b), roof).attainable_flop_per_s / 1e12


@dataclasses.dataclass(frozen=True)
class GapRow:
    """One row of the gap table: the peak, what the roofline allows for the shape, what the matmul model predicts
    (x4lib.compute.matmul), and the measured best (ours or others'), all in TFLOP/s."""
    device: str
    dtype: str
    peak_tflops: float
    peak_source: str
    roofline_tflops: float
    achievable_tflops: float | None
    measured_tflops: float | None
    measured_by: str
    shape: str

    @property
    def efficiency(self) -> float | None:
        return None if self.measured_tflops is None else self.measured_tflops / self.peak_tflops

    def to_row(self) -> dict:
        return {"device": self.device, "dtype": self.dtype, "peak (TFLOP/s)": self.peak_tflops,
                "peak source": self.peak_source, "shape": self.shape,
                "roofline (TFLOP/s)": self.roofline_tflops, "predicted achievable (TFLOP/s)": self.achievable_tflops,
                "measured best (TFLOP/s)": self.measured_tflops, "measured by": self.measured_by,
                "efficiency": self.efficiency}


def gap_for_run(run: Run, dtype: str) -> GapRow | None:
    """Our best measured shape of ``dtype`` in a run against its roofline and the matmul model."""
    roof, b, pk = run_roofline(run, dtype), best(run, dtype), peak(run, dtype)
    if roof is None or b is None:
        return None
    pred = run_prediction(run, dtype, b["m"], b["n"], b["k"])
    return GapRow(run.device_label, dtype, pk.tflops, pk.source, _roofline_tflops(roof, b["m"], b["n"], b["k"]),
                  pred.rate_flop_per_s / 1e12 if pred else None, b["tflops_best"], f"us ({run.run_id})",
                  f"{b['m']}×{b['n']}×{b['k']}")


def gap_for_published(device_id: str, dtype: str) -> list[GapRow]:
    """Others' best published matmuls on a catalog device (cited, theirs) against the roofline and the matmul
    model; the model's η is calibrated without this device (leave-one-out), so it never predicts its own answer."""
    dev = specs.get(device_id)
    roof = rl.for_device(dev, dtype)
    rows = []
    for c in matmul_validation.leave_one_out():
        meas = c.measurement
        if meas.device != device_id or meas.dtype != dtype:
            continue
        p = c.prediction
        rows.append(GapRow(dev.name, dtype, roof.peak_flop_per_s / 1e12, dev.values[roof.peak_field].source,
                           _roofline_tflops(roof, p.m, p.n, p.k), p.rate_flop_per_s / 1e12,
                           meas.rate_flop_per_s / 1e12, f"{meas.source} (theirs)", meas.shape_text))
    return rows


def i5_memory_bw_Bps() -> float:
    """The i5-8250U's DRAM peak in B/s: channels × 8 B per transfer (a 64-bit DDR4 channel) × transfers per s."""
    dev = specs.get("i5-8250u")
    return dev.values["memory_channels"].value * 8 * dev.values["dram_mt_s"].si


def i5_roofline(dtype: str = "fp32") -> rl.Roofline:
    """The i5-8250U's roofline at its base clock with the DRAM peak of :func:`i5_memory_bw_Bps` (38.4 GB/s, not
    Intel's 37.5, which divides 38,400 MB/s by 1024: a mixed decimal/binary figure)."""
    dev = specs.get("i5-8250u")
    return rl.Roofline(dev.id, dtype, dev.peak_field(dtype), dev.peak_flop_per_s(dtype), i5_memory_bw_Bps())


def gap_for_prediction(device_id: str, dtype: str, n: int = 8192) -> GapRow:
    """A device we have not run on: only the model predictions for an n³ matmul."""
    dev = specs.get(device_id)
    roof = device_roofline(device_id, dtype)
    tg = device_target(device_id, dtype)
    p = matmul.predict_target(tg, n, n, n, matmul.eta_of(tg))
    return GapRow(dev.name, dtype, roof.peak_flop_per_s / 1e12, dev.values[roof.peak_field].source,
                  _roofline_tflops(roof, n, n, n), p.rate_flop_per_s / 1e12, None, "not run (prediction only)",
                  f"{n}×{n}×{n}")


def gap_rows(runs, this: Run | None) -> list[dict]:
    """The lab's gap table: our runs (full sweeps, and the run shown), others' published best shapes on the lab's
    two GPUs, and the prediction for the laptop CPU nobody has run yet."""
    gaps = [g for r in runs if not r.quick or r is this for d in ("fp32", "bf16", "tf32", "fp8_e4m3")
            if (g := gap_for_run(r, d))]
    gaps += gap_for_published("a100-sxm-80gb", "bf16") + gap_for_published("h100-sxm", "bf16")
    gaps.append(gap_for_prediction("i5-8250u", "fp32", 2048))
    return [g.to_row() for g in gaps]


def memory_gaps(runs=()) -> list[dict]:
    """Memory-bound kernels against the catalog's memory bandwidth: others' published results (cited) and our
    runs on catalog devices."""
    rows = []
    for m in published.measurements(kind="memory_bw"):
        dev = specs.get(m["device"])
        bw = dev.values["memory_bw_gb_s"].value
        rows.append({"device": dev.name, "kernel": m["id"], "datasheet (GB/s)": bw, "measured (GB/s)": m["value"],
                     "fraction": m["value"] / bw, "measured by": f"{m['source']} (theirs)"})
    for run in runs:
        cat = run.device.get("catalog_id")
        if not cat or "memory_bw_gb_s" not in specs.get(cat).values:
            continue
        bw = specs.get(cat).values["memory_bw_gb_s"].value
        rows += [{"device": run.device_label, "kernel": m["kernel"], "datasheet (GB/s)": bw,
                  "measured (GB/s)": m["gb_s_best"], "fraction": m["gb_s_best"] / bw,
                  "measured by": f"us ({run.run_id})"} for m in memory_rows(run)]
    return rows


def cpu_shape_rows(run: Run, dtype: str = "fp32") -> list[dict]:
    """A CPU run's square shapes: measured rate and model rate, each as a fraction of its own best (the shape
    dependence, free of the unknown sustained clock of a virtual machine)."""
    rows = [r for r in matmul_rows(run, dtype) if r["m"] == r["n"] == r["k"]]
    preds = [run_prediction(run, dtype, r["m"], r["m"], r["m"]) for r in rows]
    if not rows or not all(preds):
        return []
    top_m = max(r["tflops_best"] for r in rows)
    top_p = max(p.rate_flop_per_s for p in preds)
    return [{"shape": f"{r['m']}³", "measured / best measured": r["tflops_best"] / top_m,
             "model / best model": p.rate_flop_per_s / top_p, "model bound": p.bound}
            for r, p in sorted(zip(rows, preds), key=lambda x: x[0]["m"])]


def roof_ratios() -> dict:
    """How far the lab's GPU roofs sit above the i5-8250U's: compute (dense BF16 against FP32 at base clock) and
    memory (datasheet HBM against the DDR4 peak), as plain ratios."""
    i5 = i5_roofline("fp32")
    out = {}
    for dev in ("a100-sxm-80gb", "h100-sxm"):
        g = rl.for_device(dev, "bf16")
        out[dev] = {"compute": g.peak_flop_per_s / i5.peak_flop_per_s, "memory": g.memory_bw_Bps / i5.memory_bw_Bps}
    return out


def original_budget() -> dict:
    """The original module's lab budget (givens.yaml ``lab00_budget``): stated prices, not quotes."""
    from x4lib.training import economics
    from x4lib.catalog import specs
    return dict(specs.read_yaml(economics.GIVENS_PATH)["lab00_budget"])


# ------------------------------------------------------------------------------------------------ budget

def rental_rows(devices=None) -> list[dict]:
    """On-demand prices used for the lab budget (x4lib/data/economics.yaml) and other dated listings
    (x4lib/data/published.yaml), each with its source and the date of the copy read; ``devices``: the catalog ids
    listed (default: every device either file prices)."""
    from x4lib.training import economics
    rows = [{"device": dev_id, "listing": "price used for the budget", "USD per GPU-hour": v["value"],
             "source": v["source"], "accessed": v["accessed"]}
            for dev_id, v in economics.sourced()["defaults"]["usd_per_gpu_hour"].items()]
    rows += [{"device": r["catalog_id"], "listing": f"{r['provider']}: {r['sku']}",
              "USD per GPU-hour": r["usd_per_gpu_hour"], "source": r["source"], "accessed": r["accessed"]}
             for r in published.rentals()]
    return [r for r in rows if devices is None or r["device"] in devices]


def expected_sweep_s(params: dict, device_id: str) -> float:
    """Model prediction of the measuring time of a profile's sweep on a catalog device: for every dtype the device
    has and every shape, (warm-up + repeats) × the roofline time, plus the memory kernels at the datasheet
    bandwidth. A lower bound: launch overheads, allocation and set-up are not counted."""
    from x4lib.harness import bench
    dev = specs.get(device_id)
    calls = params["warmup"] + params["repeats"]
    total = 0.0
    for d in params["dtypes"]:
        try:
            roof = rl.for_device(dev, d)
        except specs.UnsupportedDtypeError:
            continue
        for m, n, k in bench.square_and_skinny_shapes(params["max_n"]):
            total += calls * rl.point(kernels.matmul_flop(m, n, k),
                                      kernels.matmul_bytes(m, n, k, kernels.DTYPE_BYTES[d]), roof).time_s
    for kern in params["memory_kernels"]:
        total += calls * kernels.vector_bytes(kern, params["memory_elements"], 4) / dev.memory_bw_Bps
    return total


# ---------------------------------------------------------------------------------------------- explorer

def roofline_explorer(device: str = "h100-sxm", dtype: str = "bf16"):
    """Pick a catalog device and dtype (starting at ``device`` and ``dtype``) → its roofline with the model's
    prediction for square matmuls."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from x4lib.book import plots
    ids = [d.id for d in specs.load_catalog().values() if "memory_bw_gb_s" in d.values and d.dtypes()]

    def show(device, dtype):
        dev = specs.get(device)
        if dtype not in dev.dtypes():
            print(f"{device} has no published {dtype} peak; it has: {', '.join(dev.dtypes())}")
            return
        roof = device_roofline(device, dtype)
        try:
            series = [("prediction", f"{dtype} matmul model (n³)", predicted_points(device, dtype))]
        except matmul.NoModelError:
            series = []  # no family of the matmul model covers this device: the roofline alone
        fig, ax = plots.new_axes()
        plots.roofline_panel(ax, [roof], series)
        plt.show()

    return w.interactive(show, device=w.Dropdown(options=ids, value=device, description="device"),
                         dtype=w.Dropdown(options=list(kernels.DTYPE_BYTES), value=dtype, description="dtype"))


def summary_markdown(run: Run) -> str:
    """The paragraph about the run shown on the page, as Markdown (a cell's output: its numbers are computed)."""
    from x4lib.book.tables import md_text as t
    s = summary(run)  # every phrase escaped: a run's device name or warning is text, never markup
    peak_txt = (f"Its {t(s.dtype)} peak is {s.peak_gflops:,.0f} GFLOP/s ({t(s.peak_basis)})." if s.peak_gflops
                else f"No {t(s.dtype)} peak is known for it ({t(s.peak_basis)}).")
    return (f"The device detected is **{t(s.name)}**. {peak_txt} The best {t(s.dtype)} matmul reached "
            f"{s.best_gflops:,.1f} GFLOP/s at {t(s.best_shape)}: {t(s.efficiency_text)}. {t(s.independent_check)} "
            f"The run recorded {s.n_warnings} warning(s), listed below.")


def warnings_markdown(run: Run) -> str:
    """The run's warnings as a Markdown list, each escaped (a run's text is never markup)."""
    from x4lib.book.tables import md_text
    return "\n".join(f"- {md_text(w)}" for w in warnings(run)) or "(no warnings)"


PROFILES_DIR = paths.REPO_ROOT / "runners" / "profiles"


def profile(name: str) -> dict:
    """A runner profile's data (runners/profiles/<name>.json): its lab parameters and how to rent it."""
    return json.loads((PROFILES_DIR / f"{name}.json").read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------------- tables

def gap_table(runs, this: Run | None, max_rows: int = 20):
    """The gap table; beyond ``max_rows`` rows, the BF16 rows and the CPU prediction shown, every row collapsed
    below them."""
    from x4lib.book.tables import Col, table, with_details
    rows = gap_rows(runs, this)
    cols = {
        "device": Col("device", wrap=True), "dtype": "dtype", "peak (TFLOP/s)": Col("peak", "TFLOP/s", "{:,.4g}"),
        "peak source": "peak source", "shape": "shape",
        "roofline (TFLOP/s)": Col("roofline", "TFLOP/s", "{:,.4g}"),
        "predicted achievable (TFLOP/s)": Col("predicted achievable", "TFLOP/s", "{:,.4g}"),
        "measured best (TFLOP/s)": Col("measured best", "TFLOP/s", "{:,.4g}"),
        "measured by": Col("measured by", wrap=True), "efficiency": Col("efficiency", fmt="{:.0%}")}
    if len(rows) <= max_rows:
        return table(rows, cols)
    compact = [r for r in rows if r["dtype"] == "bf16" or r["measured best (TFLOP/s)"] is None
               or (this is not None and r["device"] == this.device_label)]
    return with_details(table(compact[:max_rows], cols), table(rows, cols),
                        f"All {len(rows)} rows (every dtype of every run)")


def memory_table(runs=()):
    from x4lib.book.tables import Col, table
    return table(memory_gaps(runs), {"device": Col("device", wrap=True), "kernel": Col("kernel", wrap=True),
                                     "datasheet (GB/s)": Col("datasheet", "GB/s", "{:,.0f}"),
                                     "measured (GB/s)": Col("measured", "GB/s", "{:,.1f}"),
                                     "fraction": Col("fraction of datasheet", fmt="{:.0%}"),
                                     "measured by": Col("measured by", wrap=True)})


def rental_table(devices=None):
    """:func:`rental_rows` of ``devices`` (catalog ids; default: every device priced) as a book table."""
    from x4lib.book.tables import Col, table
    return table(rental_rows(devices), {"device": "device", "listing": Col("listing", wrap=True),
                                 "USD per GPU-hour": Col("price", "USD per GPU-hour", "{:.2f}"), "source": "source",
                                 "accessed": "accessed"})








def cpu_shape_table(run: Run, dtype: str = "fp32"):
    from x4lib.book.tables import Col, table
    return table(cpu_shape_rows(run, dtype), {
        "shape": "shape", "measured / best measured": Col("measured / best measured", fmt="{:.2f}"),
        "model / best model": Col("model / best model", fmt="{:.2f}"), "model bound": "model: bound by"})
