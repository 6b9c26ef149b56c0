"""Memory needed to train: bytes of model state per parameter.

Mixed-precision training with Adam keeps, per parameter: the 16-bit weight (2 B) and gradient (2 B), and
in FP32 a master copy of the weight, Adam's momentum and its variance (4 + 4 + 4 = 12 B): 16 B in all,
before activations (Rajbhandari et al. 2020, ZeRO, section 3.1; references.bib: rajbhandari-2020).
Used in: book/00-motivation.md.
"""
from __future__ import annotations

import math

MIXED_ADAM_BYTES_PER_PARAM = {"weights": 2, "gradients": 2, "optimizer": 12}


def model_state_bytes(params: float, bytes_per_param: dict | None = None) -> float:
    """Model-state bytes (weights + gradients + optimizer state), activations excluded."""
    if params <= 0:
        raise ValueError(f"params must be > 0, got {params:g}")
    per = bytes_per_param or MIXED_ADAM_BYTES_PER_PARAM
    return params * sum(per.values())


def min_devices_to_hold(state_bytes: float, device_memory_B: float) -> int:
    """The fewest devices whose memory can hold ``state_bytes`` if it is sharded perfectly
    (ZeRO stage 3 / FSDP), ignoring activations, buffers and fragmentation: a lower bound."""
    return math.ceil(state_bytes / device_memory_B)
