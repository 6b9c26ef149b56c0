"""x4lib.compute.matmul: the achievable-rate model, checked by hand arithmetic, its calibration rules, its data file's
validation and the matmul-predict command line."""
import dataclasses
import json
import math

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.compute import kernels, matmul, matmul_validation
from x4lib.catalog import specs


def toy_target(units=4, peak=4e12, bw=1e12, tiles=((128, 128),), overhead_s=0.0, floor_s=0.0, fill_s=0.0):
    fam = dataclasses.replace(matmul.constants().families["nvidia_hopper"], tiles={"default": tuple(tiles)},
                              overhead_s=overhead_s, launch_floor_s=floor_s, tile_latency_s=fill_s)
    return matmul.Target("toy", "bf16", peak, bw, units, fam)


ONE = matmul.Eta(1.0, "trial", ())


def test_one_full_wave_by_hand():
    p = matmul.predict_target(toy_target(), 256, 256, 1024, ONE)
    assert (p.tiles, p.waves, p.tile) == (4, 1, (128, 128))
    assert p.t_compute_s == pytest.approx(2 * 128 * 128 * 1024 / 1e12)          # one tile per unit at P/U
    assert p.t_memory_s == pytest.approx((256 * 1024 * 2 + 256 * 256) * 2 / 1e12)  # φ = 1 on a toy target
    assert p.rate_flop_per_s == pytest.approx(2 * 256**2 * 1024 / p.t_compute_s)  # full wave: the whole peak
    assert p.wave_efficiency == pytest.approx(1.0) and p.bound == "compute"


def test_each_wave_pays_the_pipeline_fill_on_top_of_max_compute_memory():
    # 9 tiles over 4 units: 3 waves, each waiting once for its first operands and its stores (t_f = 1 µs)
    p = matmul.predict_target(toy_target(fill_s=1e-6), 384, 384, 64, ONE)
    assert p.waves == 3 and p.t_pipeline_s == pytest.approx(3e-6)
    assert p.time_s == pytest.approx(3e-6 + max(p.t_compute_s, p.t_memory_s))
    # and the fill decides the tile: one 256-wide wave beats three 128-wide ones once the fill is paid per wave
    two = toy_target(tiles=((128, 128), (128, 256)), fill_s=5e-6, units=4)
    assert matmul.predict_target(two, 256, 512, 64, ONE).tile == (128, 256)


def test_the_pipeline_fill_is_hoppers_only_and_never_paid_by_fp32_simt():
    fams = matmul.constants().families
    assert fams["nvidia_hopper"].tile_latency_for("bf16") == pytest.approx(0.74e-6)
    assert fams["nvidia_hopper"].tile_latency_for("fp32") == 0.0            # CUDA cores: no tiles modelled
    assert all(f.tile_latency_s == 0.0 for k, f in fams.items() if k != "nvidia_hopper")


def test_a_partial_tile_and_a_partial_wave_cost_whole_ones():
    p = matmul.predict_target(toy_target(), 384, 300, 1024, ONE)  # 3 × 3 tiles (300 pads to 384) → 3 waves of 4
    assert (p.tiles, p.waves) == (9, 3)
    assert p.wave_efficiency == pytest.approx(384 * 300 / (3 * 4 * 128 * 128))
    assert p.efficiency == pytest.approx(p.wave_efficiency)


def test_the_library_picks_the_tile_that_finishes_first():
    p = matmul.predict_target(toy_target(tiles=((256, 128), (128, 128))), 128, 512, 1024, ONE)
    # 256x128 pads m=128 to 256 (2 tiles), 128x256 (the other orientation) fits exactly in 2 tiles: same waves
    assert p.tile in {(128, 256), (128, 128)} and p.wave_efficiency == pytest.approx(1.0)


def test_fixed_costs_and_the_launch_floor():
    tg = toy_target(overhead_s=3e-6, floor_s=12.5e-6)
    small = matmul.predict_target(tg, 128, 128, 128, ONE)
    assert small.time_s == pytest.approx(12.5e-6) and small.bound == "launch"
    big = matmul.predict_target(tg, 512, 512, 8192, ONE)
    assert big.time_s == pytest.approx(3e-6 + max(big.t_compute_s, big.t_memory_s))
    synced = matmul.predict_target(tg, 128, 128, 128, ONE, timing="synced")  # one call per synchronisation
    assert synced.time_s == pytest.approx(12.5e-6 + 3e-6 + max(synced.t_compute_s, synced.t_memory_s))
    graph = matmul.predict_target(tg, 128, 128, 128, ONE, timing="graph")  # a CUDA graph: no host floor
    assert graph.time_s == pytest.approx(graph.overhead_s + max(graph.t_compute_s, graph.t_memory_s))
    assert graph.time_s < small.time_s
    with pytest.raises(ValueError, match="timing"):
        matmul.predict_target(tg, 128, 128, 128, ONE, timing="events")


def test_a_matrix_vector_product_is_memory_bound_at_the_achievable_bandwidth():
    p = matmul.predict("h100-sxm", "bf16", 1, 8192, 8192)
    assert p.bound == "memory"
    assert p.rate_flop_per_s <= kernels.matmul_intensity(1, 8192, 8192, 2) * specs.get("h100-sxm").memory_bw_Bps
    tg = p.target
    assert 0.5 < tg.memory_fraction < 1 and "published copy/triad" in tg.memory_basis
    assert p.t_memory_s == pytest.approx(matmul.gemm_bytes(1, 8192, 8192, "bf16") / tg.achievable_bw_Bps)
    mine = matmul.predict("h100-sxm", "bf16", 1, 8192, 8192, memory_bw_Bps=3.0e12)  # a triad measured here
    assert mine.t_memory_s == pytest.approx(matmul.gemm_bytes(1, 8192, 8192, "bf16") / 3.0e12)


def test_fp8_writes_bf16_and_has_its_own_eta():
    assert matmul.gemm_bytes(64, 128, 256, "fp8_e4m3") == (64 * 256 + 256 * 128) * 1 + 64 * 128 * 2
    e8, e16 = matmul.eta_for("nvidia_hopper", precision="fp8"), matmul.eta_for("nvidia_hopper")
    assert e8.precision == "fp8" and e16.precision == "other" and e8.value != e16.value
    assert matmul.predict("h100-sxm", "fp8_e4m3", 8192, 8192, 8192).eta.precision == "fp8"


def test_bound_names_quantisation_and_the_json_names_the_clock():
    p = matmul.predict("h100-sxm", "bf16", 8192 + 128, 8192, 8192)
    j = p.to_json()
    assert j["assumed_clock_mhz"] == pytest.approx(1830) and j["basis"]["timing"] == "queued"
    wasted = matmul.predict_target(toy_target(units=4), 128 * 5, 128, 8192, ONE)  # 5 tiles on 4 units: 2 waves
    assert wasted.waves == 2 and wasted.bound == "quantisation"


def test_sourced_clocks_set_the_clock_ratio():
    mi = matmul.target("mi300x", "bf16")
    assert mi.clock_ratio == pytest.approx(1207 / 2100)
    assert matmul.target("gaudi3", "fp8").clock_ratio == pytest.approx(1600 / 1750)
    assert matmul.target("h100-sxm", "bf16").clock_ratio == 1.0
    assert matmul.target("mi300x", "bf16", use_clock=False).clock_ratio == 1.0


def test_the_best_shape_fills_its_waves_and_beats_a_square():
    b = matmul.best("h100-sxm", "bf16", max_dim=8192)
    assert b.wave_efficiency >= 0.99
    assert b.rate_flop_per_s >= matmul.predict("h100-sxm", "bf16", 8192, 8192, 8192).rate_flop_per_s
    assert max(b.m, b.n, b.k) <= 8192 and b.m % 256 == b.n % 256 == b.k % 256 == 0


def test_inverting_a_published_rate_gives_back_its_eta():
    meas = next(m for m in matmul.measurements() if m.id == "amd-maf-mi300x-bf16")
    eta = matmul.implied_eta(meas)
    tg = matmul.target("mi300x", "bf16")
    again = matmul.predict_target(tg, *meas.shape, matmul.Eta(eta, "trial", ()))
    assert again.rate_flop_per_s == pytest.approx(meas.rate_flop_per_s, rel=1e-6)


def test_a_device_is_never_calibrated_on_itself():
    for c in matmul_validation.leave_one_out():
        assert c.measurement.device not in c.prediction.eta.devices, c.measurement.id
    gaudi = matmul.eta_for("intel_gaudi")
    assert gaudi.how == "other families" and "gaudi3" not in gaudi.devices
    hopper = matmul.eta_for("nvidia_hopper")
    assert hopper.how == "family" and set(hopper.devices) == {"h100-sxm", "h200-sxm", "h100-pcie"}
    assert matmul.eta_for("cpu").how == "uncalibrated"


def test_shapes_are_parsed_strictly():
    assert matmul.parse_shape("8192x4096×1024") == (8192, 4096, 1024)
    for bad in ("8192x8192", "0x1x1", "axbxc", "1.5x2x3", "2000000x1x1", ""):
        with pytest.raises(ValueError, match="bad shape"):
            matmul.parse_shape(bad)


# ------------------------------------------------------------------------------------------- command line

def test_matmul_predict_json_matches_its_contract():
    r = run_cli("matmul-predict", "--device", "h100-sxm", "--dtype", "bf16", "--shape", "8192x8192x8192", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("matmul_predict_output.schema.json"))
    assert (data["m"], data["n"], data["k"], data["best"]) == (8192, 8192, 8192, False)
    assert data["efficiency"] == pytest.approx(data["predicted_tflops"] / data["peak_tflops"])
    assert data["basis"]["time_us"] * 1e-6 == pytest.approx(2 * 8192**3 / (data["predicted_tflops"] * 1e12))


def test_matmul_predict_graph_drops_the_host_floor_and_says_where_t0_comes_from():
    args = ("matmul-predict", "--device", "h100-sxm", "--shape", "256x256x256", "--json")
    queued, graph = (json.loads(run_cli(*a).stdout) for a in (args, args + ("--graph",)))
    jsonschema.validate(graph, load_schema("matmul_predict_output.schema.json"))
    assert graph["basis"]["timing"] == "graph" and queued["basis"]["timing"] == "queued"
    assert graph["predicted_tflops"] > queued["predicted_tflops"] and queued["bound"] == "launch"
    assert graph["basis"]["overhead_basis"] and queued["basis"]["overhead_basis"].startswith("the family's")
    text = run_cli(*args[:-1], "--graph").stdout
    assert "in a CUDA graph" in text and "launch floor" not in text


def test_matmul_predict_best_gives_a_shape_and_a_rate():
    r = run_cli("matmul-predict", "--device", "mi300x", "--dtype", "fp8", "--best", "--max-dim", "4096", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("matmul_predict_output.schema.json"))
    assert data["best"] and data["dtype"] == "fp8_e4m3" and max(data["m"], data["n"], data["k"]) <= 4096
    assert data["basis"]["clock_ratio"] == pytest.approx(1230 / 2100)


@pytest.mark.parametrize("args,needle", [
    (["--device", "h900", "--shape", "8x8x8"], "unknown device 'h900'"),
    (["--device", "a100-sxm-80gb", "--dtype", "fp8", "--shape", "8x8x8"], "no published fp8_e4m3 peak"),
    (["--device", "h100-sxm", "--shape", "8192x8192"], "bad shape"),
    (["--device", "h100-sxm", "--shape", "0x8x8"], "bad shape"),
    (["--device", "tpu-v5e", "--dtype", "fp8", "--shape", "8x8x8"], "no published fp8_e4m3 peak"),
    (["--device", "groq-lpu", "--dtype", "fp16", "--shape", "8x8x8"], "no matmul model for device 'groq-lpu'"),
    (["--device", "h100-sxm"], "one of the arguments --shape --best is required"),
    (["--device", "h100-sxm", "--best", "--max-dim", "nan"], "not a finite number"),
])
def test_bad_input_is_exit_2_with_one_line(args, needle):
    r = run_cli("matmul-predict", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert lines[0].startswith("usage:") and "error:" in lines[-1] and needle in r.stderr, r.stderr


def test_the_text_output_names_the_mechanisms():
    r = run_cli("matmul-predict", "--device", "gaudi3", "--shape", "16384x4096x768")
    assert r.returncode == 0, r.stderr
    assert "shipping clock 1600 MHz" in r.stdout and "MMEs" in r.stdout and "η =" in r.stdout
    assert math.isfinite(float(r.stdout.split("predicted ")[1].split(" TFLOP/s")[0].replace(",", "")))
