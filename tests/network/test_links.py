"""x4lib.network.links: the link hierarchy is computed from lanes, line codes, ports or the catalog, per direction, and a
broken links.yaml is refused naming the entry and field."""
import pytest
import yaml

from conftest import ROOT
from x4lib.book import bib
from x4lib.network import links
from x4lib.catalog import specs

GB = 1e9


@pytest.mark.parametrize("link_id,per_dir_gb_s", [
    ("pcie-gen3-x16", 16 * 8 * 128 / 130 / 8),     # 15.75
    ("pcie-gen4-x16", 16 * 16 * 128 / 130 / 8),    # 31.5: per direction, not "bidirectional"
    ("pcie-gen5-x16", 16 * 32 * 128 / 130 / 8),    # 63.0
    ("pcie-gen6-x16", 16 * 64 * 242 / 256 / 8),    # 121 after the flit overhead
    ("ib-hdr", 25), ("ib-ndr", 50), ("ib-xdr", 100), ("eth-400g", 50), ("eth-800g", 100),
    ("nvlink2-v100", 150), ("nvlink4-h100", 450), ("nvlink5-b200", 900),
    ("nvswitch3-chip", 64 * 25), ("quantum2-qm9700", 64 * 50), ("tpu-v6e-ici", 400), ("nvl72-domain", 65e3),
])
def test_per_direction_rates_by_hand(link_id, per_dir_gb_s):
    x = links.get(link_id)
    assert x.per_direction_Bps == pytest.approx(per_dir_gb_s * GB)
    assert x.bidirectional_Bps == pytest.approx(2 * per_dir_gb_s * GB)


def test_line_codes_and_raw_rates():
    g5 = links.get("pcie-gen5-x16")
    assert g5.raw_per_direction_Bps == pytest.approx(64 * GB)  # the datasheets' "128 GB/s" is 2 x 64 raw
    assert g5.encoding_efficiency == pytest.approx(128 / 130)
    assert links.get("pcie-gen6-x16").raw_per_direction_Bps == pytest.approx(128 * GB)
    assert links.get("ib-ndr").encoding_efficiency == 1.0


def test_catalog_references_are_not_copies():
    assert links.get("nvlink4-h100").per_direction_Bps == specs.get("h100-sxm").si("scaleup_bw_gb_s_per_direction")
    assert links.get("tpu-v5p-ici").per_direction_Bps == specs.get("tpu-v5p").si("scaleup_bw_gb_s_per_direction")


def test_per_link_rates_of_nvlink_generations():
    assert [links.nvlink_per_link_Bps(g) / GB for g in (2, 3, 4, 5)] == pytest.approx([25, 25, 25, 50])
    assert links.get("mi300x-infinity-fabric").per_link_per_direction_Bps == pytest.approx(64 * GB)
    with pytest.raises(ValueError, match="generation"):
        links.nvlink_per_link_Bps(7)


def test_nccl_pcie_model_is_a_weight_below_line_rate():
    assert links.nccl_pcie_model_Bps(5) == pytest.approx(48 * GB)
    assert links.nccl_pcie_model_Bps(3) == pytest.approx(12 * GB)
    assert links.nccl_pcie_model_Bps(5) < links.get("pcie-gen5-x16").per_direction_Bps
    with pytest.raises(ValueError):
        links.nccl_pcie_model_Bps(2)


def test_lane_rate_rejects_impossible_values():
    with pytest.raises(ValueError):
        links.lane_rate_Bps(-1, "GT/s", 16, 128, 130)
    with pytest.raises(ValueError):
        links.lane_rate_Bps(8, "GB/s")


def test_every_source_is_in_the_bibliography():
    raw = yaml.safe_load((ROOT / "x4lib" / "data" / "links.yaml").read_text())
    used = {e["source"] for e in raw["links"] + raw["latency"]}
    assert not used - bib.book_keys(), used - bib.book_keys()


def test_latencies_are_labelled_model_constants_or_secondary():
    kinds = {x.id: x.kind for x in links.latencies()}
    assert kinds["nccl-nvlink-hop"] == "model constant" and kinds["switch-asic-hop"] == "secondary"
    assert "primary" not in kinds.values()  # none found: the chapter says so


def test_unknown_link_names_the_closest():
    with pytest.raises(links.UnknownLinkError, match="did you mean 'ib-ndr'"):
        links.get("ib-nd")


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d["links"][0].update(lanes=None), "lanes"),
    (lambda d: d["links"][0].pop("encoding"), "line code"),
    (lambda d: d["links"][0].update(stated={"value": 1, "unit": "GB/s", "direction": "per_direction"}), "one way"),
    (lambda d: d["links"][0]["lane_rate"].update(unit="GB/s"), "lane_rate"),
    (lambda d: d["links"][5]["catalog"].update(device="h999"), "unknown device"),
    (lambda d: d["links"][1].update(encoding={"name": "x", "payload": 131, "total": 130}), "exceeds"),
    (lambda d: d["links"][1].update(id=d["links"][0]["id"]), "duplicate"),
    (lambda d: d["links"][0]["lane_rate"].update(value=float("nan")), "finite"),
])
def test_bad_links_file_is_refused(tmp_path, mutate, needle):
    raw = yaml.safe_load((ROOT / "x4lib" / "data" / "links.yaml").read_text())
    mutate(raw)
    path = tmp_path / "links.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(links.LinksError, match=needle):
        links.load(path)


def test_hierarchy_rows_are_display_units():
    rows = {r["id"]: r for r in links.hierarchy_rows()}
    assert rows["pcie-gen4-x16"]["per_direction_gb_s"] == pytest.approx(31.51, abs=0.01)
    assert rows["nvlink4-h100"]["bidirectional_gb_s"] == pytest.approx(900)
