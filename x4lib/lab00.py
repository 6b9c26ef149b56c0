"""Lab 00's analysis: rooflines per device, model predictions for the sweep's shapes, our measured points,
others' published points, and the gap table. Pure functions over runs (x4lib.runs), the catalog
(x4lib.specs) and the published-measurements file (x4lib/data/published.yaml).
Used in: book/lab-00-roofline.md.
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import yaml

from x4lib import roofline as rl
from x4lib import specs
from x4lib.runs import Run

PUBLISHED_PATH = specs.DATA_DIR / "published.yaml"


@functools.lru_cache(maxsize=1)
def published() -> dict:
    """Others' measurements and rental listings (x4lib/data/published.yaml), dates as strings."""
    return specs.plain(yaml.safe_load(Path(PUBLISHED_PATH).read_text()))


def published_points(device_id: str, kind: str = "matmul") -> list[dict]:
    return [m for m in published().get("measurements", []) if m["device"] == device_id and m["kind"] == kind]


def run_roofline(run: Run, dtype: str) -> rl.Roofline | None:
    """The roofline a run is judged against: its recorded peak (catalog for GPUs, computed for CPUs) and
    the catalog's memory bandwidth, or, for a CPU without one, the run's own best triad bandwidth."""
    peak = run.results["peak_tflops"].get(dtype)
    dev_id = run.results["device"].get("catalog_id")
    if dev_id:
        dev = specs.get(dev_id)
        if peak is None:
            try:
                peak = dev.peak_flop_per_s(dtype) / 1e12
            except specs.UnsupportedDtypeError:
                return None
        if "memory_bw_gb_s" in dev.values:
            return rl.Roofline(dev_id, dtype, "run peak", peak * 1e12, dev.memory_bw_Bps)
    bw = max((m["gb_s_best"] for m in run.results["memory_bw"] if m["status"] == "ok"), default=None)
    if peak is None or bw is None:
        return None
    return rl.Roofline(run.results["device"]["detected_name"], dtype, "computed peak; measured bandwidth",
                       peak * 1e12, bw * 1e9)


def measured_points(run: Run, dtype: str) -> list[dict]:
    """(intensity FLOP/B, best TFLOP/s) of every successful matmul of ``dtype`` in a run."""
    b = specs.DTYPE_BYTES[dtype]
    return [{"x": rl.matmul_intensity(r["m"], r["n"], r["k"], b), "y": r["tflops_best"],
             "shape": f"{r['m']}×{r['n']}×{r['k']}"} for r in run.ok_matmul() if r["dtype"] == dtype]


def i5_peaks_tflops(dtype: str = "fp32") -> dict:
    """The i5-8250U's peak from first principles at its base clock and at its maximum turbo clock."""
    dev = specs.get("i5-8250u")
    base = specs.peak_from_basis(dev, dtype) / 1e12
    turbo = specs.peak_from_basis(dev, dtype, dev.values["max_turbo_ghz"].si) / 1e12
    return {"base": base, "max_turbo": turbo, "base_ghz": dev.values["base_clock_ghz"].value,
            "max_turbo_ghz": dev.values["max_turbo_ghz"].value}


@dataclasses.dataclass(frozen=True)
class GapRow:
    device: str
    dtype: str
    peak_tflops: float
    peak_source: str
    predicted_tflops: float
    measured_tflops: float | None
    measured_by: str
    shape: str

    @property
    def efficiency(self) -> float | None:
        return None if self.measured_tflops is None else self.measured_tflops / self.peak_tflops

    def to_row(self) -> dict:
        return {"device": self.device, "dtype": self.dtype, "peak (TFLOP/s)": round(self.peak_tflops, 3),
                "peak source": self.peak_source, "shape": self.shape,
                "model prediction (TFLOP/s)": round(self.predicted_tflops, 3),
                "measured best (TFLOP/s)": None if self.measured_tflops is None else round(self.measured_tflops, 3),
                "measured by": self.measured_by,
                "efficiency": None if self.efficiency is None else f"{100 * self.efficiency:.0f} %"}


def gap_for_run(run: Run, dtype: str) -> GapRow | None:
    """Our best measured shape of ``dtype`` in a run against its roofline prediction."""
    roof, best = run_roofline(run, dtype), run.best(dtype)
    if roof is None or best is None:
        return None
    pt = rl.point(rl.matmul_flop(best["m"], best["n"], best["k"]),
                  rl.matmul_bytes(best["m"], best["n"], best["k"], specs.DTYPE_BYTES[dtype]), roof)
    cat = run.results["device"].get("catalog_id")
    if cat:
        dev = specs.get(cat)
        src = dev.values[dev.peak_field(dtype)].source
    else:
        src = run.results["peak_basis"]
    return GapRow(run.device_label, dtype, roof.peak_flop_per_s / 1e12, src, pt.attainable_flop_per_s / 1e12,
                  best["tflops_best"], f"us ({run.run_id})", f"{best['m']}×{best['n']}×{best['k']}")


def gap_for_published(device_id: str, dtype: str) -> list[GapRow]:
    """Others' best published matmul on a catalog device against its roofline (cited, theirs)."""
    dev = specs.get(device_id)
    roof = rl.for_device(dev, dtype)
    rows = []
    for m in published_points(device_id):
        if m["dtype"] != dtype:
            continue
        shape = m.get("shape") or {}
        if shape:
            s = (shape["m"], shape["n"], shape["k"])
            pred = rl.point(rl.matmul_flop(*s), rl.matmul_bytes(*s, specs.DTYPE_BYTES[dtype]), roof)
            pred_tflops, shape_txt = pred.attainable_flop_per_s / 1e12, "×".join(map(str, s))
        else:
            pred_tflops, shape_txt = roof.peak_flop_per_s / 1e12, "best found"
        rows.append(GapRow(dev.name, dtype, roof.peak_flop_per_s / 1e12, dev.values[roof.peak_field].source,
                           pred_tflops, m["value"], f"{m['source']} (theirs)", shape_txt))
    return rows


def gap_for_prediction(device_id: str, dtype: str, n: int = 8192) -> GapRow:
    """A device we have not run on: only the model prediction for an n³ matmul."""
    dev = specs.get(device_id)
    roof = rl.for_device(dev, dtype)
    pt = rl.point(rl.matmul_flop(n, n, n), rl.matmul_bytes(n, n, n, specs.DTYPE_BYTES[dtype]), roof)
    return GapRow(dev.name, dtype, roof.peak_flop_per_s / 1e12, dev.values[roof.peak_field].source,
                  pt.attainable_flop_per_s / 1e12, None, "not run (prediction only)", f"{n}×{n}×{n}")


SQUARE_SWEEP = tuple(2**i for i in range(6, 15))  # 64 .. 16384


def predicted_points(roof: rl.Roofline, sizes=SQUARE_SWEEP) -> list[dict]:
    """Model prediction (roofline) for square n³ matmuls of the roof's dtype: {x: FLOP/B, y: TFLOP/s}."""
    b = specs.DTYPE_BYTES[roof.dtype]
    out = []
    for n in sizes:
        pt = rl.point(rl.matmul_flop(n, n, n), rl.matmul_bytes(n, n, n, b), roof)
        out.append({"x": pt.intensity_flop_per_B, "y": pt.attainable_flop_per_s / 1e12, "shape": f"{n}³"})
    return out


def panel_for_run(run: Run, dtypes) -> tuple[list, list]:
    """(rooflines, series) for one run: its roofs, our measured points and the prediction for its shapes."""
    roofs, series = [], []
    for d in dtypes:
        roof = run_roofline(run, d)
        if roof is None:
            continue
        roofs.append(roof)
        series.append(("ours", f"{d} measured: {run.device_label}", measured_points(run, d)))
    return roofs, series


def panel_for_device(device_id: str, dtypes, runs=()) -> tuple[list, list]:
    """(rooflines, series) for a catalog device: predictions, others' published points (cited), and any
    of our runs detected as this device."""
    dev = specs.get(device_id)
    roofs, series = [], []
    for d in dtypes:
        try:
            roof = rl.for_device(dev, d)
        except specs.UnsupportedDtypeError:
            continue
        roofs.append(roof)
        series.append(("prediction", f"{d} model prediction (n³ sweep)", predicted_points(roof)))
        theirs = [m for m in published_points(device_id) if m["dtype"] == d]
        for m in theirs:
            s = m.get("shape") or {}
            x = rl.matmul_intensity(s["m"], s["n"], s["k"], specs.DTYPE_BYTES[d]) if s else roof.ridge_flop_per_B * 10
            series.append(("theirs", f"{d} published [{m['source']}]", [{"x": x, "y": m["value"]}]))
        for run in runs:
            if run.results["device"].get("catalog_id") == device_id:
                series.append(("ours", f"{d} measured: {run.run_id}", measured_points(run, d)))
    return roofs, series


def rental_table():
    """On-demand prices used for the lab budget (x4lib/data/economics.yaml) and other listings
    (x4lib/data/published.yaml), each with its source and the date of the copy read."""
    import pandas as pd

    from x4lib import economics
    rows = []
    for dev_id, v in economics.sourced()["defaults"]["usd_per_gpu_hour"].items():
        rows.append({"catalog_id": dev_id, "USD per GPU-hour": v["value"], "source": v["source"],
                     "accessed": v["accessed"], "used for the budget": True})
    for r in published().get("rental", []):
        rows.append({"catalog_id": r["catalog_id"], "USD per GPU-hour": r["usd_per_gpu_hour"],
                     "source": r["source"], "accessed": r["accessed"], "used for the budget": False,
                     "listing": f"{r['provider']}: {r['sku']}"})
    return pd.DataFrame(rows)


def efficiency_text(run: Run, dtype: str) -> str:
    """The efficiency of a run's best ``dtype`` matmul as a sentence fragment. Above 100 % it is not printed:
    for a CPU it names the sustained clock the measurement implies instead (the clock assumption is wrong)."""
    best, roof = run.best(dtype), run_roofline(run, dtype)
    if best is None or roof is None:
        return "no peak to compare with"
    eff = best["tflops_best"] * 1e12 / roof.peak_flop_per_s
    if eff <= 1:
        return f"{100 * eff:.0f} % of that peak"
    d = run.results["device"]
    if d["kind"] == "cpu" and d.get("cpu_uarch"):
        per_cycle = d["cpu"]["physical_cores"] * d["cpu_uarch"]["flop_per_cycle_per_core"][dtype]
        implied = best["tflops_best"] * 1e12 / per_cycle / 1e9
        return (f"above the computed peak, which implies a sustained clock of at least {implied:.2f} GHz rather "
                f"than the {d['cpu']['mhz_reported']:.0f} MHz the CPU reports: the clock assumption is what is "
                f"wrong, not the kernel, so no efficiency is printed")
    return "above the catalog peak: check the peak's precision (dense vs sparse) and the device detected"


def memory_gaps(runs=()) -> list[dict]:
    """Memory-bound kernels against the catalog's memory bandwidth: others' published results (cited)
    and our runs on catalog devices."""
    rows = []
    for m in published().get("measurements", []):
        if m["kind"] != "memory_bw":
            continue
        dev = specs.get(m["device"])
        bw = dev.values["memory_bw_gb_s"].value
        rows.append({"device": dev.name, "kernel": m["id"],
                     "datasheet (GB/s)": bw, "measured (GB/s)": m["value"], "fraction": f"{m['value'] / bw:.0%}",
                     "measured by": f"{m['source']} (theirs)"})
    for run in runs:
        cat = run.results["device"].get("catalog_id")
        if not cat or "memory_bw_gb_s" not in specs.get(cat).values:
            continue
        bw = specs.get(cat).values["memory_bw_gb_s"].value
        for m in run.results["memory_bw"]:
            if m["status"] == "ok":
                rows.append({"device": run.device_label, "kernel": m["kernel"], "datasheet (GB/s)": bw,
                             "measured (GB/s)": round(m["gb_s_best"], 1), "fraction": f"{m['gb_s_best'] / bw:.0%}",
                             "measured by": f"us ({run.run_id})"})
    return rows


def expected_sweep_s(params: dict, device_id: str) -> float:
    """Model prediction of the measuring time of a profile's sweep on a catalog device: for every dtype the
    device has and every shape, (warm-up + repeats) × the roofline time, plus the memory kernels at the
    datasheet bandwidth. A lower bound: launch overheads, allocation and set-up are not counted."""
    from x4lib import bench
    dev = specs.get(device_id)
    calls = params["warmup"] + params["repeats"]
    total = 0.0
    for d in params["dtypes"]:
        try:
            roof = rl.for_device(dev, d)
        except specs.UnsupportedDtypeError:
            continue
        for m, n, k in bench.square_and_skinny_shapes(params["max_n"]):
            pt = rl.point(rl.matmul_flop(m, n, k), rl.matmul_bytes(m, n, k, specs.DTYPE_BYTES[d]), roof)
            total += calls * pt.time_s
    per_elem = {"copy": 2, "triad": 3}
    for kern in params["memory_kernels"]:
        total += calls * per_elem[kern] * params["memory_elements"] * 4 / dev.memory_bw_Bps
    return total
