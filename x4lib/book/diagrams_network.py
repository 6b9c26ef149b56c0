"""Diagrams of the network, drawn from chapter 03's models so the counts on the drawing are the model's: a
rail-optimised fat tree (``x4lib.network.topology.rail_fat_tree``) and the data movement of an AllReduce by ring,
tree and NVLink SHARP (``x4lib.network.allreduce_moves``).

Each function takes model objects and an Axes from :func:`x4lib.book.diagram_parts.new_axes` (inch coordinates,
house figure size), draws, and returns the Axes. Used in: book/03-interconnects-and-topology.md.
"""
from __future__ import annotations

import math
from typing import Mapping

from x4lib.book import diagram_parts as parts
from x4lib.book.diagram_parts import SMALL_PT, TEXT_PT, TITLE_PT
from x4lib.network.allreduce_moves import SWITCH

#: scalable units drawn in full before the drawing elides the middle ones
MAX_UNITS_DRAWN = 4
#: switches above the leaves drawn before the row elides the rest
MAX_UPPER_DRAWN = 24
#: the first phase of an AllReduce (reduce) and the second (share the result)
PHASE_COLORS = (parts.RAIL_COLORS[0], parts.RAIL_COLORS[5])
#: radius of a GPU node in the AllReduce drawing, in points (where arrows stop)
NODE_PT = 9.5


def _units_drawn(units: int) -> list[int | None]:
    """Indices of the scalable units to draw, None where the drawing elides some."""
    if units <= MAX_UNITS_DRAWN:
        return list(range(units))
    return list(range(MAX_UNITS_DRAWN - 1)) + [None, units - 1]


def rail_fat_tree(ax, topo):
    """A rail-optimised fat tree (a ``topology.Topology`` of kind ``rail-fat-tree``): per scalable unit of k/2 nodes,
    one leaf switch per rail (rail i joins GPU i of every node of the unit), every leaf wired to the tier above; the
    counts in the labels and the boxes drawn are the model's (at most :data:`MAX_UNITS_DRAWN` units drawn, the rest
    elided with their number)."""
    if topo.kind != "rail-fat-tree":
        raise ValueError(f"a rail-optimised fat tree is drawn from a rail-fat-tree topology, not {topo.kind!r}")
    ax = parts.canvas(ax)
    shape = topo.shape
    rails, units, nodes = shape["gpus_per_node"], shape["rail_groups"], shape["nodes"]
    leaves, tiers = shape["leaves"], shape["tiers"]
    upper = topo.switches - leaves
    per_unit = min(topo.radix // 2, nodes)
    parts.note(ax, 0.1, 4.27, f"{topo.endpoints:,} GPUs = {nodes:,} nodes × {rails} GPUs, {topo.radix}-port switches, "
               f"{topo.link_Bps / 1e9:,.0f} GB/s per link per direction", size=TEXT_PT)
    parts.note(ax, 0.1, 4.04, f"{topo.switches:,} switches: {leaves:,} leaves ({rails} rails × {units:,} scalable "
               f"units) + {upper:,} above them ({tiers - 1} tier{'s' if tiers > 2 else ''})", size=SMALL_PT)
    x0, x1 = 1.05, 6.95
    drawn = _units_drawn(units)
    gap = 0.22
    unit_w = (x1 - x0 - gap * (len(drawn) - 1)) / len(drawn)
    leaf_pitch = unit_w / rails
    leaf_w = min(0.8 * leaf_pitch, 0.4)
    ly, lh, ny, nh, uy, uh = 2.05, 0.3, 0.55, 0.55, 3.2, 0.3
    parts.note(ax, 0.1, uy + uh / 2, "spine" if tiers == 2 else "upper tiers", size=TEXT_PT)
    parts.note(ax, 0.1, ly + lh / 2, "leaf", size=TEXT_PT)
    parts.note(ax, 0.1, ny + nh / 2, "nodes", size=TEXT_PT)
    leaf_tops = []
    for k, unit in enumerate(drawn):
        ux = x0 + k * (unit_w + gap)
        if unit is None:
            parts.note(ax, ux + unit_w / 2, ly + lh / 2, f"… {units - len(drawn) + 1:,} more units …",
                       size=SMALL_PT, ha="center")
            continue
        for r in range(rails):
            lx = ux + r * leaf_pitch + (leaf_pitch - leaf_w) / 2
            parts.box(ax, lx, ly, leaf_w, lh, kind="switch", color=parts.RAIL_COLORS[r % 8], gid="leaf")
            leaf_tops.append((lx + leaf_w / 2, ly + lh))
            tick = (ux + 0.05 + (unit_w - 0.1) * (r + 0.5) / rails, ny + nh)
            parts.link(ax, tick, (lx + leaf_w / 2, ly), color=parts.RAIL_COLORS[r % 8], width=1.0, gid="rail")
        in_unit = min(per_unit, nodes - unit * per_unit)
        parts.box(ax, ux + 0.05, ny, unit_w - 0.1, nh, f"unit {unit + 1}\n{in_unit:,} nodes", kind="gpu",
                  size=SMALL_PT, gid="unit")
    n_up = min(upper, MAX_UPPER_DRAWN)
    up_pitch = (x1 - x0) / max(n_up, 1)
    up_w = min(0.8 * up_pitch, 0.4)
    for s in range(n_up):
        sx = x0 + s * up_pitch + (up_pitch - up_w) / 2
        parts.box(ax, sx, uy, up_w, uh, kind="cpu", gid="upper")
        for top in leaf_tops:
            parts.link(ax, top, (sx + up_w / 2, uy), color="#888888", width=0.25, alpha=0.5)
    if upper > n_up:
        parts.note(ax, x1, uy + uh + 0.15, f"{n_up} of {upper:,} drawn", size=SMALL_PT, ha="right")
    parts.note(ax, 0.1, 0.25, f"Rail r (one colour) joins GPU r of the {per_unit:,} nodes of a unit in one leaf: "
               f"same-rail traffic crosses {shape.get('same_rail_hops', 2)} links, other traffic goes up.",
               size=SMALL_PT)
    return ax


def _fraction(x: float) -> str:
    """A multiple of S for a label: 'S', '2 S', 'S/8', '1.75 S'."""
    if x == 1:
        return "S"
    if abs(x - round(x)) < 1e-9:
        return f"{round(x)} S"
    inv = 1 / x
    if abs(inv - round(inv)) < 1e-9:
        return f"S/{round(inv)}"
    return f"{x:.3g} S"


def _offset(a, b, d):
    """The segment a→b moved sideways by ``d`` inches (to its left)."""
    (xa, ya), (xb, yb) = a, b
    length = math.hypot(xb - xa, yb - ya) or 1.0
    nx, ny = -(yb - ya) / length * d, (xb - xa) / length * d
    return (xa + nx, ya + ny), (xb + nx, yb + ny)


def _moves(ax, sched, pos, d=0.045):
    """One arrow per (phase, src, dst) of the schedule, the first phase blue, the second vermilion, side by side
    (each arrow keeps to its left, so a link used both ways, or twice the same way, shows two arrows)."""
    first = sched.phases[0]
    pairs = {(m.src, m.dst) for m in sched.moves}
    for phase, src, dst in dict.fromkeys((m.phase, m.src, m.dst) for m in sched.moves):
        side = d if (dst, src) in pairs or phase == first else -d
        a, b = _offset(pos[src], pos[dst], side)
        parts.arrow(ax, a, b, color=PHASE_COLORS[phase != first], gid="move", shrink_pt=NODE_PT)


def _ring(ax, sched, cx, cy, r):
    n = sched.n_ranks
    pos = {i: (cx + r * math.sin(2 * math.pi * i / n), cy + r * math.cos(2 * math.pi * i / n)) for i in range(n)}
    _moves(ax, sched, pos)
    for i, (x, y) in pos.items():
        _gpu(ax, x, y, i)
    step = sched.moves[0].bytes_B / sched.size_B
    return [f"{sched.steps} steps = 2(n − 1)", f"each step: {_fraction(step)} per GPU",
            f"each GPU sends {_fraction(sched.sent_B(0) / sched.size_B)}"]


def _gpu(ax, x, y, i, rad=NODE_PT / 72):
    from matplotlib.patches import Circle
    c = Circle((x, y), rad, facecolor=parts.FILL["gpu"], edgecolor="#333333", linewidth=0.8, zorder=3)
    c.set_gid("gpu")
    ax.add_patch(c)
    ax.text(x, y, str(i), ha="center", va="center", fontsize=SMALL_PT, zorder=4)


def _tree(ax, sched, x0, x1, ytop, dy):
    from x4lib.network.allreduce_moves import tree_depth
    n = sched.n_ranks
    pos = {}
    for rank in range(n):
        lvl = tree_depth(rank + 1)
        first = 2 ** lvl - 1
        slots = 2 ** lvl
        pos[rank] = (x0 + (x1 - x0) * (rank - first + 0.5) / slots, ytop - lvl * dy)
    _moves(ax, sched, pos)
    for rank, (x, y) in pos.items():
        _gpu(ax, x, y, rank)
    return [f"{sched.steps} steps: {sched.steps // 2} up, {sched.steps // 2} down",
            f"each link: {_fraction(sched.moves[0].bytes_B / sched.size_B)} up, then down",
            "NCCL: two trees of S/2, pipelined"]


def _nvls(ax, sched, x0, x1, ytop, ybot):
    n = sched.n_ranks
    sw_w = x1 - x0 - 0.2
    parts.box(ax, x0 + 0.1, ytop - 0.35, sw_w, 0.35, "NVSwitch adds", kind="switch", size=SMALL_PT, gid="switch")
    xs = [x0 + (x1 - x0) * (i + 0.5) / n for i in range(n)]
    for m in sched.moves:  # the switch end of each arrow sits on the switch box, straight above the GPU
        g = m.dst if m.src == SWITCH else m.src
        a, b = (xs[g], ybot), (xs[g], ytop - 0.35)
        a, b = (b, a) if m.src == SWITCH else (a, b)
        a, b = _offset(a, b, 0.04)
        parts.arrow(ax, a, b, color=PHASE_COLORS[m.phase != sched.phases[0]], gid="move", shrink_pt=NODE_PT / 2)
    for i, x in enumerate(xs):
        _gpu(ax, x, ybot, i, rad=min(NODE_PT / 72, (x1 - x0) / n / 2 - 0.01))
    return [f"{sched.steps} steps: in, then out", f"each GPU sends {_fraction(sched.sent_B(0) / sched.size_B)},",
            f"receives {_fraction(sched.received_B(0) / sched.size_B)}"]


def allreduce_moves(ax, schedules: Mapping[str, object], where: str = ""):
    """Side by side, how an AllReduce of S bytes moves on n GPUs for each schedule (``allreduce_moves.Schedule``,
    keyed by algorithm): the ring's 2(n − 1) steps of S/n, the tree's reduce up and broadcast down, NVLS's one send
    into the switch and one multicast back. Blue arrows: the first phase (reduce); vermilion: the second."""
    ax = parts.canvas(ax)
    titles = {"ring": "Ring", "tree": "Tree", "nvls": "NVLS (NVLink SHARP)"}
    n = next(iter(schedules.values())).n_ranks
    parts.note(ax, 0.1, 4.27, f"AllReduce of S bytes on {n} GPUs{' (' + where + ')' if where else ''}: blue, "
               "reduce; vermilion, share the result", size=TEXT_PT)
    width = 6.9 / len(schedules)
    for k, (alg, sched) in enumerate(schedules.items()):
        x0 = 0.1 + k * width
        parts.note(ax, x0 + width / 2, 3.85, titles.get(alg, alg), size=TITLE_PT, ha="center", weight="bold")
        if alg == "ring":
            lines = _ring(ax, sched, x0 + width / 2, 2.35, min(1.05, width / 2 - 0.3))
        elif alg == "tree":
            lines = _tree(ax, sched, x0 + 0.1, x0 + width - 0.1, 3.4, 2.1 / max(sched.steps // 2, 1))
        else:
            lines = _nvls(ax, sched, x0 + 0.05, x0 + width - 0.05, 3.5, 1.45)
        for i, line in enumerate(l for l in lines if l):
            parts.note(ax, x0 + width / 2, 0.8 - 0.22 * i, line, size=SMALL_PT, ha="center")
    return ax
