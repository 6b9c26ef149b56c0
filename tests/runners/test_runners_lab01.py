"""runners/lab01.py, the Lab 01 plug-in: a quick gloo run through the real entry point, the cluster profile's
refusal, and real nccl-tests logs imported (labelled from their rank lines; inconsistent or hostile logs refused)."""
import json
import os
import subprocess
import sys

import jsonschema
import pytest

from conftest import ROOT, run_cli
from runners import core

SCHEMA = json.loads((ROOT / "x4lib" / "schemas" / "lab01_results.schema.json").read_text())
LOGS = ROOT / "tests" / "data" / "nccl"
H100_LOG = LOGS / "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log"
A100_X8_LOG = LOGS / "nccl-tests-old_a100-sxm4-40gb-x8_all_gather_superbench.log"


def test_the_quick_local_run_writes_a_valid_results_file(tmp_path):
    r = run_cli("lab01", "--profile", "local-cpu", "--quick", "--measure-only", "--runs-dir", str(tmp_path),
                module="runners")
    assert r.returncode == 0, r.stderr
    runs = list((tmp_path / "lab01").iterdir())
    assert len(runs) == 1 and runs[0].name.startswith("local-cpu-") and str(runs[0]) == r.stdout.strip()
    doc = json.loads((runs[0] / "results.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["source"] == "measured" and doc["backend"] == "gloo" and doc["nranks"] == 2
    assert doc["schema_version"] == 2 and "fit" not in doc  # fits are derived when the page is drawn
    row = doc["collectives"][0]["rows"][0]
    assert len(row["times_us"]) == 3 and "busbw_gb_s" not in row and "busbw_gb_s" not in row["in_place"]
    table = (runs[0] / "results-table.txt").read_text()
    assert table.count("# Avg bus bandwidth") == sum(c["supported"] for c in doc["collectives"])


def test_cluster_profile_refuses_here_with_exit_2(tmp_path):
    r = run_cli("lab01", "--profile", "cluster-2x8", "--quick", "--runs-dir", str(tmp_path), module="runners")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "2 nodes × 8 GPUs" in r.stderr and "torchrun" in r.stderr
    # a torchrun job of the wrong shape is refused too, before any process group starts
    env = {**os.environ, "RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
           "PYTHONWARNINGS": "ignore"}
    r = subprocess.run([sys.executable, "-m", "runners", "lab01", "--profile", "cluster-2x8", "--runs-dir",
                        str(tmp_path)], capture_output=True, text=True, cwd="/", env=env, timeout=120)
    assert r.returncode == 2 and "WORLD_SIZE=2" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "lab01").exists()


def test_a_real_log_imports_labelled_from_its_header(tmp_path):
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", str(H100_LOG), "--runs-dir", str(tmp_path),
                module="runners")
    assert r.returncode == 0, r.stderr
    run = next((tmp_path / "lab01").iterdir())
    assert run.name.startswith("cluster-2x8-nvidia-h100-80gb-hbm3-")
    doc = json.loads((run / "results.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["source"] == "imported nccl-tests log" and (run / H100_LOG.name).read_bytes() == H100_LOG.read_bytes()
    assert doc["device"]["detected_name"] == "NVIDIA H100 80GB HBM3" and doc["device"]["catalog_id"] == "h100-sxm"
    assert doc["nranks"] == 16 and doc["nhosts"] == 2 and doc["collectives"][0]["collective"] == "all_reduce"
    assert not list(run.glob("*.ipynb"))  # an import is never rendered


def test_a_log_of_another_cluster_shape_is_refused(tmp_path):
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", str(A100_X8_LOG), "--runs-dir", str(tmp_path),
                module="runners")
    assert r.returncode == 2 and "8 ranks on 1 host" in r.stderr and "Traceback" not in r.stderr


def test_an_inconsistent_log_exits_1_and_stores_nothing(tmp_path):
    text = H100_LOG.read_text().replace("  338.82      0", "  398.82      0")  # busbw ≠ algbw × 2(n−1)/n
    assert text != H100_LOG.read_text()
    bad = tmp_path / "all_reduce_perf.log"
    bad.write_text(text)
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", str(bad), "--runs-dir", str(tmp_path / "runs"),
                module="runners")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "runs" / "lab01").exists()


def test_the_lab_notebook_renders_a_quick_local_run(tmp_path):
    """python -m runners lab01 (no --measure-only) measures, then executes the lab notebook under papermill."""
    r = run_cli("lab01", "--profile", "local-cpu", "--quick", "--runs-dir", str(tmp_path), module="runners")
    assert r.returncode == 0, r.stderr[-3000:]
    (run,) = (tmp_path / "lab01").iterdir()
    nb = json.loads((run / "lab-01-collectives.ipynb").read_text())
    assert not nb["metadata"]["papermill"].get("exception")


def test_the_lab_notebook_renders_an_imported_cluster_run(tmp_path):
    """An imported 2 × 8 log renders too: the page must not assume a CPU run."""
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", str(H100_LOG), "--runs-dir", str(tmp_path),
                module="runners")
    assert r.returncode == 0, r.stderr
    run = next((tmp_path / "lab01").iterdir())
    core.execute_notebook(ROOT / "notebooks" / "lab-01-collectives.ipynb", tmp_path / "out.ipynb",
                        {"run_dir": str(run), "measure_here": False, "runs_root": str(tmp_path)}, cell_timeout_s=300)
    nb = json.loads((tmp_path / "out.ipynb").read_text())
    outputs = json.dumps([c.get("outputs", []) for c in nb["cells"] if c["cell_type"] == "code"])
    assert "no committed 2 × 8 run yet" not in outputs and "us: NVIDIA H100 80GB HBM3" in outputs


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t.replace("  338.82      0", "  -338.82      0", 1), "line"),                 # a negative value
    (lambda t: t.replace("  338.82      0", "     nan      0", 1), "line"),                 # NaN is not JSON
    (lambda t: t.replace("  338.82      0", "   1e999      0", 1), "line"),                 # overflows to inf
])
def test_a_hostile_log_exits_1_naming_the_line_and_stores_nothing(tmp_path, edit, needle):
    text = H100_LOG.read_text()
    bad_text = edit(text)
    assert bad_text != text
    bad = tmp_path / "all_reduce_perf.log"
    bad.write_text(bad_text)
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", str(bad), "--runs-dir", str(tmp_path / "runs"),
                module="runners")
    assert r.returncode == 1 and "Traceback" not in r.stderr and needle in r.stderr, r.stderr
    assert not (tmp_path / "runs" / "lab01").exists() or not list((tmp_path / "runs" / "lab01").iterdir())


def test_a_device_name_with_dollars_and_escapes_is_stored_and_drawn_safely(tmp_path):
    text = H100_LOG.read_text().replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3 $x^2$ \x1b[31m")
    log = tmp_path / "all_reduce_perf.log"
    log.write_text(text)
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", str(log), "--runs-dir", str(tmp_path),
                module="runners")
    assert r.returncode == 0 and "\x1b" not in r.stdout, r.stderr
    run = next((tmp_path / "lab01").iterdir())
    core.execute_notebook(ROOT / "notebooks" / "lab-01-collectives.ipynb", tmp_path / "out.ipynb",
                        {"run_dir": str(run), "measure_here": False, "runs_root": str(tmp_path)}, cell_timeout_s=300)


def test_two_imports_in_the_same_second_do_not_collide(tmp_path):
    cmd = [sys.executable, "-m", "runners", "lab01", "--profile", "cluster-2x8", "--import-log", str(H100_LOG),
           "--runs-dir", str(tmp_path)]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    assert len(list((tmp_path / "lab01").iterdir())) == 3
