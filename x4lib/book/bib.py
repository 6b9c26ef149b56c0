"""The book's bibliography (``book/references.bib``): which citation keys exist.

Read with pybtex, the BibTeX parser that sphinxcontrib-bibtex uses to build the book's bibliography, so the
keys the checks accept are the keys the build resolves. Used by the claims checker (``x4lib/book/claims.py``).
"""
from __future__ import annotations

from pathlib import Path

import pybtex.errors
from pybtex.database import parse_string
from pybtex.exceptions import PybtexError
from x4lib import paths


#: the book's bibliography
BOOK_BIB = paths.REPO_ROOT / "book" / "references.bib"


class BibError(ValueError):
    """A bibliography that cannot be read: missing, not UTF-8, or not valid BibTeX. The message names the file."""


def keys(bib: Path | str, name: str = "<string>") -> frozenset[str]:
    """The entry keys of a BibTeX file (``bib`` a :class:`~pathlib.Path`, read as UTF-8) or of BibTeX text
    (``bib`` a ``str``; ``name`` then stands for the file in error messages).

    ``@string``, ``@preamble`` and ``@comment`` are not entries. Raises :class:`BibError` naming the file for
    an unreadable or non-UTF-8 file, a syntax error, an undefined ``@string`` macro or a repeated key.

    >>> sorted(keys("@misc{a-1,\\n title={x}}\\n@string{s = {1}}\\n@book{ b ,}"))
    ['a-1', 'b']
    >>> keys("@misc{a,\\n title={x}\\n\\n@misc{b, title={y}}", name="refs.bib")
    Traceback (most recent call last):
    ...
    x4lib.book.bib.BibError: refs.bib: not valid BibTeX: syntax error in line 4: '}' expected
    """
    if isinstance(bib, Path):
        name = str(bib)
        try:
            bib = bib.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise BibError(f"{name}: not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})") from None
        except OSError as e:
            raise BibError(f"{name}: cannot read: {e.strerror or e}") from None
    with pybtex.errors.capture() as errors:        # collect every error, whatever pybtex's strict mode is
        try:
            data = parse_string(bib, "bibtex")
        except PybtexError as e:
            errors.append(e)
    if errors:
        raise BibError(f"{name}: not valid BibTeX: {errors[0]}")
    return frozenset(data.entries.keys())


def book_keys() -> frozenset[str]:
    """The keys of the book's own bibliography (``book/references.bib``)."""
    return keys(BOOK_BIB)
