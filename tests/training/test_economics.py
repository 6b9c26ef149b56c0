"""The training-run estimator, checked against arithmetic done independently here."""
import pytest

from x4lib.book import bib
from x4lib.training import economics
from x4lib.catalog import specs
from x4lib.pages import ch00


def test_the_quiz_by_independent_arithmetic():
    g = economics.quiz_givens()
    dev = specs.get(g["device"])
    peak = dev.values["bf16_dense_tflops"].value * 1e12
    tdp = dev.values["tdp_w"].value
    flop = 6 * g["params"] * g["tokens"]
    seconds = flop / (g["n_gpus"] * peak * g["mfu"])
    est = ch00.estimate_quiz()
    assert est.total_flop == pytest.approx(4.2e23)
    assert est.wall_clock_s == pytest.approx(seconds)
    assert est.wall_clock_days == pytest.approx(seconds / 86400)
    assert est.gpu_hours == pytest.approx(g["n_gpus"] * seconds / 3600)
    assert est.rental_cost_usd == pytest.approx(g["n_gpus"] * seconds / 3600 * g["usd_per_gpu_hour"])
    assert est.it_power_W == pytest.approx(g["n_gpus"] * tdp)
    assert est.facility_power_W == pytest.approx(g["n_gpus"] * tdp * g["pue"])
    kwh = g["n_gpus"] * tdp * g["pue"] * seconds / 3.6e6
    assert est.energy_MWh == pytest.approx(kwh / 1e3)
    assert est.electricity_cost_usd == pytest.approx(kwh * g["usd_per_kwh"])


def test_json_units_round_trip():
    est = ch00.estimate_quiz()
    j = est.to_json()
    assert j["it_power_kw"] * 1e3 == pytest.approx(est.it_power_W)
    assert j["energy_mwh"] * 3.6e9 == pytest.approx(est.energy_J)
    assert j["wall_clock_days"] * 86400 == pytest.approx(j["wall_clock_s"])
    assert j["facility_power_kw"] == pytest.approx(j["it_power_kw"] * j["assumptions"]["pue"])


def test_time_scales_inversely_with_gpus_and_cost_does_not():
    a = ch00.estimate_quiz(n_gpus=512)
    b = ch00.estimate_quiz(n_gpus=1024)
    assert a.wall_clock_s == pytest.approx(2 * b.wall_clock_s)
    assert a.rental_cost_usd == pytest.approx(b.rental_cost_usd)


def test_server_scope_draws_more_than_the_gpu_alone():
    gpu = ch00.estimate_quiz(power_scope="gpu")
    server = ch00.estimate_quiz(power_scope="server")
    assert server.it_power_W > gpu.it_power_W
    assert server.wall_clock_s == gpu.wall_clock_s


@pytest.mark.parametrize("override,message", [
    ({"mfu": 0}, "mfu must be"), ({"mfu": 1.5}, "mfu must be"), ({"n_gpus": -8}, "gpus must be"),
    ({"n_gpus": 2.5}, "gpus must be"), ({"params": -1}, "params must be"), ({"pue": 0.9}, "pue must be"),
    ({"usd_per_kwh": -0.1}, "usd_per_kwh must be"), ({"power_scope": "rack"}, "power scope"),
])
def test_impossible_inputs_are_refused(override, message):
    with pytest.raises(ValueError, match=message):
        ch00.estimate_quiz(**override)


def test_dtype_the_device_lacks_is_refused():
    with pytest.raises(specs.UnsupportedDtypeError, match="a100-sxm-80gb has no published fp8"):
        ch00.estimate_quiz(device="a100-sxm-80gb", dtype="fp8")


def test_sourced_defaults_cite_the_bibliography():
    keys = bib.book_keys()
    for k in ch00.SOURCED_KEYS:
        assert economics.sourced_value(k)["source"] in keys, k


@pytest.mark.parametrize("bad", [{"mfu": float("nan")}, {"params": float("inf")}, {"pue": float("inf")},
                                 {"n_gpus": float("inf")}, {"tokens": float("nan")}])
def test_non_finite_inputs_are_refused(bad):
    with pytest.raises(ValueError):
        ch00.estimate_quiz(**bad)

