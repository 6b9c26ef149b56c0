"""JupyterLab for the book (``make lab``): ``jupyter lab --config=jupyter/jupyter_server_config.py``.

- served on 127.0.0.1 only, from the repository root, opening the book's front page;
- jupytext's contents manager (its server extension, installed with jupytext) opens ``book/*.md`` as notebooks and
  saves them back to the pair (``jupytext.toml``: ``book/*.md`` with ``notebooks/*.ipynb``);
- ``lab-settings/overrides.json`` makes a double-click on a Markdown/MyST file open it as a Jupytext notebook, so
  the chapters' explorers run in a live kernel.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

c = get_config()  # noqa: F821 — provided by Jupyter when it loads this file
c.ServerApp.ip = "127.0.0.1"
c.ServerApp.root_dir = str(ROOT)
c.ServerApp.jpserver_extensions = {"jupyterlab": True, "jupyterlab_jupytext": True}
c.LabApp.default_url = "/lab/tree/book/index.md"
c.LabApp.app_settings_dir = str(ROOT / "jupyter" / "lab-settings")
c.ServerApp.allow_root = True  # containers and pods often run as root; the server listens on 127.0.0.1 only, with a token
