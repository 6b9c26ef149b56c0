"""Claims checker: every quantitative claim in the book's prose is computed (glued) or cited.

    python -m x4lib check-claims book/ [--json] [--counts-out FILE] [--bib FILE]
    python -m x4lib.book.claims book/

A *claim* is a number with a unit (``989 TFLOP/s``, ``900 GB/s``, ``$3``, ``80 %``, ``40 ms``, ``7 days``),
a multiplier (``2×``, ``3x``) or a range (``38–43 %``) in a prose paragraph, list item, table row (header row
included), heading, definition-list term, or directive title or body (admonition, exercise, solution,
dropdown...). Code cells, code fences, math (``$...$``, ``$$...$$``, ``{math}``, amsmath), front matter,
inline code, directive options and role targets are never read. Each claim must be

* **computed**: its number is a ``{glue:text}`` / ``{glue}`` role, or
* **cited**: a ``{cite}``, ``{cite:p}`` or ``{cite:t}`` role with a key present in ``references.bib`` sits in
  the same sentence (in paragraphs and list items: a citation in the next sentence, or before a parenthesis
  in another sentence, does not cover it), or anywhere in the same table row, heading, term or directive
  title, or
* a **given**: it sits in an exercise statement, in a sentence that says "given"/"assume"/"assumption"
  (Spanish: "supuesto", "suponemos"...), in a list whose lead-in paragraph says so, or in a section whose
  heading says "Assumptions"/"Givens". A number in a solution that repeats a number of its exercise's
  statement, with the same unit, is a given too, unless its sentence explains the unit (says which direction
  a bandwidth counts, GiB or GB, bits or bytes): that explanation is a claim and needs a source.

Anything else is reported as ``uncited``. Two cheap unit checks are reported as ``units-hygiene``: an
interconnect bandwidth (the sentence names NVLink, PCIe, InfiniBand, a link, a NIC...) must say which
direction it counts, and a tensor rate next to a precision (BF16, FP8...) must say dense or sparse. Exercise
statements are exempt from the unit checks because they set those traps on purpose (style guide, item 6).
A cite key missing from ``references.bib`` is reported as ``unknown-key`` where no claim reports it already.

Plain counts (``1024 GPUs``, ``70B`` parameters, ``one trillion tokens``), years, chapter and lab numbers,
list numbering, precisions and product names (``FP8``, ``H100``, ``DDR4-2400``, ``2:4 sparsity``,
``PCIe Gen 5 x16``, ``2 × 8``) carry none of the units in ``_UNITS`` and so are never claims. Two cases that do
carry one are let through on purpose: a size inside a product name (``A100 SXM 80GB``) and a power of ten or
two written as a unit definition (``10⁹ bytes``, ``10¹⁸ FLOP/s``).

How a page is read (:mod:`x4lib.book.myst_blocks`): the book's own MyST parser (markdown-it-py with the MyST plugins, the extensions of
``_config.yml``) turns it into a syntax tree; paragraphs, list items, table rows, headings and terms become
:class:`Block` s. A directive (a ``{name}`` fence, backticks or colons) is split into argument, options and
body by MyST's own directive parser, and its body is parsed again as MyST, so prose inside any admonition,
exercise, solution or dropdown is read with its context, and line numbers stay those of the page. In a block,
roles, code, math, links' targets and URLs become single placeholder characters (:class:`Masked`) from the
inline tokens, so the claim regexes below see only prose and glued numbers. Bibliography keys come from
:mod:`x4lib.book.bib` (pybtex).

Exit codes: 0 no problems, 1 problems found, 2 bad usage or an unreadable page or bibliography (one
``error:`` line on stderr naming the file, no traceback). The whole module is pure functions over strings plus
a thin ``main``; see ``tests/test_claims.py``.
"""
from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from pathlib import Path


from x4lib import cli
from x4lib.book.bib import BibError, keys as bibliography_keys
from x4lib.book.myst_blocks import CITE_BASE, GIVEN_SENTENCE, GLUE_CHARS, iter_blocks

# --------------------------------------------------------------------------------------------------
# Data types
# --------------------------------------------------------------------------------------------------

STATUSES = ("computed", "cited", "given", "uncited")


@dataclass(frozen=True)
class Claim:
    """One quantitative claim as written (roles shown as in the source), and how it is backed.

    status is one of STATUSES; unit is the unit as matched ("TFLOP/s", "%", "×" for multipliers).
    """
    path: str
    line: int
    text: str
    unit: str
    status: str


@dataclass(frozen=True)
class Problem:
    """One line of the report: ``file:line: claim "<text>": <message>``.

    kind is "uncited", "units-hygiene" or "unknown-key".

    >>> Problem("book/a.md", 3, "900 GB/s", "uncited", "no glue and no citation").format()
    'book/a.md:3: claim "900 GB/s": no glue and no citation'
    """
    path: str
    line: int
    claim: str
    kind: str
    message: str

    def format(self) -> str:
        return f'{self.path}:{self.line}: claim "{self.claim}": {self.message}'

    def as_dict(self) -> dict:
        return {"line": self.line, "claim": self.claim, "kind": self.kind, "message": self.message}


@dataclass(frozen=True)
class FileReport:
    """All claims and problems of one markdown file."""
    path: str
    claims: tuple[Claim, ...]
    problems: tuple[Problem, ...]

    def counts(self) -> dict:
        """{"claims", "computed", "cited", "givens", "uncited", "problems"} as integers."""
        by = {s: sum(1 for c in self.claims if c.status == s) for s in STATUSES}
        return {"claims": len(self.claims), "computed": by["computed"], "cited": by["cited"],
                "givens": by["given"], "uncited": by["uncited"], "problems": len(self.problems)}



# --------------------------------------------------------------------------------------------------
# Sentences
# --------------------------------------------------------------------------------------------------

_ABBREVIATIONS = {"e.g", "i.e", "al", "vs", "cf", "fig", "figs", "eq", "eqs", "approx", "etc", "sec", "ref",
                  "refs", "resp", "pp", "incl", "ca", "vol", "u.s", "p.ej", "pág", "aprox"}
_SENTENCE_END = re.compile(r"[.!?](?:[\"”’')\]*_]*)(?=\s+)")
_NON_SPACE = re.compile(r"\S")
_WORD_BEFORE = re.compile(r"([\w.]*)$")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of ``text``: a split after . ! or ? followed by white space
    and a character that is not lower case, unless the word before the period is an abbreviation.

    >>> t = "It is fast, e.g. 2 W. Then 3 W follow. **Bold.** Next one"
    >>> [t[a:b].strip() for a, b in split_sentences(t)]
    ['It is fast, e.g. 2 W.', 'Then 3 W follow.', '**Bold.**', 'Next one']
    """
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        end = m.end()
        nxt = _NON_SPACE.search(text, end)               # no copy of the rest: linear in the block
        if not nxt or nxt.group(0).islower():
            continue
        if text[m.start()] == ".":
            word = _WORD_BEFORE.search(text, max(start, m.start() - 64), m.start()).group(1).lower()
            if word in _ABBREVIATIONS:
                continue
        spans.append((start, end))
        start = end
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


# --------------------------------------------------------------------------------------------------
# The claim regex set
# --------------------------------------------------------------------------------------------------

_SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"
_NUM = (r"(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?"
        r"(?:\s?[×·]\s?10[" + _SUP + r"]+|\s?[×x]\s?10\^\{?-?\d+\}?)?|10[" + _SUP + "]+")
_VALUE = rf"(?:{_NUM}|[{GLUE_CHARS}])"
_LEFT = r"(?<![\w.,/^" + _SUP + r"])(?<!\w-)"   # not part of a name: H100, x16, DDR4-2400, i5-8250U
_SEP = r"[ \u00a0\u202f\u2009\n]?"
_RANGE = rf"{_VALUE}(?:{_SEP}(?:–|—|-|to|a){_SEP}{_VALUE})?"
_MAGNITUDE = r"(?:\s(?:thousand|million|billion|trillion|mil\smillones|mil|millones|billones)(?:\sde)?)?"

# Units, longest first within each family; the family decides the hygiene checks.
_UNITS: dict[str, list[str]] = {
    "compute": ["EFLOP/s", "PFLOP/s", "TFLOP/s", "GFLOP/s", "FLOP/s", "EFLOPS", "PFLOPS", "TFLOPS", "GFLOPS",
                "FLOPS", "POP/s", "TOP/s", "POPS", "TOPS"],
    "work": ["FLOP/byte", "FLOP/B", "EFLOP", "PFLOP", "TFLOP", "GFLOP", "FLOPs", "FLOP"],
    "bandwidth": ["PB/s", "TB/s", "GB/s", "MB/s", "kB/s", "KB/s", "TiB/s", "GiB/s", "MiB/s", "Tb/s", "Gb/s",
                  "Mb/s", "Tbit/s", "Gbit/s", "Mbit/s", "Tbps", "Gbps", "Mbps", "GT/s"],
    "size": ["PiB", "TiB", "GiB", "MiB", "KiB", "PB", "TB", "GB", "MB", "kB", "KB", "bytes"],
    "energy": ["TWh", "GWh", "MWh", "kWh", "Wh", "pJ/bit", "pJ/B", "pJ", "nJ", "kJ", "MJ", "GJ", "J"],
    "power": ["GW", "MW", "kW", "W"],
    "money": ["USD", "EUR", "US dollars", "dollars", "dólares", "euros"],
    "ratio": ["%", "per cent", "percent", "por ciento"],
    "time": ["GPU-hours", "GPU-hour", "GPU-h", "GPU·h", "GPU hours", "node-hours", "horas GPU",
             "ms", "µs", "μs", "us", "ns", "seconds", "second", "sec", "segundos", "minutes", "minute", "min",
             "minutos", "hours", "hour", "hrs", "hr", "horas", "hora", "h", "days", "day", "días", "día",
             "weeks", "week", "semanas", "months", "month", "meses", "years", "year", "años", "s"],
    "frequency": ["GHz", "MHz", "kHz", "Hz"],
    "rate": ["tokens/s", "tok/s", "samples/s"],
}
_WORD_UNITS = {"US dollars", "dollars", "dólares", "euros", "per cent", "percent", "por ciento", "seconds",
               "second", "sec", "segundos", "minutes", "minute", "min", "minutos", "hours", "hour", "hrs",
               "hr", "horas", "hora", "days", "day", "días", "día", "weeks", "week", "semanas", "months",
               "month", "meses", "years", "year", "años", "GPU hours", "horas GPU"}
_UNIT_FAMILY = {u: fam for fam, us in _UNITS.items() for u in us}
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(_UNIT_FAMILY, key=len, reverse=True))
_PER = r"(?:\s?(?:/|per\s|por\s)\s?(?:GPU[- ]?)?(?:h|hr|hour|hora|day|día|month|mes|year|año|kWh|MWh|GPU))?"

_CLAIM = re.compile(
    # money written before the number: $3, US$ 2.5M, € 40, USD 3
    rf"(?P<money>(?:US\$|\$|€|USD\s){_SEP}{_VALUE}(?:{_SEP}(?:–|—|-|to){_SEP}(?:\$|€)?{_VALUE})?"
    rf"(?:\s?(?:k|K|M|B|bn|thousand|million|billion|trillion)(?![\w]))?{_PER}(?![\w]))"
    # number (or range) with a unit after it
    rf"|{_LEFT}(?P<quantity>{_RANGE}{_MAGNITUDE}{_SEP}(?P<unit>{_UNIT_ALT}){_PER})(?![\w/{GLUE_CHARS}])"
    # multipliers: 2×, 3x, 1.5-fold; not dimensions (8192 × 8192), configurations (2 × 8) or x16
    rf"|{_LEFT}(?P<mult>{_RANGE}(?:{_SEP}×(?!\s?(?:\d|[{GLUE_CHARS}]|[A-Z][A-Za-z]*\d))"
    rf"|x(?![\w-])(?!\s?(?:\d|[{GLUE_CHARS}]))|-fold(?!\w)))"
)
_POWER_ONLY = re.compile(rf"^(?:1\s?[×·]\s?)?(?:10|2)[{_SUP}]+$")
_YEAR = re.compile(r"^(199\d|20[0-3]\d)$")
# A memory size right after a product name is part of the SKU's name: "A100 SXM 80GB", "H100 80GB HBM3".
_SKU_BEFORE = re.compile(r"\b[A-Z]{1,4}\d{2,4}[A-Za-z]?(?:[ -](?:SXM\d?|PCIe|NVL|OAM|SXM\d? ?HBM\d?e?))?[ -]$")
_NUMBER_IN = re.compile(r"\d+(?:[.,]\d+)*")


def find_claims(masked: str) -> list[tuple[int, int, str]]:
    """(start, end, unit) of each claim in a masked sentence or block.

    Units are from _UNITS; "$" for money written first; "×" for multipliers.

    >>> t = "H100 SXM: 989 TFLOP/s, $3/h, 38–43 %, a 2× gain, 8192 × 8192, 70B, FP8, Lab 01, 10⁹ bytes"
    >>> [(t[a:b], u) for a, b, u in find_claims(t)]
    [('989 TFLOP/s', 'TFLOP/s'), ('$3/h', '$'), ('38–43 %', '%'), ('2×', '×')]
    """
    found = []
    for m in _CLAIM.finditer(masked):
        if m["money"]:
            unit = "$"
        elif m["quantity"]:
            unit = m["unit"]
            if (unit in _WORD_UNITS or unit in ("s", "us")) and not masked[m.start("unit") - 1].isspace():
                continue                                   # "1990s", "5days": not a unit
            number = m["quantity"][:m.start("unit") - m.start("quantity")].strip()
            if _POWER_ONLY.match(number):
                continue                                   # "10⁹ bytes": a unit definition
            if _YEAR.match(number) and _UNIT_FAMILY[unit] == "money":
                continue                                   # "in 2024 USD"
            if _UNIT_FAMILY[unit] == "size" and _SKU_BEFORE.search(masked, max(0, m.start() - 40), m.start()):
                continue                                   # "A100 SXM 80GB": a product name
        else:
            unit = "×"
        found.append((m.start(), m.end(), unit))
    return found


# --------------------------------------------------------------------------------------------------
# Context rules
# --------------------------------------------------------------------------------------------------

_INTERCONNECT = re.compile(r"\b(NVLink|NVSwitch|PCIe|InfiniBand|IB|RoCE|Ethernet|ICI|Infinity Fabric|NeuronLink"
                           r"|[Ll]inks?|NICs?|enlaces?)\b")
_DIRECTION = re.compile(r"(?i)\b(?:(?:per|each|one|either|both|in each)[\s-]+directions?|(?:uni|bi)-?directional(?:ly)?"
                        r"|por\s+(?:cada\s+)?(?:dirección|sentido)|en\s+cada\s+(?:dirección|sentido)"
                        r"|(?:uni|bi)direccional(?:es)?|ambas\s+direcciones|ambos\s+sentidos|en\s+un\s+sentido)\b")
_PRECISION = re.compile(r"\b(BF16|FP16|FP8|TF32|INT8|INT4|FP4|FP6|MXFP\d|NVFP4)\b")
_DENSE_SPARSE = re.compile(r"(?i)\b(dense|sparse|sparsity|dens[oa]s?|dispers[oa]s?|dispersidad|esparsidad)\b")


#: blocks where a citation covers only its own sentence (prose); elsewhere (table rows, headings, terms, titles)
#: the whole block
_SENTENCE_SCOPED = frozenset({"paragraph", "item"})
#: a sentence that explains a number's unit: which direction it counts, binary or decimal, bits or bytes
_EXPLAINS_UNIT = re.compile(r"(?i)\b(GiB|MiB|TiB|binary|decimal|bits?|counts?|counting)\b")


def explains_unit(sentence: str) -> bool:
    """Whether a sentence says how to read a number's unit (a claim of its own, never a repeated given).

    >>> explains_unit("The 64 GB/s counts both directions."), explains_unit("At 64 GB/s it takes 31 ms.")
    (True, False)
    """
    return bool(_EXPLAINS_UNIT.search(sentence) or _DIRECTION.search(sentence))


def _without_claims(masked: str, start: int, end: int, claims) -> str:
    """The sentence masked[start:end] with every claim in it blanked out (a unit in a claim explains nothing)."""
    chars = list(masked[start:end])
    for a, b, _ in claims:
        for i in range(max(a, start), min(b, end)):
            chars[i - start] = " "
    return "".join(chars)


def _quantities(masked: str, claims) -> set[tuple[float, str]]:
    """(number, unit) of each claim in ``claims`` (spans of ``masked``)."""
    return {(n, unit) for a, b, unit in claims for n in _numbers(masked[a:b])}


def _numbers(masked: str) -> set[float]:
    out = set()
    for tok in _NUMBER_IN.findall(masked):
        try:
            out.add(float(tok.replace(",", "")))
        except ValueError:
            pass
    return out


def _valid(keys, bib_keys: frozenset[str]) -> bool:
    return any(k in bib_keys for k in keys)


def check_text(text: str, path: str, bib_keys: frozenset[str]) -> FileReport:
    """Check one page's markdown; ``path`` is only used in the report.

    >>> r = check_text("The H100 delivers 989 TFLOP/s.\\n", "a.md", frozenset())
    >>> [p.format() for p in r.problems]
    ['a.md:1: claim "989 TFLOP/s": no glue and no citation in the sentence (or table row)']
    """
    claims: list[Claim] = []
    problems: list[Problem] = []
    exercise_numbers: dict[str, set[float]] = {}

    for block in iter_blocks(text):
        masked = block.masked
        t = masked.text
        sentences = split_sentences(t)
        block_cites = [ch for ch in t if ch in masked.cite_keys]
        block_ok = any(_valid(masked.cite_keys[ch], bib_keys) for ch in block_cites)
        unknown = {ch: [k for k in masked.cite_keys[ch] if k not in bib_keys] for ch in block_cites}
        unknown = {ch: ks for ch, ks in unknown.items() if ks}
        reported_unknown: set[str] = set()
        found = find_claims(t)
        if block.context == "exercise" and block.label is not None:
            exercise_numbers.setdefault(block.label, set()).update(_quantities(t, found))
        solution_givens = exercise_numbers.get(block.label or "", set()) if block.context == "solution" else set()
        block_ok = block_ok and block.kind not in _SENTENCE_SCOPED

        starts = [x for x, _ in sentences]
        newlines = [i for i, ch in enumerate(t) if ch == "\n"]
        sentence_checked: dict = {}                        # per sentence, not per claim: linear in the block
        for a, b, unit in found:
            i = bisect.bisect_right(starts, a) - 1
            sa, sb = sentences[i] if i >= 0 and sentences[i][0] <= a < sentences[i][1] else (0, len(t))
            line = block.line + bisect.bisect_left(newlines, a)
            shown = " ".join(masked.restore(t[a:b]).split())
            glued = any(ch in masked.originals and ord(ch) < CITE_BASE for ch in t[a:b])
            if (sa, sb) not in sentence_checked:
                sentence = t[sa:sb] + (" " + block.header if block.header else "")
                sentence_checked[(sa, sb)] = (
                    any(_valid(masked.cite_keys[ch], bib_keys) for ch in sentence if ch in masked.cite_keys),
                    bool(GIVEN_SENTENCE.search(sentence)), _INTERCONNECT.search(sentence),
                    bool(_DIRECTION.search(sentence)), _PRECISION.search(sentence),
                    bool(_DENSE_SPARSE.search(sentence)))
            sentence_ok, given_sentence, link, direction, prec, dense = sentence_checked[(sa, sb)]
            numbers = _numbers(t[a:b])
            if glued:
                status = "computed"
            elif sentence_ok or block_ok:
                status = "cited"
            elif (block.context == "exercise" or block.given_scope or given_sentence
                  or (numbers and {(n, unit) for n in numbers} <= solution_givens
                      and not explains_unit(_without_claims(t, sa, sb, found)))):
                status = "given"
            else:
                status = "uncited"
            claims.append(Claim(path, line, shown, unit, status))

            if status == "uncited":
                bad = sorted({k for ks in unknown.values() for k in ks})
                if bad:
                    reported_unknown.update(unknown)
                    msg = (f"citation key{'s' if len(bad) > 1 else ''} {', '.join(repr(k) for k in bad)} not in "
                           f"references.bib, so no glue and no valid citation in the sentence (or table row)")
                else:
                    msg = "no glue and no citation in the sentence (or table row)"
                problems.append(Problem(path, line, shown, "uncited", msg))

            if block.context == "exercise":
                continue                                   # exercises set the unit traps on purpose
            family = _UNIT_FAMILY.get(unit)
            if family == "bandwidth" and unit != "GT/s":
                if link and not direction:
                    problems.append(Problem(path, line, shown, "units-hygiene",
                                            f"interconnect bandwidth ({link.group(1)}) without its direction: "
                                            f"say \"per direction\" or \"bidirectional\" in the sentence"))
            if family == "compute":
                if prec and not dense:
                    problems.append(Problem(path, line, shown, "units-hygiene",
                                            f"{prec.group(1)} rate without \"dense\" or \"sparse\" in the sentence"))

        for ch, keys in unknown.items():
            if ch not in reported_unknown:
                line = block.line + bisect.bisect_left(newlines, t.index(ch))
                problems.append(Problem(path, line, masked.originals[ch], "unknown-key",
                                        f"citation key{'s' if len(keys) > 1 else ''} "
                                        f"{', '.join(repr(k) for k in keys)} not in references.bib"))

    problems.sort(key=lambda p: p.line)
    return FileReport(path, tuple(claims), tuple(problems))


# --------------------------------------------------------------------------------------------------
# Files and command line
# --------------------------------------------------------------------------------------------------

UsageError = cli.UsageError
MAX_PAGE_BYTES = 2**20      # the book's pages are all under 100 KB


def collect(paths: list[str]) -> list[Path]:
    """The .md files named by ``paths`` (files, or directories read one level deep), sorted, de-duplicated."""
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(path.glob("*.md"))
            if not found:
                raise UsageError(f"no .md files in {p}")
            files.extend(found)
        elif path.is_file():
            if path.suffix != ".md":
                raise UsageError(f"not a markdown (.md) file: {p}")
            files.append(path)
        elif path.exists() or path.is_symlink():
            raise UsageError(f"{p}: not a regular file or directory (a FIFO, a device or a broken link)")
        else:
            raise UsageError(f"path not found: {p}")
    return list(dict.fromkeys(files))


def find_bib(files: list[Path]) -> Path | None:
    """references.bib next to the first file, or in its parent directory."""
    for f in files:
        for d in (f.parent, f.parent.parent):
            if (d / "references.bib").is_file():
                return d / "references.bib"
    return None


def check_paths(paths: list[str], bib: str | None = None) -> list[FileReport]:
    """Check every .md file under ``paths`` against the keys of ``bib`` (default: references.bib beside them)."""
    files = collect(paths)
    bib_path = Path(bib) if bib else find_bib(files)
    if bib_path is None or not bib_path.is_file():
        raise UsageError(f"bibliography not found: {bib}" if bib else
                         "no references.bib next to the pages; pass --bib FILE")
    try:
        keys = bibliography_keys(bib_path)
    except BibError as e:
        raise UsageError(str(e)) from None
    return [check_text(read_page(f), str(f), keys) for f in files]


def read_page(path: Path) -> str:
    """The text of a page: a regular file of at most MAX_PAGE_BYTES of UTF-8; anything else is a
    :class:`UsageError` naming it."""
    from x4lib.harness.runs import read_limited
    try:
        return read_limited(path, MAX_PAGE_BYTES).decode("utf-8")
    except (OSError, ValueError) as e:
        if isinstance(e, UnicodeDecodeError):
            raise UsageError(f"{path}: not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})") from None
        raise UsageError(f"{path}: {getattr(e, 'strerror', None) or e}") from None


def to_json(reports: list[FileReport], with_problems: bool = True) -> dict:
    """The --json document, or with ``with_problems=False`` the --counts-out document (problem counts only)."""
    files = {}
    for r in reports:
        c = r.counts()
        entry = {k: c[k] for k in ("claims", "computed", "cited", "givens")}
        entry["problems"] = [p.as_dict() for p in r.problems] if with_problems else c["problems"]
        if not with_problems:
            entry["uncited"] = c["uncited"]
        files[r.path] = entry
    return {"files": files, "total_problems": sum(len(r.problems) for r in reports)}


def format_text(reports: list[FileReport]) -> str:
    """Problem lines, then one summary line per file and a total."""
    lines = [p.format() for r in reports for p in r.problems]
    if lines:
        lines.append("")
    for r in reports:
        c = r.counts()
        lines.append(f"{r.path}: {c['claims']} claims, {c['computed']} computed via glue, {c['cited']} cited, "
                     f"{c['givens']} givens, {c['problems']} problems")
    total = sum(len(r.problems) for r in reports)
    lines.append(f"claims check: {total} problem{'s' if total != 1 else ''} in {len(reports)} files")
    return "\n".join(lines)


def cli_arguments(p) -> None:
    p.description = ("Check that every quantitative claim in the book's prose is glued from a code cell, cited, "
                     "or marked as a given; exit 1 when a claim is neither.")
    p.add_argument("paths", nargs="+", help="book directory or .md files")
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    p.add_argument("--counts-out", metavar="FILE", help="also write the per-file counts as JSON to FILE")
    p.add_argument("--bib", metavar="FILE", help="BibTeX file with the valid keys (default: references.bib "
                   "beside the pages)")


def cli_main(args) -> int:
    """0 no problems, 1 problems found; bad usage raises UsageError (exit 2, one error line)."""
    try:
        reports = check_paths(args.paths, args.bib)
        if args.counts_out:
            out = Path(args.counts_out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(to_json(reports, with_problems=False), indent=2) + "\n", encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{e.strerror or e}: {e.filename or ''}".rstrip(": ")) from None
    cli.emit(to_json(reports), format_text(reports), as_json=args.json)
    return 1 if any(r.problems for r in reports) else 0
