"""Figures of the book. Each function takes a Matplotlib Axes and result objects, draws, and returns the Axes: no
computation beyond unit conversion for display, no plt.show(), fixed figure sizes.

Three kinds of numbers look different everywhere (the convention is explained once, on the front page):
model predictions are dashed lines, our measurements filled circles, others' published measurements hollow
diamonds with the citation in the legend.

Legibility at page width: figures are 7 × 4.4 in at 110 dpi (770 px, shown about 660 px wide in the book's
text column), with 11 pt axis labels, 10 pt ticks and 9 pt legends placed below the plot when they are long, so
no legend covers data; a legend below is never wider than the figure (fewer columns, then long labels wrapped),
since a wider one widens the saved image and the book would shrink all its text to fit the column. Text that
comes from data (a device name, a log's label) is escaped before it reaches Matplotlib, so a ``$`` is printed,
not read as mathtext.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from x4lib.compute import roofline as rl

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
        _legend_below(ax.figure, handles, labels, ncols)
    else:
        ax.legend(fontsize=LEGEND_PT, loc="lower right")


def _legend_below(fig, handles, labels, ncols: int):
    """The figure's legend under the plot, no wider than the figure: fewer columns, then long labels wrapped.
    A legend wider than the figure widens the saved image (the notebook saves with a tight bounding box), and the
    book then shrinks the whole figure, text included, to the column's width."""
    import textwrap
    renderer = fig.canvas.get_renderer()
    limit = 0.98 * fig.bbox.width

    def place(labels, n):
        leg = fig.legend(handles, labels, fontsize=LEGEND_PT, loc="outside lower center", ncols=n, frameon=False)
        return leg, leg.get_window_extent(renderer).width

    for n in range(max(1, ncols), 0, -1):
        leg, width = place(labels, n)
        if width <= limit or n == 1:
            break
        leg.remove()
    chars = max(len(line) for label in labels for line in str(label).splitlines() or [""])
    while width > limit and chars > 20:  # one column and still too wide: wrap the longest labels
        chars = max(20, int(chars * limit / width) - 2)
        wrapped = [textwrap.fill(str(label), chars, break_on_hyphens=False) for label in labels]
        leg.remove()
        leg, width = place(wrapped, 1)
    return leg


def roofline(ax, roofs: Sequence[rl.Roofline], intensity_range=(0.1, 3000.0), marks=None, legend_below=None,
             annotate_ridges: bool = True):
    """Log-log rooflines: attainable TFLOP/s against FLOP/B, with each ridge point marked.
    ``marks`` = {label: intensity} draws dotted verticals for kernels of those intensities;
    ``annotate_ridges=False`` leaves out the ridge labels (for figures with many rooflines)."""
    x = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 400)
    for roof in roofs:
        y = np.minimum(roof.peak_flop_per_s, x * roof.memory_bw_Bps) / 1e12
        line, = ax.loglog(x, y, label=text(f"{roof.device_id} {roof.dtype} (dense peak)"))
        ax.plot([roof.ridge_flop_per_B], [roof.peak_flop_per_s / 1e12], "o", color=line.get_color(),
                markersize=4)
        if annotate_ridges:
            ax.annotate(f"ridge {roof.ridge_flop_per_B:.0f} FLOP/B",
                        (roof.ridge_flop_per_B, roof.peak_flop_per_s / 1e12),
                        textcoords="offset points", xytext=(6, -13), fontsize=NOTE_PT, color=line.get_color())
    for i, (label, x_i) in enumerate((marks or {}).items()):
        ax.axvline(x_i, linestyle=":", color=f"C{len(roofs) + i}", label=text(f"{label}: {x_i:,.1f} FLOP/B"))
    _finish(ax, "arithmetic intensity (FLOP/byte)", "attainable rate (TFLOP/s)",
            legend_below if legend_below is not None else len(roofs) + len(marks or {}) > 3)
    return ax


def days_vs_gpus(ax, curves: Iterable[tuple[str, Sequence[int], Sequence[float]]], marker=None, reference=None):
    """Model prediction of wall-clock days against GPU count, one line per (label, gpus, days), each with its own
    marker so that two lines that meet stay visible. ``marker`` = (gpus, days, label) highlights one scenario;
    ``reference`` = (label, gpus, days) is drawn grey and dotted (e.g. perfect scaling, for comparison)."""
    shapes = ("o", "s", "^", "D", "v", "P")
    for i, (label, gpus, days) in enumerate(curves):
        ax.loglog(gpus, days, marker=shapes[i % len(shapes)], markersize=5, label=text(label))
    if reference:
        lab, gpus, days = reference
        ax.loglog(gpus, days, linestyle=":", color="0.45", linewidth=1.2, label=text(lab))
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


def roofline_panel(ax, roofs, series, intensity_range=(0.05, 20000.0), annotate_ridges: bool = True):
    """Rooflines plus point series [(kind, label, points)], kinds drawn as in :data:`POINT_STYLES`.
    Colours follow the dtype of each series (its label starts with the dtype); the legend goes below."""
    roofline(ax, roofs, intensity_range, legend_below=True, annotate_ridges=annotate_ridges)
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


# ------------------------------------------------------------------------------------------- chapter 03

def topology_scaling(ax, series, ylabel: str, logy: bool = False):
    """Model predictions of one topology metric against the number of endpoints: series = [(label, sizes, values)],
    dashed lines with a marker per computed size (book/03-interconnects-and-topology.md)."""
    for label, xs, ys in series:
        ax.plot(xs, ys, marker="o", markersize=3.5, linestyle="--", linewidth=1.3, label=text(label))
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    _finish(ax, "endpoints (accelerators)", ylabel, legend_below=True)
    return ax


def step_breakdown(ax, rows, parts):
    """Horizontal stacked bars of a training step's predicted time: rows = [(label, {part: seconds})], ``parts`` the
    order of the stack. All bars are model predictions (the caption says so)."""
    labels = [text(r[0]) for r in rows][::-1]
    left = [0.0] * len(rows)
    for i, part in enumerate(parts):
        vals = [r[1].get(part, 0.0) for r in rows][::-1]
        ax.barh(labels, vals, left=left, label=text(part), color=f"C{i}", height=0.6)
        left = [a + b for a, b in zip(left, vals)]
    ax.tick_params(axis="y", labelsize=TICK_PT)
    _finish(ax, "time per training step (s, model prediction)", "", legend_below=True)
    ax.grid(True, axis="x", alpha=0.3)
    ax.grid(False, axis="y")
    return ax


# ------------------------------------------------------------------------------------------- chapter 02

def value_ruler(ax, formats_values: Sequence[tuple[str, Sequence[float]]], lo: float = 1e-3, hi: float = 1e5):
    """Where each format's positive representable values lie: one row of ticks per (label, values) on a log axis
    (computed values; the gaps are the spacing)."""
    for row, (label, values) in enumerate(formats_values):
        v = np.asarray([x for x in values if lo <= x <= hi])
        ax.plot(v, np.full(v.shape, row), "|", markersize=14, markeredgewidth=1.2)
    ax.set_xscale("log")
    ax.set_yticks(range(len(formats_values)), [text(label) for label, _ in formats_values])
    ax.set_ylim(-0.7, len(formats_values) - 0.3)
    ax.set_xlim(lo, hi)
    _finish(ax, "value (log scale)", "")
    return ax


def grouped_bars(ax, groups: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], ylabel: str,
                 xlabel: str = ""):
    """Bars: one group per entry of ``groups``, one bar per (label, values) series within each group."""
    n = len(series)
    width = 0.8 / max(n, 1)
    x = np.arange(len(groups))
    for i, (label, values) in enumerate(series):
        ax.bar(x + (i - (n - 1) / 2) * width, values, width, label=text(label))
    ax.set_xticks(x, [text(g) for g in groups])
    _finish(ax, xlabel, ylabel, legend_below=True)
    ax.grid(True, axis="y", alpha=0.3)
    ax.grid(False, axis="x")
    return ax


def scaling_trace(ax, steps, fmax: float, label: str = "delayed scaling"):
    """Delayed scaling over training steps: |x|max × scale against the format's largest value (above it: saturated)."""
    t = [s.step for s in steps]
    ax.semilogy(t, [s.scaled_amax for s in steps], "o-", markersize=3, label=text(f"amax x scale ({label})"))
    ax.axhline(fmax, linestyle="--", color="black", linewidth=1, label=text(f"largest finite value ({fmax:g})"))
    _finish(ax, "training step", "scaled amax (log scale)", legend_below=True)
    return ax


def decode_throughput(ax, curves, capacity_marks=None):
    """Model prediction of decode throughput: tokens/s (upper bound) against batch, one dashed line per
    (label, batches, tokens_per_s); ``capacity_marks`` = [(label, batch, tokens/s)] marks where memory runs out."""
    for label, batches, tps in curves:
        ax.loglog(batches, tps, label=text(label), **POINT_STYLES["prediction"])
    for label, b, tps in capacity_marks or []:
        ax.plot([b], [tps], "x", color="black", markersize=7)
    if capacity_marks:
        ax.plot([], [], "x", color="black", label="largest batch that fits (weights + KV cache)")
    _finish(ax, "batch (sequences decoded together)", "tokens/s, upper bound (model)", legend_below=True)
    return ax


def stacked_bars(ax, labels: Sequence[str], parts: Sequence[tuple[str, Sequence[float]]],
                 lines: Sequence[tuple[str, float]] = (), ylabel: str = ""):
    """Stacked bars (one per label; parts = (name, values) stacked bottom-up) with horizontal reference lines
    (label, value), e.g. device capacities."""
    x = np.arange(len(labels))
    bottom = np.zeros(len(labels))
    for name, values in parts:
        ax.bar(x, values, 0.6, bottom=bottom, label=text(name))
        bottom += np.asarray(values, dtype=float)
    for i, (name, value) in enumerate(lines):
        ax.axhline(value, linestyle="--", linewidth=1, color=f"C{len(parts) + i}", label=text(name))
    ax.set_xticks(x, [text(lab) for lab in labels])
    _finish(ax, "", ylabel, legend_below=True)
    ax.grid(False, axis="x")
    return ax


# ------------------------------------------------------------------------------------- chapter 04: economics

def cost_vs_utilisation(ax, utilisation, owned_usd, prices, break_evens=None):
    """Owned cost per GPU-hour of work against utilisation (model, dashed) with rental prices as horizontal lines
    (dated snapshots, dotted). ``prices`` = {label: USD/GPU-h}; ``break_evens`` = {label: u*} marks crossings."""
    ax.plot(utilisation, owned_usd, label="owned (model)", color="black", **POINT_STYLES["prediction"])
    for i, (label, price) in enumerate(prices.items()):
        ax.axhline(price, linestyle=":", color=f"C{i}", label=text(label))
        u = (break_evens or {}).get(label)
        if u is not None and 0 < u <= 1:
            ax.plot([u], [price], "o", color=f"C{i}", markersize=5)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.25 * max(prices.values()) if prices else None)
    _finish(ax, "utilisation (fraction of the year's hours doing work)", "USD per GPU-hour of work",
            legend_below=True)
    return ax


def goodput_vs_interval(ax, curves, marks=None):
    """Goodput (model) against the checkpoint interval in minutes, one dashed line per (label, minutes, goodput);
    ``marks`` = {label: (minutes, goodput)} marks chosen intervals."""
    for label, minutes, g in curves:
        ax.plot(minutes, g, label=text(label), **POINT_STYLES["prediction"])
    for i, (label, (m, g)) in enumerate((marks or {}).items()):
        ax.plot([m], [g], marker="os^v"[i % 4], linestyle="none", color="black", markersize=6, label=text(label))
    ax.set_xscale("log")
    _finish(ax, "compute time between checkpoints (minutes)", "goodput (fraction of wall clock kept)",
            legend_below=True)
    return ax


def tornado(ax, rows, base, unit_label: str):
    """Horizontal bars: the model's output when each input alone takes its low and its high value.
    ``rows`` = [(label, value_at_low, value_at_high)], drawn largest swing on top; ``base`` marks the reference."""
    rows = sorted(rows, key=lambda r: max(abs(r[1] - base), abs(r[2] - base)))
    for i, (label, lo, hi) in enumerate(rows):   # two thin bars per input, so they never hide each other
        ax.barh(i + 0.2, lo - base, left=base, height=0.38, color="C0",
                label="input at its low value" if i == 0 else None)
        ax.barh(i - 0.2, hi - base, left=base, height=0.38, color="C1",
                label="input at its high value" if i == 0 else None)
    ax.axvline(base, color="black", linewidth=1)
    ax.set_yticks(range(len(rows)), [text(r[0]) for r in rows], fontsize=TICK_PT)
    ax.grid(True, axis="x", alpha=0.3)
    _finish(ax, unit_label, "", legend_below=True)
    ax.grid(False, axis="y")
    return ax


# ------------------------------------------------------------------------------------------------- Lab 01

def busbw_vs_model(ax, series, band: float = 0.15):
    """Measured busbw (y) against the model's (x), log-log, for others' published logs: ``series`` = [(label,
    [{x: model GB/s, y: measured GB/s}])], drawn hollow (theirs; the label names what they are, the table beside
    the figure cites each log); the dashed diagonal is measured = model, the shaded band ±``band``."""
    xs = [p["x"] for _, pts in series for p in pts] + [p["y"] for _, pts in series for p in pts]
    lo, hi = (min(xs) / 1.5, max(xs) * 1.5) if xs else (1.0, 1000.0)
    grid = np.geomspace(lo, hi, 50)
    ax.fill_between(grid, grid * (1 - band), grid * (1 + band), color="0.85", label=f"within ±{band:.0%}")
    ax.plot(grid, grid, linestyle="--", color="0.3", linewidth=1.0, label="measured = model")
    markers = ["D", "o", "s", "^", "v", "P", "X", "h"]
    for i, (label, pts) in enumerate(series):
        style = dict(POINT_STYLES["theirs"], marker="x" if label.startswith("flagged") else markers[i % len(markers)])
        if style["marker"] == "x":
            style.pop("fillstyle")
        ax.plot([p["x"] for p in pts], [p["y"] for p in pts], label=text(label), **style)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    _finish(ax, "model busbw (GB/s, NCCL's cost model)", "measured busbw (GB/s, published logs)", legend_below=True)
    return ax


# ------------------------------------------------------------------------------------------- chapter 01

def new_grid(nrows: int, ncols: int, figsize=FIGSIZE):
    """A figure with an nrows × ncols grid of Axes at the book's size and resolution (constrained layout)."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, dpi=DPI, layout="constrained", squeeze=False)
    return fig, axes


def bandwidth_vs_working_set(ax, series, caches=(), ylabel="read bandwidth (GB/s, 1 GB = 1e9 B)"):
    """Our measured bandwidth against working-set size (log-log, x in bytes with binary ticks): ``series`` =
    [(label, points {x: bytes, y: GB/s})], drawn as filled markers joined by a thin line; ``caches`` =
    [(label, bytes)] marked as dotted verticals (the sizes the system reports); a cache larger than the largest
    working set measured is named in the legend instead ("beyond the sweep")."""
    xmax = 0
    for label, pts in series:
        pts = sorted(pts, key=lambda p: p["x"])
        xmax = max([xmax] + [p["x"] for p in pts])
        line, = ax.plot([p["x"] for p in pts], [p["y"] for p in pts], label=text(label),
                        **{**POINT_STYLES["ours"], "markersize": 4})
        ax.plot([p["x"] for p in pts], [p["y"] for p in pts], "-", color=line.get_color(), linewidth=0.8, alpha=0.6)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ymax = ax.get_ylim()[1]
    shown = 0
    for label, size in caches:
        if size > 1.5 * xmax:
            ax.plot([], [], linestyle=":", color="0.35", label=text(f"{label}: beyond the sweep"))
            continue
        ax.axvline(size, linestyle=":", color="0.35", linewidth=1)
        ax.annotate(text(label), (size, ymax), textcoords="offset points", xytext=(3, -12 - 11 * (shown % 2)),
                    fontsize=NOTE_PT, color="0.25")
        shown += 1
    ticks = [2 ** e for e in range(10, 41, 2) if ax.get_xlim()[0] <= 2 ** e <= ax.get_xlim()[1]]
    ax.set_xticks(ticks, [_binary(t) for t in ticks])
    _finish(ax, "working set (bytes)", ylabel, legend_below=True)
    return ax


def _binary(n: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n:g} B"


def systolic_frames(axes, frames, rows: int, cols: int, a_rows: int):
    """Snapshots of a weight-stationary array, one Axes per frame: each PE shows the A element it holds
    ("a" row,k) coloured by the row of A, empty PEs blank; outputs leaving the bottom are listed under it."""
    import matplotlib.pyplot as plt
    cmap = plt.get_cmap("tab10")
    for ax, fr in zip(np.ravel(axes), frames):
        ax.set_xlim(-0.5, cols - 0.5)
        ax.set_ylim(rows + 0.3, -0.9)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        for i in range(rows):
            for j in range(cols):
                r, kk = int(fr["a_row"][i][j]), int(fr["k_index"][i][j])
                face = cmap(r % 10) if r >= 0 else "white"
                ax.add_patch(plt.Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, facecolor=face, alpha=0.35 if r >= 0 else 1,
                                           edgecolor="0.4", linewidth=0.8))
                if r >= 0:
                    ax.text(j, i, f"a{r},{kk}", ha="center", va="center", fontsize=NOTE_PT - 1)
        out = ", ".join(f"c{r},{c}" for r, c in fr["outputs"]) or "–"
        ax.set_title(f"cycle {fr['cycle']}", fontsize=NOTE_PT + 1, pad=2)
        ax.text((cols - 1) / 2, rows + 0.05, f"out: {out}", ha="center", va="top", fontsize=NOTE_PT - 1)
    return axes


def utilisation_vs_rows(ax, curves, points=()):
    """Array utilisation (0..1) against the number of rows of A streamed through it (log2 x): ``curves`` =
    [(label, ms, utilisations)] from the cycle formula (model, dashed), ``points`` = [(label, ms, utilisations)]
    from the cycle-level simulator (x markers, same colours in order)."""
    colors = []
    for label, ms, us in curves:
        line, = ax.plot(ms, us, label=text(label), **POINT_STYLES["prediction"])
        colors.append(line.get_color())
    for (label, ms, us), color in zip(points, colors + [None] * len(points)):
        ax.plot(ms, us, "x", color=color, markersize=7, label=text(label))
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.05)
    _finish(ax, "rows of A streamed through the array (m)", "utilisation (useful MACs / PE-cycles)",
            legend_below=True)
    return ax


def prediction_bars(ax, rows, cases, devices):
    """Model-predicted time (µs, log scale) of each case on each device, grouped by case: ``rows`` carry
    'case', 'device' and 'time_us' (hatched bars: predictions, not measurements)."""
    width = 0.8 / max(1, len(devices))
    for i, dev in enumerate(devices):
        ys = [next((r["time_us"] for r in rows if r["case"] == c and r["device"] == dev), float("nan")) for c in cases]
        ax.bar([j + (i - (len(devices) - 1) / 2) * width for j in range(len(cases))], ys, width,
               label=text(f"{dev} (model prediction)"), hatch="//", edgecolor="white", linewidth=0.5)
    ax.set_yscale("log")
    ax.set_xticks(range(len(cases)), [text(c) for c in cases])
    _finish(ax, "matmul (given shapes)", "predicted time (µs)", legend_below=True)
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


# ------------------------------------------------------------------------------ capstone: the training planner

def mfu_validation(ax, groups, band_pp: float = 10.0):
    """Planner MFU against the MFU published runs reached, both in percent of the dense peak in one convention:
    groups = [(label with its citation, [{x: published %, y: predicted %}])], drawn hollow (others' measurements
    on the x axis); the dashed diagonal is a perfect prediction and the dotted lines ±``band_pp`` points."""
    xs = [p[k] for _, pts in groups for p in pts for k in ("x", "y")]
    lo, hi = max(0.0, min(xs) - 8), min(100.0, max(xs) + 8)
    line = np.array([lo, hi])
    ax.plot(line, line, linestyle="--", color="0.3", linewidth=1.0, label="prediction = published")
    for d in (-band_pp, band_pp):
        ax.plot(line, line + d, linestyle=":", color="0.5", linewidth=1.0)
    ax.plot([], [], linestyle=":", color="0.5", label=text(f"±{band_pp:g} percentage points"))
    for i, (label, pts) in enumerate(groups):
        ax.plot([p["x"] for p in pts], [p["y"] for p in pts], label=text(label), color=f"C{i}",
                **POINT_STYLES["theirs"])
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    _finish(ax, "published MFU, recomputed (% of dense BF16 peak)", "planner's MFU (% of dense BF16 peak)",
            legend_below=True, ncols=2)
    return ax


def landscape_scatter(ax, pts, ridges=(100, 300, 1000)):
    """Chapter 05: dense BF16 peak against memory bandwidth, one marker per chip (vendor figures, not
    measurements): shipping parts filled circles, announced parts hollow squares; dotted lines of constant ridge
    point (FLOP/B = peak / bandwidth). Chips on (nearly) the same point share one label.
    ``pts``: [{device, status, bw_tb_s, bf16_tflops}]."""
    xs = [p["bw_tb_s"] for p in pts]
    lo, hi = min(xs) * 0.7, max(xs) * 1.4
    ylo, yhi = min(p["bf16_tflops"] for p in pts) * 0.6, max(p["bf16_tflops"] for p in pts) * 1.6
    x = np.geomspace(lo, hi, 50)
    for r in ridges:
        ax.plot(x, x * r, color="0.6", linestyle=":", linewidth=1)
        xa = min(hi / 1.1, yhi / 1.3 / r)
        ax.annotate(f"{r} FLOP/B", (xa, xa * r), fontsize=NOTE_PT, color="0.4", ha="right", va="bottom")
    for status, style in (("shipping", dict(marker="o", color="C0")),
                          ("announced", dict(marker="s", color="C3", fillstyle="none"))):
        sel = [p for p in pts if p["status"] == status]
        if sel:
            ax.plot([p["bw_tb_s"] for p in sel], [p["bf16_tflops"] for p in sel], linestyle="none", markersize=7,
                    label=f"{status} (vendor figures)", **style)
    groups: dict = {}
    for p in pts:
        key = (round(float(np.log10(p["bw_tb_s"])), 1), round(float(np.log10(p["bf16_tflops"])), 1))
        groups.setdefault(key, []).append(p)
    for grp in groups.values():
        ax.annotate(text(" / ".join(p["device"] for p in grp)), (grp[0]["bw_tb_s"], grp[0]["bf16_tflops"]),
                    fontsize=NOTE_PT - 1, xytext=(4, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(ylo, yhi)
    _finish(ax, "memory bandwidth per chip (TB/s, TB = 1e12 B)", "dense BF16 peak per chip (TFLOP/s)",
            legend_below=True, ncols=2)
    return ax


def achievable_bars(ax, rows):
    """Chapter 05: per device the dense BF16 peak (bar), the best published measurement (hollow diamond, others',
    cited) and the achievable-rates model at 8192³ (dashed tick). ``rows``: landscape.achievable_bf16 dicts."""
    names = [r["device"] for r in rows]
    y = np.arange(len(rows))
    ax.barh(y, [r["peak_tflops"] for r in rows], color="0.85", label="dense peak (catalog)")
    meas = [(i, r["measured_tflops"]) for i, r in enumerate(rows) if r["measured_tflops"]]
    if meas:
        ax.plot([m for _, m in meas], [i for i, _ in meas], label="best published measurement (others')",
                color="C1", **POINT_STYLES["theirs"])
    first = True
    for i, r in enumerate(rows):
        if r["model_tflops"]:
            ax.plot([r["model_tflops"]] * 2, [i - 0.35, i + 0.35], color="C0", linestyle="--", linewidth=1.5,
                    label="model at 8192³ (x4lib.compute.matmul)" if first else None)
            first = False
    ax.set_yticks(y, [text(n) for n in names])
    ax.invert_yaxis()
    _finish(ax, "dense BF16 (TFLOP/s)", "", legend_below=True, ncols=2)
    return ax


def pair_bars(ax, rows):
    """Chapter 05: two chips under each workload, each score as a fraction of the better of the two, with the
    deciding constraint written on the bar. ``rows``: [{workload, device, score, constraint}], two per workload."""
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    devices = list(dict.fromkeys(r["device"] for r in rows))
    h = 0.38
    for j, dev in enumerate(devices):
        ys, xs, notes = [], [], []
        for i, w in enumerate(workloads):
            pair = [r for r in rows if r["workload"] == w]
            best = max(r["score"] for r in pair) or 1.0
            r = next(r for r in pair if r["device"] == dev)
            ys.append(i + (j - 0.5) * h)
            xs.append(r["score"] / best)
            notes.append(r["constraint"])
        ax.barh(ys, xs, height=h, color=f"C{j}", label=text(dev))
        for y, x, note in zip(ys, xs, notes):
            ax.annotate(text(note), (x, y), xytext=(4, 0), textcoords="offset points", va="center",
                        fontsize=NOTE_PT - 1)
    ax.set_yticks(range(len(workloads)), [text(w) for w in workloads])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.45)
    _finish(ax, "score as a fraction of the better chip (model, upper bounds)", "", legend_below=True, ncols=2)
    return ax


def mfu_vs_efficiency(ax, efficiencies_pct, mfus_pct, label: str, marks=None):
    """MFU (%, model prediction, dashed) against the matmul efficiency (% of the dense peak); ``marks`` =
    {label: (efficiency %, MFU %)} marks chosen efficiencies."""
    ax.plot(efficiencies_pct, mfus_pct, label=text(label), **POINT_STYLES["prediction"])
    for i, (mark, (e, m)) in enumerate((marks or {}).items()):
        ax.plot([e], [m], marker="os^v"[i % 4], linestyle="none", color="black", markersize=6, label=text(mark))
    ax.set_xlim(0, 100)
    ax.set_ylim(0, None)
    _finish(ax, "matmul efficiency (% of the dense peak)", "MFU (%, model prediction)", legend_below=True, ncols=1)
    return ax
