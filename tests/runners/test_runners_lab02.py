"""runners/lab02.py and x4lib.harness.layer_bench: bad dimensions exit 2 with one line, an out-of-memory op is a
row, the profiles' Llama 3 8B is the catalog's, the layer's GEMM shapes split as tensor parallelism splits them.
The whole quick run (bare pod, the 15 % check) is tests/test_bare_pod.py."""
import json

import pytest

from conftest import ROOT, run_cli
from runners import profiles
from x4lib.harness import layer_bench
from x4lib.serving import inference


@pytest.mark.parametrize("flags, message", [
    (["--hidden", "100", "--heads", "3"], "does not divide into 3 heads"),
    (["--tp", "3"], "tensor-parallel degree 3"),
    (["--hidden", "0"], "expected a whole number"),
    (["--model", "no-such-model"], "no-such-model"),
])
def test_bad_dimensions_exit_2_with_one_line(tmp_path, flags, message):
    r = run_cli("lab02", "--profile", "local-cpu", "--quick", "--measure-only", "--runs-dir", str(tmp_path), *flags,
                module="runners")
    assert r.returncode == 2 and "Traceback" not in r.stderr and message in r.stderr, r.stderr
    assert not (tmp_path / "lab02").exists() or not any((tmp_path / "lab02").iterdir())


def test_the_gpu_profile_refuses_a_cpu_before_measuring(tmp_path):
    r = run_cli("lab02", "--profile", "h100", "--quick", "--runs-dir", str(tmp_path), module="runners")
    assert r.returncode == 2 and "no CUDA GPU" in r.stderr and "Traceback" not in r.stderr


def test_an_out_of_memory_op_is_a_row_not_a_crash():
    import torch

    def build():
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
    row = layer_bench._guard({"op": "qkv", "kind": "matmul", "pass": "fwd", "count": 1}, build, torch, "cpu", 0, 1)
    assert row["status"] == "oom" and "out of memory" in row["error"] and "times_s" not in row


@pytest.mark.parametrize("name", ["local-cpu", "h100", "h200"])
def test_the_profiles_llama3_8b_is_the_catalogs(name):
    p = profiles.load(name)["labs"]["lab02"]
    cfg = inference.get(p["model"])
    assert (p["layers"], p["hidden"], p["heads"], p["kv_heads"], p["ffn"], p["vocab"]) == \
        (cfg.layers, cfg.hidden, cfg.heads, cfg.kv_heads, cfg.ffn, cfg.vocab)
    layer_bench.check_dims({**p, "tp": p["tp"]})


def test_tensor_parallelism_splits_the_gemms():
    cfg = {"hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "seq": 512, "micro_batch": 1}
    one, eight = layer_bench.gemm_shapes({**cfg, "tp": 1}), layer_bench.gemm_shapes({**cfg, "tp": 8})
    assert one["qkv"] == (512, (32 + 16) * 128, 4096) and eight["qkv"] == (512, (4 + 2) * 128, 4096)
    assert eight["down"] == (512, 4096, 14336 // 8) and eight["o"] == (512, 4096, 4 * 128)
    assert layer_bench.layer_params({**cfg, "tp": 1}) == 4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096


def test_a_tiny_layer_times_every_op_and_the_real_model_runs():
    import torch
    torch.set_num_threads(1)
    cfg = {"hidden": 32, "heads": 4, "kv_heads": 2, "ffn": 64, "seq": 8, "micro_batch": 2, "tp": 2, "layers": 1}
    rows = layer_bench.measure_layer(torch, cfg, "cpu", "fp32", 0, 2)
    assert {(r["op"], r["pass"]) for r in rows} >= {("qkv", "bwd_weight"), ("attention", "fwd+bwd"),
                                                   ("rmsnorm", "fwd"), ("swiglu", "fwd+bwd")}
    assert all(r["status"] == "ok" and len(r["times_s"]) == 2 and len(r["cpu_times_s"]) == 2 for r in rows)
    layer = layer_bench.make_layer_class(torch)({**cfg, "tp": 1})
    assert sum(p.numel() for p in layer.parameters()) == layer_bench.layer_params({**cfg, "tp": 1})
    assert layer(torch.randn(2, 8, 32)).shape == (2, 8, 32)


def test_the_whole_layer_is_timed_as_the_training_runs_it_and_leaves_no_gradient_behind():
    import torch
    torch.set_num_threads(1)
    cfg = {"hidden": 32, "heads": 4, "kv_heads": 2, "ffn": 64, "seq": 8, "micro_batch": 2, "tp": 1}
    rows = layer_bench.measure_layer_as_trained(torch, cfg, "cpu", None, 1, 2)
    assert [(r["op"], r["kind"], r["pass"], r["amp"]) for r in rows] == [("layer", "layer", "fwd", "none"),
                                                                         ("layer", "layer", "fwd+bwd", "none")]
    assert all(r["status"] == "ok" and len(r["times_s"]) == 2 for r in rows)
    amp = layer_bench.measure_layer_as_trained(torch, cfg, "cpu", "bf16", 0, 1)  # CPU autocast runs BF16 too
    assert all(r["status"] == "ok" and r["amp"] == "bf16" for r in amp)


def _committed():
    from x4lib.harness import runs
    return runs.committed_dirs("lab02")


def test_a_second_window_extends_each_matching_row_and_leaves_failures_alone():
    ok = {"op": "layer", "kind": "layer", "pass": "fwd", "count": 1, "status": "ok", "times_s": [3.0, 2.0],
          "cpu_times_s": [3.0, 2.0]}
    two = {**ok, "pass": "fwd+bwd", "concurrent": 2}
    one = {**ok, "pass": "fwd+bwd"}
    bad = {"op": "copy", "kind": "copy", "pass": "fwd", "count": 1, "status": "error", "error": "x"}
    later = [{**ok, "times_s": [1.0], "cpu_times_s": [1.5]}, {**two, "times_s": [9.0], "cpu_times_s": [9.0]},
             {**bad, "status": "ok", "times_s": [1.0]}, {**one, "status": "error"}]
    merged = layer_bench.merge_windows([ok, one, two, bad], later)
    assert merged[0]["times_s"] == [3.0, 2.0, 1.0] and merged[0]["cpu_times_s"] == [3.0, 2.0, 1.5]
    assert merged[0]["windows"] == 2
    assert merged[1] == one            # its second window failed: the first stands alone
    assert merged[2]["times_s"] == [3.0, 2.0, 9.0]  # matched by its process count, not the one-process row
    assert merged[3] == bad            # a failure stays a failure
    assert ok["times_s"] == [3.0, 2.0]  # the inputs are not changed


def test_two_trainings_join_step_by_step_per_rank():
    a = [{"rank": 0, "params": 5, "steps": [{"step_s": 1.0}]}, {"rank": 1, "params": 5, "steps": [{"step_s": 2.0}]}]
    b = [{"rank": 1, "params": 5, "steps": [{"step_s": 4.0}]}, {"rank": 0, "params": 5, "steps": [{"step_s": 3.0}]}]
    joined = layer_bench.join_steps(a, b)
    assert [[s["step_s"] for s in r["steps"]] for r in joined] == [[1.0, 3.0], [2.0, 4.0]]
    with pytest.raises(ValueError, match="different ranks"):
        layer_bench.join_steps(a, b[:1])


@pytest.mark.parametrize("run_dir", _committed(), ids=lambda p: p.name.split("-")[0])
def test_the_lab_notebook_renders_each_committed_run(run_dir, tmp_path):
    """A CPU run and a GPU run both render: each check section takes the run that has it."""
    from runners import core
    out = tmp_path / "out.ipynb"
    core.execute_notebook(ROOT / "notebooks" / "lab-02-calibrate.ipynb", out,
                          {"run_dir": str(run_dir), "measure_here": False})
    nb = json.loads(out.read_text())
    assert not nb["metadata"]["papermill"].get("exception")
    text = json.dumps(nb)
    assert "calibrated term" in text and "processes (DDP, gloo)" in text and "Traceback" not in text


def test_the_committed_cpu_checks_meet_their_target_on_the_median():
    """The CPU check over the committed CPU runs of the machine the page shows (DDP over gloo on 1 and 2 processes):
    the median error within 15 % on each (issue #32), and every run within the sanity factor. One run is not held to
    15 %: on the shared two-core machine that built the book, full runs minutes apart scattered by about a fifth
    either way around a median near zero (the slow and fast minutes of a shared machine, not the model: no term's
    miss kept one sign). The older CPU run of 2026-11-26 (the ops' sum, measured while the machine ran other work)
    stays committed and is left out, as the page leaves it out."""
    from x4lib.harness import runs
    from x4lib.pages import lab02 as page
    from x4lib.training import calibration
    loaded = [runs.load_run(d, "lab02") for d in _committed()]
    cpu = [r for r in loaded if (r.results.get("check") or {}).get("backend") == "gloo"]
    if not cpu:
        pytest.skip("no committed CPU run of Lab 02")
    newest = max(cpu, key=lambda r: r.results["started_utc"])
    same = page.same_machine_checks(loaded, newest)
    assert len(same) >= 3, "the median of fewer than three runs says little"
    summary = calibration.check_over_runs([r.path for r in same])
    assert [s["ranks"] for s in summary] == [1, 2]
    for s in summary:
        assert abs(s["median"]) <= calibration.CHECK_TARGET, s
        assert all(calibration.within_sanity(e) for e in s["errors"]), s


def test_the_committed_gpu_check_meets_its_target():
    """The single-GPU training check of every committed GPU run: the calibrated step within 10 % (issue #32)."""
    from x4lib.training import calibration
    gpu = [d for d in _committed() if json.loads((d / "results.json").read_text())["device"]["kind"] == "gpu"]
    if not gpu:
        pytest.skip("no committed GPU run of Lab 02")
    for d in gpu:
        rows = calibration.check_rows(d)
        assert len(rows) == 1 and rows[0]["ranks"] == 1
        assert abs(rows[0]["error"]) <= calibration.GPU_CHECK_TARGET, (d.name, rows[0])
