"""Figures a paste states, set against the catalog and the doctor's data (used by x4lib.doctor.paste's findings): the
data-center GPU a paste names, a line rate or sparse peak taken as achievable, FP32 against FP16, a dtype below the
compute capability that multiplies it, and the bus bandwidth a paste reports."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from x4lib.doctor.findings import MAX_LINE, Lines, Quantity, load_rules

if TYPE_CHECKING:
    from x4lib.doctor.paste import Scan


_DEVICE_WORDS = (("H100", "h100-sxm"), ("H800", "h100-sxm"), ("H20", "h100-sxm"), ("H200", "h200-sxm"),
                 ("A100", "a100-sxm-80gb"), ("B200", "b200"), ("GB200", "gb200"), ("MI300X", "mi300x"))
_DEVICE_RE = re.compile(r"\b(" + "|".join(w for w, _ in _DEVICE_WORDS) + r")\b")


def device_named(L: Lines) -> tuple[str, str] | None:
    """(word, catalog id) of the first data-center GPU named in the paste, or None. H800 and H20 carry the H100's
    NVLink 4 ports (a reduced count on H800): the catalog's H100 SXM entry stands for their per-port rate."""
    for ln in L.lines[:20000]:
        if m := _DEVICE_RE.search(ln[:MAX_LINE]):
            return m.group(1), dict(_DEVICE_WORDS)[m.group(1)]
    return None


def _numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"(?<![0-9.])([0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,6}"
                                                          r"(?:\.[0-9]{1,4})?)(?![0-9])", text)]


def line_rate_expectation(sc: Scan, ev_lines: list[int]) -> tuple[Quantity | None, Quantity | None, str]:
    """For an expectation stated about a named GPU: (the reported busbw/algbw figure, NCCL's achievable ring busbw
    on one node of 8 from the collective model over the catalog's per-direction line rate, detail)."""
    from x4lib.catalog import specs
    from x4lib.network import clusters, collectives
    named = device_named(sc.lines)
    measured = None
    for i in sc.lines_of("busbw-prose"):
        m = next(m for j, m in sc.hits["busbw-prose"] if j == i)
        measured = Quantity(float(m.group(1)), "GB/s", f"figure reported on line {i}")
        break
    if named is None:
        return measured, None, ""
    word, cid = named
    dev = specs.get(cid)
    link = dev.get("scaleup_bw_gb_s_per_direction")
    if link is None:
        return measured, None, ""
    cluster = clusters.custom_cluster(1, 8, link.si, intra_kind="nvlink", cluster_id=f"1x8-{cid}")
    ring = collectives.bandwidth_limit_busbw_Bps("all_reduce", cluster, algorithm="ring") / 1e9
    stated = [x for i in ev_lines for x in _numbers(sc.lines.lines[i - 1][:MAX_LINE])]
    bidir = [x for x in stated if abs(x - 2 * link.value) < 0.01 * link.value]
    detail = (f"{word}: NVLink line rate {link.value:g} GB/s per direction (catalog {cid}, {link.source})"
              + (f"; {bidir[0]:g} GB/s is both directions added" if bidir else ""))
    return measured, Quantity(round(ring, 1), "GB/s", f"NCCL's achievable AllReduce busbw with the ring on 1 × 8 "
                                                      f"{cid} (x4lib.network.collectives, per-direction link "
                                                      f"{link.value:g} GB/s)"), detail


def sparse_expectation(sc: Scan, ev_lines: list[int]) -> tuple[Quantity | None, Quantity | None, str]:
    """A quoted figure equal to a catalog device's sparse peak: (that figure, the dense peak, detail)."""
    from x4lib.catalog import specs
    named = device_named(sc.lines)
    if named is None:
        return None, None, ""
    dev = specs.get(named[1])
    stated = [x for i in ev_lines for x in _numbers(sc.lines.lines[i - 1][:MAX_LINE])]
    for dt in ("bf16", "fp16", "fp8_e4m3", "int8", "tf32"):
        dense, sparse = dev.get(f"{dt}_dense_tflops"), dev.get(f"{dt}_sparse_tflops")
        if not (dense and sparse):
            continue
        if any(abs(x - sparse.value) <= 0.01 * sparse.value for x in stated):
            return (Quantity(sparse.value, "TFLOP/s", f"the figure quoted: catalog {dev.id} {dt} with 2:4 sparsity"),
                    Quantity(dense.value, "TFLOP/s", f"catalog {dev.id} {dt} dense peak ({dense.source})"),
                    f"{dt.upper()} {sparse.value:g} TFLOP/s is the sparse figure; dense is {dense.value:g}")
    return None, None, ""


def fp32_ratio(sc: Scan) -> tuple[str, Quantity | None, Quantity | None]:
    """For FP32 against FP16 on a named data-center GPU: (detail, the FP32 peak, the FP16 dense tensor peak)."""
    from x4lib.catalog import specs
    named = device_named(sc.lines)
    if named is None:
        return "", None, None
    dev = specs.get(named[1])
    fp32, fp16 = dev.get("fp32_tflops"), dev.get("fp16_dense_tflops")
    if not (fp32 and fp16):
        return "", None, None
    return (f"{named[0]}: FP32 {fp32.value:g} TFLOP/s without tensor cores, FP16 {fp16.value:g} dense: "
            f"{fp16.value / fp32.value:.0f}× apart (catalog {dev.id})",
            Quantity(fp32.value, "TFLOP/s", f"catalog {dev.id} FP32 peak ({fp32.source})"),
            Quantity(fp16.value, "TFLOP/s", f"catalog {dev.id} FP16 dense peak ({fp16.source})"))


_DTYPE_WORDS = (("fp8", r"\b(?:FP8|float8\w{0,12}|e4m3\w{0,6}|e5m2\w{0,6})\b"), ("bf16", r"\b(?:BF16|bfloat16)\b"),
                ("fp16", r"\b(?:FP16|float16)\b"))


def dtype_not_native(sc: Scan) -> tuple[list[int], str] | None:
    """A dtype said to be slow or unsupported on an NVIDIA GPU whose compute capability is below the one whose
    tensor cores multiply it (doctor_rules.yaml ``native_dtype_min_cc``, ``compute_capability_names``; a dtype with
    ``only_cc`` is named only on those compute capabilities, where it is slower than FP32): (the
    sentence's line and the GPU's, detail). The GPU named on the sentence's own line wins, else the first named."""
    lines = sc.lines_of("dtype-slow-prose")
    if not lines:
        return None
    data = load_rules()
    names = [(re.compile(e["regex"]), e) for e in data["compute_capability_names"]]

    def gpu_on(i: int):
        text = sc.lines.lines[i - 1][:MAX_LINE]
        return next(((m.group(0), e) for rx, e in names if (m := rx.search(text))), None)

    for i in lines:
        text = sc.lines.lines[i - 1][:MAX_LINE]
        found = gpu_on(i)
        where = i
        if found is None:
            where = next((j for j in range(1, min(len(sc.lines.lines), 20000) + 1) if gpu_on(j)), None)
            found = gpu_on(where) if where else None
        if found is None:
            continue
        word, entry = found
        for dtype, rx in _DTYPE_WORDS:
            need = data["native_dtype_min_cc"].get(dtype)
            if need and re.search(rx, text, re.I) and entry["cc"] < need["cc"] and (
                    "only_cc" not in need or entry["cc"] in need["only_cc"]):
                return sorted({i, where}), (f"{word}: compute capability {entry['cc']:g} ({entry['source']}); "
                                            f"{dtype.upper()} tensor-core MMA needs {need['cc']:g} "
                                            f"({need['source']})")
    return None


def busbw_hit(sc: Scan) -> tuple | None:
    """The first reported bus-bandwidth figure, (line, match): a busbw before an algbw (the figure comparable across
    collectives and rank counts), else the first figure."""
    hits = sc.hits.get("busbw-prose", ())
    return next((h for h in hits if not h[1].group(0).lower().startswith("algbw")), hits[0] if hits else None)


def first_busbw(sc: Scan) -> Quantity | None:
    h = busbw_hit(sc)
    return Quantity(float(h[1].group(1)), "GB/s", f"figure reported on line {h[0]}") if h else None
