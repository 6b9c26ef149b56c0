"""Lab 02 plug-in: one transformer layer of your model timed per operation on this device, and (on a CPU) a small
real model trained with DDP over gloo on 1 and 2 processes to check the calibrated prediction.

    python -m runners lab02 --profile local-cpu [--quick] [--measure-only]
    python -m runners lab02 --profile h100 --measure-only [--model llama3-8b | --hidden ... --seq ...] [--tp 8]

The layer's dimensions come from the profile, from ``--model`` (a catalog model: needs PyYAML, so on a bare pod give
the dimensions) or from ``--layers/--hidden/--heads/--kv-heads/--ffn/--seq/--vocab``; ``--micro-batch`` and ``--tp``
set the micro-batch and the tensor-parallel split. Dimensions that do not make a layer exit 2 with one line. An
out-of-memory at one op is a row with status "oom" (and a warning), not a crash.

results.json (x4lib/schemas/lab02_results.schema.json, version 1) keeps raw per-repeat times of every op (wall clock;
on a CPU also the process's CPU time) and of every training step of every rank; rates, fits and predictions are
derived when the page is drawn (x4lib.training.calibration). Measuring imports only the standard library and torch.
"""
from __future__ import annotations

from runners import profiles, rundir
from x4lib.cli import UsageError

NAME = "lab02"
TITLE = "Lab 02: calibrate the planner on one device (a layer timed per op), check it with a real DDP training"
NOTEBOOK = "notebooks/lab-02-calibrate.ipynb"
SCHEMA_VERSION = 1
SHAPE_KEYS = ("layers", "hidden", "heads", "kv_heads", "ffn", "seq", "vocab")


def _positive(text: str) -> int:
    import argparse
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1 or v > 10_000_000:
        raise argparse.ArgumentTypeError(f"expected a whole number in [1, 10000000], got {v}")
    return v


def add_arguments(parser) -> None:
    parser.add_argument("--model", help="a catalog model (x4lib/data/models.yaml), e.g. llama3-8b")
    for k in SHAPE_KEYS + ("micro_batch", "tp"):
        parser.add_argument("--" + k.replace("_", "-"), dest=k, type=_positive)


def shape_from(ctx) -> dict:
    """The layer to measure: the profile's, then --model, then the single dimensions given."""
    p, a = ctx.params, ctx.args
    shape = {k: p[k] for k in SHAPE_KEYS + ("micro_batch", "tp") if k in p}
    shape["model"] = p.get("model", "custom")
    if a.model:
        try:
            from x4lib.serving import inference
            cfg = inference.get(a.model)
        except ImportError:
            raise UsageError("--model needs PyYAML (the catalog); on a bare pod give --layers --hidden --heads "
                             "--kv-heads --ffn --seq instead") from None
        except (KeyError, LookupError, ValueError) as exc:
            raise UsageError(str(exc).strip("'\"")) from None
        shape.update(model=a.model, layers=cfg.layers, hidden=cfg.hidden, heads=cfg.heads, kv_heads=cfg.kv_heads,
                     ffn=cfg.ffn, vocab=cfg.vocab)
    given = {k: getattr(a, k) for k in SHAPE_KEYS + ("micro_batch", "tp") if getattr(a, k, None) is not None}
    if given.keys() & set(SHAPE_KEYS) and not a.model:
        shape["model"] = "custom"
    shape.update(given)
    shape.setdefault("kv_heads", shape.get("heads"))
    missing = [k for k in ("layers", "hidden", "heads", "ffn", "seq", "micro_batch", "tp") if k not in shape]
    if missing:
        raise UsageError(f"the layer needs --{' --'.join(m.replace('_', '-') for m in missing)}")
    shape.setdefault("vocab", 0)
    return shape


def _check_dims(shape: dict) -> None:
    from x4lib.harness import layer_bench
    try:
        layer_bench.check_dims(shape)
    except layer_bench.BadDims as exc:
        raise UsageError(str(exc)) from None


def _section(torch, shape: dict, dtype: str, threads: int, tdev: str, params: dict, link: bool, bar) -> dict:
    from x4lib.harness import layer_bench as lb
    w, r = params["warmup"], params["repeats"]
    ops = lb.measure_layer(torch, shape, tdev, dtype, w, r, progress=bar)
    # the whole layer as the training runs it: mixed precision (FP32 weights, autocast) when the ops are 16-bit
    ops += lb.measure_layer_as_trained(torch, shape, tdev, dtype if dtype in ("bf16", "fp16") else None, w, r)
    ops.append(lb.measure_optimizer(torch, shape, tdev, w, r))
    ops.append(lb.measure_overhead(torch, tdev, w, r))
    ops.append(lb.measure_copy(torch, params["copy_elements"], tdev, w, r))
    if link:
        ops.append(lb.measure_loopback(params["loopback_bytes"], r))
    bar.update(6)
    return {"shape": shape, "dtype": dtype, "threads": threads, "ops": ops}


def _check_terms(torch, cshape: dict, tdev: str, params: dict, ranks) -> list[dict]:
    """What the CPU check's prediction reads: the whole layer as trained (FP32), AdamW, the copy, the loopback link
    and the layer run in n processes at once (what ranks cost each other on this host's cores, caches and memory)."""
    from x4lib.harness import layer_bench as lb
    w, r = params["warmup"], params["repeats"]
    return lb.measure_layer_as_trained(torch, cshape, tdev, None, w, r) + [
        lb.measure_optimizer(torch, cshape, tdev, w, r), lb.measure_copy(torch, params["copy_elements"], tdev, w, r),
        lb.measure_loopback(params["loopback_bytes"], r)] + _concurrent(cshape, params, ranks)


def _concurrent(cshape: dict, params: dict, ranks) -> list[dict]:
    """What the ranks cost each other on this host's shared cores, caches and memory: the layer in n processes at
    once, for each process count above one."""
    from x4lib.harness import layer_bench as lb
    return [lb.measure_concurrent(n, cshape, params["warmup"], params["repeats"]) for n in ranks if n > 1]


def _train_check(lb, bar, cshape: dict, check: dict) -> list[dict]:
    out = []
    for n in check["ranks"]:
        bar.set_postfix_str(f"DDP over gloo, {n} process(es)")
        out.append({"ranks_n": n, "ranks": lb.train_spawned(n, cshape, check["steps"], check["warmup"])})
        bar.update()
    return out


def measure(ctx):
    import torch

    from runners.core import Measured
    from x4lib.harness import bench
    from x4lib.harness import layer_bench as lb
    params = ctx.params
    shape = shape_from(ctx)
    _check_dims(shape)
    check = params.get("check")
    if check:
        check = {**check}
        _check_dims({**check, "tp": 1})
    dev = profiles.detect_for(ctx, torch, NAME)
    tdev = dev["torch_device"]
    threads = int(params.get("threads", 1)) if tdev == "cpu" else 0
    if tdev == "cpu":
        torch.set_num_threads(threads)  # as each DDP rank of the check (one thread per rank)
    started = rundir.utc_now()
    n_ops = 2 * 12 + 8 + 6
    with ctx.progress(n_ops + (2 if check else 0), f"lab02 {shape['model']}") as bar:
        layer = _section(torch, shape, params["dtype"], threads, tdev, params, tdev == "cpu", bar)
        doc_check = None
        if check and "ranks" in check:  # on a CPU: DDP over gloo on 1 and 2 processes
            cshape = {k: check[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "seq", "micro_batch")}
            cshape.update(tp=1, vocab=0, model="check")
            cal = _section(torch, cshape, "fp32", 1, tdev, params, True, bar)
            cal["ops"] += _concurrent(cshape, params, check["ranks"])
            training = _train_check(lb, bar, cshape, check)
            # calibration and training in two windows each, interleaved, and each statistic taken over both: a
            # slow minute of a shared machine falls on both sides or is outvoted, not on one side only
            bar.set_postfix_str("the check's calibration again")
            cal["ops"] = lb.merge_windows(cal["ops"], _check_terms(torch, cshape, tdev, params, check["ranks"]))
            training = [{**a, "ranks": lb.join_steps(a["ranks"], b["ranks"]), "windows": 2}
                        for a, b in zip(training, _train_check(lb, bar, cshape, check))]
            doc_check = {"layers": check["layers"], "steps": check["steps"], "warmup": check["warmup"],
                         "backend": "gloo", "torch_threads_per_rank": 1, "calibration": cal, "training": training}
        elif check:
            # one process (a GPU profile's check has no "ranks"): calibrate on the check model's own layer, then
            # train that model (about 1B parameters on a GPU) in this process with mixed precision, as plain
            # PyTorch trains on one GPU
            cshape = {k: check[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "seq", "micro_batch")}
            cshape.update(tp=1, vocab=0, model=check.get("model", "check"))
            cal = _section(torch, cshape, params["dtype"], threads, tdev, params, False, bar)
            bar.set_postfix_str(f"training {check['layers']} layers on one GPU")
            try:
                ranks = [lb.train_single(torch, cshape, check["steps"], check["warmup"], tdev, params["dtype"])]
            except Exception as exc:  # noqa: BLE001 — an out-of-memory model is recorded, not a crash
                if tdev == "cuda":
                    torch.cuda.empty_cache()
                ranks, failed = [], f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
            bar.update(2)
            doc_check = {"layers": check["layers"], "steps": check["steps"], "warmup": check["warmup"],
                         "backend": "none", "amp_dtype": params["dtype"], "calibration": cal,
                         "training": [{"ranks_n": 1, "ranks": ranks}] if ranks else []}
            if not ranks:
                doc_check["training_error"] = failed
    warnings = ([f"training check: {doc_check['training_error']}"] if doc_check and doc_check.get("training_error")
                else [])
    warnings += [f"{r['op']} {r['pass']}: {r['status']} ({r.get('error', '')})"
                for sec in [layer] + ([doc_check["calibration"]] if doc_check else []) for r in sec["ops"]
                if r["status"] != "ok"]
    if tdev == "cpu" and threads > (dev["cpu"].get("physical_cores") or 1):
        warnings.append(f"{threads} threads on {dev['cpu']['physical_cores']} physical cores")
    results = {
        "schema_version": SCHEMA_VERSION, "lab": NAME, "profile": ctx.profile["name"], "quick": ctx.args.quick,
        "method_version": lb.METHOD_VERSION, "started_utc": started, "finished_utc": rundir.utc_now(),
        "command": ctx.command, "device": {**dev, "env": bench.environment(torch)}, "params": params,
        "layer": layer, "check": doc_check, "warnings": warnings,
    }
    return Measured(results, {}, dev["detected_name"])
