"""Is my number right? Set a measurement beside the catalog and the models, and name the likely cause of a gap.

    python -m x4lib doctor [--quick] [--json]                # here: detect this CPU or GPU, measure, diagnose
    python -m x4lib doctor --from FILE [FILE ...] [--json]   # from what a user can paste

Two ways in.

- **Here** (:func:`here`): detect the CPU or GPU (``x4lib.harness.device``), time a few matmuls and a triad with the book's
  harness (``x4lib.harness.bench``: CUDA events on a GPU, ``perf_counter`` on a CPU), and on a GPU read ``nvidia-smi -q``
  and ``nvidia-smi topo -m`` through ``subprocess``. The best rate is compared with ``x4lib.doctor.rate_check.expected_matmul`` (the
  one place the expected rate of a shape comes from) and the triad with the catalog's memory bandwidth.
- **From files** (:func:`diagnose_files`; ``-`` is standard input, so a reader can paste): every file is untrusted
  text, read with ``x4lib.network.nccl_log``'s file rules (a regular file of at most 64 MiB; UTF-8, or UTF-16/32
  with or without a byte-order mark; binary refused) and recognised by its content, never by its name: an
  nccl-tests / rccl-tests log with or without NCCL_DEBUG=INFO lines, NCCL_DEBUG output alone, ``nvidia-smi -q``, ``nvidia-smi topo -m``, ``lspci -vv`` excerpts, and the labs'
  ``results.json``. A file may hold several of these, or fragments of them inside a bug report (markdown, quoted
  replies, tables, launcher prefixes): :mod:`x4lib.doctor.paste` finds those fragments and the reporter's sentences
  that rules need. Nothing in a file is executed; every pattern runs on one line in time linear in its length.
  Only a file in which nothing at all is recognised is refused (exit 2).

What it says. Each finding (``x4lib.doctor.findings``) comes from one rule of ``x4lib/data/doctor_rules.yaml``: a category
(``tcp-fallback``, ``p2p-disabled``, ``pcie-downtrained``, ``power-or-thermal-throttle``,
``virtualization-acs-iommu``, ``affinity-numa``, ``algorithm-or-expectation``, ``dtype-or-shape``, ``other``), a
severity (``problem``, ``warning``: exit 1; ``note``: expected behaviour, exit 0), the cause in one sentence, the
evidence (file, line and the text that proves it), the measured figure beside the expected one (busbw beside the
per-direction bottleneck, never a bidirectional figure; a matmul beside the rate the achievable-rate model
predicts for its shape), the advice, and
the source where the cause is documented (NVIDIA/NCCL/AMD documentation or the public thread that established it).

The expected matmul rate of a shape is the achievable-rate model's (``x4lib.compute.matmul``, issue 12) where the
device's family is modelled, else the roofline of the catalog's dense peak (``x4lib.doctor.rate_check.expected_matmul``);
``nvidia-smi topo -m`` is read with ``x4lib.network.topo`` (:func:`topology_findings`). The rule book and the findings
are ``x4lib.doctor.findings``; ``nvidia-smi -q`` and ``lspci -vv`` are read by ``x4lib.doctor.gpu_state``, results.json files and
the expected rates by ``x4lib.doctor.rate_check``; this module recognises inputs, reads logs, measures here and prints.

Exit codes: 0 nothing wrong (notes only); 1 a problem or warning found; 2 bad input (missing, unreadable,
binary file, or text in which nothing is recognised; a results.json that breaks its schema). Used in: book/lab-00-roofline.md,
book/lab-01-collectives.md ("Is my number right?").
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

from x4lib.doctor.findings import (KIND_NAMES, RECOGNISED, SEVERITIES, DoctorError, Evidence, Finding, InputReport, Lines,
                                   Quantity, Report, load_rules, named_cause, new_finding, threshold)
from x4lib.doctor.gpu_state import diagnose_lspci, diagnose_smi
from x4lib.doctor.rate_check import diagnose_json, matmul_checks, mem_rows, rate_rows


# --------------------------------------------------------------------------------------------------- reading

def read_text(path: str | Path) -> tuple[str, list[str]]:
    """(text, reader warnings) of an input file, with nccl_log's rules (regular file, at most 64 MiB, UTF-8 or
    UTF-16/32, binary refused). Raises :class:`DoctorError` (exit 2) naming the file."""
    from x4lib.network import nccl_log
    name = os.fspath(path)
    if name == "":
        raise DoctorError("an input path is empty: give the path of a file to diagnose")
    try:
        text, _encoding, notes = nccl_log.decode_log(nccl_log.read_bytes(name), name)
    except nccl_log.NcclLogError as exc:
        msg = str(exc).replace("not a log file", "not a file").replace("give a log file", "give a text file")
        msg = msg.replace("binary file, not an nccl-tests/rccl-tests log", "binary file, not text the doctor reads")
        msg = msg.replace("the log path is empty", "an input path is empty")
        raise DoctorError(msg) from None
    return text, notes


_NVSMI_SECTIONS = frozenset({"Clocks Throttle Reasons", "Clocks Event Reasons", "Remapped Rows", "GPU Link Info",
                             "MIG Mode", "ECC Errors", "Retired Pages", "FB Memory Usage", "Power Readings",
                             "GPU Power Readings", "Clocks", "Max Clocks", "Temperature"})
_KV_RE = re.compile(r"[A-Za-z][A-Za-z0-9 ()/.#-]{0,60}:( |$)")
_TOPO_HEADER_RE = re.compile(r"(^|\s)GPU0(\s|$)")
_LSPCI_RE = re.compile(r"\b(LnkCap|LnkSta|ACSCtl|ACSCap|LnkCtl):")


def detect_kinds(text: str) -> list[str]:
    """Every tool kind whose output is in the text (a paste may hold several), in the order of the module
    docstring; ["json"] for a JSON document; [] for none."""
    from x4lib.network import nccl_rows
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return ["json"]
    lines = text.splitlines()
    kinds = []
    if any(nccl_rows.parse_header(ln.strip(), i) for i, ln in enumerate(lines, 1) if "busbw" in ln):
        kinds.append("nccl-tests-log")
    elif any(" NCCL INFO " in ln or " NCCL WARN " in ln or nccl_rows.parse_rank(ln.strip(), i)
             for i, ln in enumerate(lines, 1)):
        kinds.append("nccl-debug")
    if "NVSMI LOG" in text or (any(ln.strip() in _NVSMI_SECTIONS for ln in lines)
                               and sum(bool(_KV_RE.match(ln.strip())) for ln in lines) >= 2):
        kinds.append("nvidia-smi-q")
    if any(_TOPO_HEADER_RE.search(ln) and ("Affinity" in ln or "GPU1" in ln) for ln in lines) or \
            "Connection traversing a bonded set" in text:
        kinds.append("nvidia-smi-topo")
    if any(_LSPCI_RE.search(ln) for ln in lines):
        kinds.append("lspci")
    return kinds


#: pasted-text rules left to a tool's reader when the text holds that tool's output: the reader decides them with
#: more context (the node count, the results table, the capability beside the status)
_READER_DECIDES = {
    "nccl-debug": ("net-socket-nodes-unknown", "p2p-not-supported", "rccl-iommu-pt-missing", "p2p-disabled-by-env",
                   "geforce-no-p2p"),
    "nccl-tests-log": ("net-socket-nodes-unknown", "p2p-not-supported", "rccl-iommu-pt-missing", "avg-busbw-not-peak",
                       "p2p-disabled-by-env", "geforce-no-p2p",
                       "gdr-level-forced", "cpu-binding", "cumem-disabled-no-mnnvl"),
    "lspci": ("acs-enabled", "pcie-width-downgraded", "pcie-speed-downgraded-check-load"),
    "nvidia-smi-q": ("clock-reason-in-paste", "power-limit-lowered"),
}


def detect_kind(text: str) -> str:
    """The input's kind, told by its content (the first match, in the order of the module docstring)."""
    kinds = detect_kinds(text)
    return kinds[0] if kinds else "unrecognised"


def _with_paste_evidence(found: list[Finding], pasted: list[Finding]) -> list[Finding]:
    """The readers' findings, each also quoting the lines the pasted-text rules found for the same rule (a reader
    quotes the line it decided on, "Using network Socket"; the paste around it may hold the lines that show it too,
    "NET/Socket : Using [0]bond0"), after the reader's own (which stays first: it names the cause's line). Only where
    the reader fired the rule: what it decided against stays out."""
    more = {f.rule.id: f.evidence for f in pasted}
    out = []
    for f in found:
        extra = [e for e in more.get(f.rule.id, ()) if e.line not in {g.line for g in f.evidence}]
        out.append(dataclasses.replace(f, evidence=f.evidence + tuple(extra)) if extra else f)
    return out


def diagnose_text(text: str, name: str = "<text>", reader_notes=()) -> tuple[InputReport, list[Finding]]:
    """Recognise one input by its content and apply the rules of every kind found in it: each tool's reader, then
    the pasted-text rules (``x4lib.doctor.paste``) on whatever else the text holds. Raises :class:`DoctorError`
    (exit 2) only for text in which nothing at all is recognised."""
    from x4lib.doctor import paste
    kinds = detect_kinds(text)
    if kinds == ["json"]:
        return diagnose_json(text, name, reader_notes)
    handlers = {"nccl-tests-log": _diagnose_nccl, "nccl-debug": _diagnose_nccl, "nvidia-smi-q": diagnose_smi,
                "nvidia-smi-topo": topology_findings, "lspci": diagnose_lspci}
    reports, found = [], []
    for kind in kinds:
        report, more = handlers[kind](text, name)
        reports.append(report)
        found += [f for f in more if f.rule.id not in {g.rule.id for g in found}]
    sc = paste.scan(text, name)
    skip = {f.rule.id for f in found} | {r for k in kinds for r in _READER_DECIDES.get(k, ())}
    extra = paste.findings(sc, skip=frozenset(skip))
    found = _with_paste_evidence(found, paste.findings(sc, skip=frozenset(skip - {f.rule.id for f in found})))
    fragments = sc.fragments()
    if not kinds and not fragments:
        what = "an empty file" if not text.strip() else "not a file the doctor recognises (nothing in it is)"
        raise DoctorError(f"{name}: {what}; it reads {RECOGNISED}")
    found += extra
    if len(reports) == 1 and not extra:
        report = reports[0]
    else:
        parts = [r.summary for r in reports] + [f"{paste.FRAGMENTS[k]} ({n})" for k, n in fragments.items()]
        report = InputReport(name, "pasted-text", f"{KIND_NAMES['pasted-text']}: " + "; ".join(parts),
                             all(r.diagnosed for r in reports),
                             tuple(w for r in reports for w in r.warnings))
    lead = named_cause(found, sc.fix_lines(), sc.cause_lines())
    cause = None if lead is None else {"category": lead.category, "rule": lead.rule.id,
                                       "line": lead.evidence[0].line if lead.evidence else None}
    nxt = None if lead is not None else paste.next_command(sc)
    stop = () if sc.stopped_at is None else (
        f"line {sc.stopped_at}: pasted-text patterns stopped at their bound (paste.MAX_CANDIDATES lines, "
        "paste.MAX_WORK_CHARS); the rest is not searched",)
    report = dataclasses.replace(report, named_cause=cause, next_command=nxt,
                                 warnings=tuple(reader_notes) + report.warnings + stop)
    return report, found


def read_stdin(stream=None) -> tuple[str, list[str]]:
    """(text, reader warnings) of standard input, with the file rules (at most 64 MiB; binary refused)."""
    import sys
    from x4lib.network import nccl_log
    stream = stream if stream is not None else sys.stdin.buffer
    data = stream.read(nccl_log.MAX_LOG_BYTES + 1)
    if len(data) > nccl_log.MAX_LOG_BYTES:
        raise DoctorError(f"<stdin>: over the {nccl_log.MAX_LOG_BYTES // 2**20} MiB limit")
    try:
        text, _encoding, notes = nccl_log.decode_log(data, "<stdin>")
    except nccl_log.NcclLogError as exc:
        raise DoctorError(str(exc).replace("binary file, not an nccl-tests/rccl-tests log",
                                           "binary file, not text the doctor reads")) from None
    return text, notes


def diagnose_files(paths, stdin=None) -> Report:
    """Read every file (all of them first: one bad file is one error, exit 2, before anything is diagnosed),
    then diagnose each by its kind. ``-`` is standard input (``stdin``: a binary stream, for tests)."""
    paths = list(paths)
    if not paths:
        raise DoctorError("no input file given")
    if paths.count("-") > 1:
        raise DoctorError("standard input (-) given twice")
    texts = [("<stdin>", *read_stdin(stdin)) if os.fspath(p) == "-" else (os.fspath(p), *read_text(p))
             for p in paths]
    findings, inputs = [], []
    for name, text, notes in texts:
        report, found = diagnose_text(text, name, notes)
        inputs.append(report)
        findings += found
    return Report(tuple(findings), tuple(inputs))


# ------------------------------------------------------------------------------- nccl-tests logs and NCCL_DEBUG

_NNODES_RE = re.compile(r"\bnNodes ([0-9]{1,7})\b")
_P2P_ENV_RE = re.compile(r"NCCL_P2P_DISABLE\s*=\s*1\b|NCCL_P2P_DISABLE set by environment to 1\b")
_ALGO_RING_RE = re.compile(r"NCCL_ALGO\s*=\s*\"?ring\b|NCCL_ALGO set by environment to ring\b", re.IGNORECASE)
_SHM_RE = re.compile(r"NCCL INFO Channel [0-9]{1,3}(/[0-9]{1,3})? : .{0,80} via SHM/")
_NO_P2P_RE = re.compile(r"Could not enable P2P between dev [0-9]")
_P2P_RE = re.compile(r"NCCL INFO Channel [0-9]{1,3}(/[0-9]{1,3})? : .{0,80} via P2P/")


def _log_catalog_id(names) -> str | None:
    """The catalog id of the GPU named in the rank lines (all the same), or None."""
    from x4lib.harness import device
    names = {n for n in names if n}
    if len(names) != 1:
        return None
    name = next(iter(names))
    cat = device.match_gpu(name)
    if cat:
        return cat
    return next((e["catalog_id"] for e in load_rules()["log_device_names"] if re.search(e["regex"], name)), None)


def _nodes(log, ranks, lines: Lines) -> tuple[int | None, list[int]]:
    """(number of nodes, lines of NCCL's nNodes) from a complete rank list or NCCL's own "nNodes N" lines;
    None when neither tells."""
    nn = [(i, int(m.group(1))) for i in lines.find("nNodes ") if (m := _NNODES_RE.search(lines.lines[i - 1]))]
    if nn:
        return max(v for _, v in nn), [i for i, _ in nn]
    if log is not None:
        return log.nhosts, []
    numbers = sorted({r.rank for r in ranks})
    if numbers and numbers == list(range(len(numbers))) and not lines.find("..."):
        return len({r.host for r in ranks}), []
    return None, []


def _peak_row(log):
    """(row, placement name, placement) with the largest busbw of a parsed log."""
    return max(((r, w, p) for r in log.rows for w, p in r.placements()), key=lambda t: t[2].busbw_gb_s)


#: a launcher told to run on one node (torchrun/torch.distributed.run, DeepSpeed, Slurm)
_ONE_NODE_RE = re.compile(r"--nnodes[ =]1\b|--num[_-]nodes[ =]1\b|\bnnodes=1\b|\bsrun\b.{0,80}\s(?:-N|--nodes)[ =]?1\b")


def _diagnose_nccl(text: str, name: str) -> tuple[InputReport, list[Finding]]:
    from x4lib.network import nccl_log, nccl_rows
    L = Lines(name, text)
    warnings = []
    try:
        log = nccl_log.read_log(text, name)
        warnings += list(log.warnings)
    except nccl_log.NcclLogError as exc:
        log = None
        if "not an nccl-tests" not in str(exc):
            warnings.append(str(exc))
    ranks = list(log.ranks) if log else [r for i, ln in enumerate(L.lines, 1)
                                         if (r := nccl_rows.parse_rank(ln.strip(), i))]
    nodes, node_lines = _nodes(log, ranks, L)
    found: list[Finding] = []

    # -- transports (NCCL_DEBUG=INFO lines)
    using = L.find("NCCL INFO Using network ")
    socket = [i for i in using if "Using network Socket" in L.lines[i - 1]] or \
        ([] if using else L.find("NET/Socket : Using"))
    ibverbs = L.find("Failed to open libibverbs")
    # NCCL found no InfiniBand device and no "Using network" line says otherwise: its network transport is then
    # Socket (NCCL tries its IB transport, then Socket; nccl-source-transports). Not where a plugin or IB runs
    # (NET/OFI lines, a channel via NET/), as on AWS EFA, where "NET/IB : No device found" is normal
    no_ib = [i for i in L.find("No device found") if re.search(r"NET/IB ?: ?No device found", L.lines[i - 1])]
    one_node = nodes == 1 or any(_ONE_NODE_RE.search(ln) for ln in L.lines[:20000])  # a launcher's --nnodes 1
    if not socket and not using and no_ib and not one_node and not (L.find("NET/OFI") or L.find("via NET/")):
        socket = no_ib
    if socket and nodes is not None and nodes > 1:
        host_ev = [L.ev(r.line) for r in ({r.host: r for r in reversed(ranks)}.values())][:2]
        found.append(new_finding("net-socket-multinode", name, [L.ev(i) for i in socket[:2] + ibverbs[:1]] + host_ev +
                              [L.ev(i) for i in node_lines[:1]],
                              f"{nodes} nodes; NCCL's network transport is Socket"
                              + (" because libibverbs could not be loaded" if ibverbs else
                                 " because NCCL found no InfiniBand device" if socket == no_ib else "")))
    elif socket and nodes is None:
        found.append(new_finding("net-socket-nodes-unknown", name, [L.ev(i) for i in ibverbs[:1] + socket[:2]],
                              "libibverbs could not be loaded" if ibverbs else
                              "NCCL found no InfiniBand device (NET/IB : No device found)" if socket == no_ib else ""))
    p2p_type0 = L.find("intraNodeP2pSupport 0")
    no_p2p = [i for i in L.find("Could not enable P2P between dev") if _NO_P2P_RE.search(L.lines[i - 1])]
    shm = [i for i in L.find("via SHM/") if _SHM_RE.search(L.lines[i - 1])]
    p2p = [i for i in L.find("via P2P/") if _P2P_RE.search(L.lines[i - 1])]
    if p2p_type0 or no_p2p or (shm and not p2p):
        found.append(new_finding("p2p-not-supported", name, [L.ev(i) for i in p2p_type0[:1] + no_p2p[:1] + shm[:2]],
                              "NCCL connected the GPUs of one node through host shared memory"))
    elif not (shm or p2p):
        hostcount = {}
        for r in ranks:
            hostcount[r.host] = hostcount.get(r.host, 0) + 1
        nop2p = [r for r in ranks if hostcount[r.host] > 1 and
                 any(re.search(e["regex"], r.name) for e in load_rules()["no_p2p_gpu_names"])]
        if nop2p:
            found.append(new_finding("geforce-no-p2p", name, [L.ev(r.line) for r in nop2p[:2]],
                                  f"{len(nop2p)} ranks on {nop2p[0].name} share a host"))
    env = [i for i in L.find("NCCL_P2P_DISABLE") if _P2P_ENV_RE.search(L.lines[i - 1])]
    if env:
        found.append(new_finding("p2p-disabled-by-env", name, [L.ev(i) for i in env[:2]]))
    iommu = L.find('Missing "iommu=pt"')
    if iommu:
        found.append(new_finding("rccl-iommu-pt-missing", name, [L.ev(i) for i in iommu[:1]]))
    failed = L.find("Test NCCL failure", "Test failure", "NCCL WARN Cuda failure")
    maxshm = [i for i in L.find("ncclMaxSharedMem") if "exceeds" in L.lines[i - 1]]
    if failed and maxshm:
        found.append(new_finding("nccl-maxsharedmem", name, [L.ev(i) for i in maxshm[:1] + failed[:1]]))
    if failed:
        found.append(new_finding("test-failed", name, [L.ev(i) for i in failed[:2]],
                              "the log has no result row" if not (log and log.rows) else
                              "a test failure is reported after the results"))

    table = any(nccl_rows.parse_header(ln.strip(), i) for i, ln in enumerate(L.lines, 1) if "busbw" in ln)
    if table and not failed and (log is None or not log.checks_ok):
        named = [int(m.group(1)) for w in warnings if (m := re.search(r"(?:^|:)(?:line )?([0-9]{1,9})[:]? ", w))]
        named = [n for n in dict.fromkeys(named) if 1 <= n <= len(L.lines)]
        found.append(new_finding("log-check-failed", name, [L.ev(n) for n in named[:3]],
                              "; ".join(w for w in warnings if not w.startswith("the rank list"))[:400]))

    # -- numbers (a results table)
    n_ranks = log.n_ranks if log else None
    if n_ranks == 1 or (log is None and len(ranks) == 1 and nodes == 1):
        row = log.rows[-1] if log and log.rows else None
        found.append(new_finding("one-rank", name, [L.ev(r.line) for r in ranks[:1]] + ([L.ev(row.line)] if row else []),
                              "1 rank: busbw is 0 by definition",
                              Quantity(row.out_of_place.busbw_gb_s if row and row.out_of_place else 0.0, "GB/s",
                                       "busbw of the largest row, out-of-place") if row else None))
    if log and log.rows and n_ranks and n_ranks > 1:
        row, where, p = _peak_row(log)
        busbw = Quantity(p.busbw_gb_s, "GB/s", f"largest busbw: {where.replace('_', '-')} at {row.size_B} B "
                                                f"(line {row.line})")
        found = [dataclasses.replace(f, measured=busbw) if f.category in ("tcp-fallback", "p2p-disabled",
                                                                             "virtualization-acs-iommu")
                 and f.measured is None else f for f in found]
        found += _log_numbers(log, L, nodes, ranks, found)
    coll = log.collective if log else None
    kind = "nccl-tests-log" if table else "nccl-debug"
    summary = (f"{KIND_NAMES[kind]}: "
               + (f"{log.tool}, {coll or 'collective unknown'}, {len(log.rows)} rows, " if log else "")
               + f"{n_ranks or len(ranks) or '?'} rank(s) on {nodes or '?'} node(s)"
               + (f", {', '.join(sorted({r.name for r in ranks if r.name}))}" if ranks else "")
               + ("" if log and log.rows else "; no results table (the run failed, hung or was cut)"))
    return InputReport(name, kind, summary, True, tuple(warnings)), found


def _log_numbers(log, L: Lines, nodes, ranks, earlier) -> list[Finding]:
    """Rules on a log's numbers: busbw beside the per-direction bottleneck (one node) or the two-node caveat."""
    from x4lib.network import clusters, collectives, nccl_tests
    from x4lib.catalog import specs
    out = []
    row, where, p = _peak_row(log)
    busbw = Quantity(p.busbw_gb_s, "GB/s", f"largest busbw: {where.replace('_', '-')} at {row.size_B} B "
                                            f"(line {row.line})")
    coll = log.collective
    if nodes == 2 and coll == "all_reduce" and not any(_ALGO_RING_RE.search(ln) for ln in L.lines):
        second = next((r for r in ranks if r.host != ranks[0].host), None)
        out.append(new_finding("two-node-tree", L.name, ([L.ev(ranks[0].line), L.ev(second.line)] if second else [])
                            + [L.ev(row.line)], "2 nodes, AllReduce, NCCL_ALGO=Ring not seen in the log; the "
                            "network bottleneck (NICs per node × line rate per direction) is not printed in it",
                            busbw, None))
    out += _rows_not_steady(log, L)
    cat = _log_catalog_id(r.name for r in ranks)
    out += _one_thread_many_gpus(log, L, nodes, cat)
    if nodes != 1 or cat is None or coll not in nccl_tests.COLLECTIVES:
        return out
    dev = specs.get(cat)
    link = dev.get("scaleup_bw_gb_s_per_direction")
    if link is None:
        return out
    line_rate = Quantity(link.value, "GB/s", f"scale-up line rate per direction, catalog {cat} ({link.source})")
    if p.busbw_gb_s > link.value:
        out.append(new_finding("nvls-above-line-rate", L.name, [L.ev(row.line)],
                            f"busbw {p.busbw_gb_s:g} GB/s > {link.value:g} GB/s per direction", busbw, line_rate))
        return out
    cluster = clusters.custom_cluster(1, log.n_ranks, link.si, intra_kind="nvlink",
                                      cluster_id=f"1x{log.n_ranks}-{cat}")
    model = collectives.predict(coll, row.size_B, cluster).busbw_Bps / 1e9
    explained = any(f.severity in ("problem", "warning") for f in [*earlier, *out])
    if p.busbw_gb_s < threshold("below_model_fraction") * model and not explained:
        out.append(new_finding("below-model", L.name, [L.ev(row.line)],
                            f"{p.busbw_gb_s:g} GB/s is {100 * p.busbw_gb_s / model:.0f} % of the model",
                            busbw, Quantity(round(model, 3), "GB/s",
                                            f"model busbw (x4lib.network.collectives, {coll}, 1 node × {log.n_ranks} "
                                            f"{cat}, per-direction link {link.value:g} GB/s) at {row.size_B} B")))
    return out


def _rows_not_steady(log, L: Lines) -> list[Finding]:
    """The log's times from 128 MiB fail the steady-rate test (x4lib.network.validation.first_unsteady_doubling: a
    doubling adds less time than the one before); evidence: the three rows, each the faster of its two columns."""
    from x4lib.network import sizes, validation
    rows = {r.size_B: r for r in log.rows if r.out_of_place and r.out_of_place.time_us}
    bad = validation.first_unsteady_doubling({s: validation.measured_s(r) for s, r in rows.items()})
    if bad is None:
        return []
    s, first, second = bad
    return [new_finding("rows-not-steady", L.name, [L.ev(rows[x].line) for x in (s, 2 * s, 4 * s)],
                        f"{sizes.label(s)} to {sizes.label(2 * s)} adds {first * 1e6:,.0f} µs, {sizes.label(2 * s)} "
                        f"to {sizes.label(4 * s)} only {second * 1e6:,.0f} µs",
                        Quantity(round(second * 1e6, 1), "µs", f"time added from {sizes.label(2 * s)} to "
                                                               f"{sizes.label(4 * s)}"),
                        Quantity(round(first * 1e6, 1), "µs", f"at least the time added from {sizes.label(s)} to "
                                                              f"{sizes.label(2 * s)} (twice it at one steady rate)"))]


# ------------------------------------------------------------------------------------------ nvidia-smi topo -m

def _one_thread_many_gpus(log, L: Lines, nodes, cat: str | None) -> list[Finding]:
    """One thread drove several GPUs (nccl-tests -g > 1): the log's calls up to 1 MiB measure the host. Measured:
    the largest row from 64 KiB to 1 MiB; expected, on one node of a catalog GPU: the host's time for that call
    (x4lib.network.collectives.host_time_s: the log's floor, its calls below 64 KiB, plus the fitted cost of each
    further channel on each GPU)."""
    from x4lib.catalog import specs
    from x4lib.network import clusters, collectives, nccl_tuner, sizes, validation
    g = validation.gpus_per_thread(log)
    own_floor = validation.rows_floor_s(log)
    rows = [r for r in log.rows if validation.MIN_ROW_B <= r.size_B <= 2**20 and r.out_of_place
            and r.out_of_place.time_us]
    if g < 2 or not rows:
        return []
    floor = validation.host_floor_s(log, own_floor)
    if own_floor is None:
        own = (f"nGpus {g} per thread; no call below {sizes.label(validation.MIN_ROW_B)} in the log, so the floor is "
               f"{g} × {floor / g * 1e6:.1f} µs, the stored one-thread runs' floor per GPU")
    else:
        own = (f"nGpus {g} per thread; its calls below {sizes.label(validation.MIN_ROW_B)} take at least "
               f"{floor * 1e6:.1f} µs")
    row = max(rows, key=lambda r: r.size_B)
    t = validation.measured_s(row)
    measured = Quantity(round(t * 1e6, 2), "µs", f"time at {sizes.label(row.size_B)} (line {row.line}), the faster "
                                                  f"of out-of-place and in-place")
    expected, detail = None, own
    coll = log.collective
    if nodes == 1 and cat and coll in nccl_tuner.TUNED and log.n_ranks:
        link = specs.get(cat).get("scaleup_bw_gb_s_per_direction")
        try:
            cluster = clusters.custom_cluster(1, log.n_ranks, link.si, arch=clusters.arch_of(cat),
                                              cluster_id=f"1x{log.n_ranks}-{cat}") if link else None
        except (ValueError, clusters.ClusterError):
            cluster = None
        if cluster is not None:
            o = min(collectives.options(coll, row.size_B, cluster), key=lambda o: o.time_s)
            c, _ = validation.fit_host_channel()
            n = collectives.call_channels(o, row.size_B, cluster)
            host = collectives.host_time_s(o, row.size_B, cluster, floor, g, c)
            expected = Quantity(round(host * 1e6, 2), "µs",
                                f"the host's time per call: {floor * 1e6:.1f} µs + ({n} channels − 1) × {g} GPUs × "
                                f"{c * 1e6:.2f} µs (x4lib.network.collectives.host_time_s, {o.algorithm}/{o.protocol} "
                                f"on 1 × {log.n_ranks} {cat})")
            detail += f"; at {sizes.label(row.size_B)} the host's time is {host * 1e6:.0f} µs, measured {t * 1e6:.0f} µs"
    where = L.find("nGpus")
    return [new_finding("one-thread-many-gpus", L.name, [L.ev(i) for i in where[:1]] + [L.ev(row.line)], detail,
                        measured, expected)]


def topology_findings(text: str, name: str) -> tuple[InputReport, list[Finding]]:
    """THE ONE PLACE ``nvidia-smi topo -m`` is read: parsed by ``x4lib.network.topo`` (chapter 03's reader), whose
    findings become the doctor's where they lower a number — GPU pairs that NCCL will not connect peer-to-peer
    (beyond PXB without NVLink), and GPUs whose nearest NIC is beyond PXB (no GPUDirect RDMA by default) or across
    the CPU socket (SYS). The evidence is the GPU's row of the matrix."""
    from x4lib.network import topo
    try:
        t = topo.parse_topo(text, name)
    except topo.TopoError as exc:
        return InputReport(name, "nvidia-smi-topo", f"{KIND_NAMES['nvidia-smi-topo']}: not readable ({exc})",
                           diagnosed=False), []
    lines = Lines(name, text)

    def row_of(dev: str) -> list[Evidence]:
        rows = [i for i in lines.find(dev) if (tok := lines.lines[i - 1].split())[:1] == [dev] and "X" in tok]
        return [lines.ev(i) for i in rows[:1]]
    by_code = {"no-p2p": "topo-no-p2p", "gpu-nic-cross-socket": "topo-gpu-nic-cross-socket",
               "gpu-nic-no-gdr": "topo-gpu-nic-no-gdr"}
    found: dict[str, tuple[list[Evidence], list[str]]] = {}
    for f in topo.findings(t):
        rule_id = by_code.get(f["code"])
        if rule_id is None:
            continue
        devs = re.findall(r"\bGPU[0-9]{1,3}\b", f["message"])
        ev, msgs = found.setdefault(rule_id, ([], []))
        ev += [e for d in dict.fromkeys(devs) for e in row_of(d) if e not in ev]
        msgs.append(f["message"])
    gpus = t.gpus
    pairs = [t.path(a, b) for i, a in enumerate(gpus) for b in gpus[i + 1:]]
    spans = {t.numa_affinity.get(g) for g in gpus}
    if len(gpus) >= 4 and pairs and all(w == "PHB" for w in pairs) and len(spans) == 1 and \
            (span := next(iter(spans))) and any(c in span for c in "-,"):
        ev = [e for g in gpus[:2] for e in row_of(g)]
        found = {"topo-flat-virtual": (ev, [f"{len(gpus)} GPUs, every pair PHB, every GPU on NUMA nodes {span}"]),
                 **found}
    findings = [new_finding(rule_id, name, ev, detail="; ".join(msgs)) for rule_id, (ev, msgs) in found.items()]
    summary = (f"{KIND_NAMES['nvidia-smi-topo']}: {len(t.gpus)} GPUs, {len(t.nics)} NICs "
               f"(read with x4lib.network.topo {topo.METHOD_VERSION})")
    return InputReport(name, "nvidia-smi-topo", summary, diagnosed=True), findings


# ------------------------------------------------------------------------------------------------------- here

def _cpuinfo_evidence(text: str, name: str = "/proc/cpuinfo") -> list[Evidence]:
    """The first 'model name', 'cpu MHz' and 'model' lines of /proc/cpuinfo, with their line numbers."""
    L, out = Lines(name, text), []
    for key in ("model name", "model", "cpu MHz"):
        line = next((i for i, ln in enumerate(L.lines, 1) if ln.split(":")[0].strip() == key), None)
        if line:
            out.append(L.ev(line))
    return out


def measure_here(torch, det: Mapping, quick: bool = False) -> dict:
    """Short measurements with the book's harness: matmuls (CPU FP32; GPU BF16 and FP32) and a triad.
    Returns {"matmul": rows, "memory_bw": rows} as Lab 00 stores them (raw times; rates derived later)."""
    from x4lib.harness import bench
    dev = det["torch_device"]
    if det["kind"] == "gpu":
        sizes = (4096, 8192) if quick else (4096, 8192, 16384)
        plan = [("bf16", n) for n in sizes] + [("fp32", n) for n in sizes[:2]]
        elements, warmup, repeats = (2**26 if quick else 2**28), 2, (5 if quick else 10)
    else:
        sizes = (1024, 2048) if quick else (1024, 2048, 4096)
        plan = [("fp32", n) for n in sizes]
        elements, warmup, repeats = (2**22 if quick else 2**24), 1, (3 if quick else 5)
    rows = [bench.matmul_row(torch, dt, n, n, n, dev, warmup, repeats) for dt, n in plan]
    mem = [bench.memory_row(torch, "triad", elements, dev, warmup, repeats)]
    return {"matmul": rows, "memory_bw": mem}


def _run(cmd: list[str], timeout_s: float = 30) -> str | None:
    exe = shutil.which(cmd[0])
    if not exe:
        return None
    try:
        r = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 and r.stdout.strip() else None


def here(quick: bool = False, torch=None, measurements: Mapping | None = None, det: Mapping | None = None,
         cpuinfo_text: str | None = None, smi_text: str | None = None, topo_text: str | None = None) -> Report:
    """Diagnose this machine: detect the CPU or GPU, measure (or take ``measurements``, e.g. in tests), compare
    with the peak and the catalog; on a GPU read ``nvidia-smi -q`` and ``nvidia-smi topo -m`` (or the texts given).
    ``quick``: a few seconds."""
    if torch is None:
        try:
            import torch  # noqa: PLW0621 — the measuring harness needs it
        except ImportError:
            raise DoctorError("torch is not installed, so this machine cannot be measured; "
                              "give files with --from instead") from None
    from x4lib.harness import device
    det = det if det is not None else device.detect(torch)
    if det.get("kind") not in ("cpu", "gpu"):
        raise DoctorError(f"no device to measure ({det.get('detected_name', '?')})")
    data = measurements if measurements is not None else measure_here(torch, det, quick)
    kind = "here-gpu" if det["kind"] == "gpu" else "here-cpu"
    name = f"<{det.get('detected_name', 'this machine')}, measured now>"
    peak_ev = []
    if det["kind"] == "cpu":
        if cpuinfo_text is None:
            p = Path("/proc/cpuinfo")
            cpuinfo_text = p.read_text(errors="replace") if p.exists() else ""
        peak_ev = _cpuinfo_evidence(cpuinfo_text)
    found = matmul_checks(det, data, name, peak_ev)
    n_ok = len(rate_rows(data))
    label = det.get("detected_name", "?") + (f" ({det['catalog_id']})" if det.get("catalog_id") else "")
    inputs = [InputReport(name, kind, f"{KIND_NAMES[kind]}: {label}, {n_ok} matmul shapes and "
                                      f"{len(mem_rows(data))} memory kernel(s) timed "
                                      f"({'quick' if quick else 'full'}); harness x4lib.harness.bench")]
    if det["kind"] == "gpu":
        for cmd, text, label, kind in ((["nvidia-smi", "-q"], smi_text, "<nvidia-smi -q, here>", "nvidia-smi-q"),
                                       (["nvidia-smi", "topo", "-m"], topo_text, "<nvidia-smi topo -m, here>",
                                        "nvidia-smi-topo")):
            text = text if text is not None else _run(cmd)
            if text is None:
                inputs.append(InputReport(label, kind, f"{' '.join(cmd)} is not available here", False))
                continue
            try:
                rep, more = diagnose_text(text, label)
            except DoctorError as exc:
                inputs.append(InputReport(label, "unrecognised", f"its output was not recognised: {exc}", False))
                continue
            inputs.append(rep)
            found += more
    return Report(tuple(found), tuple(inputs))


# -------------------------------------------------------------------------------------------- text output

def to_text(report: Report) -> str:
    """The report for a terminal: the inputs, then each finding with its evidence, numbers, advice and source."""
    c = {s: report.count(s) for s in SEVERITIES}
    out = [f"doctor: {len(report.inputs)} input(s), {len(report.findings)} finding(s): "
           f"{c['problem']} problem, {c['warning']} warning, {c['note']} note"]
    for i in report.inputs:
        out.append(f"  read {i.file}: {i.summary}")
        out += [f"    reader: {w}" for w in i.warnings[:5]]
        if i.named_cause:
            c = i.named_cause
            out.append(f"    named cause: {c['category']} ({c['rule']}"
                       + (f", line {c['line']})" if c.get("line") else ")"))
        if i.next_command:
            out.append(f"    next, to decide: {i.next_command}")
    for f in report.findings:
        out.append(f"[{f.severity}] {f.category}: {f.rule.title} ({f.rule.id})")
        out.append(f"  cause: {f.cause}" + (f" ({f.detail})" if f.detail else ""))
        for e in f.evidence:
            out.append(f"  evidence: {e.file}{':' + str(e.line) if e.line else ''}: {e.text}")
        if f.measured:
            out.append(f"  measured: {f.measured.value:.4g} {f.measured.unit} ({f.measured.what})")
        if f.expected:
            out.append(f"  expected: {f.expected.value:.4g} {f.expected.unit} ({f.expected.what})")
        out.append(f"  advice: {f.advice}")
        out.append(f"  source: {f.rule.source_key} {f.rule.source_url}")
    if not report.findings:
        out.append("nothing wrong found by the rules that apply to these inputs")
    return "\n".join(out)


# ------------------------------------------------------------------------ command line: python -m x4lib doctor

def cli_arguments(p) -> None:
    p.description = ("Is my number right? Without --from: detect this CPU or GPU, measure it briefly and compare with "
                     "the catalog and the models. With --from: read nccl-tests/rccl-tests logs, NCCL_DEBUG output, "
                     "nvidia-smi -q, nvidia-smi topo -m, lspci -vv excerpts or a lab's results.json. "
                     "Exit 0 nothing wrong, 1 a problem or warning found, 2 bad input.")
    p.add_argument("--from", dest="files", nargs="+", action="extend", metavar="FILE",
                   help="files to diagnose, or - for standard input (read as untrusted text, recognised by content: "
                        "whole tool outputs or a pasted bug report)")
    p.add_argument("--quick", action="store_true", help="here: a few seconds of measurement")
    p.add_argument("--json", action="store_true", help="machine-readable output "
                                                       "(schema: x4lib/schemas/doctor_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    load_rules()
    report = diagnose_files(args.files) if args.files else here(quick=args.quick)
    cli.emit(report.to_json(), to_text(report), as_json=args.json)
    return report.exit_code
