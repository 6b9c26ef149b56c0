"""x4lib: the helper package of the X4 book on AI hardware.

One module per concept: ``specs`` (the spec catalog), ``roofline``, ``economics``, ``plots``,
``cli``. Inside x4lib every quantity is in SI base units with the unit in its name
(``memory_bw_Bps``, ``peak_flop_per_s``, ``tdp_W``); display units (TFLOP/s, GB/s) appear only
in the data files, the CLI and the book's tables.
"""
from x4lib import economics, explore, memory, plots, roofline, specs  # noqa: F401  (lab modules import on use)

__all__ = ["economics", "explore", "memory", "plots", "roofline", "specs"]
__version__ = "0.1.0"
