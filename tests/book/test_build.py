"""The strict build of the whole book (one forced build, shared through the book_build fixture)."""
import re

import pytest

from conftest import ROOT

pytestmark = pytest.mark.build

TOC_PAGES = ["00-motivation", "01-cpu-vs-gpu-vs-tpu-vs-trn1", "02-h100-and-h200", "02b-memory-and-decode",
             "02c-nvlink-and-nvl72", "03-interconnects-and-topology", "04-datacenter-economics",
             "05-the-accelerator-landscape-2026", "lab-00-roofline", "lab-01-collectives", "capstone-8-to-1024",
             "appendix-corrections", "appendix-ground-truth", "bibliography"]


def test_strict_build_succeeds(book_build):
    assert book_build.returncode == 0, book_build.stdout[-4000:] + book_build.stderr[-4000:]
    assert (ROOT / "_build" / "html" / "index.html").exists()


def test_every_chapter_and_lab_is_in_the_navigation(book_build):
    html = (ROOT / "_build" / "html" / "book" / "index.html").read_text()
    for page in TOC_PAGES:
        assert re.search(rf'href="{page}\.html"', html), page


def test_motivation_page_has_its_quiz_answer_and_spanish_summary(book_build):
    html = (ROOT / "_build" / "html" / "book" / "00-motivation.html").read_text()
    assert "Resumen en español" in html
    assert "Worked example: the quiz" in html
    assert "ex-motivation-sparse" in html
    assert "<img" in html  # the static figures


def test_no_failed_notebook_reports(book_build):
    reports = ROOT / "_build" / "html" / "reports"
    assert not reports.exists() or not list(reports.glob("*.err.log"))
