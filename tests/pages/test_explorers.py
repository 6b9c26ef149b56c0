"""Every page's explorer works in a live kernel (the built book shows only its static fallback): each explorer
function of ``x4lib/pages/*`` is built in one Jupyter kernel and run with its starting widget values and with one
widget moved to another value; both runs must finish without an exception and show something, and the second must
show something else.

Explorers are found, not listed: a function of a page module that returns ``ipywidgets.interactive(...)``."""
import ast
import json

import pytest

from conftest import ROOT

PAGES = ROOT / "x4lib" / "pages"


def explorers() -> list[tuple[str, str]]:
    """(page module, function) for every function in x4lib/pages/*.py that builds an ``interactive``/``interact``."""
    found = []
    for path in sorted(PAGES.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name))
                    and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in ("interactive", "interact")
                    for n in ast.walk(node)):
                found.append((path.stem, node.name))
    return found


EXPLORERS = explorers()

# Runs in the kernel: for each explorer, the output of its function for the starting values, then for each widget in
# turn other values until one changes the output (the first of those is the one reported). Outputs are compared as
# their text, HTML and image data.
KERNEL_CODE = r'''
import importlib, json, traceback
from IPython.utils.capture import capture_output
%matplotlib inline

def shown(ip):
    kwargs = {w._kwarg: w.get_interact_value() for w in ip.kwargs_widgets}
    with capture_output() as cap:
        ip.f(**kwargs)
    parts = [cap.stdout] + [json.dumps({k: str(v) for k, v in o.data.items()}, sort_keys=True) for o in cap.outputs]
    return "\n".join(parts), cap.stdout

def other_values(w):
    if getattr(w, "options", None):
        labels = [o[1] if isinstance(o, tuple) else o for o in w.options]
        return [v for v in labels if v != w.value][:3]
    if isinstance(w.value, bool):
        return [not w.value]
    if isinstance(w.value, (int, float)):
        lo, hi = getattr(w, "min", None), getattr(w, "max", None)
        cands = [w.value * 2 if w.value else 1, w.value / 2 if isinstance(w.value, float) else max(1, w.value // 2)]
        if lo is not None and hi is not None:
            cands += [lo, hi, (lo + hi) / 2 if isinstance(w.value, float) else (lo + hi) // 2]
        return [type(w.value)(c) for c in cands if (lo is None or c >= lo) and (hi is None or c <= hi) and c != w.value]
    return []

report = {}
for module, name in EXPLORERS:
    r = report[f"{module}.{name}"] = {"error": None, "changed": None}
    try:
        ip = getattr(importlib.import_module(f"x4lib.pages.{module}"), name)()
        first, printed = shown(ip)
        r["first"] = first[:200]
        r["first_printed"] = printed
        for w in ip.kwargs_widgets:
            start = w.value
            for v in other_values(w):
                w.value = v
                second, printed = shown(ip)
                if second.strip() and second != first and "cannot" not in printed:
                    r["changed"] = f"{w.description or w._kwarg}: {start!r} -> {v!r}"
                    break
            else:
                w.value = start
                continue
            break
    except Exception:
        r["error"] = traceback.format_exc()[-3000:]
print("REPORT " + json.dumps(report))
'''


@pytest.fixture(scope="module")
def report():
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"EXPLORERS = {EXPLORERS!r}\n" + KERNEL_CODE)])
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.get("output_type") == "stream")
    line = next(ln for ln in text.splitlines() if ln.startswith("REPORT "))
    return json.loads(line[len("REPORT "):])


def test_every_page_with_an_explorer_is_found():
    pages = {m for m, _ in EXPLORERS}
    assert {"ch00", "ch01", "ch02", "ch02_memory", "ch02_nvlink", "ch03", "ch04", "ch05", "capstone", "lab00", "lab01"} <= pages


@pytest.mark.parametrize("explorer", [f"{m}.{f}" for m, f in EXPLORERS])
def test_the_explorer_runs_and_answers_a_changed_widget(report, explorer):
    r = report[explorer]
    assert r["error"] is None, r["error"]
    assert r["first"].strip() and "cannot" not in r["first_printed"], r["first"]
    assert r["changed"], f"no widget value changed what {explorer} shows"
