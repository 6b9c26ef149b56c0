"""The measuring harness: device detection, the timing harness, fits of measured times, and lab runs as data. `bench`
and `device` import only the standard library and torch, so they run on a bare PyTorch pod.

Used by: Labs 00 and 01 and their runners.

Modules: ``bench``, ``decode_bench`` (a decode step eager and as a CUDA graph, for the GEMM sweep), ``device``,
``fitting``, ``layer_bench`` (Lab 02: a layer per op, DDP over gloo or one GPU), ``runs``. Each is imported on first use (``x4lib.harness.<module>``).
"""
from x4lib._lazy import submodules

__all__ = ["bench", "decode_bench", "device", "fitting", "layer_bench", "runs"]
__getattr__, __dir__ = submodules(__name__, __all__)
