"""The link hierarchy: PCIe, NVLink and NVSwitch, InfiniBand, Ethernet/RoCE, TPU ICI and friends, per direction.

Data in ``x4lib/data/links.yaml`` (validated against ``x4lib/schemas/links.schema.json``, then for units, ranges and
catalog references). Each entry gives its rate in one of four ways, and :class:`Link` holds the result in SI:

    lanes + lane rate + line code    B_dir [B/s] = lanes × r_lane × payload/total / 8   (GT/s: one bit per transfer;
                                     Gb/s: a data rate already, payload/total = 1)
    ports + per-port rate            B_dir = ports × r_port
    catalog reference                B_dir = the spec catalog's per-direction value (stored once, there)
    a vendor figure                  B_dir = figure / 2 when the vendor counts both directions

Links are full duplex, so the bidirectional figure is always 2 × B_dir; a vendor's "900 GB/s NVLink" is the second
one. Examples: PCIe Gen 5 x16 = 16 × 32 GT/s × 128/130 / 8 = 63.0 GB/s per direction (126 both ways; datasheets
print 128 before the line code); InfiniBand NDR = 4 × 100 Gb/s / 8 = 50 GB/s per direction.

Latency: no primary per-hop latency of an NVLink, PCIe-switch, InfiniBand- or Ethernet-switch hop was found; the
data file holds NCCL's model constants (labelled as such) and one secondary figure.

Sources: references.bib keys in the data file (linux-pci-speed2mbs, nvidia-h100-whitepaper, nvidia-ndr-cabling-guide,
...). Used in: book/03-interconnects-and-topology.md; :mod:`x4lib.network.topo` reads per-link NVLink rates from here.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import math
from pathlib import Path
from types import MappingProxyType
from typing import Mapping
from x4lib import paths

SCHEMA_PATH = paths.SCHEMA_DIR / "links.schema.json"
LINKS_PATH = paths.DATA_DIR / "links.yaml"

#: display unit -> B/s (Gb/s is bits: 1 Gb/s = 0.125e9 B/s)
RATE_UNITS: Mapping[str, float] = MappingProxyType({"GB/s": 1e9, "TB/s": 1e12, "Gb/s": 1e9 / 8})

#: NCCL's model of one PCIe lane, in units of 100 Mb/s (NVIDIA/nccl src/graph/topo.cc): Gen 3..6
NCCL_PCIE_SPEED = MappingProxyType({3: 60, 4: 120, 5: 240, 6: 480})


class LinksError(ValueError):
    """links.yaml breaks a rule; the message names the entry and the field (a broken data file: exit 1)."""
    exit_code = 1


class UnknownLinkError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclasses.dataclass(frozen=True)
class Link:
    """One link kind with its rate per direction in B/s (SI), the rate before the line code, and where it came from.
    ``how`` is the arithmetic as text (display edge: GB/s = 1e9 B/s)."""
    id: str
    family: str
    name: str
    scope: str
    per_direction_Bps: float
    raw_per_direction_Bps: float
    encoding: str
    links: int | None
    how: str
    source: str
    accessed: str
    note: str

    @property
    def bidirectional_Bps(self) -> float:
        """Both directions together (links are full duplex): 2 × per direction."""
        return 2 * self.per_direction_Bps

    @property
    def encoding_efficiency(self) -> float:
        """Payload fraction after the line code (1 where the named rate is a data rate)."""
        return self.per_direction_Bps / self.raw_per_direction_Bps

    @property
    def per_link_per_direction_Bps(self) -> float | None:
        """Per physical link (NVLink link, ICI port) when the entry spans several."""
        return self.per_direction_Bps / self.links if self.links else None


@dataclasses.dataclass(frozen=True)
class Latency:
    """One per-hop latency figure [s]; ``kind`` says what it is ("model constant", "secondary", "primary")."""
    id: str
    applies_to: str
    kind: str
    value_s: float
    low_s: float | None
    source: str
    accessed: str
    note: str


def lane_rate_Bps(value: float, unit: str, lanes: int = 1, payload: int = 1, total: int = 1) -> tuple[float, float]:
    """(per direction after the line code, raw per direction) in B/s for ``lanes`` lanes of ``value`` GT/s or Gb/s.
    GT/s carries one bit per transfer on PCIe (NRZ up to Gen 5; Gen 6 counts 64 GT/s with PAM4).

    >>> [round(x / 1e9, 2) for x in lane_rate_Bps(32, "GT/s", 16, 128, 130)]
    [63.02, 64.0]
    """
    if unit not in ("GT/s", "Gb/s"):
        raise ValueError(f"lane rate unit must be GT/s or Gb/s, got {unit!r}")
    if not (value > 0 and lanes >= 1 and 0 < payload <= total):
        raise ValueError("need a lane rate > 0, lanes >= 1 and 0 < payload <= total")
    raw = value * 1e9 * lanes / 8
    return raw * payload / total, raw


def nccl_pcie_model_Bps(gen: int, width: int = 16) -> float:
    """NCCL's bandwidth weight for a PCIe link [B/s]: width × speed / 80 GB/s, speed in 100 Mb/s per lane (Gen 3..6:
    60, 120, 240, 480), e.g. Gen 5 x16 -> 48 GB/s. A scheduling weight (~76 % of line rate), not a line rate.
    Source: nccl-src-topo-paths (NVIDIA/nccl src/graph/topo.cc)."""
    if gen not in NCCL_PCIE_SPEED:
        raise ValueError(f"NCCL models PCIe Gen 3-6, got Gen {gen}")
    return width * NCCL_PCIE_SPEED[gen] / 80 * 1e9


def _check_rate(raw: Mapping, where: str) -> float:
    if not math.isfinite(raw["value"]):
        raise LinksError(f"{where}: {raw['value']} is not a finite number")
    return raw["value"] * RATE_UNITS[raw["unit"]]


def parse_link(raw: Mapping, origin: str = "links.yaml") -> Link:
    """One entry (already schema-valid) -> :class:`Link`; exactly one way of giving the rate."""
    where = f"{origin}: {raw['id']}"
    ways = [k for k in ("lane_rate", "ports", "catalog", "stated") if k in raw]
    if len(ways) != 1:
        raise LinksError(f"{where}: give the rate one way (lane_rate+lanes, ports+per_port, catalog or stated), "
                         f"found {', '.join(ways) or 'none'}")
    way = ways[0]
    encoding = {"lane_rate": "data rate as named", "ports": "per-port rate", "catalog": "vendor payload figure",
                "stated": "vendor payload figure"}[way]
    if way == "lane_rate":
        lr = raw["lane_rate"]
        if "lanes" not in raw:
            raise LinksError(f"{where}: lane_rate needs lanes")
        if not math.isfinite(lr["value"]):
            raise LinksError(f"{where}.lane_rate: {lr['value']} is not a finite number")
        enc = raw.get("encoding")
        if lr["unit"] == "GT/s" and enc is None:
            raise LinksError(f"{where}: a GT/s lane rate needs its line code (encoding: payload/total)")
        if enc is not None and enc["payload"] > enc["total"]:
            raise LinksError(f"{where}.encoding: payload {enc['payload']} exceeds total {enc['total']}")
        payload, total = (enc["payload"], enc["total"]) if enc else (1, 1)
        per_dir, raw_dir = lane_rate_Bps(lr["value"], lr["unit"], raw["lanes"], payload, total)
        encoding = enc["name"] if enc else encoding
        code = f" × {payload}/{total}" if enc else ""
        how = f"{raw['lanes']} lanes × {lr['value']:g} {lr['unit']}{code} / 8 = {per_dir / 1e9:.3g} GB/s"
    elif way == "ports":
        if "per_port" not in raw:
            raise LinksError(f"{where}: ports needs per_port")
        pp = raw["per_port"]
        if pp["direction"] != "per_direction":
            raise LinksError(f"{where}.per_port: store the per-direction port rate")
        per_dir = raw_dir = raw["ports"] * _check_rate(pp, f"{where}.per_port")
        how = f"{raw['ports']} ports × {pp['value']:g} {pp['unit']} = {per_dir / 1e9:,.4g} GB/s"
    elif way == "catalog":
        from x4lib.catalog import specs
        ref = raw["catalog"]
        try:
            val = specs.get(ref["device"]).get(ref["field"])
        except specs.UnknownDeviceError as exc:
            raise LinksError(f"{where}.catalog: {exc}") from None
        if val is None or val.direction != "per_direction":
            raise LinksError(f"{where}.catalog: {ref['device']}.{ref['field']} is not a per-direction bandwidth")
        per_dir = raw_dir = val.si
        how = f"catalog {ref['device']}.{ref['field']} = {val.value:g} {val.unit}"
    else:
        st = raw["stated"]
        total_Bps = _check_rate(st, f"{where}.stated")
        per_dir = raw_dir = total_Bps / 2 if st["direction"] == "bidirectional" else total_Bps
        both = "both directions, halved" if st["direction"] == "bidirectional" else "per direction"
        how = f"stated {st['value']:g} {st['unit']} ({both}) = {per_dir / 1e9:,.4g} GB/s"
    return Link(id=raw["id"], family=raw["family"], name=raw["name"], scope=raw["scope"], per_direction_Bps=per_dir,
                raw_per_direction_Bps=raw_dir, encoding=encoding, links=raw.get("links"), how=how,
                source=raw["source"], accessed=raw["accessed"], note=" ".join(raw["note"].split()))


@functools.lru_cache(maxsize=4)
def load(path: Path = LINKS_PATH) -> Mapping:
    """links.yaml validated: a read-only mapping with ``links`` (id -> :class:`Link`) and ``latency``
    (id -> :class:`Latency`). Raises :class:`LinksError` naming the file and field."""
    from x4lib.catalog import specs
    name = Path(path).name
    data = specs.load_document(path, SCHEMA_PATH, LinksError)
    links: dict[str, Link] = {}
    for raw in data["links"]:
        if raw["id"] in links:
            raise LinksError(f"{name}: {raw['id']}: duplicate id")
        links[raw["id"]] = parse_link(raw, name)
    lat = {}
    for raw in data["latency"]:
        if not math.isfinite(raw["value"]) or not math.isfinite(raw.get("low", 0.0)):
            raise LinksError(f"{name}: latency {raw['id']}: not a finite number")
        lat[raw["id"]] = Latency(raw["id"], raw["applies_to"], raw["kind"], raw["value"] * 1e-6,
                                 raw["low"] * 1e-6 if "low" in raw else None, raw["source"], raw["accessed"],
                                 " ".join(raw["note"].split()))
    return MappingProxyType({"links": MappingProxyType(links), "latency": MappingProxyType(lat)})


def ids() -> list[str]:
    return list(load()["links"])


def get(link_id: str) -> Link:
    """The entry ``link_id``; an unknown id raises :class:`UnknownLinkError` naming the closest."""
    links = load()["links"]
    if link_id in links:
        return links[link_id]
    close = difflib.get_close_matches(link_id, list(links), n=1, cutoff=0.4)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownLinkError(f"unknown link {link_id!r}{hint}; known: {', '.join(links)}")


def family(name: str) -> list[Link]:
    """Every entry of one family (``pcie``, ``nvlink``, ``infiniband``...), in file order."""
    return [x for x in load()["links"].values() if x.family == name]


def latencies() -> list[Latency]:
    return list(load()["latency"].values())


#: nvidia-smi NV# → which entry gives the per-link rate, by NVLink generation
NVLINK_BY_GENERATION = MappingProxyType({2: "nvlink2-v100", 3: "nvlink3-a100", 4: "nvlink4-h100",
                                         5: "nvlink5-b200"})


def nvlink_per_link_Bps(generation: int) -> float:
    """Per-link, per-direction payload rate of an NVLink generation [B/s] (25 GB/s for NVLink 2-4, 50 for 5)."""
    if generation not in NVLINK_BY_GENERATION:
        raise ValueError(f"NVLink generation must be one of {sorted(NVLINK_BY_GENERATION)}, got {generation}")
    return get(NVLINK_BY_GENERATION[generation]).per_link_per_direction_Bps


def hierarchy_rows(link_ids: list[str] | None = None) -> list[dict]:
    """Display rows (GB/s = 1e9 B/s): per direction and both directions side by side, the line code, the source."""
    rows = []
    for x in (get(i) for i in link_ids) if link_ids else load()["links"].values():
        rows.append({"id": x.id, "link": x.name, "family": x.family, "scope": x.scope,
                     "per_direction_gb_s": x.per_direction_Bps / 1e9, "bidirectional_gb_s": x.bidirectional_Bps / 1e9,
                     "per_link_gb_s": (x.per_link_per_direction_Bps / 1e9 if x.links else None),
                     "encoding": x.encoding, "efficiency": x.encoding_efficiency, "how": x.how,
                     "source": x.source, "accessed": x.accessed})
    return rows
