"""x4lib.pages.ch04: what chapter 04 shows is consistent with its models, and its figures are drawn as the house
style asks (models dashed, no data covered by legends)."""
import math

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from x4lib.book import plots
from x4lib.datacenter import reliability, tco  # noqa: E402
from x4lib.pages import ch04 as page  # noqa: E402


def test_every_glued_number_is_finite_or_deliberately_absent():
    s = page.summary()
    bad = [k for k, v in s.items() if isinstance(v, float) and not math.isfinite(v)]
    assert not bad, bad
    assert all(isinstance(v, (int, float)) for v in s.values() if v is not None)


def test_the_energy_claim_is_tested_not_assumed():
    s = page.summary()
    assert s["share_own_pct"] < s["share_full_pct"] < 10 < s["claim_pct"]
    assert s["p_star"] > 10 * page._eco("usd_per_kwh", "defaults")
    last = page.energy_share_rows()[-1]
    assert last["share"] == pytest.approx(page.CLAIMED_ENERGY_SHARE, abs=1e-6)


def test_break_even_rows_agree_with_the_tco():
    t = page.cluster_tco()
    for r in page.rental_rows():
        expect = t.break_even_utilisation(r["price"])
        assert (r["u"] is None and expect is None) or r["u"] == pytest.approx(expect)
    assert page.summary()["u_star"] == pytest.approx(tco.tco("h100-sxm", 1024).break_even_utilisation())


def test_spot_prices_bracket_the_discounts():
    sp = page.spot_prices()
    od = 11.06
    assert sp["min_discount"] == pytest.approx(od * 0.4) and sp["max_discount"] == pytest.approx(od * 0.09)


def test_reliability_rows_use_daly_and_the_failure_scenarios():
    rows = page.reliability_rows()
    assert rows[0]["goodput"] == 1.0
    llama, kok = rows[1], rows[2]
    assert kok["mtbf_h"] == pytest.approx(7.9)
    assert kok["goodput"] < llama["goodput"] < 1
    assert llama["daly_min"] * 60 == pytest.approx(reliability.daly_interval_s(llama["mtbf_h"] * 3600, llama["delta_s"]))


def test_goodput_falls_with_cluster_size():
    g = [r["goodput"] for r in page.mtbf_vs_gpus_rows()]
    assert g == sorted(g, reverse=True)


def test_owned_serving_price_is_per_wall_clock_hour():
    t = page.cluster_tco(utilisation=0.5)
    owned = next(r for r in page.serving_rows() if r["case"].endswith("owned"))
    assert owned["price"] == pytest.approx(t.fixed_usd_per_year / (t.n_gpus * tco.HOURS_PER_YEAR)
                                           + 0.5 * t.electricity_usd_per_busy_gpu_hour)


def test_tables_render_without_python_reprs():
    for make in (page.rack_table, page.power_chain_table, page.electricity_table, page.tco_table, page.rental_table,
                 page.server_price_table, page.break_even_sensitivity_table, page.energy_share_table,
                 page.reliability_table, page.mtbf_table, page.storage_table, page.carbon_table, page.serving_table,
                 page.cost_sensitivity_table, page.givens_table):
        text = repr(make())
        assert "None" not in text and "nan" not in text.lower().split() and "{" not in text, make.__name__


def test_figures_draw_models_dashed_and_legends_below():
    fig, ax = plots.new_axes()
    us, owned, prices, crossings = page.break_even_curve()
    plots.cost_vs_utilisation(ax, us, owned, prices, crossings)
    fig.canvas.draw()
    assert ax.get_lines()[0].get_linestyle() == "--"
    assert fig.legends[0].get_window_extent().y1 <= ax.get_window_extent().y0
    fig, ax = plots.new_axes()
    curves, marks = page.goodput_curves()
    plots.goodput_vs_interval(ax, curves, marks)
    assert all(line.get_linestyle() == "--" for line in ax.get_lines()[:len(curves)])
    fig, ax = plots.new_axes()
    rows, base = page.tornado_rows()
    plots.tornado(ax, rows, base, "USD")
    assert len(ax.patches) == 2 * len(rows)


def test_explorer_builds_and_recomputes():
    w = page.run_cost_explorer()
    assert w.children[0].value == "own"
    w.children[0].value = "rent"          # runs the callback: no exception
