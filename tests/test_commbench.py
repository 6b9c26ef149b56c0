"""Lab 01: the collective benchmark (gloo, 2 ranks, tiny sizes), its nccl-tests table and the round trip
through x4lib.nccl_log, the α–β fit, and the lab01 runner (quick local run, cluster refusal, log import,
failed runs)."""
import json
import os
import subprocess
import sys

import jsonschema
import pytest
import torch

from conftest import ROOT, run_cli
from runners import lab01 as lab01_runner
from x4lib import collectives, commbench

SCHEMA = json.loads((ROOT / "x4lib" / "schemas" / "lab01_results.schema.json").read_text())
H100_LOG = ROOT / "tests" / "data" / "nccl" / "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log"
A100_X8_LOG = ROOT / "tests" / "data" / "nccl" / "nccl-tests-old_a100-sxm4-40gb-x8_all_gather_superbench.log"
SIZES = [1024, 65536]
ITERS = 2


@pytest.fixture(scope="module")
def gloo2():
    """One gloo run with 2 spawned ranks: all six collectives at 1 KiB and 64 KiB."""
    cfg = {"collectives": list(commbench.SUPPORTED), "sizes": SIZES, "warmup": 1, "iters": ITERS}
    return commbench.run_spawned(2, cfg, timeout_s=60)


def test_gloo_runs_every_collective_or_says_it_is_not_supported(gloo2):
    assert gloo2["backend"] == "gloo" and gloo2["nranks"] == 2 and gloo2["nhosts"] == 1
    by = {c["collective"]: c for c in gloo2["collectives"]}
    assert set(by) == set(commbench.SUPPORTED)
    for name in ("all_reduce", "all_gather", "broadcast", "reduce"):  # gloo has always had these
        assert by[name]["supported"], by[name]["note"]
    for c in by.values():
        if not c["supported"]:
            assert c["note"].startswith("not supported by gloo") and c["rows"] == []
    if tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13):  # checked on torch 2.13 CPU: gloo runs reduce_scatter and all_to_all too
        assert by["reduce_scatter"]["supported"] and by["all_to_all"]["supported"]


def test_results_are_correct_and_busbw_is_algbw_times_the_factor(gloo2):
    for c in gloo2["collectives"]:
        if not c["supported"]:
            continue
        assert [r["size_bytes"] for r in c["rows"]] == [commbench.layout(c["collective"], s, 2)["size_B"] for s in SIZES]
        f = collectives.busbw_factor(c["collective"], 2)
        for r in c["rows"]:
            assert r["count"] == commbench.layout(c["collective"], r["size_bytes"], 2)["count"]
            for v in (r, r["in_place"]):
                assert len(v["times_us"]) == ITERS and v["time_us"] == pytest.approx(sum(v["times_us"]) / ITERS)
                assert v["algbw_gb_s"] == pytest.approx(r["size_bytes"] / (v["time_us"] * 1e-6) / 1e9)
                assert v["busbw_gb_s"] == pytest.approx(v["algbw_gb_s"] * f)
            assert r["wrong"] == 0
            # nccl-tests does not check in-place AllToAll (#wrong N/A); everything else must be exact
            assert r["in_place"]["wrong"] == (None if c["collective"] == "all_to_all" else 0)


def test_the_table_has_nccl_tests_columns_and_footer(gloo2):
    text = commbench.format_table(gloo2, gloo2["collectives"][0])
    lines = text.splitlines()
    cols = next(ln for ln in lines if "size" in ln and "count" in ln).lstrip("#").split()
    assert cols == ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                    "time", "algbw", "busbw", "#wrong"]
    units = next(ln for ln in lines if "(B)" in ln).lstrip("#").split()
    assert units == ["(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(GB/s)"]
    assert any(ln.startswith("# Avg bus bandwidth") for ln in lines)
    assert "# Out of bounds values : 0 OK" in text
    data = [ln for ln in lines if ln and not ln.startswith("#")]
    assert len(data) == len(SIZES) and data[0].split()[:5] == ["1024", "256", "float", "sum", "-1"]
    back = commbench.read_table(text)
    assert [r["size_bytes"] for r in back] == SIZES and all(r["wrong"] == 0 for r in back)


def test_the_printed_tables_read_back_with_nccl_log(gloo2):
    nccl_log = pytest.importorskip("x4lib.nccl_log")
    for c in gloo2["collectives"]:
        if not c["supported"]:
            continue
        parsed = nccl_log.read_log(commbench.format_table(gloo2, c), f"<{c['collective']}>")
        assert parsed.checks_ok, parsed.warnings
        assert parsed.collective == c["collective"] and parsed.nranks == 2 and parsed.nhosts == 1
        assert [r.size_bytes for r in parsed.rows] == [r["size_bytes"] for r in c["rows"]]
        assert [r.count for r in parsed.rows] == [r["count"] for r in c["rows"]]
        for mine, theirs in zip(c["rows"], parsed.rows):
            assert theirs.out_of_place.busbw_gb_s == pytest.approx(mine["busbw_gb_s"], abs=0.006)
            assert theirs.in_place.time_us == pytest.approx(mine["in_place"]["time_us"], rel=0.01, abs=0.006)


class _NoAllToAll:
    """torch.distributed with all_to_all_single missing, as a backend without it behaves."""

    def __getattr__(self, name):
        return getattr(torch.distributed, name)

    @staticmethod
    def all_to_all_single(*a, **k):
        raise RuntimeError("ProcessGroupGloo does not support alltoall")


def test_an_unsupported_collective_is_reported_not_a_crash():
    import torch.distributed as dist
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        res = commbench.bench_rank(torch, _NoAllToAll(), {"collectives": ["all_to_all", "broadcast"],
                                                          "sizes": [1024], "warmup": 0, "iters": 1},
                                   torch.device("cpu"))
    finally:
        dist.destroy_process_group()
    a2a, bc = res["collectives"]
    assert not a2a["supported"] and a2a["rows"] == [] and "not supported by gloo" in a2a["note"]
    assert "does not support alltoall" in a2a["note"] and any("all_to_all" in w for w in res["warnings"])
    assert bc["supported"] and bc["rows"][0]["wrong"] == 0
    assert "not supported by gloo" in commbench.format_table(res, a2a)


@pytest.mark.parametrize("relative", [False, True])
def test_the_alpha_beta_fit_recovers_the_formula(relative):
    alpha, beta = 25e-6, 1 / 40e9  # 25 µs, 40 GB/s
    sizes = [2**k for k in range(10, 31, 4)]
    f = commbench.fit_alpha_beta(sizes, [alpha + beta * s for s in sizes], relative=relative)
    assert f.alpha_s == pytest.approx(alpha, rel=1e-9) and f.beta_s_per_B == pytest.approx(beta, rel=1e-12)
    assert f.inv_beta_gb_s == pytest.approx(40.0) and f.n_points == len(sizes)
    assert f.residual_rms_s < 1e-15 and f.residual_rel_rms < 1e-9
    with pytest.raises(dataclasses_frozen_error()):
        f.alpha_s = 0
    with pytest.raises(ValueError):
        commbench.fit_alpha_beta([1024, 1024], [1e-3, 2e-3])


def dataclasses_frozen_error():
    import dataclasses
    return dataclasses.FrozenInstanceError


def test_fit_rows_reads_a_table():
    rows = [{"size_bytes": s, "in_place": {"time_us": 10 + s / 1e4}, "time_us": 1.0} for s in (1e3, 1e5, 1e7)]
    f = commbench.fit_rows(rows, "in_place")
    assert f.alpha_s == pytest.approx(10e-6) and f.inv_beta_gb_s == pytest.approx(10.0)


def test_sizes_follow_nccl_tests():
    assert commbench.to_bytes(1048576) == 2**20
    if hasattr(collectives, "parse_size"):
        assert [commbench.to_bytes(s) for s in ("1M", "100M", "1G")] == [2**20, 100 * 2**20, 2**30]
    # the published old A100 logs: AllGather/AllToAll at 1 MiB on 8 ranks print count 32768
    assert commbench.layout("all_gather", 1048576, 8) == {"send": 32768, "recv": 262144, "count": 32768,
                                                          "size_B": 1048576}
    assert commbench.layout("all_to_all", 1048576, 8)["count"] == 32768


def test_the_quick_local_run_writes_a_valid_results_file(tmp_path):
    r = run_cli("lab01", "--profile", "local-cpu", "--quick", "--measure-only", "--runs-dir", str(tmp_path),
                module="runners")
    assert r.returncode == 0, r.stderr
    runs = list((tmp_path / "lab01").iterdir())
    assert len(runs) == 1 and runs[0].name.startswith("local-cpu-") and str(runs[0]) == r.stdout.strip()
    doc = json.loads((runs[0] / "results.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["source"] == "measured" and doc["backend"] == "gloo" and doc["nranks"] == 2
    assert doc["fit"]["collective"] == "all_reduce" and doc["fit"]["n_points"] == 2
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


def test_a_failed_run_leaves_no_results_json(tmp_path, monkeypatch):
    def boom(run_dir):
        raise RuntimeError("the notebook failed")
    monkeypatch.setattr(lab01_runner, "notebook_stack_available", lambda: True)
    monkeypatch.setattr(lab01_runner, "render", boom)
    final = tmp_path / "runs" / "lab01" / "x"
    with pytest.raises(RuntimeError):
        lab01_runner._store({"lab": "lab01"}, final, tmp_path / "failed", False, {"results-table.txt": "#\n"})
    assert not final.exists() and not list(final.parent.glob("*/results.json"))
    assert (tmp_path / "failed" / "x" / "results.incomplete.json").exists()


@pytest.mark.skipif(not H100_LOG.exists(), reason="stored nccl-tests log not here")
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
    assert doc["fit"]["inv_beta_gb_s"] > 0


@pytest.mark.skipif(not A100_X8_LOG.exists(), reason="stored nccl-tests log not here")
def test_a_log_of_another_cluster_shape_is_refused(tmp_path):
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", str(A100_X8_LOG), "--runs-dir", str(tmp_path),
                module="runners")
    assert r.returncode == 2 and "8 ranks on 1 host" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.skipif(not H100_LOG.exists(), reason="stored nccl-tests log not here")
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


@pytest.mark.skipif(not H100_LOG.exists(), reason="stored nccl-tests log not here")
def test_the_lab_notebook_renders_an_imported_cluster_run(tmp_path):
    """An imported 2 × 8 log renders too: the page must not assume a CPU run."""
    import papermill as pm
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", str(H100_LOG), "--runs-dir", str(tmp_path),
                module="runners")
    assert r.returncode == 0, r.stderr
    run = next((tmp_path / "lab01").iterdir())
    pm.execute_notebook(str(ROOT / "notebooks" / "lab-01-collectives.ipynb"), str(tmp_path / "out.ipynb"),
                        parameters={"run_dir": str(run), "measure_here": False, "runs_root": str(tmp_path)},
                        cwd=str(ROOT / "book"), progress_bar=False, kernel_name="python3")
    nb = json.loads((tmp_path / "out.ipynb").read_text())
    outputs = json.dumps([c.get("outputs", []) for c in nb["cells"] if c["cell_type"] == "code"])
    assert "no committed 2 × 8 run yet" not in outputs and "us: NVIDIA H100 80GB HBM3" in outputs
