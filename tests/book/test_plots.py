"""x4lib.book.plots: figures legible at page width, labels from data drawn as text (never mathtext), and the three
kinds of numbers drawn three ways."""
import matplotlib

matplotlib.use("Agg")

from x4lib.book import plots
from x4lib.compute import roofline as rl  # noqa: E402


def test_figures_are_at_least_600_pixels_wide():
    fig, ax = plots.new_axes()
    w, h = fig.get_size_inches() * fig.dpi
    assert w >= 700 and h >= 400 and fig.get_size_inches()[0] <= 7.5  # shown at ~660 px: >= 80 px per inch


def test_a_dollar_in_a_label_is_printed_not_read_as_math():
    fig, ax = plots.new_axes()
    plots.busbw_vs_size(ax, [("ours", "GPU $x^2$ \x1b[31m", [{"x": 1024, "y": 1.0}, {"x": 2048, "y": 2.0}])])
    fig.canvas.draw()  # would raise a mathtext ParseException on an unescaped "$x^2"
    (label,) = [t.get_text() for t in ax.figure.legends[0].get_texts()]
    assert label == r"GPU \$x^2\$ [31m"


def test_the_three_kinds_look_different():
    fig, ax = plots.new_axes()
    pts = [{"x": 1.0, "y": 1.0}, {"x": 2.0, "y": 2.0}]
    for kind in ("ours", "theirs", "prediction"):
        plots.points(ax, pts, kind, kind)
    ours, theirs, model = ax.get_lines()
    assert ours.get_fillstyle() == "full" and theirs.get_fillstyle() == "none" and model.get_linestyle() == "--"


def test_long_legends_go_below_the_data():
    fig, ax = plots.new_axes()
    roof = rl.Roofline("x", "bf16", "bf16_dense_tflops", 100e12, 1e12)
    plots.roofline_panel(ax, [roof], [("ours", "bf16 measured", [{"x": 10.0, "y": 5.0}])])
    fig.canvas.draw()
    (legend,) = fig.legends
    assert ax.get_legend() is None
    assert legend.get_window_extent().y1 <= ax.get_window_extent().y0  # below the axes, not on the data
