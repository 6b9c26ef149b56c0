"""Message sizes as nccl-tests writes them, and as the book labels them.

    1M, 1G      powers of two, upper or lower case: nccl-tests' ``-b``/``-e`` suffixes (1M = 2^20 B)
    1MB, 1GB    powers of ten (GB = 1e9 B, as everywhere in the book)
    1MiB, 1GiB  powers of two, explicitly

Standard library only (the collective benchmark runs on a bare pod). Used in: book/lab-01-collectives.md.
"""
from __future__ import annotations

import math
import re
from types import MappingProxyType
from typing import Iterable, Mapping, TypeVar

#: size suffix -> bytes
SUFFIXES: Mapping[str, int] = MappingProxyType({
    "": 1, "B": 1,
    "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40,
    "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
})
#: the largest size any command accepts: 1 PiB (a guard against typos and overflow, not a hardware limit)
MAX_SIZE_B = 2**50
_SIZE_RE = re.compile(r"(\d{1,30}(?:\.\d{0,30})?|\.\d{1,30})\s?([A-Za-z]{0,3})")


def parse_size(text: str | int) -> int:
    """Bytes from ``1048576``, ``"1M"`` (2^20, as nccl-tests), ``"1MB"`` (10^6) or ``"1MiB"`` (2^20).

    Lower-case ``kb``/``mb`` (kilobits? millibytes?) are refused. The result must be a whole number of bytes in
    (0, MAX_SIZE_B]; otherwise ValueError says why ("12XB", "-1MB", "0", "1.5", "1e6", a 400-digit number).
    """
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        value = text
    else:
        s = str(text).strip()
        if s.startswith("-"):
            raise ValueError(f"size {text!r} is negative; a size is > 0 bytes")
        m = _SIZE_RE.fullmatch(s)
        if not m:
            raise ValueError(f"size {text!r} is not a number with an optional suffix (e.g. 1048576, 1M, 1MB, 1MiB)")
        number, suffix = m.groups()
        if suffix in ("k", "m", "g", "t"):  # nccl-tests accepts either case for its binary suffixes
            suffix = suffix.upper()
        if len(suffix) == 3 and suffix.lower().endswith("ib"):  # kib, MIB -> KiB, MiB
            suffix = suffix[0].upper() + "iB"
        if suffix not in SUFFIXES:
            raise ValueError(f"size {text!r}: unknown suffix {m.group(2)!r}; use K/M/G (powers of two, as "
                             f"nccl-tests), KB/MB/GB (powers of ten) or KiB/MiB/GiB")
        whole, _, frac = number.partition(".")
        scale = SUFFIXES[suffix]
        num = int(whole or 0) * scale
        if frac.strip("0"):
            q = int(frac) * scale
            if q % 10 ** len(frac):
                raise ValueError(f"size {text!r} is not a whole number of bytes")
            num += q // 10 ** len(frac)
        value = num
    if value <= 0:
        raise ValueError(f"size {text!r} is zero or negative; a size is > 0 bytes")
    if value > MAX_SIZE_B:
        raise ValueError(f"size {text!r} is larger than {format_size(MAX_SIZE_B)}, the largest size accepted")
    return int(value)


def format_size(size_B: int) -> str:
    """A short label that names the convention: ``1MB`` for 10^6, ``1MiB`` for 2^20, else the byte count."""
    for suffix, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3),
                           ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_B >= factor and size_B % factor == 0:
            return f"{size_B // factor}{suffix}"
    return f"{size_B}B"


def label(size_B: int) -> str:
    """:func:`format_size` with a thin space before the unit, for prose and table cells (``1 MiB``)."""
    text = format_size(size_B)
    digits = len(text) - len(text.lstrip("0123456789"))
    return f"{text[:digits]} {text[digits:]}" if text[digits:] != "B" else f"{text[:digits]} B"


T = TypeVar("T")


def nearest(items: Iterable[T], size_B: float, key=lambda x: x) -> T:
    """The item whose size (``key(item)`` bytes) is nearest to ``size_B`` on a log scale: published sweeps go in
    powers of two, so a 100 MiB question is answered by the 128 MiB row. Raises ValueError on no items."""
    candidates = [x for x in items if key(x) > 0]
    if not candidates:
        raise ValueError("no rows with a size > 0 to choose from")
    return min(candidates, key=lambda x: abs(math.log(key(x) / size_B)))


# ------------------------------------------------------------------------ nccl-tests' size loop, exactly

#: nccl-tests' defaults for -b, -e, -i, -f (src/common.cu, tag v2.19.6, lines 91-95): 32M, 32M, 1M, 1 (factor off)
NCCL_TESTS_DEFAULTS: Mapping[str, str] = MappingProxyType({"b": "32M", "e": "32M", "i": "1M", "f": "1"})
#: the most sizes :func:`nccl_tests_sizes` lists before it refuses (an additive sweep can be millions long)
MAX_SWEEP_SIZES = 100_000
_STRTOD_RE = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(\S?)")
_UNITS_NCCL_TESTS = {"G": 2**30, "g": 2**30, "M": 2**20, "m": 2**20, "K": 2**10, "k": 2**10}


def nccl_tests_parsesize(text: str) -> int:
    """Bytes as nccl-tests reads ``-b``, ``-e`` and ``-i``: ``parsesize()`` in src/common.cu (v2.19.6, lines
    226-263; references.bib: nccl-tests-v2-19-6). ``sscanf("%lf %1s")`` takes a number and the first non-blank
    character after it: ``K``/``M``/``G`` (either case) multiply by 2^10, 2^20, 2^30, no character means bytes, any
    other character is an error; the product is truncated to a whole number of bytes (``(size_t)parsed``).

    Two consequences the book points out: ``1MB`` is read as ``1M`` (the ``B`` is never looked at), so it is
    2^20 bytes, not 10^6; and ``0.5M`` is 524288. Raises ValueError where nccl-tests prints "invalid size"
    (a negative size, an unknown suffix, no number); ``nan``/``inf`` are refused here (undefined in C)."""
    m = _STRTOD_RE.match(str(text))
    if not m:
        raise ValueError(f"nccl-tests cannot read {text!r} as a size (no number at its start)")
    number, suffix = m.groups()
    if suffix and suffix not in _UNITS_NCCL_TESTS:
        raise ValueError(f"nccl-tests rejects the size {text!r}: suffix {suffix!r} is not K, M or G")
    value = float(number) * _UNITS_NCCL_TESTS.get(suffix, 1)
    if value < 0:
        raise ValueError(f"nccl-tests rejects the negative size {text!r}")
    return int(value)


def _c_strtol(text: str) -> int:
    """C's ``strtol(text, NULL, 0)``, which nccl-tests uses for ``-f``: leading blanks, a sign, ``0x`` for hex, a
    leading ``0`` for octal, digits up to the first character that is not one; 0 when there is none."""
    m = re.match(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", str(text))
    if not m:
        return 0
    sign, digits = m.groups()
    value = int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8) if digits.startswith("0") \
        else int(digits)
    return -value if sign == "-" else value


def nccl_tests_sizes(b: str | None = None, e: str | None = None, f: str | None = None,
                     i: str | None = None) -> list[int]:
    """The sizes [B] an nccl-tests binary runs for ``-b B -e E -f F -i I`` (each as typed; None = the default).

    The benchmark loop of ``TimeTest`` (src/common.cu, v2.19.6, line 936; nccl-tests-v2-19-6) is::

        for (size = minbytes; size <= maxbytes; size = (stepfactor > 1) ? size * stepfactor : size + stepbytes)

    so a multiplicative sweep stops at the last size that does not exceed ``-e`` (``-b 1M -e 1G -f 100`` runs
    1 MiB and 100 MiB, never 1 GiB), and without ``-f`` (default 1, "disabled") the step is additive, ``-i``
    (default 1M) bytes at a time: ``-b 1M -e 1G`` alone runs 1024 sizes. ``-f`` is read with ``strtol`` (an
    integer; ``2.5`` is 2). Sizes use :func:`nccl_tests_parsesize`. Raises ValueError where nccl-tests refuses the
    arguments (``-b`` above ``-e``, line 1407) or would never finish (a zero step, or a factor sweep from 0), or
    when the sweep has more than MAX_SWEEP_SIZES sizes. Not modelled: nccl-tests lowers ``-e`` when the GPU's
    memory is too small (line 1545, with a "Reducing maxBytes" line in the log). Used in: book/lab-01-collectives.md
    """
    d = NCCL_TESTS_DEFAULTS
    lo, hi = nccl_tests_parsesize(d["b"] if b is None else b), nccl_tests_parsesize(d["e"] if e is None else e)
    step, factor = nccl_tests_parsesize(d["i"] if i is None else i), _c_strtol(d["f"] if f is None else f)
    if factor < 0:
        raise ValueError(f"-f {f}: nccl-tests stores the factor in a size_t; a negative factor is not a sweep")
    if lo > hi:
        raise ValueError(f"nccl-tests refuses -b {b} above -e {e}: {lo} > {hi} bytes")
    if (factor > 1 and lo == 0) or (factor <= 1 and step == 0):
        raise ValueError("this sweep never ends in nccl-tests: " +
                         ("a factor sweep from 0 bytes stays at 0" if factor > 1 else "the additive step -i is 0"))
    out, size = [], lo
    while size <= hi:
        out.append(size)
        if len(out) > MAX_SWEEP_SIZES:
            raise ValueError(f"more than {MAX_SWEEP_SIZES} sizes (an additive sweep of {step} bytes per step)")
        size = size * factor if factor > 1 else size + step
    return out


def nccl_tests_command_sizes(command: str) -> list[int]:
    """The sizes an ``*_perf`` command line runs: its ``-b``/``-e``/``-f``/``-i`` (short or long spelling,
    ``-b 1M`` or ``--minbytes=1M``) expanded by :func:`nccl_tests_sizes`. Raises ValueError if the line names no
    ``_perf`` binary."""
    import shlex
    words = shlex.split(command.replace("\\\n", " "), comments=True)
    start = next((k for k, w in enumerate(words) if w.rsplit("/", 1)[-1].endswith(("_perf", "_perf_mpi"))), None)
    if start is None:
        raise ValueError(f"no nccl-tests *_perf binary in {command!r}")
    long = {"--minbytes": "b", "--maxbytes": "e", "--stepfactor": "f", "--stepbytes": "i"}
    opts: dict[str, str] = {}
    args = words[start + 1:]
    for end, w in enumerate(args):  # the command ends at the first shell operator (| tee log, ; next, > file)
        if w in ("|", "||", "&&", ";", "&", ">", ">>", "2>&1") or w.startswith(("|", ">", ";")):
            args = args[:end]
            break
    for k, w in enumerate(args):
        name, _, inline = w.partition("=")
        key = long.get(name) or (w[1] if len(w) >= 2 and w[0] == "-" and w[1] in "befi" and not w.startswith("--")
                                 else None)
        if key is None:
            continue
        if name in long:
            opts[key] = inline if inline else args[k + 1]
        else:
            opts[key] = w[2:] if len(w) > 2 else args[k + 1]
    return nccl_tests_sizes(**opts)
