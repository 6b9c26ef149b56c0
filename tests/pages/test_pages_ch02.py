"""x4lib.pages.ch02, ch02_memory and ch02_nvlink: every table and glue value of the three chapter 02 pages builds,
reads as text and holds finite numbers; then the tensor-core and format checks (the other two pages' own checks are in
test_pages_ch02_memory.py and test_pages_ch02_nvlink.py)."""
import math

import pytest

from x4lib.pages import ch02 as page, ch02_memory, ch02_nvlink

TABLES = [(page, n) for n in ("tensor_core_table", "peak_table", "format_table", "block_table", "error_table",
                              "format_value_table")]
TABLES += [(ch02_memory, n) for n in ("hbm_table", "kv_table", "decode_table", "training_fit_table",
                                      "inference_fit_table", "variant_table", "variant_cost_table", "mig_profile_table",
                                      "mig_configs_table")]
TABLES += [(ch02_nvlink, n) for n in ("nvlink_table", "dgx_table", "allgather_table")]
NUMBERS = [(page, n) for n in ("tensor_numbers", "format_numbers", "error_numbers", "scaling_numbers")]
NUMBERS += [(ch02_memory, n) for n in ("decode_numbers", "memory_numbers", "variant_numbers")]
NUMBERS += [(ch02_nvlink, "nvlink_numbers")]


def assert_table_reads(t) -> None:
    cells = [c for row in t.rows for c in row]
    assert 0 < len(t) <= 20
    assert not [c for c in cells if c.lower() in ("nan", "none", "true", "false") or "np." in c]


def assert_glue_values(values: dict) -> None:
    for key, v in values.items():
        assert isinstance(v, (int, float, str)), (key, v)
        if isinstance(v, float):
            assert math.isfinite(v), key


@pytest.mark.parametrize("module, name", TABLES, ids=[f"{m.__name__.split('.')[-1]}.{n}" for m, n in TABLES])
def test_tables_build_without_reprs_and_stay_short(module, name):
    assert_table_reads(getattr(module, name)())


@pytest.mark.parametrize("module, name", NUMBERS, ids=[f"{m.__name__.split('.')[-1]}.{n}" for m, n in NUMBERS])
def test_glue_values_are_finite_numbers_or_text(module, name):
    assert_glue_values(getattr(module, name)())


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


def test_a_format_value_keeps_its_integer_zeros():
    from x4lib.pages.ch02 import _big
    assert [_big(x) for x in (99840, 57344, 240.0, 0.5, 1.5e-5, 3.0e38)] == \
        ["99,840", "57,344", "240", "0.5", "0.000015", "3e+38"]
