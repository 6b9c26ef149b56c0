"""Page helpers of chapter 05: glue values and tables."""
from x4lib.pages import ch05


def test_summary_values_are_plain_and_consistent():
    S = ch05.summary()
    assert S["n_devices"] == S["n_shipping"] + S["n_announced"]
    assert all(isinstance(v, (int, float, str)) for v in S.values())
    assert S["ridge_lo"] < S["ridge_hi"]


def test_tables_stay_small_and_have_no_python_repr():
    for t in (ch05.misleads_table(), ch05.chooser_table(), ch05.price_table(), ch05.compare_table(),
              ch05.achievable_table(), ch05.ranking_table("serve")):
        assert len(t) <= 20
        text = t.to_text()
        assert "{'" not in text and "None" not in text
    assert len(ch05.compute_table().compact) <= 20


def test_an_sram_machine_shows_its_sram_never_zero_gb_of_hbm():
    rows = {r["device"]: r for r in (ch05._flat(x) for x in ch05.landscape.table())}
    assert rows["groq-lpu"]["memory_gb"] == "SRAM only: 230 MB"
    assert rows["wse-3"]["memory_gb"] == "SRAM only: 44,000 MB"
    full = ch05.compute_table().full.to_text()
    assert "SRAM only: 230 MB" in full and "SRAM only: 44,000 MB" in full
