"""The runner core: what every lab shares. A lab plug-in (``runners/<lab>.py``, listed in ``runners.LABS``)
supplies only

    NAME, TITLE           "lab00", one line for --help
    NOTEBOOK              the lab notebook, relative to the repository root (None: a measure-only sweep whose
                          runs another lab's page draws, e.g. ``gemms``)
    add_arguments(p)      its own options (e.g. --import-log); may be empty
    measure(ctx)          -> Measured (results.json document, extra files, device name) or None (a torchrun rank
                          other than 0); it raises WrongDevice before measuring on the wrong machine

and gets the same verbs as every lab: ``--profile``, ``--quick``, ``--measure-only``, ``--render RUN_DIR`` and
``--runs-dir``. The core loads the profile, checks the destination before measuring, gives the lab a progress bar
(tqdm on stderr, silent when stderr is not a terminal or tqdm is absent), writes the run in a private folder,
validates it against the lab's schema, renders the notebook with papermill (unless ``--measure-only`` or the
notebook stack is absent) and publishes the run directory in one rename (``runners/rundir.py``).

Exit codes: 0 done; 1 the run failed or a check failed (nothing complete-looking is left in the runs
directory); 2 bad usage (unknown profile, wrong device, unwritable destination, an invalid run to render).
Measuring imports only the standard library and torch.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import os
import shutil
import sys
from pathlib import Path

from runners import LABS, profiles, rundir
from x4lib.cli import CheckFailed, UsageError, configure_streams, run_command, safe_text

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUNS_DIR = ROOT / "book" / "runs"
PROG = "python -m runners"


class RunFailed(RuntimeError):
    """The run started and failed (exit 1); the message says where its partial output went, if anywhere."""
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class Measured:
    """What a lab's measure() returns: the results.json document, extra files {name: text | bytes | Path} and the
    device name the run id is labelled with (the device detected, never the profile's)."""
    results: dict
    files: dict
    device_name: str
    render: bool = True  # False: never render (e.g. an imported log)


@dataclasses.dataclass(frozen=True)
class Context:
    """What a lab's measure() gets: the profile, its parameters for this lab (quick applied), the parsed options."""
    lab: str
    profile: dict
    params: dict
    args: argparse.Namespace

    @property
    def command(self) -> str:
        return " ".join(["python", "-m", "runners"] + sys.argv[1:])

    def progress(self, total: int, what: str):
        return progress(total, what)


class _Silent:
    def __init__(self, *a, **k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        pass

    def set_postfix_str(self, s):
        pass


def progress(total: int, what: str):
    """A progress bar on stderr (what is measured, how many left, elapsed); silent when stderr is not a terminal
    or when tqdm is not installed (a bare pod)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _Silent()
    return tqdm(total=total, desc=what, unit="step", file=sys.stderr, disable=not sys.stderr.isatty(),
                leave=False, dynamic_ncols=True)


def load_lab(name: str):
    return importlib.import_module(LABS[name])


# ------------------------------------------------------------------------------------------------ render

def notebook_stack_available() -> bool:
    try:
        import papermill  # noqa: F401
    except ImportError:
        return False
    return True


#: a lab notebook cell that runs longer than this when rendering is stuck, not slow (the slowest cells take
#: seconds; nothing is measured while rendering)
CELL_TIMEOUT_S = 300


from x4lib.book.kernel_waits import POLL_SLICE_S, sliced_kernel_waits  # noqa: E402,F401 — the renders' waits


@contextlib.contextmanager
def quiet_interrupt():
    """While a notebook renders, Ctrl-C first silences the loggers of the notebook machinery (nbclient's "Kernel
    died while waiting", asyncio's "Task exception was never retrieved" with its traceback, printed when the
    interrupted client's tasks are collected) and then raises KeyboardInterrupt as usual, so the command ends with
    its one "interrupted" line (exit 130). Only in the main thread, and only where SIGINT is not ignored."""
    import logging
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, None):
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def on_interrupt(signum, frame):
        for name in ("asyncio", "nbclient", "papermill", "traitlets", "jupyter_client"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        logging.getLogger().setLevel(logging.CRITICAL + 1)
        signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def execute_notebook(notebook: Path, out: Path, parameters: dict, cell_timeout_s: float = CELL_TIMEOUT_S) -> None:
    """Execute a lab notebook with papermill (kernel in book/, as in the book build), each cell limited to
    ``cell_timeout_s``. On a loaded machine a kernel and its client can both end up waiting for a message the
    other already sent (the cell done, the client never told); the time limit turns that into an error, and
    the notebook is executed once more before the error is reported. So is a kernel that dies before its first
    reply (renders started at once can draw the same free loopback port; nothing had run yet)."""
    import papermill as pm
    for attempt in (1, 2):
        try:
            with sliced_kernel_waits(), quiet_interrupt():
                pm.execute_notebook(str(notebook), str(out), parameters=parameters, cwd=str(ROOT / "book"),
                                    progress_bar=False, log_output=False, kernel_name="python3",
                                    execution_timeout=cell_timeout_s,
                                    # the kernel's own log is noise on this command's stderr: its warning that
                                    # TCP is unencrypted (it talks to this process over loopback) on every render,
                                    # and after a Ctrl-C the traceback of the reply it can no longer send. A
                                    # cell's errors reach this process as messages, not through that log.
                                    extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
            return
        except Exception as exc:  # noqa: BLE001 — only a timed-out or dead kernel is retried
            if attempt == 2 or not _worth_a_second_try(exc):
                raise


def _worth_a_second_try(exc: BaseException) -> bool:
    """A cell that timed out, a kernel that died, or one that died or stayed silent before its first reply
    (jupyter_client's wait_for_ready raises a bare RuntimeError for both)."""
    if type(exc).__name__ in ("CellTimeoutError", "DeadKernelError", "TimeoutError"):
        return True
    text = str(exc)
    return type(exc) is RuntimeError and ("before replying to kernel_info" in text or "didn't respond" in text)


def render(lab, run_dir: Path, stage: Path | None = None) -> Path:
    """Execute the lab notebook for the run in ``run_dir`` (papermill, kernel in book/ as in the book build) and
    put the executed copy into ``run_dir``. The notebook is written elsewhere first, so a failed render leaves
    nothing in the run folder (the failed copy goes to out/failed-runs/)."""
    notebook = ROOT / lab.NOTEBOOK
    # a folder of this process (two renders of one run do not collide) holding its .pid (another run's sweep of
    # stale folders leaves a render in progress alone)
    out_dir = Path(stage) if stage else rundir.STAGING / f"render-{rundir.slug(run_dir.name)}-{os.getpid()}"
    out_dir.mkdir(parents=True, exist_ok=True)
    if not stage:
        (out_dir / ".pid").write_text(str(os.getpid()), encoding="utf-8")
    tmp = out_dir / f".rendering-{notebook.name}"
    try:
        execute_notebook(notebook, tmp, {"run_dir": str(Path(run_dir).resolve()), "measure_here": False})
    except Exception as exc:  # noqa: BLE001 — papermill raises the cell's exception; keep its first line
        rundir.FAILED.mkdir(parents=True, exist_ok=True)
        kept = rundir.FAILED / f"{run_dir.name}-{notebook.name}"
        if tmp.exists():
            tmp.replace(kept)
        if not stage:
            shutil.rmtree(out_dir, ignore_errors=True)
        raise RunFailed(f"rendering {notebook.name} failed: {type(exc).__name__}: "
                        f"{str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else ''} "
                        f"(the failed notebook is {kept.relative_to(ROOT) if kept.exists() else 'not kept'})") from None
    final = Path(run_dir) / notebook.name
    tmp.replace(final)
    if not stage:
        shutil.rmtree(out_dir, ignore_errors=True)
    return final


def render_existing(lab, run_dir: Path) -> Path:
    """``--render RUN_DIR``: validate the run first (one line and exit 2 when it is not a valid run of this
    lab), then render it."""
    if lab.NOTEBOOK is None:
        raise UsageError(f"{lab.NAME} runs have no notebook of their own (another lab's page draws them)")
    if not notebook_stack_available():
        raise UsageError("rendering needs the notebook stack (papermill): run `make setup` first")
    from x4lib.harness import runs
    runs.load_run(Path(run_dir), lab.NAME)
    return render(lab, Path(run_dir))


# --------------------------------------------------------------------------------------------------- run

def _validate(results: dict, lab: str) -> None:
    """The schema check before storing, where jsonschema is installed (a bare pod may lack it; the page checks
    again when it reads the run)."""
    try:
        from x4lib.harness import runs
        import jsonschema  # noqa: F401
    except ImportError:
        return
    runs.validate(results, lab, "the run's results")


def import_torch():
    """Import torch with SIGINT held back until the import returns. Ctrl-C that lands inside torch's C++
    initialisation raises KeyboardInterrupt through pybind11, which aborts the process ("terminate called after
    throwing an instance of 'pybind11::error_already_set'", exit -6, seen on a fresh clone's CI run); held, the
    signal is delivered right after, as Python's KeyboardInterrupt, and the command ends with its one line. The labs'
    own ``import torch`` then finds it imported."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        import torch
        return torch
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        import torch
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return torch


def run(lab, args) -> Path | None:
    """Measure with a profile and publish the run directory; returns it (None on non-zero torchrun ranks)."""
    profile = profiles.load(args.profile)
    params = profiles.lab_params(profile, lab.NAME, args.quick)
    dest = rundir.check_destination(args.runs_dir, lab.NAME)
    rundir.sweep_stale()
    try:
        import_torch()
        measured = lab.measure(Context(lab.NAME, profile, params, args))
    except ImportError as exc:
        raise UsageError(f"{exc}: the measuring entry needs torch (pods: use the image's own CUDA torch)") from None
    except (UsageError, CheckFailed, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 — one line, no traceback; nothing was staged yet
        raise RunFailed(f"run failed: {type(exc).__name__}: {str(exc).strip()[:300]}") from None
    if measured is None:
        return None
    rid = rundir.new_run_id(profile["name"], measured.device_name)
    staged = rundir.Staged(rid)
    try:
        with staged:
            for name, content in measured.files.items():
                target = staged.path / name
                if isinstance(content, Path):
                    target.write_bytes(content.read_bytes())
                elif isinstance(content, bytes):
                    target.write_bytes(content)
                else:
                    target.write_text(content, encoding="utf-8")
            _validate(measured.results, lab.NAME)
            rundir.write_json(staged.path / "results.json", measured.results)
            if measured.render and lab.NOTEBOOK and not args.measure_only and notebook_stack_available():
                render(lab, staged.path, stage=staged.path)
            return staged.publish(dest)
    except (UsageError, CheckFailed):
        raise
    except Exception as exc:  # noqa: BLE001 — one line, no traceback
        where = (f" (partial output moved to {staged.moved_to.relative_to(ROOT)})"
                 if staged.moved_to and staged.moved_to.is_relative_to(ROOT) else "")
        if isinstance(exc, RunFailed):
            raise RunFailed(f"{exc}{where}") from None
        raise RunFailed(f"run failed: {type(exc).__name__}: {str(exc).strip()[:300]}{where}") from None


# ---------------------------------------------------------------------------------------------- command line

def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    p = argparse.ArgumentParser(prog=PROG, description="Run a lab for a device profile and store the run "
                                                       "under book/runs/<lab>/<run-id>/.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    subs = {}
    s = sub.add_parser("profiles", help="list the device profiles")
    s.add_argument("--json", action="store_true")
    subs["profiles"] = s
    for name in LABS:
        lab = load_lab(name)
        lp = sub.add_parser(name, help=lab.TITLE, description=lab.TITLE)
        what = lp.add_mutually_exclusive_group(required=True)
        what.add_argument("--profile", help="one of: " + ", ".join(profiles.names()))
        what.add_argument("--render", metavar="RUN_DIR", type=Path,
                          help="render the lab notebook for a run measured elsewhere (--measure-only)")
        lp.add_argument("--quick", action="store_true", help="a small sweep (tests, smoke runs)")
        lp.add_argument("--measure-only", action="store_true",
                        help="measure and write results.json only (standard library + torch; no notebook)")
        lp.add_argument("--runs-dir", "--out", default=str(DEFAULT_RUNS_DIR),
                        help="where run directories go (default: book/runs, the committed runs)")
        lab.add_arguments(lp)
        subs[name] = lp
    return p, subs


def _profiles(args) -> int:
    data = [profiles.load(n) for n in profiles.names()]
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    for d in data:
        ids = ", ".join(d["expects"]["catalog_ids"]) or "any CPU"
        print(f"{d['name']:12} {d['expects']['kind']:8} {ids:45} {d['description']}")
    return 0


def _lab(args) -> int:
    lab = load_lab(args.command)
    final = render_existing(lab, args.render) if args.render else run(lab, args)
    if final is not None:
        print(safe_text(str(final)))
    return 0


def main(argv: list[str] | None = None) -> int:
    configure_streams()
    parser, subs = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    handler = _profiles if args.command == "profiles" else _lab
    return run_command(handler, args, subs[args.command].error, f"{PROG} {args.command}")
