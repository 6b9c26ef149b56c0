"""Committed lab runs are data: every ``book/runs/<lab>/*/results.json`` is read, validated against the
lab's JSON Schema, and drawn. The device label always comes from results.json (the machine that measured),
never from the machine that renders. Used in: book/lab-00-roofline.md.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parent.parent
RUNS_DIR = ROOT / "book" / "runs"
SCHEMAS = Path(__file__).parent / "schemas"


class RunError(ValueError):
    """A results.json that does not meet its schema; the message names the file and the field."""


@dataclasses.dataclass(frozen=True)
class Run:
    run_id: str
    path: Path
    results: dict
    committed: bool

    @property
    def device_label(self) -> str:
        d = self.results["device"]
        return d["detected_name"] + (f" ({d['catalog_id']})" if d.get("catalog_id") else "")

    def ok_matmul(self) -> list[dict]:
        return [r for r in self.results["matmul"] if r["status"] == "ok"]

    def best(self, dtype: str) -> dict | None:
        """The matmul row with the highest best-of-repeats rate for ``dtype``."""
        rows = [r for r in self.ok_matmul() if r["dtype"] == dtype]
        return max(rows, key=lambda r: r["tflops_best"]) if rows else None


def load_run(path: Path, lab: str = "lab00", committed: bool = True) -> Run:
    path = Path(path)
    try:
        data = json.loads((path / "results.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise RunError(f"{path}/results.json: unreadable ({exc})") from None
    schema = json.loads((SCHEMAS / f"{lab}_results.schema.json").read_text())
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise RunError(f"{path}/results.json: {where}: {exc.message}") from None
    return Run(path.name, path, data, committed)


def load_runs(lab: str = "lab00", runs_dir: Path = RUNS_DIR, extra: list[Path] = ()) -> list[Run]:
    """Every committed run of ``lab`` (sorted by start time), plus ``extra`` run directories (not committed)."""
    lab_dir = Path(runs_dir) / lab
    committed = sorted(p for p in lab_dir.glob("*") if p.is_dir() and not p.name.startswith(".")) \
        if lab_dir.exists() else []
    runs = [load_run(p, lab, True) for p in committed] + [load_run(p, lab, False) for p in extra]
    return sorted(runs, key=lambda r: r.results["started_utc"])


def runs_table(runs: list[Run]):
    """One row per run: the device as detected, profile, start time, harness version, warnings."""
    import pandas as pd
    rows = [{"run": r.run_id, "device (as detected)": r.device_label, "profile": r.results["profile"],
             "started (UTC)": r.results["started_utc"], "harness": r.results["method_version"],
             "quick": r.results.get("quick", False), "committed": r.committed,
             "warnings": len(r.results["warnings"])} for r in runs]
    return pd.DataFrame(rows).set_index("run") if rows else pd.DataFrame()
