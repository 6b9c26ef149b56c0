"""x4lib.training.calibration: the per-term fits recover known rates, the DP step adds the ring AllReduce over the
measured link, the calibrated plan is the planner's when the rates are the planner's, the term that is off is named,
and the committed Lab 02 run calibrates (the timed 15 % check itself is in tests/test_bare_pod.py)."""
import dataclasses
import json

import pytest

from conftest import run_cli
from x4lib.harness import layer_bench, runs
from x4lib.training import calibration, planner
from x4lib.catalog import specs

SHAPE = {"model": "t", "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "ffn": 128, "seq": 16,
         "micro_batch": 2, "tp": 1, "vocab": 0}
RATE, BW, OPT = 1e10, 1e9, 5e-9  # FLOP/s, B/s, s per parameter


def synthetic_section(rate=RATE, bw=BW):
    """Every op of SHAPE timed exactly by the model: GEMM t = F/rate, element-wise t = Q/bw, on both clocks."""
    ops = []
    for name, (m, n, k) in layer_bench.gemm_shapes(SHAPE).items():
        for pas, (pm, pn, pk) in layer_bench.pass_shapes(m, n, k).items():
            t = 2 * pm * pn * pk / rate
            ops.append({"op": name, "kind": "matmul", "pass": pas, "count": layer_bench.GEMM_COUNT[name],
                        "m": pm, "n": pn, "k": pk, "status": "ok", "times_s": [t], "cpu_times_s": [t]})
    T = SHAPE["micro_batch"] * SHAPE["seq"]
    for name, numel in (("rmsnorm", T * 64), ("swiglu", T * 128), ("residual", T * 64)):
        for pas in ("fwd", "fwd+bwd"):
            t = calibration.BYTES_PER_ELEMENT[name][pas] * numel * 4 / bw
            ops.append({"op": name, "kind": "elementwise", "pass": pas, "count": layer_bench.ELEMENTWISE_COUNT[name],
                        "numel": numel, "status": "ok", "times_s": [t], "cpu_times_s": [t]})
    for pas, t in (("fwd", 1e-4), ("fwd+bwd", 3e-4)):
        ops.append({"op": "attention", "kind": "attention", "pass": pas, "count": 1, "status": "ok", "times_s": [t],
                    "cpu_times_s": [t]})
    n = layer_bench.layer_params(SHAPE)
    ops += [{"op": "adamw", "kind": "optimizer", "pass": "step", "count": 1, "params": n, "status": "ok",
             "times_s": [n * OPT], "cpu_times_s": [n * OPT]},
            {"op": "tiny_add", "kind": "overhead", "pass": "fwd", "count": 1, "calls": 200, "status": "ok",
             "times_s": [200e-6], "cpu_times_s": [200e-6]},
            {"op": "copy", "kind": "copy", "pass": "fwd", "count": 1, "numel": 10**6, "element_bytes": 4,
             "status": "ok", "times_s": [8e6 / bw], "cpu_times_s": [8e6 / bw]},
            {"op": "loopback_tcp", "kind": "link", "pass": "send", "count": 1, "size_B": 10**6, "status": "ok",
             "times_s": [1e-3], "cpu_times_s": [1e-3]}]
    return {"shape": SHAPE, "dtype": "fp32", "threads": 1, "ops": ops}


DEVICE = {"kind": "cpu", "detected_name": "test CPU", "catalog_id": None, "cpu": {"mhz_reported": 1000.0},
          "cpu_uarch": {"id": "x", "flop_per_cycle_per_core": {"fp32": 20}}}


def test_fit_rate_recovers_rate_and_fixed_cost():
    xs = [1e6, 2e6, 5e6, 1e7]
    fit = calibration.fit_rate(xs, [1e-4 + x / 1e9 for x in xs])
    assert fit.rate == pytest.approx(1e9) and fit.intercept_s == pytest.approx(1e-4)
    assert fit.max_abs_residual < 1e-9
    neg = calibration.fit_rate(xs, [x / 1e9 - 1e-4 for x in xs])  # a negative intercept is not a cost
    assert neg.intercept_s == 0


def test_the_calibration_recovers_the_synthetic_rates():
    cal = calibration.calibrate(synthetic_section(), DEVICE, "cpu")
    assert cal.matmul_fit.rate == pytest.approx(RATE) and cal.elementwise_fit.rate == pytest.approx(BW)
    assert cal.peak_flop_per_s == pytest.approx(2e10)  # 1 thread x 20 FLOP/cycle x 1 GHz
    assert cal.matmul_efficiency == pytest.approx(0.5)
    assert cal.optimizer_s_per_param == pytest.approx(OPT) and cal.copy_Bps == pytest.approx(BW)
    assert cal.overhead_per_kernel_s == pytest.approx(1e-6) and cal.link_Bps == pytest.approx(1e9)
    assert cal.attention == {"fwd_s": 1e-4, "bwd_s": pytest.approx(2e-4)}
    gemm_s = sum(r["count"] * 2 * r["m"] * r["n"] * r["k"] / RATE for r in cal.gemm_rows)
    assert cal.layer_s == pytest.approx(gemm_s + 3e-4 + cal.layer_elementwise_s)


def test_the_whole_layer_as_trained_is_the_prediction_and_the_glue_is_what_no_op_measures():
    """A ``layer`` row (harness method 3) replaces the ops' sum in the step; the difference is the glue, per pass."""
    sec = synthetic_section()
    ops_cal = calibration.calibrate(sec, DEVICE, "cpu")
    assert ops_cal.as_trained is None and ops_cal.glue is None and ops_cal.layer_s == ops_cal.ops_layer_s
    fwd, fb = ops_cal.ops_forward_s * 1.1, ops_cal.ops_layer_s * 1.2  # the real layer: 10 % more forward, 20 % in all
    sec["ops"] += [{"op": "layer", "kind": "layer", "pass": p, "count": 1, "amp": "none", "status": "ok",
                    "times_s": [t], "cpu_times_s": [t]} for p, t in (("fwd", fwd), ("fwd+bwd", fb))]
    cal = calibration.calibrate(sec, DEVICE, "cpu")
    assert cal.layer_s == pytest.approx(fb) and cal.layer_forward_s == pytest.approx(fwd)
    assert cal.ops_layer_s == pytest.approx(ops_cal.ops_layer_s)
    assert cal.glue["fwd_s"] == pytest.approx(0.1 * ops_cal.ops_forward_s)
    assert cal.glue["fwd_s"] + cal.glue["bwd_s"] == pytest.approx(0.2 * ops_cal.ops_layer_s)
    assert cal.glue["share"] == pytest.approx(0.2 / 1.2)
    step = calibration.predict_dp_step(cal, 4, 1, ddp=False)
    assert step.forward_s == pytest.approx(4 * fwd) and step.forward_s + step.backward_s == pytest.approx(4 * fb)


def test_element_wise_ops_keep_their_own_time_at_the_calibrated_shape():
    """One line through ops of different kernel counts fits none: the layer sums each op's measured time."""
    sec = synthetic_section()
    for r in sec["ops"]:
        if r["op"] == "rmsnorm":
            r["times_s"] = r["cpu_times_s"] = [3 * r["times_s"][0]]  # an unfused op: three times the ideal bytes
    cal = calibration.calibrate(sec, DEVICE, "cpu")
    measured = sum(r["count"] * r["time_s"] for r in cal.elementwise_rows if r["pass"] == "fwd+bwd")
    assert cal.layer_elementwise_s == pytest.approx(measured)
    assert any(abs(r["fitted_s"] / r["time_s"] - 1) > 0.1 for r in cal.elementwise_rows)


def test_the_dp_step_adds_the_ring_allreduce_over_the_link():
    cal = calibration.calibrate(synthetic_section(), DEVICE, "cpu")
    alone = calibration.predict_dp_step(cal, 3, 1, ddp=False)
    assert alone.allreduce_s == 0 and alone.ddp_copies_s == 0
    assert alone.step_s == pytest.approx(3 * cal.layer_s + 3 * layer_bench.layer_params(SHAPE) * OPT)
    one, two = calibration.predict_dp_step(cal, 3, 1), calibration.predict_dp_step(cal, 3, 2)
    grads_B = 3 * layer_bench.layer_params(SHAPE) * 4
    assert two.allreduce_s == pytest.approx(2 * (2 - 1) / 2 * grads_B / 1e9)  # ring: 2(n-1)/n · S / B
    # DDP's passes over the gradients at the copy bandwidth (1e9 B/s here): into the buckets and back (4 G read +
    # written) on one process; the ring's additions (3 G (n-1)/n) with a peer
    assert one.ddp_copies_s == pytest.approx(4 * grads_B / 1e9)
    assert two.ddp_copies_s == pytest.approx((4 + 1.5) * grads_B / 1e9)
    assert two.step_s == pytest.approx(alone.step_s + two.allreduce_s + two.ddp_copies_s)
    assert two.terms()["backward"] == pytest.approx(two.backward_s + two.allreduce_s + two.ddp_copies_s)


def test_a_failed_op_or_a_missing_clock_refuses_to_calibrate():
    sec = synthetic_section()
    sec["ops"][0] = {**sec["ops"][0], "status": "oom", "error": "out of memory"}
    with pytest.raises(calibration.CalibrationError, match="oom"):
        calibration.calibrate(sec, DEVICE, "cpu")
    sec = synthetic_section()
    for r in sec["ops"]:
        r.pop("cpu_times_s")
    with pytest.raises(calibration.CalibrationError, match="CPU-clock"):
        calibration.calibrate(sec, DEVICE, "cpu")


def test_off_term_names_the_term_furthest_away():
    pred = {"forward": 1.0, "backward": 2.0, "optimizer": 0.5}
    assert calibration.off_term({"forward": 1.05, "backward": 2.1, "optimizer": 0.5}, pred)[0] is None
    off, ratios = calibration.off_term({"forward": 1.05, "backward": 3.0, "optimizer": 0.5}, pred)
    assert off == "backward" and ratios["backward"] == pytest.approx(1.5)


def test_the_calibrated_plan_is_the_planners_when_the_rates_are_its_own():
    h100 = specs.get("h100-sxm")
    mdl = planner.Model(params=8e9, layers=32, hidden=4096, heads=32, kv_heads=8, seq=4096, ffn=14336)
    plan = planner.evaluate(mdl, planner.Layout(1, 1, 8, 1, 1, 1, "none"), h100, 8 * 4096 * 4)
    cal = calibration.calibrate(synthetic_section(), {**DEVICE, "catalog_id": "h100-sxm"}, "cpu")
    # efficiency equal to the planner's and element-wise at the full copy bandwidth: nothing changes
    flop = sum(r["count"] * r["flop"] for r in cal.gemm_rows)
    same = dataclasses.replace(cal, peak_flop_per_s=flop / cal.layer_gemm_s / plan.matmul_efficiency, copy_Bps=BW)
    out, warnings = calibration.calibrated_plan(plan, same)
    assert out.step_s == pytest.approx(plan.step_s) and warnings == []
    half = dataclasses.replace(same, peak_flop_per_s=same.peak_flop_per_s * 2)  # half the efficiency
    slower, _ = calibration.calibrated_plan(plan, half)
    assert slower.compute_s == pytest.approx(2 * plan.compute_s) and slower.step_s > plan.step_s


def committed_run():
    dirs = [d for d in runs.committed_dirs("lab02")
            if json.loads((d / "results.json").read_text())["device"]["kind"] == "cpu"]
    if not dirs:
        pytest.skip("no committed Lab 02 run on a CPU")
    return dirs[0]


def test_the_committed_run_calibrates_and_checks():
    d = committed_run()
    cal = calibration.load(d)
    assert cal.clock == "cpu" and cal.layer_s > 0 and 0 < cal.matmul_efficiency < 1.5
    rows = calibration.check_rows(d)
    assert [r["ranks"] for r in rows] == [1, 2] and all(r["measured_s"] > 0 for r in rows)


def test_plan_with_calibration_prints_both_steps_and_refuses_a_bad_run(tmp_path):
    d = committed_run()
    base = ["plan", "--params", "8e9", "--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads", "8",
            "--ffn", "14336", "--seq", "8192", "--global-batch-tokens", "4194304", "--tokens", "1e12",
            "--device", "h100-sxm", "--gpus", "64", "--tp", "1", "--pp", "1", "--cp", "1", "--zero", "1",
            "--micro-batch", "1", "--recompute", "selective"]
    r = run_cli(*base, "--calibration", str(d), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["calibrated"]["uncalibrated_step_time_s"] == pytest.approx(doc["step_time_s"])
    assert doc["calibrated"]["step_time_s"] > 0 and doc["calibrated"]["warnings"]  # measured on a CPU
    r = run_cli(*base, "--calibration", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "results.json" in r.stderr


def test_the_doctor_sets_each_term_beside_the_plan():
    d = committed_run()
    r = run_cli("doctor", "--from", str(d / "results.json"), "--json")
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    rules = [f["rule"] for f in doc["findings"]]
    assert len(rules) == 2 and set(rules) <= {"lab02-term-off", "lab02-terms-agree"}
    assert all(len(f["evidence"]) == 3 for f in doc["findings"])
