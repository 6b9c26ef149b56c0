"""Is a measured rate right? The expected matmul rate of a shape (:func:`expected_matmul`: the achievable-rate model
of x4lib.compute.matmul where the device's family is modelled, else the roofline of the catalog's dense peak) and the
checks of a lab's ``results.json`` against it and against the catalog (a rate above the peak, FP32 that ran as
TF32, a memory kernel far below the datasheet, no compute-bound shape measured; Lab 01's busbw against the
collective model).

Used by :mod:`x4lib.doctor.diagnose` (files and this machine) and the labs' "Is my number right?" sections.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Mapping

from x4lib.doctor.findings import (KIND_NAMES, RECOGNISED, DoctorError, Evidence, Finding, InputReport, Quantity, Report,
                            new_finding, threshold)

# ----------------------------------------------------------------------------------------- expected rates

@dataclasses.dataclass(frozen=True)
class Expected:
    """An expected rate [FLOP/s] with the basis it rests on (what was assumed) and its source (bib key)."""
    flop_per_s: float
    basis: str
    source: str


def expected_matmul(device_id: str | None, dtype: str, m: int, n: int, k: int, *,
                    peak_flop_per_s: float | None = None, memory_bw_Bps: float | None = None,
                    peak_basis: str = "", peak_source: str = "", achievable: bool = True) -> Expected:
    """THE ONE PLACE the doctor's expected matmul rate comes from.

    For a catalog device that the achievable-rate model covers (``x4lib.compute.matmul``: roofline of the shape, tile and
    wave quantisation over the device's SMs or cores, sourced clocks, a fixed cost per call, η calibrated per
    family on others' published rates), the model's rate for this shape [FLOP/s]. Otherwise, and with
    ``achievable=False``, the roofline of the shape, min(P, I·W), with I = 2mnk / ((mk + kn + mn)·b) [FLOP/B]
    (``x4lib.compute.kernels``), P the catalog's **dense** peak for ``dtype`` and W its memory bandwidth; for a device
    without a catalog entry (a CPU) the caller gives P and W (``peak_flop_per_s``: cores × FLOP/cycle × clock;
    ``memory_bw_Bps``: a measured triad). Sources: williams-2009 (roofline), the catalog value's own key, and the
    model's data file (x4lib/data/matmul.yaml) for the achievable rate.
    """
    from x4lib.compute import kernels, matmul
    from x4lib.catalog import specs
    if device_id is not None:
        dev = specs.get(device_id)
        field = dev.peak_field(dtype)
        v = dev.values[field]
        peak_flop_per_s, peak_basis, peak_source = v.si, f"catalog {dev.id} {field} ({v.sparsity or 'dense'})", v.source
        if memory_bw_Bps is None and "memory_bw_gb_s" in dev.values:
            memory_bw_Bps = dev.memory_bw_Bps
        if achievable:
            try:
                p = matmul.predict(dev, dtype, m, n, k)
            except matmul.NoModelError:
                p = None
            if p is not None:
                return Expected(p.rate_flop_per_s,
                                f"achievable-rate model for {m}×{n}×{k} ({100 * p.efficiency:.0f} % of the "
                                f"{peak_basis} peak; {p.bound}-bound, {p.waves} wave(s) of {p.tile[0]}×{p.tile[1]} "
                                f"tiles, {p.eta.text()})", peak_source)
    if peak_flop_per_s is None or not peak_flop_per_s > 0:
        raise ValueError(f"no peak for {dtype} on {device_id or 'this device'}")
    rate, basis = peak_flop_per_s, peak_basis
    if memory_bw_Bps:
        roof = kernels.matmul_intensity(m, n, k, kernels.DTYPE_BYTES[dtype]) * memory_bw_Bps
        if roof < rate:
            rate, basis = roof, f"memory roof of {m}×{n}×{k} at {memory_bw_Bps / 1e9:.4g} GB/s (under {peak_basis})"
    return Expected(rate, basis, peak_source)


def cpu_peak_flop_per_s(cpu: Mapping, uarch: Mapping | None, dtype: str) -> tuple[float, str] | None:
    """physical cores × FLOP/cycle/core (x4lib/data/cpu_uarch.json) × the clock /proc/cpuinfo reports [FLOP/s],
    with its basis; None when any factor is unknown. The same rule as Lab 00's CPU peak."""
    per_cycle = (uarch or {}).get("flop_per_cycle_per_core", {}).get(dtype)
    cores, mhz = cpu.get("physical_cores"), cpu.get("mhz_reported")
    if not (per_cycle and cores and mhz):
        return None
    return (cores * per_cycle * mhz * 1e6,
            f"{cores} cores × {per_cycle} {dtype.upper()} FLOP/cycle/core ({uarch['id']}) × {mhz:.0f} MHz reported")


def _uarch(device: Mapping) -> Mapping | None:
    """The CPU's microarchitecture record from today's table (by the id a run stored), else the stored copy."""
    stored = device.get("cpu_uarch")
    if not stored:
        return None
    from x4lib.harness import device as dev
    table = dev._load("cpu_uarch.json")["microarchitectures"]
    return next((a for a in table if a["id"] == stored.get("id")), stored)


# ------------------------------------------------------------------------------------------- results.json

def _json_line(text: str, needle: str) -> int | None:
    return next((i for i, ln in enumerate(text.splitlines(), 1) if needle in ln), None)


def diagnose_json(text: str, name: str, reader_notes=()) -> tuple[InputReport, list[Finding]]:
    from x4lib.harness import runs

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    try:
        data = json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError) as exc:
        raise DoctorError(f"{name}: starts like JSON but is not valid JSON "
                          f"({str(exc).splitlines()[0][:160]})") from None
    lab = data.get("lab") if isinstance(data, dict) else None
    if lab not in ("lab00", "lab01", "lab02"):
        raise DoctorError(f"{name}: JSON, but not a Lab 00/Lab 01 results.json, nor Lab 02's (no \"lab\": \"lab00\", \"lab01\" or "
                          f"\"lab02\"); it reads {RECOGNISED}")
    try:
        runs.validate(data, lab, name)
    except runs.RunError as exc:
        raise DoctorError(str(exc)) from None
    if lab == "lab02":  # a training step against its calibrated plan (x4lib.doctor.step_check)
        from x4lib.doctor import step_check
        report, found = step_check.diagnose_lab02(data, name, text)
    else:
        report, found = (diagnose_lab00(data, name, text) if lab == "lab00" else diagnose_lab01(data, name, text))
    return dataclasses.replace(report, warnings=tuple(reader_notes) + report.warnings), found


def rate_rows(results: Mapping) -> list[dict]:
    """Successful matmul rows with their best rate [FLOP/s] (derived from the raw times, as the lab page does)."""
    from x4lib.compute import kernels
    return [{**r, "flop_per_s": kernels.matmul_flop(r["m"], r["n"], r["k"]) / r["best_s"]}
            for r in results.get("matmul", ()) if r.get("status") == "ok" and r.get("best_s", 0) > 0]


def mem_rows(results: Mapping) -> list[dict]:
    from x4lib.compute import kernels
    return [{**m, "Bps": kernels.vector_bytes(m["kernel"], m["elements"], m.get("element_bytes", 4)) / m["best_s"]}
            for m in results.get("memory_bw", ()) if m.get("status") == "ok" and m.get("best_s", 0) > 0]


def matmul_checks(device: Mapping, results: Mapping, file: str, peak_evidence=(),
                  row_evidence=None) -> list[Finding]:
    """The matmul and memory rules on one set of measurements (a Lab 00 results.json, or ``here``'s):
    rate-above-peak / fp32-used-tf32, matmul-below-expected, memory-bw-below-expected, no-compute-bound-shape.
    ``peak_evidence``: Evidence of the numbers behind a CPU peak; ``row_evidence(row)``: Evidence of a row."""
    from x4lib.compute import kernels
    from x4lib.catalog import specs
    rows, mems = rate_rows(results), mem_rows(results)
    cat = device.get("catalog_id")
    cpu = device.get("kind") == "cpu"
    best_bw = max((m["Bps"] for m in mems), default=None)

    def row_ev(r):
        return row_evidence(r) if row_evidence else Evidence(
            file, None, f"matmul {r['dtype']} {r['m']}×{r['n']}×{r['k']}: best of {len(r.get('times_s', []))} "
                        f"repeats {r['best_s']:.6g} s")
    out = []
    for dtype in [d for d in kernels.DTYPE_BYTES if any(r["dtype"] == d for r in rows)]:
        drows = [r for r in rows if r["dtype"] == dtype]
        best = max(drows, key=lambda r: r["flop_per_s"])
        measured = Quantity(best["flop_per_s"] / 1e12, "TFLOP/s",
                            f"best {dtype} matmul, {best['m']}×{best['n']}×{best['k']}")
        if cpu:
            got = cpu_peak_flop_per_s(device.get("cpu", {}), _uarch(device), dtype)
            if got is None:
                continue
            peak, basis, source = got[0], got[1], (_uarch(device) or {}).get("source", "")
        elif cat:
            try:
                e = expected_matmul(cat, dtype, 1 << 20, 1 << 20, 1 << 20, achievable=False)  # the compute roof
            except (specs.UnsupportedDtypeError, ValueError):
                continue
            peak, basis, source = e.flop_per_s, e.basis, e.source
        else:
            continue
        peak_q = Quantity(peak / 1e12, "TFLOP/s", f"peak: {basis} ({source})")
        if best["flop_per_s"] > peak:
            tf32 = None
            if not cpu and dtype == "fp32":
                try:
                    tf32 = specs.get(cat).peak_flop_per_s("tf32")
                except specs.UnsupportedDtypeError:
                    tf32 = None
            if tf32 and best["flop_per_s"] <= tf32:
                out.append(new_finding("fp32-used-tf32", file, [row_ev(best)],
                                    f"{measured.value:.4g} TFLOP/s between the FP32 peak {peak / 1e12:.4g} and the "
                                    f"TF32 peak {tf32 / 1e12:.4g} TFLOP/s", measured, peak_q))
            else:
                extra = ""
                if cpu:
                    per = device["cpu"]["physical_cores"] * _uarch(device)["flop_per_cycle_per_core"][dtype]
                    extra = (f"; at the FLOP per cycle assumed it needs a sustained clock of at least "
                             f"{best['flop_per_s'] / per / 1e9:.2f} GHz, not the "
                             f"{device['cpu']['mhz_reported']:.0f} MHz reported")
                out.append(new_finding("rate-above-peak", file, [row_ev(best)] + list(peak_evidence),
                                    f"{measured.value:.4g} > {peak / 1e12:.4g} TFLOP/s{extra}", measured, peak_q))
            continue
        if not cpu and cat:
            e = expected_matmul(cat, dtype, best["m"], best["n"], best["k"])
            if best["flop_per_s"] < threshold("matmul_below_fraction") * e.flop_per_s:
                out.append(new_finding("matmul-below-expected", file, [row_ev(best)],
                                    f"{100 * best['flop_per_s'] / e.flop_per_s:.0f} % of the expected rate",
                                    measured, Quantity(e.flop_per_s / 1e12, "TFLOP/s", f"{e.basis} ({e.source})")))
        has_bw = bool(cat) and not cpu and "memory_bw_gb_s" in specs.get(cat).values
        bw = specs.get(cat).memory_bw_Bps if has_bw else best_bw
        if bw:
            ridge = peak / bw
            squares = [r for r in drows if r["m"] == r["n"] == r["k"]]
            biggest = max(squares or drows, key=lambda r: kernels.matmul_flop(r["m"], r["n"], r["k"]))
            if kernels.matmul_intensity(biggest["m"], biggest["n"], biggest["k"], kernels.DTYPE_BYTES[dtype]) < ridge:
                out.append(new_finding("no-compute-bound-shape", file, [row_ev(biggest)],
                                    f"{dtype}: ridge point {ridge:.3g} FLOP/B", measured, peak_q))
    if not cpu and cat and best_bw and "memory_bw_gb_s" in specs.get(cat).values:
        cat_bw = specs.get(cat).memory_bw_Bps
        if best_bw < threshold("memory_below_fraction") * cat_bw:
            m = max(mems, key=lambda x: x["Bps"])
            out.append(new_finding("memory-bw-below-expected", file,
                                [Evidence(file, None, f"{m['kernel']} of {m['elements']} elements: best "
                                                      f"{m['best_s']:.6g} s")],
                                f"{100 * best_bw / cat_bw:.0f} % of the catalog figure",
                                Quantity(best_bw / 1e9, "GB/s", f"best {m['kernel']}"),
                                Quantity(cat_bw / 1e9, "GB/s", f"memory bandwidth, catalog {cat} "
                                                                f"({specs.get(cat).values['memory_bw_gb_s'].source})")))
    return out


def diagnose_lab00(results: Mapping, name: str = "results.json",
                   text: str | None = None) -> tuple[InputReport, list[Finding]]:
    """A Lab 00 results.json (validated): the matmul rules against the catalog (GPU) or the CPU's computed peak."""
    d = results["device"]
    ev = []
    if d.get("kind") == "cpu":
        for key in ("mhz_reported", "physical_cores", "flop_per_cycle_per_core", "model_name"):
            line = _json_line(text, f'"{key}"') if text is not None else None
            value = d["cpu"].get(key) if key != "flop_per_cycle_per_core" else (d.get("cpu_uarch") or {}).get(key)
            ev.append(Evidence(name, line, f"device.{'cpu_uarch' if key == 'flop_per_cycle_per_core' else 'cpu'}."
                                           f"{key} = {_plain(value)}"))
    found = matmul_checks(d, results, name, ev) + clock_checks(results, name, text)
    label = d.get("detected_name", "?") + (f" ({d['catalog_id']})" if d.get("catalog_id") else "")
    summary = (f"{KIND_NAMES['lab00-results']}: {label}, {len(rate_rows(results))} matmul rows, "
               f"{len(mem_rows(results))} memory rows, started {results.get('started_utc', '?')}")
    return InputReport(name, "lab00-results", summary), found


#: clock-event reasons sampled during a shape → the rule that names them (NVML: nvml-clocks-event-reasons)
_REASON_RULES = (("hw_slowdown", "hw-slowdown"), ("hw_thermal_slowdown", "hw-slowdown"),
                 ("hw_power_brake_slowdown", "hw-slowdown"), ("sw_thermal_slowdown", "sw-thermal-slowdown"),
                 ("sw_power_cap", "sw-power-cap-busy"))


def clock_checks(results: Mapping, name: str = "results.json", text: str | None = None) -> list[Finding]:
    """The clock of a Lab 00 GPU run, from evidence only. Shapes sampled while they ran (harness 3+, ``gpu_samples``):
    each Active clock-event reason becomes its rule's finding (SW Power Cap → running at the power limit; the
    thermal and hardware slowdowns → theirs), with the clock and power seen. Without samples, an SM clock read
    after the sweep below 90 % of the maximum is a note that the cause was not recorded: never "power limit" or
    "thermal" without a reason that says so."""
    from x4lib.harness import device as dev
    out, seen = [], set()
    for r in results.get("matmul", ()):
        ev = dev.clock_evidence(r.get("gpu_samples"))
        if not ev or not ev["reasons_active"]:
            continue
        shape = f"{r['dtype']} {r['m']}×{r['n']}×{r['k']}"
        line = _json_line(text, '"gpu_samples"') if text is not None else None
        for reason, rule_id in _REASON_RULES:
            if reason in ev["reasons_active"] and rule_id not in seen:
                seen.add(rule_id)
                out.append(new_finding(
                    rule_id, name, [Evidence(name, line, f"{shape}: {reason} Active in {ev['samples']} sample(s); "
                                                         f"SM clock {ev['sm_mhz_min']:.0f}–{ev['sm_mhz_median']:.0f} MHz "
                                                         f"(min–median) at up to {ev['power_w_max']:.0f} W")],
                    f"while {shape} ran", Quantity(ev["sm_mhz_median"], "MHz", "median SM clock while it ran"),
                    Quantity(ev["sm_mhz_max_allowed"], "MHz", "maximum SM clock (nvidia-smi clocks.max.sm)")
                    if ev["sm_mhz_max_allowed"] else None))
    sampled = any(r.get("gpu_samples") for r in results.get("matmul", ()))
    after = results.get("device", {}).get("nvidia_smi_after") or {}
    clk, top = after.get("clocks.sm"), after.get("clocks.max.sm")
    if not sampled and isinstance(clk, (int, float)) and isinstance(top, (int, float)) and top > 0 \
            and clk < 0.9 * top:
        line = _json_line(text, '"nvidia_smi_after"') if text is not None else None
        power = after.get("power.draw")
        out.append(new_finding(
            "clock-low-cause-unrecorded", name,
            [Evidence(name, line, f"device.nvidia_smi_after: clocks.sm {clk:.0f} MHz, clocks.max.sm {top:.0f} MHz"
                                  + (f", power.draw {power:.0f} W" if isinstance(power, (int, float)) else ""))],
            f"{clk:.0f} MHz after the sweep, {100 * clk / top:.0f} % of the maximum",
            Quantity(clk, "MHz", "SM clock read after the sweep"),
            Quantity(top, "MHz", "maximum SM clock (nvidia-smi clocks.max.sm)")))
    return out


def diagnose_lab01(results: Mapping, name: str = "results.json",
                   text: str | None = None) -> tuple[InputReport, list[Finding]]:
    """A Lab 01 results.json (validated): what the doctor can say without a link model of the machine."""
    found = []
    if results.get("nranks") == 1:
        found.append(new_finding("one-rank", name, [Evidence(name, _json_line(text or "", '"nranks"'), "nranks = 1")],
                              "1 rank: busbw is 0 by definition"))
    summary = (f"{KIND_NAMES['lab01-results']}: {results.get('backend', '?')}, {results.get('nranks', '?')} ranks on "
               f"{results.get('nhosts', '?')} host(s), {results['device'].get('detected_name', '?')}; no link model "
               f"for this machine, so only the conventions are checked")
    return InputReport(name, "lab01-results", summary), found


def diagnose_results(results: Mapping, name: str = "results.json") -> Report:
    """A lab run's results.json (a parsed, validated document): the doctor's Report. For the labs' pages."""
    lab = results.get("lab")
    report, found = (diagnose_lab00 if lab == "lab00" else diagnose_lab01)(results, name)
    return Report(tuple(found), (report,))


def _plain(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)
