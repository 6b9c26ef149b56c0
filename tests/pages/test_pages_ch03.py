"""x4lib.pages.ch03: the chapter's tables and series come from the models, carry units, and hold no Python repr."""
import pytest

from x4lib.network import links, topology
from x4lib.pages import ch03 as page


#: two of the layouts the page compares (book/03: overrides of the quiz layout)
LAYOUTS = {"TP 8 + ZeRO-1 over 128": dict(tp=8, pp=1, dp=128, zero=1), "quiz layout": {}}


def text(t):
    return t.to_text()


@pytest.mark.parametrize("make", [page.link_table, page.latency_table, page.topology_table,
                                  page.published_topology_table, page.check_table,
                                  lambda: page.compared_table(LAYOUTS),
                                  page.strategy_table, page.captures_table, page.layout_givens_table,
                                  lambda: page.algorithm_table(2**30), lambda: page.comm_table(page.estimate()),
                                  lambda: page.matrix_table("topo_hgx-h100-10nic_nvidia-nccl-1264.txt"),
                                  lambda: page.findings_table("topo_h800-8gpu-4nic_liguodongiot-llm-action.txt"),
                                  lambda: page.ib_table("ibstat_cx7-roce-200g_kvcache-ai-mooncake-1999.txt")])
def test_tables_have_no_python_repr(make):
    t = text(make())
    assert "{" not in t and "[" not in t and "None" not in t and "nan" not in t.lower().split()


def test_link_table_shows_both_directions_side_by_side():
    rows = {r["id"]: r for r in links.hierarchy_rows(page.HIERARCHY)}
    assert rows["nvlink4-h100"]["bidirectional_gb_s"] == 2 * rows["nvlink4-h100"]["per_direction_gb_s"]
    assert "per direction (GB/s)" in text(page.link_table()) and "both directions (GB/s)" in text(page.link_table())


def test_topology_series_cover_8_to_100000():
    series = page.topology_series("ratio")
    assert [s[0] for s in series] == list(topology.KINDS)
    assert all(s[1][0] == 8 and s[1][-1] == 100_000 for s in series)
    ft = dict(zip(series[0][1], series[0][2]))
    assert set(ft.values()) == {1.0}


def test_published_topology_rows_agree():
    for r in page.published_topology_rows()[:4]:
        assert r["computed"] == pytest.approx(r["published"]), r


def test_breakdown_adds_up_to_the_step():
    est = page.estimate()
    assert sum(page.breakdown(est).values()) == pytest.approx(est.step_s)
    rows = page.breakdown_rows(LAYOUTS)
    assert "compute" in page.used_parts(rows) and [r[0] for r in rows] == list(LAYOUTS)


def test_check_series_are_model_and_theirs():
    kinds = [s[0] for s in page.check_series()]
    assert kinds == ["prediction", "theirs"]


def test_explorer_builds():
    pytest.importorskip("ipywidgets")
    w = page.comm_explorer()
    assert len(w.children) >= 7


def test_check_summary_covers_every_row_from_4_gib():
    """The sentence about the 1,024-GPU check is computed from every row it names, not the last one (issue 27)."""
    s = page.check_summary()
    rows = [r for r in page.check_rows() if float(r["size"].split()[0]) >= 4]
    assert s["ratio_lo"] == min(r["ratio"] for r in rows) and s["ratio_hi"] == max(r["ratio"] for r in rows)
    assert s["ratio_hi"] > 1.3 and s["ratio_lo"] > 1.0          # pessimistic on all three rows, by up to a third
    assert 0 < s["short_lo_pct"] < s["short_hi_pct"]
    assert s["small"] == "1 GiB" and s["small_ratio"] > 1.5       # optimistic at the smallest size


def test_ring_ceiling_against_the_forced_ring_run():
    """The model's ring ceiling, the node's NICs and the measured forced-Ring run of nccl-tests issue 309."""
    r = page.ring_ceiling()
    assert r["network_gb_s"] == 400.0                              # 8 × 400 Gb/s per direction
    assert abs(r["measured_gb_s"] - 392.69) < 1e-9                 # the log's best busbw
    assert r["measured_vs_model"] == ("above" if r["measured_gb_s"] > r["model_gb_s"] else "below")


def test_fully_sharded_layout_pays_for_the_full_recomputation_it_needs():
    est = page.estimate(tp=1, pp=1, dp=1024, zero=3)
    r = page.fsdp_with_recompute(est)
    # selective recomputation does not fit an 80 GB H100 at this batch; full does
    assert r["needed"] == "full" and r["total_gb"]["selective"] > r["capacity_gb"] >= r["total_gb"]["full"]
    # one more forward pass: a third of the step's arithmetic, so MFU <= 3/4 of the compute efficiency
    assert r["extra_s"] == pytest.approx(est.compute_s / 3)
    assert r["mfu"] < r["bound"] == pytest.approx(0.75 * est.efficiency)
    assert r["mfu"] == pytest.approx(est.mfu * est.step_s / (est.step_s + est.compute_s / 3))
    assert r["mfu"] < r["mfu_no_recompute"]


def test_the_published_fsdp_70b_run_is_read_from_the_runs_file():
    m = page.published_fsdp_70b()
    assert m["zero"] == 3 and m["recompute"] == "full" and 0 < m["mfu_pct"] < 100
    assert m["source"] == "mosaicml-llmfoundry-benchmarks"
