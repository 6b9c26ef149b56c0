"""x4lib: the helper package of the X4 book on AI hardware.

One module per concept: ``specs`` (the spec catalog), ``roofline``, ``economics``, ``memory``, ``bench``
(timing harness), ``device`` (detection), ``runs``, ``lab00``, ``collectives``, ``nccl_log``, ``commbench``,
``claims``, ``plots``, ``explore``, ``cli``. Inside x4lib every quantity is in SI base units with the unit in
its name (``memory_bw_Bps``, ``peak_flop_per_s``, ``tdp_W``); display units (TFLOP/s, GB/s) appear only in
the data files, the CLI and the book's tables.

Submodules are imported on first use (``x4.specs`` works after ``import x4lib as x4``), so that the measuring
modules (``bench``, ``device``, ``commbench``) run on a pod that has only the standard library and torch.
"""
import importlib

__version__ = "0.1.0"
__all__ = ["bench", "claims", "collectives", "commbench", "device", "economics", "explore", "lab00", "memory",
           "nccl_log", "plots", "roofline", "runs", "specs"]


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module(f"x4lib.{name}")
    raise AttributeError(f"module 'x4lib' has no attribute {name!r}")
