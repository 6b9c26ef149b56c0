"""Page helpers of chapter 02 (book/02-h100-and-h200.md): the tables, figure series, glue values and explorer of the
H100/H200/Blackwell chapter. The models live in ``x4lib.catalog.specs`` (peaks from their basis), ``x4lib.catalog.formats``,
``x4lib.serving.inference``, ``x4lib.training.memory``, ``x4lib.network.nvlink`` and ``x4lib.compute.mig``; this module only arranges their results
for the page (display units at this edge: TFLOP/s, GB/s, GB = 1e9 B).
"""
from __future__ import annotations

import numpy as np

from x4lib.catalog import formats, specs
from x4lib.serving import inference
from x4lib.training import memory
from x4lib.compute import mig
from x4lib.network import nvlink
from x4lib.book.tables import Col, pivot, sig, table

GENERATIONS = ("a100-sxm-80gb", "h100-sxm", "b200", "b300", "gb300")
HBM_DEVICES = ("a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200", "b300", "gb300")
PLAN_DEVICES = ("h100-sxm", "h200-sxm", "b200")
VARIANTS = ("h100-sxm", "h100-pcie", "h100-nvl")
TENSOR_PRECISIONS = (("tf32", "TF32"), ("bf16", "BF16"), ("fp8", "FP8"), ("fp4", "FP4"))
KV_MODELS = ("llama2-7b", "llama3-8b", "mistral-7b", "mixtral-8x7b", "llama3-70b", "llama3-405b", "deepseek-v3")
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
    return f"{x:.3g}" if abs(x) >= 1e6 else sig(4)(x).rstrip("0").rstrip(".")


def format_table():
    rows = [{**r, "infinity": "yes" if r["infinity"] else "no"} for r in formats.properties_rows()]
    return table(rows, {
        "format": Col("format", wrap=True), "bits": "bits", "exponent bits": "E", "mantissa bits": "M",
        "bias": "bias", "max finite": Col("largest finite", fmt=_big),
        "min normal": Col("smallest normal", fmt="{:.3g}"), "min subnormal": Col("smallest subnormal", fmt="{:.3g}"),
        "eps": Col("spacing just above 1", fmt="{:.3g}"), "binades": Col("range", unit="powers of 2", fmt="{:.1f}"),
        "infinity": "infinity", "NaN codes": "NaN codes"})


def block_table():
    return table(formats.block_rows(), {"format": "format", "element": Col("element", wrap=True),
                                        "block": Col("block", unit="elements"), "scale": Col("block scale", wrap=True),
                                        "tensor scale": "tensor scale",
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


# -------------------------------------------------------------------------------------------------------- HBM

def hbm_rows(devices=HBM_DEVICES) -> list[dict]:
    rows = []
    for i in devices:
        d = specs.get(i)
        mem, bw = d.si("memory_gb"), d.memory_bw_Bps
        mv, bv = d.values["memory_gb"], d.values["memory_bw_gb_s"]
        others = [f"{v / 1e9:,.0f} GB ({src})" for v, src, _ in mv.conflicts_si()]
        others += [f"{v / 1e9:,.0f} GB/s ({src})" for v, src, _ in bv.conflicts_si()]
        rows.append({"device": short(d), "memory (GB)": mem / 1e9, "bandwidth (GB/s)": bw / 1e9,
                     "read all once (ms)": mem / bw * 1e3,
                     "BF16 ridge (FLOP/B)": d.peak_flop_per_s("bf16") / bw,
                     "source": mv.source if mv.source == bv.source else f"{mv.source}; {bv.source}",
                     "other sourced figures": "; ".join(others) or "—"})
    return rows


def hbm_conflicts(device_id: str = "b200") -> dict:
    """The kept memory and bandwidth figures of a device beside the other sourced ones (GB, GB/s)."""
    d = specs.get(device_id)
    mv, bv = d.values["memory_gb"], d.values["memory_bw_gb_s"]
    return {"mem_gb": mv.si / 1e9, "mem_source": mv.source, "bw_gb_s": bv.si / 1e9, "bw_source": bv.source,
            "mem_others": {src: v / 1e9 for v, src, _ in mv.conflicts_si()},
            "bw_others": {src: v / 1e9 for v, src, _ in bv.conflicts_si()}}


def hbm_table(devices=HBM_DEVICES):
    return table(hbm_rows(devices), {
        "device": Col("device", wrap=True), "memory (GB)": Col("memory", unit="GB, vendor", fmt="{:,.0f}"),
        "bandwidth (GB/s)": Col("bandwidth", unit="GB/s", fmt="{:,.0f}"),
        "read all once (ms)": Col("time to read all memory once", unit="ms", fmt="{:.1f}"),
        "BF16 ridge (FLOP/B)": Col("BF16 dense ridge", unit="FLOP/B", fmt="{:.0f}"),
        "source": Col("source (memory; bandwidth)", wrap=True),
        "other sourced figures": Col("other sourced figures, not kept", wrap=True)})


def kv_rows(models=KV_MODELS, context: int = 8192, dtype: str = "bf16") -> list[dict]:
    rows = []
    for m in models:
        c = inference.get(m)
        kv = inference.model_kv_cache(c, context, 1, dtype)
        rows.append({"model": c.name, "attention": c.attention.upper(),
                     "KV heads": c.kv_heads if c.attention != "mla" else None,
                     "per token (KiB)": kv.bytes_per_token / 1024,
                     "tokens cached": kv.tokens_cached, "one sequence (GB)": kv.total_gb,
                     "parameters (billions)": inference.param_counts(c)["total"] / 1e9, "source": c.source})
    return rows


def kv_table(models=KV_MODELS, context: int = 8192, dtype: str = "bf16"):
    return table(kv_rows(models, context, dtype), {
        "model": Col("model", wrap=True), "attention": "attention", "KV heads": Col("KV heads", fmt="{:.0f}"),
        "per token (KiB)": Col("KV cache per token", unit="KiB", fmt="{:,.1f}"),
        "tokens cached": Col("tokens cached", fmt="{:,}"),
        "one sequence (GB)": Col("one sequence", unit="GB", fmt="{:.2f}"),
        "parameters (billions)": Col("parameters (computed)", unit="billions", fmt="{:,.1f}"), "source": "source"})


def decode_rows(model: str = "llama3-70b", devices=("h100-sxm", "h200-sxm", "b200"), contexts=(1024, 8192, 32768),
                weight_dtype: str = "bf16", gpus: int = 8) -> list[dict]:
    """Per device and context: ridge, the large-batch intensity, the crossover batch, the largest batch that fits,
    and the throughput bound at batch 1 and at that batch."""
    rows = []
    for dev in devices:
        d = specs.get(dev)
        cdt = inference.compute_dtype_for(d, weight_dtype)
        ridge = d.peak_flop_per_s(cdt) / d.memory_bw_Bps
        for ctx in contexts:
            cross = inference.crossover_batch(model, dev, ctx, weight_dtype, gpus=gpus)
            cap = inference.max_batch(model, dev, ctx, weight_dtype, gpus=gpus)
            one = inference.decode_step(model, dev, 1, ctx, weight_dtype, gpus=gpus)
            at_cap = inference.decode_step(model, dev, cap, ctx, weight_dtype, gpus=gpus) if cap else None
            rows.append({"device": short(d), "context": ctx, "ridge": ridge,
                         "intensity": inference.asymptotic_intensity(model, ctx),
                         "crossover": cross if cross is not None else "never",
                         "max batch": cap if cap else "weights do not fit",
                         "tokens/s at batch 1": one.tokens_per_s,
                         "tokens/s at max batch": at_cap.tokens_per_s if at_cap else None,
                         "bound at max batch": at_cap.bound if at_cap else "—"})
    return rows


def decode_table(model: str = "llama3-70b", devices=("h100-sxm", "h200-sxm", "b200"), contexts=(1024, 8192, 32768),
                 weight_dtype: str = "bf16", gpus: int = 8):
    return table(decode_rows(model, devices, contexts, weight_dtype, gpus), {
        "device": Col("device", wrap=True), "context": Col("context", unit="tokens", fmt="{:,}"),
        "ridge": Col("ridge", unit="FLOP/B", fmt="{:.0f}"),
        "intensity": Col("large-batch intensity", unit="FLOP/B", fmt="{:.0f}"),
        "crossover": Col("compute-bound from batch"), "max batch": Col("largest batch that fits"),
        "tokens/s at batch 1": Col("batch 1", unit="tokens/s", fmt="{:,.0f}"),
        "tokens/s at max batch": Col("largest batch", unit="tokens/s", fmt="{:,.0f}"),
        "bound at max batch": "bound there"})


def decode_series(model: str = "llama3-8b", devices=("a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200"),
                  context: int = 8192, weight_dtype: str = "bf16", max_b: int = 4096):
    """Curves (label, batches, tokens/s) up to the largest batch that fits, and the capacity marks."""
    curves, marks = [], []
    for dev in devices:
        cap = inference.max_batch(model, dev, context, weight_dtype)
        if cap < 1:
            continue
        top = min(cap, max_b)
        batches = sorted(set(np.unique(np.geomspace(1, top, 40).astype(int)).tolist() + [top]))
        steps = inference.decode_curve(model, dev, context, batches, weight_dtype)
        curves.append((short(dev), batches, [s.tokens_per_s for s in steps]))
        if cap <= max_b:
            marks.append((dev, cap, steps[-1].tokens_per_s))
    return curves, marks


def decode_numbers() -> dict:
    s = {dev: inference.decode_step("llama3-70b", dev, 1, 8192, gpus=1) for dev in ("h100-sxm", "h200-sxm")}
    h100_8b = inference.decode_step("llama3-8b", "h100-sxm", 1, 8192)
    h200_8b = inference.decode_step("llama3-8b", "h200-sxm", 1, 8192)
    kv70 = inference.model_kv_cache("llama3-70b", 8192, 1)
    p70 = inference.param_counts("llama3-70b")
    return {
        "llama70_weights_gb": inference.weight_bytes("llama3-70b") / 1e9,
        "llama70_params_b": p70["total"] / 1e9,
        "llama70_kv_token_kib": kv70.bytes_per_token / 1024,
        "llama70_kv_8k_gb": kv70.total_gb,
        "llama2_kv_token_kib": inference.model_kv_bytes_per_token("llama2-7b") / 1024,
        "llama3_8b_kv_token_kib": inference.model_kv_bytes_per_token("llama3-8b") / 1024,
        "deepseek_kv_token_kib": inference.model_kv_bytes_per_token("deepseek-v3") / 1024,
        "deepseek_params_b": inference.param_counts("deepseek-v3")["total"] / 1e9,
        "deepseek_active_b": inference.param_counts("deepseek-v3")["active"] / 1e9,
        "h100_8b_tps": h100_8b.tokens_per_s, "h200_8b_tps": h200_8b.tokens_per_s,
        "h200_over_h100_8b": h200_8b.tokens_per_s / h100_8b.tokens_per_s,
        "h200_over_h100_bw": specs.get("h200-sxm").memory_bw_Bps / specs.get("h100-sxm").memory_bw_Bps,
        "h100_8b_weight_share": h100_8b.weight_read_B / h100_8b.bytes_moved,
        "cross_70b_h100_1k": inference.crossover_batch("llama3-70b", "h100-sxm", 1024),
        "intensity_8b_8k": inference.asymptotic_intensity("llama3-8b", 8192),
        "h100_ridge": specs.get("h100-sxm").peak_flop_per_s("bf16") / specs.get("h100-sxm").memory_bw_Bps,
        "h100_70b_fits": bool(s["h100-sxm"].fits), "h200_70b_fits": bool(s["h200-sxm"].fits),
        "maxb_8b_h100": inference.max_batch("llama3-8b", "h100-sxm", 8192),
        "maxb_8b_h200": inference.max_batch("llama3-8b", "h200-sxm", 8192),
        **_short_context_numbers(),
    }


def _short_context_numbers() -> dict:
    rows = {r["device"]: r for r in decode_rows(devices=("h100-sxm", "h200-sxm"), contexts=(1024,))}
    h100, h200 = rows[short("h100-sxm")], rows[short("h200-sxm")]
    return {"short_h100_tps": h100["tokens/s at max batch"], "short_h200_tps": h200["tokens/s at max batch"],
            "short_h100_batch": h100["max batch"], "short_h200_batch": h200["max batch"]}


# ------------------------------------------------------------------------------------------------ memory plans

TRAIN_ASSUMPTIONS = {"seq": 4096, "micro_batch": 1, "recompute": "full", "optimizer": "adam", "precision": "bf16"}
TRAIN_MODELS = ("llama3-8b", "mistral-7b", "llama3-70b", "mixtral-8x7b", "llama3-405b")


def _train_plan(model: str, gpus: int, zero: int, a=TRAIN_ASSUMPTIONS) -> memory.MemoryPlan:
    c = inference.get(model)
    return memory.training_plan(inference.param_counts(c)["total"], gpus, zero, a["optimizer"], a["precision"],
                                layers=c.layers, hidden=c.hidden, seq=a["seq"], micro_batch=a["micro_batch"],
                                recompute=a["recompute"], heads=c.heads)


def training_fit_rows(models=TRAIN_MODELS, devices=PLAN_DEVICES) -> list[dict]:
    """Full training (mixed-precision Adam, full recomputation) per GPU on 1 GPU and on 8 GPUs with ZeRO-3."""
    rows = []
    for m in models:
        for gpus, zero, label in ((1, 0, "1 GPU"), (8, 3, "8 GPUs, ZeRO-3")):
            plan = _train_plan(m, gpus, zero)
            row = {"model": inference.get(m).name, "layout": label, "per GPU (GB)": plan.total_B / 1e9}
            row.update({specs.get(d).name: "fits" if plan.total_B <= memory.capacity_B(specs.get(d)) else "no"
                        for d in devices})
            rows.append(row)
    return rows


def training_fit_table(models=TRAIN_MODELS, devices=PLAN_DEVICES):
    cols = {"model": Col("model", wrap=True), "layout": "layout",
            "per GPU (GB)": Col("per GPU", unit="GB", fmt="{:,.0f}")}
    cols.update({specs.get(d).name: specs.get(d).name for d in devices})
    return table(training_fit_rows(models, devices), cols)


INFER_ASSUMPTIONS = {"context": 8192, "batch": 8, "workspace_fraction": 0.10}
INFER_MODELS = ("llama3-8b", "mixtral-8x7b", "llama3-70b", "llama3-405b", "deepseek-v3")


SHORT = {"h100-sxm": "H100", "h200-sxm": "H200", "b200": "B200"}


def inference_fit_rows(models=INFER_MODELS, devices=PLAN_DEVICES, a=INFER_ASSUMPTIONS) -> list[dict]:
    """Rows model × GPU count; one column per device × weight precision: 'fits' or 'no'."""
    rows = []
    for m in models:
        for gpus in (1, 8):
            row = {"model": inference.get(m).name, "GPUs": gpus}
            for d in devices:
                for wd in ("bf16", "fp8_e4m3"):
                    plan = memory.inference_plan(m, specs.get(d), gpus, a["context"], a["batch"], wd, "bf16",
                                                 a["workspace_fraction"])
                    key = f"{SHORT.get(d, d)} {wd.split('_')[0].upper()}"
                    row[key] = "fits" if plan.total_B <= memory.capacity_B(specs.get(d)) else "no"
            rows.append(row)
    return rows


def inference_fit_table(models=INFER_MODELS, devices=PLAN_DEVICES):
    rows = inference_fit_rows(models, devices)
    cols = {"model": Col("model", wrap=True), "GPUs": "GPUs (tensor parallel)"}
    cols.update({k: f"{k} weights" for k in rows[0] if k not in cols})
    return table(rows, cols)


def plan_bars(model: str = "llama3-70b", gpus_list=(8, 16, 32, 64), zero: int = 3, tp: int = 1):
    """Stacked per-GPU training memory for one model over GPU counts (GB), and device capacities as lines."""
    c = inference.get(model)
    labels, parts = [], {"weights": [], "gradients": [], "optimizer": [], "activations": []}
    a = TRAIN_ASSUMPTIONS
    for g in gpus_list:
        p = memory.training_plan(inference.param_counts(c)["total"], g, zero, a["optimizer"], a["precision"], tp=tp,
                                 layers=c.layers, hidden=c.hidden, seq=a["seq"], micro_batch=a["micro_batch"],
                                 recompute=a["recompute"], heads=c.heads)
        labels.append(f"{g} GPUs")
        for k, v in p.per_gpu_bytes().items():
            if k in parts:
                parts[k].append(v / 1e9)
    lines = [(f"{short(d)} ({memory.capacity_B(specs.get(d)) / 1e9:.0f} GB)", memory.capacity_B(specs.get(d)) / 1e9)
             for d in PLAN_DEVICES]
    return labels, list(parts.items()), lines


def memory_numbers() -> dict:
    p70 = inference.param_counts("llama3-70b")["total"]
    one = _train_plan("llama3-70b", 1, 0)
    eight = _train_plan("llama3-70b", 8, 3)
    cli = memory.training_plan(70e9, 64, 3, tp=8, layers=80, hidden=8192, seq=8192, micro_batch=1,
                               recompute="selective", heads=64)
    none = memory.training_plan(70e9, 64, 3, tp=8, layers=80, hidden=8192, seq=8192, micro_batch=1,
                                recompute="none", heads=64)
    tp_only = memory.training_plan(70e9, 64, 3, tp=8, layers=80, hidden=8192, seq=8192, micro_batch=1,
                                   recompute="selective", heads=64, sequence_parallel=False)
    return {"state_70b_tb": 16 * p70 / 1e12, "train70_1gpu_gb": one.total_B / 1e9,
            "train70_8gpu_gb": eight.total_B / 1e9, "train70_8gpu_act_gb": eight.activations_B / 1e9,
            "cli_total_gb": cli.total_B / 1e9, "cli_act_gb": cli.activations_B / 1e9,
            "none_act_gb": none.activations_B / 1e9, "cli_tp_only_act_gb": tp_only.activations_B / 1e9,
            "cli_tp_only_total_gb": tp_only.total_B / 1e9,
            "seed_70b_fp16_gb": 2 * p70 / 1e9}


# -------------------------------------------------------------------------------------------------- variants

def variant_rows(devices=VARIANTS) -> list[dict]:
    rows = []
    for i in devices:
        d = specs.get(i)
        b = d.peak_basis
        rows.append({"variant": d.name, "SMs": b["units"] if b else "not published",
                     "tensor clock (MHz)": b["clock_mhz"] if b else None,
                     "BF16 dense (TFLOP/s)": d.values["bf16_dense_tflops"].value,
                     "FP8 dense (TFLOP/s)": d.values["fp8_dense_tflops"].value,
                     "memory (GB)": d.values["memory_gb"].value, "bandwidth (GB/s)": d.values["memory_bw_gb_s"].value,
                     "max power (W)": d.values["tdp_w"].value,
                     "NVLink per direction (GB/s)": d.values["scaleup_bw_gb_s_per_direction"].value})
    return rows


def variant_table(devices=VARIANTS):
    return table(variant_rows(devices), {
        "variant": Col("variant", wrap=True), "SMs": "SMs", "tensor clock (MHz)": Col("clock behind the peak",
                                                                                       unit="MHz", fmt="{:,.0f}"),
        "BF16 dense (TFLOP/s)": Col("BF16", unit="TFLOP/s, dense", fmt="{:,.1f}"),
        "FP8 dense (TFLOP/s)": Col("FP8", unit="TFLOP/s, dense", fmt="{:,.1f}"),
        "memory (GB)": Col("memory", unit="GB, vendor", fmt="{:,.0f}"),
        "bandwidth (GB/s)": Col("memory bandwidth", unit="GB/s", fmt="{:,.0f}"),
        "max power (W)": Col("max power", unit="W", fmt="{:,.0f}"),
        "NVLink per direction (GB/s)": Col("NVLink", unit="GB/s per direction", fmt="{:,.0f}")})


def variant_cost_rows(devices=VARIANTS, n: int = 8192, model: str = "llama3-8b", context: int = 8192) -> list[dict]:
    """Two workloads on each variant: a BF16 n×n×n matmul at the dense peak (compute-bound) and decoding one
    sequence of ``model`` (bandwidth-bound); times relative to the SXM5 part."""
    rows = []
    base_mm = base_dec = None
    for i in devices:
        d = specs.get(i)
        t_mm = 2 * n ** 3 / d.peak_flop_per_s("bf16")
        dec = inference.decode_step(model, i, 1, context)
        base_mm = base_mm or t_mm
        base_dec = base_dec or dec.time_s
        rows.append({"variant": d.name, "matmul (ms)": t_mm * 1e3, "matmul vs SXM5": t_mm / base_mm,
                     "decode (tokens/s)": dec.tokens_per_s, "decode time vs SXM5": dec.time_s / base_dec})
    return rows


def variant_cost_table(devices=VARIANTS, n: int = 8192, model: str = "llama3-8b", context: int = 8192):
    return table(variant_cost_rows(devices, n, model, context), {
        "variant": Col("variant", wrap=True),
        "matmul (ms)": Col(f"BF16 {n}³ matmul at dense peak", unit="ms", fmt="{:.2f}"),
        "matmul vs SXM5": Col("matmul time / SXM5", fmt="{:.2f}"),
        "decode (tokens/s)": Col("decode bound, batch 1", unit="tokens/s", fmt="{:,.0f}"),
        "decode time vs SXM5": Col("decode time / SXM5", fmt="{:.2f}")})


def variant_numbers() -> dict:
    r = {row["variant"]: row for row in variant_cost_rows()}
    sxm, pcie, nvl = (specs.get(i) for i in VARIANTS)
    return {"pcie_mm_slow": r[pcie.name]["matmul vs SXM5"], "pcie_dec_slow": r[pcie.name]["decode time vs SXM5"],
            "nvl_dec_fast": 1 / r[nvl.name]["decode time vs SXM5"], "nvl_mm_slow": r[nvl.name]["matmul vs SXM5"],
            "pcie_sms": pcie.peak_basis["units"], "sxm_sms": sxm.peak_basis["units"],
            "pcie_clock": pcie.peak_basis["clock_mhz"], "pcie_bw": pcie.values["memory_bw_gb_s"].value,
            "sxm_bw": sxm.values["memory_bw_gb_s"].value, "nvl_bw": nvl.values["memory_bw_gb_s"].value,
            "nvl_mem": nvl.values["memory_gb"].value, "pcie_tdp": pcie.values["tdp_w"].value,
            "nvl_sms": nvl.peak_basis["units"], "nvl_clock": nvl.peak_basis["clock_mhz"],
            "nvl_tdp": nvl.values["tdp_w"].value, "pcie_nvlink": pcie.values["scaleup_bw_gb_s_per_direction"].value}


# ----------------------------------------------------------------------------------------------- NVLink, DGX

def nvlink_table():
    return table(nvlink.generation_rows(), {
        "generation": "generation", "GPU": Col("GPU", wrap=True), "links": "links",
        "per link, per direction (GB/s)": Col("per link", unit="GB/s per direction", fmt="{:g}"),
        "per GPU, per direction (GB/s)": Col("per GPU", unit="GB/s per direction", fmt="{:,.0f}"),
        "per GPU, bidirectional (GB/s)": Col("per GPU", unit="GB/s bidirectional", fmt="{:,.0f}"),
        "source": "source"})


def dgx_table():
    rows = nvlink.system_rows()
    return table(rows, {k: Col(k, wrap=k != "component") for k in rows[0]})


def allgather_rows(model: str = "llama3-70b", dtype: str = "bf16") -> list[dict]:
    size = inference.weight_bytes(model, dtype)
    return [{**r, "time (ms)": r["time_s"] * 1e3, "bottleneck": r["bottleneck"].replace(" (custom)", ""),
             "algorithm": r["algorithm"].replace("_", " ")} for r in nvlink.allgather_cases(size)]


def allgather_table(model: str = "llama3-70b", dtype: str = "bf16"):
    return table(allgather_rows(model, dtype), {
        "layout": Col("layout", wrap=True), "GPUs": "GPUs", "time (ms)": Col("predicted time", unit="ms",
                                                                             fmt="{:,.0f}"),
        "algorithm": "algorithm", "bottleneck": Col("bottleneck", wrap=True)})


def nvlink_numbers() -> dict:
    from x4lib.network import clusters
    n = nvlink.nvl72()
    g = {x.generation: x for x in nvlink.generations()}
    rows = {r["layout"]: r for r in allgather_rows()}
    inside = next(r for k, r in rows.items() if k.startswith("8 x H100, one node"))
    spread = next(r for k, r in rows.items() if k.startswith("8 x H100, one per node"))
    nvl = next(r for k, r in rows.items() if "NVL72" in k)
    nodes = next(r for k, r in rows.items() if k.startswith("72 x B200"))
    h100 = specs.get("h100-sxm")
    return {"nvl72_gpus": n["gpus"], "nvl72_trays": n["compute_trays"], "nvl72_switch_trays": n["switch_trays"],
            "nvl72_switch_chips": n["switch_chips"], "nvl72_gpus_per_tray": n["gpus_per_tray"],
            "nvl72_computed_tbs": n["computed_aggregate_Bps"] / 1e12,
            "nvl72_nvidia_tbs": n["nvidia_aggregate_Bps"] / 1e12,
            "nvl72_per_gpu_dir": n["per_gpu_Bps_per_direction"] / 1e9,
            "nvl72_x8_pbs": 8 * n["nvidia_aggregate_Bps"] / 1e15,
            "nv4_links": g[4].links, "nv4_link": g[4].link_Bps_per_direction / 1e9,
            "nv4_gpu_dir": g[4].gpu_Bps_per_direction / 1e9, "nv4_gpu_bidir": g[4].gpu_Bps_bidirectional / 1e9,
            "nv3_gpu_dir": g[3].gpu_Bps_per_direction / 1e9, "nv3_gpu_bidir": g[3].gpu_Bps_bidirectional / 1e9,
            "nv5_gpu_dir": g[5].gpu_Bps_per_direction / 1e9, "nv5_gpu_bidir": g[5].gpu_Bps_bidirectional / 1e9,
            "nv5_link": g[5].link_Bps_per_direction / 1e9,
            "hgx_h100_bidir_tbs": 8 * g[4].gpu_Bps_bidirectional / 1e12,
            "hgx_h100_dir_tbs": 8 * g[4].gpu_Bps_per_direction / 1e12,
            "dgx_h100_kw": nvlink.system("dgx-h100")["max_power_w"]["value"] / 1e3,
            "dgx_h100_w_per_gpu": nvlink.dgx_power_per_gpu_W("dgx-h100"),
            "dgx_h100_w_ratio": nvlink.dgx_power_per_gpu_W("dgx-h100") / h100.values["tdp_w"].value,
            "nic_gb_dir": clusters.get("2x8-h100-ib400").nic.bw_Bps / 1e9,
            "ag_inside_ms": inside["time_s"] * 1e3, "ag_spread_ms": spread["time_s"] * 1e3,
            "ag_spread_ratio": spread["time_s"] / inside["time_s"],
            "ag_nvl_ms": nvl["time_s"] * 1e3, "ag_nodes_ms": nodes["time_s"] * 1e3,
            "ag_size_gb": inference.weight_bytes("llama3-70b") / 1e9}


# ------------------------------------------------------------------------------------------------------- MIG

def mig_profile_table():
    return table(mig.profile_rows(), {k: k for k in mig.profile_rows()[0]})


def mig_configs_table():
    rows = []
    for name, counts in mig.geometry().documented_configs.items():
        placed = mig.place(counts)
        rows.append({"configuration (mig-parted)": name,
                     "instances": ", ".join(f"{n} × {p}" for p, n in counts.items()),
                     "placement (profile@start slice)": ", ".join(str(i) for i in placed)})
    return table(rows, {"configuration (mig-parted)": "configuration (mig-parted)",
                        "instances": Col("instances", wrap=True),
                        "placement (profile@start slice)": Col("placement (profile@start slice)", wrap=True)})


def mig_check_table(examples: list[str]):
    rows = []
    for text in examples:
        found = mig.problems(mig.parse(text))
        rows.append({"instances": text, "valid": "no" if found else "yes", "why not": "; ".join(found) or "—"})
    return table(rows, {"instances": Col("instances (profile@start slice)", wrap=True), "valid": "valid",
                        "why not": Col("why not", wrap=True)})


def mig_pack_table(workloads):
    p = mig.pack(workloads)
    if not p.ok:
        return table([{"result": "no valid layout", "reason": p.reason}],
                     {"result": "result", "reason": Col("reason", wrap=True)})
    return table(p.rows(), {"workload": "workload", "profile": "profile", "start slice": "start slice",
                            "memory slices": "memory slices", "usable GiB": Col("usable", unit="GiB", fmt="{:.2f}"),
                            "SMs": "SMs"})


# -------------------------------------------------------------------------------------------------- explorer

def decode_explorer():
    """ipywidgets: model, device, weight dtype, context and batch -> the decode bound and the inference memory plan.
    In the static book it shows its initial state only; the figure after it is the fallback."""
    import ipywidgets as w
    from IPython.display import display

    def show(model, device, weights, context, batch, gpus):
        s = inference.decode_step(model, device, batch, context, weights, gpus=gpus)
        plan = memory.inference_plan(model, specs.get(device), gpus, context, batch, weights)
        rows = [{"quantity": "tokens/s (upper bound, whole batch)", "value": f"{s.tokens_per_s:,.0f}"},
                {"quantity": "bound", "value": s.bound},
                {"quantity": "time per step (ms)", "value": f"{s.time_s * 1e3:.2f}"},
                {"quantity": "bytes moved per step (GB)", "value": f"{s.bytes_moved / 1e9:.2f}"},
                {"quantity": "compute-bound from batch", "value": str(inference.crossover_batch(
                    model, device, context, weights, gpus=gpus) or "never")},
                {"quantity": "weights per GPU (GB)", "value": f"{plan.weights_B / 1e9:.1f}"},
                {"quantity": "KV cache per GPU (GB)", "value": f"{plan.kv_cache_B / 1e9:.1f}"},
                {"quantity": "workspace reserve per GPU (GB)", "value": f"{plan.workspace_B / 1e9:.1f}"},
                {"quantity": "fits", "value": "yes" if plan.total_B <= memory.capacity_B(specs.get(device)) else "no"}]
        display(table(rows, {"quantity": "quantity", "value": "value"}))

    gpus_ok = [d.id for d in specs.load_catalog().values() if d.kind == "gpu" and "memory_gb" in d.values]
    return w.interactive(
        show, model=w.Dropdown(options=list(inference.models()), value="llama3-70b"),
        device=w.Dropdown(options=gpus_ok, value="h200-sxm"),
        weights=w.Dropdown(options=["bf16", "fp8_e4m3", "fp4"], value="bf16"),
        context=w.IntSlider(value=8192, min=512, max=131072, step=512),
        batch=w.IntSlider(value=8, min=1, max=512), gpus=w.Dropdown(options=[1, 2, 4, 8], value=1))
