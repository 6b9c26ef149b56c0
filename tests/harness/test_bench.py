"""x4lib.harness.bench: the timing harness on CPU with tiny shapes (rows keep shapes and raw times only)."""
import pytest
import torch

from x4lib.harness import bench


def test_matmul_row_keeps_the_shape_and_every_repeat():
    row = bench.matmul_row(torch, "fp32", 8, 16, 32, "cpu", warmup=1, repeats=4)
    assert row["status"] == "ok" and (row["m"], row["n"], row["k"]) == (8, 16, 32)
    assert len(row["times_s"]) == 4 and row["best_s"] == min(row["times_s"])
    t = sorted(row["times_s"])
    assert row["median_s"] == pytest.approx((t[1] + t[2]) / 2)
    assert "tflops_best" not in row and "flop" not in row  # rates are derived when drawn, never stored


def test_memory_row_keeps_the_element_count_and_every_repeat():
    row = bench.memory_row(torch, "triad", 1000, "cpu", warmup=1, repeats=3)
    assert (row["elements"], row["element_bytes"], len(row["times_s"])) == (1000, 4, 3)
    with pytest.raises(ValueError, match="unknown kernel"):
        bench.memory_row(torch, "stencil", 10, "cpu", 0, 1)


def test_out_of_memory_becomes_a_row_and_the_sweep_goes_on(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("CUDA out of memory. Tried to allocate 4.00 GiB")
    monkeypatch.setattr(bench, "_matmul_fn", boom)
    row = bench.matmul_row(torch, "bf16", 64, 64, 64, "cpu", 1, 2)
    assert row["status"] == "oom" and "out of memory" in row["error"]


def test_timing_rejects_nonsense():
    with pytest.raises(ValueError):
        bench.time_calls(lambda: None, torch, "cpu", warmup=0, repeats=0)


def test_the_independent_check_is_raw_timing():
    chk = bench.independent_check(torch, 32, "fp32", calls=2)
    assert chk["n"] == 32 and chk["calls"] == 2 and chk["elapsed_s"] > 0


def test_the_environment_names_versions_and_threads():
    env = bench.environment(torch)
    assert env["torch"] == torch.__version__ and env["harness_version"] == bench.HARNESS_VERSION


def test_the_hierarchy_sweep_keeps_sizes_passes_and_raw_times_and_restores_threads():
    before = torch.get_num_threads()
    sizes = bench.working_set_sizes(4096, 64 * 1024, per_octave=1)
    assert sizes == [4096, 8192, 16384, 32768, 65536]
    rows = bench.cache_sweep(torch, sizes[:3], threads=1, bytes_per_call=2**20, warmup=1, repeats=2)
    assert [r["working_set_B"] for r in rows] == sizes[:3] and all(r["status"] == "ok" for r in rows)
    assert [r["passes"] for r in rows] == [256, 128, 64] and all(len(r["times_s"]) == 2 for r in rows)
    assert "gb_s" not in rows[0]                        # rates are derived when drawn
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError):
        bench.cache_sweep(torch, [4096], threads=10**6)
    with pytest.raises(ValueError):
        bench.working_set_sizes(0, 10)
