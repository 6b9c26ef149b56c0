"""x4lib.pages.lab00: everything Lab 00 shows is derived from a run's raw times when the page is drawn."""
import json
from types import MappingProxyType

import pytest

from conftest import ROOT
from x4lib.compute import kernels
from x4lib.harness import runs
from x4lib.pages import lab00 as page, lab00_model as model

V1 = ROOT / "tests" / "data" / "runs" / "lab00-v1"


def cpu_run(times_s=(0.004, 0.002, 0.003), n=128, mhz=2000.0, cores=2, uarch="haswell-broadwell", **extra):
    doc = {"schema_version": 2, "lab": "lab00", "profile": "local-cpu", "method_version": 2,
           "started_utc": "2026-11-23T00:00:00Z",
           "device": {"kind": "cpu", "detected_name": "Test CPU", "catalog_id": None, "count": 1,
                      "cpu": {"model_name": "Test CPU", "physical_cores": cores, "mhz_reported": mhz},
                      "cpu_uarch": {"id": uarch, "flop_per_cycle_per_core": {"fp32": 32, "fp64": 16},
                                    "source": "so-flops-per-cycle"}},
           "matmul": [{"dtype": "fp32", "m": n, "n": n, "k": n, "status": "ok", "times_s": list(times_s),
                       "median_s": sorted(times_s)[len(times_s) // 2], "best_s": min(times_s)},
                      {"dtype": "fp32", "m": 4, "n": 4, "k": 4, "status": "oom", "error": "out of memory"}],
           "memory_bw": [{"kernel": "triad", "elements": 1000, "element_bytes": 4, "status": "ok",
                          "times_s": [1e-6, 2e-6], "median_s": 1.5e-6, "best_s": 1e-6}],
           "warnings": ["fp32 4x4x4: oom (out of memory)"], **extra}
    runs.validate(doc, "lab00")
    return runs.Run("test-run", ROOT, "lab00", MappingProxyType(doc), False)


def test_rates_are_derived_from_the_raw_times():
    (row,) = page.matmul_rows(cpu_run())
    assert row["flop"] == 2 * 128**3
    assert row["tflops_best"] == pytest.approx(2 * 128**3 / 0.002 / 1e12)
    assert row["tflops_median"] == pytest.approx(2 * 128**3 / 0.003 / 1e12)
    (mem,) = page.memory_rows(cpu_run())
    assert mem["bytes"] == kernels.vector_bytes("triad", 1000, 4) and mem["gb_s_best"] == pytest.approx(12000 / 1e-6 / 1e9)


def test_a_cpu_peak_is_cores_times_flop_per_cycle_times_the_reported_clock():
    pk = page.peak(cpu_run(), "fp32")
    assert pk.tflops == pytest.approx(2 * 32 * 2000e6 / 1e12) and "2000 MHz" in pk.basis
    assert page.peak(cpu_run(mhz=None), "fp32") is None


def test_a_corrected_microarchitecture_table_corrects_the_page():
    # the run stored 32 FLOP/cycle; today's table says the same for Haswell: the page uses the table
    table = json.loads(page.CPU_UARCH_PATH.read_text())["microarchitectures"]
    today = next(a for a in table if a["id"] == "haswell-broadwell")["flop_per_cycle_per_core"]["fp32"]
    assert page.peak(cpu_run(), "fp32").tflops == pytest.approx(2 * today * 2000e6 / 1e12)
    assert page.peak(cpu_run(uarch="gone-from-the-table"), "fp32").tflops == pytest.approx(2 * 32 * 2e9 / 1e12)


def test_above_the_peak_the_page_names_the_clock_instead_of_an_efficiency():
    fast = cpu_run(times_s=(2 * 128**3 / 200e9,), mhz=1000.0)  # 200 GFLOP/s on a 64 GFLOP/s peak (2 × 32 × 1 GHz)
    text = page.efficiency_text(fast, "fp32")
    assert "a sustained clock of at least 3.12 GHz" in text and "%" not in text
    assert any("above the peak" in w for w in page.warnings(fast))
    assert page.efficiency_text(cpu_run(), "fp32").endswith("% of that peak")


def test_shapes_above_the_peak_give_one_warning_per_dtype_naming_the_highest():
    fast = cpu_run(times_s=(2 * 128**3 / 200e9,), mhz=1000.0)
    doc = dict(fast.results)
    ok = doc["matmul"][0]
    doc["matmul"] = [ok, {**ok, "m": 256, "n": 256, "k": 256, "times_s": [2 * 256**3 / 300e9],
                          "median_s": 2 * 256**3 / 300e9, "best_s": 2 * 256**3 / 300e9}] + doc["matmul"][1:]
    runs.validate(doc, "lab00")
    run = runs.Run("test-run", ROOT, "lab00", MappingProxyType(doc), False)
    above = [w for w in page.warnings(run) if "above the peak" in w]
    assert len(above) == 1 and "2 of 2 shapes" in above[0] and "0.3 TFLOP/s at 256x256x256" in above[0]


def test_the_independent_check_is_compared_with_the_harness():
    n = 128
    run = cpu_run(independent_check={"n": n, "dtype": "fp32", "calls": 5, "elapsed_s": 5 * 0.004})
    text = page.independent_check_text(run)
    assert f"{2 * n**3 / 0.004 / 1e9:.1f} GFLOP/s" in text and "+100 %" in text
    assert "only when a CPU run measures it" in page.independent_check_text(cpu_run())


def test_the_summary_and_its_paragraph_have_no_python_repr():
    s = page.summary(cpu_run())
    assert s.dtype == "FP32" and s.best_shape == "128×128×128" and s.n_warnings == 1
    md = page.summary_markdown(cpu_run())
    assert "Test CPU" in md and "{'" not in md and "None" not in md


def test_a_version_1_run_is_drawn_from_its_times_too():
    run = runs.load_run(V1, "lab00")
    b = page.best(run, "fp32")
    stored = next(r for r in run.results["matmul"] if (r["m"], r["n"], r["k"], r["dtype"]) ==
                  (b["m"], b["n"], b["k"], "fp32"))
    assert b["tflops_best"] == pytest.approx(stored["tflops_best"])
    assert page.summary(run).name.startswith("Intel")


def test_the_gap_table_has_ours_theirs_and_the_prediction():
    rows = page.gap_rows([cpu_run()], None)
    by = {r["measured by"].split(" ")[0]: r for r in rows}
    assert "us" in by and by["not"]["measured best (TFLOP/s)"] is None
    assert any("(theirs)" in r["measured by"] for r in rows)
    assert all(r["efficiency"] is None or 0 < r["efficiency"] for r in rows)


def test_the_budget_reads_prices_from_the_data_files():
    rows = page.rental_rows()
    assert any(r["listing"] == "price used for the budget" for r in rows)
    assert page.expected_sweep_s(page.profile("h100")["labs"]["lab00"], "h100-sxm") > 0


def test_the_gap_table_sets_the_prediction_beside_peak_and_measurement():
    rows = page.gap_rows([cpu_run()], None)
    for r in rows:
        assert "predicted achievable (TFLOP/s)" in r and "roofline (TFLOP/s)" in r
    theirs = [r for r in rows if "(theirs)" in r["measured by"]]
    assert theirs and all(0 < r["predicted achievable (TFLOP/s)"] <= r["roofline (TFLOP/s)"] for r in theirs)
    ours = next(r for r in rows if r["measured by"].startswith("us"))
    assert ours["predicted achievable (TFLOP/s)"] <= ours["peak (TFLOP/s)"]


def test_the_i5_memory_peak_is_channels_times_bytes_times_transfers():
    assert page.i5_memory_bw_Bps() == pytest.approx(2 * 8 * 2400e6)
    assert page.i5_roofline().memory_bw_Bps == pytest.approx(38.4e9)
    r = page.roof_ratios()["h100-sxm"]
    assert r["memory"] == pytest.approx(3350e9 / 38.4e9) and r["compute"] == pytest.approx(989.4e12 / 204.8e9)


def test_the_validation_rows_are_leave_one_out_and_cited():
    rows = model.validation_rows()
    assert len({r["device_id"] for r in rows}) >= 8
    assert all(r["measured by"].endswith("(theirs)") for r in rows)
    assert all(r["error"] == pytest.approx(r["predicted (TFLOP/s)"] / r["measured (TFLOP/s)"] - 1) for r in rows)
    s = model.validation_summary()
    assert s.median_abs_error <= 0.15 and s.n_devices == len(model.validation_by_device())


def test_a_digitised_sweep_is_never_tabulated():
    assert any(r["digitized"] for r in model.sweep_checks())
    assert "nvidia-cuda11-features-blog" not in str(model.sweep_table())
    assert "digitised" in model.sweep_series("nvidia-cuda11-a100-square-bf16")[0][1]


def test_the_cpu_shape_check_divides_each_rate_by_its_own_best():
    run = cpu_run()
    rows = page.cpu_shape_rows(run)
    assert rows and max(r["measured / best measured"] for r in rows) == pytest.approx(1.0)
    assert max(r["model / best model"] for r in rows) == pytest.approx(1.0)


def test_the_original_budget_is_a_given_in_the_data_file():
    b = page.original_budget()
    assert b["a100_usd_per_hour"] > 0 and b["h100_usd_per_hour"] > 0 and "original" in b["source"]


def test_the_sweep_section_reads_the_committed_gemm_run():
    """The GEMM sweep's sustained shapes name the clock-event reasons sampled while they ran, and the host floor is
    the least time per call of each dtype."""
    from x4lib.pages import lab00_gpu
    runs = lab00_gpu.sweep_runs()
    if not runs:
        pytest.skip("no committed GEMM sweep")
    run = runs[-1]
    rows = lab00_gpu.sustained_rows(run)
    assert rows and all(r["clock"] and r["reasons"] for r in rows)
    for d in ("bf16", "fp8_e4m3"):
        floor = lab00_gpu.host_floor_us(run, d)
        assert all(1e6 * r["best_s"] >= floor for r in run.results["matmul"] if r["status"] == "ok" and r["dtype"] == d)


def test_a_long_gap_table_shows_a_compact_view_and_every_row_collapsed():
    from x4lib.book.tables import TableWithDetails
    from x4lib.harness import runs
    committed = runs.load_runs("lab00")
    rows = page.gap_rows(committed, None)
    shown = page.gap_table(committed, None, max_rows=5)
    assert isinstance(shown, TableWithDetails) and len(shown.full) == len(rows)
    assert 0 < len(shown.compact) <= 5


def test_the_extra_columns_exercise_says_what_the_model_prints():
    """Lab 00's exercise ex-lab00-model: the wider matmul gains on the H100 (its tiles fill the last wave) and
    loses on the B200; the solution's prose says so, so the model must keep saying it."""
    from x4lib.compute import matmul
    rate = {(d, n): matmul.predict(d, "bf16", 4096, n, 8192).rate_flop_per_s
            for d in ("h100-sxm", "b200") for n in (4096, 4224)}
    assert rate[("h100-sxm", 4224)] > rate[("h100-sxm", 4096)]
    assert rate[("b200", 4224)] < rate[("b200", 4096)]
