"""The achievable rate of one matmul: C[m,n] = A[m,k]·B[k,n] in a precision d on a catalog device, predicted from
named mechanisms, with constants per architecture family (``x4lib/data/matmul.yaml``, each sourced).

Model (units in brackets; F = 2·m·n·k FLOP, ``x4lib.compute.kernels``):

    tiles        T = ⌈m/Tm⌉·⌈n/Tn⌉                     tile quantisation: a partial tile costs a whole one
    waves        W = ⌈T/U⌉                              wave quantisation over U units (SMs, CUs, MMEs, MXUs, cores)
    compute      t_c = W · (2·Tm·Tn·k / (η · r · P/U) + t_e)  [s]  P: dense peak [FLOP/s] from the catalog,
                                                              r = f_sustained / f_peak (where a source gives it),
                                                              η: the family's calibrated efficiency; t_e: the
                                                              epilogue of one tile where the timing API's kernels
                                                              do not overlap it (Tm·Tn·b_C at φ·B/U), else 0
    memory       t_m = ((m·k + k·n)·b + m·n·b_C) / (φ·B) [s]  B [B/s] from the catalog, φ the achievable fraction
                                                              of it (copy/triad kernels measured on the family's
                                                              devices, published; or the bandwidth the same machine
                                                              measured), b_C the output's bytes (BF16 for FP8)
    pipeline     t_p = W · t_f                          [s]  each wave's pipeline fill and drain: a unit waits for
                                                              the first K block's operands and for the tile's stores,
                                                              t_f about two trips to HBM (Hopper; 0 elsewhere and
                                                              where the tiles are not modelled)
    time         t = max(t_L, t₀ + t_p + max(t_c, t_m))  [s]  calls queued back to back (timing="queued")
                 t = t_L + t₀ + t_p + max(t_c, t_m)      [s]  one call per synchronisation (timing="synced": Lab 00's
                                                              harness up to method 2); t₀: fixed per-call start-up
                                                              and tail on the device, t_L: the host's launch time
                 t = t₀' + t_p + max(t_c, t_m)           [s]  calls captured as a CUDA graph and replayed
                                                              (timing="graph", harness 4's small shapes): no t_L;
                                                              t₀' measured per dtype: its least graph-timed call in
                                                              our runs less the model's work for it, median over
                                                              the family's other devices (:func:`graph_overhead`)
    rate         R = F / t                               [FLOP/s];  efficiency R / P

Measured on our committed GEMM sweeps (``book/runs/gemms/``) and never applied to the machine they were measured on
when that device is held out (our runs as a whole are one source, ``ours``): t_L per timing API
(``torch.matmul``, ``torch._scaled_mm``; :func:`api_floor`) and the power-limited clock (:func:`power_limited_clock`,
reported, not applied to best-of-N rates).

The library is assumed to pick, among its family's tiles (both orientations), the one with the least t. ``bound``
names what sets t: ``launch`` (t₀ or t_L), ``memory`` (t_m), ``quantisation`` (t_c, with more than a quarter of the
paid wave slots idle) or ``compute`` (t_c).

Only η is calibrated: per family and precision class (FP8, whose tensor cores draw more power per FLOP and so run
at a lower clock against their peak, apart from the 16- and 32-bit types), as the median over the family's devices
of the η that reproduces each device's published best-shape rates (``x4lib/data/published.yaml``, kind matmul), and
never from one device alone (a family with fewer than ``min_devices`` measured devices takes the median over the
other families' devices of the same class).
:func:`leave_one_out` recomputes η without the held-out device and predicts it.

Sources: tile and wave quantisation (nvidia-dl-perf-matmul), tiles per family (cutlass-library,
semianalysis-microbench-blackwell, amd-maf-part2-2025, jax-scaling-book-tpus), sustained clocks
(amd-maf-part2-2025; Gaudi 3's shipping clock: stas00-ml-engineering-accelerators), start-up cost
(amd-maf-part1-2025), host launch time (meta-hta-launch-stats), the HBM round trip behind t_f (ernst-gpu-benches-cache). Used in: book/lab-00-roofline.md (validation), book/00-motivation.md (achievable rates).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
import statistics
from types import MappingProxyType
from typing import Iterable, Mapping

import numpy as np

from x4lib.compute import kernels
from x4lib.catalog import specs

from x4lib.compute.matmul_data import (MATMUL_PATH, Family, MatmulDataError, NoModelError, clock_for, constants,
                                       peak_clock_hz, precision_class, units_of)
from x4lib.compute.matmul_floors import api_floor, graph_calls, power_limited_clock

#: how a harness times a call: back to back (the launch queue runs ahead), one call per synchronisation, or as a
#: CUDA graph replayed (no host launch per call)
TIMINGS = ("queued", "synced", "graph")
#: a compute-bound shape whose waves leave more than this share of the paid tile slots idle is "quantisation"-bound
QUANTISATION_IDLE = 0.25
#: the η search range when a published rate is inverted (above 1.5 the measurement beats the model's roof)
ETA_RANGE = (0.02, 1.5)




# ---------------------------------------------------------------------------------------------- a target

@dataclasses.dataclass(frozen=True)
class Target:
    """What the model needs about one machine and precision, in SI: dense peak [FLOP/s], memory bandwidth [B/s],
    parallel units, the clock ratio r = f_sustained / f_peak (1 where no source gives it), and its family."""
    name: str
    dtype: str
    peak_flop_per_s: float
    memory_bw_Bps: float
    units: int
    family: Family
    clock_ratio: float = 1.0
    clock_basis: str = "no sustained clock published: r = 1 (η carries the clock)"
    peak_field: str = ""
    peak_source: str = ""
    memory_fraction: float = 1.0
    memory_basis: str = "the catalog's bandwidth (no achievable fraction applied)"
    peak_clock_hz: float | None = None
    launch_floor_s: float | None = None
    launch_floor_basis: str = "the family's host launch floor"
    api: str = ""
    serial_epilogue: bool = False
    exclude: frozenset = frozenset()
    exclude_sources: frozenset = frozenset()

    @property
    def floor_s(self) -> float:
        """The host's floor per call [s]: the timing API's (measured on other machines), else the family's."""
        return self.family.launch_floor_s if self.launch_floor_s is None else self.launch_floor_s

    @property
    def achievable_bw_Bps(self) -> float:
        return self.memory_fraction * self.memory_bw_Bps

    @property
    def assumed_clock_hz(self) -> float | None:
        """The clock the prediction assumes: r × the clock the peak assumes (None where the catalog has no clock)."""
        return self.clock_ratio * self.peak_clock_hz if self.peak_clock_hz else None


def memory_fraction(device_id: str, family: "Family | None" = None) -> tuple[float, str]:
    """φ, the achievable fraction of the catalog bandwidth, with its basis: the median of the published copy and
    triad kernels (``x4lib/data/published.yaml``, kind memory_bw) on the device's family, else on every device.
    A memory-bound GEMM streams its operands like a copy does; the datasheet peak is never reached (refresh,
    bank conflicts, read/write turnaround)."""
    from x4lib.catalog import published
    fam = family or constants().family_of(device_id)
    rows = [(m["device"], m["value"] * 1e9 / specs.get(m["device"]).memory_bw_Bps, m["source"])
            for m in published.measurements(kind="memory_bw") if re.search(r"copy|triad|memcpy", m["id"])]
    own = [r for r in rows if r[0] in fam.devices]
    pool, where = (own, f"the {fam.name} family") if own else (rows, "all devices with one")
    if not pool:
        return 1.0, "no published copy or triad kernel: the catalog's bandwidth"
    phi = statistics.median(r[1] for r in pool)
    keys = ", ".join(sorted({r[2] for r in pool}))
    return phi, (f"φ = {phi:.2f}: median of {len(pool)} published copy/triad kernel(s) on {where} "
                 f"({keys})")


def target(device: specs.Device | str, dtype: str, *, use_clock: bool = True,
           memory_bw_Bps: float | None = None, exclude: Iterable[str] = (),
           exclude_sources: Iterable[str] = (), host_floor: tuple[float, str] | None = None) -> Target:
    """The model's view of a catalog device in ``dtype``. ``use_clock=False`` ignores a sourced sustained clock
    (r = 1), to see what it is worth. ``memory_bw_Bps``: an achievable bandwidth the same machine measured (e.g. a
    run's triad), used instead of φ × the catalog's. ``host_floor``: (the host's floor per call [s], its basis) as
    the same machine measured it (a run's own probe calls), used instead of the timing API's floor from other
    machines; a property of the host, not of the GPU."""
    dev = specs.get(device) if isinstance(device, str) else device
    dtype = specs.normalize_dtype(dtype)
    fam = constants().family_of(dev.id)
    field = dev.peak_field(dtype)
    if "memory_bw_gb_s" not in dev.values:
        raise NoModelError(f"device {dev.id} has no published memory bandwidth")
    r, basis = 1.0, "no sustained clock published: r = 1 (η carries the clock)"
    clk = clock_for(dev.id, dtype)
    if clk and use_clock:
        f_peak = peak_clock_hz(dev)
        if f_peak is None:
            raise MatmulDataError(f"{MATMUL_PATH.name}: {dev.id} has a sourced clock but its catalog record has no "
                                  f"peak_basis clock to compare it with")
        r = clk.sustained_hz / f_peak
        basis = (f"{clk.kind} clock {clk.sustained_hz / 1e6:.0f} MHz against the {f_peak / 1e6:.0f} MHz the peak "
                 f"assumes ({clk.source})")
    if memory_bw_Bps:
        phi, phi_basis = memory_bw_Bps / dev.memory_bw_Bps, (f"measured on the same machine: "
                                                             f"{memory_bw_Bps / 1e9:,.0f} GB/s")
    else:
        phi, phi_basis = memory_fraction(dev.id, fam)
    floor, floor_basis, api, serial = None, "the family's host launch floor", "", False
    a = constants().api_for(dtype)
    if a is not None and fam.id in a.families:
        api, serial = a.name, fam.id in a.serial_epilogue_families and fam.tiles_modelled
        floor, floor_basis = api_floor(a.name, dev.id, exclude, exclude_sources)
    if host_floor is not None:
        floor, floor_basis = host_floor
    return Target(dev.id, dtype, dev.values[field].si, dev.memory_bw_Bps, units_of(dev, fam), fam, r, basis, field,
                  dev.values[field].source, phi, phi_basis, peak_clock_hz(dev), floor, floor_basis, api, serial,
                  frozenset(exclude), frozenset(exclude_sources))


def graph_overhead(tg: Target) -> tuple[float | None, str]:
    """t₀ in a CUDA graph for a target [s] and its basis (see :func:`_graph_overhead`), (None, "") where unmeasured."""
    return _graph_overhead(tg.family.id, tg.dtype, tg.exclude, tg.exclude_sources)


@functools.lru_cache(maxsize=256)
def _graph_overhead(family_id: str, dtype: str, exclude: frozenset,
                    exclude_sources: frozenset) -> tuple[float | None, str]:
    """t₀ in a CUDA graph [s], measured: for each dtype's least graph-timed call in our harness-4 runs on the
    family's devices (other devices when held out), its time less the model's own work for that shape
    (t_p + max(t_c, t_m), t₀ left out); the median over the runs of the same dtype (a dtype's kernels start alike:
    FP32's SIMT kernels take about twice the tensor-core ones'), else over every dtype. (None, "") where no such
    run exists: then t₀ is the family's sourced reading."""
    fam = constants().families[family_id]
    ts: dict[str, list[float]] = {}
    who: dict[str, set] = {}
    for g in graph_calls(fam.devices, exclude, exclude_sources):
        tg = target(g.device, g.dtype, exclude=exclude, exclude_sources=exclude_sources)
        p = predict_target(tg, g.m, g.n, g.k, eta_of(tg, exclude, True, exclude_sources))
        ts.setdefault(g.dtype, []).append(max(0.0, g.graph_s - p.t_pipeline_s - max(p.t_compute_s, p.t_memory_s)))
        who.setdefault(g.dtype, set()).add(g.device)
    if not ts:
        return None, ""
    pool = ts.get(dtype) or [t for xs in ts.values() for t in xs]
    devices = who[dtype] if dtype in ts else set().union(*who.values())
    t0 = statistics.median(pool)
    what = f"{dtype} call(s)" if dtype in ts else "call(s) of every dtype"
    return t0, (f"t₀ in a CUDA graph {t0 * 1e6:.2f} µs: the median over {len(pool)} run(s)' least graph-timed "
                f"{what} on {', '.join(sorted(devices))}, less the model's work for its shape")


def cpu_target(name: str, dtype: str, peak_flop_per_s: float, memory_bw_Bps: float, cores: int) -> Target:
    """A CPU that is not a catalog device (e.g. the machine that builds the book): peak and bandwidth as the caller
    measured or computed them, the ``cpu`` family's constants."""
    if not (peak_flop_per_s > 0 and memory_bw_Bps > 0 and cores >= 1):
        raise ValueError("peak and bandwidth must be > 0 and cores >= 1")
    return Target(name, specs.normalize_dtype(dtype), peak_flop_per_s, memory_bw_Bps, int(cores),
                  constants().families["cpu"], peak_field="computed", peak_source="")


# ------------------------------------------------------------------------------------------ the prediction

@dataclasses.dataclass(frozen=True)
class Eta:
    """η and where it came from: ``family`` (median over the family's devices), ``other families`` (the family has
    too few measured devices) or ``uncalibrated`` (no measurement; the family's stated value)."""
    value: float
    how: str
    devices: tuple[str, ...]
    precision: str = "other"

    def text(self) -> str:
        if self.how == "uncalibrated":
            return f"η = {self.value:.2f}, not calibrated (no published measurement for this family)"
        cls = "FP8" if self.precision == "fp8" else "16/32-bit"
        return (f"η = {self.value:.3f} ({cls}), median over {len(self.devices)} device(s) of the "
                f"{'same family' if self.how == 'family' else 'other families'}: {', '.join(self.devices)}")


@dataclasses.dataclass(frozen=True)
class Prediction:
    """The model's answer for one shape (SI inside; ``to_json`` converts at the edge)."""
    target: Target
    m: int
    n: int
    k: int
    tile: tuple[int, int]
    tiles: int
    waves: int
    eta: Eta
    t_compute_s: float
    t_memory_s: float
    overhead_s: float
    launch_floor_s: float = 0.0
    timing: str = "queued"
    split_k: int = 1
    t_epilogue_s: float = 0.0
    t_pipeline_s: float = 0.0

    @property
    def flop(self) -> int:
        return kernels.matmul_flop(self.m, self.n, self.k)

    @property
    def time_s(self) -> float:
        work = self.overhead_s + self.t_pipeline_s + max(self.t_compute_s, self.t_memory_s)
        if self.timing == "graph":
            return work
        return self.launch_floor_s + work if self.timing == "synced" else max(self.launch_floor_s, work)

    @property
    def rate_flop_per_s(self) -> float:
        return self.flop / self.time_s

    @property
    def efficiency(self) -> float:
        """Predicted rate / dense peak."""
        return self.rate_flop_per_s / self.target.peak_flop_per_s

    @property
    def wave_efficiency(self) -> float:
        """Useful share of the work the waves of tiles pay for: m·n·k / (W·U·Tm·Tn·⌈k/s⌉) (s: the K split)."""
        tm, tn = self.tile
        return self.m * self.n * self.k / (self.waves * self.target.units * tm * tn * math.ceil(self.k / self.split_k))

    @property
    def bound(self) -> str:
        """``launch`` (the fixed costs exceed the work), ``memory``, ``quantisation`` (compute-bound with more than
        QUANTISATION_IDLE of the paid wave slots idle) or ``compute``."""
        biggest = max(self.t_compute_s, self.t_memory_s)
        if self.overhead_s + self.launch_floor_s * (self.timing == "synced") > biggest \
                or (self.timing != "graph" and self.launch_floor_s >= self.overhead_s + self.t_pipeline_s + biggest):
            return "launch"
        if self.t_memory_s > self.t_compute_s:
            return "memory"
        return "quantisation" if self.wave_efficiency < 1 - QUANTISATION_IDLE else "compute"

    def to_json(self) -> dict:
        t = self.target
        return {
            "device": t.name, "dtype": t.dtype, "m": self.m, "n": self.n, "k": self.k,
            "peak_tflops": t.peak_flop_per_s / 1e12, "predicted_tflops": self.rate_flop_per_s / 1e12,
            "efficiency": self.efficiency, "bound": self.bound,
            "assumed_clock_mhz": t.assumed_clock_hz / 1e6 if t.assumed_clock_hz else None,
            "basis": {
                "model_version": constants().model_version, "family": t.family.id, "unit_name": t.family.unit_name,
                "units": t.units, "tile": list(self.tile), "tiles": self.tiles, "waves": self.waves,
                "wave_efficiency": self.wave_efficiency, "split_k": self.split_k, "clock_ratio": t.clock_ratio, "clock_basis": t.clock_basis,
                "eta": self.eta.value, "eta_basis": self.eta.text(), "overhead_us": self.overhead_s * 1e6,
                "overhead_basis": ((graph_overhead(t)[1] if self.timing == "graph" else "")
                                   or f"the family's per-kernel start-up ({t.family.overhead_source})"),
                "launch_floor_us": self.launch_floor_s * 1e6, "timing_api": t.api,
                "epilogue": "serial" if t.serial_epilogue else "overlapped",
                "t_epilogue_us": self.t_epilogue_s * 1e6,
                "t_pipeline_us": self.t_pipeline_s * 1e6,
                "launch_floor_basis": t.launch_floor_basis,
                "power_limited_clock_mhz": _power_clock_mhz(t),
                "t_compute_us": self.t_compute_s * 1e6, "t_memory_us": self.t_memory_s * 1e6,
                "time_us": self.time_s * 1e6, "memory_bw_gb_s": t.memory_bw_Bps / 1e9,
                "achievable_bw_gb_s": t.achievable_bw_Bps / 1e9, "memory_basis": t.memory_basis,
                "timing": self.timing,
                "peak_field": t.peak_field, "peak_source": t.peak_source,
            },
        }


def _power_clock_mhz(t: Target) -> float | None:
    """The power-limited clock of a catalog target [MHz], or None (not a catalog device, or no model for it)."""
    try:
        pc = power_limited_clock(t.name, t.dtype)
    except (specs.UnknownDeviceError, NoModelError):   # a computed CPU target is no catalog device
        return None
    return pc[0] / 1e6 if pc else None


def _check_shape(m, n, k) -> None:
    for name, v in (("m", m), ("n", n), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"shape: {name} must be a whole number >= 1, got {v!r}")


def _candidates(fam: Family, dtype: str) -> tuple[tuple[int, int], ...]:
    out = []
    for tm, tn in fam.tiles_for(dtype):
        for t in ((tm, tn), (tn, tm)):
            if t not in out:
                out.append(t)
    return tuple(out)


def output_bytes(dtype: str) -> int:
    """Bytes per element of C: BF16 for FP8 inputs (torch._scaled_mm's out_dtype in Lab 00), else the input's."""
    return 2 if dtype.startswith("fp8") else kernels.DTYPE_BYTES[dtype]


def epilogue_s(tg: Target, tile: tuple[int, int]) -> float:
    """One output tile's epilogue where the API's kernels do not overlap it with the next tile's arithmetic [s]: the
    tile of C written at the unit's share of the achievable bandwidth, Tm·Tn·b_C / (φ·B / U); 0 where they do."""
    if not tg.serial_epilogue:
        return 0.0
    return tile[0] * tile[1] * output_bytes(tg.dtype) * tg.units / tg.achievable_bw_Bps


def gemm_bytes(m: int, n: int, k: int, dtype: str) -> int:
    """A and B read once, C written once [B]: (m·k + k·n)·b + m·n·b_C."""
    return (m * k + k * n) * kernels.DTYPE_BYTES[dtype] + m * n * output_bytes(dtype)


def predict_target(tg: Target, m: int, n: int, k: int, eta: Eta, timing: str = "queued") -> Prediction:
    """The model for one shape on a :class:`Target` with a given η (see the module docstring); ``timing``: how the
    calls are timed, ``queued`` (back to back) or ``synced`` (one call per synchronisation)."""
    _check_shape(m, n, k)
    if timing not in TIMINGS:
        raise ValueError(f"timing must be one of {', '.join(TIMINGS)}, got {timing!r}")
    per_unit = eta.value * tg.clock_ratio * tg.peak_flop_per_s / tg.units
    t_f = tg.family.tile_latency_for(tg.dtype)
    best = None
    for tm, tn in _candidates(tg.family, tg.dtype):
        tiles = math.ceil(m / tm) * math.ceil(n / tn)
        t_e = epilogue_s(tg, (tm, tn))
        for split in split_k_options(tiles, tg.units, k, tg.family.tiles_modelled):
            waves = math.ceil(tiles * split / tg.units)
            t_c = waves * (2.0 * tm * tn * math.ceil(k / split) / per_unit + t_e)
            t_mem = (gemm_bytes(m, n, k, tg.dtype) + split_k_bytes(m, n, split)) / tg.achievable_bw_Bps
            t_p = waves * t_f
            if best is None or t_p + max(t_c, t_mem) < best[7] + max(best[3], best[4]):
                best = ((tm, tn), tiles, waves, t_c, t_mem, split, waves * t_e, t_p)
    tile, tiles, waves, t_c, t_mem, split, t_epi, t_p = best
    t0 = graph_overhead(tg)[0] if timing == "graph" else None
    return Prediction(tg, int(m), int(n), int(k), tile, tiles, waves, eta, t_c, t_mem,
                      tg.family.overhead_s if t0 is None else t0, tg.floor_s, timing, split, t_epi, t_p)


#: the shortest K slice a split-K kernel gives one tile (a few pipeline stages of a 64-deep K step)
MIN_K_SLICE = 256


def split_k_options(tiles: int, units: int, k: int, modelled: bool = True) -> range:
    """K splits s the library may use when the output has fewer tiles than units: 1 .. min(⌊U/T⌋, ⌊k/256⌋), so
    that the idle units take K slices of the same tiles (split-K; stream-K generalises it, osama-2023-streamk)."""
    if not modelled or tiles >= units:
        return range(1, 2)
    return range(1, max(1, min(units // tiles, k // MIN_K_SLICE)) + 1)


def split_k_bytes(m: int, n: int, split: int) -> int:
    """The extra traffic of a K split [B]: s − 1 partial FP32 tiles of C written and read back for the reduction."""
    return (split - 1) * m * n * 4 * 2


def predict(device: specs.Device | str, dtype: str, m: int, n: int, k: int, *, exclude: Iterable[str] = (),
            use_clock: bool = True, timing: str = "queued", memory_bw_Bps: float | None = None,
            exclude_sources: Iterable[str] = (), host_floor: tuple[float, str] | None = None) -> Prediction:
    """Predicted rate of an m×n×k matmul in ``dtype`` on a catalog device, with η calibrated without the devices in
    ``exclude`` and the sources in ``exclude_sources`` (the validations pass the held-out device or source);
    ``host_floor`` as in :func:`target`."""
    tg = target(device, dtype, use_clock=use_clock, memory_bw_Bps=memory_bw_Bps, exclude=exclude,
                exclude_sources=exclude_sources, host_floor=host_floor)
    return predict_target(tg, m, n, k, eta_of(tg, exclude, use_clock, exclude_sources), timing)


def best_target(tg: Target, eta: Eta, max_dim: int = 16384, step: int = 256) -> Prediction:
    """The model's best shape on a grid m, n, k ∈ {step, 2·step, ..., max_dim} (as stas00's mamf-finder searches)."""
    if step < 1 or max_dim < step:
        raise ValueError(f"the search grid needs 1 <= step <= max_dim, got step {step} and max_dim {max_dim}")
    g = np.arange(step, max_dim + 1, step, dtype=np.float64)
    m, n, k = np.meshgrid(g, g, g, indexing="ij")
    b = kernels.DTYPE_BYTES[tg.dtype]
    per_unit = eta.value * tg.clock_ratio * tg.peak_flop_per_s / tg.units
    t_mem = ((m * k + k * n) * b + m * n * output_bytes(tg.dtype)) / tg.achievable_bw_Bps
    best_t = None
    for tm, tn in _candidates(tg.family, tg.dtype):
        waves = np.ceil(np.ceil(m / tm) * np.ceil(n / tn) / tg.units)
        t = np.maximum(waves * (2.0 * tm * tn * k / per_unit + epilogue_s(tg, (tm, tn))), t_mem) \
            + waves * tg.family.tile_latency_for(tg.dtype)
        best_t = t if best_t is None else np.minimum(best_t, t)
    rate = 2.0 * m * n * k / np.maximum(tg.floor_s, tg.family.overhead_s + best_t)
    i = np.unravel_index(int(np.argmax(rate)), rate.shape)
    return predict_target(tg, int(m[i]), int(n[i]), int(k[i]), eta)


def best(device: specs.Device | str, dtype: str, *, max_dim: int = 16384, step: int = 256,
         exclude: Iterable[str] = ()) -> Prediction:
    """The model's best shape and rate for a catalog device (see :func:`best_target`)."""
    tg = target(device, dtype)
    return best_target(tg, eta_of(tg, exclude), max_dim, step)


# ------------------------------------------------------------------------------------------- calibration

@dataclasses.dataclass(frozen=True)
class Measurement:
    """One published best-shape matmul rate on a modelled catalog device (x4lib/data/published.yaml)."""
    id: str
    device: str
    dtype: str
    rate_flop_per_s: float
    shape: tuple[int, int, int] | None
    square_sizes: tuple[int, ...]
    method: str
    search: str
    source: str
    system: str

    @property
    def shape_text(self) -> str:
        if self.shape:
            return "×".join(str(x) for x in self.shape)
        return "best of " + ", ".join(f"{s}³" for s in self.square_sizes)


@functools.lru_cache(maxsize=1)
def measurements() -> tuple[Measurement, ...]:
    """Every published matmul rate on a device the model covers, in a dtype the device has (checked: finite
    positive rate, whole positive shape, a known timing method)."""
    from x4lib.catalog import published
    doc = published.load()
    methods = doc.get("matmul_methods", {})
    fams = constants()
    out = []
    for row in published.measurements(kind="matmul"):
        where = f"{published.PUBLISHED_PATH.name}: {row.get('id', '?')}"
        try:
            fams.family_of(row["device"])
        except NoModelError:
            continue
        v = row.get("value")
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0 or row.get("unit") != "TFLOP/s":
            raise MatmulDataError(f"{where}: value must be a finite rate > 0 in TFLOP/s")
        shape = row.get("shape")
        if shape is not None:
            dims = tuple(shape.get(x) for x in "mnk")
            if not all(isinstance(d, int) and d >= 1 for d in dims):
                raise MatmulDataError(f"{where}: shape must have whole m, n, k >= 1")
        squares = tuple(row.get("square_sizes") or ())
        if shape is None and not squares:
            raise MatmulDataError(f"{where}: needs a shape or the square_sizes it searched")
        method = row.get("method")
        if method not in methods:
            raise MatmulDataError(f"{where}: method {method!r} is not described under matmul_methods")
        try:
            specs.get(row["device"]).peak_field(row["dtype"])
        except specs.UnsupportedDtypeError:
            continue
        out.append(Measurement(row["id"], row["device"], row["dtype"], v * 1e12, dims if shape else None, squares,
                               method, methods[method]["search"], row["source"], row.get("system", "")))
    return tuple(out)


def model_rate(tg: Target, meas: Measurement, eta: Eta) -> tuple[float, Prediction]:
    """The model's rate for what a measurement timed: its shape, or the best of the square sizes it searched."""
    shapes = [meas.shape] if meas.shape else [(s, s, s) for s in meas.square_sizes]
    preds = [predict_target(tg, *s, eta) for s in shapes]
    p = max(preds, key=lambda x: x.rate_flop_per_s)
    return p.rate_flop_per_s, p


def implied_eta(meas: Measurement, use_clock: bool = True) -> float | None:
    """The η with which the model reproduces a published rate (bisection; the rate rises with η), or None when the
    rate is out of the model's reach (above its roof at the largest η)."""
    tg = target(meas.device, meas.dtype, use_clock=use_clock)
    lo, hi = ETA_RANGE

    def rate(e):
        return model_rate(tg, meas, Eta(e, "trial", ()))[0]
    if rate(hi) < meas.rate_flop_per_s or rate(lo) > meas.rate_flop_per_s:
        return None
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rate(mid) < meas.rate_flop_per_s else (lo, mid)
    return 0.5 * (lo + hi)


@functools.lru_cache(maxsize=64)
def device_etas(use_clock: bool = True, precision: str = "other",
                exclude_sources: frozenset = frozenset()) -> Mapping[str, float]:
    """device -> median implied η over its published rows of one precision class (devices whose rows are all out of
    reach are left out), without the rows of ``exclude_sources``. ``use_clock=False`` calibrates a model that
    ignores the sourced sustained clocks."""
    by: dict[str, list[float]] = {}
    for meas in measurements():
        if precision_class(meas.dtype) != precision or meas.source in exclude_sources:
            continue
        e = implied_eta(meas, use_clock)
        if e is not None:
            by.setdefault(meas.device, []).append(e)
    return MappingProxyType({d: statistics.median(v) for d, v in by.items()})


@functools.lru_cache(maxsize=512)
def eta_for(family_id: str, exclude: frozenset = frozenset(), use_clock: bool = True, precision: str = "other",
            exclude_sources: frozenset = frozenset()) -> Eta:
    """The family's η for one precision class (:func:`precision_class`) without the devices in ``exclude`` and the
    sources in ``exclude_sources``: the median over the family's measured devices when the family has at least
    ``min_devices`` of them, else the median over the other families' devices of the class (a class measured
    nowhere uses the ``other`` class); a family with no data anywhere (CPUs) keeps its stated ``uncalibrated_eta``."""
    c = constants()
    fam = c.families[family_id]
    etas = device_etas(use_clock, precision, exclude_sources)
    if not etas and precision != "other":
        return eta_for(family_id, exclude, use_clock, "other", exclude_sources)
    if fam.uncalibrated_eta is not None and not any(d in device_etas(use_clock, p, exclude_sources)
                                                    for p in ("other", "fp8") for d in fam.devices):
        return Eta(fam.uncalibrated_eta, "uncalibrated", ())
    own = [d for d in fam.devices if d in etas]
    if len(own) >= c.min_devices:
        pool, how = [d for d in own if d not in exclude], "family"
    else:
        pool, how = [d for d in etas if d not in fam.devices and d not in exclude], "other families"
    if not pool:
        raise MatmulDataError(f"no published matmul measurement left to calibrate family {family_id}")
    return Eta(statistics.median(etas[d] for d in pool), how, tuple(sorted(pool)), precision)


def eta_of(tg: Target, exclude: Iterable[str] = (), use_clock: bool = True,
           exclude_sources: Iterable[str] = ()) -> Eta:
    """η for a target's family and precision class."""
    return eta_for(tg.family.id, frozenset(exclude), use_clock, precision_class(tg.dtype), frozenset(exclude_sources))


def square_sweep(device: specs.Device | str, dtype: str, sizes: Iterable[int]) -> list[Prediction]:
    """The model for square n³ matmuls (the dashed curves of Lab 00)."""
    tg = target(device, dtype)
    eta = eta_of(tg)
    return [predict_target(tg, n, n, n, eta) for n in sizes]


# ---------------------------------------------------------------------- command line: python -m x4lib matmul-predict

_SHAPE = re.compile(r"^\s*(\d{1,7})\s*[x×X*]\s*(\d{1,7})\s*[x×X*]\s*(\d{1,7})\s*$")


def parse_shape(text: str) -> tuple[int, int, int]:
    """``MxNxK`` (also ``×`` or ``*``) → (m, n, k), each a whole number from 1 to 1,000,000."""
    mt = _SHAPE.match(str(text))
    dims = tuple(int(g) for g in mt.groups()) if mt else ()
    if not mt or not all(1 <= d <= 1_000_000 for d in dims):
        raise ValueError(f"bad shape {text!r}: expected MxNxK with three whole numbers from 1 to 1000000, "
                         f"e.g. 8192x8192x8192")
    return dims


def cli_arguments(p) -> None:
    import argparse

    from x4lib import cli

    def shape(text):
        try:
            return parse_shape(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    shape.__name__ = "shape"
    p.add_argument("--device", required=True, help="catalog id, e.g. h100-sxm")
    p.add_argument("--dtype", default="bf16", help="one of: " + ", ".join(kernels.DTYPE_BYTES))
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--shape", type=shape, help="MxNxK for C[M,N] = A[M,K]·B[K,N], e.g. 8192x8192x8192")
    what.add_argument("--best", action="store_true", help="the model's best shape on a grid (see --max-dim)")
    p.add_argument("--max-dim", type=cli.number("max dimension", 256, 65536, integer=True), default=16384,
                   help="--best searches m, n, k in steps of 256 up to this (default 16384)")
    p.add_argument("--graph", action="store_true",
                   help="the call replayed in a CUDA graph (no host launch; t0 as measured in graphs), "
                        "not queued back to back from the host")
    p.add_argument("--json", action="store_true", help="machine-readable output "
                                                       "(schemas/matmul_predict_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    timing = "graph" if getattr(args, "graph", False) else "queued"
    p = best(args.device, args.dtype, max_dim=args.max_dim) if args.best else predict(args.device, args.dtype,
                                                                                      *args.shape, timing=timing)
    j = p.to_json()
    j["best"] = bool(args.best)
    b = j["basis"]
    cli.emit(j, "\n".join([
        f"{j['device']} {j['dtype']} {j['m']}×{j['n']}×{j['k']}{' (the model’s best shape)' if args.best else ''}",
        f"predicted {j['predicted_tflops']:,.1f} TFLOP/s = {j['efficiency']:.1%} of the dense peak "
        f"{j['peak_tflops']:,.1f} TFLOP/s ({b['peak_field']}); {j['bound']}-bound",
        f"tiles {b['tile'][0]}×{b['tile'][1]}: {b['tiles']} tiles in {b['waves']} wave(s) over {b['units']} "
        f"{b['unit_name']}s, {b['wave_efficiency']:.1%} of the waves used",
        f"clock: {b['clock_basis']}", b["eta_basis"],
        (f"time {b['time_us']:,.1f} µs = overhead {b['overhead_us']:.2f} (in a CUDA graph: no host launch) "
         f"+ pipeline fill {b['t_pipeline_us']:,.1f} + max(compute {b['t_compute_us']:,.1f}, "
         f"memory {b['t_memory_us']:,.1f}) µs" if b["timing"] == "graph" else
         f"time {b['time_us']:,.1f} µs = max(launch floor {b['launch_floor_us']:.1f}, overhead {b['overhead_us']:.1f} "
         f"+ pipeline fill {b['t_pipeline_us']:,.1f} + max(compute {b['t_compute_us']:,.1f}, "
         f"memory {b['t_memory_us']:,.1f})) µs"),
        f"launch floor: {b['launch_floor_basis']}" if b["timing"] != "graph" else f"overhead: {b['overhead_basis']}",
        f"epilogue: {b['epilogue']} ({b['t_epilogue_us']:,.1f} µs of the compute time)",
        "power-limited clock under a long run: " + (f"{b['power_limited_clock_mhz']:,.0f} MHz"
                                                    if b["power_limited_clock_mhz"] else "not modelled here"),
    ]), as_json=args.json)
    return 0
