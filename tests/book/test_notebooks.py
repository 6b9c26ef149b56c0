"""The jupytext pairs and the committed reference outputs."""
import nbformat
import pytest

from x4lib.book import nbtools

PAIRS = nbtools.paired_sources()


def test_there_are_paired_chapters():
    assert any(p.stem == "00-motivation" for p in PAIRS)


@pytest.mark.parametrize("md", PAIRS, ids=lambda p: p.name)
def test_markdown_and_notebook_are_in_sync(md):
    assert nbtools.diff(md) == "", "run `make sync` (book/*.md is the source of truth)"


@pytest.mark.parametrize("md", [p for p in PAIRS if not p.stem.startswith("lab-")], ids=lambda p: p.name)
def test_theory_notebooks_are_committed_executed(md):
    nb = nbformat.read(nbtools.notebook_for(md), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code), "run `make refresh`"
    assert not any(o.get("output_type") == "error" for c in code for o in c.outputs)


@pytest.mark.parametrize("md", [p for p in PAIRS if p.stem.startswith("lab-")], ids=lambda p: p.name)
def test_lab_notebooks_are_committed_without_outputs(md):
    nb = nbformat.read(nbtools.notebook_for(md), as_version=4)
    assert all(not c.outputs for c in nb.cells if c.cell_type == "code")
