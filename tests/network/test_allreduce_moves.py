"""x4lib.network.allreduce_moves: the step-by-step AllReduce agrees with the α–β model of collectives."""
import math

import pytest

from x4lib.network import allreduce_moves as am
from x4lib.network import clusters, collectives


def alpha_beta_terms(family: str, n: int, size_B: float) -> tuple[float, float]:
    """(number of α, bytes per rank) of collectives' closed form: time with α = 1 s and an infinite link, and with
    α = 0 and a 1 B/s link."""
    steps = collectives.alpha_beta_time_s("all_reduce", family, size_B, n, 1.0, 1e30)
    per_rank = collectives.alpha_beta_time_s("all_reduce", family, size_B, n, 0.0, 1.0)
    return steps, per_rank


@pytest.mark.parametrize("n", [2, 3, 8, 16])
def test_the_ring_takes_2n_minus_2_steps_of_s_over_n_as_the_alpha_beta_model_says(n):
    s = am.ring(n, 1024.0)
    steps, per_rank = alpha_beta_terms("ring", n, 1024.0)
    assert s.steps == 2 * (n - 1) == pytest.approx(steps)
    assert {m.bytes_B for m in s.moves} == {1024.0 / n}
    assert all(s.sent_B(r) == pytest.approx(per_rank) for r in range(n))
    assert all(s.received_B(r) == pytest.approx(per_rank) for r in range(n))
    assert s.phases == ("reduce-scatter", "all-gather")
    assert all(dst == (src + 1) % n for src, dst in s.edges())


@pytest.mark.parametrize("n", [2, 5, 8, 16])
def test_the_tree_reduces_up_then_broadcasts_down_each_edge_carrying_s_each_way(n):
    s = am.tree(n, 1.0)
    steps, _ = alpha_beta_terms("tree", n, 1.0)
    assert s.steps == 2 * math.floor(math.log2(n)) <= steps
    up = [m for m in s.moves if m.phase == "reduce"]
    down = [m for m in s.moves if m.phase == "broadcast"]
    assert {(m.src, m.dst) for m in up} == {(m.dst, m.src) for m in down} == {(r, (r - 1) // 2) for r in range(1, n)}
    assert max(m.step for m in up) < min(m.step for m in down)
    # a child sends its partial sum only after its own children have sent theirs
    when = {m.src: m.step for m in up}
    assert all(when[m.src] > when[c] for m in up for c in (2 * m.src + 1, 2 * m.src + 2) if c < n)


def test_nvls_sends_s_into_the_switch_and_s_back_half_of_a_large_ring():
    s = am.nvls(8, 1.0)
    assert s.steps == 2
    assert all(s.sent_B(r) == s.received_B(r) == 1.0 for r in range(8))
    assert s.received_B(am.SWITCH) == 8.0
    assert am.ring(8, 1.0).sent_B(0) / s.sent_B(0) == pytest.approx(2 * 7 / 8)


def test_one_node_of_a_preset_has_nvls_only_where_its_switch_reduces():
    h100, a100 = clusters.get("2x8-h100-ib400"), clusters.get("2x8-a100-ib200")
    assert list(am.in_one_node(h100, 1.0)) == ["ring", "tree", "nvls"]
    assert list(am.in_one_node(a100, 1.0)) == ["ring", "tree"]
    assert am.in_one_node(h100, 1.0)["ring"].n_ranks == h100.gpus_per_node


@pytest.mark.parametrize("args", [("ring", 1, 1.0), ("tree", 2.5, 1.0), ("nvls", 4, 0.0), ("star", 4, 1.0)])
def test_impossible_inputs_are_refused(args):
    with pytest.raises(ValueError):
        am.schedule(*args)
