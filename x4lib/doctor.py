"""Is my number right? Set a measurement beside the catalog and the models, and name the likely cause of a gap.

    python -m x4lib doctor [--quick] [--json]                # here: detect this CPU or GPU, measure, diagnose
    python -m x4lib doctor --from FILE [FILE ...] [--json]   # from what a user can paste

Two ways in.

- **Here** (:func:`here`): detect the CPU or GPU (``x4lib.device``), time a few matmuls and a triad with the book's
  harness (``x4lib.bench``: CUDA events on a GPU, ``perf_counter`` on a CPU), and on a GPU read ``nvidia-smi -q``
  and ``nvidia-smi topo -m`` through ``subprocess``. The best rate is compared with :func:`expected_matmul` (the
  one place the expected rate of a shape comes from) and the triad with the catalog's memory bandwidth.
- **From files** (:func:`diagnose_files`): every file is untrusted text, read with ``x4lib.nccl_log``'s file
  rules (a regular file of at most 64 MiB; UTF-8, or UTF-16/32 with or without a byte-order mark; binary refused)
  and recognised by its content, never by its name: an nccl-tests / rccl-tests log with or without NCCL_DEBUG=INFO
  lines, NCCL_DEBUG output alone, ``nvidia-smi -q``, ``nvidia-smi topo -m``, ``lspci -vv`` excerpts, and the labs'
  ``results.json``. Nothing in a file is executed; every pattern runs on one line in time linear in its length.
  A file that is none of these is named as such (exit 2).

What it says. Each :class:`Finding` comes from one rule of ``x4lib/data/doctor_rules.yaml``: a category
(``tcp-fallback``, ``p2p-disabled``, ``pcie-downtrained``, ``power-or-thermal-throttle``,
``virtualization-acs-iommu``, ``affinity-numa``, ``algorithm-or-expectation``, ``dtype-or-shape``, ``other``), a
severity (``problem``, ``warning``: exit 1; ``note``: expected behaviour, exit 0), the cause in one sentence, the
evidence (file, line and the text that proves it), the measured figure beside the expected one (busbw beside the
per-direction bottleneck, never a bidirectional figure; a matmul beside the rate the achievable-rate model
predicts for its shape), the advice, and
the source where the cause is documented (NVIDIA/NCCL/AMD documentation or the public thread that established it).

The expected matmul rate of a shape is the achievable-rate model's (``x4lib.matmul``, issue 12) where the
device's family is modelled, else the roofline of the catalog's dense peak (:func:`expected_matmul`);
``nvidia-smi topo -m`` is read with ``x4lib.topo`` (:func:`topology_findings`).

Exit codes: 0 nothing wrong (notes only); 1 a problem or warning found; 2 bad input (missing, unreadable,
binary or unrecognised file; a results.json that breaks its schema). Used in: book/lab-00-roofline.md,
book/lab-01-collectives.md ("Is my number right?").
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

#: version of the doctor's method (readers and rules); bump when what it reads or says changes
DOCTOR_VERSION = "doctor/1"
RULES_PATH = Path(__file__).parent / "data" / "doctor_rules.yaml"
RULES_SCHEMA_PATH = Path(__file__).parent / "schemas" / "doctor_rules.schema.json"
CATEGORIES = ("tcp-fallback", "p2p-disabled", "pcie-downtrained", "power-or-thermal-throttle",
              "virtualization-acs-iommu", "affinity-numa", "algorithm-or-expectation", "dtype-or-shape", "other")
SEVERITIES = ("problem", "warning", "note")
#: input kinds the doctor recognises (besides "unrecognised")
KINDS = ("nccl-tests-log", "nccl-debug", "nvidia-smi-q", "nvidia-smi-topo", "lspci", "lab00-results",
         "lab01-results", "here-cpu", "here-gpu")
#: longest text of one evidence line kept (characters)
EVIDENCE_CHARS = 240
#: most evidence lines kept per finding
EVIDENCE_LINES = 8


class DoctorError(ValueError):
    """Bad input for the doctor (a missing, unreadable, binary or unrecognised file): exit 2."""
    exit_code = 2


class RulesError(ValueError):
    """x4lib/data/doctor_rules.yaml is broken (the book's fault, not the user's): exit 1."""
    exit_code = 1


# ---------------------------------------------------------------------------------------------------- results

@dataclasses.dataclass(frozen=True)
class Evidence:
    """The line that proves a finding: file, line number (1-based; None for a measurement or a JSON value), text."""
    file: str
    line: int | None
    text: str

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "text": self.text}


@dataclasses.dataclass(frozen=True)
class Quantity:
    """A measured or expected figure in display units (GB/s = 1e9 B/s, TFLOP/s = 1e12 FLOP/s), and what it is."""
    value: float
    unit: str
    what: str

    def to_json(self) -> dict:
        return {"value": self.value, "unit": self.unit, "what": self.what}


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule of doctor_rules.yaml."""
    id: str
    category: str
    severity: str
    title: str
    cause: str
    advice: str
    source_key: str
    source_url: str
    source_note: str
    kinds: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Finding:
    """What one rule says about one input: the rule's cause and advice, with this input's evidence and numbers."""
    rule: Rule
    file: str
    evidence: tuple[Evidence, ...]
    detail: str = ""
    measured: Quantity | None = None
    expected: Quantity | None = None

    category = property(lambda self: self.rule.category)
    severity = property(lambda self: self.rule.severity)
    cause = property(lambda self: self.rule.cause)
    advice = property(lambda self: self.rule.advice)

    def to_json(self) -> dict:
        r = self.rule
        return {"rule": r.id, "title": r.title, "category": r.category, "severity": r.severity, "file": self.file,
                "cause": r.cause, "detail": self.detail, "evidence": [e.to_json() for e in self.evidence],
                "measured": self.measured.to_json() if self.measured else None,
                "expected": self.expected.to_json() if self.expected else None,
                "advice": r.advice, "source": {"key": r.source_key, "url": r.source_url, "note": r.source_note}}


@dataclasses.dataclass(frozen=True)
class InputReport:
    """One input as the doctor read it: its kind (by content), a one-line summary, whether rules were applied
    (``diagnosed``: False for a recognised kind the doctor cannot diagnose yet) and the reader's warnings."""
    file: str
    kind: str
    summary: str
    diagnosed: bool = True
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"file": self.file, "kind": self.kind, "recognised": self.kind != "unrecognised",
                "diagnosed": self.diagnosed, "summary": self.summary, "warnings": list(self.warnings)}


@dataclasses.dataclass(frozen=True)
class Report:
    """Every finding of one doctor run, and the inputs it read."""
    findings: tuple[Finding, ...]
    inputs: tuple[InputReport, ...]

    def count(self, severity: str) -> int:
        return sum(f.severity == severity for f in self.findings)

    @property
    def exit_code(self) -> int:
        """0 when nothing is wrong (notes only), 1 when a problem or a warning was found."""
        return 1 if any(f.severity in ("problem", "warning") for f in self.findings) else 0

    def to_json(self) -> dict:
        """The --json contract (x4lib/schemas/doctor_output.schema.json)."""
        from x4lib import __version__
        return {"version": DOCTOR_VERSION, "x4lib_version": __version__,
                "counts": {s: self.count(s) for s in SEVERITIES}, "exit_code": self.exit_code,
                "findings": [f.to_json() for f in self.findings], "inputs": [i.to_json() for i in self.inputs]}


# ------------------------------------------------------------------------------------------------------ rules

@functools.lru_cache(maxsize=2)
def load_rules(path: Path = RULES_PATH) -> Mapping:
    """doctor_rules.yaml validated (JSON Schema, every rule id has a check, every rule's kinds are known):
    {"rules": id -> :class:`Rule`, "thresholds": name -> float, "log_device_names": [...], "no_p2p_gpu_names": [...]}.
    Raises :class:`RulesError` (exit 1) naming the file and the field."""
    import jsonschema
    import yaml
    name = Path(path).name
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RulesError(f"{name}: cannot be read as YAML: {' '.join(str(exc).split())}") from None
    try:
        jsonschema.validate(data, json.loads(RULES_SCHEMA_PATH.read_text(encoding="utf-8")))
    except jsonschema.ValidationError as exc:
        at = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise RulesError(f"{name}: {at}: {exc.message[:300]}") from None
    missing = sorted(set(RULE_IDS) - set(data["rules"]))
    unknown = sorted(set(data["rules"]) - set(RULE_IDS))
    if missing or unknown:
        raise RulesError(f"{name}: rules without a check in x4lib/doctor.py: {', '.join(unknown) or 'none'}; "
                         f"checks without a rule: {', '.join(missing) or 'none'}")
    for entry in data["log_device_names"] + data["no_p2p_gpu_names"]:
        try:
            re.compile(entry["regex"])
        except re.error as exc:
            raise RulesError(f"{name}: bad regex {entry['regex']!r}: {exc}") from None
    rules = {rid: Rule(rid, r["category"], r["severity"], r["title"], " ".join(r["cause"].split()),
                       " ".join(r["advice"].split()), r["source"]["key"], r["source"]["url"],
                       " ".join(r["source"]["note"].split()), tuple(r["kinds"]))
             for rid, r in data["rules"].items()}
    return MappingProxyType({"rules": MappingProxyType(rules),
                             "thresholds": MappingProxyType({k: float(v["value"])
                                                             for k, v in data["thresholds"].items()}),
                             "log_device_names": tuple(data["log_device_names"]),
                             "no_p2p_gpu_names": tuple(data["no_p2p_gpu_names"])})


#: every rule id, in the order the checks run (doctor_rules.yaml must define exactly these)
RULE_IDS = ("net-socket-multinode", "net-socket-nodes-unknown", "p2p-not-supported", "geforce-no-p2p",
            "p2p-disabled-by-env", "topo-no-p2p", "topo-gpu-nic-cross-socket", "topo-gpu-nic-no-gdr",
            "rccl-iommu-pt-missing", "acs-enabled", "pcie-width-downgraded",
            "pcie-gen-below-max-busy", "pcie-speed-downgraded-check-load", "captured-idle", "hw-slowdown",
            "sw-thermal-slowdown", "sw-power-cap-busy", "power-limit-lowered", "remapped-rows-pending",
            "remapping-failed", "ecc-uncorrectable", "mig-enabled", "nccl-maxsharedmem", "test-failed",
            "log-check-failed", "one-rank",
            "nvls-above-line-rate", "two-node-tree", "below-model", "rate-above-peak", "fp32-used-tf32",
            "matmul-below-expected", "memory-bw-below-expected", "no-compute-bound-shape")


def rule(rule_id: str) -> Rule:
    return load_rules()["rules"][rule_id]


def threshold(name: str) -> float:
    return load_rules()["thresholds"][name]


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EVIDENCE_CHARS else text[:EVIDENCE_CHARS] + f"… ({len(text)} characters)"


class _Lines:
    """The lines of one input, for evidence: ``ev(n)`` is the Evidence of line n (1-based)."""

    def __init__(self, name: str, text: str):
        self.name = name
        self.lines = text.splitlines()

    def ev(self, lineno: int) -> Evidence:
        return Evidence(self.name, lineno, _clip(self.lines[lineno - 1]))

    def find(self, *needles: str) -> list[int]:
        """Line numbers (1-based) of the lines containing any of ``needles`` (plain substrings: linear)."""
        return [i for i, ln in enumerate(self.lines, 1) if any(n in ln for n in needles)]


def _finding(rule_id: str, file: str, evidence, detail: str = "", measured: Quantity | None = None,
             expected: Quantity | None = None) -> Finding:
    ev = tuple(evidence)[:EVIDENCE_LINES]
    return Finding(rule(rule_id), file, ev, detail, measured, expected)


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

    For a catalog device that the achievable-rate model covers (``x4lib.matmul``: roofline of the shape, tile and
    wave quantisation over the device's SMs or cores, sourced clocks, a fixed cost per call, η calibrated per
    family on others' published rates), the model's rate for this shape [FLOP/s]. Otherwise, and with
    ``achievable=False``, the roofline of the shape, min(P, I·W), with I = 2mnk / ((mk + kn + mn)·b) [FLOP/B]
    (``x4lib.kernels``), P the catalog's **dense** peak for ``dtype`` and W its memory bandwidth; for a device
    without a catalog entry (a CPU) the caller gives P and W (``peak_flop_per_s``: cores × FLOP/cycle × clock;
    ``memory_bw_Bps``: a measured triad). Sources: williams-2009 (roofline), the catalog value's own key, and the
    model's data file (x4lib/data/matmul.yaml) for the achievable rate.
    """
    from x4lib import kernels, matmul, specs
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
    from x4lib import device as dev
    table = dev._load("cpu_uarch.json")["microarchitectures"]
    return next((a for a in table if a["id"] == stored.get("id")), stored)


# --------------------------------------------------------------------------------------------------- reading

def read_text(path: str | Path) -> tuple[str, list[str]]:
    """(text, reader warnings) of an input file, with nccl_log's rules (regular file, at most 64 MiB, UTF-8 or
    UTF-16/32, binary refused). Raises :class:`DoctorError` (exit 2) naming the file."""
    from x4lib import nccl_log
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


def detect_kind(text: str) -> str:
    """The input's kind, told by its content (the first match, in the order of the module docstring)."""
    from x4lib import nccl_rows
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return "json"
    lines = text.splitlines()
    if any(nccl_rows.parse_header(ln.strip(), i) for i, ln in enumerate(lines, 1) if "busbw" in ln):
        return "nccl-tests-log"
    if any(" NCCL INFO " in ln or " NCCL WARN " in ln or nccl_rows.parse_rank(ln.strip(), i)
           for i, ln in enumerate(lines, 1)):
        return "nccl-debug"
    if "NVSMI LOG" in text or (any(ln.strip() in _NVSMI_SECTIONS for ln in lines)
                               and sum(bool(_KV_RE.match(ln.strip())) for ln in lines) >= 2):
        return "nvidia-smi-q"
    if any(_TOPO_HEADER_RE.search(ln) and ("Affinity" in ln or "GPU1" in ln) for ln in lines) or \
            "Connection traversing a bonded set" in text:
        return "nvidia-smi-topo"
    if any(_LSPCI_RE.search(ln) for ln in lines):
        return "lspci"
    return "unrecognised"


KIND_NAMES = {"nccl-tests-log": "nccl-tests / rccl-tests log", "nccl-debug": "NCCL_DEBUG output",
              "nvidia-smi-q": "nvidia-smi -q", "nvidia-smi-topo": "nvidia-smi topo -m", "lspci": "lspci -vv excerpt",
              "lab00-results": "Lab 00 results.json", "lab01-results": "Lab 01 results.json",
              "here-cpu": "this CPU, measured now", "here-gpu": "this GPU, measured now"}
RECOGNISED = ("an nccl-tests/rccl-tests log (with or without NCCL_DEBUG=INFO lines), NCCL_DEBUG output, "
              "nvidia-smi -q, nvidia-smi topo -m, an lspci -vv excerpt, or a Lab 00/Lab 01 results.json")


def diagnose_text(text: str, name: str = "<text>", reader_notes=()) -> tuple[InputReport, list[Finding]]:
    """Recognise one input by its content and apply the rules of its kind. Raises :class:`DoctorError` (exit 2)
    for text the doctor does not recognise."""
    kind = detect_kind(text)
    if kind == "json":
        return _diagnose_json(text, name, reader_notes)
    if kind == "unrecognised":
        what = "an empty file" if not text.strip() else "not a file the doctor recognises"
        raise DoctorError(f"{name}: {what}; it reads {RECOGNISED}")
    handler = {"nccl-tests-log": _diagnose_nccl, "nccl-debug": _diagnose_nccl, "nvidia-smi-q": _diagnose_smi,
               "nvidia-smi-topo": topology_findings, "lspci": _diagnose_lspci}[kind]
    report, findings = handler(text, name)
    if reader_notes:
        report = dataclasses.replace(report, warnings=tuple(reader_notes) + report.warnings)
    return report, findings


def diagnose_files(paths) -> Report:
    """Read every file (all of them first: one bad file is one error, exit 2, before anything is diagnosed),
    then diagnose each by its kind."""
    paths = list(paths)
    if not paths:
        raise DoctorError("no input file given")
    texts = [(os.fspath(p), *read_text(p)) for p in paths]
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
_P2P_RE = re.compile(r"NCCL INFO Channel [0-9]{1,3}(/[0-9]{1,3})? : .{0,80} via P2P/")


def _log_catalog_id(names) -> str | None:
    """The catalog id of the GPU named in the rank lines (all the same), or None."""
    from x4lib import device
    names = {n for n in names if n}
    if len(names) != 1:
        return None
    name = next(iter(names))
    cat = device.match_gpu(name)
    if cat:
        return cat
    return next((e["catalog_id"] for e in load_rules()["log_device_names"] if re.search(e["regex"], name)), None)


def _nodes(log, ranks, lines: _Lines) -> tuple[int | None, list[int]]:
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


def _diagnose_nccl(text: str, name: str) -> tuple[InputReport, list[Finding]]:
    from x4lib import nccl_log, nccl_rows
    L = _Lines(name, text)
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
    if socket and nodes is not None and nodes > 1:
        host_ev = [L.ev(r.line) for r in ({r.host: r for r in reversed(ranks)}.values())][:2]
        found.append(_finding("net-socket-multinode", name, [L.ev(i) for i in socket[:2] + ibverbs[:1]] + host_ev +
                              [L.ev(i) for i in node_lines[:1]],
                              f"{nodes} nodes; NCCL's network transport is Socket"
                              + (" because libibverbs could not be loaded" if ibverbs else "")))
    elif socket and nodes is None:
        found.append(_finding("net-socket-nodes-unknown", name, [L.ev(i) for i in ibverbs[:1] + socket[:2]],
                              "libibverbs could not be loaded" if ibverbs else ""))
    p2p_type0 = L.find("intraNodeP2pSupport 0")
    shm = [i for i in L.find("via SHM/") if _SHM_RE.search(L.lines[i - 1])]
    p2p = [i for i in L.find("via P2P/") if _P2P_RE.search(L.lines[i - 1])]
    if p2p_type0 or (shm and not p2p):
        found.append(_finding("p2p-not-supported", name, [L.ev(i) for i in p2p_type0[:1] + shm[:2]],
                              "NCCL connected the GPUs of one node through host shared memory"))
    elif not (shm or p2p):
        hostcount = {}
        for r in ranks:
            hostcount[r.host] = hostcount.get(r.host, 0) + 1
        nop2p = [r for r in ranks if hostcount[r.host] > 1 and
                 any(re.search(e["regex"], r.name) for e in load_rules()["no_p2p_gpu_names"])]
        if nop2p:
            found.append(_finding("geforce-no-p2p", name, [L.ev(r.line) for r in nop2p[:2]],
                                  f"{len(nop2p)} ranks on {nop2p[0].name} share a host"))
    env = [i for i in L.find("NCCL_P2P_DISABLE") if _P2P_ENV_RE.search(L.lines[i - 1])]
    if env:
        found.append(_finding("p2p-disabled-by-env", name, [L.ev(i) for i in env[:2]]))
    iommu = L.find('Missing "iommu=pt"')
    if iommu:
        found.append(_finding("rccl-iommu-pt-missing", name, [L.ev(i) for i in iommu[:1]]))
    failed = L.find("Test NCCL failure", "Test failure", "NCCL WARN Cuda failure")
    maxshm = [i for i in L.find("ncclMaxSharedMem") if "exceeds" in L.lines[i - 1]]
    if failed and maxshm:
        found.append(_finding("nccl-maxsharedmem", name, [L.ev(i) for i in maxshm[:1] + failed[:1]]))
    if failed:
        found.append(_finding("test-failed", name, [L.ev(i) for i in failed[:2]],
                              "the log has no result row" if not (log and log.rows) else
                              "a test failure is reported after the results"))

    table = any(nccl_rows.parse_header(ln.strip(), i) for i, ln in enumerate(L.lines, 1) if "busbw" in ln)
    if table and not failed and (log is None or not log.checks_ok):
        named = [int(m.group(1)) for w in warnings if (m := re.search(r"(?:^|:)(?:line )?([0-9]{1,9})[:]? ", w))]
        named = [n for n in dict.fromkeys(named) if 1 <= n <= len(L.lines)]
        found.append(_finding("log-check-failed", name, [L.ev(n) for n in named[:3]],
                              "; ".join(w for w in warnings if not w.startswith("the rank list"))[:400]))

    # -- numbers (a results table)
    n_ranks = log.n_ranks if log else None
    if n_ranks == 1 or (log is None and len(ranks) == 1 and nodes == 1):
        row = log.rows[-1] if log and log.rows else None
        found.append(_finding("one-rank", name, [L.ev(r.line) for r in ranks[:1]] + ([L.ev(row.line)] if row else []),
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


def _log_numbers(log, L: _Lines, nodes, ranks, earlier) -> list[Finding]:
    """Rules on a log's numbers: busbw beside the per-direction bottleneck (one node) or the two-node caveat."""
    from x4lib import clusters, collectives, specs
    out = []
    row, where, p = _peak_row(log)
    busbw = Quantity(p.busbw_gb_s, "GB/s", f"largest busbw: {where.replace('_', '-')} at {row.size_B} B "
                                            f"(line {row.line})")
    coll = log.collective
    if nodes == 2 and coll == "all_reduce" and not any(_ALGO_RING_RE.search(ln) for ln in L.lines):
        second = next((r for r in ranks if r.host != ranks[0].host), None)
        out.append(_finding("two-node-tree", L.name, ([L.ev(ranks[0].line), L.ev(second.line)] if second else [])
                            + [L.ev(row.line)], "2 nodes, AllReduce, NCCL_ALGO=Ring not seen in the log; the "
                            "network bottleneck (NICs per node × line rate per direction) is not printed in it",
                            busbw, None))
    cat = _log_catalog_id(r.name for r in ranks)
    if nodes != 1 or cat is None or coll not in collectives.COLLECTIVES:
        return out
    dev = specs.get(cat)
    link = dev.get("scaleup_bw_gb_s_per_direction")
    if link is None:
        return out
    line_rate = Quantity(link.value, "GB/s", f"scale-up line rate per direction, catalog {cat} ({link.source})")
    if p.busbw_gb_s > link.value:
        out.append(_finding("nvls-above-line-rate", L.name, [L.ev(row.line)],
                            f"busbw {p.busbw_gb_s:g} GB/s > {link.value:g} GB/s per direction", busbw, line_rate))
        return out
    cluster = clusters.custom_cluster(1, log.n_ranks, link.si, intra_kind="nvlink",
                                      cluster_id=f"1x{log.n_ranks}-{cat}")
    model = collectives.predict(coll, row.size_B, cluster).busbw_Bps / 1e9
    explained = any(f.severity in ("problem", "warning") for f in earlier)
    if p.busbw_gb_s < threshold("below_model_fraction") * model and not explained:
        out.append(_finding("below-model", L.name, [L.ev(row.line)],
                            f"{p.busbw_gb_s:g} GB/s is {100 * p.busbw_gb_s / model:.0f} % of the model",
                            busbw, Quantity(round(model, 3), "GB/s",
                                            f"model busbw (x4lib.collectives, {coll}, 1 node × {log.n_ranks} "
                                            f"{cat}, per-direction link {link.value:g} GB/s) at {row.size_B} B")))
    return out


# -------------------------------------------------------------------------------------------------- nvidia-smi -q

_GPU_HEADER_RE = re.compile(r"GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
_REASON_SECTIONS = ("Clocks Throttle Reasons", "Clocks Event Reasons")
_WATTS_RE = re.compile(r"([0-9]{1,6}(\.[0-9]{1,3})?) ?W$")


@dataclasses.dataclass(frozen=True)
class SmiEntry:
    path: tuple[str, ...]  # section names, then the key
    value: str
    line: int


def parse_smi(text: str) -> list[list[SmiEntry]]:
    """``nvidia-smi -q`` as key/value entries per GPU (the path of section names by indentation). Lines before
    the first ``GPU xxxx:xx:xx.x`` header (or all of an excerpt without one) form one GPU."""
    gpus: list[list[SmiEntry]] = [[]]
    stack: list[tuple[int, str]] = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.expandtabs(4)
        body = line.strip()
        if not body or body.startswith("="):
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0 and _GPU_HEADER_RE.match(body):
            if gpus[-1]:
                gpus.append([])
            stack = []
            continue
        key, sep, value = body.partition(" :") if " :" in body else body.partition(":")
        key = key.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if sep and key:
            gpus[-1].append(SmiEntry(tuple(s for _, s in stack) + (key,), value.strip(), i))
        stack.append((indent, key or body))
    if len(gpus) > 1 and not any(_GPU_HEADER_RE.match(ln.strip()) for ln in text.splitlines()[:1]):
        gpus = gpus[1:]  # the lines before the first GPU header (timestamp, driver) describe no GPU
    return [g for g in gpus if g]


def _smi_get(gpu: list[SmiEntry], key: str, *within: str) -> SmiEntry | None:
    """The first entry named ``key`` whose path contains every section in ``within`` (any of the names given as
    a tuple element)."""
    for e in gpu:
        if e.path[-1] == key and all(any(s in e.path[:-1] for s in (w if isinstance(w, tuple) else (w,)))
                                     for w in within):
            return e
    return None


def _watts(entry: SmiEntry | None) -> float | None:
    m = _WATTS_RE.search(entry.value) if entry else None
    return float(m.group(1)) if m else None


def _int_value(text: str) -> int | None:
    t = text.strip().rstrip("x").strip()
    return int(t) if t.isdigit() and len(t) < 10 else None


def _diagnose_smi(text: str, name: str) -> tuple[InputReport, list[Finding]]:
    L = _Lines(name, text)
    gpus = parse_smi(text)
    per_rule: dict[str, list] = {}

    def add(rule_id, entries, detail=""):
        per_rule.setdefault(rule_id, []).append(([L.ev(e.line) for e in entries if e], detail))

    products = []
    for g in gpus:
        product = _smi_get(g, "Product Name")
        products.append(product.value if product else "GPU")
        pstate = _smi_get(g, "Performance State")
        idle_reason = _smi_get(g, "Idle", _REASON_SECTIONS)
        pnum = _int_value(pstate.value.lstrip("P")) if pstate and pstate.value.startswith("P") else None
        idle = (pnum is not None and pnum >= 8) or (idle_reason is not None and idle_reason.value == "Active")
        if idle:
            add("captured-idle", [pstate, idle_reason if idle_reason and idle_reason.value == "Active" else None],
                f"performance state {pstate.value if pstate else '?'}"
                + (", clock-event reason Idle active" if idle_reason and idle_reason.value == "Active" else ""))
        for key in ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown"):
            e = _smi_get(g, key, _REASON_SECTIONS)
            if e and e.value == "Active":
                add("hw-slowdown", [e], key)
        e = _smi_get(g, "SW Thermal Slowdown", _REASON_SECTIONS)
        if e and e.value == "Active":
            add("sw-thermal-slowdown", [e])
        e = _smi_get(g, "SW Power Cap", _REASON_SECTIONS)
        if e and e.value == "Active" and not idle and pstate is not None:
            add("sw-power-cap-busy", [e, pstate])
        limit = next((x for k in ("Current Power Limit", "Enforced Power Limit", "Power Limit")
                      if (x := _smi_get(g, k)) and _watts(x)), None)
        default = _smi_get(g, "Default Power Limit")
        if _watts(limit) and _watts(default) and \
                _watts(limit) < (1 - threshold("power_limit_tolerance")) * _watts(default):
            add("power-limit-lowered", [limit, default], f"{_watts(limit):g} W of a default {_watts(default):g} W")
        gen_max, gen_cur = (_smi_get(g, k, "GPU Link Info", "PCIe Generation") for k in ("Max", "Current"))
        w_max, w_cur = (_smi_get(g, k, "GPU Link Info", "Link Width") for k in ("Max", "Current"))
        gm, gc = (_int_value(e.value) if e else None for e in (gen_max, gen_cur))
        wm, wc = (_int_value(e.value) if e else None for e in (w_max, w_cur))
        slow = gm is not None and gc is not None and gc < gm
        narrow = wm is not None and wc is not None and wc < wm
        if idle and (slow or narrow):
            add("pcie-speed-downgraded-check-load", [gen_cur if slow else None, gen_max if slow else None,
                                                     w_cur if narrow else None, w_max if narrow else None],
                "captured at idle")
        else:
            if slow:
                add("pcie-gen-below-max-busy", [gen_cur, gen_max], f"Gen {gc} of a possible Gen {gm}")
            if narrow:
                add("pcie-width-downgraded", [w_cur, w_max], f"x{wc} of a possible x{wm}")
        pending = _smi_get(g, "Pending", "Remapped Rows")
        if pending and pending.value == "Yes":
            add("remapped-rows-pending", [pending] + [_smi_get(g, k, "Remapped Rows") for k in
                                                      ("Correctable Error", "Uncorrectable Error")])
        failure = _smi_get(g, "Remapping Failure Occurred", "Remapped Rows")
        if failure and failure.value == "Yes":
            add("remapping-failed", [failure])
        ecc = [e for e in g if "ECC Errors" in e.path and "Volatile" in e.path and
               ("Uncorrectable" in e.path[-1] or ("Double Bit" in e.path and e.path[-1] == "Total")) and
               (_int_value(e.value) or 0) > 0]
        if ecc:
            add("ecc-uncorrectable", ecc[:2])
        mig = _smi_get(g, "Current", "MIG Mode")
        if mig and mig.value == "Enabled":
            add("mig-enabled", [mig])
    found = []
    for rule_id in RULE_IDS:
        if rule_id in per_rule:
            hits = per_rule[rule_id]
            ev = [e for evs, _ in hits for e in evs]
            details = sorted({d for _, d in hits if d})
            count = f"{len(hits)} of {len(gpus)} GPUs" if len(gpus) > 1 else ""
            found.append(_finding(rule_id, name, ev, "; ".join(x for x in [count] + details if x)))
    names = sorted(set(products))
    summary = f"{KIND_NAMES['nvidia-smi-q']}: {len(gpus)} GPU block(s)" + (f", {', '.join(names)}" if names else "")
    return InputReport(name, "nvidia-smi-q", summary), found


# --------------------------------------------------------------------------------------------------------- lspci

_LSPCI_DEV_RE = re.compile(r"([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] ")
_LNKCAP_RE = re.compile(r"LnkCap:\s*(Port #[0-9]{1,4}, )?Speed ([0-9]{1,3}(\.[0-9]{1,2})?)GT/s[^,]{0,20}, "
                        r"Width x([0-9]{1,2})")
_LNKSTA_RE = re.compile(r"LnkSta:\s*Speed ([0-9]{1,3}(\.[0-9]{1,2})?)GT/s( \((ok|downgraded)\))?, "
                        r"Width x([0-9]{1,2})( \((ok|downgraded)\))?")
_ACSCTL_RE = re.compile(r"ACSCtl:\s*SrcValid([+-])")


def _diagnose_lspci(text: str, name: str) -> tuple[InputReport, list[Finding]]:
    """LnkSta against LnkCap (and lspci's own "(downgraded)" marks), and ACSCtl, device by device."""
    L = _Lines(name, text)
    cap = None
    width, speed, acs, links = [], [], [], 0
    for i, raw in enumerate(L.lines, 1):
        line = raw.strip().lstrip("> ").strip()
        if _LSPCI_DEV_RE.match(line):
            cap = None
            continue
        if m := _LNKCAP_RE.search(line):
            cap = (float(m.group(2)), int(m.group(4)), i)
            continue
        if m := _ACSCTL_RE.search(line):
            if m.group(1) == "+":
                acs.append(i)
            continue
        m = _LNKSTA_RE.search(line)
        if not m:
            continue
        sta_speed, sta_width = float(m.group(1)), int(m.group(5))
        if sta_width == 0:  # no link (an empty slot's port)
            continue
        links += 1
        ev = [i] + ([cap[2]] if cap else [])
        if m.group(7) == "downgraded" or (cap and sta_width < cap[1]):
            width.append((ev, f"x{sta_width}" + (f" of x{cap[1]}" if cap else " (downgraded)")))
        elif m.group(4) == "downgraded" or (cap and sta_speed < cap[0]):
            speed.append((ev, f"{sta_speed:g} GT/s" + (f" of {cap[0]:g} GT/s" if cap else " (downgraded)")))
    found = []
    for rule_id, hits in (("acs-enabled", [([i], "") for i in acs]), ("pcie-width-downgraded", width),
                          ("pcie-speed-downgraded-check-load", speed)):
        if hits:
            found.append(_finding(rule_id, name, [L.ev(i) for ev, _ in hits for i in ev],
                                  "; ".join(d for _, d in hits if d)))
    summary = f"{KIND_NAMES['lspci']}: {links} link status line(s), {len(acs)} bridge(s) with ACS source validation on"
    return InputReport(name, "lspci", summary), found


# ------------------------------------------------------------------------------------------ nvidia-smi topo -m

def topology_findings(text: str, name: str) -> tuple[InputReport, list[Finding]]:
    """THE ONE PLACE ``nvidia-smi topo -m`` is read: parsed by ``x4lib.topo`` (chapter 03's reader), whose
    findings become the doctor's where they lower a number — GPU pairs that NCCL will not connect peer-to-peer
    (beyond PXB without NVLink), and GPUs whose nearest NIC is beyond PXB (no GPUDirect RDMA by default) or across
    the CPU socket (SYS). The evidence is the GPU's row of the matrix."""
    from x4lib import topo
    try:
        t = topo.parse_topo(text, name)
    except topo.TopoError as exc:
        return InputReport(name, "nvidia-smi-topo", f"{KIND_NAMES['nvidia-smi-topo']}: not readable ({exc})",
                           diagnosed=False), []
    lines = _Lines(name, text)

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
    findings = [_finding(rule_id, name, ev, detail="; ".join(msgs)) for rule_id, (ev, msgs) in found.items()]
    summary = (f"{KIND_NAMES['nvidia-smi-topo']}: {len(t.gpus)} GPUs, {len(t.nics)} NICs "
               f"(read with x4lib.topo {topo.METHOD_VERSION})")
    return InputReport(name, "nvidia-smi-topo", summary, diagnosed=True), findings


# ------------------------------------------------------------------------------------------- results.json

def _json_line(text: str, needle: str) -> int | None:
    return next((i for i, ln in enumerate(text.splitlines(), 1) if needle in ln), None)


def _diagnose_json(text: str, name: str, reader_notes=()) -> tuple[InputReport, list[Finding]]:
    from x4lib import runs

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    try:
        data = json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError) as exc:
        raise DoctorError(f"{name}: starts like JSON but is not valid JSON "
                          f"({str(exc).splitlines()[0][:160]})") from None
    lab = data.get("lab") if isinstance(data, dict) else None
    if lab not in ("lab00", "lab01"):
        raise DoctorError(f"{name}: JSON, but not a Lab 00/Lab 01 results.json (no \"lab\": \"lab00\" or "
                          f"\"lab01\"); it reads {RECOGNISED}")
    try:
        runs.validate(data, lab, name)
    except runs.RunError as exc:
        raise DoctorError(str(exc)) from None
    report, found = (diagnose_lab00(data, name, text) if lab == "lab00" else diagnose_lab01(data, name, text))
    return dataclasses.replace(report, warnings=tuple(reader_notes) + report.warnings), found


def _rate_rows(results: Mapping) -> list[dict]:
    """Successful matmul rows with their best rate [FLOP/s] (derived from the raw times, as the lab page does)."""
    from x4lib import kernels
    return [{**r, "flop_per_s": kernels.matmul_flop(r["m"], r["n"], r["k"]) / r["best_s"]}
            for r in results.get("matmul", ()) if r.get("status") == "ok" and r.get("best_s", 0) > 0]


def _mem_rows(results: Mapping) -> list[dict]:
    from x4lib import kernels
    return [{**m, "Bps": kernels.vector_bytes(m["kernel"], m["elements"], m.get("element_bytes", 4)) / m["best_s"]}
            for m in results.get("memory_bw", ()) if m.get("status") == "ok" and m.get("best_s", 0) > 0]


def matmul_checks(device: Mapping, results: Mapping, file: str, peak_evidence=(),
                  row_evidence=None) -> list[Finding]:
    """The matmul and memory rules on one set of measurements (a Lab 00 results.json, or ``here``'s):
    rate-above-peak / fp32-used-tf32, matmul-below-expected, memory-bw-below-expected, no-compute-bound-shape.
    ``peak_evidence``: Evidence of the numbers behind a CPU peak; ``row_evidence(row)``: Evidence of a row."""
    from x4lib import kernels, specs
    rows, mems = _rate_rows(results), _mem_rows(results)
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
                out.append(_finding("fp32-used-tf32", file, [row_ev(best)],
                                    f"{measured.value:.4g} TFLOP/s between the FP32 peak {peak / 1e12:.4g} and the "
                                    f"TF32 peak {tf32 / 1e12:.4g} TFLOP/s", measured, peak_q))
            else:
                extra = ""
                if cpu:
                    per = device["cpu"]["physical_cores"] * _uarch(device)["flop_per_cycle_per_core"][dtype]
                    extra = (f"; at the FLOP per cycle assumed it needs a sustained clock of at least "
                             f"{best['flop_per_s'] / per / 1e9:.2f} GHz, not the "
                             f"{device['cpu']['mhz_reported']:.0f} MHz reported")
                out.append(_finding("rate-above-peak", file, [row_ev(best)] + list(peak_evidence),
                                    f"{measured.value:.4g} > {peak / 1e12:.4g} TFLOP/s{extra}", measured, peak_q))
            continue
        if not cpu and cat:
            e = expected_matmul(cat, dtype, best["m"], best["n"], best["k"])
            if best["flop_per_s"] < threshold("matmul_below_fraction") * e.flop_per_s:
                out.append(_finding("matmul-below-expected", file, [row_ev(best)],
                                    f"{100 * best['flop_per_s'] / e.flop_per_s:.0f} % of the expected rate",
                                    measured, Quantity(e.flop_per_s / 1e12, "TFLOP/s", f"{e.basis} ({e.source})")))
        has_bw = bool(cat) and not cpu and "memory_bw_gb_s" in specs.get(cat).values
        bw = specs.get(cat).memory_bw_Bps if has_bw else best_bw
        if bw:
            ridge = peak / bw
            squares = [r for r in drows if r["m"] == r["n"] == r["k"]]
            biggest = max(squares or drows, key=lambda r: kernels.matmul_flop(r["m"], r["n"], r["k"]))
            if kernels.matmul_intensity(biggest["m"], biggest["n"], biggest["k"], kernels.DTYPE_BYTES[dtype]) < ridge:
                out.append(_finding("no-compute-bound-shape", file, [row_ev(biggest)],
                                    f"{dtype}: ridge point {ridge:.3g} FLOP/B", measured, peak_q))
    if not cpu and cat and best_bw and "memory_bw_gb_s" in specs.get(cat).values:
        cat_bw = specs.get(cat).memory_bw_Bps
        if best_bw < threshold("memory_below_fraction") * cat_bw:
            m = max(mems, key=lambda x: x["Bps"])
            out.append(_finding("memory-bw-below-expected", file,
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
    found = matmul_checks(d, results, name, ev)
    label = d.get("detected_name", "?") + (f" ({d['catalog_id']})" if d.get("catalog_id") else "")
    summary = (f"{KIND_NAMES['lab00-results']}: {label}, {len(_rate_rows(results))} matmul rows, "
               f"{len(_mem_rows(results))} memory rows, started {results.get('started_utc', '?')}")
    return InputReport(name, "lab00-results", summary), found


def diagnose_lab01(results: Mapping, name: str = "results.json",
                   text: str | None = None) -> tuple[InputReport, list[Finding]]:
    """A Lab 01 results.json (validated): what the doctor can say without a link model of the machine."""
    found = []
    if results.get("nranks") == 1:
        found.append(_finding("one-rank", name, [Evidence(name, _json_line(text or "", '"nranks"'), "nranks = 1")],
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


# ------------------------------------------------------------------------------------------------------- here

def _cpuinfo_evidence(text: str, name: str = "/proc/cpuinfo") -> list[Evidence]:
    """The first 'model name', 'cpu MHz' and 'model' lines of /proc/cpuinfo, with their line numbers."""
    L, out = _Lines(name, text), []
    for key in ("model name", "model", "cpu MHz"):
        line = next((i for i, ln in enumerate(L.lines, 1) if ln.split(":")[0].strip() == key), None)
        if line:
            out.append(L.ev(line))
    return out


def measure_here(torch, det: Mapping, quick: bool = False) -> dict:
    """Short measurements with the book's harness: matmuls (CPU FP32; GPU BF16 and FP32) and a triad.
    Returns {"matmul": rows, "memory_bw": rows} as Lab 00 stores them (raw times; rates derived later)."""
    from x4lib import bench
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
    from x4lib import device
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
    n_ok = len(_rate_rows(data))
    label = det.get("detected_name", "?") + (f" ({det['catalog_id']})" if det.get("catalog_id") else "")
    inputs = [InputReport(name, kind, f"{KIND_NAMES[kind]}: {label}, {n_ok} matmul shapes and "
                                      f"{len(_mem_rows(data))} memory kernel(s) timed "
                                      f"({'quick' if quick else 'full'}); harness x4lib.bench")]
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
                   help="files to diagnose (read as untrusted text, recognised by content)")
    p.add_argument("--quick", action="store_true", help="here: a few seconds of measurement")
    p.add_argument("--json", action="store_true", help="machine-readable output "
                                                       "(schema: x4lib/schemas/doctor_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    load_rules()
    report = diagnose_files(args.files) if args.files else here(quick=args.quick)
    cli.emit(report.to_json(), to_text(report), as_json=args.json)
    return report.exit_code
