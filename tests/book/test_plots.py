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


def _saved_width_in(fig) -> float:
    """The width of the PNG a notebook saves (bbox_inches='tight', as the inline backend does), in inches."""
    import io

    from PIL import Image
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    buf.seek(0)
    with Image.open(buf) as im:
        return im.width / fig.dpi


def test_a_legend_of_long_labels_never_widens_the_saved_figure():
    """A legend wider than the figure widens the tight-cropped PNG, and the book then shrinks every label of it to
    the column (Lab 00's H100 panel was saved 12 inches wide): fewer columns first, then wrapped labels."""
    roof = rl.Roofline("x", "bf16", "bf16_dense_tflops", 100e12, 1e12)
    pts = [{"x": 10.0, "y": 5.0}]
    for n, label in ((2, "bf16 measured: h100-nvidia-h100-80gb-hbm3-20261126T133057.220Z-6d173fd8"),
                     (1, "bf16 measured: " + "a-very-long-run-name-without-spaces-" * 6 + " and some words after it")):
        fig, ax = plots.new_axes()
        series = [(kind, f"{label} {i}", pts) for i, kind in enumerate(["ours", "theirs", "prediction"] * n)]
        plots.roofline_panel(ax, [roof], series)
        assert _saved_width_in(fig) <= fig.get_size_inches()[0] + 0.25
        texts = [t.get_text() for t in fig.legends[0].get_texts()]
        assert all(label.split(":")[0] in t for t in texts[1:])  # every label kept (wrapped, not cut)


def test_a_legend_that_fits_keeps_its_columns():
    fig, ax = plots.new_axes()
    roof = rl.Roofline("x", "bf16", "bf16_dense_tflops", 100e12, 1e12)
    plots.roofline_panel(ax, [roof], [("ours", "bf16 measured", [{"x": 10.0, "y": 5.0}])])
    assert fig.legends[0]._ncols == 2 and "\n" not in "".join(t.get_text() for t in fig.legends[0].get_texts())
