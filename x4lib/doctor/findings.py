"""The doctor's rule book and what it says: each :class:`Finding` comes from one rule of x4lib/data/doctor_rules.yaml
(category, severity, the cause in one sentence, the advice, and the document or public thread that established
the cause), with the evidence that proves it (file, line, text) and the measured figure beside the expected one.
:class:`Report` gathers the findings of every input and maps them to an exit code.

Used by :mod:`x4lib.doctor.diagnose` and its readers (:mod:`x4lib.doctor.gpu_state`, :mod:`x4lib.doctor.rate_check`).
"""
from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from types import MappingProxyType
from typing import Mapping
from x4lib import paths

#: version of the doctor's method (readers and rules); bump when what it reads or says changes
DOCTOR_VERSION = "doctor/2"
RULES_PATH = paths.DATA_DIR / "doctor_rules.yaml"
RULES_SCHEMA_PATH = paths.SCHEMA_DIR / "doctor_rules.schema.json"
CATEGORIES = ("tcp-fallback", "p2p-disabled", "pcie-downtrained", "power-or-thermal-throttle",
              "virtualization-acs-iommu", "affinity-numa", "algorithm-or-expectation", "dtype-or-shape", "other")
SEVERITIES = ("problem", "warning", "note")
#: input kinds the doctor recognises (besides "unrecognised")
KINDS = ("nccl-tests-log", "nccl-debug", "nvidia-smi-q", "nvidia-smi-topo", "lspci", "lab00-results",
         "lab01-results", "here-cpu", "here-gpu", "pasted-text")
#: how each kind is named in a summary line
KIND_NAMES = {"nccl-tests-log": "nccl-tests / rccl-tests log", "nccl-debug": "NCCL_DEBUG output",
              "nvidia-smi-q": "nvidia-smi -q", "nvidia-smi-topo": "nvidia-smi topo -m", "lspci": "lspci -vv excerpt",
              "lab00-results": "Lab 00 results.json", "lab01-results": "Lab 01 results.json",
              "lab02-results": "Lab 02 results.json",
              "here-cpu": "this CPU, measured now", "here-gpu": "this GPU, measured now",
              "pasted-text": "pasted text"}
RECOGNISED = ("an nccl-tests/rccl-tests log (with or without NCCL_DEBUG=INFO lines), NCCL_DEBUG output, "
              "nvidia-smi -q, nvidia-smi topo -m, an lspci -vv excerpt, a Lab 00/01/02 results.json, or any text "
              "(a bug report) holding fragments of these or of dmesg, numactl, PyTorch messages")
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
    named_cause: Mapping | None = None  # {"category", "rule", "line"} of the input's leading finding (named_cause())
    next_command: str | None = None  # the one command that would decide, when no cause was found

    def to_json(self) -> dict:
        out = {"file": self.file, "kind": self.kind, "recognised": self.kind != "unrecognised",
               "diagnosed": self.diagnosed, "summary": self.summary, "warnings": list(self.warnings)}
        if self.named_cause is not None:
            out["named_cause"] = dict(self.named_cause)
        if self.next_command is not None:
            out["next_command"] = self.next_command
        return out


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
    {"rules": id -> :class:`Rule`, "thresholds": name -> float, "log_device_names": [...], "no_p2p_gpu_names": [...],
    "compute_capability_names": [...], "native_dtype_min_cc": dtype -> {cc, source}}.
    Raises :class:`RulesError` (exit 1) naming the file and the field."""
    from x4lib.catalog import specs
    name = Path(path).name
    data = specs.read_yaml(path, RulesError)
    try:
        specs.validate_schema(data, RULES_SCHEMA_PATH)
    except specs.SchemaViolation as exc:
        raise RulesError(f"{name}: {exc.where}: {exc.message[:300]}") from None
    missing = sorted(set(RULE_IDS) - set(data["rules"]))
    unknown = sorted(set(data["rules"]) - set(RULE_IDS))
    if missing or unknown:
        raise RulesError(f"{name}: rules without a check in the doctor's readers: {', '.join(unknown) or 'none'}; "
                         f"checks without a rule: {', '.join(missing) or 'none'}")
    for entry in data["log_device_names"] + data["no_p2p_gpu_names"] + data["compute_capability_names"]:
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
                             "no_p2p_gpu_names": tuple(data["no_p2p_gpu_names"]),
                             "compute_capability_names": tuple(data["compute_capability_names"]),
                             "native_dtype_min_cc": MappingProxyType(dict(data["native_dtype_min_cc"]))})


#: every rule id, in the order the checks run (doctor_rules.yaml must define exactly these)
RULE_IDS = ("net-socket-multinode", "net-socket-nodes-unknown", "p2p-not-supported", "geforce-no-p2p",
            "p2p-disabled-by-env", "topo-no-p2p", "topo-gpu-nic-cross-socket", "topo-gpu-nic-no-gdr",
            "rccl-iommu-pt-missing", "acs-enabled", "pcie-width-downgraded",
            "pcie-gen-below-max-busy", "pcie-speed-downgraded-check-load", "pcie-idle-link-speed", "captured-idle", "hw-slowdown",
            "sw-thermal-slowdown", "sw-power-cap-busy", "clock-low-cause-unrecorded", "power-limit-lowered",
            "clocks-locked", "remapped-rows-pending",
            "remapping-failed", "ecc-uncorrectable", "mig-enabled", "nccl-maxsharedmem", "test-failed",
            "log-check-failed", "one-rank",
            "nvls-above-line-rate", "two-node-tree", "one-thread-many-gpus", "rows-not-steady", "below-model",
            "rate-above-peak",
            "fp32-used-tf32",
            "matmul-below-expected", "memory-bw-below-expected", "no-compute-bound-shape",
            # pasted text (x4lib.doctor.paste, issue 31)
            "ib-disabled-by-env", "cumem-disabled-no-mnnvl", "report-says-socket", "p2p-through-cpu", "amd-no-peers",
            "p2p-level-loc", "report-says-p2p-off", "topo-flat-virtual", "vm-topology", "iommu-in-paste",
            "gdr-level-forced", "net-plugin-missing", "gdr-not-enabled", "gdr-disabled-by-version", "ib-port-rate-below-stated",
            "ib-width-not-adapters", "report-says-cross-socket", "report-says-bond-single-qp", "report-says-nic-pairing", "cpu-binding",
            "pcie-link-below-another",
            "report-says-pcie-slot", "pcie-aer-errors", "clock-reason-in-paste", "report-says-thermal", "gpu-xid",
            "tf32-not-enabled", "dtype-not-native", "dtype-kernels-missing", "fp16-accumulate-gemm", "cache-flattered", "shape-kernel-choice",
            "line-rate-expected", "sparse-peak-expected", "package-peak-per-device",
            "avg-busbw-not-peak", "report-says-software-version", "report-says-fabric",
            # a Lab 02 training step (x4lib.doctor.step_check)
            "lab02-term-off", "lab02-terms-agree")

#: which finding of an input names its cause: the most severe, and among equals the first in this order (specific
#: evidence before general: a tool's line before the reporter's sentence, a cause before its symptom). Every rule id.
CAUSE_ORDER = (
    "net-socket-multinode", "ib-disabled-by-env", "net-socket-nodes-unknown", "cumem-disabled-no-mnnvl",
    "net-plugin-missing", "report-says-socket", "rccl-iommu-pt-missing", "acs-enabled", "topo-flat-virtual",
    "iommu-in-paste", "p2p-through-cpu", "report-says-cross-socket", "p2p-not-supported", "amd-no-peers", "geforce-no-p2p", "p2p-level-loc",
    "report-says-p2p-off", "vm-topology", "p2p-disabled-by-env", "topo-no-p2p", "topo-gpu-nic-cross-socket",
    "topo-gpu-nic-no-gdr", "gdr-level-forced", "gdr-not-enabled", "gdr-disabled-by-version", "report-says-nic-pairing",
    "report-says-bond-single-qp", "cpu-binding", "pcie-width-downgraded",
    "pcie-link-below-another", "pcie-gen-below-max-busy", "pcie-aer-errors", "pcie-idle-link-speed",
    "report-says-pcie-slot",
    "pcie-speed-downgraded-check-load", "ib-port-rate-below-stated", "hw-slowdown", "sw-thermal-slowdown", "power-limit-lowered",
    "clocks-locked", "clock-reason-in-paste", "report-says-thermal", "sw-power-cap-busy", "clock-low-cause-unrecorded",
    "captured-idle", "remapping-failed", "ecc-uncorrectable", "remapped-rows-pending", "gpu-xid", "mig-enabled",
    "nccl-maxsharedmem", "test-failed", "log-check-failed", "one-rank", "fp32-used-tf32", "tf32-not-enabled",
    "dtype-not-native", "dtype-kernels-missing", "fp16-accumulate-gemm",
    "cache-flattered", "shape-kernel-choice", "rate-above-peak", "matmul-below-expected",
    "memory-bw-below-expected", "no-compute-bound-shape", "lab02-term-off", "rows-not-steady", "nvls-above-line-rate",
    "two-node-tree",
    "one-thread-many-gpus",
    "sparse-peak-expected", "package-peak-per-device", "ib-width-not-adapters", "line-rate-expected", "avg-busbw-not-peak", "below-model", "report-says-fabric",
    "report-says-software-version",
    "lab02-terms-agree")


def named_cause(found, fix_lines: frozenset = frozenset(), cause_lines: frozenset = frozenset()) -> Finding | None:
    """The finding that names an input's cause: among the findings that quote a line where the reporter says a
    change fixed or helped (``fix_lines``; the fix a thread confirms is its cause), else among those that quote a
    line where a reply names a cause (``cause_lines``: "that is likely the reason", "usually due to"), else among
    all, the most severe (problem, warning, note), and among equals the first in CAUSE_ORDER; None without
    findings."""
    found = list(found)
    if not found:
        return None
    fixed = [f for f in found if any(e.line in fix_lines for e in f.evidence)]
    named = [f for f in found if any(e.line in cause_lines for e in f.evidence)]
    return min(fixed or named or found, key=lambda f: (SEVERITIES.index(f.severity), CAUSE_ORDER.index(f.rule.id)))


def rule(rule_id: str) -> Rule:
    return load_rules()["rules"][rule_id]


def threshold(name: str) -> float:
    return load_rules()["thresholds"][name]


def clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EVIDENCE_CHARS else text[:EVIDENCE_CHARS] + f"… ({len(text)} characters)"


#: longest part of one line the patterns look at (characters); a line of a 64 MiB file is cut here
MAX_LINE = 4096


class Lines:
    """The lines of one input, for evidence: ``ev(n)`` is the Evidence of line n (1-based)."""

    def __init__(self, name: str, text: str):
        self.name = name
        self.lines = text.splitlines()

    def ev(self, lineno: int) -> Evidence:
        return Evidence(self.name, lineno, clip(self.lines[lineno - 1]))

    def find(self, *needles: str) -> list[int]:
        """Line numbers (1-based) of the lines containing any of ``needles`` (plain substrings: linear)."""
        return [i for i, ln in enumerate(self.lines, 1) if any(n in ln for n in needles)]


def new_finding(rule_id: str, file: str, evidence, detail: str = "", measured: Quantity | None = None,
             expected: Quantity | None = None) -> Finding:
    ev = tuple(evidence)[:EVIDENCE_LINES]
    return Finding(rule(rule_id), file, ev, detail, measured, expected)
