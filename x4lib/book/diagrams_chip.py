"""Diagrams of one GPU and one server, drawn from the catalog and the sourced facts so they change when a number does:
an H100 SM with the GPU's memory hierarchy (chapter 01) and the DGX H100 board (chapter 03).

Each function takes model objects and an Axes from :func:`x4lib.book.diagram_parts.new_axes` (inch coordinates,
house figure size), draws, and returns the Axes; no computation beyond unit conversion for the labels.
Used in: book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md, book/03-interconnects-and-topology.md.
"""
from __future__ import annotations

from typing import Mapping

from x4lib.book import diagram_parts as parts
from x4lib.book.diagram_parts import SMALL_PT, TEXT_PT, TITLE_PT


def _f(group, name: str) -> float:
    return group.facts[name].value


def sm_hierarchy(ax, device, sm, memory):
    """Left, one SM: its sub-partitions (one Tensor Core and a quarter of the register file each) and the L1/shared
    array; right, the memory levels from registers to HBM with capacity and bandwidth, each with its unit.

    ``device``: a catalog Device (SM count and the Tensor Core clock from ``peak_basis``; HBM capacity and bandwidth);
    ``sm`` and ``memory``: the facts groups ``h100_sm`` and ``h100_memory`` (x4lib.catalog.facts). The L1 bandwidth
    is the measured bytes per clock per SM × SMs × the Tensor Core clock, as in chapter 01's table."""
    ax = parts.canvas(ax)
    n_sm = int(device.peak_basis["units"])
    clock_Hz = device.peak_basis["clock_mhz"] * 1e6
    tc = int(_f(sm, "tensor_cores_per_sm"))
    regs_B = _f(sm, "registers_per_sm") * 4
    l1_KiB, smem_KiB = _f(memory, "l1_shared_per_sm"), _f(sm, "shared_memory_per_sm")
    l1_Bpc = _f(memory, "l1_bytes_per_clock_per_sm")
    l2, l2_bw = memory.facts["l2_capacity"], memory.facts["l2_bandwidth"]
    pcie_sms = int(_f(memory, "measurement_sm_count"))

    parts.note(ax, 0.15, 4.22, f"One SM of the {n_sm} on {device.name}", size=TITLE_PT, weight="bold")
    parts.box(ax, 0.15, 0.55, 3.2, 3.35, kind="mem", gid="sm")
    cols = 2
    rows = -(-tc // cols)
    w, h = 1.4, 2.0 / rows - 0.12
    for i in range(tc):
        x, y = 0.3 + (i % cols) * 1.5, 3.75 - (i // cols + 1) * (h + 0.12)
        parts.box(ax, x, y, w, h, kind="gpu", gid="subpartition")
        parts.box(ax, x + 0.1, y + h - 0.42, w - 0.2, 0.32, "Tensor Core", kind="core", gid="tensor-core")
        parts.note(ax, x + w / 2, y + 0.3, f"registers\n{regs_B / tc / 2**10:,.0f} KiB", size=SMALL_PT,
                   ha="center")
    parts.box(ax, 0.3, 1.05, 2.9, 0.55, f"L1 / shared memory: {l1_KiB:,.0f} KiB\n(shared up to {smem_KiB:,.0f} KiB)",
              kind="switch", size=SMALL_PT, gid="l1")
    parts.note(ax, 1.75, 0.78, f"{tc} Tensor Cores per SM × {n_sm} SMs = {tc * n_sm:,}", size=SMALL_PT, ha="center")
    parts.note(ax, 0.15, 0.3, "Bandwidths: bytes per second, GB = 1e9 B; KiB = 1024 B.", size=SMALL_PT)

    levels = [
        (f"Registers: {regs_B / 2**10:,.0f} KiB per SM",
         f"{n_sm * regs_B / 2**20:,.1f} MiB on {n_sm} SMs; bandwidth not published"),
        (f"L1 / shared: {l1_KiB:,.0f} KiB per SM",
         f"{l1_Bpc:,.0f} B/clock/SM (measured) = {n_sm * l1_Bpc * clock_Hz / 1e12:,.1f} TB/s on {n_sm} SMs"),
        (f"L2 cache: {l2.value:,.0f} {l2.unit}, shared by all SMs",
         f"{l2_bw.value:,.1f} {l2_bw.unit} measured (H100 PCIe, {pcie_sms} SMs)"),
        (f"HBM: {device.values['memory_gb'].value:,.0f} GB (the vendor's figure)",
         f"{device.memory_bw_Bps / 1e12:,.2f} TB/s (vendor)"),
    ]
    top, step, bh = 3.9, 0.86, 0.68
    for i, (head, sub) in enumerate(levels):
        y = top - bh - i * step
        parts.box(ax, 3.6, y, 3.3, bh, kind=("gpu", "switch", "cpu", "nic")[i], gid="level")
        parts.note(ax, 3.7, y + bh * 0.68, head, size=TEXT_PT)
        parts.note(ax, 3.7, y + bh * 0.27, sub, size=SMALL_PT)
        if i:
            parts.arrow(ax, (3.45, y + bh + step - bh - 0.02), (3.45, y + bh / 2), width=0.8)
    parts.note(ax, 3.6, 0.3, "down: larger, slower, farther from the Tensor Cores", size=SMALL_PT)
    return ax


def board_links(board) -> list[int]:
    """The NVLink links from each GPU to NVSwitch chip 0, 1, ... (facts group ``dgx_h100_board``)."""
    return [int(_f(board, f"links_to_switch_{i}")) for i in range(int(_f(board, "nvswitch_chips")))]


def dgx_board(ax, cluster, board, pcie, labels: Mapping[str, str] | None = None):
    """The board of one server of ``cluster`` (a clusters.Cluster, e.g. the 2x8-h100-ib400 preset): its GPUs, the
    NVSwitch chips with each GPU's links to each chip (line width ∝ links), one PCIe switch per GPU with the GPU's
    NIC behind it, and the CPUs, each serving an even share of the GPUs' switches (on the DGX H100, the
    ``gpus_per_network_module`` of the facts).

    ``board``: the facts group ``dgx_h100_board`` (counts and the link split); ``pcie``: the GPU's PCIe link
    (a ``x4lib.network.links.Link``, e.g. ``pcie-gen5-x16``). The NVLink rate per link is the cluster's per-GPU
    rate over the links."""
    ax = parts.canvas(ax)
    labels = dict(labels or {})
    n = cluster.gpus_per_node
    split = board_links(board)
    per_gpu = cluster.intra.bw_Bps
    per_link = per_gpu / sum(split)
    nic_bit_s = cluster.nic.bw_Bps * 8 if cluster.nic else 0.0
    cpus = int(_f(board, "cpus"))
    per_cpu = -(-n // cpus)  # GPUs split evenly over the CPUs (DGX H100: gpus_per_network_module, 4 per CPU)

    parts.note(ax, 0.1, 4.27, f"NVLink: {sum(split)} links × {per_link / 1e9:,.0f} GB/s = {per_gpu / 1e9:,.0f} GB/s "
               f"per GPU per direction, split {' + '.join(map(str, split))} over {len(split)} NVSwitch chips",
               size=TEXT_PT)
    parts.note(ax, 0.1, 4.04, f"NIC: {nic_bit_s / 1e9:,.0f} Gb/s = {nic_bit_s / 8e9:,.0f} GB/s per direction, one "
               f"per GPU behind its PCIe switch; {pcie.name}: {pcie.per_direction_Bps / 1e9:,.1f} GB/s per direction",
               size=SMALL_PT)
    x0, pitch, w = 1.0, (6.95 - 1.0) / n, 0.56
    gx = [x0 + i * pitch + (pitch - w) / 2 for i in range(n)]
    rows = {"switch": (3.2, 0.45), "gpu": (2.3, 0.4), "pcie": (1.55, 0.3), "nic": (0.9, 0.3), "cpu": (0.15, 0.35)}
    names = {"switch": "NVSwitch", "gpu": labels.get("gpu", "GPU"), "pcie": "PCIe switch", "nic": "NIC",
             "cpu": "CPU"}
    for key, (y, h) in rows.items():
        parts.note(ax, 0.1, y + h / 2, names[key], size=TEXT_PT)
    span = (6.95 - 1.0) / len(split)
    colors = parts.RAIL_COLORS[:len(split)]
    sy, sh = rows["switch"]
    gy, gh = rows["gpu"]
    for j, links in enumerate(split):
        sx = x0 + j * span + 0.08
        parts.box(ax, sx, sy, span - 0.16, sh, f"NVSwitch {j}\n{links} links per GPU", kind="switch",
                  size=SMALL_PT, gid="nvswitch")
        for i in range(n):
            top = (gx[i] + w / 2 + (j - (len(split) - 1) / 2) * 0.1, gy + gh)
            bottom = (sx + 0.1 + (span - 0.36) * i / max(n - 1, 1), sy)
            parts.link(ax, top, bottom, color=colors[j], width=0.35 * links, alpha=0.8, gid="nvlink")
    py, ph = rows["pcie"]
    ny, nh = rows["nic"]
    cy, ch = rows["cpu"]
    for i in range(n):
        parts.box(ax, gx[i], gy, w, gh, f"GPU {i}", kind="gpu", gid="gpu")
        parts.box(ax, gx[i], py, w, ph, "PCIe sw", kind="mem", size=SMALL_PT, gid="pcie-switch")
        parts.link(ax, (gx[i] + w / 2, gy), (gx[i] + w / 2, py + ph))
        if i < cluster.nics_per_node:
            parts.box(ax, gx[i], ny, w, nh, f"NIC {i}", kind="nic", size=SMALL_PT, gid="nic")
            parts.link(ax, (gx[i] + w / 2, py), (gx[i] + w / 2, ny + nh))
        gap = gx[i] + w + (pitch - w) / 2
        parts.link(ax, (gx[i] + w, py + ph / 2), (gap, py + ph / 2), color="#7a4f9a")
        parts.link(ax, (gap, py + ph / 2), (gap, cy + ch), color="#7a4f9a")
    for c in range(cpus):
        first, last = c * per_cpu, min(n, (c + 1) * per_cpu) - 1
        parts.box(ax, gx[first], cy, gx[last] + pitch - gx[first] - 0.05, ch,
                  f"CPU {c} (GPUs {first}–{last})", kind="cpu", gid="cpu")
    return ax
