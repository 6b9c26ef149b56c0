"""Page helpers of chapter 04 (book/04-datacenter-economics.md): the power chain, owning against renting, the
"60 % energy" test, reliability and goodput, storage, carbon, the cost of a token, and the one cost model with its
explorer. The models are x4lib.datacenter.facility, tco, reliability, storage, carbon, serving and runcost; the data are
x4lib/data/datacenter.yaml and economics.yaml; the quiz's givens come from chapter 00 (x4lib/data/givens.yaml).
"""
from __future__ import annotations

import functools
import math
from typing import Mapping

from x4lib.datacenter import carbon, reliability, runcost, storage, tco
from x4lib.training import economics
from x4lib.serving import token_cost as serving
from x4lib.catalog import specs
from x4lib.datacenter import facility as dc
from x4lib.book.tables import Col, fmt_value, table

WATER_CP_J_PER_KG_K = 4186.0     # liquid water near 20 °C (textbook value)
WATER_DENSITY_KG_PER_M3 = 1000.0
#: the claim of the module page the book started from: "frontier training cost is 60% energy" (tested, not a fact)
CLAIMED_ENERGY_SHARE = 0.6


def quiz() -> Mapping:
    """Chapter 00's quiz givens (70B parameters, 1T tokens, 1024 H100 SXM, BF16, MFU 0.5)."""
    return economics.quiz_givens()


def quiz_run(**over) -> runcost.RunCost:
    """The quiz run under the one cost model; ``over`` overrides any input of :func:`x4lib.datacenter.runcost.run_cost`."""
    g = quiz()
    kw = {"dtype": g["dtype"], "mfu": g["mfu"], **over}
    params = kw.pop("params", g["params"])
    tokens = kw.pop("tokens", g["tokens"])
    device = kw.pop("device", g["device"])
    n = kw.pop("n_gpus", g["n_gpus"])
    return runcost.run_cost(params, tokens, device, n, **kw)


def _eco(key: str, group: str = "reference_points") -> float:
    return economics.sourced()[group][key]["value"]


# ------------------------------------------------------------------------------------------------ power chain

def rack_limits(gpus: int | None = None) -> list[dict]:
    """Rack power limits from the sources, and what they mean for a cluster of ``gpus`` H100 in DGX H100 servers
    (default: the quiz's)."""
    server_kW = specs.get("h100-sxm").values["server_power_w_per_gpu"].value * 8 / 1e3
    servers = math.ceil((gpus or quiz()["n_gpus"]) / 8)
    rows = []
    sp = dc.value("superpod_h100_dgx_per_rack")
    for label, kW, src, cooling, per_rack in (
            ("typical rack, 2025 survey mode", dc.value("typical_rack_kw_2025")["value"], "uptime-density-2026", "air",
             None),
            ("DGX H100 SuperPOD compute rack (NVIDIA's layout)", sp["value"] * server_kW,
             f"{sp['source']}, nvidia-superpod-h100-ra", "air", sp["value"]),
            ("GB200 reference rack, power-shelf supply rating (redundant)",
             dc.value("gb200_rack_power_shelf_kw")["value"] * dc.value("gb200_rack_power_shelves")["value"],
             "nvidia-bcm-power-shelf", "liquid", 0)):
        if per_rack is None:
            per_rack = max(0, math.floor(kW / server_kW + 1e-9))
        if cooling == "liquid":                          # air-cooled DGX H100 do not go into a liquid-cooled rack
            text = "not for air-cooled DGX H100"
        else:
            text = f"{math.ceil(servers / per_rack):,}" if per_rack else "not one server fits"
        rows.append({"rack": label, "cooling": cooling, "kW": kW, "per_rack": per_rack or None,
                     "racks": math.ceil(servers / per_rack) if per_rack else None,
                     "racks_text": text, "source": src})
    return rows


def rack_table(gpus: int | None = None):
    n = gpus or quiz()["n_gpus"]
    return table(rack_limits(n), {
        "rack": Col("rack", wrap=True), "cooling": "cooling", "kW": Col("power per rack", "kW", "{:,.0f}"),
        "per_rack": Col("DGX H100 per rack", None, "{:,.0f}"), "racks_text": Col(f"racks for {n:,} GPUs"),
        "source": "source"})


def power_chain_rows(device: str | None = None, gpus: int | None = None) -> list[dict]:
    """A cluster of ``gpus`` ``device`` (default: the quiz's) from chip to grid at the hyperscale and the
    industry-average PUE."""
    g = quiz()
    device, gpus = device or g["device"], gpus or g["n_gpus"]
    lf = _eco("epoch_server_tdp_fraction_gpu")
    rows = []
    for label, pue in (("hyperscale PUE", _eco("pue_hyperscaler")), ("industry-average PUE", _eco("pue", "defaults"))):
        pc = dc.power_chain(device, gpus, pue, dc.value("superpod_h100_rack_kw")["value"] * 1e3, lf)
        rows.append({"case": label, "pue": pue, "gpus_kW": pc.gpu_W * pc.n_gpus / 1e3, "it_kW": pc.it_W / 1e3,
                     "facility_kW": pc.facility_W / 1e3, "average_kW": pc.average_W / 1e3})
    return rows


def power_chain_table(device: str | None = None, gpus: int | None = None):
    return table(power_chain_rows(device, gpus), {
        "case": "case", "pue": Col("PUE", None, "{:.2f}"), "gpus_kW": Col("GPUs alone", "kW", "{:,.0f}"),
        "it_kW": Col("whole servers (IT)", "kW", "{:,.0f}"), "facility_kW": Col("facility, maximum", "kW", "{:,.0f}"),
        "average_kW": Col("facility, average in training", "kW", "{:,.0f}")})


def electricity_rows(run: runcost.RunCost | None = None) -> list[dict]:
    """Dated electricity prices, and what ``run``'s electricity (default: the quiz run's) costs at each (USD prices
    only)."""
    base = run or quiz_run()
    kwh = base.energy_J / carbon.J_PER_KWH
    rows = []
    for r in sorted(dc.data()["electricity_prices"], key=lambda r: (r["unit"], r["value"])):
        usd = dc.electricity_usd_per_kwh(r)
        rows.append({"region": r["region"], "sector": r["sector"], "period": r["period"],
                     "price": f"{r['value']:g} {r['unit']}", "run_usd": kwh * usd if usd is not None else None,
                     "source": r["source"]})
    return rows


def electricity_table(run: runcost.RunCost | None = None):
    return table(electricity_rows(run), {
        "region": Col("region", wrap=True), "sector": "customer class", "period": "period", "price": "price",
        "run_usd": Col("quiz run's electricity", "USD", "{:,.0f}"), "source": "source"})


# ----------------------------------------------------------------------------------------- owning vs renting

def cluster_tco(**over) -> tco.Tco:
    """The quiz cluster (1024 H100 SXM) owned, sourced defaults unless overridden."""
    return tco.tco(quiz()["device"], quiz()["n_gpus"], **over)


def tco_rows(t: tco.Tco | None = None) -> list[dict]:
    t = t or cluster_tco()
    a = t.assumptions
    return [
        {"item": "capital: servers and network", "value": t.capex_usd, "unit": "USD"},
        {"item": f"capital per year ({a['years']:g} years, {a['interest_per_year']:.0%} interest)",
         "value": t.capital_usd_per_year, "unit": "USD/year"},
        {"item": "colocation per year", "value": t.facility_usd_per_year, "unit": "USD/year"},
        {"item": f"electricity per year at utilisation {t.utilisation:g}", "value": t.electricity_usd_per_year,
         "unit": "USD/year"},
        {"item": f"owned, per GPU-hour of work at utilisation {t.utilisation:g}",
         "value": t.owned_usd_per_gpu_hour(), "unit": "USD/GPU-h"},
        {"item": "rental, on demand (dated snapshot)", "value": t.rental_usd_per_gpu_hour, "unit": "USD/GPU-h"},
        {"item": "break-even utilisation", "value": t.break_even_utilisation(), "unit": "fraction"},
    ]


def tco_table(t: tco.Tco | None = None):
    rows = [{**r, "shown": fmt_value(r["value"], fmt="{:,.3f}" if r["value"] < 100 else "{:,.0f}")}
            for r in tco_rows(t)]
    return table(rows, {"item": Col("quantity", wrap=True), "shown": Col("value"), "unit": "unit"})


def spot_prices() -> dict:
    """Spot prices implied by Google's stated discount range on its dated on-demand H100 price (USD/GPU-h)."""
    od = dc.rental_price("h100-sxm", "on-demand", "Google Cloud")["value"]
    return {"min_discount": od * (1 - dc.value("spot_discount_min")["value"]),
            "max_discount": od * (1 - dc.value("spot_discount_max")["value"])}


def rental_rows(t: tco.Tco | None = None) -> list[dict]:
    """Dated rental snapshots with the break-even utilisation of the owned cluster ``t`` (default: the quiz's)
    against each."""
    t = t or cluster_tco()
    rows = []
    for r in dc.data()["rental_snapshots"]:
        rows.append({"offer": f"{r['provider']}, {r['sku']}", "tier": r["tier"], "date": r["date"],
                     "price": r["value"], "u": t.break_even_utilisation(r["value"]), "source": r["source"]})
    sp = spot_prices()
    for label, key, disc in (("60 % off", "min_discount", "spot_discount_min"),
                             ("91 % off", "max_discount", "spot_discount_max")):
        rows.append({"offer": f"Google Cloud H100 at the spot discount of {label}", "tier": "spot",
                     "date": dc.rental_price("h100-sxm", "on-demand", "Google Cloud")["date"],
                     "price": sp[key], "u": t.break_even_utilisation(sp[key]), "source": "google-spot-pricing"})
    return rows


def _u_text(u):
    if u is None:
        return "never (below electricity)"
    return "never (above 1)" if u > 1 else f"{u:.2f}"


def rental_table(t: tco.Tco | None = None):
    rows = [{**r, "u_text": _u_text(r["u"])} for r in rental_rows(t)]
    return table(rows, {"offer": Col("offer", wrap=True), "tier": "tier", "date": "snapshot",
                        "price": Col("price", "USD/GPU-h", "{:,.2f}"), "u_text": "break-even utilisation",
                        "source": "source"})


def server_price_table():
    rows = [dict(r) for r in dc.data()["server_price_snapshots"]]
    return table(rows, {"system": Col("system", wrap=True), "scope": "scope", "date": "snapshot",
                        "value": Col("price", "USD", "{:,.0f}"), "source": "source"})


#: input -> (low, high, where the range comes from) for the break-even and cost sensitivities
def sensitivity_ranges(run_inputs: bool = False) -> dict:
    """The owned cluster's inputs; with ``run_inputs`` also the run's own (MFU, failure rate, fleet utilisation,
    checkpoint bandwidth), which only the cost sensitivity varies."""
    snaps = [r["value"] for r in dc.data()["server_price_snapshots"] if r["device"] == "h100-sxm" and r["scope"] == "server"]
    us = [dc.electricity_usd_per_kwh(r) for r in dc.data()["electricity_prices"] if r["sector"] == "industrial"]
    ranges = {
        "server_usd": (min(snaps), max(snaps), "whole-server listings, 2023-2025"),
        "years": (4.0, 6.0, "server lives in Amazon's and Microsoft's filings"),
        "interest": (0.0, 0.15, "assumed range"),
        "pue": (_eco("pue_hyperscaler"), _eco("pue", "defaults"), "Google fleet to Uptime average"),
        "usd_per_kwh": (min(us), max(us), "U.S. industrial prices by state, EIA"),
        "colo_usd_per_kw_month": (163.44, dc.value("colocation_usd_per_kw_month")["value"], "CBRE H2 2023 to H2 2024"),
    }
    if run_inputs:
        fs = failure_scenarios()
        ranges.update({
            "mfu": (_eco("llama3_mfu_low"), _eco("llama3_mfu_high"), "Llama 3 measured range"),
            "failure_rate_per_gpu_s": (fs["Llama 3 interruptions"], fs["research-cluster MTTF"],
                                       "Llama 3 to research-cluster MTTF"),
            "fleet_utilisation": (0.5, 1.0, "assumed range"),
            "checkpoint_write_Bps": (10e9, 200e9, "assumed range, 10 to 200 GB/s")})
    return ranges


SENS_LABELS = {"server_usd": "server price", "years": "depreciation years", "interest": "interest rate",
               "pue": "PUE", "usd_per_kwh": "electricity price", "colo_usd_per_kw_month": "colocation price",
               "mfu": "MFU", "failure_rate_per_gpu_s": "failure rate", "fleet_utilisation": "fleet utilisation",
               "checkpoint_write_Bps": "checkpoint write bandwidth"}


def break_even_sensitivity_table(device: str | None = None, gpus: int | None = None, ranges: Mapping | None = None):
    """Break-even utilisation of ``gpus`` owned ``device`` (default: the quiz cluster) when each input alone takes
    the low and high value of ``ranges`` ({input: (low, high, where from)}, default :func:`sensitivity_ranges`)."""
    ranges = ranges or sensitivity_ranges()
    rows = tco.break_even_sensitivity(device or quiz()["device"], gpus or quiz()["n_gpus"],
                                      {k: v[:2] for k, v in ranges.items()})
    out = []
    for r in rows:
        fmt = "{:,.0f}" if r["input"] in ("server_usd", "colo_usd_per_kw_month") else "{:g}"
        out.append({"input": SENS_LABELS[r["input"]], "range": f"{fmt.format(r['low'])} to {fmt.format(r['high'])}",
                    "basis": ranges[r["input"]][2], "u_low": _u_text(r["u_low"]), "u_high": _u_text(r["u_high"])})
    return table(out, {"input": "input", "range": "range", "basis": Col("range from", wrap=True),
                       "u_low": "break-even at low", "u_high": "break-even at high"})


def break_even_curve(points: int = 60):
    """(utilisations, owned USD/GPU-h, {label: price}, {label: u*}) for the owned-vs-rental figure."""
    t = cluster_tco()
    us = [0.05 + 0.95 * i / (points - 1) for i in range(points)]
    prices = {}
    for tier, provider in (("on-demand", "RunPod"), ("reserved-3y", "Google Cloud"), ("on-demand", "AWS")):
        r = dc.rental_price("h100-sxm", tier, provider)
        prices[f"{provider} {tier}, {r['date']}: {r['value']:.2f} USD"] = r["value"]
    sp = spot_prices()["min_discount"]
    prices[f"Google on-demand at 60 % spot discount: {sp:.2f} USD"] = sp
    return us, [t.owned_usd_per_gpu_hour(u) for u in us], prices, {k: t.break_even_utilisation(v) for k, v in prices.items()}


# -------------------------------------------------------------------------------------------- "60 % energy"

def energy_share_rows(claim: float = CLAIMED_ENERGY_SHARE) -> list[dict]:
    """The quiz run's electricity share of its cost under several conditions, and the electricity price the claimed
    share (default 60 %) would need."""
    own = quiz_run()
    ded = quiz_run(fleet_utilisation=1.0)
    rent = quiz_run(mode="rent")
    run1 = lambda **o: quiz_run(fleet_utilisation=1.0, **o)  # noqa: E731
    p_star = runcost.solve_for_energy_share(claim, "usd_per_kwh", 0.01, 100.0, run1)
    free_hw = run1(server_usd=1.0)
    long_life = run1(years=50.0, interest=0.0)
    power_related = (ded.costs_usd["facility"] + ded.costs_usd["electricity"]) / ded.total_usd
    return [
        {"case": "owned, fleet busy 70 % of the year (sourced inputs)", "share": own.energy_share},
        {"case": "owned, cluster busy all year", "share": ded.energy_share},
        {"case": "rented on demand: electricity inside the price", "share": rent.energy_share},
        {"case": "owned, busy all year, facility counted as energy too", "share": power_related},
        {"case": "owned, hardware free (facility still paid)", "share": free_hw.energy_share},
        {"case": "owned, 50-year life at 0 % interest", "share": long_life.energy_share},
        {"case": f"owned, electricity at {p_star:.2f} USD/kWh", "share": run1(usd_per_kwh=p_star).energy_share},
    ]


def energy_share_table(claim: float = CLAIMED_ENERGY_SHARE):
    return table(energy_share_rows(claim), {"case": Col("case", wrap=True),
                                            "share": Col("electricity share", None, "{:.1%}")})


# ---------------------------------------------------------------------------------------------- reliability

def failure_scenarios() -> dict:
    """Failure rates per GPU-second: from Llama 3's interruptions, and from Kokolis et al.'s 1024-GPU MTTF."""
    llama = runcost.defaults()["failure_rate_per_gpu_s"]
    kok = 1.0 / (dc.value("kokolis_mttf_1024_h")["value"] * 3600.0 * 1024)
    return {"Llama 3 interruptions": llama, "research-cluster MTTF": kok}


def reliability_rows(rates: Mapping[str, float] | None = None) -> list[dict]:
    """The quiz run without failures and at each failure rate of ``rates`` ({where from: per GPU-second}, default
    :func:`failure_scenarios`)."""
    rows = []
    base = quiz_run()
    for label, lam in (rates or failure_scenarios()).items():
        r = quiz_run(failure_rate_per_gpu_s=lam)
        p = r.plan
        rows.append({"rate from": label, "mtbf_h": p.mtbf_s / 3600, "delta_s": p.checkpoint_s,
                     "young_min": p.young_interval_s / 60, "daly_min": p.interval_s / 60, "goodput": p.goodput,
                     "days": r.wall_clock_days, "extra_usd": r.failure_overhead_usd})
    rows.insert(0, {"rate from": "no failures", "mtbf_h": None, "delta_s": None, "young_min": None, "daly_min": None,
                    "goodput": 1.0, "days": base.ideal_days, "extra_usd": 0.0})
    return rows


def reliability_table(rates: Mapping[str, float] | None = None):
    return table(reliability_rows(rates), {
        "rate from": "failure rate from", "mtbf_h": Col("job MTBF", "h", "{:,.1f}"),
        "delta_s": Col("checkpoint write", "s", "{:,.1f}"), "young_min": Col("Young interval", "min", "{:,.1f}"),
        "daly_min": Col("Daly interval", "min", "{:,.1f}"), "goodput": Col("goodput", None, "{:.3f}"),
        "days": Col("wall clock", "days", "{:,.2f}"), "extra_usd": Col("cost of lost time", "USD", "{:,.0f}")})


def mtbf_vs_gpus_rows(counts=(8, 64, 512, 1024, 4096, 16384, 65536)) -> list[dict]:
    lam = failure_scenarios()["Llama 3 interruptions"]
    delta = storage.checkpoint_bytes(quiz()["params"]) / (dc.given("checkpoint_write_GBps") * 1e9)
    rows = []
    for n in counts:
        m = reliability.cluster_mtbf_s(lam, n)
        plan = reliability.checkpoint_plan(m, delta, dc.given("restart_s"))
        rows.append({"gpus": n, "mtbf_h": m / 3600, "interval_min": plan.interval_s / 60, "goodput": plan.goodput})
    return rows


def mtbf_table(gpus=(8, 64, 512, 1024, 4096, 16384, 65536)):
    return table(mtbf_vs_gpus_rows(gpus), {
        "gpus": Col("GPUs", None, "{:,.0f}"), "mtbf_h": Col("job MTBF", "h", "{:,.1f}"),
        "interval_min": Col("Daly interval", "min", "{:,.1f}"), "goodput": Col("goodput", None, "{:.3f}")})


def goodput_curves(points: int = 80):
    """Goodput against the interval for the quiz run under both failure scenarios, with Daly's and Young's marks."""
    curves, marks = [], {}
    for label, lam in failure_scenarios().items():
        p = quiz_run(failure_rate_per_gpu_s=lam).plan
        lo, hi = math.log(p.interval_s / 30), math.log(p.interval_s * 30)
        taus = [math.exp(lo + (hi - lo) * i / (points - 1)) for i in range(points)]
        curves.append((f"{label}: MTBF {p.mtbf_s / 3600:.1f} h",
                       [t / 60 for t in taus],
                       [reliability.goodput(t, p.mtbf_s, p.checkpoint_s, p.restart_s) for t in taus]))
        marks[f"Daly interval, {label}"] = (p.interval_s / 60, p.goodput)
    return curves, marks


# -------------------------------------------------------------------------------------------------- storage

def storage_demand(run: runcost.RunCost | None = None) -> storage.StorageDemand:
    """What ``run`` (default: the quiz run) reads and writes."""
    r = run or quiz_run()
    params, tokens = r.assumptions["params"], r.assumptions["tokens"]
    rate = r.ideal_s and (economics.training_flop(params, tokens) / r.ideal_s)
    return storage.storage_demand(params, tokens, rate, dc.given("bytes_per_token_stored"),
                                  dc.given("checkpoint_write_GBps") * 1e9, r.plan.interval_s)


def storage_table(run: runcost.RunCost | None = None):
    s = storage_demand(run)
    rows = [
        {"quantity": "tokens consumed", "value": f"{s.tokens_per_s:,.0f}", "unit": "tokens/s"},
        {"quantity": "input read", "value": f"{s.input_read_Bps / 1e6:,.1f}", "unit": "MB/s"},
        {"quantity": "whole dataset, read once", "value": f"{s.dataset_B / 1e12:,.1f}", "unit": "TB"},
        {"quantity": "one checkpoint (weights and Adam state)", "value": f"{s.checkpoint_B / 1e12:,.2f}", "unit": "TB"},
        {"quantity": "checkpoint write, burst", "value": f"{s.write_Bps / 1e9:,.0f}", "unit": "GB/s"},
        {"quantity": "checkpoint write time", "value": f"{s.checkpoint_s:,.1f}", "unit": "s"},
        {"quantity": "checkpoint write, averaged over the interval", "value": f"{s.average_write_Bps / 1e6:,.0f}",
         "unit": "MB/s"},
    ]
    return table(rows, {"quantity": Col("quantity", wrap=True), "value": Col("value"), "unit": "unit"})


# --------------------------------------------------------------------------------------------------- carbon

def carbon_rows(run: runcost.RunCost | None = None) -> list[dict]:
    """``run``'s emissions (default: the quiz run's) on each grid."""
    r = run or quiz_run()
    return [{"region": c["region"], "period": c["period"], "g": c["value"], "unit": c["unit"],
             "t": carbon.emissions_kg(r.energy_J, c["value"]) / 1e3, "source": c["source"]}
            for c in carbon.intensity_rows()]


def carbon_table(run: runcost.RunCost | None = None):
    return table(carbon_rows(run), {"region": "grid", "period": "year", "g": Col("intensity", None, "{:,.0f}"),
                                 "unit": "unit", "t": Col("quiz run", "t CO2e", "{:,.0f}"), "source": "source"})


# --------------------------------------------------------------------------------------------------- serving

def serving_point(**over) -> serving.ServingPoint:
    kw = {"model_id": "llama3-70b", "device": "h100-sxm", "n_gpus": 8, "dtype": "bf16",
          "batch": int(dc.given("serve_batch")), "context_tokens": int(dc.given("serve_context_tokens")),
          "memory_efficiency": dc.given("serve_memory_efficiency"), "mfu": dc.given("serve_prefill_mfu"),
          "usd_per_gpu_hour": dc.rental_price("h100-sxm", "on-demand")["value"],
          "utilisation": dc.given("serve_utilisation"), **over}
    return serving.serve(**kw)


def serving_rows(model_id: str = "llama3-70b", device: str = "h100-sxm", n_gpus: int = 8) -> list[dict]:
    """``model_id`` served on ``n_gpus`` ``device``: batch 1 and the given batch, BF16 and FP8, rented on demand and
    owned."""
    u = dc.given("serve_utilisation")
    # owned: what one GPU costs per wall-clock hour, busy or idle (fixed costs + electricity of the busy share)
    e_hour = tco.tco(device, quiz()["n_gpus"], utilisation=u).owned_usd_per_gpu_hour(u) * u
    base = {"model_id": model_id, "device": device, "n_gpus": n_gpus,
            "usd_per_gpu_hour": dc.rental_price(device, "on-demand")["value"]}
    cases = [
        ("BF16, batch 1, rented", {"batch": 1}),
        ("BF16, batch 64, rented", {}),
        ("FP8, batch 64, rented", {"dtype": "fp8_e4m3"}),
        ("BF16, batch 64, owned", {"usd_per_gpu_hour": e_hour}),
    ]
    rows = []
    for label, over in cases:
        p = serving_point(**{**base, **over})
        rows.append({"case": label, "price": p.usd_per_gpu_hour, "decode": p.decode_tokens_per_s,
                     "bound": p.decode_bound, "decode_usd": p.decode_usd_per_million,
                     "prefill_usd": p.prefill_usd_per_million})
    return rows


def serving_table(model_id: str = "llama3-70b", device: str = "h100-sxm", n_gpus: int = 8):
    return table(serving_rows(model_id, device, n_gpus), {
        "case": Col("case", wrap=True), "price": Col("GPU price", "USD/GPU-h", "{:,.2f}"),
        "decode": Col(f"decode, {n_gpus} GPUs", "tokens/s", "{:,.0f}"), "bound": "decode bound",
        "decode_usd": Col("output tokens", "USD per million", "{:,.2f}"),
        "prefill_usd": Col("input tokens", "USD per million", "{:,.3f}")})


# ------------------------------------------------------------------------------------------ one cost model

def breakdown_rows(r: runcost.RunCost, label: str) -> list[dict]:
    return [{"scenario": label, "item": k, "usd": v} for k, v in r.costs_usd.items()]


def run_summary_rows(cases: Mapping[str, runcost.RunCost]) -> list[dict]:
    rows = []
    for label, r in cases.items():
        c = r.costs_usd
        rows.append({"scenario": label, "days": r.wall_clock_days, "goodput": r.goodput,
                     "hardware": c.get("capital", 0) + c.get("network", 0), "facility": c.get("facility"),
                     "electricity": c.get("electricity"), "rental": c.get("rental"), "total": r.total_usd,
                     "mwh": r.energy_MWh, "tco2": r.co2_kg / 1e3})
    return rows


def run_summary_table(cases: Mapping[str, runcost.RunCost]):
    return table(run_summary_rows(cases), {
        "scenario": Col("scenario", wrap=True), "days": Col("wall clock", "days", "{:,.2f}"),
        "goodput": Col("goodput", None, "{:.3f}"), "hardware": Col("servers and network", "USD", "{:,.0f}"),
        "facility": Col("colocation", "USD", "{:,.0f}"), "electricity": Col("electricity", "USD", "{:,.0f}"),
        "rental": Col("rental", "USD", "{:,.0f}"), "total": Col("total", "USD", "{:,.0f}"),
        "mwh": Col("energy", "MWh", "{:,.0f}"), "tco2": Col("emissions", "t CO2e", "{:,.0f}")})


def cost_sensitivity_rows(ranges: Mapping | None = None) -> list[dict]:
    """Total cost of the owned quiz run when each input alone takes the low and high value of ``ranges``
    ({input: (low, high, where from)}, default :func:`sensitivity_ranges` with the run's inputs)."""
    ranges = ranges or sensitivity_ranges(run_inputs=True)
    return runcost.sensitivity(quiz_run, {k: v[:2] for k, v in ranges.items()})


def tornado_rows():
    rows = cost_sensitivity_rows()
    base = rows[0]["usd_base"] / 1e3
    return [(SENS_LABELS[r["input"]], r["usd_low"] / 1e3, r["usd_high"] / 1e3) for r in rows], base


def cost_sensitivity_table(ranges: Mapping | None = None):
    ranges = ranges or sensitivity_ranges(run_inputs=True)
    rows = [{"input": SENS_LABELS[r["input"]], "basis": ranges[r["input"]][2], "low": r["usd_low"] / 1e3,
             "high": r["usd_high"] / 1e3} for r in cost_sensitivity_rows(ranges)]
    rows.sort(key=lambda r: -abs(r["high"] - r["low"]))
    return table(rows, {"input": "input", "basis": Col("range from", wrap=True),
                        "low": Col("total at low", "thousand USD", "{:,.0f}"),
                        "high": Col("total at high", "thousand USD", "{:,.0f}")})


def givens_table(group: str = "givens"):
    """The chapter's assumptions: the ``group`` of x4lib/data/datacenter.yaml."""
    rows = [{"given": k.replace("_", " "), "value": f"{v['value']:g}", "unit": v["unit"], "why": v["note"]}
            for k, v in dc.data()[group].items()]
    return table(rows, {"given": "assumption", "value": "value", "unit": "unit", "why": Col("note", wrap=True)})


def run_cost_explorer(start: Mapping | None = None):
    """Sliders for every input of the one cost model → the run's summary table; the run's own sliders start at
    ``start`` (params, tokens, device, n_gpus, dtype, mfu; default: chapter 00's quiz givens)."""
    import ipywidgets as w
    from IPython.display import display

    g = start or quiz()
    tco_d = tco.defaults(g["device"])
    run_d = runcost.defaults()
    regions = [r["region"] for r in carbon.intensity_rows()]
    devices = [i for i in ("h100-sxm", "b200") if i in specs.load_catalog()]

    def show(mode, params_b, tokens_t, device, n_gpus, mfu, rental, server_usd, years, interest, utilisation,
             usd_per_kwh, pue, mtbf_scale, ckpt_gbps, restart_s, region):
        try:
            r = quiz_run(mode=mode, params=params_b * 1e9, tokens=tokens_t * 1e12, device=device, n_gpus=int(n_gpus),
                         dtype=g["dtype"], mfu=mfu, usd_per_gpu_hour=rental,
                         server_usd=server_usd * 1e3, years=years, interest=interest, fleet_utilisation=utilisation,
                         usd_per_kwh=usd_per_kwh, pue=pue, failure_rate_per_gpu_s=run_d["failure_rate_per_gpu_s"] / mtbf_scale,
                         checkpoint_write_Bps=ckpt_gbps * 1e9, restart_s=restart_s,
                         g_per_kwh=carbon.intensity(region))
        except (ValueError, LookupError) as exc:
            print(f"cannot estimate: {exc}")
            return
        display(run_summary_table({"explorer": r}))

    return w.interactive(
        show,
        mode=w.ToggleButtons(options=["own", "rent"], value="own", description="mode"),
        params_b=w.FloatLogSlider(value=g["params"] / 1e9, base=10, min=0, max=4, description="params (B)"),
        tokens_t=w.FloatLogSlider(value=g["tokens"] / 1e12, base=10, min=-1, max=2, description="tokens (T)"),
        device=w.Dropdown(options=devices, value=g["device"], description="device"),
        n_gpus=w.IntText(value=g["n_gpus"], description="GPUs"),
        mfu=w.FloatSlider(value=g["mfu"], min=0.1, max=0.8, step=0.01, description="MFU"),
        rental=w.FloatText(value=dc.rental_price(g["device"], "on-demand")["value"], description="rent USD/GPU-h"),
        server_usd=w.FloatText(value=dc.server_price_usd(g["device"]) / 1e3, description="server kUSD"),
        years=w.FloatSlider(value=tco_d["years"], min=2, max=8, step=0.5, description="years"),
        interest=w.FloatSlider(value=tco_d["interest"], min=0, max=0.2, step=0.01, description="interest"),
        utilisation=w.FloatSlider(value=tco_d["utilisation"], min=0.1, max=1.0, step=0.05, description="utilisation"),
        usd_per_kwh=w.FloatSlider(value=tco_d["usd_per_kwh"], min=0.02, max=0.4, step=0.005, description="USD/kWh"),
        pue=w.FloatSlider(value=tco_d["pue"], min=1.0, max=2.0, step=0.01, description="PUE"),
        mtbf_scale=w.FloatLogSlider(value=1.0, base=10, min=-1, max=1, description="MTBF × "),
        ckpt_gbps=w.FloatLogSlider(value=dc.given("checkpoint_write_GBps"), base=10, min=0, max=3,
                                   description="ckpt GB/s"),
        restart_s=w.FloatText(value=dc.given("restart_s"), description="restart s"),
        region=w.Dropdown(options=regions, value="United States", description="grid"),
    )


# -------------------------------------------------------------------------------------------------- glue values

@functools.lru_cache(maxsize=1)
def summary() -> dict:
    """Every number the chapter's prose quotes, computed once (glue keys → values, display units)."""
    g = quiz()
    s = {}
    h100 = specs.get("h100-sxm").values
    s["gpu_w"] = h100["tdp_w"].value
    s["server_w"] = h100["server_power_w_per_gpu"].value
    s["dgx_kw"] = _eco("dgx_h100_max_power_w") / 1e3
    s["server_ratio"] = s["server_w"] / s["gpu_w"]
    pc = power_chain_rows()
    s["quiz_gpus_kw"], s["quiz_it_kw"] = pc[0]["gpus_kW"], pc[0]["it_kW"]
    s["fac_kw_hyper"], s["fac_kw_avg"] = pc[0]["facility_kW"], pc[1]["facility_kW"]
    s["avg_kw_avg"] = pc[1]["average_kW"]
    s["pue_hyper"], s["pue_avg"] = pc[0]["pue"], pc[1]["pue"]
    s["load_fraction_pct"] = 100 * _eco("epoch_server_tdp_fraction_gpu")
    racks = rack_limits()
    s["rack_typical_kw"], _, s["rack_gb200_kw"] = (r["kW"] for r in racks)
    s["rack_superpod_kw"] = dc.value("superpod_h100_rack_kw")["value"]    # "exceeds 40 kW" (reference architecture)
    s["racks_typical"], s["racks_superpod"] = racks[0]["racks"], racks[1]["racks"]
    s["dgx_per_superpod_rack"] = racks[1]["per_rack"]
    s["gb200_shelf_kw"] = dc.value("gb200_rack_power_shelf_kw")["value"]
    s["gb200_shelves"] = dc.value("gb200_rack_power_shelves")["value"]
    cfm = dc.value("dgx_h100_airflow_cfm")["value"]
    s["dgx_cfm"] = cfm
    s["dgx_m3s"] = dc.cfm_to_m3_per_s(cfm)
    s["dgx_dT"] = dc.air_delta_T_K(_eco("dgx_h100_max_power_w"), s["dgx_m3s"])
    s["rack40_m3s"] = dc.airflow_m3_per_s(s["rack_superpod_kw"] * 1e3, s["dgx_dT"])
    s["water_air_ratio"] = (WATER_CP_J_PER_KG_K * WATER_DENSITY_KG_PER_M3) / (dc.AIR_CP_J_PER_KG_K * dc.AIR_DENSITY_KG_PER_M3)
    # electricity
    rows = {(r["region"], r["sector"]): r for r in dc.data()["electricity_prices"]}
    s["us_ind_cents"] = rows[("United States", "industrial")]["value"]
    s["iowa_ind_cents"] = rows[("Iowa", "industrial")]["value"]
    s["ma_ind_cents"] = rows[("Massachusetts", "industrial")]["value"]
    s["ri_ind_cents"] = rows[("Rhode Island", "industrial")]["value"]
    s["ny_ind_cents"] = rows[("New York", "industrial")]["value"]
    s["ny_com_cents"] = rows[("New York", "commercial")]["value"]
    s["eu_low_eur"] = rows[("EU, lowest (Finland)", "non-household")]["value"]
    s["eu_high_eur"] = rows[("EU, highest (Ireland)", "non-household")]["value"]
    # owning vs renting
    t = cluster_tco()
    a = t.assumptions
    s["server_usd"] = a["server_usd"]
    s["capex_musd"] = t.capex_usd / 1e6
    s["network_share_pct"] = 100 * a["network_share_of_cluster_cost"]
    s["years"] = a["years"]
    s["interest_pct"] = 100 * a["interest_per_year"]
    s["utilisation"] = a["utilisation"]
    s["capital_musd_yr"] = t.capital_usd_per_year / 1e6
    s["facility_musd_yr"] = t.facility_usd_per_year / 1e6
    s["elec_musd_yr"] = t.electricity_usd_per_year / 1e6
    s["colo"] = a["colocation_usd_per_kw_month"]
    s["e_busy"] = t.electricity_usd_per_busy_gpu_hour
    s["fixed_per_h_full"] = t.fixed_usd_per_year / (t.n_gpus * tco.HOURS_PER_YEAR)
    s["owned_h"] = t.owned_usd_per_gpu_hour()
    s["rental_h"] = t.rental_usd_per_gpu_hour
    s["u_star"] = t.break_even_utilisation()
    gcp3 = dc.rental_price("h100-sxm", "reserved-3y", "Google Cloud")
    aws = dc.rental_price("h100-sxm", "on-demand", "AWS")
    gcp = dc.rental_price("h100-sxm", "on-demand", "Google Cloud")
    s["gcp3_h"], s["u_gcp3"] = gcp3["value"], t.break_even_utilisation(gcp3["value"])
    s["aws_h"], s["u_aws"] = aws["value"], t.break_even_utilisation(aws["value"])
    s["gcp_h"] = gcp["value"]
    sp = spot_prices()
    s["spot_hi_h"], s["spot_lo_h"] = sp["min_discount"], sp["max_discount"]
    s["u_spot_hi"] = t.break_even_utilisation(sp["min_discount"])
    s["spot_min_pct"] = 100 * dc.value("spot_discount_min")["value"]
    s["spot_max_pct"] = 100 * dc.value("spot_discount_max")["value"]
    # 60 % energy
    es = energy_share_rows()
    s["share_own_pct"], s["share_full_pct"], s["share_rent_pct"] = (100 * es[i]["share"] for i in range(3))
    s["share_power_pct"], s["share_freehw_pct"], s["share_life_pct"] = (100 * es[i]["share"] for i in (3, 4, 5))
    run1 = lambda **o: quiz_run(fleet_utilisation=1.0, **o)  # noqa: E731
    s["p_star"] = runcost.solve_for_energy_share(CLAIMED_ENERGY_SHARE, "usd_per_kwh", 0.01, 100.0, run1)
    s["p_star_ratio"] = s["p_star"] / _eco("usd_per_kwh", "defaults")
    s["p_star_vs_ireland"] = s["p_star"] / s["eu_high_eur"]
    s["claim_pct"] = 100 * CLAIMED_ENERGY_SHARE
    ch00 = economics.estimate_training(g["params"], g["tokens"], g["device"], g["n_gpus"], dtype=g["dtype"],
                                       mfu=g["mfu"], usd_per_gpu_hour=g["usd_per_gpu_hour"],
                                       usd_per_kwh=g["usd_per_kwh"], pue=g["pue"], power_scope=g["power_scope"])
    s["ch00_elec_share_pct"] = 100 * ch00.electricity_cost_usd / ch00.rental_cost_usd
    s["cottier_lo_pct"] = 100 * _eco("energy_share_of_frontier_cost_low")
    s["cottier_hi_pct"] = 100 * _eco("energy_share_of_frontier_cost_high")
    # reliability
    lam = failure_scenarios()
    s["llama_interruptions"] = _eco("llama3_unexpected_interruptions")
    s["llama_days"] = dc.value("llama3_snapshot_days")["value"]
    s["llama_gpus"] = dc.value("llama3_snapshot_gpus")["value"]
    s["lam_per_1000_gpu_days"] = lam["Llama 3 interruptions"] * 86400 * 1000
    s["gpu_mtbf_years"] = 1 / lam["Llama 3 interruptions"] / (86400 * 365.25)
    s["llama_job_mtbf_h"] = reliability.cluster_mtbf_s(lam["Llama 3 interruptions"], s["llama_gpus"]) / 3600
    s["kok_1024_h"] = dc.value("kokolis_mttf_1024_h")["value"]
    s["kok_16k_h"] = dc.value("kokolis_mttf_16k_h")["value"]
    base = quiz_run()
    kok = quiz_run(failure_rate_per_gpu_s=lam["research-cluster MTTF"])
    s["quiz_mtbf_h"] = base.plan.mtbf_s / 3600
    s["ckpt_tb"] = storage.checkpoint_bytes(g["params"]) / 1e12
    s["ckpt_gbps"] = dc.given("checkpoint_write_GBps")
    s["delta_s"] = base.plan.checkpoint_s
    s["restart_min"] = dc.given("restart_s") / 60
    s["young_min"] = base.plan.young_interval_s / 60
    s["daly_min"] = base.plan.interval_s / 60
    s["goodput_pct"] = 100 * base.goodput
    s["ideal_days"] = base.ideal_days
    s["real_days"] = base.wall_clock_days
    s["lost_kusd"] = base.failure_overhead_usd / 1e3
    s["kok_goodput_pct"] = 100 * kok.goodput
    s["kok_days"] = kok.wall_clock_days
    s["kok_daly_min"] = kok.plan.interval_s / 60
    s["kok_lost_kusd"] = kok.failure_overhead_usd / 1e3
    mt = {r["gpus"]: r for r in mtbf_vs_gpus_rows()}
    s["goodput_64k_pct"] = 100 * mt[65536]["goodput"]
    s["mtbf_64k_min"] = 60 * mt[65536]["mtbf_h"]
    # storage
    st = storage_demand()
    s["tokens_per_s"] = st.tokens_per_s
    s["read_mbps"] = st.input_read_Bps / 1e6
    s["bytes_per_token"] = dc.given("bytes_per_token_stored")
    s["dataset_tb"] = st.dataset_B / 1e12
    s["avg_write_mbps"] = st.average_write_Bps / 1e6
    s["write_read_ratio"] = st.write_Bps / st.input_read_Bps
    # carbon
    s["energy_mwh"] = base.energy_MWh
    cr = {r["region"]: r for r in carbon_rows()}
    s["co2_us_t"] = cr["United States"]["t"]
    s["co2_fr_t"] = cr["France"]["t"]
    s["co2_in_t"] = cr["India"]["t"]
    s["g_us"], s["g_fr"], s["g_in"] = (cr[k]["g"] for k in ("United States", "France", "India"))
    s["co2_ratio"] = s["g_in"] / s["g_fr"]
    comp, rep = carbon.patterson_gpt3_check()
    s["gpt3_mwh"] = dc.value("patterson_gpt3_energy_mwh")["value"]
    s["gpt3_kg"] = dc.value("patterson_us_average_kg_per_kwh")["value"]
    s["gpt3_t_computed"], s["gpt3_t_reported"] = comp, rep
    s["iowa_net_kg"] = dc.value("patterson_iowa_net_kg_per_kwh")["value"]
    # serving
    sv = {r["case"]: r for r in serving_rows()}
    b64 = sv["BF16, batch 64, rented"]
    s["serve_tps"] = b64["decode"]
    s["serve_out_usd"] = b64["decode_usd"]
    s["serve_in_usd"] = b64["prefill_usd"]
    s["serve_b1_usd"] = sv["BF16, batch 1, rented"]["decode_usd"]
    s["serve_fp8_usd"] = sv["FP8, batch 64, rented"]["decode_usd"]
    s["serve_own_usd"] = sv["BF16, batch 64, owned"]["decode_usd"]
    s["serve_batch"] = dc.given("serve_batch")
    s["serve_ctx"] = dc.given("serve_context_tokens")
    s["serve_util_pct"] = 100 * dc.given("serve_utilisation")
    m = serving.model("llama3-70b")
    s["kv_kb_per_token"] = m.kv_bytes_per_token(2) / 1e3
    s["weights_gb"] = m.params * 2 / 1e9
    p = serving_point()
    s["kv_cache_gb"] = p.kv_cache_B / 1e9
    s["step_ms"] = 1e3 * p.step_mem_s
    s["step_compute_ms"] = 1e3 * p.step_compute_s
    # one model: totals
    rent = quiz_run(mode="rent")
    s["total_own_kusd"] = base.total_usd / 1e3
    s["total_rent_kusd"] = rent.total_usd / 1e3
    s["quiz_gpus"] = g["n_gpus"]
    s["quiz_mfu_pct"] = 100 * g["mfu"]
    return s
