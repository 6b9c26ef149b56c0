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


def test_the_shape_sentence_names_the_split(cal):
    assert "tensor parallelism" in page.shape_text(cal) and cal.shape["model"] in page.shape_text(cal)
