"""x4lib.harness.device: detection of recorded GPU and CPU descriptions, mapped to the catalog."""
import json

import pytest

from conftest import ROOT
from x4lib.book import bib
from x4lib.harness import device


@pytest.mark.parametrize("name,mem_gib,power,expected", [
    ("NVIDIA H100 80GB HBM3", 79.1, 700, "h100-sxm"),
    ("NVIDIA H100 PCIe", 79.6, 350, "h100-pcie"),
    ("NVIDIA H100 NVL", 93.1, 400, "h100-nvl"),
    ("NVIDIA H200", 139.8, 700, "h200-sxm"),
    ("NVIDIA A100-SXM4-80GB", 79.2, 400, "a100-sxm-80gb"),
    ("NVIDIA A100-SXM4-40GB", 39.4, 400, "a100-sxm-40gb"),
    ("NVIDIA A100 80GB PCIe", 79.2, 300, "a100-pcie-80gb"),
    ("NVIDIA A100-PCIE-40GB", 39.4, 250, None),      # not in the catalog: runs unlabelled by catalog
    ("NVIDIA GeForce RTX 4090", 23.6, 450, None),
    ("NVIDIA H100 80GB HBM3", 79.1, 350, None),      # an SXM name with a PCIe power limit: refuse to guess
])
def test_gpu_detection_maps_recorded_names(name, mem_gib, power, expected):
    assert device.match_gpu(name, mem_gib * 2**30, power) == expected


CPUINFO_I5 = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 142
model name\t: Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz
physical id\t: 0
core id\t\t: 0
cpu MHz\t\t: 1800.000
flags\t\t: fpu avx2 fma

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 142
model name\t: Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz
physical id\t: 0
core id\t\t: 0
"""


def test_cpu_detection_counts_physical_cores_and_finds_the_microarchitecture():
    info = device.cpu_info(CPUINFO_I5)
    assert info["logical_cpus"] == 2 and info["physical_cores"] == 1
    arch = device.match_cpu_uarch(info)
    assert arch is not None and arch["flop_per_cycle_per_core"]["fp32"] == 32


def test_arm_cpus_match_by_implementer_and_part():
    info = device.cpu_info("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n")
    arch = device.match_cpu_uarch(info)
    assert arch is not None and arch["id"] == "neoverse-v2"


def test_every_microarchitecture_cites_the_bibliography():
    keys = bib.book_keys()
    for arch in json.loads((ROOT / "x4lib" / "data" / "cpu_uarch.json").read_text())["microarchitectures"]:
        assert arch["source"] in keys, arch["id"]
        assert arch["flop_per_cycle_per_core"]["fp32"] == 2 * arch["flop_per_cycle_per_core"]["fp64"], arch["id"]


def test_caches_are_read_from_sysfs_without_instruction_caches(tmp_path):
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                             (3, "Unified", "480M")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    caches = device.cpu_caches(tmp_path)
    assert [(c["level"], c["size_B"]) for c in caches] == [(1, 48 * 2**10), (2, 2 * 2**20), (3, 480 * 2**20)]
    assert device.cpu_caches(tmp_path / "missing") == []


def test_the_gpu_sampler_records_nothing_without_nvidia_smi(monkeypatch):
    monkeypatch.setattr(device.shutil, "which", lambda name: None)
    with device.GpuSampler() as s:
        pass
    assert s.record() is None and device.clock_evidence(None) is None


SAMPLED = ("2026/11/26 13:30:50.100, 1410, 1980, 690.5, 700.00, 55, 0x0000000000000004, Active, Not Active\n"
           "2026/11/26 13:30:50.150, 1500, 1980, 650.0, 700.00, 56, 0x0000000000000000, Not Active, Not Active\n"
           "a line cut short, 1500\n")
FIELDS = ["timestamp", "clocks.sm", "clocks.max.sm", "power.draw", "power.limit", "temperature.gpu",
          "clocks_event_reasons.active", "clocks_event_reasons.sw_power_cap",
          "clocks_event_reasons.sw_thermal_slowdown"]


def test_clock_evidence_names_only_the_reasons_that_were_active():
    rec = {"fields": FIELDS, "interval_ms": 50, "samples": device.parse_samples(SAMPLED, FIELDS)}
    ev = device.clock_evidence(rec)
    assert ev["samples"] == 2 and ev["sm_mhz_min"] == 1410 and ev["power_w_max"] == 690.5
    assert ev["reasons_active"] == ["sw_power_cap"] and ev["temperature_c_max"] == 56
    quiet = {**rec, "samples": [s for s in rec["samples"] if s[7] == "Not Active"]}
    assert device.clock_evidence(quiet)["reasons_active"] == []
    no_reasons = {"fields": FIELDS[:6], "interval_ms": 50, "samples": [s[:6] for s in rec["samples"]]}
    assert device.clock_evidence(no_reasons)["reasons_active"] is None


def test_the_runner_says_power_limit_only_when_sw_power_cap_was_active():
    from runners import lab00
    rec = {"fields": FIELDS, "interval_ms": 50, "samples": device.parse_samples(SAMPLED, FIELDS)}
    row = {"dtype": "bf16", "m": 16384, "n": 16384, "k": 16384, "gpu_samples": rec}
    (w,) = lab00.clock_warnings([row])
    assert "1410 MHz" in w and "sw_power_cap" in w
    quiet = {**row, "gpu_samples": {**rec, "samples": [s for s in rec["samples"] if s[7] == "Not Active"]}}
    (w,) = lab00.clock_warnings([quiet])
    assert "no clock-event reason Active" in w and "power" not in w.split(";")[1]
    assert lab00.clock_warnings([{**row, "gpu_samples": None}]) == []  # a CPU run: nothing sampled, nothing said
