"""x4lib.datacenter.reliability: Young's and Daly's intervals against their formulas and Daly's published cases, goodput on
hand cases, and the `checkpoint-interval` command's contract."""
import json
import math

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.datacenter import reliability as rel

H, MIN = 3600.0, 60.0


def test_young_is_the_square_root_formula():
    assert rel.young_interval_s(24 * H, 300) == pytest.approx(math.sqrt(2 * 300 * 24 * H))   # 7200 s
    assert rel.young_interval_s(24 * H, 300) == pytest.approx(7200)


def test_daly_is_its_formula():
    M, d = 6 * H, 300.0
    x = d / (2 * M)
    assert rel.daly_interval_s(M, d) == pytest.approx(math.sqrt(2 * d * M) * (1 + math.sqrt(x) / 3 + x / 9) - d)
    assert rel.daly_interval_s(100.0, 250.0) == 100.0          # δ >= 2M: checkpoint every M


@pytest.mark.parametrize("mtbf_min, published_min", [(24 * 60, 117), (6 * 60, 57), (15, 9.1)])
def test_daly_reproduces_his_published_intervals(mtbf_min, published_min):
    # Daly (2006), figure captions: δ = 5 min, R = 10 min; the paper rounds to the digits shown
    tau = rel.daly_interval_s(mtbf_min * MIN, 5 * MIN) / MIN
    assert tau == pytest.approx(published_min, abs=0.5 if published_min > 10 else 0.05)


@pytest.mark.parametrize("M,d,R", [(24 * H, 300, 600), (6 * H, 300, 600), (50 * H, 20, 600)])
def test_daly_is_near_the_optimum_of_the_goodput_model(M, d, R):
    best = rel.best_interval_s(M, d, R)
    assert rel.daly_interval_s(M, d) == pytest.approx(best, rel=0.01)
    g_best = rel.goodput(best, M, d, R)
    assert rel.checkpoint_plan(M, d, R).goodput <= g_best + 1e-12
    assert rel.goodput(best * 2, M, d, R) < g_best and rel.goodput(best / 2, M, d, R) < g_best


def test_goodput_hand_cases():
    # no failures in sight: only the checkpoint writes are lost, τ/(τ+δ)
    assert rel.goodput(100.0, 1e15, 10.0) == pytest.approx(100 / 110)
    # τ = M with free checkpoints: M / (M (e − 1)) = 1/(e − 1)
    assert rel.goodput(3600.0, 3600.0, 1e-9) == pytest.approx(1 / (math.e - 1), rel=1e-6)
    # and a restart as long as M costs another factor e
    assert rel.goodput(3600.0, 3600.0, 1e-9, 3600.0) == pytest.approx(1 / (math.e * (math.e - 1)), rel=1e-6)
    # failures rare against the interval: G ≈ τ/(τ+δ) · (1 − (τ+δ)/(2M) − R/M), to first order in 1/M
    M, d, tau, R = 1e6, 10.0, 1000.0, 100.0
    assert rel.goodput(tau, M, d, R) == pytest.approx(tau / (tau + d) * (1 - (tau + d) / (2 * M) - R / M), abs=1e-6)


def test_failure_rate_and_cluster_mtbf():
    lam = rel.failure_rate_per_gpu_s(419, 54, 16384)
    assert lam == pytest.approx(419 / (54 * 86400 * 16384))
    assert rel.cluster_mtbf_s(lam, 16384) / H == pytest.approx(54 * 24 / 419)      # one job-stopping failure per ~3.1 h
    assert rel.cluster_mtbf_s(lam, 1024) == pytest.approx(16 * rel.cluster_mtbf_s(lam, 16384))


@pytest.mark.parametrize("args", [(0, 10), (10, 0), (math.inf, 10), (10, math.nan)])
def test_impossible_times_are_refused(args):
    with pytest.raises(ValueError):
        rel.checkpoint_plan(*args)
    with pytest.raises(ValueError):
        rel.checkpoint_plan(10, 10, -1)
    with pytest.raises(ValueError):
        rel.checkpoint_plan(10, 10, 0, "magic")


def test_checkpoint_interval_json_matches_its_contract():
    r = run_cli("checkpoint-interval", "--mtbf-hours", "24", "--checkpoint-seconds", "300", "--restart-seconds",
                "600", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("checkpoint_interval_output.schema.json"))
    assert data["formula"] == "daly"
    assert data["interval_s"] == pytest.approx(rel.daly_interval_s(24 * H, 300))
    assert data["goodput"] == pytest.approx(rel.goodput(data["interval_s"], 24 * H, 300, 600))
    r = run_cli("checkpoint-interval", "--mtbf-hours", "24", "--checkpoint-seconds", "300", "--formula", "young",
                "--json")
    assert json.loads(r.stdout)["interval_s"] == pytest.approx(7200)


@pytest.mark.parametrize("args,needle", [
    (["--mtbf-hours", "0", "--checkpoint-seconds", "3"], "0 MTBF hours"),
    (["--mtbf-hours", "-2", "--checkpoint-seconds", "3"], "-2 MTBF hours"),
    (["--mtbf-hours", "5", "--checkpoint-seconds", "nan"], "not a finite number"),
    (["--mtbf-hours", "5", "--checkpoint-seconds", "3", "--restart-seconds=-1"], "-1 restart seconds"),
    (["--mtbf-hours", "5", "--checkpoint-seconds", "3", "--formula", "dali"], "did you mean 'daly'"),
    (["--checkpoint-seconds", "3"], "required: --mtbf-hours"),
])
def test_bad_checkpoint_input_exits_2_with_one_line(args, needle):
    r = run_cli("checkpoint-interval", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert lines[0].startswith("usage:") and needle in lines[-1], r.stderr
