"""Run directories: book/runs/<lab>/<run-id>/ written atomically.

A run is measured into a hidden temporary directory next to its final place and renamed into place only
when results.json (and the executed notebook, when the notebook stack is there) are complete, so a failed
or interrupted run never leaves a results.json that looks complete. Standard library only.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_id(profile: str, device_slug: str, started_utc: str) -> str:
    """<profile>-<device-slug>-<YYYYmmddTHHMMSSZ>"""
    stamp = started_utc.replace("-", "").replace(":", "")
    return f"{profile}-{device_slug}-{stamp}"


def write_json_atomic(path: Path, data: dict) -> None:
    """Write JSON to a temporary file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class RunDir:
    """Context manager: yields a temporary directory; on success renames it to ``final``; on failure
    moves it to ``failed_root`` (outside book/, for diagnosis) and re-raises."""

    def __init__(self, final: Path, failed_root: Path):
        self.final, self.failed_root = Path(final), Path(failed_root)
        self.tmp = self.final.with_name(f".{self.final.name}.partial")

    def __enter__(self) -> Path:
        if self.final.exists():
            raise FileExistsError(f"run directory {self.final} already exists")
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True)
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            os.replace(self.tmp, self.final)
            return False
        self.failed_root.mkdir(parents=True, exist_ok=True)
        dest = self.failed_root / self.final.name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.move(str(self.tmp), dest)
        results = dest / "results.json"
        if results.exists():  # never leave a complete-looking results.json, even outside book/
            results.rename(dest / "results.incomplete.json")
        return False


BOOK_DIR = Path(__file__).resolve().parent.parent / "book"


def render_notebook(notebook: Path, run_dir: Path) -> Path:
    """Execute a lab notebook for one run with papermill (parameters run_dir, measure_here=False), writing
    the executed copy into ``run_dir``; the kernel runs in book/, as in the book build."""
    import papermill as pm
    out = Path(run_dir) / Path(notebook).name
    pm.execute_notebook(str(notebook), str(out), parameters={"run_dir": str(Path(run_dir).resolve()),
                                                              "measure_here": False},
                        cwd=str(BOOK_DIR), progress_bar=False, log_output=False, kernel_name="python3")
    return out


def notebook_stack_available(notebook: Path) -> bool:
    """True when the lab notebook exists and papermill imports (a bare pod has neither need nor stack)."""
    if not Path(notebook).exists():
        return False
    try:
        import papermill  # noqa: F401
    except ImportError:
        return False
    return True
