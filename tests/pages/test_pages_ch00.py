"""x4lib.pages.ch00: the chapter's computed statements (coverage of TDPs, Gaudi 3's clocks, the ranking by useful
rate) checked against the catalog directly."""
import pytest

from x4lib.catalog import specs
from x4lib.pages import ch00 as page


def test_the_tdp_coverage_is_counted_over_the_whole_catalog():
    cov = page.tdp_coverage()
    cat = specs.load_catalog()
    assert cov["total"] == len(cat)
    assert cov["with"] == sum("tdp_w" in d.values for d in cat.values())
    assert len(cov["without"]) == cov["total"] - cov["with"] > 0


def test_gaudi3_shipping_clock_peak_is_units_times_flop_per_clock_times_clock():
    g = page.gaudi3_peaks()
    assert g["planned_tflops"] == pytest.approx(8 * 131072 * g["planned_mhz"] * 1e6 / 1e12, rel=1e-3)
    assert g["shipping_tflops"] == pytest.approx(8 * 131072 * g["shipping_mhz"] * 1e6 / 1e12)
    assert g["shipping_tflops"] < g["planned_tflops"]


def test_the_ranking_uses_each_devices_own_matmul_fraction():
    rows = {r["device"]: r for r in page.achievable_rows(["h100-sxm", "mi300x", "b200"])}
    factor = page.quiz_budget().non_matmul_factor
    for r in rows.values():
        assert r["MFU"] == pytest.approx(r["matmul efficiency"] * factor)
        assert r["useful (TFLOP/s)"] == pytest.approx(r["dense peak (TFLOP/s)"] * r["MFU"])
    assert rows["b200"]["rank by peak"] == 1 and rows["b200"]["rank by useful rate"] == 1
    assert sorted(r["rank by peak"] for r in rows.values()) == [1, 2, 3]


def test_the_pue_overrides_name_their_figure():
    assert page.pue_overrides("survey")["pue"] > page.pue_overrides("hyperscale")["pue"] >= 1
    with pytest.raises(ValueError):
        page.pue_overrides("moon")
