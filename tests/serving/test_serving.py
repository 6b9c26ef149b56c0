"""x4lib.serving.token_cost: the cost of a token, by hand for Llama 3 70B on 8 H100."""
import pytest

from x4lib.serving import token_cost as serving
from x4lib.catalog import specs


def test_kv_cache_bytes_per_token():
    m = serving.model("llama3-70b")
    assert m.head_dim == 128
    assert m.kv_bytes_per_token(2) == 2 * 80 * 8 * 128 * 2 == 327_680


def test_decode_is_memory_bound_and_costs_what_the_arithmetic_says():
    p = serving.serve("llama3-70b", "h100-sxm", 8, "bf16", batch=64, context_tokens=4096, memory_efficiency=0.8,
                      mfu=0.5, usd_per_gpu_hour=2.0, utilisation=0.5)
    n_params = serving.model("llama3-70b").params
    bytes_step = n_params * 2 + 64 * 4096 * 327_680
    bw = specs.get("h100-sxm").memory_bw_Bps
    t_mem = bytes_step / (8 * bw * 0.8)
    assert p.step_mem_s == pytest.approx(t_mem)
    assert p.decode_bound == "memory"
    assert p.decode_tokens_per_s == pytest.approx(64 / t_mem)
    assert p.decode_usd_per_million == pytest.approx(8 * 2.0 / (3600 * 64 / t_mem * 0.5) * 1e6)
    peak = specs.get("h100-sxm").peak_flop_per_s("bf16")
    assert p.prefill_tokens_per_s == pytest.approx(8 * peak * 0.5 / (2 * n_params))
    assert p.prefill_usd_per_million < p.decode_usd_per_million


def test_larger_batches_amortise_the_weights():
    small = serving.serve(batch=1, context_tokens=4096)
    big = serving.serve(batch=64, context_tokens=4096)
    assert big.decode_tokens_per_s > 10 * small.decode_tokens_per_s


def test_a_model_that_does_not_fit_is_refused():
    with pytest.raises(ValueError, match="needs .* GB"):
        serving.serve(n_gpus=1)                   # 141 GB of BF16 weights on one 80 GB H100
    with pytest.raises(ValueError):
        serving.serve(batch=0)
    with pytest.raises(LookupError):
        serving.model("gpt-5")
