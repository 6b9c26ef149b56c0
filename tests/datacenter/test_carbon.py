"""x4lib.datacenter.carbon: emissions from energy and intensity; Patterson et al.'s GPT-3 figure reproduced."""
import pytest

from x4lib.datacenter import carbon


def test_emissions_by_hand():
    assert carbon.emissions_kg(3.6e9, 400) == pytest.approx(400)       # 1 MWh at 400 g/kWh = 400 kg


def test_patterson_gpt3_is_energy_times_intensity():
    computed, reported = carbon.patterson_gpt3_check()
    assert computed == pytest.approx(reported, rel=0.005)


def test_intensities_are_sorted_and_found():
    rows = carbon.intensity_rows()
    assert [r["value"] for r in rows] == sorted(r["value"] for r in rows)
    assert carbon.intensity("France") < carbon.intensity("United States") < carbon.intensity("India")
    with pytest.raises(LookupError):
        carbon.intensity("Atlantis")
    with pytest.raises(ValueError):
        carbon.emissions_kg(-1, 10)
