"""Keep the jupytext pairs (book/*.md ↔ notebooks/*.ipynb) in step and their outputs fresh.

    python -m x4lib.book.nbtools sync      # book/*.md → notebooks/*.ipynb, outputs kept
    python -m x4lib.book.nbtools check     # exit 1 if any pair differs (used by the tests)
    python -m x4lib.book.nbtools refresh [STEM ...]   # sync, then re-execute the theory notebooks (or those named,
                                                      # e.g. 01-cpu-vs-gpu-vs-tpu-vs-trn1) in place

book/*.md is the source of truth (../shared/guides/stack.md: never `--sync` on mtimes).
Lab notebooks (``lab-*``) are kept without outputs: their outputs are one machine's measurements.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from x4lib import paths

ROOT = paths.REPO_ROOT
BOOK, NOTEBOOKS = ROOT / "book", ROOT / "notebooks"


def paired_sources() -> list[Path]:
    """book/*.md files that carry jupytext front matter (plain prose pages are not paired)."""
    return sorted(p for p in BOOK.glob("*.md") if "jupytext:" in p.read_text(encoding="utf-8").split("\n---", 1)[0])


def notebook_for(md: Path) -> Path:
    return NOTEBOOKS / f"{md.stem}.ipynb"


def _jupytext(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "jupytext"
    return subprocess.run([str(exe), *args], cwd=ROOT, capture_output=True, text=True)


def sync() -> None:
    for md in paired_sources():
        nb = notebook_for(md)
        args = ["--update"] if nb.exists() else []
        r = _jupytext(*args, "--to", "ipynb", "-o", str(nb), str(md))
        if r.returncode:
            raise SystemExit(f"jupytext failed on {md.name}: {r.stderr.strip()}")
        if md.stem.startswith("lab-"):
            _strip_outputs(nb)


def _strip_outputs(nb_path: Path) -> None:
    import nbformat
    nb = nbformat.read(nb_path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, nb_path)


def diff(md: Path) -> str:
    """The jupytext diff between a pair; empty when in sync."""
    nb = notebook_for(md)
    if not nb.exists():
        return f"{nb.relative_to(ROOT)} is missing"
    r = _jupytext("--diff", "--diff-format", "md:myst", str(nb), str(md))
    return (r.stdout + r.stderr).strip()


def refresh(stems: list[str] | None = None) -> None:
    """Re-execute the theory notebooks (or the ones named by stem) in place, with the sliced kernel waits of
    x4lib.book.kernel_waits (an explorer cell can otherwise sleep out its whole timeout on a loaded machine)."""
    import nbformat
    from nbclient import NotebookClient

    from x4lib.book.kernel_waits import sliced_kernel_waits
    sync()
    theory = {md.stem: md for md in paired_sources() if not md.stem.startswith("lab-")}
    unknown = sorted(set(stems or ()) - set(theory))
    if unknown:
        print(f"nbtools refresh: not a theory page: {', '.join(unknown)} (one of: {', '.join(sorted(theory))})",
              file=sys.stderr)
        raise SystemExit(2)
    for stem, md in theory.items():
        if stems and stem not in stems:
            continue
        nb_path = notebook_for(md)
        nb = nbformat.read(nb_path, as_version=4)
        with sliced_kernel_waits():
            NotebookClient(nb, timeout=600, kernel_name="python3",
                           resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
        nbformat.write(nb, nb_path)
        print(f"refreshed {nb_path.relative_to(ROOT)}")


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "check"
    if cmd == "sync":
        sync()
    elif cmd == "refresh":
        refresh(argv[1:])
    elif cmd == "check":
        bad = {md.name: d for md in paired_sources() if (d := diff(md))}
        for name, d in bad.items():
            print(f"{name} and its notebook differ:\n{d}\n", file=sys.stderr)
        return 1 if bad else 0
    else:
        print("usage: python -m x4lib.book.nbtools {sync|check|refresh [STEM ...]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
