"""x4lib.pages.ch02_nvlink: the NVLink chapter's tables and glue values build, read as text, hold finite numbers, and
keep per-direction and bidirectional figures apart."""
import math

import pytest

from x4lib.pages import ch02_nvlink as page


@pytest.mark.parametrize("name", ["nvlink_table", "dgx_table", "allgather_table"])
def test_tables_build_without_reprs_and_stay_short(name):
    t = getattr(page, name)()
    cells = [c for row in t.rows for c in row]
    assert 0 < len(t) <= 20
    assert not [c for c in cells if c.lower() in ("nan", "none", "true", "false") or "np." in c]


def test_glue_values_are_finite_and_bidirectional_is_twice_per_direction():
    n = page.nvlink_numbers()
    for key, v in n.items():
        assert isinstance(v, (int, float, str)), (key, v)
        if isinstance(v, float):
            assert math.isfinite(v), key
    for gen in (3, 4, 5):
        assert n[f"nv{gen}_gpu_bidir"] == pytest.approx(2 * n[f"nv{gen}_gpu_dir"])
    assert n["ag_spread_ms"] > n["ag_inside_ms"]


def test_allgather_time_scales_with_the_bytes_gathered():
    bf16 = {r["layout"]: r["time (ms)"] for r in page.allgather_rows("llama3-70b", "bf16")}
    fp8 = {r["layout"]: r["time (ms)"] for r in page.allgather_rows("llama3-70b", "fp8_e4m3")}
    assert all(fp8[k] < bf16[k] for k in bf16)
