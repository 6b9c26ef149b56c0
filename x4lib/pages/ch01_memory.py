"""Page helpers of chapter 01's memory hierarchy (book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md): the cache sweep measured on
the CPU that builds the book (``x4lib.harness.bench``; labelled with the CPU as detected), its plateaus against the caches
the system reports, and the H100's hierarchy and Little's law from sources (``x4lib/data/facts/``).
"""
from __future__ import annotations

import dataclasses

from x4lib.catalog import facts, specs
from x4lib.compute import simt
from x4lib.book.tables import Col, md_text, table

# --------------------------------------------------------------------------------- memory hierarchy, here

@dataclasses.dataclass(frozen=True)
class Sweep:
    """The hierarchy sweep of this CPU: raw rows per thread count, the caches the system reports, the label."""
    label: str
    rows: dict            # threads -> list of bench.cache_sweep rows
    caches: list


def measure_hierarchy(threads=(1,), low_B: int = 4 * 2**10, high_B: int = 256 * 2**20) -> Sweep:
    """Run ``bench.cache_sweep`` on this CPU for each thread count that fits (a few seconds each)."""
    import os

    import torch

    from x4lib.harness import bench, device
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    sizes = bench.working_set_sizes(low_B, high_B, per_octave=2)
    rows = {t: bench.cache_sweep(torch, sizes, threads=t) for t in dict.fromkeys(threads) if t <= usable}
    return Sweep(device.cpu_info()["model_name"], rows, device.cpu_caches())


def sweep_points(sweep: Sweep, threads: int) -> list[dict]:
    """{x: working set (B), y: read rate (GB/s)} at the best repeat, derived from the raw times."""
    return [{"x": r["working_set_B"], "y": r["passes"] * r["working_set_B"] / r["best_s"] / 1e9}
            for r in sweep.rows.get(threads, []) if r["status"] == "ok"]


def cache_marks(sweep: Sweep) -> list[tuple[str, int]]:
    return [(f"L{c['level']} {fmt_size(c['size_B'])} (reported)", c["size_B"]) for c in sweep.caches]


def fmt_size(n: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            return f"{n / f:,.3g} {unit}"
    return f"{n:,.0f} B"


def plateaus(sweep: Sweep, threads: int = 1) -> list[dict]:
    """Median read rate in each region the reported caches delimit: sizes up to half a level's capacity count
    for that level; sizes above four times the largest reported cache count as 'beyond the caches'."""
    pts = sweep_points(sweep, threads)
    levels = sorted(sweep.caches, key=lambda c: c["size_B"])
    if not levels:          # no cache sizes reported (not Linux): no regions to name
        return []
    out, lower = [], 0
    import statistics
    for c in levels:
        sel = [p["y"] for p in pts if lower < p["x"] <= c["size_B"] / 2]
        if sel:
            out.append({"region": f"fits in L{c['level']} ({fmt_size(c['size_B'])})", "sizes": len(sel),
                        "gb_s": statistics.median(sel)})
        lower = 2 * c["size_B"]
    beyond = [p["y"] for p in pts if p["x"] >= 4 * (levels[-1]["size_B"] if levels else 0)]
    if beyond:
        out.append({"region": "beyond the caches (DRAM)", "sizes": len(beyond), "gb_s": statistics.median(beyond)})
    return out


def plateau_table(sweep: Sweep):
    rows = []
    for t in sweep.rows:
        rows += [{**p, "threads": t} for p in plateaus(sweep, t)]
    return table(rows, {"threads": "threads", "region": "working set", "sizes": "sizes measured",
                        "gb_s": Col("median read rate", "GB/s", "{:,.0f}")},
                 caption=f"Measured on {sweep.label} (as detected)")


def sweep_sentence(sweep: Sweep) -> str:
    """The sweep in words, computed: the one-thread rate at the smallest and largest working sets, and the
    largest drop between neighbouring sizes."""
    pts = sorted(sweep_points(sweep, 1), key=lambda p: p["x"])
    if len(pts) < 3:
        return "The sweep did not produce enough points to describe."
    drops = [(pts[i]["y"] / pts[i + 1]["y"], pts[i]["x"], pts[i + 1]["x"]) for i in range(len(pts) - 1)]
    f, a, b = max(drops)
    return (f"On {md_text(sweep.label)}, one thread read {pts[0]['y']:,.0f} GB/s from a {fmt_size(pts[0]['x'])} working set "
            f"and {pts[-1]['y']:,.0f} GB/s from {fmt_size(pts[-1]['x'])}; the steepest cliff, a factor of {f:.1f}, "
            f"lies between {fmt_size(a)} and {fmt_size(b)}.")


# ------------------------------------------------------------------------------------ the H100's hierarchy

def h100_hierarchy_rows(device: str = "h100-sxm", memory_group: str = "h100_memory",
                        sm_group: str = "h100_sm") -> list[dict]:
    """The H100 SXM5's memory levels: capacity, bandwidth, latency; vendor figures where NVIDIA publishes them,
    otherwise measured by others on the H100 PCIe (labelled). HBM and the Tensor Core clock come from the catalog
    ``device``, the rest from the facts groups ``memory_group`` and ``sm_group``."""
    g = memory_group
    sm = facts.get(sm_group, "sm_count").value
    clock = facts.get(g, "measurement_clock").si
    sms_pcie = facts.get(g, "measurement_sm_count").value
    dev = specs.get(device)
    tensor_clock = dev.peak_basis["clock_mhz"] * 1e6
    regs_B = facts.get(sm_group, "registers_per_sm").value * 4
    l1 = facts.get(g, "l1_bytes_per_clock_per_sm")
    return [
        {"level": "registers", "capacity": f"{regs_B / 2**10:,.0f} KiB per SM, {sm * regs_B / 2**20:,.1f} MiB in all",
         "bandwidth": "not published", "latency": "not published", "source": "nvidia-h100-whitepaper"},
        {"level": "L1 / shared memory",
         "capacity": f"{facts.get(g, 'l1_shared_per_sm').value:,.0f} KiB per SM (shared up to "
                     f"{facts.get(sm_group, 'shared_memory_per_sm').value:,.0f} KiB)",
         "bandwidth": f"{l1.value:,.0f} B/clock/SM measured (H100 PCIe): {sm * l1.value * tensor_clock / 1e12:,.1f} TB/s "
                      f"for {sm:.0f} SMs at {tensor_clock / 1e6:,.0f} MHz",
         "latency": f"{facts.get(g, 'l1_latency').value:,.0f} cycles = "
                    f"{facts.get(g, 'l1_latency').value / clock * 1e9:,.0f} ns measured (H100 PCIe)",
         "source": "nvidia-blackwell-tuning-guide; ernst-gpu-benches-cache"},
        {"level": "L2", "capacity": f"{facts.get(g, 'l2_capacity').value:,.0f} MB",
         "bandwidth": f"{facts.get(g, 'l2_bandwidth').value:,.1f} TB/s measured (H100 PCIe, {sms_pcie:.0f} SMs)",
         "latency": f"{facts.get(g, 'l2_latency').value:,.0f} cycles = "
                    f"{facts.get(g, 'l2_latency').value / clock * 1e9:,.0f} ns measured (near partition, H100 PCIe)",
         "source": "nvidia-h100-whitepaper; ernst-gpu-benches-cache"},
        {"level": "HBM3", "capacity": f"{dev.values['memory_gb'].value:,.0f} GB (vendor's GB)",
         "bandwidth": f"{dev.memory_bw_Bps / 1e12:,.2f} TB/s",
         "latency": f"{facts.get(g, 'hbm_latency').value:,.0f} cycles = {hbm_latency_s(g) * 1e9:,.0f} ns measured "
                    f"(HBM2e, H100 PCIe)", "source": "nvidia-h100-datasheet; ernst-gpu-benches-cache"},
    ]


def h100_hierarchy_table(device: str = "h100-sxm", memory_group: str = "h100_memory", sm_group: str = "h100_sm"):
    return table(h100_hierarchy_rows(device, memory_group, sm_group), {
        "level": "level", "capacity": Col("capacity", wrap=True), "bandwidth": Col("bandwidth", wrap=True),
        "latency": Col("latency", wrap=True), "source": Col("sources", wrap=True)})


def hbm_latency_s(group: str = "h100_memory") -> float:
    """HBM load latency in seconds: the measured cycles over the clock they were counted at (facts ``group``)."""
    g = group
    return facts.get(g, "hbm_latency").value / facts.get(g, "measurement_clock").si


def h100_littles_law(bytes_per_thread_load: int = 4) -> simt.LittlesLaw:
    """Little's law for the H100 SXM5's HBM: its bandwidth, the latency measured on H100 PCIe, 132 SMs."""
    return simt.littles_law(specs.get("h100-sxm").memory_bw_Bps, hbm_latency_s(),
                            int(facts.get("h100_sm", "sm_count").value), bytes_per_thread_load)


def littles_law_table(bytes_per_thread=(4, 8, 16)):
    """Little's law for the H100's HBM, one row per load size (bytes per thread, one load in flight per warp)."""
    rows = []
    for b in bytes_per_thread:
        L = h100_littles_law(b)
        rows.append({"load": f"{b} B per thread ({L.bytes_per_warp_load_B} B per warp)",
                     "per_sm": L.per_sm_B / 2**10, "warps": L.warps_per_sm, "occ": L.occupancy_needed})
    return table(rows, {"load": "one load in flight per warp of", "per_sm": Col("bytes in flight per SM", "KiB", "{:,.1f}"),
                        "warps": Col("warps needed per SM", fmt="{:,.1f}"),
                        "occ": Col("occupancy needed", fmt="{:.0%}")})


def draw_sm(device_id: str = "h100-sxm"):
    """The SM and memory-hierarchy diagram (``x4lib.book.diagrams_chip.sm_hierarchy``) of a catalog GPU: SM count,
    Tensor Core clock and HBM from the catalog, the per-SM limits and cache figures from the H100 facts (compute
    capability 9.0). Returns the Axes."""
    from x4lib.book import diagram_parts, diagrams_chip
    _, ax = diagram_parts.new_axes()
    return diagrams_chip.sm_hierarchy(ax, specs.get(device_id), facts.group("h100_sm"), facts.group("h100_memory"))
