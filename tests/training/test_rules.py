"""The answer card's rules of thumb (x4lib.training.rules), each against a hand computation from catalog values:
the H100's dense BF16 peak and NVLink rate per direction, the H100 cluster preset's NICs, chapter 00's 70B shape."""
import math

import pytest

from x4lib.catalog import specs
from x4lib.datacenter import reliability
from x4lib.network import clusters
from x4lib.training import memory, planner, rules

MODEL = planner.Model(70e9, 80, 8192, 64, 8, 8192, 28672, True, "70B")


@pytest.fixture(scope="module")
def h100():
    return specs.get("h100-sxm")


@pytest.fixture(scope="module")
def cluster(h100):
    return planner.cluster_for(h100, 1024)


def test_state_bytes_are_bf16_weight_and_gradient_fp32_master_and_adams_two_moments():
    assert rules.state_bytes_per_param() == 2 + 2 + 4 + 4 + 4 == 16
    assert rules.state_bytes_per_param("fp32", "sgd") == 4 + 4 + 4
    with pytest.raises(ValueError, match="precision"):
        rules.state_bytes_per_param("fp6")
    with pytest.raises(ValueError, match="optimizer"):
        rules.state_bytes_per_param("bf16", "lion")


def test_memory_floor_is_the_state_over_the_usable_capacity(h100):
    capacity = h100.values["memory_gb"].value * 1e9
    want = math.ceil(70e9 * 16 / (capacity * (1 - planner.RESERVE)))
    assert rules.memory_floor_gpus(MODEL, h100) == want
    assert rules.memory_floor_gpus(MODEL, h100, reserve=0) == math.ceil(70e9 * 16 / capacity)
    # the floor never exceeds what the planner (which adds activations) needs
    assert rules.memory_floor_gpus(MODEL, h100) <= planner.min_gpus_to_fit(MODEL, h100, 4 * 2**20)
    with pytest.raises(ValueError, match="reserve"):
        rules.memory_floor_gpus(MODEL, h100, reserve=1.0)


def test_tp_ratio_is_layer_matmuls_over_two_ring_all_reduces(h100):
    h, kv, f = 8192, 1024, 28672
    n_layer = 2 * h * h + 2 * h * kv + 3 * h * f
    assert rules.layer_params(MODEL) == n_layer
    peak, nvl = h100.peak_flop_per_s("bf16"), h100.si("scaleup_bw_gb_s_per_direction")
    b, s, t = 1, 8192, 8
    matmul = 2 * b * s * n_layer / (t * peak)
    comm = 2 * (2 * (t - 1) / t) * (2 * b * s * h) / nvl
    assert rules.tp_ratio(MODEL, h100, t, nvl) == pytest.approx(matmul / comm, rel=1e-12)
    cross = rules.tp_crossover(MODEL, h100, nvl)
    assert rules.tp_ratio(MODEL, h100, 1, nvl) == math.inf
    # the crossover is where R = 1, and R falls as the degree grows
    assert n_layer * nvl / (4 * h * (cross - 1) * peak) == pytest.approx(1.0)
    assert rules.tp_ratio(MODEL, h100, 4, nvl) > rules.tp_ratio(MODEL, h100, 8, nvl)


def test_tp_larger_than_the_nvlink_domain_runs_on_the_network_and_says_so(h100, cluster):
    inside = rules.tp_check(MODEL, h100, cluster, 8)
    across = rules.tp_check(MODEL, h100, cluster, 16)
    assert inside["link_Bps"] == cluster.intra.bw_Bps and "inside" in inside["where"] and inside["compute_bound"]
    per_gpu = cluster.nics_per_node * cluster.nic.bw_Bps / cluster.gpus_per_node
    assert across["link_Bps"] == per_gpu and "exceeds the nvlink domain of 8" in across["where"]
    assert not across["compute_bound"] and across["crossover"] < 8 < inside["crossover"]
    for bad in (0, 2.5, -4):
        with pytest.raises(ValueError, match="tensor degree"):
            rules.tp_check(MODEL, h100, cluster, bad)
    with pytest.raises(ValueError, match="link bandwidth"):
        rules.tp_ratio(MODEL, h100, 4, 0.0)


def test_sync_bytes_per_param_by_zero_stage_and_micro_batches():
    assert [rules.sync_bytes_per_param(z) for z in (0, 1, 2, 3)] == [4, 4, 4, 6]
    assert rules.sync_bytes_per_param(1, 16) == 4
    assert rules.sync_bytes_per_param(2, 16) == 2 + 2 * 16
    assert rules.sync_bytes_per_param(3, 16) == 6 * 16
    with pytest.raises(ValueError, match="ZeRO stage"):
        rules.sync_bytes_per_param(4)
    with pytest.raises(ValueError, match="micro-batches"):
        rules.sync_bytes_per_param(3, 0)


def test_dp_minimum_tokens_and_maximum_degree_by_hand(h100, cluster):
    peak = h100.peak_flop_per_s("bf16")
    w = clusters.get("2x8-h100-ib400").node_line_rate_Bps / 8
    assert rules.network_Bps_per_gpu(cluster) == w
    assert rules.dp_min_tokens(h100, cluster, 1) == pytest.approx(4 / 6 * peak / w, rel=1e-12)
    assert rules.dp_min_tokens(h100, cluster, 3) == pytest.approx(peak / w, rel=1e-12)
    B = 4 * 2**20
    assert rules.dp_max_degree(h100, cluster, B, 3) == math.floor(B / (peak / w))
    # at the degree the rule allows each replica is compute-bound; one more replica per the cap is not
    n = rules.dp_max_degree(h100, cluster, B, 1)
    assert rules.dp_check(h100, cluster, B, n, 1)["compute_bound"]
    assert not rules.dp_check(h100, cluster, B, n + 1, 1)["compute_bound"]
    with pytest.raises(ValueError, match="global batch"):
        rules.dp_max_degree(h100, cluster, 0)
    with pytest.raises(ValueError, match="replicas"):
        rules.dp_check(h100, cluster, B, 0, 1)


def test_pipeline_bubble_and_the_micro_batches_that_bound_it():
    assert rules.pipeline_bubble(8, 32) == 7 / 32
    assert rules.pipeline_bubble(1, 1) == 0.0
    m = rules.micro_batches_for(8, 0.05)
    assert (8 - 1) / m <= 0.05 < (8 - 1) / (m - 1)
    assert rules.micro_batches_for(4, 1.0) == 4  # never fewer micro-batches than stages


def test_fewer_micro_batches_than_stages_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="8 micro-batches cannot fill 16 pipeline stages: use at least 16"):
        rules.pipeline_bubble(16, 8)
    for bad in ((0, 4), (4, 0), (2.5, 8)):
        with pytest.raises(ValueError, match="whole number"):
            rules.pipeline_bubble(*bad)
    with pytest.raises(ValueError, match="bubble"):
        rules.micro_batches_for(8, 0)


def test_first_order_goodput_is_close_to_the_exact_model_and_falls_with_the_count():
    lam, delta, restart = 2e-9, 20.0, 600.0
    for n in (8, 1024, 16384):
        m = 1 / (n * lam)
        assert rules.goodput_first_order(lam, n, delta, restart) == pytest.approx(
            1 - math.sqrt(2 * delta / m) - restart / m, rel=1e-12)
        exact = reliability.checkpoint_plan(m, delta, restart).goodput
        assert rules.goodput_first_order(lam, n, delta, restart) == pytest.approx(exact, abs=0.01)
    assert rules.goodput_first_order(lam, 1024, delta, restart) < rules.goodput_first_order(lam, 8, delta, restart)
    with pytest.raises(ValueError):
        rules.goodput_first_order(lam, 1024, 0.0)
    with pytest.raises(ValueError, match="restart"):
        rules.goodput_first_order(lam, 1024, delta, -1.0)


def test_state_bytes_agree_with_the_memory_model():
    assert rules.state_bytes_per_param() * 70e9 == memory.model_state_bytes(70e9)
