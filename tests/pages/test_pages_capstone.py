"""Page helpers of the capstone: one model end to end. The layout at every count and on every device is the one
the stack model times fastest among those the planner finds that fit, and MFU, days, GPU-hours, energy and cost all
follow from that step; the 1024-GPU row is the book's one number (headline(), glued in chapters 00, 03 and 05)."""
import pytest

from x4lib.catalog import specs
from x4lib.pages import capstone as page
from x4lib.training import planner, stack as stk


@pytest.fixture(scope="module")
def rows():
    return {r["gpus"]: r for r in page.scale_rows()}


def test_the_1024_gpu_row_is_the_headline_and_its_days_and_cost_follow_from_the_stack_step(rows):
    h, r = page.headline(), rows[1024]
    sp = page.stack_best("h100-sxm", 1024)
    assert 100 * r["mfu"] == h["mfu"] and r["layout"] == h["layout"]
    # MFU is 6ND over the stack model's step, not the planner's
    m = page.model70()
    peak = specs.get("h100-sxm").peak_flop_per_s("bf16")
    assert r["mfu"] == pytest.approx(6 * m.params * page.batch_tokens() / (1024 * peak * sp.step_s), rel=1e-12)
    assert r["step_s"] == sp.step_s != sp.plan.step_s
    # days: the quiz's tokens at the stack model's throughput, stretched by the goodput; GPU-hours, rent, energy
    t = sp.totals()
    ideal_days = page.tokens() / (page.batch_tokens() / sp.step_s) / 86400
    assert r["days"] == pytest.approx(ideal_days / t.goodput, rel=1e-12) == h["days"]
    assert r["gpu_h"] == pytest.approx(1024 * r["days"] * 24, rel=1e-12)
    assert r["usd"] == pytest.approx(r["gpu_h"] * t.usd_per_gpu_hour, rel=1e-12) == h["usd"]
    assert r["mwh"] == pytest.approx(t.power_W * r["days"] * 86400 / 3.6e9, rel=1e-12)
    # the glued summary quotes the same plan
    S = page.summary()
    assert S["mfu_1024"] == h["mfu"] and S["days_1024"] == r["days"] and S["usd_1024_m"] == r["usd"] / 1e6


def test_every_headline_carries_the_residual_range(rows):
    b = page.band()
    assert b["lo"] < 0 < b["hi"] and b["n"] >= 5
    r = rows[1024]
    lo, hi = page.mfu_range(r["mfu"])
    assert lo == pytest.approx(r["mfu"] - b["hi"] / 100) and hi == pytest.approx(r["mfu"] - b["lo"] / 100)
    # a lower real MFU means more days: the day range is the MFU range inverted
    assert r["days_lo"] < r["days"] < r["days_hi"]
    assert r["days_hi"] == pytest.approx(r["days"] * r["mfu"] / lo)
    assert all(x["range"] for g, x in rows.items() if x["mfu"] is not None)


def test_the_chosen_layout_is_the_stack_models_fastest_of_those_that_fit():
    plans = page._plans("h100-sxm", 256)
    chosen = page.stack_best("h100-sxm", 256)
    assert chosen.plan in plans and chosen.plan.fits
    assert all(page.stack_plan(p).step_s >= chosen.step_s for p in plans)
    # the planner alone ranks by its hardware-only step and picks another layout at 1024
    assert page.best("h100-sxm", 1024).layout != page.stack_best("h100-sxm", 1024).layout


def test_the_stack_model_chooses_the_virtual_stages_and_only_where_the_stack_interleaves():
    sp = page.stack_best("h100-sxm", 1024)
    options = page.virtual_stage_options(sp.plan)
    assert sp.interleave in options and 1 in options and len(options) > 1
    # the fastest of the splits, each a divisor of the layers per stage
    assert all((sp.plan.model.layers // sp.layout.pp) % v == 0 for v in options)
    assert all(page.stack_plan(sp.plan, interleave=v).step_s >= sp.step_s for v in options)
    assert page.stack_plan(sp.plan, interleave=1).parts_s["pipeline bubble"] > sp.parts_s["pipeline bubble"]
    assert sp.label.endswith(f"VP{sp.interleave}") and sp.interleave > 1
    # a stack without Megatron's schedule, or a layout without a pipeline, keeps plain 1F1B
    assert page.virtual_stage_options(sp.plan, "megatron-deepspeed") == (1,)
    flat = next(p for p in page._plans("h100-sxm", 1024) if p.layout.pp == 1)
    assert page.virtual_stage_options(flat) == (1,) and page.stack_plan(flat).label == flat.layout.label()


def test_the_breakdown_is_the_stack_models_terms_and_sums_to_its_step():
    for label, parts in page.breakdown_series():
        assert list(parts) == list(page.PARTS.values())
        g = int(label.split()[0])
        assert sum(parts.values()) == pytest.approx(page.stack_best("h100-sxm", g).step_s, rel=1e-9)
        assert all(v >= 0 for v in parts.values())


def test_parts_take_the_bubble_out_of_the_per_micro_batch_terms_only():
    shape = stk.Shape(80, 8192, 64, 8, 28672, True, 128256, 8192)
    dev = specs.get("h100-sxm")
    c = stk.Constants(1.1, 0.9, 1.2, 5e-6, 0.1)
    for pp, m in ((1, 8), (8, 8), (4, 32)):
        lay = stk.Setup(4, pp, 1024 // (4 * pp), 1, 1, 1, m, "selective", 1, True)
        st = stk.step(shape, lay, dev, stk.stack("nemo-mcore-2024"), planner.cluster_for(dev, 1024))
        parts = st.parts_s(c)
        assert sum(parts.values()) == pytest.approx(st.time_s(c), rel=1e-12)
        if pp == 1:
            assert parts["pipeline bubble"] == 0
        else:
            # the GEMMs of m micro-batches and a bubble of (p - 1)/m of them
            assert parts["pipeline bubble"] > 0
            assert parts["gemm"] == pytest.approx(st.terms_s(c)["gemm"] / st.bubble_factor, rel=1e-12)


def test_devices_without_a_fitted_run_are_labelled_and_the_planners_number_stays_apart():
    fitted = page.fitted_devices()
    assert "h100-sxm" in fitted
    for r in page.device_rows():
        assert r["fitted"] == (r["device"] in fitted)
        assert ("carried over" in r["basis"]) == (r["device"] not in fitted)
        assert r["planner_mfu"] == page.best(r["device"], r["gpus"]).mfu
        assert r["mfu"] == page.stack_best(r["device"], r["gpus"]).mfu != r["planner_mfu"]


def test_planner_totals_from_a_throughput_match_run_totals():
    p = page.best("h100-sxm", 256)
    a = planner.run_totals(p, 1e12)
    b = planner.totals(p.device, 256, p.model.params, p.tokens_per_s, 1e12)
    assert a == b


def test_tables_and_plan_rows_have_no_python_repr():
    for t in (page.scale_table(), page.device_table(), page.explorer_fallback_table()):
        text = t.to_text()
        assert "{'" not in text and "None" not in text.replace("none fits", "")
    rows = page.plan_rows(page.stack_best("h100-sxm", 1024))
    assert {"pipeline bubble (s)", "GEMMs (s)", "step, stack model (s)"} <= {r["quantity"] for r in rows}
