"""Read the text output of an nccl-tests or rccl-tests binary, and check it.

    python -m x4lib nccl-parse LOG [--json | --csv] [--collective NAME]

Units and convention are the tool's own (NVIDIA/nccl-tests; references.bib: nccl-tests,
nccl-tests-performance), kept as printed and named in every field:

    size_bytes [B]      the "size" column: for AllGather, ReduceScatter, AllToAll the whole array
                        (count · type size · n ranks); for the others count · type size
    time_us [µs]        time of one operation, averaged over the iterations
    algbw_gb_s [GB/s]   algbw = size / time          GB/s = 1e9 B/s (not GiB/s)
    busbw_gb_s [GB/s]   busbw = algbw × F(n)         F(n) from x4lib.collectives.busbw_factor

Every row is checked against both formulas within the printed rounding (half a unit in the last printed
digit of each value). The printed "# Avg bus bandwidth" is checked against the mean busbw of every
out-of-place and in-place result of every row: nccl-tests src/common.cu adds busBw to ``bw[0]`` and 1 to
``bw_count[0]`` after each BenchTime call (out-of-place, then in-place) and divides at the end.

Formats read: the current one (``redop`` and ``root`` columns, ``#wrong``: nccl-tests 2.13, 2022 on,
and rccl-tests), the older one (``error`` column with the max deviation, per-collective columns: no
``redop`` for AllGather/SendRecv, ``root`` only for Broadcast, ``redop`` + ``root`` for Reduce, a blank
``redop`` for old AllToAll), ``N/A`` when validation is off (``-c 0``), per-iteration columns
(``i_min i_max i_p99 i_cv%``), rank lines with or without ``Group``, and tool messages (NCCL INFO,
"rccl-tests: Version", "RCCL version : ...") between the lines.

Exit codes (decisions.md): 0 read and checked; 1 read but a check failed (a row whose algbw or busbw
disagrees with the formulas, a printed average that disagrees with the rows, nccl-tests' own data check
reporting wrong elements) or nothing usable in a truncated log; 2 bad input (missing or unreadable file,
not an nccl-tests/rccl-tests log, a complete log whose table is empty, a bad option). A truncated log
(table cut mid-way, a half line, no "Avg bus bandwidth" footer) is read as far as it is complete, with a
warning naming the line, and exits 0.
Used in: book/lab-01-collectives.md.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

from x4lib.collectives import COLLECTIVES, busbw_factor

#: version of this parser's method; bump when what it reads or checks changes
METHOD_VERSION = "nccl_log/1"
CONVENTION = "nccl-tests: algbw = size/time, busbw = algbw × factor; GB/s = 1e9 B/s"

#: binary stem → collective name used by x4lib.collectives (None: no factor known there)
BINARIES = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
            "alltoall": "all_to_all", "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "sendrecv",
            "alltoallv": "alltoallv", "gather": "gather", "scatter": "scatter", "hypercube": "hypercube"}
#: bytes per element of nccl-tests / rccl-tests type names
TYPE_BYTES = {"int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8,
              "uint64": 8, "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8,
              "bfloat16": 2, "bf16": 2, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}

_BINARY_RE = re.compile(r"(?<![A-Za-z_])(" + "|".join(sorted(BINARIES, key=len, reverse=True)) + r")_perf")
_RANK_RE = re.compile(r"^\s*#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+(\S+)\s+"
                      r"device\s+\d+\s+\[[^\]]*\]\s*(.*?)\s*$")
_AVG_RE = re.compile(r"^\s*#?\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB_RE = re.compile(r"^\s*#?\s*Out of bounds values\s*:\s*(\d+)\s*(\S*)")
_ROW_RE = re.compile(r"^\s*\d+\s+\d+\s+\S")
_ALIASES = {"bytes": "size", "n": "count", "op": "redop", "res": "error", "#wrong": "wrong",
            "error": "error", "cputime": "time"}
_GROUP_COLS = ("time", "algbw", "busbw")
_ITER_COLS = ("i_min", "i_max", "i_p99", "i_cv%")


class NcclLogError(ValueError):
    """Input that is not a usable nccl-tests log; ``code`` is the exit status (2 bad input, 1 nothing usable)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Placement:
    """One timed result (out-of-place or in-place) as printed: µs and GB/s (1e9 B/s)."""
    time_us: float
    algbw_gb_s: float
    busbw_gb_s: float
    wrong: str | None  # the "#wrong" (count) or old "error" (max deviation) field as printed; "N/A" if -c 0
    text: tuple[str, str, str]  # the printed time, algbw, busbw (for rounding-aware checks)


@dataclass(frozen=True)
class Row:
    line: int
    size_bytes: int
    count: int
    type: str
    redop: str | None
    root: int | None
    out_of_place: Placement | None
    in_place: Placement | None

    def placements(self):
        return [(k, p) for k, p in (("out_of_place", self.out_of_place), ("in_place", self.in_place)) if p]


@dataclass(frozen=True)
class Header:
    line: int
    left: tuple[str, ...]  # column names before the first time column: size count type [redop] [root]
    group: tuple[str, ...]  # one placement group: time algbw busbw wrong|error [i_min i_max i_p99 i_cv%]
    n_groups: int
    time_unit_us: float  # 1 for "(us)", 1000 for "(ms)"
    cputime: bool
    timestamp: bool


@dataclass(frozen=True)
class ParsedLog:
    path: str
    tool: str
    format: str  # "current" (#wrong) or "old" (error)
    collective: str | None
    collective_from: str
    nranks: int | None
    nhosts: int | None
    devices: tuple[str, ...]
    rows: tuple[Row, ...]
    avg_busbw_gb_s: float | None  # as printed in the footer
    rows_avg_busbw_gb_s: float | None  # mean of every printed busbw (what nccl-tests averages)
    warnings: tuple[str, ...]
    checks_ok: bool


# ---------------------------------------------------------------- small pure helpers

def half_ulp(text: str) -> float:
    """Half a unit in the last printed digit of ``text`` ('12.34' → 0.005, '1.2e+04' → 500)."""
    try:
        return 0.5 * 10.0 ** Decimal(text).as_tuple().exponent
    except (InvalidOperation, TypeError):
        return 0.0


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_header(line: str, lineno: int) -> Header | None:
    """The column-name line ('#  size  count  type  redop  root  time  algbw  busbw  #wrong ...')."""
    if not line.lstrip().startswith("#"):
        return None
    names = [_ALIASES.get(t.lower(), t.lower()) for t in line.strip().lstrip("#").split()]
    if not {"size", "count", "type", "algbw", "busbw"} <= set(names) or "time" not in names:
        return None
    first = names.index("time")
    left, rest = tuple(names[:first]), names[first:]
    timestamp = bool(rest) and rest[-1] == "timestamp"
    rest = rest[:-1] if timestamp else rest
    width = 4 + (4 if len(rest) >= 2 and rest[4:8] == list(_ITER_COLS) else 0)
    group = tuple(rest[:width])
    if group[:3] != _GROUP_COLS or len(rest) % width:
        return None
    cputime = "cputime" in line.lower()
    return Header(lineno, left, group, len(rest) // width, 1.0, cputime, timestamp)


def _placement(tokens: list[str], width: int) -> Placement | None:
    values = [_number(t) for t in tokens[:3]]
    if len(tokens) < width or None in values:
        return None
    wrong = tokens[3] if width >= 4 else None
    return Placement(values[0], values[1], values[2], wrong, (tokens[0], tokens[1], tokens[2]))


def parse_row(line: str, lineno: int, header: Header) -> Row | None:
    """One result line; None when it does not have the fields the header announces."""
    tokens = line.split()
    if header.timestamp:  # a trailing "YYYY-mm-dd HH:MM:SS" stamp
        while tokens and re.fullmatch(r"[\d:.\-T]+", tokens[-1]) and ("-" in tokens[-1] or ":" in tokens[-1]):
            tokens.pop()
    width = len(header.group)
    extra_names = header.left[3:]
    n_extra = len(tokens) - 3 - width * header.n_groups
    if not (len(extra_names) - 1 <= n_extra <= len(extra_names)) or n_extra < 0:
        return None
    extras = dict(zip(extra_names, tokens[3:3 + n_extra]))
    if n_extra < len(extra_names) and "redop" in extra_names:  # old AllToAll printed a blank redop
        extras = {"root": extras.get("redop")} if "root" in extra_names and n_extra else {}
    tail = tokens[3 + n_extra:]
    groups = [_placement(tail[i * width:(i + 1) * width], width) for i in range(header.n_groups)]
    if None in groups or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    root = extras.get("root")
    if root is not None and not re.fullmatch(r"-?\d+", root):
        return None
    out, inp = (groups[0], groups[1]) if len(groups) == 2 else (None, groups[0])
    return Row(lineno, int(tokens[0]), int(tokens[1]), tokens[2], extras.get("redop"),
               int(root) if root is not None else None, out, inp)


# ---------------------------------------------------------------- checks

def check_placement(row: Row, where: str, p: Placement, factor: float | None, time_is_cpu: bool,
                    time_unit_us: float) -> list[str]:
    """algbw = size/time and busbw = algbw·F within the printed rounding; messages name the line."""
    problems = []
    t_us = p.time_us * time_unit_us
    if not time_is_cpu and t_us > 0:
        expected = row.size_bytes / t_us / 1e3  # B/µs → GB/s (1e9 B/s)
        tol = half_ulp(p.text[1]) + expected * half_ulp(p.text[0]) / p.time_us + 1e-9
        if abs(p.algbw_gb_s - expected) > tol:
            problems.append(f"line {row.line}: {where} algbw {p.text[1]} GB/s != size/time = "
                            f"{row.size_bytes} B / {p.text[0]} us = {expected:.4g} GB/s")
    if factor is not None:
        tol = half_ulp(p.text[2]) + factor * half_ulp(p.text[1]) + 1e-9
        if abs(p.busbw_gb_s - factor * p.algbw_gb_s) > tol:
            problems.append(f"line {row.line}: {where} busbw {p.text[2]} GB/s != algbw × {factor:.4g} = "
                            f"{factor * p.algbw_gb_s:.4g} GB/s")
    return problems


def wrong_elements(row: Row, fmt: str) -> list[str]:
    """nccl-tests' own data check: a non-zero '#wrong' count (current format) is a failed run."""
    if fmt != "current":
        return []
    out = []
    for where, p in row.placements():
        w = (p.wrong or "").rstrip("*")
        if p.wrong and (p.wrong.endswith("*") or (_number(w) or 0) > 0):
            out.append(f"line {row.line}: {where} reports {p.wrong} wrong elements (nccl-tests data check)")
    return out


def check_average(rows: tuple[Row, ...], printed: str, lineno: int) -> tuple[float, list[str]]:
    """Mean busbw over every placement of every row vs the printed '# Avg bus bandwidth' (%g)."""
    placements = [p for r in rows for _, p in r.placements()]
    mean = sum(p.busbw_gb_s for p in placements) / len(placements)
    tol = sum(half_ulp(p.text[2]) for p in placements) / len(placements)
    value = _number(printed)
    if value is None:
        return mean, [f"line {lineno}: unreadable average {printed!r}"]
    tol += half_ulp(f"{value:.6g}" if "e" not in printed else printed) + 1e-9
    if abs(mean - value) > tol:
        return mean, [f"line {lineno}: printed Avg bus bandwidth {printed} GB/s != mean busbw of the "
                      f"{len(placements)} results read = {mean:.6g} GB/s (tolerance {tol:.2g})"]
    return mean, []


# ---------------------------------------------------------------- inference

def detect_tool(text: str) -> str:
    amd = ("rccl-tests", "RCCL version", "AMD Instinct", "HIP version", "librccl", "gfx9", "ROCm version")
    return "rccl-tests" if any(m in text for m in amd) else "nccl-tests"


def _type_bytes(rows) -> int | None:
    return TYPE_BYTES.get(rows[0].type.lower()) if rows else None


def collective_from_columns(header: Header, rows, nranks: int | None) -> set[str]:
    """Candidates from the column set, redop/root values and size/count ratio (see module docstring)."""
    left, big = set(header.left), [r for r in rows if r.count > 0]
    ratio = None
    if big and _type_bytes(big) and nranks:
        ratio = big[-1].size_bytes / (big[-1].count * _type_bytes(big))
    whole = None if ratio is None else (abs(ratio - nranks) < 0.5 and nranks > 1)
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


def infer_nranks(collective: str, rows) -> int | None:
    """n from busbw/algbw of the largest row (used only when the header lists no ranks)."""
    best = max((p for r in rows for _, p in r.placements()), key=lambda p: p.algbw_gb_s, default=None)
    if best is None or best.algbw_gb_s <= 0 or collective not in COLLECTIVES:
        return None
    f = best.busbw_gb_s / best.algbw_gb_s
    if collective == "all_reduce" and f < 2:
        return round(2 / (2 - f))
    if collective in ("all_gather", "reduce_scatter", "all_to_all") and f < 1:
        return round(1 / (1 - f))
    return None


# ---------------------------------------------------------------- the scan

@dataclass
class _Scan:
    header: Header | None = None
    rows: list = field(default_factory=list)
    ranks: dict = field(default_factory=dict)
    rank_dupes: bool = False
    avg: tuple[str, int] | None = None
    oob: tuple[int, str, int] | None = None
    bad: list = field(default_factory=list)  # (lineno, text) row-like lines that did not parse
    second_table: int | None = None
    stop: int | None = None
    binaries: dict = field(default_factory=dict)  # collective → first line naming it
    units_line: str | None = None


def _scan_line(s: _Scan, lineno: int, line: str) -> None:
    m = _RANK_RE.match(line)
    if m and s.header is None:
        rank, host, dev = int(m.group(1)), m.group(2), m.group(3)
        s.rank_dupes |= rank in s.ranks
        s.ranks.setdefault(rank, (host, dev))
        return
    header = parse_header(line, lineno)
    if header:
        if s.header is None:
            s.header = header
        elif s.rows or s.avg:
            s.second_table, s.stop = lineno, lineno
        return
    if s.header and s.units_line is None and "(B)" in line and line.lstrip().startswith("#"):
        s.units_line = line
        return
    for m in _BINARY_RE.finditer(line):
        s.binaries.setdefault(BINARIES[m.group(1)], lineno)
    if (m := _AVG_RE.match(line)) and s.header:
        s.avg = (m.group(1), lineno)
    elif (m := _OOB_RE.match(line)) and s.header:
        s.oob = (int(m.group(1)), m.group(2), lineno)
    elif s.header and s.avg is None and _ROW_RE.match(line):
        row = parse_row(line, lineno, s.header)
        if row:
            s.rows.append(row)
        else:
            s.bad.append((lineno, line))


def scan(text: str) -> tuple[_Scan, int]:
    s = _Scan()
    lines = text.splitlines()
    for lineno, line in enumerate(lines, 1):
        _scan_line(s, lineno, line)
        if s.stop:
            break
    if s.header and s.units_line and "(ms)" in s.units_line:
        s.header = Header(**{**s.header.__dict__, "time_unit_us": 1000.0})
    return s, len(lines)


def _choose_collective(s: _Scan, user: str | None, nranks, warnings: list) -> tuple[str | None, str, set]:
    if user:
        return user, "user", {user}
    if len(s.binaries) == 1:
        name = next(iter(s.binaries))
        return name, f"binary name (line {s.binaries[name]})", {name}
    cands = collective_from_columns(s.header, s.rows, nranks)
    if len(s.binaries) > 1:
        warnings.append(f"several binaries named ({', '.join(sorted(s.binaries))}); using the columns")
    if len(cands) == 1:
        return next(iter(cands)), "columns", cands
    warnings.append(f"line {s.header.line}: cannot tell the collective from the columns "
                    f"({' or '.join(sorted(cands))}); pass --collective")
    return None, "unknown", cands


def _factor(collective: str | None, cands: set, nranks: int | None) -> float | None:
    names = {collective} if collective else cands
    if not nranks or not names or not names <= set(COLLECTIVES):
        return None
    factors = {busbw_factor(c, nranks) for c in names}
    return factors.pop() if len(factors) == 1 else None


def _truncation(s: _Scan, n_lines: int, path: str) -> tuple[list[str], list]:
    """Warnings for a cut log; returns (warnings, row-like lines that are real failures)."""
    warnings, failures = [], []
    last_row = s.rows[-1].line if s.rows else s.header.line
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
    s, n_lines = scan(text)
    if s.header is None:
        first = next((i for i, ln in enumerate(text.splitlines(), 1) if ln.strip()), 1)
        raise NcclLogError(f"{path}:{first}: not an nccl-tests/rccl-tests log: no results table header "
                           f"('#  size  count  type ... time  algbw  busbw') in {n_lines} lines")
    warnings, failures = _truncation(s, n_lines, path)
    if not s.rows:
        if s.avg is not None:
            raise NcclLogError(f"{path}:{s.avg[1]}: empty results table: header at line {s.header.line}, "
                               f"footer at line {s.avg[1]}, no result rows between them")
        raise NcclLogError(f"{path}:{n_lines}: truncated before the first complete result row "
                           f"(table header at line {s.header.line}); nothing usable", code=1)
    checks = [f"line {ln}: unreadable result line: {t.strip()[:60]!r}" for ln, t in failures]
    if s.second_table:
        warnings.append(f"line {s.second_table}: a second results table starts here; only the first was read")
    nranks = max(s.ranks) + 1 if s.ranks else None
    if s.rank_dupes:
        warnings.append("the rank list repeats rank numbers: processes may have run as separate jobs "
                        "(nccl-tests built without MPI=1?)")
    coll, source, cands = _choose_collective(s, collective, nranks, warnings)
    if nranks is None:
        nranks = infer_nranks(coll, s.rows) if coll else None
        warnings.append("no rank list in the header; number of ranks "
                        + (f"inferred from busbw/algbw: {nranks}" if nranks else "unknown: busbw not checked"))
    return _finish(s, path, text, coll, source, cands, nranks, warnings, checks)


def _finish(s, path, text, coll, source, cands, nranks, warnings, checks) -> ParsedLog:
    fmt = "current" if "wrong" in s.header.group else "old"
    factor = _factor(coll, cands, nranks)
    if factor is None and nranks and (coll or cands):
        warnings.append(f"no busbw factor for {coll or ' or '.join(sorted(cands))} in x4lib.collectives; "
                        "busbw not checked")
    if s.header.cputime:
        warnings.append(f"line {s.header.line}: the time column is CPU time; algbw = size/time not checked")
    for r in s.rows:
        for where, p in r.placements():
            checks += check_placement(r, where, p, factor, s.header.cputime, s.header.time_unit_us)
        checks += wrong_elements(r, fmt)
    if s.oob and s.oob[0] > 0:
        checks.append(f"line {s.oob[2]}: nccl-tests reports {s.oob[0]} out-of-bounds values ({s.oob[1]})")
    rows_avg, printed = None, None
    if s.avg:
        rows_avg, problems = check_average(tuple(s.rows), s.avg[0], s.avg[1])
        checks += problems
        printed = _number(s.avg[0])
    else:
        rows_avg = check_average(tuple(s.rows), "0", 0)[0]
    hosts = {h for h, _ in s.ranks.values()}
    devices = tuple(sorted({d for _, d in s.ranks.values() if d}))
    return ParsedLog(path, detect_tool(text), fmt, coll, source, nranks, len(hosts) or None, devices,
                     tuple(s.rows), printed, rows_avg, tuple(warnings + checks), not checks)


def read_path(path: str | Path, collective: str | None = None) -> ParsedLog:
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise NcclLogError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise NcclLogError(f"{path}: is a directory, not a log file") from None
    except OSError as exc:
        raise NcclLogError(f"{path}: cannot read: {exc.strerror}") from None
    if b"\0" in data[:4096]:
        raise NcclLogError(f"{path}:1: binary file, not an nccl-tests/rccl-tests log")
    return read_log(data.decode("utf-8", errors="replace"), str(path), collective)


# ---------------------------------------------------------------- display edge

def to_json(log: ParsedLog) -> dict:
    def place(p: Placement | None):
        return None if p is None else {"time_us": p.time_us, "algbw_gb_s": p.algbw_gb_s,
                                       "busbw_gb_s": p.busbw_gb_s, "wrong": p.wrong}
    rows = [{"line": r.line, "size_bytes": r.size_bytes, "count": r.count, "type": r.type, "redop": r.redop,
             "root": r.root, "out_of_place": place(r.out_of_place), "in_place": place(r.in_place)}
            for r in log.rows]
    return {"tool": log.tool, "format": log.format, "collective": log.collective,
            "collective_from": log.collective_from, "nranks": log.nranks, "nhosts": log.nhosts,
            "devices": list(log.devices), "rows": rows, "avg_busbw_gb_s": log.avg_busbw_gb_s,
            "rows_avg_busbw_gb_s": log.rows_avg_busbw_gb_s, "checks_ok": log.checks_ok,
            "warnings": list(log.warnings), "method_version": METHOD_VERSION, "convention": CONVENTION}


CSV_FIELDS = ("line", "size_bytes", "count", "type", "redop", "root", "placement", "time_us", "algbw_gb_s",
              "busbw_gb_s", "wrong")


def to_csv(log: ParsedLog) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in log.rows:
        for where, p in r.placements():
            w.writerow([r.line, r.size_bytes, r.count, r.type, r.redop or "", "" if r.root is None else r.root,
                        where, p.time_us, p.algbw_gb_s, p.busbw_gb_s, p.wrong or ""])
    return buf.getvalue().rstrip("\n")


def to_text(log: ParsedLog) -> str:
    big = log.rows[-1]
    lines = [f"{log.path}: {log.tool} ({log.format} format), {log.collective or 'collective unknown'} "
             f"(from {log.collective_from}), {log.nranks or '?'} ranks on {log.nhosts or '?'} hosts"
             + (f", {', '.join(log.devices)}" if log.devices else ""),
             f"{len(log.rows)} rows, {log.rows[0].size_bytes} B to {big.size_bytes} B; largest: "
             + ", ".join(f"{w} busbw {p.busbw_gb_s:g} GB/s" for w, p in big.placements()),
             f"avg busbw: printed {log.avg_busbw_gb_s if log.avg_busbw_gb_s is not None else 'none'}, "
             f"rows {log.rows_avg_busbw_gb_s:.6g} GB/s (GB/s = 1e9 B/s)",
             "checks: " + ("ok" if log.checks_ok else "FAILED")]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m x4lib nccl-parse",
                                description="Read an nccl-tests / rccl-tests log, check algbw = size/time, "
                                            "busbw = algbw × F(n) and the printed average; exit 0 ok, 1 a "
                                            "check failed or nothing usable, 2 bad input.")
    p.add_argument("log", metavar="LOG", help="text output of all_reduce_perf, all_gather_perf, ...")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output (schema: "
                                                         "x4lib/schemas/nccl_parse_output.schema.json)")
    out.add_argument("--csv", action="store_true", help="one line per row and placement")
    p.add_argument("--collective", choices=sorted(set(COLLECTIVES) | {"alltoall"}),
                   help="override when the log does not say which collective it ran")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    coll = "all_to_all" if args.collective == "alltoall" else args.collective
    try:
        log = read_path(args.log, coll)
    except NcclLogError as exc:
        if exc.code == 2:
            parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return exc.code
    if args.json:
        print(json.dumps(to_json(log), indent=2, ensure_ascii=False))
    else:
        print(to_csv(log) if args.csv else to_text(log))
        for w in log.warnings:
            print(f"warning: {w}", file=sys.stderr)
    return 0 if log.checks_ok else 1
