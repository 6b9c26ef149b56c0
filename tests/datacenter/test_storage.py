"""x4lib.datacenter.storage: input read and checkpoint write bandwidth of a training run, by hand."""
import pytest

from x4lib.datacenter import storage


def test_checkpoint_is_weights_and_adam_state():
    assert storage.checkpoint_bytes(1e9) == pytest.approx(14e9)       # 2 B weights + 12 B FP32 Adam state


def test_storage_demand_by_hand():
    rate = 6 * 1e9 * 1000.0          # FLOP/s that process 1000 tokens/s of a 1B-parameter model
    s = storage.storage_demand(1e9, 1e12, rate, 4, 7e9, interval_s=98.0)
    assert s.tokens_per_s == pytest.approx(1000)
    assert s.input_read_Bps == pytest.approx(4000)
    assert s.dataset_B == pytest.approx(4e12)
    assert s.checkpoint_s == pytest.approx(14e9 / 7e9)
    assert s.average_write_Bps == pytest.approx(14e9 / 100.0)


@pytest.mark.parametrize("kw", [{"params": 0}, {"bytes_per_token": -1}, {"write_Bps": 0}, {"interval_s": 0}])
def test_impossible_inputs(kw):
    args = {"params": 1e9, "tokens": 1e9, "cluster_flop_per_s": 1e15, "bytes_per_token": 4, "write_Bps": 1e9,
            "interval_s": 10.0, **kw}
    with pytest.raises(ValueError):
        storage.storage_demand(**args)
