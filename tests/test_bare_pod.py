"""The measuring entries must run where only the standard library and torch are installed (a bare PyTorch pod):
here the third-party packages of the notebook stack are made unimportable in a subprocess."""
import subprocess
import sys

from conftest import ROOT

BLOCK = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in {'yaml', 'jsonschema', 'numpy', 'pandas', 'matplotlib', 'papermill', 'nbformat',
                                  'ipywidgets', 'myst_nb'}:
            raise ModuleNotFoundError(f'{name} is blocked: a bare pod has only the standard library and torch')
sys.meta_path.insert(0, Block())
sys.argv = ['runners'] + sys.argv[1:]
import runpy
runpy.run_module('runners', run_name='__main__')
"""


def run_bare(*args):
    return subprocess.run([sys.executable, "-c", BLOCK, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_lab00_measure_only_runs_with_only_torch(tmp_path):
    r = run_bare("lab00", "--profile", "local-cpu", "--quick", "--measure-only", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert list((tmp_path / "lab00").glob("*/results.json"))


def test_lab01_measure_only_runs_with_only_torch(tmp_path):
    r = run_bare("lab01", "--profile", "local-cpu", "--quick", "--measure-only", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert list((tmp_path / "lab01").glob("*/results.json"))
