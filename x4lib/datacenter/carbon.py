"""Carbon of a run: energy drawn from the grid times the grid's carbon intensity, in the manner of Patterson et al.

    emissions [kg CO2e] = E_facility [kWh] · I [g CO2e/kWh] / 1000

E_facility already includes the datacenter overhead (IT energy × PUE). I is the grid's average intensity for the
region and year (x4lib/data/datacenter.yaml ``carbon_intensity``: Ember's lifecycle CO2e per kWh generated, and
EIA's direct CO2 per kWh for the United States; they are different quantities and the table says which). An
hourly, market-based or contract (PPA) figure can be much lower or higher than the annual grid average.
Sources: patterson-2021, ember-owid-carbon-2023, eia-co2-per-kwh-2023. Used in: book/04-datacenter-economics.md.
"""
from __future__ import annotations

import math

from x4lib.datacenter import facility as dc

J_PER_KWH = 3.6e6


def emissions_kg(energy_J: float, g_per_kwh: float) -> float:
    """Emissions [kg CO2e] of ``energy_J`` drawn at an intensity of ``g_per_kwh`` [g/kWh]."""
    if not math.isfinite(energy_J) or energy_J < 0:
        raise ValueError(f"energy must be >= 0 J, got {energy_J}")
    if not math.isfinite(g_per_kwh) or g_per_kwh < 0:
        raise ValueError(f"carbon intensity must be >= 0 g/kWh, got {g_per_kwh}")
    return energy_J / J_PER_KWH * g_per_kwh / 1e3


def intensity_rows() -> list[dict]:
    """The dated intensities of datacenter.yaml, lowest first (region, period, g/kWh, unit, source)."""
    rows = [dict(r) for r in dc.data()["carbon_intensity"]]
    return sorted(rows, key=lambda r: r["value"])


def intensity(region: str) -> float:
    """g/kWh of ``region`` as listed in datacenter.yaml."""
    for r in dc.data()["carbon_intensity"]:
        if r["region"] == region:
            return r["value"]
    raise LookupError(f"no carbon intensity for {region!r}; have: "
                      f"{', '.join(r['region'] for r in dc.data()['carbon_intensity'])}")


def patterson_gpt3_check() -> tuple[float, float]:
    """(computed, reported) tonnes CO2e of GPT-3's training: 1287 MWh × 0.429 kg/kWh against Patterson's 552 t."""
    e = dc.value("patterson_gpt3_energy_mwh")["value"] * 1e3 * J_PER_KWH
    k = dc.value("patterson_us_average_kg_per_kwh")["value"] * 1e3
    return emissions_kg(e, k) / 1e3, dc.value("patterson_gpt3_tco2e")["value"]
