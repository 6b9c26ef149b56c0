"""Page helpers of the memory chapter (book/02b-memory-and-decode.md): HBM by generation, bytes per generated token,
the decode roofline, memory plans for training and inference, the H100 variants, MIG and the decode explorer. The
models live in ``x4lib.serving.inference``, ``x4lib.serving.decode``, ``x4lib.training.memory`` and
``x4lib.compute.mig``; this module only arranges their results for the page (display units at this edge: GB/s,
GB = 1e9 B, GiB where the driver reports GiB).
"""
from __future__ import annotations

import numpy as np

from x4lib.catalog import specs
from x4lib.serving import inference
from x4lib.training import memory
from x4lib.compute import mig
from x4lib.book.tables import Col, table
from x4lib.pages.ch02 import short

HBM_DEVICES = ("a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200", "b300", "gb300")
PLAN_DEVICES = ("h100-sxm", "h200-sxm", "b200")
VARIANTS = ("h100-sxm", "h100-pcie", "h100-nvl")
KV_MODELS = ("llama2-7b", "llama3-8b", "mistral-7b", "mixtral-8x7b", "llama3-70b", "llama3-405b", "deepseek-v3")


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


# ------------------------------------------------------------------------------------------------------- MIG

def mig_profile_table(profiles=("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")):
    by_name = {r["profile"]: r for r in mig.profile_rows()}
    rows = [by_name[p] for p in profiles]
    return table(rows, {k: k for k in rows[0]})


def mig_configs_table(configs=("all-1g.10gb", "all-1g.10gb.me", "all-1g.20gb", "all-2g.20gb", "all-3g.40gb",
                               "all-4g.40gb", "all-7g.80gb", "all-balanced")):
    """mig-parted's documented configurations named in ``configs``, each with the placement mig.place finds."""
    rows = []
    for name in configs:
        counts = mig.geometry().documented_configs[name]
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

def decode_explorer(model: str = "llama3-70b", device: str = "h200-sxm", weights: str = "bf16", context: int = 8192,
                    batch: int = 8, gpus: int = 1):
    """ipywidgets: model, device, weight dtype, context, batch and GPUs (starting at the arguments) -> the decode
    bound and the inference memory plan. In the static book it shows its initial state only; the figure after it is
    the fallback."""
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
        show, model=w.Dropdown(options=list(inference.models()), value=model),
        device=w.Dropdown(options=gpus_ok, value=device),
        weights=w.Dropdown(options=["bf16", "fp8_e4m3", "fp4"], value=weights),
        context=w.IntSlider(value=context, min=512, max=131072, step=512),
        batch=w.IntSlider(value=batch, min=1, max=512), gpus=w.Dropdown(options=[1, 2, 4, 8], value=gpus))
