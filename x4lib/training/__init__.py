"""Training: bytes of training state and memory plans, parallelism strategies and their traffic, the MFU budget, the
run's time and cost (6ND), the planner that composes them, and the stack model (``stack``) validated on public
ground truth (``ground_truth``, ``validate``).

Used by: Chapters 00, 02 and 03 and the capstone.

Modules: ``memory``, ``parallelism``, ``mfu``, ``planner``, ``economics``, ``stack``, ``ground_truth``,
``validate``, ``calibration`` (Lab 02), ``schedule`` (when a step's parts run: 1F1B, the streams), ``rules`` (the
capstone's rules of thumb), ``moe`` (expert parallelism's all-to-all, the capstone's variants). Each is imported on
first use
(``x4lib.training.<module>``).
"""
from x4lib._lazy import submodules

__all__ = ["memory", "parallelism", "mfu", "planner", "economics", "stack", "ground_truth", "validate", "calibration",
           "schedule", "rules", "moe"]
__getattr__, __dir__ = submodules(__name__, __all__)
