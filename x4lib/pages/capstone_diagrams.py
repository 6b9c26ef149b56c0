"""Page helpers for book/capstone-8-to-1024.md, section "One step, term by term": the compute and communication
streams of the headline plan and the step's terms as shares at each GPU count (figures drawn by
x4lib.book.diagrams_parallel), the absolute seconds behind the shares, and the numbers the prose quotes."""
from __future__ import annotations

import functools

from x4lib.book.tables import Col, table
from x4lib.pages import capstone
from x4lib.training import schedule

COUNTS = (64, 256, 1024)


def streams(device: str = "h100-sxm", gpus: int = 1024) -> tuple:
    """The headline plan's step on its two streams (x4lib.training.schedule.streams, the fitted constants)."""
    from x4lib.training import validate
    sp = capstone.stack_best(device, gpus)
    return schedule.streams(sp.step, validate.all_constants(), sp.layout.zero)


def share_rows(device: str = "h100-sxm", counts=COUNTS) -> list[tuple[str, dict]]:
    """(label, {term: seconds}) per count where a layout fits, labelled on two lines (count, then layout) so the
    bars keep the page's width; the terms are capstone.PARTS'."""
    out = []
    for g in counts:
        sp = capstone.stack_best(device, g)
        if sp:
            lay = sp.layout
            degrees = " ".join(f"{k.upper()}{getattr(lay, k)}" for k in ("tp", "pp", "dp", "cp") if getattr(lay, k) > 1)
            out.append((f"{g} GPUs\n{degrees}", dict(sp.parts_s)))
    return out


def seconds_rows(device: str = "h100-sxm", counts=COUNTS) -> list[dict]:
    """The absolute seconds behind the shares: one row per count, one column per term, and the step."""
    rows = []
    for g in counts:
        sp = capstone.stack_best(device, g)
        if sp:
            rows.append({"gpus": g, "layout": sp.label, **dict(sp.parts_s), "step": sp.step_s})
    return rows


def seconds_table(device: str = "h100-sxm"):
    cols = {"gpus": Col("GPUs", None, "{:,}"), "layout": Col("layout", wrap=True)}
    cols.update({p: Col(p, "s", "{:.2f}") for p in capstone.PARTS.values()})
    cols["step"] = Col("step", "s", "{:.2f}")
    return table(seconds_rows(device), cols)


@functools.lru_cache(maxsize=1)
def summary() -> dict:
    """Glue values for the streams prose: hidden and exposed communication, the compute the overlap costs, the
    fitted overlap constant, the bubble, and the largest share after the GEMMs at each count."""
    from x4lib.training import validate
    seg = streams()
    total = sum(s.length_s for s in seg if s.lane == "compute")
    hidden = sum(s.length_s for s in seg if s.kind == "hidden")
    exposed = sum(s.length_s for s in seg if s.kind == "exposed")
    lost = sum(s.length_s for s in seg if s.kind == "lost")
    bubble = sum(s.length_s for s in seg if s.kind == "bubble")
    s = {"tl_step": total, "tl_hidden": hidden, "tl_exposed": exposed, "tl_lost": lost, "tl_bubble": bubble,
         "tl_c_overlap": validate.all_constants().overlapped, "tl_hidden_pct": 100 * hidden / total,
         "tl_exposed_pct": 100 * exposed / total, "tl_lost_pct": 100 * lost / total}
    for label, parts in share_rows():
        g = label.split()[0]
        st = sum(parts.values())
        s[f"sh_gemm_{g}_pct"] = 100 * parts["GEMMs"] / st
        s[f"sh_bubble_{g}_pct"] = 100 * parts["pipeline bubble"] / st
    return s
