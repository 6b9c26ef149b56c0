"""Diagrams of parallelism, drawn from the models so that they redraw when a number changes: the rank grid of a
layout (which GPUs form which tensor-, context-, data- and pipeline-parallel group, on which node), the 1F1B
pipeline schedule with its bubble, a step's compute and communication streams, and a step's terms as shares.

Each function takes an Axes and model objects (a ``Layout`` of x4lib.training.parallelism or .planner, a
:class:`x4lib.training.schedule.Schedule`, the segments of :func:`x4lib.training.schedule.streams`), draws and
returns the Axes: no plt.show(), the house style and sizes of :mod:`x4lib.book.plots`. Drawing only; the ranks of a
group come from :func:`x4lib.training.parallelism.strides` (Megatron's order tp, cp, dp, pp).
Used in: book/03-interconnects-and-topology.md, book/capstone-8-to-1024.md.
"""
from __future__ import annotations

from typing import Sequence

from x4lib.book import plots
from x4lib.book.plots import NOTE_PT, TICK_PT, text
from x4lib.training import parallelism

KINDS = ("tp", "cp", "dp", "pp")
NAMES = {"tp": "tensor-parallel", "cp": "context-parallel", "dp": "data-parallel", "pp": "pipeline-parallel"}
MARKERS = {"tp": "s", "cp": "o", "dp": "^", "pp": "D"}
#: GRID_FIGSIZE: the rank grid is wide and short; the legend sits below it
GRID_FIGSIZE = (7.0, 3.4)


# ------------------------------------------------------------------------------------------------ the rank grid

def degree(lay, kind: str) -> int:
    return int(getattr(lay, kind))


def coords(lay, rank: int) -> dict[str, int]:
    """The rank's index in each kind of group: (rank // stride) mod degree (Megatron's order tp, cp, dp, pp)."""
    st = parallelism.strides(lay)
    return {k: (rank // st[k]) % degree(lay, k) for k in KINDS}


def groups(lay, kind: str) -> list[tuple[int, ...]]:
    """Every group of ``kind``: the ranks that differ only in that kind's index, n/degree groups of degree ranks."""
    st, d = parallelism.strides(lay)[kind], degree(lay, kind)
    n = lay.tp * lay.cp * lay.dp * lay.pp
    firsts = [r for r in range(n) if coords(lay, r)[kind] == 0]
    return [tuple(r + i * st for i in range(d)) for r in firsts]


def _node_shape(gpus_per_node: int) -> tuple[int, int]:
    """(rows, columns) of GPUs in one drawn node."""
    return (2, gpus_per_node // 2) if gpus_per_node >= 4 and gpus_per_node % 2 == 0 else (1, gpus_per_node)


def layout_grid(ax, lay, gpus_per_node: int = 8, nodes_per_row: int = 16, rank: int = 0):
    """Every GPU of the layout as a cell, in nodes (the rounded boxes: one NVLink domain each) of ``gpus_per_node``,
    ``nodes_per_row`` nodes a row; cells shaded by pipeline stage. The four groups ``rank`` belongs to are marked
    (one marker shape per kind), stages are named at the left, and the legend says, per kind, how many groups there are, of how many GPUs, and
    how many nodes one spans. Artists carry gids (``gpu-<rank>``, ``node-<i>``, ``group-<kind>``) for tests."""
    from matplotlib.patches import FancyBboxPatch, Patch, Rectangle
    n = lay.tp * lay.cp * lay.dp * lay.pp
    g = min(gpus_per_node, n)
    nodes = -(-n // g)
    per_row = max(1, min(nodes_per_row, nodes))
    rows_in, cols_in = _node_shape(g)
    gap = 0.7

    def origin(node: int) -> tuple[float, float]:
        r, c = divmod(node, per_row)
        return c * (cols_in + gap), -r * (rows_in + gap)

    def centre(r: int) -> tuple[float, float]:
        x0, y0 = origin(r // g)
        i, j = divmod(r % g, cols_in)
        return x0 + j + 0.5, y0 - i - 0.5

    stage_colour = {s: f"C{s % 10}" for s in range(lay.pp)}
    for node in range(nodes):
        x0, y0 = origin(node)
        box = FancyBboxPatch((x0 - 0.12, y0 - rows_in - 0.12), cols_in + 0.24, rows_in + 0.24,
                             boxstyle="round,pad=0,rounding_size=0.3", fill=False, edgecolor="0.35", linewidth=1.0)
        box.set_gid(f"node-{node}")
        ax.add_patch(box)
    for r in range(n):
        x, y = centre(r)
        cell = Rectangle((x - 0.45, y - 0.45), 0.9, 0.9, facecolor=stage_colour[coords(lay, r)["pp"]], alpha=0.3,
                         edgecolor="none")
        cell.set_gid(f"gpu-{r}")
        ax.add_patch(cell)
    handles = [Patch(facecolor="none", edgecolor="0.35", label=f"node: {g} GPUs on NVLink ({nodes} nodes)")]
    ax.plot(*centre(rank), marker="*", color="black", markersize=9, linestyle="none", gid="rank",
            label=f"GPU {rank}")
    for k in KINDS:
        d = degree(lay, k)
        if d == 1:
            continue
        grp = next(gr for gr in groups(lay, k) if rank in gr)
        others = [r for r in grp if r != rank]
        xs, ys = zip(*(centre(r) for r in others))
        spans = len({r // g for r in grp})
        where = "in 1 node" if spans == 1 else f"across {spans} nodes"
        ax.plot(xs, ys, marker=MARKERS[k], linestyle="none", markersize=4.5, color="black", gid=f"group-{k}",
                label=text(f"GPU {rank}'s {k.upper()} group: one of {n // d} groups of {d}, {where}"))
    first_rows = {}
    for r in range(n):
        first_rows.setdefault(coords(lay, r)["pp"], origin(r // g)[1])
    if lay.pp > 1:
        for s, y0 in first_rows.items():
            ax.text(-0.4, y0 - rows_in / 2, f"stage {s}", ha="right", va="center", fontsize=NOTE_PT - 1)
    xs_all = [origin(nd)[0] for nd in range(nodes)]
    ys_all = [origin(nd)[1] for nd in range(nodes)]
    ax.set_xlim(min(xs_all) - (5.5 if lay.pp > 1 else 0.5), max(xs_all) + cols_in + 0.5)
    ax.set_ylim(min(ys_all) - rows_in - 0.5, max(ys_all) + 0.5)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)
    lines, labels = ax.get_legend_handles_labels()
    plots._legend_below(ax.figure, [handles[0], *lines], [handles[0].get_label(), *labels], 2)
    return ax


# ------------------------------------------------------------------------------------------------ 1F1B

def pipeline_schedule(ax, sched, label_micro_batches: bool | None = None):
    """A :class:`x4lib.training.schedule.Schedule` as a Gantt chart: one row per stage (stage 0 on top), forward
    passes light, backward passes dark, the idle time of each stage (the bubble) hatched grey. The legend gives
    the pass times and the bubble share the simulation found, (p − 1)/m of the work. Micro-batch numbers are
    written in the passes when there is room (``label_micro_batches``; default: m ≤ 16)."""
    p, m = sched.stages, sched.micro_batches
    step = sched.step_s
    label = m <= 16 if label_micro_batches is None else label_micro_batches
    for s in range(p):
        ax.broken_barh([(0.0, step)], (s - 0.4, 0.8), facecolor="white", edgecolor="0.5", hatch="///",
                       linewidth=0.0, gid="idle")
    style = {"F": dict(facecolor="#6baed6"), "B": dict(facecolor="#08519c")}
    for kind in ("F", "B"):
        for s in range(p):
            mine = [(x.start_s, x.end_s - x.start_s) for x in sched.slots if x.stage == s and x.kind == kind]
            ax.broken_barh(mine, (s - 0.4, 0.8), edgecolor="white", linewidth=0.0 if m > 16 else 0.8,
                           gid=kind, **style[kind])
    if label:
        for x in sched.slots:
            ax.text((x.start_s + x.end_s) / 2, x.stage, str(x.micro_batch), ha="center", va="center",
                    fontsize=NOTE_PT - 1, color="black" if x.kind == "F" else "white")
    from matplotlib.patches import Patch
    unit, scale = ("ms", 1e3) if sched.forward_s < 1 else ("s", 1.0)
    handles = [Patch(**style["F"], label=f"forward pass of one micro-batch ({sched.forward_s * scale:.3g} {unit})"),
               Patch(**style["B"], label=f"backward pass ({sched.backward_s * scale:.3g} {unit})"),
               Patch(facecolor="white", edgecolor="0.5", hatch="///",
                     label=f"idle: the bubble, {sched.bubble_share:.1%} of the work = (p − 1)/m = ({p} − 1)/{m}")]
    ax.set_ylim(p - 0.5, -0.5)
    ax.set_yticks(range(p), [f"stage {s}" for s in range(p)])
    ax.set_xlim(0, step)
    unit_x, sx = ("s", 1.0) if step >= 1 else ("ms", 1e3)
    ax.xaxis.set_major_formatter(lambda v, _: f"{v * sx:g}")
    ax.set_xlabel(f"time in the step ({unit_x}, model prediction)", fontsize=plots.LABEL_PT)
    ax.tick_params(labelsize=TICK_PT)
    plots._legend_below(ax.figure, handles, [h.get_label() for h in handles], 1)
    return ax


# ------------------------------------------------------------------------------------------------ the streams

STREAM_STYLE = {
    "GEMMs": dict(facecolor="C0"), "attention core": dict(facecolor="C1"),
    "non-matmul kernels": dict(facecolor="C2"), "launch and framework overhead": dict(facecolor="C7"),
    "optimizer step": dict(facecolor="C8"),
    "compute lost to overlapped communication": dict(facecolor="C4"),
    "waiting on exposed communication": dict(facecolor="white", edgecolor="C3", hatch="\\\\\\"),
    "pipeline bubble (idle)": dict(facecolor="white", edgecolor="0.5", hatch="///"),
}
HIDDEN = dict(facecolor="C4", alpha=0.55)
EXPOSED = dict(facecolor="C3")


def overlap_timeline(ax, segments: Sequence):
    """The two streams of one step (segments of :func:`x4lib.training.schedule.streams`): compute on top,
    communication below, x = seconds. Hidden collectives are drawn under the compute they hide behind (translucent);
    exposed ones in red under the wait they cause; each collective is named under its bars when they span at
    least 3 % of the step. The legend totals hidden and exposed communication."""
    from matplotlib.patches import Patch
    lanes = {"compute": 1.0, "comm": 0.0}
    seen: dict = {}
    hidden = sum(s.length_s for s in segments if s.kind == "hidden")
    exposed = sum(s.length_s for s in segments if s.kind == "exposed")
    for s in segments:
        if s.lane == "compute":
            st = STREAM_STYLE.get(s.label, dict(facecolor="C9"))
        else:
            st = HIDDEN if s.kind == "hidden" else EXPOSED
        ax.broken_barh([(s.start_s, s.length_s)], (lanes[s.lane] - 0.35, 0.7), linewidth=0.4,
                       edgecolor=st.get("edgecolor", st["facecolor"]), gid=f"{s.lane}:{s.kind}",
                       **{k: v for k, v in st.items() if k != "edgecolor"})
        key = s.label if s.lane == "compute" else s.kind
        seen.setdefault(key, st)
    handles = [Patch(**st, label=text(k)) for k, st in seen.items() if k not in ("hidden", "exposed")]
    if "hidden" in seen:
        handles.append(Patch(**HIDDEN, label=f"communication hidden under compute ({hidden:.2f} s in all)"))
    if "exposed" in seen:
        handles.append(Patch(**EXPOSED, label=f"communication exposed, compute waits ({exposed:.2f} s)"))
    end = max(s.start_s + s.length_s for s in segments)
    spans: dict = {}
    for s in segments:  # name each collective under its bars, where they span enough of the step to be read
        if s.lane == "comm":
            lo, hi = spans.get(s.label, (s.start_s, s.start_s + s.length_s))
            spans[s.label] = (min(lo, s.start_s), max(hi, s.start_s + s.length_s))
    for label, (lo, hi) in spans.items():
        if hi - lo >= 0.03 * end:
            right = (lo + hi) / 2 > 0.8 * end
            ax.text(hi if right else (lo + hi) / 2, -0.5, text(label), ha="right" if right else "center",
                    va="center", fontsize=NOTE_PT - 1)
    ax.set_xlim(0, end)
    ax.set_ylim(-0.75, 1.5)
    ax.set_yticks([1.0, 0.0], ["compute\nstream", "communication\nstream"])
    ax.set_xlabel("time in one step, per GPU (s, model prediction; each term's total)", fontsize=plots.LABEL_PT)
    ax.tick_params(labelsize=TICK_PT)
    ax.grid(True, axis="x", alpha=0.3)
    plots._legend_below(ax.figure, handles, [h.get_label() for h in handles], 2)
    return ax


# ------------------------------------------------------------------------------------------------ shares

def shares(rows) -> list[tuple[str, dict]]:
    """rows = [(label, {term: seconds})] → the same with every term in per cent of its row's total."""
    return [(label, {k: 100 * v / sum(parts.values()) for k, v in parts.items()}) for label, parts in rows]


def step_shares(ax, rows, parts: Sequence[str], min_label_pct: float = 5.0):
    """Horizontal bars of a step's terms as shares of the step (per cent, summing to 100 per row): rows =
    [(label, {term: seconds})] as for :func:`x4lib.book.plots.step_breakdown`; shares of at least
    ``min_label_pct`` are written in their segment."""
    pct = shares(rows)
    labels = [text(r[0]) for r in pct][::-1]
    left = [0.0] * len(pct)
    for i, part in enumerate(parts):
        vals = [r[1].get(part, 0.0) for r in pct][::-1]
        ax.barh(labels, vals, left=left, label=text(part), color=f"C{i}", height=0.6, gid=f"share-{part}")
        for y, (x0, v) in enumerate(zip(left, vals)):
            if v >= min_label_pct:
                ax.text(x0 + v / 2, y, f"{v:.0f} %", ha="center", va="center", fontsize=NOTE_PT, color="white")
        left = [a + b for a, b in zip(left, vals)]
    ax.set_xlim(0, 100)
    plots._finish(ax, "share of the training step (%, model prediction)", "", legend_below=True)
    ax.grid(True, axis="x", alpha=0.3)
    ax.grid(False, axis="y")
    ax.tick_params(axis="y", labelsize=TICK_PT)
    return ax

