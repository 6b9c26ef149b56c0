"""The doctor on real reports (x4lib.pages.doctor_corpus): the stored corpus is whole and attributed, and the score
the Lab 01 page shows is what the doctor gives on every case, the held-out quarter scored apart.

The held-out cases (every 4th entry, fixed before any rule was read) were not used to write rules. The numbers are
pinned so that a rule change shows up here and on the page; the issue's targets (85 % of the corpus, 75 % of the
held-out quarter) are checked where they are met and recorded where they are not."""
from pathlib import Path

import pytest

from x4lib.pages import doctor_corpus as dc

CORPUS = Path(__file__).parents[1] / "data" / "doctor" / "corpus"


def test_the_corpus_is_stored_whole_with_provenance_and_a_held_out_quarter():
    entries = dc.corpus()
    assert len(entries) == 45 and {p.name for p in CORPUS.glob("*.txt")} == {e["file"] for e in entries}
    assert [i for i, e in enumerate(entries, 1) if e.get("held_out")] == list(range(4, 46, 4))
    for e in entries:
        assert e["category"] in dc.CATEGORY and e["file"].startswith(e["category"] + "__")
        assert e["source"].startswith("https://") and e["licence_note"] and e["cause"]
        lines = (CORPUS / e["file"]).read_text(encoding="utf-8").splitlines()
        assert e["evidence_line"] in lines, e["file"]
    readme = (CORPUS.parents[1] / "README.md").read_text(encoding="utf-8")
    assert "doctor/corpus/" in readme


def test_the_score_is_the_doctors_on_every_case():
    s = dc.summary()
    assert s["all"] == (39, 45) and s["written_against"] == (34, 34) and s["held_out"] == (5, 11)
    assert s["refused"] == 0 and s["refused_held_out"] == 0
    assert sum(v[1] for v in s["by_category"].values()) == 45
    # every named case quotes the thread's evidence line in a finding of the thread's category
    for r in dc.scores():
        assert r.named == (r.named_category == r.category and r.evidence_found)


def test_the_issue_targets_where_they_stand():
    s = dc.summary()
    assert dc.pct(s["written_against"]) >= 85 and dc.pct(s["all"]) >= 85
    # met on the whole corpus (86.7 %); not met on the held-out quarter: 45.5 % (target 75 %); reported on the page
    assert dc.pct(s["all"]) == pytest.approx(86.7) and dc.pct(s["held_out"]) == pytest.approx(45.5)


def test_the_page_tables_and_worked_cases():
    t = dc.category_table()
    assert t.loc["all", "named"] == 39 and t.loc["held out", "named %"] == pytest.approx(45.5)
    assert list(t.index[:9]) == list(dc.CATEGORY)
    md = dc.worked_case("numa-socket__ncclt293-a100pcie-nps-gdr.txt")
    assert "NCCL_NET_GDR_LEVEL=SYS" in md and "gdr-level-forced" in md and "source:" in md
    cases = dc.case_table(held_out=True)
    assert len(cases) == 11 and cases["named"].sum() == 5
