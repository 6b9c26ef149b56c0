"""The built book in a real browser, offline: every page of _build/html opened once in headless Chromium.

Reuses the one strict build of the session (the ``book_build`` fixture); serves _build/html from a local HTTP
server; routes every other request: the widget manager and require.js, which the widget pages take from CDNs,
come from local npm copies under out/js (git-ignored), and anything else is aborted and reported. The pages pin
cdnjs's minified require.js 2.3.4 with an ``integrity`` hash that no npm file matches, so for that one <script>
tag the routed HTML drops the attribute (npm's requirejs 2.3.4 is the same release, unminified); nothing else of
the pages is changed.

Readability at a 1280 px viewport, collected in the same visit (after the solution dropdowns were opened): tables
and cell outputs stay in the text column or scroll inside their own box; no table of more than 20 rows shown open;
no Python repr (dict, object, Series, NaN in a cell...) and no glued sentence in the text; figures at least 600 px
wide and drawn for the width they are shown at (>= 80 CSS px per inch of the matplotlib figure). The checks themselves are tested on small synthetic
pages (``test_readability_checks_*``), which need Chromium but not the book build:
``pytest tests/test_browser.py -k readability_checks``.

Without Chromium (or Playwright) the browser tests skip with the reason, except under CI=true, where that is a
failure. Without npm, only the widget-rendering check skips (with the reason); the static fallback figure of the
widget pages is checked anyway. Screenshots: _build/screenshots/<page>.png (e.g. book-00-motivation.png).
"""
from __future__ import annotations

import html.parser
import shutil
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest
import yaml

from browser_support import (CHROMIUM_ARGS, CHROMIUM_IGNORE_DEFAULT_ARGS, MIN_FIGURE_PX_PER_INCH,
                             MIN_FIGURE_WIDTH_PX, SPANISH_HEADING, VIEWPORT, WIDGET_NPM_PACKAGES, WIDGET_VIEW_MIME,
                             PageReport, StaticServer, WidgetJS, ci_is_on, ensure_widget_js, find_chromium,
                             MAX_TABLE_ROWS, glued_sentence_failures, html_pages, is_external,
                             long_table_failures, meta_refresh_target, missing_font_sources,
                             overflow_failures, repr_failures, shrunk_figure_failures, small_figure_failures,
                             strip_suffix, theory_files, toc_files, visit_page)
from conftest import ROOT

pytestmark = pytest.mark.build

HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
WIDGET_JS_PREFIX = ROOT / "out" / "js"
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())


def _skip_or_fail(reason: str):
    if ci_is_on():
        pytest.fail(f"{reason} (CI=true: a missing browser is a failure; .ci/run installs Debian's chromium)",
                    pytrace=False)
    pytest.skip(reason)


def _problems(lines: list[str]) -> str:
    return "\n".join(f"  - {line}" for line in lines)


def _fail_if(bad: list[str], title: str) -> None:
    """One failure listing every page and problem (no assertion rewriting of the long list)."""
    if bad:
        pytest.fail(f"{title}:\n{_problems(bad)}", pytrace=False)


# ---------------------------------------------------------------------------------------------------------------
# Fixtures

@pytest.fixture(scope="session")
def html_root(book_build) -> Path:
    if not (HTML / "index.html").is_file():
        pytest.fail(f"the book build left no {HTML / 'index.html'} (see test_build.py and _build/build.log)",
                    pytrace=False)
    return HTML


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        _skip_or_fail("Chromium is not installed (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("Playwright for Python is not installed (pip install -r requirements.txt)")
    return path


@pytest.fixture(scope="session")
def widget_js():
    """Local copies of the widget manager's CDN scripts (npm install --prefix out/js, once; reused after)."""
    return ensure_widget_js(WIDGET_JS_PREFIX)


@pytest.fixture(scope="session")
def page_reports(chromium_path, widget_js, html_root) -> dict[str, PageReport]:
    """Open every page once (one browser, a fresh context and page per HTML file) and collect what the tests check."""
    from playwright.sync_api import sync_playwright

    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    pages = html_pages(html_root)
    reports: dict[str, PageReport] = {}
    with StaticServer(html_root) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS,
                                     ignore_default_args=CHROMIUM_IGNORE_DEFAULT_ARGS)
        try:
            for path in pages:
                rel = path.relative_to(html_root).as_posix()
                source = path.read_text(encoding="utf-8", errors="replace")
                name = rel[:-len(".html")]
                redirect = meta_refresh_target(source)
                if redirect:  # the math and widget checks apply to the target page
                    target = (path.parent / urldefrag(redirect)[0]).resolve()
                    source = target.read_text(encoding="utf-8", errors="replace") if target.is_file() else ""
                reports[name] = visit_page(browser, server.base_url, name, rel, widget_js, SCREENSHOTS,
                                           has_math='class="math' in source,
                                           has_widgets=WIDGET_VIEW_MIME in source, redirect_to=redirect)
        finally:
            browser.close()
    return reports


def _loaded(page_reports) -> list[PageReport]:
    return [r for r in page_reports.values() if not r.load_error]


# ---------------------------------------------------------------------------------------------------------------
# Browser checks

def test_every_page_opens_and_has_a_screenshot(page_reports):
    assert page_reports, "no HTML page found under _build/html"
    bad = [f"{r.name}: {r.load_error}" for r in page_reports.values() if r.load_error]
    bad += [f"{r.name}: no screenshot" for r in _loaded(page_reports)
            if not (r.screenshot and r.screenshot.is_file() and r.screenshot.stat().st_size > 0)]
    _fail_if(bad, "pages that did not open in Chromium")


def test_no_javascript_console_errors(page_reports):
    bad = [f"{r.name}: {e}" for r in _loaded(page_reports) for e in r.console_errors]
    _fail_if(bad, "console errors and uncaught exceptions (only the theme's 'Got invalid theme mode: . "
                  "Resetting to auto.' is expected)")


def test_pages_need_no_network(page_reports):
    """Offline: nothing but the local server and the two routed widget scripts may be requested."""
    bad = [f"{r.name}: {url}" for r in page_reports.values() for url in sorted(set(r.route.blocked))]
    _fail_if(bad, "requests to the network (blocked; the page must work offline)")


def test_every_declared_font_exists(page_reports, html_root, widget_js):
    """Each @font-face source resolves to a file: a wrong one downloads (and 404s) only when a glyph first needs it,
    so the console shows it on some runs and not others; the declarations are checked instead (the widget bundles'
    icon fonts once resolved next to the page, jupyter-widgets/ipywidgets#3658, book/_ext/x4_pagefix.py)."""
    bad = [f"{r.name}: {u}" for r in _loaded(page_reports)
           for u in missing_font_sources(r.font_sources, r.base_url, html_root, widget_js)]
    _fail_if(bad, "@font-face sources that point at no file")


def test_every_image_and_figure_loads(page_reports):
    bad = [f"{r.name}: image did not load: {img}" for r in _loaded(page_reports) for img in r.bad_images]
    bad += [f"{r.name}: figure without an image: {fig}" for r in _loaded(page_reports) for fig in r.empty_figures]
    _fail_if(bad, "images (naturalWidth 0) and figures without an image")


def test_math_renders_with_the_local_mathjax(page_reports):
    with_math = [r for r in _loaded(page_reports) if r.math_elements]
    bad = []
    for r in with_math:
        if r.mathjax_problem:
            bad.append(f"{r.name}: {r.mathjax_problem}")
        if r.mjx_containers < r.math_elements:
            bad.append(f"{r.name}: {r.mjx_containers} mjx-container for {r.math_elements} math elements")
        bad += [f"{r.name}: MathJax error: {e}" for e in r.mjx_errors]
        local = [s for s in r.mathjax_scripts if "_static/mathjax/" in s and not is_external(s)]
        if not local:
            bad.append(f"{r.name}: MathJax is not loaded from _static/mathjax/ (scripts: {r.mathjax_scripts})")
        bad += [f"{r.name}: MathJax from the network: {s}" for s in r.mathjax_scripts if is_external(s)]
    _fail_if(bad, "math")


def test_navigation_lists_every_chapter_and_lab(page_reports):
    """Every page named in _toc.yml is a link in the sidebar of index.html (after its redirect)."""
    home = page_reports.get("index")
    if home is None or home.load_error:
        pytest.fail(f"index.html did not open: {home.load_error if home else 'not in the build'}", pytrace=False)
    base = home.url[:-len("index.html")]
    links = set(home.sidebar_links)
    missing = [f for f in toc_files(TOC) if base + strip_suffix(f) + ".html" not in links]
    _fail_if(missing, f"pages of _toc.yml missing from the sidebar of index.html ({home.final_url})")


def test_solution_dropdowns_are_collapsed_and_open_on_click(page_reports):
    solutions = [(r.name, s) for r in _loaded(page_reports) for s in r.solutions]
    assert solutions, "no solution (sphinx-exercise, class dropdown) found on any page"
    bad = []
    for name, s in solutions:
        where = f"{name}: solution {s['id'] or s['index']}"
        if s["open"] or s["bodyVisible"]:
            bad.append(f"{where} is open before any click")
        if "click_error" in s:
            bad.append(f"{where}: click failed: {s['click_error']}")
        elif not (s.get("open_after_click") and s.get("visible_after_click")):
            bad.append(f"{where} does not open on click")
    _fail_if(bad, "solution dropdowns")


def test_theory_chapters_have_english_text_and_spanish_summary(page_reports):
    bad, checked = [], 0
    for file in theory_files(TOC):
        r = page_reports.get(strip_suffix(file))
        if r is None or r.load_error:
            bad.append(f"{file}: page missing or not opened")
            continue
        if r.placeholder:
            continue
        checked += 1
        sp = r.spanish
        if not sp.get("heading"):
            bad.append(f"{file}: no '{SPANISH_HEADING}' heading")
            continue
        if sp["spanishWords"] < 40 or sp["spanishMarkers"] < 5:
            bad.append(f"{file}: the Spanish summary is too short or not Spanish "
                       f"({sp['spanishWords']} words, {sp['spanishMarkers']} Spanish function words)")
        if sp["englishWords"] < 300 or sp["englishMarkers"] < 30:
            bad.append(f"{file}: too little English text outside the summary "
                       f"({sp['englishWords']} words, {sp['englishMarkers']} English function words)")
    assert checked or bad, "every theory chapter is a placeholder: nothing to check"
    _fail_if(bad, "theory chapters")


def test_widget_pages_show_their_static_fallback_figure(page_reports):
    """The static book cannot run the explorers' callbacks: a loaded figure or a table must follow each widget in its
    section (stack.md: a static fallback, table or figure, from the same x4lib call)."""
    widget_pages = [r for r in _loaded(page_reports) if r.widget_views]
    if not widget_pages:
        pytest.skip("no page has ipywidgets output")
    bad = []
    for r in widget_pages:
        for fb in r.widget_fallbacks:
            if not fb["found"]:
                bad.append(f"{r.name}: no figure or table after the widget {fb['where']} in its section")
            elif not fb["loaded"]:
                bad.append(f"{r.name}: the fallback image {fb['src']} after {fb['where']} did not load")
    _fail_if(bad, "static fallbacks of the widgets")


def test_widgets_render_their_static_state(page_reports, widget_js):
    widget_pages = [r for r in _loaded(page_reports) if r.widget_views]
    if not widget_pages:
        pytest.skip("no page has ipywidgets output")
    if not widget_js.available:
        pytest.skip(f"widget rendering not checked: {widget_js.reason}")
    bad = []
    for r in widget_pages:
        routed = [u for u in r.route.served_locally]
        if not routed:
            bad.append(f"{r.name}: the page never asked for the widget manager's scripts")
        for v in r.widget_views_rendered:
            if v["error"]:
                bad.append(f"{r.name}: 'Error displaying widget' at {v['where']}")
            elif not v["rendered"] or v["height"] <= 0:
                bad.append(f"{r.name}: the widget at {v['where']} rendered nothing")
    versions = ", ".join(f"{p}@{v}" for p, v in WIDGET_NPM_PACKAGES.items())
    _fail_if(bad, f"widgets (manager served locally: {versions})")


# ---------------------------------------------------------------------------------------------------------------
# Readability at 1280 px (issue 10 section 5): collected in the same visit, after the solutions were opened

def test_tables_and_outputs_fit_the_column_or_scroll_in_their_own_box(page_reports):
    bad = [line for r in _loaded(page_reports) for line in overflow_failures(r)]
    _fail_if(bad, f"tables and cell outputs wider than the text column at {VIEWPORT['width']} px that do not scroll "
                  "inside their own box (x4lib.book.tables.table wraps long text and scrolls in its box)")


def test_long_tables_are_collapsed(page_reports):
    bad = [line for r in _loaded(page_reports) for line in long_table_failures(r, MAX_TABLE_ROWS)]
    _fail_if(bad, f"tables of more than {MAX_TABLE_ROWS} rows shown open (show a compact view, e.g. a pivot, and the "
                  "full table collapsed: x4lib.book.tables.with_details)")


def test_no_python_repr_in_the_rendered_text(page_reports):
    bad = [line for r in _loaded(page_reports) for line in repr_failures(r)]
    _fail_if(bad, "Python reprs in the pages' text (use x4lib.book.tables.table for tables, fmt_mapping/fmt_list/"
                  "fmt_value for prose)")


def test_glued_text_is_a_value_not_a_sentence(page_reports):
    bad = [line for r in _loaded(page_reports) for line in glued_sentence_failures(r)]
    _fail_if(bad, "whole sentences glued as text (they render in bold): glue the values, write the sentence")


def test_figures_are_at_least_600_px_wide(page_reports):
    bad = [line for r in _loaded(page_reports) for line in small_figure_failures(r, MIN_FIGURE_WIDTH_PX)]
    _fail_if(bad, f"figures narrower than {MIN_FIGURE_WIDTH_PX} px at a {VIEWPORT['width']} px viewport")


def test_figure_text_is_drawn_for_the_width_it_is_shown_at(page_reports, html_root):
    bad = [line for r in _loaded(page_reports) for line in shrunk_figure_failures(r, html_root, MIN_FIGURE_PX_PER_INCH)]
    _fail_if(bad, "figures scaled down so far that their labels and legends are too small to read (make the "
                  "figure narrower in inches, or split the panels)")

# ---------------------------------------------------------------------------------------------------------------
# Links to local files (no browser)

class _Refs(html.parser.HTMLParser):
    WANTED = {("a", "href"), ("img", "src"), ("script", "src"), ("link", "href"), ("source", "src")}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if (tag, key) in self.WANTED and value is not None:
                self.refs.append((f"<{tag} {key}>", value.strip()))


def test_no_link_to_a_local_file_missing_from_the_build(book_build):
    """Every relative <a href>, <img src> (and <script src>, <link href>) resolves to a file under _build/html."""
    root = HTML
    if not (root / "index.html").is_file():
        pytest.fail(f"the book build left no {root / 'index.html'}", pytrace=False)
    bad = []
    for page in html_pages(root):
        parser = _Refs()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        for kind, ref in parser.refs:
            if not ref or ref.startswith("#") or is_external(ref):
                continue
            parts = urlsplit(urldefrag(ref)[0])
            if parts.scheme or parts.netloc:
                bad.append(f"{page.relative_to(root)}: {kind} {ref} (not a relative link)")
                continue
            if not parts.path:
                continue  # "?query" only: the page itself
            path = unquote(parts.path)
            target = (root / path.lstrip("/")) if path.startswith("/") else (page.parent / path)
            target = target.resolve()
            inside = root.resolve() in target.parents or target == root.resolve()
            exists = target.is_file() or (target.is_dir() and (target / "index.html").is_file())
            if not inside or not exists:
                bad.append(f"{page.relative_to(root)}: {kind} {ref}"
                           + ("" if inside else " (outside _build/html)"))
    _fail_if(sorted(set(bad)), "links to local files that are not in the build")


# ---------------------------------------------------------------------------------------------------------------
# The readability checks themselves, on small synthetic pages (Chromium, no book build)

_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="x4-tables.css">
<style>body {{ margin: 0; font: 16px sans-serif; }} main {{ margin-left: 200px; }}
article.bd-article {{ width: 700px; padding: 0 16px; }} img {{ max-width: 100%; }}</style></head>
<body><main><article class="bd-article">
{body}
</article></main></body></html>
"""


def _row(n: int, width: str = "") -> str:
    return "".join(f"<td{width}>cell {i}</td>" for i in range(n))


_BAD = """
<section id="spill"><h2>Spilling table</h2>
<div class="cell_output"><div class="output text_html"><table style="width: 1200px">
<thead><tr><th>device</th><th>peak (TFLOP/s)</th></tr></thead><tbody><tr><td>a</td><td>1</td></tr></tbody>
</table></div></div></section>
<section id="cut"><h2>Cut table</h2>
<div style="overflow: hidden"><table style="width: 1100px"><tr>""" + _row(3) + """</tr></table></div></section>
<section id="widebox"><h2>Scroll box too wide</h2>
<div style="overflow-x: auto; width: 1000px"><table style="width: 1300px"><tr>""" + _row(3) + """</tr></table></div>
</section>
<section id="reprs"><h2>Reprs</h2>
<p>The per-clock rates are {'fp64': 16, 'fp32': 32} FLOP/cycle.</p>
<p>After smartquotes, glued: <span class="pasted-text">{‘fp64’: 16}</span> FLOP/cycle.</p>
<div class="cell_output"><div class="output text_plain"><pre>0    1.0
Name: x, dtype: float64</pre></div></div>
<table><tr><td>NaN</td><td>&lt;built-in function len&gt;</td></tr></table>
<table class="dataframe"><thead><tr><th></th><th>device</th></tr></thead>
<tbody><tr><th>0</th><td>a</td></tr><tr><th>1</th><td>b</td></tr><tr><th>2</th><td>c</td></tr></tbody></table>
<p>&lt;x4lib.book.tables.Table object at 0x7f3a2b1c&gt;</p>
<p>Sizes: <span class="pasted-text">As a check that the harness wastes no time, a loop ran at 80 % of the
peak.</span></p>
</section>
<section id="long"><h2>Long table</h2><table><thead><tr><th>run</th></tr></thead><tbody>""" + \
    "".join(f"<tr><td>{i}</td></tr>" for i in range(30)) + """</tbody></table></section>
<section id="small"><h2>Small figure</h2><figure><img src="small.png" alt="small"></figure></section>
<section id="shrunk"><h2>Shrunk figure</h2>
<div class="cell_output"><img src="wide.png" alt="two panels"></div></section>
"""


def _good_body() -> str:
    from x4lib.book.tables import Col, fmt_mapping, pivot, table, with_details

    wide = table([{f"c{i}": 1000.0 * i + 0.5 for i in range(14)} for _ in range(3)],
                 {f"c{i}": Col(f"Quantity {i}", unit="GB/s", fmt="{:,.1f}") for i in range(14)})
    long = [{"collective": c, "size_B": s, "busbw_gb_s": 1.5, "repeat": r} for c in ("all_reduce", "all_gather")
            for s in (2**20, 2**27, 2**30) for r in range(5)]
    compact = pivot(long, index=("collective", Col("Collective")), columns="size_B",
                    values={"busbw_gb_s": Col("busbw", unit="GB/s", fmt="{:.1f}")}, agg="median")
    full = table(long, {"collective": "Collective", "size_B": Col("Size", unit="B"),
                        "busbw_gb_s": Col("busbw", unit="GB/s", fmt="{:.1f}")})
    notes = table([{"k": "peak", "note": "A long note that has to wrap inside its column. " * 6}],
                  {"k": "Quantity", "note": Col("Note", wrap=True)})
    return f"""
<section id="tables"><h2>Tables from x4lib.book.tables</h2>
<div class="cell_output"><div class="output text_html">{wide.to_html()}</div></div>
<div class="cell_output"><div class="output text_html">{with_details(compact, full).to_html()}</div></div>
<div class="cell_output"><div class="output text_html">{notes.to_html()}</div></div>
<table><tr><td>a prose table that fits</td><td>1</td></tr></table>
</section>
<section id="code"><h2>Code is not prose</h2>
<div class="cell docutils container"><div class="cell_input"><pre>x = {{'fp64': 16}}</pre></div>
<div class="cell_output"><div class="output stream"><pre>def f():
    return {{'fp64': 16}}</pre></div></div></div>
<div class="highlight-python notranslate"><div class="highlight"><pre>PEAKS = {{'fp64': 16}}</pre></div></div>
<p>The per-clock rates are {fmt_mapping({"fp64": 16, "fp32": 32}, unit="FLOP/cycle")}; the best run reached
<span class="pasted-text">989</span> TFLOP/s.</p>
</section>
<section id="figures"><h2>Figures</h2>
<div class="cell_output"><img src="good.png" alt="one panel"></div>
<details><summary>More</summary><div class="cell_output"><img src="good.png" alt="hidden"></div></details>
</section>
"""


@pytest.fixture(scope="module")
def synthetic_reports(chromium_path, tmp_path_factory) -> tuple[dict[str, PageReport], Path]:
    """A bad and a good synthetic page, each opened once like a book page (no build needed)."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    root = tmp_path_factory.mktemp("synthetic_html")
    shutil.copy(ROOT / "book" / "_ext" / "static" / "x4-tables.css", root / "x4-tables.css")
    for name, size in {"small.png": (400, 300), "wide.png": (1200, 400), "good.png": (700, 430)}.items():
        Image.new("RGB", size, "white").save(root / name, dpi=(100, 100))
    (root / "bad.html").write_text(_PAGE.format(title="bad", body=_BAD), encoding="utf-8")
    (root / "good.html").write_text(_PAGE.format(title="good", body=_good_body()), encoding="utf-8")
    reports = {}
    with StaticServer(root) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS,
                                     ignore_default_args=CHROMIUM_IGNORE_DEFAULT_ARGS)
        try:
            for name in ("bad", "good"):
                reports[name] = visit_page(browser, server.base_url, f"synthetic/{name}", f"{name}.html",
                                           WidgetJS(reason="synthetic page"), root / "screenshots",
                                           has_math=False, has_widgets=False)
        finally:
            browser.close()
    for r in reports.values():
        assert not r.load_error, r.load_error
    return reports, root


def _joined(lines: list[str]) -> str:
    return "\n".join(lines)


def test_readability_checks_flag_an_overflowing_or_cut_table(synthetic_reports):
    reports, _ = synthetic_reports
    bad = overflow_failures(reports["bad"])
    assert len(bad) == 3, _joined(bad)
    assert all(line.startswith("synthetic/bad: table ") for line in bad), _joined(bad)
    for section, why in (("Spilling table", "no box around it scrolls"), ("Cut table", "cut by"),
                         ("Scroll box too wide", "which is itself 1000 px wide")):
        assert any(f'section "{section}"' in line and why in line for line in bad), (section, _joined(bad))
    assert "columns: device | peak (TFLOP/s)" in _joined(bad)


def test_readability_checks_flag_a_long_open_table(synthetic_reports):
    reports, _ = synthetic_reports
    bad = long_table_failures(reports["bad"])
    assert bad == ['synthetic/bad: table 6 of the page (columns: run) in section "Long table" shows 30 rows '
                   f'(more than {MAX_TABLE_ROWS})'], _joined(bad)


def test_readability_checks_flag_python_reprs_and_glued_sentences(synthetic_reports):
    reports, _ = synthetic_reports
    bad = repr_failures(reports["bad"])
    text = _joined(bad)
    for what in ("a Python dict", "a pandas Series repr", "a missing value shown as NaN", "a function or class repr",
                 "an object repr", "a pandas index column"):
        assert any(line.startswith(f"synthetic/bad: {what} in ") and 'section "Reprs"' in line for line in bad), \
            (what, text)
    assert "{'fp64': 16" in text and "{‘fp64’: 16}" in text and "<p>" in text and "<td>" in text
    assert sum(line.startswith("synthetic/bad: a Python dict") for line in bad) == 2, text
    glued = glued_sentence_failures(reports["bad"])
    assert len(glued) == 1 and "As a check that the harness" in glued[0] and 'section "Reprs"' in glued[0]


def test_readability_checks_flag_small_and_shrunk_figures(synthetic_reports):
    reports, root = synthetic_reports
    small = small_figure_failures(reports["bad"])
    assert len(small) == 1 and "image small.png" in small[0] and "400 px wide" in small[0], _joined(small)
    shrunk = shrunk_figure_failures(reports["bad"], root)
    assert len(shrunk) == 1 and "image wide.png" in shrunk[0] and "12.0-inch-wide figure" in shrunk[0], \
        _joined(shrunk)
    assert 'section "Shrunk figure"' in shrunk[0]


def test_readability_checks_pass_a_good_page(synthetic_reports):
    reports, root = synthetic_reports
    good = reports["good"]
    assert good.column_width == pytest.approx(700, abs=1)
    problems = (overflow_failures(good) + long_table_failures(good) + repr_failures(good)
                + glued_sentence_failures(good) + small_figure_failures(good) + shrunk_figure_failures(good, root))
    assert not problems, _joined(problems)
    # the checks looked at something: the x4lib tables (one wider than the column, in its scroll box), the figures
    assert len(good.figures) == 2 and {f["visible"] for f in good.figures} == {True, False}
    assert "All 30 rows" in (reports["good"].screenshot.parent.parent / "good.html").read_text()
