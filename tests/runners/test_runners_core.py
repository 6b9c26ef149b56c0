"""runners/core.py: the verbs every lab shares, exit codes, and runs that never collide or leave a
complete-looking result (issue: runs that never collide)."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from conftest import ROOT, run_cli
from runners import LABS, core, rundir
from x4lib.cli import UsageError

V1_LAB00 = ROOT / "tests" / "data" / "runs" / "lab00-v1"


def nothing_in(lab_dir) -> bool:
    return not lab_dir.exists() or not list(lab_dir.iterdir())


def valid_lab00() -> dict:
    return {"schema_version": 2, "lab": "lab00", "profile": "local-cpu", "method_version": 2,
            "started_utc": "2026-11-23T00:00:00Z", "device": {"kind": "cpu", "detected_name": "Fake CPU",
                                                             "catalog_id": None},
            "matmul": [], "memory_bw": [], "warnings": []}


def fake_lab(measure):
    return SimpleNamespace(NAME="lab00", TITLE="fake", NOTEBOOK="notebooks/lab-00-roofline.ipynb",
                           add_arguments=lambda p: None, measure=measure)


def args(tmp_path, **kw):
    return argparse.Namespace(profile="local-cpu", quick=True, measure_only=True, runs_dir=str(tmp_path / "runs"),
                              render=None, **kw)


def test_every_lab_has_the_same_verbs():
    _, subs = core.build_parser()
    for name in LABS:
        flags = {a for action in subs[name]._actions for a in action.option_strings}
        assert {"--profile", "--quick", "--measure-only", "--render", "--runs-dir"} <= flags, name


def test_a_lab_plug_in_is_one_module():
    for name in LABS:
        lab = core.load_lab(name)
        assert lab.NAME == name and (lab.NOTEBOOK is None or (ROOT / lab.NOTEBOOK).is_file())
        assert callable(lab.measure) and callable(lab.add_arguments)


def test_a_run_is_published_with_its_files(tmp_path):
    lab = fake_lab(lambda ctx: core.Measured(valid_lab00(), {"table.txt": "x\n"}, "Fake CPU"))
    final = core.run(lab, args(tmp_path))
    assert final.parent == tmp_path / "runs" / "lab00" and final.name.startswith("local-cpu-fake-cpu-")
    assert (final / "table.txt").read_text() == "x\n" and json.loads((final / "results.json").read_text())["lab"]


def test_an_invalid_result_is_never_stored(tmp_path):
    bad = {**valid_lab00(), "matmul": [{"dtype": "fp32", "m": 1, "n": 1, "k": 1, "status": "ok",
                                        "times_s": [-1.0], "median_s": -1.0, "best_s": -1.0}]}
    lab = fake_lab(lambda ctx: core.Measured(bad, {}, "Fake CPU"))
    with pytest.raises(core.RunFailed, match="matmul/0"):
        core.run(lab, args(tmp_path))
    assert nothing_in(tmp_path / "runs" / "lab00")


def test_nan_in_a_result_fails_the_run_and_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(core, "_validate", lambda results, lab: None)  # a bare pod has no jsonschema
    lab = fake_lab(lambda ctx: core.Measured({**valid_lab00(), "x": float("nan")}, {"t.txt": "x"}, "Fake CPU"))
    with pytest.raises(core.RunFailed) as e:
        core.run(lab, args(tmp_path))
    assert nothing_in(tmp_path / "runs" / "lab00")
    assert "out/failed-runs/" in str(e.value)  # the partial output (t.txt) was moved, and the message says where
    moved = ROOT / "out" / "failed-runs" / str(e.value).split("out/failed-runs/")[1].rstrip(")")
    assert (moved / "t.txt").exists() and not (moved / "results.json").exists()


def test_the_destination_is_checked_before_measuring(tmp_path):
    measured = []
    lab = fake_lab(lambda ctx: measured.append(1))
    (tmp_path / "file").write_text("x")
    for where in (str(tmp_path / "file"), ""):
        with pytest.raises(rundir.DestinationError):
            core.run(lab, argparse.Namespace(**{**vars(args(tmp_path)), "runs_dir": where}))
    assert measured == []


def test_failed_runs_are_only_mentioned_when_something_was_moved(tmp_path):
    def boom(ctx):
        raise RuntimeError("the GPU fell off the bus")
    with pytest.raises(core.RunFailed) as e:
        core.run(fake_lab(boom), args(tmp_path))
    # measuring failed before anything was staged: no staging folder and no claim that output was kept
    assert "out/failed-runs" not in str(e.value) and "the GPU fell off the bus" in str(e.value)


def test_the_runs_dir_flag_refuses_a_file_and_an_empty_name_with_exit_2(tmp_path):
    (tmp_path / "file").write_text("x")
    for where in (str(tmp_path / "file"), ""):
        r = run_cli("lab00", "--profile", "local-cpu", "--quick", "--measure-only", "--runs-dir", where,
                    module="runners")
        assert r.returncode == 2 and "Traceback" not in r.stderr and "runs-dir" in r.stderr.splitlines()[-1]
        assert "failed-runs" not in r.stderr
    assert not (ROOT / "lab00").exists()


@pytest.mark.parametrize("content,needle", [("{", "not JSON"), ('{"lab": "lab00"}', "(top level)"),
                                            (None, "no such file")])
def test_render_refuses_an_invalid_run_before_starting_a_kernel(tmp_path, content, needle):
    d = tmp_path / "run"
    d.mkdir()
    if content is not None:
        (d / "results.json").write_text(content)
    r = run_cli("lab00", "--render", str(d), module="runners")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("usage:") and "error:" in lines[-1] and needle in lines[-1]
    assert sum("error:" in ln for ln in lines) == 1
    assert [p.name for p in d.iterdir()] == ([] if content is None else ["results.json"])


def test_two_runs_started_together_do_not_collide(tmp_path):
    cmd = [sys.executable, "-m", "runners", "lab00", "--profile", "local-cpu", "--quick", "--measure-only",
           "--runs-dir", str(tmp_path)]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-500:] for o in outs]
    dirs = sorted((tmp_path / "lab00").iterdir())
    assert len(dirs) == 2 and {o[0].strip() for o in outs} == {str(d) for d in dirs}


def _staged_by(pid: int):
    for d in rundir.STAGING.glob("*") if rundir.STAGING.is_dir() else []:
        try:
            if (d / ".pid").read_text().strip() == str(pid):
                return d
        except OSError:
            pass
    return None


def test_a_run_killed_while_rendering_leaves_nothing_in_the_runs_dir(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "runners", "lab00", "--profile", "local-cpu", "--quick",
                          "--runs-dir", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 600
    staged = None
    while time.time() < deadline and p.poll() is None:  # wait until results.json is staged (rendering begins)
        staged = _staged_by(p.pid)
        if staged and (staged / "results.json").exists():
            break
        time.sleep(0.2)
    assert p.poll() is None and staged is not None, "the run finished before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not (tmp_path / "lab00").exists() or not list((tmp_path / "lab00").iterdir())
    rundir.sweep_stale()
    assert not staged.exists()


def test_ctrl_c_is_one_line_and_leaves_nothing(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "runners", "lab01", "--profile", "local-cpu", "--measure-only",
                          "--runs-dir", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert "Traceback" not in err and p.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1].endswith("interrupted")
    assert not (tmp_path / "lab01").exists() or not list((tmp_path / "lab01").iterdir())


@pytest.mark.parametrize("module", ["runners", "x4lib"])
def test_ctrl_c_while_python_still_imports_is_one_line(module, tmp_path):
    """SIGINT half a second after the start lands while the command is still importing (or, on a fast machine,
    early in its work): never a traceback; exit 130 with the one line, or (before Python's own handler is in place)
    the signal's default end, -2."""
    args = ["lab01", "--profile", "local-cpu", "--measure-only", "--runs-dir", str(tmp_path)] if module == "runners" \
        else ["roofline", "--device", "h100-sxm"]
    p = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert "Traceback" not in err, err[-2000:]
    if p.returncode == 130:
        assert err.strip().splitlines()[-1].endswith("interrupted")
    else:
        assert p.returncode in (0, -signal.SIGINT), (p.returncode, err[-2000:])


def test_a_wrong_profile_is_refused_before_measuring():
    r = run_cli("lab00", "--profile", "h100", "--quick", "--measure-only", "--runs-dir", "/tmp/x4-never",
                module="runners")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "expects" in r.stderr.splitlines()[-1]
    r = run_cli("lab00", "--profile", "tpu-pod", module="runners")
    assert r.returncode == 2 and "unknown profile" in r.stderr


def test_usage_errors_are_usage_errors():
    from runners import profiles
    assert issubclass(profiles.ProfileError, UsageError) and issubclass(profiles.WrongDevice, UsageError)
    assert issubclass(rundir.DestinationError, ValueError) and rundir.DestinationError.exit_code == 2
    assert os.path.basename(core.DEFAULT_RUNS_DIR) == "runs"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the kernel process")
def test_ctrl_c_while_a_notebook_renders_prints_one_line(tmp_path):
    """Ctrl-C (SIGINT to the foreground process group) once the kernel runs: exit 130 and the one line
    "interrupted", no kernel or asyncio traceback, and the run folder keeps no notebook."""
    import shutil
    from pathlib import Path
    from x4lib.harness import runs
    if not core.notebook_stack_available():
        pytest.skip("the notebook stack is not installed")
    src = runs.committed_dirs("lab00")[0]
    run_dir = tmp_path / src.name
    run_dir.mkdir()
    shutil.copy(src / "results.json", run_dir / "results.json")
    p = subprocess.Popen([sys.executable, "-m", "runners", "lab00", "--render", str(run_dir)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    children = Path(f"/proc/{p.pid}/task/{p.pid}/children")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None and not children.read_text().strip():
        time.sleep(0.2)
    time.sleep(3)  # the kernel runs the first cells
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-2000:]
    assert err.strip().splitlines() == ["python -m runners lab00: interrupted"], err[-2000:]
    assert not list(run_dir.glob("*.ipynb"))


# --------------------------------------------- #34 item 5: a widget cell rendered under load does not stall

_WIDGET_NOTEBOOK_CELLS = [
    "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\nimport matplotlib.pyplot as plt\n"
    "import ipywidgets as w\nimport numpy as np\nx = np.linspace(0, 1, 1000)",
    # an explorer like the labs': an interactive whose first draw computes for a while, then plots
    "def show(device, dtype):\n    sum(np.sin(x * i).sum() for i in range(20000))\n"
    "    fig, ax = plt.subplots(figsize=(7, 4))\n    for i in range(8):\n"
    "        ax.loglog(x + 1e-3, (x + 1e-3) ** (i / 4), label=f'{device} {dtype} {i}')\n"
    "    ax.legend()\n    plt.show()\n"
    "w.interactive(show, device=w.Dropdown(options=[f'd{i}' for i in range(60)], value='d3'),\n"
    "              dtype=w.Dropdown(options=['bf16', 'fp8'], value='bf16'))",
    "1 + 1"]

_RENDER_ONE = """
import json, sys, time
from runners import core
nb, out, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
core.execute_notebook(core.Path(nb), core.Path(out), {}, cell_timeout_s=timeout)
print(json.dumps([c["metadata"]["papermill"]["duration"] for c in json.load(open(out))["cells"]]))
"""


def test_widget_cells_rendered_at_once_under_load_do_not_stall(tmp_path):
    """The 300 s render stall, reproduced: with six renders of a notebook holding an ipywidgets explorer at once
    on two cores, the client's wait for the widget cell's execute_reply missed its wake-up (an edge-triggered zmq
    socket; nbclient#312) and slept out the whole cell timeout before its final check read the queued reply: 3 of
    3 renders took exactly the timeout. ``execute_notebook`` slices that wait (``sliced_kernel_waits``), so a
    missed wake-up costs half a second; here no cell may take half the timeout."""
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in _WIDGET_NOTEBOOK_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "explorer.ipynb")
    timeout = 60
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
    procs = [subprocess.Popen([sys.executable, "-c", _RENDER_ONE, str(tmp_path / "explorer.ipynb"),
                               str(tmp_path / f"out{i}.ipynb"), str(timeout)], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(6)]
    durations = []
    for p in procs:
        out, err = p.communicate(timeout=4 * timeout)
        assert p.returncode == 0, err[-2000:]
        durations.append(json.loads(out.strip().splitlines()[-1]))
    assert max(max(d) for d in durations) < timeout / 2, durations


def test_import_torch_holds_sigint_only_while_it_imports():
    """The signal mask is what it was before the call, and the module returned is torch."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    torch = core.import_torch()
    assert torch.__name__ == "torch"
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == before


def test_a_kernel_that_dies_before_its_first_reply_is_started_once_more(tmp_path, monkeypatch):
    """Renders started at once can draw the same free loopback port, and a kernel dies before replying to
    kernel_info (seen once in six concurrent renders on a loaded machine): nothing has run yet, so the render is
    tried once more. Any other error of a cell is raised at once, and a second failure is reported."""
    import papermill
    calls = []

    def fake(*_a, **_k):
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]

    monkeypatch.setattr(papermill, "execute_notebook", fake)
    failures = [RuntimeError("Kernel died before replying to kernel_info")]
    core.execute_notebook(tmp_path / "in.ipynb", tmp_path / "out.ipynb", {})
    assert len(calls) == 2

    calls.clear()
    failures = [RuntimeError("Kernel died before replying to kernel_info")] * 2
    with pytest.raises(RuntimeError, match="kernel_info"):
        core.execute_notebook(tmp_path / "in.ipynb", tmp_path / "out.ipynb", {})
    assert len(calls) == 2

    calls.clear()
    failures = [RuntimeError("a cell's own error")]
    with pytest.raises(RuntimeError, match="own error"):
        core.execute_notebook(tmp_path / "in.ipynb", tmp_path / "out.ipynb", {})
    assert len(calls) == 1
