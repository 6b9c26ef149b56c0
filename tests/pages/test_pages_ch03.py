"""x4lib.pages.ch03: the chapter's tables and series come from the models, carry units, and hold no Python repr."""
import pytest

from x4lib.network import links, topology
from x4lib.pages import ch03 as page


def text(t):
    return t.to_text()


@pytest.mark.parametrize("make", [page.link_table, page.latency_table, page.topology_table,
                                  page.published_topology_table, page.check_table, page.compared_table,
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
    rows = page.breakdown_rows()
    assert "compute" in page.used_parts(rows) and len(rows) == len(page.COMPARED)


def test_check_series_are_model_and_theirs():
    kinds = [s[0] for s in page.check_series()]
    assert kinds == ["prediction", "theirs"]


def test_explorer_builds():
    pytest.importorskip("ipywidgets")
    w = page.comm_explorer()
    assert len(w.children) >= 7
