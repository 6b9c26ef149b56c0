"""x4lib.training.memory: bytes of training state."""
from x4lib.training import memory
from x4lib.catalog import specs


def test_model_state_bytes():
    assert memory.model_state_bytes(1e9) == 16e9
    assert memory.min_devices_to_hold(16e9, 8e9) == 2
    assert memory.min_devices_to_hold(16e9 + 1, 8e9) == 3


# ------------------------------------------------------------------------------------------------ memory plans
import json  # noqa: E402

import jsonschema  # noqa: E402
import pytest  # noqa: E402

from conftest import load_schema, run_cli  # noqa: E402
from test_cli import check_usage_error  # noqa: E402


def test_training_plan_hand_worked_zero_stages():
    # 7e9 parameters, 8 GPUs, mixed-precision Adam: 2 + 2 + 12 B per parameter
    n = 7e9
    p0 = memory.training_plan(n, 8, zero=0)
    assert (p0.weights_B, p0.gradients_B, p0.optimizer_B) == (14e9, 14e9, 84e9)
    p1 = memory.training_plan(n, 8, zero=1)
    assert (p1.weights_B, p1.gradients_B, p1.optimizer_B) == (14e9, 14e9, 10.5e9)
    p2 = memory.training_plan(n, 8, zero=2)
    assert (p2.gradients_B, p2.optimizer_B) == (1.75e9, 10.5e9)
    p3 = memory.training_plan(n, 8, zero=3)
    assert p3.total_B == pytest.approx(16 * n / 8)
    assert p3.activations_B is None


def test_tensor_and_pipeline_parallelism_divide_before_zero():
    # 70e9 on 64 GPUs = data 8 x tensor 4 x pipeline 2; ZeRO-1 shards the optimizer over the 8 data ranks
    p = memory.training_plan(70e9, 64, zero=1, tp=4, pp=2)
    assert p.assumptions["data_parallel"] == 8
    assert p.weights_B == pytest.approx(70e9 / 8 * 2)
    assert p.optimizer_B == pytest.approx(70e9 / 8 * 12 / 8)


def test_optimizer_and_precision_bytes():
    assert memory.training_plan(1e9, 1, optimizer="sgd").optimizer_B == 8e9        # master 4 + momentum 4
    fp32 = memory.training_plan(1e9, 1, precision="fp32")
    assert (fp32.weights_B, fp32.gradients_B, fp32.optimizer_B) == (4e9, 4e9, 8e9)


def test_activations_follow_korthikanti_by_recompute_mode():
    s, b, h, a, t = 2048, 1, 12288, 96, 8          # GPT-3 175B shapes
    sbh = s * b * h
    assert memory.activation_bytes_per_layer(s, b, h, a, 1) == sbh * (34 + 5 * a * s / h)
    assert memory.activation_bytes_per_layer(s, b, h, a, t, "selective") == 34 * sbh / t
    assert memory.activation_bytes_per_layer(s, b, h, a, t, "full") == 2 * sbh / t
    plan = memory.training_plan(175e9, 64, zero=1, tp=8, pp=8, layers=96, hidden=h, seq=s, micro_batch=1,
                                recompute="selective", heads=a)
    assert plan.activations_B == pytest.approx(96 * 34 * sbh / 8)


def test_activations_with_tensor_parallelism_alone_follow_korthikanti_table_2():
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    sbh = s * b * h
    f = memory.activation_bytes_per_layer
    # the paper's forms, written out: TP alone replicates the layer norms, dropouts and layer inputs
    assert f(s, b, h, a, t, sequence_parallel=False) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert f(s, b, h, a, t, "selective", sequence_parallel=False) == pytest.approx(sbh * (10 + 24 / t))
    assert f(s, b, h, a, t, "full", sequence_parallel=False) == 2 * sbh
    # with sequence parallelism: sbh/t (34 + 5as/h), 34 sbh/t
    assert f(s, b, h, a, t) == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    assert f(s, b, h, a, t, "selective") == pytest.approx(34 * sbh / t)
    # one GPU: no tensor ranks to split over, the two forms are the same sbh (34 + 5as/h)
    for r in ("none", "selective"):
        assert f(s, b, h, a, 1, r, sequence_parallel=False) == pytest.approx(f(s, b, h, a, 1, r))
    # sequence parallelism saves the 10 sbh per layer that TP alone keeps on every rank
    assert f(s, b, h, a, t, sequence_parallel=False) - f(s, b, h, a, t) == pytest.approx(10 * sbh * (1 - 1 / t))
    plan = memory.training_plan(70e9, 64, zero=3, tp=8, layers=80, hidden=8192, seq=8192, micro_batch=1,
                                recompute="selective", sequence_parallel=False)
    assert plan.activations_B == pytest.approx(80 * 8192 * 8192 * (10 + 24 / 8))
    assert plan.assumptions["sequence_parallel"] is False
    with pytest.raises(ValueError, match="sequence_parallel"):
        f(s, b, h, a, t, sequence_parallel="no")


def test_memory_plan_cli_offers_both_activation_forms():
    base = ["memory-plan", "--params", "70e9", "--gpus", "64", "--zero", "3", "--tp", "8", "--layers", "80",
            "--hidden", "8192", "--seq", "8192", "--micro-batch", "1", "--recompute", "selective", "--json"]
    sp = json.loads(run_cli(*base).stdout)
    tp_only = json.loads(run_cli(*base, "--no-sequence-parallel").stdout)
    assert sp["assumptions"]["sequence_parallel"] is True and tp_only["assumptions"]["sequence_parallel"] is False
    assert sp["per_gpu_bytes"]["activations"] == pytest.approx(80 * 34 * 8192 * 8192 / 8)
    assert tp_only["per_gpu_bytes"]["activations"] == pytest.approx(80 * 8192 * 8192 * (10 + 24 / 8))
    check_usage_error(run_cli(*base, "--sequence-parallel=yes"), "--sequence-parallel")


@pytest.mark.parametrize("kwargs,needle", [
    ({"gpus": 6, "tp": 4}, "must divide"), ({"gpus": 8, "zero": 4}, "ZeRO stage"),
    ({"gpus": 8, "optimizer": "lion"}, "optimizer"), ({"gpus": 8, "layers": 32}, "missing"),
    ({"gpus": 8, "tp": 3, "layers": 2, "hidden": 10, "seq": 4, "micro_batch": 1}, "must divide"),
])
def test_training_plan_refuses_bad_input(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        memory.training_plan(1e9, **kwargs)


def test_fits_compares_with_the_vendor_figure_in_gb():
    f = memory.fits(80e9, ["h100-sxm", "a100-sxm-40gb"])
    assert f == {"h100-sxm": True, "a100-sxm-40gb": False}
    assert not memory.fits(80e9 + 1, ["h100-sxm"])["h100-sxm"]
    assert "i5-8250u" not in memory.plan_devices() and "wse-3" not in memory.plan_devices()


def test_inference_plan_splits_kv_heads_but_not_an_mla_latent():
    gqa = memory.inference_plan("llama3-70b", specs.get("h100-sxm"), gpus=8, context=8192, batch=4)
    assert gqa.kv_cache_B == 327_680 * 8192 * 4 / 8
    assert gqa.weights_B == pytest.approx(140.5e9 / 8, rel=0.01)
    mla = memory.inference_plan("deepseek-v3", specs.get("h200-sxm"), gpus=8, context=8192, batch=4)
    assert mla.kv_cache_B == 70_272 * 8192 * 4                        # replicated on every rank
    assert memory.inference_fits("llama3-8b", specs.get("h100-sxm"), 1)
    assert not memory.inference_fits("llama3-70b", specs.get("h100-sxm"), 1)


def test_memory_plan_cli_contract():
    r = run_cli("memory-plan", "--params", "70e9", "--gpus", "64", "--zero", "3", "--optimizer", "adam",
                "--precision", "bf16", "--tp", "8", "--layers", "80", "--hidden", "8192", "--seq", "8192",
                "--micro-batch", "1", "--recompute", "selective", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, load_schema("memory_plan_output.schema.json"))
    per = doc["per_gpu_bytes"]
    assert per["total"] == pytest.approx(per["weights"] + per["gradients"] + per["optimizer"] + per["activations"])
    assert per["activations"] == pytest.approx(80 * 34 * 8192 * 8192 / 8)
    assert doc["fits"]["h100-sxm"] is True


@pytest.mark.parametrize("args,needles", [
    (["memory-plan", "--params", "7e9", "--gpus", "6", "--tp", "4"], ["must divide"]),
    (["memory-plan", "--params", "7e9", "--gpus", "8", "--zero", "5"], ["unknown ZeRO stage '5'"]),
    (["memory-plan", "--params", "7e9", "--gpus", "8", "--layers", "3"], ["missing"]),
    (["memory-plan", "--params", "0", "--gpus", "8"], ["0 parameters"]),
    (["memory-plan", "--params", "7e9", "--gpus", "8", "--recompute", "half"], ["unknown recompute 'half'"]),
    (["memory-plan", "--gpus", "8"], ["--params"]),
])
def test_memory_plan_bad_input_exits_2(args, needles):
    check_usage_error(run_cli(*args), *needles)


def test_layer_activations_for_the_layer_a_framework_keeps():
    """The general per-layer count is Korthikanti's at a GPT layer; FlashAttention drops the score matrix (Dao et
    al. 2022) and keeps one FP32 log-sum-exp per head and token; GQA, SwiGLU and no dropout change the sum."""
    s, b, h, a, t = 2048, 2, 12288, 96, 8
    sbh = s * b * h
    g = memory.layer_activation_bytes
    for sp in (True, False):
        for rc in ("none", "selective", "full"):
            assert g(s, b, h, a, t, rc, sequence_parallel=sp) == pytest.approx(
                memory.activation_bytes_per_layer(s, b, h, a, t, rc, sequence_parallel=sp))
    assert g(s, b, h, a, t, flash_attention=True) == pytest.approx(sbh / t * 34 + s * b * 4 * a / t)
    # Llama 3 405B's layer: 8 K/V heads, SwiGLU 53248 wide, no dropout: 12h + 4kv + 6f bytes per token
    h, a, kv, f = 16384, 128, 8, 53248
    per = g(8192, 1, h, a, 8, kv_heads=kv, ffn=f, gated_mlp=True, dropout=False, flash_attention=True)
    assert per == pytest.approx(8192 / 8 * (12 * h + 4 * kv * 128 + 6 * f + 4 * a))
    with pytest.raises(ValueError, match="kv_heads"):
        g(s, b, h, a, t, kv_heads=0)


def test_pipeline_peak_is_the_busiest_1f1b_stage():
    # even split: the first stage holds p micro-batches of L/p layers, L layers' worth
    assert memory.layers_in_flight(96, 8) == 96 and memory.stage_layers(96, 8) == (12,) * 8
    # Llama 3: 126 layers over 16 stages, the first and last one layer short; the second stage is the peak
    assert memory.stage_layers(126, 16) == (7,) + (8,) * 14 + (7,)
    assert memory.layers_in_flight(126, 16) == 15 * 8
    # fewer micro-batches than stages: only m in flight
    assert memory.layers_in_flight(96, 8, micro_batches=2) == 24
    # no room to shorten the ends: every stage counted at the ceiling
    assert memory.stage_layers(20, 16) == (2,) * 16
    with pytest.raises(ValueError, match="evenly"):
        memory.training_plan(1e9, 8, pp=8, layers=20, hidden=1024, seq=128, micro_batch=1)
    assert memory.training_plan(1e9, 8, pp=8, layers=20, hidden=1024, seq=128, micro_batch=1,
                                uneven_stages=True).assumptions["layers_in_flight"] == 7 * 3  # (1, 3 x 6, 1)


def test_memory_plan_cli_takes_the_framework_and_the_layer():
    base = ["memory-plan", "--params", "405e9", "--gpus", "8192", "--zero", "2", "--tp", "8", "--pp", "16",
            "--layers", "128", "--hidden", "16384", "--heads", "128", "--seq", "8192", "--micro-batch", "1", "--json"]
    korth = json.loads(run_cli(*base).stdout)
    llama = ["--flash-attention", "--kv-heads", "8", "--ffn", "53248", "--mlp", "gated", "--no-dropout"]
    fa = json.loads(run_cli(*base, *llama).stdout)
    assert fa["assumptions"]["flash_attention"] is True and korth["assumptions"]["flash_attention"] is False
    per = 8192 / 8 * (12 * 16384 + 4 * 1024 + 6 * 53248 + 4 * 128)
    assert fa["per_gpu_bytes"]["activations"] == pytest.approx(128 * per)
    assert korth["per_gpu_bytes"]["activations"] > 10 * fa["per_gpu_bytes"]["activations"]
    check_usage_error(run_cli(*base, "--kv-heads", "0"), "--kv-heads")
