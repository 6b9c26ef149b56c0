"""x4lib.catalog.published: the public logs the lab validates against are all stored, described, sourced and readable."""
import pytest
import yaml

from conftest import ROOT
from x4lib.book import bib
from x4lib.network import collectives, nccl_log
from x4lib.catalog import published

DATA = ROOT / "tests" / "data" / "nccl"


def test_every_stored_public_all_reduce_log_is_mapped_to_a_cluster():
    mapped = set(published.public_logs())
    stored = {p.name for p in DATA.glob("*all_reduce*.log")}
    assert stored == mapped, (stored ^ mapped)


def test_every_mapped_log_reads_and_passes_its_checks():
    for name in published.public_logs():
        log = nccl_log.read_path(DATA / name)
        assert log.checks_ok and log.collective == "all_reduce", name


def test_the_cluster_matches_the_log_it_describes():
    for name, entry in published.public_logs().items():
        log = nccl_log.read_path(DATA / name)
        c = entry["cluster"]
        assert log.n_ranks == c["nodes"] * c["gpus_per_node"], name
        assert log.nhosts in (None, c["nodes"]), name
        cluster = published.log_cluster(name)
        assert (cluster is None) == (entry["status"] == "not_modelled"), name


def test_every_source_is_in_the_bibliography():
    keys = bib.book_keys()
    assert {e["source"] for e in published.public_logs().values()} <= keys


def test_at_least_six_logs_from_three_kinds_are_counted():
    used = [e for e in published.public_logs().values() if e["status"] == "use"]
    assert len(used) >= 6 and len({e["kind"] for e in used}) >= 3


def test_a_forced_algorithm_is_one_the_model_knows():
    for name, entry in published.public_logs().items():
        if entry["nccl_algo"]:
            assert entry["nccl_algo"] in collectives.ALGORITHMS, name


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d["logs"]["nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-qoofyk.log"].pop("source"), "source"),
    (lambda d: d["logs"]["nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-qoofyk.log"]["cluster"].update(
        device="h999"), "unknown device"),
    (lambda d: d["logs"]["nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-qoofyk.log"]["cluster"].pop(
        "nics_per_node"), "nics_per_node"),
    (lambda d: d["logs"]["nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests290.log"].pop("why"), "why"),
    (lambda d: d["logs"]["nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-qoofyk.log"]["cluster"].update(
        nic_gbit_s=float("inf")), "not a finite number"),
])
def test_a_broken_mapping_is_refused_naming_the_entry(tmp_path, mutate, needle):
    raw = yaml.safe_load(published.PUBLIC_LOGS_PATH.read_text())
    mutate(raw)
    path = tmp_path / "public_logs.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(published.PublicLogsError, match=needle):
        published.public_logs(path)
