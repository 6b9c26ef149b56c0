"""x4lib.network.collectives: nccl-tests' bus-bandwidth factors, the closed forms by hand, the two-level model's limits, the
one map of collective names, and the collective-predict command line."""
import json
import subprocess
import sys

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.network import collectives as co
from x4lib.network import clusters, nccl_tests, nccl_tuner
from x4lib.catalog import specs

US = 1e-6


# --- bus-bandwidth factors (nccl-tests) -------------------------------------------------------------------------

@pytest.mark.parametrize("collective,n,factor", [
    ("all_reduce", 2, 1.0), ("all_reduce", 8, 1.75), ("all_reduce", 16, 1.875),
    ("all_gather", 8, 0.875), ("reduce_scatter", 8, 0.875), ("all_to_all", 8, 0.875),
    ("broadcast", 8, 1.0), ("reduce", 8, 1.0), ("sendrecv", 2, 1.0),
])
def test_busbw_factors(collective, n, factor):
    assert nccl_tests.busbw_factor(collective, n) == pytest.approx(factor)


# --- closed forms on small cases, by hand -----------------------------------------------------------------------

def test_ring_allreduce_two_ranks_by_hand():
    # n = 2: 2(n-1) = 2 latency terms and 2(n-1)/n = 1 pass of S over the link
    a, bw, S = 5 * US, 10e9, 1e6
    t = co.alpha_beta_time_s("all_reduce", "ring", S, 2, a, bw)
    assert t == pytest.approx(2 * 5e-6 + 1e6 / 10e9)  # 10 µs + 100 µs


def test_ring_allreduce_four_ranks_by_hand():
    a, bw, S = 1 * US, 100e9, 4e6
    # 2·3 = 6 α + 2·3/4 · 4 MB / 100 GB/s = 6 µs + 60 µs
    assert co.alpha_beta_time_s("all_reduce", "ring", S, 4, a, bw) == pytest.approx(66e-6)


@pytest.mark.parametrize("collective,family,expected", [
    ("reduce_scatter", "ring", 7 * 2e-6 + 7 / 8 * 8e6 / 1e11),
    ("all_gather", "tree", 3 * 2e-6 + 7 / 8 * 8e6 / 1e11),          # recursive doubling: log2(8) = 3 steps
    ("broadcast", "ring", 7 * 2e-6 + 8e6 / 1e11),                   # pipelined chain
    ("broadcast", "tree", 3 * (2e-6 + 8e6 / 1e11)),                 # binomial tree
    ("all_reduce", "tree", 2 * 3 * 2e-6 + 2 * 8e6 / 1e11),          # double binary tree
    ("all_to_all", "ring", 7 * 2e-6 + 7 / 8 * 8e6 / 1e11),          # pairwise exchange
    ("all_to_all", "tree", 3 * (2e-6 + 4e6 / 1e11)),                # Bruck
])
def test_closed_forms_eight_ranks(collective, family, expected):
    assert co.alpha_beta_time_s(collective, family, 8e6, 8, 2e-6, 1e11) == pytest.approx(expected)


# --- NCCL's cost model: hand-traced cases (research notes, src/graph/tuning.cc at v2.30.7-1) ------------------

def h100_node(**kw):
    return clusters.custom_cluster(1, 8, 450e9, nvls=True, **kw)


def test_nccl_sees_nvlink_as_links_times_its_per_link_figure():
    assert nccl_tuner.intra_bw_Bps(h100_node()) == pytest.approx(18 * 20.6e9)          # 370.8 GB/s of 450
    assert nccl_tuner.intra_bw_Bps(clusters.get("2x8-a100-ib200")) == pytest.approx(12 * 20e9)
    assert nccl_tuner.intra_bw_Bps(h100_node(intra_efficiency=0.5)) == pytest.approx(225e9)  # an override wins


def test_graphs_hand_traced():
    one = nccl_tuner.graphs(h100_node())
    assert (one["ring"].channels, one["ring"].bw_GBps) == (12, 30.0)        # 6 x 60, duplicated at half speed
    assert (one["nvls"].channels, one["nvls"].bw_intra_GBps, one["nvls"].bw_inter_GBps) == (8, 40.0, 60.0)
    two = nccl_tuner.graphs(clusters.get("2x8-h100-ib400"))
    assert (two["ring"].channels, two["ring"].bw_GBps) == (8, 48.0)          # one channel per 400 Gb/s NIC
    a100 = nccl_tuner.graphs(clusters.get("2x8-a100-ib200"))
    assert (a100["ring"].channels, a100["ring"].bw_GBps) == (8, 24.0) and a100["ring"].limited_by == "network"
    assert "nvls" not in a100


def test_two_node_tree_graph_gets_up_to_twice_the_network_speed_inside_the_node():
    # search.cc pass 2 ("increase bwIntra for trees (2 nodes or collnet)"): 4 x 100 Gb/s EFA on 8 A100 (p4de)
    p4de = clusters.custom_cluster(2, 8, 300e9, 4, 12.5e9, arch="ampere", network="efa")
    g = nccl_tuner.graphs(p4de)
    assert (g["ring"].channels, g["ring"].bw_intra_GBps, g["ring"].bw_inter_GBps) == (4, 12.0, 12.0)
    assert (g["tree"].channels, g["tree"].bw_intra_GBps, g["tree"].bw_inter_GBps) == (4, 24.0, 12.0)  # 12 .. 24
    # the tuner prices <= 2 nodes with bwIntra: NCCL picks the tree at 2 GiB, above the ring's wire bound
    best = co.predict("all_reduce", 2**31, p4de, nccl_version="2.26.2")
    assert (best.algorithm, best.protocol) == ("tree", "Simple")
    assert best.busbw_Bps > co.wire_bound_busbw_Bps(p4de, "ring")
    # NVLink must carry the channels: 8 x 200 Gb/s on 8 A100 climbs 24 -> 28 -> 30, not to 48 (8 x 48 > 240)
    assert nccl_tuner.graphs(clusters.get("2x8-a100-ib200"))["tree"].bw_intra_GBps == 30.0
    # already at the list's top: unchanged; on four nodes the tuner prices with bwInter, so the tree's price is too
    assert nccl_tuner.graphs(clusters.get("2x8-h100-ib400"))["tree"].bw_intra_GBps == 48.0
    four = clusters.custom_cluster(4, 8, 300e9, 4, 12.5e9, arch="ampere", network="efa")
    assert _option("all_reduce", 2**30, four, "tree", "Simple").algbw_Bps < \
        _option("all_reduce", 2**30, p4de, "tree", "Simple").algbw_Bps / 1.5


def _option(collective, S, c, algorithm, protocol):
    return next(o for o in co.options(collective, S, c) if (o.algorithm, o.protocol) == (algorithm, protocol))


def test_single_node_bandwidths_and_latency_by_hand():
    c = h100_node()
    ring = _option("all_reduce", 2**30, c, "ring", "Simple")
    assert ring.algbw_Bps == pytest.approx(360e9 * 8 / 14)                   # busBw 12 x 30, x n/(2(n-1))
    nvls = _option("all_reduce", 2**30, c, "nvls", "Simple")
    assert nvls.algbw_Bps == pytest.approx(8 * 40 * 0.85 * 7 / 8 * 2 * 8 / 14 * 1e9)  # 476 GB/s bus: 272 algbw
    assert _option("all_reduce", 2**20, c, "ring", "LL").latency_s == pytest.approx((6.6 + 14 * 0.6) * US)
    assert nvls.latency_s == pytest.approx(25 * US)


def test_two_node_ring_ll128_at_1mib_by_hand():
    # latency 14 + 28 steps x 1.9 (NVLink) + 2 x 4.0 (network) = 75.2 us; bus min(0.92 x 384, 8 x 36.7) = 293.6 GB/s
    o = _option("all_reduce", 2**20, clusters.get("2x8-h100-ib400"), "ring", "LL128")
    assert o.latency_s == pytest.approx(75.2 * US)
    assert o.algbw_Bps == pytest.approx(293.6e9 * 16 / 30)
    assert o.time_s == pytest.approx(75.2e-6 + 2**20 / (293.6e9 * 16 / 30))


def test_two_node_tree_prices_two_nodes_like_many():
    # NCCL's tree: algbw = 0.5 x bus bandwidth, whatever the node count (the lab's exercise on two nodes)
    o = _option("all_reduce", 2**33, clusters.get("2x8-h100-ib400"), "tree", "Simple")
    assert o.algbw_Bps == pytest.approx(min(0.92 * 384, 8 * 41.4) * 0.5e9)


def test_nvls_tree_on_two_nodes_by_hand():
    o = _option("all_reduce", 2**33, clusters.get("2x8-h100-ib400"), "nvls_tree", "Simple")
    assert o.algbw_Bps == pytest.approx(8 * min(59.5, 2 * 48, 57.7) * 16 / 30 * 1e9)   # 461.6 GB/s bus
    assert o.latency_s == pytest.approx((25 + 2 * 20.9) * US)


@pytest.mark.parametrize("cluster,size,choice", [
    ("h100-1node", 2**20, ("ring", "LL")), ("h100-1node", 2**21, ("nvls", "Simple")),
    ("2x8-h100-ib400", 2**17, ("tree", "LL")), ("2x8-h100-ib400", 2**18, ("tree", "LL128")),
    ("2x8-h100-ib400", 2**21, ("tree", "LL128")), ("2x8-h100-ib400", 2**22, ("nvls_tree", "Simple")),
    ("2x8-a100-ib200", 2**30, ("ring", "Simple")),
])
def test_the_choice_per_size_matches_the_hand_traced_table(cluster, size, choice):
    c = h100_node() if cluster == "h100-1node" else cluster
    p = co.predict("all_reduce", size, c)
    assert (p.algorithm, p.protocol) == choice
    assert p.time_s == pytest.approx(min(p.alternatives.values()))


def test_forcing_an_algorithm_or_protocol_restricts_the_choice():
    c = "2x8-h100-ib400"
    p = co.predict("all_reduce", 2**30, c, algorithm="ring")
    assert (p.algorithm, p.protocol) == ("ring", "Simple")
    assert co.predict("all_reduce", 2**30, c, algorithm="nvls").algorithm == "nvls_tree"  # the NVLS family
    assert co.predict("all_reduce", 2**30, c, protocol="ll").protocol == "LL"
    with pytest.raises(ValueError, match="not available"):
        co.predict("all_reduce", 2**30, c, algorithm="collnet")          # no IB SHARP in the preset
    with pytest.raises(ValueError, match="not available"):
        co.predict("all_reduce", 2**30, c, algorithm="nvls", protocol="LL")  # NVLS is Simple only
    sharp = clusters.with_in_network(clusters.get(c), ib_sharp=True)
    assert co.predict("all_reduce", 2**30, sharp, algorithm="collnet").algorithm.startswith("collnet")


def test_wire_bounds_by_hand():
    # ring: min(NVLink line rate per GPU, the node's NICs at line rate); two-node tree: S once across the network
    h, a = clusters.get("2x8-h100-ib400"), clusters.get("2x8-a100-ib200")
    assert co.wire_bound_busbw_Bps(h, "ring") == pytest.approx(400e9)             # 8 x 50 GB/s < 450 GB/s
    assert co.wire_bound_busbw_Bps(a, "ring") == pytest.approx(200e9)             # 8 x 25 GB/s < 300 GB/s
    assert co.wire_bound_busbw_Bps(h, "tree") == pytest.approx(225e9 * 1.875)     # NVLink chain: 450 / 2
    assert co.wire_bound_busbw_Bps(a, "tree") == pytest.approx(150e9 * 1.875)     # above the NICs' 200 GB/s
    four = clusters.custom_cluster(4, 8, 450e9, 8, 50e9)
    assert co.wire_bound_busbw_Bps(four, "tree") == pytest.approx(200e9 * 2 * 31 / 32)  # 2S on the network


def test_nvls_off_falls_back_to_ring():
    p = co.predict("all_reduce", 2**30, h100_node(), in_network=False)
    assert p.algorithm == "ring" and not p.in_network
    assert co.predict("all_reduce", 2**30, clusters.with_in_network(h100_node(), nvls=False)).algorithm == "ring"


def test_broadcast_and_allgather_use_the_ring_and_the_busbw_of_its_graph():
    c = clusters.get("2x8-h100-ib400")
    for coll in ("broadcast", "reduce", "all_gather", "reduce_scatter"):
        p = co.predict(coll, 2**34, c)
        assert p.algorithm == "ring" and p.busbw_Bps == pytest.approx(384e9, rel=0.01), coll


def test_point_to_point_collectives_are_outside_the_tuner():
    p = co.predict("all_to_all", 2**30, "2x8-h100-ib400")
    assert (p.algorithm, p.protocol) == ("p2p", "Simple") and p.bottleneck.startswith("inter-node")
    assert co.predict("sendrecv", 2**20, h100_node()).algorithm == "p2p"


# --- monotonicity and limits ------------------------------------------------------------------------------------

@pytest.mark.parametrize("cluster", ["2x8-h100-ib400", "2x8-a100-ib200"])
@pytest.mark.parametrize("collective", nccl_tests.COLLECTIVES)
def test_time_grows_with_size(cluster, collective):
    times = [co.predict(collective, s, cluster).time_s for s in (1e3, 1e5, 1e6, 1e8, 1e9, 1e10)]
    assert all(b > a for a, b in zip(times, times[1:]))


def test_time_falls_with_bandwidth():
    slow = clusters.custom_cluster(2, 8, 300e9, 8, 25e9)
    fast_intra = clusters.custom_cluster(2, 8, 450e9, 8, 25e9)
    fast_net = clusters.custom_cluster(2, 8, 300e9, 8, 50e9)
    for coll in nccl_tests.COLLECTIVES:
        t0 = co.predict(coll, 1e9, slow).time_s
        assert co.predict(coll, 1e9, fast_intra).time_s <= t0 * (1 + 1e-9)
        assert co.predict(coll, 1e9, fast_net).time_s <= t0 * (1 + 1e-9)
    assert co.predict("all_reduce", 1e9, fast_net).time_s < co.predict("all_reduce", 1e9, slow).time_s


def test_small_messages_are_latency_bound_large_ones_bandwidth_bound():
    assert co.predict("all_reduce", 1e3, "2x8-h100-ib400").bound == "latency"
    assert co.predict("all_reduce", 1e9, "2x8-h100-ib400").bound == "bandwidth"


def test_flat_ring_busbw_limit_is_the_graph_bandwidth():
    # ring busbw at a huge size -> channels x per-channel speed (NCCL's bus bandwidth)
    assert co.bandwidth_limit_busbw_Bps("all_reduce", "2x8-h100-ib400", algorithm="ring") == pytest.approx(384e9, rel=1e-3)
    assert co.bandwidth_limit_busbw_Bps("all_reduce", "2x8-a100-ib200", algorithm="ring") == pytest.approx(192e9, rel=1e-3)
    assert co.bandwidth_limit_busbw_Bps("all_reduce", h100_node(), algorithm="ring") == pytest.approx(360e9, rel=1e-3)


def test_in_network_reduction_busbw_can_exceed_line_rate():
    # NVLink SHARP on one H100 node: busbw = algbw x 1.75 exceeds the 450 GB/s line rate (maintainers: ~480 GB/s)
    line = specs.get("h100-sxm").si("scaleup_bw_gb_s_per_direction")
    on = co.predict("all_reduce", 1e10, h100_node())
    off = co.predict("all_reduce", 1e10, h100_node(), in_network=False)
    assert on.algorithm == "nvls" and on.in_network and on.time_s < off.time_s
    assert off.busbw_Bps <= line < on.busbw_Bps
    assert on.busbw_Bps == pytest.approx(476e9, rel=2e-3)


def test_tuning_file_names_a_source_line_for_every_table():
    t = nccl_tuner.tuning()
    for key, entry in t.items():
        if isinstance(entry, dict) and "value" in entry and key not in ("devices",):
            assert entry["source"]["file"].startswith("src/") and entry["source"]["lines"], key
    assert t["nccl"]["tag"] == "v2.30.7-1"


@pytest.mark.parametrize("bad,needle", [(".nan", "not a finite number"), ("-1.0", "minimum")])
def test_a_broken_tuning_file_is_refused(tmp_path, bad, needle):
    text = nccl_tuner.TUNING_PATH.read_text()
    broken = text.replace("tree: [6.8, 14.0, 8.4]", f"tree: [{bad}, 14.0, 8.4]", 1)
    assert broken != text
    path = tmp_path / "nccl_tuning.yaml"
    path.write_text(broken)
    with pytest.raises(nccl_tuner.TuningError, match=needle):
        nccl_tuner.tuning(path)


# --- CLI ---------------------------------------------------------------------------------------------------------

def test_cli_json_matches_its_schema():
    r = run_cli("collective-predict", "--collective", "all_reduce", "--cluster", "2x8-h100-ib400",
                "--sizes", "1MB,100MB,1GB", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("collective_predict_output.schema.json"))
    assert [row["size_bytes"] for row in data["rows"]] == [10**6, 10**8, 10**9]
    for row in data["rows"]:
        assert row["algbw_gb_s"] == pytest.approx(row["size_bytes"] / (row["time_us"] * 1e-6) / 1e9)
        assert row["busbw_gb_s"] == pytest.approx(row["algbw_gb_s"] * 1.875)  # 16 ranks
        assert row["algorithm"] in co.ALGORITHMS and row["protocol"] in co.PROTOCOLS
    assert data["assumptions"]["sources"]["intra_bw_per_direction"]["catalog"] == "h100-sxm.scaleup_bw_gb_s_per_direction"
    assert data["assumptions"]["nccl_version"] == "v2.30.7-1"


def test_cli_tuner_csv_writes_the_plugin_file(tmp_path):
    out = tmp_path / "nccl_tuner.conf"
    r = run_cli("collective-predict", "--cluster", "2x8-h100-ib400", "--sizes", "1M", "--nccl-version", "2.26.2",
                "--tuner-csv", str(out), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("collective_predict_output.schema.json"))
    assert data["nccl_version_priced"] == "2.26.2" and data["tuner_csv"]["path"] == str(out)
    rows = [l for l in out.read_text().splitlines() if l and not l.startswith("#")]
    assert len(rows) == data["tuner_csv"]["rows"]
    assert rows[-1].startswith("allreduce,") and rows[-1].split(",")[2] == str(2**64 - 1)


def test_cli_calibrated_times_nccls_pick_with_lab01s_fit():
    import dataclasses
    from x4lib.network import validation
    args = ("collective-predict", "--cluster", "2x8-h100-ib400", "--nodes", "8", "--sizes", "1M,1G", "--algorithm",
            "ring", "--json")
    bare, cal = (json.loads(run_cli(*args, *extra).stdout) for extra in ((), ("--calibrated",)))
    jsonschema.validate(cal, load_schema("collective_predict_output.schema.json"))
    assert bare["timing"] == "nccl-estimate" and bare["calibrated_on"] == []
    assert cal["timing"] == "calibrated" and cal["calibrated_on"] == list(validation.calibration().fitted_on)
    eight = dataclasses.replace(clusters.get("2x8-h100-ib400"), nodes=8)
    for b, k in zip(bare["rows"], cal["rows"]):
        assert (b["algorithm"], b["protocol"]) == (k["algorithm"], k["protocol"])  # NCCL's choice is unchanged
        want = co.predict("all_reduce", k["size_bytes"], eight, algorithm="ring", calibration=validation.calibration())
        assert k["time_us"] == pytest.approx(want.time_s * 1e6)
    # the ring across 8 nodes at 1 GiB is capped by its launched channels: slower than NCCL's own estimate
    assert cal["rows"][1]["time_us"] > 1.1 * bare["rows"][1]["time_us"]


def test_cli_calibrated_is_for_all_reduce_only():
    r = run_cli("collective-predict", "--cluster", "2x8-h100-ib400", "--collective", "all_gather", "--calibrated")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "AllReduce" in r.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("flags", [["--nccl-version", "newest"], ["--tuner-csv", "/no/such/dir/x.conf"]])
def test_cli_bad_version_or_path_is_one_line_exit_2(flags):
    r = run_cli("collective-predict", "--cluster", "2x8-h100-ib400", *flags)
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.strip().splitlines()[-1].count("error") == 1


@pytest.mark.parametrize("flags,algorithm,protocol", [
    ([], "nvls_tree", "Simple"), (["--algorithm", "ring"], "ring", "Simple"),
    (["--algorithm", "tree", "--protocol", "LL128"], "tree", "LL128"), (["--algorithm", "nvls"], "nvls_tree", "Simple"),
    (["--protocol", "ll"], "ring", "LL"), (["--no-nvls"], "ring", "Simple"),
])
def test_cli_algorithm_and_protocol(flags, algorithm, protocol):
    r = run_cli("collective-predict", "--cluster", "2x8-h100-ib400", "--sizes", "1G", "--json", *flags)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("collective_predict_output.schema.json"))
    assert (data["rows"][0]["algorithm"], data["rows"][0]["protocol"]) == (algorithm, protocol)


def test_cli_preset_overrides_keep_working():
    r = run_cli("collective-predict", "--cluster", "2x8-h100-ib400", "--nodes", "4", "--nic-gbit-s", "200",
                "--sizes", "1G", "--algorithm", "ring", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["cluster"] == "2x8-h100-ib400 (modified)" and data["n_ranks"] == 32
    assert data["assumptions"]["ring_gb_s_per_channel"] == 24.0  # a 200 Gb/s NIC: NCCL's 24 GB/s channel


def test_cli_text_states_the_bytes_and_units():
    r = run_cli("collective-predict", "--cluster", "2x8-a100-ib200", "--sizes", "1M,1MB")
    assert r.returncode == 0, r.stderr
    assert "1048576" in r.stdout and "1000000" in r.stdout and "GB = 1e9 B" in r.stdout
    assert "200 Gb/s = 25 GB/s" in r.stdout


def test_cli_custom_cluster_and_in_network():
    r = run_cli("collective-predict", "--nodes", "1", "--gpus-per-node", "8", "--intra-gb-s", "450", "--nvls",
                "--sizes", "1G", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("collective_predict_output.schema.json"))
    assert data["rows"][0]["algorithm"] == "nvls" and data["rows"][0]["busbw_gb_s"] > 450


@pytest.mark.parametrize("args,needle", [
    (["--collective", "allreduce", "--cluster", "2x8-h100-ib400"], "did you mean 'all_reduce'"),
    (["--cluster", "2x8-h100-ib40"], "did you mean '2x8-h100-ib400'"),
    (["--cluster", "2x8-h100-ib400", "--sizes", "12XB"], "12XB"),
    (["--cluster", "2x8-h100-ib400", "--sizes=-1MB"], "negative"),
    (["--cluster", "2x8-h100-ib400", "--sizes", "99999999999999999999999999TB"], "largest size"),
    (["--cluster", "2x8-h100-ib400", "--nic-gbit-s", "nan"], "not a finite number"),
    (["--cluster", "2x8-h100-ib400", "--algorithm", "butterfly"], "algorithm"),
    (["--cluster", "2x8-h100-ib400", "--protocol", "LL64"], "LL64"),
    (["--cluster", "2x8-h100-ib400", "--algorithm", "collnet"], "not available"),
    (["--nodes", "inf", "--gpus-per-node", "8", "--intra-gb-s", "450"], "not a finite number"),
    (["--nodes", "1", "--gpus-per-node", "8", "--intra-gb-s", "1e999"], "not a finite number"),
    (["--nodes", "0", "--gpus-per-node", "8", "--intra-gb-s", "450"], "0 nodes"),
    (["--nodes", "2", "--gpus-per-node", "8", "--intra-gb-s", "450"], "--nics-per-node"),
    ([], "--cluster"),
    (["--cluster", "2x8-h100-ib400", "--intra-efficiency", "1.5"], "efficiency"),
])
def test_cli_bad_input_exits_2_with_one_error_line(args, needle):
    r = subprocess.run([sys.executable, "-m", "x4lib", "collective-predict", *args], capture_output=True,
                       text=True, cwd="/", timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 2 and lines[0].startswith("usage:") and "error:" in lines[1]
    assert needle in lines[1], r.stderr
    assert "known" in r.stderr or needle not in ("did you mean 'all_reduce'", "did you mean '2x8-h100-ib400'")


@pytest.mark.parametrize("text,name", [("AllReduce", "all_reduce"), ("all-reduce", "all_reduce"),
                                       ("alltoall_perf", "all_to_all"), ("ReduceScatter", "reduce_scatter"),
                                       ("gather", None)])
def test_one_map_of_collective_names(text, name):
    assert nccl_tests.canonical(text) == name


def test_a_collective_is_found_in_a_file_name_longest_spelling_first():
    assert nccl_tests.find_in_text("run-reduce_scatter_perf-2x8.log") == "reduce_scatter"
    assert nccl_tests.find_in_text("nccl_alltoall.log") == "all_to_all" and nccl_tests.find_in_text("readme.txt") is None
    assert all(nccl_tests.canonical(b) == c for c, b in nccl_tests.NCCL_TESTS_BINARY.items())
