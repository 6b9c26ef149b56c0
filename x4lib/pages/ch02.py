"""Page helpers of chapter 02 (book/02-h100-and-h200.md): tensor cores by generation, number formats, block and
delayed scaling, the FP8 matmul and the format explorer. The models live in ``x4lib.catalog.specs`` (peaks from their
basis) and ``x4lib.catalog.formats``; this module only arranges their results for the page (display units at this
edge: TFLOP/s). Memory, decode and MIG are in ``ch02_memory``; NVLink systems in ``ch02_nvlink``.
"""
from __future__ import annotations

import numpy as np

from x4lib.catalog import formats, specs
from x4lib.book.tables import Col, pivot, sig, table

GENERATIONS = ("a100-sxm-80gb", "h100-sxm", "b200", "b300", "gb300")
TENSOR_PRECISIONS = (("tf32", "TF32"), ("bf16", "BF16"), ("fp8", "FP8"), ("fp4", "FP4"))
ARCH = {"a100-sxm-80gb": "Ampere", "h100-sxm": "Hopper", "h100-pcie": "Hopper", "b200": "Blackwell",
        "b300": "Blackwell Ultra", "gb300": "Blackwell Ultra"}


def _dense_field(dtype: str) -> str:
    return "int8_dense_tops" if dtype == "int8" else f"{dtype}_dense_tflops"


def short(dev: specs.Device | str) -> str:
    """A device's name without the bracketed scope: 'NVIDIA B300 (HGX/DGX B300, ...)' -> 'NVIDIA B300'."""
    d = specs.get(dev) if isinstance(dev, str) else dev
    return d.name.split(" (")[0]


def _value(dev: specs.Device, field: str):
    v = dev.values.get(field)
    return v.value if v else None


# ------------------------------------------------------------------------------------------------ tensor cores

def tensor_core_rows(devices=GENERATIONS) -> list[dict]:
    """Dense FLOP per clock per SM by precision (from each record's peak basis), SMs and the clock behind the peak."""
    rows = []
    for i in devices:
        d = specs.get(i)
        b = d.peak_basis
        row = {"device": short(d), "architecture": ARCH.get(i, ""), "SMs": b["units"], "clock (MHz)": b["clock_mhz"]}
        for key, label in TENSOR_PRECISIONS:
            row[label] = b["flop_per_clock_per_unit"].get(key)
        rows.append(row)
    return rows


def tensor_core_table(devices=GENERATIONS):
    cols = {"device": Col("device", wrap=True), "architecture": "architecture", "SMs": "SMs",
            "clock (MHz)": Col("clock behind the peak", unit="MHz", fmt="{:,.0f}")}
    cols.update({label: Col(f"{label} dense", unit="FLOP/clock/SM", fmt="{:,.0f}") for _, label in TENSOR_PRECISIONS})
    return table(tensor_core_rows(devices), cols)


def peak_rows(devices=GENERATIONS, dtypes=("bf16", "fp8", "fp4")) -> list[dict]:
    """Per device and precision: SMs × FLOP/clk/SM × clock against the catalog's dense figure, and the sparse one."""
    rows = []
    for i in devices:
        d = specs.get(i)
        for dt in dtypes:
            dense = _value(d, _dense_field(dt))
            if dense is None:
                continue
            d_norm = "fp8_e4m3" if dt == "fp8" else dt
            try:
                computed = specs.peak_from_basis(d, d_norm) / 1e12
            except KeyError:
                computed = None
            sparse = _value(d, f"{dt}_sparse_tflops")
            rows.append({"device": short(d), "precision": dt.upper(), "computed dense (TFLOP/s)": computed,
                         "catalog dense (TFLOP/s)": dense, "ratio": computed / dense if computed else None,
                         "catalog 2:4 sparse (TFLOP/s)": sparse, "source": d.values[_dense_field(dt)].source})
    return rows


def peak_table(devices=GENERATIONS):
    return table(peak_rows(devices), {
        "device": Col("device", wrap=True), "precision": "precision",
        "computed dense (TFLOP/s)": Col("SMs × rate × clock", unit="TFLOP/s, dense", fmt="{:,.1f}"),
        "catalog dense (TFLOP/s)": Col("datasheet", unit="TFLOP/s, dense", fmt="{:,.1f}"),
        "ratio": Col("computed / datasheet", fmt="{:.3f}"),
        "catalog 2:4 sparse (TFLOP/s)": Col("datasheet", unit="TFLOP/s, 2:4 sparse", fmt="{:,.0f}"),
        "source": "source"})


def tensor_numbers() -> dict:
    """Glue values for the tensor-core section."""
    a100, h100, b200, b300 = (specs.get(i) for i in ("a100-sxm-80gb", "h100-sxm", "b200", "b300"))
    per = {i: specs.get(i).peak_basis["flop_per_clock_per_unit"] for i in GENERATIONS}
    return {
        "a100_bf16_sm": per["a100-sxm-80gb"]["bf16"], "h100_bf16_sm": per["h100-sxm"]["bf16"],
        "b200_bf16_sm": per["b200"]["bf16"], "b200_fp4_sm": per["b200"]["fp4"],
        "gb300_fp4_sm": per["gb300"]["fp4"], "h100_sms": h100.peak_basis["units"],
        "h100_clock": h100.peak_basis["clock_mhz"], "b200_sms": b200.peak_basis["units"],
        "b200_clock": b200.peak_basis["clock_mhz"],
        "h100_bf16_dense": h100.values["bf16_dense_tflops"].value,
        "h100_bf16_sparse": h100.values["bf16_sparse_tflops"].value,
        "h100_fp8_dense": h100.values["fp8_dense_tflops"].value,
        "h100_fp32": h100.values["fp32_tflops"].value,
        "h100_tensor_over_fp32": h100.values["bf16_dense_tflops"].value / h100.values["fp32_tflops"].value,
        "h100_tf32_over_fp32": h100.values["tf32_dense_tflops"].value / h100.values["fp32_tflops"].value,
        "h100_tflops_per_w": h100.values["bf16_dense_tflops"].value / h100.values["tdp_w"].value,
        "h100_tflops_per_w_sparse": h100.values["bf16_sparse_tflops"].value / h100.values["tdp_w"].value,
        "h100_tdp": h100.values["tdp_w"].value,
        "b200_bf16_dense": b200.values["bf16_dense_tflops"].value,
        "b200_over_h100_bf16": b200.values["bf16_dense_tflops"].value / h100.values["bf16_dense_tflops"].value,
        "b200_fp4_dense": b200.values["fp4_dense_tflops"].value,
        "b200_fp4_sparse": b200.values["fp4_sparse_tflops"].value,
        "gb200_fp4_sparse": specs.get("gb200").values["fp4_sparse_tflops"].value,
        "b300_fp4_dense": b300.values["fp4_dense_tflops"].value,
        "b300_int8_dense": b300.values["int8_dense_tops"].value,
        "b200_int8_dense": b200.values["int8_dense_tops"].value,
        "b300_fp64": b300.values["fp64_tflops"].value, "b200_fp64": b200.values["fp64_tflops"].value,
        "a100_bf16_dense": a100.values["bf16_dense_tflops"].value,
    }


# ---------------------------------------------------------------------------------------------------- formats

def _big(x) -> str:
    """A format's value: 3 significant digits with an exponent from 10⁶, else 4 significant digits without trailing
    decimal zeros (99,840 stays 99,840; 240.0 becomes 240)."""
    if abs(x) >= 1e6:
        return f"{x:.3g}"
    text = sig(4)(x)
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_table(ids=("bf16", "fp16", "fp8_e5m2", "fp8_e4m3", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1")):
    rows = [{**r, "infinity": "yes" if r["infinity"] else "no"} for r in formats.properties_rows(ids)]
    return table(rows, {
        "format": Col("format", wrap=True), "bits": "bits", "exponent bits": "E", "mantissa bits": "M",
        "bias": "bias", "max finite": Col("largest finite", fmt=_big),
        "min normal": Col("smallest normal", fmt="{:.3g}"), "min subnormal": Col("smallest subnormal", fmt="{:.3g}"),
        "eps": Col("spacing just above 1", fmt="{:.3g}"), "binades": Col("range", unit="powers of 2", fmt="{:.1f}"),
        "infinity": "infinity", "NaN codes": "NaN codes"})


def block_table(ids=("mxfp8_e4m3", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "nvfp4")):
    by_id = dict(zip(formats.block_formats(), formats.block_rows()))
    return table([by_id[i] for i in ids], {
        "format": "format", "element": Col("element", wrap=True), "block": Col("block", unit="elements"),
        "scale": Col("block scale", wrap=True), "tensor scale": "tensor scale",
        "bits per element": Col("storage", unit="bits/element", fmt="{:.2f}")})


def ruler_series(ids=("fp4_e2m1", "fp6_e2m3", "fp6_e3m2", "fp8_e4m3", "fp8_e5m2")) -> list:
    return [(formats.get(i).name.split(" (")[0], formats.get(i)._table[0][1:]) for i in ids]


def format_numbers() -> dict:
    e4, e5, e2m1 = formats.get("fp8_e4m3"), formats.get("fp8_e5m2"), formats.get("fp4_e2m1")
    return {"e4m3_max": e4.max_finite, "e5m2_max": e5.max_finite, "e4m3_eps": e4.eps, "e5m2_eps": e5.eps,
            "e4m3_binades": e4.dynamic_range_binades, "e5m2_binades": e5.dynamic_range_binades,
            "e4m3_spacing_300": float(e4.spacing(300.0)), "e2m1_max": e2m1.max_finite,
            "fp4_values": ", ".join(f"{v:g}" for v in e2m1._table[0]), "e4m3_codes": e4.n_finite_codes,
            "e5m2_codes": e5.n_finite_codes, "mxfp4_bits": formats.get_block("mxfp4").bits_per_element,
            "nvfp4_bits": formats.get_block("nvfp4").bits_per_element,
            "mxfp8_bits": formats.get_block("mxfp8_e4m3").bits_per_element}


def torch_agreement(n: int = 100_000, seed: int = 0) -> dict:
    """How many random values our rounding and torch's cast put on the same FP8 value, and what torch does with
    values beyond each format's range (this machine's torch build)."""
    import torch
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10 ** rng.uniform(-4, 4, n)).astype(np.float32).astype(np.float64)
    same = {f: int(np.sum(formats.quantize(x, f, overflow=mode) == formats.torch_cast(x, f)))
            for f, mode in (("fp8_e4m3", "saturate"), ("fp8_e5m2", "ieee"))}
    return {"n": n, "same_e4m3": same["fp8_e4m3"], "same_e5m2": same["fp8_e5m2"],
            "torch_version": torch.__version__,
            "e4m3_of_1e6": formats.torch_overflow("fp8_e4m3", (1e6,))[1e6],
            "e4m3_of_inf": formats.torch_overflow("fp8_e4m3", (float("inf"),))[float("inf")],
            "e5m2_of_1e6": formats.torch_overflow("fp8_e5m2", (1e6,))[1e6]}


TENSOR_ASSUMPTIONS = {"n": 1 << 16, "seed": 0, "t_dof": 3, "outlier_every": 512, "outlier_scale": 50.0}


def error_rows() -> list[dict]:
    return formats.error_rows(n=TENSOR_ASSUMPTIONS["n"], seed=TENSOR_ASSUMPTIONS["seed"])


def error_table(rows=None):
    """SQNR (dB) per scheme (rows, with its storage cost) and tensor kind (columns)."""
    rows = [{**r, "scheme": f"{r['scheme']} ({r['bits']:g} bits)"} for r in (rows or error_rows())]
    return pivot(rows, index=("scheme", Col("scheme (bits per element)", wrap=True)), columns="tensor",
                 values={"sqnr_db": Col("SQNR", unit="dB", fmt="{:.1f}")})


SCHEME_LABELS = {"BF16 cast": "BF16", "FP8 E4M3, per-tensor scale": "E4M3\ntensor",
                 "FP8 E5M2, per-tensor scale": "E5M2\ntensor", "MXFP8 (E4M3), block 32": "MXFP8",
                 "MXFP6 (E2M3), block 32": "MXFP6\nE2M3", "MXFP6 (E3M2), block 32": "MXFP6\nE3M2",
                 "FP4 E2M1, per-tensor scale": "FP4\ntensor", "MXFP4, block 32": "MXFP4", "NVFP4, block 16": "NVFP4"}


def error_series(rows=None):
    """(groups, series) for grouped bars: groups = schemes, one series per tensor kind."""
    rows = rows or error_rows()
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    kinds = list(dict.fromkeys(r["tensor"] for r in rows))
    short = {s: SCHEME_LABELS.get(s, s) for s in schemes}
    series = [(k, [next(r["sqnr_db"] for r in rows if r["tensor"] == k and r["scheme"] == s) for s in schemes])
              for k in kinds]
    return [short[s] for s in schemes], series


def error_numbers(rows=None) -> dict:
    rows = rows or error_rows()
    get = {(r["tensor"], r["scheme"]): r["sqnr_db"] for r in rows}
    return {"sqnr_e4m3_normal": get[("normal", "FP8 E4M3, per-tensor scale")],
            "sqnr_e5m2_normal": get[("normal", "FP8 E5M2, per-tensor scale")],
            "sqnr_bf16_normal": get[("normal", "BF16 cast")],
            "sqnr_fp4_tensor_heavy": get[("heavy-tailed", "FP4 E2M1, per-tensor scale")],
            "sqnr_fp4_tensor_outliers": get[("outliers", "FP4 E2M1, per-tensor scale")],
            "sqnr_mxfp4_heavy": get[("heavy-tailed", "MXFP4, block 32")],
            "sqnr_nvfp4_heavy": get[("heavy-tailed", "NVFP4, block 16")],
            "sqnr_nvfp4_outliers": get[("outliers", "NVFP4, block 16")],
            "sqnr_mxfp4_outliers": get[("outliers", "MXFP4, block 32")],
            "sqnr_mxfp8_outliers": get[("outliers", "MXFP8 (E4M3), block 32")],
            "sqnr_e4m3_outliers": get[("outliers", "FP8 E4M3, per-tensor scale")],
            "sqnr_mxfp8_outliers_roundup": _mx_roundup_sqnr("outliers", "mxfp8_e4m3")}


def _mx_roundup_sqnr(kind: str, fmt: str) -> float:
    a = TENSOR_ASSUMPTIONS
    x = formats.sample(kind, a["n"], a["seed"])
    return formats.sqnr_db(x, formats.quantize_mx(x, fmt, rule="round-up"))


SCALING_ASSUMPTIONS = {"steps": 48, "amax": 2.0, "growth_per_step": 1.0, "spike_step": 16, "spike_factor": 4.0,
                       "history_len": 16}


def scaling_amaxes(a=SCALING_ASSUMPTIONS) -> list[float]:
    """A synthetic amax history: slow growth and one spike (a stated assumption of the page)."""
    out = [a["amax"] * a["growth_per_step"] ** t for t in range(a["steps"])]
    out[a["spike_step"]] *= a["spike_factor"]
    return out


def scaling_trace(a=SCALING_ASSUMPTIONS):
    return formats.delayed_scaling(scaling_amaxes(a), "fp8_e4m3", history_len=a["history_len"])


def scaling_numbers(a=SCALING_ASSUMPTIONS) -> dict:
    steps = scaling_trace(a)
    sat = [s for s in steps if s.saturated]
    after = steps[a["spike_step"] + 1]
    return {"saturated_steps": len(sat), "spike_overshoot": steps[a["spike_step"]].scaled_amax / 448.0,
            "headroom_after": after.headroom,
            "bits_lost_after": float(np.log2(after.headroom)),
            "steps_until_recovered": next((s.step - a["spike_step"] for s in steps[a["spike_step"] + 1:]
                                           if s.headroom < 1.5), None)}


def cpu_fp8_matmul(n: int = 256) -> dict:
    return formats.scaled_mm_error(n)


def fp8_gpu_runs_markdown() -> str:
    """The committed GPU runs of an FP8 matmul (book/runs/fp8mm/*), or a sentence saying there are none."""
    from x4lib.harness import runs
    dirs = runs.committed_dirs("fp8mm")
    if not dirs:
        return ("No GPU run of the FP8 matmul is committed to this book yet, so the page shows no measured FP8 rate "
                "for any GPU; the rates quoted in this chapter are datasheet peaks.")
    return (f"{len(dirs)} GPU run directories are committed under book/runs/fp8mm; their reader is not written yet "
            "(see the chapter's open items).")


# -------------------------------------------------------------------------------------------------- explorer

EXPLORER_FORMATS = ("bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1")


def format_rows(value: float, ids=EXPLORER_FORMATS) -> list[dict]:
    """``value`` rounded to each format (saturating, no scale): the stored value, its relative error and the spacing
    of the format's neighbouring values there."""
    rows = []
    for i in ids:
        f = formats.get(i)
        q = float(formats.quantize([value], f)[0])
        rows.append({"format": f.name.split(" (")[0], "stored": q, "relative error": abs(q - value) / abs(value),
                     "spacing there": float(f.spacing([min(abs(value), f.max_finite)])[0]),
                     "clipped": "yes" if abs(value) > f.max_finite else "no"})
    return rows


def format_value_table(value: float = 300.0, ids=EXPLORER_FORMATS):
    return table(format_rows(value, ids), {
        "format": "format", "stored": Col("stored value", fmt="{:,.6g}"),
        "relative error": Col("relative error", fmt="{:.2%}"), "spacing there": Col("spacing there", fmt="{:,.6g}"),
        "clipped": "clipped to the largest value"})


def format_explorer(value: float = 300.0, ids=EXPLORER_FORMATS):
    """ipywidgets: a value (log slider, starting at ``value``) -> what each format of ``ids`` stores for it, the error
    and the spacing there. In the static book it shows its initial state; the value ruler figure is the fallback."""
    import ipywidgets as w
    from IPython.display import display

    return w.interactive(lambda value: display(format_value_table(value, ids)),
                         value=w.FloatLogSlider(value=value, base=10, min=-6, max=6, step=0.05))

