"""x4lib.catalog.formats: format properties against their definitions, rounding against torch, block scaling, delayed
scaling."""
import math

import numpy as np
import pytest
import torch

from x4lib.catalog import formats as F

# (format, largest finite, smallest normal, smallest subnormal, eps): the values the OCP tables and the Transformer
# Engine documentation print (ocp-ofp8, ocp-mx-v1, nvidia-te-fp8-primer), written as powers of two.
PRINTED = [
    ("fp8_e4m3", 448.0, 2.0 ** -6, 2.0 ** -9, 2.0 ** -3),
    ("fp8_e5m2", 57344.0, 2.0 ** -14, 2.0 ** -16, 2.0 ** -2),
    ("fp6_e3m2", 28.0, 0.25, 0.0625, 0.25),
    ("fp6_e2m3", 7.5, 1.0, 0.125, 0.125),
    ("fp4_e2m1", 6.0, 1.0, 0.5, 0.5),
    ("fp16", 65504.0, 2.0 ** -14, 2.0 ** -24, 2.0 ** -10),
]


@pytest.mark.parametrize("fmt,fmax,fmin_normal,fmin_sub,eps", PRINTED)
def test_limits_are_the_printed_ones(fmt, fmax, fmin_normal, fmin_sub, eps):
    f = F.get(fmt)
    assert (f.max_finite, f.min_normal, f.min_subnormal, f.eps) == (fmax, fmin_normal, fmin_sub, eps)


@pytest.mark.parametrize("fmt,dtype", [("fp8_e4m3", torch.float8_e4m3fn), ("fp8_e5m2", torch.float8_e5m2),
                                       ("bf16", torch.bfloat16), ("fp16", torch.float16)])
def test_limits_agree_with_torch_finfo(fmt, dtype):
    f, fi = F.get(fmt), torch.finfo(dtype)
    assert f.max_finite == float(fi.max)
    assert f.min_normal == float(fi.smallest_normal)
    assert f.eps == float(fi.eps)


def test_code_counts_follow_the_special_value_rules():
    e4m3, e5m2, e2m1 = F.get("fp8_e4m3"), F.get("fp8_e5m2"), F.get("fp4_e2m1")
    assert (e4m3.n_finite_codes, e4m3.n_nan_codes, e4m3.has_inf) == (254, 2, False)
    assert (e5m2.n_finite_codes, e5m2.n_nan_codes, e5m2.has_inf) == (248, 6, True)
    assert e5m2.n_finite_codes + e5m2.n_nan_codes + 2 == 256          # + two infinities
    assert (e2m1.n_finite_codes, e2m1.n_nan_codes) == (16, 0)


def test_fp4_has_exactly_the_fifteen_values_of_the_nvfp4_ruler():
    assert F.get("fp4_e2m1").values.tolist() == [-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6]


def test_spacing_doubles_every_binade():
    e4m3 = F.get("fp8_e4m3")
    assert e4m3.spacing(1.0) == 0.125 and e4m3.spacing(2.5) == 0.25 and e4m3.spacing(300.0) == 32.0
    assert e4m3.spacing(0.001) == e4m3.min_subnormal                   # subnormals are evenly spaced
    assert F.get("fp8_e5m2").spacing(1.0) == 0.25


def test_rounding_is_to_nearest_with_ties_to_even():
    # 1.0625 lies halfway between 1 (mantissa 000) and 1.125 (001): goes to 1; 1.1875 between 1.125 and 1.25 -> 1.25
    assert F.quantize([1.0625, 1.1875, -1.0625], "fp8_e4m3").tolist() == [1.0, 1.25, -1.0]
    assert F.quantize([3.3], "fp8_e4m3").tolist() == [3.25] and F.quantize([3.3], "fp8_e5m2").tolist() == [3.5]


@pytest.mark.parametrize("fmt,overflow", [("fp8_e4m3", "saturate"), ("fp8_e5m2", "ieee"), ("bf16", "ieee"),
                                          ("fp16", "ieee")])
def test_our_rounding_equals_torch_cast_on_random_values_and_ties(fmt, overflow):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(20000) * 10 ** rng.uniform(-6, 6, 20000),
                        (F.get(fmt).values[:-1] + F.get(fmt).values[1:])[::7] / 2,      # exact midpoints
                        [0.0, -0.0, 1e30, -1e30, np.inf, -np.inf]]).astype(np.float32).astype(np.float64)
    ours, theirs = F.quantize(x, fmt, overflow=overflow), F.torch_cast(x, fmt)
    assert np.array_equal(ours, theirs, equal_nan=True)


def test_overflow_modes_differ_only_beyond_the_largest_value():
    assert F.quantize([464.0, 465.0, np.inf], "fp8_e4m3").tolist() == [448.0, 448.0, 448.0]
    ieee = F.quantize([464.0, 465.0], "fp8_e4m3", overflow="ieee")
    assert ieee[0] == 448.0 and math.isnan(ieee[1])                     # E4M3 has no infinity: NaN
    assert F.quantize([61440.0, 61439.0], "fp8_e5m2", overflow="ieee").tolist() == [math.inf, 57344.0]
    assert F.quantize([100.0], "fp4_e2m1", overflow="ieee").tolist() == [6.0]   # no inf, no NaN: clamps
    with pytest.raises(ValueError):
        F.quantize([1.0], "fp8_e4m3", overflow="wrap")


def test_unknown_formats_are_refused_with_the_known_list():
    with pytest.raises(LookupError, match="fp8_e4m3"):
        F.get("fp8")
    with pytest.raises(LookupError, match="nvfp4"):
        F.get_block("fp4")


def test_block_storage_cost():
    assert F.get_block("mxfp8_e4m3").bits_per_element == 8.25
    assert F.get_block("mxfp4").bits_per_element == 4.25
    assert F.get_block("nvfp4").bits_per_element == 4.5


def test_mx_scale_is_the_spec_power_of_two():
    x = np.zeros(64)
    x[:32] = 1.0            # amax 1 -> floor(log2 1) - emax(E2M1 = 2) = -2
    x[32:] = 100.0          # amax 100 -> 6 - 2 = 4
    assert F.mx_scale_exponents(x, "mxfp4").tolist() == [-2, 4]
    assert F.mx_scale_exponents(np.zeros(32), "mxfp4").tolist() == [0]
    assert F.mx_scale_exponents(np.full(32, 1e-60), "mxfp8_e4m3").tolist() == [-127]   # E8M0 floor


def test_mx_blocks_are_independent_and_exact_on_grid_values():
    grid = F.get("fp4_e2m1").values[8:]           # 0.5 ... 6
    block = np.resize(grid, 32) * 2.0 ** 5         # a power-of-two multiple of the grid: exactly representable
    x = np.concatenate([block, np.full(32, 1e4)])
    q = F.quantize_mx(x, "mxfp4")
    assert np.array_equal(q[:32], block)           # the large second block does not change the first
    assert F.quantize_mx(x.reshape(2, 32), "mxfp4").shape == (2, 32)


def test_nvfp4_two_level_scale_is_exact_on_a_grid_block_and_beats_mxfp4_on_outliers():
    block = np.resize(F.get("fp4_e2m1").values[8:], 16)          # amax 6: s_enc = 448, block scale 448: exact
    assert np.array_equal(F.quantize_nvfp4(block), block)
    x = F.sample("outliers", 4096)
    assert F.sqnr_db(x, F.quantize_nvfp4(x)) > F.sqnr_db(x, F.quantize_mx(x, "mxfp4"))


def test_each_mantissa_bit_is_worth_about_six_db():
    x = F.sample("normal", 1 << 15)
    e4m3 = F.sqnr_db(x, F.quantize_per_tensor(x, "fp8_e4m3"))
    e5m2 = F.sqnr_db(x, F.quantize_per_tensor(x, "fp8_e5m2"))
    assert 4.0 < e4m3 - e5m2 < 8.0


def test_block_scaling_rescues_fp4_on_heavy_tails():
    rows = {(r["tensor"], r["scheme"]): r["sqnr_db"] for r in F.error_rows(("heavy-tailed",), n=1 << 14)}
    assert rows[("heavy-tailed", "NVFP4, block 16")] > rows[("heavy-tailed", "FP4 E2M1, per-tensor scale")] + 10


def test_sqnr_of_an_exact_copy_is_infinite_and_of_nan_is_minus_infinite():
    assert F.sqnr_db([1.0, 2.0], [1.0, 2.0]) == math.inf
    assert F.sqnr_db([1.0, 2.0], [1.0, np.nan]) == -math.inf


def test_sample_kinds_are_seeded_and_known():
    assert np.array_equal(F.sample("heavy-tailed", 100, seed=3), F.sample("heavy-tailed", 100, seed=3))
    assert np.abs(F.sample("outliers", 1024)).max() > 20
    with pytest.raises(LookupError):
        F.sample("uniform")


def test_delayed_scaling_uses_the_past_and_saturates_on_a_jump():
    steps = F.delayed_scaling([2.0, 2.0, 2.0, 8.0, 2.0], "fp8_e4m3", history_len=16)
    assert steps[0].scale == 1.0 and not steps[0].saturated               # no history yet: TE's initial scale
    assert steps[1].scale == pytest.approx(448 / 2.0) and steps[1].headroom == pytest.approx(1.0)
    assert steps[3].saturated and steps[3].scaled_amax == pytest.approx(4 * 448)
    assert steps[4].scale == pytest.approx(448 / 8.0) and steps[4].headroom == pytest.approx(4.0)   # max over history
    recent = F.delayed_scaling([2.0, 8.0, 2.0], history_len=16, algo="most_recent")
    assert recent[2].scale == pytest.approx(448 / 8.0)
    margin = F.delayed_scaling([2.0, 2.0], margin=1)
    assert margin[1].scale == pytest.approx(448 / 2.0 / 2)
    with pytest.raises(ValueError):
        F.delayed_scaling([1.0], history_len=0)


def test_fp8_matmul_on_the_cpu_matches_our_emulation():
    r = F.scaled_mm_error(n=128)
    assert 0.005 < r["rel_error"] < 0.1
    assert r["rel_error"] == pytest.approx(r["emulated_rel_error"], rel=0.05)


def test_torch_overflow_report_is_what_torch_returns():
    report = F.torch_overflow("fp8_e5m2", values=(1e6,))
    assert report == {1e6: math.inf}


def test_round_up_scale_rule_never_clips_and_helps_mxfp8_with_outliers():
    x = F.sample("outliers", 1 << 14)
    up = F.mx_scale_exponents(x, "mxfp8_e4m3", rule="round-up")
    blocks = np.abs(x.reshape(-1, 32)).max(axis=1)
    assert np.all(blocks / 2.0 ** up <= 448.0)
    ocp = F.mx_scale_exponents(x, "mxfp8_e4m3")
    assert np.all((up - ocp >= 0) & (up - ocp <= 1))
    assert F.sqnr_db(x, F.quantize_mx(x, "mxfp8_e4m3", "round-up")) > F.sqnr_db(x, F.quantize_mx(x, "mxfp8_e4m3"))
    with pytest.raises(ValueError):
        F.mx_scale_exponents(x, "mxfp4", rule="nearest")
