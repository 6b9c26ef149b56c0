"""Owning against renting: total cost of ownership of a GPU cluster per GPU-hour, and the break-even utilisation.

Model (units in brackets; n GPUs in s = ceil(n/g) servers of g GPUs; H = 8766 h in a year):

    capital        C = s · S / (1 − f_net)                        [USD]  S: price of one server; f_net: the network's
                                                                         share of cluster hardware cost (Epoch AI: 0.19)
    annual capital A = C · r (1+r)^Y / ((1+r)^Y − 1)             [USD/yr] the annuity that repays C with interest r
                                                                         over Y years (C / Y when r = 0); no resale value
    facility       F = 12 · c_kW · s · P_srv                      [USD/yr] colocation at c_kW USD per kW of IT power per
                                                                         month, on the servers' maximum power P_srv [kW]
    electricity    e = P_srv/g · f_load · PUE · p                 [USD per busy GPU-hour] at p USD/kWh; idle hours'
                                                                         electricity is left out (no sourced idle power)
    owned cost     c(u) = (A + F) / (s·g·H·u) + e                 [USD per GPU-hour of work] at utilisation u
    break-even     c(u*) = R  ⇒  u* = (A + F) / (s·g·H·(R − e))   [–] against a rental price R USD/GPU-hour

Owning is cheaper than renting above u*; u* > 1 means it never is at that rental price, and R ≤ e means the
rental price does not even cover the electricity. Staff, support contracts, spares, software and the buyer's own
building are not counted (a lower bound on the owned cost, which favours owning).
Sources: server prices, network share and server life as dated snapshots in x4lib/data/datacenter.yaml; PUE,
electricity price and load fraction in x4lib/data/economics.yaml. Used in: book/04-datacenter-economics.md.
"""
from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType
from typing import Mapping

from x4lib.datacenter import facility as dc
from x4lib.training import economics
from x4lib.catalog import specs

HOURS_PER_YEAR = dc.HOURS_PER_YEAR
METHOD_VERSION = 1
MIN_UTILISATION = 1e-3  # below 0.1 % busy the cost per GPU-hour of work only grows without bound


def capital_recovery_factor(rate: float, years: float) -> float:
    """Fraction of a capital sum paid each year to repay it with interest ``rate`` (1/yr) over ``years``:
    r(1+r)^Y / ((1+r)^Y − 1), and 1/Y when r = 0 (the standard annuity formula)."""
    if years <= 0 or not math.isfinite(years):
        raise ValueError(f"years must be > 0, got {years}")
    if rate < 0 or not math.isfinite(rate):
        raise ValueError(f"interest rate must be >= 0, got {rate}")
    if rate == 0:
        return 1.0 / years
    g_minus_1 = math.expm1(years * math.log1p(rate))  # (1+r)^Y − 1 without cancelling when r·Y is tiny
    if g_minus_1 < 1e-12:  # r·Y ≪ 1: the factor tends to 1/Y (and the exact form loses every digit)
        return 1.0 / years
    return rate * (g_minus_1 + 1.0) / g_minus_1


@dataclasses.dataclass(frozen=True)
class Tco:
    """One cluster's yearly cost and its cost per GPU-hour (USD; hours of work at ``utilisation``)."""
    n_gpus: int                       # GPUs bought (whole servers)
    servers: int
    capex_usd: float                  # servers + network
    capital_usd_per_year: float       # annuity of capex
    facility_usd_per_year: float
    electricity_usd_per_year: float   # at the given utilisation
    electricity_usd_per_busy_gpu_hour: float
    utilisation: float
    rental_usd_per_gpu_hour: float
    assumptions: Mapping

    @property
    def opex_usd_per_year(self) -> float:
        return self.facility_usd_per_year + self.electricity_usd_per_year

    @property
    def fixed_usd_per_year(self) -> float:
        """What the cluster costs a year whether it works or not: capital and facility."""
        return self.capital_usd_per_year + self.facility_usd_per_year

    def owned_usd_per_gpu_hour(self, utilisation: float | None = None) -> float:
        """c(u) = (A + F)/(n·H·u) + e: cost of one GPU-hour of work at utilisation u (default: the given one)."""
        u = self.utilisation if utilisation is None else utilisation
        if not 0 < u <= 1:
            raise ValueError(f"utilisation must be in (0, 1], got {u}")
        return self.fixed_usd_per_year / (self.n_gpus * HOURS_PER_YEAR * u) + self.electricity_usd_per_busy_gpu_hour

    def break_even_utilisation(self, rental_usd_per_gpu_hour: float | None = None) -> float | None:
        """u* = (A + F)/(n·H·(R − e)); None when the rental price R does not exceed the electricity e."""
        r = self.rental_usd_per_gpu_hour if rental_usd_per_gpu_hour is None else rental_usd_per_gpu_hour
        margin = r - self.electricity_usd_per_busy_gpu_hour
        if margin <= 0:
            return None
        return self.fixed_usd_per_year / (self.n_gpus * HOURS_PER_YEAR * margin)

    def to_json(self) -> dict:
        """The ``tco --json`` contract (x4lib/schemas/tco_output.schema.json)."""
        return {
            "capex_usd": self.capex_usd,
            "opex_usd_per_year": self.opex_usd_per_year,
            "owned_usd_per_gpu_hour": self.owned_usd_per_gpu_hour(),
            "rental_usd_per_gpu_hour": self.rental_usd_per_gpu_hour,
            "break_even_utilisation": self.break_even_utilisation(),
            "assumptions": dict(self.assumptions),
        }


def defaults(device: str = "h100-sxm") -> dict:
    """The sourced defaults of :func:`tco` (and the chapter's givens for interest and utilisation)."""
    eco = economics.sourced()
    return {
        "years": dc.value("server_life_years")["value"],
        "utilisation": dc.given("utilisation"),
        "usd_per_kwh": eco["defaults"]["usd_per_kwh"]["value"],
        "pue": eco["defaults"]["pue"]["value"],
        "interest": dc.given("interest_rate"),
        "network_share": dc.value("network_share_of_cluster_cost")["value"],
        "colo_usd_per_kw_month": dc.value("colocation_usd_per_kw_month")["value"],
        "load_fraction": eco["reference_points"]["epoch_server_tdp_fraction_gpu"]["value"],
        "gpus_per_server": int(dc.value("gpus_per_server")["value"]),
    }


def _check(name, v, low, high=None, low_open=False):
    if not isinstance(v, (int, float)) or not math.isfinite(v) or (v <= low if low_open else v < low) or \
            (high is not None and v > high):
        rng = f"{'>' if low_open else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
        raise ValueError(f"{name} must be {rng}, got {v}")


def tco(device: str = "h100-sxm", n_gpus: int = 1024, *, years: float | None = None,
        utilisation: float | None = None, usd_per_kwh: float | None = None, pue: float | None = None,
        server_usd: float | None = None, rental_usd_per_gpu_hour: float | None = None,
        interest: float | None = None, network_share: float | None = None,
        colo_usd_per_kw_month: float | None = None, load_fraction: float | None = None,
        gpus_per_server: int | None = None) -> Tco:
    """Total cost of ownership of ``n_gpus`` of ``device`` (see the module docstring). Every keyword left None
    takes its sourced default (:func:`defaults`); the server price defaults to datacenter.yaml's listing for
    the device and the rental price to its first on-demand snapshot. Raises ValueError / LookupError naming
    the bad input."""
    d = defaults(device)
    years = d["years"] if years is None else years
    utilisation = d["utilisation"] if utilisation is None else utilisation
    usd_per_kwh = d["usd_per_kwh"] if usd_per_kwh is None else usd_per_kwh
    pue = d["pue"] if pue is None else pue
    interest = d["interest"] if interest is None else interest
    network_share = d["network_share"] if network_share is None else network_share
    colo = d["colo_usd_per_kw_month"] if colo_usd_per_kw_month is None else colo_usd_per_kw_month
    load_fraction = d["load_fraction"] if load_fraction is None else load_fraction
    g = d["gpus_per_server"] if gpus_per_server is None else gpus_per_server
    if not isinstance(n_gpus, (int, float)) or not math.isfinite(n_gpus) or n_gpus < 1 or int(n_gpus) != n_gpus:
        raise ValueError(f"gpus must be a whole number >= 1, got {n_gpus}")
    if int(g) != g or g < 1:
        raise ValueError(f"gpus per server must be a whole number >= 1, got {g}")
    _check("years", years, 0, 50, low_open=True)
    _check("utilisation", utilisation, 0, 1, low_open=True)
    _check("usd_per_kwh", usd_per_kwh, 0, 1000)
    _check("pue", pue, 1, 10)
    _check("interest", interest, 0, 1)
    _check("network_share", network_share, 0, 0.95)
    _check("colo_usd_per_kw_month", colo, 0, 1e5)
    _check("load_fraction", load_fraction, 0, 1, low_open=True)
    dev = specs.get(device)
    if "server_power_w_per_gpu" not in dev.values:
        raise LookupError(f"device {dev.id} has no published whole-server power; the TCO needs it "
                          f"(devices with it: {', '.join(i for i, x in specs.load_catalog().items() if 'server_power_w_per_gpu' in x.values)})")
    price_source = "given"
    if server_usd is None:
        server_usd = dc.server_price_usd(dev.id)
        price_source = dc.value("server_price_" + dev.id.replace("-", "_"))["source"]
    _check("server_usd", server_usd, 0, 1e9, low_open=True)
    rental_source = "given"
    if rental_usd_per_gpu_hour is None:
        row = dc.rental_price(dev.id, "on-demand")
        rental_usd_per_gpu_hour = row["value"]
        rental_source = f"{row['provider']} {row['tier']} {row['date']} ({row['source']})"
    _check("rental_usd_per_gpu_hour", rental_usd_per_gpu_hour, 0, 1e4)

    servers = math.ceil(n_gpus / g)
    gpus = servers * int(g)
    server_kW = dev.values["server_power_w_per_gpu"].si * g / 1e3
    capex = servers * server_usd / (1.0 - network_share)
    annual_capital = capex * capital_recovery_factor(interest, years)
    facility = 12.0 * colo * servers * server_kW
    e_busy = server_kW / g * load_fraction * pue * usd_per_kwh
    electricity = e_busy * gpus * HOURS_PER_YEAR * utilisation
    assumptions = {
        "method_version": METHOD_VERSION, "device": dev.id, "gpus_requested": int(n_gpus), "gpus_bought": gpus,
        "gpus_per_server": int(g), "servers": servers, "server_usd": server_usd, "server_price_source": price_source,
        "network_share_of_cluster_cost": network_share, "years": years, "interest_per_year": interest,
        "utilisation": utilisation, "hours_per_year": HOURS_PER_YEAR,
        "server_max_power_kw": server_kW, "power_source": dev.values["server_power_w_per_gpu"].source,
        "load_fraction": load_fraction, "pue": pue, "usd_per_kwh": usd_per_kwh,
        "colocation_usd_per_kw_month": colo, "rental_source": rental_source,
        "capital_usd_per_year": annual_capital, "facility_usd_per_year": facility,
        "electricity_usd_per_year": electricity, "electricity_usd_per_busy_gpu_hour": e_busy,
        "excluded": "staff, support contracts, spares, software, resale value, idle-hour electricity",
    }
    return Tco(gpus, servers, capex, annual_capital, facility, electricity, e_busy, utilisation,
               rental_usd_per_gpu_hour, MappingProxyType(assumptions))


SENSITIVITY_INPUTS = ("server_usd", "years", "interest", "pue", "usd_per_kwh", "colo_usd_per_kw_month",
                      "network_share")


def break_even_sensitivity(device: str = "h100-sxm", n_gpus: int = 1024, ranges: Mapping | None = None,
                           **base) -> list[dict]:
    """Break-even utilisation when each input alone takes its low and its high value (the others at ``base``).
    ``ranges`` = {input: (low, high)}; returns [{input, low, high, u_low, u_high}] in the order given
    (u is None where the rental price does not cover the electricity)."""
    ref = tco(device, n_gpus, **base)
    rows = []
    for name, (lo, hi) in (ranges or {}).items():
        if name not in SENSITIVITY_INPUTS + ("rental_usd_per_gpu_hour",):
            raise ValueError(f"no sensitivity for {name!r}; use one of {', '.join(SENSITIVITY_INPUTS)}")
        u = [tco(device, n_gpus, **{**base, name: v}).break_even_utilisation() for v in (lo, hi)]
        rows.append({"input": name, "low": lo, "high": hi, "u_low": u[0], "u_high": u[1],
                     "u_base": ref.break_even_utilisation()})
    return rows


# ------------------------------------------------------------------- command line: python -m x4lib tco

def _devices_with_server_power() -> list[str]:
    return [i for i, d in specs.load_catalog().items() if "server_power_w_per_gpu" in d.values]


def cli_arguments(p) -> None:
    from x4lib import cli
    p.description = ("Cost per GPU-hour of owning a cluster against renting it, and the break-even utilisation. "
                     "Defaults are the sourced values of x4lib/data/datacenter.yaml and economics.yaml.")
    p.add_argument("--device", default="h100-sxm", type=cli.choice_of("device", _devices_with_server_power),
                   help="catalog id of a device with a published whole-server power")
    p.add_argument("--gpus", type=cli.number("GPUs", 1, 1e7, integer=True), default=1024)
    p.add_argument("--years", type=cli.number("years", 0, 50, low_open=True), help="depreciation period")
    p.add_argument("--utilisation", type=cli.number("utilisation", MIN_UTILISATION, 1),
                   help=f"in [{MIN_UTILISATION:g}, 1]")
    p.add_argument("--usd-per-kwh", type=cli.number("USD/kWh", 0, 1000))
    p.add_argument("--pue", type=cli.number("PUE", 1, 10), help=">= 1")
    p.add_argument("--server-usd", type=cli.number("USD per server", 0, 1e9, low_open=True),
                   help="price of one server (default: the dated listing in datacenter.yaml)")
    p.add_argument("--gpus-per-server", type=cli.number("GPUs per server", 1, 1024, integer=True))
    p.add_argument("--rental-usd-per-gpu-hour", type=cli.number("USD/GPU-hour", 0, 1e4),
                   help="rental price to compare with (default: the dated on-demand snapshot)")
    p.add_argument("--interest", type=cli.number("interest per year", 0, 1), help="cost of capital, e.g. 0.08")
    p.add_argument("--network-share", type=cli.number("network share", 0, 0.95),
                   help="network's share of cluster hardware cost")
    p.add_argument("--colo-usd-per-kw-month", type=cli.number("USD per kW-month", 0, 1e5))
    p.add_argument("--load-fraction", type=cli.number("load fraction", 0, 1, low_open=True),
                   help="average fraction of maximum server power while busy")
    p.add_argument("--json", action="store_true", help="machine-readable output (schemas/tco_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    t = tco(args.device, args.gpus, years=args.years, utilisation=args.utilisation, usd_per_kwh=args.usd_per_kwh,
            pue=args.pue, server_usd=args.server_usd, rental_usd_per_gpu_hour=args.rental_usd_per_gpu_hour,
            interest=args.interest, network_share=args.network_share,
            colo_usd_per_kw_month=args.colo_usd_per_kw_month, load_fraction=args.load_fraction,
            gpus_per_server=args.gpus_per_server)
    j = t.to_json()
    a = j["assumptions"]
    u_star = j["break_even_utilisation"]
    verdict = ("never: the rental price does not cover the electricity" if u_star is None else
               f"{u_star:.3f}" + (" (above 1: owning never pays at this rental price)" if u_star > 1 else ""))
    cli.emit(j, "\n".join([
        f"cluster          {a['gpus_bought']} × {a['device']} in {a['servers']} servers "
        f"of {a['gpus_per_server']} at ${a['server_usd']:,.0f}",
        f"capex            ${j['capex_usd']:,.0f} (network {a['network_share_of_cluster_cost']:.0%} of it)",
        f"capital per year ${a['capital_usd_per_year']:,.0f} ({a['years']:g} years at {a['interest_per_year']:.1%})",
        f"opex per year    ${j['opex_usd_per_year']:,.0f} (facility ${a['facility_usd_per_year']:,.0f}, "
        f"electricity ${a['electricity_usd_per_year']:,.0f} at PUE {a['pue']:g}, ${a['usd_per_kwh']:g}/kWh)",
        f"owned            ${j['owned_usd_per_gpu_hour']:.3f} per GPU-hour of work at utilisation {a['utilisation']:g}",
        f"rental           ${j['rental_usd_per_gpu_hour']:.3f} per GPU-hour ({a['rental_source']})",
        f"break-even       utilisation {verdict}",
    ]), as_json=args.json)
    return 0
