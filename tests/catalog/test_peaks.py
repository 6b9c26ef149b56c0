"""x4lib.catalog.peaks: units × FLOP per clock × clock against the catalog, the detected CPU, and the `peak` command."""
import json

import jsonschema
import pytest

from conftest import load_schema, run_cli
from test_cli import check_usage_error
from x4lib.book import bib
from x4lib.harness import device
from x4lib import paths
from x4lib.catalog import peaks, specs

# A KVM guest as seen by the machine that builds the book: model 167 (Rocket Lake) with AMX and AVX512_FP16 flags.
CPUINFO_VM = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 167
model name\t: Intel(R) Xeon(R) Processor
cpu MHz\t\t: 2600.000
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu avx avx2 fma hypervisor avx512f avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 167
model name\t: Intel(R) Xeon(R) Processor
cpu MHz\t\t: 2600.000
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu avx avx2 fma hypervisor avx512f avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8
"""
ROCKET_LAKE = CPUINFO_VM.replace(" hypervisor avx512f avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8", " avx512f")
MASKED = CPUINFO_VM.replace("avx512f avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8", "")
UNKNOWN = CPUINFO_VM.replace("model\t\t: 167", "model\t\t: 250").replace(
    " hypervisor avx512f avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8", "")


def test_the_h100_bf16_peak_is_132_sms_of_4096_flop_at_1830_mhz():
    c = peaks.check("h100-sxm", "bf16")
    assert (c.basis.units, c.basis.flop_per_clock_per_unit, c.basis.clock_hz) == (132, 4096, 1.83e9)
    assert c.computed_flop_per_s == pytest.approx(132 * 4096 * 1.83e9)
    assert c.status == "reproduces" and c.ratio == pytest.approx(1, abs=1e-4)


def test_every_rebuilt_peak_reproduces_within_the_tolerance_or_says_why():
    checks = peaks.check_catalog()
    assert len({c.basis.device for c in checks}) >= 15
    for c in checks:
        assert c.status in ("reproduces", "flagged"), (c.basis.device, c.basis.dtype, c.ratio)
        if c.status == "flagged":
            assert c.reason and abs(c.ratio - 1) > peaks.tolerance()


def test_trainium_is_flagged_with_the_clock_its_figure_implies():
    c = peaks.check("trn1", "bf16")
    assert c.status == "flagged" and c.ratio == pytest.approx(2 * 32768 * 2.8e9 / 190e12)
    assert "2.9 GHz" in c.reason
    implied = peaks.implied_clock_hz(190e12, 2, peaks.systolic_flop_per_clock(128, 128))
    assert implied == pytest.approx(2.899e9, rel=1e-3)


def test_a_systolic_array_does_two_flop_per_pe_per_clock():
    assert peaks.systolic_flop_per_clock(128, 128) == 32768
    assert peaks.systolic_flop_per_clock(256, 256) * 8 * 1.75e9 == pytest.approx(1835e12, rel=1e-3)  # Gaudi 3
    with pytest.raises(ValueError):
        peaks.systolic_flop_per_clock(0, 128)


def test_a_clock_override_gives_the_shipping_gaudi3_peak_and_is_not_a_failure():
    c = peaks.check("gaudi3", "bf16", clock_hz=1.6e9)
    assert c.computed_flop_per_s / 1e12 == pytest.approx(1677.7, abs=0.1)
    assert c.status == "flagged" and c.basis.clock_kind == "given"


def test_no_basis_is_a_usage_error_not_a_guess():
    with pytest.raises(specs.UnsupportedDtypeError, match="no first-principles basis"):
        peaks.check("wse-3", "bf16")
    with pytest.raises(specs.UnsupportedDtypeError, match="it has one for"):
        peaks.check("tpu-v4", "fp8")


def test_the_vm_that_reports_rocket_lake_but_has_amx_is_taken_for_sapphire_rapids():
    cpu = peaks.local_cpu(device.cpu_info(CPUINFO_VM))
    assert (cpu.by_model, cpu.by_flags, cpu.uarch_id) == ("icelake-client", "sapphire-rapids", "sapphire-rapids")
    assert cpu.cores == 2 and cpu.fma_units == 2 and cpu.vector_bits == 512
    assert cpu.flop_per_cycle_per_core["fp32"] == 64 and cpu.flop_per_cycle_per_core["bf16"] == 1024
    said = " ".join(cpu.assumptions)
    assert "model 167" in said and "virtual machine" in said
    c = peaks.check("local", "fp32", cpuinfo_text=CPUINFO_VM)
    assert c.computed_flop_per_s == pytest.approx(2 * 64 * 2.6e9) and c.catalog_flop_per_s is None


def test_a_real_rocket_lake_keeps_its_table_entry():
    cpu = peaks.local_cpu(device.cpu_info(ROCKET_LAKE))
    assert cpu.uarch_id == "icelake-client" and cpu.flop_per_cycle_per_core == {"fp64": 16, "fp32": 32}
    assert not any("model number" in a for a in cpu.assumptions)


def test_vectors_the_os_does_not_expose_are_not_counted():
    cpu = peaks.local_cpu(device.cpu_info(MASKED))        # model 167, avx2/fma only: AVX-512 hidden
    assert cpu.vector_bits == 256 and cpu.flop_per_cycle_per_core["fp32"] == 16  # 1 FMA unit x 256 bit x 2
    assert any("exposes only 256-bit" in a for a in cpu.assumptions)


def test_an_unknown_cpu_gets_a_stated_generic_assumption():
    cpu = peaks.local_cpu(device.cpu_info(UNKNOWN))
    assert cpu.uarch_id is None and cpu.flop_per_cycle_per_core["fp32"] == 32
    assert any("no microarchitecture" in a for a in cpu.assumptions)
    with pytest.raises(specs.UnsupportedDtypeError, match="no bf16 rate"):
        cpu.basis("bf16")


def test_the_laptop_cpu_is_compared_with_its_catalog_record():
    i5 = """processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 142
model name\t: Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz\ncpu MHz\t\t: 1600.000\nphysical id\t: 0\ncore id\t\t: 0
flags\t\t: fpu avx avx2 fma\n"""
    c = peaks.check("local", "fp32", cpuinfo_text=i5)
    assert c.catalog_field == "fp32_tflops" and c.computed_flop_per_s == pytest.approx(32 * 1.6e9)


def test_every_source_of_a_basis_is_in_the_bibliography():
    keys = bib.book_keys()
    assert {c.basis.source for c in peaks.check_catalog()} <= keys


def _check_peak_json(r):
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, load_schema("peak_output.schema.json"))
    assert doc["computed_tflops"] == pytest.approx(doc["units"] * doc["flop_per_clock_per_unit"] *
                                                   doc["clock_mhz"] / 1e6)
    return doc


@pytest.mark.parametrize("device_id", ["h100-sxm", "trn2"])
def test_peak_json_matches_its_contract(device_id):
    _check_peak_json(run_cli("peak", "--device", device_id, "--dtype", "bf16", "--json"))


def test_the_local_peak_answers_for_every_precision_this_cpu_reports():
    """Whatever CPU runs this: fp64 and fp32 always, plus every dtype its flags give a unit for; a dtype it has
    no unit for is a one-line usage error naming what it has, never a crash."""
    cpu = peaks.local_cpu()
    assert {"fp64", "fp32"} <= set(cpu.dtypes())
    assert 1 <= cpu.cores <= cpu.logical_cpus
    for dtype in cpu.dtypes():
        doc = _check_peak_json(run_cli("peak", "--device", "local", "--dtype", dtype, "--json"))
        assert doc["units"] == cpu.cores and doc["flop_per_clock_per_unit"] > 0 and doc["origin"] == "detected"
        assert doc["status"] in ("reproduces", "flagged", "no catalog figure")
    missing = [d for d in ("bf16", "fp16", "int8") if d not in cpu.dtypes()]
    if missing:
        check_usage_error(run_cli("peak", "--device", "local", "--dtype", missing[0]), "its flags show no unit")


# An AMD EPYC 9004 (Zen 4) KVM guest: AVX-512 with BF16, no AMX, 2 cores of 1 thread each.
ZEN4 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9454 48-Core Processor
cpu MHz\t\t: 2750.000
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse2 avx avx2 fma hypervisor avx512f avx512bw avx512_bf16 avx512_vnni

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9454 48-Core Processor
cpu MHz\t\t: 2750.000
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu sse2 avx avx2 fma hypervisor avx512f avx512bw avx512_bf16 avx512_vnni
"""


def test_zen4_gets_its_bf16_rate_from_the_avx512_bf16_flag():
    cpu = peaks.local_cpu(device.cpu_info(ZEN4))
    assert cpu.uarch_id == "zen4" and cpu.vector_bits == 256     # 512-bit work double-pumped on 256-bit pipes
    assert cpu.flop_per_cycle_per_core == {"fp64": 16, "fp32": 32, "bf16": 64}
    b = cpu.basis("bf16")
    assert b.flop_per_s == pytest.approx(2 * 64 * 2.75e9) and b.source == "intel-optimization-manual"
    assert "FMA unit" in b.unit_name and any("avx512_bf16" in a for a in cpu.assumptions)
    with pytest.raises(specs.UnsupportedDtypeError, match="no fp16 rate"):
        cpu.basis("fp16")


def test_an_unknown_cpu_gets_the_peaks_its_flags_imply():
    # a future core (vendor and family in no table entry) with AVX-512 FP16/BF16 and AMX
    amx = UNKNOWN.replace("GenuineIntel", "AuthenticAMD").replace("cpu family\t: 6", "cpu family\t: 99").replace(
        "flags\t\t: fpu avx avx2 fma", "flags\t\t: fpu avx avx2 fma avx512f avx512_bf16 avx512_fp16 amx_tile amx_bf16 "
                                       "amx_int8")
    cpu = peaks.local_cpu(device.cpu_info(amx))
    assert cpu.uarch_id is None and cpu.vector_bits == 512 and cpu.matrix_unit == "AMX (TMUL)"
    assert cpu.flop_per_cycle_per_core == {"fp64": 32, "fp32": 64, "fp16": 128, "bf16": 1024, "int8": 2048}
    assert cpu.basis("bf16").source == "pytorch-amx-recipe" and "AMX" in cpu.basis("bf16").unit_name
    assert "FMA unit" in cpu.basis("fp16").unit_name


def test_hardware_threads_are_not_counted_as_cores():
    smt = "\n".join(CPUINFO_VM.replace("core id\t\t: 1", "core id\t\t: 0").split("\n"))
    cpu = peaks.local_cpu(device.cpu_info(smt))       # two logical CPUs on one core
    assert (cpu.cores, cpu.logical_cpus) == (1, 2)


def test_every_flag_rule_names_a_source_in_the_bibliography():
    rules = json.loads((paths.DATA_DIR / "cpu_uarch.json").read_text(encoding="utf-8"))["isa_rules"]
    keys = bib.book_keys()
    sources = [rules["vector_fma"]["source"], rules["matrix"]["source"], *(r["source"] for r in rules["vector_dtypes"])]
    assert set(sources) <= keys
    for r in [rules["vector_fma"], rules["matrix"], *rules["vector_dtypes"]]:
        assert r["rule"] and r["note"] and r["accessed"]


@pytest.mark.parametrize("args,needles", [
    (["peak", "--device", "h999", "--dtype", "bf16"], ["unknown device 'h999'"]),
    (["peak", "--device", "h100-sxm", "--dtype", "fp7"], ["unknown dtype 'fp7'"]),
    (["peak", "--device", "tpu-v5e", "--dtype", "fp8"], ["no first-principles basis"]),
    (["peak", "--device", "h100-sxm", "--dtype", "bf16", "--clock-mhz", "nan"], ["not a finite number"]),
    (["peak", "--device", "h100-sxm", "--dtype", "bf16", "--clock-mhz", "0"], ["must be > 0"]),
    (["peak", "--device", "h100-sxm"], ["--dtype"]),
])
def test_bad_peak_input_exits_2_with_one_line(args, needles):
    check_usage_error(run_cli(*args), *needles)


@pytest.mark.parametrize("device_id", ["b300", "gb300", "h100-sxm", "b200", "tpu-v5p"])
def test_clocks_solved_from_the_published_peak_are_labelled_implied(device_id):
    # NVIDIA and Google print no Tensor clock for these; the catalog solves f = P / (U F), so the check cannot fail
    b = peaks.basis(device_id, "bf16")
    assert b.clock_kind == "implied" and b.clock_solved
    assert abs(peaks.check(device_id, "bf16").ratio - 1) < 2e-4


def test_a_printed_clock_is_not_counted_as_solved():
    assert not peaks.basis("a100-sxm-80gb", "bf16").clock_solved      # whitepaper's 1410 MHz boost
    assert not peaks.basis("gaudi3", "bf16", clock_hz=1.6e9).clock_solved   # a given clock
    assert peaks.basis("gaudi3", "bf16").clock_solved                 # planned: back-calculated from 1835
