"""Numbers written the Spanish way for the pages' "Resumen en español": a decimal comma and a full stop between
thousands (57.344; 3,5), with no separator in a number of four digits (1024 GPU), as the Real Academia Española's
Ortografía (2010, §4.2.1.2) recommends for integers of four figures. A page glues the Spanish text of a value under
``<key>_es`` and its summary quotes ``{glue:text}`<key>_es```` with no format of its own, so one value has one
number in both languages. Used in: every chapter's Spanish summary.
"""
from __future__ import annotations

import math
from collections.abc import Mapping


def number(value: float, decimals: int = 0) -> str:
    """``value`` rounded to ``decimals`` places, written with a decimal comma and full stops between thousands.
    ``number(57344) == "57.344"``, ``number(3.5, 1) == "3,5"``, ``number(1024) == "1024"``,
    ``number(-12345.678, 2) == "-12.345,68"``."""
    if decimals < 0:
        raise ValueError(f"decimals must be 0 or more, not {decimals}")
    text = f"{abs(float(value)):.{decimals}f}"
    whole, _, frac = text.partition(".")
    if len(whole) > 4:
        groups = []
        while whole:
            groups.append(whole[-3:])
            whole = whole[:-3]
        whole = ".".join(reversed(groups))
    sign = "-" if float(value) < 0 and float(text) != 0 else ""
    return sign + whole + ("," + frac if frac else "")


def numbers(values: Mapping[str, float], decimals: Mapping[str, int]) -> dict[str, str]:
    """The Spanish text of each value named in ``decimals`` (key → decimal places), under ``<key>_es``: what a
    page glues next to the values its English prose formats itself."""
    missing = sorted(set(decimals) - set(values))
    if missing:
        raise KeyError(f"no value named {', '.join(missing)}")
    return {f"{key}_es": number(values[key], places) for key, places in decimals.items()}


def formatted(value: float, spec: int | str) -> str:
    """``value`` the Spanish way under a small format ``spec``, the Spanish twin of the English prose's format:
    an int N (or "N") → :func:`number` with N decimals (``.Nf``); "+N" → the same with its sign always written
    (``+.Nf``); "eN" → N decimals of the mantissa times a power of ten (``.Ne``: "5,88 × 10²⁴"); "gN" → N
    significant digits (``.Ng``). ``formatted(2.5e-7, "e1") == "2,5 × 10⁻⁷"``."""
    spec = str(spec)
    if spec.startswith("+"):
        text = number(value, int(spec[1:]))
        return text if text.startswith("-") or not text.strip("0,") else "+" + text
    if spec.startswith("e"):
        mantissa, _, exp = f"{float(value):.{int(spec[1:])}e}".partition("e")
        sup = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
        return f"{number(float(mantissa), int(spec[1:]))} × 10{str(int(exp)).translate(sup)}"
    if spec.startswith("g"):
        digits = int(spec[1:])
        if float(value) == 0:
            return "0"
        decimals = digits - 1 - math.floor(math.log10(abs(float(value))))
        text = number(round(float(value), decimals), max(0, decimals))
        return text.rstrip("0").rstrip(",") if "," in text else text
    return number(value, int(spec))
