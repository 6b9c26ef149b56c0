"""Lab 00 plug-in: the matmul sweep and the memory kernels on this machine's CPU or first GPU.

    python -m runners lab00 --profile local-cpu [--quick] [--measure-only]
    python -m runners lab00 --profile h100 --measure-only          # on a GPU pod: standard library + torch

results.json (x4lib/schemas/lab00_results.schema.json, version 3) keeps the device as detected, the parameters,
every repeat's time of every shape and kernel, and the warnings of the measurement itself. Peaks, rates and
efficiencies are derived when the page is drawn (x4lib/pages/lab00.py). A profile that expects another device
stops before measuring (exit 2).
"""
from __future__ import annotations

from runners import profiles, rundir

NAME = "lab00"
TITLE = "Lab 00: matmul sweep and memory kernels, rendered as the lab notebook"
NOTEBOOK = "notebooks/lab-00-roofline.ipynb"
SCHEMA_VERSION = 3


def add_arguments(parser) -> None:
    """Lab 00 has no options of its own."""


#: the /proc/cpuinfo flags that give a CPU a native unit for a 16-bit dtype (x4lib/data/cpu_uarch.json's isa_rules)
NATIVE_FLAGS = {"bf16": ("avx512_bf16", "amx_bf16"), "fp16": ("avx512_fp16", "amx_fp16")}
#: the largest dimension measured for a dtype the CPU only emulates (about 0.2 s a call at 512 on an AVX2 core)
EMULATED_MAX_N = 512


def emulated_dtypes(dev) -> set:
    """The 16-bit dtypes this CPU has no native unit for (none of NATIVE_FLAGS in its flags): torch emulates them,
    about 1 GFLOP/s, so the sweep stops at EMULATED_MAX_N for them."""
    flags = set((dev.get("cpu") or {}).get("flags") or ())
    return {d for d, need in NATIVE_FLAGS.items() if not flags & set(need)}


def measure(ctx):
    """Run the profile's sweep here; returns the run (results.json document)."""
    import torch

    from runners.core import Measured
    from x4lib.harness import bench, device
    params = ctx.params
    dev = device.detect(torch, "cpu" if ctx.profile["expects"]["kind"] == "cpu" else "cuda")
    profiles.check_device(ctx.profile, dev)
    started = rundir.utc_now()
    tdev = dev["torch_device"]
    if tdev == "cpu":
        torch.set_num_threads(max(1, dev["cpu"]["physical_cores"]))  # one BLAS thread per physical core
    shapes = bench.square_and_skinny_shapes(params["max_n"])
    emulated = emulated_dtypes(dev) if tdev == "cpu" else set()
    before = device.nvidia_smi(0) if tdev == "cuda" else {}
    rows, mem = [], []
    largest = max(shapes, key=lambda s: s[0] * s[1] * s[2])
    with ctx.progress(len(params["dtypes"]) * len(shapes) + len(params["memory_kernels"]), "lab00") as bar:
        for d in params["dtypes"]:
            for i, (m, n, k) in enumerate(shapes):
                if d in emulated and max(m, n, k) > EMULATED_MAX_N:
                    bar.update()  # emulated in software on this CPU: a 2048-cube takes minutes and says nothing
                    continue
                bar.set_postfix_str(f"{d} {m}x{n}x{k}")
                if tdev == "cuda" and (m, n, k) == largest:  # the GPU's clock, power and reasons while it runs
                    with device.GpuSampler() as sampler:
                        row = bench.matmul_row(torch, d, m, n, k, tdev, params["warmup"], params["repeats"], seed=i)
                    if sampler.record():
                        row["gpu_samples"] = sampler.record()
                else:
                    row = bench.matmul_row(torch, d, m, n, k, tdev, params["warmup"], params["repeats"], seed=i)
                rows.append(row)
                bar.update()
        after = device.nvidia_smi(0) if tdev == "cuda" else {}
        for kern in params["memory_kernels"]:
            bar.set_postfix_str(f"{kern} {params['memory_elements']} elements")
            mem.append(bench.memory_row(torch, kern, params["memory_elements"], tdev, params["warmup"],
                                        params["repeats"]))
            bar.update()
    warnings = [f"{r.get('dtype', r.get('kernel'))} {r.get('m', '')}x{r.get('n', '')}x{r.get('k', '')}: "
                f"{r['status']} ({r['error']})" for r in rows + mem if r["status"] != "ok"]
    warnings += clock_warnings(rows)
    warnings += [f"{d}: this CPU has no native {d} unit (flags {', '.join(NATIVE_FLAGS[d])} absent), so torch emulates "
                 f"it; measured only up to {EMULATED_MAX_N} per dimension" for d in params["dtypes"] if d in emulated]
    results = {
        "schema_version": SCHEMA_VERSION, "lab": NAME, "profile": ctx.profile["name"], "quick": ctx.args.quick,
        "method_version": bench.HARNESS_VERSION, "started_utc": started, "finished_utc": rundir.utc_now(),
        "command": ctx.command,
        "device": {**dev, "env": bench.environment(torch), "nvidia_smi_before": before, "nvidia_smi_after": after},
        "params": params, "matmul": rows, "memory_bw": mem, "warnings": warnings,
    }
    squares = [r for r in rows if r["status"] == "ok" and r["dtype"] == "fp32" and r["m"] == r["n"] == r["k"]]
    if tdev == "cpu" and squares:  # a plain torch.matmul loop at the largest square shape, to check the harness
        results["independent_check"] = bench.independent_check(torch, max(r["m"] for r in squares), "fp32")
    return Measured(results, {}, dev["detected_name"])


def clock_warnings(rows) -> list[str]:
    """One line per sampled shape whose SM clock fell below 90 % of the maximum, naming the clock-event reasons that
    nvidia-smi reported Active while it ran (NVML: nvml-clocks-event-reasons), or saying that none was, or that the
    reasons were not readable. Nothing is guessed: "power limit" appears only if SW Power Cap was Active."""
    from x4lib.harness import device
    out = []
    for r in rows:
        ev = device.clock_evidence(r.get("gpu_samples"))
        if not ev or ev["sm_mhz_min"] is None or not ev["sm_mhz_max_allowed"]:
            continue
        if ev["sm_mhz_min"] >= 0.9 * ev["sm_mhz_max_allowed"]:
            continue
        why = ("clock-event reasons not readable with this driver" if ev["reasons_active"] is None else
               "Active clock-event reasons: " + ", ".join(ev["reasons_active"]) if ev["reasons_active"] else
               "no clock-event reason Active")
        out.append(f"{r['dtype']} {r['m']}x{r['n']}x{r['k']}: SM clock down to {ev['sm_mhz_min']:.0f} MHz "
                   f"(median {ev['sm_mhz_median']:.0f}) < 90 % of max {ev['sm_mhz_max_allowed']:.0f} MHz while it ran, "
                   f"at up to {ev['power_w_max'] or float('nan'):.0f} W of {ev['power_limit_w'] or float('nan'):.0f} W; "
                   f"{why}")
    return out
