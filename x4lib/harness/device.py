"""What are we running on? Detect the CPU or GPU and map it to a catalog id.

Imports only the standard library (torch is passed in or imported lazily), so the plain-Python measuring
entry (``python -m runners lab00 --measure-only``) runs on a bare PyTorch pod. Matching rules are data:
``x4lib/data/device_match.json`` (GPUs and catalogued CPUs) and ``x4lib/data/cpu_uarch.json`` (FLOP per cycle per CPU core).
An unknown device still runs; it is labelled with its detected name and has no catalog peak.
Used in: book/lab-00-roofline.md.
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import statistics
import subprocess
from pathlib import Path
from x4lib import paths

DATA_DIR = paths.DATA_DIR
GIB = 2**30


def _load(name: str) -> dict:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


def match_gpu(name: str, memory_B: float | None = None, power_limit_W: float | None = None) -> str | None:
    """Catalog id for an NVIDIA GPU from its driver name, total memory and power limit, or None.

    >>> match_gpu("NVIDIA H100 80GB HBM3", 85520809984, 700)
    'h100-sxm'
    """
    for rule in _load("device_match.json")["gpu_rules"]:
        if not re.search(rule["name_regex"], name.strip()):
            continue
        lo, hi = rule.get("memory_gib", (0, float("inf")))
        if memory_B is not None and not lo <= memory_B / GIB <= hi:
            continue
        lo, hi = rule.get("power_limit_w", (0, float("inf")))
        if power_limit_W is not None and not lo <= power_limit_W <= hi:
            continue
        return rule["catalog_id"]
    return None


#: the /proc/cpuinfo flags a run keeps: they say which vector and matrix units the OS lets programs use
CPU_FLAGS_KEPT = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
                  "amx_int8", "amx_fp16", "asimd", "sve", "hypervisor")


def cpu_info(cpuinfo_text: str | None = None) -> dict:
    """Model name, vendor, family/model numbers, physical cores and logical CPUs, from /proc/cpuinfo
    (Linux) or platform (elsewhere). ``cpuinfo_text`` lets tests pass a recorded file."""
    if cpuinfo_text is None:
        p = Path("/proc/cpuinfo")
        cpuinfo_text = p.read_text(encoding="utf-8", errors="replace") if p.exists() else ""
    fields: dict[str, str] = {}
    cores = set()
    logical = 0
    phys_id = core_id = None
    for line in cpuinfo_text.splitlines() + [""]:
        if not line.strip():
            if phys_id is not None or core_id is not None:
                cores.add((phys_id, core_id))
            phys_id = core_id = None
            continue
        key, _, val = line.partition(":")
        key, val = key.strip(), val.strip()
        if key == "processor":
            logical += 1
        elif key == "physical id":
            phys_id = val
        elif key == "core id":
            core_id = val
        fields.setdefault(key, val)
    info = {
        "model_name": fields.get("model name") or platform.processor() or platform.machine(),
        "vendor_id": fields.get("vendor_id"),
        "family": int(fields["cpu family"]) if fields.get("cpu family", "").isdigit() else None,
        "model": int(fields["model"]) if fields.get("model", "").isdigit() else None,
        "logical_cpus": logical or os.cpu_count(),
        "physical_cores": len(cores) if cores else None,
        "mhz_reported": float(fields["cpu MHz"]) if fields.get("cpu MHz") else None,
        "cpu_implementer": int(fields["CPU implementer"], 0) if fields.get("CPU implementer") else None,
        "cpu_part": int(fields["CPU part"], 0) if fields.get("CPU part") else None,
        "flags": sorted(set(fields.get("flags", "").split()) & set(CPU_FLAGS_KEPT)),
    }
    if info["physical_cores"] is None:
        info["physical_cores"] = info["logical_cpus"]
    return info


def match_cpu_uarch(info: dict) -> dict | None:
    """The microarchitecture record (FLOP per cycle per core, source) for a CPU, or None."""
    for arch in _load("cpu_uarch.json")["microarchitectures"]:
        m = arch.get("match", {})
        if "cpu_implementer" in m:  # Arm: "CPU implementer" and "CPU part" of /proc/cpuinfo
            if m["cpu_implementer"] == info.get("cpu_implementer") and info.get("cpu_part") in m["cpu_parts"]:
                return arch
            continue
        if m.get("vendor_id") != info.get("vendor_id") or m.get("family") != info.get("family"):
            continue
        if info.get("model") is not None and any(lo <= info["model"] <= hi for lo, hi in m.get("models", [])):
            return arch
    return None


def cpu_caches(sysfs_cpu: str | Path = "/sys/devices/system/cpu/cpu0/cache") -> list[dict]:
    """The data and unified caches of one CPU as the kernel reports them (Linux sysfs; [] elsewhere):
    [{"level": 1, "type": "Data", "size_B": 49152, "shared_cpus": "0"}, ...], smallest level first.
    In a virtual machine these are what the hypervisor chooses to report, not necessarily the silicon.
    Used in: book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md (the memory-hierarchy sweep)."""
    root = Path(sysfs_cpu)
    out = []
    if not root.is_dir():
        return out
    for idx in sorted(root.glob("index*")):
        try:
            level = int((idx / "level").read_text(encoding="utf-8", errors="replace").strip())
            kind = (idx / "type").read_text(encoding="utf-8", errors="replace").strip()
            size = _size_B((idx / "size").read_text(encoding="utf-8", errors="replace").strip())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size is None:
            continue
        shared = (idx / "shared_cpu_list").read_text(encoding="utf-8", errors="replace").strip() if (idx / "shared_cpu_list").exists() else ""
        out.append({"level": level, "type": kind, "size_B": size, "shared_cpus": shared})
    return sorted(out, key=lambda c: c["level"])


def _size_B(text: str) -> int | None:
    """'48K' -> 49152, '2048K' -> 2097152, '480M' -> 503316480 (sysfs writes binary K/M/G)."""
    m = re.fullmatch(r"(\d+)\s*([KMG]?)B?", text.strip(), re.I)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2).upper()]


def nvidia_smi(index: int = 0) -> dict:
    """Driver version, clocks (MHz) and power (W) from nvidia-smi, when it is there; {} otherwise."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {}
    q = ["driver_version", "clocks.sm", "clocks.max.sm", "clocks.applications.graphics", "power.limit",
         "power.default_limit", "power.draw", "temperature.gpu", "pstate"]
    try:
        out = subprocess.run([exe, f"--id={index}", "--query-gpu=" + ",".join(q), "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    vals = [v.strip() for v in out.split(",")]
    if len(vals) != len(q):
        return {}
    rec = {}
    for k, v in zip(q, vals):
        try:
            rec[k] = float(v)
        except ValueError:
            rec[k] = v
    return rec


def detect(torch, want: str = "auto") -> dict:
    """Describe the device a run uses. ``want``: "cuda", "cpu" or "auto" (cuda if available).

    Returns {"kind", "torch_device", "detected_name", "catalog_id", "count", ...} with GPU memory and power
    or the CPU's cores, family/model and microarchitecture.
    """
    use_cuda = want == "cuda" or (want == "auto" and torch.cuda.is_available())
    cpu = cpu_info()
    if use_cuda:
        if not torch.cuda.is_available():
            return {"kind": "none", "detected_name": "no CUDA GPU", "catalog_id": None, "count": 0, "cpu": cpu}
        props = torch.cuda.get_device_properties(0)
        smi = nvidia_smi(0)
        power = smi.get("power.limit") if isinstance(smi.get("power.limit"), float) else None
        return {"kind": "gpu", "torch_device": "cuda", "detected_name": props.name,
                "catalog_id": match_gpu(props.name, props.total_memory, power),
                "count": torch.cuda.device_count(), "memory_B": props.total_memory,
                "sm_count": props.multi_processor_count, "compute_capability": f"{props.major}.{props.minor}",
                "nvidia_smi": smi, "cpu": cpu}
    arch = match_cpu_uarch(cpu)
    cat = next((r["catalog_id"] for r in _load("device_match.json")["cpu_rules"]
                if re.search(r["name_regex"], cpu["model_name"] or "")), None)
    return {"kind": "cpu", "torch_device": "cpu", "detected_name": cpu["model_name"],
            "catalog_id": cat, "count": 1, "cpu": cpu,
            "cpu_uarch": {k: arch[k] for k in ("id", "flop_per_cycle_per_core", "source")} if arch else None}


# ------------------------------------------------------------------ GPU state sampled while a kernel runs

#: what :class:`GpuSampler` asks nvidia-smi for: the SM clock, power and temperature, then the clock-event reasons
#: (NVML's nvmlClocksEventReasons, key nvml-clocks-event-reasons: SW Power Cap "The clocks have been optimized to
#: ensure not to exceed currently set power limits"; the thermal and hardware slowdowns; "active" is the bit mask)
SAMPLE_BASE = ("timestamp", "clocks.sm", "clocks.max.sm", "power.draw", "power.limit", "temperature.gpu")
SAMPLE_REASONS = ("active", "sw_power_cap", "sw_thermal_slowdown", "hw_slowdown", "hw_thermal_slowdown",
                  "hw_power_brake_slowdown")
#: the reason names of current drivers first, then the older "throttle" names, then none (clocks and power only)
REASON_PREFIXES = ("clocks_event_reasons", "clocks_throttle_reasons", None)


def _query(exe: str, index: int, fields) -> list[str] | None:
    try:
        r = subprocess.run([exe, f"--id={index}", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    vals = [v.strip() for v in r.stdout.strip().split(",")]
    return vals if r.returncode == 0 and len(vals) == len(fields) else None


def sample_fields(exe: str, index: int = 0) -> list[str] | None:
    """The fields this driver's nvidia-smi answers (a query of an unknown field fails as a whole)."""
    for prefix in REASON_PREFIXES:
        fields = list(SAMPLE_BASE) + ([f"{prefix}.{r}" for r in SAMPLE_REASONS] if prefix else [])
        if _query(exe, index, fields) is not None:
            return fields
    return None


def _value(text: str):
    try:
        return float(text)
    except ValueError:
        return text


class GpuSampler:
    """``with GpuSampler() as s: run()`` polls ``nvidia-smi --query-gpu=... -lms <interval>`` in the background
    while the block runs; ``s.record()`` is then {"fields", "interval_ms", "samples"} (one list of values per
    sample, numbers as numbers, flags as nvidia-smi prints them: "Active" / "Not Active"), or None where there is no
    nvidia-smi (a CPU run) or it answered nothing. Standard library only. Used by runners/lab00.py."""

    def __init__(self, index: int = 0, interval_ms: int = 50):
        self.index, self.interval_ms = index, int(interval_ms)
        self.fields, self.proc, self.samples = None, None, []

    def __enter__(self):
        import threading
        exe = shutil.which("nvidia-smi")
        self.fields = sample_fields(exe, self.index) if exe else None
        self._lines, self._first = [], threading.Event()
        if self.fields:
            try:
                self.proc = subprocess.Popen(
                    [exe, f"--id={self.index}", "--query-gpu=" + ",".join(self.fields),
                     "--format=csv,noheader,nounits", f"--loop-ms={self.interval_ms}"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            except OSError:
                self.proc = None
        if self.proc is not None:
            def read():
                for line in self.proc.stdout:
                    self._lines.append(line)
                    self._first.set()
                self._first.set()
            self._reader = threading.Thread(target=read, daemon=True)
            self._reader.start()
            self._first.wait(timeout=5.0)  # the block starts once nvidia-smi is sampling
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(timeout=5)
            self.samples = parse_samples("".join(self._lines), self.fields)
        return False

    def record(self) -> dict | None:
        if not self.fields or not self.samples:
            return None
        return {"fields": list(self.fields), "interval_ms": self.interval_ms, "samples": self.samples}


def parse_samples(text: str, fields) -> list[list]:
    """nvidia-smi's csv lines (no header, no units) → one list of values per complete line."""
    out = []
    for line in (text or "").splitlines():
        vals = [v.strip() for v in line.split(",")]
        if len(vals) == len(fields):
            out.append([_value(v) for v in vals])
    return out


def clock_evidence(record) -> dict | None:
    """What a sampled record shows: the lowest and median SM clock [MHz], the highest power [W] against the limit,
    the highest temperature, and which clock-event reasons were Active in any sample (by name, e.g.
    ``sw_power_cap``), or None if the reasons were not sampled (an old driver). None for no record."""
    if not record or not record.get("samples"):
        return None
    fields = record["fields"]
    col = {f: i for i, f in enumerate(fields)}

    def nums(f):
        return [s[col[f]] for s in record["samples"] if f in col and isinstance(s[col[f]], (int, float))]
    clocks, power = nums("clocks.sm"), nums("power.draw")
    reasons = None
    names = [f for f in fields if f.split(".")[-1] in SAMPLE_REASONS and not f.endswith(".active")]
    if names:
        reasons = sorted({f.split(".")[-1] for f in names for s in record["samples"]
                          if str(s[col[f]]).strip().lower() == "active"})
    return {"samples": len(record["samples"]),
            "sm_mhz_min": min(clocks) if clocks else None,
            "sm_mhz_median": statistics.median(clocks) if clocks else None,
            "sm_mhz_max_allowed": (nums("clocks.max.sm") or [None])[0],
            "power_w_max": max(power) if power else None, "power_limit_w": (nums("power.limit") or [None])[0],
            "temperature_c_max": max(nums("temperature.gpu"), default=None), "reasons_active": reasons}
