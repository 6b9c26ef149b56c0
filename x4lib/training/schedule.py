"""When the parts of a training step run: the 1F1B pipeline schedule and the compute and communication streams.

1F1B (one forward, one backward; Narayanan et al. 2021, narayanan-2021): stage s of p first runs min(p − s − 1, m)
forward passes (the warm-up), then alternates one forward and one backward until its m forwards are done, then runs
the backwards left (the cool-down). A forward of micro-batch i on stage s waits for stage s − 1's forward of i; a
backward waits for stage s + 1's backward of i. With every stage taking t_f per forward and t_b per backward, the
step lasts (m + p − 1)·(t_f + t_b) and each stage is idle (p − 1)·(t_f + t_b) of it: the bubble, (p − 1)/m of the
work. :func:`one_f_one_b` simulates the dependencies rather than assuming that result, so the drawn bubble is
checked against the planner's (p − 1)/m (tests/book/test_diagrams_parallel.py).

The streams (:func:`streams`) lay the stack model's step (x4lib.training.stack) on two lanes per GPU: what the
compute stream spends its time on, and what the communication stream sends beside it, hidden (under compute, at
the cost of the compute it slows) or exposed (compute waits). Terms are totals over the step, not single kernels.
Units: seconds. Used in: book/03-interconnects-and-topology.md, book/capstone-8-to-1024.md.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping


@dataclasses.dataclass(frozen=True)
class Slot:
    """One pass of one micro-batch on one stage: ``kind`` "F" (forward) or "B" (backward), times in s."""
    stage: int
    kind: str
    micro_batch: int
    start_s: float
    end_s: float


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A simulated 1F1B step: p stages, m micro-batches, per-stage pass times, every slot."""
    stages: int
    micro_batches: int
    forward_s: float
    backward_s: float
    slots: tuple[Slot, ...]

    @property
    def step_s(self) -> float:
        return max(s.end_s for s in self.slots)

    def busy_s(self, stage: int) -> float:
        return sum(s.end_s - s.start_s for s in self.slots if s.stage == stage)

    def idle_s(self, stage: int) -> float:
        """The stage's share of the bubble: the step less its own passes [s]."""
        return self.step_s - self.busy_s(stage)

    @property
    def bubble_share(self) -> float:
        """Idle over busy time, summed over the stages: (p − 1)/m for 1F1B with equal stages."""
        busy = sum(self.busy_s(s) for s in range(self.stages))
        return sum(self.idle_s(s) for s in range(self.stages)) / busy


def one_f_one_b(stages: int, micro_batches: int, forward_s: float, backward_s: float) -> Schedule:
    """Simulate 1F1B (module docstring) for ``stages`` p, ``micro_batches`` m and per-stage pass times [s]."""
    p, m = int(stages), int(micro_batches)
    if p < 1 or m < 1 or p != stages or m != micro_batches:
        raise ValueError(f"stages and micro-batches must be whole numbers >= 1, got {stages} and {micro_batches}")
    if not (forward_s > 0 and backward_s > 0):
        raise ValueError(f"pass times must be > 0 s, got {forward_s} and {backward_s}")
    order = []
    for s in range(p):
        warm = min(p - s - 1, m)
        ops = [("F", i) for i in range(warm)]
        for j in range(m - warm):
            ops += [("F", warm + j), ("B", j)]
        ops += [("B", i) for i in range(m - warm, m)]
        order.append(ops)
    done: dict = {}
    free = [0.0] * p
    nxt = [0] * p
    slots = []
    while any(nxt[s] < len(order[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            if nxt[s] == len(order[s]):
                continue
            kind, i = order[s][nxt[s]]
            dep = (s - 1, "F", i) if kind == "F" else (s + 1, "B", i)
            if (kind == "F" and s == 0) or (kind == "B" and s == p - 1):
                ready = 0.0 if kind == "F" else done[(s, "F", i)]
            elif dep in done:
                ready = done[dep]
            else:
                continue
            start = max(free[s], ready)
            end = start + (forward_s if kind == "F" else backward_s)
            done[(s, kind, i)] = free[s] = end
            slots.append(Slot(s, kind, i, start, end))
            nxt[s] += 1
            progressed = True
        if not progressed:  # cannot happen for 1F1B; guards the loop
            raise RuntimeError("1F1B schedule deadlocked")
    return Schedule(p, m, forward_s, backward_s, tuple(slots))


def from_plan(plan) -> Schedule:
    """The 1F1B schedule of a :class:`x4lib.training.planner.Plan`: its pipeline degree and micro-batches, and per
    micro-batch the work on the critical path the planner prices the bubble with (compute, element-wise work and the
    exposed tensor-, context-, pipeline- and expert-parallel traffic, over m), a third forward and two thirds
    backward (the backward is 2/3 of the compute, x4lib.training.parallelism)."""
    lay = plan.layout
    m = plan.global_batch_tokens // plan.model.seq // (lay.dp * lay.micro_batch)
    critical = sum(v for k, v in plan.comm_by_strategy.items() if k in ("tp", "cp", "pp", "ep"))
    per_mb = (plan.compute_s + plan.other_s + critical) / m
    return one_f_one_b(lay.pp, m, per_mb / 3, 2 * per_mb / 3)


# ------------------------------------------------------------------------------------------------ the streams

@dataclasses.dataclass(frozen=True)
class Segment:
    """A bar of the streams: ``lane`` "compute" or "comm", ``kind`` what it is (work, lost, wait, bubble, hidden,
    exposed), start and length [s]."""
    lane: str
    label: str
    kind: str
    start_s: float
    length_s: float


def streams(step, constants, zero: int = 0) -> tuple[Segment, ...]:
    """The two lanes of one step of the stack model (a :class:`x4lib.training.stack.Step` and its fitted
    :class:`~x4lib.training.stack.Constants`). Compute lane, in order: the work of the m micro-batches (GEMMs,
    attention, non-matmul kernels, launches), the compute lost to the communication overlapped with it, the waits
    on exposed tensor-parallel and pipeline traffic, the pipeline bubble, the wait on the exposed data-parallel
    reduction, and the optimizer step: they
    add up to the step. Comm lane: the overlapped collectives under the work they hide behind (tensor and context
    parallel spread over the micro-batches; the data-parallel reduction at the end of the last backward), and each
    exposed one under the wait it causes. ``zero`` names the data-parallel collectives (0: AllReduce)."""
    parts = step.parts_s(constants)
    after: Mapping = step.notes.get("after_pipeline", {})
    m = int(step.notes.get("micro_batches", 1))
    opt = parts.get("exposed optimizer", 0.0)
    dp_hidden = after.get("overlapped", 0.0)
    dp_op = "AllReduce" if zero == 0 else "ReduceScatter + AllGather"
    work = [("GEMMs", parts["gemm"]), ("attention core", parts["attention"]),
            ("non-matmul kernels", parts["memory"]), ("launch and framework overhead", parts["kernels"])]
    out, t = [], 0.0
    for label, length in work:
        out.append(Segment("compute", label, "work", t, length))
        t += length
    end_work = t
    lost = parts["overlapped"]
    out.append(Segment("compute", "compute lost to overlapped communication", "lost", t, lost))
    t += lost
    # hidden communication: raw time of the overlapped collectives (the constant scales only what compute loses)
    tp_cp_hidden = max(0.0, step.features["overlapped"] - dp_hidden)
    if tp_cp_hidden > 0:
        piece = tp_cp_hidden / m
        for i in range(m):
            out.append(Segment("comm", "tensor/context-parallel collectives (hidden)", "hidden",
                               end_work * (i + 0.5) / m - piece / 2, piece))
    if dp_hidden > 0:  # under the last backward, just before the step's exposed tail
        out.append(Segment("comm", f"data-parallel {dp_op} (hidden)", "hidden", max(0.0, t - dp_hidden),
                           min(dp_hidden, t)))
    def wait(key: str, label: str, t: float) -> float:
        v = parts.get(key, 0.0)
        if v > 0:
            out.append(Segment("compute", "waiting on exposed communication", "wait", t, v))
            out.append(Segment("comm", label, "exposed", t, v))
        return t + max(v, 0.0)

    t = wait("exposed tensor-parallel", "tensor-parallel collectives (exposed)", t)
    t = wait("exposed pipeline sends", "pipeline sends (exposed)", t)
    out.append(Segment("compute", "pipeline bubble (idle)", "bubble", t, parts["pipeline bubble"]))
    t = wait("exposed data-parallel", f"data-parallel {dp_op} (exposed)", t + parts["pipeline bubble"])
    out.append(Segment("compute", "optimizer step", "work", t, opt))
    return tuple(s for s in out if s.length_s > 0)
