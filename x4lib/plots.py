"""Figures of the book. Each function takes a Matplotlib Axes and result objects, draws, and returns
the Axes: no computation beyond unit conversion for display, no plt.show(), fixed figure sizes.

Three kinds of numbers look different everywhere: model predictions (lines, dashed where they are
a scenario), our measurements (filled markers), others' published measurements (hollow markers,
cited in the legend).
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from x4lib import roofline as rl

FIGSIZE = (7.0, 4.2)


def new_axes(figsize=FIGSIZE):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return fig, ax


def roofline(ax, roofs: Sequence[rl.Roofline], intensity_range=(0.1, 3000.0), marks=None):
    """Log-log rooflines: attainable TFLOP/s against FLOP/B, with each ridge point marked.
    ``marks`` = {label: intensity} draws dotted verticals for kernels of those intensities."""
    x = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 400)
    for roof in roofs:
        y = np.minimum(roof.peak_flop_per_s, x * roof.memory_bw_Bps) / 1e12
        line, = ax.loglog(x, y, label=f"{roof.device_id} {roof.dtype} (dense peak)")
        ax.plot([roof.ridge_flop_per_B], [roof.peak_flop_per_s / 1e12], "o", color=line.get_color(),
                markersize=4)
        ax.annotate(f"ridge {roof.ridge_flop_per_B:.0f} FLOP/B", (roof.ridge_flop_per_B, roof.peak_flop_per_s / 1e12),
                    textcoords="offset points", xytext=(6, -12), fontsize=8, color=line.get_color())
    for i, (label, x_i) in enumerate((marks or {}).items()):
        ax.axvline(x_i, linestyle=":", color=f"C{len(roofs) + i}", label=f"{label}: {x_i:,.1f} FLOP/B")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable rate (TFLOP/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return ax


def days_vs_gpus(ax, curves: Iterable[tuple[str, Sequence[int], Sequence[float]]], marker=None):
    """Model prediction of wall-clock days against GPU count, one line per (label, gpus, days).
    ``marker`` = (gpus, days, label) highlights one scenario."""
    for label, gpus, days in curves:
        ax.loglog(gpus, days, label=label)
    if marker:
        g, d, lab = marker
        ax.plot([g], [d], "o", color="black", markersize=5, label=lab)
    ax.set_xlabel("number of accelerators")
    ax.set_ylabel("wall clock (days, model prediction)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


POINT_STYLES = {
    "ours": dict(marker="o", linestyle="none", markersize=5),                         # filled: our measurements
    "theirs": dict(marker="D", linestyle="none", markersize=7, fillstyle="none"),      # hollow: others' published
    "prediction": dict(marker="", linestyle="--", linewidth=1),                        # dashed: model prediction
}


def points(ax, pts, kind: str, label: str, color=None):
    """Draw points {x: FLOP/B, y: TFLOP/s} in the style of their kind: ``ours`` (filled), ``theirs``
    (hollow, label must carry the citation) or ``prediction`` (dashed line)."""
    pts = sorted(pts, key=lambda p: p["x"])
    if not pts:
        return ax
    ax.plot([p["x"] for p in pts], [p["y"] for p in pts], label=label, color=color, **POINT_STYLES[kind])
    return ax


def roofline_panel(ax, roofs, series, intensity_range=(0.05, 20000.0)):
    """Rooflines plus point series [(kind, label, points)], kinds drawn as in :data:`POINT_STYLES`.
    Colours follow the dtype of each series (its label starts with the dtype)."""
    roofline(ax, roofs, intensity_range)
    colors = {r.dtype: line.get_color() for r, line in zip(roofs, ax.get_lines()[::2])}
    for kind, label, pts in series:
        points(ax, pts, kind, label, color=colors.get(label.split()[0]))
    ax.legend(fontsize=7, loc="lower right")
    return ax


def busbw_vs_size(ax, series):
    """busbw (GB/s) against message size (B), log-log; series = [(kind, label, points)] with points {x: bytes,
    y: GB/s}; kinds as in :data:`POINT_STYLES` (a ``prediction`` is drawn as a dashed curve)."""
    for kind, label, pts in series:
        points(ax, pts, kind, label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes, nccl-tests size)")
    ax.set_ylabel("busbw (GB/s, 1 GB = 1e9 B)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return ax
