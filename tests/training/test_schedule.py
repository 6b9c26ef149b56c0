"""x4lib.training.schedule: the 1F1B schedule simulated from its dependencies leaves each stage idle (p − 1)/m of
its work, keeps its dependencies and at most p − stage micro-batches in flight. (Its drawing, its bubble against the
planner's and the streams against the stack model: tests/book/test_diagrams_parallel.py.)"""
import pytest

from x4lib.training import schedule


@pytest.mark.parametrize("p,m", [(1, 4), (2, 1), (3, 2), (4, 8), (8, 64), (5, 3)])
def test_the_simulated_1f1b_bubble_is_p_minus_1_over_m(p, m):
    s = schedule.one_f_one_b(p, m, 1.0, 2.0)
    assert s.bubble_share == pytest.approx((p - 1) / m, rel=1e-12)
    assert s.step_s == pytest.approx((m + p - 1) * 3.0, rel=1e-12)
    assert all(s.idle_s(k) == pytest.approx((p - 1) * 3.0) for k in range(p))
    assert len(s.slots) == 2 * p * m


def test_the_schedule_keeps_its_dependencies_and_never_runs_two_passes_at_once_on_a_stage():
    s = schedule.one_f_one_b(4, 6, 0.7, 1.3)
    at = {(x.stage, x.kind, x.micro_batch): x for x in s.slots}
    for x in s.slots:
        if x.kind == "F" and x.stage > 0:
            assert x.start_s >= at[(x.stage - 1, "F", x.micro_batch)].end_s - 1e-12
        if x.kind == "B":
            assert x.start_s >= at[(x.stage, "F", x.micro_batch)].end_s - 1e-12
            if x.stage < s.stages - 1:
                assert x.start_s >= at[(x.stage + 1, "B", x.micro_batch)].end_s - 1e-12
    for k in range(s.stages):
        mine = sorted((x.start_s, x.end_s) for x in s.slots if x.stage == k)
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(mine, mine[1:]))
    # 1F1B keeps at most p − stage micro-batches in flight on a stage (its memory advantage over GPipe)
    for k in range(s.stages):
        live = peak = 0
        for x in sorted((x for x in s.slots if x.stage == k), key=lambda x: x.start_s):
            live += 1 if x.kind == "F" else -1
            peak = max(peak, live)
        assert peak == min(s.stages - k, s.micro_batches)


@pytest.mark.parametrize("bad", [(0, 4, 1.0, 2.0), (2, 0, 1.0, 2.0), (2.5, 4, 1.0, 2.0), (2, 4, 0.0, 2.0)])
def test_an_impossible_schedule_is_refused(bad):
    with pytest.raises(ValueError):
        schedule.one_f_one_b(*bad)
