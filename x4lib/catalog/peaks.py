"""Peak rates from first principles: units × FLOP per clock per unit × clock.

    P [FLOP/s] = U [units] · F [FLOP/(clock·unit)] · f [clock/s]

A unit is whatever the vendor replicates: a CPU core (F = FMA units × SIMD lanes × 2, or a matrix unit such as
AMX), a GPU streaming multiprocessor (F = its Tensor Cores' dense FLOP per clock), a TPU MXU (an n × n systolic
array, F = 2·n²), a Trainium Tensor Engine, a Gaudi MME. A multiply-add counts as 2 FLOP; rates are dense.

Where the factors come from:

- catalog devices: their ``peak_basis`` record (``x4lib/data/devices/*.yaml``), which reproduces the vendor's
  published dense peak (``tests/test_specs.py``); bases built from a vendor's own documents that do *not* give
  the vendor's chip figure within the tolerance live in ``x4lib/data/peaks.yaml``, each with its reason;
- the CPU this runs on (``device="local"``): physical cores (not hardware threads) and flags from /proc/cpuinfo;
  FP64/FP32 FLOP per cycle per core from the microarchitecture table (``x4lib/data/cpu_uarch.json``), and from
  what the flags say the CPU has (its ``isa_rules``: the FMA units and vector width for FP64/FP32, AVX-512 BF16
  and FP16 as twice the FP32 rate, AMX tiles for BF16/INT8/FP16), so a CPU missing from the table still gets the
  peaks its flags imply. A model number that contradicts the flags (some virtual machines report another CPU
  model than the one they run on) is overruled by the flags, and every such choice is returned as a sentence in
  ``assumptions``.

Used in: book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md; ``python -m x4lib peak``.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
from typing import Mapping

from x4lib.harness import device as dev_detect
from x4lib.catalog import specs
from x4lib import paths

DATA_PATH = paths.DATA_DIR / "peaks.yaml"
SCHEMA_PATH = paths.SCHEMA_DIR / "peaks.schema.json"
LOCAL = "local"

#: clock kinds solved from the very vendor figure the peak is compared with: "implied" (f = P / (U F), the vendor
#: prints no clock) and "planned" (the clock a pre-launch figure assumes, back-calculated from that figure). A
#: check at such a clock reproduces the figure it was solved from by construction; only the other dtypes of the
#: same device test anything (the ratios between their FLOP per clock).
SOLVED_CLOCK_KINDS = frozenset({"implied", "planned"})

#: dtypes a CPU's matrix unit (AMX) runs, and the cpuinfo flag that must be present for each
MATRIX_FLAGS = {"bf16": "amx_bf16", "int8": "amx_int8", "fp16": "amx_fp16"}


class PeaksDataError(ValueError):
    """x4lib/data/peaks.yaml breaks a rule (exit code 1: the book's data, not the reader's input)."""
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class PeakBasis:
    """The three factors of a peak for one device and dtype, with where they come from."""
    device: str
    name: str
    dtype: str
    unit_name: str
    units: int
    flop_per_clock_per_unit: float
    clock_hz: float
    clock_kind: str
    source: str
    origin: str          # "catalog", "unreproduced" (x4lib/data/peaks.yaml) or "detected" (this CPU)
    note: str = ""

    @property
    def flop_per_s(self) -> float:
        """P = U · F · f in FLOP/s."""
        return self.units * self.flop_per_clock_per_unit * self.clock_hz

    @property
    def clock_solved(self) -> bool:
        """True when the clock was solved from the vendor's own peak (see SOLVED_CLOCK_KINDS), so a check of
        that peak cannot fail; False for a clock printed by the vendor or a reference, a detected or a given one."""
        return self.clock_kind in SOLVED_CLOCK_KINDS


@dataclasses.dataclass(frozen=True)
class PeakCheck:
    """A rebuilt peak against the catalog's published one. ``ratio`` = computed / catalog."""
    basis: PeakBasis
    catalog_flop_per_s: float | None
    catalog_field: str | None
    tolerance: float
    reason: str | None = None
    assumptions: tuple[str, ...] = ()
    clock_overridden: bool = False

    @property
    def computed_flop_per_s(self) -> float:
        return self.basis.flop_per_s

    @property
    def ratio(self) -> float | None:
        return None if self.catalog_flop_per_s is None else self.computed_flop_per_s / self.catalog_flop_per_s

    @property
    def within_tolerance(self) -> bool | None:
        return None if self.ratio is None else abs(self.ratio - 1) <= self.tolerance

    @property
    def status(self) -> str:
        """``reproduces``, ``flagged`` (outside the tolerance, reason recorded), ``unexplained`` (outside, no
        reason: a data error) or ``no catalog figure``."""
        if self.ratio is None:
            return "no catalog figure"
        if self.within_tolerance:
            return "reproduces"
        return "flagged" if (self.reason or self.clock_overridden) else "unexplained"

    def to_json(self) -> dict:
        """The ``peak --json`` document (display units: MHz, TFLOP/s)."""
        b = self.basis
        return {"device": b.device, "dtype": b.dtype, "units": b.units,
                "flop_per_clock_per_unit": b.flop_per_clock_per_unit, "clock_mhz": b.clock_hz / 1e6,
                "computed_tflops": self.computed_flop_per_s / 1e12,
                "catalog_tflops": None if self.catalog_flop_per_s is None else self.catalog_flop_per_s / 1e12,
                "ratio": self.ratio, "source": b.source, "name": b.name, "unit_name": b.unit_name,
                "clock_kind": b.clock_kind, "origin": b.origin, "catalog_field": self.catalog_field,
                "tolerance": self.tolerance, "status": self.status, "reason": self.reason,
                "assumptions": list(self.assumptions)}


# ------------------------------------------------------------------------------------------------ data

@functools.lru_cache(maxsize=1)
def _data() -> dict:
    raw = specs.read_yaml(DATA_PATH, PeaksDataError)
    try:
        specs.validate_schema(raw, SCHEMA_PATH)
    except specs.SchemaViolation as exc:
        raise PeaksDataError(f"{DATA_PATH.name}: {exc.where}: {exc.message}") from None
    for i, u in enumerate(raw["unreproduced"]):
        if not all(math.isfinite(v) for v in [u["clock_mhz"], *u["flop_per_clock_per_unit"].values()]):
            raise PeaksDataError(f"{DATA_PATH.name}: unreproduced/{i}: non-finite number")
    return raw


def tolerance() -> float:
    """How far (as a fraction) a rebuilt peak may sit from the catalog's before it is flagged."""
    return _data()["tolerance"]


def _key(dtype: str) -> str:
    d = specs.normalize_dtype(dtype)
    return "fp8" if d.startswith("fp8") else d


def _unreproduced(device_id: str) -> Mapping | None:
    return next((u for u in _data()["unreproduced"] if u["device"] == device_id), None)


def basis(device_id: str, dtype: str, clock_hz: float | None = None) -> PeakBasis:
    """The peak's factors for a catalog device and dtype (catalog ``peak_basis`` first, then the unreproduced
    bases of peaks.yaml); ``clock_hz`` replaces the clock (e.g. a sustained or shipping clock).
    Raises UnknownDeviceError for an unknown id, UnsupportedDtypeError when no basis covers the dtype."""
    dev = specs.get(device_id)
    key = _key(dtype)
    for origin, rec in (("catalog", dev.peak_basis), ("unreproduced", _unreproduced(dev.id))):
        if rec and key in rec["flop_per_clock_per_unit"]:
            return PeakBasis(device=dev.id, name=dev.name, dtype=specs.normalize_dtype(dtype),
                             unit_name=rec["unit_name"], units=int(rec["units"]),
                             flop_per_clock_per_unit=float(rec["flop_per_clock_per_unit"][key]),
                             clock_hz=clock_hz if clock_hz is not None else rec["clock_mhz"] * 1e6,
                             clock_kind="given" if clock_hz is not None else rec["clock_kind"],
                             source=rec["source"], origin=origin, note=rec.get("note", rec.get("reason", "")))
    have = sorted({k for rec in (dev.peak_basis, _unreproduced(dev.id)) if rec
                   for k in rec["flop_per_clock_per_unit"]})
    hint = f"; it has one for: {', '.join(have)}" if have else " at all"
    raise specs.UnsupportedDtypeError(f"no first-principles basis recorded for {dev.id} in {key}{hint}")


def check(device_id: str, dtype: str, clock_hz: float | None = None, cpuinfo_text: str | None = None) -> PeakCheck:
    """Rebuild a peak and compare it with the catalog's dense figure for the same dtype.
    ``device_id="local"`` uses the CPU this runs on (``cpuinfo_text`` lets tests pass a recorded one)."""
    if device_id == LOCAL:
        cpu = local_cpu(dev_detect.cpu_info(cpuinfo_text))
        b = cpu.basis(dtype, clock_hz)
        cat_v, cat_field = None, None
        if cpu.catalog_id:
            cat = specs.get(cpu.catalog_id)
            try:
                cat_field = cat.peak_field(dtype)
                cat_v = cat.values[cat_field].si
            except specs.UnsupportedDtypeError:
                cat_field = None
        return PeakCheck(b, cat_v, cat_field, tolerance(), None, cpu.assumptions, clock_hz is not None)
    b = basis(device_id, dtype, clock_hz)
    dev = specs.get(device_id)
    field = dev.peak_field(dtype)
    reason = _unreproduced(dev.id)["reason"] if b.origin == "unreproduced" else None
    return PeakCheck(b, dev.values[field].si, field, tolerance(), reason, (), clock_hz is not None)


def check_catalog() -> list[PeakCheck]:
    """Every (device, dtype) the catalog and peaks.yaml can rebuild, in catalog order."""
    out = []
    for dev in specs.load_catalog().values():
        keys = []
        for rec in (dev.peak_basis, _unreproduced(dev.id)):
            keys += [k for k in (rec or {}).get("flop_per_clock_per_unit", {}) if k not in keys]
        for k in keys:
            d = "fp8_e4m3" if k == "fp8" else k
            try:
                out.append(check(dev.id, d))
            except specs.UnsupportedDtypeError:
                continue
    return out


def implied_clock_hz(peak_flop_per_s: float, units: int, flop_per_clock_per_unit: float) -> float:
    """f = P / (U · F): the clock a published peak implies, in Hz."""
    if peak_flop_per_s <= 0 or units < 1 or flop_per_clock_per_unit <= 0:
        raise ValueError("peak, units and FLOP per clock must be positive")
    return peak_flop_per_s / (units * flop_per_clock_per_unit)


def systolic_flop_per_clock(rows: int, cols: int, macs_per_pe: int = 1) -> int:
    """F = 2 · rows · cols · MACs per PE per clock: a systolic array's FLOP per clock (TPU MXU, Trainium
    Tensor Engine, Gaudi MME)."""
    if rows < 1 or cols < 1 or macs_per_pe < 1:
        raise ValueError("rows, cols and MACs per PE must be >= 1")
    return 2 * rows * cols * macs_per_pe


# ------------------------------------------------------------------------------------------- this CPU

@dataclasses.dataclass(frozen=True)
class LocalCpu:
    """The CPU this runs on, as detected, and what its peak assumes."""
    name: str
    vendor: str | None
    family: int | None
    model: int | None
    cores: int
    logical_cpus: int
    clock_hz: float | None
    flags: tuple[str, ...]
    uarch_id: str | None
    by_model: str | None
    by_flags: str | None
    vector_bits: int
    fma_units: int
    flop_per_cycle_per_core: Mapping[str, float]
    matrix_unit: str | None
    source: str
    catalog_id: str | None
    assumptions: tuple[str, ...]
    #: dtype -> source key where a dtype's rate comes from a flag rule rather than the microarchitecture's entry
    rule_sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: the dtypes whose rate is the matrix unit's (AMX), not the vector FMAs'
    matrix_dtypes: tuple[str, ...] = ()

    def dtypes(self) -> list[str]:
        return list(self.flop_per_cycle_per_core)

    def basis(self, dtype: str, clock_hz: float | None = None) -> PeakBasis:
        """cores × FLOP per cycle per core × clock for ``dtype``."""
        key = _key(dtype)
        if key not in self.flop_per_cycle_per_core:
            raise specs.UnsupportedDtypeError(
                f"no {key} rate recorded for this CPU ({self.uarch_id or 'unknown microarchitecture'}): its flags "
                f"show no unit for {key}; it has: {', '.join(self.dtypes())}")
        clock = clock_hz if clock_hz is not None else self.clock_hz
        if clock is None:
            raise ValueError("this CPU reports no clock: pass one (--clock-mhz)")
        matrix = key in self.matrix_dtypes
        unit = f"core ({self.matrix_unit})" if matrix else (
            f"core ({self.fma_units} FMA unit{'s' if self.fma_units > 1 else ''} × {self.vector_bits}-bit)")
        return PeakBasis(device=LOCAL, name=self.name, dtype=specs.normalize_dtype(dtype), unit_name=unit,
                         units=self.cores, flop_per_clock_per_unit=float(self.flop_per_cycle_per_core[key]),
                         clock_hz=clock, clock_kind="given" if clock_hz is not None else "reported",
                         source=self.rule_sources.get(key, self.source), origin="detected",
                         note="; ".join(self.assumptions))


def _flag_vector_bits(flags: set[str]) -> int | None:
    """The widest FMA vector the OS lets programs use, from the flags (None when no flags are readable)."""
    if not flags:
        return None
    if "avx512f" in flags:
        return 512
    if {"avx2", "fma"} <= flags or "avx" in flags:
        return 256
    return 128


def local_cpu(info: Mapping | None = None) -> LocalCpu:
    """Detect this CPU's peak factors from ``device.cpu_info()`` (or a recorded ``info``).

    Order of trust: the microarchitecture the model number names; overruled by one whose ``signature_flags``
    the CPU has (the flags describe the units programs can use); the vector width capped by what the flags
    expose. Each departure from the plain table look-up is an entry of ``assumptions``."""
    info = dict(info if info is not None else dev_detect.cpu_info())
    flags = set(info.get("flags") or ())
    table = dev_detect._load("cpu_uarch.json")["microarchitectures"]
    rules = dev_detect._load("cpu_uarch.json")["isa_rules"]
    by_model = dev_detect.match_cpu_uarch(info)
    vendor = info.get("vendor_id")
    candidates = [a for a in table if a.get("signature_flags") and set(a["signature_flags"]) <= flags
                  and a.get("match", {}).get("vendor_id") == vendor]
    by_flags = max(candidates, key=lambda a: len(a["signature_flags"]), default=None)
    notes: list[str] = []
    fam_model = f"family {info.get('family')} model {info.get('model')}"
    if by_flags and (by_model is None or by_model["id"] != by_flags["id"]):
        chosen = by_flags
        sig = ", ".join(by_flags["signature_flags"])
        if by_model:
            notes.append(f"the model number ({fam_model}) names {by_model['id']}, but the flags {sig} exist only on "
                         f"{by_flags['id']} or later cores, so {by_flags['id']} is assumed (a virtual machine may "
                         f"report a CPU model other than the one it runs on)")
        else:
            notes.append(f"no microarchitecture in the table matches {fam_model}; the flags {sig} identify "
                         f"{by_flags['id']} or a later core with the same units, which is assumed")
    else:
        chosen = by_model
    flag_bits = _flag_vector_bits(flags)
    if chosen:
        fma, bits = int(chosen["fma_units_per_core"]), int(chosen["vector_bits"])
        per_cycle = dict(chosen["flop_per_cycle_per_core"])
        if flag_bits is not None and flag_bits < bits:
            notes.append(f"{chosen['id']} has {bits}-bit FMA units but the operating system exposes only "
                         f"{flag_bits}-bit vectors (no avx512f flag), so {flag_bits}-bit FMAs are assumed")
            bits = flag_bits
            per_cycle = {"fp64": fma * bits // 64 * 2, "fp32": fma * bits // 32 * 2}
        source = chosen["source"]
        matrix = chosen.get("matrix_flop_per_cycle_per_core", {})
        matrix_name = chosen.get("matrix_unit") or rules["matrix"]["unit"]
        if chosen.get("fma_units_source"):
            notes.append(f"{fma} FMA units per core as Intel lists for the {chosen['id']} parts with "
                         f"{', '.join(chosen.get('signature_flags', []))} (a part with one unit would have half)")
    else:
        bits = flag_bits or 128
        fma = int(rules["vector_fma"]["default_fma_units"])
        per_cycle = {"fp64": fma * bits // 64 * 2, "fp32": fma * bits // 32 * 2}
        source, matrix, matrix_name = rules["vector_fma"]["source"], {}, rules["matrix"]["unit"]
        notes.append(f"no microarchitecture in the table matches this CPU ({fam_model}); {fma} FMA units of the widest "
                     f"vector the flags show ({bits}-bit) are assumed (one-unit parts would have half)")
    rule_sources: dict[str, str] = {}
    matrix_dtypes: list[str] = []
    for r in rules["vector_dtypes"]:          # AVX-512 BF16 / FP16: a multiple of the FP32 FMA rate
        if r["flag"] in flags and r["dtype"] not in per_cycle:
            per_cycle[r["dtype"]] = r["times_fp32"] * per_cycle["fp32"]
            rule_sources[r["dtype"]] = r["source"]
            notes.append(f"{r['dtype']}: the {r['flag']} flag, {r['times_fp32']} × the FP32 FMA rate")
    for d, flag in MATRIX_FLAGS.items():       # AMX tiles: the table's figure, else the flag rule's
        if flag not in flags:
            continue
        if d in matrix:
            per_cycle[d] = matrix[d]
            rule_sources.pop(d, None)
        elif d in rules["matrix"]["flop_per_cycle_per_core"]:
            per_cycle[d] = rules["matrix"]["flop_per_cycle_per_core"][d]
            rule_sources[d] = rules["matrix"]["source"]
            notes.append(f"{d}: the {flag} flag, an AMX tile unit at {per_cycle[d]:,} FLOP per cycle per core")
        else:
            continue
        matrix_dtypes.append(d)
    matrix_unit = matrix_name if matrix_dtypes else None
    cores = int(info.get("physical_cores") or info.get("logical_cpus") or 1)
    if "hypervisor" in flags:
        notes.append(f"this is a virtual machine: its {cores} cores are counted as the physical cores it reports "
                     f"(if they were hyperthreads sharing cores the peak would be lower), and the "
                     f"{info.get('mhz_reported') or 0:.0f} MHz it reports is the host's nominal clock, not "
                     f"necessarily the clock it sustains")
    elif info.get("mhz_reported"):
        notes.append(f"clock: the {info['mhz_reported']:.0f} MHz /proc/cpuinfo reports at the moment of reading")
    cat = next((r["catalog_id"] for r in dev_detect._load("device_match.json")["cpu_rules"]
                if re.search(r["name_regex"], info.get("model_name") or "")), None)
    mhz = info.get("mhz_reported")
    return LocalCpu(name=info.get("model_name") or "unknown CPU", vendor=vendor, family=info.get("family"),
                    model=info.get("model"), cores=cores, logical_cpus=int(info.get("logical_cpus") or cores),
                    clock_hz=mhz * 1e6 if mhz else None, flags=tuple(sorted(flags)),
                    uarch_id=chosen["id"] if chosen else None, by_model=by_model["id"] if by_model else None,
                    by_flags=by_flags["id"] if by_flags else None, vector_bits=bits, fma_units=fma,
                    flop_per_cycle_per_core=per_cycle, matrix_unit=matrix_unit, source=source, catalog_id=cat,
                    assumptions=tuple(notes), rule_sources=rule_sources, matrix_dtypes=tuple(matrix_dtypes))


# --------------------------------------------------------------------- command line: python -m x4lib peak

def cli_arguments(p) -> None:
    from x4lib import cli
    p.add_argument("--device", required=True, help="catalog id (e.g. h100-sxm, tpu-v5p, gaudi3) or 'local' "
                                                    "for the CPU this runs on")
    p.add_argument("--dtype", required=True, help="one of: " + ", ".join(specs.DTYPE_BYTES))
    p.add_argument("--clock-mhz", type=cli.number("MHz", 0, 1e5, low_open=True),
                   help="replace the clock of the basis (e.g. a sustained or shipping clock)")
    p.add_argument("--json", action="store_true", help="machine-readable output (schemas/peak_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    clock = args.clock_mhz * 1e6 if args.clock_mhz is not None else None
    if args.device != LOCAL:
        specs.get(args.device)  # an unknown id is a usage error before anything else
    specs.normalize_dtype(args.dtype)
    chk = check(args.device, args.dtype, clock)
    doc = chk.to_json()
    b = chk.basis
    lines = [f"{b.name} ({b.device}), {b.dtype}, dense:",
             f"  {b.units} × {b.unit_name}  ×  {b.flop_per_clock_per_unit:,.0f} FLOP/clock  ×  "
             f"{b.clock_hz / 1e6:,.0f} MHz ({b.clock_kind})  =  {chk.computed_flop_per_s / 1e12:,.4g} TFLOP/s"]
    if chk.ratio is not None:
        lines.append(f"  catalog: {chk.catalog_flop_per_s / 1e12:,.4g} TFLOP/s ({chk.catalog_field}); "
                     f"computed / catalog = {chk.ratio:.4f} → {chk.status}")
    else:
        lines.append("  no catalog figure to compare with")
    if chk.reason:
        lines.append(f"  why: {chk.reason}")
    lines += [f"  assumed: {a}" for a in chk.assumptions]
    lines.append(f"  source: {b.source} (book/references.bib)")
    cli.emit(doc, "\n".join(lines), as_json=args.json)
    if chk.status == "unexplained":
        raise CheckFailedPeak(f"{b.device} {b.dtype}: computed peak is {chk.ratio:.3f} × the catalog's, outside "
                              f"±{100 * chk.tolerance:.0f} %, and no reason is recorded in x4lib/data/peaks.yaml")
    return 0


class CheckFailedPeak(RuntimeError):
    """A rebuilt peak misses the catalog's with no recorded reason (exit 1)."""
    exit_code = 1
