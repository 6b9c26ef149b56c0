"""The claims checker (x4lib/book/claims.py): what it must flag, what it must accept, and its command line."""
import json
import textwrap
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_cli
from x4lib import cli
from x4lib.book import bib, claims, myst_blocks

BIB = """\
@misc{nvidia-h100-datasheet,
  title = {NVIDIA H100 Tensor Core GPU datasheet},
}
@article{kaplan-2020, title = {Scaling laws}}
"""
KEYS = bib.keys(BIB)


def check(md: str) -> claims.FileReport:
    return claims.check_text(textwrap.dedent(md), "page.md", KEYS)


def kinds(md: str) -> list[tuple[str, str]]:
    return [(p.kind, p.claim) for p in check(md).problems]


def statuses(md: str) -> list[tuple[str, str]]:
    return [(c.text, c.status) for c in check(md).claims]


@pytest.fixture
def book(tmp_path):
    """Write pages and a references.bib into tmp_path; return a function page(name, text) -> Path."""
    (tmp_path / "references.bib").write_text(BIB)

    def page(name: str, text: str) -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text))
        return p
    return page


# ---------------------------------------------------------------------------------------------- must flag

@pytest.mark.parametrize("sentence, claim", [
    ("The H100 delivers 989 TFLOP/s.", "989 TFLOP/s"),
    ("It costs $3 per hour.", "$3 per hour"),
    ("The bus reaches about 80 % of line rate.", "80 %"),
    ("FSDP gives a 2× speed-up here.", "2×"),
    ("Good runs reach 38–43 % MFU.", "38–43 %"),
    ("A 3x gain.", "3x"),
    ("One step takes 40 ms.", "40 ms"),
    ("The board draws 700 W and the node 10.2 kW.", "700 W"),
    ("It has 80GB of HBM3.", "80GB"),
    ("One H100 holds 80 GB.", "80 GB"),
    ("Rent is 2.5 million USD.", "2.5 million USD"),
    ("The clock is 1.98 GHz.", "1.98 GHz"),
    ("Training takes 54 days.", "54 days"),
])
def test_uncited_claims_are_flagged(sentence, claim):
    report = check(sentence + "\n")
    assert ("uncited", claim) in [(p.kind, p.claim) for p in report.problems]
    assert report.problems[0].message == "no glue and no citation in the sentence (or table row)"


def test_interconnect_bandwidth_without_direction_is_flagged_twice():
    assert kinds("NVLink gives 900 GB/s.\n") == [("uncited", "900 GB/s"), ("units-hygiene", "900 GB/s")]


def test_cited_tensor_rate_without_dense_or_sparse_is_a_units_problem():
    report = check("The H100 SXM reaches 1,979 TFLOP/s BF16 with a citation {cite:p}`nvidia-h100-datasheet`.\n")
    assert [c.status for c in report.claims] == ["cited"]
    assert [(p.kind, p.claim) for p in report.problems] == [("units-hygiene", "1,979 TFLOP/s")]
    assert "BF16" in report.problems[0].message


def test_unknown_cite_key_counts_as_uncited():
    report = check("The H100 has 80 GB {cite:p}`no-such-key`.\n")
    assert [c.status for c in report.claims] == ["uncited"]
    (p,) = report.problems
    assert p.kind == "uncited" and "'no-such-key' not in references.bib" in p.message


def test_unknown_cite_key_without_a_claim_is_reported_once():
    assert kinds("See {cite:t}`kaplan-2020, missing-2024` for the rule.\n") == [
        ("unknown-key", "{cite:t}`kaplan-2020, missing-2024`")]


def test_output_line_format():
    (p,) = claims.check_text("Intro.\n\nNVSwitch chips add\n5 W each.\n", "book/x.md", KEYS).problems
    assert p.format() == 'book/x.md:4: claim "5 W": no glue and no citation in the sentence (or table row)'


# ---------------------------------------------------------------------------------------------- must accept

@pytest.mark.parametrize("sentence", [
    "The run takes {glue:text}`quiz_days:.1f` days at {glue:text}`g_mfu_pct:.0f` % MFU.",
    "One H100 holds 80 GB {cite:p}`nvidia-h100-datasheet`.",
    "In 2024 and on 2025-03-01 prices fell; the 1990s were different.",
    "FP8, BF16, FP16, TF32, INT8 and FP4 on an H100 SXM, an A100, an MI300X and a TPU v5p.",
    "See chapter 3 and Lab 01; section 2.4 has more.",
    "A laptop with DDR4-2400 memory and an i5-8250U.",
    "The 2:4 sparsity pattern on NVLink 4 and PCIe Gen 5 x16 with HBM3e.",
    "An 8-GPU server, 2 × 8 GPUs, an 8192 × 8192 matrix.",
    "A 70B model has 70 billion parameters and sees one trillion tokens on 1024 GPUs.",
    "GB means 10⁹ bytes and an EFLOP/s is 10¹⁸ FLOP/s.",
    "Run `--power-scope server` or `torch.cuda.mem_get_info()  # 80 GB`.",
    "The given MFU of 50 % is an assumption.",
    "Assume 400 GB/s per direction per link.",
    "Prices are in 2024 USD.",
    "The A100 SXM 80GB and the H100 80GB HBM3 are product names.",
])
def test_non_claims_glue_citations_and_givens_raise_no_problem(sentence):
    assert check(sentence + "\n").problems == ()


def test_glued_claims_count_as_computed_and_bare_glue_is_no_claim():
    assert statuses("{glue:text}`a` GPUs give {glue:text}`b:.2f` EFLOP/s, "
                    "{glue:text}`c:,.0f` thousand USD.\n") == [
        ("{glue:text}`b:.2f` EFLOP/s", "computed"), ("{glue:text}`c:,.0f` thousand USD", "computed")]


def test_a_citation_covers_its_own_sentence_not_the_paragraph():
    """Issue 27: a citation in the next sentence, or a number in a parenthesis of another sentence, is not
    backed by it; in a table row the whole row counts."""
    md = """\
    HBM3 gives 3.35 TB/s.
    The card holds 80 GB {cite:p}`nvidia-h100-datasheet`.

    The next card holds 141 GB.

    PCIe sends 130 bits per 128 {cite:p}`nvidia-h100-datasheet`. InfiniBand names its rate (400 Gb/s per
    direction for NDR).

    | part | memory |
    |---|---|
    | H100 {cite:p}`nvidia-h100-datasheet` | 80 GB |
    """
    assert statuses(md) == [("3.35 TB/s", "uncited"), ("80 GB", "cited"), ("141 GB", "uncited"),
                            ("400 Gb/s", "uncited"), ("80 GB", "cited")]


def test_list_items_are_their_own_units():
    md = """\
    - 1024 GPUs
    - 80 GB of HBM {cite:p}`nvidia-h100-datasheet`
    - 3.35 TB/s of bandwidth
    """
    assert statuses(md) == [("80 GB", "cited"), ("3.35 TB/s", "uncited")]
    assert check(md).problems[0].line == 3


def test_lists_under_assumptions_are_givens():
    lead_in = """\
    Assumptions for this estimate:

    - MFU 50 %
    - $2 per GPU-hour

    Afterwards 5 W is a claim again.
    """
    assert statuses(lead_in) == [("50 %", "given"), ("$2 per GPU-hour", "given"), ("5 W", "uncited")]
    heading = """\
    ## Givens

    - 7 days
    - PUE at 20 %

    ## Results

    - 30 days
    """
    assert statuses(heading) == [("7 days", "given"), ("20 %", "given"), ("30 days", "uncited")]


def test_spanish_summary_is_checked_like_the_english_text():
    md = """\
    ## Resumen en español

    El entrenamiento dura {glue:text}`d:.1f` días y cuesta 300 mil dólares {cite:p}`nvidia-h100-datasheet`.
    Con un MFU supuesto del 40 %, el pico denso en BF16 es {glue:text}`p` TFLOP/s.
    NVLink da 900 GB/s por dirección {cite:p}`nvidia-h100-datasheet`.
    """
    report = check(md)
    assert [(c.text, c.status) for c in report.claims if c.status != "computed"] == [
        ("300 mil dólares", "cited"), ("40 %", "given"), ("900 GB/s", "cited")]
    assert report.problems == ()
    uncited = check("## Resumen en español\n\nCuesta 300 mil dólares.\n")
    assert [(p.kind, p.claim) for p in uncited.problems] == [("uncited", "300 mil dólares")]


def test_direction_and_dense_words_satisfy_units_hygiene():
    ok = [
        "NVLink 4 gives 900 GB/s bidirectional, 450 GB/s per direction {cite:p}`nvidia-h100-datasheet`.",
        "Each InfiniBand NIC moves 50 GB/s in each direction {cite:p}`nvidia-h100-datasheet`.",
        "The dense BF16 peak is 989 TFLOP/s {cite:p}`nvidia-h100-datasheet`.",
        "HBM3 reaches 3.35 TB/s {cite:p}`nvidia-h100-datasheet`.",
        "The chip does 1,979 TFLOP/s with sparsity in FP8 {cite:p}`nvidia-h100-datasheet`.",
    ]
    for s in ok:
        assert check(s + "\n").problems == (), s
    assert kinds("The PCIe link carries 64 GB/s {cite:p}`nvidia-h100-datasheet`.\n") == [
        ("units-hygiene", "64 GB/s")]


# ---------------------------------------------------------------------------------------------- the parser

PAGE = """\
---
kernelspec:
  name: python3
  display_name: 900 GB/s in front matter is not prose
---

(ch-x)=
# A page

Some prose with {glue:text}`x` W.

```{code-cell} ipython3
:tags: [remove-cell]
peak = 989  # TFLOP/s, 3.35 TB/s, $3 per hour
glue("x", 700)
```

$$
t = \\frac{1.5\\times10^{21}\\ \\text{FLOP}}{989\\ \\text{TFLOP/s}} = 5 \\text{ days}
$$

Inline math $P = 700\\,\\text{W}$ is derived on the page.

| device | memory (GB) | source |
|---|---|---|
| H100 SXM | 80 GB | {cite:p}`nvidia-h100-datasheet` |
| H200 SXM | 141 GB | |

````{admonition} Takeaway
:class: tip
The admonition says 12 W.

```python
x = "42 GB"
```
````

```{exercise} Which peak?
:label: ex-peak
:width: 80 %
A datasheet says 1,979 TFLOP/s BF16 and the run uses 1024 GPUs at 50 % MFU for 7 days.
```

```{solution-start} ex-peak
:class: dropdown
```

At 50 % MFU for 7 days the sparse figure halves the time; the dense rate is 989 TFLOP/s.

```{code-cell} ipython3
print(f"{1979 / 2:.1f} TFLOP/s")
```

```{solution-end}
```

After the solution, 5 ms is a claim again.
"""


def test_parser_on_a_page_with_every_kind_of_block(book):
    path = book("page.md", PAGE)
    (report,) = claims.check_paths([str(path)])
    got = [(c.line, c.text, c.status) for c in report.claims]
    assert got == [
        (10, "{glue:text}`x` W", "computed"),
        (26, "80 GB", "cited"),
        (27, "141 GB", "uncited"),
        (31, "12 W", "uncited"),
        (41, "1,979 TFLOP/s", "given"),
        (41, "50 %", "given"),
        (41, "7 days", "given"),
        (48, "50 %", "given"),
        (48, "7 days", "given"),
        (48, "989 TFLOP/s", "uncited"),
        (57, "5 ms", "uncited"),
    ]
    # the exercise sets the sparse trap on purpose: no units-hygiene problem for its statement
    assert [(p.line, p.kind) for p in report.problems] == [
        (27, "uncited"), (31, "uncited"), (48, "uncited"), (57, "uncited")]
    assert report.counts() == {"claims": 11, "computed": 1, "cited": 1, "givens": 5, "uncited": 4, "problems": 4}


def test_blocks_skip_code_math_options_and_nested_fences():
    blocks = list(myst_blocks.iter_blocks(textwrap.dedent(PAGE)))
    text = "\n".join(b.text for b in blocks)
    for hidden in ("989  #", "1.5\\times", "front matter", "42 GB", ":class:", ":label:", "tags", "1979 / 2"):
        assert hidden not in text, hidden
    assert [b.context for b in blocks if "50 %" in b.text] == ["exercise", "solution"]
    assert any(b.kind == "title" and b.text == "Which peak?" and b.context == "exercise" for b in blocks)
    assert [b.kind for b in blocks if b.text.startswith("|")] == ["row", "row", "row"]


def test_myst_extensions_are_those_of_the_book():
    """The checker parses pages with the extensions the book is built with."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert set(myst_blocks.MYST_EXTENSIONS) == set(config["parse"]["myst_enable_extensions"])


# MyST constructs the parser reads for us: none of them needs code of its own in the checker.
NESTED = """\
::::{admonition} Takeaway at 3 W
:class: tip
:::{note}
A note inside says 4 W.
:::
::::

:::{dropdown} Details
| link | bandwidth (GB/s) |
|---|---|
| NVLink 4 | 450 GB/s {cite:p}`nvidia-h100-datasheet` |
:::

HBM3
: A stack moves 819 GB/s.

`````{note}
````{tip}
---
class: dropdown
---
```{important}
Three levels down, 5 ms.
```
````
`````

:::{figure} plot.png
:name: fig-x
The caption says 6 kW.
:::

:::plain-div
A div holds 7 W.
:::

<div class="x">Raw HTML holds 8 W.</div>

<!-- a comment holds 9 W -->

    an indented code block holds 10 W

> ```{note}
> A quoted note holds 11 W.
> ```
"""


def test_new_myst_constructs_are_read_with_right_lines():
    got = [(c.line, c.text, c.status) for c in check(NESTED).claims]
    assert got == [
        (1, "3 W", "uncited"),            # directive title
        (4, "4 W", "uncited"),            # colon fence nested at the start of a colon-fence body
        (11, "450 GB/s", "cited"),        # table in a dropdown
        (15, "819 GB/s", "uncited"),      # definition list body
        (23, "5 ms", "uncited"),          # three nested fences, one with a YAML options block
        (30, "6 kW", "uncited"),          # figure caption
        (34, "7 W", "uncited"),           # a ":::name" div
        (37, "8 W", "uncited"),           # raw HTML; not its tags, a comment or an indented code block
        (44, "11 W", "uncited"),          # a directive in a block quote
    ]
    # the table header inside the dropdown still counts for units hygiene (no direction given)
    assert ("units-hygiene", "450 GB/s") in kinds(NESTED)
    assert [b.kind for b in myst_blocks.iter_blocks(textwrap.dedent(NESTED)) if b.line == 14] == ["term"]


EXERCISES = """\
```{exercise} Ring time at 25 GB/s
:label: ex-ring
Each of 8 GPUs sends 2 GB over a 25 GB/s link.

:::{hint}
A hint inside the exercise: try 4 GB first.
:::
```

````{solution} ex-ring
:class: dropdown
The ring moves 2 GB at 25 GB/s in 140 ms.

```{admonition} Check
A nested check repeats 25 GB/s and adds 3 W.
```
````

````{exercise-start}
:label: ex-pair
````

:::{note}
Inside a start/end pair and a note: 9 days.
:::

```{exercise-end}
```

```{solution-start} ex-pair
:class: dropdown
```

:::{tip}
The answer: 9 days, then 11 days.
:::

```{solution-end}
```

:::{warning}
After the pairs, 12 W.
:::
"""


def test_prose_inside_exercise_solution_and_admonition_blocks_is_checked_in_context():
    blocks = list(myst_blocks.iter_blocks(textwrap.dedent(EXERCISES)))
    assert [(b.line, b.kind, b.context, b.label) for b in blocks] == [
        (1, "title", "exercise", "ex-ring"), (3, "paragraph", "exercise", "ex-ring"),
        (6, "paragraph", "exercise", "ex-ring"),                 # a hint nested in the exercise
        (12, "paragraph", "solution", "ex-ring"), (14, "title", "solution", "ex-ring"),
        (15, "paragraph", "solution", "ex-ring"),                # an admonition nested in the solution
        (24, "paragraph", "exercise", "ex-pair"),                # a note between exercise-start and -end
        (35, "paragraph", "solution", "ex-pair"),                # a tip between solution-start and -end
        (42, "paragraph", "prose", None)]
    got = [(c.line, c.text, c.status) for c in check(EXERCISES).claims]
    assert got == [
        (1, "25 GB/s", "given"), (3, "2 GB", "given"), (3, "25 GB/s", "given"), (6, "4 GB", "given"),
        (12, "2 GB", "given"), (12, "25 GB/s", "given"), (12, "140 ms", "uncited"),
        (15, "25 GB/s", "given"), (15, "3 W", "uncited"),
        (24, "9 days", "given"),
        (35, "9 days", "given"), (35, "11 days", "uncited"),     # 9 days repeats the statement of ex-pair
        (42, "12 W", "uncited"),
    ]
    # the exercise title and statement set traps on purpose (link without direction): no units problem there
    assert [(p.line, p.kind) for p in check(EXERCISES).problems] == [
        (12, "uncited"), (15, "uncited"), (35, "uncited"), (42, "uncited")]


def test_table_header_counts_for_units_hygiene():
    md = """\
    | link | bandwidth per direction (GB/s) | source |
    |---|---|---|
    | NVLink 4 | 450 GB/s | {cite:p}`nvidia-h100-datasheet` |
    """
    assert check(md).problems == ()
    md_bad = md.replace(" per direction", "")
    assert kinds(md_bad) == [("units-hygiene", "450 GB/s")]


def test_sentence_splitter_keeps_abbreviations_and_units():
    t = "Rates differ, e.g. 2 W vs. 3 W. Then 5 ms. **Bold.** Next one"
    assert [t[a:b].strip() for a, b in claims.split_sentences(t)] == [
        "Rates differ, e.g. 2 W vs. 3 W.", "Then 5 ms.", "**Bold.**", "Next one"]


def test_given_keyword_is_sentence_scoped():
    md = "Assume a PUE of 20 %. The cooling then draws 30 kW.\n"
    assert statuses(md) == [("20 %", "given"), ("30 kW", "uncited")]


# ---------------------------------------------------------------------------------------------- command line

def test_main_text_output_and_exit_code(book, capsys):
    book("a.md", "NVLink gives 900 GB/s.\n")
    book("b.md", "Nothing to see in chapter 3.\n")
    rc = cli.main(["check-claims", str(Path(book("c.md", "").parent))])
    out = capsys.readouterr().out
    assert rc == 1
    assert 'a.md:1: claim "900 GB/s": no glue and no citation in the sentence (or table row)' in out
    assert "a.md: 1 claims, 0 computed via glue, 0 cited, 0 givens, 2 problems" in out
    assert "b.md: 0 claims" in out


def test_main_json_and_counts_out(book, tmp_path, capsys):
    page = book("a.md", "It has {glue:text}`m` GB. It costs $3 per hour, an assumption. It draws 5 W.\n")
    counts = tmp_path / "_build" / "claims.json"
    rc = cli.main(["check-claims", str(page), "--json", "--counts-out", str(counts)])
    data = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert data == {"files": {str(page): {
        "claims": 3, "computed": 1, "cited": 0, "givens": 1,
        "problems": [{"line": 1, "claim": "5 W", "kind": "uncited",
                      "message": "no glue and no citation in the sentence (or table row)"}]}},
        "total_problems": 1}
    written = json.loads(counts.read_text())
    assert written == {"files": {str(page): {"claims": 3, "computed": 1, "cited": 0, "givens": 1, "problems": 1,
                                             "uncited": 1}}, "total_problems": 1}


def test_main_exit_zero_when_clean(book, capsys):
    page = book("a.md", "The H100 has 80 GB {cite:p}`nvidia-h100-datasheet`.\n")
    assert cli.main(["check-claims", str(page)]) == 0
    assert "0 problems" in capsys.readouterr().out


@pytest.mark.parametrize("args, needle", [
    (["/no/such/dir"], "path not found"),
    (["EMPTY"], "no .md files"),
    ([], "the following arguments are required"),
])
def test_bad_usage_is_one_error_line_and_exit_2(args, needle, tmp_path, capsys):
    args = [str(tmp_path) if a == "EMPTY" else a for a in args]
    with pytest.raises(SystemExit) as exit_:
        cli.main(["check-claims", *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "error:" in err.strip().splitlines()[-1] and needle in err


@pytest.mark.parametrize("bad, content, needle", [
    ("a.md", "Garc\u00eda pays $3.".encode("latin-1"), "not UTF-8 text (byte 0xed at offset 4)"),
    ("references.bib", "@misc{a, author={Garc\u00eda}}".encode("latin-1"), "not UTF-8 text (byte 0xed"),
    ("references.bib", b"@misc{a, title={x}\n@misc{b, title={y}}", "not valid BibTeX: syntax error in line 2"),
])
def test_unreadable_page_or_bibliography_is_one_error_line_naming_it_and_exit_2(book, bad, content, needle):
    page = book("a.md", "It has 80 GB {cite:p}`kaplan-2020`.\n")
    target = page.parent / bad
    target.write_bytes(content)
    r = run_cli("check-claims", str(page.parent))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    usage, line = lines[0], lines[-1]
    assert usage.startswith("usage: python -m x4lib check-claims") and sum("error:" in ln for ln in lines) == 1
    assert line.startswith(f"python -m x4lib check-claims: error: {target}: {needle}"), line


# ---------------------------------------------------------------------------------------------- the real book

def test_REAL_BOOK_has_no_claim_problems():
    """The real book/ directory: every claim glued, cited or a given, and the unit words present.
    The per-chapter counts go to _build/claims-counts.json so they can be watched."""
    reports = claims.check_paths([str(ROOT / "book")])
    (ROOT / "_build").mkdir(exist_ok=True)
    (ROOT / "_build" / "claims-counts.json").write_text(json.dumps(claims.to_json(reports, with_problems=False), indent=1))
    problems = [p.format() for r in reports for p in r.problems]
    assert problems == []
    assert sum(len(r.claims) for r in reports) > 0


def test_a_solution_sentence_that_explains_a_unit_is_a_claim():
    """Issue 27: repeating the exercise's number is a given; saying how to read its unit (direction, GiB, bits)
    is a claim, and so is the same number with another unit."""
    md = """\
    ```{exercise} Copy
    :label: ex-copy
    A link is sold as 64 GB/s and a GPU as 80 GB. How long does a 2 GB copy take?
    ```
    ```{solution-start} ex-copy
    :class: dropdown
    ```
    At 64 GB/s the copy takes at least 31 ms.
    The 64 GB/s counts both directions.
    The 80 GB are 80 GiB.
    ```{solution-end}
    ```
    """
    got = [(c.text, c.status) for c in check(md).claims if c.line >= 8]
    assert got == [("64 GB/s", "given"), ("31 ms", "uncited"), ("64 GB/s", "uncited"), ("80 GB", "given"),
                   ("80 GiB", "uncited")]


def test_a_wrong_assumption_is_not_a_given():
    """Issue 27: "points to a wrong assumption" names a mistake; it does not mark the sentence's numbers given."""
    assert statuses("An efficiency above 100 % points to a wrong assumption.\n") == [("100 %", "uncited")]
    assert statuses("We assume an efficiency of 50 %.\n") == [("50 %", "given")]


def test_explains_unit():
    from x4lib.book.claims import explains_unit
    assert explains_unit("It is the per-direction figure.") and explains_unit("Those are 80 GiB.")
    assert not explains_unit("The copy takes longer.") and not explains_unit("Half of it is the dense rate.")
