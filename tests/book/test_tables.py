"""x4lib.book.tables: the one table helper of the book's pages, and the text helpers for glued prose."""
import html.parser
import re

import pandas as pd
import pytest

from x4lib.book.tables import NA, Col, fmt_list, fmt_mapping, fmt_value, pivot, sig, table, with_details

ROWS = [
    {"id": "h100-sxm", "name": "NVIDIA H100 SXM5 80GB", "bw_gb_s": 3352.0, "peak_tflops": 989.4, "eff": 0.8031,
     "note": "Dense BF16 tensor rate at the boost clock; the datasheet's headline figure is with sparsity.",
     "flop_per_clock": {"fp64": 16, "fp32": 32}},
    {"id": "i5-8250u", "name": "Intel Core i5-8250U", "bw_gb_s": 37.5, "peak_tflops": 0.1657, "eff": float("nan"),
     "note": "Two AVX2 FMA units per core.", "flop_per_clock": None},
]
SPEC = {"name": Col("Device"),
        "bw_gb_s": Col("Memory bandwidth", unit="GB/s", fmt="{:,.0f}"),
        "peak_tflops": Col("Peak", unit="TFLOP/s", fmt="{:,.3f}"),
        "eff": Col("Efficiency", fmt="{:.1%}"),
        "note": Col("Note", wrap=True),
        "flop_per_clock": Col("Per clock", unit="FLOP/cycle")}


class _Cells(html.parser.HTMLParser):
    """Header and body cells of every <table>, with their classes; <div>/<details> classes and styles."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.th, self.td, self.divs, self.details, self.summaries = [], [], [], [], []
        self._cell = None
        self._in_summary = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("th", "td"):
            self._cell = {"tag": tag, "cls": (a.get("class") or "").split(), "text": "",
                          "colspan": int(a.get("colspan") or 1)}
        elif tag == "div":
            self.divs.append(a)
        elif tag == "details":
            self.details.append(a)
        elif tag == "summary":
            self._in_summary = True
            self.summaries.append("")

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self._cell is not None:
            (self.th if tag == "th" else self.td).append(self._cell)
            self._cell = None
        elif tag == "summary":
            self._in_summary = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data
        if self._in_summary:
            self.summaries[-1] += data


def cells(html_text: str) -> _Cells:
    p = _Cells()
    p.feed(html_text)
    return p


@pytest.fixture
def t():
    return table(ROWS, SPEC, caption="Two devices")


# ---------------------------------------------------------------------------------------------------------------
# HTML

def test_html_has_no_index_column(t):
    c = cells(t.to_html())
    assert [h["text"] for h in c.th] == ["Device", "Memory bandwidth (GB/s)", "Peak (TFLOP/s)", "Efficiency",
                                         "Note", "Per clock (FLOP/cycle)"]
    assert not [h for h in c.th if {"row_heading", "index_name", "blank"} & set(h["cls"])]
    assert len(c.td) == 2 * len(SPEC)
    assert c.td[0]["text"] == "NVIDIA H100 SXM5 80GB"  # the first cell of a row is data, not 0, 1, 2...


def test_a_named_index_becomes_a_column_and_a_default_one_disappears():
    df = pd.DataFrame(ROWS).set_index("id")
    named = table(df, {"id": Col("Catalog id"), "name": "Device"})
    assert [r[0] for r in named.rows] == ["h100-sxm", "i5-8250u"]
    plain = table(pd.DataFrame(ROWS), {"name": "Device"})
    assert plain.headers == ("Device",) and plain.rows == (("NVIDIA H100 SXM5 80GB",), ("Intel Core i5-8250U",))
    filtered = pd.DataFrame(ROWS + ROWS)[lambda d: d.bw_gb_s > 100]  # index 0, 2: still no index column
    assert table(filtered[["name"]]).headers == ("name",)
    transposed = pd.DataFrame(ROWS).set_index("id")[["bw_gb_s"]].T  # former column names become a column
    assert table(transposed).headers == ("index", "h100-sxm", "i5-8250u")


def test_headers_carry_units(t):
    assert "Memory bandwidth (GB/s)" in t.headers and "Peak (TFLOP/s)" in t.headers
    assert Col("Time", unit="µs").header == "Time (µs)" and Col("Device").header == "Device"


def test_one_number_format_per_column(t):
    by_col = dict(zip(t.headers, zip(*t.rows)))
    assert by_col["Memory bandwidth (GB/s)"] == ("3,352", "38")
    assert by_col["Peak (TFLOP/s)"] == ("989.400", "0.166")  # the same three decimals in every row
    assert by_col["Efficiency"] == ("80.3%", NA)


def test_default_float_format_is_three_significant_digits_not_padded_decimals():
    rows = table([{"x": 312.0}, {"x": 0.1657}, {"x": 12345.6}, {"x": 0.0}], {"x": Col("x", unit="TFLOP/s")}).rows
    assert [r[0] for r in rows] == ["312", "0.166", "12,346", "0"]
    assert sig(2)(0.01234) == "0.012"
    with pytest.raises(ValueError):
        sig(0)


def test_missing_values_show_a_dash_never_nan_or_none(t):
    text = t.to_html() + repr(t)
    assert not re.search(r"\b(NaN|nan|None)\b", text)
    assert table([{"a": None}, {"a": pd.NA}, {"a": float("nan")}], {"a": "A"}).rows == ((NA,), (NA,), (NA,))


def test_number_cells_are_right_aligned_and_long_text_wraps(t):
    c = cells(t.to_html())
    first_row = c.td[:len(SPEC)]
    assert [("x4-num" in d["cls"], "x4-wrap" in d["cls"]) for d in first_row] == [
        (False, False), (True, False), (True, False), (True, False), (False, True), (False, False)]
    style = t.to_html()
    assert re.search(r"td\.x4-wrap \{[^}]*white-space: normal[^}]*max-width", style)
    assert re.search(r"td\.x4-num \{[^}]*text-align: right", style)


def test_the_table_scrolls_inside_its_own_box(t):
    c = cells(t.to_html())
    wrap = c.divs[0]
    assert "x4-table-wrap" in wrap["class"].split()
    assert "overflow-x: auto" in wrap["style"] and "max-width: 100%" in wrap["style"]
    assert 'class="dataframe x4-table"' in t.to_html()  # the theme's table look


def test_cells_are_html_escaped():
    h = table([{"a": "<b>x</b> & y"}], {"a": "A"}).to_html()
    assert "<b>x</b>" not in h and "&lt;b&gt;x&lt;/b&gt; &amp; y" in h


def test_html_is_deterministic(t):
    again = table(ROWS, SPEC, caption="Two devices")
    assert t.to_html() == again.to_html() == t._repr_html_()
    assert table(ROWS[:1], SPEC).to_html() != t.to_html()


# ---------------------------------------------------------------------------------------------------------------
# Plain text (what nbval compares)

def test_text_repr_is_deterministic_readable_and_has_no_index(t):
    assert repr(t) == repr(table(ROWS, SPEC, caption="Two devices")) == str(t)
    small = table(ROWS, {"name": "Device", "bw_gb_s": Col("Memory bandwidth", unit="GB/s", fmt="{:,.0f}"),
                         "eff": Col("Efficiency", fmt="{:.1%}")})
    assert repr(small) == (
        "Device                Memory bandwidth (GB/s) Efficiency\n"
        "NVIDIA H100 SXM5 80GB                   3,352      80.3%\n"
        "Intel Core i5-8250U                        38          —")
    assert repr(t).splitlines()[0] == "Two devices"
    assert "object at 0x" not in repr(t) and "Styler" not in repr(t)


# ---------------------------------------------------------------------------------------------------------------
# Prose and cells: no Python repr

def test_fmt_mapping_writes_reader_text():
    assert fmt_mapping({"fp64": 16, "fp32": 32}, unit="FLOP/cycle") == "FP64 16, FP32 32 FLOP/cycle"
    assert fmt_mapping({"fp8_e4m3": 1978.9, "bf16": 989.4}, "TFLOP/s", fmt="{:,.0f}") == \
        "FP8 E4M3 1,979, BF16 989 TFLOP/s"
    assert fmt_mapping({"base": 1.6, "max_turbo": 3.4}, "GHz", names={"max_turbo": "max turbo"}) == \
        "base 1.60, max turbo 3.40 GHz"
    assert fmt_mapping({"a100": {"fp64": 9.7}}) == "a100 (FP64 9.70)"
    assert fmt_mapping({}) == NA


def test_fmt_list_and_fmt_value():
    assert fmt_list([1, 2, 4], "GB") == "1, 2, 4 GB"
    assert fmt_list({"b", "a"}) == "a, b"
    assert fmt_value(0.5, fmt="{:.0%}") == "50%"
    assert fmt_value(1024, "B") == "1,024 B"
    assert fmt_value(True) == "yes"
    with pytest.raises(TypeError, match="format it first"):
        fmt_value(object())


def test_no_python_repr_in_formatted_prose_or_cells():
    texts = [fmt_mapping({"fp64": 16, "fp32": 32}, "FLOP/cycle"), fmt_list([1.5, 2]), fmt_value({"x": [1, 2]})]
    t = table([{"d": {"fp64": 16}, "l": [1, 2]}], {"d": "Per clock", "l": "Sizes"})
    texts += [repr(t), t.to_html()]
    for text in texts:
        assert "{'" not in text and "['" not in text and "[1" not in text and "np.float" not in text, text


def test_an_object_cell_is_an_error_not_a_repr():
    class Thing:
        pass
    with pytest.raises(TypeError, match="column 'x'"):
        table([{"x": Thing()}], {"x": "X"})


def test_unknown_column_is_a_one_line_error():
    with pytest.raises(KeyError, match="no column 'bandwidth'"):
        table(ROWS, {"bandwidth": "B"})
    with pytest.raises(TypeError, match="fmt_mapping"):
        table({"fp64": 16})


# ---------------------------------------------------------------------------------------------------------------
# Big tables: a pivot and the full table collapsed

SIZES = [2**20, 100 * 2**20, 2**30]
LONG = [{"collective": c, "size_B": s, "busbw_gb_s": bw * (1 + r / 10), "repeat": r}
        for c in ("all_reduce", "all_gather", "broadcast", "reduce")
        for s, bw in zip(SIZES, (0.5, 2.0, 2.5)) for r in range(3)]


def size_label(b: int) -> str:
    return f"{b / 2**30:g} GiB" if b >= 2**30 else f"{b / 2**20:g} MiB"


def test_pivot_keeps_first_appearance_order_and_puts_the_unit_over_its_columns():
    p = pivot(LONG, index=("collective", Col("Collective")), columns="size_B",
              values={"busbw_gb_s": Col("busbw", unit="GB/s", fmt="{:.2f}")}, column_labels=size_label, agg="median")
    assert p.headers == (("Collective", ""), ("busbw (GB/s)", "1 MiB"), ("busbw (GB/s)", "100 MiB"),
                         ("busbw (GB/s)", "1 GiB"))
    assert [r[0] for r in p.rows] == ["all_reduce", "all_gather", "broadcast", "reduce"]
    assert p.rows[0] == ("all_reduce", "0.55", "2.20", "2.75")  # median of 3 repeats
    c = cells(p.to_html())
    group = [h for h in c.th if h["text"] == "busbw (GB/s)"]
    assert len(group) == 1 and group[0]["colspan"] == 3
    assert not [h for h in c.th if "row_heading" in h["cls"]]


def test_pivot_without_agg_refuses_duplicates():
    with pytest.raises(ValueError, match="3 rows for collective='all_reduce'"):
        pivot(LONG, index="collective", columns="size_B", values={"busbw_gb_s": Col("busbw", unit="GB/s")})


def test_with_details_shows_the_compact_table_and_collapses_the_full_one():
    compact = pivot(LONG, index=("collective", Col("Collective")), columns="size_B",
                    values={"busbw_gb_s": Col("busbw", unit="GB/s", fmt="{:.2f}")}, column_labels=size_label,
                    agg="median")
    full = table(LONG, {"collective": "Collective", "size_B": Col("Size", unit="B"),
                        "repeat": "Repeat", "busbw_gb_s": Col("busbw", unit="GB/s", fmt="{:.2f}")})
    w = with_details(compact, full)
    h = w.to_html()
    c = cells(h)
    assert c.summaries == ["All 36 rows"]
    assert c.details == [{"class": "x4-details"}]  # no 'open' attribute: collapsed
    assert h.index(compact.to_html()) < h.index("<details") < h.index(full.to_html())
    assert len(c.td) == 4 * 4 + 36 * 4
    assert repr(w).startswith(repr(compact)) and repr(full) in repr(w) and "All 36 rows:" in repr(w)
    assert with_details(compact, full, "Every run").summary == "Every run"
