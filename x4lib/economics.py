"""Training-run economics: time, GPU-hours, rental cost, power and energy of one training run.

Model (units in brackets):
    total FLOP      C = 6 · N · D                        (Kaplan et al. 2020: ≈2 FLOP per parameter per
                                                         token forward, ≈4 backward; attention FLOP ignored)
    cluster rate    R = n_gpus · P_dense[dtype] · MFU    [FLOP/s]
    wall clock      T = C / R                            [s]
    GPU-hours       H = n_gpus · T / 3600                [GPU·h]
    rental cost     H · price                            [USD]
    IT power        P_IT = n_gpus · p_per_gpu            [W]  (p = GPU TDP, or whole-server power / GPUs)
    facility power  P_IT · PUE                           [W]
    energy          E = P_facility · T                   [J]  (assumes every device at its maximum power
                                                              for the whole run: an upper bound)
    electricity     E [kWh] · price                      [USD]

MFU is the fraction of the dense peak spent on the model's 6·N·D FLOP (Chowdhery et al. 2022).
Used in: book/00-motivation.md.
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import yaml

from x4lib import specs

GIVENS_PATH = specs.DATA_DIR / "givens.yaml"
ECONOMICS_PATH = specs.DATA_DIR / "economics.yaml"
METHOD_VERSION = 1
J_PER_KWH = 3.6e6
POWER_SCOPES = {
    "gpu": ("tdp_w", "accelerator TDP only (chip/module maximum): excludes CPUs, NICs, fans, "
                     "switches; the usual back-of-envelope convention, and the one every catalog device has"),
    "server": ("server_power_w_per_gpu", "whole-server maximum power divided by its accelerators "
                                         "(CPUs, memory, NICs, fans included); network switches excluded"),
}


@functools.lru_cache(maxsize=1)
def quiz_givens() -> Mapping:
    """The motivation quiz's stated assumptions (x4lib/data/givens.yaml)."""
    return MappingProxyType(yaml.safe_load(Path(GIVENS_PATH).read_text())["quiz"])


@functools.lru_cache(maxsize=1)
def sourced() -> Mapping:
    """Sourced reference values (prices, PUE, MFU...) from x4lib/data/economics.yaml."""
    return MappingProxyType(specs.plain(yaml.safe_load(Path(ECONOMICS_PATH).read_text())))


def training_flop(params: float, tokens: float) -> float:
    """C = 6·N·D in FLOP (N parameters, D tokens)."""
    return 6.0 * params * tokens


@dataclasses.dataclass(frozen=True)
class TrainingEstimate:
    """The result of :func:`estimate_training`; SI units inside, display helpers as properties."""
    total_flop: float
    cluster_flop_per_s: float
    wall_clock_s: float
    gpu_hours: float
    rental_cost_usd: float
    it_power_W: float
    facility_power_W: float
    energy_J: float
    electricity_cost_usd: float
    assumptions: Mapping

    @property
    def wall_clock_days(self) -> float:
        return self.wall_clock_s / 86400.0

    @property
    def energy_MWh(self) -> float:
        return self.energy_J / J_PER_KWH / 1e3

    def to_json(self) -> dict:
        """The CLI's ``train-estimate --json`` contract (display units at the edge)."""
        return {
            "total_flop": self.total_flop,
            "wall_clock_s": self.wall_clock_s,
            "wall_clock_days": self.wall_clock_days,
            "gpu_hours": self.gpu_hours,
            "rental_cost_usd": self.rental_cost_usd,
            "it_power_kw": self.it_power_W / 1e3,
            "facility_power_kw": self.facility_power_W / 1e3,
            "energy_mwh": self.energy_MWh,
            "electricity_cost_usd": self.electricity_cost_usd,
            "assumptions": dict(self.assumptions),
        }


def _check(name: str, value: float, low: float, high: float | None = None, low_open=True) -> None:
    bad = (value <= low if low_open else value < low) or (high is not None and value > high)
    if bad:
        rng = f"({low}, {high}]" if high is not None else (f"> {low}" if low_open else f">= {low}")
        raise ValueError(f"{name} must be {rng}, got {value:g}")


def estimate_training(params: float, tokens: float, device: specs.Device | str, n_gpus: int,
                      dtype: str = "bf16", mfu: float = 0.5, usd_per_gpu_hour: float = 3.0,
                      usd_per_kwh: float = 0.10, pue: float = 1.2,
                      power_scope: str = "gpu") -> TrainingEstimate:
    """Estimate one training run (see the module docstring for every formula).

    Raises ValueError naming the bad input (non-positive counts, MFU outside (0, 1], PUE < 1,
    negative prices, unknown power scope) and specs.UnsupportedDtypeError for a dtype the device
    lacks.
    """
    _check("params", params, 0)
    _check("tokens", tokens, 0)
    if int(n_gpus) != n_gpus or n_gpus < 1:
        raise ValueError(f"gpus must be a whole number >= 1, got {n_gpus:g}")
    _check("mfu", mfu, 0, 1)
    _check("pue", pue, 1, low_open=False)
    _check("usd_per_gpu_hour", usd_per_gpu_hour, 0, low_open=False)
    _check("usd_per_kwh", usd_per_kwh, 0, low_open=False)
    if power_scope not in POWER_SCOPES:
        raise ValueError(f"power scope must be one of {', '.join(POWER_SCOPES)}, got {power_scope!r}")
    dev = specs.get(device) if isinstance(device, str) else device
    field = dev.peak_field(dtype)
    power_field, power_meaning = POWER_SCOPES[power_scope]
    if power_field not in dev.values:
        raise ValueError(f"device {dev.id} has no published {power_field}; use power scope 'gpu'")
    peak = dev.values[field]
    p_gpu = dev.values[power_field]

    total = training_flop(params, tokens)
    rate = n_gpus * peak.si * mfu
    t = total / rate
    gpu_h = n_gpus * t / 3600.0
    it_W = n_gpus * p_gpu.si
    fac_W = it_W * pue
    energy = fac_W * t
    assumptions = {
        "method_version": METHOD_VERSION,
        "flop_formula": "6 * params * tokens (forward + backward, attention FLOP and recomputation ignored)",
        "device": dev.id, "n_gpus": int(n_gpus), "dtype": specs.normalize_dtype(dtype),
        "peak_field": field, "peak_tflops": peak.value, "peak_source": peak.source,
        "mfu": mfu, "usd_per_gpu_hour": usd_per_gpu_hour, "usd_per_kwh": usd_per_kwh, "pue": pue,
        "power_scope": power_scope, "power_scope_meaning": power_meaning,
        "power_w_per_gpu": p_gpu.value, "power_source": p_gpu.source,
        "energy_basis": "every device at its maximum power for the whole wall clock (upper bound)",
    }
    return TrainingEstimate(total, rate, t, gpu_h, gpu_h * usd_per_gpu_hour, it_W, fac_W, energy,
                            energy / J_PER_KWH * usd_per_kwh, MappingProxyType(assumptions))


def estimate_quiz(**overrides) -> TrainingEstimate:
    """The motivation quiz with its givens (x4lib/data/givens.yaml), any of them overridden."""
    g = {**quiz_givens(), **overrides}
    return estimate_training(g["params"], g["tokens"], g["device"], g["n_gpus"], dtype=g["dtype"],
                             mfu=g["mfu"], usd_per_gpu_hour=g["usd_per_gpu_hour"],
                             usd_per_kwh=g["usd_per_kwh"], pue=g["pue"], power_scope=g["power_scope"])


def summary_row(label: str, est: TrainingEstimate) -> dict:
    """One display row of an estimate (display units: TFLOP/s, days, kW, MWh, USD)."""
    a = est.assumptions
    return {
        "scenario": label, "device": a["device"], "GPUs": a["n_gpus"], "dtype": a["dtype"],
        "dense peak (TFLOP/s)": a["peak_tflops"], "MFU": a["mfu"],
        "days": round(est.wall_clock_days, 2), "GPU-hours": round(est.gpu_hours),
        "rental (USD)": round(est.rental_cost_usd), "IT power (kW)": round(est.it_power_W / 1e3, 1),
        "facility (kW)": round(est.facility_power_W / 1e3, 1), "energy (MWh)": round(est.energy_MWh, 1),
        "electricity (USD)": round(est.electricity_cost_usd),
    }


def scenarios(cases: Mapping[str, Mapping]) -> list[dict]:
    """Summary rows of the quiz under several sets of overrides: {label: {given: value}}."""
    return [summary_row(label, estimate_quiz(**over)) for label, over in cases.items()]


def days_curve(device: str, gpu_counts, **overrides) -> list[float]:
    """Wall-clock days of the quiz run for each GPU count (a model prediction, perfect scaling at fixed MFU)."""
    return [estimate_quiz(device=device, n_gpus=int(n), **overrides).wall_clock_days for n in gpu_counts]


GIVEN_MEANINGS = {
    "params": "parameters N (a count)", "tokens": "training tokens D", "n_gpus": "accelerators",
    "device": "catalog id", "dtype": "training precision", "mfu": "model FLOP utilisation",
    "usd_per_gpu_hour": "rental price (USD per GPU-hour)", "usd_per_kwh": "electricity price (USD/kWh)",
    "pue": "facility power / IT power", "power_scope": "what power is counted",
}
SOURCED_KEYS = ("mfu", "usd_per_gpu_hour", "usd_per_kwh", "pue")


def givens_table():
    """The quiz's givens as a table (pandas DataFrame): stated assumptions, not facts."""
    import pandas as pd
    def show(v):
        return f"{v:.3g}" if isinstance(v, float) and abs(v) >= 1e6 else v
    return pd.DataFrame([{"given": k, "value": show(v), "meaning": GIVEN_MEANINGS.get(k, "")}
                         for k, v in quiz_givens().items()]).set_index("given")


def sourced_value(key: str, device: str = "h100-sxm") -> Mapping:
    """A sourced default from economics.yaml: {value, unit, source, accessed, note}.
    Prices are per device (``usd_per_gpu_hour``); the others are global."""
    entry = sourced()["defaults"][key]
    return entry[device] if key == "usd_per_gpu_hour" else entry


def sourced_overrides(device: str = "h100-sxm") -> dict:
    """Overrides for :func:`estimate_quiz` that replace the round-number givens by sourced values,
    and count whole-server power where the catalog has it (as Epoch AI's cost model does)."""
    over = {k: sourced_value(k, device)["value"] for k in SOURCED_KEYS}
    if "server_power_w_per_gpu" in specs.get(device).values:
        over["power_scope"] = "server"
    return over


def sourced_table(device: str = "h100-sxm"):
    """Givens beside the sourced values that replace them, with source key and date (the notes, with the
    scope of each figure, are in x4lib/data/economics.yaml)."""
    import pandas as pd
    g = quiz_givens()
    rows = []
    for k in SOURCED_KEYS:
        v = sourced_value(k, device)
        rows.append({"quantity": k, "quiz given": g[k], "sourced": v["value"], "unit": v["unit"],
                     "source": v["source"], "accessed": v["accessed"]})
    server = specs.get(device).get("server_power_w_per_gpu")
    if server:
        rows.append({"quantity": "power_scope", "quiz given": g["power_scope"], "sourced": "server",
                     "unit": f"{server.value:g} W per GPU", "source": server.source, "accessed": server.accessed})
    return pd.DataFrame(rows).set_index("quantity")
