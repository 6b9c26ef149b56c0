"""x4lib.catalog.facts: every file loads, every source resolves, a broken file names itself."""
import pytest
import yaml

from x4lib.book import bib
from x4lib.catalog import facts


def test_every_facts_file_loads_and_cites_the_bibliography():
    groups = facts.load()
    assert {"h100_sm", "h100_memory", "trainium_core", "gaudi3_chip", "edge_npus", "host"} <= set(groups)
    assert facts.sources_used() <= bib.book_keys()
    assert facts.get("h100_sm", "shared_memory_per_sm").si == 228 * 1024
    assert facts.get("gaudi3_chip", "roce_port_rate").si == pytest.approx(25e9)


def test_unknown_names_say_what_exists():
    with pytest.raises(LookupError, match="known"):
        facts.group("h200_sm")
    with pytest.raises(LookupError, match="it has"):
        facts.get("h100_sm", "tensor_cores")


@pytest.mark.parametrize("change,needle", [
    (lambda r: r["facts"]["x"].update(value=float("nan")), "not a finite number"),
    (lambda r: r["facts"]["x"].update(unit="furlongs"), "unknown unit"),
    (lambda r: r["facts"]["x"].update(source="given"), "given"),
    (lambda r: r["facts"]["x"].pop("accessed"), "accessed"),
])
def test_a_broken_file_is_refused_naming_file_and_field(tmp_path, change, needle):
    rec = {"schema_version": 1, "id": "demo", "title": "demo", "scope": "demo",
           "facts": {"x": {"value": 1, "unit": "B", "source": "nvidia-h100-whitepaper", "accessed": "2026-11-23",
                           "kind": "vendor"}}}
    change(rec)
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(rec))
    with pytest.raises(facts.FactsError, match=needle) as exc:
        facts.load.__wrapped__(tmp_path)
    assert "demo.yaml" in str(exc.value) and exc.value.exit_code == 1


def test_a_sparse_rate_is_halved_to_the_dense_basis_and_an_unstated_one_gets_none():
    orin = facts.get("edge_npus", "jetson_orin_nx_peak")
    assert orin.sparsity == "sparse" and orin.dense_si == pytest.approx(orin.si / 2)
    tpu = facts.get("edge_npus", "edge_tpu_peak")
    assert tpu.sparsity == "dense" and tpu.dense_si == tpu.si
    assert facts.get("edge_npus", "apple_m4_ane_peak").dense_si is None


def test_sparsity_takes_only_dense_or_sparse(tmp_path):
    rec = {"schema_version": 1, "id": "demo", "title": "demo", "scope": "demo",
           "facts": {"x": {"value": 1, "unit": "TOP/s", "source": "nvidia-h100-whitepaper",
                           "accessed": "2026-11-23", "kind": "vendor", "sparsity": "half"}}}
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(rec))
    with pytest.raises(facts.FactsError, match="sparsity"):
        facts.load.__wrapped__(tmp_path)
