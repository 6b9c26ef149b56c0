"""Keep the jupytext pairs (book/*.md ↔ notebooks/*.ipynb) in step and their outputs fresh.

    python -m x4lib.book.nbtools sync      # book/*.md → notebooks/*.ipynb, outputs kept
    python -m x4lib.book.nbtools check     # exit 1 if any pair differs (used by the tests)
    python -m x4lib.book.nbtools refresh [STEM ...]   # sync, then re-execute the theory notebooks (or those named,
                                                      # e.g. 01-cpu-vs-gpu-vs-tpu-vs-trn1) in place
    python -m x4lib.book.nbtools render-labs [STEM ...]   # sync, then execute the lab notebooks against their
                                                          # committed reference runs, in place

book/*.md is the source of truth (../shared/guides/stack.md: never `--sync` on mtimes).
Lab notebooks (``lab-*``) carry the outputs of rendering the committed reference run of a named device
(:data:`REFERENCE_RUNS`: the newest H100 run of the lab under book/runs/), never a measurement of the machine that
renders them, so they read on GitHub and every machine renders the same page; nbval does not compare them (the
tests run them under papermill with quick parameters instead). ``sync`` keeps those outputs.
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


def _chosen(cmd: str, what: str, labs: bool, stems: list[str] | None) -> list[tuple[str, Path]]:
    """Sync, then the (stem, .md) pairs of the labs (or the theory pages) named, all of them when none is named;
    a stem of the other kind: one line on stderr, exit 2."""
    sync()
    pages = {md.stem: md for md in paired_sources() if md.stem.startswith("lab-") == labs}
    unknown = sorted(set(stems or ()) - set(pages))
    if unknown:
        print(f"nbtools {cmd}: not {what}: {', '.join(unknown)} (one of: {', '.join(sorted(pages))})",
              file=sys.stderr)
        raise SystemExit(2)
    return [(stem, md) for stem, md in pages.items() if not stems or stem in stems]


#: lab page → (runs folder under book/runs, the name prefixes of the runs its committed notebook may render, in order
#: of preference: the H100's). Lab 01 has no cluster run of our own (its "Measured: ours" must never show someone
#: else's log), so until `runners lab01 --profile cluster-2x8` runs, its notebook renders our committed run of the
#: same benchmark with gloo on one CPU, labelled with that CPU as detected; a cluster run, once committed, wins.
REFERENCE_RUNS = {"lab-00-roofline": ("lab00", ("h100-",)),
                  "lab-01-collectives": ("lab01", ("cluster-2x8-", "local-cpu-")),
                  "lab-02-calibrate": ("lab02", ("h100-",))}


def reference_run(stem: str) -> Path | None:
    """The committed run a lab notebook is rendered from: the newest run of the first named device that has one
    (run ids sort by time); None for a lab without one."""
    if REFERENCE_RUNS[stem] is None:
        return None
    folder, prefixes = REFERENCE_RUNS[stem]
    for prefix in prefixes:
        runs = sorted(p for p in (BOOK / "runs" / folder).glob(prefix + "*") if (p / "results.json").is_file())
        if runs:
            return runs[-1]
    return None


def lab_parameters(stem: str) -> dict:
    """The papermill parameters of a lab's committed rendering: its reference run, nothing measured here."""
    run = reference_run(stem)
    return {"run_dir": str(run.relative_to(BOOK)) if run else "", "measure_here": False, "quick": False}


def render_labs(stems: list[str] | None = None) -> None:
    """Execute each lab notebook (kernel in book/, as the book build and the runners do) with its parameters
    cell set to :func:`lab_parameters`, and keep the outputs in the paired notebook. The parameters cell's source
    stays as the .md has it (the pair stays in sync); it has no output of its own."""
    import nbformat
    from nbclient import NotebookClient

    from x4lib.book.kernel_waits import sliced_kernel_waits
    for stem, md in _chosen("render-labs", "a lab page", True, stems):
        if reference_run(stem) is None:
            print(f"not rendered: {md.stem} has no committed reference run (its notebook keeps no outputs)")
            continue
        nb_path = notebook_for(md)
        nb = nbformat.read(nb_path, as_version=4)
        params = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
        if len(params) != 1:
            raise SystemExit(f"{md.name}: expected one cell tagged parameters, found {len(params)}")
        original = params[0].source
        params[0].source = original + "\n# rendered by nbtools render-labs\n" + "\n".join(
            f"{k} = {v!r}" for k, v in lab_parameters(stem).items())
        try:
            with sliced_kernel_waits():
                NotebookClient(nb, timeout=600, kernel_name="python3",
                               resources={"metadata": {"path": str(BOOK)}}).execute()
        finally:
            params[0].source = original
        params[0].outputs = []
        nbformat.write(nb, nb_path)
        print(f"rendered {nb_path.relative_to(ROOT)} from {lab_parameters(stem)['run_dir'] or 'no run'}")


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
    for stem, md in _chosen("refresh", "a theory page", False, stems):
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
    elif cmd == "render-labs":
        render_labs(argv[1:])
    elif cmd == "check":
        bad = {md.name: d for md in paired_sources() if (d := diff(md))}
        for name, d in bad.items():
            print(f"{name} and its notebook differ:\n{d}\n", file=sys.stderr)
        return 1 if bad else 0
    else:
        print("usage: python -m x4lib.book.nbtools {sync|check|refresh [STEM ...]|render-labs [STEM ...]}",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
