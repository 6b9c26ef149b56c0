"""The book's own tooling: the claims checker and its MyST reader, the bibliography, tables, plots and the jupytext
pairs.

Used by: Every page (tables and figures) and `make test` (claims, pairs).

Modules: ``claims``, ``myst_blocks``, ``bib``, ``tables``, ``plots``, ``nbtools``, ``kernel_waits``, ``spanish``.
Each is imported on first use (``x4lib.book.<module>``).
"""
from x4lib._lazy import submodules

__all__ = ["claims", "myst_blocks", "bib", "tables", "plots", "nbtools", "kernel_waits", "spanish"]
__getattr__, __dir__ = submodules(__name__, __all__)
