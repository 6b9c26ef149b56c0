"""x4lib.pages.ch02_memory: the memory chapter's own checks (decode, series, MIG, the B200 figures it did not keep);
its tables and glue values are checked with the other chapter 02 pages in test_pages_ch02.py."""
import pytest

from x4lib.pages import ch02_memory as page


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
