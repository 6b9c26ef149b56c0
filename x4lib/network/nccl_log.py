"""Read the text output of an nccl-tests or rccl-tests binary, and check it.

    python -m x4lib nccl-parse LOG [--json | --csv] [--collective NAME]

Units and convention are the tool's own (NVIDIA/nccl-tests; references.bib: nccl-tests,
nccl-tests-performance), kept as printed and named in every field:

    size_bytes [B]      the "size" column: for AllGather, ReduceScatter, AllToAll the whole array
                        (count · type size · n ranks); for the others count · type size
    time_us [µs]        time of one operation, averaged over the iterations
    algbw_gb_s [GB/s]   algbw = size / time          GB/s = 1e9 B/s (not GiB/s)
    busbw_gb_s [GB/s]   busbw = algbw × F(n)         F(n) from x4lib.network.nccl_tests.busbw_factor
    wrong               current format: nccl-tests' count of wrong elements (None when printed N/A, -c 0)
    max_error           old format: the largest deviation from the expected result (None when N/A)

Every row is checked against both formulas within the printed rounding (half a unit in the last printed
digit of each value). The printed "# Avg bus bandwidth" is checked against the mean busbw of every
out-of-place and in-place result of every row: nccl-tests src/common.cu adds busBw to ``bw[0]`` and 1 to
``bw_count[0]`` after each BenchTime call (out-of-place, then in-place) and divides at the end.

Formats read: the current one (``redop`` and ``root`` columns, ``#wrong``: nccl-tests 2.13, 2022 on,
and rccl-tests), the older one (``error`` column with the max deviation printed ``%5.0le``, per-collective
columns: no ``redop`` for AllGather/SendRecv, ``root`` only for Broadcast, ``redop`` + ``root`` for Reduce,
a blank ``redop`` for old AllToAll; old rccl-tests put a ``*`` after an error over its threshold, a failed
data check), ``N/A`` when validation is off (``-c 0``), per-iteration columns
(``i_min i_max i_p99 i_cv%``), rank lines with or without ``Group`` and ``Pid``, and tool messages (NCCL
INFO, "rccl-tests: Version", "RCCL version : ...") between the lines.

Ranks. Each rank line (``#  Rank 3 Group 0 Pid 6902 on host device 3 [0000:0c:00] NVIDIA H100 80GB
HBM3``) becomes a :class:`Rank`. The number of ranks n is the listed count (rank numbers 0..max; with
NCCL_TESTS_SPLIT groups, the ranks in rank 0's group, which is the communicator nccl-tests' busbw uses)
unless the list is shortened: a line of ``...`` (or nccl-tests' own ``...`` cut of a long list), missing
rank numbers, or a list that busbw/algbw of the rows contradicts (posters often show only the first few
ranks). Then n is inferred from busbw/algbw (:func:`infer_nranks`: the one n whose F(n) lies within the
printed rounding of every row; of the largest row when the rows disagree, so the checks name the odd
ones), a warning says so, and ``nhosts`` is None (the hosts shown are a subset).

Input limits and rules (every one a clear one-line error, exit 2, unless said otherwise):
- a regular file only: a FIFO, a device (/dev/zero), a socket or a directory is refused before reading;
  an empty path is refused as such;
- at most MAX_LOG_BYTES (64 MiB; the stored real logs are 4-7 KB, the rest is room for NCCL_DEBUG output);
- text: UTF-8 (a UTF-8 BOM is skipped); UTF-16 and UTF-32 with a BOM, and UTF-16 LE/BE without one (told
  by the zero bytes of ASCII text), are decoded; other bytes with NULs or many control characters are
  "binary file"; 8-bit text that is not UTF-8 is decoded with U+FFFD replacements and a warning;
- at most MAX_LOG_LINES (10^6) lines, MAX_TABLE_LINES (10,000) result lines in a table and MAX_RANK_LINES
  (2^17) rank lines, so that a 64 MiB log costs seconds and a few hundred MB, not minutes and gigabytes;
- every pattern runs on stripped lines in time linear in the line length (no lazy or nested quantifier,
  no trailing-whitespace anchor), so a 100,000-character line costs milliseconds;
- numbers in rows must be finite and >= 0 (no nan, inf, 1e999, negative time), sizes and counts at most
  2^64 - 1 (size_t), the #wrong count a whole number: a row breaking this is a failed check naming its
  line (exit 1) and is left out of the rows; ``--json`` never holds NaN or Infinity.

Exit codes (decisions.md): 0 read and checked; 1 read but a check failed (a row whose algbw or busbw
disagrees with the formulas, a rejected value, a printed average that disagrees with the rows, nccl-tests'
own data check reporting wrong elements) or nothing usable (a truncated log, every row rejected); 2 bad
input (missing, unreadable or refused file, not an nccl-tests/rccl-tests log, a complete log whose table is
empty, a bad option). A truncated log (table cut mid-way, a half line, no "Avg bus bandwidth" footer) is read as far
as it is complete, with a warning naming the line, and exits 0.
Used in: book/lab-01-collectives.md.
"""
from __future__ import annotations

import bisect
import codecs
import csv
import functools
import io
import math
import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from x4lib.network.nccl_tests import COLLECTIVES, NCCL_TESTS_BINARY, OTHER_NCCL_TESTS_BINARIES, busbw_factor
from x4lib.network.nccl_rows import (Header, Placement, Rank, Row, check_average, check_placement, finite, half_ulp, is_elision,
                             missing_ranks, number, parse_header, parse_rank, parse_row, short, usable, wrong_elements)

#: version of this parser's method; bump when what it reads or checks changes
METHOD_VERSION = "nccl_log/3"
CONVENTION = "nccl-tests: algbw = size/time, busbw = algbw × factor; GB/s = 1e9 B/s"
#: largest log read, in bytes (64 MiB); larger files are refused before reading
MAX_LOG_BYTES = 64 * 2**20
#: largest rank count :func:`infer_nranks` considers
MAX_INFERRED_RANKS = 2**20
MAX_TABLE_LINES = 10_000   # result lines of one table: nccl-tests prints one per size (a full sweep is under 100)
MAX_RANK_LINES = 2**17     # '# Rank' lines: the largest jobs run about 10^5 GPUs
MAX_LOG_LINES = 1_000_000  # 64 MiB of NCCL_DEBUG=INFO lines (about 100 characters each) is under 700,000

#: binary stem → collective name (x4lib.network.collectives' one map; binaries it has no factor for keep their stem)
BINARIES = {**{b.removesuffix("_perf"): c for c, b in NCCL_TESTS_BINARY.items()},
            **{b.removesuffix("_perf"): b.removesuffix("_perf") for b in OTHER_NCCL_TESTS_BINARIES}}
#: bytes per element of nccl-tests / rccl-tests type names
TYPE_BYTES = {"int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8,
              "uint64": 8, "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8,
              "bfloat16": 2, "bf16": 2, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}

# Every pattern is matched against a stripped line (no leading or trailing whitespace) and has no lazy
# quantifier and no two whitespace runs that can trade characters, so matching is linear in the line length.
_A = re.ASCII
_BINARY_RE = re.compile(r"(?<![A-Za-z_])(" + "|".join(sorted(BINARIES, key=len, reverse=True)) + r")_perf", _A)
_SWEEP_RE = re.compile(r"minBytes ([0-9]{1,20}) maxBytes ([0-9]{1,20}) step: ([0-9]{1,20})\((factor|bytes)\)", _A)
_ITERS_RE = re.compile(r"warmup iters: ?([0-9]{1,9}) iters: ?([0-9]{1,9})", _A)
_THREADS_RE = re.compile(r"nThread ([0-9]{1,9}) nGpus ([0-9]{1,9})", _A)
_AVG_RE = re.compile(r"#?\s*Avg bus bandwidth\s*:\s*(\S+)", _A)
_OOB_RE = re.compile(r"#?\s*Out of bounds values\s*:\s*([0-9]{1,20})\s*(\S*)", _A)
_ROW_RE = re.compile(r"[0-9]+\s+[0-9]+\s+\S", _A)
#: what a launcher puts before every line of a rank's output: Slurm's ``srun --label`` ("0: ") and Open MPI's
#: ``--tag-output`` ("[1,0]<stdout>:"); removed before a line is read
_LAUNCHER_RE = re.compile(r"(?:\[[0-9]{1,9},[0-9]{1,9}\]<std(?:out|err)>:|[0-9]{1,9}: )", _A)
#: byte-order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one)
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_TEXT_CONTROLS = frozenset(b"\t\n\r\x0b\x0c\x1b")  # tab, line ends, ANSI colour escapes


class NcclLogError(ValueError):
    """Input that is not a usable nccl-tests log; ``exit_code`` is the exit status (2 bad input, 1 nothing
    usable)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.exit_code = code

    @property
    def code(self) -> int:
        return self.exit_code


@dataclass(frozen=True)
class ParsedLog:
    path: str
    tool: str
    format: str  # "current" (#wrong) or "old" (error)
    collective: str | None
    collective_from: str
    n_ranks: int | None
    nhosts: int | None  # hosts in the rank list; None without a list or when the list is shortened
    devices: tuple[str, ...]  # distinct GPU names in the rank list
    rows: tuple[Row, ...]
    avg_busbw_gb_s: float | None  # as printed in the footer
    rows_avg_busbw_gb_s: float | None  # mean of every printed busbw (what nccl-tests averages)
    warnings: tuple[str, ...]
    checks_ok: bool
    ranks: tuple[Rank, ...] = ()  # every rank line, in the order printed
    encoding: str | None = None  # how the file's bytes were decoded (None: given as text)
    warmup_iters: int | None = None  # from the "warmup iters: W iters: N" parameter line, when printed
    iters: int | None = None
    used_lines: tuple[int, ...] = ()  # the line numbers the reader took something from (see excerpt)
    #: GPUs each thread drives (nccl-tests' -g, from the "nThread T nGpus G" parameter line); None when not printed
    gpus_per_thread: int | None = None


# ---------------------------------------------------------------- inference

def detect_tool(text: str) -> str:
    amd = ("rccl-tests", "RCCL version", "AMD Instinct", "HIP version", "librccl", "gfx9", "ROCm version")
    return "rccl-tests" if any(m in text for m in amd) else "nccl-tests"


def _type_bytes(rows) -> int | None:
    return TYPE_BYTES.get(rows[0].type.lower()) if rows else None


def collective_from_columns(header: Header, rows) -> set[str]:
    """Candidates from the column set, redop/root values and size/count ratio (see module docstring): the
    ratio size / (count · type size) is n for AllGather, ReduceScatter and AllToAll and 1 for the others,
    so it tells them apart without trusting the rank list (which may be shortened)."""
    left, big = set(header.left), [r for r in rows if r.count > 0]
    whole = None
    if big and _type_bytes(big):
        whole = big[-1].size_B / (big[-1].count * _type_bytes(big)) >= 1.5
    redops = {r.redop for r in rows}
    roots = {r.root for r in rows}
    if "redop" not in left:  # old format: AllGather, SendRecv (no redop); Broadcast (root only)
        cands = {"broadcast"} if "root" in left else {"all_gather", "sendrecv"}
    elif "root" in left and roots - {None, -1}:
        cands = {"broadcast"} if redops <= {"none", None} else {"reduce"}
    elif redops <= {None} and rows:  # blank redop: old AllToAll
        cands = {"all_to_all"}
    elif redops <= {"none"} and rows:
        cands = {"all_gather", "all_to_all", "sendrecv"}
    else:
        cands = {"all_reduce", "reduce_scatter", "all_to_all"} if "root" not in left else \
            {"all_reduce", "reduce_scatter"}
    if whole is not None:
        gathered = {"all_gather", "reduce_scatter", "all_to_all"}
        cands = (cands & gathered) if whole else (cands - gathered)
    return cands


def consistent_nranks(collective: str, rows) -> range:
    """Every n in 1..MAX_INFERRED_RANKS whose F(n) lies within the printed rounding of busbw/algbw of every
    result with a non-zero algbw (F from x4lib.network.nccl_tests.busbw_factor, non-decreasing in n)."""
    if collective not in COLLECTIVES:
        return range(0)
    lo, hi = 0.0, math.inf
    for p in (p for r in rows for _, p in r.placements()):
        da, db = half_ulp(p.text[1]), half_ulp(p.text[2])
        if p.algbw_gb_s - da > 0:
            lo = max(lo, (p.busbw_gb_s - db) / (p.algbw_gb_s + da))
            hi = min(hi, (p.busbw_gb_s + db) / (p.algbw_gb_s - da))
    ns, factor = range(1, MAX_INFERRED_RANKS + 1), functools.partial(busbw_factor, collective)
    return ns[bisect.bisect_left(ns, lo - 1e-9, key=factor):bisect.bisect_right(ns, hi + 1e-9, key=factor)]


def infer_nranks(collective: str, rows) -> int | None:
    """The one rank count consistent with busbw/algbw of every row; None when none or several fit
    (Broadcast, Reduce, SendRecv have F = 1 whatever n is)."""
    return _one(consistent_nranks(collective, rows))


def _span(fits: range) -> str:
    return f"{fits[0]}" if len(fits) == 1 else f"{fits[0]} to {fits[-1]}"


def _fits_text(fits: range) -> str:
    if len(fits) == 1:
        return f"inferred from busbw/algbw: {fits[0]}"
    if not fits:
        return "unknown (no rank count fits busbw/algbw of the rows)"
    return f"unknown (busbw/algbw fits any of {_span(fits)})"


def count_ranks(ranks: tuple[Rank, ...], elided_line: int | None, fits: range) -> tuple[int | None, bool, list]:
    """(n, whether the rank list is complete, warnings) from the rank list and the rank counts that
    busbw/algbw of the rows allow (``fits``, see :func:`consistent_nranks`). A list with a '...' line or
    missing rank numbers, or one shorter than every count the rows allow, is incomplete: n is then the one
    count the rows allow at or above the ranks shown, or None when several fit."""
    if not ranks:
        return _one(fits), False, ["no rank list in the header; number of ranks " + _fits_text(fits)]
    numbers = sorted({r.rank for r in ranks})
    missing = missing_ranks(numbers)
    groups = {r.group for r in ranks if r.group is not None}
    first = min((r for r in ranks if r.group is not None), key=lambda r: r.rank, default=None)
    comm = numbers[-1] + 1 if len(groups) < 2 else len({r.rank for r in ranks if r.group == first.group})
    warnings = [] if len(groups) < 2 else [
        f"the ranks are split into {len(groups)} groups (NCCL_TESTS_SPLIT); busbw uses the {comm} ranks of "
        f"rank {first.rank}'s group"]
    fewer = f"busbw/algbw of the rows fits only {_span(fits)} ranks" if fits and fits[-1] < comm else None
    if elided_line or missing:
        why = f"line {elided_line} stands for left-out lines" if elided_line else f"ranks {missing} missing"
        shortened = f"the rank list is shortened ({why}; {len(numbers)} ranks shown): "
        if fewer:  # the rows contradict the list: check them with the least count the list allows
            return comm, False, warnings + [f"{shortened}{fewer}, fewer than shown; checking with {comm}"]
        at_least = range(max(fits.start, comm), fits.stop) if fits else fits
        return _one(at_least), False, warnings + [shortened + "number of ranks " + _fits_text(at_least)]
    if fits and fits[0] > comm:  # every count the rows allow is larger than the list
        return _one(fits), False, warnings + [
            f"the rank list shows {comm} ranks but busbw/algbw of the rows needs more: the list looks cut; "
            f"number of ranks " + _fits_text(fits)]
    if fewer:
        warnings.append(f"{fewer}, not the {comm} listed")
    return comm, True, warnings


def _largest_algbw(row: Row) -> float:
    return max(p.algbw_gb_s for _, p in row.placements())


def _one(fits: range) -> int | None:
    return fits[0] if len(fits) == 1 else None


# ---------------------------------------------------------------- the scan

@dataclass
class _Scan:
    header: Header | None = None
    rows: list = field(default_factory=list)
    ranks: list = field(default_factory=list)
    elided: int | None = None  # first line standing for left-out rank lines
    avg: tuple[str, int] | None = None
    oob: tuple[int, str, int] | None = None
    bad: list = field(default_factory=list)  # (lineno, text) row-like lines that did not parse
    rejected: list = field(default_factory=list)  # (lineno, message) rows with unusable values
    second_table: int | None = None
    stop: int | None = None
    table_elided: int | None = None  # first '...' line between the table header and the footer
    bare_header: bool = False  # the header had no leading '#' (stripped when the log was published)
    launcher_lines: int = 0  # lines that carried a launcher prefix (srun "0: ", Open MPI "[1,0]<stdout>:")
    binaries: dict = field(default_factory=dict)  # collective → first line naming it
    iters: tuple[int, int] | None = None  # (warmup iters, iters) from the parameter line
    threads: tuple[int, int] | None = None  # (nThread, nGpus) from the parameter line
    sweep: tuple[int, int, int, str, int] | None = None  # (minBytes, maxBytes, step, "factor"|"bytes", line)
    units_line: str | None = None
    used: list = field(default_factory=list)  # line numbers the reader took something from, in order


def _scan_header_part(s: _Scan, lineno: int, line: str) -> bool:
    """Rank lines and elision marks before the table header; True when the line was one."""
    rank = parse_rank(line, lineno)
    if rank:
        s.ranks.append(rank)
        s.used.append(lineno)
    elif not (s.ranks and is_elision(line)):
        return False
    if s.elided is None and is_elision(line):
        s.elided = lineno
        s.used.append(lineno)
    return True


def _scan_line(s: _Scan, lineno: int, line: str) -> None:
    if s.header is None and _scan_header_part(s, lineno, line):
        return
    header = parse_header(line, lineno)
    if header:
        if s.header is None:
            s.header = header
            s.bare_header = not line.startswith("#")
            s.used.append(lineno)
        elif s.rows or s.rejected or s.avg:
            s.second_table, s.stop = lineno, lineno
        return
    if s.header and s.units_line is None and "(B)" in line and "(elements)" in line:
        s.units_line = line
        s.used.append(lineno)
        return
    if s.header and s.avg is None and s.table_elided is None and (s.rows or s.rejected) and is_elision(line):
        s.table_elided = lineno
        s.used.append(lineno)
        return
    if s.sweep is None and s.header is None and (m := _SWEEP_RE.search(line)):
        s.sweep = (int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4), lineno)
        s.used.append(lineno)
    if s.iters is None and (m := _ITERS_RE.search(line)):
        s.iters = (int(m.group(1)), int(m.group(2)))
        s.used.append(lineno)
    if s.threads is None and s.header is None and (m := _THREADS_RE.search(line)):
        s.threads = (int(m.group(1)), int(m.group(2)))
        s.used.append(lineno)
    for m in _BINARY_RE.finditer(line):
        if BINARIES[m.group(1)] not in s.binaries:
            s.binaries[BINARIES[m.group(1)]] = lineno
            s.used.append(lineno)
    if (m := _AVG_RE.match(line)) and s.header:
        s.avg = (m.group(1), lineno)
        s.used.append(lineno)
    elif (m := _OOB_RE.match(line)) and s.header:
        s.oob = (int(m.group(1)), m.group(2), lineno)
        s.used.append(lineno)
    elif s.header and s.avg is None and _ROW_RE.match(line):
        s.used.append(lineno)
        row = parse_row(line, lineno, s.header)
        if isinstance(row, Row):
            s.rows.append(row)
        elif row:
            s.rejected.append((lineno, row))
        else:
            s.bad.append((lineno, line))


def scan(text: str, path: str = "<log>") -> tuple[_Scan, int]:
    """One pass over the lines; refuses (exit 2) more than MAX_TABLE_LINES result lines or MAX_RANK_LINES rank
    lines, so that time and memory stay bounded whatever the 64 MiB hold."""
    s = _Scan()
    if text.count("\n") > MAX_LOG_LINES:
        raise NcclLogError(f"{path}: more than {MAX_LOG_LINES:,} lines; not one nccl-tests run (MAX_LOG_LINES)")
    lines = text.splitlines()
    for lineno, line in enumerate(lines, 1):
        if " NCCL INFO " in line:  # NCCL_DEBUG output: most of a long log, and never a line of the table
            continue
        line = line.strip()
        if m := _LAUNCHER_RE.match(line):
            line, s.launcher_lines = line[m.end():].strip(), s.launcher_lines + 1
        _scan_line(s, lineno, line)
        if s.stop:
            break
        if len(s.rows) + len(s.rejected) + len(s.bad) > MAX_TABLE_LINES:
            raise NcclLogError(f"{path}:{lineno}: more than {MAX_TABLE_LINES:,} result lines in one table; "
                               f"nccl-tests prints one per message size (MAX_TABLE_LINES)")
        if len(s.ranks) > MAX_RANK_LINES:
            raise NcclLogError(f"{path}:{lineno}: more than {MAX_RANK_LINES:,} '# Rank' lines (MAX_RANK_LINES)")
    if s.header and s.units_line and "(ms)" in s.units_line:
        s.header = replace(s.header, time_unit_us=1000.0)
    return s, len(lines)


def _choose_collective(s: _Scan, user: str | None, warnings: list) -> tuple[str | None, str, set]:
    if user:
        return user, "user", {user}
    if len(s.binaries) == 1:
        name = next(iter(s.binaries))
        return name, f"binary name (line {s.binaries[name]})", {name}
    cands = collective_from_columns(s.header, s.rows)
    if len(s.binaries) > 1:
        warnings.append(f"several binaries named ({', '.join(sorted(s.binaries))}); using the columns")
    if len(cands) == 1:
        return next(iter(cands)), "columns", cands
    warnings.append(f"line {s.header.line}: cannot tell the collective from the columns "
                    f"({' or '.join(sorted(cands))}); pass --collective")
    return None, "unknown", cands


def _factor(names: set, n_ranks: int | None, at_least: int) -> float | None:
    """F(n) shared by every candidate collective; with n unknown, only an F that is the same for every
    n >= at_least (Broadcast, Reduce, SendRecv: 1)."""
    if not names or not names <= set(COLLECTIVES):
        return None
    ns = (n_ranks,) if n_ranks else (at_least, MAX_INFERRED_RANKS)
    factors = {busbw_factor(c, n) for c in names for n in ns}
    return factors.pop() if len(factors) == 1 else None


def _truncation(s: _Scan, n_lines: int) -> tuple[list[str], list]:
    """Warnings for a cut log; returns (warnings, row-like lines that are real failures)."""
    warnings = []
    last_row = max([s.rows[-1].line if s.rows else s.header.line] + [ln for ln, _ in s.rejected])
    tail_bad = [b for b in s.bad if b[0] > last_row] if s.avg is None else []
    failures = [b for b in s.bad if b not in tail_bad]
    for lineno, _ in tail_bad:
        warnings.append(f"line {lineno}: incomplete result line (log cut mid-line?); ignored")
    if s.avg is None and s.second_table is None:
        warnings.append(f"line {n_lines}: log ends without the '# Avg bus bandwidth' footer (truncated?); "
                        f"read {len(s.rows)} complete rows, the last at line {last_row}")
    return warnings, failures


def read_log(text: str, path: str = "<log>", collective: str | None = None) -> ParsedLog:
    """Parse and check one nccl-tests / rccl-tests log. Raises NcclLogError (with an exit code)."""
    s, n_lines = scan(text, path)
    if s.header is None:
        first = next((i for i, ln in enumerate(text.splitlines(), 1) if ln.strip()), 1)
        raise NcclLogError(f"{path}:{first}: not an nccl-tests/rccl-tests log: no results table header "
                           f"('#  size  count  type ... time  algbw  busbw') in {n_lines} lines")
    warnings, failures = _truncation(s, n_lines)
    checks = [f"line {ln}: unreadable result line: {short(t)!r}" for ln, t in failures]
    checks += [message for _, message in s.rejected]
    if not s.rows:
        if s.rejected:
            raise NcclLogError(f"{path}:{s.rejected[0][0]}: no usable result row: " + "; ".join(checks[:3]), 1)
        if s.avg is not None:
            raise NcclLogError(f"{path}:{s.avg[1]}: empty results table: header at line {s.header.line}, "
                               f"footer at line {s.avg[1]}, no result rows between them")
        raise NcclLogError(f"{path}:{n_lines}: truncated before the first complete result row "
                           f"(table header at line {s.header.line}); nothing usable", code=1)
    if s.second_table:
        warnings.append(f"line {s.second_table}: a second results table starts here; only the first was read")
    if s.launcher_lines:
        warnings.append(f"{s.launcher_lines} lines carry a launcher's prefix (srun's '0: ' or Open MPI's "
                        f"'[1,0]<stdout>:'); read without it")
    if s.bare_header:
        warnings.append(f"line {s.header.line}: the table header has no leading '#' (the comment marks were "
                        f"stripped when the log was published); read as the header")
    if len({r.rank for r in s.ranks}) < len(s.ranks):
        warnings.append("the rank list repeats rank numbers: processes may have run as separate jobs "
                        "(nccl-tests built without MPI=1?)")
    coll, source, cands = _choose_collective(s, collective, warnings)
    fits = consistent_nranks(coll, s.rows) if coll else range(0)
    if coll and not fits:  # some row disagrees: the largest row tells n, the checks then name the others
        fits = consistent_nranks(coll, [max(s.rows, key=_largest_algbw)])
    n_ranks, complete, notes = count_ranks(tuple(s.ranks), s.elided, fits)
    return _finish(s, path, text, coll, source, cands, n_ranks, complete, warnings + notes, checks)


def _missing_sweep_rows(s: _Scan) -> int:
    """How many sizes of the sweep the parameter line announces (nccl-tests' size loop, x4lib.network.sizes), up to the
    last printed row, have no line in the table: rows a poster cut without a '...' mark. 0 when unknown."""
    from x4lib.network.sizes import nccl_tests_sizes
    if not s.sweep or not s.rows:
        return 0
    lo, hi, step, kind, _ = s.sweep
    last = min(hi, s.rows[-1].size_B)
    try:
        expected = nccl_tests_sizes(str(lo), str(last), str(step) if kind == "factor" else "1", str(step))
    except ValueError:
        return 0
    return max(0, len(expected) - len(s.rows) - len(s.rejected) - len(s.bad))


def _finish(s, path, text, coll, source, cands, n_ranks, complete, warnings, checks) -> ParsedLog:
    names = {coll} if coll else cands
    factor = _factor(names, n_ranks, max((r.rank + 1 for r in s.ranks), default=1))
    if factor is None and names:
        listed = " or ".join(sorted(names))
        why = (f"no busbw factor for {listed} in x4lib.network.collectives" if not names <= set(COLLECTIVES) else
               "number of ranks unknown" if n_ranks is None else f"{listed} have different busbw factors")
        warnings.append(f"{why}; busbw not checked")
    if s.header.cputime:
        warnings.append(f"line {s.header.line}: the time column is CPU time; algbw = size/time not checked")
    for r in s.rows:
        for where, p in r.placements():
            checks += check_placement(r, where, p, factor, s.header.cputime, s.header.time_unit_us)
        checks += wrong_elements(r)
    if s.oob and s.oob[0] > 0:
        checks.append(f"line {s.oob[2]}: nccl-tests reports {s.oob[0]} out-of-bounds values ({s.oob[1]})")
    rows_avg, problems = check_average(tuple(s.rows), s.avg[0] if s.avg else None, s.avg[1] if s.avg else 0)
    missing = _missing_sweep_rows(s)
    if s.table_elided and s.avg:  # the printed average covers rows the poster left out: it cannot be checked
        warnings.append(f"line {s.table_elided}: result rows were left out ('...'): the printed average "
                        f"(line {s.avg[1]}) covers rows not shown, so it is not checked")
    elif missing and s.avg:
        warnings.append(f"line {s.sweep[4]}: the header's sweep (minBytes {s.sweep[0]}, step {s.sweep[2]}"
                        f"({s.sweep[3]})) has {missing} more sizes up to the last row than the table shows: rows "
                        f"were cut, so the printed average (line {s.avg[1]}) is not checked")
    else:
        checks += problems
    printed = number(s.avg[0]) if s.avg else None
    printed = printed if printed is not None and usable(printed) else None
    hosts = {r.host for r in s.ranks}
    devices = tuple(sorted({r.name for r in s.ranks if r.name}))
    return ParsedLog(path, detect_tool(text), s.header.format, coll, source, n_ranks,
                     (len(hosts) or None) if complete else None, devices, tuple(s.rows), printed,
                     finite(rows_avg), tuple(warnings + checks), not checks, tuple(s.ranks),
                     warmup_iters=s.iters[0] if s.iters else None, iters=s.iters[1] if s.iters else None,
                     used_lines=tuple(sorted(set(s.used))),
                     gpus_per_thread=s.threads[1] if s.threads and s.threads[1] >= 1 else None)


# ---------------------------------------------------------------- the file

def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a regular file of at most MAX_LOG_BYTES. The file is opened without blocking (a FIFO
    with no writer returns at once) and its type and size are checked on the open descriptor."""
    name = os.fspath(path)
    if name == "":
        raise NcclLogError("the log path is empty: give the path of an nccl-tests/rccl-tests log file")
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise NcclLogError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise NcclLogError(f"{name}: is a directory, not a log file") from None
    except OSError as exc:
        raise NcclLogError(f"{name}: cannot read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise NcclLogError(f"{name}: is a directory, not a log file")
        if not stat.S_ISREG(st.st_mode):
            raise NcclLogError(f"{name}: {_kind(st.st_mode)}, not a regular file; give a log file")
        too_big = f"{name}: over the {MAX_LOG_BYTES // 2**20} MiB limit for a log (MAX_LOG_BYTES)"
        if st.st_size > MAX_LOG_BYTES:
            raise NcclLogError(f"{too_big}: {st.st_size} bytes")
        chunks, size = [], 0
        while size <= MAX_LOG_BYTES and (chunk := os.read(fd, MAX_LOG_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise NcclLogError(f"{name}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if size > MAX_LOG_BYTES:  # it grew while we read
        raise NcclLogError(too_big)
    return b"".join(chunks)


def _utf16_without_bom(head: bytes) -> str | None:
    """'utf-16-le' or 'utf-16-be' when every other byte is zero, as in ASCII text saved as UTF-16."""
    even, odd = head[0::2], head[1::2]
    if len(odd) < 2:
        return None
    if odd.count(0) >= 0.9 * len(odd) and even.count(0) <= 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) >= 0.9 * len(even) and odd.count(0) <= 0.1 * len(odd):
        return "utf-16-be"
    return None


def decode_log(data: bytes, path: str = "<log>") -> tuple[str, str, list[str]]:
    """(text, encoding, warnings) of a log's bytes; NcclLogError for a binary file (module docstring)."""
    encoding, body, notes = next(((codec, data[len(bom):], []) for bom, codec in _BOMS if data.startswith(bom)),
                                 (None, data, []))
    head = data[:4096]
    if encoding is None and (encoding := _utf16_without_bom(head)):
        notes.append(f"line 1: no byte-order mark; read as {encoding.upper()} (every other byte is zero)")
    elif encoding is None:
        controls = sum(1 for b in head if b < 32 and b not in _TEXT_CONTROLS)
        if b"\0" in head or controls > 0.05 * len(head):
            raise NcclLogError(f"{path}:1: binary file, not an nccl-tests/rccl-tests log")
        encoding = "utf-8"
    try:
        return body.decode(encoding), encoding, notes
    except UnicodeDecodeError as exc:
        text = body.decode(encoding, errors="replace")
        line = len((body[:exc.start].decode(encoding, errors="replace") + "x").splitlines())
        notes.append(f"line {line}: not valid {encoding.upper()} (byte {body[exc.start]:#04x} at offset "
                     f"{exc.start + len(data) - len(body)}); undecodable bytes replaced with U+FFFD")
        return text, encoding, notes


def read_data(data: bytes, path: str, collective: str | None = None) -> tuple[ParsedLog, str]:
    """(parsed log, decoded text) of a log's bytes, read once (limits in the module docstring)."""
    text, encoding, notes = decode_log(data, path)
    log = read_log(text, path, collective)
    return replace(log, encoding=encoding, warnings=tuple(notes) + log.warnings), text


def read_path(path: str | Path, collective: str | None = None) -> ParsedLog:
    """Read, decode, parse and check a log file (limits in the module docstring)."""
    return read_data(read_bytes(path), os.fspath(path), collective)[0]


def excerpt(text: str, log: ParsedLog) -> str:
    """The lines of ``text`` the reader took something from (rank lines, the parameter and binary lines, the
    table header, its rows and footer), verbatim and in order, plus the first line naming an AMD tool when the
    log is rccl-tests' (the NCCL_DEBUG output and everything else is left out). Read again it gives the same
    rows, ranks and collective; its size is bounded by MAX_TABLE_LINES and MAX_RANK_LINES, whatever the
    original's. What a stored run keeps of a log too large to copy whole (runners/lab01.py)."""
    lines = text.splitlines()
    keep = set(log.used_lines)
    if log.tool == "rccl-tests" and detect_tool("\n".join(lines[i - 1] for i in keep if i <= len(lines))) != log.tool:
        keep.add(next(i for i, ln in enumerate(lines, 1) if detect_tool(ln) == "rccl-tests"))
    return "\n".join(lines[i - 1] for i in sorted(keep) if i <= len(lines)) + "\n"


# ---------------------------------------------------------------- display edge

def to_json(log: ParsedLog) -> dict:
    """The --json contract (x4lib/schemas/nccl_parse_output.schema.json); every number is finite."""
    def place(p: Placement | None):
        return None if p is None else {"time_us": p.time_us, "algbw_gb_s": p.algbw_gb_s,
                                       "busbw_gb_s": p.busbw_gb_s, "wrong": p.wrong, "max_error": p.max_error}
    rows = [{"line": r.line, "size_bytes": r.size_B, "count": r.count, "type": r.type, "redop": r.redop,
             "root": r.root, "out_of_place": place(r.out_of_place), "in_place": place(r.in_place)}
            for r in log.rows]
    ranks = [{"line": k.line, "rank": k.rank, "group": k.group, "pid": k.pid, "host": k.host,
              "device": k.device, "bus_id": k.bus_id, "name": k.name} for k in log.ranks]
    return {"tool": log.tool, "format": log.format, "encoding": log.encoding, "collective": log.collective,
            "collective_from": log.collective_from, "nranks": log.n_ranks, "nhosts": log.nhosts,
            "devices": list(log.devices), "ranks": ranks, "rows": rows,
            "avg_busbw_gb_s": finite(log.avg_busbw_gb_s), "rows_avg_busbw_gb_s": finite(log.rows_avg_busbw_gb_s),
            "checks_ok": log.checks_ok, "warnings": list(log.warnings), "method_version": METHOD_VERSION,
            "convention": CONVENTION}


CSV_FIELDS = ("line", "size_bytes", "count", "type", "redop", "root", "placement", "time_us", "algbw_gb_s",
              "busbw_gb_s", "wrong", "max_error")


def to_csv(log: ParsedLog) -> str:
    def blank(v):
        return "" if v is None else v
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in log.rows:
        for where, p in r.placements():
            w.writerow([r.line, r.size_B, r.count, r.type, blank(r.redop), blank(r.root), where, p.time_us,
                        p.algbw_gb_s, p.busbw_gb_s, blank(p.wrong), blank(p.max_error)])
    return buf.getvalue().rstrip("\n")


def to_text(log: ParsedLog) -> str:
    big = log.rows[-1]
    rows_avg = f"{log.rows_avg_busbw_gb_s:.6g}" if log.rows_avg_busbw_gb_s is not None else "none"
    lines = [f"{log.path}: {log.tool} ({log.format} format), {log.collective or 'collective unknown'} "
             f"(from {log.collective_from}), {log.n_ranks or '?'} ranks on {log.nhosts or '?'} hosts"
             + (f", {', '.join(log.devices)}" if log.devices else ""),
             f"{len(log.rows)} rows, {log.rows[0].size_B} B to {big.size_B} B; largest: "
             + ", ".join(f"{w} busbw {p.busbw_gb_s:g} GB/s" for w, p in big.placements()),
             f"avg busbw: printed {log.avg_busbw_gb_s if log.avg_busbw_gb_s is not None else 'none'}, "
             f"rows {rows_avg} GB/s (GB/s = 1e9 B/s)",
             "checks: " + ("ok" if log.checks_ok else "FAILED")]
    return "\n".join(lines)


# ------------------------------------------------------------- command line: python -m x4lib nccl-parse

def cli_arguments(p) -> None:
    p.description = ("Read an nccl-tests / rccl-tests log, check algbw = size/time, busbw = algbw × F(n) and the "
                     "printed average; exit 0 ok, 1 a check failed or nothing usable, 2 bad input.")
    p.add_argument("log", metavar="LOG", help="text output of all_reduce_perf, all_gather_perf, ... "
                                              f"(a regular file of at most {MAX_LOG_BYTES // 2**20} MiB)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output (schema: "
                                                         "x4lib/schemas/nccl_parse_output.schema.json)")
    out.add_argument("--csv", action="store_true", help="one line per row and placement")
    p.add_argument("--collective", choices=sorted(set(COLLECTIVES) | {"alltoall"}),
                   help="override when the log does not say which collective it ran")


def cli_main(args) -> int:
    from x4lib import cli
    log = read_path(args.log, "all_to_all" if args.collective == "alltoall" else args.collective)
    if args.json:
        cli.emit(to_json(log), as_json=True)
    else:
        cli.emit(text=to_csv(log) if args.csv else to_text(log))
        for w in log.warnings:
            cli.warn(w, "python -m x4lib nccl-parse")
    return 0 if log.checks_ok else 1
