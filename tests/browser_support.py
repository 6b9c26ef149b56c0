"""Helpers for tests/test_browser.py: a local HTTP server for _build/html, offline request routing, the
local copies of the widget manager's CDN scripts, and one visit of each page in headless Chromium, which also
collects what makes a page readable at 1280 px (table widths and lengths, Python reprs, glued sentences, figure
sizes); the ``*_failures`` functions turn that into one line per element.

Nothing here reaches the network. Every request that is not to the local server is either answered from a
local npm copy (require.js and @jupyter-widgets/html-manager, which the widget pages load from CDNs) or aborted
and recorded, so a page that needs the network shows up as a failure instead of a slow timeout.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

# ipywidgets 8.1.9 goes with @jupyter-widgets/html-manager 1.0.15 (base ^6.0.12, controls ^5.0.13, like the
# jupyterlab_widgets 3.0.17 it ships with); ipywidgets itself declares the range ^1.0.1. The pages (myst-nb 1.4.0)
# ask jsDelivr for html-manager@1.0.6: any html-manager version in a URL is answered from this one copy.
# requirejs: the version in the pages' cdnjs URL (2.3.4).
WIDGET_NPM_PACKAGES = {"@jupyter-widgets/html-manager": "1.0.15", "requirejs": "2.3.4"}

# The one console error allowed on every page (pydata/book theme, no stored light/dark preference): stack.md.
HARMLESS_CONSOLE_ERRORS = frozenset({"Got invalid theme mode: . Resetting to auto."})

WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
PLACEHOLDER_TITLE = "In preparation"
SPANISH_HEADING = "Resumen en español"

# Playwright starts headless Chromium with --hide-scrollbars: a table that scrolls in its box then looks cut in
# the screenshots. Show scrollbars, as a desktop browser does (the page's own scrollbar narrows the layout ~15 px).
CHROMIUM_IGNORE_DEFAULT_ARGS = ["--hide-scrollbars"]

# Readability at the 1280 px viewport (issue 10 section 5): figures at least this wide as displayed, and drawn for
# that size: at least this many CSS px per inch of the figure, so a 10 pt label of matplotlib shows >= 11 px.
VIEWPORT = {"width": 1280, "height": 900}
MIN_FIGURE_WIDTH_PX = 600
MIN_FIGURE_PX_PER_INCH = 80
GLUED_SENTENCE_WORDS = 8  # a glued text of more words is a sentence (myst-nb shows glued text in bold)
MAX_TABLE_ROWS = 20  # a longer table shown open is a dump: a compact view, the full table in a collapsed <details>

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

# CDN URLs of the widget manager and require.js, whatever version or host the page names.
HTML_MANAGER_URL = re.compile(r"^https?://[^?#]*/@jupyter-widgets/html-manager@[^/]+/dist/(?P<file>[^?#/]+)")
REQUIREJS_URL = re.compile(r"^https?://[^?#]*/require(?:\.min)?\.js(?:[?#].*)?$")


def ci_is_on() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


# ---------------------------------------------------------------------------------------------------------------
# Local copies of the widget manager's CDN scripts (npm, into a git-ignored folder)

@dataclass
class WidgetJS:
    html_manager_dist: Path | None = None
    requirejs: Path | None = None
    reason: str = ""  # why the local copies are missing (then the widget check is skipped)

    @property
    def available(self) -> bool:
        return self.html_manager_dist is not None and self.requirejs is not None


def _installed_version(prefix: Path, package: str) -> str | None:
    manifest = prefix / "node_modules" / package / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def ensure_widget_js(prefix: Path, timeout_s: int = 300) -> WidgetJS:
    """Install the pinned npm packages under ``prefix`` unless they are already there (``npm install --prefix``)."""
    missing = [f"{p}@{v}" for p, v in WIDGET_NPM_PACKAGES.items() if _installed_version(prefix, p) != v]
    if missing:
        npm = shutil.which("npm")
        if npm is None:
            return WidgetJS(reason="npm is not installed, so the widget manager's scripts "
                                   f"({', '.join(missing)}) cannot be served locally")
        prefix.mkdir(parents=True, exist_ok=True)
        specs = [f"{p}@{v}" for p, v in WIDGET_NPM_PACKAGES.items()]
        try:
            r = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-save", "--no-audit", "--no-fund",
                                "--ignore-scripts", "--loglevel=error", *specs],
                               capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return WidgetJS(reason=f"npm install {' '.join(specs)} took more than {timeout_s} s")
        if r.returncode != 0:
            return WidgetJS(reason=f"npm install {' '.join(specs)} failed (exit {r.returncode}): "
                                   f"{(r.stderr or r.stdout)[-1500:]}")
        still = [p for p, v in WIDGET_NPM_PACKAGES.items() if _installed_version(prefix, p) != v]
        if still:
            return WidgetJS(reason=f"npm install ran but {still} are not at the pinned versions under {prefix}")
    dist = prefix / "node_modules" / "@jupyter-widgets" / "html-manager" / "dist"
    req = prefix / "node_modules" / "requirejs" / "require.js"
    if not (dist / "embed-amd.js").is_file() or not req.is_file():
        return WidgetJS(reason=f"{dist / 'embed-amd.js'} or {req} is missing after npm install")
    return WidgetJS(html_manager_dist=dist, requirejs=req)


def sri_matches(integrity: str, body: bytes) -> bool:
    """True when any hash of a Subresource Integrity attribute matches ``body``."""
    for token in integrity.split():
        algo, _, digest = token.partition("-")
        if algo in {"sha256", "sha384", "sha512"}:
            if base64.b64encode(hashlib.new(algo, body).digest()).decode() == digest.split("?")[0]:
                return True
    return False


# ---------------------------------------------------------------------------------------------------------------
# Local HTTP server

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass


class StaticServer:
    """``http.server`` in a thread on 127.0.0.1, on a free port, serving one folder."""

    def __init__(self, root: Path):
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="book-http", daemon=True)

    def __enter__(self) -> "StaticServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


# ---------------------------------------------------------------------------------------------------------------
# Offline routing

@dataclass
class RouteLog:
    served_locally: list[str] = field(default_factory=list)   # CDN URLs answered from the npm copies
    blocked: list[str] = field(default_factory=list)          # other requests off the local server (aborted)
    blocked_widget_js: list[str] = field(default_factory=list)  # widget CDN scripts aborted (no npm copies)
    integrity_removed: list[str] = field(default_factory=list)  # SRI attributes dropped for a local substitute


def local_substitute(url: str, js: WidgetJS) -> Path | None:
    """The local file that answers a CDN URL of the widget manager or require.js, or None."""
    if not js.available:
        return None
    m = HTML_MANAGER_URL.match(url)
    if m:
        path = js.html_manager_dist / m.group("file")
        return path if path.is_file() else None
    if REQUIREJS_URL.match(url):
        return js.requirejs
    return None


def missing_font_sources(sources: list[str], base_url: str, html_root: Path, js: WidgetJS) -> list[str]:
    """The @font-face sources that point at nothing a reader's browser could load: a file of the book missing from
    the build, or a CDN file that is not in the widget manager's package (when its local copy is there to look in).
    Other CDN fonts are not judged here (test_pages_need_no_network reports any that is requested)."""
    missing = []
    for url in sources:
        bare = urldefrag(url)[0].split("?", 1)[0]
        if bare.startswith(base_url):
            if not (html_root / unquote(bare[len(base_url):])).is_file():
                missing.append(url)
        elif HTML_MANAGER_URL.match(bare) and js.available and local_substitute(bare, js) is None:
            missing.append(url)
    return missing


def is_widget_cdn_url(url: str) -> bool:
    return bool(HTML_MANAGER_URL.match(url) or REQUIREJS_URL.match(url))


_SCRIPT_TAG = re.compile(r"<script\b[^>]*>", re.I)
_ATTR = re.compile(r"""\s([a-zA-Z_:][-a-zA-Z0-9_:.]*)\s*=\s*("[^"]*"|'[^']*')""")


def strip_integrity_of_substitutes(html: str, js: WidgetJS, log: RouteLog) -> str:
    """Drop the ``integrity`` attribute of <script> tags whose CDN file we replace by a local copy that does not
    hash the same (cdnjs's require.min.js is a minified build that no npm package ships). Other tags are kept."""
    def fix(m: re.Match) -> str:
        tag = m.group(0)
        attrs = {k.lower(): v[1:-1] for k, v in _ATTR.findall(tag)}
        src, integrity = attrs.get("src"), attrs.get("integrity")
        if not src or not integrity:
            return tag
        local = local_substitute(src, js)
        if local is None or sri_matches(integrity, local.read_bytes()):
            return tag
        log.integrity_removed.append(src)
        return re.sub(r"""\sintegrity\s*=\s*("[^"]*"|'[^']*')""", "", tag)
    return _SCRIPT_TAG.sub(fix, html)


def install_routes(context, base_url: str, js: WidgetJS, log: RouteLog) -> None:
    """Route every request of a browser context: local server as is, widget CDN files from disk, the rest aborted."""
    content_types = {".js": "application/javascript", ".css": "text/css", ".woff2": "font/woff2",
                     ".woff": "font/woff", ".ttf": "font/ttf", ".eot": "application/vnd.ms-fontobject",
                     ".svg": "image/svg+xml", ".map": "application/json"}

    def external(route):
        url = route.request.url
        local = local_substitute(url, js)
        if local is not None:
            log.served_locally.append(url)
            route.fulfill(path=str(local), status=200,
                          headers={"Content-Type": content_types.get(local.suffix, "application/octet-stream"),
                                   "Access-Control-Allow-Origin": "*"})
            return
        (log.blocked_widget_js if is_widget_cdn_url(url) else log.blocked).append(url)
        route.abort("internetdisconnected")

    def local_document(route):
        if route.request.resource_type != "document":
            route.continue_()
            return
        response = route.fetch()
        body = response.text()
        fixed = strip_integrity_of_substitutes(body, js, log)
        if fixed == body:
            route.fulfill(response=response)
        else:
            route.fulfill(response=response, body=fixed)

    context.route(lambda url: not url.startswith(base_url), external)
    if js.available:
        context.route(re.compile("^" + re.escape(base_url) + r"[^?#]*\.html(?:[?#].*)?$"), local_document)


# ---------------------------------------------------------------------------------------------------------------
# One visit of one page

@dataclass
class PageReport:
    name: str                      # path under _build/html without ".html", e.g. "book/00-motivation"
    url: str = ""
    base_url: str = ""             # the local server's root, e.g. "http://127.0.0.1:8000/"
    final_url: str = ""
    load_error: str = ""
    console_errors: list[str] = field(default_factory=list)   # unexpected ones only
    allowed_console_errors: list[str] = field(default_factory=list)
    bad_images: list[str] = field(default_factory=list)
    empty_figures: list[str] = field(default_factory=list)
    math_elements: int = 0
    mjx_containers: int = 0
    mjx_errors: list[str] = field(default_factory=list)
    mathjax_scripts: list[str] = field(default_factory=list)
    font_sources: list[str] = field(default_factory=list)  # every @font-face url() the page's stylesheets declare
    mathjax_problem: str = ""
    sidebar_links: list[str] = field(default_factory=list)    # absolute URLs without fragment
    solutions: list[dict] = field(default_factory=list)
    placeholder: bool = False
    spanish: dict = field(default_factory=dict)
    widget_views: int = 0
    widget_views_rendered: list[dict] = field(default_factory=list)
    widget_fallbacks: list[dict] = field(default_factory=list)
    column_width: float = 0.0                                  # the text column (article content box), CSS px
    overflows: list[dict] = field(default_factory=list)       # {where, reason}: wider than the column, not scrolled
    long_tables: list[dict] = field(default_factory=list)     # {where, rows}: more rows than MAX_TABLE_ROWS, open
    reprs: list[dict] = field(default_factory=list)           # {where, what, snippet}: Python reprs in the text
    glued_sentences: list[dict] = field(default_factory=list)  # {where, words, text}: a sentence glued as text
    figures: list[dict] = field(default_factory=list)         # {where, path, width, naturalWidth, visible}
    screenshot: Path | None = None
    route: RouteLog = field(default_factory=RouteLog)


# Collected in the page after load: images, figures, math, sidebar, placeholder, Spanish summary, widgets.
_COLLECT_JS = r"""
async ({placeholderTitle, spanishHeading, widgetMime}) => {
  const text = (el) => (el ? el.innerText || "" : "");
  // Images: give lazy ones a chance, then wait (bounded) for every image to finish.
  const imgs = Array.from(document.images);
  for (const img of imgs) { if (img.loading === "lazy") img.loading = "eager"; }
  await Promise.race([
    Promise.all(imgs.map((img) => img.complete ? null :
        new Promise((ok) => { img.addEventListener("load", ok); img.addEventListener("error", ok); }))),
    new Promise((ok) => setTimeout(ok, 8000)),
  ]);
  const describe = (el) => el.id ? `#${el.id}` : (el.closest("[id]") ? `in #${el.closest("[id]").id}` : el.tagName);
  const badImages = imgs.filter((i) => !(i.complete && i.naturalWidth > 0))
                        .map((i) => `${i.getAttribute("src")} (${describe(i)})`);
  // A figure must show a picture (or a table); the copy button's icon inside a text output does not count.
  const visual = (f) => Array.from(f.querySelectorAll("img, svg, canvas, object, embed, video, table, iframe"))
      .some((v) => !v.closest("button, .copybtn, .headerlink"));
  const emptyFigures = Array.from(document.querySelectorAll("article figure, main figure")).filter((f) => !visual(f))
      .map((f) => `${describe(f)}: ${text(f).trim().slice(0, 120)}`);

  const article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
  const mathEls = article.querySelectorAll(".math");
  const mjx = article.querySelectorAll("mjx-container");
  const mjxErrors = Array.from(document.querySelectorAll("mjx-merror")).map((e) =>
      e.getAttribute("data-mjx-error") || text(e));
  const mathjaxScripts = Array.from(document.scripts).map((s) => s.getAttribute("src") || "")
      .filter((s) => /mathjax|tex-(chtml|svg|mml)/i.test(s));

  const sidebar = document.querySelector(".bd-sidebar-primary") || document.querySelector("nav.bd-docs-nav");
  const sidebarLinks = sidebar ? Array.from(sidebar.querySelectorAll("a[href]")).map((a) => a.href.split("#")[0]) : [];

  const placeholder = Array.from(article.querySelectorAll(".admonition-title"))
      .some((t) => text(t).trim() === placeholderTitle);

  // Spanish summary: the section whose heading is the Spanish title, and the text outside it.
  let spanish = {heading: false, spanishWords: 0, englishWords: 0, spanishMarkers: 0, englishMarkers: 0};
  const heads = Array.from(article.querySelectorAll("h1, h2, h3"));
  const head = heads.find((h) => text(h).replace(/#$/, "").replace(/^[\d.\s]+/, "").trim().startsWith(spanishHeading));
  const words = (s) => (s.toLowerCase().match(/[\p{L}]+/gu) || []);
  const count = (ws, vocab) => ws.filter((w) => vocab.has(w)).length;
  const es = new Set(["el", "la", "los", "las", "de", "del", "que", "en", "y", "un", "una", "es", "con", "para",
                      "por", "se"]);
  const en = new Set(["the", "of", "and", "to", "is", "in", "that", "with", "for", "on", "are", "it", "this"]);
  if (head) {
    const section = head.closest("section") || head.parentElement;
    const spanishText = text(section);
    const clone = article.cloneNode(true);
    const id = section.id;
    if (id) { const s = clone.querySelector(`[id="${CSS.escape(id)}"]`); if (s) s.remove(); }
    const englishText = clone.innerText || clone.textContent || "";
    const sw = words(spanishText), ew = words(englishText);
    spanish = {heading: true, spanishWords: sw.length, englishWords: ew.length,
               spanishMarkers: count(sw, es), englishMarkers: count(ew, en)};
  } else {
    const ew = words(text(article));
    spanish.englishWords = ew.length; spanish.englishMarkers = count(ew, en);
  }

  // Widgets: each embedded view script, whether the manager rendered something next to it, and the first
  // image or table after it in the same section (the static fallback).
  const views = Array.from(document.querySelectorAll(`script[type="${widgetMime}"]`));
  const rendered = views.map((s) => {
    const box = s.parentElement;
    const w = box ? box.querySelector(".jupyter-widgets, .widget-box, .lm-Widget") : null;
    const r = w ? w.getBoundingClientRect() : null;
    return {where: describe(box || s), rendered: !!w, height: r ? r.height : 0,
            error: /Error displaying widget/i.test(text(box))};
  });
  // stack.md: the static fallback is a figure or a table from the same x4lib call, after the widget's own output
  const visuals = Array.from(document.querySelectorAll("img, table"));
  const fallbacks = views.map((s) => {
    const section = s.closest("section");
    const box = s.parentElement;
    const next = visuals.find((i) => (s.compareDocumentPosition(i) & Node.DOCUMENT_POSITION_FOLLOWING) &&
                                     (!section || section.contains(i)) && !(box && box.contains(i)));
    const isTable = !!next && next.tagName === "TABLE";
    return {where: describe(s.parentElement || s), found: !!next,
            src: next ? (isTable ? "a table" : next.getAttribute("src")) : null,
            loaded: !!next && (isTable ? next.rows.length > 1 : next.complete && next.naturalWidth > 0),
            inFigure: !!next && !!next.closest("figure")};
  });

  // Every @font-face source the stylesheets declare (the <style> elements the widget bundles inject included),
  // resolved against the sheet that declares it. A font downloads only when a glyph first needs it, so a source
  // that points nowhere shows in the console or not depending on timing; the declaration itself is checked.
  const fontSources = [];
  const walk = (rules, base) => {
    for (const r of rules) {
      if (r.type === CSSRule.FONT_FACE_RULE) {
        for (const m of (r.style.getPropertyValue("src") || "").matchAll(/url\(\s*["']?([^"')]+?)["']?\s*\)/g)) {
          if (!m[1].startsWith("data:")) fontSources.push(new URL(m[1], base).href);
        }
      } else if (r.styleSheet) {
        try { walk(r.styleSheet.cssRules, r.styleSheet.href || base); } catch (e) { /* cross-origin import */ }
      } else if (r.cssRules) {
        walk(r.cssRules, base);
      }
    }
  };
  for (const sheet of Array.from(document.styleSheets)) {
    let rules;
    try { rules = sheet.cssRules; } catch (e) { continue; }  // a cross-origin sheet cannot be read
    walk(rules, sheet.href || document.baseURI);
  }

  return {badImages, emptyFigures, mathEls: mathEls.length, mjx: mjx.length, mjxErrors, mathjaxScripts,
          sidebarLinks, placeholder, spanish, widgetViews: views.length, rendered, fallbacks,
          fontSources: Array.from(new Set(fontSources))};
}
"""

# State of every solution dropdown: sphinx-togglebutton (div.solution.dropdown.toggle[.toggle-hidden]) or <details>.
_SOLUTIONS_JS = r"""
() => Array.from(document.querySelectorAll(".solution")).map((el, i) => {
  const details = el.tagName === "DETAILS" ? el : el.closest("details");
  const bodyEls = Array.from(el.children).filter((c) => !c.matches(".admonition-title, summary"));
  const visible = bodyEls.some((c) => { const r = c.getBoundingClientRect();
                                        return r.height > 0 && getComputedStyle(c).visibility !== "hidden"; });
  const open = details ? details.open : !el.classList.contains("toggle-hidden");
  return {index: i, id: el.id || "", details: !!details, open, bodyVisible: visible,
          hasButton: !!el.querySelector(".toggle-button, summary")};
})
"""


# Readability at 1280 px, collected after the solutions were opened (same visit): tables and outputs within the
# text column or scrolling in their own box, no Python repr in the text, no glued sentence, figure widths.
_READABILITY_JS = r"""
({minSentenceWords, maxTableRows}) => {
  const article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
  const acs = getComputedStyle(article);
  const ar = article.getBoundingClientRect();
  const colLeft = ar.left + parseFloat(acs.borderLeftWidth) + parseFloat(acs.paddingLeft);
  const colRight = ar.right - parseFloat(acs.borderRightWidth) - parseFloat(acs.paddingRight);
  const colWidth = colRight - colLeft;
  const TOL = 1;  // px of rounding
  const px = (x) => `${Math.round(x)} px`;
  const clip = (s, n) => {
    s = (s || "").replace(/\s+/g, " ").trim();
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  };
  // Laid out and not hidden (a closed <details> keeps its content's boxes, but checkVisibility() says hidden).
  const shown = (el) => (el.checkVisibility ? el.checkVisibility() : true) && el.getClientRects().length > 0 &&
                        el.getBoundingClientRect().width > 0;
  const words = (el) => clip(el.innerText || el.textContent, 50);
  const section = (el) => {
    const sec = el.closest("section");
    const h = sec ? sec.querySelector("h1, h2, h3, h4, h5, h6") : null;
    return h ? clip(h.textContent.replace(/[#¶]\s*$/, ""), 60) : "(page top)";
  };
  const tables = Array.from(article.querySelectorAll("table"));
  const what = (el) => {
    if (el.tagName === "TABLE") {
      const cap = el.querySelector("caption");
      const heads = Array.from(el.querySelectorAll("thead th")).map((t) => clip(t.textContent, 24)).filter(Boolean);
      return `table ${tables.indexOf(el) + 1} of the page` + (cap ? ` "${clip(cap.textContent, 50)}"` : "") +
             (heads.length ? ` (columns: ${heads.slice(0, 4).join(" | ")}${heads.length > 4 ? " | …" : ""})`
                           : ` ("${words(el)}")`);
    }
    if (el.tagName === "IMG") {
      const src = el.getAttribute("src") || "";
      const alt = el.getAttribute("alt");
      const fig = el.closest("figure");
      const cap = fig ? fig.querySelector("figcaption") : null;
      return `image ${src.split("/").pop()}` + (fig && fig.id ? ` of figure #${fig.id}` : "") +
             (cap ? ` ("${clip(cap.textContent, 50)}")` : (alt && alt !== src ? ` ("${clip(alt, 40)}")` : ""));
    }
    const cls = (typeof el.className === "string" ? el.className : "").split(/\s+/).filter(Boolean).slice(0, 3);
    return `<${el.tagName.toLowerCase()}${cls.length ? "." + cls.join(".") : ""}> "${words(el)}"`;
  };
  const where = (el) => `${what(el)} in section "${section(el)}"`;

  // 1. Tables and cell outputs: inside the column, or scrolling inside their own box that fits the column.
  const fits = (r) => r.left >= colLeft - TOL && r.right <= colRight + TOL;
  const scrolls = (cs) => cs.overflowX === "auto" || cs.overflowX === "scroll";
  const clips = (cs) => cs.overflowX === "hidden" || cs.overflowX === "clip";
  const overflows = [];
  const reported = [];  // tables first: an output block is not reported again for the table it holds
  const candidates = new Set([...tables, ...article.querySelectorAll(".cell_output > *")]);
  for (const el of candidates) {
    if (!shown(el)) continue;  // in a closed toggle: not laid out
    if (reported.some((t) => el.contains(t))) continue;
    const r = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    const contentW = Math.max(r.width, el.scrollWidth);
    const spills = contentW > r.width + TOL;
    if (fits(r) && (!spills || scrolls(cs))) continue;
    if (fits(r) && clips(cs)) {
      overflows.push({where: where(el), reason: `its content is ${px(contentW)} wide and is cut at ${px(r.width)} ` +
                                                `(overflow-x: ${cs.overflowX})`});
      reported.push(el);
      continue;
    }
    let reason = `is ${px(contentW)} wide, the text column ${px(colWidth)}, and no box around it scrolls`;
    let ok = false;
    for (let a = el.parentElement; a && a !== article && article.contains(a); a = a.parentElement) {
      const s = getComputedStyle(a);
      if (scrolls(s)) {
        const box = a.getBoundingClientRect();
        if (fits(box) && a.clientWidth <= colWidth + TOL) ok = true;
        else reason = `scrolls inside ${what(a)}, which is itself ${px(box.width)} wide (text column ${px(colWidth)})`;
        break;
      }
      if (clips(s)) { reason = `is ${px(contentW)} wide and cut by ${what(a)} (overflow-x: ${s.overflowX})`; break; }
    }
    if (!ok) { overflows.push({where: where(el), reason}); reported.push(el); }
  }

  // Long tables shown open (a table in a closed <details> is not laid out, so it does not count).
  const longTables = tables.filter((t) => shown(t)).map((t) => ({el: t, rows: t.querySelectorAll("tbody tr").length}))
      .filter((t) => t.rows > maxTableRows).map((t) => ({where: where(t.el), rows: t.rows}));

  // 2. Python reprs in the rendered text: prose, tables and outputs, hidden solutions included; code is skipped
  // (code cells, Python listings, outputs that are printed source code).
  const SKIP = "script, style, noscript, template, .cell_input, mjx-container, .MathJax, .headerlink, .copybtn, " +
               "div[class*='highlight-python'], div[class*='highlight-ipython'], div[class*='highlight-py3']";
  const BLOCK = "p, li, td, th, pre, dt, dd, figcaption, caption, h1, h2, h3, h4, h5, h6, summary, blockquote, " +
                ".admonition-title, div.output";
  const isSource = (out) => /^\s*(@[\w.]+|def |async def |class )/.test(out.textContent);
  // Sphinx's smartquotes turn ' and " of prose (glued text included) into curly quotes: match both.
  const PATTERNS = [
    ["a Python dict", /\{\s*['‘’]|\{\s*["“”][^"“”\n]*["“”]\s*:/],
    ["a Python list of strings", /\[\s*['‘’][^'‘’\n]*['‘’]\s*[,\]]/],
    ["an object repr", /\bobject at 0x[0-9a-fA-F]+/],
    ["a function or class repr", /<(built-in|function |bound method |module ['‘]|class ['‘])/],
    ["a pandas Series repr",
     /\bdtype: (object|bool|str|string|category|u?int\d*|float\d*|complex\d*|datetime64|timedelta64)/],
    ["a numpy repr", /\bnp\.(float|int|uint|bool|str|complex)\w*\(|\barray\(\[/],
  ];
  const MISSING_CELL = /^\s*(NaN|nan|None|<NA>|NaT)\s*$/;
  const texts = new Map();
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest(SKIP)) continue;
    const out = p.closest(".cell_output .output");
    if (out && isSource(out)) continue;
    const block = p.closest(BLOCK) || p;
    texts.set(block, (texts.get(block) || "") + n.data);
  }
  const reprs = [];
  for (const [block, t] of texts) {
    for (const [label, re] of PATTERNS) {
      const m = re.exec(t);
      if (m) reprs.push({where: where(block), what: label,
                         snippet: clip(t.slice(Math.max(0, m.index - 40), m.index + 40), 90)});
    }
    if (block.tagName === "TD" && MISSING_CELL.test(t)) {
      reprs.push({where: where(block), what: "a missing value shown as " + t.trim(), snippet: t.trim()});
    }
  }

  // pandas' default index: a row-heading column reading 0, 1, 2, ... (meaningless to a reader).
  for (const t of tables) {
    const heads = Array.from(t.querySelectorAll("tbody tr")).map((tr) => tr.firstElementChild)
        .filter((c) => c && c.tagName === "TH").map((c) => (c.textContent || "").trim());
    if (heads.length >= 2 && heads.every((h, i) => h === String(i))) {
      reprs.push({where: where(t), what: "a pandas index column", snippet: heads.slice(0, 4).join(", ") + ", …"});
    }
  }

  // Glued text (myst-nb: span.pasted-text, in bold) that is a whole sentence.
  const glued = Array.from(article.querySelectorAll("span.pasted-text, span.pasted-inline")).map((g) => {
    const t = (g.textContent || "").replace(/\s+/g, " ").trim();
    return {el: g, text: t, words: t ? t.split(" ").length : 0};
  }).filter((g) => g.words > minSentenceWords)
    .map((g) => ({where: where(g.el.closest("p, li, td, dd") || g.el), words: g.words, text: clip(g.text, 90)}));

  // 3. Figures: images of figures and of cell outputs, as displayed (after the solutions were opened); one in a
  // closed toggle counts at the width it will get: its natural width, at most the column.
  const imgs = Array.from(article.querySelectorAll("figure img, .cell_output img"))
      .filter((i) => !i.closest("button, .copybtn, .headerlink, .jupyter-widgets"));
  const figures = imgs.map((img) => {
    const visible = shown(img);
    let path = "";
    try { const u = new URL(img.currentSrc || img.src, document.baseURI);
          path = u.protocol === "data:" ? "" : decodeURIComponent(u.pathname); } catch (e) { path = ""; }
    return {where: where(img), path, visible, naturalWidth: img.naturalWidth,
            width: visible ? img.getBoundingClientRect().width : Math.min(img.naturalWidth, colWidth)};
  });
  return {columnWidth: colWidth, overflows, longTables, reprs, glued, figures};
}
"""


def _wait_for_mathjax(page, timeout_ms: int) -> str:
    """Wait for MathJax 3 to finish its first typesetting pass; '' when done, else what went wrong."""
    try:
        page.wait_for_function("() => !!(window.MathJax && window.MathJax.startup && window.MathJax.startup.promise)",
                               timeout=timeout_ms)
        page.evaluate("() => window.MathJax.startup.promise")
        return ""
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return f"MathJax did not start within {timeout_ms / 1000:.0f} s ({type(exc).__name__}: {str(exc)[:200]})"


_META_REFRESH = re.compile(r"""<meta\s+http-equiv=["']?refresh["']?\s+content=["']?\s*\d+\s*;\s*url=([^"'>\s]+)""",
                           re.I)


def meta_refresh_target(source: str) -> str | None:
    """The target of a ``<meta http-equiv="Refresh" content="0; url=...">`` redirect page, else None."""
    m = _META_REFRESH.search(source)
    return m.group(1) if m else None


def visit_page(browser, base_url: str, name: str, rel_path: str, js: WidgetJS, screenshot_dir: Path,
               has_math: bool, has_widgets: bool, redirect_to: str | None = None,
               nav_timeout_ms: int = 30_000) -> PageReport:
    report = PageReport(name=name, url=base_url + rel_path, base_url=base_url)
    context = browser.new_context(viewport=VIEWPORT, service_workers="block")
    context.set_default_timeout(10_000)
    install_routes(context, base_url, js, report.route)
    page = context.new_page()
    raw_errors: list[tuple[str, str]] = []  # (text, url of the resource or script that caused it)

    def on_console(msg):
        if msg.type == "error":
            raw_errors.append((msg.text, (msg.location or {}).get("url", "")))

    def on_page_error(exc):
        frames = (exc.stack or "").splitlines()[1:2]  # first frame: where it was thrown
        raw_errors.append((f"uncaught {exc.name}: {exc.message}", frames[0].strip() if frames else ""))

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    try:
        page.goto(report.url, wait_until="load", timeout=nav_timeout_ms)
        if redirect_to:  # e.g. the root index.html, a meta refresh to book/index.html: wait for the target page
            target = urldefrag(urljoin(report.url, redirect_to))[0]
            page.wait_for_url(lambda u: urldefrag(u)[0] == target, wait_until="load", timeout=nav_timeout_ms)
        report.final_url = urldefrag(page.url)[0]
        if has_math:
            report.mathjax_problem = _wait_for_mathjax(page, 20_000)
        if has_widgets and js.available:
            try:
                page.wait_for_selector(".jupyter-widgets", timeout=15_000)
            except Exception:  # noqa: BLE001 - the widget check reports it
                pass
        page.wait_for_timeout(300)  # late errors of async scripts
        data = page.evaluate(_COLLECT_JS, {"placeholderTitle": PLACEHOLDER_TITLE, "spanishHeading": SPANISH_HEADING,
                                           "widgetMime": WIDGET_VIEW_MIME})
        report.bad_images = data["badImages"]
        report.empty_figures = data["emptyFigures"]
        report.math_elements, report.mjx_containers = data["mathEls"], data["mjx"]
        report.mjx_errors = data["mjxErrors"]
        report.mathjax_scripts = data["mathjaxScripts"]
        report.font_sources = data["fontSources"]
        report.sidebar_links = data["sidebarLinks"]
        report.placeholder = data["placeholder"]
        report.spanish = data["spanish"]
        report.widget_views = data["widgetViews"]
        report.widget_views_rendered = data["rendered"]
        report.widget_fallbacks = data["fallbacks"]

        screenshot_dir.mkdir(parents=True, exist_ok=True)
        shot = screenshot_dir / (name.replace("/", "-") + ".png")
        page.screenshot(path=str(shot), full_page=True, timeout=30_000)
        report.screenshot = shot

        report.solutions = _check_solutions(page)
        page.wait_for_timeout(100)
        readable = page.evaluate(_READABILITY_JS, {"minSentenceWords": GLUED_SENTENCE_WORDS,
                                                   "maxTableRows": MAX_TABLE_ROWS})
        report.column_width = readable["columnWidth"]
        report.overflows = readable["overflows"]
        report.long_tables = readable["longTables"]
        report.reprs = readable["reprs"]
        report.glued_sentences = readable["glued"]
        report.figures = readable["figures"]
    except Exception as exc:  # noqa: BLE001 - one broken page must not hide the others
        report.load_error = f"{type(exc).__name__}: {str(exc)[:500]}"
    finally:
        context.close()

    blocked_widget = set(report.route.blocked_widget_js)
    for text, where in raw_errors:
        if text in HARMLESS_CONSOLE_ERRORS:
            report.allowed_console_errors.append(text)
        elif where in blocked_widget and text.startswith("Failed to load resource"):
            # The widget manager's CDN scripts, aborted because no local copy exists (npm missing): the widget
            # check is skipped with that reason instead.
            report.allowed_console_errors.append(f"{text} [{where}]")
        else:
            report.console_errors.append(f"{text}" + (f" [{where}]" if where else ""))
    return report


def _check_solutions(page) -> list[dict]:
    states = page.evaluate(_SOLUTIONS_JS)
    for state in states:
        el = page.locator(".solution").nth(state["index"])
        try:
            if state["details"]:
                el.locator("summary").first.click()
            elif state["hasButton"]:
                el.locator(".toggle-button").first.click()
            else:
                el.locator(".admonition-title").first.click()
            page.wait_for_timeout(150)
            after = page.evaluate(_SOLUTIONS_JS)[state["index"]]
            state["open_after_click"] = after["open"]
            state["visible_after_click"] = after["bodyVisible"]
        except Exception as exc:  # noqa: BLE001 - reported by the test
            state["click_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return states


# ---------------------------------------------------------------------------------------------------------------
# Static facts about the built HTML (no browser)

def html_pages(html_root: Path) -> list[Path]:
    """Every page of the build: *.html under _build/html, without the theme's template fragments in _static/."""
    return sorted(p for p in html_root.rglob("*.html")
                  if "_static" not in p.relative_to(html_root).parts and ".doctrees" not in p.parts)


def toc_files(toc: dict) -> list[str]:
    """Every ``file:`` of a Jupyter Book 1 ``_toc.yml`` (root first), in order."""
    out = [toc["root"]] if "root" in toc else []

    def walk(items):
        for item in items or []:
            if "file" in item:
                out.append(item["file"])
            walk(item.get("sections"))
            walk(item.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    walk(toc.get("sections"))
    return out


def theory_files(toc: dict, caption: str = "Theory") -> list[str]:
    out = []
    for part in toc.get("parts", []):
        if part.get("caption") == caption:
            out += [c["file"] for c in part.get("chapters", []) if "file" in c]
    return out


def strip_suffix(file: str) -> str:
    return re.sub(r"\.(md|ipynb|rst)$", "", file)


def is_external(ref: str) -> bool:
    scheme = urlsplit(ref).scheme.lower()
    return scheme in {"http", "https", "mailto", "data", "javascript", "tel"} or ref.startswith("//")


# ---------------------------------------------------------------------------------------------------------------
# Readability at 1280 px: one failure line per element, naming the page and the element

def overflow_failures(report: PageReport) -> list[str]:
    """Tables and cell outputs wider than the text column that do not scroll inside a box of their own that fits
    the column (an ancestor inside the article, or themselves, with overflow-x auto/scroll)."""
    return [f"{report.name}: {o['where']} {o['reason']}" for o in report.overflows]


def long_table_failures(report: PageReport, max_rows: int = MAX_TABLE_ROWS) -> list[str]:
    """Tables of more than ``max_rows`` body rows shown open (x4lib.book.tables.with_details collapses the full one)."""
    return [f"{report.name}: {t['where']} shows {t['rows']} rows (more than {max_rows})"
            for t in report.long_tables if t["rows"] > max_rows]


def repr_failures(report: PageReport) -> list[str]:
    """Python reprs in the rendered text: dicts, lists of strings, object/function reprs, pandas Series and numpy
    reprs, NaN/None shown in a table cell, and pandas' 0, 1, 2... index column. Code cells, Python listings and
    printed source are not text."""
    return [f"{report.name}: {r['what']} in {r['where']}: \"{r['snippet']}\"" for r in report.reprs]


def glued_sentence_failures(report: PageReport) -> list[str]:
    """Whole sentences glued as text (myst-nb renders glued text in bold): glue values, write sentences."""
    return [f"{report.name}: a glued text of {g['words']} words in {g['where']}: \"{g['text']}\""
            for g in report.glued_sentences]


def small_figure_failures(report: PageReport, min_width_px: float = MIN_FIGURE_WIDTH_PX) -> list[str]:
    """Figure and output images narrower than ``min_width_px`` as displayed at the 1280 px viewport."""
    return [f"{report.name}: {f['where']} is {f['width']:.0f} px wide"
            + ("" if f["visible"] else " (in a closed toggle: its natural width, at most the column)")
            + f", less than {min_width_px:.0f} px" for f in report.figures if f["width"] < min_width_px - 0.5]


def png_dpi(path: Path) -> float | None:
    """The resolution a PNG was saved at (matplotlib writes it in the pHYs chunk), or None."""
    try:
        from PIL import Image
        with Image.open(path) as im:
            dpi = im.info.get("dpi")
    except (OSError, ImportError, ValueError):
        return None
    return float(dpi[0]) if dpi and dpi[0] else None


def shrunk_figure_failures(report: PageReport, html_root: Path,
                           min_px_per_inch: float = MIN_FIGURE_PX_PER_INCH) -> list[str]:
    """Figures displayed at fewer than ``min_px_per_inch`` CSS px per inch of the matplotlib figure: their text is
    shrunk below legibility (a 10 pt label shows at 10/72 x px-per-inch px). The figure's size in inches is the
    PNG's width over the dpi it was saved at; images without a dpi are not judged."""
    bad = []
    for f in report.figures:
        if not f["path"] or not f["naturalWidth"]:
            continue
        dpi = png_dpi(html_root / f["path"].lstrip("/"))
        if not dpi:
            continue
        inches = f["naturalWidth"] / dpi
        per_inch = f["width"] / inches
        if per_inch < min_px_per_inch:
            bad.append(f"{report.name}: {f['where']} is a {inches:.1f}-inch-wide figure shown {f['width']:.0f} px wide "
                       f"({per_inch:.0f} px per inch, less than {min_px_per_inch:.0f}): a 10 pt label shows at "
                       f"{10 / 72 * per_inch:.1f} px")
    return bad
