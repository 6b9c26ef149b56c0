"""x4lib.network.nvlink: link arithmetic against the catalog, systems as built, the NVL72 domain, weight all-gathers."""
import pytest

from x4lib.network import nvlink
from x4lib.catalog import specs


def test_links_times_rate_is_the_catalogs_per_direction_figure():
    checked = 0
    for g in nvlink.generations():
        if g.device:
            assert g.gpu_Bps_per_direction == specs.get(g.device).si("scaleup_bw_gb_s_per_direction")
            checked += 1
        assert g.gpu_Bps_bidirectional == 2 * g.gpu_Bps_per_direction
    assert checked >= 3


def test_each_generation_doubles_something():
    gens = {g.generation: g for g in nvlink.generations()}
    assert gens[4].links == 18 and gens[4].link_Bps_per_direction == gens[3].link_Bps_per_direction
    assert gens[5].link_Bps_per_direction == 2 * gens[4].link_Bps_per_direction


def test_dgx_h100_as_built():
    dgx = nvlink.system("dgx-h100")
    assert "Intel Xeon" in dgx["cpus"]["value"] and "EPYC" not in dgx["cpus"]["value"]
    assert nvlink.dgx_power_per_gpu_W("dgx-h100") == specs.get("h100-sxm").values["server_power_w_per_gpu"].value
    rows = nvlink.system_rows()
    assert len(rows) == len(nvlink.SYSTEM_FIELDS) and all(len(r) == 3 for r in rows)
    with pytest.raises(LookupError):
        nvlink.system("dgx-a100")


def test_nvl72_aggregate_is_the_sum_of_per_gpu_bidirectional_bandwidth():
    n = nvlink.nvl72()
    assert n["computed_aggregate_Bps"] == pytest.approx(n["nvidia_aggregate_Bps"], rel=0.005)
    assert n["gpus_per_tray"] * n["compute_trays"] == n["gpus"] == 72
    assert n["switch_chips"] == 18


def test_weight_allgather_inside_a_node_beats_one_gpu_per_node():
    rows = {r["layout"]: r for r in nvlink.allgather_cases(100e9)}
    inside = next(r for k, r in rows.items() if k.startswith("8 x H100, one node"))
    spread = next(r for k, r in rows.items() if k.startswith("8 x H100, one per node"))
    assert spread["time_s"] > 5 * inside["time_s"]
    nvl = next(r for k, r in rows.items() if "NVL72" in k)
    nodes = next(r for k, r in rows.items() if k.startswith("72 x B200"))
    assert nvl["time_s"] < nodes["time_s"]
