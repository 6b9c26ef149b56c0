import pytest

from x4lib.book import spanish


@pytest.mark.parametrize("value, decimals, text", [
    (57344, 0, "57.344"), (3.5, 1, "3,5"), (1024, 0, "1024"), (9999.6, 0, "10.000"),
    (-12345.678, 2, "-12.345,68"), (0.04, 1, "0,0"), (1234567, 0, "1.234.567"), (12.0, 0, "12"),
    (-0.001, 1, "0,0"),
])
def test_numbers_are_written_with_a_decimal_comma_and_thousands_stops(value, decimals, text):
    assert spanish.number(value, decimals) == text


def test_a_page_glues_each_spanish_number_under_its_own_key():
    assert spanish.numbers({"days": 12.04, "gpus": 1024, "mw": 1.75}, {"days": 1, "gpus": 0}) == {
        "days_es": "12,0", "gpus_es": "1024"}
    with pytest.raises(KeyError, match="mfu"):
        spanish.numbers({"days": 1.0}, {"mfu": 1})


@pytest.mark.parametrize("value, spec, text", [
    (2.5e-7, "e1", "2,5 × 10⁻⁷"), (5.88e24, "e2", "5,88 × 10²⁴"), (3.0, "+0", "+3"), (-2.4, "+1", "-2,4"),
    (0.0, "+0", "0"), (0.01234, "g3", "0,0123"), (12345.6, "g3", "12.300"), (1.5, "g3", "1,5"), (57344, 0, "57.344"),
    (3.25, "1", "3,2"),
])
def test_formatted_is_the_spanish_twin_of_the_english_format(value, spec, text):
    assert spanish.formatted(value, spec) == text


def test_a_page_glues_the_spanish_twin_of_what_it_already_glued(monkeypatch):
    import myst_nb

    from x4lib import pages
    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.__setitem__(name, value))
    monkeypatch.setattr(pages, "GLUED", {})
    pages.glue("days", 12.04, display=False)
    pages.glue("flop", 5.88e24, display=False)
    assert pages.glue_spanish({"days": 1, "flop": "e2"}) == {"days_es": "12,0", "flop_es": "5,88 × 10²⁴"}
    assert glued["days_es"] == "12,0" and glued["days"] == 12.04
    with pytest.raises(KeyError, match="not glued yet: mfu"):
        pages.glue_spanish({"mfu": 0})
