"""The doctor on real reports (x4lib.pages.doctor_corpus): the stored corpus is whole and attributed, and the score
the Lab 01 page shows is what the doctor gives on every case, the held-out quarter scored apart.

The held-out cases (every 4th of the first 45 entries, fixed before any rule was read) were not used to write rules.
The second set (entries 46-58, held_out_2) was gathered after the rules were generalised and scored blind at 3 of 13;
two mechanisms were added after that, looking at the misses of both earlier sets (a reporter's stated fix names the
cause; a software-version rule: the first set had 5 of 11 before them), so neither is unseen any more. The third set (entries 59-72, held_out_3) was gathered and
labelled by collectors who never read the rules, scored once, and no rule was changed afterwards. The numbers are
pinned so that a rule change shows up here and on the page; the issue's targets (85 % of the corpus, 75 % of the
held-out quarter) are checked where they are met and recorded where they are not."""
from pathlib import Path

import pytest

from x4lib.pages import doctor_corpus as dc

CORPUS = Path(__file__).parents[1] / "data" / "doctor" / "corpus"


def test_the_corpus_is_stored_whole_with_provenance_and_a_held_out_quarter():
    entries = dc.corpus()
    assert len(entries) == 72 and {p.name for p in CORPUS.glob("*.txt")} == {e["file"] for e in entries}
    assert [i for i, e in enumerate(entries, 1) if e.get("held_out")] == list(range(4, 46, 4))
    assert [i for i, e in enumerate(entries, 1) if e.get("held_out_2")] == list(range(46, 59))
    assert {e["category"] for e in entries if e.get("held_out_2")} == set(dc.CATEGORY)
    assert [i for i, e in enumerate(entries, 1) if e.get("held_out_3")] == list(range(59, 73))
    assert {e["category"] for e in entries if e.get("held_out_3")} == set(dc.CATEGORY)
    assert not any(e.get("held_out_3") and (e.get("held_out") or e.get("held_out_2")) for e in entries)
    for e in entries:
        assert e["category"] in dc.CATEGORY and e["file"].startswith(e["category"] + "__")
        assert e["source"].startswith("https://") and e["licence_note"] and e["cause"]
        lines = (CORPUS / e["file"]).read_text(encoding="utf-8").splitlines()
        assert e["evidence_line"] in lines, e["file"]
    readme = (CORPUS.parents[1] / "README.md").read_text(encoding="utf-8")
    assert "doctor/corpus/" in readme


def test_the_score_is_the_doctors_on_every_case():
    s = dc.summary()
    assert s["all"] == (53, 72) and s["written_against"] == (34, 34) and s["held_out"] == (7, 11)
    assert s["held_out_2"] == (8, 13) and dc.HELD_OUT_2_BLIND == (3, 13) and s["held_out_3"] == (4, 14)
    assert dc.HELD_OUT_1_BEFORE == (5, 11)
    assert s["refused"] == 1 and s["refused_held_out"] == 1
    assert sum(v[1] for v in s["by_category"].values()) == 72 and sum(v[5] for v in s["by_category"].values()) == 13
    assert sum(v[7] for v in s["by_category"].values()) == 14
    # every named case quotes the thread's evidence line in a finding of the thread's category
    for r in dc.scores():
        assert r.named == (r.named_category == r.category and r.evidence_found)


def test_the_issue_targets_where_they_stand():
    s = dc.summary()
    assert dc.pct(s["written_against"]) >= 85
    # not met: 73.6 % of the corpus (target 85 %), 63.6 % of the first held-out quarter and 28.6 % of the third
    # held-out set (target 75 %); reported on the page
    assert dc.pct(s["all"]) == pytest.approx(73.6) and dc.pct(s["held_out"]) == pytest.approx(63.6)
    assert dc.pct(s["held_out_3"]) == pytest.approx(28.6) and dc.pct(s["held_out_2"]) == pytest.approx(61.5)


def test_the_page_tables_and_worked_cases():
    t = dc.category_table()
    assert t.loc["all", "named"] == 53 and t.loc["held out", "named %"] == pytest.approx(63.6)
    assert t.loc["second set", "named"] == 8 and t.loc["all", "second set"] == 13
    assert t.loc["held out 3", "named"] == 4 and t.loc["all", "held out 3"] == 14
    assert list(t.index[:9]) == list(dc.CATEGORY)
    md = dc.worked_case("numa-socket__ncclt293-a100pcie-nps-gdr.txt")
    assert "NCCL_NET_GDR_LEVEL=SYS" in md and "gdr-level-forced" in md and "source:" in md
    cases = dc.case_table(held_out=True)
    assert len(cases) == 11 and cases["named"].sum() == 7
    cases2 = dc.case_table(held_out_2=True)
    assert len(cases2) == 13 and cases2["named"].sum() == 8
    cases3 = dc.case_table(held_out_3=True)
    assert len(cases3) == 14 and cases3["named"].sum() == 4
