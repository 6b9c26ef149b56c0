"""One cost model for a training run: chapter 00's estimator with capital, facility, failures and carbon.

It composes the concept modules; every formula lives in one of them:

    ideal time        T₀ = 6ND / (n · P · MFU)                           x4lib.training.economics.estimate_training
    failures          M = 1/(n·λ); τ by Daly; goodput G                  x4lib.datacenter.reliability
    checkpoint time   δ = 14 B · N / W                                    x4lib.datacenter.storage
    wall clock        T = T₀ / G                                          [s]
    GPU-hours         H = n · T / 3600                                    [GPU·h]  (lost time is paid for too)
    rent              cost = H · R                                        [USD]    R: rental price per GPU-hour
    own               cost = H · (A_srv + A_net + F) / (n · 8766 · u) + E · p
                                                                          x4lib.datacenter.tco: annuities of servers and network,
                                                                          colocation; u: utilisation of the owned fleet
                                                                          over the year (the run pays for idle hours
                                                                          in proportion)
    energy            E = n · P_srv · f_load · PUE · T                    [J]  whole-server power (catalog)
    carbon            E [kWh] · I [g/kWh]                                 x4lib.datacenter.carbon

Electricity is inside a rental price; in ``rent`` mode the model shows what that electricity would cost at p but
does not add it. Used in: book/04-datacenter-economics.md.
"""
from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType
from typing import Mapping

from x4lib.datacenter import carbon, reliability, storage, tco
from x4lib.training import economics
from x4lib.datacenter import facility as dc

MODES = ("own", "rent")
METHOD_VERSION = 1


@dataclasses.dataclass(frozen=True)
class RunCost:
    """Cost, time, energy and carbon of one training run (SI inside; USD)."""
    mode: str
    ideal_s: float
    plan: reliability.CheckpointPlan
    gpu_hours: float
    costs_usd: Mapping           # rental | capital, network, facility, electricity
    electricity_usd: float       # what the run's electricity costs at the given price (inside rental when renting)
    energy_J: float
    co2_kg: float
    assumptions: Mapping

    @property
    def goodput(self) -> float:
        return self.plan.goodput

    @property
    def wall_clock_s(self) -> float:
        return self.ideal_s / self.plan.goodput

    @property
    def wall_clock_days(self) -> float:
        return self.wall_clock_s / 86400.0

    @property
    def ideal_days(self) -> float:
        return self.ideal_s / 86400.0

    @property
    def total_usd(self) -> float:
        return sum(self.costs_usd.values())

    @property
    def failure_overhead_usd(self) -> float:
        """The part of the cost paid for lost time and checkpoint writes: total · (1 − G)."""
        return self.total_usd * (1.0 - self.plan.goodput)

    @property
    def energy_share(self) -> float:
        """Electricity over total cost (in ``rent`` mode: the electricity a rental price contains)."""
        return self.electricity_usd / self.total_usd

    @property
    def energy_MWh(self) -> float:
        return self.energy_J / 3.6e9


def defaults() -> dict:
    """The inputs of :func:`run_cost` that are not the quiz's: sourced values and the chapter's givens."""
    eco = economics.sourced()
    rate = reliability.failure_rate_per_gpu_s(eco["reference_points"]["llama3_unexpected_interruptions"]["value"],
                                              dc.value("llama3_snapshot_days")["value"],
                                              dc.value("llama3_snapshot_gpus")["value"])
    return {
        "mode": "own", "failure_rate_per_gpu_s": rate, "checkpoint_write_Bps": dc.given("checkpoint_write_GBps") * 1e9,
        "restart_s": dc.given("restart_s"), "g_per_kwh": carbon.intensity("United States"),
        "usd_per_gpu_hour": None,   # rent: the dated on-demand snapshot of the device
        "fleet_utilisation": dc.given("utilisation"),
    }


def run_cost(params: float, tokens: float, device: str, n_gpus: int, *, dtype: str = "bf16", mfu: float = 0.5,
             mode: str = "own", usd_per_gpu_hour: float | None = None, usd_per_kwh: float | None = None,
             pue: float | None = None, load_fraction: float | None = None,
             failure_rate_per_gpu_s: float | None = None, checkpoint_write_Bps: float | None = None,
             restart_s: float | None = None, g_per_kwh: float | None = None, fleet_utilisation: float | None = None,
             server_usd: float | None = None, years: float | None = None, interest: float | None = None,
             network_share: float | None = None, colo_usd_per_kw_month: float | None = None) -> RunCost:
    """Cost of one training run under the model of the module docstring. Inputs left None take their sourced
    default (:func:`defaults`, :func:`x4lib.datacenter.tco.defaults`). Raises ValueError naming a bad input."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    d = {**tco.defaults(device), **defaults()}
    usd_per_kwh = d["usd_per_kwh"] if usd_per_kwh is None else usd_per_kwh
    pue = d["pue"] if pue is None else pue
    load_fraction = d["load_fraction"] if load_fraction is None else load_fraction
    lam = d["failure_rate_per_gpu_s"] if failure_rate_per_gpu_s is None else failure_rate_per_gpu_s
    write_Bps = d["checkpoint_write_Bps"] if checkpoint_write_Bps is None else checkpoint_write_Bps
    restart_s = d["restart_s"] if restart_s is None else restart_s
    g_per_kwh = d["g_per_kwh"] if g_per_kwh is None else g_per_kwh
    u = d["fleet_utilisation"] if fleet_utilisation is None else fleet_utilisation

    cluster = tco.tco(device, n_gpus, years=years, utilisation=u, usd_per_kwh=usd_per_kwh, pue=pue,
                      server_usd=server_usd, rental_usd_per_gpu_hour=usd_per_gpu_hour, interest=interest,
                      network_share=network_share, colo_usd_per_kw_month=colo_usd_per_kw_month,
                      load_fraction=load_fraction)
    rental = cluster.rental_usd_per_gpu_hour
    ideal = economics.estimate_training(params, tokens, device, n_gpus, dtype=dtype, mfu=mfu,
                                        usd_per_gpu_hour=rental, usd_per_kwh=usd_per_kwh, pue=pue,
                                        power_scope="server")
    delta = storage.checkpoint_bytes(params) / write_Bps if write_Bps > 0 else math.inf
    if not math.isfinite(delta):
        raise ValueError(f"checkpoint write bandwidth must be > 0, got {write_Bps}")
    plan = reliability.checkpoint_plan(reliability.cluster_mtbf_s(lam, n_gpus), delta, restart_s)
    wall = ideal.wall_clock_s / plan.goodput
    gpu_hours = n_gpus * wall / 3600.0
    energy = ideal.it_power_W * load_fraction * pue * wall
    electricity = energy / carbon.J_PER_KWH * usd_per_kwh
    a = cluster.assumptions
    if mode == "rent":
        costs = {"rental": gpu_hours * rental}
    else:
        per_gpu_hour = 1.0 / (cluster.n_gpus * tco.HOURS_PER_YEAR * u)
        net = a["network_share_of_cluster_cost"]
        costs = {"capital": gpu_hours * cluster.capital_usd_per_year * (1 - net) * per_gpu_hour,
                 "network": gpu_hours * cluster.capital_usd_per_year * net * per_gpu_hour,
                 "facility": gpu_hours * cluster.facility_usd_per_year * per_gpu_hour,
                 "electricity": electricity}
    assumptions = {
        "method_version": METHOD_VERSION, "mode": mode, "params": params, "tokens": tokens, "device": device,
        "n_gpus": int(n_gpus), "dtype": dtype, "mfu": mfu, "rental_usd_per_gpu_hour": rental,
        "usd_per_kwh": usd_per_kwh, "pue": pue, "load_fraction": load_fraction,
        "failure_rate_per_gpu_hour": lam * 3600.0, "mtbf_h": plan.mtbf_s / 3600.0,
        "checkpoint_s": delta, "restart_s": restart_s, "interval_s": plan.interval_s,
        "g_per_kwh": g_per_kwh, "fleet_utilisation": u, "server_usd": a["server_usd"], "years": a["years"],
        "interest_per_year": a["interest_per_year"], "colocation_usd_per_kw_month": a["colocation_usd_per_kw_month"],
    }
    return RunCost(mode, ideal.wall_clock_s, plan, gpu_hours, MappingProxyType(costs), electricity, energy,
                   carbon.emissions_kg(energy, g_per_kwh), MappingProxyType(assumptions))


def solve_for_energy_share(target: float, name: str, low: float, high: float, run) -> float | None:
    """The value of input ``name`` in [low, high] at which ``run(**{name: v}).energy_share`` equals ``target``
    (bisection; the share must be monotone in the input over the range). None when the range does not reach it."""
    if not 0 < target < 1:
        raise ValueError(f"target share must be in (0, 1), got {target}")
    f = lambda v: run(**{name: v}).energy_share - target  # noqa: E731
    f_lo, f_hi = f(low), f(high)
    if f_lo == 0:
        return low
    if f_lo * f_hi > 0:
        return None
    lo, hi = low, high
    for _ in range(100):
        mid = (lo + hi) / 2.0
        f_mid = f(mid)
        if f_mid == 0 or abs(hi - lo) <= 1e-9 * max(1.0, abs(mid)):
            return mid
        if (f_mid < 0) == (f_lo < 0):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def sensitivity(run, ranges: Mapping) -> list[dict]:
    """Total cost when each input alone takes its low and high value: [{input, low, high, usd_low, usd_high,
    usd_base}], ``run(**overrides)`` giving a :class:`RunCost`."""
    base = run().total_usd
    rows = []
    for name, (lo, hi) in ranges.items():
        rows.append({"input": name, "low": lo, "high": hi, "usd_low": run(**{name: lo}).total_usd,
                     "usd_high": run(**{name: hi}).total_usd, "usd_base": base})
    return rows
