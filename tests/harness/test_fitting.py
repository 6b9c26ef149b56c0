"""x4lib.harness.fitting: the α–β fit recovers the formula it fits, and refuses what it cannot fit."""
import dataclasses

import pytest

from x4lib.harness import fitting


@pytest.mark.parametrize("relative", [False, True])
def test_the_alpha_beta_fit_recovers_the_formula(relative):
    alpha, beta = 25e-6, 1 / 40e9  # 25 µs, 40 GB/s
    sizes = [2**k for k in range(10, 31, 4)]
    f = fitting.fit_alpha_beta(sizes, [alpha + beta * s for s in sizes], relative=relative)
    assert f.alpha_s == pytest.approx(alpha, rel=1e-9) and f.beta_s_per_B == pytest.approx(beta, rel=1e-12)
    assert f.inv_beta_gb_s == pytest.approx(40.0) and f.n_points == len(sizes)
    assert f.residual_rms_s < 1e-15 and f.residual_rel_rms < 1e-9
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.alpha_s = 0


@pytest.mark.parametrize("sizes,times", [([1024, 1024], [1e-3, 2e-3]), ([1, 2], [1e-3, float("nan")]),
                                         ([1, 2], [1e-3, -1.0]), ([1, 2, 3], [1e-3, 2e-3])])
def test_the_fit_refuses_what_it_cannot_fit(sizes, times):
    with pytest.raises(ValueError):
        fitting.fit_alpha_beta(sizes, times)


def test_a_falling_time_has_no_bandwidth_term():
    f = fitting.fit_alpha_beta([1e3, 1e6], [2e-3, 1e-3])
    assert f.inv_beta_gb_s is None
