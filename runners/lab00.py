"""Lab 00 plug-in: the matmul sweep and the memory kernels on this machine's CPU or first GPU.

    python -m runners lab00 --profile local-cpu [--quick] [--measure-only]
    python -m runners lab00 --profile h100 --measure-only          # on a GPU pod: standard library + torch

results.json (x4lib/schemas/lab00_results.schema.json, version 2) keeps the device as detected, the parameters,
every repeat's time of every shape and kernel, and the warnings of the measurement itself. Peaks, rates and
efficiencies are derived when the page is drawn (x4lib/pages/lab00.py). A profile that expects another device
stops before measuring (exit 2).
"""
from __future__ import annotations

from runners import profiles, rundir

NAME = "lab00"
TITLE = "Lab 00: matmul sweep and memory kernels, rendered as the lab notebook"
NOTEBOOK = "notebooks/lab-00-roofline.ipynb"
SCHEMA_VERSION = 2


def add_arguments(parser) -> None:
    """Lab 00 has no options of its own."""


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
    before = device.nvidia_smi(0) if tdev == "cuda" else {}
    rows, mem = [], []
    with ctx.progress(len(params["dtypes"]) * len(shapes) + len(params["memory_kernels"]), "lab00") as bar:
        for d in params["dtypes"]:
            for i, (m, n, k) in enumerate(shapes):
                bar.set_postfix_str(f"{d} {m}x{n}x{k}")
                rows.append(bench.matmul_row(torch, d, m, n, k, tdev, params["warmup"], params["repeats"], seed=i))
                bar.update()
        after = device.nvidia_smi(0) if tdev == "cuda" else {}
        for kern in params["memory_kernels"]:
            bar.set_postfix_str(f"{kern} {params['memory_elements']} elements")
            mem.append(bench.memory_row(torch, kern, params["memory_elements"], tdev, params["warmup"],
                                        params["repeats"]))
            bar.update()
    warnings = [f"{r.get('dtype', r.get('kernel'))} {r.get('m', '')}x{r.get('n', '')}x{r.get('k', '')}: "
                f"{r['status']} ({r['error']})" for r in rows + mem if r["status"] != "ok"]
    if after and isinstance(after.get("clocks.sm"), float) and isinstance(after.get("clocks.max.sm"), float) \
            and after["clocks.sm"] < 0.9 * after["clocks.max.sm"]:
        warnings.append(f"SM clock after the sweep {after['clocks.sm']:.0f} MHz < 90 % of max "
                        f"{after['clocks.max.sm']:.0f} MHz (power or thermal throttling?)")
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
