"""x4lib.catalog.choose: rankings on fixed inputs with their reasons, the --json contract, bad input."""
import json

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.catalog import choose


def _by(doc):
    return {c["device"]: c for c in doc["ranking"]}


def test_train_ranks_by_the_planner_not_by_peak_times_one_mfu():
    doc = choose.rank("train", devices=["h100-sxm", "b200", "a100-sxm-80gb"])
    assert [c["device"] for c in doc["ranking"]] == ["b200", "h100-sxm", "a100-sxm-80gb"]
    assert {c["deciding_constraint"] for c in doc["ranking"]} == {"compute"}
    by = _by(doc)
    assert {c["numbers"]["basis"] for c in doc["ranking"]} == {"planner"}
    # the planner's MFU differs per chip (an A100 keeps more of its smaller peak than a B200)
    assert by["a100-sxm-80gb"]["numbers"]["mfu"] > by["b200"]["numbers"]["mfu"]
    h = by["h100-sxm"]["numbers"]
    assert h["days"] == pytest.approx(1.4e12 / (h["tokens_per_s_per_chip"] * 1024) / 86400)
    assert h["tokens_per_s_per_chip"] == pytest.approx(989.4e12 * h["mfu"] / (6 * 70e9), rel=1e-6)


def test_train_without_an_achievable_model_is_not_ranked_on_its_datasheet():
    doc = choose.rank("train", devices=["gb200", "mi355x", "mi325x"])
    assert [c["device"] for c in doc["ranking"]] == ["gb200", "mi325x"]
    assert _by(doc)["mi325x"]["numbers"]["basis"] == "achievable compute"
    assert "no achievable-rate model" in doc["assumptions"]["not_ranked"][0]["why"]


def test_train_on_few_chips_is_ruled_out_by_memory():
    doc = choose.rank("train", chips=8, devices=["h100-sxm", "mi355x"])
    h = _by(doc)["h100-sxm"]
    assert h["score"] == 0 and h["deciding_constraint"] == "memory capacity"
    assert h["numbers"]["state_per_chip_gb"] == pytest.approx(70e9 * 16 / 8 / 1e9)


def test_serve_small_memory_chip_is_ruled_out_by_capacity():
    doc = choose.rank("serve", devices=["tpu-v5e", "h100-sxm"])
    assert _by(doc)["tpu-v5e"]["deciding_constraint"] == "memory capacity"
    h = _by(doc)["h100-sxm"]
    assert h["deciding_constraint"] == "bandwidth" and h["numbers"]["step_ms"] <= 20.0
    assert h["numbers"]["batch"] >= 1


def test_tighter_latency_target_lowers_the_batch():
    loose = _by(choose.rank("serve", tpot_ms=40, devices=["h200-sxm"]))["h200-sxm"]["numbers"]["batch"]
    tight = _by(choose.rank("serve", tpot_ms=10, devices=["h200-sxm"]))["h200-sxm"]["numbers"]["batch"]
    assert tight < loose


def test_moe_serve_rules_out_chips_whose_domain_cannot_hold_the_model():
    doc = choose.rank("moe-serve", devices=["h100-sxm", "h200-sxm"])
    h = _by(doc)["h100-sxm"]
    assert h["deciding_constraint"] == "scale-up domain" and h["numbers"]["chips_to_hold"] > 8
    assert _by(doc)["h200-sxm"]["score"] > 0


def test_cost_objective_ranks_only_priced_devices():
    doc = choose.rank("serve", objective="cost")
    assert {c["deciding_constraint"] for c in doc["ranking"]} == {"price"}
    assert "mi355x" in {u["device"] for u in doc["assumptions"]["not_ranked"]}
    assert all("price_date" in c["numbers"] for c in doc["ranking"])


def test_announced_parts_only_on_request():
    assert "rubin" not in _by(choose.rank("serve"))
    assert "rubin" in _by(choose.rank("serve", include_announced=True))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="workload"):
        choose.rank("fly")
    with pytest.raises(ValueError, match="takes"):
        choose.rank("train", model="mistral-7b")
    with pytest.raises(ValueError, match="mfu"):
        choose.rank("train", mfu=2.0)


@pytest.mark.parametrize("workload", choose.WORKLOADS)
def test_cli_json_matches_its_schema(workload):
    r = run_cli("choose", "--workload", workload, "--json")
    assert r.returncode == 0, r.stderr
    jsonschema.validate(json.loads(r.stdout), load_schema("choose_output.schema.json"))


@pytest.mark.parametrize("args", [["--workload", "fly"], ["--workload", "serve", "--tpot-ms=-1"],
                                  ["--workload", "train", "--model", "mistral-7b"],
                                  ["--workload", "serve", "--model", "nope"], ["--workload", "train", "--mfu", "nan"]])
def test_cli_bad_input_exits_2_with_one_line(args):
    r = run_cli("choose", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len([l for l in r.stderr.splitlines() if "error" in l]) == 1
