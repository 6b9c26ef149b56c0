"""x4lib.pages.ch03_diagrams: the page's diagrams are built from the ids the cells name, and the prose numbers beside
them are the drawing's."""
import matplotlib
import pytest

matplotlib.use("Agg")

from x4lib.book import diagram_parts as parts  # noqa: E402
from x4lib.network import clusters  # noqa: E402
from x4lib.pages import ch03_diagrams as page  # noqa: E402


pytestmark = pytest.mark.usefixtures("closed_figures")


def test_the_board_numbers_are_those_of_the_preset_and_the_board_facts():
    bn = page.board_numbers("2x8-h100-ib400")
    c = clusters.get("2x8-h100-ib400")
    assert bn["links"] * bn["per_link_gb_s"] == c.intra.bw_Bps / 1e9
    assert (bn["nics"], bn["nic_gbit_s"], bn["switches"]) == (c.nics_per_node, 400, 4)
    ax = page.draw_board("2x8-h100-ib400")
    assert f"split {bn['split']} over {bn['switches']} NVSwitch chips" in "\n".join(parts.texts(ax))


def test_the_fat_tree_cell_follows_its_gpu_count():
    leaves = {g: len(parts.with_gid(page.draw_fat_tree(gpus=g), "leaf")) for g in (512, 1024)}
    assert leaves == {512: page.fat_tree(512).shape["leaves"], 1024: page.fat_tree(1024).shape["leaves"]}
    assert leaves[512] * 2 == leaves[1024]


def test_the_allreduce_numbers_match_the_drawing():
    arn = page.allreduce_numbers("2x8-h100-ib400")
    assert arn["ring"]["steps"] == 2 * (arn["ring"]["n"] - 1) and arn["nvls"]["sent"] == 1.0
    text = "\n".join(parts.texts(page.draw_allreduce("2x8-h100-ib400")))
    assert f"{arn['ring']['steps']} steps" in text and f"{arn['tree']['steps']} steps" in text
