"""x4lib.compute.kernels: the work and traffic of the timed kernels, by hand."""
import pytest

from x4lib.compute import kernels


def test_matmul_intensity_by_hand():
    # 2x2x2 in bf16: 2*8 = 16 FLOP over (4 + 4 + 4) elements * 2 B = 24 B
    assert kernels.matmul_flop(2, 2, 2) == 16
    assert kernels.matmul_bytes(2, 2, 2, 2) == 24
    assert kernels.matmul_intensity(2, 2, 2, 2) == pytest.approx(2 / 3)
    # square n^3: 2n^3 / (3 n^2 b) = 2n / 3b
    assert kernels.matmul_intensity(4096, 4096, 4096, 2) == pytest.approx(2 * 4096 / 6)
    # a matrix-vector product (m = 1) stays near 1 FLOP per weight element: 2 n k / (k b + n k b + n b)
    assert kernels.matmul_intensity(1, 8192, 8192, 2) == pytest.approx(2 * 8192 * 8192 / ((8192 + 8192**2 + 8192) * 2))


def test_vector_kernels():
    assert kernels.vector_intensity("copy", 8) == 0
    assert kernels.vector_intensity("triad", 8) == pytest.approx(2 / 24)
    with pytest.raises(ValueError, match="unknown kernel"):
        kernels.vector_intensity("stencil", 8)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="m must be positive"):
        kernels.matmul_intensity(0, 4, 4, 2)


def test_stream_kernels_move_the_bytes_mccalpin_defines():
    assert kernels.vector_bytes("copy", 1000) == 2 * 1000 * 4
    assert kernels.vector_bytes("triad", 1000, 8) == 3 * 1000 * 8
    assert kernels.vector_flop("triad", 10) == 20 and kernels.vector_flop("copy", 10) == 0


def test_every_dtype_has_a_size_and_fp4_is_half_a_byte():
    assert kernels.DTYPE_BYTES["fp4"] == 0.5 and kernels.DTYPE_BYTES["bf16"] == 2
    assert list(kernels.DTYPE_BYTES)[:2] == ["fp64", "fp32"]
