"""What a reader runs on a bare GPU pod must work there: a plain ``git clone`` of the book on a PyTorch image,
nothing installed. Here the third-party packages a PyTorch image lacks are made unimportable in a subprocess:

- the measuring entries (``python -m runners LAB --measure-only``, every lab): standard library and torch only
  (PyYAML and numpy blocked too, as the runners promise);
- the doctor (``python -m x4lib doctor --quick`` and ``--from FILES``): standard library, torch, numpy and
  PyYAML; no jsonschema (its schema checks are skipped with one note on stderr), no pybtex, pandas, matplotlib
  or notebook stack (``python -m x4lib`` imports a command's module only when that command runs)."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from runners import core

#: what a PyTorch image does not carry (torch's own dependencies, numpy and PyYAML are there)
NOTEBOOK_STACK = {"jsonschema", "pandas", "matplotlib", "papermill", "nbformat", "nbclient", "ipywidgets", "IPython",
                  "ipykernel", "myst_nb", "myst_parser", "jupytext", "jupyter_book", "jupyter_server", "jupyterlab",
                  "sphinx", "pybtex", "scipy", "plotly", "playwright", "pytest"}
#: the measuring entries promise less: standard library and torch
RUNNERS_BLOCKED = NOTEBOOK_STACK | {"yaml", "numpy"}

BLOCK = """
import sys, importlib.abc, importlib.machinery
BLOCKED = set(sys.argv[1].split(','))
class Absent(importlib.abc.Loader):
    def create_module(self, spec):
        raise ModuleNotFoundError(f'{spec.name} is blocked: a bare pod does not have it')
    def exec_module(self, module):
        pass
class Block(importlib.abc.MetaPathFinder):
    # `import X` fails; importlib.util.find_spec(X) gives a spec without an origin, which torch's own optional
    # probes (torch._dynamo's skip list, on the first optimizer step) read as "nothing to add"
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in BLOCKED:
            return importlib.machinery.ModuleSpec(name, Absent(), origin=None)
sys.meta_path.insert(0, Block())
sys.argv = [sys.argv[2]] + sys.argv[3:]
import runpy
runpy.run_module(sys.argv[0], run_name='__main__')
"""


def run_bare(blocked, module, *args):
    return subprocess.run([sys.executable, "-c", BLOCK, ",".join(sorted(blocked)), module, *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_the_block_really_blocks():
    r = run_bare(NOTEBOOK_STACK, "x4lib", "check-claims", "book/")
    assert r.returncode != 0 and "blocked" in r.stdout + r.stderr


@pytest.mark.parametrize("lab", [lab for lab in core.LABS if lab != "lab02"])  # lab02: below, with its check
def test_every_measuring_entry_runs_with_only_torch(lab, tmp_path):
    r = run_bare(RUNNERS_BLOCKED, "runners", lab, "--profile", "local-cpu", "--quick", "--measure-only",
                 "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert list((tmp_path / lab).glob("*/results.json"))


def test_runners_profiles_lists_with_only_torch():
    r = run_bare(RUNNERS_BLOCKED, "runners", "profiles")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "local-cpu" in r.stdout


def _doctor_ran(r):
    """Exit 0 (nothing wrong) or 1 (a finding), a report on stdout, no traceback, one note for the skipped schemas."""
    assert r.returncode in (0, 1), r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-2000:]
    assert r.stdout.startswith("doctor:"), r.stdout[:500]
    assert r.stderr.count("jsonschema is not installed") == 1, r.stderr[-2000:]


def test_doctor_quick_on_a_bare_pod():
    _doctor_ran(run_bare(NOTEBOOK_STACK, "x4lib", "doctor", "--quick"))


def test_doctor_from_files_on_a_bare_pod():
    files = sorted(str(p) for p in (ROOT / "tests" / "data" / "doctor").iterdir() if p.is_file())
    files += [str(ROOT / "tests" / "data" / "runs" / lab / "results.json") for lab in ("lab00-v1", "lab01-v1")]
    r = run_bare(NOTEBOOK_STACK, "x4lib", "doctor", "--from", *files)
    _doctor_ran(r)
    assert r.stdout.count("  read ") == len(files), r.stdout[:3000]


def test_help_lists_every_command_on_a_bare_pod():
    from x4lib import cli
    r = run_bare(NOTEBOOK_STACK, "x4lib", "--help")
    assert r.returncode == 0, r.stderr[-2000:]
    assert all(name in r.stdout for name in cli.COMMANDS)


def test_lab02_measure_only_runs_with_only_torch_and_its_cpu_check(tmp_path):
    """Lab 02's whole measuring path on a bare pod (standard library + torch): the layer calibrated with one
    process, then the small model trained with DDP over gloo on 1 and 2 processes, then the check's calibration and
    the training measured again (each statistic spans both windows). The calibrated prediction of each step must stay
    within a factor of 2 of the measured one (a term missing or counted twice, a unit slip), and is held to the
    lab's 15 % target (the process's CPU time: this test runs on shared machines) as an expected failure when
    missed: on a shared two-core virtual machine the one-process step of two quick runs a minute apart differed by a
    fifth, and on CI one quick calibration ran a third slower than the training after it, more than the target
    allows. The target itself is held by tests/runners/test_runners_lab02.py on the committed CPU run the page
    shows."""
    from x4lib.training import calibration
    r = run_bare(RUNNERS_BLOCKED, "runners", "lab02", "--profile", "local-cpu", "--quick", "--measure-only",
                 "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    (run_dir,) = [p.parent for p in (tmp_path / "lab02").glob("*/results.json")]
    rows = calibration.check_rows(run_dir)
    assert [row["ranks"] for row in rows] == [1, 2]
    res = json.loads((run_dir / "results.json").read_text())
    again = [r for r in res["check"]["calibration"]["ops"] if r.get("windows") == 2]
    assert {(r["op"], r["pass"]) for r in again} >= {("layer", "fwd"), ("layer", "fwd+bwd"), ("adamw", "step"),
                                                     ("copy", "fwd"), ("loopback_tcp", "send")}, again
    assert all(t.get("windows") == 2 for t in res["check"]["training"])

    def says(row):
        return (f"{row['ranks']} process(es): measured {row['measured_s'] * 1e3:.1f} ms, predicted "
                f"{row['predicted_s'] * 1e3:.1f} ms ({row['error']:+.1%}); per term measured {row['measured']}, "
                f"predicted {row['predicted']}")
    for row in rows:
        assert calibration.within_sanity(row["error"]), says(row)
    misses = [says(row) for row in rows if abs(row["error"]) > calibration.CHECK_TARGET]
    if misses:
        pytest.xfail("outside the 15 % target (the page shows the measured error): " + "; ".join(misses))
