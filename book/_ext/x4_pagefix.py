"""Sphinx extension: fixes for the static pages of this book, each a known upstream problem.

- Sphinx 7.4 writes inline scripts that extensions register after Builder.init() twice (sphinx-thebe's
  `const THEBE_JS_URL` then throws "already declared" on every page): drop the duplicates.
- ipywidgets' controls call the MathJax 2 API (MathJax.Hub.Queue) whenever MathJax is loaded
  (jupyter-widgets/ipywidgets#3829); the book loads MathJax 3: a small shim maps the call.
- The widget manager looks for its icon fonts next to the page: point require.js at its CDN folder.
- x4lib.book.tables' tables (scroll box, collapsed full table): x4-tables.css.
- nbclient's wait for a cell's reply can miss its wake-up under load and sleep out the cell's 300 s (nbclient#312):
  the waits are sliced (x4lib.book.kernel_waits), as in the labs' renders.
Checked by tests/test_browser.py (no console errors, no network requests but the routed widget files).
"""
from pathlib import Path

HM_DIST = "https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@1.0.6/dist"


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    # Sphinx 7.4 adds inline scripts registered after Builder.init() twice (filename None, then '').
    seen, out = set(), []
    for js in context.get("script_files", []):
        key = (getattr(js, "filename", str(js)) or "", tuple(sorted(getattr(js, "attributes", {}).items())))
        if key in seen:
            continue
        seen.add(key)
        out.append(js)
    context["script_files"][:] = out


def _static(app):
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))


def setup(app):
    # the pages are executed in this process (myst-nb's cache mode): the waits for their kernels' replies are
    # sliced, as the labs' renders are, so a missed wake-up under load costs half a second, not a cell's 300 s
    from x4lib.book.kernel_waits import install
    install()
    app.connect("builder-inited", _static)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    # read by require.js when it loads: the widget manager's fonts resolve next to its CDN copy, not the page
    app.add_js_file(None, body='var require = {paths: {"@jupyter-widgets/html-manager/dist": "%s"}};' % HM_DIST,
                    priority=100)
    app.add_js_file("x4-mathjax-hub-shim.js", loading_method="defer", priority=600)
    app.add_css_file("x4-tables.css")
    return {"parallel_read_safe": True}
