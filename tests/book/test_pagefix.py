"""book/_ext/x4_pagefix.py's require.js paths: every @jupyter-widgets module the embed script defines is placed in
the embed script's own CDN folder, where its bundles' icon fonts are (jupyter-widgets/ipywidgets#3658). The pages
themselves are checked in the browser (test_browser.py::test_every_declared_font_exists)."""
import importlib.util

from myst_nb.core.config import ipywidgets_js_factory

from conftest import ROOT


def _pagefix():
    spec = importlib.util.spec_from_file_location("x4_pagefix_paths", ROOT / "book" / "_ext" / "x4_pagefix.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    return ext


def _resolve(paths: dict, module: str) -> str:
    """require.js's nameToUrl for a module under a paths config: the longest matching prefix is replaced."""
    for prefix in sorted(paths, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "/"):
            return paths[prefix] + module[len(prefix):] + ".js"
    return "./" + module + ".js"


def test_every_widget_module_resolves_next_to_the_embed_script():
    urls = ipywidgets_js_factory()  # myst-nb's default scripts: require.js, then the embed script
    embed = next(u for u in urls if u.endswith("/embed-amd.js"))
    dist = embed.rsplit("/", 1)[0] + "/"
    paths = _pagefix().require_config(urls)["paths"]
    for module in ("@jupyter-widgets/base", "@jupyter-widgets/controls", "@jupyter-widgets/base7",
                   "@jupyter-widgets/controls7", "@jupyter-widgets/html-manager",
                   "@jupyter-widgets/html-manager/dist/libembed-amd"):
        url = _resolve(paths, module)
        assert url.rsplit("/", 1)[0] + "/" == dist, (module, url)


def test_no_embed_script_means_no_paths():
    assert _pagefix().require_config({"https://example.org/require.min.js": {}}) == {}
