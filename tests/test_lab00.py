"""Lab 00: the harness on CPU with tiny shapes, device detection, profile refusal, atomic run directories,
and the lab notebook executed by papermill with zero, one and several runs."""
import json
import shutil
import subprocess
import sys

import jsonschema
import pytest
import torch

from conftest import ROOT, run_cli
from runners import lab00 as lab00_runner
from runners import profiles, rundir
from x4lib import bench, device, runs

SCHEMA = json.loads((ROOT / "x4lib" / "schemas" / "lab00_results.schema.json").read_text())


def test_matmul_row_counts_flop_and_keeps_every_repeat():
    row = bench.matmul_row(torch, "fp32", 8, 16, 32, "cpu", warmup=1, repeats=4)
    assert row["status"] == "ok" and row["flop"] == 2 * 8 * 16 * 32
    assert len(row["times_s"]) == 4 and row["best_s"] == min(row["times_s"])
    t = sorted(row["times_s"])
    assert row["median_s"] == pytest.approx((t[1] + t[2]) / 2)
    assert row["tflops_best"] == pytest.approx(row["flop"] / row["best_s"] / 1e12)


def test_memory_row_counts_bytes():
    row = bench.memory_row(torch, "triad", 1000, "cpu", warmup=1, repeats=3)
    assert row["bytes"] == 3 * 1000 * 4
    assert row["gb_s_best"] == pytest.approx(row["bytes"] / row["best_s"] / 1e9)


def test_out_of_memory_becomes_a_row_and_the_sweep_goes_on(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("CUDA out of memory. Tried to allocate 4.00 GiB")
    monkeypatch.setattr(bench, "_matmul_fn", boom)
    row = bench.matmul_row(torch, "bf16", 64, 64, 64, "cpu", 1, 2)
    assert row["status"] == "oom" and "out of memory" in row["error"]


def test_timing_rejects_nonsense():
    with pytest.raises(ValueError):
        bench.time_calls(lambda: None, torch, "cpu", warmup=0, repeats=0)


@pytest.mark.parametrize("name,mem_gib,power,expected", [
    ("NVIDIA H100 80GB HBM3", 79.1, 700, "h100-sxm"),
    ("NVIDIA H100 PCIe", 79.6, 350, "h100-pcie"),
    ("NVIDIA H100 NVL", 93.1, 400, "h100-nvl"),
    ("NVIDIA H200", 139.8, 700, "h200-sxm"),
    ("NVIDIA A100-SXM4-80GB", 79.2, 400, "a100-sxm-80gb"),
    ("NVIDIA A100-SXM4-40GB", 39.4, 400, "a100-sxm-40gb"),
    ("NVIDIA A100 80GB PCIe", 79.2, 300, "a100-pcie-80gb"),
    ("NVIDIA A100-PCIE-40GB", 39.4, 250, None),      # not in the catalog: runs unlabelled by catalog
    ("NVIDIA GeForce RTX 4090", 23.6, 450, None),
    ("NVIDIA H100 80GB HBM3", 79.1, 350, None),      # an SXM name with a PCIe power limit: refuse to guess
])
def test_gpu_detection_maps_recorded_names(name, mem_gib, power, expected):
    assert device.match_gpu(name, mem_gib * 2**30, power) == expected


CPUINFO_I5 = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 142
model name\t: Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz
physical id\t: 0
core id\t\t: 0
cpu MHz\t\t: 1800.000
flags\t\t: fpu avx2 fma

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 142
model name\t: Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz
physical id\t: 0
core id\t\t: 0
"""


def test_cpu_detection_counts_physical_cores_and_finds_the_microarchitecture():
    info = device.cpu_info(CPUINFO_I5)
    assert info["logical_cpus"] == 2 and info["physical_cores"] == 1
    arch = device.match_cpu_uarch(info)
    assert arch is not None and arch["flop_per_cycle_per_core"]["fp32"] == 32


def test_arm_cpus_match_by_implementer_and_part():
    info = device.cpu_info("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n")
    arch = device.match_cpu_uarch(info)
    assert arch is not None and arch["id"] == "neoverse-v2"


def test_every_microarchitecture_cites_the_bibliography():
    from x4lib import specs
    keys = specs.bib_keys()
    for arch in json.loads((ROOT / "x4lib" / "data" / "cpu_uarch.json").read_text())["microarchitectures"]:
        assert arch["source"] in keys, arch["id"]
        assert arch["flop_per_cycle_per_core"]["fp32"] == 2 * arch["flop_per_cycle_per_core"]["fp64"], arch["id"]


def fake_dev(kind, name, catalog_id=None, count=1):
    return {"kind": kind, "detected_name": name, "catalog_id": catalog_id, "count": count,
            "cpu": {"model_name": "AMD EPYC"}}


@pytest.mark.parametrize("profile,dev", [
    ("h100", fake_dev("cpu", "AMD EPYC")),
    ("h100", fake_dev("gpu", "NVIDIA A100-SXM4-80GB", "a100-sxm-80gb")),
    ("a100", fake_dev("gpu", "NVIDIA H100 80GB HBM3", "h100-sxm")),
    ("i5-8250u", fake_dev("cpu", "AMD EPYC")),
])
def test_a_profile_refuses_the_wrong_device(profile, dev):
    with pytest.raises(lab00_runner.WrongDevice, match="expects"):
        lab00_runner.check_device(profiles.load(profile), dev)


def test_a_profile_accepts_a_variant_by_name():
    lab00_runner.check_device(profiles.load("a100"), fake_dev("gpu", "NVIDIA A100-PCIE-40GB", None))
    lab00_runner.check_device(profiles.load("local-cpu"), fake_dev("cpu", "AMD EPYC"))


def test_wrong_profile_on_the_command_line_exits_2_without_traceback():
    r = run_cli("lab00", "--profile", "h100", "--quick", "--measure-only", "--runs-dir", "/tmp/x4-never",
                module="runners")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "expects" in r.stderr.splitlines()[-1]
    r = run_cli("lab00", "--profile", "tpu-pod", module="runners")
    assert r.returncode == 2 and "unknown profile" in r.stderr


def test_a_failed_run_leaves_no_complete_looking_results(tmp_path):
    final = tmp_path / "runs" / "lab00" / "x"
    with pytest.raises(RuntimeError):
        with rundir.RunDir(final, tmp_path / "failed") as tmp:
            rundir.write_json_atomic(tmp / "results.json", {"lab": "lab00"})
            raise RuntimeError("the notebook failed")
    assert not final.exists() and not list((tmp_path / "runs" / "lab00").glob("*"))
    assert (tmp_path / "failed" / "x" / "results.incomplete.json").exists()
    assert not (tmp_path / "failed" / "x" / "results.json").exists()


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One quick local-cpu run through the real entry point: measure, then render with papermill."""
    out = tmp_path_factory.mktemp("runs")
    r = subprocess.run([sys.executable, "-m", "runners", "lab00", "--profile", "local-cpu", "--quick",
                        "--runs-dir", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = (out / "lab00").iterdir()
    return run_dir


def test_the_quick_run_writes_a_valid_results_file_and_the_executed_notebook(quick_run):
    data = json.loads((quick_run / "results.json").read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["device"]["detected_name"] and quick_run.name.startswith("local-cpu-")
    assert (quick_run / "lab-00-roofline.ipynb").exists()
    nb = json.loads((quick_run / "lab-00-roofline.ipynb").read_text())
    assert not nb["metadata"]["papermill"].get("exception")


@pytest.mark.parametrize("n_runs", [0, 1, 3])
def test_the_lab_page_executes_with_zero_one_and_several_committed_runs(quick_run, tmp_path, n_runs):
    import papermill as pm
    root = tmp_path / "runs"
    (root / "lab00").mkdir(parents=True)
    for i in range(n_runs):
        shutil.copytree(quick_run, root / "lab00" / f"{quick_run.name}-{i}")
    assert len(runs.load_runs("lab00", root)) == n_runs
    pm.execute_notebook(str(ROOT / "notebooks" / "lab-00-roofline.ipynb"), str(tmp_path / "out.ipynb"),
                        parameters={"run_dir": str(quick_run), "measure_here": False, "runs_root": str(root)},
                        cwd=str(ROOT / "book"), progress_bar=False, kernel_name="python3")


def test_a_broken_results_file_is_named(tmp_path):
    d = tmp_path / "lab00" / "bad"
    d.mkdir(parents=True)
    (d / "results.json").write_text(json.dumps({"lab": "lab00"}))
    with pytest.raises(runs.RunError, match="bad/results.json"):
        runs.load_runs("lab00", tmp_path)
