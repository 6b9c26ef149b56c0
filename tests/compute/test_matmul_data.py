"""The matmul model's data file: every constant sourced, every broken record refused naming its field."""
import pytest
import yaml

from x4lib.book import bib
from x4lib.compute import matmul_data


def test_every_source_of_the_data_file_is_in_the_bibliography():
    assert matmul_data.sources_used() <= bib.book_keys()


def broken(tmp_path, edit):
    doc = yaml.safe_load(matmul_data.MATMUL_PATH.read_text())
    edit(doc)
    path = tmp_path / "matmul_data.yaml"
    path.write_text(yaml.safe_dump(doc))
    matmul_data.constants.cache_clear()
    try:
        with pytest.raises(matmul_data.MatmulDataError) as exc:
            matmul_data.constants(path)
    finally:
        matmul_data.constants.cache_clear()
    assert "matmul_data.yaml" in str(exc.value) and exc.value.exit_code == 1
    return str(exc.value)


def test_a_non_finite_constant_is_refused_naming_the_field(tmp_path):
    msg = broken(tmp_path, lambda d: d["overheads"]["gpu_kernel_startup"].update(value=float("nan")))
    assert "gpu_kernel_startup" in msg


def test_an_unknown_device_or_overhead_is_refused(tmp_path):
    assert "not a catalog id" in broken(tmp_path, lambda d: d["families"]["nvidia_hopper"]["devices"].update(
        {"h900": {"units": "catalog"}}))
    assert "overhead" in broken(tmp_path, lambda d: d["families"]["cpu"].update(overhead="warp-drive"))
    assert "tile_latency" in broken(tmp_path, lambda d: d["families"]["nvidia_hopper"].update(tile_latency="warp"))


def test_a_constant_without_a_source_is_refused(tmp_path):
    def drop(d):
        del d["families"]["amd_cdna3"]["clocks"][0]["source"]
    assert "source" in broken(tmp_path, drop)


def test_a_count_the_catalog_cannot_supply_is_refused(tmp_path):
    # trn2 has no peak_basis in the catalog (AWS publishes no per-core rate and clock): "catalog" cannot supply it
    msg = broken(tmp_path, lambda d: d["families"]["nvidia_hopper"]["devices"].update({"trn2": {"units": "catalog"}}))
    assert "peak_basis" in msg
