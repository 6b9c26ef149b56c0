"""Page helpers: what one page of the book needs to draw its tables, figures and explorers, kept apart from the
models (``x4lib/<part>/<module>.py``) so a reader knows which code is the model and which is the page. One module per
page, named after it: ``ch00`` (book/00-motivation.md), ``lab00`` (book/lab-00-roofline.md), ``lab01``
(book/lab-01-collectives.md); a long page's helpers are split by section (``ch01_memory``, ``lab00_model``). A page
calls ``from x4lib.pages import lab00 as page``. Page helpers are an edge: they turn the ids a page names into catalog
objects once and hand objects to the models.
"""

#: significant digits a glued float keeps by default: enough for any prose format, few enough that the last bits
#: of a float (which vary with the CPU's code path: libm's FMA variants, numpy's SIMD loops, BLAS blocking and
#: thread count) never reach a notebook's reference output (tests/test_notebooks.py checks it)
GLUE_SIGNIFICANT_DIGITS = 10


def round_sig(value, digits: int = GLUE_SIGNIFICANT_DIGITS):
    """``value`` rounded to ``digits`` significant digits when it is a float (numpy floats included); anything
    else (ints, strings, figures, tables) unchanged."""
    if isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float) or type(value).__name__ in ("float16", "float32", "float64", "longdouble"):
        v = float(value)
        return float(f"{v:.{digits}g}") if v == v and v not in (float("inf"), float("-inf")) else v
    return value


#: every value this kernel glued through :func:`glue`, by name (what :func:`glue_spanish` writes the Spanish way)
GLUED: dict = {}


def glue(name: str, value, display: bool = True, *, digits: int = GLUE_SIGNIFICANT_DIGITS):
    """myst_nb's ``glue`` with floats rounded at the source (:func:`round_sig`). A value computed by this machine's
    floating point (a CPU matmul, an emulation's error, a fit) passes ``digits`` = what the prose shows."""
    from myst_nb import glue as myst_glue
    GLUED[name] = round_sig(value, digits)
    return myst_glue(name, GLUED[name], display=display)


def glue_spanish(formats) -> dict:
    """Glue ``<name>_es``, the Spanish text (x4lib.book.spanish.formatted) of each value already glued under
    ``name``, for the page's "Resumen en español": ``formats`` maps a glued name to its spec (decimals, "+N", "eN",
    "gN"), the twin of the English prose's format. Returns the texts glued."""
    from x4lib.book import spanish
    missing = sorted(set(formats) - set(GLUED))
    if missing:
        raise KeyError(f"not glued yet: {', '.join(missing)}")
    texts = {f"{k}_es": spanish.formatted(GLUED[k], spec) for k, spec in formats.items()}
    for k, v in texts.items():
        glue(k, v, display=False)
    return texts
