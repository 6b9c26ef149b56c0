"""The built book in a real browser, offline: every page of _build/html opened once in headless Chromium.

Reuses the one strict build of the session (the ``book_build`` fixture); serves _build/html from a local HTTP
server; routes every other request: the widget manager and require.js, which the widget pages take from CDNs,
come from local npm copies under out/js (git-ignored), and anything else is aborted and reported. The pages pin
cdnjs's minified require.js 2.3.4 with an ``integrity`` hash that no npm file matches, so for that one <script>
tag the routed HTML drops the attribute (npm's requirejs 2.3.4 is the same release, unminified); nothing else of
the pages is changed.

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

from browser_support import (CHROMIUM_ARGS, SPANISH_HEADING, WIDGET_NPM_PACKAGES, WIDGET_VIEW_MIME, PageReport,
                             StaticServer, ci_is_on, ensure_widget_js, find_chromium, html_pages, is_external,
                             meta_refresh_target, strip_suffix, theory_files, toc_files, visit_page)
from conftest import ROOT

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
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
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
    """The static book cannot run the explorers' callbacks: a loaded figure must follow each widget (stack.md)."""
    widget_pages = [r for r in _loaded(page_reports) if r.widget_views]
    if not widget_pages:
        pytest.skip("no page has ipywidgets output")
    bad = []
    for r in widget_pages:
        for fb in r.widget_fallbacks:
            if not fb["found"]:
                bad.append(f"{r.name}: no image after the widget {fb['where']} in its section")
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

