"""The roofline model on catalog values and on cases small enough to check by hand."""
import pytest

from x4lib.compute import roofline as rl
from x4lib.catalog import specs


def test_h100_sxm_bf16_ridge_is_about_295_flop_per_byte():
    dev = specs.get("h100-sxm")
    expected = dev.values["bf16_dense_tflops"].value * 1e12 / (dev.values["memory_bw_gb_s"].value * 1e9)
    roof = rl.for_device("h100-sxm", "bf16")
    assert roof.ridge_flop_per_B == pytest.approx(expected)
    assert 290 < roof.ridge_flop_per_B < 300


def test_attainable_is_the_minimum_of_the_two_roofs():
    peak, bw = 100e12, 1e12
    assert rl.attainable_flop_per_s(10, peak, bw) == 10e12          # memory-bound
    assert rl.attainable_flop_per_s(1000, peak, bw) == peak          # compute-bound
    assert rl.attainable_flop_per_s(rl.ridge_flop_per_B(peak, bw), peak, bw) == pytest.approx(peak)


def test_point_bound_and_time():
    roof = rl.Roofline("x", "bf16", "bf16_dense_tflops", 100e12, 1e12)
    p = rl.point(flop=1e12, bytes_moved=1e9, roof=roof)   # 1000 FLOP/B > ridge 100
    assert p.bound == "compute" and p.time_s == pytest.approx(0.01)
    q = rl.point(flop=1e9, bytes_moved=1e9, roof=roof)
    assert q.bound == "memory" and q.time_s == pytest.approx(1e-3)
