"""x4lib.book.diagrams_chip: the SM/memory-hierarchy and DGX-board diagrams draw the catalog's and the facts' counts,
and their text does not overlap at the house figure size."""
import dataclasses

import matplotlib
import pytest

matplotlib.use("Agg")

from x4lib.book import diagram_parts as parts, diagrams_chip as dc  # noqa: E402
from x4lib.catalog import facts, specs  # noqa: E402
from x4lib.network import clusters, links  # noqa: E402


pytestmark = pytest.mark.usefixtures("closed_figures")


def draw_sm(device=None):
    fig, ax = parts.new_axes()
    out = dc.sm_hierarchy(ax, device or specs.get("h100-sxm"), facts.group("h100_sm"), facts.group("h100_memory"))
    return fig, out


def draw_board(cluster=None, board=None):
    fig, ax = parts.new_axes()
    out = dc.dgx_board(ax, cluster or clusters.get("2x8-h100-ib400"), board or facts.group("dgx_h100_board"),
                       links.get("pcie-gen5-x16"))
    return fig, out


def test_the_sm_diagram_labels_come_from_the_catalog_and_the_facts():
    fig, ax = draw_sm()
    h100 = specs.get("h100-sxm")
    n_sm, tc = h100.peak_basis["units"], facts.get("h100_sm", "tensor_cores_per_sm").value
    text = "\n".join(parts.texts(ax))
    assert f"One SM of the {n_sm} on {h100.name}" in text
    assert f"{tc} Tensor Cores per SM × {n_sm} SMs = {tc * n_sm:,}" in text
    assert len(parts.with_gid(ax, "tensor-core")) == tc
    assert f"L2 cache: {facts.get('h100_memory', 'l2_capacity').value:,.0f} MB" in text
    assert f"{h100.memory_bw_Bps / 1e12:,.2f} TB/s" in text
    assert len(parts.with_gid(ax, "level")) == 4
    assert fig.get_size_inches().tolist() == list(parts.FIGSIZE)


def test_a_different_sm_count_changes_the_drawing():
    h100 = specs.get("h100-sxm")
    fewer = dataclasses.replace(h100, peak_basis={**h100.peak_basis, "units": 114})
    _, ax = draw_sm(fewer)
    text = "\n".join(parts.texts(ax))
    assert "One SM of the 114" in text and "× 114 SMs" in text and "× 132" not in text


def test_the_board_draws_the_counts_and_the_link_split_of_the_data():
    _, ax = draw_board()
    c, board = clusters.get("2x8-h100-ib400"), facts.group("dgx_h100_board")
    split = dc.board_links(board)
    assert len(parts.with_gid(ax, "gpu")) == c.gpus_per_node == board.facts["gpus"].value
    assert len(parts.with_gid(ax, "nvswitch")) == board.facts["nvswitch_chips"].value == len(split)
    assert len(parts.with_gid(ax, "nic")) == c.nics_per_node
    assert len(parts.with_gid(ax, "cpu")) == board.facts["cpus"].value
    assert "CPU 0 (GPUs 0–3)" in parts.texts(ax)  # Table 6: network module 0 (CPU 0) serves GPUs 0-3
    assert board.facts["gpus_per_network_module"].value == c.gpus_per_node / board.facts["cpus"].value
    assert len(parts.with_gid(ax, "pcie-switch")) == c.gpus_per_node
    assert len(parts.with_gid(ax, "nvlink")) == c.gpus_per_node * len(split)
    # the split adds up to the whitepaper's links per GPU, and the links x rate to the catalog's per-GPU rate
    assert sum(split) == board.facts["nvlink_links_per_gpu"].value
    text = "\n".join(parts.texts(ax))
    assert f"= {c.intra.bw_Bps / 1e9:,.0f} GB/s per GPU per direction" in text
    assert f"split {' + '.join(map(str, split))} over" in text
    assert f"NIC: {c.nic.bw_Bps * 8 / 1e9:,.0f} Gb/s" in text
    widths = {ln.get_linewidth() for ln in parts.with_gid(ax, "nvlink")}
    assert widths == {0.35 * k for k in split}


def test_a_smaller_node_draws_fewer_gpus_and_nics():
    small = clusters.custom_cluster(1, 4, 450e9, nics_per_node=2, nic_Bps=50e9, nvls=True)
    _, ax = draw_board(small)
    assert len(parts.with_gid(ax, "gpu")) == 4 and len(parts.with_gid(ax, "nic")) == 2


@pytest.mark.parametrize("draw", [draw_sm, draw_board])
def test_no_text_overlaps_at_the_fixed_size(draw):
    _, ax = draw()
    assert parts.overlapping_texts(ax) == []
