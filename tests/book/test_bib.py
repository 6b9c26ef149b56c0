"""The bibliography reader (x4lib/book/bib.py): the keys pybtex finds, and one clear error for a bad file."""
import pytest

from conftest import ROOT
from x4lib.book import bib

BIB = """\
@string{nv = {NVIDIA}}
@comment{not an entry}
@preamble{"\\newcommand{\\noop}[1]{}"}
@misc{nvidia-h100-datasheet,
  title = {H100 datasheet}, author = nv,
}
@Article( kaplan-2020 , title = "Scaling laws" )
"""


def test_keys_are_the_entries_only():
    assert bib.keys(BIB) == {"nvidia-h100-datasheet", "kaplan-2020"}


def test_a_path_is_read_as_a_file_and_a_string_as_bibtex(tmp_path):
    f = tmp_path / "refs.bib"
    f.write_text(BIB, encoding="utf-8")
    assert bib.keys(f) == bib.keys(BIB)
    assert bib.keys(str(f)) == frozenset()     # a str is BibTeX text (here: no entry), never a file name


@pytest.mark.parametrize("text, needle", [
    ("@misc{a,\n title={x}\n\n@misc{b, title={y}}\n", "syntax error in line 4"),
    ("@misc{a, title = undefined_macro}\n", "undefined string in line 1: undefined_macro"),
    ("@misc{a, title={x}}\n@book{a, title={y}}\n", "repeated bibliography entry: a"),
])
def test_malformed_bibtex_is_one_error_naming_the_file(tmp_path, text, needle):
    f = tmp_path / "refs.bib"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(bib.BibError) as e:
        bib.keys(f)
    assert str(e.value).startswith(f"{f}: not valid BibTeX: ") and needle in str(e.value)


def test_non_utf8_and_missing_files_name_the_file(tmp_path):
    f = tmp_path / "latin1.bib"
    f.write_bytes("@misc{a, title={Garc\u00eda}}\n".encode("latin-1"))
    with pytest.raises(bib.BibError, match=r"latin1\.bib: not UTF-8 text \(byte 0xed at offset 20\)"):
        bib.keys(f)
    with pytest.raises(bib.BibError, match=r"nope\.bib: cannot read: No such file"):
        bib.keys(tmp_path / "nope.bib")


def test_REAL_BIBLIOGRAPHY_parses_without_errors():
    keys = bib.keys(ROOT / "book" / "references.bib")
    assert len(keys) > 10 and all(k == k.strip() and k for k in keys)
