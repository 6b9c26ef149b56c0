"""Lab 00 runner: measure the matmul sweep and the memory kernels on this machine, then render the lab
notebook for that run.

    python -m runners lab00 --profile local-cpu [--quick] [--measure-only] [--runs-dir book/runs]
    python -m runners lab00 --render book/runs/lab00/<run-id>     # render a run measured elsewhere

Measuring imports only the standard library and torch; rendering needs the notebook stack (papermill).
A profile that expects another device stops before measuring (exit 2); nothing is ever labelled as a device
it did not run on: the label is always the device detected here.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from runners import profiles, rundir

LAB = "lab00"
SCHEMA_VERSION = 1
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "lab-00-roofline.ipynb"


class WrongDevice(RuntimeError):
    """The machine is not what the profile expects."""


def check_device(profile: dict, dev: dict) -> None:
    """Raise WrongDevice unless the detected device is one the profile accepts."""
    exp = profile["expects"]
    import re
    name_ok = bool(exp.get("name_regex")) and bool(re.search(exp["name_regex"], dev.get("detected_name") or ""))
    id_ok = dev.get("catalog_id") in exp["catalog_ids"]
    if exp["kind"] == "cpu":
        if exp["catalog_ids"] and not (id_ok or name_ok):
            raise WrongDevice(f"profile {profile['name']!r} expects CPU {', '.join(exp['catalog_ids'])}; this machine's "
                              f"CPU is {dev['cpu']['model_name']!r}. Use --profile local-cpu for any CPU.")
        return
    if dev["kind"] != "gpu":
        raise WrongDevice(f"profile {profile['name']!r} expects a GPU ({', '.join(exp['catalog_ids'])}); this machine "
                          f"has no CUDA GPU (CPU: {dev['cpu']['model_name']}). Use --profile local-cpu.")
    if not (id_ok or name_ok):
        raise WrongDevice(f"profile {profile['name']!r} expects {', '.join(exp['catalog_ids'])}; this machine has "
                          f"{dev['detected_name']!r}. Pick the profile of the GPU you have.")
    if dev["count"] < exp["min_devices"]:
        raise WrongDevice(f"profile {profile['name']!r} needs {exp['min_devices']} GPUs; found {dev['count']}")


def _catalog_peaks(catalog_id: str | None, dtypes: list[str]) -> tuple[dict, str]:
    """Dense peaks in TFLOP/s from the catalog, if PyYAML is here to read it (else the render fills them)."""
    if not catalog_id:
        return {}, "no catalog entry for this device"
    try:
        from x4lib import specs
    except ImportError:
        return {}, "catalog not readable here (no PyYAML); peaks are taken from the catalog when rendering"
    dev = specs.get(catalog_id)
    peaks = {}
    for d in dtypes:
        try:
            peaks[d] = dev.peak_flop_per_s(d) / 1e12
        except specs.UnsupportedDtypeError:
            pass
    return peaks, f"catalog {catalog_id}: vendor dense peaks ({', '.join(sorted({dev.peak_field(d) for d in peaks}))})"


def cpu_peaks(dev: dict, dtypes: list[str]) -> tuple[dict, str, list[str]]:
    """CPU peak = physical cores × FLOP/cycle/core (microarchitecture table) × the clock /proc/cpuinfo reports."""
    arch, cpu = dev.get("cpu_uarch"), dev["cpu"]
    if not arch or not cpu.get("mhz_reported"):
        return {}, "unknown microarchitecture or clock: no computed peak", \
            ["no computed CPU peak: microarchitecture or clock unknown; efficiencies are not shown"]
    clock_hz = cpu["mhz_reported"] * 1e6
    peaks = {d: cpu["physical_cores"] * arch["flop_per_cycle_per_core"][d] * clock_hz / 1e12
             for d in dtypes if d in arch["flop_per_cycle_per_core"]}
    basis = (f"{cpu['physical_cores']} cores × FLOP/cycle/core ({arch['id']}: "
             f"{arch['flop_per_cycle_per_core']}) × {cpu['mhz_reported']:.0f} MHz reported by /proc/cpuinfo "
             f"(nominal; the sustained clock may differ, and in a VM it is not readable)")
    return peaks, basis, []


def measure(profile: dict, quick: bool, torch) -> dict:
    """Run the profile's sweep here; return the results.json document."""
    from x4lib import bench, device
    params = dict(profile["labs"][LAB])
    if quick:
        params.update(params["quick"])
    dev = device.detect(torch, "cpu" if profile["expects"]["kind"] == "cpu" else "cuda")
    check_device(profile, dev)
    started = rundir.utc_now()
    tdev = dev["torch_device"]
    warnings: list[str] = []
    if tdev == "cpu":
        torch.set_num_threads(max(1, dev["cpu"]["physical_cores"]))  # one BLAS thread per physical core
        peaks, basis, w = cpu_peaks(dev, params["dtypes"])
        warnings += w
    else:
        peaks, basis = _catalog_peaks(dev.get("catalog_id"), params["dtypes"])
    before = device.nvidia_smi(0) if tdev == "cuda" else {}
    rows = [bench.matmul_row(torch, d, m, n, k, tdev, params["warmup"], params["repeats"], seed=i)
            for d in params["dtypes"] for i, (m, n, k) in enumerate(bench.square_and_skinny_shapes(params["max_n"]))]
    after = device.nvidia_smi(0) if tdev == "cuda" else {}
    mem = [bench.memory_row(torch, kern, params["memory_elements"], tdev, params["warmup"], params["repeats"])
           for kern in params["memory_kernels"]]
    for r in rows + mem:
        if r["status"] != "ok":
            warnings.append(f"{r.get('dtype', r.get('kernel'))} {r.get('m', '')}x{r.get('n', '')}x{r.get('k', '')}: "
                            f"{r['status']} ({r['error']})")
        elif r.get("tflops_best") and peaks.get(r["dtype"]) and r["tflops_best"] > peaks[r["dtype"]]:
            warnings.append(f"{r['dtype']} {r['m']}x{r['n']}x{r['k']}: best rate {r['tflops_best']:.3g} TFLOP/s is "
                            f"above the computed peak {peaks[r['dtype']]:.3g}: the clock assumption is wrong "
                            f"(the CPU runs faster than the clock the peak assumes)")
    if after and isinstance(after.get("clocks.sm"), float) and isinstance(after.get("clocks.max.sm"), float) \
            and after["clocks.sm"] < 0.9 * after["clocks.max.sm"]:
        warnings.append(f"SM clock after the sweep {after['clocks.sm']:.0f} MHz < 90 % of max "
                        f"{after['clocks.max.sm']:.0f} MHz (power or thermal throttling?)")
    env = bench.environment(torch)
    return {
        "schema_version": SCHEMA_VERSION, "lab": LAB, "profile": profile["name"], "quick": quick,
        "method_version": bench.HARNESS_VERSION, "started_utc": started, "finished_utc": rundir.utc_now(),
        "command": " ".join(["python", "-m", "runners"] + sys.argv[1:]),
        "device": {**dev, **{"env": env}, "nvidia_smi_before": before, "nvidia_smi_after": after},
        "params": params, "matmul": rows, "memory_bw": mem,
        "peak_tflops": peaks, "peak_basis": basis, "warnings": warnings,
    }


def render(run_dir: Path) -> Path:
    """Execute the lab notebook for one run (papermill) into ``run_dir``; returns the notebook path."""
    return rundir.render_notebook(NOTEBOOK, run_dir)


def notebook_stack_available() -> bool:
    return rundir.notebook_stack_available(NOTEBOOK)


def run(profile_name: str, quick: bool, measure_only: bool, runs_dir: Path, failed_root: Path) -> Path:
    import torch
    from x4lib import device
    profile = profiles.load(profile_name)
    if LAB not in profile["labs"]:
        raise profiles.ProfileError(f"profile {profile_name!r} has no {LAB} parameters")
    results = measure(profile, quick, torch)
    rid = rundir.run_id(profile_name, device.slug(results["device"]["detected_name"]), results["started_utc"])
    final = Path(runs_dir) / LAB / rid
    with rundir.RunDir(final, failed_root) as tmp:
        rundir.write_json_atomic(tmp / "results.json", results)
        if not measure_only and notebook_stack_available():
            render(tmp)
    return final


def load_results(path: Path) -> dict:
    return json.loads((Path(path) / "results.json").read_text())
