"""Figures of the book. Each function takes a Matplotlib Axes and result objects, draws, and returns the Axes: no
computation beyond unit conversion for display, no plt.show(), fixed figure sizes.

Three kinds of numbers look different everywhere (the convention is explained once, on the front page):
model predictions are dashed lines, our measurements filled circles, others' published measurements hollow
diamonds with the citation in the legend.

Legibility at page width: figures are 7 × 4.4 in at 110 dpi (770 px, shown about 660 px wide in the book's
text column), with 11 pt axis labels, 10 pt ticks and 9 pt legends placed below the plot when they are long, so
no legend covers data. Text that comes from data (a device name, a log's label) is escaped before it reaches
Matplotlib, so a ``$`` is printed, not read as mathtext.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from x4lib import roofline as rl

FIGSIZE = (7.0, 4.4)
DPI = 110
LABEL_PT, TICK_PT, LEGEND_PT, NOTE_PT = 11, 10, 9, 9

POINT_STYLES = {
    "ours": dict(marker="o", linestyle="none", markersize=6),                         # filled: our measurements
    "theirs": dict(marker="D", linestyle="none", markersize=7, fillstyle="none"),      # hollow: others' published
    "prediction": dict(marker="", linestyle="--", linewidth=1.3),                      # dashed: model prediction
}


def text(label: str) -> str:
    """A label from data, safe for Matplotlib: ``$`` escaped (no mathtext), control characters dropped."""
    return "".join(ch for ch in str(label) if ch >= " " or ch == "\n").replace("$", r"\$")


def new_axes(figsize=FIGSIZE):
    """A figure and one Axes at the book's size and resolution (constrained layout)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=figsize, dpi=DPI, layout="constrained")
    return fig, ax


def _finish(ax, xlabel: str, ylabel: str, legend_below: bool = False, ncols: int = 2) -> None:
    ax.set_xlabel(xlabel, fontsize=LABEL_PT)
    ax.set_ylabel(ylabel, fontsize=LABEL_PT)
    ax.tick_params(labelsize=TICK_PT)
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if ax.get_legend():
        ax.get_legend().remove()
    for old in list(ax.figure.legends):
        old.remove()
    if legend_below or len(handles) > 4:  # under the figure: the axes keep the full width
        ax.figure.legend(handles, labels, fontsize=LEGEND_PT, loc="outside lower center", ncols=ncols, frameon=False)
    else:
        ax.legend(fontsize=LEGEND_PT, loc="lower right")


def roofline(ax, roofs: Sequence[rl.Roofline], intensity_range=(0.1, 3000.0), marks=None, legend_below=None):
    """Log-log rooflines: attainable TFLOP/s against FLOP/B, with each ridge point marked.
    ``marks`` = {label: intensity} draws dotted verticals for kernels of those intensities."""
    x = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 400)
    for roof in roofs:
        y = np.minimum(roof.peak_flop_per_s, x * roof.memory_bw_Bps) / 1e12
        line, = ax.loglog(x, y, label=text(f"{roof.device_id} {roof.dtype} (dense peak)"))
        ax.plot([roof.ridge_flop_per_B], [roof.peak_flop_per_s / 1e12], "o", color=line.get_color(),
                markersize=4)
        ax.annotate(f"ridge {roof.ridge_flop_per_B:.0f} FLOP/B", (roof.ridge_flop_per_B, roof.peak_flop_per_s / 1e12),
                    textcoords="offset points", xytext=(6, -13), fontsize=NOTE_PT, color=line.get_color())
    for i, (label, x_i) in enumerate((marks or {}).items()):
        ax.axvline(x_i, linestyle=":", color=f"C{len(roofs) + i}", label=text(f"{label}: {x_i:,.1f} FLOP/B"))
    _finish(ax, "arithmetic intensity (FLOP/byte)", "attainable rate (TFLOP/s)",
            legend_below if legend_below is not None else len(roofs) + len(marks or {}) > 3)
    return ax


def days_vs_gpus(ax, curves: Iterable[tuple[str, Sequence[int], Sequence[float]]], marker=None):
    """Model prediction of wall-clock days against GPU count, one line per (label, gpus, days).
    ``marker`` = (gpus, days, label) highlights one scenario."""
    for label, gpus, days in curves:
        ax.loglog(gpus, days, label=text(label))
    if marker:
        g, d, lab = marker
        ax.plot([g], [d], "o", color="black", markersize=6, label=text(lab))
    _finish(ax, "number of accelerators", "wall clock (days, model prediction)", legend_below=False)
    return ax


def points(ax, pts, kind: str, label: str, color=None):
    """Draw points {x, y} in the style of their kind: ``ours`` (filled), ``theirs`` (hollow, label must carry the
    citation) or ``prediction`` (dashed line)."""
    pts = sorted(pts, key=lambda p: p["x"])
    if not pts:
        return ax
    ax.plot([p["x"] for p in pts], [p["y"] for p in pts], label=text(label), color=color, **POINT_STYLES[kind])
    return ax


def roofline_panel(ax, roofs, series, intensity_range=(0.05, 20000.0)):
    """Rooflines plus point series [(kind, label, points)], kinds drawn as in :data:`POINT_STYLES`.
    Colours follow the dtype of each series (its label starts with the dtype); the legend goes below."""
    roofline(ax, roofs, intensity_range, legend_below=True)
    colors = {r.dtype: line.get_color() for r, line in zip(roofs, ax.get_lines()[::2])}
    for kind, label, pts in series:
        points(ax, pts, kind, label, color=colors.get(label.split()[0]))
    _finish(ax, "arithmetic intensity (FLOP/byte)", "attainable rate (TFLOP/s)", legend_below=True)
    return ax


def busbw_vs_size(ax, series):
    """busbw (GB/s) against message size (B), log-log; series = [(kind, label, points)] with points {x: bytes,
    y: GB/s}; kinds as in :data:`POINT_STYLES` (a ``prediction`` is drawn as a dashed curve)."""
    for kind, label, pts in series:
        points(ax, pts, kind, label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _finish(ax, "message size (bytes, nccl-tests size)", "busbw (GB/s, 1 GB = 1e9 B)", legend_below=True)
    return ax


def predicted_vs_measured(ax, series, band: float = 0.15, annotate: bool = True):
    """Predicted against measured rate (TFLOP/s, log-log): series = [(kind, label, points {x: measured,
    y: predicted, label})], others' measurements hollow and cited in their label; the dashed diagonal is a perfect
    prediction and the dotted lines ±``band``. ``annotate`` writes each point's ``label`` once, beside it."""
    xs = [p["x"] for _, _, pts in series for p in pts] + [p["y"] for _, _, pts in series for p in pts]
    lo, hi = min(xs) / 1.4, max(xs) * 1.4
    line = np.array([lo, hi])
    ax.loglog(line, line, linestyle="--", color="0.3", linewidth=1.0, label="prediction = measurement")
    for f in (1 - band, 1 + band):
        ax.loglog(line, line * f, linestyle=":", color="0.5", linewidth=1.0)
    ax.plot([], [], linestyle=":", color="0.5", label=text(f"±{band:.0%}"))
    seen = set()
    for kind, label, pts in series:
        points(ax, pts, kind, label)
        if annotate:
            for p in pts:
                if p.get("label") and p["label"] not in seen:
                    seen.add(p["label"])
                    ax.annotate(text(p["label"]), (p["x"], p["y"]), textcoords="offset points", xytext=(5, -3),
                                fontsize=NOTE_PT - 1, color="0.25")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        axis.set_minor_formatter(NullFormatter())
    _finish(ax, "measured by others (TFLOP/s)", "predicted (TFLOP/s)", legend_below=True, ncols=1)
    return ax


def rate_vs_size(ax, series, xlabel: str = "matrix size n of an n³ matmul", ylabel: str = "rate (TFLOP/s)"):
    """Rate against matrix size (log-log, x in powers of two): series = [(kind, label, points {x, y})], kinds as
    in :data:`POINT_STYLES` (a model prediction dashed, others' points hollow and cited). Series whose labels start
    with the same word (a device id) share a colour."""
    colors: dict[str, str] = {}
    for kind, label, pts in series:
        color = colors.setdefault(label.split()[0], f"C{len(colors)}")
        points(ax, pts, kind, label, color=color)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _finish(ax, xlabel, ylabel, legend_below=True, ncols=1)
    return ax
