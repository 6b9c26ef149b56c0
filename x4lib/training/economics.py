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
import math
from pathlib import Path
from types import MappingProxyType
from typing import Mapping


from x4lib.catalog import specs

GIVENS_PATH = specs.DATA_DIR / "givens.yaml"
ECONOMICS_PATH = specs.DATA_DIR / "economics.yaml"
METHOD_VERSION = 1
MIN_MFU = 1e-4       # below 0.01 % of peak a run is not training; smaller values only overflow the results
J_PER_KWH = 3.6e6
POWER_SCOPES = {
    "gpu": ("tdp_w", "accelerator TDP only (chip/module maximum): excludes CPUs, NICs, fans, "
                     "switches; the usual back-of-envelope convention, and the scope vendors publish most often"),
    "server": ("server_power_w_per_gpu", "whole-server maximum power divided by its accelerators "
                                         "(CPUs, memory, NICs, fans included); network switches excluded"),
}


@functools.lru_cache(maxsize=1)
def quiz_givens() -> Mapping:
    """The motivation quiz's stated assumptions (x4lib/data/givens.yaml)."""
    return MappingProxyType(specs.read_yaml(Path(GIVENS_PATH))["quiz"])


@functools.lru_cache(maxsize=1)
def sourced() -> Mapping:
    """Sourced reference values (prices, PUE, MFU...) from x4lib/data/economics.yaml."""
    return MappingProxyType(specs.read_yaml(Path(ECONOMICS_PATH)))


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
    bad = not math.isfinite(value) or (value <= low if low_open else value < low) or \
        (high is not None and value > high)
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
    if not math.isfinite(n_gpus) or int(n_gpus) != n_gpus or n_gpus < 1:
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
    for what, v in (("wall clock", t), ("GPU-hours", gpu_h), ("energy", energy)):
        if not math.isfinite(v):
            raise ValueError(f"{what} overflows ({v}); the inputs are beyond any real run")
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


def sourced_value(key: str, device: str = "h100-sxm") -> Mapping:
    """A sourced default from economics.yaml: {value, unit, source, accessed, note}.
    Prices are per device (``usd_per_gpu_hour``); the others are global."""
    entry = sourced()["defaults"][key]
    return entry[device] if key == "usd_per_gpu_hour" else entry


# ------------------------------------------------------------------ command line: python -m x4lib train-estimate

def cli_arguments(p) -> None:
    from x4lib import cli
    p.description = "Defaults are the motivation quiz's givens (x4lib/data/givens.yaml)."
    p.add_argument("--params", type=cli.number("parameters", 0, 1e16, low_open=True), help="parameter count N")
    p.add_argument("--tokens", type=cli.number("tokens", 0, 1e18, low_open=True), help="training tokens D")
    p.add_argument("--gpus", type=cli.number("GPUs", 1, 1e8, integer=True))
    p.add_argument("--device", help="catalog id")
    p.add_argument("--dtype")
    p.add_argument("--mfu", type=cli.number("MFU", MIN_MFU, 1), help=f"in [{MIN_MFU:g}, 1]")
    p.add_argument("--usd-per-gpu-hour", type=cli.number("USD/GPU-hour", 0, 1e6))
    p.add_argument("--usd-per-kwh", type=cli.number("USD/kWh", 0, 1e3))
    p.add_argument("--pue", type=cli.number("PUE", 1, 10), help=">= 1")
    p.add_argument("--power-scope", choices=list(POWER_SCOPES))
    p.add_argument("--json", action="store_true",
                   help="machine-readable output (schemas/train_estimate_output.schema.json)")


_GIVEN_KEYS = {"params": "params", "tokens": "tokens", "gpus": "n_gpus", "device": "device", "dtype": "dtype",
               "mfu": "mfu", "usd_per_gpu_hour": "usd_per_gpu_hour", "usd_per_kwh": "usd_per_kwh", "pue": "pue",
               "power_scope": "power_scope"}


def cli_main(args) -> int:
    from x4lib import cli
    g = quiz_givens()  # read here, not at parser time: a broken givens.yaml stops this command only
    for attr, key in _GIVEN_KEYS.items():
        if getattr(args, attr) is None:
            setattr(args, attr, g[key])
    est = estimate_training(args.params, args.tokens, args.device, args.gpus, dtype=args.dtype, mfu=args.mfu,
                            usd_per_gpu_hour=args.usd_per_gpu_hour, usd_per_kwh=args.usd_per_kwh, pue=args.pue,
                            power_scope=args.power_scope)
    j = est.to_json()
    a = j["assumptions"]
    cli.emit(j, "\n".join([
        f"total compute   {j['total_flop']:.3g} FLOP (6·N·D)",
        f"cluster rate    {est.cluster_flop_per_s:.3g} FLOP/s = {a['n_gpus']} × {a['peak_tflops']} TFLOP/s "
        f"({a['peak_field']}) × MFU {a['mfu']}",
        f"wall clock      {j['wall_clock_days']:.2f} days ({j['wall_clock_s']:.3g} s)",
        f"GPU-hours       {j['gpu_hours']:,.0f}  → rental ${j['rental_cost_usd']:,.0f} "
        f"at ${a['usd_per_gpu_hour']}/GPU-hour",
        f"IT power        {j['it_power_kw']:,.1f} kW ({a['power_scope']}: {a['power_w_per_gpu']} W per GPU)",
        f"facility power  {j['facility_power_kw']:,.1f} kW (PUE {a['pue']})",
        f"energy          {j['energy_mwh']:,.1f} MWh → electricity ${j['electricity_cost_usd']:,.0f} "
        f"at ${a['usd_per_kwh']}/kWh",
    ]), as_json=args.json)
    return 0
