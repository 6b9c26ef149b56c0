"""x4lib.pages.ch02_memory: every table, series and glue value of the memory chapter (HBM, KV cache, decode, memory
plans, H100 variants, MIG) builds, reads as text, and holds finite numbers."""
import math

import pytest

from x4lib.pages import ch02_memory as page

TABLES = ["hbm_table", "kv_table", "decode_table", "training_fit_table", "inference_fit_table", "variant_table",
          "variant_cost_table", "mig_profile_table", "mig_configs_table"]
NUMBERS = ["decode_numbers", "memory_numbers", "variant_numbers"]


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


def test_h200_decodes_faster_by_its_bandwidth_ratio():
    n = page.decode_numbers()
    assert n["h200_over_h100_8b"] == pytest.approx(n["h200_over_h100_bw"], rel=1e-6)


def test_series_and_checks():
    curves, marks = page.decode_series()
    assert curves and all(len(b) == len(t) for _, b, t in curves)
    labels, parts, lines = page.plan_bars()
    assert len(labels) == len(parts[0][1]) and lines
    assert "no" in repr(page.mig_check_table(["4g.40gb@0, 4g.40gb@4"]))


def test_hbm_table_shows_the_b200_figures_it_did_not_keep():
    rows = {r["device"]: r for r in page.hbm_rows()}
    b200 = next(r for d, r in rows.items() if d.endswith("B200"))
    assert "192 GB (nvidia-blackwell-technical-brief)" in b200["other sourced figures"]
    assert "8,000 GB/s (nvidia-dgx-b200-datasheet)" in b200["other sourced figures"]
    c = page.hbm_conflicts("b200")
    assert (c["mem_gb"], c["bw_gb_s"]) == (180, 7700) and c["mem_others"]["nvidia-blackwell-technical-brief"] == 192
