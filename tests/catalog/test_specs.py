"""The spec catalog: completeness, provenance, internal consistency, and validation of bad records."""
import copy

import pytest
import yaml

from x4lib.catalog import specs

REQUIRED_IDS = ["i5-8250u", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb", "h100-sxm", "h100-pcie",
                "h100-nvl", "h200-sxm", "b200", "gb200", "mi300x", "mi325x", "gaudi3", "tpu-v4", "tpu-v5e",
                "tpu-v5p", "trn1", "trn2", "wse-3", "groq-lpu",
                "b300", "gb300", "mi355x", "mi350x", "tpu-v6e", "tpu7x", "trn3", "rubin", "mi455x"]


@pytest.fixture(scope="module")
def catalog():
    return specs.load_catalog()


def good_record() -> dict:
    return yaml.safe_load((specs.DEVICES_DIR / "h100-sxm.yaml").read_text())


def test_every_required_device_is_present(catalog):
    assert sorted(REQUIRED_IDS) == sorted(catalog)


def test_every_source_key_is_in_the_bibliography(catalog):
    assert specs.missing_sources(catalog=catalog) == {}


def test_every_value_has_a_date_and_a_unit_of_its_field(catalog):
    for dev in catalog.values():
        for field, v in dev.values.items():
            assert v.unit == specs.FIELD_UNITS[field], (dev.id, field)
            assert len(v.accessed) == 10, (dev.id, field)


@pytest.mark.parametrize("prefix,suffix", [(p, "tflops") for p in ("fp4", "fp8", "fp16", "bf16", "tf32")]
                         + [("int8", "tops")])
def test_dense_is_half_of_sparse_where_both_are_published(catalog, prefix, suffix):
    pairs = [(d.id, d.values[f"{prefix}_dense_{suffix}"].value, d.values[f"{prefix}_sparse_{suffix}"].value)
             for d in catalog.values()
             if f"{prefix}_dense_{suffix}" in d.values and f"{prefix}_sparse_{suffix}" in d.values]
    for dev_id, dense, sparse in pairs:
        assert dense == pytest.approx(sparse / 2, rel=0.01), dev_id


def test_peak_basis_reproduces_the_published_dense_peak(catalog):
    checked = 0
    for dev in catalog.values():
        if not dev.peak_basis:
            continue
        for dtype in dev.peak_basis["flop_per_clock_per_unit"]:
            d = "fp8_e4m3" if dtype == "fp8" else dtype
            published = dev.peak_flop_per_s(d)
            assert specs.peak_from_basis(dev, d) == pytest.approx(published, rel=0.015), (dev.id, dtype)
            checked += 1
    assert checked >= 3


def test_vendor_memory_is_stated_in_gb_and_the_laptop_cpu_has_none(catalog):
    assert "memory_gb" not in catalog["i5-8250u"].values
    assert catalog["h100-sxm"].values["memory_gb"].value == 80


def test_sparse_figure_is_larger_than_dense_everywhere(catalog):
    for dev in catalog.values():
        for f, v in dev.values.items():
            if "_sparse_" in f:
                dense = dev.values.get(f.replace("_sparse_", "_dense_"))
                assert dense is None or dense.value < v.value, (dev.id, f)


def test_unknown_device_names_the_closest_match():
    with pytest.raises(specs.UnknownDeviceError) as exc:
        specs.get("h100sxm")
    assert "'h100-sxm'" in str(exc.value) and "known ids" in str(exc.value)


def test_dtype_without_a_peak_is_refused(catalog):
    with pytest.raises(specs.UnsupportedDtypeError, match="fp8"):
        catalog["a100-sxm-80gb"].peak_flop_per_s("fp8")


def test_a_good_record_parses():
    dev = specs.parse_device(good_record(), "h100-sxm.yaml")
    assert dev.peak_flop_per_s("bf16") == pytest.approx(dev.values["bf16_dense_tflops"].value * 1e12)


@pytest.mark.parametrize("mutate,message", [
    (lambda r: r["values"]["bf16_dense_tflops"].update(unit="TFLOPS"), "unit 'TFLOPS' is wrong"),
    (lambda r: r["values"]["bf16_dense_tflops"].pop("source"), "'source' is a required property"),
    (lambda r: r["values"]["bf16_dense_tflops"].update(sparsity="sparse"), "store a sparse rate"),
    (lambda r: r["values"]["scaleup_bw_gb_s_per_direction"].update(direction="bidirectional"), "per direction"),
    (lambda r: r["values"].update(flops={"value": 1, "unit": "TFLOP/s", "source": "kaplan-2020", "accessed": "2026-01-01"}),
     "unknown field"),
    (lambda r: r["values"]["tdp_w"].update(value=-700), "less than or equal to the minimum"),
    (lambda r: r.update(kind="quantum"), "'quantum' is not one of"),
    (lambda r: r["values"]["bf16_dense_tflops"].update(value=float("nan")), "not a finite number"),
    (lambda r: r["values"]["memory_gb"].update(value=float("inf")), "not a finite number"),
    (lambda r: r["values"]["memory_gb"].update(conflicts=[{"value": 96, "unit": "GiB", "source": "kaplan-2020",
                                                            "accessed": "2026-01-01", "as_printed": "96 GiB"}]),
     "conflicts/0"),
    (lambda r: r["values"]["memory_gb"].update(conflicts=[{"value": 96, "unit": "GB", "source": "kaplan-2020"}]),
     "'accessed' is a required property"),
])
def test_bad_records_are_rejected_with_the_device_and_field_named(mutate, message):
    record = copy.deepcopy(good_record())
    mutate(record)
    with pytest.raises(specs.CatalogError, match=message) as exc:
        specs.parse_device(record, "h100-sxm.yaml")
    assert "h100-sxm" in str(exc.value)


def test_file_name_must_match_id(tmp_path):
    rec = good_record()
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(rec))
    with pytest.raises(specs.CatalogError, match="must equal the file name"):
        specs.load_catalog(tmp_path)


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_yaml_nan_and_inf_are_refused(tmp_path, value):
    text = yaml.safe_dump(good_record()).replace("value: 989.4", f"value: {value}", 1)
    assert value in text
    (tmp_path / "h100-sxm.yaml").write_text(text)
    with pytest.raises(specs.CatalogError, match="not a finite number"):
        specs.load_catalog(tmp_path)


def test_a_non_utf8_record_is_named(tmp_path):
    (tmp_path / "h100-sxm.yaml").write_bytes("name: Garc\u00eda".encode("latin-1"))
    with pytest.raises(specs.CatalogError, match="h100-sxm.yaml: not UTF-8"):
        specs.load_catalog(tmp_path)



def test_b200_keeps_the_shipping_memory_and_shows_the_other_sourced_figures():
    dev = specs.get("b200")
    mem, bw = dev.values["memory_gb"], dev.values["memory_bw_gb_s"]
    assert mem.si == 180e9 and {s: v for v, s, _ in mem.conflicts_si()}["nvidia-blackwell-technical-brief"] == 192e9
    assert bw.si == 7.7e12 and {s: v for v, s, _ in bw.conflicts_si()}["nvidia-dgx-b200-datasheet"] == 8e12
    assert "b200.memory_gb.conflicts" in specs.sources_used()["nvidia-blackwell-technical-brief"]
    assert mem.to_json()["conflicts"][0]["as_printed"].startswith('"up to 192 GB')
