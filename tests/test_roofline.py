"""The roofline model on catalog values and on cases small enough to check by hand."""
import pytest

from x4lib import roofline as rl
from x4lib import specs


def test_h100_sxm_bf16_ridge_is_about_295_flop_per_byte():
    dev = specs.get("h100-sxm")
    expected = dev.values["bf16_dense_tflops"].value * 1e12 / (dev.values["memory_bw_gb_s"].value * 1e9)
    roof = rl.for_device("h100-sxm", "bf16")
    assert roof.ridge_flop_per_B == pytest.approx(expected)
    assert 290 < roof.ridge_flop_per_B < 300


def test_matmul_intensity_by_hand():
    # 2x2x2 in bf16: 2*8 = 16 FLOP over (4 + 4 + 4) elements * 2 B = 24 B
    assert rl.matmul_flop(2, 2, 2) == 16
    assert rl.matmul_bytes(2, 2, 2, 2) == 24
    assert rl.matmul_intensity(2, 2, 2, 2) == pytest.approx(2 / 3)
    # square n^3: 2n^3 / (3 n^2 b) = 2n / 3b
    assert rl.matmul_intensity(4096, 4096, 4096, 2) == pytest.approx(2 * 4096 / 6)
    # a matrix-vector product (m = 1) stays near 1 FLOP per weight element: 2 n k / (k b + n k b + n b)
    assert rl.matmul_intensity(1, 8192, 8192, 2) == pytest.approx(2 * 8192 * 8192 / ((8192 + 8192**2 + 8192) * 2))


def test_vector_kernels():
    assert rl.vector_intensity("copy", 8) == 0
    assert rl.vector_intensity("triad", 8) == pytest.approx(2 / 24)
    with pytest.raises(ValueError, match="unknown kernel"):
        rl.vector_intensity("stencil", 8)


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


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="m must be positive"):
        rl.matmul_intensity(0, 4, 4, 2)
