"""Sphinx extension: fixes for the static pages of this book, each a known upstream problem.

- Sphinx 7.4 writes inline scripts that extensions register after Builder.init() twice (sphinx-thebe's
  `const THEBE_JS_URL` then throws "already declared" on every page): drop the duplicates.
- ipywidgets' controls call the MathJax 2 API (MathJax.Hub.Queue) whenever MathJax is loaded
  (jupyter-widgets/ipywidgets#3829); the book loads MathJax 3: a small shim maps the call.
- The widget manager looks for its icon fonts next to the page (jupyter-widgets/ipywidgets#3658): each of its AMD
  bundles (the embed script, and the @jupyter-widgets/base and /controls modules it defines by name) takes its asset
  folder from the URL require.js gives its module, and without a path that URL is the page's folder. Point
  require.js at the CDN folder for all of them, so both copies of the icon-font rules name fonts that exist.
- x4lib.book.tables' tables (scroll box, collapsed full table): x4-tables.css.
- nbclient's wait for a cell's reply can miss its wake-up under load and sleep out the cell's 300 s (nbclient#312):
  the waits are sliced (x4lib.book.kernel_waits), as in the labs' renders.
Checked by tests/test_browser.py (no console errors, no network requests but the routed widget files).
"""
import json
from pathlib import Path


def require_config(widget_js_urls) -> dict:
    """require.js paths that put every @jupyter-widgets module the embed script defines next to the embed script.

    require.js takes the longest matching prefix: the embed script's own folder for its libembed module, and the folder
    itself for the modules it defines by name (base, controls, their 7.x twins, html-manager), where the fonts are."""
    embed = next((u for u in widget_js_urls if u.endswith("/embed-amd.js")), None)
    if embed is None:
        return {}
    dist = embed.rsplit("/", 1)[0]
    return {"paths": {"@jupyter-widgets/html-manager/dist": dist, "@jupyter-widgets": dist}}


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
    # read by require.js when it loads (before the widget scripts): the fonts resolve next to the embed script's CDN copy
    config = require_config(getattr(app.config, "nb_ipywidgets_js", {}))
    if config:
        app.add_js_file(None, body="var require = %s;" % json.dumps(config), priority=100)


def setup(app):
    # the pages are executed in this process (myst-nb's cache mode): the waits for their kernels' replies are
    # sliced, as the labs' renders are, so a missed wake-up under load costs half a second, not a cell's 300 s
    from x4lib.book.kernel_waits import install
    install()
    app.connect("builder-inited", _static)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.add_js_file("x4-mathjax-hub-shim.js", loading_method="defer", priority=600)
    app.add_css_file("x4-tables.css")
    return {"parallel_read_safe": True}
