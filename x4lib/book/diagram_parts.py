"""Parts of the book's explanatory diagrams (boxes, links, labels) and the check that their text does not overlap.

A diagram is drawn on one Axes that covers its whole figure, in inches: x from 0 to the figure's width, y from 0 to
its height, so a box's size on the page is its size here. Text uses the house sizes of :mod:`x4lib.book.plots`
(9 pt notes, 10 pt labels) at the house figure size, 7 × 4.4 in at 110 dpi; nothing is drawn smaller than 8 pt.
Used by: :mod:`x4lib.book.diagrams_chip` and :mod:`x4lib.book.diagrams_network` (chapters 01 and 03).
"""
from __future__ import annotations

from x4lib.book import plots

FIGSIZE = plots.FIGSIZE
TEXT_PT, SMALL_PT, TITLE_PT = plots.NOTE_PT, 8, plots.LABEL_PT - 1
#: rail colours (one per GPU index of a node), colour-blind-safe Okabe–Ito order
RAIL_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
FILL = {"gpu": "#dbe9f6", "switch": "#fde7c8", "nic": "#d9f0e3", "cpu": "#ece2f0", "mem": "#f2f2f2",
        "core": "#cfe3c4"}


def new_axes(figsize=FIGSIZE):
    """A figure of the house size and one Axes covering it, in inches, axes hidden."""
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=figsize, dpi=plots.DPI)
    ax = fig.add_axes((0, 0, 1, 1))
    return fig, canvas(ax)


def canvas(ax):
    """Set ``ax`` to inch coordinates of its figure (0..width, 0..height), no frame or ticks; returns it."""
    w, h = ax.figure.get_size_inches()
    ax.set_xlim(0, w)
    ax.set_ylim(0, h)
    ax.set_axis_off()
    return ax


def box(ax, x: float, y: float, w: float, h: float, label: str = "", kind: str = "gpu", size: float = TEXT_PT,
        gid: str | None = None, color: str | None = None, **text_kw):
    """A rounded box with its lower-left corner at (x, y) in inches and an optional centred label."""
    from matplotlib.patches import FancyBboxPatch
    patch = FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.04", linewidth=0.8,
                           edgecolor="#333333", facecolor=color or FILL[kind])
    if gid:
        patch.set_gid(gid)
    ax.add_patch(patch)
    if label:
        ax.text(x + w / 2, y + h / 2, plots.text(label), ha="center", va="center", fontsize=size, **text_kw)
    return patch


def link(ax, xy0, xy1, color: str = "#555555", width: float = 0.8, gid: str | None = None, **kw):
    """A straight line between two points (inches)."""
    line, = ax.plot([xy0[0], xy1[0]], [xy0[1], xy1[1]], color=color, linewidth=width, solid_capstyle="butt", **kw)
    if gid:
        line.set_gid(gid)
    return line


def arrow(ax, xy0, xy1, color: str = "#333333", width: float = 1.0, gid: str | None = None, style: str = "-|>",
          shrink_pt: float = 2.0):
    """An arrow from ``xy0`` to ``xy1`` (inches), each end stopped ``shrink_pt`` points short (a node's radius)."""
    from matplotlib.patches import FancyArrowPatch
    patch = FancyArrowPatch(xy0, xy1, arrowstyle=style, mutation_scale=9, linewidth=width, color=color,
                            shrinkA=shrink_pt, shrinkB=shrink_pt)
    if gid:
        patch.set_gid(gid)
    ax.add_patch(patch)
    return patch


def note(ax, x: float, y: float, label: str, size: float = TEXT_PT, **kw):
    """Text at (x, y) inches, escaped for Matplotlib (a ``$`` is printed, not mathtext)."""
    kw.setdefault("ha", "left")
    kw.setdefault("va", "center")
    return ax.text(x, y, plots.text(label), fontsize=size, **kw)


def with_gid(ax, gid: str) -> list:
    """The patches and lines of ``ax`` tagged ``gid`` (what the tests count)."""
    return [a for a in list(ax.patches) + list(ax.lines) if a.get_gid() == gid]


def texts(ax) -> list[str]:
    """Every text drawn on ``ax``, in drawing order."""
    return [t.get_text() for t in ax.texts]


def overlapping_texts(ax, pad_px: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of texts of ``ax`` whose rendered boxes overlap (shrunk by ``pad_px`` pixels), and texts that leave the
    figure: ("text", "outside the figure"). Empty when every label can be read at the fixed size."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer).shrunk(1, 1).padded(-pad_px)) for t in ax.texts
             if t.get_text().strip() and t.get_visible()]
    frame = fig.bbox
    bad = [(s, "outside the figure") for s, b in boxes
           if b.x0 < frame.x0 - 1 or b.x1 > frame.x1 + 1 or b.y0 < frame.y0 - 1 or b.y1 > frame.y1 + 1]
    for i, (s1, b1) in enumerate(boxes):
        bad += [(s1, s2) for s2, b2 in boxes[i + 1:] if b1.overlaps(b2)]
    return bad
