"""Lab runs are data: every ``book/runs/<lab>/<run-id>/results.json`` is read, validated against the lab's JSON
Schema (``x4lib/schemas/<lab>_results.schema.json``) and handed to the page as one generic :class:`Run`.

A page asks for its runs with one call, :func:`page_runs`: the run shown on the page (a run directory rendered
by ``python -m runners ... --render``, or this machine measured now through the runner's command line) and every
committed run of the lab. The device label always comes from results.json (the machine that measured), never from
the machine that renders. A run stores raw timings, sizes and the detected device; peaks, fits and efficiencies
are derived by the lab's page helpers (``x4lib.pages.<lab>``) when the page is drawn. Runs of every schema
version the lab has had still load. Used in: book/lab-00-roofline.md, book/lab-01-collectives.md.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Mapping
from x4lib import paths

ROOT = paths.REPO_ROOT
RUNS_DIR = ROOT / "book" / "runs"
BUILD_RUNS_DIR = ROOT / "out" / "build-runs"
SCHEMAS = paths.SCHEMA_DIR


class RunError(ValueError):
    """A results.json that is missing, not JSON, or does not meet its schema; the message names the file and the
    field. A usage error for ``--render`` (exit 2)."""
    exit_code = 2


@dataclasses.dataclass(frozen=True)
class Run:
    """One run directory: its id, path, lab, the parsed results.json and whether it is a committed run."""
    run_id: str
    path: Path
    lab: str
    results: Mapping
    committed: bool

    @property
    def device(self) -> Mapping:
        return self.results["device"]

    @property
    def device_label(self) -> str:
        """The detected device name, with its catalog id when it has one."""
        d = self.device
        return d["detected_name"] + (f" ({d['catalog_id']})" if d.get("catalog_id") else "")

    @property
    def started_utc(self) -> str:
        return self.results["started_utc"]

    @property
    def quick(self) -> bool:
        return bool(self.results.get("quick", False))

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self.results.get("warnings", ()))


@dataclasses.dataclass(frozen=True)
class PageRuns:
    """What a lab page draws: ``this`` (the run the page is rendered for, or None) and ``runs`` (every committed
    run, plus ``this`` when it is not committed), sorted by start time."""
    this: Run | None
    runs: tuple[Run, ...]

    @property
    def committed(self) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if r.committed)


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def schema(lab: str) -> dict:
    path = SCHEMAS / f"{lab}_results.schema.json"
    if not path.is_file():
        raise RunError(f"no lab called {lab!r} (no {path.name})")
    return json.loads(path.read_text(encoding="utf-8"))


def validate(results: Mapping, lab: str, where: str = "results.json") -> None:
    """Raise :class:`RunError` naming ``where`` and the field unless ``results`` meets the lab's schema."""
    from x4lib.catalog import specs
    try:
        specs.validate_schema(results, schema(lab))
    except specs.SchemaViolation as exc:
        raise RunError(f"{where}: {exc.where}: {exc.message[:300]}") from None
    check_times(results, where)


#: a stored time in physical sense: above a nanosecond, below a day (seconds in ``*_s``, µs in ``*_us``)
TIME_RANGE_S = (1e-9, 86400.0)


def check_times(results, where: str = "results.json") -> None:
    """Raise :class:`RunError` naming the field unless every time a run stores (TIME_FIELDS, and the lists
    ``times_s`` / ``times_us``) is finite, above a nanosecond and below a day: a schema
    allows 5e-324 s, which would show as an infinite rate."""
    lo, hi = TIME_RANGE_S
    stack = [(results, "")]
    while stack:
        obj, at = stack.pop()
        items = obj.items() if isinstance(obj, Mapping) else enumerate(obj) if isinstance(obj, list) else ()
        for k, v in items:
            here = f"{at}/{k}" if at else str(k)
            if isinstance(v, (Mapping, list)):
                key = k if isinstance(k, str) else ""
                if key in ("times_s", "times_us") and isinstance(v, list):
                    scale = 1.0 if key == "times_s" else 1e-6
                    for i, x in enumerate(v):
                        _check_time(x * scale if isinstance(x, (int, float)) else x, f"{here}/{i}", where, lo, hi)
                else:
                    stack.append((v, here))
            elif k in TIME_FIELDS and isinstance(v, (int, float)) and not isinstance(v, bool):
                _check_time(v * (1e-6 if k.endswith("_us") else 1.0), here, where, lo, hi)


TIME_FIELDS = frozenset({"best_s", "median_s", "time_us", "elapsed_s"})


def _check_time(v, here: str, where: str, lo: float, hi: float) -> None:
    if isinstance(v, (int, float)) and not (lo < v < hi):
        raise RunError(f"{where}: {here}: {v:g} s is not a time a run measures (above 1 ns, below a day)")


MAX_RESULTS_BYTES = 64 * 2**20   # as a log: a run stores its rows, not more
MAX_RESULTS_DEPTH = 16           # the schemas nest 6 levels


def read_limited(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes: opened without blocking (a FIFO with no writer
    returns at once), type and size checked on the open descriptor (a symlink to /dev/zero is a device), read
    no further than the limit. Raises OSError (FileNotFoundError) or ValueError naming what is wrong."""
    import os
    import stat
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file (a FIFO, a device or a directory)")
        if st.st_size > limit:
            raise ValueError(f"larger than {limit // 2**20} MiB")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise ValueError(f"larger than {limit // 2**20} MiB")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _depth(obj) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        o, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_RESULTS_DEPTH:
            return d
        if isinstance(o, dict):
            stack.extend((v, d + 1) for v in o.values())
        elif isinstance(o, list):
            stack.extend((v, d + 1) for v in o)
    return deepest


def load_run(path: Path, lab: str, committed: bool = True) -> Run:
    """Read and validate ``path/results.json`` (strict JSON: NaN and Infinity are refused)."""
    path = Path(path)
    where = f"{path}/results.json"
    try:
        data = _strict_json(read_limited(path / "results.json", MAX_RESULTS_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise RunError(f"{where}: no such file (is {path} a run directory?)") from None
    except RecursionError:
        raise RunError(f"{where}: nested too deeply to be a results.json") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunError(f"{where}: unreadable or not JSON ({str(exc).splitlines()[0][:200]})") from None
    if not isinstance(data, dict):
        raise RunError(f"{where}: expected a JSON object")
    if _depth(data) > MAX_RESULTS_DEPTH:
        raise RunError(f"{where}: nested more than {MAX_RESULTS_DEPTH} levels deep; not a results.json")
    validate(data, lab, where)
    if data.get("lab") != lab:
        raise RunError(f"{where}: a run of {data.get('lab')!r}, not {lab!r}")
    return Run(path.name, path, lab, MappingProxyType(data), committed)


def committed_dirs(lab: str, runs_dir: Path = RUNS_DIR) -> list[Path]:
    """Run directories of ``lab`` under ``runs_dir`` (hidden folders, e.g. an interrupted copy, are skipped)."""
    lab_dir = Path(runs_dir) / lab
    if not lab_dir.is_dir():
        return []
    return sorted(p for p in lab_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def load_runs(lab: str, runs_dir: Path = RUNS_DIR) -> list[Run]:
    """Every committed run of ``lab``, sorted by start time."""
    runs = [load_run(p, lab, True) for p in committed_dirs(lab, runs_dir)]
    return sorted(runs, key=lambda r: r.started_utc)


def measure_here(lab: str, quick: bool = False, out_dir: Path = BUILD_RUNS_DIR, timeout_s: float = 1800) -> Path:
    """Measure this machine's CPU with the lab's ``local-cpu`` profile through the runner's command line (as a
    reader would), into ``out_dir`` (git-ignored, never book/runs); returns the new run directory."""
    cmd = [sys.executable, "-m", "runners", lab, "--profile", "local-cpu", "--measure-only",
           "--runs-dir", str(out_dir)] + (["--quick"] if quick else [])
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout_s)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"measuring this machine failed: {last}")
    return Path(r.stdout.strip().splitlines()[-1])


def page_runs(lab: str, run_dir: str | Path = "", measure: bool = False, quick: bool = False,
              runs_root: str | Path = "") -> PageRuns:
    """The one call a lab page makes (its papermill parameters passed through): ``run_dir`` renders that run;
    else ``measure`` measures this machine now; ``runs_root`` replaces book/runs (tests)."""
    root = Path(runs_root) if runs_root else RUNS_DIR
    committed = load_runs(lab, root)
    here = Path(run_dir) if run_dir else (measure_here(lab, quick) if measure else None)
    if here is None:
        return PageRuns(None, tuple(committed))
    same = [r for r in committed if r.path.resolve() == here.resolve()]
    this = same[0] if same else load_run(here, lab, committed=False)
    runs = committed if same else sorted(committed + [this], key=lambda r: r.started_utc)
    return PageRuns(this, tuple(runs))


def runs_rows(runs) -> list[dict]:
    """One row per run for the page's list of runs: the device as detected, profile, start, method, warnings."""
    return [{"run": r.run_id, "device (as detected)": r.device_label, "profile": r.results["profile"],
             "started (UTC)": r.started_utc, "method version": r.results["method_version"],
             "smoke test (--quick)": "yes" if r.quick else "no", "committed": "yes" if r.committed else "no",
             "warnings": len(r.warnings)} for r in runs]


def runs_table(runs):
    """:func:`runs_rows` as a table for the page."""
    from x4lib.book.tables import Col, table
    return table(runs_rows(runs), {"run": Col("run", wrap=True), "device (as detected)": Col("device (as detected)",
                                                                                               wrap=True),
                                   "profile": "profile", "started (UTC)": "started (UTC)",
                                   "method version": "method version", "smoke test (--quick)": "smoke test (--quick)",
                                   "committed": "committed", "warnings": "warnings"})
