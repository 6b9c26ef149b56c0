"""The GEMM calibration sweep: the matrix products real models run, timed on this GPU for the matmul model.

    python -m runners gemms --profile h100 --measure-only        # on a GPU pod: standard library + torch
    python -m runners gemms --profile local-cpu --quick          # the same code on this CPU (tests)

Lab 00 times squares and three skinny shapes; the achievable-rate model (``x4lib.compute.matmul``) must also
predict the GEMMs that training and serving run. This sweep times, for each model of the profile (dimensions in the
profile, so a bare pod needs no catalog), the forward GEMMs of one layer (QKV, O, gate/up, down; tensor-parallel
split as the profile says) at every token count of the profile (1 token: decode; 8192: a training micro-batch),
the two backward GEMMs at the training token counts, and the profile's extra shapes (not multiples of the tile
grid, short K), in each dtype of the profile (BF16 through ``torch.matmul``; FP8 through ``torch._scaled_mm``).
Each shape is timed as Lab 00 times it (``x4lib.harness.bench.matmul_row``: warm-up, N calls back to back between
two events, raw times kept).

While the sweep runs, ``nvidia-smi`` samples the SM clock, power and the clock-event reasons
(``x4lib.harness.device.GpuSampler``); each row keeps the wall-clock interval it ran in (``t0_unix``, ``t1_unix``),
so the page can say what the clock was during each shape. The ``sustained`` shapes then run back to back for
``sustained_s`` seconds each under their own sampler: the clock and power a dtype and shape settle at under a
sustained load (the power-limited clock of the model). Last, the ``decode`` models of the profile decode one token
per sequence at each (batch, context), eager and as a CUDA graph (``x4lib.harness.decode_bench``): the end-to-end
check of ``x4lib.serving.decode``.

results.json: ``x4lib/schemas/gemms_results.schema.json``. No notebook renders it: Lab 00's page draws these runs
(``book/runs/gemms/``) beside its own. Which rows the model is fitted on and which are kept out is decided when the
model is fitted (x4lib.compute.matmul_validation), never here.
"""
from __future__ import annotations

import time

from runners import profiles, rundir

NAME = "gemms"
TITLE = "GEMM calibration sweep: the GEMMs of real models at decode and training token counts, with the clock"
NOTEBOOK = None  # measure-only: Lab 00's page draws these runs
SCHEMA_VERSION = 1
PASSES = ("fwd", "bwd_data", "bwd_weight")


def add_arguments(parser) -> None:
    """The sweep has no options of its own: shapes and dtypes come from the profile."""


def model_gemms(model: dict) -> dict:
    """name -> forward (n, k) of one layer's GEMMs on one tensor-parallel rank (y = x·Wᵀ, W stored n × k)."""
    h, a, kv, f, t = model["hidden"], model["heads"], model["kv_heads"], model["ffn"], model.get("tp", 1)
    d = h // a
    return {"qkv": ((a // t + 2 * max(1, kv // t)) * d, h), "o": (h, a // t * d), "gate_up": (2 * f // t, h),
            "down": (h, f // t)}


def shapes(params: dict) -> list[dict]:
    """Every (set, model, op, pass, tokens, m, n, k) of the sweep, in the order it runs."""
    out = []
    for model in params["models"]:
        for op, (n, k) in model_gemms(model).items():
            for tokens in params["tokens"]:
                for pas in PASSES:
                    if pas != "fwd" and tokens not in params["train_tokens"]:
                        continue
                    m_, n_, k_ = {"fwd": (tokens, n, k), "bwd_data": (tokens, k, n), "bwd_weight": (k, n, tokens)}[pas]
                    out.append({"set": "model", "model": model["name"], "op": op, "pass": pas, "tokens": tokens,
                                "m": m_, "n": n_, "k": k_})
    for m_, n_, k_ in params.get("extra_shapes", []):
        out.append({"set": "extra", "m": m_, "n": n_, "k": k_})
    return out


def _sustained(torch, bench, device, tdev: str, dtype: str, m: int, n: int, k: int, seconds: float) -> dict:
    """One shape run back to back for ``seconds`` under its own sampler: calls, their total time, the samples."""
    row = {"dtype": dtype, "m": m, "n": n, "k": k, "seconds": seconds}
    gen = torch.Generator(device=tdev).manual_seed(0)
    empty = torch.cuda.empty_cache if tdev == "cuda" else (lambda: None)
    try:
        fn = bench._matmul_fn(torch, dtype, m, n, k, tdev, gen)
        for _ in range(3):
            fn()
        if tdev == "cuda":
            torch.cuda.synchronize()
        one = bench._region_s(fn, torch, tdev, 5) / 5
        calls = max(1, int(seconds / max(one, 1e-6)))
        with device.GpuSampler(interval_ms=100) as sampler:
            t0 = time.time()
            total_s = bench._region_s(fn, torch, tdev, calls)
            t1 = time.time()
    except Exception as exc:  # noqa: BLE001 — an OOM or an unsupported dtype is a row
        empty()
        status = "oom" if bench._is_oom(torch, exc) else "error"
        return {**row, "status": status, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    fn = None  # noqa: F841
    empty()
    return {**row, "status": "ok", "calls": calls, "total_s": total_s, "t0_unix": t0, "t1_unix": t1,
            "gpu_samples": sampler.record()}


def measure(ctx):
    import torch

    from runners.core import Measured
    from x4lib.harness import bench, decode_bench, device
    params = ctx.params
    dev = profiles.detect_for(ctx, torch, NAME)
    tdev = dev["torch_device"]
    if tdev == "cpu":
        torch.set_num_threads(max(1, dev["cpu"]["physical_cores"]))
    started = rundir.utc_now()
    todo = shapes(params)
    rows, sustained = [], []
    dec_n = len((params.get("decode") or {}).get("models", [])) * len((params.get("decode") or {}).get("cases", []))
    total = (len(todo) + len(params.get("sustained", []))) * len(params["dtypes"]) + dec_n
    with ctx.progress(total, "gemms") as bar:
        with device.GpuSampler(interval_ms=params.get("sample_ms", 100)) as sampler:
            for dtype in params["dtypes"]:
                for i, s in enumerate(todo):
                    bar.set_postfix_str(f"{dtype} {s['m']}x{s['n']}x{s['k']}")
                    t0 = time.time()
                    r = bench.matmul_row(torch, dtype, s["m"], s["n"], s["k"], tdev, params["warmup"],
                                         params["repeats"], seed=i)
                    rows.append({**s, **r, "t0_unix": t0, "t1_unix": time.time()})
                    bar.update()
        for m, n, k in params.get("sustained", []):
            for dtype in params["dtypes"]:
                bar.set_postfix_str(f"sustained {dtype} {m}x{n}x{k}")
                sustained.append(_sustained(torch, bench, device, tdev, dtype, m, n, k, params["sustained_s"]))
                bar.update()
        decode = []
        dec = params.get("decode") or {}
        for cfg in dec.get("models", []):
            for batch, context in dec["cases"]:
                bar.set_postfix_str(f"decode {cfg['name']} batch {batch} context {context}")
                decode += decode_bench.measure(torch, cfg, batch, context, dec["warmup"], dec["repeats"], tdev,
                                               dec.get("dtype", "bf16"))
                bar.update()
    warnings = [f"{r['dtype']} {r['m']}x{r['n']}x{r['k']}: {r['status']} ({r['error']})"
                for r in rows + sustained if r["status"] != "ok"]
    warnings += [f"decode {r['model']} batch {r['batch']} context {r['context']} {r['mode']}: {r['status']} "
                 f"({r['error']})" for r in decode if r["status"] != "ok"]
    results = {
        "schema_version": SCHEMA_VERSION, "lab": NAME, "profile": ctx.profile["name"], "quick": ctx.args.quick,
        "method_version": bench.HARNESS_VERSION, "started_utc": started, "finished_utc": rundir.utc_now(),
        "command": ctx.command,
        "device": {**dev, "env": bench.environment(torch)},
        "clock": {"utc_offset_s": -time.altzone if time.daylight and time.localtime().tm_isdst else -time.timezone,
                  "samples": sampler.record()},
        "params": params, "matmul": rows, "sustained": sustained, "decode": decode, "warnings": warnings,
    }
    return Measured(results, {}, dev["detected_name"], render=False)
