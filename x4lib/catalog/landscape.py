"""The accelerator landscape on one footing: a normaliser for vendor figures, the catalog as one table, and
price-performance where a dated rental price exists.

Same footing (every value compared in chapter 05 is on this basis):

    dense        a 2:4 "with sparsity" rate counts twice the work it does:  P_dense = P_sparse / 2
    per chip     a rack, pod, superchip or UltraServer figure is shared:     x_chip = x_system / n_chips
    per direction a link total that counts both directions:                B_dir = B_bidir / 2
    GB = 1e9 B   1 GiB = 2^30 B = 1.073741824 GB;  1 Gb/s = 1e9 bit/s = 0.125 GB/s
    clock named  a peak at a planned clock f_p rescaled to the shipping clock f_s:  P_s = P_p · f_s / f_p

    ridge point  I* = P [FLOP/s] / W [B/s]   [FLOP/B]  (chapter 00)
    efficiency   P / TDP   [FLOP/s per W]  (TDP's scope as the catalog note says: module or board)
    price        USD per dense PFLOP-hour = price [USD/h] / (P [FLOP/s] / 1e15);  per TB/s-hour = price / (W / 1e12)

Every normalised value says which conversions it needed (``Normalised.conversions``). Data: the catalog
(``x4lib/data/devices``), ``x4lib/data/landscape.yaml`` (scale-up domains, scale-out per chip, vendor figures as
printed), rental snapshots in ``x4lib/data/datacenter.yaml``. Sources: keys of book/references.bib named per value.
Used in: book/05-the-accelerator-landscape-2026.md.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
from typing import Mapping

import jsonschema

from x4lib.catalog import specs
from x4lib import paths

DATA_PATH = specs.DATA_DIR / "landscape.yaml"
SCHEMA_PATH = paths.SCHEMA_DIR / "landscape.schema.json"
GIB_B = 2 ** 30

#: printed unit -> (quantity, factor to SI: FLOP/s, B, B/s, W)
UNITS: Mapping[str, tuple[str, float]] = {
    "TFLOP/s": ("rate", 1e12), "PFLOP/s": ("rate", 1e15), "EFLOP/s": ("rate", 1e18), "TOP/s": ("rate", 1e12),
    "GB": ("bytes", 1e9), "GiB": ("bytes", GIB_B), "TB": ("bytes", 1e12), "TiB": ("bytes", 2 ** 40),
    "GB/s": ("bandwidth", 1e9), "TB/s": ("bandwidth", 1e12), "Gb/s": ("bandwidth", 1e9 / 8),
    "Tb/s": ("bandwidth", 1e12 / 8), "W": ("power", 1.0), "kW": ("power", 1e3),
}
SI_UNIT = {"rate": "FLOP/s", "bytes": "B", "bandwidth": "B/s", "power": "W"}


class LandscapeDataError(ValueError):
    """landscape.yaml breaks a rule (a broken data file of the book: exit 1); the message names the entry."""
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class Normalised:
    """A vendor figure on the chapter's basis: SI value, its quantity and the conversions it needed."""
    value_si: float
    quantity: str
    conversions: tuple[str, ...]

    @property
    def unit(self) -> str:
        return SI_UNIT[self.quantity]


def normalise(value: float, unit: str, *, sparsity: str | None = None, chips: int = 1,
              direction: str | None = None, planned_clock_hz: float | None = None,
              shipping_clock_hz: float | None = None) -> Normalised:
    """A printed figure -> dense, per chip, per direction, SI (GB = 1e9 B), at the shipping clock.

    ``sparsity``: "dense" or "sparse" (rates only); ``chips``: how many chips the figure covers (a rack: 72);
    ``direction``: "per_direction", "bidirectional" or "unstated" (links only; unstated is kept and flagged);
    ``planned_clock_hz``/``shipping_clock_hz``: the clock the peak assumes and the one parts ship at."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; use one of: {', '.join(UNITS)}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"a vendor figure must be a finite number > 0, got {value!r}")
    if not (isinstance(chips, int) and chips >= 1):
        raise ValueError(f"chips must be a whole number >= 1, got {chips!r}")
    quantity, factor = UNITS[unit]
    x, conv = value * factor, []
    if unit in ("GiB", "TiB"):
        conv.append(f"{unit} → GB: × {factor / 1e9:.4f}")
    if unit in ("Gb/s", "Tb/s"):
        conv.append("bits → bytes: ÷ 8")
    if quantity == "rate":
        if sparsity not in ("dense", "sparse"):
            raise ValueError("a tensor rate must say dense or sparse (sparsity='dense' or 'sparse')")
        if sparsity == "sparse":
            x /= 2
            conv.append("sparse → dense: ÷ 2 (2:4 structured sparsity)")
    elif sparsity is not None:
        raise ValueError(f"sparsity applies to rates, not to {quantity}")
    if quantity == "bandwidth":
        if direction not in ("per_direction", "bidirectional", "unstated"):
            raise ValueError("a bandwidth must say per_direction, bidirectional or unstated")
        if direction == "bidirectional":
            x /= 2
            conv.append("both directions → per direction: ÷ 2")
        elif direction == "unstated":
            conv.append("direction not stated: read as per direction")
    if chips > 1:
        x /= chips
        conv.append(f"per {chips} chips → per chip: ÷ {chips}")
    if planned_clock_hz or shipping_clock_hz:
        if quantity != "rate" or not (planned_clock_hz and shipping_clock_hz):
            raise ValueError("a clock correction needs a rate and both the planned and the shipping clock")
        x *= shipping_clock_hz / planned_clock_hz
        conv.append(f"planned {planned_clock_hz / 1e6:.0f} MHz → shipping {shipping_clock_hz / 1e6:.0f} MHz: "
                    f"× {shipping_clock_hz / planned_clock_hz:.4f}")
    return Normalised(x, quantity, tuple(conv))


# ------------------------------------------------------------------------------------------------ data

@functools.lru_cache(maxsize=1)
def data() -> Mapping:
    """landscape.yaml, validated (schema, device ids, source keys resolved by the bib test)."""
    doc = specs.read_yaml(DATA_PATH, LandscapeDataError)
    try:
        jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise LandscapeDataError(f"{DATA_PATH.name}: {where}: {exc.message}") from None
    catalog = specs.load_catalog()
    for section in ("scaleup_domains", "scaleout", "memory_printed"):
        for dev in doc.get(section, {}):
            if dev not in catalog:
                raise LandscapeDataError(f"{DATA_PATH.name}: {section}.{dev}: not a catalog id")
    for f in doc["vendor_figures"]:
        if f["device"] not in catalog:
            raise LandscapeDataError(f"{DATA_PATH.name}: vendor_figures.{f['id']}: unknown device {f['device']!r}")
    return doc


def sources_used() -> set[str]:
    d = data()
    keys = {e["source"] for s in ("scaleup_domains", "scaleout") for e in d[s].values()}
    keys |= {f["source"] for f in d["vendor_figures"]}
    keys |= {f["shipping_clock_source"] for f in d["vendor_figures"] if "shipping_clock_source" in f}
    return keys


def normalise_figure(fig: Mapping) -> Normalised:
    """One entry of ``vendor_figures`` on the chapter's basis."""
    mhz = 1e6
    return normalise(fig["value"], fig["unit"], sparsity=fig.get("sparsity"), chips=fig.get("chips", 1),
                     direction=fig.get("direction"),
                     planned_clock_hz=fig["planned_clock_mhz"] * mhz if "planned_clock_mhz" in fig else None,
                     shipping_clock_hz=fig["shipping_clock_mhz"] * mhz if "shipping_clock_mhz" in fig else None)


def vendor_figures() -> list[dict]:
    """Each printed figure, its normalised value (display units of the catalog field) and the catalog's value."""
    out = []
    for f in data()["vendor_figures"]:
        n = normalise_figure(f)
        field = f["catalog_field"]
        dev = specs.get(f["device"])
        shown = n.value_si / specs.UNIT_TO_SI[specs.FIELD_UNITS[field]]
        per_peer = None
        if f.get("peers"):
            per_peer = shown / f["peers"]
        out.append({**f, "normalised": shown, "normalised_unit": specs.FIELD_UNITS[field],
                    "conversions": n.conversions, "catalog": dev.values[field].value, "per_peer": per_peer,
                    "ratio_printed_to_normalised": f["value"] * UNITS[f["unit"]][1] / n.value_si})
    return out


def scaleup_domain(device_id: str) -> Mapping | None:
    return data()["scaleup_domains"].get(device_id)


def scaleout_per_chip(device_id: str) -> tuple[Normalised, Mapping] | None:
    """Scale-out bandwidth per chip [B/s per direction] in the reference system named, or None (not published)."""
    e = data()["scaleout"].get(device_id)
    if e is None:
        return None
    return normalise(e["value"], e["unit"], direction=e["direction"], chips=e["chips"]), e


# ------------------------------------------------------------------------------------------- the table

def _v(dev: specs.Device, field: str) -> specs.Value | None:
    return dev.values.get(field)


def _cell(value, unit, basis, source, conversions=()):
    return {"value": value, "unit": unit, "basis": basis, "source": source, "conversions": list(conversions)}


def memory_printed(dev: specs.Device) -> Mapping | None:
    """The unit ``dev``'s memory figure is printed in and whether it is binary-sized (landscape.yaml)."""
    return data().get("memory_printed", {}).get(dev.id)


def memory_B(dev: specs.Device) -> tuple[float, list[str]] | None:
    """What ``dev`` holds, in bytes, on the chapter's basis, and the conversions applied: a binary-sized capacity
    N (printed as "N GB" or "N GiB") is N x 2^30 B; on-chip SRAM and devices without an entry are taken as printed,
    N x 1e9 B. None when the catalog has no memory size. Used in: book/05-the-accelerator-landscape-2026.md"""
    v = _v(dev, "memory_gb")
    if v is None:
        return None
    p = memory_printed(dev)
    if p is None or not p["binary"] or dev.kind in ("wafer-scale", "lpu"):
        return v.value * 1e9, []
    if p["unit"] == "GiB":
        return v.value * GIB_B, [f"GiB → GB: {v.value:g} GiB printed = {v.value * GIB_B / 1e9:.1f} GB"]
    return v.value * GIB_B, [f"binary-sized: the vendor's {v.value:g} GB are {v.value:g} GiB = "
                             f"{v.value * GIB_B / 1e9:.1f} GB"]


def _memory_cell(dev: specs.Device) -> dict | None:
    got = memory_B(dev)
    if got is None:
        return None
    value_B, conversions = got
    kind = "on-chip SRAM" if dev.kind in ("wafer-scale", "lpu") else "device memory"
    p = memory_printed(dev)
    source = p["source"] if p else _v(dev, "memory_gb").source
    basis = f"{kind}, GB = 1e9 B" if conversions else f"{kind}, as the vendor states it"
    return _cell(value_B / 1e9, "GB", basis, source, conversions)


def row(device: specs.Device | str) -> dict:
    """One device on the common basis: each value with unit, basis, source and the conversions it needed."""
    dev = specs.get(device) if isinstance(device, str) else device
    r = {"device": dev.id, "name": dev.name, "vendor": dev.vendor, "kind": dev.kind, "status": dev.status,
         "values": {}}
    vals = r["values"]
    clock = "vendor's clock"
    if dev.peak_basis and dev.peak_basis["clock_kind"] == "planned":
        clock = f"planned {dev.peak_basis['clock_mhz']:.0f} MHz clock"
    if dev.status == "announced":
        clock += ", announced (preliminary)"
    for field, label in (("bf16_dense_tflops", "BF16"), ("fp8_dense_tflops", "FP8")):
        v = _v(dev, field)
        if v:
            vals[field] = _cell(v.value, "TFLOP/s", f"dense {label}, per chip, {clock}", v.source)
    mem = _memory_cell(dev)
    if mem:
        vals["memory_gb"] = mem
    bw = _v(dev, "memory_bw_gb_s")
    if bw:
        vals["memory_bw_gb_s"] = _cell(bw.value, "GB/s", "per chip, GB = 1e9 B", bw.source)
        for field, key in (("bf16_dense_tflops", "ridge_bf16_flop_per_byte"),
                           ("fp8_dense_tflops", "ridge_fp8_flop_per_byte")):
            if field in vals:
                vals[key] = _cell(vals[field]["value"] * 1e12 / (bw.value * 1e9), "FLOP/B",
                                  f"dense {field[:4].upper().rstrip('_')} peak / memory bandwidth",
                                  f"{vals[field]['source']}; {bw.source}")
    tdp = _v(dev, "tdp_w")
    if tdp:
        vals["tdp_w"] = _cell(tdp.value, "W", "maximum power of the scope in the catalog note", tdp.source)
        if "bf16_dense_tflops" in vals:
            vals["bf16_tflops_per_w"] = _cell(vals["bf16_dense_tflops"]["value"] / tdp.value, "TFLOP/s per W",
                                              "dense BF16 peak / maximum power",
                                              f"{vals['bf16_dense_tflops']['source']}; {tdp.source}")
    su = _v(dev, "scaleup_bw_gb_s_per_direction")
    if su:
        vals["scaleup_bw_gb_s_per_direction"] = _cell(su.value, "GB/s", "per chip, per direction, all links",
                                                      su.source)
    dom = scaleup_domain(dev.id)
    if dom:
        vals["scaleup_domain_chips"] = _cell(dom["chips"], "chips", dom["name"], dom["source"])
    so = scaleout_per_chip(dev.id)
    if so:
        n, e = so
        vals["scaleout_bw_gb_s_per_direction"] = _cell(n.value_si / 1e9, "GB/s", e["name"], e["source"],
                                                       n.conversions)
    return r


def table(device_ids=None) -> list[dict]:
    """:func:`row` for every catalog accelerator (CPUs left out), or for ``device_ids``."""
    ids = device_ids or [d.id for d in specs.load_catalog().values() if d.kind != "cpu"]
    return [row(i) for i in ids]


# ------------------------------------------------------------------------------------- achievable rates

def achievable_bf16(device_id: str) -> dict:
    """Achievable dense BF16 beside the peak: the best published measurement (others', cited) and the
    achievable-rates model at 8192³ (x4lib.compute.matmul), each None where there is none."""
    from x4lib.compute import matmul
    from x4lib.catalog import published
    dev = specs.get(device_id)
    peak = dev.values["bf16_dense_tflops"].value if "bf16_dense_tflops" in dev.values else None
    meas = published.measurements(device=device_id, kind="matmul", dtype="bf16")
    best = max(meas, key=lambda m: m["value"]) if meas else None
    try:
        model = matmul.predict(device_id, "bf16", 8192, 8192, 8192).rate_flop_per_s / 1e12
    except (matmul.NoModelError, specs.UnsupportedDtypeError):
        model = None
    return {"device": device_id, "peak_tflops": peak,
            "measured_tflops": best["value"] if best else None, "measured_source": best["source"] if best else None,
            "model_tflops": model}


# ------------------------------------------------------------------------------------- price-performance

def rental_rows() -> list[dict]:
    """Every dated rental snapshot (datacenter.yaml) of a catalog device, with USD per dense BF16 PFLOP-hour and
    per TB/s-hour of memory bandwidth. Devices without a sourced price get no row."""
    from x4lib.datacenter import facility as datacenter
    out = []
    for r in datacenter.data()["rental_snapshots"]:
        dev = specs.get(r["device"])
        p = dev.peak_flop_per_s("bf16")
        out.append({"device": dev.id, "provider": r["provider"], "sku": r["sku"], "tier": r["tier"],
                    "date": r["date"], "usd_per_gpu_hour": r["value"], "source": r["source"],
                    "usd_per_pflop_hour": r["value"] / (p / 1e15),
                    "usd_per_tb_s_hour": r["value"] / (dev.memory_bw_Bps / 1e12)})
    return out


def cheapest_rental(device_id: str, tier: str = "on-demand") -> dict | None:
    rows = [r for r in rental_rows() if r["device"] == device_id and r["tier"] == tier]
    return min(rows, key=lambda r: r["usd_per_gpu_hour"]) if rows else None


# --------------------------------------------------------------------------- command line: landscape

def cli_arguments(p) -> None:
    p.add_argument("--status", choices=("shipping", "announced", "all"), default="all",
                   help="which devices to list (default all)")
    p.add_argument("--json", action="store_true", help="machine-readable (schemas/landscape_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    rows = [r for r in table() if args.status in ("all", r["status"])]
    if args.json:
        cli.emit({"basis": {"rates": "dense, per chip, vendor's stated clock", "memory": "GB = 1e9 B",
                            "links": "per chip, per direction"}, "devices": rows}, as_json=True)
        return 0
    lines = []
    for r in rows:
        v = r["values"]
        cells = [f"{k}={v[k]['value']:.4g}" for k in ("bf16_dense_tflops", "fp8_dense_tflops", "memory_gb",
                                                       "memory_bw_gb_s", "scaleup_domain_chips") if k in v]
        lines.append(f"{r['device']:<16}{r['status']:<10}" + "  ".join(cells))
    cli.emit(text="\n".join(lines) + "\n(dense TFLOP/s per chip; GB = 1e9 B; links per direction; --json for "
                                     "sources and conversions)")
    return 0
