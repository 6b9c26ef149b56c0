"""x4lib.pages.ch02: every table, series and glue value of chapter 02 (tensor cores, formats) builds, reads as text,
and holds finite numbers."""
import math

import pytest

from x4lib.pages import ch02 as page

TABLES = ["tensor_core_table", "peak_table", "format_table", "block_table", "error_table", "format_value_table"]
NUMBERS = ["tensor_numbers", "format_numbers", "error_numbers", "scaling_numbers"]


@pytest.mark.parametrize("name", TABLES)
def test_tables_build_without_reprs_and_stay_short(name):
    t = getattr(page, name)()
    cells = [c for row in t.rows for c in row]
    assert 0 < len(t) <= 20
    assert not [c for c in cells if c.lower() in ("nan", "none", "true", "false") or "np." in c]


@pytest.mark.parametrize("name", NUMBERS)
def test_glue_values_are_finite_numbers_or_text(name):
    for key, v in getattr(page, name)().items():
        assert isinstance(v, (int, float, str)), (key, v)
        if isinstance(v, float):
            assert math.isfinite(v), key


def test_peaks_rebuild_the_datasheet_where_a_basis_exists():
    for row in page.peak_rows():
        if row["ratio"] is not None:
            assert row["ratio"] == pytest.approx(1.0, abs=0.002), row


def test_series_and_checks():
    groups, series = page.error_series()
    assert len(groups) == len(series[0][1])
    assert "no GPU run" in page.fp8_gpu_runs_markdown() or "committed" in page.fp8_gpu_runs_markdown()


def test_format_rows_round_saturate_and_show_large_integers_whole():
    rows = {r["format"]: r for r in page.format_rows(300.0)}
    assert rows["FP8 E4M3"]["stored"] == 288 and rows["FP8 E4M3"]["spacing there"] == 32
    assert rows["FP4 E2M1"]["stored"] == 6 and rows["FP4 E2M1"]["clipped"] == "yes"
    assert rows["BF16"]["clipped"] == "no" and rows["BF16"]["relative error"] == 0
    assert "99,840" in repr(page.format_value_table(1e5))  # BF16 keeps 8 bits of mantissa: 1e5 -> 99,840
