"""The roofline model: attainable rate = min(peak, intensity × memory bandwidth).

Symbols and units: peak P [FLOP/s], memory bandwidth W [B/s], arithmetic intensity I [FLOP/B].
The ridge point I* = P / W is the intensity above which a kernel can be compute-bound.
Source: Williams, Waterman & Patterson 2009 (references.bib: williams-2009).
Used in: book/00-motivation.md, book/lab-00-roofline.md.
"""
from __future__ import annotations

import dataclasses

from x4lib import specs

#: STREAM-style vector kernels: (FLOP per element, arrays read, arrays written).
#: copy a=b; scale a=s*b; add a=b+c; triad a=b+s*c (McCalpin's STREAM definitions).
VECTOR_KERNELS = {
    "copy": (0, 1, 1),
    "scale": (1, 1, 1),
    "add": (1, 2, 1),
    "triad": (2, 2, 1),
}


def attainable_flop_per_s(intensity_flop_per_B: float, peak_flop_per_s: float,
                          memory_bw_Bps: float) -> float:
    """min(P, I × W) in FLOP/s."""
    if intensity_flop_per_B < 0 or peak_flop_per_s <= 0 or memory_bw_Bps <= 0:
        raise ValueError("intensity must be >= 0 and peak and bandwidth > 0")
    return min(peak_flop_per_s, intensity_flop_per_B * memory_bw_Bps)


def ridge_flop_per_B(peak_flop_per_s: float, memory_bw_Bps: float) -> float:
    """I* = P / W in FLOP/B."""
    return peak_flop_per_s / memory_bw_Bps


def matmul_flop(m: int, n: int, k: int) -> int:
    """FLOP of C[m,n] = A[m,k] @ B[k,n]: one multiply and one add per (i, j, l): 2·m·n·k."""
    return 2 * m * n * k


def matmul_bytes(m: int, n: int, k: int, bytes_per_element: float) -> float:
    """Minimum DRAM traffic in B: read A (m·k) and B (k·n) once, write C (m·n) once."""
    return (m * k + k * n + m * n) * bytes_per_element


def matmul_intensity(m: int, n: int, k: int, bytes_per_element: float) -> float:
    """2mnk / ((mk + kn + mn)·b) in FLOP/B; for a square n³ product it is 2n / (3b)."""
    for name, v in (("m", m), ("n", n), ("k", k), ("bytes_per_element", bytes_per_element)):
        if v <= 0:
            raise ValueError(f"{name} must be positive, got {v}")
    return matmul_flop(m, n, k) / matmul_bytes(m, n, k, bytes_per_element)


def vector_intensity(kernel: str, bytes_per_element: float) -> float:
    """FLOP/B of a STREAM kernel (``copy``, ``scale``, ``add``, ``triad``)."""
    if kernel not in VECTOR_KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; use one of {', '.join(VECTOR_KERNELS)}")
    flop, reads, writes = VECTOR_KERNELS[kernel]
    return flop / ((reads + writes) * bytes_per_element)


@dataclasses.dataclass(frozen=True)
class Roofline:
    """A device's roofline for one dtype (dense peak)."""
    device_id: str
    dtype: str
    peak_field: str
    peak_flop_per_s: float
    memory_bw_Bps: float

    @property
    def ridge_flop_per_B(self) -> float:
        return ridge_flop_per_B(self.peak_flop_per_s, self.memory_bw_Bps)

    def attainable_flop_per_s(self, intensity_flop_per_B: float) -> float:
        return attainable_flop_per_s(intensity_flop_per_B, self.peak_flop_per_s, self.memory_bw_Bps)


@dataclasses.dataclass(frozen=True)
class RooflinePoint:
    """Lower-bound time of a kernel on a roofline: the larger of math and memory time."""
    flop: float
    bytes_moved: float
    t_math_s: float
    t_mem_s: float

    @property
    def intensity_flop_per_B(self) -> float:
        return self.flop / self.bytes_moved

    @property
    def time_s(self) -> float:
        return max(self.t_math_s, self.t_mem_s)

    @property
    def bound(self) -> str:
        return "compute" if self.t_math_s >= self.t_mem_s else "memory"

    @property
    def attainable_flop_per_s(self) -> float:
        return self.flop / self.time_s


def for_device(device: specs.Device | str, dtype: str = "bf16") -> Roofline:
    """The roofline of a catalog device for ``dtype`` (dense peak, vendor memory bandwidth)."""
    dev = specs.get(device) if isinstance(device, str) else device
    dtype = specs.normalize_dtype(dtype)
    field = dev.peak_field(dtype)
    if "memory_bw_gb_s" not in dev.values:
        raise specs.UnsupportedDtypeError(f"device {dev.id} has no published memory bandwidth")
    return Roofline(dev.id, dtype, field, dev.values[field].si, dev.memory_bw_Bps)


def point(flop: float, bytes_moved: float, roof: Roofline) -> RooflinePoint:
    """t_math = F / P and t_mem = Q / W for a kernel of F FLOP moving Q bytes."""
    if flop < 0 or bytes_moved <= 0:
        raise ValueError("flop must be >= 0 and bytes_moved > 0")
    return RooflinePoint(flop, bytes_moved, flop / roof.peak_flop_per_s, bytes_moved / roof.memory_bw_Bps)
