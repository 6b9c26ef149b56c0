"""Tables and inline lists for the book's pages: one helper, so every table reads the same way.

House style ("Tables for readers", ``style.md``): no index column, the unit in each header, one number format
per column, long text wrapped, a wide table scrolls inside its own box, a thirty-row dump becomes a compact
pivot plus the full table collapsed, and no Python repr in a cell or in a sentence.

    from x4lib.book.tables import Col, table, fmt_mapping
    table(rows, {"name": Col("Device"),
                 "memory_bw_gb_s": Col("Memory bandwidth", unit="GB/s", fmt="{:,.0f}"),
                 "note": Col("Note", wrap=True)})
    fmt_mapping({"fp64": 16, "fp32": 32}, unit="FLOP/cycle")   # 'FP64 16, FP32 32 FLOP/cycle'

What a page shows, and why:

- ``table(...)`` returns a :class:`Table`. In the book (myst-nb picks ``text/html``) it is a pandas Styler table
  without index, with the theme's ``dataframe`` look, inside ``<div class="x4-table-wrap">`` whose
  ``overflow-x: auto`` keeps a wide table scrolling in its own box (the style is inline, so Jupyter shows the
  same; ``book/_ext/static/x4-tables.css`` adds the book-wide touches). ``repr()`` (``text/plain``, what nbval
  compares) is a plain, deterministic text table of the same formatted cells, caption first.
- ``pivot(...)`` turns long rows (one per collective x size, say) into a compact table whose value header
  carries the unit and spans the pivoted columns; ``with_details(compact, full)`` shows that table and, below
  it, the full table in a collapsed ``<details>`` element: one cell, one output, no JavaScript, the full data
  still in the page (and in the text repr, after the compact one).
- ``fmt_mapping`` / ``fmt_list`` / ``fmt_value`` write a dict, a list or a number as reader text for a glued
  sentence or a cell. ``table`` applies them to dict and list cells itself, and refuses any other object whose
  ``str`` would be a repr.

Display units only: callers convert from x4lib's SI values at this edge (``x / 1e9`` for GB/s).
Used in: book/00-motivation.md, book/lab-00-roofline.md, book/lab-01-collectives.md.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import html as _html
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

NA = "—"  # what a missing value shows (NaN, None, pd.NA): never "NaN" or "None"

# Reader names of the book's dtype vocabulary (decisions.md); other keys only lose their underscores.
DTYPE_NAMES = {"fp64": "FP64", "fp32": "FP32", "tf32": "TF32", "bf16": "BF16", "fp16": "FP16",
               "fp8_e4m3": "FP8 E4M3", "fp8_e5m2": "FP8 E5M2", "fp8": "FP8", "int8": "INT8", "fp4": "FP4"}

Formatter = str | Callable[[Any], str]


# ---------------------------------------------------------------------------------------------------------------
# Text a run or a log supplies, shown in Markdown, HTML or a figure: always text, never markup

_MD_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")       # every ASCII punctuation character (CommonMark escapes them)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def md_text(text) -> str:
    """``text`` as literal Markdown text (MyST/CommonMark): every ASCII punctuation character backslash-escaped, so
    ``<script>``, ``**``, ``[x](y)``, ``$...$`` and ``{role}`` show as typed; newlines and control characters
    become spaces. Rendering-neutral for plain prose, so whole phrases built from run data can go through it."""
    return _MD_PUNCT.sub(r"\\\1", _CONTROL.sub(" ", str(text)).replace("\n", " "))


def md_code(text) -> str:
    """``text`` as an inline code span: a fence one backtick longer than the longest run inside (no HTML, no
    roles are read inside a code span)."""
    text = _CONTROL.sub(" ", str(text)).replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# ---------------------------------------------------------------------------------------------------------------
# Numbers and small collections as text

def sig(digits: int = 3) -> Callable[[Any], str]:
    """A number format with ``digits`` significant digits, thousands separators and no exponent:
    ``sig(3)``: 989.4 -> '989', 0.1657 -> '0.166', 12345.6 -> '12,346', 0.0 -> '0'."""
    if digits < 1:
        raise ValueError(f"sig: digits must be at least 1, got {digits}")

    def fmt(x) -> str:
        x = float(x)
        if x == 0 or not math.isfinite(x):
            return "0" if x == 0 else str(x)
        decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
        return f"{x:,.{decimals}f}"

    fmt.__name__ = f"sig({digits})"
    return fmt


DEFAULT_FLOAT = sig(3)


def _missing(v) -> bool:
    """None, NaN, pd.NA, NaT; never a string, a dict or a list."""
    if v is None:
        return True
    if isinstance(v, (str, bytes, Mapping, list, tuple, set, frozenset)):
        return False
    import pandas as pd
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _is_number(v) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool)


def _numeric(values) -> bool:
    """A number column (right-aligned): some numbers, and otherwise only missing values or marker strings."""
    present = [v for v in values if not _missing(v)]
    return any(_is_number(v) for v in present) and all(_is_number(v) or isinstance(v, str) for v in present)


def key_label(key, names: Mapping[str, str] | None = None) -> str:
    """A dict key as reader text: ``names`` first, then the dtype vocabulary (fp8_e4m3 -> 'FP8 E4M3'),
    else the key with underscores as spaces."""
    if names and key in names:
        return names[key]
    k = str(key)
    return DTYPE_NAMES.get(k.lower(), k.replace("_", " "))


def fmt_value(value, unit: str | None = None, fmt: Formatter | None = None, na: str = NA) -> str:
    """One value as reader text: ``fmt`` (a ``str.format`` pattern such as ``'{:,.0f}'`` or a callable) for
    numbers, ``sig(3)`` for floats without one, thousands separators for integers; then the unit."""
    if _missing(value):
        return na
    if isinstance(value, Mapping):
        return fmt_mapping(value, unit, fmt=fmt, na=na)
    if isinstance(value, (list, tuple, set, frozenset)):
        return fmt_list(value, unit, fmt=fmt, na=na)
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif callable(fmt):
        text = fmt(value)
    elif fmt is not None and _is_number(value):
        text = fmt.format(value)
    elif isinstance(value, numbers.Integral):
        text = f"{int(value):,}"
    elif _is_number(value):
        text = DEFAULT_FLOAT(value)
    elif isinstance(value, str):
        text = value  # a marker such as 'N/A' in a number column is shown as it is
    elif isinstance(value, (_dt.datetime, _dt.date)):
        text = value.isoformat()
    else:
        raise TypeError(f"cannot show a {type(value).__name__} as text: format it first "
                        "(its str() would put a Python repr on the page)")
    return f"{text} {unit}" if unit else text


def fmt_mapping(mapping: Mapping, unit: str | None = None, *, fmt: Formatter | None = None,
                names: Mapping[str, str] | None = None, sep: str = ", ", na: str = NA) -> str:
    """A dict as reader text, in its own order, the unit once at the end:
    ``fmt_mapping({'fp64': 16, 'fp32': 32}, unit='FLOP/cycle')`` -> ``'FP64 16, FP32 32 FLOP/cycle'``.
    Keys go through :func:`key_label` (dtype names upper-cased, or ``names``); values through
    :func:`fmt_value` with ``fmt``. A nested dict is shown in parentheses."""
    if not mapping:
        return na
    parts = []
    for k, v in mapping.items():
        text = (f"({fmt_mapping(v, fmt=fmt, names=names, sep=sep, na=na)})" if isinstance(v, Mapping)
                else fmt_value(v, fmt=fmt, na=na))
        parts.append(f"{key_label(k, names)} {text}")
    body = sep.join(parts)
    return f"{body} {unit}" if unit else body


def fmt_list(items: Iterable, unit: str | None = None, *, fmt: Formatter | None = None, sep: str = ", ",
             na: str = NA) -> str:
    """A list as reader text, the unit once at the end: ``fmt_list([1, 2, 4], 'GB')`` -> ``'1, 2, 4 GB'``."""
    items = sorted(items) if isinstance(items, (set, frozenset)) else list(items)
    if not items:
        return na
    body = sep.join(fmt_value(v, fmt=fmt, na=na) for v in items)
    return f"{body} {unit}" if unit else body


# ---------------------------------------------------------------------------------------------------------------
# Column specs

@dataclass(frozen=True)
class Col:
    """How one column is shown: ``label`` and ``unit`` make the header ('Memory bandwidth (GB/s)'); ``fmt`` is
    the column's one number format (``'{:,.0f}'``, ``'{:.3g}'``, ``'{:.1%}'`` for a fraction, or a callable);
    ``wrap=True`` marks long text, wrapped in a column 14-30 em wide; other cells stay on one line."""
    label: str
    unit: str | None = None
    fmt: Formatter | None = None
    wrap: bool = False

    @property
    def header(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


Spec = Mapping[str, "Col | str"]


def _as_col(key: str, spec: Col | str | None) -> Col:
    if spec is None:
        return Col(str(key))
    if isinstance(spec, str):
        return Col(spec)
    if isinstance(spec, Col):
        return spec
    raise TypeError(f"column {key!r}: the spec must be a Col or a header string, not {type(spec).__name__}")


def _frame(data):
    """A DataFrame from a DataFrame or rows (dicts). A meaningful index (named, or not integers) becomes the first
    column(s), so ``set_index("id")`` frames keep their ids; an unnamed integer index (0, 1, 2... or what is left
    of it after filtering) is dropped."""
    import pandas as pd
    if isinstance(data, pd.DataFrame):
        df = data
    elif isinstance(data, Mapping):
        raise TypeError("table: pass a DataFrame or a list of rows (dicts), not one dict; "
                        "for a dict in a sentence use fmt_mapping")
    else:
        df = pd.DataFrame(list(data))
    idx = df.index
    unnamed_integers = all(n is None for n in idx.names) and pd.api.types.is_integer_dtype(idx.dtype)
    return df.reset_index(drop=True) if unnamed_integers else df.reset_index()


# ---------------------------------------------------------------------------------------------------------------
# Tables

_CSS_WRAP = "overflow-x: auto; max-width: 100%;"


@dataclass(frozen=True, eq=False)
class Table:
    """A formatted table: every cell is already text. Shows as HTML in the book, as plain text in ``repr``.
    Build it with :func:`table` or :func:`pivot`."""
    headers: tuple  # column headers; a tuple (group, sub) per column when the header has two rows
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...]
    wrap: tuple[bool, ...]
    caption: str | None = None
    n_groups: int = field(default=0)  # 2 when headers are (group, sub) pairs

    def __len__(self) -> int:
        return len(self.rows)

    def to_frame(self):
        """The formatted cells as a DataFrame of strings (headers as columns, no index)."""
        import pandas as pd
        cols = pd.MultiIndex.from_tuples(self.headers) if self.n_groups else list(self.headers)
        return pd.DataFrame(list(self.rows), columns=cols, dtype=object)

    # -- text ------------------------------------------------------------------------------------------------
    def to_text(self) -> str:
        """Plain text, deterministic: the caption, then the cells as formatted, no index."""
        if not self.rows:
            body = "  ".join(h if isinstance(h, str) else " ".join(p for p in h if p) for h in self.headers)
            body += "\n(no rows)"
        else:
            # pandas right-justifies every column: pad text columns (cells and header) to the left first
            import pandas as pd
            headers, rows = list(self.headers), [list(r) for r in self.rows]
            for j, num in enumerate(self.numeric):
                sub = headers[j][-1] if self.n_groups else headers[j]
                width = max(len(sub), *(len(r[j]) for r in rows))
                just = str.rjust if num else str.ljust
                for r in rows:
                    r[j] = just(r[j], width)
                sub = just(sub, width)
                headers[j] = (*headers[j][:-1], sub) if self.n_groups else sub
            cols = pd.MultiIndex.from_tuples(headers) if self.n_groups else headers
            body = pd.DataFrame(rows, columns=cols, dtype=object).to_string(index=False)
        body = "\n".join(line.rstrip() for line in body.splitlines())
        return f"{self.caption}\n{body}" if self.caption else body

    def __repr__(self) -> str:
        return self.to_text()

    __str__ = __repr__

    # -- HTML ------------------------------------------------------------------------------------------------
    def _uuid(self) -> str:
        h = hashlib.sha1(repr((self.headers, self.rows, self.caption)).encode()).hexdigest()
        return "x4" + h[:10]

    def to_html(self) -> str:
        """The table in its scroll box: ``<div class="x4-table-wrap" style="overflow-x: auto">`` around a pandas
        Styler table (class ``dataframe x4-table``, no index, cells classed ``x4-num``/``x4-text``/``x4-wrap``).
        Deterministic: the Styler id is a hash of the content."""
        import pandas as pd
        df = self.to_frame()
        classes = pd.DataFrame([["x4-num" if n else ("x4-text x4-wrap" if w else "x4-text")
                                 for n, w in zip(self.numeric, self.wrap)] for _ in self.rows],
                               columns=df.columns, index=df.index)
        sty = df.style.hide(axis="index").format(escape="html").set_uuid(self._uuid())
        sty = sty.set_table_attributes('class="dataframe x4-table"').set_td_classes(classes)
        styles = [
            {"selector": "", "props": "border-collapse: collapse; margin: 0;"},
            {"selector": "th", "props": "white-space: normal; vertical-align: bottom; text-align: left;"},
            {"selector": "td", "props": "vertical-align: top; text-align: left;"},
            {"selector": "td.x4-num", "props": "text-align: right; white-space: nowrap; "
                                               "font-variant-numeric: tabular-nums;"},
            {"selector": "td.x4-text", "props": "white-space: nowrap;"},
            {"selector": "td.x4-wrap", "props": "white-space: normal; min-width: 14em; max-width: 30em;"},
            {"selector": "caption", "props": "caption-side: top; text-align: left;"},
        ]
        num_cols = [j for j, n in enumerate(self.numeric) if n]
        level = "level1" if self.n_groups else "level0"
        styles += [{"selector": f"th.{level}.col{j}", "props": "text-align: right;"} for j in num_cols]
        if self.n_groups:
            styles.append({"selector": "th.level0", "props": "text-align: center;"})
        sty = sty.set_table_styles(styles, overwrite=True)
        if self.caption:
            sty = sty.set_caption(_html.escape(self.caption))
        return f'<div class="x4-table-wrap" style="{_CSS_WRAP}">\n{sty.to_html()}</div>\n'

    def _repr_html_(self) -> str:
        return self.to_html()


def table(data, columns: Spec | None = None, *, caption: str | None = None, na: str = NA) -> Table:
    """The book's table: ``data`` (DataFrame or rows as dicts), ``columns`` {data column: Col or header}
    in display order (columns not named are left out; None shows all, formatted by type).

    A meaningful index (named, or not integers) becomes a column first, so pass its name in ``columns``;
    after ``.T`` the former column names sit in a column named 'index'. Missing values show as ``na``;
    dict and list cells go through :func:`fmt_mapping` / :func:`fmt_list` with the column's format.
    Raises KeyError (one line) for a column name that is not in the data."""
    df = _frame(data)
    if columns is None:
        columns = {c: None for c in df.columns}
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KeyError(f"table: no column {', '.join(map(repr, missing))} in the data "
                       f"(columns: {', '.join(map(str, df.columns))})")
    cols = {k: _as_col(k, v) for k, v in columns.items()}
    headers = [c.header for c in cols.values()]
    dupes = sorted({h for h in headers if headers.count(h) > 1})
    if dupes:
        raise ValueError(f"table: two columns with the header {dupes[0]!r}")
    rows, numeric = [], []
    for key in cols:
        numeric.append(_numeric(df[key]))
    for i in range(len(df)):
        rows.append(tuple(_cell(df[key].iloc[i], col, key, na) for key, col in cols.items()))
    return Table(headers=tuple(headers), rows=tuple(rows), numeric=tuple(numeric),
                 wrap=tuple(c.wrap for c in cols.values()), caption=caption)


def _cell(value, col: Col, key: str, na: str) -> str:
    try:
        return fmt_value(value, fmt=col.fmt, na=na)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"table: column {key!r}, value {value!r}: {exc}") from None


def pivot(data, *, index: tuple[str, Col | str] | str, columns: str, values: Spec,
          column_labels: Callable[[Any], str] | None = None, agg: str | Callable | None = None,
          caption: str | None = None, na: str = NA) -> Table:
    """A compact table from long rows: one row per ``index`` value, one column per ``columns`` value (in the
    order they first appear), one block of such columns per entry of ``values``; the value's header (with its
    unit) spans its block, e.g. collective x size -> 'busbw (GB/s)' over '1 MiB', '128 MiB', '1 GiB'.

    ``index`` is a column name or (name, Col); ``column_labels`` formats the pivoted values (e.g. a byte size);
    ``agg`` ('median', 'min', ...) combines several rows of one cell; without it, a duplicate is an error."""
    df = _frame(data)
    index_key, index_col = (index, _as_col(index, None)) if isinstance(index, str) else (
        index[0], _as_col(index[0], index[1]))
    vcols = {k: _as_col(k, v) for k, v in values.items()}
    missing = [c for c in (index_key, columns, *vcols) if c not in df.columns]
    if missing:
        raise KeyError(f"pivot: no column {', '.join(map(repr, missing))} in the data "
                       f"(columns: {', '.join(map(str, df.columns))})")
    row_keys = list(dict.fromkeys(df[index_key]))
    col_keys = list(dict.fromkeys(df[columns]))
    grouped = df.groupby([index_key, columns], sort=False)
    if agg is None:
        sizes = grouped.size()
        dup = sizes[sizes > 1]
        if len(dup):
            (r, c), n = dup.index[0], int(dup.iloc[0])
            raise ValueError(f"pivot: {n} rows for {index_key}={r!r}, {columns}={c!r}: pass agg='median' "
                             "(or another aggregation), or filter the rows first")
        cells = {k: g.iloc[0] for k, g in grouped}
    else:
        aggregated = grouped[list(vcols)].agg(agg)
        cells = {k: aggregated.loc[k] for k in aggregated.index}
    label = column_labels or (lambda v: fmt_value(v))
    headers: list = [(index_col.header, "")]
    numeric, wrap = [False], [index_col.wrap]
    for vk, vc in vcols.items():
        for ck in col_keys:
            headers.append((vc.header, label(ck)))
            numeric.append(True)
            wrap.append(False)
    rows = []
    for rk in row_keys:
        row = [_cell(rk, index_col, index_key, na)]
        for vk, vc in vcols.items():
            for ck in col_keys:
                cell = cells.get((rk, ck))
                row.append(na if cell is None else _cell(cell[vk], vc, vk, na))
        rows.append(tuple(row))
    for j in range(1, len(headers)):  # a value block of text (not numbers) is left-aligned
        numeric[j] = _numeric(df[list(vcols)[(j - 1) // len(col_keys)]])
    return Table(headers=tuple(headers), rows=tuple(rows), numeric=tuple(numeric), wrap=tuple(wrap),
                 caption=caption, n_groups=2)


@dataclass(frozen=True, eq=False)
class TableWithDetails:
    """A compact table and, collapsed below it, the full table (``<details>``): for tables of more than
    a dozen rows. Build it with :func:`with_details`."""
    compact: Table
    full: Table
    summary: str

    def to_html(self) -> str:
        return (self.compact.to_html()
                + f'<details class="x4-details">\n<summary>{_html.escape(self.summary)}</summary>\n'
                + self.full.to_html() + "</details>\n")

    def _repr_html_(self) -> str:
        return self.to_html()

    def to_text(self) -> str:
        return f"{self.compact.to_text()}\n\n{self.summary}:\n{self.full.to_text()}"

    def __repr__(self) -> str:
        return self.to_text()

    __str__ = __repr__


def with_details(compact: Table, full: Table, summary: str | None = None) -> TableWithDetails:
    """Show ``compact`` and, in a collapsed ``<details>`` under it, ``full`` (summary line: ``summary``, by
    default 'All N rows'). One cell, one output; the full table stays in the page and in the text repr."""
    return TableWithDetails(compact=compact, full=full, summary=summary or f"All {len(full)} rows")
