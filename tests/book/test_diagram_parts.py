"""x4lib.book.diagram_parts: inch coordinates, escaped labels, and an overlap check that finds overlaps."""
import matplotlib
import pytest

matplotlib.use("Agg")

from x4lib.book import diagram_parts as parts  # noqa: E402


pytestmark = pytest.mark.usefixtures("closed_figures")


def test_the_canvas_is_the_figure_in_inches_and_labels_print_dollars():
    fig, ax = parts.new_axes()
    assert ax.get_xlim() == (0, parts.FIGSIZE[0]) and ax.get_ylim() == (0, parts.FIGSIZE[1])
    parts.box(ax, 1, 1, 1, 0.5, "cost $5", gid="b")
    assert parts.texts(ax) == [r"cost \$5"] and len(parts.with_gid(ax, "b")) == 1


def test_overlapping_and_escaping_texts_are_reported():
    fig, ax = parts.new_axes()
    parts.note(ax, 1, 1, "first label")
    parts.note(ax, 1.2, 1, "second label")
    parts.note(ax, 6.8, 3, "runs off the right edge")
    bad = parts.overlapping_texts(ax)
    assert ("first label", "second label") in bad
    assert ("runs off the right edge", "outside the figure") in bad
    fig, ax = parts.new_axes()
    parts.note(ax, 1, 1, "apart")
    parts.note(ax, 1, 2, "apart too")
    assert parts.overlapping_texts(ax) == []
