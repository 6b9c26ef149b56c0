"""runners/lab00.py, the Lab 00 plug-in: one quick local-cpu run through the real entry point (measure, then
render with papermill), and the lab notebook executed with zero, one and several committed runs."""
import json
import shutil
import subprocess
import sys

import jsonschema
import pytest

from conftest import ROOT
from runners import core
from x4lib.harness import runs

SCHEMA = json.loads((ROOT / "x4lib" / "schemas" / "lab00_results.schema.json").read_text())


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    r = subprocess.run([sys.executable, "-m", "runners", "lab00", "--profile", "local-cpu", "--quick",
                        "--runs-dir", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = (out / "lab00").iterdir()
    return run_dir


def test_the_quick_run_writes_raw_times_and_the_executed_notebook(quick_run):
    data = json.loads((quick_run / "results.json").read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["schema_version"] == 3 and data["method_version"] == 4 and data["device"]["detected_name"]
    assert quick_run.name.startswith("local-cpu-")
    assert "peak_tflops" not in data and all("tflops_best" not in r for r in data["matmul"])
    assert data["independent_check"]["n"] == max(r["m"] for r in data["matmul"] if r["m"] == r["n"] == r["k"])
    nb = json.loads((quick_run / "lab-00-roofline.ipynb").read_text())
    assert not nb["metadata"]["papermill"].get("exception")


@pytest.mark.parametrize("n_runs", [0, 1, 3])
def test_the_lab_page_executes_with_zero_one_and_several_committed_runs(quick_run, tmp_path, n_runs):
    root = tmp_path / "runs"
    (root / "lab00").mkdir(parents=True)
    for i in range(n_runs):
        shutil.copytree(quick_run, root / "lab00" / f"{quick_run.name}-{i}")
    assert len(runs.load_runs("lab00", root)) == n_runs
    core.execute_notebook(ROOT / "notebooks" / "lab-00-roofline.ipynb", tmp_path / "out.ipynb",
                        {"run_dir": str(quick_run), "measure_here": False, "runs_root": str(root)}, cell_timeout_s=300)


def test_the_lab_page_renders_a_version_1_run(tmp_path):
    core.execute_notebook(ROOT / "notebooks" / "lab-00-roofline.ipynb", tmp_path / "out.ipynb",
                        {"run_dir": str(ROOT / "tests" / "data" / "runs" / "lab00-v1"),
                                    "measure_here": False, "runs_root": str(tmp_path)}, cell_timeout_s=300)


def test_render_puts_the_notebook_into_an_existing_run(quick_run, tmp_path):
    again = tmp_path / quick_run.name
    shutil.copytree(quick_run, again)
    (again / "lab-00-roofline.ipynb").unlink()
    r = subprocess.run([sys.executable, "-m", "runners", "lab00", "--render", str(again)], capture_output=True,
                       text=True, cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (again / "lab-00-roofline.ipynb").exists() and sorted(p.name for p in again.iterdir()) == \
        ["lab-00-roofline.ipynb", "results.json"]
