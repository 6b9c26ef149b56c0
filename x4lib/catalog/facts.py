"""Sourced facts that are not catalog devices: per-SM limits and the memory hierarchy of a GPU, the engines and
on-chip memories of Trainium and Gaudi, edge-NPU power budgets, host CPUs and PCIe, and the stated givens of a
worked example. One YAML file per topic under ``x4lib/data/facts/``, each value with its unit, its source (a
key of ``book/references.bib``, or ``given`` for a stated assumption), the date the source was read and a
note; whether a value is a vendor figure, a measurement by others or a derivation is stated in ``kind``.

    facts.get("h100_sm", "max_warps_per_sm").value     # 64
    facts.get("h100_memory", "l2_latency").si          # seconds

Files are validated on load (``x4lib/schemas/facts.schema.json``, then finite numbers and known units); a
broken file raises :class:`FactsError` naming the file and field (exit code 1: the book's fault, not the
reader's). Used in: book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md (and ``x4lib.compute.simt``, ``x4lib.pages.ch01``).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path
from types import MappingProxyType
from typing import Mapping
from x4lib import paths

FACTS_DIR = paths.DATA_DIR / "facts"
SCHEMA_PATH = paths.SCHEMA_DIR / "facts.schema.json"

#: unit -> factor to SI (B, B/s, s, Hz, W, FLOP/s, op/s; counts and cycles stay as they are; Gb/s -> B/s;
#: GT/s stays transfers per second, 1e9 of them)
UNIT_TO_SI: Mapping[str, float] = MappingProxyType({
    "count": 1.0, "ratio": 1.0, "cycles": 1.0, "B/cycle": 1.0, "FLOP": 1.0, "lanes": 1.0, "bits": 1.0,
    "B": 1.0, "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "B/s": 1.0, "GB/s": 1e9, "TB/s": 1e12, "Gb/s": 1e9 / 8, "GT/s": 1e9,
    "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9,
    "Hz": 1.0, "MHz": 1e6, "GHz": 1e9,
    "W": 1.0, "mW": 1e-3,
    "FLOP/s": 1.0, "TFLOP/s": 1e12, "GOP/s": 1e9, "TOP/s": 1e12,
})
KINDS = ("vendor", "measured-by-others", "derived", "given", "secondary")


class FactsError(ValueError):
    """A facts file breaks a rule; the message names the file and the field. Exit code 1."""
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class Fact:
    """One sourced value in the unit its source prints."""
    group: str
    name: str
    value: float
    unit: str
    source: str
    accessed: str
    kind: str
    note: str = ""
    sparsity: str | None = None     # rates only: "dense" or "sparse" as the source's figure is; None: not stated

    @property
    def si(self) -> float:
        """The value in SI base units (B, B/s, s, Hz, W, FLOP/s); counts and cycles unchanged."""
        return self.value * UNIT_TO_SI[self.unit]

    @property
    def dense_si(self) -> float | None:
        """A rate on the dense basis in SI units: a 2:4 structured-sparsity figure halved (the rule of
        ``x4lib.catalog.landscape.normalise``), a dense one as is; None when the source does not say which."""
        if self.sparsity is None:
            return None
        return self.si / 2 if self.sparsity == "sparse" else self.si


@dataclasses.dataclass(frozen=True)
class Group:
    """The facts of one topic (one YAML file): a title, what it describes, the facts by name."""
    id: str
    title: str
    scope: str
    facts: Mapping[str, Fact]


def _schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def parse_group(record: dict, origin: str) -> Group:
    """Validate one facts file (schema, finite numbers, known units) and build a :class:`Group`."""
    import jsonschema
    from x4lib.catalog.specs import plain
    record = plain(record)
    try:
        jsonschema.validate(record, _schema())
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise FactsError(f"{origin}: {where}: {exc.message}") from None
    facts = {}
    for name, raw in record["facts"].items():
        where = f"{origin}: {record['id']}.{name}"
        if not math.isfinite(raw["value"]):
            raise FactsError(f"{where}: {raw['value']} is not a finite number")
        if raw["unit"] not in UNIT_TO_SI:
            raise FactsError(f"{where}: unknown unit {raw['unit']!r}; known units: {', '.join(UNIT_TO_SI)}")
        if (raw["source"] == "given") != (raw["kind"] == "given"):
            raise FactsError(f"{where}: a given has source 'given' and kind 'given', and only a given does")
        facts[name] = Fact(group=record["id"], name=name, value=raw["value"], unit=raw["unit"],
                           source=raw["source"], accessed=raw["accessed"], kind=raw["kind"],
                           note=raw.get("note", ""), sparsity=raw.get("sparsity"))
    return Group(record["id"], record["title"], record["scope"], MappingProxyType(facts))


@functools.lru_cache(maxsize=4)
def load(directory: Path = FACTS_DIR) -> Mapping[str, Group]:
    """Every ``<id>.yaml`` under ``directory``, validated: id -> Group (read-only)."""
    from x4lib.catalog import specs
    groups = {}
    for path in sorted(Path(directory).glob("*.yaml")):
        record = specs.read_yaml(path, FactsError)
        if not isinstance(record, dict):
            raise FactsError(f"{path.name}: expected a mapping with id, title, scope, facts")
        group = parse_group(record, path.name)
        if group.id != path.stem:
            raise FactsError(f"{path.name}: id {group.id!r} must equal the file name {path.stem!r}")
        groups[group.id] = group
    return MappingProxyType(groups)


def group(group_id: str) -> Group:
    """One group; an unknown id raises LookupError naming the known ones."""
    groups = load()
    if group_id not in groups:
        raise LookupError(f"no facts group {group_id!r}; known: {', '.join(groups)}")
    return groups[group_id]


def get(group_id: str, name: str) -> Fact:
    """One fact; an unknown name raises LookupError naming the group's facts."""
    g = group(group_id)
    if name not in g.facts:
        raise LookupError(f"facts group {group_id!r} has no {name!r}; it has: {', '.join(g.facts)}")
    return g.facts[name]


def sources_used() -> set[str]:
    """Every source key the facts cite (``given`` excluded)."""
    return {f.source for g in load().values() for f in g.facts.values() if f.source != "given"}
