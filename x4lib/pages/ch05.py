"""Page helpers of book/05-the-accelerator-landscape-2026.md: the landscape tables, the misleading-figure table,
price-performance, the chooser's table and the two-chip explorer. The models live in x4lib.catalog.landscape and
x4lib.catalog.choose; this module only arranges what the page shows."""
from __future__ import annotations

from x4lib.catalog import choose, landscape, specs
from x4lib.book import spanish
from x4lib.book.tables import Col, table, with_details

#: the compact table: each vendor's newest shipping parts and the announced ones
HEADLINE = ("gb300", "b300", "h200-sxm", "mi355x", "mi350x", "mi325x", "tpu7x", "tpu-v6e", "trn3", "gaudi3",
            "rubin", "mi455x")
#: the explorer's default pair and the chooser table's workloads
PAIR = ("h200-sxm", "mi355x")
DECIDING_NUMBER = {"train": "tokens_per_s_per_chip", "serve": "batch", "retrieve": "queries_per_hour",
                   "moe-serve": "chips"}


def _val(r, key):
    v = r["values"].get(key)
    return v["value"] if v else None


def _flat(r) -> dict:
    conv = sorted({c.split(":")[0] for v in r["values"].values() for c in v["conversions"]})
    return {"device": r["device"], "status": r["status"],
            **{k: _val(r, k) for k in ("bf16_dense_tflops", "fp8_dense_tflops", "memory_gb", "memory_bw_gb_s",
                                        "ridge_bf16_flop_per_byte", "ridge_fp8_flop_per_byte", "bf16_tflops_per_w",
                                        "scaleup_bw_gb_s_per_direction", "scaleup_domain_chips",
                                        "scaleout_bw_gb_s_per_direction")},
            "conversions": "; ".join(conv) if conv else "none"} | _sram(r)


def _sram(r) -> dict:
    """A wafer-scale or LPU machine keeps its memory on chip: its memory cell says so, in MB, from the catalog."""
    if r["kind"] not in ("wafer-scale", "lpu"):
        return {}
    return {"memory_gb": f"SRAM only: {r['values']['memory_gb']['value'] * 1e3:,.0f} MB"}


def _memory_text(v) -> str:
    """A memory cell: GB of HBM or DRAM, or the on-chip SRAM of a machine that has no HBM (never "0 GB")."""
    return v if isinstance(v, str) else f"{v:,.0f}"


COMPUTE_COLS = {"device": Col("device"), "status": Col("status"),
                "bf16_dense_tflops": Col("BF16 dense", "TFLOP/s", "{:,.0f}"),
                "fp8_dense_tflops": Col("FP8 dense", "TFLOP/s", "{:,.0f}"),
                "memory_gb": Col("memory", "GB", _memory_text),
                "memory_bw_gb_s": Col("memory bw", "GB/s", "{:,.0f}"),
                "ridge_bf16_flop_per_byte": Col("BF16 ridge", "FLOP/B", "{:,.0f}"),
                "ridge_fp8_flop_per_byte": Col("FP8 ridge", "FLOP/B", "{:,.0f}"),
                "bf16_tflops_per_w": Col("BF16 per watt", "TFLOP/s per W", "{:.2f}"),
                "conversions": Col("conversions", wrap=True)}
LINK_COLS = {"device": Col("device"), "status": Col("status"),
             "scaleup_domain_chips": Col("scale-up domain", "chips", "{:,.0f}"),
             "scaleup_bw_gb_s_per_direction": Col("scale-up per direction", "GB/s", "{:,.0f}"),
             "scaleout_bw_gb_s_per_direction": Col("scale-out per direction", "GB/s", "{:,.1f}"),
             "conversions": Col("conversions", wrap=True)}


def compute_table(headline=HEADLINE):
    """Dense BF16/FP8, memory, bandwidth, ridge points and TFLOP/s per W: the ``headline`` parts, every device
    below."""
    rows = [_flat(r) for r in landscape.table()]
    head = [r for d in headline for r in rows if r["device"] == d]
    return with_details(table(head, COMPUTE_COLS), table(rows, COMPUTE_COLS),
                        f"All {len(rows)} accelerators of the catalog")


def link_table(headline=HEADLINE):
    """Scale-up domain and bandwidth, scale-out per chip (where a reference system publishes one): the ``headline``
    parts, every device with links below."""
    rows = [_flat(r) for r in landscape.table()]
    rows = [r for r in rows if r["scaleup_domain_chips"] or r["scaleup_bw_gb_s_per_direction"]]
    head = [r for d in headline for r in rows if r["device"] == d]
    return with_details(table(head, LINK_COLS), table(rows, LINK_COLS), f"All {len(rows)} accelerators with links")


def achievable_rows(devices=None) -> list[dict]:
    """Achievable dense BF16 of each of ``devices`` (ids, default: the catalog) that is an accelerator with a BF16
    peak and a published measurement or a model."""
    devs = [specs.get(i) for i in (specs.load_catalog() if devices is None else devices)]
    ids = [d.id for d in devs if d.kind != "cpu" and "bf16_dense_tflops" in d.values]
    out = []
    for i in ids:
        a = landscape.achievable_bf16(i)
        if a["measured_tflops"] or a["model_tflops"]:
            out.append(a)
    return out


def achievable_table(devices=None):
    cols = {"device": Col("device"), "peak_tflops": Col("BF16 dense peak", "TFLOP/s", "{:,.0f}"),
            "measured_tflops": Col("best published measurement", "TFLOP/s", "{:,.0f}"),
            "measured_source": Col("measured by (source key)"),
            "model_tflops": Col("model at 8192³", "TFLOP/s", "{:,.0f}")}
    return table(achievable_rows(devices), cols)


def price_table(rows: list[dict] | None = None):
    """``rows`` of :func:`x4lib.catalog.landscape.rental_rows` (default: all of them)."""
    cols = {"device": Col("device"), "provider": Col("provider"), "tier": Col("tier"), "date": Col("snapshot date"),
            "usd_per_gpu_hour": Col("price", "USD per GPU-h", "{:.2f}"),
            "usd_per_pflop_hour": Col("per dense BF16 PFLOP-hour", "USD", "{:.2f}"),
            "usd_per_tb_s_hour": Col("per TB/s-hour of memory bandwidth", "USD", "{:.2f}")}
    return table(landscape.rental_rows() if rows is None else rows, cols)


def misleads_table(figures: list[dict] | None = None):
    """Printed figures (default: every one of :func:`x4lib.catalog.landscape.vendor_figures`) on the common basis."""
    rows = [{**f, "conversions": "; ".join(f["conversions"]),
             "shown": f"{f['normalised']:,.1f} {f['normalised_unit']}", "cat": f"{f['catalog']:,.1f}"}
            for f in (landscape.vendor_figures() if figures is None else figures)]
    cols = {"trap": Col("trap", wrap=True), "device": Col("device"), "as_printed": Col("as printed", wrap=True),
            "conversions": Col("conversions", wrap=True), "shown": Col("on the common basis"),
            "cat": Col("catalog value"), "source": Col("source key")}
    return table(rows, cols)


def chooser_rows(include_announced: bool = False) -> list[dict]:
    out = []
    for w in choose.WORKLOADS:
        doc = choose.rank(w, include_announced=include_announced)
        r = doc["ranking"]
        top, second = r[0], r[1]
        key = DECIDING_NUMBER[w]
        out.append({"workload": w, "winner": top["device"], "score": top["score"],
                    "unit": doc["assumptions"]["score_unit"], "constraint": top["deciding_constraint"],
                    "runner_up": second["device"], "runner_up_score": second["score"],
                    "zero": sum(1 for c in r if c["score"] == 0),
                    "zero_constraints": ", ".join(sorted({c["deciding_constraint"] for c in r if c["score"] == 0}))
                    or "none", "deciding_number": top["numbers"].get(key)})
    return out


def chooser_table(include_announced: bool = False):
    cols = {"workload": Col("workload"), "winner": Col("first"), "score": Col("score", fmt="{:,.0f}"),
            "unit": Col("score unit", wrap=True), "constraint": Col("deciding constraint"),
            "runner_up": Col("second"), "zero": Col("devices ruled out", fmt="{:.0f}"),
            "zero_constraints": Col("ruled out by", wrap=True)}
    return table(chooser_rows(include_announced), cols)


def train_rows(**kw) -> list[dict]:
    """The training ranking with how each score was reached (planner or achievable compute) and the chips that
    are not ranked for want of an achievable-rate model."""
    doc = choose.rank("train", **kw)
    rows = [{"device": c["device"], "tokens": c["score"], "basis": c["numbers"]["basis"],
             "mfu": c["numbers"]["mfu"], "days": c["numbers"]["days"], "layout": c["numbers"].get("layout", "—"),
             "domain": c["numbers"]["scaleup_domain_chips"]} for c in doc["ranking"] if c["score"] > 0]
    return rows + [{"device": u["device"], "basis": "not ranked: no achievable-rate model"}
                   for u in doc["assumptions"]["not_ranked"]]


def train_table(**kw):
    cols = {"device": Col("device"), "tokens": Col("training tokens/s per chip", fmt="{:,.0f}"),
            "mfu": Col("MFU", fmt="{:.1%}"), "days": Col("days", fmt="{:.1f}"), "basis": Col("basis", wrap=True),
            "layout": Col("planner's layout"), "domain": Col("scale-up domain", "chips", "{:,.0f}")}
    rows = train_rows(**kw)
    ranked = [r for r in rows if "tokens" in r]
    return with_details(table(ranked, cols), table(rows, cols),
                        f"All {len(rows)} chips, with the {len(rows) - len(ranked)} not ranked for want of a model")


def ranking_table(workload: str, n: int = 8, **kw):
    doc = choose.rank(workload, **kw)
    rows = [{"rank": i + 1, **c, "status": c["numbers"]["status"]} for i, c in enumerate(doc["ranking"][:n])]
    cols = {"rank": Col("rank", fmt="{:.0f}"), "device": Col("device"), "status": Col("status"),
            "score": Col("score", doc["assumptions"]["score_unit"], "{:,.0f}"),
            "deciding_constraint": Col("deciding constraint")}
    return table(rows, cols)


def compare(a: str, b: str, workload: str) -> dict:
    """Two devices under one workload: each one's score, constraint and numbers, and the ratio."""
    doc = choose.rank(workload, devices=[a, b])
    by = {c["device"]: c for c in doc["ranking"]}
    # a chip the workload cannot rank (training without an achievable-rate model) shows as "not ranked", score 0
    by.update({u["device"]: {"device": u["device"], "score": 0.0, "deciding_constraint": "not ranked",
                             "numbers": {}} for u in doc["assumptions"]["not_ranked"]})
    ca, cb = by.get(a), by.get(b)
    ratio = (ca["score"] / cb["score"]) if ca and cb and cb["score"] else None
    return {"a": ca, "b": cb, "ratio": ratio, "unit": doc["assumptions"]["score_unit"]}


def compare_rows(a: str = PAIR[0], b: str = PAIR[1]) -> list[dict]:
    """The pair under every workload: one row per workload and chip."""
    rows = []
    for w in choose.WORKLOADS:
        c = compare(a, b, w)
        for side in ("a", "b"):
            x = c[side]
            rows.append({"workload": w, "device": x["device"], "score": x["score"],
                         "constraint": x["deciding_constraint"], "unit": c["unit"]})
    return rows


def compare_table(a: str = PAIR[0], b: str = PAIR[1]):
    """The static fallback of the explorer, as a table: the pair under every workload."""
    rows = compare_rows(a, b)
    cols = {"workload": Col("workload"), "device": Col("device"), "score": Col("score", fmt="{:,.0f}"),
            "unit": Col("score unit", wrap=True), "constraint": Col("deciding constraint")}
    return table(rows, cols)


def explorer(a: str = PAIR[0], b: str = PAIR[1], workload: str = "serve"):
    """Pick two chips and a workload (starting at ``a``, ``b`` and ``workload``): the two scores, constraints and the
    numbers that decided."""
    import ipywidgets as w
    from IPython.display import display

    ids = [d.id for d in choose.candidates(include_announced=True)]

    def show(a, b, workload):
        if a == b:
            print("pick two different chips")
            return
        c = compare(a, b, workload)
        rows = []
        for side in ("a", "b"):
            x = c[side]
            nums = {k: v for k, v in x["numbers"].items() if isinstance(v, (int, float)) and v is not None}
            rows.append({"device": x["device"], "score": x["score"], "constraint": x["deciding_constraint"],
                         "numbers": nums})
        display(table(rows, {"device": Col("device"), "score": Col("score", c["unit"], "{:,.1f}"),
                             "constraint": Col("deciding constraint"),
                             "numbers": Col("numbers that decided", fmt="{:.4g}", wrap=True)}))

    return w.interactive(show, a=w.Dropdown(options=ids, value=a, description="chip A"),
                         b=w.Dropdown(options=ids, value=b, description="chip B"),
                         workload=w.Dropdown(options=list(choose.WORKLOADS), value=workload, description="workload"))


def scatter_points() -> list[dict]:
    return [{"device": r["device"], "status": r["status"], "bw_tb_s": _val(r, "memory_bw_gb_s") / 1e3,
             "bf16_tflops": _val(r, "bf16_dense_tflops")}
            for r in landscape.table() if _val(r, "memory_bw_gb_s") and _val(r, "bf16_dense_tflops")
            and r["values"]["memory_gb"]["basis"].startswith("device memory")]


def summary() -> dict:
    """Every number the prose quotes, computed once for glue."""
    cat = specs.load_catalog()
    acc = [d for d in cat.values() if d.kind != "cpu"]
    figs = {f["id"]: f for f in landscape.vendor_figures()}
    rows = {r["device"]: r for r in landscape.table()}
    S = {"n_devices": len(acc), "n_shipping": sum(d.status == "shipping" for d in acc),
         "n_announced": sum(d.status == "announced" for d in acc),
         "n_priced": len({r["device"] for r in landscape.rental_rows()})}
    for fid, f in figs.items():
        S[f"{fid.replace('-', '_')}_printed"] = f["value"]
        S[f"{fid.replace('-', '_')}_norm"] = f["normalised"]
    S["mi300x_per_peer"] = figs["mi300x-aggregate-p2p"]["per_peer"]
    for d in ("h100-sxm", "mi355x"):                   # printed "GB" of binary-sized HBM on the GB = 1e9 B basis
        dev = cat[d]
        S[f"{d.replace('-', '_')}_mem_printed"] = dev.values["memory_gb"].value
        S[f"{d.replace('-', '_')}_mem_norm"] = landscape.memory_B(dev)[0] / 1e9
    S["gaudi3_planned_mhz"] = figs["gaudi3-planned-clock"]["planned_clock_mhz"]
    S["gaudi3_shipping_mhz"] = figs["gaudi3-planned-clock"]["shipping_clock_mhz"]
    for d in ("h100-sxm", "b300", "gb300", "mi355x", "tpu7x", "tpu-v6e", "trn3", "rubin", "mi455x", "gaudi3"):
        k = d.replace("-", "_")
        for key in ("bf16_dense_tflops", "fp8_dense_tflops", "ridge_bf16_flop_per_byte", "memory_bw_gb_s",
                    "memory_gb", "scaleup_domain_chips"):
            v = _val(rows[d], key)
            if v is not None:
                S[f"{k}_{key}"] = v
    ridges = [(r["device"], _val(r, "ridge_bf16_flop_per_byte")) for r in rows.values()
              if _val(r, "ridge_bf16_flop_per_byte") and r["values"]["memory_gb"]["basis"].startswith("device")]
    lo, hi = min(ridges, key=lambda x: x[1]), max(ridges, key=lambda x: x[1])
    S.update({"ridge_lo_dev": lo[0], "ridge_lo": lo[1], "ridge_hi_dev": hi[0], "ridge_hi": hi[1]})
    pr = {(r["device"], r["provider"], r["tier"]): r for r in landscape.rental_rows()}
    h = pr[("h100-sxm", "RunPod", "on-demand")]
    a = pr[("a100-sxm-80gb", "RunPod", "on-demand")]
    S.update({"h100_usd_h": h["usd_per_gpu_hour"], "h100_usd_pflop_h": h["usd_per_pflop_hour"],
              "h100_usd_tbs_h": h["usd_per_tb_s_hour"], "a100_usd_h": a["usd_per_gpu_hour"],
              "a100_usd_pflop_h": a["usd_per_pflop_hour"], "a100_usd_tbs_h": a["usd_per_tb_s_hour"],
              "price_date": h["date"]})
    aws = pr[("h100-sxm", "AWS", "on-demand")]
    S["h100_aws_usd_pflop_h"] = aws["usd_per_pflop_hour"]
    for row in chooser_rows():
        k = row["workload"].replace("-", "_")
        S[f"choose_{k}_winner"] = row["winner"]
        S[f"choose_{k}_constraint"] = row["constraint"]
        S[f"choose_{k}_zero"] = row["zero"]
        S[f"choose_{k}_score"] = row["score"]
    for k, v in choose.DEFAULTS["serve"].items():
        S[f"serve_{k}"] = v
    for k, v in choose.DEFAULTS["moe-serve"].items():
        S[f"moe_{k}"] = v
    for k, v in choose.DEFAULTS["retrieve"].items():
        S[f"retrieve_{k}"] = v
    t = choose.DEFAULTS["train"]
    S.update({"train_params_b": t["params"] / 1e9, "train_tokens_t": t["tokens"] / 1e12, "train_chips": t["chips"],
              "workspace_pct": choose.WORKSPACE_FRACTION * 100})
    tr = {r["device"]: r for r in train_rows()}
    S.update({"train_unranked": sum(1 for r in tr.values() if "tokens" not in r),
              "train_gb200_mfu_pct": 100 * tr["gb200"]["mfu"], "train_h100_mfu_pct": 100 * tr["h100-sxm"]["mfu"],
              "train_gb200_days": tr["gb200"]["days"], "train_h100_days": tr["h100-sxm"]["days"]})
    for d in ("wse-3", "groq-lpu"):
        dev = cat[d]
        S[f"{d.replace('-', '_')}_sram_mb"] = dev.values["memory_gb"].value * 1e3
    S["wse_3_memory_bw_pb_s"] = cat["wse-3"].values["memory_bw_gb_s"].value / 1e6
    S["groq_lpu_memory_bw_tb_s"] = cat["groq-lpu"].values["memory_bw_gb_s"].value / 1e3
    ach = {a["device"]: a for a in achievable_rows()}
    m = ach["mi300x"]
    S.update({"mi300x_peak": m["peak_tflops"], "mi300x_meas": m["measured_tflops"],
              "mi300x_meas_pct": 100 * m["measured_tflops"] / m["peak_tflops"]})
    for d in ("mi355x", "b300"):
        S[f"{d}_meas"] = ach[d]["measured_tflops"]
        S[f"{d}_meas_pct"] = 100 * ach[d]["measured_tflops"] / ach[d]["peak_tflops"]
    g = ach["gaudi3"]
    S.update({"gaudi3_meas": g["measured_tflops"], "gaudi3_meas_pct_planned": 100 * g["measured_tflops"] / g["peak_tflops"],
              "gaudi3_meas_pct_shipping": 100 * g["measured_tflops"] / figs["gaudi3-planned-clock"]["normalised"]})
    cmp = compare(*PAIR, "moe-serve")
    S.update({"pair_a": PAIR[0], "pair_b": PAIR[1], "pair_moe_ratio": cmp["ratio"] or 0.0})
    moe = {c["device"]: c for c in choose.rank("moe-serve")["ranking"]}
    S["moe_h100_chips_to_hold"] = moe["h100-sxm"]["numbers"]["chips_to_hold"]
    S["moe_weights_gb"] = moe["h100-sxm"]["numbers"]["weights_gb"]
    S.update(spanish.numbers(S, {"h100_bf16_sparse_printed": 0, "h100_bf16_sparse_norm": 1,
                                 "gaudi3_planned_clock_printed": 0, "gaudi3_planned_clock_norm": 1,
                                 "gaudi3_shipping_mhz": 0, "n_devices": 0, "n_announced": 0, "h100_usd_pflop_h": 2,
                                 "train_gb200_mfu_pct": 0, "train_h100_mfu_pct": 0, "choose_moe_serve_zero": 0,
                                 "wse_3_sram_mb": 0, "groq_lpu_sram_mb": 0}))
    return S
