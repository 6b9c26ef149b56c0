"""Read a machine: the ``nvidia-smi topo -m`` matrix, and the port essentials of ``ibstat`` / ``ibv_devinfo``.

    python -m x4lib topo FILE [--json] [--nvlink-gen N]      # nvidia-smi topo -m (or topo --matrix) output
    python -m x4lib ib-ports FILE [--json]                   # ibstat or ibv_devinfo output

The matrix names the path between every pair of devices (the legend nvidia-smi prints, the same words NCCL uses in
src/include/graph.h; nccl-src-topo-paths):

    X      the device itself
    NV#    a bonded set of # NVLinks (through NVSwitch on HGX/DGX boards: every pair shows all of a GPU's links)
    PIX    at most one PCIe bridge (the two devices hang off the same PCIe switch)
    PXB    several PCIe bridges, but no host bridge
    PHB    PCIe and a PCIe host bridge (the CPU)
    NODE   PCIe and the interconnect between host bridges of one NUMA node (NCCL calls this PHB)
    SYS    PCIe and the interconnect between NUMA nodes (UPI, Infinity Fabric): across CPU sockets
           (``SOC`` in old drivers)

NCCL's defaults turn these into decisions (nccl-src-topo-paths, src/graph/paths.cc): GPUDirect RDMA between a GPU
and a NIC only when their path is PXB or closer (NCCL_NET_GDR_LEVEL), and GPU-to-GPU P2P over PCIe only up to PXB.
The explainer flags what follows from a matrix: a GPU whose nearest NIC is across the CPU socket (SYS), or only
reachable through the host bridge (PHB/NODE), GPU pairs without NVLink, NICs that no GPU is near (storage or
management NICs), pairs with different NVLink counts (no NVSwitch), and the NUMA split.

Input handling follows :mod:`x4lib.network.nccl_log` (the files are untrusted text): a regular file of at most
MAX_BYTES (a FIFO, device, socket or directory is refused before reading); UTF-8, or UTF-16/32 with a byte-order
mark; NUL bytes or many control characters are a "binary file"; every pattern runs on one line in time linear in
its length. Exit codes: 0 read (warnings in the output, e.g. a matrix cut mid-row, which is read as far as it is
complete); 1 a matrix header with no complete row (nothing usable); 2 bad input: missing or refused file, no
matrix at all, a cell that is not a path word, a diagonal that is not X.
Used in: book/03-interconnects-and-topology.md.
"""
from __future__ import annotations

import codecs
import dataclasses
import math
import os
import re
import stat
from pathlib import Path
from types import MappingProxyType

METHOD_VERSION = "topo/1"
#: largest file read (1 MiB: a 16-GPU, 18-NIC matrix with legend is about 4 KB)
MAX_BYTES = 2**20
MAX_PORT_GBIT_S = 3200.0  # one port, per direction: twice the fastest InfiniBand generation named (XDR 8x)

#: nvidia-smi path word -> NCCL path type (src/include/graph.h: PATH_LOC 0, NVL 1, PIX 4, PXB 5, PHB 8, SYS 9)
NCCL_PATH = MappingProxyType({"X": 0, "NV": 1, "PIX": 4, "PXB": 5, "PHB": 8, "NODE": 8, "SYS": 9})
#: NCCL's default limit for GPUDirect RDMA and for P2P over PCIe: PATH_PXB
NCCL_DEFAULT_LIMIT = 5

MEANING = MappingProxyType({
    "X": "the device itself",
    "NV": "a bonded set of NVLinks (through NVSwitch when every pair shows the same count)",
    "PIX": "at most one PCIe bridge: the same PCIe switch",
    "PXB": "several PCIe bridges, no host bridge",
    "PHB": "PCIe through a host bridge (the CPU)",
    "NODE": "PCIe between host bridges of one NUMA node",
    "SYS": "PCIe and the link between CPU sockets (UPI / Infinity Fabric)",
})

_A = re.ASCII
_DEVICE = r"(?:GPU\d{1,4}|NIC\d{1,4}|mlx\d{0,2}_(?:bond_?)?\d{1,4}|bnxt_re\d{1,4}|ionic_\d{1,4})"
_HEADER_TOKEN = re.compile(_DEVICE + r"|CPU Affinity|NUMA Affinity|GPU NUMA ID", _A)
_ROW = re.compile(r"(" + _DEVICE + r")(?=\s|$)", _A)
_CELL = re.compile(r"X|NV\d{1,3}|PIX|PXB|PHB|NODE|SYS|SOC", _A)
_CPU_LIST = re.compile(r"\d{1,6}(?:-\d{1,6})?(?:,\d{1,6}(?:-\d{1,6})?){0,255}", _A)
_NUMA = re.compile(r"\d{1,4}(?:-\d{1,4})?(?:,\d{1,4}(?:-\d{1,4})?){0,63}|N/A", _A)
_NIC_LEGEND = re.compile(r"(NIC\d{1,4}):\s*(\S{1,64})", _A)
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


class TopoError(ValueError):
    """Input that cannot be read as the expected tool output; ``exit_code`` 2 (bad input) or 1 (nothing usable)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.exit_code = code


# ----------------------------------------------------------------------------------------------- the file

def read_text(path: str | Path, what: str = "an nvidia-smi topo -m output") -> tuple[str, list[str]]:
    """(text, warnings) of a regular file of at most MAX_BYTES, opened without blocking; refuses FIFOs, devices,
    sockets, directories and binary files with one clear message (TopoError, exit 2)."""
    name = os.fspath(path)
    if name == "":
        raise TopoError(f"the path is empty: give the file of {what}")
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise TopoError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise TopoError(f"{name}: is a directory; give the file of {what}") from None
    except OSError as exc:
        raise TopoError(f"{name}: cannot read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise TopoError(f"{name}: is a directory; give the file of {what}")
        if not stat.S_ISREG(st.st_mode):
            raise TopoError(f"{name}: not a regular file (a FIFO, device or socket); give the file of {what}")
        if st.st_size > MAX_BYTES:
            raise TopoError(f"{name}: {st.st_size} bytes, over the {MAX_BYTES // 2**10} KiB limit (MAX_BYTES)")
        data = os.read(fd, MAX_BYTES + 1)
    except OSError as exc:
        raise TopoError(f"{name}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise TopoError(f"{name}: over the {MAX_BYTES // 2**10} KiB limit (MAX_BYTES)")
    return decode(data, name)


def decode(data: bytes, name: str = "<text>") -> tuple[str, list[str]]:
    """Text of ``data`` (UTF-8, or UTF-16/32 with a BOM), and warnings; TopoError for a binary file."""
    enc, body = next(((e, data[len(b):]) for b, e in _BOMS if data.startswith(b)), ("utf-8", data))
    if enc == "utf-8":
        head = body[:4096]
        controls = sum(1 for x in head if x < 32 and x not in b"\t\n\r\x0b\x0c\x1b")
        if b"\0" in head or controls > 0.05 * max(1, len(head)):
            raise TopoError(f"{name}:1: binary file, not text")
    try:
        return body.decode(enc), []
    except UnicodeDecodeError as exc:
        line = body[:exc.start].count(b"\n") + 1
        return body.decode(enc, errors="replace"), [f"line {line}: not valid {enc.upper()}; bytes replaced"]


# ----------------------------------------------------------------------------------------------- topo -m

@dataclasses.dataclass(frozen=True)
class Topo:
    """A parsed matrix: device columns in order, each row's cells (device -> path word), affinities as printed."""
    columns: tuple[str, ...]
    rows: MappingProxyType  # row device -> {column device: path word}
    cpu_affinity: MappingProxyType
    numa_affinity: MappingProxyType
    gpu_numa_id: MappingProxyType
    nic_names: MappingProxyType  # NIC0 -> mlx5_0 (from the NIC legend)
    warnings: tuple[str, ...]
    cut_rows: frozenset = frozenset()  # rows that end before the last column

    def known(self, a: str, b: str) -> bool:
        """Whether the path between a and b is printed (in a's row or b's)."""
        return self.path(a, b) is not None

    @property
    def gpus(self) -> list[str]:
        return [c for c in self.columns if c.startswith("GPU")] or [r for r in self.rows if r.startswith("GPU")]

    @property
    def nics(self) -> list[str]:
        seen = [c for c in self.columns if not c.startswith("GPU")]
        return seen + [r for r in self.rows if not r.startswith("GPU") and r not in seen]

    def path(self, a: str, b: str) -> str | None:
        """The path word between a and b, from a's row or else b's row."""
        return self.rows.get(a, {}).get(b) or self.rows.get(b, {}).get(a)


def _kind(word: str) -> str:
    return "NV" if word.startswith("NV") and word[2:].isdigit() else word


def rank(word: str) -> int:
    """NCCL's path type of an nvidia-smi word (smaller is closer)."""
    return NCCL_PATH[_kind(word)]


def _header(line: str) -> list[str] | None:
    toks = [m.group() for m in _HEADER_TOKEN.finditer(line)]
    return toks if toks and toks[0] == "GPU0" else None


def parse_topo(text: str, name: str = "<topo>") -> Topo:
    """Read the first matrix of ``text`` (module docstring). Raises TopoError for garbled input."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _header(ln)), None)
    if start is None:
        if "CA '" in text or "hca_id:" in text:
            raise TopoError(f"{name}: this looks like ibstat / ibv_devinfo output: use `python -m x4lib ib-ports`")
        raise TopoError(f"{name}: no nvidia-smi topo -m matrix found (a header line starting with GPU0)")
    head = _header(lines[start])
    columns = [t for t in head if _ROW.fullmatch(t)]
    extras = [t for t in head if not _ROW.fullmatch(t)]
    if len(set(columns)) != len(columns):
        raise TopoError(f"{name}:{start + 1}: a device appears twice in the header")
    warnings: list[str] = []
    rows: dict[str, dict[str, str]] = {}
    cut: set[str] = set()
    cpu, numa, gnuma = {}, {}, {}
    last = start
    for i in range(start + 1, len(lines)):
        s = lines[i].strip()
        m = _ROW.match(s)
        if not m:
            if s and not rows:
                raise TopoError(f"{name}:{i + 1}: expected a device row (GPU0 ...) after the header")
            if i == len(lines) - 1 and s.startswith(("GPU", "NIC", "mlx")):
                warnings.append(f"line {i + 1}: the file ends inside a row ({s[:20]!r}: cut?)")
            break
        dev = m.group(1)
        if dev in rows:
            raise TopoError(f"{name}:{i + 1}: a second row for {dev}")
        toks = s[m.end():].split()
        cells = {}
        for col, tok in zip(columns, toks):
            if not _CELL.fullmatch(tok):
                if len(cells) == len(toks) - 1 and i == len(lines) - 1:  # the very last token of a cut file
                    warnings.append(f"line {i + 1}: {dev} ends in {tok!r} (cut?); cell dropped")
                    break
                raise TopoError(f"{name}:{i + 1}: {dev}, column {col}: {tok!r} is not a path "
                                f"(X, NV#, PIX, PXB, PHB, NODE, SYS)")
            cells[col] = "SYS" if tok == "SOC" else tok
        if dev in columns and dev in cells and cells[dev] != "X":
            raise TopoError(f"{name}:{i + 1}: {dev}'s own column is {cells[dev]!r}, expected X")
        for col in cells:
            if col != dev and cells[col] == "X":
                raise TopoError(f"{name}:{i + 1}: {dev}, column {col}: X outside the diagonal")
        rest = toks[len(columns):]
        if len(cells) < len(columns):
            cut.add(dev)
            warnings.append(f"line {i + 1}: row {dev} ends after {len(cells)} of {len(columns)} columns (cut?)")
        elif dev.startswith("GPU") and extras:
            _affinity(dev, rest, extras, cpu, numa, gnuma, warnings, i + 1)
        rows[dev] = cells
        last = i
    if not rows:
        raise TopoError(f"{name}:{start + 1}: a matrix header but no complete row: nothing usable", code=1)
    legend = {}
    for ln in lines[last + 1:]:
        lm = _NIC_LEGEND.match(ln.strip())
        if lm:
            legend[lm.group(1)] = lm.group(2)
    missing = [c for c in columns if c.startswith("GPU") and c not in rows]
    if missing:
        warnings.append(f"rows missing for {', '.join(missing)} (the output is cut)")
    for a in rows:
        for b, w in rows[a].items():
            if b in rows and a in rows[b] and rows[b][a] != w:
                warnings.append(f"{a}-{b} is {w} but {b}-{a} is {rows[b][a]}")
    return Topo(tuple(columns), MappingProxyType(rows), MappingProxyType(cpu), MappingProxyType(numa),
                MappingProxyType(gnuma), MappingProxyType(legend), tuple(dict.fromkeys(warnings)), frozenset(cut))


def _affinity(dev, rest, extras, cpu, numa, gnuma, warnings, lineno) -> None:
    """CPU affinity ('0-79', '0-55,112-167', 'N/A'), NUMA affinity, GPU NUMA ID: what is printed, checked."""
    vals = dict(zip(extras, rest))
    if "CPU Affinity" in vals:
        v = vals["CPU Affinity"]
        cpu[dev] = v
        if v != "N/A" and not _CPU_LIST.fullmatch(v):
            warnings.append(f"line {lineno}: {dev} CPU affinity {v!r} is not a CPU list (cut when pasted?)")
    if "NUMA Affinity" in vals:
        v = vals["NUMA Affinity"]
        numa[dev] = v
        if not _NUMA.fullmatch(v):
            warnings.append(f"line {lineno}: {dev} NUMA affinity {v!r} is not a NUMA node list")
    if "GPU NUMA ID" in vals:
        gnuma[dev] = vals["GPU NUMA ID"]


def explain(word: str, nvlink_gen: int | None = None) -> str:
    """A sentence for one path word; for NV# the per-direction bandwidth at a given NVLink generation's per-link
    rate (x4lib.network.links; 25 GB/s per link per direction for NVLink 2-4, 50 for NVLink 5)."""
    k = _kind(word)
    if k not in MEANING:
        raise ValueError(f"{word!r} is not a topo path word")
    if k != "NV":
        return f"{word}: {MEANING[k]}"
    from x4lib.network import links
    n = int(word[2:])
    if nvlink_gen:
        rates = f"{n * links.nvlink_per_link_Bps(nvlink_gen) / 1e9:,.0f} GB/s per direction at NVLink {nvlink_gen}"
    else:
        rates = (f"{n * links.nvlink_per_link_Bps(4) / 1e9:,.0f} GB/s per direction at NVLink 2-4 rates, "
                 f"{n * links.nvlink_per_link_Bps(5) / 1e9:,.0f} at NVLink 5")
    return f"{word}: {n} bonded NVLinks ({rates})"


def _nearest(topo: Topo, dev: str, others: list[str]) -> tuple[str | None, list[str]]:
    cand = [(o, topo.path(dev, o)) for o in others if topo.path(dev, o)]
    if not cand:
        return None, []
    best = min(rank(w) for _, w in cand)
    words = {w for _, w in cand if rank(w) == best}
    return sorted(words)[0], [o for o, w in cand if rank(w) == best]


def findings(topo: Topo) -> list[dict]:
    """What the matrix implies (module docstring), each {severity, code, message}."""
    out: list[dict] = []

    def add(sev, code, msg):
        out.append({"severity": sev, "code": code, "message": msg})
    gpus, nics = topo.gpus, topo.nics
    pairs = [(a, b, topo.path(a, b)) for i, a in enumerate(gpus) for b in gpus[i + 1:] if topo.path(a, b)]
    nv = sorted({w for _, _, w in pairs if _kind(w) == "NV"}, key=lambda w: int(w[2:]))
    if pairs and not nv:
        add("warning", "no-nvlink", "no GPU pair shows NVLink: GPUs talk over PCIe (or through host memory); on an "
            "SXM/HGX system check the fabric manager, the driver and the SKU")
    if len(nv) > 1:
        add("info", "mixed-nvlink", f"pairs show different NVLink counts ({', '.join(nv)}): no NVSwitch, so the "
            "bandwidth depends on the pair")
    elif nv and all(_kind(w) == "NV" for _, _, w in pairs):
        what = ("the two GPUs share" if len(gpus) == 2 else "every GPU pair is") + f" {nv[0]}"
        how = "an NVLink bridge or direct links" if len(gpus) == 2 else "all-to-all through NVSwitch"
        add("info", "nvlink-all-pairs", f"{what} ({how}): " + explain(nv[0]).split(": ", 1)[1])
    far = [(a, b, w) for a, b, w in pairs if _kind(w) != "NV" and rank(w) > NCCL_DEFAULT_LIMIT]
    if far:
        shown = ", ".join(f"{a}-{b} {w}" for a, b, w in far[:6]) + (" ..." if len(far) > 6 else "")
        add("warning", "no-p2p", f"{len(far)} GPU pair(s) beyond PXB without NVLink ({shown}): NCCL does not use "
            "P2P there by default, so their traffic goes through host memory")
    unjudged = [g for g in gpus if nics and not all(topo.known(g, n) for n in nics)]
    if unjudged:
        add("info", "cut", f"{', '.join(unjudged)}: the NIC columns are cut, so their nearest NIC is not judged")
    for g in gpus:
        if g in unjudged:
            continue
        word, near = _nearest(topo, g, nics)
        if word is None:
            continue
        names = ", ".join(f"{n} ({topo.nic_names[n]})" if n in topo.nic_names else n for n in near)
        if word == "SYS":
            add("warning", "gpu-nic-cross-socket", f"{g}'s nearest NIC ({names}) is SYS: its network traffic crosses "
                "the CPU-socket interconnect, and NCCL disables GPUDirect RDMA beyond PXB by default")
        elif rank(word) > NCCL_DEFAULT_LIMIT:
            add("warning", "gpu-nic-no-gdr", f"{g}'s nearest NIC ({names}) is {word}: through the host bridge, so "
                "NCCL does not use GPUDirect RDMA by default (NCCL_NET_GDR_LEVEL)")
    if nics and gpus:
        local = {}
        for g in (g for g in gpus if g not in unjudged):
            word, near = _nearest(topo, g, nics)
            if word and rank(word) <= NCCL_DEFAULT_LIMIT:
                for n in near:
                    local.setdefault(n, []).append(g)
        if local:
            ratio = {len(v) for v in local.values()}
            add("info", "gpu-nic-pairing", f"{len(local)} NIC(s) within PXB of a GPU; GPUs per such NIC: "
                f"{', '.join(map(str, sorted(ratio)))} (rail-style when 1)")
        for n in nics:
            if not all(topo.known(n, g) for g in gpus):
                continue  # a GPU's relation to this NIC is cut off
            word, _ = _nearest(topo, n, gpus)
            if word and rank(word) > NCCL_DEFAULT_LIMIT:
                nm = f"{n} ({topo.nic_names[n]})" if n in topo.nic_names else n
                add("info", "nic-not-gpu-local", f"{nm} is {word} or farther from every GPU: a storage, management "
                    "or front-end NIC, not one NCCL pairs with a GPU")
    nodes = sorted({v for k, v in topo.numa_affinity.items() if k in gpus and v != "N/A"})
    if len(nodes) > 1:
        by = {v: [g for g in gpus if topo.numa_affinity.get(g) == v] for v in nodes}
        add("info", "numa-split", "GPUs sit on NUMA nodes " + "; ".join(f"{v}: {', '.join(gs)}" for v, gs in by.items())
            + ": bind each rank's CPU threads and memory to its GPU's node")
    return out


def topo_doc(topo: Topo, warnings: list[str] | None = None, nvlink_gen: int | None = None) -> dict:
    """The ``topo --json`` contract (x4lib/schemas/topo_output.schema.json)."""
    gpus, nics = topo.gpus, topo.nics
    gpu_rows = []
    for g in gpus:
        word, near = _nearest(topo, g, nics)
        gpu_rows.append({"name": g, "cpu_affinity": topo.cpu_affinity.get(g), "numa_affinity": topo.numa_affinity.get(g),
                         "gpu_numa_id": topo.gpu_numa_id.get(g), "nearest_nics": near, "nearest_nic_path": word})
    nic_rows = []
    for n in nics:
        word, near = _nearest(topo, n, gpus)
        nic_rows.append({"name": n, "device": topo.nic_names.get(n, n if not n.startswith("NIC") else None),
                         "nearest_gpus": near, "nearest_gpu_path": word})
    pairs = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            w = topo.path(a, b)
            if w:
                pairs.append({"a": a, "b": b, "path": w, "meaning": explain(w, nvlink_gen).split(": ", 1)[1],
                              "nccl_p2p_by_default": _kind(w) == "NV" or rank(w) <= NCCL_DEFAULT_LIMIT})
    seen = sorted({_kind(w) for r in topo.rows.values() for w in r.values()}, key=lambda k: NCCL_PATH[k])
    return {"gpus": gpu_rows, "nics": nic_rows, "matrix": {k: dict(v) for k, v in topo.rows.items()},
            "cpu_affinity": dict(topo.cpu_affinity), "numa_affinity": dict(topo.numa_affinity),
            "findings": findings(topo), "pairs": pairs, "legend": {k: MEANING[k] for k in seen},
            "warnings": list(warnings or []) + list(topo.warnings), "method_version": METHOD_VERSION}


def read_topo(path: str | Path) -> tuple[Topo, list[str]]:
    text, notes = read_text(path)
    return parse_topo(text, os.fspath(path)), notes


# ----------------------------------------------------------------------------------------------- ibstat

@dataclasses.dataclass(frozen=True)
class IbPort:
    ca: str
    port: int
    state: str | None = None
    physical_state: str | None = None
    rate_gbit_s: float | None = None
    link_layer: str | None = None
    base_lid: int | None = None
    sm_lid: int | None = None
    active_mtu: str | None = None
    ca_type: str | None = None
    firmware: str | None = None


_IBSTAT_CA = re.compile(r"CA '([^'\s]{1,64})'", _A)
_IBV_CA = re.compile(r"hca_id:\s*(\S{1,64})", _A)
_PORT = re.compile(r"(?:Port\s+(\d{1,3}):|port:\s*(\d{1,3}))$", _A)
_KV = re.compile(r"([A-Za-z_][A-Za-z_ ]{0,40}?):\s*(\S.{0,200})?$", _A)


def parse_ib(text: str, name: str = "<ib>") -> tuple[str, list[IbPort], list[str]]:
    """(tool, ports, warnings) of ibstat or ibv_devinfo output. TopoError when neither is recognised."""
    lines = text.splitlines()
    tool = "ibstat" if any(_IBSTAT_CA.match(ln.strip()) for ln in lines) else \
        "ibv_devinfo" if any(_IBV_CA.match(ln.strip()) for ln in lines) else None
    if tool is None:
        if _header(text.splitlines()[0] if lines else "") or "GPU0" in text:
            raise TopoError(f"{name}: this looks like nvidia-smi topo output: use `python -m x4lib topo`")
        raise TopoError(f"{name}: neither ibstat (CA '...') nor ibv_devinfo (hca_id: ...) output")
    ports: list[IbPort] = []
    warnings: list[str] = []
    ca = port = None
    ca_info: dict = {}
    fields: dict = {}

    def flush():
        if ca is not None and port is not None:
            ports.append(IbPort(ca, port, **fields, ca_type=ca_info.get("type"), firmware=ca_info.get("fw")))

    for i, raw in enumerate(lines, 1):
        s = raw.strip()
        m = _IBSTAT_CA.match(s) or _IBV_CA.match(s)
        if m:
            flush()
            ca, port, fields, ca_info = m.group(1), None, {}, {}
            continue
        pm = _PORT.match(s)
        if pm and ca is not None:
            flush()
            port, fields = int(pm.group(1) or pm.group(2)), {}
            continue
        if s.startswith("ibpanic") or "failed" in s:
            warnings.append(f"line {i}: {s[:120]}")
            continue
        kv = _KV.match(s)
        if not kv or ca is None:
            continue
        key, val = kv.group(1).strip().lower(), (kv.group(2) or "").strip()
        if key in ("ca type", "vendor_part_id"):
            ca_info["type"] = val
        elif key in ("firmware version", "fw_ver"):
            ca_info["fw"] = val
        if port is None:
            continue
        if key == "state":
            fields["state"] = val
        elif key == "physical state":
            fields["physical_state"] = val
        elif key == "rate":
            try:
                rate = float(val)
            except ValueError:
                warnings.append(f"line {i}: rate {val!r} is not a number")
            else:  # a port's rate in physical sense: SDR 1x is 2.5 Gb/s, XDR 8x 1600 (MAX_PORT_GBIT_S: room above)
                if math.isfinite(rate) and 0 < rate <= MAX_PORT_GBIT_S:
                    fields["rate_gbit_s"] = rate
                else:
                    warnings.append(f"line {i}: rate {val!r} is not a port's rate (above 0, at most "
                                    f"{MAX_PORT_GBIT_S:g} Gb/s); left out")
        elif key in ("link layer", "link_layer"):
            fields["link_layer"] = val
        elif key in ("base lid", "port_lid"):
            fields["base_lid"] = int(val) if val.isdigit() else None
        elif key in ("sm lid", "sm_lid"):
            fields["sm_lid"] = int(val) if val.isdigit() else None
        elif key == "active_mtu":
            fields["active_mtu"] = val
    flush()
    if not ports:
        raise TopoError(f"{name}: {tool} output with no port block (Port 1: / port: 1): nothing usable", code=1)
    return tool, ports, warnings


def _active(state: str | None) -> bool:
    return bool(state) and ("Active" in state or "PORT_ACTIVE" in state)


def ib_findings(ports: list[IbPort]) -> list[dict]:
    out = []
    rates = [p.rate_gbit_s for p in ports if p.rate_gbit_s and _active(p.state)]
    top = max(rates) if rates else None
    for p in ports:
        where = f"{p.ca} port {p.port}"
        if not _active(p.state):
            out.append({"severity": "warning", "code": "port-down",
                        "message": f"{where} is {p.state or 'in an unknown state'}"
                                   + (f" ({p.physical_state})" if p.physical_state else "")})
            continue
        if p.link_layer == "Ethernet":
            out.append({"severity": "info", "code": "roce", "message": f"{where}: link layer Ethernet, so RDMA runs "
                        "as RoCE (InfiniBand transport over UDP/IP); no subnet manager, LIDs are 0"})
        elif p.link_layer == "InfiniBand" and p.base_lid == 0:
            out.append({"severity": "warning", "code": "no-lid", "message": f"{where}: InfiniBand port with LID 0: "
                        "no subnet manager has configured it"})
        if p.rate_gbit_s and top and p.rate_gbit_s < top:
            out.append({"severity": "warning", "code": "slow-port", "message": f"{where} runs at "
                        f"{p.rate_gbit_s:g} Gb/s while another active port runs at {top:g} Gb/s"})
    return out


def ib_doc(tool: str, ports: list[IbPort], warnings: list[str]) -> dict:
    """The ``ib-ports --json`` contract (x4lib/schemas/ib_ports_output.schema.json); rates per direction."""
    rows = [{**dataclasses.asdict(p), "rate_gb_s_per_direction": p.rate_gbit_s / 8 if p.rate_gbit_s else None,
             "active": _active(p.state)} for p in ports]
    return {"tool": tool, "ports": rows, "findings": ib_findings(ports), "warnings": warnings,
            "units": "rate in Gb/s (1e9 bit/s) per direction as ibstat prints it; GB/s = Gb/s / 8",
            "method_version": METHOD_VERSION}


# ----------------------------------------------------------------------------------------------- command line

def cli_arguments(p) -> None:
    from x4lib import cli
    if p.prog.endswith("ib-ports"):
        p.description = "Ports of ibstat or ibv_devinfo output: state, rate, link layer (RoCE or InfiniBand)."
        p.add_argument("file", help="a file holding ibstat or ibv_devinfo output")
        p.add_argument("--json", action="store_true", help="x4lib/schemas/ib_ports_output.schema.json")
        return
    p.description = ("Read nvidia-smi topo -m output: each GPU pair's path, each GPU's nearest NIC, CPU and NUMA "
                     "affinity, and what NCCL will do with them.")
    p.add_argument("file", help="a file holding the output of nvidia-smi topo -m")
    p.add_argument("--nvlink-gen", type=cli.number("NVLink generation", 2, 5, integer=True),
                   help="NVLink generation for bandwidths (4: H100/H200, 5: B200); default shows 4 and 5")
    p.add_argument("--json", action="store_true", help="x4lib/schemas/topo_output.schema.json")


def _topo_text(doc: dict) -> str:
    lines = [f"{len(doc['gpus'])} GPUs, {len(doc['nics'])} NICs"]
    kinds: dict[str, list[str]] = {}
    for pr in doc["pairs"]:
        kinds.setdefault(pr["path"], []).append(f"{pr['a']}-{pr['b']}")
    for w, ps in kinds.items():
        lines.append(f"  {w} ({len(ps)} pair{'s' if len(ps) > 1 else ''}): {explain(w).split(': ', 1)[1]}")
    for g in doc["gpus"]:
        nic = ", ".join(g["nearest_nics"]) or "-"
        lines.append(f"  {g['name']}: nearest NIC {nic} ({g['nearest_nic_path'] or '-'}), CPUs {g['cpu_affinity'] or '-'}"
                     f", NUMA {g['numa_affinity'] or '-'}")
    lines += [f"{f['severity']}: {f['message']}" for f in doc["findings"]]
    lines += [f"input: {w}" for w in doc["warnings"]]
    return "\n".join(lines)


def cli_main(args) -> int:
    from x4lib import cli
    if not hasattr(args, "nvlink_gen"):  # ib-ports
        text, notes = read_text(args.file, "ibstat or ibv_devinfo output")
        tool, ports, warns = parse_ib(text, args.file)
        doc = ib_doc(tool, ports, notes + warns)
        lines = [f"{p['ca']} port {p['port']}: {p['state']}, {p['rate_gbit_s'] or '-'} Gb/s, {p['link_layer']}"
                 for p in doc["ports"]]
        lines += [f"{f['severity']}: {f['message']}" for f in doc["findings"]] + [f"input: {w}" for w in doc["warnings"]]
        cli.emit(doc, "\n".join(lines), as_json=args.json)
        return 0
    topo, notes = read_topo(args.file)
    doc = topo_doc(topo, notes, args.nvlink_gen)
    cli.emit(doc, _topo_text(doc), as_json=args.json)
    return 0
