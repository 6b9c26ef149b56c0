"""Lab 01 plug-in: collectives in nccl-tests' table, measured here (gloo on this CPU, NCCL on a 2 × 8 cluster
under torchrun), or a real nccl-tests log imported.

    python -m runners lab01 --profile local-cpu [--quick] [--measure-only]
    torchrun --nnodes 2 --nproc-per-node 8 ... -m runners lab01 --profile cluster-2x8 --measure-only
    python -m runners lab01 --profile cluster-2x8 --import-log all_reduce_perf.log

``cluster-2x8`` measures only under torchrun on 2 nodes × 8 GPUs with NCCL; anywhere else it refuses (exit 2)
before measuring. ``--import-log`` reads the log with x4lib.network.nccl_log (the one reader of nccl-tests tables): the
device label comes from the log's "# Rank ... device ..." lines, never from this machine; a log that fails the
reader's checks (a row inconsistent with nccl-tests' formulas, a negative or non-finite value) exits 1 naming the
line, and nothing is stored. The log is copied beside results.json.

results.json (x4lib/schemas/lab01_results.schema.json, version 2) keeps every iteration's time of a measured run
(or the values a log printed), sizes and counts as nccl-tests prints them, and the device; rates and α–β fits are
derived when the page is drawn (x4lib/pages/lab01.py). Measuring imports only the standard library and torch.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from runners import profiles, rundir
from x4lib.cli import CheckFailed, UsageError

NAME = "lab01"
TITLE = "Lab 01: collectives in nccl-tests' table (gloo here, NCCL on a cluster), or a real nccl-tests log imported"
NOTEBOOK = "notebooks/lab-01-collectives.ipynb"
SCHEMA_VERSION = 2
IMPORT_METHOD_VERSION = 2  # the log import: x4lib.network.nccl_log's reader and checks
SOURCE_MEASURED = "measured"
SOURCE_IMPORTED = "imported nccl-tests log"


class BadLog(UsageError):
    """The log cannot be imported for this profile (unreadable, no device lines, wrong cluster shape): exit 2."""


def add_arguments(parser) -> None:
    parser.add_argument("--import-log", metavar="LOG", type=str,
                        help="store a real nccl-tests log (cluster profiles) as a run, labelled from the log's "
                             "rank lines")


def measure(ctx):
    if ctx.args.import_log is not None:
        return import_log(ctx)
    kind = ctx.profile["expects"]["kind"]
    if kind == "cluster":
        return measure_cluster(ctx)
    if kind == "cpu":
        return measure_local(ctx)
    raise profiles.ProfileError(f"profile {ctx.profile['name']!r} ({kind}) has no {NAME} runner; use local-cpu "
                                f"or cluster-2x8")


def _bench_config(params: dict) -> dict:
    from x4lib.network.sizes import parse_size
    try:
        sizes = [parse_size(s) for s in params["sizes"]]
    except ValueError as exc:
        raise profiles.ProfileError(f"{NAME} sizes: {exc}") from None
    return {"collectives": params["collectives"], "sizes": sizes, "warmup": params["warmup"],
            "iters": params["iters"], "dtype": "float", "root": 0}


def _raw_rows(collectives: list[dict]) -> list[dict]:
    """The benchmark's collectives with raw per-iteration times only: means and rates are derived when drawn."""
    keep_place = ("times_us", "wrong")
    out = []
    for c in collectives:
        rows = [{**{k: r[k] for k in ("size_bytes", "count", "type", "redop", "root")},
                 **{k: r[k] for k in keep_place}, "in_place": {k: r["in_place"][k] for k in keep_place}}
                for r in c["rows"]]
        out.append({**{k: v for k, v in c.items() if k != "rows"}, "rows": rows})
    return out


def _document(ctx, started: str, dev: dict, res: dict, warnings: list[str]) -> dict:
    return {
        "schema_version": SCHEMA_VERSION, "lab": NAME, "profile": ctx.profile["name"], "quick": ctx.args.quick,
        "method_version": res["method_version"], "started_utc": started, "finished_utc": rundir.utc_now(),
        "command": ctx.command, "source": SOURCE_MEASURED, "backend": res["backend"], "nranks": res["nranks"],
        "nhosts": res["nhosts"], "timing": res["timing"], "warmup": res["warmup"], "iters": res["iters"],
        "device": dev, "params": ctx.params, "collectives": _raw_rows(res["collectives"]),
        "warnings": warnings + res["warnings"],
    }


def measure_local(ctx):
    """gloo ranks spawned on this CPU."""
    import torch

    from runners.core import Measured
    from x4lib.harness import bench, device
    from x4lib.network import commbench
    params = ctx.params
    if params.get("backend", "gloo") != "gloo":
        raise profiles.ProfileError(f"profile {ctx.profile['name']!r}: a local run uses gloo")
    dev = device.detect(torch, "cpu")
    profiles.check_device(ctx.profile, dev)
    n_ranks = int(params.get("nranks", 2))
    warnings = []
    if n_ranks > (dev["cpu"].get("physical_cores") or 1):
        warnings.append(f"{n_ranks} ranks on {dev['cpu']['physical_cores']} physical cores: ranks share cores, "
                        f"bandwidth is lower than with one core per rank")
    started = rundir.utc_now()
    with ctx.progress(1, f"lab01: gloo, {n_ranks} ranks, {len(params['collectives'])} collectives"):
        res = commbench.run_spawned(n_ranks, _bench_config(params))
    env = {**bench.environment(torch), "torch_threads": 1}  # set in every rank
    return Measured(_document(ctx, started, {**dev, "env": env}, res, warnings),
                    {"results-table.txt": commbench.format_tables(res)}, dev["detected_name"])


def check_cluster(profile: dict, params: dict, torch, environ=None) -> dict:
    """Refuse (WrongDevice) unless this process is one rank of a torchrun job on the profile's cluster:
    WORLD_SIZE = nodes × GPUs per node, LOCAL_WORLD_SIZE = GPUs per node, CUDA GPUs of an accepted kind, NCCL."""
    env = os.environ if environ is None else environ
    nodes, per = int(params.get("nodes", profile["expects"].get("nodes", 1))), int(params.get("gpus_per_node", 8))
    want = f"profile {profile['name']!r} runs under torchrun on {nodes} nodes × {per} GPUs with NCCL"
    how = (f"launch it with: {params['launch']}" if params.get("launch") else "launch it with torchrun") + \
        "; or import a real nccl-tests log with --import-log LOG"
    if not all(k in env for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")):
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        raise profiles.WrongDevice(f"{want}; this process is not under torchrun (no RANK/WORLD_SIZE/LOCAL_RANK) "
                                   f"and this machine has {gpus} CUDA GPU(s); {how}")
    world, local_world = int(env["WORLD_SIZE"]), int(env.get("LOCAL_WORLD_SIZE", 0))
    if world != nodes * per or local_world != per:
        raise profiles.WrongDevice(f"{want}: WORLD_SIZE={nodes * per}, LOCAL_WORLD_SIZE={per}; this job has "
                                   f"WORLD_SIZE={world}, LOCAL_WORLD_SIZE={env.get('LOCAL_WORLD_SIZE', 'unset')}; "
                                   f"{how}")
    if not torch.cuda.is_available() or torch.cuda.device_count() < per:
        raise profiles.WrongDevice(f"{want}: this node has "
                                   f"{torch.cuda.device_count() if torch.cuda.is_available() else 0} CUDA GPU(s), "
                                   f"not {per}")
    import torch.distributed as dist
    if not dist.is_nccl_available():
        raise profiles.WrongDevice(f"{want}: this torch build has no NCCL")
    from x4lib.harness import device
    dev = device.detect(torch, "cuda")
    profiles.check_device(profile, dev, min_devices=per)
    return dev


def measure_cluster(ctx):
    """One rank of the torchrun job; rank 0 returns the run, the others None."""
    import torch

    from runners.core import Measured
    from x4lib.harness import bench
    from x4lib.network import commbench
    dev = check_cluster(ctx.profile, ctx.params, torch)
    started = rundir.utc_now()
    res = commbench.run_torchrun(_bench_config(ctx.params), "nccl")
    if res is None:
        return None
    warnings = []
    if res["nhosts"] != int(ctx.params.get("nodes", 2)):
        warnings.append(f"ran on {res['nhosts']} host(s), the profile expects {ctx.params.get('nodes')}")
    names = sorted({r["name"] for r in res["ranks"]})
    device_doc = {**dev, "kind": "cluster", "detected_name": names[0] if len(names) == 1 else " + ".join(names),
                  "count": res["nranks"], "nodes": res["nhosts"], "gpus_per_node": res["nranks"] // res["nhosts"],
                  "hosts": sorted({r["host"] for r in res["ranks"]}), "ranks": res["ranks"],
                  "env": bench.environment(torch), "nccl_version": _nccl_version(torch)}
    return Measured(_document(ctx, started, device_doc, res, warnings),
                    {"results-table.txt": commbench.format_tables(res)}, device_doc["detected_name"])


def _nccl_version(torch) -> str | None:
    try:
        v = torch.cuda.nccl.version()
    except Exception:  # noqa: BLE001 — a build without NCCL
        return None
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


# ------------------------------------------------------------------------------------------------ log import

def _place(p) -> dict:
    """One printed placement (out-of-place or in-place) of an nccl_log row, as results.json keeps it."""
    return {"times_us": [], "time_us": p.time_us, "algbw_gb_s": p.algbw_gb_s, "busbw_gb_s": p.busbw_gb_s,
            "wrong": p.wrong, "max_error": p.max_error}


def import_log(ctx):
    """Store a real nccl-tests log as a run of a cluster profile."""
    from runners.core import Measured
    from x4lib.network import nccl_log, nccl_tests
    from x4lib.harness import device
    if not ctx.args.import_log:
        raise BadLog("--import-log: an empty path; give the nccl-tests log's file")
    profile, log = ctx.profile, Path(ctx.args.import_log)
    if profile["expects"]["kind"] != "cluster":
        raise profiles.ProfileError(f"--import-log is for cluster profiles; {profile['name']!r} is a "
                                    f"{profile['expects']['kind']} profile")
    try:
        data = nccl_log.read_bytes(log)  # read once: what is parsed is what is stored and hashed
        parsed, text = nccl_log.read_data(data, str(log))
    except nccl_log.NcclLogError as exc:
        raise (CheckFailed if exc.exit_code == 1 else BadLog)(str(exc)) from None
    if not parsed.ranks:
        raise BadLog(f"{log}: no '# Rank N ... device N [...] NAME' lines: the log does not say which GPUs it ran "
                     f"on, so it cannot be labelled")
    coll = parsed.collective or nccl_tests.find_in_text(log.name)
    if coll is None:
        raise BadLog(f"{log}: cannot tell which collective it measured (no '<name>_perf' in the log or its name)")
    names = sorted({r.name for r in parsed.ranks})
    hosts = sorted({r.host for r in parsed.ranks})
    n_ranks, nhosts = parsed.n_ranks or len(parsed.ranks), len(hosts)
    params = profile["labs"].get(NAME, {})
    nodes = int(params.get("nodes", profile["expects"].get("nodes", 1)))
    per = int(params.get("gpus_per_node", profile["expects"]["min_devices"]))
    if n_ranks != nodes * per or nhosts != nodes:
        raise BadLog(f"{log}: {n_ranks} ranks on {nhosts} host(s); profile {profile['name']!r} is {nodes} nodes × "
                     f"{per} GPUs")
    ids = {device.match_gpu(n) for n in names}
    if len(names) != 1 or not ids <= set(profile["expects"]["catalog_ids"]):
        raise BadLog(f"{log}: GPUs {', '.join(names)} (catalog {', '.join(map(str, ids))}); profile "
                     f"{profile['name']!r} expects {', '.join(profile['expects']['catalog_ids'])}")
    if not parsed.checks_ok:
        bad = [w for w in parsed.warnings if w.startswith("line")][:3] or list(parsed.warnings[:3])
        raise CheckFailed(f"{log}: the log fails the reader's checks: {'; '.join(bad)}")
    rows = [{"size_bytes": r.size_B, "count": r.count, "type": r.type, "redop": r.redop, "root": r.root,
             "line": r.line, **_place(r.out_of_place), "in_place": _place(r.in_place)}
            for r in parsed.rows if r.out_of_place and r.in_place and r.size_B > 0]
    if not rows:
        raise CheckFailed(f"{log}: no complete data rows with size > 0: nothing usable")
    now = rundir.utc_now()
    copy_name, copy, log_copy = stored_copy(log.name, data, text, parsed)
    results = {
        "schema_version": SCHEMA_VERSION, "lab": NAME, "profile": profile["name"], "quick": False,
        "method_version": IMPORT_METHOD_VERSION, "started_utc": now, "imported_utc": now, "measured_utc": None,
        "command": ctx.command, "source": SOURCE_IMPORTED, "parser": f"x4lib.network.nccl_log {nccl_log.METHOD_VERSION}",
        "log_file": log.name, "log_sha256": hashlib.sha256(data).hexdigest(), "log_copy": log_copy,
        "backend": "rccl" if parsed.tool == "rccl-tests" else "nccl", "nranks": n_ranks, "nhosts": nhosts,
        "timing": "nccl-tests: mean iteration time, averaged over ranks (default -a 1)",
        "warmup": parsed.warmup_iters, "iters": parsed.iters,
        "device": {"kind": "cluster", "detected_name": names[0], "catalog_id": next(iter(ids)), "count": n_ranks,
                   "nodes": nhosts, "gpus_per_node": n_ranks // nhosts, "hosts": hosts,
                   "ranks": [dict(rank=r.rank, host=r.host, device=r.device, bus_id=r.bus_id, name=r.name)
                             for r in parsed.ranks],
                   "source": "the log's '# Rank' lines (not this machine)"},
        "collectives": [{"collective": coll, "nccl_tests_binary": nccl_tests.NCCL_TESTS_BINARY[coll],
                         "supported": True, "note": "per-iteration times are not in nccl-tests' text output "
                                                    "(times_us empty); time is nccl-tests' own (default -a 1: "
                                                    "mean over ranks)", "rows": rows}],
        "warnings": list(parsed.warnings),
    }
    return Measured(results, {copy_name: copy}, names[0], render=False)


#: names a run directory uses for itself: a log of such a name is stored as IMPORTED_LOG_NAME
RUN_DIR_NAMES = ("results.json", "results.incomplete.json", "lab01.ipynb")
IMPORTED_LOG_NAME = "imported-nccl-tests.log"


#: a log up to this size is stored whole; a larger one (NCCL_DEBUG=INFO output, a paste of many runs) as the
#: excerpt of the lines the reader used (nccl_log.excerpt), so a run holds what it needs, never a copy of 64 MiB
STORE_WHOLE_LOG_BYTES = 2**20


def stored_copy(name: str, data: bytes, text: str, parsed) -> tuple[str, bytes, dict]:
    """(file name, bytes, the results' ``log_copy`` record) of what a run keeps of an imported log."""
    from x4lib.network import nccl_log
    stored = stored_log_name(name)
    if len(data) <= STORE_WHOLE_LOG_BYTES:
        return stored, data, {"file": stored, "kind": "whole", "bytes": len(data)}
    part = nccl_log.excerpt(text, parsed).encode("utf-8")
    stored = stored.rsplit(".", 1)[0] + ".excerpt.log"
    return stored, part, {"file": stored, "kind": "excerpt", "bytes": len(part), "original_bytes": len(data),
                          "original_lines": len(text.splitlines()), "lines": len(parsed.used_lines),
                          "note": f"the log ({len(data)} B) is over {STORE_WHOLE_LOG_BYTES} B: only the lines the "
                                  "reader used are kept (UTF-8, original line numbers in the rows' 'line'); "
                                  "log_sha256 is the original's"}


def stored_log_name(name: str) -> str:
    """The name of the log's copy in the run directory: its own, unless that is a run directory's file, hidden,
    or not a plain log or text name (``results.json``, ``.pid``, ``x.ipynb``...)."""
    plain = name and not name.startswith(".") and name.endswith((".log", ".txt", ".out")) and name not in RUN_DIR_NAMES
    return name if plain else IMPORTED_LOG_NAME
