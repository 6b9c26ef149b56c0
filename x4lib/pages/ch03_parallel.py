"""Page helpers for book/03-interconnects-and-topology.md, section "What each parallelism strategy sends": the rank
grid of the quiz layout and the 1F1B schedule of the capstone's plan (figures drawn by x4lib.book.diagrams_parallel),
and the numbers the prose around them quotes."""
from __future__ import annotations

import functools

from x4lib.book import diagrams_parallel as dgp
from x4lib.training import parallelism as par, schedule


def capstone_plan(device: str = "h100-sxm", gpus: int = 1024):
    """The capstone's plan (the stack model's fastest layout that fits), as the planner evaluates it."""
    from x4lib.pages import capstone
    return capstone.stack_best(device, gpus).plan


def capstone_virtual_stages(device: str = "h100-sxm", gpus: int = 1024) -> int:
    """The virtual stages per GPU the capstone's plan interleaves (1: plain 1F1B)."""
    from x4lib.pages import capstone
    return capstone.stack_best(device, gpus).interleave


@functools.lru_cache(maxsize=1)
def summary() -> dict:
    """Glue values: per kind of group of the quiz layout, its degree, how many groups and how many nodes one spans;
    the capstone plan's 1F1B schedule (stages, micro-batches, pass times, idle time per stage, bubble share) beside
    the planner's bubble."""
    from x4lib.pages import ch03
    lay = par.layout(ch03.QUIZ_LAYOUT)
    g = ch03.quiz_inputs()[1].gpus_per_node
    s: dict = {"grid_gpus": lay.n_gpus, "grid_nodes": lay.n_gpus // g, "grid_gpus_per_node": g}
    for k in dgp.KINDS:
        grp = dgp.groups(lay, k)
        s[f"grid_{k}"] = dgp.degree(lay, k)
        s[f"grid_{k}_groups"] = len(grp)
        s[f"grid_{k}_nodes"] = len({r // g for r in grp[0]})
    plan = capstone_plan()
    sch = schedule.from_plan(plan)
    work = sch.busy_s(0)
    s.update({"sched_p": sch.stages, "sched_m": sch.micro_batches, "sched_fwd_ms": 1e3 * sch.forward_s,
              "sched_bwd_ms": 1e3 * sch.backward_s, "sched_idle_ms": 1e3 * sch.idle_s(0),
              "sched_bubble_pct": 100 * sch.bubble_share, "sched_planner_bubble_ms": 1e3 * plan.bubble_s,
              "sched_planner_bubble_pct": 100 * plan.bubble_s / work, "sched_layout": plan.layout.label(),
              "sched_vp": capstone_virtual_stages()})
    return s
