"""Page helpers of chapter 00 (book/00-motivation.md): the quiz with its givens, the sourced values that replace
them, scenario tables, the days-against-GPUs curves and the training explorer. The model itself is
``x4lib.training.economics``; the givens are data (``x4lib/data/givens.yaml``), the sourced values too
(``x4lib/data/economics.yaml``).
"""
from __future__ import annotations

from typing import Mapping

from x4lib.catalog import specs
from x4lib.training.economics import TrainingEstimate, estimate_training, quiz_givens, sourced_value

def estimate_quiz(**overrides) -> TrainingEstimate:
    """The motivation quiz with its givens (x4lib/data/givens.yaml), any of them overridden."""
    g = {**quiz_givens(), **overrides}
    return estimate_training(g["params"], g["tokens"], g["device"], g["n_gpus"], dtype=g["dtype"],
                             mfu=g["mfu"], usd_per_gpu_hour=g["usd_per_gpu_hour"],
                             usd_per_kwh=g["usd_per_kwh"], pue=g["pue"], power_scope=g["power_scope"])


def summary_row(label: str, est: TrainingEstimate) -> dict:
    """One display row of an estimate (display units: TFLOP/s, days, kW, MWh, USD)."""
    a = est.assumptions
    return {
        "scenario": label, "device": a["device"], "GPUs": a["n_gpus"], "dtype": a["dtype"],
        "dense peak (TFLOP/s)": a["peak_tflops"], "MFU": a["mfu"],
        "days": round(est.wall_clock_days, 2), "GPU-hours": round(est.gpu_hours),
        "rental (USD)": round(est.rental_cost_usd), "IT power (kW)": round(est.it_power_W / 1e3, 1),
        "facility (kW)": round(est.facility_power_W / 1e3, 1), "energy (MWh)": round(est.energy_MWh, 1),
        "electricity (USD)": round(est.electricity_cost_usd),
    }


def scenarios(cases: Mapping[str, Mapping]) -> list[dict]:
    """Summary rows of the quiz under several sets of overrides: {label: {given: value}}."""
    return [summary_row(label, estimate_quiz(**over)) for label, over in cases.items()]


def days_curve(device: str, gpu_counts, **overrides) -> list[float]:
    """Wall-clock days of the quiz run for each GPU count (a model prediction, perfect scaling at fixed MFU)."""
    return [estimate_quiz(device=device, n_gpus=int(n), **overrides).wall_clock_days for n in gpu_counts]


GIVEN_MEANINGS = {
    "params": "parameters N (a count)", "tokens": "training tokens D", "n_gpus": "accelerators",
    "device": "catalog id", "dtype": "training precision", "mfu": "model FLOP utilisation",
    "usd_per_gpu_hour": "rental price (USD per GPU-hour)", "usd_per_kwh": "electricity price (USD/kWh)",
    "pue": "facility power / IT power", "power_scope": "what power is counted",
}
SOURCED_KEYS = ("mfu", "usd_per_gpu_hour", "usd_per_kwh", "pue")


def givens_rows(givens: Mapping | None = None) -> list[dict]:
    """The quiz's givens (default :func:`quiz_givens`): stated assumptions, not facts (large counts in scientific
    notation)."""
    givens = quiz_givens() if givens is None else givens

    def show(v):
        return f"{v:.3g}" if isinstance(v, float) and abs(v) >= 1e6 else str(v)
    return [{"given": k, "value": show(v), "meaning": GIVEN_MEANINGS.get(k, "")} for k, v in givens.items()]




def sourced_overrides(device: str = "h100-sxm") -> dict:
    """Overrides for :func:`estimate_quiz` that replace the round-number givens by sourced values,
    and count whole-server power where the catalog has it (as Epoch AI's cost model does). Llama 3's MFU counts
    attention FLOP; it is converted to this page's 6ND convention (x4lib.training.mfu.llama3_mfu_6nd)."""
    from x4lib.training import mfu
    over = {k: sourced_value(k, device)["value"] for k in SOURCED_KEYS}
    over["mfu"] = mfu.llama3_mfu_6nd()[0]
    if "server_power_w_per_gpu" in specs.get(device).values:
        over["power_scope"] = "server"
    return over


def sourced_rows(device: str = "h100-sxm") -> list[dict]:
    """Givens beside the sourced values that replace them, with source key and date (the notes, with the
    scope of each figure, are in x4lib/data/economics.yaml)."""
    g = quiz_givens()
    rows = []
    for k in SOURCED_KEYS:
        v = sourced_value(k, device)
        shown = str(v["value"])
        if k == "mfu":
            from x4lib.training import mfu
            shown = f"{v['value']} (attention counted); {mfu.llama3_mfu_6nd()[0]:.3f} in 6ND terms"
        rows.append({"quantity": k, "quiz given": str(g[k]), "sourced": shown, "unit": v["unit"],
                     "source": v["source"], "accessed": v["accessed"]})
        if k == "pue":
            h = economics_ref("pue_hyperscaler")
            rows.append({"quantity": "pue (hyperscale fleet)", "quiz given": str(g[k]), "sourced": str(h["value"]),
                         "unit": h["unit"], "source": h["source"], "accessed": h["accessed"]})
    server = specs.get(device).get("server_power_w_per_gpu")
    if server:
        rows.append({"quantity": "power_scope", "quiz given": str(g["power_scope"]), "sourced": "server",
                     "unit": f"{server.value:g} W per GPU", "source": server.source, "accessed": server.accessed})
    return rows


def economics_ref(key: str) -> Mapping:
    """A reference point of x4lib/data/economics.yaml: {value, unit, source, accessed, note}."""
    from x4lib.training import economics
    return economics.sourced()["reference_points"][key]


def training_explorer(start: Mapping | None = None):
    """Sliders for the quiz's givens, starting at ``start`` (default :func:`quiz_givens`; a partial mapping
    overrides those givens only) → the estimate table (:func:`summary_row`)."""
    import ipywidgets as w
    from IPython.display import display

    g = {**quiz_givens(), **(start or {})}
    gpu_ids = [d.id for d in specs.load_catalog().values() if "bf16_dense_tflops" in d.values and "tdp_w" in d.values]

    def show(params_b, tokens_t, n_gpus, device, mfu, usd_per_gpu_hour):
        try:
            est = estimate_quiz(params=params_b * 1e9, tokens=tokens_t * 1e12, n_gpus=n_gpus, device=device,
                                mfu=mfu, usd_per_gpu_hour=usd_per_gpu_hour)
        except ValueError as exc:
            print(f"cannot estimate: {exc}")
            return
        display(estimate_table(est, "explorer"))

    return w.interactive(
        show,
        params_b=w.FloatLogSlider(value=g["params"] / 1e9, base=10, min=0, max=4, description="params (B)"),
        tokens_t=w.FloatLogSlider(value=g["tokens"] / 1e12, base=10, min=-1, max=2, description="tokens (T)"),
        n_gpus=w.IntText(value=g["n_gpus"], description="GPUs"),
        device=w.Dropdown(options=gpu_ids, value=g["device"], description="device"),
        mfu=w.FloatSlider(value=g["mfu"], min=0.05, max=1.0, step=0.05, description="MFU"),
        usd_per_gpu_hour=w.FloatText(value=g["usd_per_gpu_hour"], description="USD/GPU-h"),
    )


# --------------------------------------------------------------------- achievable rates and the MFU budget

def tdp_coverage() -> dict:
    """How many catalog entries publish a maximum power (tdp_w), and the ids of those that do not."""
    cat = specs.load_catalog()
    missing = [d.id for d in cat.values() if "tdp_w" not in d.values]
    return {"with": len(cat) - len(missing), "total": len(cat), "without": missing}


def gaudi3_peaks(dtype: str = "bf16") -> dict:
    """Gaudi 3's dense peak at the clock Intel's figure assumes and at the shipping clock (x4lib/data/matmul.yaml),
    in TFLOP/s and MHz, with the source of the shipping clock."""
    from x4lib.compute import matmul
    dev = specs.get("gaudi3")
    clk = matmul.clock_for("gaudi3", dtype)
    return {"planned_tflops": dev.values[dev.peak_field(dtype)].value, "planned_mhz": dev.peak_basis["clock_mhz"],
            "shipping_mhz": clk.sustained_hz / 1e6,
            "shipping_tflops": specs.peak_from_basis(dev, dtype, clk.sustained_hz) / 1e12, "source": clk.source}


def quiz_budget(device: str = "h100-sxm", dtype: str = "bf16"):
    """The MFU budget of the quiz run on ``device`` (x4lib.training.mfu, layout assumptions in givens.yaml quiz_run)."""
    from x4lib.training import mfu
    return mfu.budget(mfu.quiz_run(), specs.get(device), dtype)


def achievable_mfu(device: str, dtype: str = "bf16") -> float:
    """A device's own matmul efficiency on the quiz's layer shapes (x4lib.compute.matmul) times the quiz budget's
    non-matmul factor: everything but the matmuls is assumed to cost the same share on every device."""
    from x4lib.training import mfu
    return mfu.matmul_efficiency(mfu.quiz_run(), specs.get(device), dtype) * quiz_budget().non_matmul_factor


def achievable_rows(devices, dtype: str = "bf16") -> list[dict]:
    """Per device: dense peak, matmul efficiency on the quiz's shapes, MFU (own matmul fraction × the same
    non-matmul factor), useful TFLOP/s per GPU, and the rank by peak and by useful rate."""
    from x4lib.training import mfu
    run = mfu.quiz_run()
    factor = quiz_budget().non_matmul_factor
    rows = []
    for d in devices:
        peak = specs.get(d).peak_flop_per_s(dtype) / 1e12
        e = mfu.matmul_efficiency(run, specs.get(d), dtype)
        rows.append({"device": d, "dense peak (TFLOP/s)": peak, "matmul efficiency": e, "MFU": e * factor,
                     "useful (TFLOP/s)": peak * e * factor,
                     "days": estimate_quiz(device=d, mfu=e * factor).wall_clock_days})
    for key, rank in (("dense peak (TFLOP/s)", "rank by peak"), ("useful (TFLOP/s)", "rank by useful rate")):
        for r in rows:  # competition ranking; values within 1 % of each other (the same silicon) share a rank
            r[rank] = 1 + sum(o[key] > 1.01 * r[key] for o in rows)
    return rows


def days_curve_planned(device: str, gpu_counts) -> list[float]:
    """Wall-clock days of the quiz run at each GPU count at the planner's fastest layout for that count
    (x4lib.training.planner via x4lib.catalog.choose.planned: achievable GEMMs, exposed communication, pipeline
    bubble), so the curve bends where communication and the bubble grow; NaN where no layout fits."""
    from x4lib.catalog import choose
    from x4lib.training import economics, mfu
    q, tokens = mfu.quiz_run(), economics.quiz_givens()["tokens"]
    out = []
    for n in gpu_counts:
        plan = choose.planned(device, q.params, int(n))
        out.append(tokens / plan.tokens_per_s / 86400 if plan is not None and not isinstance(plan, Exception)
                   else float("nan"))
    return out


def days_curve_achievable(device: str, gpu_counts) -> list[float]:
    """Wall-clock days of the quiz run at the device's own achievable MFU (:func:`achievable_mfu`)."""
    return days_curve(device, gpu_counts, mfu=achievable_mfu(device))


def budget_table(device: str = "h100-sxm", dtype: str = "bf16"):
    from x4lib.book.tables import Col, table
    return table(quiz_budget(device, dtype).rows(), {"term": Col("where the time goes", wrap=True),
                                        "s per step": Col("per step", "s", "{:.2f}"),
                                        "share of step": Col("share of the step", fmt="{:.1%}"),
                                        "basis": Col("source or computation", wrap=True)})


def achievable_table(devices):
    from x4lib.book.tables import Col, table
    return table(achievable_rows(devices), {
        "device": "device", "dense peak (TFLOP/s)": Col("dense BF16 peak", "TFLOP/s", "{:,.0f}"),
        "matmul efficiency": Col("matmul efficiency", fmt="{:.0%}"), "MFU": Col("MFU", fmt="{:.0%}"),
        "useful (TFLOP/s)": Col("useful rate", "TFLOP/s per GPU", "{:,.0f}"),
        "days": Col("quiz run", "days", "{:,.1f}"), "rank by peak": "rank by peak",
        "rank by useful rate": "rank by useful rate"})


def pue_overrides(which: str) -> dict:
    """Sourced overrides with the survey-average PUE (``survey``, economics.yaml defaults) or the hyperscale fleet
    figure (``hyperscale``, reference_points.pue_hyperscaler)."""
    from x4lib.training import economics
    over = sourced_overrides()
    if which == "hyperscale":
        over["pue"] = economics.sourced()["reference_points"]["pue_hyperscaler"]["value"]
    elif which != "survey":
        raise ValueError(f"which must be 'survey' or 'hyperscale', got {which!r}")
    return over


# ------------------------------------------------------------------------------------------------- tables

SUMMARY_COLS = {
    "scenario": "scenario", "device": "device", "GPUs": "GPUs", "dtype": "dtype",
    "dense peak (TFLOP/s)": ("dense peak", "TFLOP/s", "{:,.1f}"), "MFU": ("MFU", None, "{:.2f}"),
    "days": ("wall clock", "days", "{:,.1f}"), "GPU-hours": ("GPU-hours", None, "{:,.0f}"),
    "rental (USD)": ("rental", "USD", "{:,.0f}"), "IT power (kW)": ("IT power", "kW", "{:,.0f}"),
    "facility (kW)": ("facility power", "kW", "{:,.0f}"), "energy (MWh)": ("energy", "MWh", "{:,.0f}"),
    "electricity (USD)": ("electricity", "USD", "{:,.0f}"),
}


def _cols(keys) -> dict:
    from x4lib.book.tables import Col
    out = {}
    for k in keys:
        spec = SUMMARY_COLS.get(k, k)
        out[k] = Col(*spec) if isinstance(spec, tuple) else spec
    return out


def scenario_table(rows: list[dict], keys=None):
    """Scenario rows (:func:`summary_row`) as a table: one row per scenario, units in the headers."""
    from x4lib.book.tables import table
    keys = list(keys or rows[0].keys())
    return table(rows, _cols(["scenario"] + [k for k in keys if k != "scenario"]))


def estimate_table(est: TrainingEstimate, label: str = "estimate"):
    """One estimate as a two-column table (quantity with its unit, value), read top to bottom."""
    from x4lib.book.tables import Col, fmt_value, table
    row = summary_row(label, est)
    rows = []
    for k, v in row.items():
        spec = SUMMARY_COLS.get(k, k)
        name, unit, fmt = spec if isinstance(spec, tuple) else (spec, None, None)
        rows.append({"quantity": f"{name} ({unit})" if unit else name, "value": fmt_value(v, fmt=fmt)})
    return table(rows, {"quantity": "quantity", "value": Col("value")})


def catalog_table(device_ids: list[str]):
    """Headline figures of catalog devices (dense rates; memory as the vendor states it; GB = 1e9 B)."""
    from x4lib.book.tables import Col, table
    return table(specs.summary_rows(device_ids), {
        "id": "id", "name": Col("name", wrap=True), "BF16 dense (TFLOP/s)": Col("BF16 dense", "TFLOP/s", "{:,.0f}"),
        "FP8 dense (TFLOP/s)": Col("FP8 dense", "TFLOP/s", "{:,.0f}"),
        "memory (GB, vendor)": Col("memory, the vendor's label", "GB as printed", "{:,.0f}"),
        "memory bw (GB/s)": Col("memory bandwidth", "GB/s", "{:,.0f}"), "max power (W)": Col("max power", "W", "{:,.0f}")})


def givens_table(givens: Mapping | None = None):
    from x4lib.book.tables import Col, table
    return table(givens_rows(givens), {"given": "given", "value": "value", "meaning": Col("meaning", wrap=True)})


def sourced_table(device: str = "h100-sxm"):
    from x4lib.book.tables import table
    return table(sourced_rows(device), {"quantity": "quantity", "quiz given": "quiz given", "sourced": "sourced",
                                        "unit": "unit", "source": "source", "accessed": "accessed"})
