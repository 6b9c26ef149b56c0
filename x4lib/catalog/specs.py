"""The spec catalog: one YAML record per SKU under ``x4lib/data/devices/``.

Every value carries its unit, its source (a key of ``book/references.bib``), the date the source was
read and, where it applies, whether it is a dense or sparse rate and whether a link figure is per
direction. Loading validates all of it (JSON Schema first, then the rules a schema cannot say) and
converts to SI for computation. Display units stay as the vendor prints them, for tables and the CLI.

Used in: book/00-motivation.md and every chapter that quotes a spec.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import functools
import json
import math
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import yaml

from x4lib.compute.kernels import DTYPE_BYTES
from x4lib import paths

DATA_DIR = paths.DATA_DIR
DEVICES_DIR = DATA_DIR / "devices"
SCHEMA_PATH = paths.SCHEMA_DIR / "device.schema.json"

#: display unit -> factor to SI (FLOP/s, op/s, B, B/s, W, 1, Hz, transfers/s)
UNIT_TO_SI: Mapping[str, float] = MappingProxyType({
    "TFLOP/s": 1e12, "TOP/s": 1e12, "GB": 1e9, "MB": 1e6, "GB/s": 1e9, "W": 1.0,
    "count": 1.0, "GHz": 1e9, "MHz": 1e6, "MT/s": 1e6,
})

_TENSOR_PRECISIONS = ("fp4", "fp8", "fp16", "bf16", "tf32")
#: field -> the unit it must be stored in
FIELD_UNITS: Mapping[str, str] = MappingProxyType({
    **{f"{p}_{s}_tflops": "TFLOP/s" for p in _TENSOR_PRECISIONS for s in ("dense", "sparse")},
    "int8_dense_tops": "TOP/s", "int8_sparse_tops": "TOP/s",
    "fp32_tflops": "TFLOP/s", "fp64_tflops": "TFLOP/s",
    "fp32_matrix_tflops": "TFLOP/s", "fp64_tensor_tflops": "TFLOP/s",
    "memory_gb": "GB", "memory_bw_gb_s": "GB/s", "tdp_w": "W",
    "scaleup_bw_gb_s_per_direction": "GB/s", "scaleout_bw_gb_s_per_direction": "GB/s",
    "sram_mb": "MB", "cores": "count", "threads": "count", "memory_channels": "count",
    "base_clock_ghz": "GHz", "max_turbo_ghz": "GHz", "boost_clock_ghz": "GHz",
    "dram_mt_s": "MT/s", "server_power_w_per_gpu": "W",
})
LINK_FIELDS = ("scaleup_bw_gb_s_per_direction", "scaleout_bw_gb_s_per_direction")

#: dtype -> catalog fields that may bound a dense matmul in it (the largest present is used)
DTYPE_PEAK_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "fp64": ("fp64_tensor_tflops", "fp64_tflops"),
    "fp32": ("fp32_matrix_tflops", "fp32_tflops"),
    "tf32": ("tf32_dense_tflops",),
    "bf16": ("bf16_dense_tflops",),
    "fp16": ("fp16_dense_tflops",),
    "fp8_e4m3": ("fp8_dense_tflops",),
    "fp8_e5m2": ("fp8_dense_tflops",),
    "int8": ("int8_dense_tops",),
    "fp4": ("fp4_dense_tflops",),
})
DTYPE_ALIASES = MappingProxyType({"fp8": "fp8_e4m3", "float32": "fp32", "bfloat16": "bf16",
                                  "float16": "fp16", "half": "fp16"})


class CatalogError(ValueError):
    """A catalog record breaks a rule; the message names the file, the field and the fix. A broken data file is
    the book's fault, not the user's input: exit code 1."""
    exit_code = 1


class UnknownDeviceError(KeyError):
    """No catalog record has this id; the message lists the known ids and the closest match."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class UnsupportedDtypeError(ValueError):
    """The device has no published peak for this dtype."""


@dataclasses.dataclass(frozen=True)
class Value:
    """One catalog value, in the unit the source prints, with its provenance."""
    field: str
    value: float
    unit: str
    source: str
    accessed: str
    note: str = ""
    sparsity: str | None = None
    direction: str | None = None
    conflicts: tuple = ()     # other sourced figures for the same quantity (mappings: value, unit, source, ...)

    @property
    def si(self) -> float:
        """The value in SI base units (FLOP/s, B, B/s, W, Hz...)."""
        return self.value * UNIT_TO_SI[self.unit]

    def conflicts_si(self) -> list[tuple[float, str, str]]:
        """The other sourced figures as (SI value, source key, the words the source prints)."""
        return [(c["value"] * UNIT_TO_SI[c["unit"]], c["source"], c["as_printed"]) for c in self.conflicts]

    def to_json(self) -> dict:
        out = {"value": self.value, "unit": self.unit, "source": self.source,
               "accessed": self.accessed}
        for key in ("sparsity", "direction", "note"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.conflicts:
            out["conflicts"] = [dict(c) for c in self.conflicts]
        return out


@dataclasses.dataclass(frozen=True, eq=False)
class Device:
    """One catalog record. ``values`` maps field name -> :class:`Value`. Compared and hashed by identity (the catalog
    holds one object per id; a hypothetical device built with ``dataclasses.replace`` is a device of its own), so a
    model can cache on it."""
    id: str
    name: str
    vendor: str
    kind: str
    scope: str
    values: Mapping[str, Value]
    released: int | None = None
    unpublished: tuple[Mapping[str, str], ...] = ()
    peak_basis: Mapping | None = None
    status: str = "shipping"  # "shipping" or "announced" (the vendor's figures are preliminary)
    status_source: str | None = None

    def get(self, field: str) -> Value | None:
        return self.values.get(field)

    def si(self, field: str) -> float:
        """A field in SI units; raises KeyError naming the device if it is not published."""
        if field not in self.values:
            raise KeyError(f"{self.id} has no published {field}")
        return self.values[field].si

    def dtypes(self) -> list[str]:
        """The dtypes with a published dense peak on this device, in vocabulary order."""
        return [d for d, fields in DTYPE_PEAK_FIELDS.items() if any(f in self.values for f in fields)]

    def peak_field(self, dtype: str) -> str:
        """The catalog field that bounds a dense matmul in ``dtype`` (largest of the candidates)."""
        dtype = normalize_dtype(dtype)
        present = [f for f in DTYPE_PEAK_FIELDS[dtype] if f in self.values]
        if not present:
            raise UnsupportedDtypeError(
                f"device {self.id} has no published {dtype} peak; choose one of: {', '.join(self.dtypes())}")
        return max(present, key=lambda f: self.values[f].value)

    def peak_flop_per_s(self, dtype: str) -> float:
        """Dense peak rate for ``dtype`` in FLOP/s (op/s for int8)."""
        return self.values[self.peak_field(dtype)].si

    @property
    def memory_bw_Bps(self) -> float:
        return self.si("memory_bw_gb_s")

    @property
    def tdp_W(self) -> float:
        return self.si("tdp_w")

    def to_json(self) -> dict:
        out = {"id": self.id, "name": self.name, "vendor": self.vendor, "kind": self.kind,
               "scope": self.scope, "status": self.status,
               "values": {f: v.to_json() for f, v in self.values.items()}}
        if self.unpublished:
            out["unpublished"] = [dict(u) for u in self.unpublished]
        if self.peak_basis:
            out["peak_basis"] = dict(self.peak_basis)
        return out


def normalize_dtype(dtype: str) -> str:
    """Map aliases (``fp8``, ``bfloat16``...) onto the book's dtype vocabulary; reject the rest."""
    d = DTYPE_ALIASES.get(dtype.lower(), dtype.lower())
    if d not in DTYPE_BYTES:
        raise UnsupportedDtypeError(f"unknown dtype {dtype!r}; use one of: {', '.join(DTYPE_BYTES)}")
    return d


def _schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def plain(obj):
    """YAML turns 2026-11-23 into a date: keep dates as ISO strings."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    if isinstance(obj, (_dt.date, _dt.datetime)):
        return obj.isoformat()
    return obj


class SchemaViolation(ValueError):
    """A document breaks its JSON Schema: ``where`` (JSON Pointer segments joined by /) and ``message``."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where, self.message = where, message


_SCHEMA_NOTE_GIVEN = False


def validate_schema(doc, schema) -> None:
    """Check ``doc`` against ``schema`` (a dict or a schema file's path) with jsonschema, raising
    :class:`SchemaViolation`. Where jsonschema is not installed (a bare GPU pod with only torch, numpy and
    PyYAML) the check is skipped with one note on stderr per process: the book's own tests validate every data
    file, so the pod only loses the check of files edited there."""
    global _SCHEMA_NOTE_GIVEN
    try:
        import jsonschema
    except ImportError:
        if not _SCHEMA_NOTE_GIVEN:
            _SCHEMA_NOTE_GIVEN = True
            import sys
            print("x4lib: note: jsonschema is not installed, so data files are not checked against their schemas "
                  "(pip install jsonschema to check them)", file=sys.stderr)
        return
    if not isinstance(schema, dict):
        schema = json.loads(Path(schema).read_text(encoding="utf-8"))
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as exc:
        raise SchemaViolation("/".join(str(p) for p in exc.absolute_path) or "(top level)", exc.message) from None


MAX_YAML_ALIASES = 8            # the book's data files use none; nine nested levels of them is a memory bomb
MAX_DATA_FILE_B = 4 * 2**20     # the largest data file of the book is under 100 KB


class DataFileError(ValueError):
    """A data file of the book is broken (not YAML, an alias bomb, a non-finite number, a schema broken): the
    message names the file and the field. The book's fault, not the user's input: exit code 1."""
    exit_code = 1


class _BoundedLoader(yaml.SafeLoader):
    """A safe loader that refuses more than :data:`MAX_YAML_ALIASES` aliases (``*name``) in one document."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.events.AliasEvent):
            self._aliases = getattr(self, "_aliases", 0) + 1
            if self._aliases > MAX_YAML_ALIASES:
                event = self.peek_event()
                raise yaml.YAMLError(f"more than {MAX_YAML_ALIASES} aliases (*{event.anchor}, line "
                                     f"{event.start_mark.line + 1}); write the values out")
        return super().compose_node(parent, index)


def finite_walk(doc, origin: str, error: type[Exception] = DataFileError) -> None:
    """Raise ``error("<origin>: <field path>: nan is not a finite number")`` on the first non-finite number."""
    def walk(obj, where):
        if isinstance(obj, float) and not math.isfinite(obj):
            raise error(f"{origin}: {where or '(top level)'}: {obj} is not a finite number")
        for k, v in (obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()):
            walk(v, f"{where}/{k}" if where else str(k))
    walk(doc, "")


def read_yaml(path: Path, error: type[Exception] = DataFileError):
    """The one reader of the book's YAML data files: UTF-8 whatever the locale, at most
    :data:`MAX_DATA_FILE_B`, safe tags only, at most :data:`MAX_YAML_ALIASES` aliases, every number finite; dates
    stay ISO strings. Any problem raises ``error`` naming the file (and the field)."""
    path = Path(path)
    name = path.name
    try:
        if path.stat().st_size > MAX_DATA_FILE_B:
            raise error(f"{name}: larger than {MAX_DATA_FILE_B // 2**20} MiB; not a data file of the book")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise error(f"{name}: cannot be read: {exc.strerror or exc}") from None
    try:
        doc = plain(yaml.load(text, Loader=_BoundedLoader))  # noqa: S506 — a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise error(f"{name}: cannot be read as YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise error(f"{name}: nested too deeply") from None
    finite_walk(doc, name, error)
    return doc


def check_document(doc, schema_path: Path, origin: str, error: type[Exception] = ValueError) -> None:
    """Refuse a parsed data file that holds a non-finite number or breaks its JSON Schema: raise ``error`` with
    ``"<origin>: <path>: <what>"`` (path as JSON Pointer segments, e.g. ``overheads/gpu_kernel_startup/value``).
    Finite numbers are checked first, since NaN slips past a schema's ``minimum``."""
    finite_walk(doc, origin, error)
    try:
        validate_schema(doc, schema_path)
    except SchemaViolation as exc:
        raise error(f"{origin}: {exc.where}: {exc.message}") from None


def load_document(path: Path, schema_path: Path, error: type[Exception] = ValueError):
    """Read a YAML data file of the book and :func:`check_document` it; ``error`` names the file on any problem
    (unreadable, not UTF-8, not YAML, a non-finite number, the schema broken). Dates stay ISO strings."""
    doc = read_yaml(path, error)
    check_document(doc, schema_path, Path(path).name, error)
    return doc


def parse_device(record: dict, origin: str = "<record>") -> Device:
    """Validate one record (schema + catalog rules) and build a :class:`Device`.

    Raises :class:`CatalogError` with a message naming ``origin``, the field and what to do.
    """
    record = plain(record)
    try:
        validate_schema(record, _schema())
    except SchemaViolation as exc:
        raise CatalogError(f"{origin}: {exc.where}: {exc.message}") from None
    dev_id = record["id"]
    values = {}
    for field, raw in record["values"].items():
        where = f"{origin}: {dev_id}.{field}"
        if field not in FIELD_UNITS:
            raise CatalogError(f"{where}: unknown field; known fields: {', '.join(FIELD_UNITS)}")
        if not math.isfinite(raw["value"]):
            raise CatalogError(f"{where}: {raw['value']} is not a finite number")
        if raw["unit"] != FIELD_UNITS[field]:
            raise CatalogError(f"{where}: unit {raw['unit']!r} is wrong; this field is stored in "
                               f"{FIELD_UNITS[field]!r}")
        kind = "dense" if "_dense_" in field else "sparse" if "_sparse_" in field else None
        if kind and raw.get("sparsity") != kind:
            raise CatalogError(f"{where}: marked sparsity {raw.get('sparsity')!r} in a {kind} field; "
                               f"store a sparse rate under the *_sparse_* field and a dense one under *_dense_*")
        if field in LINK_FIELDS and raw.get("direction") != "per_direction":
            raise CatalogError(f"{where}: link bandwidth must be stored per direction "
                               f"(direction: per_direction); halve a bidirectional total and say so in the note")
        for j, c in enumerate(raw.get("conflicts", [])):
            if c["unit"] != FIELD_UNITS[field] or not math.isfinite(c["value"]):
                raise CatalogError(f"{where}: conflicts/{j}: give a finite value in the field's unit "
                                   f"{FIELD_UNITS[field]!r}")
        values[field] = Value(field=field, **{k: raw[k] for k in raw if k in
                                              ("value", "unit", "source", "accessed", "note",
                                               "sparsity", "direction")},
                              conflicts=tuple(MappingProxyType(dict(c)) for c in raw.get("conflicts", [])))
    status = record.get("status", "shipping")
    if status == "announced" and "released" in record:
        raise CatalogError(f"{origin}: {dev_id}: an announced part has no 'released' year; drop one of the two")
    return Device(id=dev_id, name=record["name"], vendor=record["vendor"], kind=record["kind"],
                  scope=record["scope"], values=MappingProxyType(values),
                  released=record.get("released"), status=status, status_source=record.get("status_source"),
                  unpublished=tuple(MappingProxyType(u) for u in record.get("unpublished", [])),
                  peak_basis=MappingProxyType(record["peak_basis"]) if "peak_basis" in record else None)


@functools.lru_cache(maxsize=4)
def load_catalog(directory: Path = DEVICES_DIR) -> Mapping[str, Device]:
    """Load and validate every ``<id>.yaml`` under ``directory``; returns id -> Device (read-only)."""
    devices = {}
    for path in sorted(Path(directory).glob("*.yaml")):
        record = read_yaml(path, CatalogError)
        if not isinstance(record, dict):
            raise CatalogError(f"{path.name}: expected a mapping with id, name, vendor, kind, scope, values")
        dev = parse_device(record, origin=path.name)
        if dev.id != path.stem:
            raise CatalogError(f"{path.name}: id {dev.id!r} must equal the file name {path.stem!r}")
        devices[dev.id] = dev
    if not devices:
        raise CatalogError(f"no device records found in {directory}")
    return MappingProxyType(devices)


def ids() -> list[str]:
    return list(load_catalog())


def get(device_id: str) -> Device:
    """The catalog record ``device_id``; an unknown id raises :class:`UnknownDeviceError`
    listing the known ids and the closest match."""
    catalog = load_catalog()
    if device_id in catalog:
        return catalog[device_id]
    close = difflib.get_close_matches(device_id.lower(), list(catalog), n=1, cutoff=0.3)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownDeviceError(f"unknown device {device_id!r}{hint}; known ids: {', '.join(catalog)}")


def sources_used(catalog: Mapping[str, Device] | None = None) -> dict[str, set[str]]:
    """source key -> the ``device.field`` entries that cite it (peak_basis included)."""
    used: dict[str, set[str]] = {}
    for dev in (catalog or load_catalog()).values():
        for v in dev.values.values():
            used.setdefault(v.source, set()).add(f"{dev.id}.{v.field}")
            for c in v.conflicts:
                used.setdefault(c["source"], set()).add(f"{dev.id}.{v.field}.conflicts")
        if dev.peak_basis:
            used.setdefault(dev.peak_basis["source"], set()).add(f"{dev.id}.peak_basis")
    return used


def missing_sources(bib_path: Path | None = None, catalog: Mapping[str, Device] | None = None) -> dict[str, set[str]]:
    """Source keys cited by the catalog but absent from ``bib_path`` (empty when all resolve)."""
    from x4lib.book import bib
    keys = bib.keys(Path(bib_path)) if bib_path else bib.book_keys()
    return {k: v for k, v in sources_used(catalog).items() if k not in keys}


def peak_from_basis(device: Device, dtype: str, clock_hz: float | None = None) -> float:
    """units × FLOP/clock/unit × clock, in FLOP/s: the vendor's peak rebuilt from its assumptions,
    or the peak at another (e.g. measured sustained) clock. Raises KeyError if no basis is recorded."""
    basis = device.peak_basis
    dtype = normalize_dtype(dtype)
    key = "fp8" if dtype.startswith("fp8") else dtype
    if not basis or key not in basis["flop_per_clock_per_unit"]:
        raise KeyError(f"{device.id} records no peak basis for {dtype}")
    clock = clock_hz if clock_hz is not None else basis["clock_mhz"] * 1e6
    return basis["units"] * basis["flop_per_clock_per_unit"][key] * clock


SUMMARY_FIELDS = (("bf16_dense_tflops", "BF16 dense (TFLOP/s)"), ("fp8_dense_tflops", "FP8 dense (TFLOP/s)"),
                  ("memory_gb", "memory (GB, vendor)"), ("memory_bw_gb_s", "memory bw (GB/s)"),
                  ("tdp_w", "max power (W)"))


def summary_rows(device_ids: list[str] | None = None) -> list[dict]:
    """One row per device with its headline figures in display units (None where unpublished)."""
    devs = [get(i) for i in device_ids] if device_ids else list(load_catalog().values())
    return [{"id": d.id, "name": d.name,
             **{label: (d.values[f].value if f in d.values else None) for f, label in SUMMARY_FIELDS}}
            for d in devs]


# --------------------------------------------------------------------------- command line: python -m x4lib specs

def cli_arguments(p) -> None:
    p.add_argument("id", nargs="?", help="catalog id, e.g. h100-sxm (omit to list the catalog)")
    p.add_argument("--json", action="store_true", help="machine-readable output (schemas/specs_output.schema.json)")


def _text_table(rows: list[dict]) -> str:
    import pandas as pd
    return pd.DataFrame(rows).to_string(index=False, na_rep="—")


def cli_main(args) -> int:
    from x4lib import cli
    if args.id:
        dev = get(args.id)
        if args.json:
            cli.emit([dev.to_json()], as_json=True)
            return 0
        rows = [{"field": f, "value": v.value, "unit": v.unit,
                 "dense/sparse · direction": v.sparsity or v.direction or "", "source": v.source,
                 "accessed": v.accessed} for f, v in dev.values.items()]
        tail = "".join(f"\nnot published: {u['field']} ({u['why']})" for u in dev.unpublished)
        cli.emit(text=f"{dev.name} ({dev.id}, {dev.vendor}, {dev.kind})\nscope: {dev.scope}\n"
                      + _text_table(rows) + tail)
        return 0
    catalog = load_catalog()
    if args.json:
        cli.emit([d.to_json() for d in catalog.values()], as_json=True)
    else:
        cli.emit(text=_text_table(summary_rows()) + "\n(dense rates; GB = 1e9 B; see `specs ID` for every field "
                                                     "and its source)")
    return 0
