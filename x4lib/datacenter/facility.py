"""The datacenter around the accelerators: sourced values of chapter 04, and the power chain from chip to grid.

Data: ``x4lib/data/datacenter.yaml`` (validated against ``x4lib/schemas/datacenter.schema.json`` on load; a
broken file raises :class:`DataError`, exit code 1, naming the file and the field). Values the training estimator
already keeps (PUE, electricity price, DGX H100 power, Epoch's load fraction) stay in ``economics.yaml``.

The power chain (units in brackets):

    accelerator       p_gpu                    [W]   catalog ``tdp_w`` (chip/module maximum)
    server, per GPU   p_srv = P_server / g     [W]   catalog ``server_power_w_per_gpu`` (whole server maximum / GPUs)
    IT load           P_IT = n · p_srv          [W]
    racks             ceil(P_IT / P_rack)       [-]   P_rack: the power one rack can deliver and cool
    facility          P_fac = P_IT · PUE        [W]   PUE = facility power / IT power (The Green Grid's definition)
    average draw      P_avg = P_fac · f_load    [W]   f_load: average fraction of maximum server power while
                                                      training (Epoch AI's cost model: 0.75 for GPUs)

Air cooling moves heat with air: P = ρ · c_p · V̇ · ΔT, so a rack of P [W] at an air temperature rise ΔT [K]
needs V̇ = P / (ρ c_p ΔT) [m³/s] (ρ = 1.2 kg/m³ and c_p = 1005 J/(kg·K) for air near 20 °C: textbook values).
Used in: book/04-datacenter-economics.md.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from types import MappingProxyType
from typing import Mapping


from x4lib.catalog import specs
from x4lib import paths

DATA_PATH = specs.DATA_DIR / "datacenter.yaml"
SCHEMA_PATH = paths.SCHEMA_DIR / "datacenter.schema.json"
HOURS_PER_YEAR = 365.25 * 24          # the Julian year, as Epoch AI's cost model uses
AIR_DENSITY_KG_PER_M3 = 1.2           # dry air near 20 °C, sea level
AIR_CP_J_PER_KG_K = 1005.0            # specific heat of air at constant pressure
M3_PER_S_PER_CFM = 0.3048 ** 3 / 60   # one cubic foot per minute in m³/s
USD_PER_US_CENT = 0.01


class DataError(ValueError):
    """datacenter.yaml breaks its schema or a rule; the message names the file and the field (exit 1)."""
    exit_code = 1


def parse(doc, origin: str = DATA_PATH.name) -> Mapping:
    """Validate a parsed datacenter.yaml document (schema, finite numbers) and return it read-only."""
    doc = specs.plain(doc)
    if not isinstance(doc, dict):
        raise DataError(f"{origin}: expected a mapping at the top level")
    specs.check_document(doc, SCHEMA_PATH, origin, DataError)
    return MappingProxyType(doc)


@functools.lru_cache(maxsize=1)
def data() -> Mapping:
    """The whole of datacenter.yaml, validated."""
    from x4lib.catalog import specs
    raw = specs.read_yaml(DATA_PATH, DataError)
    return parse(raw)


def value(key: str) -> Mapping:
    """One sourced value {value, unit, source, accessed, note} of datacenter.yaml ``values``."""
    try:
        return data()["values"][key]
    except KeyError:
        raise KeyError(f"datacenter.yaml has no value {key!r}") from None


def given(key: str) -> float:
    """One of the chapter's stated assumptions (datacenter.yaml ``givens``)."""
    return data()["givens"][key]["value"]


def server_price_usd(device: str) -> float:
    """Default price of one 8-GPU server of ``device`` (datacenter.yaml ``server_price_<device>``)."""
    key = "server_price_" + device.replace("-", "_")
    if key not in data()["values"]:
        known = sorted(k.removeprefix("server_price_").replace("_", "-") for k in data()["values"]
                       if k.startswith("server_price_"))
        raise LookupError(f"no sourced server price for {device!r} (have: {', '.join(known)}); "
                          f"give one with --server-usd")
    return value(key)["value"]


def rental_price(device: str = "h100-sxm", tier: str = "on-demand", provider: str | None = None) -> Mapping:
    """A dated rental snapshot; the first listed for ``device`` and ``tier`` (and ``provider`` when given)."""
    for row in data()["rental_snapshots"]:
        if row["device"] == device and row["tier"] == tier and (provider is None or row["provider"] == provider):
            return row
    raise LookupError(f"no {tier} rental snapshot for {device!r}" + (f" from {provider}" if provider else "")
                      + "; give a price with --rental-usd-per-gpu-hour")


def electricity_usd_per_kwh(row: Mapping) -> float | None:
    """An electricity-price row in USD/kWh; None for a price in another currency (no exchange rate is kept)."""
    if row["unit"] == "US cents/kWh":
        return row["value"] * USD_PER_US_CENT
    return None


# ------------------------------------------------------------------------------------------- the power chain

@dataclasses.dataclass(frozen=True)
class PowerChain:
    """Power of ``n_gpus`` accelerators from chip to grid (W), and the racks they fill."""
    device: str
    n_gpus: int
    gpu_W: float             # per accelerator, maximum
    server_W_per_gpu: float  # whole server maximum / accelerators
    it_W: float              # n · server_W_per_gpu
    facility_W: float        # it_W · PUE
    average_W: float         # facility_W · load fraction
    pue: float
    load_fraction: float
    rack_W: float
    racks: int

    @property
    def server_overhead(self) -> float:
        """Server power per GPU over the GPU's own maximum (CPUs, memory, NICs, switches, fans)."""
        return self.server_W_per_gpu / self.gpu_W


def power_chain(device: str, n_gpus: int, pue: float, rack_W: float, load_fraction: float = 1.0) -> PowerChain:
    """The power chain of the module docstring. Needs a catalog device with ``tdp_w`` and ``server_power_w_per_gpu``.
    ``rack_W`` is what one rack can deliver and cool; racks = ceil(IT power / rack_W) (whole servers are not
    split across racks by this bound: a lower bound on the rack count)."""
    if n_gpus < 1 or int(n_gpus) != n_gpus:
        raise ValueError(f"gpus must be a whole number >= 1, got {n_gpus}")
    if not (math.isfinite(pue) and pue >= 1):
        raise ValueError(f"PUE must be >= 1, got {pue}")
    if not (0 < load_fraction <= 1):
        raise ValueError(f"load fraction must be in (0, 1], got {load_fraction}")
    if not (math.isfinite(rack_W) and rack_W > 0):
        raise ValueError(f"rack power must be > 0 W, got {rack_W}")
    dev = specs.get(device)
    if "server_power_w_per_gpu" not in dev.values:
        raise LookupError(f"device {dev.id} has no published whole-server power (server_power_w_per_gpu)")
    gpu_W = dev.values["tdp_w"].si
    srv_W = dev.values["server_power_w_per_gpu"].si
    it_W = n_gpus * srv_W
    fac_W = it_W * pue
    return PowerChain(dev.id, int(n_gpus), gpu_W, srv_W, it_W, fac_W, fac_W * load_fraction, pue, load_fraction,
                      rack_W, math.ceil(it_W / rack_W - 1e-9))


def airflow_m3_per_s(power_W: float, delta_T_K: float) -> float:
    """Air volume flow that carries ``power_W`` away at a temperature rise ``delta_T_K``: P / (ρ c_p ΔT)."""
    if power_W < 0 or delta_T_K <= 0:
        raise ValueError("power must be >= 0 W and the temperature rise > 0 K")
    return power_W / (AIR_DENSITY_KG_PER_M3 * AIR_CP_J_PER_KG_K * delta_T_K)


def air_delta_T_K(power_W: float, airflow_m3_s: float) -> float:
    """Temperature rise of air carrying ``power_W`` at ``airflow_m3_s``: P / (ρ c_p V̇)."""
    if airflow_m3_s <= 0:
        raise ValueError("airflow must be > 0")
    return power_W / (AIR_DENSITY_KG_PER_M3 * AIR_CP_J_PER_KG_K * airflow_m3_s)


def cfm_to_m3_per_s(cfm: float) -> float:
    return cfm * M3_PER_S_PER_CFM
