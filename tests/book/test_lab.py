"""``make lab``: JupyterLab with jupytext, in headless Chromium, as a reader uses it.

JupyterLab starts from ``jupyter/jupyter_server_config.py`` (as ``make lab`` does) on a free port of 127.0.0.1 with
a token. The tests check that the front page opens as a notebook, then open one chapter (book/00-motivation.md,
through jupytext's contents manager), run all its cells in a live kernel, move one widget of its explorer and check
that the explorer's output changed and that no cell raised.

Without Chromium, Playwright or JupyterLab the tests skip with the reason, except under CI=true, where that is a
failure (as in tests/test_browser.py)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from browser_support import CHROMIUM_ARGS, VIEWPORT, ci_is_on, find_chromium
from conftest import ROOT

pytestmark = pytest.mark.browser

CONFIG = ROOT / "jupyter" / "jupyter_server_config.py"
CHAPTER = "book/00-motivation.md"
WIDGET = "GPUs"            # an IntText of chapter 00's training explorer
TOKEN = "x4-lab-test"


def _skip_or_fail(reason: str):
    if ci_is_on():
        pytest.fail(f"{reason} (CI=true: a missing browser or JupyterLab is a failure)", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server as ``make lab`` starts it (plus a token, a free port, the app exposed to scripts, and
    fresh workspace and user-settings folders, so nothing of an earlier session is restored)."""
    chromium = find_chromium()
    if chromium is None:
        _skip_or_fail("Chromium is not installed (apt-get install -y chromium)")
    for module, what in (("playwright.sync_api", "Playwright"), ("jupyterlab", "JupyterLab"),
                         ("jupytext", "jupytext")):
        try:
            __import__(module)
        except ImportError:
            _skip_or_fail(f"{what} is not installed (pip install -r requirements.txt)")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}".rstrip(os.pathsep)}
    (ROOT / "out").mkdir(exist_ok=True)
    log = open(ROOT / "out" / "lab-test.log", "w")  # noqa: SIM115 — the server's log, for a failure's reader
    proc = subprocess.Popen([sys.executable, "-m", "jupyterlab", f"--config={CONFIG}", f"--port={port}",
                             "--no-browser", f"--IdentityProvider.token={TOKEN}", "--LabApp.expose_app_in_browser=True",
                             "--ServerApp.port_retries=0",
                             f"--LabApp.workspaces_dir={tmp_path_factory.mktemp('workspaces')}",
                             f"--LabApp.user_settings_dir={tmp_path_factory.mktemp('user-settings')}"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start (exit {proc.poll()}; see out/lab-test.log)", pytrace=False)
                time.sleep(0.5)
        yield {"base": base, "chromium": chromium}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=lab["chromium"], args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


# The notebook shown in the main area, as JupyterLab's own model sees it.
CURRENT = "(() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget; " \
          "return w && w.content && w.content.widgets ? w : null; })()"
STATE = f"""() => {{
  const w = {CURRENT};
  if (!w) return null;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  return {{path: w.context.path, kernel: w.sessionContext.session?.kernel?.status ?? null,
           code: cells.length, executed: cells.filter(c => c.model.executionCount !== null).length,
           errors: cells.flatMap((c, i) => c.model.outputs.toJSON().filter(o => o.output_type === 'error')
                                 .map(o => `cell ${{i}}: ${{o.ename}}: ${{o.evalue}}`))}};
}}"""


def _open(browser, url):
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(60_000)
    page.goto(url)
    page.wait_for_function(f"() => {CURRENT} !== null", timeout=60_000)
    return page


def test_the_front_page_opens_as_a_notebook(lab, browser):
    page = _open(browser, f"{lab['base']}/?token={TOKEN}")   # "/" goes to the default URL
    try:
        state = page.evaluate(STATE)
        assert state["path"] == "book/index.md", state   # the default URL, opened by jupytext as a notebook
    finally:
        page.close()


def test_a_chapter_runs_live_and_its_explorer_answers_a_widget(lab, browser):
    started = time.monotonic()
    page = _open(browser, f"{lab['base']}/lab/tree/{CHAPTER}?token={TOKEN}")
    try:
        assert page.evaluate(STATE)["path"] == CHAPTER
        page.wait_for_function(f"() => {CURRENT}.sessionContext.session?.kernel?.status === 'idle'",
                               timeout=60_000)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(f"""() => {{ const s = ({STATE})();
            return s && s.kernel === 'idle' && s.executed === s.code; }}""", timeout=90_000, polling=500)
        state = page.evaluate(STATE)
        assert state["errors"] == [], state["errors"]
        box = page.locator(".widget-interact").filter(has=page.get_by_text(WIDGET, exact=True)).first
        box.scroll_into_view_if_needed()
        output = box.locator(".widget-output")
        page.wait_for_function("el => el.innerText.trim() !== ''", arg=output.element_handle(), timeout=30_000)
        before = output.inner_text()
        assert before.strip(), "the explorer shows nothing before its widget moves"
        field = box.locator(".widget-text", has=page.get_by_text(WIDGET, exact=True)).locator("input")
        old = int(field.input_value())
        field.fill(str(old * 2))
        field.press("Enter")
        page.wait_for_function("([el, before]) => el.innerText !== before && el.innerText.trim() !== ''",
                               arg=[output.element_handle(), before], timeout=30_000)
        after = output.inner_text()
        assert after != before and "cannot" not in after and "Traceback" not in after, after
        assert page.evaluate(STATE)["errors"] == []
    except Exception:
        page.screenshot(path=str(ROOT / "out" / "lab-test.png"))   # what the page showed, for the failure's reader
        raise
    finally:
        page.close()
    assert time.monotonic() - started < 120
