"""x4lib.pages.ch02_nvlink: the NVLink chapter keeps per-direction and bidirectional figures apart, and its all-gather
times follow the bytes gathered (its tables and glue values are checked in test_pages_ch02.py)."""
import pytest

from x4lib.pages import ch02_nvlink as page


def test_bidirectional_is_twice_per_direction_and_spreading_costs_time():
    n = page.nvlink_numbers()
    for gen in (3, 4, 5):
        assert n[f"nv{gen}_gpu_bidir"] == pytest.approx(2 * n[f"nv{gen}_gpu_dir"])
    assert n["ag_spread_ms"] > n["ag_inside_ms"]


def test_allgather_time_scales_with_the_bytes_gathered():
    bf16 = {r["layout"]: r["time (ms)"] for r in page.allgather_rows("llama3-70b", "bf16")}
    fp8 = {r["layout"]: r["time (ms)"] for r in page.allgather_rows("llama3-70b", "fp8_e4m3")}
    assert all(fp8[k] < bf16[k] for k in bf16)
