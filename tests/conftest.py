import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run_cli(*args: str, module: str = "x4lib") -> subprocess.CompletedProcess:
    """Run ``python -m <module> args`` as a user would, from a directory that is not the repository."""
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          cwd="/", env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=120)


def load_schema(name: str) -> dict:
    return json.loads((ROOT / "x4lib" / "schemas" / name).read_text())


@pytest.fixture(scope="session")
def book_build():
    """One forced, strict build of the whole book, shared by every test that needs the HTML."""
    build = ROOT / "_build"
    cache = build / ".jupyter_cache"
    for stale in (cache, build / "html"):  # force execution, and no pages left from an earlier build
        if stale.exists():
            subprocess.run(["rm", "-rf", str(stale)], check=True)
    r = subprocess.run([str(BIN / "jupyter-book"), "build", str(ROOT), "-W", "-n", "--keep-going", "--all"],
                       capture_output=True, text=True, cwd=ROOT, timeout=1500)
    (build).mkdir(exist_ok=True)
    (build / "build.log").write_text(r.stdout + r.stderr)
    return r


@pytest.fixture
def closed_figures():
    """Closes every Matplotlib figure a test opened (diagram tests draw many): ``pytestmark = usefixtures(...)``."""
    yield
    import matplotlib.pyplot as plt
    plt.close("all")
