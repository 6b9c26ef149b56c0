"""x4lib.pages.ch01: the chapter's tables and summaries are built from the models (no measurement here)."""
import numpy as np
import pytest

from x4lib.pages import ch01 as page, ch01_memory as mem


def test_peak_summary_counts_every_rebuilt_peak_and_none_is_unexplained():
    s = page.peak_summary()
    assert s["n"] == s["reproduce"] + s["flagged"] and s["unexplained"] == 0
    assert s["max_dev_pct"] <= s["tolerance_pct"]
    assert len(page.peak_table().compact) == len(page.ARCHITECTURES)


def test_the_dataflow_example_multiplies_correctly():
    run, frames, ok = page.dataflow_frames()
    assert ok and frames[0]["cycle"] == 4 and len(frames) == run.cycles - 4


def test_host_example_is_host_bound_for_images_and_gpu_bound_for_tokens():
    p = page.pipelines()
    assert p["images"].bound == "host CPU" and p["LLM tokens"].bound == "GPU"
    assert page.dgx_cores_per_gpu() == 14


def test_xeon_peaks_use_avx512_for_fp32_and_amx_for_bf16():
    assert page.xeon_8480_peak_flop_per_s("fp32") == pytest.approx(56 * 64 * 2.0e9)
    assert page.xeon_8480_peak_flop_per_s("bf16") == pytest.approx(56 * 1024 * 2.0e9)


def test_plateaus_split_the_sweep_by_the_reported_caches():
    sweep = mem.Sweep("test CPU", {1: [
        {"working_set_B": s, "passes": 1, "best_s": s / (g * 1e9), "status": "ok"}
        for s, g in [(8192, 200), (16384, 200), (262144, 100), (524288, 100), (6 * 2**20, 20), (64 * 2**20, 10)]]},
        [{"level": 1, "type": "Data", "size_B": 49152}, {"level": 2, "type": "Unified", "size_B": 2**21}])
    rows = mem.plateaus(sweep, 1)
    assert [round(r["gb_s"]) for r in rows] == [200, 100, 10]
    assert "factor of 5.0" in mem.sweep_sentence(sweep)


def test_transformer_rows_show_the_padding_of_head_dim_80():
    rows = {r["matmul"]: r for r in page.transformer_rows()}
    assert rows["QKᵀ per head, 4096 tokens, head dim 80"]["pad"] == pytest.approx(80 / 128)
    assert rows["QKV projection, decode batch 8"]["util"] < 0.1


def test_predictions_stretch_compute_bound_time_by_utilisation():
    p = page.predict("tpu-v5p", "bf16", 4096, 4096, 80)
    assert p.utilisation == pytest.approx(80 / 128, rel=0.01)
    q = page.predict("h100-sxm", "bf16", 4096, 4096, 4096)
    assert q.utilisation is None and q.time_s == q.point.time_s
    assert np.isfinite([r["time_us"] for r in page.fallback_rows()]).all()


def test_the_static_explorer_puts_a_planned_clock_back_to_the_shipping_clock():
    from x4lib.compute import roofline as rl
    roof, clock = page.shipping_roof("gaudi3", "bf16")
    # Intel's peak assumes a planned 1750 MHz MME clock; shipping cards report 1600 MHz (x4lib/data/matmul.yaml)
    assert roof.peak_flop_per_s == pytest.approx(rl.for_device("gaudi3", "bf16").peak_flop_per_s * 1600 / 1750)
    assert clock.startswith("shipping 1,600 MHz")
    assert page.shipping_roof("h100-sxm", "bf16") == (rl.for_device("h100-sxm", "bf16"), "vendor's clock")
    rows = {(r["device"], r["case"]): r for r in page.fallback_rows()}
    g = rows[("gaudi3", "training matmul")]
    assert g["clock"].startswith("shipping") and g["time_us"] == pytest.approx(
        page.predict("gaudi3", "bf16", 4096, 4096, 4096).time_s * 1e6)


def test_peak_summary_separates_checks_that_can_fail_from_clocks_solved_from_the_figure():
    s = page.peak_summary()
    assert s["reproduce"] == s["reproduce_independent"] + s["reproduce_solved"]
    assert s["reproduce_solved"] > 0 and s["reproduce_independent"] > 0
    assert s["max_dev_independent_pct"] <= s["max_dev_pct"]


def test_edge_npus_are_compared_on_the_dense_basis():
    rows = {r["npu"]: r for r in page.edge_rows()}
    orin, tpu = rows["NVIDIA Jetson Orin NX 16GB (module)"], rows["Google Edge TPU (Coral)"]
    assert orin["basis"] == "sparse" and orin["dense"] == pytest.approx(orin["peak"] / 2)
    assert orin["tops_w"] == pytest.approx(orin["printed_tops_w"] / 2)
    assert tpu["dense"] == tpu["peak"] and tpu["tops_w"] == tpu["printed_tops_w"]
    assert rows["Apple M4 Neural Engine"]["dense"] is None


def test_the_sm_diagram_draws_the_catalogs_sm_count():
    import matplotlib
    matplotlib.use("Agg")
    from x4lib.book import diagram_parts
    from x4lib.catalog import specs
    from x4lib.pages import ch01_memory
    ax = ch01_memory.draw_sm("h100-sxm")
    n_sm = specs.get("h100-sxm").peak_basis["units"]
    assert any(f"One SM of the {n_sm} on" in t for t in diagram_parts.texts(ax))
    assert diagram_parts.overlapping_texts(ax) == []
