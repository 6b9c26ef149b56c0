"""Page helpers of the capstone's "The whole cluster" and "Variants": each number comes from the model its chapter
uses (chapter 03's topology and collectives, chapter 04's power chain and goodput, Lab 00's matmul model), for the
capstone's headline plan."""
import pytest

from x4lib.catalog import specs
from x4lib.datacenter import facility as dc, reliability, storage
from x4lib.network import collectives, topology
from x4lib.pages import capstone as cap, capstone_cluster as cc
from x4lib.training import planner


def test_fabric_is_chapter_03s_rail_fat_tree_for_1024_gpus():
    t = cc.fabric()
    assert t == topology.rail_fat_tree(1024, topology.default_radix(), topology.default_link_Bps())
    # the SuperPOD's four-SU compute fabric: 32 leaves and 16 spines of 64 ports, non-blocking
    assert (t.shape["leaves"], t.switches - t.shape["leaves"], t.radix) == (32, 16, 64)
    assert t.bisection_ratio == 1.0 and t.bisection_Bps == 512 * t.link_Bps
    rows = {r["quantity"]: r["value"] for r in cc.fabric_rows()}
    assert rows["spine switches"] == "16"


def test_gpu_nic_pairing_reads_the_stored_hgx_capture():
    n = cc.nic_pairing()
    assert n["nics_per_node"] == n["gpus_per_node"] == 8 and n["nic_gbit"] == pytest.approx(400)
    assert n["gpu_paths"] == ["NV18"] and n["nearest_nic_paths"] == ["PIX"] and n["own_nic"]


def test_checkpoint_and_goodput_are_the_ones_the_capstones_days_use():
    c = cc.checkpoint()
    sp = cap.stack_best("h100-sxm", 1024)
    params = sp.plan.model.params
    assert c["checkpoint_tb"] * 1e12 == storage.checkpoint_bytes(params) == 14 * params
    assert c["state_tb"] * 1e12 == 16 * params
    assert c["write_s"] == pytest.approx(14 * params / (dc.given("checkpoint_write_GBps") * 1e9))
    assert c["goodput_pct"] == pytest.approx(100 * sp.totals().goodput)
    plan = reliability.checkpoint_plan(c["mtbf_h"] * 3600, c["write_s"], dc.given("restart_s"))
    assert c["interval_min"] == pytest.approx(plan.interval_s / 60)
    assert 90 < c["goodput_pct"] < 100


def test_power_is_the_facility_model_at_the_capstones_pue():
    p = cc.power()
    dev = specs.get("h100-sxm")
    assert p["it_mw"] == pytest.approx(1024 * dev.values["server_power_w_per_gpu"].si / 1e6)
    assert p["facility_mw"] == pytest.approx(p["it_mw"] * p["pue"])
    assert p["gpus_mw"] < p["it_mw"] < p["facility_mw"] and p["average_mw"] < p["facility_mw"]


def test_nccl_commands_use_flags_as_nccl_tests_reads_them():
    one, two = cc.nccl_command(1), cc.nccl_command(2)
    assert one == "./build/all_reduce_perf -b 1G -e 8G -f 2 -g 8"
    assert two.startswith("mpirun -np 16 -npernode 8 ") and two.endswith("-b 1G -e 8G -f 2 -g 1")
    # -f 2 multiplies while the size stays at or below -e: 1, 2, 4, 8 GiB, so the 8 GiB target row is printed
    sizes, s = [], 2**30
    while s <= 8 * 2**30:
        sizes.append(s)
        s *= cc.NCCL_FACTOR
    assert sizes[-1] == cc.TARGET_SIZE_B


def test_busbw_targets_are_the_collective_model_and_fall_with_scale():
    rows = {r["nodes"]: r for r in cc.busbw_rows()}
    assert set(rows) == {1, 2, 128}
    c = planner.cluster_for(specs.get("h100-sxm"), 16)
    assert rows[2]["busbw"] == pytest.approx(collectives.predict("all_reduce", 8 * 2**30, c).busbw_Bps / 1e9)
    assert rows[1]["busbw"] > rows[2]["busbw"] > rows[128]["busbw"] > 0
    assert all(r["ring"] <= r["wire"] * 1.0001 for r in rows.values())   # a ring never beats its line rate


def test_mfu_at_one_node_is_above_128_nodes():
    m = {(r["model"], r["gpus"]): r["mfu"] for r in cc.mfu_rows()}
    assert m[("8B (Llama 3.1 shape)", 8)] > m[("8B (Llama 3.1 shape)", 1024)]
    assert m[("70B (chapter 00)", 1024)] == pytest.approx(cap.headline()["mfu"] / 100)


def test_health_check_reads_the_stored_log_row():
    h = cc.health_check()
    assert h["ranks"] == 16 and h["size_gib"] == 8
    assert h["measured"] == pytest.approx(h["algbw"] * h["factor"], rel=1e-3)
    # the footer averages every size from 8 B, so it sits far below the large rows
    assert h["footer"] < 0.5 * h["measured"] and h["smallest_b"] == 8
    assert 0.8 < h["ratio"] < 1.2


def test_moe_rows_and_the_ep_tp_answer():
    rows = cc.moe_rows()
    assert {(r["model"], r["ep"]) for r in rows} == {("Mixtral 8x7B", 8), ("DeepSeek-V3", 8), ("DeepSeek-V3", 64)}
    ds = {r["ep"]: r for r in rows if r["model"] == "DeepSeek-V3"}
    assert ds[8]["link"] == "nvlink" and ds[64]["link"] == "network" and ds[64]["ep_ms"] > ds[8]["ep_ms"]
    a = cc.ep_vs_tp()
    assert a["ep_wins"] and a["sends_less"] and a["ratio"] == pytest.approx(4.0)


def test_fp8_is_well_below_twice():
    f = cc.fp8()
    assert f["peak_ratio"] == pytest.approx(2.0, rel=1e-3)
    assert 1.0 < f["step_speedup"] < f["gemm_speedup"] < f["peak_ratio"]
    # the published best-shape matmuls (stas00's MAMF table) are not twice either
    assert f["mamf_ratio"] == pytest.approx(f["mamf_fp8"] / f["mamf_bf16"]) and 1.0 < f["mamf_ratio"] < 2.0
    # Amdahl over the stack model's terms: only the GEMMs speed up
    share = f["gemm_share_pct"] / 100
    assert f["step_speedup"] == pytest.approx(1 / (1 - share + share / f["gemm_speedup"]))


def test_nvl72_layout_and_moe_placement():
    n = cc.nvl72()
    assert n["domain"] == 72 and n["racks"] * n["used"] == 1024
    assert n["ds_link"] == "nvlink" and n["ds_link_h100"] == "network"
    assert n["tp_72"] <= 8 or n["mfu_72"] >= n["mfu_8"]


def test_summary_keys_are_prefixed_and_tables_render():
    s = cc.summary()
    assert s and all(k.startswith("cl_") for k in s)
    assert s["cl_head_mfu"] == cap.headline()["mfu"]
    for t in (cc.fabric_table(), cc.cluster_table(), cc.busbw_table(), cc.mfu_table(), cc.checklist_table(),
              cc.moe_table()):
        assert "<table" in t._repr_html_() or str(t)


def test_explorer_batch_control_reaches_the_search(monkeypatch):
    pytest.importorskip("ipywidgets")
    seen = []
    monkeypatch.setattr(cap.planner, "search", lambda model, dev, gpus, batch, **kw: seen.append(batch) or [])
    ex = cap.explorer()
    batch = next(c for c in ex.children if getattr(c, "description", "") == "batch (Mi tok)")
    batch.value = 8
    assert seen[-1] == 8 * 2**20 and seen[0] == cap.batch_tokens()


def test_explorer_has_a_batch_control():
    pytest.importorskip("ipywidgets")
    ex = cap.explorer()
    batch = [c for c in ex.children if getattr(c, "description", "") == "batch (Mi tok)"]
    assert batch and tuple(batch[0].options) == cap.BATCH_MI and batch[0].value == cap.batch_tokens() // 2**20
