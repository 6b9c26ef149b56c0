"""Serving: KV-cache bytes, parameter counts of published models, the decode roofline and the cost of a token served.

Used by: Chapters 02 and 04 and the chooser of chapter 05.

Modules: ``inference``, ``decode``, ``token_cost``. Each is imported on first use (``x4lib.serving.token_cost.<module>``).
"""
from x4lib._lazy import submodules

__all__ = ["inference", "decode", "token_cost"]
__getattr__, __dir__ = submodules(__name__, __all__)
