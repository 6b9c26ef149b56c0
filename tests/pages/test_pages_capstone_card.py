"""The capstone's answer card (x4lib.pages.capstone_card): its glued numbers are the planner's and chapter 04's (one
number each), the anchors come from the data, and the exercises' helpers report impossible layouts clearly."""
import pytest

from x4lib.book import spanish
from x4lib.catalog import specs
from x4lib.pages import capstone as page, capstone_card as card
from x4lib.training import planner, rules


@pytest.fixture(scope="module")
def c():
    return card.card()


def test_the_card_quotes_the_books_one_number_and_its_range(c):
    h, S = page.headline(), page.summary()
    assert c["card_mfu"] == h["mfu"] == S["mfu_1024"] and c["card_layout"] == h["layout"]
    assert (c["card_mfu_lo"], c["card_mfu_hi"]) == (S["mfu_1024_lo"], S["mfu_1024_hi"])
    lo, hi = page.mfu_range(h["mfu"] / 100)
    assert c["card_mfu_lo"] == pytest.approx(100 * lo) and c["card_mfu_hi"] == pytest.approx(100 * hi)
    assert c["card_planner_mfu"] == h["planner_mfu"] and c["card_days"] == h["days"]


def test_the_rules_hold_for_the_plan_and_match_a_hand_computation(c):
    dev = specs.get("h100-sxm")
    assert c["card_state_tb"] == pytest.approx(70e9 * 16 / 1e12)
    assert c["card_floor"] == rules.memory_floor_gpus(page.model70(), dev) <= c["card_min_gpus"]
    assert c["card_pw_nvl"] == pytest.approx(dev.peak_flop_per_s("bf16") / dev.si("scaleup_bw_gb_s_per_direction"))
    assert c["card_head_tp"] <= c["card_domain"] < c["card_tp_cross_nvl"] and c["card_tp_cross_net"] < 3
    assert c["card_head_replicas"] <= c["card_dp_max_z1"]
    assert c["card_head_tokens_rep"] == page.batch_tokens() / c["card_head_replicas"]
    # the planner's own pick, fully sharded over 256 replicas, gets fewer tokens than ZeRO-3 needs
    assert c["card_fsdp_zero"] == 3 and c["card_fsdp_tokens_rep"] < c["card_dp_min_z3"]
    sp = page.stack_best("h100-sxm", 1024)
    lay = sp.layout
    m = page.batch_tokens() // page.model70().seq // (lay.dp * lay.micro_batch)
    assert c["card_m"] == m and c["card_plain_bubble_pct"] == pytest.approx(100 * (lay.pp - 1) / m)
    # interleaved: v virtual stages per GPU divide the bubble (p - 1)/(v m), and v splits a stage's layers evenly
    v = c["card_vp"]
    assert v == sp.interleave and (page.model70().layers // lay.pp) % v == 0
    assert c["card_bubble_pct"] == pytest.approx(100 * (lay.pp - 1) / (v * m))


def test_goodput_is_chapter_04s_number_and_the_planners(c):
    from x4lib.pages import ch04
    assert c["card_goodput_pct"] == 100 * ch04.mtbf_vs_gpus_rows((1024,))[0]["goodput"]
    t = page.stack_best("h100-sxm", 1024).totals()
    assert c["card_goodput_pct"] == pytest.approx(100 * t.goodput, rel=1e-12)
    assert abs(c["card_goodput_hand_pct"] - c["card_goodput_pct"]) < 1


def test_anchors_are_read_from_the_data_in_one_convention(c):
    runs = {r["id"]: r for r in planner.published_runs()}
    v = {r["id"]: r for r in page.validation_rows()}
    a = card.anchors()
    assert set(a) == set(card.ANCHORS) <= set(runs)
    nv = "dgxc-llama31-70b-bf16-1024"
    assert a[nv]["gpus"] == 1024 and a[nv]["source"] == "nvidia-dgxc-benchmarking"
    assert c["card_nv_mfu"] == 100 * v[nv]["published"] and c["card_nv_stated"] == runs[nv]["published"][
        "stated_utilisation_pct"]
    assert c["card_ll_mfu"] == 100 * v["llama3-405b-8192-seq8192"]["published"]


def test_the_final_range_holds_the_plan_inside_the_residuals(c):
    assert c["card_mfu_lo"] <= c["card_final_lo"] <= c["card_mfu"] <= c["card_final_hi"] <= c["card_mfu_hi"]
    assert c["card_final_days_lo"] < c["card_days"] < c["card_final_days_hi"] or c["card_final_lo"] == c["card_mfu"]
    rows = card.check_rows()
    assert rows[1]["mfu"] == c["card_mfu"] and rows[-1]["what"] == "final range"
    assert f"{c['card_final_lo']:.0f} to {c['card_final_hi']:.0f} %" == rows[-1]["range"]


def test_card_table_has_five_rules_and_spanish_numbers_are_spanish(c):
    assert [r["rule"] for r in card.card_rows()] == ["memory floor", "tensor parallelism", "data parallelism",
                                                     "pipeline bubble", "goodput"]
    es = card.spanish_numbers()
    assert es["card_dp_min_z1_es"] == spanish.number(c["card_dp_min_z1"])
    assert c["card_dp_min_z1"] < 1e4 or "." in es["card_dp_min_z1_es"]  # thousands split by a full stop
    assert es["card_mfu_es"] == f"{c['card_mfu']:.1f}".replace(".", ",")


def test_exercise_helpers_report_impossible_layouts_clearly():
    L = planner.Layout
    rows = card.pipeline_rows([L(4, 8, 32, 1, 1, 1, "none"), L(8, 16, 8, 1, 1, 8, "none")])
    assert rows[0]["m"] == 16 and rows[0]["bubble"] == pytest.approx(7 / 16) and rows[0]["note"] == ""
    assert rows[1]["bubble"] is None and "cannot fill 16 pipeline stages" in rows[1]["note"]
    f = card.fsdp_limits("h100-sxm", 1024)
    assert f["max_gpus"] < 1024 and f["batch_needed"] == pytest.approx(1024 * f["min_tokens"])
    d = {r["check"]: r["value"] for r in card.layout_defence("h100-sxm", 512)}
    assert "inside the nvlink domain" in d["tensor: matmul ÷ all-reduce"]
