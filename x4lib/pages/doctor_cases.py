"""Page helpers for the labs' "Is my number right?" sections: what ``python -m x4lib doctor`` says about the page's
own run and about stored real cases (tests/data/doctor/, provenance in tests/data/README.md).

Each page cell is one line, e.g. in Lab 00::

    doctor_cases.run_markdown(this)          # the doctor on the run shown on the page
    doctor_cases.cases_table("lab00")        # the doctor on the stored real cases, beside what their sources say

The findings come from ``x4lib.doctor.diagnose`` (rules and sources in ``x4lib/data/doctor_rules.yaml``); nothing here adds
a rule. Used in: book/lab-00-roofline.md, book/lab-01-collectives.md.
"""
from __future__ import annotations

from pathlib import Path

from x4lib import paths
from x4lib.doctor import diagnose as doctor, rate_check
from x4lib.book.tables import md_code, md_text

ROOT = paths.REPO_ROOT
CASES_DIR = ROOT / "tests" / "data" / "doctor"
NCCL_DIR = ROOT / "tests" / "data" / "nccl"

#: the stored real cases each lab shows: file (under tests/data/), what its source established (short), bib key
CASES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "lab00": (
        ("runs/lab00-v1/results.json", "this book's own CPU run in a virtual machine", "intel-optimization-manual"),
        ("doctor/nvidia-smi-q_h800-idle_llm-action.txt", "healthy H800, captured idle",
         "liguodongiot-llm-action-nvidia-smi"),
        ("doctor/nvidia-smi-q_h100-sxm-idle_x4-lab00.txt", "our H100 SXM, captured idle before its run",
         "nvml-clocks-event-reasons"),
        ("doctor/nvidia-smi-q_h200-idle_x4-lab00.txt", "our H200, captured idle before its run",
         "nvml-clocks-event-reasons"),
        ("doctor/nvidia-smi-q_remapped-rows-pending_gpud80.txt", "rows pending remap: reset needed", "gpud-pr-80-2024"),
        ("doctor/lspci_quadro-rtx8000-x1-slot_geerlingguy480.txt", "GPU in an x1 slot",
         "geerlingguy-pcie-issue-480"),
        ("doctor/lspci_rtx4090-idle-downgraded_tinygrad-ogkm6.txt", "idle link at 2.5 GT/s: power saving",
         "tinygrad-ogkm-issue-6"),
    ),
    "lab01": (
        ("doctor/nccl-tests_rtx5090-x2_p2p-shm-fail_nccltests287.log", "GeForce: no P2P; NCCL bug fixed in 2.26.2",
         "nccltests-issue-287-2025"),
        ("doctor/nccl-tests_rtx5090-x1_one-rank_nccltests287.log", "one rank: busbw 0", "nccltests-issue-287-2025"),
        ("doctor/rccl-tests_mi100-x2_iommu-warn-hang_rccl1129.log", "hang fixed by iommu=pt", "rccl-issue-1129-2024"),
        ("doctor/rccl-tests_mi100-x2_p2p-disabled_rccl1129.log", "P2P disabled as a workaround",
         "rccl-issue-1129-2024"),
        ("doctor/rccl-tests_mi100-x2_after-iommu-pt_rccl1129.log", "healthy after iommu=pt", "rccl-issue-1129-2024"),
        ("doctor/nccl-tests_h100-x8_1node_nvls_nccltests290.log", "healthy: 476 GB/s is in range (NVLS)",
         "nccltests-issue-290-2025"),
        ("doctor/nccl-tests_h100-x16_2node_default_nccltests309.log", "two nodes: compare with NCCL_ALGO=Ring",
         "nccltests-issue-309-2025"),
        ("doctor/nccl-debug_hgx-a100_ibverbs-socket_nccltests100.txt", "libibverbs missing: sockets",
         "nccl-tests-issue-100"),
    ),
}


def case_path(relative: str) -> Path:
    return ROOT / "tests" / "data" / relative


def diagnose_case(relative: str) -> doctor.Report:
    """The doctor on one stored case (a path under tests/data/)."""
    return doctor.diagnose_files([case_path(relative)])


def _evidence_text(f: doctor.Finding) -> str:
    lines = [e.line for e in f.evidence if e.line]
    return (f"line {lines[0]}" if len(lines) == 1 else f"lines {', '.join(map(str, lines[:4]))}") if lines else \
        (f.evidence[0].text if f.evidence else "")


def _quantity(q: doctor.Quantity | None) -> str:
    from x4lib.book.tables import fmt_value
    return fmt_value(q.value, q.unit, fmt="{:,.4g}") if q else "—"


def report_rows(report: doctor.Report) -> list[dict]:
    """One row per finding: severity, category, the rule's title, evidence lines, measured, expected, source key."""
    return [{"severity": f.severity, "category": f.category, "finding": f.rule.title, "evidence": _evidence_text(f),
             "measured": _quantity(f.measured), "expected": _quantity(f.expected), "source": f.rule.source_key}
            for f in report.findings]


def report_table(report: doctor.Report):
    """The findings of one doctor run as a book table (units inside the measured and expected cells)."""
    from x4lib.book.tables import Col, table
    rows = report_rows(report)
    if not rows:
        rows = [{"severity": "—", "category": "—", "finding": "nothing wrong found", "evidence": "—",
                 "measured": "—", "expected": "—", "source": "—"}]
    return table(rows, {"severity": "severity", "category": "category", "finding": Col("finding", wrap=True),
                        "evidence": Col("evidence", wrap=True), "measured": "measured", "expected": "expected",
                        "source": "source"})


def report_markdown(report: doctor.Report) -> str:
    """The findings as Markdown bullets: severity, the cause, the evidence, measured vs expected, the advice."""
    if not report.findings:
        names = ", ".join(md_code(Path(i.file).name) for i in report.inputs)
        return f"The doctor finds nothing wrong in {names}."
    out = []
    for f in report.findings:
        numbers = ""
        if f.measured or f.expected:
            numbers = f" Measured {_quantity(f.measured)}, expected {_quantity(f.expected)}."
        ev = f"; evidence {md_text(_evidence_text(f))} of {md_code(Path(f.file).name)}" if f.evidence else ""
        out.append(f"- **{md_text(f.severity)}** ({md_text(f.category)}): {md_text(f.cause.rstrip('.'))}{ev}."
                   f"{md_text(numbers)} {md_text(f.advice)}")
    return "\n".join(out)


def run_report(run) -> doctor.Report:
    """The doctor on a lab run (an ``x4lib.harness.runs.Run``, or a results.json mapping)."""
    path = Path(getattr(run, "path", "") or "") / "results.json"
    if getattr(run, "path", None) and path.is_file():
        return doctor.diagnose_files([path])  # read as a file: the evidence names its lines
    return rate_check.diagnose_results(dict(getattr(run, "results", run)), "results.json")


def run_markdown(run) -> str:
    """What the doctor says about the page's own run, as Markdown (one cell, one call); a page without a run
    says so."""
    if run is None:
        return "No run is shown on this page, so the doctor has nothing of ours to read."
    return report_markdown(run_report(run))


def case_rows(lab: str) -> list[dict]:
    """Each stored case of ``lab``: what its source established, and what the doctor says (one row per case)."""
    rows = []
    for relative, established, key in CASES[lab]:
        report = diagnose_case(relative)
        worst = sorted(report.findings, key=lambda f: doctor.SEVERITIES.index(f.severity))
        said = "; ".join(f"{f.severity}: {f.rule.title} ({_evidence_text(f)})" for f in worst) or "nothing wrong"
        rows.append({"case": Path(relative).name, "source established": established, "source": key,
                     "the doctor says": said})
    return rows


def cases_table(lab: str):
    """The stored real cases of ``lab`` beside what the doctor says about each."""
    from x4lib.book.tables import Col, table
    return table(case_rows(lab), {"case": Col("case", wrap=True),
                                  "source established": Col("source established", wrap=True),
                                  "source": "source", "the doctor says": Col("the doctor says", wrap=True)})
