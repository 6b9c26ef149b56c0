"""The command line as a user meets it: output contracts, and one clear line for each bad input."""
import json

import jsonschema
import pytest

from conftest import load_schema, run_cli


def check_usage_error(r, *needles):
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert lines[0].startswith("usage:")
    assert "error:" in lines[-1]
    for n in needles:
        assert n in r.stderr, r.stderr


def test_specs_json_matches_its_contract():
    r = run_cli("specs", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("specs_output.schema.json"))
    h100 = next(d for d in data if d["id"] == "h100-sxm")
    assert h100["values"]["bf16_dense_tflops"]["unit"] == "TFLOP/s"
    assert h100["values"]["scaleup_bw_gb_s_per_direction"]["direction"] == "per_direction"


def test_specs_one_device_shows_sources():
    r = run_cli("specs", "h100-sxm")
    assert r.returncode == 0 and "nvidia-h100-datasheet" in r.stdout


def test_roofline_json_matches_its_contract():
    r = run_cli("roofline", "--device", "h100-sxm", "--dtype", "bf16", "--intensity", "100", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("roofline_output.schema.json"))
    assert data["attainable_tflops"] == pytest.approx(100 * data["memory_bw_gb_s"] / 1e3)


def test_train_estimate_json_matches_its_contract():
    r = run_cli("train-estimate", "--params", "70e9", "--tokens", "1e12", "--gpus", "1024",
                "--device", "h100-sxm", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("train_estimate_output.schema.json"))
    assert data["total_flop"] == pytest.approx(4.2e23)


@pytest.mark.parametrize("args,needles", [
    (["specs", "h100sxm"], ["unknown device 'h100sxm'", "did you mean 'h100-sxm'", "known ids"]),
    (["roofline", "--device", "tpu-v99"], ["unknown device 'tpu-v99'"]),
    (["roofline", "--device", "a100-sxm-80gb", "--dtype", "fp8"], ["no published fp8_e4m3 peak"]),
    (["roofline", "--device", "h100-sxm", "--dtype", "fp7"], ["unknown dtype 'fp7'"]),
    (["roofline", "--device", "h100-sxm", "--intensity", "-3"], ["-3 FLOP/byte"]),
    (["train-estimate", "--gpus", "-8"], ["-8 GPUs"]),
    (["train-estimate", "--gpus", "1.5"], ["not a whole number"]),
    (["train-estimate", "--params", "-70e9"], ["-70e9 parameters"]),
    (["train-estimate", "--mfu", "1.2"], ["1.2 MFU"]),
    (["train-estimate", "--mfu", "0"], ["0 MFU"]),
    (["train-estimate", "--pue", "0.8"], ["0.8 PUE"]),
    (["train-estimate", "--device", "a100-sxm-80gb", "--dtype", "fp8"], ["no published fp8_e4m3 peak"]),
    (["train-estimate", "--device", "b300"], ["unknown device 'b300'"]),
    (["frobnicate"], ["invalid choice"]),
])
def test_bad_input_gives_exit_2_and_one_clear_line(args, needles):
    check_usage_error(run_cli(*args), *needles)
