"""Run directories: written in a private folder, published into book/runs/<lab>/<run-id>/ in one rename.

- Every run has its own id (UTC time to the millisecond plus a random part), so two runs started together never
  share anything.
- A run is written into ``out/partial/<run-id>/`` (git-ignored; it holds a ``.pid`` file) and moved into the runs
  directory only when results.json (and the executed notebook, when rendered) are complete. An interrupted or
  killed run never leaves a folder under book/runs; its stale staging folder is swept by the next run.
- A failed run's staging folder is moved to ``out/failed-runs/<run-id>/`` with results.json renamed
  ``results.incomplete.json``, so nothing that looks complete is left anywhere.
- The destination is checked before anything is measured.

Standard library only (the measuring entry runs on a bare pod).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGING = ROOT / "out" / "partial"
FAILED = ROOT / "out" / "failed-runs"


class DestinationError(ValueError):
    """The runs directory cannot take a run (exit 2, before measuring)."""
    exit_code = 2


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def slug(name: str) -> str:
    """Run-id slug: lower case, non-alphanumerics as '-'."""
    out, dash = [], False
    for ch in name.lower():
        if ch.isascii() and ch.isalnum():
            out.append(ch)
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    return "".join(out).strip("-")[:60] or "device"


def new_run_id(profile: str, device_name: str) -> str:
    """``<profile>-<device-slug>-<YYYYmmddTHHMMSS.mmm>Z-<random>``: unique even for runs started together."""
    now = dt.datetime.now(dt.timezone.utc)
    return f"{profile}-{slug(device_name)}-{now:%Y%m%dT%H%M%S}.{now.microsecond // 1000:03d}Z-{secrets.token_hex(4)}"


def write_json(path: Path, data: dict) -> None:
    """Strict JSON (NaN and Infinity are refused with ValueError), written to a temporary name then renamed."""
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def check_destination(runs_dir, lab: str) -> Path:
    """``runs_dir/<lab>``, checked before anything is measured (DestinationError, exit 2, when it cannot be
    written); folders that do not exist yet are created only when the run is published."""
    if runs_dir is None or not str(runs_dir).strip():
        raise DestinationError("--runs-dir is empty: name a folder (default: book/runs)")
    base = Path(runs_dir)
    try:
        if base.exists() and not base.is_dir():
            raise DestinationError(f"--runs-dir {base} is a file, not a folder")
        dest = base / lab
        existing = next(p for p in (dest, *dest.parents) if p.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise DestinationError(f"--runs-dir {base}: cannot write there ({existing} is not a writable folder)")
        prove_writable(dest)
    except OSError as exc:  # a name too long, /proc or /sys, a read-only mount: all bad usage, named
        raise DestinationError(f"--runs-dir {base}: cannot write there ({exc.strerror or exc})") from None
    sweep_partial(dest)
    return dest


def prove_writable(dest: Path, attempts: int = 5) -> None:
    """Create ``dest`` (and its missing parents), write and remove a probe file in it, then remove the folders
    this made: /proc, /sys and names too long fail here, before anything is measured (OSError). Two runs started
    together may create, probe and remove the same new folders at once: a folder another process made first is
    not ours to remove, and a folder removed under us by the other's clean-up is made again (``attempts``)."""
    for attempt in range(attempts):
        made = []
        try:
            for p in reversed((dest, *dest.parents)):
                if not p.is_dir():
                    try:
                        p.mkdir()
                        made.append(p)
                    except FileExistsError:
                        pass  # made by another process a moment ago (or a file: mkstemp below says so)
            fd, probe = tempfile.mkstemp(prefix=".probe-", dir=dest)
            os.close(fd)
            os.unlink(probe)
            return
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise
        finally:
            for p in reversed(made):
                try:
                    p.rmdir()
                except OSError:
                    pass


def sweep_partial(dest: Path) -> list[Path]:
    """Remove the hidden ``.<run-id>.<pid>.partial`` copies of publishes across file systems whose process is
    gone (a SIGKILL between the copy and the rename)."""
    removed = []
    if not dest.is_dir():
        return removed
    for d in dest.glob(".*.partial"):
        pid = d.name.rsplit(".", 2)[-2] if d.name.count(".") >= 3 else ""
        if not pid.isdigit() or not _pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(staging: Path = STAGING) -> list[Path]:
    """Remove staging folders whose process is gone (a killed run); returns what was removed."""
    removed = []
    for d in sorted(Path(staging).glob("*")) if Path(staging).is_dir() else []:
        try:
            pid = int((d / ".pid").read_text(encoding="utf-8", errors="replace").strip())
        except (OSError, ValueError):
            pid = None
        if pid is None or not _pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


class Staged:
    """A private folder for one run: ``with Staged(run_id) as tmp: ...`` then :meth:`publish` or :meth:`fail`."""

    def __init__(self, run_id: str, staging: Path = STAGING, failed: Path = FAILED):
        self.run_id, self.failed_root = run_id, Path(failed)
        self.path = Path(staging) / run_id

    def __enter__(self) -> "Staged":
        self.path.mkdir(parents=True)
        (self.path / ".pid").write_text(str(os.getpid()))
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None and self.path.exists():
            self.moved_to = self.fail()
        return False

    moved_to: Path | None = None

    def publish(self, dest_dir: Path) -> Path:
        """Move the finished run to ``dest_dir/<run-id>`` atomically (a rename; across file systems, a copy into a
        hidden folder beside it and then a rename)."""
        (self.path / ".pid").unlink(missing_ok=True)
        Path(dest_dir).mkdir(parents=True, exist_ok=True)
        final = Path(dest_dir) / self.run_id
        if final.exists():
            raise FileExistsError(f"run directory {final} already exists")
        try:
            os.replace(self.path, final)
        except OSError:
            hidden = final.with_name(f".{self.run_id}.{os.getpid()}.partial")
            shutil.copytree(self.path, hidden)
            os.replace(hidden, final)
            shutil.rmtree(self.path, ignore_errors=True)
        return final

    def fail(self) -> Path | None:
        """Move the unfinished run to out/failed-runs/<run-id>/ (results.json renamed results.incomplete.json);
        returns where it went, or None when there was nothing worth keeping."""
        (self.path / ".pid").unlink(missing_ok=True)
        if not any(self.path.iterdir()):
            shutil.rmtree(self.path, ignore_errors=True)
            return None
        self.failed_root.mkdir(parents=True, exist_ok=True)
        dest = self.failed_root / self.run_id
        shutil.move(str(self.path), dest)
        results = dest / "results.json"
        if results.exists():
            results.rename(dest / "results.incomplete.json")
        return dest
