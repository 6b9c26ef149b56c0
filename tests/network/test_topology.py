"""x4lib.network.topology: metrics on small hand-computed networks and on published figures, and the CLI contract."""
import json

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.network import topology as topo

B = 50e9  # one NDR port per direction


# --- fat trees ---------------------------------------------------------------------------------------------------

def test_one_switch_is_a_one_tier_fat_tree():
    t = topo.fat_tree(8, 64, B)
    assert (t.switches, t.links, t.diameter_hops) == (1, 8, 2)
    assert t.bisection_Bps == 4 * B and t.bisection_ratio == 1


@pytest.mark.parametrize("k", [4, 8, 48, 64])
def test_full_k_ary_fat_trees_match_al_fares(k):
    """k³/4 hosts on 5k²/4 switches in three tiers, k³/4 links per tier (alfares-2008-fattree)."""
    n = k ** 3 // 4
    t = topo.fat_tree(n, k, B)
    assert t.shape["tiers"] == 3
    assert t.switches == 5 * k * k // 4
    assert t.links == 3 * n
    assert t.diameter_hops == 6
    assert t.bisection_Bps == n // 2 * B


def test_two_tier_leaf_spine_by_hand():
    t = topo.fat_tree(64 * 64 // 2, 64, B)  # 2,048 endpoints: 64 leaves + 32 spines
    assert t.shape == {"tiers": 2, "leaves": 64} and t.switches == 96 and t.links == 4096
    assert topo.fat_tree(2049, 64, B).shape["tiers"] == 3


def test_tiers_grow_with_size():
    assert [topo.fat_tree_tiers(n, 64) for n in (64, 65, 2048, 2049, 65536, 65537)] == [1, 2, 2, 3, 3, 4]


def test_rail_fat_tree_matches_the_superpod_four_su_fabric():
    """DGX SuperPOD (H100), four scalable units: 32 leaf + 16 spine QM9700 = 48 compute switches, 1,024 leaf-spine
    cables, one hop between nodes of one rail inside an SU of 32 (nvidia-superpod-h100-ra, Tables 4, 7)."""
    t = topo.rail_fat_tree(1024, 64, B, gpus_per_node=8)
    assert t.shape["leaves"] == 32 and t.switches == 48
    assert t.links - t.endpoint_links == 1024
    assert t.shape["same_rail_hops"] == 2 and t.shape["rail_groups"] == 4
    assert topo.rail_fat_tree(1016, 64, B).switches == 48  # 127 nodes (one slot kept for UFM)


def test_rail_fat_tree_has_at_least_a_fat_trees_switches():
    for n in (64, 1000, 4096, 100_000):
        assert topo.rail_fat_tree(n, 64, B).switches >= topo.fat_tree(n, 64, B).switches


# --- tori --------------------------------------------------------------------------------------------------------

def test_balanced_dims():
    assert topo.balanced_dims(4096, 3) == (16, 16, 16)
    assert topo.balanced_dims(256, 2) == (16, 16)
    assert topo.balanced_dims(8, 3) == (2, 2, 2)
    assert topo.balanced_dims(12, 2) == (3, 4)
    assert topo.balanced_dims(13, 2) == (1, 13)


def test_small_torus_by_hand():
    t = topo.torus(16, 2, B)  # 4 x 4: 16 + 16 links, diameter 2 + 2, cut crosses 2 x 4 links
    assert (t.switches, t.links, t.diameter_hops) == (0, 32, 4)
    assert t.bisection_Bps == 8 * B
    t2 = topo.torus(8, 3, B)  # 2 x 2 x 2: one link per pair of neighbours per dimension
    assert (t2.links, t2.diameter_hops, t2.bisection_Bps) == (12, 3, 4 * B)


@pytest.mark.parametrize("per_dir_per_port,pod_bisection", [(50e9, 1.6e12), (100e9, 3.2e12)])
def test_tpu_pod_bisection_matches_google(per_dir_per_port, pod_bisection):
    """16 x 16 2D torus: TPU v5e (400 GB/s per chip both ways, 4 ports) and v6e (800): Google prints 1.6 and
    3.2 TB/s bisection per pod (google-tpu-v5e-docs, google-tpu-v6e-docs)."""
    assert topo.torus(256, 2, per_dir_per_port).bisection_Bps == pytest.approx(pod_bisection)


def test_tpu_v4_pod_bisection_is_near_googles_24_tb_s():
    t = topo.torus(4096, 3, 45e9)  # 16^3, 45 GB/s per link one way (jax-scaling-book-tpus)
    assert t.bisection_Bps == pytest.approx(23.04e12)
    assert abs(t.bisection_Bps / 24e12 - 1) < 0.05


def test_torus_rejects_wrong_dims():
    with pytest.raises(ValueError, match="multiply"):
        topo.torus(64, 3, B, dims=(4, 4, 5))


# --- dragonfly ---------------------------------------------------------------------------------------------------

def test_dragonfly_shape_and_largest_size():
    assert topo.dragonfly_shape(64) == (16, 32, 16)  # p + a - 1 + h = 63 <= 64
    assert topo.dragonfly_shape(8) == (2, 4, 2)
    t = topo.dragonfly(4 * 2 * (4 * 2 + 1), 8, B)  # the largest radix-8 dragonfly: 72 endpoints, 9 groups
    assert t.shape["groups"] == 9 and t.switches == 36
    assert t.shape["global_links"] == 36 == 9 * 8 // 2  # one global link between every pair of groups
    assert t.shape["local_links"] == 9 * 6 and t.diameter_hops == 5
    assert t.bisection_Bps == 4 * 5 * B  # 4 x 5 group pairs across the cut, one link each
    with pytest.raises(ValueError, match="exceed"):
        topo.dragonfly(73, 8, B)


def test_full_dragonfly_has_about_half_bisection():
    t = topo.dragonfly(32 * 16 * (32 * 16 + 1), 64, B)
    assert t.bisection_ratio == pytest.approx(0.5, abs=0.01)


def test_single_router_and_single_group():
    assert topo.dragonfly(8, 64, B).diameter_hops == 2
    g = topo.dragonfly(64, 64, B)  # 4 routers of one group, spare local ports cabled in parallel
    assert g.diameter_hops == 3 and g.bisection_ratio == 1


# --- shared rules, sweep, CLI ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [dict(endpoints=1), dict(endpoints=2.5), dict(link_Bps=0), dict(radix=5),
                                 dict(endpoints=10**8)])
def test_bad_inputs(bad):
    kw = dict(endpoints=64, radix=64, link_Bps=B) | bad
    with pytest.raises(ValueError):
        topo.fat_tree(**kw)


def test_sweep_from_8_to_100000():
    sizes = [8, 64, 512, 4096, 32768, 100_000]
    for kind in topo.KINDS:
        ts = topo.sweep(kind, sizes, 64, B)
        assert [t.endpoints for t in ts] == sizes
        assert all(t.bisection_Bps > 0 and t.links > 0 for t in ts)
    ft = topo.sweep("fat-tree", sizes, 64, B)
    assert [t.diameter_hops for t in ft] == [2, 2, 4, 6, 6, 8]


def test_defaults_come_from_the_link_data():
    assert topo.default_radix() == 64 and topo.default_link_Bps() == pytest.approx(50e9)


def test_cli_json_contract():
    r = run_cli("topology", "--kind", "rail-fat-tree", "--endpoints", "1024", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    jsonschema.validate(d, load_schema("topology_output.schema.json"))
    assert (d["switches"], d["diameter_hops"], d["bisection_gb_s"]) == (48, 4, 25600)
    r = run_cli("topology", "--kind", "torus3d", "--endpoints", "4096", "--link-gb-s", "45", "--json")
    d = json.loads(r.stdout)
    jsonschema.validate(d, load_schema("topology_output.schema.json"))
    assert d["switches"] == 0 and d["radix"] is None and d["shape"]["dims"] == [16, 16, 16]


def test_cli_text():
    r = run_cli("topology", "--kind", "dragonfly", "--endpoints", "100000")
    assert r.returncode == 0 and "bisection" in r.stdout and "per direction" in r.stdout


@pytest.mark.parametrize("args,needle", [
    (["--kind", "hypercube", "--endpoints", "8"], "unknown topology kind 'hypercube'"),
    (["--kind", "fat-tree", "--endpoints", "1"], "must be >= 2"),
    (["--kind", "fat-tree", "--endpoints", "nan"], "not a finite number"),
    (["--kind", "fat-tree", "--endpoints", "64", "--radix", "63"], "even"),
    (["--kind", "fat-tree", "--endpoints", "64", "--link-gb-s", "0"], "must be > 0"),
    (["--kind", "dragonfly", "--endpoints", "9000000", "--radix", "16"], "exceed"),
    (["--kind", "fat-tree"], "--endpoints"),
])
def test_cli_bad_input_is_one_line_exit_2(args, needle):
    r = run_cli("topology", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert needle in r.stderr.strip().splitlines()[-1], r.stderr
