"""Page helpers of Lab 00's model check (book/lab-00-roofline.md, "Checking the model against others'
measurements" and "Shape dependence"): the matmul model's constants per family, the leave-one-device-out
validation against published best-shape rates (table, figure series, summary) and the published shape sweeps
against the model. Everything compared here was measured by others and is cited (``x4lib.catalog.published``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from x4lib.compute import matmul
from x4lib.compute import matmul_data, matmul_validation as mv
from x4lib.catalog import published, specs

# ------------------------------------------------------------------------------- the matmul model, validated

def family_rows(families=None) -> list[dict]:
    """The model's constants per family (x4lib/data/matmul.yaml) and the η calibrated now, for a table;
    ``families``: family ids, in the order shown (default: every family of matmul.yaml)."""
    from x4lib.book.tables import fmt_list
    c = matmul.constants()
    rows = []
    for fam in (c.families.values() if families is None else [c.families[f] for f in families]):
        units = sorted({matmul_data.units_of(specs.get(d), fam) for d in fam.devices})
        by_dev: dict[str, list[float]] = {}
        for k in fam.clocks:
            by_dev.setdefault(k.device, []).append(k.sustained_hz / 1e6)
        clocks = [f"{d} {min(v):.0f} MHz" if min(v) == max(v) else f"{d} {min(v):.0f}–{max(v):.0f} MHz"
                  for d, v in by_dev.items()]
        eta = matmul.eta_for(fam.id)
        eta8 = matmul.eta_for(fam.id, precision="fp8")
        rows.append({
            "family": fam.name, "units": f"{fmt_list(units)} {fam.unit_name}s",
            "tiles": fmt_list(f"{a}×{b}" for a, b in fam.tiles["default"]) if fam.tiles_modelled else "not modelled",
            "sourced clocks": fmt_list(clocks) if clocks else "none published",
            "t0 (µs)": fam.overhead_s * 1e6, "tL (µs)": fam.launch_floor_s * 1e6 or None,
            "tp (µs)": fam.tile_latency_s * 1e6 or None, "η": eta.value,
            "η FP8": eta8.value if eta8.precision == "fp8" else None,
            "η from": {"family": "its devices", "other families": "other families",
                       "uncalibrated": "not calibrated"}[eta.how]})
    return rows


def validation_rows(use_clock: bool = True) -> list[dict]:
    """Every published best-shape rate against the leave-one-device-out prediction (x4lib.compute.matmul_validation.leave_one_out)."""
    out = []
    for c in mv.leave_one_out(use_clock):
        m = c.measurement
        out.append({"device": specs.get(m.device).name, "dtype": m.dtype, "shape": m.shape_text,
                    "how found": m.search, "measured (TFLOP/s)": c.measured_flop_per_s / 1e12,
                    "predicted (TFLOP/s)": c.predicted_flop_per_s / 1e12, "error": c.error,
                    "measured by": f"{m.source} (theirs)", "id": m.id, "device_id": m.device})
    return out


def validation_by_device(use_clock: bool = True) -> list[dict]:
    """One row per accelerator: its rows, median and worst error of the leave-one-out predictions."""
    by: dict[str, list[dict]] = {}
    for r in validation_rows(use_clock):
        by.setdefault(r["device_id"], []).append(r)
    out = []
    for dev_id, rows in by.items():
        errs = sorted((r["error"] for r in rows), key=abs)
        out.append({"device": rows[0]["device"], "published rates": len(rows),
                    "median |error|": float(np.median([abs(e) for e in errs])), "largest error": errs[-1],
                    "calibrated on": matmul.eta_for(matmul.constants().family_of(dev_id).id,
                                                    frozenset({dev_id}), use_clock).how})
    return out


@dataclasses.dataclass(frozen=True)
class ValidationSummary:
    """The validation's headline (fractions, not %), with and without the sourced sustained clocks."""
    n_rows: int
    n_devices: int
    median_abs_error: float
    median_abs_error_by_device: float
    worst_id: str
    worst_error: float
    no_clock_median_abs_error: float
    per_device: dict
    per_device_no_clock: dict


def validation_summary() -> ValidationSummary:
    s = mv.summarise_best_shape(mv.leave_one_out())
    s0 = mv.summarise_best_shape(mv.leave_one_out(use_clock=False))
    return ValidationSummary(s.n_rows, s.n_devices, s.median_abs_error, s.median_abs_error_by_device,
                             s.worst.measurement.id, s.worst.error, s0.median_abs_error, dict(s.per_device),
                             dict(s0.per_device))


def validation_series() -> list[tuple[str, str, list[dict]]]:
    """(kind, label, points {x: measured, y: predicted, label}) per source, for the predicted-against-measured
    figure: others' measurements, hollow, cited in the label."""
    groups: dict[str, list[dict]] = {}
    for c in mv.leave_one_out():
        m = c.measurement
        groups.setdefault(m.source, []).append({"x": c.measured_flop_per_s / 1e12, "y": c.predicted_flop_per_s / 1e12,
                                                "label": m.device})
    return [("theirs", f"published by others [{key}]", pts) for key, pts in groups.items()]


def sweep_series(sweep_id: str) -> list[tuple[str, str, list[dict]]]:
    """A published shape sweep (hollow, cited; a digitised one says so) beside the model's prediction (dashed),
    as {x: n, y: TFLOP/s}."""
    sw = next(s for s in published.load()["matmul_sweeps"] if s["id"] == sweep_id)
    sizes = [p[0] for p in sw["points"]]
    kind_label = "digitised from the figure" if sw.get("digitized") else "published"
    pts = matmul.square_sweep(sw["device"], sw["dtype"], sizes)
    return [("theirs", f"{sw['device']} {sw['dtype']} {kind_label} [{sw['source']}]",
             [{"x": n, "y": v} for n, v in sw["points"]]),
            ("prediction", f"{sw['device']} {sw['dtype']} matmul model",
             [{"x": p.m, "y": p.rate_flop_per_s / 1e12} for p in pts])]


def sweep_checks() -> list[dict]:
    """Per published sweep: its points against the model (median and largest |error|). A digitised sweep is
    summarised the same way but flagged; its values are never tabulated."""
    out = []
    for sw in published.load()["matmul_sweeps"]:
        preds = matmul.square_sweep(sw["device"], sw["dtype"], [p[0] for p in sw["points"]])
        errs = [p.rate_flop_per_s / 1e12 / v - 1 for p, (_, v) in zip(preds, sw["points"])]
        small = [e for (n, _), e in zip(sw["points"], errs) if n <= 1024]
        large = [e for (n, _), e in zip(sw["points"], errs) if n >= 4096]
        out.append({"sweep": sw["id"], "device": sw["device"], "dtype": sw["dtype"],
                    "sizes": f"{sw['points'][0][0]}³ to {sw['points'][-1][0]}³ ({len(errs)})",
                    "median |error|": float(np.median(np.abs(errs))),
                    "error at n ≤ 1024": float(np.median(small)) if small else None,
                    "median error at n ≥ 4096": float(np.median(large)) if large else None,
                    "digitized": bool(sw.get("digitized")), "source": sw["source"]})
    return out


def family_table(families=None):
    """:func:`family_rows` of ``families`` (ids; default: every family) as a book table."""
    from x4lib.book.tables import Col, table
    return table(family_rows(families), {
        "family": Col("family", wrap=True), "units": Col("parallel units", wrap=True), "tiles": Col("tiles", wrap=True),
        "sourced clocks": Col("sourced clocks", wrap=True), "t0 (µs)": Col("t₀", "µs", "{:.0f}"),
        "tL (µs)": Col("launch floor", "µs", "{:.1f}"), "tp (µs)": Col("pipeline fill per wave", "µs", "{:.2f}"),
        "η": Col("η", fmt="{:.3f}"), "η from": "η calibrated on"})


def validation_table(use_clock: bool = True):
    """Per accelerator (compact), with every published rate and its prediction collapsed below."""
    from x4lib.book.tables import Col, table, with_details
    compact = table(validation_by_device(use_clock), {
        "device": Col("device", wrap=True), "published rates": "published rates",
        "median |error|": Col("median |error|", fmt="{:.1%}"), "largest error": Col("largest error", fmt="{:+.1%}"),
        "calibrated on": "η calibrated on"})
    full = table(validation_rows(use_clock), {
        "device": Col("device", wrap=True), "dtype": "dtype", "shape": Col("shape", wrap=True),
        "how found": Col("how the shape was found", wrap=True),
        "measured (TFLOP/s)": Col("measured", "TFLOP/s", "{:,.0f}"),
        "predicted (TFLOP/s)": Col("predicted", "TFLOP/s", "{:,.0f}"), "error": Col("error", fmt="{:+.1%}"),
        "measured by": Col("measured by", wrap=True)})
    return with_details(compact, full, "Every published rate, measured and predicted (leave-one-device-out)")


def sweep_table(sweeps=None):
    """Published sweeps measured by others against the model (the digitised sweep is left to the figure, whatever
    ``sweeps`` names); ``sweeps``: sweep ids of published.yaml, in its order (default: every sweep)."""
    from x4lib.book.tables import Col, table
    checks = sweep_checks()
    if unknown := set(sweeps or ()) - {r["sweep"] for r in checks}:
        raise ValueError(f"no published sweep {', '.join(sorted(unknown))}")
    rows = [r for r in checks if not r["digitized"] and (sweeps is None or r["sweep"] in sweeps)]
    return table(rows, {"device": "device", "dtype": "dtype", "sizes": "square sizes",
                        "median |error|": Col("median |error|", fmt="{:.0%}"),
                        "error at n ≤ 1024": Col("error at 1024³ and below", fmt="{:+.0%}"),
                        "median error at n ≥ 4096": Col("median error from 4096³", fmt="{:+.0%}"),
                        "source": "measured by (theirs)"})


# ------------------------------------------------------------------- shapes the model never saw, per class

def shape_class_table(scored=None):
    """x4lib.compute.matmul_validation.class_rows of the ``scored`` rows (default: mv.scored_all()) as a book table."""
    from x4lib.book.tables import Col, table
    return table(mv.class_rows(scored), {
        "class": "shape class", "rows": "rows", "ours": "ours", "theirs": "theirs",
        "median |error|, device held out": Col("median |error|, device held out", fmt="{:.0%}"),
        "median |error|, source held out": Col("median |error|, source held out", fmt="{:.0%}"),
        "median error (signed)": Col("median error (signed; + optimistic)", fmt="{:+.0%}")})


def timing_table(shape_class: str | None = None, scored=None):
    """x4lib.compute.matmul_validation.timing_rows (one class, or all) as a book table: what each timing measures."""
    from x4lib.book.tables import Col, table
    return table(mv.timing_rows(shape_class, scored), {
        "timing": "timing", "measures": "what it measures", "rows": "rows",
        "median |error|, device held out": Col("median |error|, device held out", fmt="{:.0%}"),
        "median |error|, source held out": Col("median |error|, source held out", fmt="{:.0%}"),
        "median error (signed)": Col("median error (signed; + optimistic)", fmt="{:+.0%}")})


def graph_pairs(runs) -> list[dict]:
    """Each small square of the harness-4 runs (max dimension ≤ 1024) back to back and as a CUDA graph [µs]: the
    host's share is the difference."""
    out = []
    for run in runs:
        for r in run.results.get("matmul", []):
            if r.get("graph_best_s") and r["m"] == r["n"] == r["k"] <= 1024:
                out.append({"device": run.device["detected_name"], "dtype": r["dtype"], "shape": f"{r['m']}³",
                            "back to back (µs)": r["best_s"] * 1e6, "CUDA graph (µs)": r["graph_best_s"] * 1e6,
                            "host's share": 1 - r["graph_best_s"] / r["best_s"]})
    return out


def graph_pairs_table(runs, dtypes=("bf16", "fp8_e4m3")):
    """:func:`graph_pairs` in some dtypes as a book table."""
    from x4lib.book.tables import Col, table
    return table([r for r in graph_pairs(runs) if r["dtype"] in dtypes], {
        "device": "device", "dtype": "dtype", "shape": "shape",
        "back to back (µs)": Col("back to back (µs)", fmt="{:.1f}"), "CUDA graph (µs)": Col("CUDA graph (µs)", fmt="{:.2f}"),
        "host's share": Col("host's share", fmt="{:.0%}")})


def class_breakdown_table(shape_class: str):
    """x4lib.compute.matmul_validation.class_breakdown as a book table."""
    from x4lib.book.tables import Col, table
    return table(mv.class_breakdown(shape_class), {
        "device": "device", "dtype": "dtype", "timing": "timing", "rows": "rows",
        "median error (signed)": Col("median error (signed; + optimistic)", fmt="{:+.0%}")})


def class_group_error(shape_class: str, device: str, dtypes: tuple[str, ...], timing: str = "queued") -> float:
    """The median signed error of one class's rows on a device in some dtypes and one timing (device held out)."""
    import statistics
    xs = [s.error("device") for s in mv.scored_all() if s.row.shape_class == shape_class
          and s.row.device == device and s.row.dtype in dtypes and s.row.timing == timing]
    if not xs:
        raise ValueError(f"no {shape_class} rows on {device} in {', '.join(dtypes)} timed {timing}")
    return statistics.median(xs)


def shape_dtype_table(scored=None):
    """x4lib.compute.matmul_validation.dtype_rows of the ``scored`` rows (default: mv.scored_all()) as a book table."""
    from x4lib.book.tables import Col, table
    return table(mv.dtype_rows(scored), {
        "dtype": "dtype", "rows": "rows",
        "median |error|, device held out": Col("median |error|, device held out", fmt="{:.0%}"),
        "median |error|, source held out": Col("median |error|, source held out", fmt="{:.0%}"),
        "median error (signed)": Col("median error (signed; + optimistic)", fmt="{:+.0%}")})


def worst_shape_table(n: int = 10):
    from x4lib.book.tables import Col, table
    return table(mv.worst_rows(n), {
        "source": Col("measured by", wrap=True), "device": "device", "dtype": "dtype", "shape": "shape",
        "class": "class", "measured (TFLOP/s)": Col("measured", "TFLOP/s", "{:,.4g}"),
        "predicted (TFLOP/s)": Col("predicted", "TFLOP/s", "{:,.4g}"), "error": Col("error", fmt="{:+.0%}"),
        "model bound": "model: bound by"})
