"""The network: links and NVLink generations, topologies and the readers of a machine's `topo -m`/`ibstat`, cluster
presets, collectives and NCCL's tuner, nccl-tests logs, message sizes and the collective benchmark.

Used by: Chapter 03, Lab 01, the planner's communication terms and the doctor's busbw checks.

Modules: ``links``, ``nvlink``, ``topology``, ``topo``, ``clusters``, ``nccl_tests``, ``collectives``,
``collective_cli``, ``nccl_tuner``, ``validation``, ``nccl_log``, ``nccl_rows``, ``sizes``, ``commbench``, ``allreduce_moves``. Each is imported on first use
(``x4lib.network.<module>``).
"""
from x4lib._lazy import submodules

__all__ = ["links", "nvlink", "topology", "topo", "clusters", "nccl_tests", "collectives", "collective_cli",
           "nccl_tuner", "validation", "nccl_log", "nccl_rows", "sizes", "commbench", "allreduce_moves"]
__getattr__, __dir__ = submodules(__name__, __all__)
