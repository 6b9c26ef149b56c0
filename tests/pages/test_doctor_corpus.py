"""The doctor on real reports (x4lib.pages.doctor_corpus): the stored corpus is whole and attributed, and the score
the Lab 01 page shows is what the doctor gives on every case, the held-out quarter scored apart.

The held-out cases (every 4th of the first 45 entries, fixed before any rule was read) were not used to write rules;
the second held-out set (the last 13 entries, held_out_2) was gathered after the rules were generalised, labelled
before the doctor ran on it, and no rule was changed after it was scored. The numbers are
pinned so that a rule change shows up here and on the page; the issue's targets (85 % of the corpus, 75 % of the
held-out quarter) are checked where they are met and recorded where they are not."""
from pathlib import Path

import pytest

from x4lib.pages import doctor_corpus as dc

CORPUS = Path(__file__).parents[1] / "data" / "doctor" / "corpus"


def test_the_corpus_is_stored_whole_with_provenance_and_a_held_out_quarter():
    entries = dc.corpus()
    assert len(entries) == 58 and {p.name for p in CORPUS.glob("*.txt")} == {e["file"] for e in entries}
    assert [i for i, e in enumerate(entries, 1) if e.get("held_out")] == list(range(4, 46, 4))
    assert [i for i, e in enumerate(entries, 1) if e.get("held_out_2")] == list(range(46, 59))
    assert {e["category"] for e in entries if e.get("held_out_2")} == set(dc.CATEGORY)
    for e in entries:
        assert e["category"] in dc.CATEGORY and e["file"].startswith(e["category"] + "__")
        assert e["source"].startswith("https://") and e["licence_note"] and e["cause"]
        lines = (CORPUS / e["file"]).read_text(encoding="utf-8").splitlines()
        assert e["evidence_line"] in lines, e["file"]
    readme = (CORPUS.parents[1] / "README.md").read_text(encoding="utf-8")
    assert "doctor/corpus/" in readme


def test_the_score_is_the_doctors_on_every_case():
    s = dc.summary()
    assert s["all"] == (42, 58) and s["written_against"] == (34, 34) and s["held_out"] == (5, 11)
    assert s["held_out_2"] == (3, 13)
    assert s["refused"] == 2 and s["refused_held_out"] == 0
    assert sum(v[1] for v in s["by_category"].values()) == 58 and sum(v[5] for v in s["by_category"].values()) == 13
    # every named case quotes the thread's evidence line in a finding of the thread's category
    for r in dc.scores():
        assert r.named == (r.named_category == r.category and r.evidence_found)


def test_the_issue_targets_where_they_stand():
    s = dc.summary()
    assert dc.pct(s["written_against"]) >= 85
    # not met: 72.4 % of the corpus (target 85 %), 45.5 % of the first held-out quarter and 23.1 % of the second
    # held-out set (target 75 %); reported on the page
    assert dc.pct(s["all"]) == pytest.approx(72.4) and dc.pct(s["held_out"]) == pytest.approx(45.5)
    assert dc.pct(s["held_out_2"]) == pytest.approx(23.1)


def test_the_page_tables_and_worked_cases():
    t = dc.category_table()
    assert t.loc["all", "named"] == 42 and t.loc["held out", "named %"] == pytest.approx(45.5)
    assert t.loc["held out 2", "named"] == 3 and t.loc["all", "held out 2"] == 13
    assert list(t.index[:9]) == list(dc.CATEGORY)
    md = dc.worked_case("numa-socket__ncclt293-a100pcie-nps-gdr.txt")
    assert "NCCL_NET_GDR_LEVEL=SYS" in md and "gdr-level-forced" in md and "source:" in md
    cases = dc.case_table(held_out=True)
    assert len(cases) == 11 and cases["named"].sum() == 5
    cases2 = dc.case_table(held_out_2=True)
    assert len(cases2) == 13 and cases2["named"].sum() == 3
