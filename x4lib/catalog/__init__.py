"""The catalog: the device records and their loader, peaks from first principles, number formats, sourced facts,
others' published measurements, the landscape normaliser and the chooser.

Used by: Chapters 00, 01, 02 and 05 draw on it; every other part reads its devices from here.

Modules: ``specs``, ``peaks``, ``formats``, ``facts``, ``published``, ``landscape``, ``choose``. Each is imported on
first use (``x4lib.catalog.<module>``).
"""
from x4lib._lazy import submodules

__all__ = ["specs", "peaks", "formats", "facts", "published", "landscape", "choose"]
__getattr__, __dir__ = submodules(__name__, __all__)
