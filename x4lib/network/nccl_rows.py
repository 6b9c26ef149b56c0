"""One line of an nccl-tests or rccl-tests log: what a rank line, the column header and a result row say, parsed
strictly, and the checks a row or the printed average can fail: algbw = size/time and busbw = algbw × the
collective's factor within the printed rounding, the tool's own wrong-element count, the printed average against
the mean of the rows.

Numbers are read as printed: :func:`half_ulp` is half a unit in the last printed place, the tolerance of every
comparison. Each pattern runs on one stripped line, with no lazy quantifier, in time linear in its length.
x4lib.network.nccl_log reads whole logs with these. Source: nccl-tests' src/common.cu (nccl-tests-src).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_A = re.ASCII
#: largest size or count in a row: nccl-tests prints size_t
SIZE_T_MAX = 2**64 - 1
_ALIASES = {"bytes": "size", "n": "count", "op": "redop", "res": "error", "#wrong": "wrong",
            "error": "error", "cputime": "time"}
_ELLIPSIS = ("...", "…")
_GROUP_COLS = ("time", "algbw", "busbw")
_ITER_COLS = ("i_min", "i_max", "i_p99", "i_cv%")
_NUM_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:nan|inf|infinity)",
                     _A | re.IGNORECASE)
_RANK_RE = re.compile(r"#?\s*Rank\s+([0-9]{1,9})\s+(?:Group\s+([0-9]{1,9})\s+)?(?:Pid\s+([0-9]{1,12})\s+)?"
                      r"on\s+(\S+)\s+device\s+(-?[0-9]{1,9})\s+\[([^\]]*)\](.*)", _A)
_ROOT_RE = re.compile(r"-?[0-9]{1,10}", _A)
_STAMP_RE = re.compile(r"[0-9:.\-T]+", _A)
_UINT_RE = re.compile(r"[0-9]+", _A)


@dataclass(frozen=True)
class Rank:
    """One rank line of the header, as printed ('#  Rank 3 Group 0 Pid 6902 on host device 3 [bus] name')."""
    line: int
    rank: int
    group: int | None  # NCCL_TESTS_SPLIT colour (nccl-tests >= 2.13); None when not printed
    pid: int | None  # None when not printed
    host: str
    device: int  # CUDA/HIP device index on that host
    bus_id: str  # PCI bus id as printed ('0000:0c:00', '0x00' in old logs)
    name: str  # GPU name as printed


@dataclass(frozen=True)
class Placement:
    """One timed result (out-of-place or in-place) as printed: µs and GB/s (1e9 B/s)."""
    time_us: float
    algbw_gb_s: float
    busbw_gb_s: float
    wrong: int | None  # current format: '#wrong' count; None when N/A (-c 0) or in the old format
    max_error: float | None  # old format: 'error' column (max deviation); None when N/A or current format
    text: tuple[str, str, str]  # the printed time, algbw, busbw (for rounding-aware checks)
    over_threshold: bool = False  # old rccl-tests: '*' after the error, "exceeded the maximum threshold"


@dataclass(frozen=True)
class Row:
    line: int
    size_B: int
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

    @property
    def format(self) -> str:
        return "current" if "wrong" in self.group else "old"


# ---------------------------------------------------------------- small pure helpers

def half_ulp(text: str) -> float:
    """Half a unit in the last printed digit of ``text`` ('12.34' → 0.005, '1.2e+04' → 500); inf when the
    unit overflows a float ('0e999')."""
    try:
        exponent = Decimal(text).as_tuple().exponent
    except (InvalidOperation, TypeError):
        return 0.0
    if not isinstance(exponent, int):  # nan, inf
        return 0.0
    try:
        return 0.5 * 10.0 ** exponent
    except OverflowError:
        return math.inf


def number(text: str) -> float | None:
    """A decimal number as printed ('12.5', '1.2e+04', 'nan', 'inf'); None for anything else."""
    return float(text) if _NUM_RE.fullmatch(text) else None


def usable(value: float) -> bool:
    """Finite and >= 0, as every time, bandwidth, count and error in a row must be."""
    return math.isfinite(value) and value >= 0


def _off(value: float, expected: float, tol: float) -> bool:
    """True unless |value − expected| ≤ tol with every term finite: NaN or inf never passes."""
    return not (math.isfinite(expected) and math.isfinite(tol) and abs(value - expected) <= tol)


def finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def short(token: str) -> str:
    return token if len(token) <= 24 else f"{token[:12]}…({len(token)} characters)"


def missing_ranks(numbers: list[int]) -> str:
    """The rank numbers missing below the largest of sorted ``numbers``: [0, 1, 2, 13, 15] → '3-12, 14'
    ('' when none); linear in the ranks listed, whatever their numbers."""
    spans, previous = [], -1
    for n in numbers:
        if n > previous + 1:
            spans.append(f"{previous + 1}-{n - 1}" if n - 1 > previous + 1 else f"{previous + 1}")
        previous = n
    return ", ".join(spans)


def parse_rank(line: str, lineno: int) -> Rank | None:
    """One rank line (stripped), with or without 'Group' and 'Pid'."""
    m = _RANK_RE.match(line)
    if not m:
        return None
    group, pid = (int(g) if g is not None else None for g in (m[2], m[3]))
    return Rank(lineno, int(m[1]), group, pid, m[4], int(m[5]), m[6], m[7].strip())


def is_elision(line: str) -> bool:
    """A line (stripped) that stands for left-out lines: '...', '. . .', '…', '[...]', '<snip>', or a '#' line
    starting or ending with '...', such as nccl-tests' own cut of a rank list longer than its 2048-character
    buffer (src/util.cu, MAX_LINE), which may fall inside a rank line."""
    body = line.lstrip("#").strip().strip("[]()<>").strip().lower()
    if body in ("snip", "snipped") or (body and not body.strip(". …") and body.count(".") != 1):
        return True
    return line.startswith("#") and (body.startswith(_ELLIPSIS) or body.endswith(_ELLIPSIS))


def parse_header(line: str, lineno: int) -> Header | None:
    """The column-name line ('#  size  count  type  redop  root  time  algbw  busbw  #wrong ...'), with or without
    its leading '#' (pages that render a terminal, such as dstack's documentation, drop the '#' lines' marks)."""
    low = line.lower()
    if "algbw" not in low or "busbw" not in low:  # the cheap test first: most lines of a long log are not headers
        return None
    names = [_ALIASES.get(t, t) for t in low.lstrip("#").split()]
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


def _placement(tokens: list[str], width: int, current: bool) -> Placement | str | None:
    """One placement group; a message when a value is a number but not a usable one; None when unreadable."""
    values = [number(t) for t in tokens[:3]]
    if len(tokens) < width or None in values:  # width >= 4: time algbw busbw wrong|error [...]
        return None
    check = tokens[3]
    for name, text, value in zip(_GROUP_COLS, tokens, values):
        if not usable(value):
            return f"{name} {short(text)} is not a finite number >= 0"
    wrong, max_error, starred = None, None, not current and check.endswith("*")
    if check.upper() != "N/A":
        value = number(check[:-1] if starred else check)
        if value is None:
            return None
        column = "#wrong" if current else "error"
        if not usable(value) or (current and not value.is_integer()):
            return f"{column} {short(check)} is not a finite {'whole ' if current else ''}number >= 0"
        wrong, max_error = (int(value), None) if current else (None, value)
    return Placement(values[0], values[1], values[2], wrong, max_error, (tokens[0], tokens[1], tokens[2]), starred)


def parse_row(line: str, lineno: int, header: Header) -> Row | str | None:
    """One result line (stripped): a Row; a message naming the line when its fields are there but a value
    is unusable (non-finite, negative, over size_t); None when it lacks the fields the header announces."""
    tokens = line.split()
    if header.timestamp:  # a trailing "YYYY-mm-dd HH:MM:SS" stamp
        while tokens and _STAMP_RE.fullmatch(tokens[-1]) and ("-" in tokens[-1] or ":" in tokens[-1]):
            tokens.pop()
    width = len(header.group)
    extra_names = header.left[3:]
    n_extra = len(tokens) - 3 - width * header.n_groups
    if not (len(extra_names) - 1 <= n_extra <= len(extra_names)) or n_extra < 0:
        return None
    extras = dict(zip(extra_names, tokens[3:3 + n_extra]))
    if n_extra < len(extra_names) and "redop" in extra_names:  # old AllToAll printed a blank redop
        extras = {"root": extras.get("redop")} if "root" in extra_names and n_extra else {}
    root = extras.get("root")
    if not (_UINT_RE.fullmatch(tokens[0]) and _UINT_RE.fullmatch(tokens[1])) or \
            (root is not None and not _ROOT_RE.fullmatch(root)):
        return None
    tail = tokens[3 + n_extra:]
    groups = [_placement(tail[i * width:(i + 1) * width], width, header.format == "current")
              for i in range(header.n_groups)]
    if None in groups:
        return None
    names = ("out_of_place", "in_place") if len(groups) == 2 else ("in_place",) * len(groups)
    problems = [f"{label} {short(tok)} is over 2^64-1 (size_t)" for label, tok in
                (("size", tokens[0]), ("count", tokens[1])) if len(tok) > 20 or int(tok) > SIZE_T_MAX]
    problems += [f"{where} {g}" for where, g in zip(names, groups) if isinstance(g, str)]
    if problems:
        return f"line {lineno}: rejected result line: " + "; ".join(problems)
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
        expected = row.size_B / t_us / 1e3  # B/µs → GB/s (1e9 B/s)
        tol = half_ulp(p.text[1]) + expected * half_ulp(p.text[0]) / p.time_us + 1e-9
        if _off(p.algbw_gb_s, expected, tol):
            problems.append(f"line {row.line}: {where} algbw {p.text[1]} GB/s != size/time = "
                            f"{row.size_B} B / {p.text[0]} us = {expected:.4g} GB/s")
    if factor is not None:
        tol = half_ulp(p.text[2]) + factor * half_ulp(p.text[1]) + 1e-9
        if _off(p.busbw_gb_s, factor * p.algbw_gb_s, tol):
            problems.append(f"line {row.line}: {where} busbw {p.text[2]} GB/s != algbw × {factor:.4g} = "
                            f"{factor * p.algbw_gb_s:.4g} GB/s")
    return problems


def wrong_elements(row: Row) -> list[str]:
    """The tool's own data check: a non-zero '#wrong' count (current format), or an old-format error that
    rccl-tests marked '*' (over its threshold), is a failed run."""
    return [f"line {row.line}: {where} reports {p.wrong} wrong elements (nccl-tests data check)"
            for where, p in row.placements() if p.wrong] + \
        [f"line {row.line}: {where} error {p.max_error:g} is marked '*': over the tool's threshold (data check)"
         for where, p in row.placements() if p.over_threshold]


def check_average(rows: tuple[Row, ...], printed: str | None, lineno: int) -> tuple[float, list[str]]:
    """Mean busbw over every placement of every row vs the printed '# Avg bus bandwidth' (%g)."""
    placements = [p for r in rows for _, p in r.placements()]
    n = len(placements)
    mean = sum(p.busbw_gb_s / n for p in placements)  # each term finite and <= the largest: no overflow
    if printed is None:
        return mean, []
    value = number(printed)
    if value is None or not usable(value):
        return mean, [f"line {lineno}: unreadable average {short(printed)!r}"]
    tol = sum(half_ulp(p.text[2]) for p in placements) / n
    tol += half_ulp(f"{value:.6g}" if "e" not in printed else printed) + 1e-9
    if _off(value, mean, tol):
        return mean, [f"line {lineno}: printed Avg bus bandwidth {printed} GB/s != mean busbw of the "
                      f"{n} results read = {mean:.6g} GB/s (tolerance {tol:.2g})"]
    return mean, []
