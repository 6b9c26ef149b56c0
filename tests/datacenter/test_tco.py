"""x4lib.datacenter.tco: owning against renting, checked by independent arithmetic, and the `tco` command's contract."""
import json
import math

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.datacenter import facility as dc
from x4lib.training import economics
from x4lib.datacenter import tco

HOURS = 365.25 * 24

# A small cluster with every input given, so the expected numbers below are worked by hand.
CASE = dict(server_usd=100_000.0, network_share=0.2, years=4.0, interest=0.0, colo_usd_per_kw_month=100.0,
            usd_per_kwh=0.10, pue=1.5, load_fraction=0.5, utilisation=0.5, rental_usd_per_gpu_hour=3.0)


def test_capital_recovery_factor_repays_the_loan():
    assert tco.capital_recovery_factor(0.0, 4) == pytest.approx(0.25)
    assert tco.capital_recovery_factor(0.1, 2) == pytest.approx(0.1 * 1.21 / 0.21)
    # the present value of Y payments of CRF equals the capital
    r, years = 0.08, 5
    crf = tco.capital_recovery_factor(r, years)
    assert sum(crf / (1 + r) ** k for k in range(1, years + 1)) == pytest.approx(1.0)


def test_tco_by_hand_for_two_servers():
    t = tco.tco("h100-sxm", 16, **CASE)
    server_kw = 10.2                                   # DGX H100 maximum (catalog: 1275 W per GPU x 8)
    assert t.servers == 2 and t.n_gpus == 16
    assert t.capex_usd == pytest.approx(2 * 100_000 / 0.8)                 # 250,000
    assert t.capital_usd_per_year == pytest.approx(250_000 / 4)
    assert t.facility_usd_per_year == pytest.approx(12 * 100 * 2 * server_kw)
    e = server_kw / 8 * 0.5 * 1.5 * 0.10                                    # USD per busy GPU-hour
    assert t.electricity_usd_per_busy_gpu_hour == pytest.approx(e)
    assert t.electricity_usd_per_year == pytest.approx(e * 16 * HOURS * 0.5)
    fixed = 62_500 + 24_480
    assert t.owned_usd_per_gpu_hour() == pytest.approx(fixed / (16 * HOURS * 0.5) + e)
    assert t.break_even_utilisation() == pytest.approx(fixed / (16 * HOURS * (3.0 - e)))
    j = t.to_json()
    assert j["opex_usd_per_year"] == pytest.approx(24_480 + e * 16 * HOURS * 0.5)


def test_at_break_even_owning_costs_what_renting_does():
    t = tco.tco("h100-sxm", 1024)
    u = t.break_even_utilisation()
    assert 0 < u < 1
    assert t.owned_usd_per_gpu_hour(u) == pytest.approx(t.rental_usd_per_gpu_hour)
    assert t.owned_usd_per_gpu_hour(min(1.0, u * 1.2)) < t.rental_usd_per_gpu_hour < t.owned_usd_per_gpu_hour(u * 0.8)


def test_break_even_above_one_and_never():
    assert tco.tco("h100-sxm", 16, **{**CASE, "rental_usd_per_gpu_hour": 0.5}).break_even_utilisation() > 1
    cheap = tco.tco("h100-sxm", 16, **{**CASE, "rental_usd_per_gpu_hour": 0.05})   # below the electricity
    assert cheap.break_even_utilisation() is None and cheap.to_json()["break_even_utilisation"] is None


def test_partial_servers_are_bought_whole():
    t = tco.tco("h100-sxm", 9, **CASE)
    assert t.servers == 2 and t.n_gpus == 16


def test_defaults_are_the_sourced_values():
    t = tco.tco("h100-sxm", 1024)
    a = t.assumptions
    assert a["server_usd"] == dc.value("server_price_h100_sxm")["value"]
    assert a["pue"] == economics.sourced()["defaults"]["pue"]["value"]
    assert a["usd_per_kwh"] == economics.sourced()["defaults"]["usd_per_kwh"]["value"]
    assert t.rental_usd_per_gpu_hour == dc.rental_price("h100-sxm", "on-demand")["value"]
    assert t.capex_usd == pytest.approx(128 * a["server_usd"] / (1 - a["network_share_of_cluster_cost"]))


def test_break_even_moves_the_right_way():
    rows = tco.break_even_sensitivity("h100-sxm", 1024, {"server_usd": (200_000, 400_000), "years": (3, 6),
                                                         "interest": (0.0, 0.15), "usd_per_kwh": (0.05, 0.2)})
    by = {r["input"]: r for r in rows}
    assert by["server_usd"]["u_low"] < by["server_usd"]["u_base"] < by["server_usd"]["u_high"]
    assert by["years"]["u_low"] > by["years"]["u_high"]          # a longer life spreads the capital thinner
    assert by["interest"]["u_low"] < by["interest"]["u_high"]
    assert by["usd_per_kwh"]["u_low"] < by["usd_per_kwh"]["u_high"]


@pytest.mark.parametrize("kw", [{"utilisation": 0}, {"utilisation": 1.5}, {"pue": 0.9}, {"years": 0},
                                {"interest": -0.1}, {"server_usd": 0}, {"usd_per_kwh": math.nan},
                                {"network_share": 1.0}])
def test_impossible_inputs_are_refused(kw):
    with pytest.raises(ValueError):
        tco.tco("h100-sxm", 8, **kw)


def test_tco_json_matches_its_contract():
    r = run_cli("tco", "--device", "h100-sxm", "--gpus", "1024", "--years", "5", "--utilisation", "0.7",
                "--usd-per-kwh", "0.08", "--pue", "1.2", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("tco_output.schema.json"))
    t = tco.tco("h100-sxm", 1024, years=5, utilisation=0.7, usd_per_kwh=0.08, pue=1.2)
    assert data["break_even_utilisation"] == pytest.approx(t.break_even_utilisation())
    assert data["owned_usd_per_gpu_hour"] == pytest.approx(t.owned_usd_per_gpu_hour())


def test_tco_text_output_names_the_break_even():
    r = run_cli("tco")
    assert r.returncode == 0 and "break-even" in r.stdout and "$" in r.stdout


@pytest.mark.parametrize("args,needle", [
    (["--gpus", "0"], "0 GPUs"),
    (["--utilisation", "0"], "0 utilisation"),
    (["--utilisation", "1.5"], "1.5 utilisation"),
    (["--pue", "0.5"], "0.5 PUE"),
    (["--years", "nan"], "not a finite number"),
    (["--server-usd=-5"], "-5 USD per server"),
    (["--device", "h100sxm"], "did you mean 'h100-sxm'"),
    (["--device", "a100-sxm-80gb"], "no sourced server price"),
    (["--device", "b200"], "no on-demand rental snapshot"),
    (["--device", "tpu-v5p"], "unknown device"),
])
def test_bad_tco_input_exits_2_with_one_line(args, needle):
    r = run_cli("tco", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert lines[0].startswith("usage:") and lines[-1].count("error:") == 1 and needle in lines[-1], r.stderr
