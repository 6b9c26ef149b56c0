"""Page helpers of the NVLink chapter (book/02c-nvlink-and-nvl72.md): NVLink generations, the DGX H100 as built, the
GB200 NVL72 domain, the cost of gathering the weights across the hierarchy, and the all-gather explorer. The models
live in ``x4lib.network.nvlink`` and the collective models of ``x4lib.network``; this module only arranges their
results for the page (display units at this edge: GB/s, TB/s, ms).
"""
from __future__ import annotations

from x4lib.catalog import specs
from x4lib.serving import inference
from x4lib.network import nvlink
from x4lib.book.tables import Col, table

# ----------------------------------------------------------------------------------------------- NVLink, DGX

def nvlink_table(generations=(2, 3, 4, 5)):
    by_gen = dict(zip((g.generation for g in nvlink.generations()), nvlink.generation_rows()))
    return table([by_gen[g] for g in generations], {
        "generation": "generation", "GPU": Col("GPU", wrap=True), "links": "links",
        "per link, per direction (GB/s)": Col("per link", unit="GB/s per direction", fmt="{:g}"),
        "per GPU, per direction (GB/s)": Col("per GPU", unit="GB/s per direction", fmt="{:,.0f}"),
        "per GPU, bidirectional (GB/s)": Col("per GPU", unit="GB/s bidirectional", fmt="{:,.0f}"),
        "source": "source"})


def dgx_table(systems=("dgx-h100", "dgx-b200")):
    rows = nvlink.system_rows(systems)
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


# -------------------------------------------------------------------------------------------------- explorer

def allgather_explorer(model: str = "llama3-70b", dtype: str = "bf16"):
    """ipywidgets: the model and the weights' precision (starting at the arguments) -> the predicted time to
    all-gather its weights in each layout. In the static book it shows its initial state; the all-gather table above
    is the static result."""
    import ipywidgets as w
    from IPython.display import display

    return w.interactive(lambda model, dtype: display(allgather_table(model, dtype)),
                         model=w.Dropdown(options=list(inference.models()), value=model),
                         dtype=w.Dropdown(options=["bf16", "fp8_e4m3", "fp4"], value=dtype))
