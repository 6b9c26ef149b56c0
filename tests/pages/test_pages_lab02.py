"""x4lib.pages.lab02: the page's tables from the committed run read as tables for readers (no Python repr, units in
the headers), and the scale rows set calibrated beside uncalibrated at the four GPU counts."""
import pytest

from x4lib.harness import runs
from x4lib.pages import lab02 as page
from x4lib.training import calibration


@pytest.fixture(scope="module")
def cal():
    dirs = runs.committed_dirs("lab02")
    if not dirs:
        pytest.skip("no committed Lab 02 run")
    return calibration.load(dirs[0])


def test_tables_have_units_and_no_repr(cal):
    for t in (page.terms_table(cal), page.gemm_table(cal), page.elementwise_table(cal)):
        text = repr(t)
        assert "{" not in text and "None" not in text.replace("none", "")
    assert "GFLOP/s" in repr(page.gemm_table(cal)) and "GB/s" in repr(page.elementwise_table(cal))
    assert len(page.gemm_rows(cal)) == 12  # 4 GEMMs x forward, data gradient, weight gradient


def test_scale_rows_cover_the_four_counts_calibrated_beside_uncalibrated(cal):
    rows = page.scale_rows(cal)
    assert [r["gpus"] for r in rows] == [8, 64, 256, 1024]
    assert all(r["calibrated_step_s"] > 0 and r["uncalibrated_step_s"] > 0 for r in rows)
    assert "GPUs" in repr(page.scale_table(rows))


def test_the_shape_table_names_the_model_and_the_split(cal):
    text = repr(page.shape_table(cal))
    assert "tensor parallelism" in text and cal.shape["model"] in text and str(cal.shape["tp"]) in text


def test_the_explorer_fallback_is_the_explorers_answer_over_the_sliders_range(cal):
    rows = page.efficiency_rows(cal)
    assert [r["efficiency_pct"] for r in rows] == list(range(5, 101, 5))
    mfus = [r["mfu_pct"] for r in rows]
    assert all(b > a for a, b in zip(mfus, mfus[1:]))  # faster matmuls, higher MFU
    steps = [r["step_s"] for r in rows]
    assert all(b < a for a, b in zip(steps, steps[1:]))
    marks = page.efficiency_marks(cal)
    assert any(k.startswith("spec-sheet planner") for k in marks)


def test_the_cpu_check_median_spans_the_shown_machines_runs_and_a_new_machine_has_its_own_run_only():
    import dataclasses
    from types import MappingProxyType
    loaded = [runs.load_run(d, "lab02") for d in runs.committed_dirs("lab02")]
    cpu = [r for r in loaded if (r.results.get("check") or {}).get("backend") == "gloo"]
    if not cpu:
        pytest.skip("no committed CPU run of Lab 02")
    newest = cpu[-1]
    shown = runs.PageRuns(None, tuple(loaded))
    same = page.cpu_check_runs(shown)
    assert newest in same and all(r.results["device"]["kind"] == "cpu" for r in same)
    assert len(same) == len(page.same_machine_checks(loaded, newest))
    # a reader's machine: another CPU model, its run not committed -> the median is over that run alone
    device = {**newest.results["device"], "cpu": {**newest.results["device"]["cpu"], "model_name": "Other CPU"}}
    mine = dataclasses.replace(newest, results=MappingProxyType({**newest.results, "device": device}),
                               committed=False, run_id="mine")
    alone = page.cpu_check_runs(runs.PageRuns(mine, tuple(loaded) + (mine,)))
    assert alone == [mine]
    summary = calibration.check_over_runs([r.path for r in alone])
    assert [s["runs"] for s in summary] == [1, 1]
