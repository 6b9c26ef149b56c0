"""x4lib.pages.ch02: every table, series and glue value of chapter 02 builds, reads as text, and holds finite numbers."""
import math

import pytest

from x4lib.pages import ch02 as page

TABLES = ["tensor_core_table", "peak_table", "format_table", "block_table", "error_table", "hbm_table", "kv_table",
          "decode_table", "training_fit_table", "inference_fit_table", "variant_table", "variant_cost_table",
          "nvlink_table", "dgx_table", "allgather_table", "mig_profile_table", "mig_configs_table"]
NUMBERS = ["tensor_numbers", "format_numbers", "error_numbers", "scaling_numbers", "decode_numbers",
           "memory_numbers", "variant_numbers", "nvlink_numbers"]


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


def test_h200_decodes_faster_by_its_bandwidth_ratio():
    n = page.decode_numbers()
    assert n["h200_over_h100_8b"] == pytest.approx(n["h200_over_h100_bw"], rel=1e-6)


def test_series_and_checks():
    groups, series = page.error_series()
    assert len(groups) == len(series[0][1])
    curves, marks = page.decode_series()
    assert curves and all(len(b) == len(t) for _, b, t in curves)
    labels, parts, lines = page.plan_bars()
    assert len(labels) == len(parts[0][1]) and lines
    assert "no" in repr(page.mig_check_table(["4g.40gb@0, 4g.40gb@4"]))
    assert "no GPU run" in page.fp8_gpu_runs_markdown() or "committed" in page.fp8_gpu_runs_markdown()


def test_hbm_table_shows_the_b200_figures_it_did_not_keep():
    rows = {r["device"]: r for r in page.hbm_rows()}
    b200 = next(r for d, r in rows.items() if d.endswith("B200"))
    assert "192 GB (nvidia-blackwell-technical-brief)" in b200["other sourced figures"]
    assert "8,000 GB/s (nvidia-dgx-b200-datasheet)" in b200["other sourced figures"]
    c = page.hbm_conflicts("b200")
    assert (c["mem_gb"], c["bw_gb_s"]) == (180, 7700) and c["mem_others"]["nvidia-blackwell-technical-brief"] == 192
