"""x4lib.catalog.landscape: the normaliser on hand cases, the data file against the catalog, the --json contract."""
import json

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.book import bib
from x4lib.catalog import landscape, specs


def test_sparse_rate_is_halved_and_says_so():
    n = landscape.normalise(1979, "TFLOP/s", sparsity="sparse")
    assert n.value_si == pytest.approx(989.5e12)
    assert n.conversions == ("sparse → dense: ÷ 2 (2:4 structured sparsity)",)


def test_dense_rate_needs_no_conversion():
    n = landscape.normalise(918, "TFLOP/s", sparsity="dense")
    assert n.value_si == pytest.approx(918e12) and n.conversions == ()


def test_per_package_figure_is_shared_per_chip():
    # a superchip of 2 GPUs printing 40 PFLOP/s sparse: 10 PFLOP/s dense per GPU
    n = landscape.normalise(40, "PFLOP/s", sparsity="sparse", chips=2)
    assert n.value_si == pytest.approx(10e15)
    assert any("per 2 chips" in c for c in n.conversions)


def test_bidirectional_link_is_halved():
    n = landscape.normalise(900, "GB/s", direction="bidirectional")
    assert n.value_si == pytest.approx(450e9)
    assert n.conversions == ("both directions → per direction: ÷ 2",)


def test_gib_is_converted_to_gb():
    n = landscape.normalise(192, "GiB")
    assert n.value_si == 192 * 2 ** 30
    assert n.value_si / 1e9 == pytest.approx(206.158, rel=1e-5)
    assert n.conversions[0].startswith("GiB → GB")


def test_bits_and_both_directions():
    n = landscape.normalise(9.6, "Tb/s", direction="bidirectional")
    assert n.value_si == pytest.approx(600e9)
    assert len(n.conversions) == 2


def test_planned_clock_rescales_the_peak():
    n = landscape.normalise(1835, "TFLOP/s", sparsity="dense", planned_clock_hz=1750e6, shipping_clock_hz=1600e6)
    assert n.value_si == pytest.approx(1835e12 * 1600 / 1750)


@pytest.mark.parametrize("kw,msg", [
    (dict(value=1, unit="TFLOP/s"), "dense or sparse"),
    (dict(value=1, unit="GB/s"), "per_direction"),
    (dict(value=1, unit="furlong"), "unknown unit"),
    (dict(value=float("nan"), unit="GB"), "finite"),
    (dict(value=1, unit="GB", sparsity="sparse"), "rates"),
    (dict(value=1, unit="TFLOP/s", sparsity="dense", planned_clock_hz=1e9), "both"),
])
def test_bad_figures_are_refused(kw, msg):
    with pytest.raises(ValueError, match=msg):
        landscape.normalise(**kw)


def test_every_vendor_figure_normalises_to_the_catalog_value():
    for f in landscape.vendor_figures():
        if f.get("catalog_keeps_printed"):
            assert f["catalog"] == f["value"], f["id"]        # the catalog keeps the vendor's number
            assert f["conversions"], f["id"]
        else:
            assert f["normalised"] == pytest.approx(f["catalog"], rel=5e-3), f["id"]


def test_landscape_sources_resolve():
    assert landscape.sources_used() <= bib.book_keys()


def test_row_names_basis_source_and_conversions():
    r = landscape.row("tpu7x")
    mem = r["values"]["memory_gb"]
    assert mem["value"] == pytest.approx(206.158, rel=1e-5) and mem["conversions"]
    assert r["values"]["ridge_bf16_flop_per_byte"]["value"] == pytest.approx(2307e12 / 7300e9)
    g = landscape.row("gaudi3")["values"]["bf16_dense_tflops"]
    assert "planned 1750 MHz" in g["basis"]
    assert "announced" in landscape.row("rubin")["values"]["bf16_dense_tflops"]["basis"]


def test_rental_rows_have_dates_and_only_priced_devices():
    rows = landscape.rental_rows()
    assert rows and all(r["date"] for r in rows)
    h = [r for r in rows if r["device"] == "h100-sxm" and r["provider"] == "RunPod"][0]
    assert h["usd_per_pflop_hour"] == pytest.approx(2.99 / 0.9894)
    assert landscape.cheapest_rental("mi355x") is None


def test_announced_parts_have_no_release_year():
    cat = specs.load_catalog()
    assert {d.id for d in cat.values() if d.status == "announced"} == {"rubin", "mi455x"}
    with pytest.raises(specs.CatalogError, match="announced"):
        rec = {**cat["rubin"].to_json(), "released": 2026}
        rec.pop("status")
        specs.parse_device({**rec, "status": "announced"})


def test_cli_json_matches_its_schema():
    r = run_cli("landscape", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, load_schema("landscape_output.schema.json"))
    assert {d["device"] for d in doc["devices"]} >= {"mi355x", "tpu7x", "trn3", "rubin"}


def test_cli_bad_input_exits_2():
    r = run_cli("landscape", "--status", "rumoured")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_every_memory_capacity_on_one_basis():
    """Issue 27: binary-sized HBM counts as GiB whatever the vendor prints (Google and AWS print GiB, AMD's ROCm
    table GiB, NVIDIA "GB" for binary stacks); on-chip SRAM stays as printed; every device with a memory size has
    an entry saying which unit its source uses."""
    from x4lib.catalog import specs
    h100, tpu7x, mi355x, wse3 = (specs.get(d) for d in ("h100-sxm", "tpu7x", "mi355x", "wse-3"))
    assert landscape.memory_B(h100)[0] == 80 * 2**30
    assert landscape.memory_B(tpu7x)[0] == 192 * 2**30
    assert landscape.memory_B(mi355x)[0] == 288 * 2**30
    assert landscape.memory_B(wse3) == (44e9, [])
    assert landscape.memory_printed(tpu7x)["unit"] == "GiB" and landscape.memory_printed(h100)["unit"] == "GB"
    missing = [d.id for d in specs.load_catalog().values()
               if "memory_gb" in d.values and d.kind != "cpu" and landscape.memory_printed(d) is None]
    assert missing == []
    # ratios between binary-sized parts are those of the printed numbers
    assert landscape.memory_B(tpu7x)[0] / landscape.memory_B(h100)[0] == 192 / 80
