"""The roofline model: attainable rate = min(peak, intensity × memory bandwidth).

Symbols and units: peak P [FLOP/s], memory bandwidth W [B/s], arithmetic intensity I [FLOP/B].
The ridge point I* = P / W is the intensity above which a kernel can be compute-bound.
Source: Williams, Waterman & Patterson 2009 (references.bib: williams-2009). A kernel's FLOP and bytes come from
``x4lib.compute.kernels`` (matmul, STREAM kernels).
Used in: book/00-motivation.md, book/lab-00-roofline.md.
"""
from __future__ import annotations

import dataclasses

from x4lib.catalog import specs


def attainable_flop_per_s(intensity_flop_per_B: float, peak_flop_per_s: float,
                          memory_bw_Bps: float) -> float:
    """min(P, I × W) in FLOP/s."""
    if intensity_flop_per_B < 0 or peak_flop_per_s <= 0 or memory_bw_Bps <= 0:
        raise ValueError("intensity must be >= 0 and peak and bandwidth > 0")
    return min(peak_flop_per_s, intensity_flop_per_B * memory_bw_Bps)


def ridge_flop_per_B(peak_flop_per_s: float, memory_bw_Bps: float) -> float:
    """I* = P / W in FLOP/B."""
    return peak_flop_per_s / memory_bw_Bps


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


# ------------------------------------------------------------------------ command line: python -m x4lib roofline

def cli_arguments(p) -> None:
    from x4lib import cli
    p.add_argument("--device", required=True, help="catalog id, e.g. h100-sxm")
    p.add_argument("--dtype", default="bf16", help="one of: " + ", ".join(specs.DTYPE_BYTES))
    p.add_argument("--intensity", type=cli.number("FLOP/byte", 0, 1e12),
                   help="arithmetic intensity in FLOP/byte: also print the attainable rate")
    p.add_argument("--json", action="store_true", help="machine-readable output (schemas/roofline_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    roof = for_device(args.device, args.dtype)
    out = {"device": roof.device_id, "dtype": roof.dtype, "peak_tflops": roof.peak_flop_per_s / 1e12,
           "peak_field": roof.peak_field, "memory_bw_gb_s": roof.memory_bw_Bps / 1e9,
           "ridge_flop_per_byte": roof.ridge_flop_per_B}
    if args.intensity is not None:
        out["intensity_flop_per_byte"] = args.intensity
        out["attainable_tflops"] = roof.attainable_flop_per_s(args.intensity) / 1e12
    lines = [f"{roof.device_id} {roof.dtype}: dense peak {out['peak_tflops']:.1f} TFLOP/s "
             f"({roof.peak_field}), memory {out['memory_bw_gb_s']:.0f} GB/s (GB = 1e9 B)",
             f"ridge point: {out['ridge_flop_per_byte']:.1f} FLOP/byte"]
    if args.intensity is not None:
        bound = "compute" if args.intensity >= roof.ridge_flop_per_B else "memory"
        lines.append(f"at {args.intensity:g} FLOP/byte: attainable {out['attainable_tflops']:.2f} TFLOP/s "
                     f"({bound}-bound)")
    cli.emit(out, "\n".join(lines), as_json=args.json)
    return 0
