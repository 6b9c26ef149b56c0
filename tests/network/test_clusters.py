"""x4lib.network.clusters: the presets reference the catalog, every source is in the bibliography, and a broken
clusters.yaml is refused with the entry and field named."""
import pytest
import yaml

from conftest import ROOT
from x4lib.book import bib
from x4lib.network import clusters
from x4lib.catalog import specs


# --- presets -----------------------------------------------------------------------------------------------------

def test_presets_load_and_reference_the_catalog():
    h = clusters.get("2x8-h100-ib400")
    a = clusters.get("2x8-a100-ib200")
    assert h.intra.bw_Bps == specs.get("h100-sxm").values["scaleup_bw_gb_s_per_direction"].si
    assert a.intra.bw_Bps == specs.get("a100-sxm-80gb").values["scaleup_bw_gb_s_per_direction"].si
    assert h.sources["intra_bw_per_direction"]["catalog"] == "h100-sxm.scaleup_bw_gb_s_per_direction"
    assert (h.nodes, h.gpus_per_node, h.nics_per_node) == (2, 8, 8)
    assert h.nic.bw_Bps == pytest.approx(50e9) and a.nic.bw_Bps == pytest.approx(25e9)  # 400 / 200 Gb/s in B/s
    assert h.intra.in_network and not a.intra.in_network  # NVLS needs NVSwitch gen 3
    assert (h.arch, a.arch, h.cpu, a.cpu) == ("hopper", "ampere", "intel", "amd")  # NCCL's rows for each
    assert h.nic.network == "infiniband"


def test_preset_file_references_the_catalog_not_copied_numbers():
    raw = yaml.safe_load((ROOT / "x4lib" / "data" / "clusters.yaml").read_text())
    for cid, c in raw["clusters"].items():
        assert "catalog" in c["intra"]["bw_per_direction"], cid
        assert c["nic"]["line_rate"]["unit"] == "Gb/s", cid


def test_every_cluster_source_is_in_the_bibliography():
    keys = bib.book_keys()
    raw = yaml.safe_load((ROOT / "x4lib" / "data" / "clusters.yaml").read_text())
    found = set()

    def walk(obj):
        if isinstance(obj, dict):
            if "source" in obj:
                found.add(obj["source"])
            for v in obj.values():
                walk(v)
    walk(raw)
    assert found and not (found - keys), found - keys
    assert {"nccl-tests-performance", "thakur-2005", "patarasuk-2009"} <= keys


def test_unknown_cluster_names_the_closest():
    with pytest.raises(clusters.UnknownClusterError, match="did you mean '2x8-h100-ib400'"):
        clusters.get("2x8-h100")


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d["clusters"]["2x8-h100-ib400"]["nics_per_node"].update(value=0), "must be > 0"),
    (lambda d: d["clusters"]["2x8-h100-ib400"]["nic"]["line_rate"].update(unit="GB"), "unit 'GB'"),
    (lambda d: d["clusters"]["2x8-h100-ib400"]["intra"]["bw_per_direction"]["catalog"].update(device="h999"),
     "unknown device"),
    (lambda d: d["clusters"]["2x8-h100-ib400"].update(nodes=0), "nodes"),
    (lambda d: d["clusters"]["2x8-h100-ib400"]["nic"]["line_rate"].pop("source"), "source"),
    (lambda d: d["clusters"]["2x8-h100-ib400"].update(device="i5-8250u"), "no NCCL architecture"),
    (lambda d: d["clusters"]["2x8-h100-ib400"]["nic"].update(network="myrinet"), "myrinet"),
])
def test_bad_cluster_file_is_rejected(tmp_path, mutate, needle):
    raw = yaml.safe_load((ROOT / "x4lib" / "data" / "clusters.yaml").read_text())
    mutate(raw)
    path = tmp_path / "clusters.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(clusters.ClusterError, match=needle.replace("(", r"\(").replace(")", r"\)").replace("]", r"\]")):
        clusters.load(path)


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_non_finite_cluster_values_are_refused(tmp_path, value):
    text = (ROOT / "x4lib" / "data" / "clusters.yaml").read_text()
    bad = text.replace("      value: 400\n", f"      value: {value}\n", 1)
    assert bad != text
    path = tmp_path / "clusters.yaml"
    path.write_text(bad)
    with pytest.raises(clusters.ClusterError, match="not a finite number"):
        clusters.load(path)


def test_a_non_utf8_cluster_file_is_named(tmp_path):
    path = tmp_path / "clusters.yaml"
    path.write_bytes("name: Garc\u00eda".encode("latin-1"))
    with pytest.raises(clusters.ClusterError, match="clusters.yaml"):
        clusters.load(path)
