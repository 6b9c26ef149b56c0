"""x4lib.harness.runs: runs are data. One page-facing call returns the run shown and every committed run; every run is
validated against its lab's schema (strict JSON), of every schema version the lab has had."""
import json
import shutil

import pytest

from conftest import ROOT
from x4lib.harness import runs

V1_LAB00 = ROOT / "tests" / "data" / "runs" / "lab00-v1"
V1_LAB01 = ROOT / "tests" / "data" / "runs" / "lab01-v1"


def write(tmp_path, lab, name, doc) -> object:
    d = tmp_path / lab / name
    d.mkdir(parents=True)
    (d / "results.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return d


def test_runs_of_schema_version_1_still_load():
    a = runs.load_run(V1_LAB00, "lab00")
    b = runs.load_run(V1_LAB01, "lab01")
    assert a.results["schema_version"] == 1 and b.results["schema_version"] == 1
    assert a.device_label.startswith("Intel(R) Xeon(R)") and b.results["fit"]["collective"] == "all_reduce"


@pytest.mark.parametrize("doc,needle", [
    ("{", "not JSON"),
    ('{"time": NaN}', "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ({"lab": "lab00"}, "(top level)"),
])
def test_a_broken_results_file_is_named(tmp_path, doc, needle):
    d = write(tmp_path, "lab00", "bad", doc)
    with pytest.raises(runs.RunError, match="bad/results.json") as e:
        runs.load_run(d, "lab00")
    assert needle in str(e.value)


def test_a_run_of_another_lab_is_refused(tmp_path):
    d = tmp_path / "x"
    shutil.copytree(V1_LAB00, d)
    with pytest.raises(runs.RunError, match="x/results.json"):
        runs.load_run(d, "lab01")


def test_a_missing_results_file_is_named(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(runs.RunError, match="no such file"):
        runs.load_run(tmp_path / "empty", "lab00")


def test_committed_runs_are_sorted_and_hidden_folders_skipped(tmp_path):
    for i, started in enumerate(("2026-02-01T00:00:00Z", "2026-01-01T00:00:00Z")):
        doc = json.loads((V1_LAB00 / "results.json").read_text())
        doc["started_utc"] = started
        write(tmp_path, "lab00", f"run{i}", doc)
    write(tmp_path, "lab00", ".interrupted.partial", {"lab": "lab00"})  # would fail validation if read
    found = runs.load_runs("lab00", tmp_path)
    assert [r.run_id for r in found] == ["run1", "run0"] and all(r.committed for r in found)


def test_page_runs_returns_the_run_shown_and_the_committed_ones(tmp_path):
    shutil.copytree(V1_LAB00, tmp_path / "lab00" / "committed")
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(V1_LAB00, elsewhere)
    shown = runs.page_runs("lab00", run_dir=elsewhere, runs_root=tmp_path)
    assert shown.this.path == elsewhere and not shown.this.committed
    assert len(shown.runs) == 2 and [r.run_id for r in shown.committed] == ["committed"]
    again = runs.page_runs("lab00", run_dir=tmp_path / "lab00" / "committed", runs_root=tmp_path)
    assert again.this.committed and len(again.runs) == 1
    none = runs.page_runs("lab00", runs_root=tmp_path)
    assert none.this is None and len(none.runs) == 1


def test_the_runs_table_labels_each_run_with_the_device_it_detected(tmp_path):
    shutil.copytree(V1_LAB00, tmp_path / "lab00" / "r")
    (row,) = runs.runs_rows(runs.load_runs("lab00", tmp_path))
    assert row["device (as detected)"].startswith("Intel(R) Xeon(R)") and row["committed"] == "yes"
