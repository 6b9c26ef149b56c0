"""The matmul model's data (``x4lib/data/matmul.yaml``, each value sourced): architecture families with their
devices, parallel units, tiles and sourced clocks, the timing APIs and their fallback floors, loaded and validated
once. The model that uses them is :mod:`x4lib.compute.matmul`. Used in: book/lab-00-roofline.md, book/00-motivation.md.
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from x4lib import paths
from x4lib.catalog import specs

MATMUL_PATH = specs.DATA_DIR / "matmul.yaml"
SCHEMA_PATH = paths.SCHEMA_DIR / "matmul.schema.json"
UNIT_TO_S = {"us": 1e-6}


class MatmulDataError(ValueError):
    """matmul.yaml (or a matmul row of published.yaml) breaks a rule; the message names the file and field.
    A broken data file is the book's fault: exit code 1."""
    exit_code = 1


class NoModelError(ValueError):
    """The device is in the catalog but no family of the matmul model covers it (exit 2)."""


# ----------------------------------------------------------------------------------------------- the data

@dataclasses.dataclass(frozen=True)
class Clock:
    """A sourced clock for (device, dtype): the clock sustained (or shipped) against the clock the peak assumes."""
    device: str
    dtype: str
    sustained_hz: float
    kind: str
    source: str
    note: str


@dataclasses.dataclass(frozen=True)
class Family:
    id: str
    name: str
    unit_name: str
    overhead_s: float
    overhead_source: str
    launch_floor_s: float
    devices: Mapping[str, Mapping]
    tiles: Mapping[str, tuple[tuple[int, int], ...]]
    tile_sources: Mapping[str, str]
    tiles_modelled: bool
    clocks: tuple[Clock, ...]
    uncalibrated_eta: float | None
    tile_latency_s: float = 0.0
    unmodelled_tiles: frozenset = frozenset()

    def tiles_for(self, dtype: str) -> tuple[tuple[int, int], ...]:
        return self.tiles.get(dtype, self.tiles["default"])

    def tile_latency_for(self, dtype: str) -> float:
        """The pipeline fill and drain each wave of tiles pays [s]; 0 where the dtype's tiles are not modelled."""
        key = dtype if dtype in self.tiles else "default"
        return 0.0 if key in self.unmodelled_tiles else self.tile_latency_s


@dataclasses.dataclass(frozen=True)
class Api:
    """A timing API (``torch.matmul``, ``torch._scaled_mm``): the dtypes it times and the fallback floor [s] where no
    sweep measured it."""
    name: str
    dtypes: tuple[str, ...]
    fallback_s: float
    fallback_source: str
    families: tuple[str, ...] = ()
    serial_epilogue_families: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Constants:
    model_version: int
    min_devices: int
    families: Mapping[str, Family]
    apis: Mapping[str, Api] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    power_families: tuple[str, ...] = ()

    def api_for(self, dtype: str) -> Api | None:
        return next((a for a in self.apis.values() if dtype in a.dtypes), None)

    def family_of(self, device_id: str) -> Family:
        for fam in self.families.values():
            if device_id in fam.devices:
                return fam
        covered = sorted(d for f in self.families.values() for d in f.devices)
        raise NoModelError(f"no matmul model for device {device_id!r} (no architecture family in "
                           f"{MATMUL_PATH.name} covers it); modelled devices: {', '.join(covered)}")


def _validate(doc: dict, origin: str) -> None:
    specs.check_document(doc, SCHEMA_PATH, origin, MatmulDataError)


@functools.lru_cache(maxsize=2)
def constants(path: Path = MATMUL_PATH) -> Constants:
    """Load and validate the model's data file (schema, finite numbers, catalog ids, overhead names)."""
    origin = Path(path).name
    doc = specs.read_yaml(path, MatmulDataError)
    if not isinstance(doc, dict):
        raise MatmulDataError(f"{origin}: expected a mapping with schema_version, calibration, overheads, families")
    _validate(doc, origin)
    catalog = specs.load_catalog()
    families, seen = {}, {}
    for fid, raw in doc["families"].items():
        where = f"{origin}: families/{fid}"
        ov = doc["overheads"].get(raw["overhead"])
        floor = doc["overheads"].get(raw.get("launch_floor", raw["overhead"]))
        fill = doc["overheads"].get(raw.get("tile_latency"))
        for key in ("overhead", "launch_floor", "tile_latency"):
            if key in raw and raw[key] not in doc["overheads"]:
                raise MatmulDataError(f"{where}/{key}: {raw[key]!r} is not one of: {', '.join(doc['overheads'])}")
        for dev_id, u in raw["devices"].items():
            if dev_id not in catalog:
                raise MatmulDataError(f"{where}/devices/{dev_id}: not a catalog id")
            if dev_id in seen:
                raise MatmulDataError(f"{where}/devices/{dev_id}: already in family {seen[dev_id]}")
            seen[dev_id] = fid
            if u["units"] == "catalog" and not catalog[dev_id].peak_basis:
                raise MatmulDataError(f"{where}/devices/{dev_id}/units: 'catalog', but the catalog record has no "
                                      f"peak_basis; give the count with its source")
        clocks = []
        for i, c in enumerate(raw.get("clocks", [])):
            if c["device"] not in raw["devices"]:
                raise MatmulDataError(f"{where}/clocks/{i}/device: {c['device']!r} is not a device of this family")
            clocks += [Clock(c["device"], d, c["sustained_mhz"] * 1e6, c.get("kind", "sustained"), c["source"],
                             c["note"]) for d in c["dtypes"]]
        tiles = {k: tuple(tuple(t) for t in v["tiles"]) for k, v in raw["tiles"].items()}
        families[fid] = Family(
            id=fid, name=raw["name"], unit_name=raw["unit_name"],
            overhead_s=ov["value"] * UNIT_TO_S[ov["unit"]], overhead_source=ov["source"],
            launch_floor_s=floor["value"] * UNIT_TO_S[floor["unit"]] if "launch_floor" in raw else 0.0,
            devices=MappingProxyType({k: MappingProxyType(v) for k, v in raw["devices"].items()}),
            tiles=MappingProxyType(tiles),
            tile_sources=MappingProxyType({k: v.get("source", "not modelled") for k, v in raw["tiles"].items()}),
            tiles_modelled=raw["tiles"]["default"].get("modelled", True),
            clocks=tuple(clocks), uncalibrated_eta=raw.get("uncalibrated_eta"),
            tile_latency_s=fill["value"] * UNIT_TO_S[fill["unit"]] if fill else 0.0,
            unmodelled_tiles=frozenset(k for k, v in raw["tiles"].items() if not v.get("modelled", True)))
    apis = {}
    for name, a in doc.get("timing_apis", {}).items():
        fb = doc["overheads"].get(a["fallback"])
        if fb is None:
            raise MatmulDataError(f"{origin}: timing_apis/{name}/fallback: {a['fallback']!r} is not one of: "
                                  f"{', '.join(doc['overheads'])}")
        for key in ("families", "serial_epilogue_families"):
            bad = [f for f in a.get(key, []) if f not in families]
            if bad:
                raise MatmulDataError(f"{origin}: timing_apis/{name}/{key}: not a family: {', '.join(bad)}")
        apis[name] = Api(name, tuple(a["dtypes"]), fb["value"] * UNIT_TO_S[fb["unit"]], fb["source"],
                         tuple(a["families"]), tuple(a.get("serial_epilogue_families", ())))
    power = tuple(doc.get("power_clock", {}).get("families", ()))
    for fid in power:
        if fid not in families:
            raise MatmulDataError(f"{origin}: power_clock/families: {fid!r} is not a family")
    return Constants(doc["model_version"], doc["calibration"]["min_devices"], MappingProxyType(families),
                     MappingProxyType(apis), power)


def sources_used() -> set[str]:
    """Every bibliography key matmul.yaml cites (checked against references.bib in the tests)."""
    doc = specs.read_yaml(MATMUL_PATH, MatmulDataError)
    keys: set[str] = set()

    def walk(o):
        if isinstance(o, dict):
            if isinstance(o.get("source"), str):
                keys.add(o["source"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(doc)
    return keys


def units_of(dev: specs.Device, fam: Family) -> int:
    """The parallel units (SMs, CUs, MMEs, MXUs, cores) the model spreads a GEMM's tiles over on ``dev``."""
    u = fam.devices[dev.id]["units"]
    return int(dev.peak_basis["units"]) if u == "catalog" else int(u)


def clock_for(device_id: str, dtype: str) -> Clock | None:
    """The sourced clock of (device, dtype), if the data file has one."""
    fam = constants().family_of(device_id)
    return next((c for c in fam.clocks if c.device == device_id and c.dtype == dtype), None)


def peak_clock_hz(dev: specs.Device) -> float | None:
    """The clock the catalog's peak assumes (its peak_basis), if recorded."""
    return dev.peak_basis["clock_mhz"] * 1e6 if dev.peak_basis else None


def precision_class(dtype: str) -> str:
    """η's precision class: ``fp8`` (FP8 tensor cores draw more power per FLOP, so their clock against the peak's is
    lower) or ``other``."""
    return "fp8" if specs.normalize_dtype(dtype).startswith("fp8") else "other"
