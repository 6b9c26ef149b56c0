"""The datacenter: the power chain from chip to grid, owning against renting (TCO), carbon, failures and checkpoints,
storage bandwidth, and one cost model of a whole training run.

Used by: Chapter 04 and the capstone's run totals.

Modules: ``facility``, ``tco``, ``carbon``, ``reliability``, ``storage``, ``runcost``. Each is imported on first use
(``x4lib.datacenter.facility.<module>``).
"""
from x4lib._lazy import submodules

__all__ = ["facility", "tco", "carbon", "reliability", "storage", "runcost"]
__getattr__, __dir__ = submodules(__name__, __all__)
