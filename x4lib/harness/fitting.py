"""Fitting t(S) = α + β·S to measured (size, time) pairs: the latency–bandwidth (Hockney) model of a collective.

α [s] is the fixed cost per call, β [s/B] the inverse bandwidth; 1/β is reported in GB/s (1e9 B/s) of algbw.
A fit is derived from stored times whenever a page is drawn, never stored as a measurement.
Standard library only. Used in: book/lab-01-collectives.md.
"""
from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class AlphaBetaFit:
    """t(S) = α + β·S fitted to measured (S, t): α in s (latency), β in s/B; 1/β in GB/s (10⁹ B/s)."""
    alpha_s: float
    beta_s_per_B: float
    inv_beta_gb_s: float | None  # None when β <= 0 (no bandwidth term resolved)
    residual_rms_s: float         # root-mean-square of t − (α + β·S)
    residual_rel_rms: float       # root-mean-square of (t − (α + β·S)) / t
    n_points: int
    weighting: str                # "absolute" (ordinary least squares) or "relative" (weights 1/t²)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def fit_alpha_beta(sizes_B, times_s, relative: bool = False) -> AlphaBetaFit:
    """Least-squares fit of t = α + β·S. ``relative=True`` minimises Σ((t − α − βS)/t)², so a sweep over
    decades of S does not let the largest size decide α alone. Needs at least two distinct sizes and finite,
    positive times (closed form of the 2×2 normal equations)."""
    S = [float(s) for s in sizes_B]
    t = [float(x) for x in times_s]
    if len(S) != len(t) or len(set(S)) < 2:
        raise ValueError("need at least two distinct sizes, with one time each")
    if not all(math.isfinite(x) and x > 0 for x in t) or not all(math.isfinite(s) for s in S):
        raise ValueError("times must be finite and > 0, sizes finite")
    w = [1 / x ** 2 if relative else 1.0 for x in t]
    W = math.fsum(w)
    Sx = math.fsum(wi * s for wi, s in zip(w, S))
    Sy = math.fsum(wi * y for wi, y in zip(w, t))
    Sxx = math.fsum(wi * s * s for wi, s in zip(w, S))
    Sxy = math.fsum(wi * s * y for wi, s, y in zip(w, S, t))
    beta = (W * Sxy - Sx * Sy) / (W * Sxx - Sx * Sx)
    alpha = (Sy - beta * Sx) / W
    res = [y - (alpha + beta * s) for s, y in zip(S, t)]
    return AlphaBetaFit(alpha_s=alpha, beta_s_per_B=beta, inv_beta_gb_s=(1 / beta / 1e9) if beta > 0 else None,
                        residual_rms_s=math.sqrt(math.fsum(r * r for r in res) / len(res)),
                        residual_rel_rms=math.sqrt(math.fsum((r / y) ** 2 for r, y in zip(res, t)) / len(res)),
                        n_points=len(S), weighting="relative" if relative else "absolute")
