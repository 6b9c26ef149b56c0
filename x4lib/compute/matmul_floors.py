"""Mechanisms of the matmul model measured on our committed GEMM sweeps (``book/runs/gemms/``): the host's
floor per call of each timing API (``torch.matmul``, ``torch._scaled_mm``; :func:`api_floor`) and the clock a
dense GEMM settles at against the power limit (:func:`power_limited_clock`, reported, not applied to best-of-N
rates). Never applied to the machine they were measured on when that device is held out; our runs as a whole are
one source (``ours``) for leave-one-source-out. Used by :mod:`x4lib.compute.matmul`; shown in book/lab-00-roofline.md.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from types import MappingProxyType
from typing import Iterable, Mapping

from x4lib.catalog import specs
from x4lib.compute.matmul_data import constants, precision_class, units_of


#: the source name of every constant measured on our own committed runs (leave-one-source-out drops them all)
OURS = "ours"


@dataclasses.dataclass(frozen=True)
class SweepEvidence:
    """What one committed GEMM sweep (book/runs/gemms/) measured of the mechanisms: the least time per call of each
    timing API [s] and, per sustained shape, (dtype, median SM clock [Hz], power limit [W])."""
    run_id: str
    device: str
    floors_s: Mapping[str, float]
    sustained: tuple[tuple[str, float, float], ...]


def _modelled_gpu_runs(*labs: str):
    """(run, catalog id) for each committed full (not quick) GPU run of ``labs`` on a device a family covers."""
    from x4lib.harness import runs as hruns
    c = constants()
    for lab in labs:
        try:
            runs = hruns.load_runs(lab)
        except FileNotFoundError:
            continue
        for run in runs:
            cat = run.device.get("catalog_id")
            if run.device.get("kind") == "gpu" and cat and not run.quick and \
                    any(cat in f.devices for f in c.families.values()):
                yield run, cat


@functools.lru_cache(maxsize=1)
def sweep_evidence() -> tuple[SweepEvidence, ...]:
    """The mechanisms each committed full GEMM sweep on a modelled GPU measured (empty where none is committed)."""
    from x4lib.harness import device as hdevice
    c, out = constants(), []
    for run, cat in _modelled_gpu_runs("gemms"):
        floors: dict[str, float] = {}
        for r in run.results.get("matmul", []):
            a = c.api_for(r["dtype"]) if r.get("status") == "ok" else None
            if a is not None:
                floors[a.name] = min(floors.get(a.name, math.inf), r["best_s"])
        sus = []
        for r in run.results.get("sustained", []):
            ev = hdevice.clock_evidence(r.get("gpu_samples")) if r.get("status") == "ok" else None
            if ev and ev.get("sm_mhz_median") and ev.get("power_limit_w") and \
                    "sw_power_cap" in (ev.get("reasons_active") or []):
                sus.append((r["dtype"], ev["sm_mhz_median"] * 1e6, float(ev["power_limit_w"])))
        out.append(SweepEvidence(run.run_id, cat, MappingProxyType(floors), tuple(sus)))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class GraphCall:
    """The least time per call [s] of one dtype's matmuls timed as a CUDA graph in one committed run (harness 4):
    the GPU's own time for its smallest work, with no host launch."""
    run_id: str
    device: str
    dtype: str
    m: int
    n: int
    k: int
    graph_s: float


@functools.lru_cache(maxsize=1)
def graph_evidence() -> tuple[GraphCall, ...]:
    """Per committed full GPU run (Lab 00 and the GEMM sweeps) on a modelled device and per dtype, the call with
    the least time as a CUDA graph (empty where no run timed one)."""
    out = []
    for run, cat in _modelled_gpu_runs("lab00", "gemms"):
        least: dict[str, dict] = {}
        for r in run.results.get("matmul", []):
            if r.get("status") == "ok" and r.get("graph_best_s") and \
                    r["graph_best_s"] < least.get(r["dtype"], {}).get("graph_best_s", math.inf):
                least[r["dtype"]] = r
        out += [GraphCall(run.run_id, cat, d, r["m"], r["n"], r["k"], r["graph_best_s"])
                for d, r in sorted(least.items())]
    return tuple(out)


def graph_calls(family_devices: Iterable[str], exclude: Iterable[str] = (),
                exclude_sources: Iterable[str] = ()) -> list[GraphCall]:
    """The graph-timed least calls a prediction may use: the family's, never a held-out device's, none when our
    runs are the held-out source."""
    if any(str(s).startswith(OURS) for s in exclude_sources):
        return []
    fam, ex = set(family_devices), set(exclude)
    return [g for g in graph_evidence() if g.device in fam and g.device not in ex]


def _evidence(exclude: Iterable[str], exclude_sources: Iterable[str]) -> list[SweepEvidence]:
    """The sweeps a prediction may use: none when our runs are a held-out source, never a held-out device's."""
    if any(str(s).startswith(OURS) for s in exclude_sources):
        return []
    ex = set(exclude)
    return [e for e in sweep_evidence() if e.device not in ex]


def api_floor(api: str, device_id: str, exclude: Iterable[str] = (),
              exclude_sources: Iterable[str] = ()) -> tuple[float, str]:
    """The host's floor per call of a timing API [s] and its basis: the median over the committed sweeps (of other
    machines when ``exclude`` holds the device) of the API's least time per call; else the API's fallback."""
    a = constants().apis[api]
    xs = [(e.floors_s[api], e.device) for e in _evidence(exclude, exclude_sources) if api in e.floors_s]
    if not xs:
        return a.fallback_s, f"{api}: no sweep measured it here; the host launch time ({a.fallback_source})"
    v = statistics.median(x[0] for x in xs)
    return v, (f"{api}: {v * 1e6:.1f} µs, the least time per call in our GEMM sweep(s) on "
               f"{', '.join(sorted({x[1] for x in xs}))}")


def power_limited_clock(device: specs.Device | str, dtype: str, exclude: Iterable[str] = (),
                        exclude_sources: Iterable[str] = ()) -> tuple[float, str] | None:
    """The clock [Hz] a dense GEMM of ``dtype`` settles at against the device's power limit (its catalog TDP), with
    its basis, or None where the family has no power-clock model or no sweep of another device measured it.

    Energy per SM-clock e = P_limit' / (U' · f') from each sustained shape of the same precision class that ran with
    SW Power Cap Active on another device of the family; f = TDP / (U · median e), capped at the device's maximum
    clock where the catalog gives it."""
    dev = specs.get(device) if isinstance(device, str) else device
    dtype = specs.normalize_dtype(dtype)
    c = constants()
    fam = c.family_of(dev.id)
    if fam.id not in c.power_families or "tdp_w" not in dev.values or not dev.peak_basis:
        return None
    cls = precision_class(dtype)
    es, who = [], set()
    for e in _evidence(set(exclude) | {dev.id}, exclude_sources):
        if e.device not in fam.devices:
            continue
        other = specs.get(e.device)
        for d, f_hz, p_w in e.sustained:
            if precision_class(d) == cls and (d == dtype or cls == "fp8" or d in ("bf16", "fp16")):
                es.append(p_w / (units_of(other, fam) * f_hz))
                who.add(e.device)
    if not es:
        return None
    e_clk = statistics.median(es)
    tdp = dev.values["tdp_w"].si
    f = tdp / (units_of(dev, fam) * e_clk)
    return f, (f"{f / 1e6:,.0f} MHz: the {tdp:.0f} W limit over {e_clk * 1e12:,.1f} pJ per SM-clock, the median of "
               f"{len(es)} sustained {'FP8' if cls == 'fp8' else '16-bit'} shape(s) run against the power cap on "
               f"{', '.join(sorted(who))}")
