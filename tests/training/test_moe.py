"""x4lib.training.moe: the all-to-all of expert parallelism, where it runs, and EP against TP."""
import pytest

from x4lib.training import moe


def test_all_to_all_bytes_is_top_k_hidden_bytes_twice():
    # Mixtral 8x7B: 2 experts per token, hidden 4096, BF16: 2 * 4096 * 2 B * 2 (dispatch + combine)
    assert moe.all_to_all_bytes_per_token_per_layer(2, 4096, 2) == 32768
    assert moe.all_to_all_bytes_per_token_per_layer(8, 7168, 1) == 8 * 7168 * 2


def test_the_share_that_leaves_the_gpu_grows_with_ep():
    a = moe.all_to_all_bytes_per_token_per_layer(2, 4096)
    assert moe.ep_bytes_sent_per_token(2, 4096, 1) == 0
    assert moe.ep_bytes_sent_per_token(2, 4096, 8) == pytest.approx(a * 7 / 8)
    assert moe.ep_bytes_sent_per_token(2, 4096, 64) > moe.ep_bytes_sent_per_token(2, 4096, 8)


def test_tp_all_reduce_bytes():
    assert moe.tp_bytes_sent_per_token(4096, 1) == 0
    assert moe.tp_bytes_sent_per_token(4096, 8, 2) == 2 * 7 * 4096 * 2


def test_link_is_nvlink_inside_the_domain_and_the_network_beyond():
    assert moe.ep_link(8, 8) == "nvlink"
    assert moe.ep_link(16, 8) == "network"
    assert moe.ep_link(64, 72) == "nvlink"


def test_ep_sends_less_rule():
    assert moe.ep_sends_less(2, 8, 8)          # 2 * 7/8 = 1.75 < 7
    assert not moe.ep_sends_less(8, 64, 8)     # 8 * 63/64 = 7.875 > 7
    assert not moe.ep_sends_less(1, 8, 1)      # TP of 1 sends nothing


def test_placement():
    p = moe.placement(64, 1024, 8)
    assert (p.groups, p.domains_per_group, p.link) == (16, 8, "network")
    q = moe.placement(64, 1024, 64)
    assert (q.groups, q.domains_per_group, q.link) == (16, 1, "nvlink")
    with pytest.raises(ValueError):
        moe.placement(48, 1024, 8)             # does not divide the GPUs
    with pytest.raises(ValueError):
        moe.placement(12, 96, 8)               # spans part of a domain


def test_compare_ep_wins_on_nvlink_and_prices_the_network():
    nv, net = 450e9, 50e9
    r = moe.compare(2, 4096, 14336, 8, 8, 8192, nv, net)
    assert r.ep_link == "nvlink" and r.ep_wins
    assert r.tp_bytes_per_token / r.ep_bytes_per_token == pytest.approx(4.0)
    assert r.ep_s == pytest.approx(2 * 4096 * 2 * 2 * 7 / 8 * 8192 / nv)
    assert r.tp_expert_width == 14336 // 8 and r.ep_expert_width == 14336
    with pytest.raises(ValueError):
        moe.compare(2, 4096, 14336, 16, 8, 8192, nv, net)   # TP beyond the domain


def test_layer_time_and_bad_input():
    assert moe.layer_comm_s(1000.0, 10, 1e4) == pytest.approx(1.0)
    for bad in (lambda: moe.layer_comm_s(1.0, 0, 1e9), lambda: moe.layer_comm_s(1.0, 1, 0),
                lambda: moe.all_to_all_bytes_per_token_per_layer(0, 4096), lambda: moe.ep_link(0, 8),
                lambda: moe.all_to_all_bytes_per_token_per_layer(2, 4096, float("nan"))):
        with pytest.raises(ValueError):
            bad()
