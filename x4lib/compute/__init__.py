"""Compute: the dtype vocabulary and the work of a kernel, the roofline, achievable matmul rates, the systolic and SIMT
models, MIG partitions and the host's share of a GPU server.

Used by: Chapters 01 and 02, Lab 00, the doctor's expected rates and the planner's GEMMs.

Modules: ``kernels``, ``roofline``, ``matmul`` (the model), ``matmul_data`` (its data file), ``matmul_floors`` (mechanisms measured on our sweeps), ``matmul_validation``, ``systolic``, ``simt``, ``mig``, ``host``.
Each is imported on first use (``x4lib.compute.<module>``).
"""
from x4lib._lazy import submodules

__all__ = ["kernels", "roofline", "matmul", "matmul_data", "matmul_floors", "matmul_validation", "systolic", "simt", "mig", "host"]
__getattr__, __dir__ = submodules(__name__, __all__)
