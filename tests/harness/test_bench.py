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


def test_short_calls_are_timed_back_to_back_with_the_raw_pair_times_kept():
    calls = []
    t = bench.time_calls(lambda: calls.append(1), torch, "cpu", warmup=2, repeats=3, min_region_s=1e-3,
                         max_calls=50)
    assert t.calls == 50  # a no-op is far shorter than 1 ms: the cap decides
    assert len(t.pair_times_s) == 3 and t.times_s == tuple(p / 50 for p in t.pair_times_s)
    assert len(calls) >= 2 + 3 * 50


def test_one_call_per_pair_when_asked_or_when_a_call_is_long_enough():
    t = bench.time_calls(lambda: None, torch, "cpu", warmup=1, repeats=2, min_region_s=0)
    assert t.calls == 1 and t.times_s == t.pair_times_s
    assert bench.calls_per_timing(2e-3) == 1 and bench.calls_per_timing(1e-5) == 100
    assert bench.calls_per_timing(1e-9, max_calls=7) == 7 and bench.calls_per_timing(0.0) == bench.MAX_CALLS_PER_TIMING


def test_a_row_says_how_many_calls_each_timing_holds():
    row = bench.matmul_row(torch, "fp32", 8, 8, 8, "cpu", warmup=1, repeats=2)
    assert row["calls_per_timing"] >= 1 and len(row["pair_times_s"]) == 2
    assert row["times_s"] == pytest.approx([p / row["calls_per_timing"] for p in row["pair_times_s"]])
    assert bench.HARNESS_VERSION == 4


class _FakeCuda:
    """Just enough of torch.cuda for the harness's graph path on a machine without a GPU: events read a fake clock
    that each captured or eager call advances by ``call_s`` and each replay by ``call_s`` per captured call (no
    launch cost): the graph figure must come out as the call's own time."""

    def __init__(self, call_s):
        self.call_s, self.now, self.capturing, self.captured = call_s, 0.0, None, 0
        cuda = self

        class Event:
            def __init__(self, enable_timing=True):
                self.t = None

            def record(self):
                self.t = cuda.now

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return (other.t - self.t) * 1e3

        class CUDAGraph:
            def __init__(self):
                self.calls = 0

            def replay(self):
                cuda.now += self.calls * cuda.call_s

        class _Ctx:
            def __init__(self, enter=None, exit_=None):
                self.enter, self.exit = enter, exit_

            def __enter__(self):
                if self.enter:
                    self.enter()

            def __exit__(self, *a):
                if self.exit:
                    self.exit()

        class Stream:
            def wait_stream(self, other):
                pass

        self.Event, self.CUDAGraph, self.Stream = Event, CUDAGraph, Stream
        self.current_stream = Stream
        self.stream = lambda s: _Ctx()
        self.graph = lambda g: _Ctx(lambda: setattr(cuda, "capturing", g),
                                    lambda: (setattr(g, "calls", cuda.captured), setattr(cuda, "capturing", None)))
        self.synchronize = self.empty_cache = lambda: None
        self.OutOfMemoryError = MemoryError

    def call(self):
        if self.capturing is not None:
            self.captured += 1
        else:
            self.now += self.call_s


def test_a_short_call_is_also_timed_as_a_cuda_graph_of_its_own_calls(monkeypatch):
    class FakeTorch:
        cuda = _FakeCuda(3e-6)
    fake = FakeTorch()
    t = bench.graph_timing(fake.cuda.call, fake, warmup=1, repeats=3, calls=bench.GRAPH_CALLS)
    assert fake.cuda.captured == bench.GRAPH_CALLS
    assert t.best_s == pytest.approx(3e-6) and len(t.times_s) == 3
    assert t.calls % bench.GRAPH_CALLS == 0 and t.pair_times_s[0] == pytest.approx(t.calls * 3e-6)


def test_a_graph_capture_that_fails_leaves_the_queued_figure(monkeypatch):
    class FakeTorch:
        cuda = _FakeCuda(3e-6)

    def refuse(*a, **k):
        raise RuntimeError("operation not permitted when stream is capturing")
    monkeypatch.setattr(bench, "graph_timing", refuse)
    out = bench.graph_row(FakeTorch(), lambda: None, warmup=1, repeats=2)
    assert list(out) == ["graph_error"] and "capturing" in out["graph_error"]


def test_a_short_cuda_row_carries_both_figures_and_a_long_one_only_the_queued(monkeypatch):
    import types

    def fake_torch(call_s):
        t = types.SimpleNamespace(cuda=_FakeCuda(call_s))
        t.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace()),
                                           cudnn=types.SimpleNamespace())
        t.Generator = lambda device: types.SimpleNamespace(manual_seed=lambda s: None)
        return t
    monkeypatch.setattr(bench, "_matmul_fn", lambda torch, *a: torch.cuda.call)
    short = fake_torch(5e-6)
    row = bench.matmul_row(short, "bf16", 256, 256, 256, "cuda", warmup=1, repeats=2)
    assert row["best_s"] == pytest.approx(5e-6) and row["graph_best_s"] == pytest.approx(5e-6)
    assert len(row["graph_pair_times_s"]) == 2 and row["graph_calls_per_timing"] % bench.GRAPH_CALLS == 0
    long = fake_torch(2 * bench.GRAPH_BELOW_S)
    row = bench.matmul_row(long, "bf16", 8192, 8192, 8192, "cuda", warmup=1, repeats=2)
    assert "graph_best_s" not in row and "graph_error" not in row
