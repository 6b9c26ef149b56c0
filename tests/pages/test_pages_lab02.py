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
