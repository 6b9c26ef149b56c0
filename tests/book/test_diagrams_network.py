"""x4lib.book.diagrams_network: the fat tree draws the topology model's switches, the AllReduce drawing the
schedules' moves, and no text overlaps at the house figure size."""
import matplotlib
import pytest

matplotlib.use("Agg")

from x4lib.book import diagram_parts as parts, diagrams_network as dn  # noqa: E402
from x4lib.network import allreduce_moves as am, clusters, topology  # noqa: E402


pytestmark = pytest.mark.usefixtures("closed_figures")


def tree(gpus, radix=64):
    return topology.rail_fat_tree(gpus, radix, topology.default_link_Bps())


def draw_tree(gpus=1024, radix=64):
    fig, ax = parts.new_axes()
    return dn.rail_fat_tree(ax, tree(gpus, radix))


def draw_moves(n=8):
    fig, ax = parts.new_axes()
    c = clusters.custom_cluster(1, n, 450e9, nvls=True)
    return dn.allreduce_moves(ax, am.in_one_node(c, 1.0), "one node")


@pytest.mark.parametrize("gpus,leaves,upper", [(256, 8, 4), (512, 16, 8), (1024, 32, 16)])
def test_the_leaves_and_spines_drawn_are_the_models(gpus, leaves, upper):
    t = tree(gpus)
    assert (t.shape["leaves"], t.switches - t.shape["leaves"]) == (leaves, upper)
    ax = draw_tree(gpus)
    assert len(parts.with_gid(ax, "leaf")) == leaves
    assert len(parts.with_gid(ax, "upper")) == upper
    assert len(parts.with_gid(ax, "unit")) == t.shape["rail_groups"]
    assert len(parts.with_gid(ax, "rail")) == leaves  # one rail link per leaf drawn
    text = "\n".join(parts.texts(ax))
    assert f"{t.switches:,} switches: {leaves:,} leaves (8 rails × {t.shape['rail_groups']} scalable units)" in text


def test_a_large_tree_elides_units_and_says_how_many():
    t = tree(8192)
    ax = draw_tree(8192)
    drawn_units = len(parts.with_gid(ax, "unit"))
    assert drawn_units == dn.MAX_UNITS_DRAWN
    assert len(parts.with_gid(ax, "leaf")) == drawn_units * 8
    text = "\n".join(parts.texts(ax))
    assert f"{t.shape['rail_groups'] - drawn_units:,} more units" in text
    assert f"{dn.MAX_UPPER_DRAWN} of {t.switches - t.shape['leaves']:,} drawn" in text


def test_only_a_rail_tree_is_drawn_as_one():
    fig, ax = parts.new_axes()
    with pytest.raises(ValueError, match="rail-fat-tree"):
        dn.rail_fat_tree(ax, topology.fat_tree(1024, 64, 50e9))


def test_the_allreduce_arrows_are_the_schedules_moves():
    ax = draw_moves(8)
    scheds = am.in_one_node(clusters.custom_cluster(1, 8, 450e9, nvls=True), 1.0)
    expected = sum(len(set((m.phase, m.src, m.dst) for m in s.moves)) for s in scheds.values())
    assert len(parts.with_gid(ax, "move")) == expected
    text = "\n".join(parts.texts(ax))
    assert "14 steps = 2(n − 1)" in text and "each step: S/8 per GPU" in text and "each GPU sends 1.75 S" in text
    assert "6 steps: 3 up, 3 down" in text and "2 steps: in, then out" in text


def test_more_gpus_more_ring_steps_and_no_nvls_without_an_nvswitch():
    fig, ax = parts.new_axes()
    c = clusters.custom_cluster(1, 4, 300e9, nvls=False)
    dn.allreduce_moves(ax, am.in_one_node(c, 1.0))
    text = "\n".join(parts.texts(ax))
    assert "6 steps = 2(n − 1)" in text and "S/4" in text and "NVLS" not in text


@pytest.mark.parametrize("draw", [lambda: draw_tree(1024), lambda: draw_tree(8192), lambda: draw_tree(64, 16),
                                  lambda: draw_moves(8)])
def test_no_text_overlaps_at_the_fixed_size(draw):
    assert parts.overlapping_texts(draw()) == []
