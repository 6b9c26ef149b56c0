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
