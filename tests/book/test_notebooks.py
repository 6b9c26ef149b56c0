"""The jupytext pairs and the committed reference outputs."""
import re

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
def test_lab_notebooks_carry_the_rendering_of_their_reference_run(md):
    """A lab notebook reads on GitHub: it is committed executed, without errors, against the lab's committed
    reference run (``nbtools render-labs``), never measuring the machine that rendered it; nbval ignores it
    (pyproject's --ignore-glob), so a machine-dependent digit in it fails nothing."""
    run = nbtools.reference_run(md.stem)
    nb = nbformat.read(nbtools.notebook_for(md), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if run is None:  # no committed run of our own to render: no outputs rather than this machine's
        assert all(not c.outputs for c in code)
        pytest.skip(f"{md.stem} has no committed reference run yet: committed without outputs")
    assert code and all(c.execution_count is not None for c in code), "run `nbtools render-labs`"
    assert not any(o.get("output_type") == "error" for c in code for o in c.outputs)
    params = nbtools.lab_parameters(md.stem)
    assert params["measure_here"] is False
    folder, prefixes = nbtools.REFERENCE_RUNS[md.stem]
    assert run.parent.name == folder and run.name.startswith(prefixes) and (run / "results.json").is_file()
    assert params["run_dir"] == str(run.relative_to(nbtools.BOOK))


#: a float literal in an output (1.5, -2.25e-05, 3e+12; not part of a word, a version or a hex address)
FLOAT = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?![\w.])")
#: more significant digits than any prose format uses: the last bits of a float, which differ between CPUs
MAX_SIGNIFICANT_DIGITS = 10


def significant_digits(literal: str) -> int:
    mantissa = re.split(r"[eE]", literal.lstrip("+-"))[0]
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits.rstrip("0")) if "." in mantissa else len(digits)


def full_precision_floats(nb) -> list[str]:
    """Floats with more than MAX_SIGNIFICANT_DIGITS significant digits in the text outputs (glued values
    included) of the cells nbval compares, as 'cell N (glue name): value'."""
    found = []
    for i, cell in enumerate(nb.cells):
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell.cell_type != "code" or tags & {"nbval-ignore-output", "nbval-skip"}:
            continue
        for out in cell.outputs:
            texts = [out.get("text", "")] if out.get("output_type") == "stream" else [
                v for k, v in out.get("data", {}).items() if k.endswith("text/plain")]
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            for text in texts:
                found += [f"cell {i}{f' ({name})' if name else ''}: {m.group()}" for m in FLOAT.finditer(str(text))
                          if significant_digits(m.group()) > MAX_SIGNIFICANT_DIGITS]
    return found


def test_the_float_scan_finds_full_precision_and_only_that():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
            "display_data", data={"application/papermill.record/text/plain": "3.7446019289451855"},
            metadata={"scrapbook": {"name": "mm_err_pct"}})]),
        nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("stream", name="stdout",
                                                                  text="3.74 1.5e-05 torch 2.13.0 0xdeadbeef 42\n")]),
        nbformat.v4.new_code_cell(metadata={"tags": ["nbval-ignore-output"]}, outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="0.30000000000000004\n")])])
    assert full_precision_floats(nb) == ["cell 0 (mm_err_pct): 3.7446019289451855"]
    assert significant_digits("1.2345678901e+12") == 11 and significant_digits("0.000123") == 3


@pytest.mark.parametrize("md", [p for p in PAIRS if not p.stem.startswith("lab-")], ids=lambda p: p.name)
def test_theory_outputs_hold_no_machine_dependent_full_precision_float(md):
    """A reference output nbval compares must be the same on every CPU: a float at full precision carries the last
    bits of this machine's arithmetic. Glue through ``x4lib.pages.glue`` (rounds at the source), round a value
    this CPU computes to what the prose shows, or tag a genuinely machine-dependent cell nbval-ignore-output."""
    found = full_precision_floats(nbformat.read(nbtools.notebook_for(md), as_version=4))
    assert not found, "full-precision floats in compared outputs (run `make refresh` after rounding):\n" + \
        "\n".join(found[:20])


def test_a_lab_renders_the_newest_run_of_the_first_device_that_has_one(tmp_path, monkeypatch):
    """Lab 01 renders a committed cluster run when there is one, else our committed run on one CPU."""
    def add(name):
        d = tmp_path / "runs" / "lab01" / name
        d.mkdir(parents=True)
        (d / "results.json").write_text("{}")
    monkeypatch.setattr(nbtools, "BOOK", tmp_path)
    assert nbtools.reference_run("lab-01-collectives") is None
    add("local-cpu-amd-epyc-20261127T100000.000Z-aaaa")
    add("local-cpu-amd-epyc-20261127T120000.000Z-bbbb")
    assert nbtools.reference_run("lab-01-collectives").name.endswith("bbbb")
    add("cluster-2x8-h100-20261101T000000.000Z-cccc")
    (tmp_path / "runs" / "lab01" / "local-cpu-amd-epyc-20261128T000000.000Z-dddd").mkdir()  # no results.json
    assert nbtools.reference_run("lab-01-collectives").name.endswith("cccc")
