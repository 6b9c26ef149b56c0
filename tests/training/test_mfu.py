"""x4lib.training.mfu: the MFU budget of a training run, term by term, checked by hand arithmetic."""
import dataclasses

import pytest

from x4lib.training import economics, mfu
from x4lib.catalog import specs

H100 = specs.get("h100-sxm")


@pytest.fixture(scope="module")
def run():
    return mfu.quiz_run()


@pytest.fixture(scope="module")
def budget(run):
    return mfu.budget(run, H100)


def test_the_quiz_layout_fills_the_cluster(run):
    g = economics.quiz_givens()
    assert run.n_gpus == g["n_gpus"] and run.params == g["params"]
    assert run.microbatches == run.global_batch_tokens // (run.seq_len * run.dp)


def test_attention_flop_by_hand(run):
    full = 12 * run.layers * run.d_model * run.seq_len  # PaLM: 12·L·H·Q·T with H·Q = d_model
    assert mfu.attention_flop_per_token(run) == full
    assert mfu.attention_flop_per_token(run, causal=True) == full / 2
    assert mfu.attention_share(run) == pytest.approx(full / (6 * run.params))


def test_the_layer_gemms_do_three_times_the_forward_work(run):
    d, f, kv = run.d_model, run.ffn, run.kv_heads * run.head_dim
    layer_params = d * (d + 2 * kv) + d * d + 3 * d * f
    s = run.seq_len * run.microbatch_sequences
    flop = sum(2 * m * n * k for m, n, k in run.layer_gemms())
    assert flop == pytest.approx(6 * layer_params / run.tp * s)  # forward 2, backward 4 per parameter and token


def test_the_terms_add_up_to_the_step(budget, run):
    assert sum(t.seconds for t in budget.terms) == pytest.approx(budget.step_s)
    P = specs.get("h100-sxm").peak_flop_per_s("bf16")
    assert budget.ideal_s == pytest.approx(6 * run.params * run.global_batch_tokens / (run.n_gpus * P))
    assert budget.mfu == pytest.approx(budget.ideal_s / budget.step_s)
    assert 0 < budget.mfu < budget.matmul_efficiency < 1
    assert budget.mfu_with_attention == pytest.approx(budget.mfu * (1 + mfu.attention_share(run)))


def test_the_data_parallel_volume_and_its_window(budget, run):
    assert budget.notes["grad_bytes"] == pytest.approx(2 * run.params / (run.tp * run.pp))
    assert budget.dp_hidden == (budget.notes["rs_s"] <= budget.dp_window_s and budget.notes["ag_s"] <= budget.dp_window_s)
    exposed = next(t for t in budget.terms if t.name.startswith("data-parallel")).seconds
    assert exposed == pytest.approx(max(0, budget.notes["rs_s"] - budget.dp_window_s)
                                    + max(0, budget.notes["ag_s"] - budget.dp_window_s))


def test_shorter_microbatches_cannot_hide_the_gradients(run):
    # the window is one microbatch's backward pass: an eighth of the tokens per microbatch, an eighth of the window
    small = dataclasses.replace(run, seq_len=run.seq_len // 8, global_batch_tokens=run.global_batch_tokens // 8)
    b = mfu.budget(small, H100)
    assert b.dp_window_s < mfu.budget(run, H100).dp_window_s / 7
    assert not b.dp_hidden
    assert next(t for t in b.terms if t.name.startswith("data-parallel")).seconds > 0
    assert b.mfu < mfu.budget(run, H100).mfu


def test_failures_scale_with_the_gpu_count(run):
    ref = economics.sourced()["reference_points"]
    per_interruption_h = ((1 - ref["llama3_effective_training_time_min"]["value"])
                          * ref["llama3_interruption_snapshot_days"]["value"] * 24
                          / ref["llama3_interruptions_total"]["value"])
    rate_h = (ref["llama3_unexpected_interruptions"]["value"] / (ref["llama3_interruption_snapshot_days"]["value"] * 24)
              * run.n_gpus / ref["llama3_interruption_gpus"]["value"])
    assert mfu.budget(run, H100).lost_share == pytest.approx(rate_h * per_interruption_h)


@pytest.mark.parametrize("change", [{"tp": 0}, {"layers": 81}, {"global_batch_tokens": 1000}, {"params": -1.0}])
def test_an_impossible_run_is_refused(run, change):
    with pytest.raises(ValueError):
        dataclasses.replace(run, **change)
