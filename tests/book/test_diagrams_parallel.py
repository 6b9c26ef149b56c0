"""x4lib.book.diagrams_parallel and x4lib.training.schedule: the parallelism diagrams draw what the models compute.
The 1F1B schedule of a plan (simulated: tests/training/test_schedule.py) idles each stage for the planner's bubble,
and its drawn bubble is (p − 1)/m; the rank grid
draws every group of the layout and redraws when the layout changes; the streams add up to the stack model's step;
the shares add up to 100 %."""
import dataclasses

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from x4lib.book import diagrams_parallel as dgp, plots  # noqa: E402
from x4lib.catalog import specs  # noqa: E402
from x4lib.training import parallelism as par, planner, schedule, stack as stk, validate  # noqa: E402


def _widths(ax, gid: str, row: int | None = None) -> float:
    """Total width of the broken_barh bars with ``gid`` (on the row centred at ``row``)."""
    total = 0.0
    for coll in ax.collections:
        if coll.get_gid() != gid:
            continue
        for path in coll.get_paths():
            xs, ys = path.vertices[:, 0], path.vertices[:, 1]
            if row is None or abs((ys.min() + ys.max()) / 2 - row) < 1e-9:
                total += xs.max() - xs.min()
    return total


# ------------------------------------------------------------------------------------------------ 1F1B

@pytest.fixture(scope="module")
def plan70():
    """A 70B layout with 8 stages, evaluated by the planner (one layout, no search)."""
    from x4lib.pages import capstone
    return planner.evaluate(capstone.model70(), planner.Layout(4, 8, 8, 4, 0, 1, "none"), specs.get("h100-sxm"),
                            capstone.batch_tokens())


def test_the_schedule_of_a_plan_idles_each_stage_for_the_planners_bubble(plan70):
    s = schedule.from_plan(plan70)
    m = plan70.global_batch_tokens // plan70.model.seq // (plan70.layout.dp * plan70.layout.micro_batch)
    assert (s.stages, s.micro_batches) == (plan70.layout.pp, m)
    assert s.idle_s(0) == pytest.approx(plan70.bubble_s, rel=1e-9)
    assert s.bubble_share == pytest.approx((s.stages - 1) / m, rel=1e-12)
    assert s.backward_s == pytest.approx(2 * s.forward_s, rel=1e-12)


def test_the_drawn_bubble_area_over_the_drawn_work_is_the_planners_bubble_share(plan70):
    s = schedule.from_plan(plan70)
    fig, ax = plots.new_axes()
    dgp.pipeline_schedule(ax, s)
    for k in range(s.stages):
        busy = _widths(ax, "F", k) + _widths(ax, "B", k)
        idle = _widths(ax, "idle", k) - busy
        assert idle / busy == pytest.approx(plan70.bubble_s / s.busy_s(k), rel=1e-9)
        assert idle / busy == pytest.approx((s.stages - 1) / s.micro_batches, rel=1e-9)
    legend = " ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert f"({s.stages} − 1)/{s.micro_batches}" in legend
    fig.canvas.draw()


# ------------------------------------------------------------------------------------------------ the grid

QUIZ = par.layout("quiz-70b")


@pytest.mark.parametrize("lay", [QUIZ, planner.Layout(4, 8, 8, 4, 0, 1, "none"), par.Layout(dp=2, tp=2, pp=2, cp=2)])
def test_every_kind_of_group_partitions_the_ranks_into_n_over_degree_groups(lay):
    n = lay.tp * lay.pp * lay.dp * lay.cp
    for k in dgp.KINDS:
        gs = dgp.groups(lay, k)
        d = getattr(lay, k)
        assert len(gs) == n // d and all(len(g) == d for g in gs)
        assert sorted(r for g in gs for r in g) == list(range(n))
        # members differ in this kind's index only
        for g in gs:
            others = [{kk: v for kk, v in dgp.coords(lay, r).items() if kk != k} for r in g]
            assert all(o == others[0] for o in others)
            assert sorted(dgp.coords(lay, r)[k] for r in g) == list(range(d))


def test_megatron_order_puts_the_tensor_group_inside_a_node_and_the_pipeline_across_stages():
    tp = dgp.groups(QUIZ, "tp")[0]
    assert tp == tuple(range(QUIZ.tp))
    assert dgp.groups(QUIZ, "pp")[0] == tuple(i * QUIZ.tp * QUIZ.cp * QUIZ.dp for i in range(QUIZ.pp))


def _grid(lay):
    fig, ax = plots.new_axes(dgp.GRID_FIGSIZE)
    dgp.layout_grid(ax, lay, gpus_per_node=8)
    return fig, ax


def test_the_grid_draws_every_gpu_every_node_and_the_groups_of_gpu_0():
    fig, ax = _grid(QUIZ)
    gids = [p.get_gid() or "" for p in ax.patches]
    assert sum(g.startswith("gpu-") for g in gids) == QUIZ.n_gpus
    assert sum(g.startswith("node-") for g in gids) == QUIZ.n_gpus // 8
    marked = {ln.get_gid(): len(ln.get_xdata()) for ln in ax.get_lines()}
    assert marked == {"rank": 1, "group-tp": QUIZ.tp - 1, "group-dp": QUIZ.dp - 1, "group-pp": QUIZ.pp - 1}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    for k in ("tp", "dp", "pp"):
        d = getattr(QUIZ, k)
        assert any(f"{k.upper()} group: one of {QUIZ.n_gpus // d} groups of {d}," in t for t in legend)
    assert any("TP group" in t and "in 1 node" in t for t in legend)
    assert any("DP group" in t and f"across {QUIZ.dp} nodes" in t for t in legend)
    fig.canvas.draw()


def test_a_layout_change_redraws_the_grid():
    changed = dataclasses.replace(QUIZ, tp=4, cp=2, dp=32)
    fig, ax = _grid(changed)
    marked = {ln.get_gid(): len(ln.get_xdata()) for ln in ax.get_lines()}
    assert marked == {"rank": 1, "group-tp": 3, "group-cp": 1, "group-dp": 31, "group-pp": 3}
    legend = " ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert "one of 256 groups of 4, in 1 node" in legend and "CP group: one of 512 groups of 2, in 1 node" in legend
    # the colour of a cell is its pipeline stage
    cells = {p.get_gid(): p.get_facecolor() for p in ax.patches if (p.get_gid() or "").startswith("gpu-")}
    assert cells["gpu-0"] == cells["gpu-255"] != cells["gpu-256"]


# ------------------------------------------------------------------------------------------------ the streams

@pytest.fixture(scope="module")
def step70():
    from x4lib.pages import capstone
    m = capstone.model70()
    shape = stk.Shape(m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, True, capstone.VOCAB, m.seq)
    gbs = capstone.batch_tokens() // m.seq
    setup = stk.Setup(4, 8, 8, 4, 0, 1, gbs // 8, "none", 1, True)
    dev = specs.get("h100-sxm")
    return stk.step(shape, setup, dev, stk.stack(capstone.STACK_ID), planner.cluster_for(dev, 1024))


def test_the_compute_stream_adds_up_to_the_stack_models_step_and_the_comm_stream_to_its_collectives(step70):
    c = validate.all_constants()
    seg = schedule.streams(step70, c, zero=0)
    compute = [s for s in seg if s.lane == "compute"]
    assert sum(s.length_s for s in compute) == pytest.approx(step70.time_s(c), rel=1e-12)
    assert all(a.start_s + a.length_s == pytest.approx(b.start_s) for a, b in zip(compute, compute[1:]))
    exposed = sum(s.length_s for s in seg if s.kind == "exposed")
    parts = step70.parts_s(c)  # the exposed traffic's share of the bubble is in the bubble, as on the capstone page
    comm = {k: v for k, v in parts.items() if k.startswith("exposed ") and k != "exposed optimizer"}
    assert exposed == pytest.approx(sum(comm.values()), rel=1e-12)  # the optimizer step is compute, not traffic
    traffic = sum(v for k, v in step70.exposed.items() if k != "optimizer")
    assert exposed + parts["pipeline bubble"] > traffic > exposed
    hidden = sum(s.length_s for s in seg if s.kind == "hidden")
    assert hidden == pytest.approx(step70.features["overlapped"], rel=1e-12)
    # every exposed collective sits under a wait of the compute stream of the same length
    waits = {(round(s.start_s, 12), round(s.length_s, 12)) for s in seg if s.kind == "wait"}
    assert {(round(s.start_s, 12), round(s.length_s, 12)) for s in seg if s.kind == "exposed"} == waits
    assert any("AllReduce" in s.label for s in seg)
    assert not any("AllReduce" in s.label for s in schedule.streams(step70, c, zero=1))


def test_the_timeline_draws_the_segments(step70):
    seg = schedule.streams(step70, validate.all_constants())
    fig, ax = plots.new_axes()
    dgp.overlap_timeline(ax, seg)
    assert _widths(ax, "comm:exposed") == pytest.approx(sum(s.length_s for s in seg if s.kind == "exposed"))
    assert ax.get_xlim()[1] == pytest.approx(sum(s.length_s for s in seg if s.lane == "compute"))
    fig.canvas.draw()


# ------------------------------------------------------------------------------------------------ shares

def test_shares_add_up_to_100_and_the_drawn_bars_are_the_shares():
    rows = [("a", {"x": 3.0, "y": 1.0}), ("b", {"x": 1.0, "y": 1.0})]
    assert dgp.shares(rows) == [("a", {"x": 75.0, "y": 25.0}), ("b", {"x": 50.0, "y": 50.0})]
    fig, ax = plots.new_axes()
    dgp.step_shares(ax, rows, ["x", "y"])
    widths = sorted(round(p.get_width(), 9) for p in ax.patches)
    assert widths == [25.0, 50.0, 50.0, 75.0]
    assert ax.get_xlim() == (0, 100)
    assert "75 %" in [t.get_text() for t in ax.texts]
