"""The doctor, "is my number right?": recognising what a reader pastes (whole tool outputs, and fragments inside a
bug report: ``paste``), the rule book and its findings, GPU state from `nvidia-smi -q`/`lspci`, rate checks, and the
command.

Used by: Labs 00 and 01 (the stored real cases) and the README's "Is my number right?".

Modules: ``diagnose``, ``findings``, ``gpu_state``, ``paste``, ``paste_figures`` (figures a paste states, against the
catalog), ``rate_check``, ``step_check`` (a Lab 02 training step). Each is imported on first use
(``x4lib.doctor.diagnose.<module>``).
"""
from x4lib._lazy import submodules

__all__ = ["diagnose", "findings", "gpu_state", "paste", "paste_figures", "rate_check", "step_check"]
__getattr__, __dir__ = submodules(__name__, __all__)
