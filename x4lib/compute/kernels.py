"""What the timed kernels do: the book's dtype vocabulary, and the work and memory traffic of a matmul and of the
STREAM-style vector kernels. Defined once here; the harness (``bench``), the roofline and every page use it.

    matmul  C[m,n] = A[m,k] · B[k,n]   F = 2·m·n·k FLOP            (one multiply and one add per (i, j, l))
                                       Q = (m·k + k·n + m·n)·b B    (A and B read once, C written once: the minimum)
    copy    a = b                      0 FLOP per element, 1 array read, 1 written
    scale   a = s·b                    1 FLOP,             1 read,   1 written
    add     a = b + c                  1 FLOP,             2 read,   1 written
    triad   a = b + s·c                2 FLOP,             2 read,   1 written (McCalpin's STREAM definitions)

Standard library only: the measuring entry runs on a bare PyTorch pod.
Used in: book/00-motivation.md, book/lab-00-roofline.md.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

#: the dtype vocabulary of the whole book, and bytes per element
DTYPE_BYTES: Mapping[str, float] = MappingProxyType({
    "fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2,
    "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1, "fp4": 0.5,
})

#: STREAM-style vector kernels: (FLOP per element, arrays read, arrays written)
VECTOR_KERNELS: Mapping[str, tuple[int, int, int]] = MappingProxyType({
    "copy": (0, 1, 1),
    "scale": (1, 1, 1),
    "add": (1, 2, 1),
    "triad": (2, 2, 1),
})


def _positive(**values: float) -> None:
    for name, v in values.items():
        if not v > 0:
            raise ValueError(f"{name} must be positive, got {v}")


def matmul_flop(m: int, n: int, k: int) -> int:
    """F = 2·m·n·k FLOP for C[m,n] = A[m,k] @ B[k,n]."""
    _positive(m=m, n=n, k=k)
    return 2 * m * n * k


def matmul_bytes(m: int, n: int, k: int, bytes_per_element: float) -> float:
    """Minimum DRAM traffic in B: read A (m·k) and B (k·n) once, write C (m·n) once."""
    _positive(m=m, n=n, k=k, bytes_per_element=bytes_per_element)
    return (m * k + k * n + m * n) * bytes_per_element


def matmul_intensity(m: int, n: int, k: int, bytes_per_element: float) -> float:
    """2mnk / ((mk + kn + mn)·b) in FLOP/B; for a square n³ product it is 2n / (3b)."""
    return matmul_flop(m, n, k) / matmul_bytes(m, n, k, bytes_per_element)


def vector_flop(kernel: str, n_elements: int) -> int:
    """FLOP of one pass of a STREAM kernel over ``n_elements``."""
    return _vector(kernel)[0] * n_elements


def vector_bytes(kernel: str, n_elements: int, bytes_per_element: float = 4) -> float:
    """Bytes moved by one pass of a STREAM kernel: (arrays read + arrays written) · N · b."""
    _, reads, writes = _vector(kernel)
    return (reads + writes) * n_elements * bytes_per_element


def vector_intensity(kernel: str, bytes_per_element: float) -> float:
    """FLOP/B of a STREAM kernel (``copy``, ``scale``, ``add``, ``triad``)."""
    flop, reads, writes = _vector(kernel)
    return flop / ((reads + writes) * bytes_per_element)


def _vector(kernel: str) -> tuple[int, int, int]:
    if kernel not in VECTOR_KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; use one of {', '.join(VECTOR_KERNELS)}")
    return VECTOR_KERNELS[kernel]
