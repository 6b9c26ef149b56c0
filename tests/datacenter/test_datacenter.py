"""x4lib.datacenter.facility: chapter 04's data file (schema, sources, dates) and the power chain from chip to grid."""
import copy
import math

import pytest
import yaml

from conftest import ROOT
from x4lib.book import bib
from x4lib.datacenter import facility as dc


def _sources(d):
    out = {v["source"] for v in d["values"].values()}
    for table in ("server_price_snapshots", "rental_snapshots", "electricity_prices", "carbon_intensity"):
        out |= {r["source"] for r in d[table]}
    return out | {m["source"] for m in d["models"].values()}


def test_every_value_cites_the_bibliography_and_is_dated():
    d = dc.data()
    assert _sources(d) <= bib.keys(ROOT / "book" / "references.bib")
    for v in d["values"].values():
        assert v["accessed"] >= "2026-01-01" and v["note"]
    for row in d["rental_snapshots"] + d["server_price_snapshots"]:
        assert row["date"] <= row["accessed"], row        # a snapshot is older than our reading of it


def _raw():
    return yaml.safe_load((ROOT / "x4lib" / "data" / "datacenter.yaml").read_text())


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d["values"]["server_life_years"].pop("source"), "'source' is a required property"),
    (lambda d: d["values"]["server_life_years"].__setitem__("unit", "fortnights"), "server_life_years/unit"),
    (lambda d: d["values"]["server_life_years"].__setitem__("value", float("nan")), "not a finite number"),
    (lambda d: d["values"]["server_life_years"].__setitem__("value", -5), "server_life_years/value"),
    (lambda d: d["rental_snapshots"][0].__setitem__("tier", "cheap"), "rental_snapshots/0/tier"),
    (lambda d: d["values"]["server_life_years"].__setitem__("guess", 1), "server_life_years"),
])
def test_a_broken_data_file_is_refused_naming_the_field(mutate, needle):
    raw = copy.deepcopy(_raw())
    mutate(raw)
    with pytest.raises(dc.DataError) as e:
        dc.parse(raw)
    assert "datacenter.yaml" in str(e.value) and needle in str(e.value) and e.value.exit_code == 1


def test_power_chain_of_the_quiz_cluster():
    pc = dc.power_chain("h100-sxm", 1024, pue=1.2, rack_W=40e3, load_fraction=0.75)
    assert pc.gpu_W == 700 and pc.server_W_per_gpu == 1275            # catalog: datasheet and DGX H100 10.2 kW / 8
    assert pc.it_W == pytest.approx(1024 * 1275)
    assert pc.facility_W == pytest.approx(1024 * 1275 * 1.2)
    assert pc.average_W == pytest.approx(1024 * 1275 * 1.2 * 0.75)
    assert pc.racks == math.ceil(1024 * 1275 / 40e3) == 33
    assert pc.server_overhead == pytest.approx(1275 / 700)


def test_power_chain_refuses_what_it_cannot_know():
    with pytest.raises(LookupError):
        dc.power_chain("tpu-v5p", 8, 1.1, 40e3)                       # no published server power
    for kw in ({"pue": 0.9}, {"rack_W": 0}, {"load_fraction": 0}):
        with pytest.raises(ValueError):
            dc.power_chain("h100-sxm", 8, **{"pue": 1.2, "rack_W": 40e3, **kw})


def test_air_cooling_arithmetic():
    # 1 kW carried by 1 m³/s of air warms it by 1000 / (1.2 × 1005) K
    assert dc.air_delta_T_K(1000, 1.0) == pytest.approx(1000 / (1.2 * 1005))
    assert dc.airflow_m3_per_s(1000, dc.air_delta_T_K(1000, 2.5)) == pytest.approx(2.5)
    assert dc.cfm_to_m3_per_s(1) == pytest.approx(0.000471947, rel=1e-6)


def test_electricity_units_convert_and_other_currencies_stay_apart():
    rows = dc.data()["electricity_prices"]
    us = next(r for r in rows if r["unit"] == "US cents/kWh")
    assert dc.electricity_usd_per_kwh(us) == pytest.approx(us["value"] / 100)
    eu = next(r for r in rows if r["unit"] == "EUR/kWh")
    assert dc.electricity_usd_per_kwh(eu) is None
