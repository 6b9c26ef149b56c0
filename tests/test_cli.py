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
    (["train-estimate", "--params=-70e9"], ["-70e9 parameters"]),
    (["train-estimate", "--mfu", "nan"], ["nan MFU: not a finite number"]),
    (["train-estimate", "--params", "inf"], ["inf parameters: not a finite number"]),
    (["train-estimate", "--pue", "inf"], ["not a finite number"]),
    (["train-estimate", "--gpus", "inf"], ["not a finite number"]),
    (["train-estimate", "--gpus", "9" * 400], ["not a finite number"]),
    (["train-estimate", "--tokens", "1e999"], ["not a finite number"]),
    (["train-estimate", "--gpus", "1e300"], ["must be <="]),
    (["roofline", "--device", "h100-sxm", "--intensity", "nan"], ["not a finite number"]),
    (["train-estimate", "--mfu", "1.2"], ["1.2 MFU"]),
    (["train-estimate", "--mfu", "0"], ["0 MFU"]),
    (["train-estimate", "--pue", "0.8"], ["0.8 PUE"]),
    (["train-estimate", "--device", "a100-sxm-80gb", "--dtype", "fp8"], ["no published fp8_e4m3 peak"]),
    (["train-estimate", "--device", "b900"], ["unknown device 'b900'"]),
    (["frobnicate"], ["invalid choice"]),
])
def test_bad_input_gives_exit_2_and_one_clear_line(args, needles):
    check_usage_error(run_cli(*args), *needles)


# ------------------------------------------------------------------------------------------- the framework

def test_every_command_has_a_command_line_edge_and_every_module_imports():
    import importlib

    import x4lib
    from x4lib import cli
    for name, (module, help_text) in cli.COMMANDS.items():
        mod = importlib.import_module(module)
        assert callable(mod.cli_arguments) and callable(mod.cli_main) and help_text, name
    for name in x4lib.__all__:
        assert getattr(x4lib, name).__name__ == f"x4lib.{name}"


def test_a_closed_pipe_is_not_an_error():
    import subprocess
    import sys
    r = subprocess.run(f"{sys.executable} -m x4lib specs --json | head -c 10", shell=True, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


def test_any_stdout_encoding_prints_the_greek_and_the_arrows():
    import os
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "x4lib", "collective-predict", "--cluster", "2x8-h100-ib400"],
                       capture_output=True, env={**os.environ, "PYTHONIOENCODING": "ascii"}, timeout=120)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    assert b"\\u03b1" in r.stdout  # α printed as an escape, not a crash


def test_terminal_escapes_from_data_are_shown_not_sent():
    from x4lib import cli
    assert cli.safe_text("GPU\x1b[31m red\n\tok") == "GPU\\x1b[31m red\n\tok"


def test_json_is_never_nan():
    from x4lib import cli
    with pytest.raises(ValueError):
        cli.to_json({"x": float("nan")})


def test_ctrl_c_is_one_line(capsys):
    from x4lib import cli

    def interrupted(args):
        raise KeyboardInterrupt
    assert cli.run_command(interrupted, None, None, "python -m x4lib specs") == 130
    assert capsys.readouterr().err.strip() == "python -m x4lib specs: interrupted"


def test_a_broken_catalog_is_exit_1_naming_the_file(tmp_path, capsys):
    from x4lib import cli
    from x4lib.catalog import specs
    (tmp_path / "bad.yaml").write_bytes("name: Garc\u00eda".encode("latin-1"))
    rc = cli.run_command(lambda a: specs.load_catalog(tmp_path) and 0, None, None, "python -m x4lib specs")
    assert rc == 1 and "bad.yaml: not UTF-8" in capsys.readouterr().err


def test_nccl_parse_of_an_empty_path_says_so():
    r = run_cli("nccl-parse", "")
    assert r.returncode == 2 and "empty" in r.stderr.splitlines()[-1] and "directory" not in r.stderr

