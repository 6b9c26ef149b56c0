"""x4lib.serving.inference: KV cache on hand-worked cases, parameter counts against the papers, the decode roofline, and
the kv-cache command line."""
import json

import jsonschema
import pytest

from conftest import load_schema, run_cli
from test_cli import check_usage_error
from x4lib.serving import inference as I
from x4lib.catalog import specs


def test_kv_bytes_per_token_hand_worked():
    # Llama 3 70B in BF16: 2 (K and V) x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B
    assert I.kv_bytes_per_token(80, 8, 128, "bf16") == 327_680
    assert I.model_kv_bytes_per_token("llama3-70b") == 327_680
    # Llama 2 7B keeps multi-head attention: 2 x 32 x 32 x 128 x 2 = 524,288 B (4x Llama 3 8B's 131,072)
    assert I.model_kv_bytes_per_token("llama2-7b") == 524_288
    assert I.model_kv_bytes_per_token("llama3-8b") == 131_072
    # DeepSeek-V3's latent cache: 61 layers x (512 + 64) x 2 B = 70,272 B
    assert I.model_kv_bytes_per_token("deepseek-v3") == 70_272
    assert I.model_kv_bytes_per_token("llama3-70b", "fp8_e4m3") == 163_840


def test_kv_cache_total_and_sliding_window():
    kv = I.model_kv_cache("llama3-70b", context=8192, batch=16)
    assert kv.total_bytes == 327_680 * 8192 * 16 and kv.total_gb == pytest.approx(42.95, abs=0.01)
    mistral = I.model_kv_cache("mistral-7b", context=32_768)
    assert mistral.tokens_cached == 4096 and mistral.total_bytes == 131_072 * 4096
    with pytest.raises(ValueError):
        I.kv_cache(100.0, 0)
    with pytest.raises(ValueError):
        I.kv_bytes_per_token(0, 8, 128)
    with pytest.raises(ValueError):
        I.kv_bytes_per_token(80, 8, 128, "tf32")


@pytest.mark.parametrize("model,stated_total,stated_active", [
    ("llama2-7b", 7e9, None), ("llama3-8b", 8e9, None), ("llama3-70b", 70e9, None), ("llama3-405b", 405e9, None),
    ("mistral-7b", 7.3e9, None), ("mixtral-8x7b", 47e9, 13e9), ("deepseek-v3", 671e9, 37e9)])
def test_computed_parameter_counts_match_the_papers(model, stated_total, stated_active):
    p = I.param_counts(model)
    assert p["total"] == pytest.approx(stated_total, rel=0.04)
    if stated_active:
        assert p["active"] == pytest.approx(stated_active, rel=0.04)
    else:
        assert p["active"] == p["total"]


def test_every_stored_model_cites_a_key_of_the_bibliography():
    from x4lib.book import bib
    keys = bib.book_keys()
    assert all(m.source in keys for m in I.models().values())


def test_experts_touched():
    assert I.experts_touched(8, 2, 1) == pytest.approx(2)
    assert I.experts_touched(8, 2, 1000) == pytest.approx(8)
    assert I.experts_touched(0, 0, 5) == 0


def test_decode_at_batch_one_is_weight_bandwidth_bound():
    s = I.decode_step("llama3-8b", "h100-sxm", batch=1, context=1)
    p = I.param_counts("llama3-8b")
    expected_weights = (p["total"] - p["embedding"]) * 2
    assert s.weight_read_B == expected_weights
    assert s.bound == "memory"
    bw = specs.get("h100-sxm").memory_bw_Bps
    assert s.tokens_per_s == pytest.approx(bw / (expected_weights + 131_072), rel=1e-9)


def test_decode_turns_compute_bound_exactly_at_the_crossover_batch():
    b = I.crossover_batch("llama3-70b", "h100-sxm", context=1024)
    assert b is not None
    assert I.decode_step("llama3-70b", "h100-sxm", b, 1024).bound == "compute"
    assert I.decode_step("llama3-70b", "h100-sxm", b - 1, 1024).bound == "memory"
    # a crossover exists only where the large-batch intensity exceeds the ridge point
    ridge = specs.get("h100-sxm").peak_flop_per_s("bf16") / specs.get("h100-sxm").memory_bw_Bps
    assert I.asymptotic_intensity("llama3-70b", 1024) > ridge
    assert I.asymptotic_intensity("llama3-8b", 8192) < ridge
    assert I.crossover_batch("llama3-8b", "h100-sxm", context=8192) is None


def test_fp8_weights_use_the_fp8_peak_where_the_device_has_one():
    assert I.decode_step("llama3-8b", "h100-sxm", 1, 1, weight_dtype="fp8_e4m3").compute_dtype == "fp8_e4m3"
    assert I.decode_step("llama3-8b", "a100-sxm-80gb", 1, 1, weight_dtype="fp8_e4m3").compute_dtype == "bf16"


def test_max_batch_and_capacity():
    # 70B in BF16 (141 GB of weights) does not fit in an 80 GB H100, so no batch fits
    assert I.max_batch("llama3-70b", "h100-sxm", 8192) == 0
    b = I.max_batch("llama3-8b", "h100-sxm", 8192)
    assert I.decode_step("llama3-8b", "h100-sxm", b, 8192).fits
    assert not I.decode_step("llama3-8b", "h100-sxm", b + 1, 8192).fits
    with pytest.raises(ValueError):
        I.max_batch("llama3-8b", "h100-sxm", 8192, reserve_fraction=1.0)


def test_kv_cache_cli_matches_its_contract_for_a_shape_and_a_model():
    schema = load_schema("kv_cache_output.schema.json")
    r = run_cli("kv-cache", "--layers", "80", "--kv-heads", "8", "--head-dim", "128", "--dtype", "bf16",
                "--context", "8192", "--batch", "16", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, schema)
    assert (doc["bytes_per_token"], doc["total_bytes"]) == (327_680, 327_680 * 8192 * 16)
    r = run_cli("kv-cache", "--model", "mistral-7b", "--context", "32768", "--json")
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, schema)
    assert doc["tokens_cached"] == 4096 and doc["total_gb"] == pytest.approx(131_072 * 4096 / 1e9)


@pytest.mark.parametrize("args,needles", [
    (["kv-cache", "--context", "8192"], ["--layers, --kv-heads and --head-dim are all required"]),
    (["kv-cache", "--model", "llama3-8b", "--layers", "32", "--context", "8"], ["either --model"]),
    (["kv-cache", "--model", "llama4", "--context", "8"], ["unknown model 'llama4'"]),
    (["kv-cache", "--layers", "0", "--kv-heads", "8", "--head-dim", "128", "--context", "8"], ["0 layers"]),
    (["kv-cache", "--layers", "2", "--kv-heads", "8", "--head-dim", "128", "--context", "nan"], ["not a finite"]),
    (["kv-cache", "--layers", "2", "--kv-heads", "8", "--head-dim", "128", "--context", "8", "--dtype", "fp7"],
     ["unknown KV dtype 'fp7'"]),
    (["kv-cache", "--layers", "2", "--kv-heads", "1.5", "--head-dim", "128", "--context", "8"],
     ["not a whole number"]),
])
def test_kv_cache_bad_input_exits_2_with_one_line(args, needles):
    check_usage_error(run_cli(*args), *needles)
