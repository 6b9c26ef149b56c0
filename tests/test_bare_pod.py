"""The measuring entries must run where only the standard library and torch are installed (a bare PyTorch pod):
here the third-party packages of the notebook stack are made unimportable in a subprocess."""
import subprocess
import sys

from conftest import ROOT

BLOCK = """
import sys, importlib.abc, importlib.machinery
class Absent(importlib.abc.Loader):
    def create_module(self, spec):
        raise ModuleNotFoundError(f'{spec.name} is blocked: a bare pod has only the standard library and torch')
    def exec_module(self, module):
        pass
class Block(importlib.abc.MetaPathFinder):
    # `import X` fails; importlib.util.find_spec(X) gives a spec without an origin, which torch's own optional
    # probes (torch._dynamo's skip list, on the first optimizer step) read as "nothing to add"
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in {'yaml', 'jsonschema', 'numpy', 'pandas', 'matplotlib', 'papermill', 'nbformat',
                                  'ipywidgets', 'myst_nb'}:
            return importlib.machinery.ModuleSpec(name, Absent(), origin=None)
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


def test_lab02_measure_only_runs_with_only_torch_and_its_cpu_check_meets_the_target(tmp_path):
    """Lab 02's whole measuring path on a bare pod (standard library + torch): the layer calibrated with one
    process, then the small model trained with DDP over gloo on 1 and 2 processes; the calibrated prediction of
    each step must be within 15 % of the measured one (the process's CPU time: this test runs on shared machines)."""
    from x4lib.training import calibration
    r = run_bare("lab02", "--profile", "local-cpu", "--quick", "--measure-only", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    (run_dir,) = [p.parent for p in (tmp_path / "lab02").glob("*/results.json")]
    rows = calibration.check_rows(run_dir)
    assert [row["ranks"] for row in rows] == [1, 2]
    for row in rows:
        assert abs(row["error"]) <= calibration.CHECK_TARGET, (
            f"{row['ranks']} process(es): measured {row['measured_s'] * 1e3:.1f} ms, predicted "
            f"{row['predicted_s'] * 1e3:.1f} ms ({row['error']:+.1%}); per term measured {row['measured']}, "
            f"predicted {row['predicted']}")
