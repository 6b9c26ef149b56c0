"""x4lib.network.commbench: the collective benchmark (gloo, 2 ranks, tiny sizes), its nccl-tests table and the round trip
through x4lib.network.nccl_log, the one reader of such tables."""
import pytest
import torch

from x4lib.network import commbench, nccl_log, nccl_tests
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
        f = nccl_tests.busbw_factor(c["collective"], 2)
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


def test_the_printed_tables_read_back_with_nccl_log(gloo2):
    for c in gloo2["collectives"]:
        if not c["supported"]:
            continue
        parsed = nccl_log.read_log(commbench.format_table(gloo2, c), f"<{c['collective']}>")
        assert parsed.checks_ok, parsed.warnings
        assert parsed.collective == c["collective"] and parsed.n_ranks == 2 and parsed.nhosts == 1
        assert [r.size_B for r in parsed.rows] == [r["size_bytes"] for r in c["rows"]]
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


def test_sizes_follow_nccl_tests():
    # the published old A100 logs: AllGather/AllToAll at 1 MiB on 8 ranks print count 32768
    assert commbench.layout("all_gather", 1048576, 8) == {"send": 32768, "recv": 262144, "count": 32768,
                                                          "size_B": 1048576}
    assert commbench.layout("all_to_all", 1048576, 8)["count"] == 32768


