"""Lab 01 runner: benchmark the collectives here (or on a real cluster) and store the run.

    python -m runners lab01 --profile local-cpu [--quick] [--measure-only] [--runs-dir book/runs]
    torchrun --nnodes 2 --nproc-per-node 8 ... -m runners lab01 --profile cluster-2x8 --measure-only
    python -m runners lab01 --profile cluster-2x8 --import-log all_reduce_perf.log

``local-cpu`` spawns gloo ranks on this CPU (x4lib.commbench). ``cluster-2x8`` runs only under torchrun on
2 nodes × 8 GPUs with NCCL; anywhere else it refuses (exit 2) before measuring. ``--import-log`` turns a real
nccl-tests log into a run directory: the device label comes from the log's "# Rank ... device ..." lines,
never from this machine, and the log is copied beside results.json.

Each run is book/runs/lab01/<profile>-<device-slug>-<UTC>/ with results.json
(x4lib/schemas/lab01_results.schema.json) and, for a measured run, the nccl-tests-style table as
results-table.txt. The lab notebook is rendered into it when notebooks/lab-01-collectives.ipynb and
papermill are there and --measure-only is not given. Measuring imports only the standard library and torch.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

from runners import profiles, rundir
from runners.lab00 import WrongDevice, check_device

LAB = "lab01"
SCHEMA_VERSION = 1
IMPORT_METHOD_VERSION = 1  # version of the log import (parser + consistency checks) below
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "lab-01-collectives.ipynb"
SOURCE_MEASURED = "measured"
SOURCE_IMPORTED = "imported nccl-tests log"

__all__ = ["WrongDevice", "BadLog", "run", "import_log", "render", "notebook_stack_available"]


class BadLog(ValueError):
    """The log cannot be imported for this profile (unreadable, no device lines, wrong cluster)."""


class CheckFailed(RuntimeError):
    """The log was read but a check failed (rows inconsistent, nothing usable): exit 1."""


def _params(profile: dict, quick: bool) -> dict:
    if LAB not in profile["labs"]:
        raise profiles.ProfileError(f"profile {profile['name']!r} has no {LAB} parameters")
    params = dict(profile["labs"][LAB])
    if quick:
        params.update(params.get("quick", {}))
    return params


def _cfg(params: dict) -> dict:
    from x4lib import commbench
    try:
        sizes = [commbench.to_bytes(s) for s in params["sizes"]]
    except ValueError as exc:
        raise profiles.ProfileError(f"{LAB} sizes: {exc}") from None
    return {"collectives": params["collectives"], "sizes": sizes, "warmup": params["warmup"],
            "iters": params["iters"], "dtype": "float", "root": 0}


def fits(colls: list[dict], nranks: int) -> tuple[dict | None, dict, list[str]]:
    """α–β fits per collective with two or more sizes: relative least squares (weights 1/t², so a sweep over
    decades of sizes does not let the largest decide α) over the in-place column (native in torch for every
    collective), on the median of the per-iteration times when we have them (robust to the spikes of a shared
    CPU), else on the table's mean (imported logs). The main ``fit`` is AllReduce's. Returns
    (fit, fits, warnings)."""
    from x4lib import collectives, commbench
    out, warnings = {}, []
    for c in colls:
        rows = [r for r in c["rows"] if r["size_bytes"] > 0 and r["in_place"]["time_us"] > 0]
        if not c["supported"] or len({r["size_bytes"] for r in rows}) < 2:
            continue
        stat = "time_us_median" if all("time_us_median" in r["in_place"] for r in rows) else "time_us"
        f = commbench.fit_rows(rows, "in_place", relative=True, stat=stat)
        d = {"collective": c["collective"], "variant": "in_place", "time_stat": stat, **f.as_dict(),
             "busbw_asymptote_gb_s": (f.inv_beta_gb_s * collectives.busbw_factor(c["collective"], nranks)
                                      if f.inv_beta_gb_s else None),
             "sizes_bytes": [r["size_bytes"] for r in rows]}
        if f.alpha_s < 0:
            warnings.append(f"{c['collective']}: fitted α = {f.alpha_s:.3g} s < 0: t(S) = α + β·S does not describe "
                            f"these sizes well (residual {f.residual_rel_rms:.0%} RMS)")
        if f.inv_beta_gb_s is None:
            warnings.append(f"{c['collective']}: fitted β <= 0: no bandwidth term resolved")
        out[c["collective"]] = d
    return out.get("all_reduce"), out, warnings


# ------------------------------------------------------------------------------------------- measuring
def measure_local(profile: dict, quick: bool, torch) -> tuple[dict, str]:
    """gloo ranks spawned on this CPU; returns (results.json document, the printed table)."""
    from x4lib import bench, commbench, device
    params = _params(profile, quick)
    if params.get("backend", "gloo") != "gloo":
        raise profiles.ProfileError(f"profile {profile['name']!r}: a local run uses gloo")
    dev = device.detect(torch, "cpu")
    check_device(profile, dev)
    cfg = _cfg(params)
    nranks = int(params.get("nranks", 2))
    warnings = []
    if nranks > (dev["cpu"].get("physical_cores") or 1):
        warnings.append(f"{nranks} ranks on {dev['cpu']['physical_cores']} physical cores: ranks share cores, "
                        f"bandwidth is lower than with one core per rank")
    started = rundir.utc_now()
    res = commbench.run_spawned(nranks, cfg)
    env = bench.environment(torch)
    env["torch_threads"] = 1  # set in every rank
    return _document(profile, quick, started, params, {**dev, "env": env}, res, warnings), \
        commbench.format_tables(res)


def check_cluster(profile: dict, torch, environ=None) -> dict:
    """Refuse (WrongDevice) unless this process is one rank of a torchrun job on the profile's cluster:
    WORLD_SIZE = nodes × GPUs per node, LOCAL_WORLD_SIZE = GPUs per node, CUDA GPUs of an accepted kind, NCCL."""
    env = os.environ if environ is None else environ
    p = profile["labs"][LAB]
    nodes, per = int(p.get("nodes", profile["expects"].get("nodes", 1))), int(p.get("gpus_per_node", 8))
    want = f"profile {profile['name']!r} runs under torchrun on {nodes} nodes × {per} GPUs with NCCL"
    how = (f"launch it with: {p['launch']}" if p.get("launch") else "launch it with torchrun") + \
        "; or import a real nccl-tests log with --import-log LOG"
    if not all(k in env for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")):
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        raise WrongDevice(f"{want}; this process is not under torchrun (no RANK/WORLD_SIZE/LOCAL_RANK) and this "
                          f"machine has {gpus} CUDA GPU(s); {how}")
    world, local_world = int(env["WORLD_SIZE"]), int(env.get("LOCAL_WORLD_SIZE", 0))
    if world != nodes * per or local_world != per:
        raise WrongDevice(f"{want}: WORLD_SIZE={nodes * per}, LOCAL_WORLD_SIZE={per}; this job has "
                          f"WORLD_SIZE={world}, LOCAL_WORLD_SIZE={env.get('LOCAL_WORLD_SIZE', 'unset')}; {how}")
    if not torch.cuda.is_available() or torch.cuda.device_count() < per:
        raise WrongDevice(f"{want}: this node has {torch.cuda.device_count() if torch.cuda.is_available() else 0} "
                          f"CUDA GPU(s), not {per}")
    import torch.distributed as dist
    if not dist.is_nccl_available():
        raise WrongDevice(f"{want}: this torch build has no NCCL")
    from x4lib import device
    dev = device.detect(torch, "cuda")
    check_device({**profile, "expects": {**profile["expects"], "min_devices": per}}, dev)
    return dev


def measure_cluster(profile: dict, quick: bool, torch) -> tuple[dict, str] | None:
    """One rank of the torchrun job; rank 0 returns (results.json document, table), the others None."""
    from x4lib import bench, commbench
    params = _params(profile, quick)
    dev = check_cluster(profile, torch)
    started = rundir.utc_now()
    res = commbench.run_torchrun(_cfg(params), "nccl")
    if res is None:
        return None
    warnings = []
    if res["nhosts"] != int(params.get("nodes", 2)):
        warnings.append(f"ran on {res['nhosts']} host(s), the profile expects {params.get('nodes')}")
    names = sorted({r["name"] for r in res["ranks"]})
    device_doc = {**dev, "kind": "cluster", "detected_name": names[0] if len(names) == 1 else " + ".join(names),
                  "count": res["nranks"], "nodes": res["nhosts"], "gpus_per_node": res["nranks"] // res["nhosts"],
                  "hosts": sorted({r["host"] for r in res["ranks"]}), "ranks": res["ranks"],
                  "env": bench.environment(torch),
                  "nccl_version": _nccl_version(torch)}
    return _document(profile, quick, started, params, device_doc, res, warnings), commbench.format_tables(res)


def _nccl_version(torch) -> str | None:
    try:
        v = torch.cuda.nccl.version()
    except Exception:  # noqa: BLE001 — a build without NCCL
        return None
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def _document(profile, quick, started, params, dev, res, warnings) -> dict:
    fit, all_fits, fit_warn = fits(res["collectives"], res["nranks"])
    return {
        "schema_version": SCHEMA_VERSION, "lab": LAB, "profile": profile["name"], "quick": quick,
        "method_version": res["method_version"], "started_utc": started, "finished_utc": rundir.utc_now(),
        "command": " ".join(["python", "-m", "runners"] + sys.argv[1:]), "source": SOURCE_MEASURED,
        "backend": res["backend"], "nranks": res["nranks"], "nhosts": res["nhosts"], "timing": res["timing"],
        "warmup": res["warmup"], "iters": res["iters"], "device": dev, "params": params,
        "collectives": res["collectives"], "fit": fit, "fits": all_fits,
        "warnings": warnings + res["warnings"] + fit_warn,
    }


def render(run_dir: Path) -> Path:
    """Execute the lab notebook for one run (papermill) into ``run_dir``; returns the notebook path."""
    return rundir.render_notebook(NOTEBOOK, run_dir)


def notebook_stack_available() -> bool:
    return rundir.notebook_stack_available(NOTEBOOK)


def _store(results: dict, final: Path, failed_root: Path, measure_only: bool, files: dict) -> Path:
    with rundir.RunDir(final, failed_root) as tmp:
        for name, content in files.items():
            if isinstance(content, Path):
                shutil.copyfile(content, tmp / name)
            else:
                (tmp / name).write_text(content)
        rundir.write_json_atomic(tmp / "results.json", results)
        if not measure_only and notebook_stack_available():
            render(tmp)
    return final


def run(profile_name: str, quick: bool, measure_only: bool, runs_dir: Path, failed_root: Path) -> Path | None:
    """Measure with the profile and store the run; returns its directory (None on torchrun ranks other than 0)."""
    import torch
    from x4lib import device
    profile = profiles.load(profile_name)
    _params(profile, quick)
    kind = profile["expects"]["kind"]
    if kind == "cluster":
        got = measure_cluster(profile, quick, torch)
        if got is None:
            return None
    elif kind == "cpu":
        got = measure_local(profile, quick, torch)
    else:
        raise profiles.ProfileError(f"profile {profile_name!r} ({kind}) has no {LAB} runner yet; "
                                    f"use local-cpu or cluster-2x8")
    results, table = got
    rid = rundir.run_id(profile_name, device.slug(results["device"]["detected_name"]), results["started_utc"])
    return _store(results, Path(runs_dir) / LAB / rid, failed_root, measure_only, {"results-table.txt": table})


# ------------------------------------------------------------------------------------------ log import
_RANK_LINE = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(-?\d+)\s+"
                        r"\[([^\]]*)\]\s+(.+?)\s*$")
_BINARY = re.compile(r"\b(all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce)_perf\b")
_NAMES = (("reduce_scatter", "reduce_scatter"), ("all_reduce", "all_reduce"), ("allreduce", "all_reduce"),
          ("all_gather", "all_gather"), ("allgather", "all_gather"), ("alltoall", "all_to_all"),
          ("all_to_all", "all_to_all"), ("broadcast", "broadcast"), ("reduce", "reduce"))


def log_header(text: str) -> dict:
    """Ranks (host, device, bus id, GPU name), the collective and the timing parameters from a log's header."""
    ranks = []
    for line in text.splitlines():
        m = _RANK_LINE.match(line.strip())
        if m:
            ranks.append({"rank": int(m[1]), "pid": int(m[2]), "host": m[3], "device": int(m[4]), "bus_id": m[5],
                          "name": m[6]})
    m = _BINARY.search(text)
    coll = {"alltoall": "all_to_all"}.get(m[1], m[1]) if m else None
    it = re.search(r"warmup iters:\s*(\d+)\s+iters:\s*(\d+)", text)
    return {"ranks": ranks, "collective": coll, "warmup": int(it[1]) if it else None,
            "iters": int(it[2]) if it else None, "has_footer": "# Avg bus bandwidth" in text}


def _rows_from_nccl_log(parsed) -> list[dict]:
    """x4lib.nccl_log rows in results.json's shape. #wrong is a count only in the current format; the old
    format's "error" column is a maximum deviation, so it is stored as None (not a count)."""
    def wrong(p):
        if parsed.format != "current" or p.wrong in (None, "N/A"):
            return None
        try:
            return int(float(p.wrong))
        except ValueError:
            return None

    def place(p):
        return {"times_us": [], "time_us": p.time_us, "algbw_gb_s": p.algbw_gb_s, "busbw_gb_s": p.busbw_gb_s,
                "wrong": wrong(p)}
    return [{"size_bytes": r.size_bytes, "count": r.count, "type": r.type, "redop": r.redop, "root": r.root,
             "line": r.line, **place(r.out_of_place), "in_place": place(r.in_place)}
            for r in parsed.rows if r.out_of_place and r.in_place]


def _parse_log(text: str, path: str, nranks: int) -> tuple[list[dict], str | None, list[str], str]:
    """(rows, collective or None, warnings, parser) — with x4lib.nccl_log (checks every row against
    nccl-tests' formulas and the printed average) when it is there, else commbench.read_table plus our own
    row checks. Raises BadLog (exit 2) or CheckFailed (exit 1)."""
    try:
        from x4lib import nccl_log
    except ImportError:
        nccl_log = None
    if nccl_log is not None:
        try:
            parsed = nccl_log.read_log(text, path)
        except nccl_log.NcclLogError as exc:
            raise (CheckFailed if getattr(exc, "code", 2) == 1 else BadLog)(str(exc)) from None
        if not parsed.checks_ok:
            bad = [w for w in parsed.warnings if "line" in w][:3]
            raise CheckFailed(f"{path}: the log fails nccl_log's checks: {'; '.join(bad or parsed.warnings[:3])}")
        return _rows_from_nccl_log(parsed), parsed.collective, list(parsed.warnings), \
            f"x4lib.nccl_log {nccl_log.METHOD_VERSION}"
    from x4lib import commbench
    rows = [r for r in commbench.read_table(text) if r["size_bytes"] > 0]
    head = log_header(text)
    coll = head["collective"]
    warnings = [] if head["has_footer"] else [
        f"no '# Avg bus bandwidth' footer: the log may be truncated; read {len(rows)} rows"]
    if coll and rows:
        problems = [p for r in rows for p in _row_problems(coll, r, nranks)]
        if problems:
            raise CheckFailed(f"{path}: {len(problems)} row(s) inconsistent with nccl-tests' definitions, e.g. "
                              f"{problems[0]}")
    for r in rows:
        for v in (r, r["in_place"]):
            v.setdefault("times_us", [])
    return rows, coll, warnings, "x4lib.commbench.read_table"


def _row_problems(coll: str, row: dict, nranks: int) -> list[str]:
    """Fallback check of a row as printed (2 decimals): algbw = size/time, busbw = algbw × F(n)."""
    from x4lib import collectives
    out = []
    f = collectives.busbw_factor(coll, nranks)
    for label, v in (("out-of-place", row), ("in-place", row["in_place"])):
        if v["time_us"] <= 0:
            continue
        alg = row["size_bytes"] / (v["time_us"] * 1e-6) / 1e9
        if abs(alg - v["algbw_gb_s"]) > 0.011 + 0.01 * alg:
            out.append(f"{row['size_bytes']} B {label}: algbw {v['algbw_gb_s']} GB/s but size/time = {alg:.3f}")
        if abs(v["algbw_gb_s"] * f - v["busbw_gb_s"]) > 0.011 + 0.006 * f + 1e-3 * v["busbw_gb_s"]:
            out.append(f"{row['size_bytes']} B {label}: busbw {v['busbw_gb_s']} GB/s but algbw × {f:.4g} = "
                       f"{v['algbw_gb_s'] * f:.3f}")
    return out


def import_log(profile_name: str, log: Path, runs_dir: Path, failed_root: Path) -> Path:
    """Store a real nccl-tests log as a run of ``profile_name``; returns its directory."""
    from x4lib import device
    profile = profiles.load(profile_name)
    if profile["expects"]["kind"] != "cluster":
        raise profiles.ProfileError(f"--import-log is for cluster profiles; {profile_name!r} is a "
                                    f"{profile['expects']['kind']} profile")
    try:
        text = Path(log).read_text(errors="replace")
    except OSError as exc:
        raise BadLog(f"cannot read {log}: {exc.strerror or exc}") from None
    head = log_header(text)
    ranks = head["ranks"]
    if not ranks:
        raise BadLog(f"{log}: no '# Rank N ... device N [...] NAME' lines: the log does not say which GPUs it ran "
                     f"on, so it cannot be labelled")
    coll = head["collective"]
    if coll is None:  # the binary's name is not in the log: try the file name
        stem = Path(log).name.lower()
        coll = next((c for key, c in _NAMES if key in stem), None)
    if coll is None:
        raise BadLog(f"{log}: cannot tell which collective it measured (no '<name>_perf' in the log or its name)")
    names = sorted({r["name"] for r in ranks})
    hosts = sorted({r["host"] for r in ranks})
    nranks, nhosts = len(ranks), len(hosts)
    exp = profile["expects"]
    p = profile["labs"].get(LAB, {})
    nodes, per = int(p.get("nodes", exp.get("nodes", 1))), int(p.get("gpus_per_node", exp["min_devices"]))
    if nranks != nodes * per or nhosts != nodes:
        raise BadLog(f"{log}: {nranks} ranks on {nhosts} host(s); profile {profile_name!r} is {nodes} nodes × "
                     f"{per} GPUs")
    ids = {device.match_gpu(n) for n in names}
    if len(names) != 1 or not ids <= set(exp["catalog_ids"]):
        raise BadLog(f"{log}: GPUs {', '.join(names)} (catalog {', '.join(map(str, ids))}); profile "
                     f"{profile_name!r} expects {', '.join(exp['catalog_ids'])}")
    rows, parsed_coll, warnings, parser = _parse_log(text, str(log), nranks)
    if parsed_coll and parsed_coll != coll:
        raise BadLog(f"{log}: the log reads as {parsed_coll}, its header as {coll}")
    rows = [r for r in rows if r["size_bytes"] > 0]
    if not rows:
        raise CheckFailed(f"{log}: no complete data rows with size > 0: nothing usable")
    rec = {"collective": coll, "nccl_tests_binary": {"all_to_all": "alltoall_perf"}.get(coll, f"{coll}_perf"),
           "supported": True, "note": "per-iteration times are not in nccl-tests' text output (times_us empty); "
                                      "time is nccl-tests' own (default -a 1: mean over ranks)",
           "rows": rows}
    fit, all_fits, fit_warn = fits([rec], nranks)
    now = rundir.utc_now()
    gpu = names[0]
    results = {
        "schema_version": SCHEMA_VERSION, "lab": LAB, "profile": profile_name, "quick": False,
        "method_version": IMPORT_METHOD_VERSION, "started_utc": now, "imported_utc": now,
        "measured_utc": None, "command": " ".join(["python", "-m", "runners"] + sys.argv[1:]),
        "source": SOURCE_IMPORTED, "parser": parser, "log_file": Path(log).name,
        "log_sha256": hashlib.sha256(Path(log).read_bytes()).hexdigest(),
        "backend": "rccl" if "rccl" in text.lower() else "nccl", "nranks": nranks, "nhosts": nhosts,
        "timing": "nccl-tests: mean iteration time, averaged over ranks (default -a 1)",
        "warmup": head["warmup"], "iters": head["iters"],
        "device": {"kind": "cluster", "detected_name": gpu, "catalog_id": next(iter(ids)), "count": nranks,
                   "nodes": nhosts, "gpus_per_node": nranks // nhosts, "hosts": hosts, "ranks": ranks,
                   "source": "the log's '# Rank' lines (not this machine)"},
        "collectives": [rec], "fit": fit, "fits": all_fits, "warnings": warnings + fit_warn,
    }
    rid = rundir.run_id(profile_name, device.slug(gpu), now)
    return _store(results, Path(runs_dir) / LAB / rid, failed_root, True, {Path(log).name: Path(log)})


def load_results(path: Path) -> dict:
    return json.loads((Path(path) / "results.json").read_text())
