"""x4lib.network.validation: the model fitted on some stored logs and scored on the others, NCCL's tuner by version,
NCCL's own TUNING numbers, and the tuner-plugin CSV."""
import csv
import io

import pytest

from x4lib.network import clusters, nccl_tuner, validation as v
from x4lib.network import collectives as co
from x4lib.network.collectives import Calibration


@pytest.fixture(scope="module")
def vrows():
    return v.validation_rows()


# --- NCCL's tuner by version --------------------------------------------------------------------------------------

H100_2N = clusters.custom_cluster(2, 8, 450e9, 8, 50e9, nvls=True)
H100_8N = clusters.custom_cluster(8, 8, 450e9, 8, 50e9, nvls=True)


def _opt(c, version, pair, size=2**30):
    return {f"{o.algorithm}/{o.protocol}": o for o in nccl_tuner.options("all_reduce", size, c,
                                                                      nccl_version=version)}[pair]


def test_the_latencies_of_nccl_2_21_match_its_printed_table():
    # NVIDIA/nccl#1519 prints, for 2 x 8 H100: Tree LL/LL128/Simple 25.2/48.5/448.0 us, Ring LL 43.4 us
    lat = {p: _opt(H100_2N, "2.21.5", p).latency_s * 1e6 for p in ("tree/LL", "tree/LL128", "tree/Simple", "ring/LL")}
    assert lat == pytest.approx({"tree/LL": 25.2, "tree/LL128": 48.5, "tree/Simple": 448.0, "ring/LL": 43.4})


def test_nvls_tree_bandwidth_by_version_on_eight_nodes():
    # 2.19-2.27: 8 heads x min(bwIntra 40, bwInter 48 / 2) x 5/6 = 160 GB/s algbw; 2.30: 8 x min(59.5, 48, 45.5) x n/(2(n-1))
    old = _opt(H100_8N, "2.26.2", "nvls_tree/Simple").algbw_Bps / 1e9
    new = _opt(H100_8N, None, "nvls_tree/Simple").algbw_Bps / 1e9
    assert old == pytest.approx(8 * 24 * 5 / 6)
    assert new == pytest.approx(8 * 45.5 * 64 / 126)


def test_version_bands_and_parse():
    assert nccl_tuner.band("2.26.2")["tag"] == "v2.26.2-1"
    assert nccl_tuner.band("v2.19.3-1")["tag"] == "v2.19.3-1"
    assert nccl_tuner.band("2.30.7") is None and nccl_tuner.band(None) is None
    assert nccl_tuner.band("2.12.12")["tag"] == "v2.18.1-1"
    with pytest.raises(ValueError):
        nccl_tuner.parse_version("latest")


def test_the_efa_plugin_latency_is_added_per_network_step_twice_for_simple():
    efa = clusters.custom_cluster(2, 8, 450e9, 8, 50e9, nvls=True, network="efa")
    for pair, per_step in (("ring/LL", 75.0), ("ring/Simple", 150.0)):
        extra = (_opt(efa, "2.26.2", pair, 2**10).latency_s - _opt(H100_2N, "2.26.2", pair, 2**10).latency_s) * 1e6
        assert extra == pytest.approx(2 * (2 - 1) * per_step)  # AllReduce ring: 2(N-1) network steps from 2.23


def test_a_run_on_efa_takes_its_protocols_latency_while_nccl_chooses_with_the_reported_one():
    # aws-ofi-nccl reports 75 us on p4d/p4de (send/receive) and p5 (RDMA writes), 35 us on its newer RDMA platforms
    # (nccl_tuning.yaml net_plugin_achieved_latency_us): the choice keeps 75 us, the time takes the protocol's value
    hopper = clusters.custom_cluster(2, 8, 450e9, 8, 50e9, nvls=True, network="efa")
    ampere = clusters.custom_cluster(2, 8, 300e9, 4, 12.5e9, arch="ampere", network="efa")
    assert nccl_tuner.plugin_latency_us(hopper) == nccl_tuner.plugin_latency_us(ampere) == 75.0
    assert nccl_tuner.achieved_plugin_latency_us(hopper) == 35.0 and nccl_tuner.achieved_plugin_latency_us(ampere) == 75.0
    assert nccl_tuner.achieved_plugin_latency_us(H100_2N) == 0.0
    calib = Calibration(extra_latency_s={}, efficiency={})
    for c, saved_us in ((hopper, 40.0), (ampere, 0.0)):
        o = _opt(c, "2.26.2", "ring/LL", 2**10)
        assert (o.latency_s - co.achieved_time_s(o, 2**10, c, calib)) * 1e6 == pytest.approx(2 * saved_us, abs=0.5)
    # the held-out p5 log's small rows: within the 1.5x target (they were 2x too slow with the reported latency)
    p5 = [r for r in v.cluster_rows() if "awsome-p5.log" in r["file"] and r["size class"] == "≤ 1 MiB"]
    assert p5 and all(1 / 1.5 <= r["model / measured"] <= 1.5 for r in p5)


def test_launch_cuts_ring_and_tree_channels_by_size_but_not_nvls():
    assert nccl_tuner.launch_channels("ring", "Simple", 2**20, 32, 16) == 32       # 32 x 512 x 64 B = 1 MiB
    assert nccl_tuner.launch_channels("ring", "Simple", 2**19, 32, 16) == 16
    assert nccl_tuner.launch_channels("ring", "LL", 2**20, 32, 16) == 16            # 512 x 8 x 16 B per channel
    assert nccl_tuner.launch_channels("nvls_tree", "Simple", 1, 16, 16) == 16


def test_default_predictions_are_unchanged_without_version_or_calibration():
    a = co.predict("all_reduce", 2**30, "2x8-h100-ib400")
    b = co.predict("all_reduce", 2**30, "2x8-h100-ib400", nccl_version=None, calibration=None)
    assert a == b


# --- the calibration --------------------------------------------------------------------------------------------

def test_a_calibration_adds_its_cost_and_divides_by_its_efficiency():
    o = _opt(H100_2N, None, "ring/Simple", 2**30)
    cal = Calibration({"ring/Simple@N2": 10e-6}, {"ring/Simple@N2": 0.5})
    t = co.achieved_time_s(o, 2**30, H100_2N, cal)
    assert t == pytest.approx(o.latency_s + 10e-6 + (o.time_s - o.latency_s) / 0.5)
    pooled = Calibration({"ring/Simple": 1e-6}, {"ring/Simple": 1.0})
    assert co.achieved_time_s(o, 2**30, H100_2N, pooled) == pytest.approx(o.time_s + 1e-6)


def test_the_fit_recovers_a_known_line():
    # three synthetic rows t = lat + 20 us + x / 0.8
    pts = [(5e-6, x, 5e-6 + 20e-6 + x / 0.8, 0) for x in (1e-5, 1e-4, 1e-3)]
    d, k, lam = v._fit_pair(pts)
    assert d == pytest.approx(20e-6) and 1 / k == pytest.approx(0.8) and lam == 0


def test_the_fit_recovers_a_known_cost_per_loop():
    # t = lat + 4 us + x / 1.1 + 8 us per loop, loops not proportional to x (the chunk shrinks with the call)
    rows = [(1e-5, 1), (2e-5, 2), (4e-5, 2), (8e-5, 4), (1.6e-4, 8), (3.2e-4, 8), (1e-3, 16)]
    pts = [(20e-6, x, 20e-6 + 4e-6 + x / 1.1 + 8e-6 * n, n) for x, n in rows]
    d, k, lam = v._fit_pair(pts)
    assert d == pytest.approx(4e-6) and 1 / k == pytest.approx(1.1) and lam == pytest.approx(8e-6)


def test_the_fit_set_and_the_held_out_set_do_not_overlap():
    cal = v.calibration()
    assert set(cal.fitted_on) == set(v.fit_names()) and cal.fitted_on
    held = [r for r in v.row_scores() if r["split"] == "held out"]
    assert held and not any(v.is_fit_row(r["file"], r["pair"], cal) for r in held)
    # a log fits all its rows, or only the pairs it names: only those logs have held-out rows too
    assert {r["file"] for r in held} & set(cal.fitted_on) == {n for n in cal.fitted_on if v.fit_pairs(n)}


def test_nvls_on_one_node_loops_over_chunks_nccl_sizes_by_the_call():
    from x4lib.network import nccl_tuner
    # eight H100s: 16 channels x 8 heads; 128 KiB from 1 GiB, 64 KiB down to 64 MiB, 32 KiB down to 8 MiB, then 16
    chunks = {s: nccl_tuner.nvls_chunk_B(2**s, 16, 8) for s in (21, 22, 23, 26, 27, 29, 30, 34)}
    assert chunks == {21: 16384, 22: 16384, 23: 32768, 26: 65536, 27: 65536, 29: 65536, 30: 131072, 34: 131072}
    assert [nccl_tuner.nvls_loops(2**s, 16, 8) for s in (21, 23, 26, 30)] == [1, 2, 8, 64]
    # the fitted loop cost moves the held-out single-node NVLS rows from 2 to 64 MiB toward the measurement
    cal = v.calibration()
    assert cal.loop_s["nvls/Simple@N1"] > 0 and set(cal.loop_s) <= {"nvls/Simple@N1", "nvls/Simple"}
    mid = [r for r in v.row_scores() if r["pair"] == "nvls/Simple" and r["split"] == "held out"
           and 2**21 <= r["size (B)"] <= 2**26]
    assert mid
    err = sorted(abs(r["model / measured"] - 1) for r in mid)
    nccl = sorted(abs(r["NCCL estimate / measured"] - 1) for r in mid)
    assert err[len(err) // 2] < nccl[len(nccl) // 2]


def test_measured_time_is_the_faster_column():
    class P:
        def __init__(self, t): self.time_us = t
    class R:
        out_of_place, in_place = P(317.0), P(220.0)
    assert v.measured_s(R) == pytest.approx(220e-6)


# --- the validation table ------------------------------------------------------------------------------------------

def test_every_fabric_and_size_class_has_a_row_and_unmodelled_fabrics_no_numbers(vrows):
    assert {r["size class"] for r in vrows} == {c[0] for c in v.SIZE_CLASSES}
    nm = [r for r in vrows if r["split"] == "not modelled"]
    assert {r["fabric"] for r in nm} >= {"RCCL (MI300X)", "GPUDirect-TCPXO"}
    assert all(r["median |error|"] is None and r["status"] == "not modelled" for r in nm)


def test_status_follows_the_targets(vrows):
    for r in vrows:
        if r["split"] not in ("fit", "held out"):
            continue
        if r["size class"] == "≥ 128 MiB":
            ok = r["median |error|"] <= v.TARGET_LARGE_MEDIAN and r["worst log median |error|"] <= v.TARGET_LARGE_CLUSTER
            assert (r["status"] == "met") == ok
        if r["size class"] == "≤ 1 MiB" and r["worst 1 MiB factor"] is not None:
            assert (r["status"] == "met") == (r["worst 1 MiB factor"] <= v.TARGET_SMALL_FACTOR)


def test_the_summary_lists_held_out_targets_only(vrows):
    s = v.target_summary(vrows)
    held = {(r["fabric"], r["size class"]) for r in vrows if r["split"] == "held out"}
    for item in s["met"] + s["missed"]:
        fabric, rest = item.split(", ", 1)
        assert (fabric, rest.split(" (")[0]) in held
    assert "RCCL (MI300X)" in s["not_modelled"]


def test_the_calibration_improves_the_large_rows_of_the_8x8_default_log():
    rows = [r for r in v.row_scores() if r["file"].endswith("x64_8node_all_reduce_nccltests309-gjaion.log")
            and r["size (B)"] in (2**27, 2**30)]
    for r in rows:  # NCCL 2.30's bare estimate is 1.2-1.3x optimistic there (issue 29)
        assert abs(r["model / measured"] - 1) < abs(r["NCCL estimate / measured"] - 1)


# --- NCCL's own numbers ------------------------------------------------------------------------------------------

def test_parse_tuning_reads_calls_and_table():
    text = ("x [0] NCCL INFO 4 Bytes -> Algo 0 proto 0 time 25.200462\n"
            "x [0] NCCL INFO 4 Bytes -> Algo 0 proto 0 time 25.200462\n"
            "h:1:2 [0] NCCL INFO     AllReduce |    25.2/   0.0 |    48.5/   0.0 |   448.0/   0.0 |    43.4/   2.7 |\n")
    p = v.parse_tuning(text)
    assert p["calls"] == [{"size_B": 4, "algorithm": "tree", "protocol": "LL", "time_us": 25.200462}]
    assert p["table"][("AllReduce", "ring", "LL")] == (43.4, 2.7)


def test_the_model_matches_nccls_printed_latencies():
    rows = v.tuning_rows()
    lat = [r for r in rows if r["what"] == "table latency"]
    assert lat and all(r["model, same pair (µs)"] == pytest.approx(r["NCCL (µs)"], abs=0.05) for r in lat)
    small = [r for r in rows if r["what"] == "per-call time" and r["size (B)"] <= 512]
    assert small and all(r["model, same pair (µs)"] == pytest.approx(r["NCCL (µs)"], rel=0.01) for r in small)


# --- the tuner CSV ------------------------------------------------------------------------------------------------

def test_the_tuner_csv_covers_every_size_with_explicit_channels():
    text = co.tuner_csv(clusters.get("2x8-h100-ib400"))
    lines = [l for l in text.splitlines() if l and not l.startswith("#")]
    assert co.TUNER_CSV_HEADER in text
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    by = {}
    for r in rows:
        assert len(r) == 8 and int(r[5]) >= 1 and r[6] == "2" and r[7] == "16"
        assert r[3] in nccl_tuner.ALGORITHMS and r[4] in ("ll", "ll128", "simple")
        by.setdefault(r[0], []).append((int(r[1]), int(r[2])))
    assert set(by) == set(co.TUNER_CSV_COLLECTIVES.values())
    for ranges in by.values():
        assert ranges[0][0] == 0 and ranges[-1][1] == co.TUNER_CSV_MAX_BYTES
        assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))


def test_the_tuner_csv_agrees_with_predict():
    c = clusters.get("2x8-h100-ib400")
    for r in co.tuner_csv_rows(c, ("all_reduce",)):
        p = co.predict("all_reduce", max(1, r["min_bytes"]), c)
        assert (p.algorithm, p.protocol.lower()) == (r["algorithm"], r["protocol"])


@pytest.mark.parametrize("suffix", ["x16_2node_all_reduce_nccltests309-gjaion.log",
                                    "x16_2node_all_reduce_nccltests309-qoofyk.log",
                                    "x64_8node_all_reduce_nccltests309-gjaion.log"])
def test_the_128_mib_and_1_gib_rows_of_the_default_logs_are_within_15_percent(suffix):
    rows = {r["size (B)"]: r for r in v.row_scores() if r["file"].endswith(suffix)}
    for size in (2**27, 2**30):
        assert abs(rows[size]["model / measured"] - 1) <= 0.15, (suffix, size, rows[size])


def test_p4de_large_rows_are_the_two_node_tree():
    # measured busbw at 2 GiB exceeds the ring's wire bound on 4 x 100 Gb/s; the two-node tree graph explains it
    rows = [r for r in v.cluster_rows() if "awsome-p4de" in r["file"] and r["size class"] == "≥ 128 MiB"]
    assert rows and rows[0]["split"] == "held out" and "ring" not in rows[0]["pairs"]
    assert abs(rows[0]["model / measured"] - 1) <= v.TARGET_LARGE_MEDIAN


def test_no_row_is_predicted_faster_than_its_own_logs_smallest_calls():
    """A larger call of one run cannot finish before its smallest ones: each scored row (>= 64 KiB) is predicted at
    no less than the least time of the same log's rows below 64 KiB, which are never scored. The A100 node run as
    one thread for eight GPUs (nThread 1 nGpus 8) takes about 35 µs per call up to 32 KiB, whatever the size."""
    from x4lib.network import validation as v
    a100 = "nccl-tests-old_a100-sxm4-40gb-x8_all_reduce_superbench.log"
    assert 30e-6 < v.log_floor_s(a100) < 40e-6
    rows = v.row_scores()
    for r in rows:
        floor = v.log_floor_s(r["file"]) if r["model / measured"] is not None else None
        if floor:
            assert r["model time (µs)"] >= floor * 1e6 - 1e-9 and r["size (B)"] >= v.MIN_ROW_B
    small = [r["model / measured"] for r in rows if r["file"] == a100 and r["size (B)"] <= 2**18]
    assert max(small) < 1.5   # 1.41 to 1.80 before the floor (NCCL's price alone is below the run's empty call)


# --- the host's cost per launched channel ------------------------------------------------------------------------

def test_the_log_reader_reads_gpus_per_thread():
    from x4lib.network import nccl_log
    from x4lib.catalog import published
    assert nccl_log.read_path(published.LOG_DIR / "nccl-tests-old_a100-sxm4-40gb-x8_all_reduce_superbench.log"
                              ).gpus_per_thread == 8
    assert nccl_log.read_path(published.LOG_DIR / "nccl-tests_h100-80gb-x8_1node_all_reduce_dgxc.log"
                              ).gpus_per_thread == 1
    text = ("#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
            "   1048576  262144  float  sum  -1  100.0  10.49  18.35  0  100.0  10.49  18.35  0\n")
    assert nccl_log.read_log(text).gpus_per_thread is None      # not printed: unknown, not guessed here
    assert v.gpus_per_thread(nccl_log.read_log(text)) == 1       # the validation's reading of "not printed"


def test_the_host_cost_per_channel_is_fitted_on_other_collectives_only():
    """Fitted on the SuperBench Broadcast, Reduce and AllGather logs (none scored); every AllReduce log is held out
    for it. About a quarter of a microsecond per channel and GPU."""
    from x4lib.catalog import published
    cal = v.calibration()
    assert set(cal.host_fitted_on) == set(published.host_fit_logs())
    assert not set(cal.host_fitted_on) & set(v._logs())
    assert not set(cal.host_fitted_on) & set(cal.fitted_on)
    assert 0.1e-6 < cal.host_channel_s < 0.5e-6
    pts = v.host_fit_points()
    assert pts and all(x >= 0 for x, *_ in pts)
    assert {p[3] for p in pts} == set(cal.host_fitted_on)


def test_the_host_time_grows_with_the_channels_a_call_launches():
    c = clusters.custom_cluster(1, 8, 300e9, 0, 0, arch="ampere", cpu="amd", nvls=False)
    o = min(co.options("all_reduce", 2**20, c), key=lambda o: o.time_s)
    full = co.launched_channels(o.algorithm, c)
    assert co.call_channels(o, 2**20, c) == full                  # 1 MiB: every channel (24 on eight A100s)
    small = min(co.options("all_reduce", 2**16, c), key=lambda o: o.time_s)
    assert co.call_channels(small, 2**16, c) == 2                 # 64 KiB: 2 x 512 threads x 8 B x 8 ranks
    t1 = co.host_time_s(o, 2**20, c, 30e-6, 1, 0.25e-6)
    t8 = co.host_time_s(o, 2**20, c, 30e-6, 8, 0.25e-6)
    assert t1 == pytest.approx(30e-6 + (full - 1) * 0.25e-6)
    assert t8 == pytest.approx(30e-6 + (full - 1) * 8 * 0.25e-6)
    p2p = co.Option("p2p", "Simple", 0.0, 1e9, 1e-6, 1, "intra")
    assert co.host_time_s(p2p, 2**20, c, 30e-6, 8, 0.25e-6) == 30e-6


def test_one_thread_driving_eight_a100s_is_host_bound_up_to_1_mib():
    """The two A100 nodes run as -g 8 (held out for the host fit): with the host's channels their rows from 64 KiB
    to 1 MiB land within 10 %; the 1 MiB row was 1.64-1.68x before (NCCL's price alone)."""
    rows = [r for r in v.row_scores() if ("superbench" in r["file"] or "ocitutorials-jp" in r["file"])
            and v.MIN_ROW_B <= r["size (B)"] <= 2**20]
    assert len(rows) == 10 and all(r["split"] == "held out" for r in rows)
    assert all(abs(r["model / measured"] - 1) < 0.10 for r in rows), rows


def test_blackwell_launches_24_nvls_channels_on_one_node_and_32_across_nodes():
    """NCCL 2.27+: NVLS_NCHANNELS_SM100_NVL 24 within one node, NVLS_NCHANNELS_SM100 32 across nodes; Hopper 16."""
    one = clusters.custom_cluster(1, 8, 900e9, arch="blackwell", nvls=True)
    two = clusters.custom_cluster(2, 8, 900e9, 8, 50e9, arch="blackwell", nvls=True)
    hop = clusters.custom_cluster(1, 8, 450e9, arch="hopper", nvls=True)
    assert (co.launched_channels("nvls", one), co.launched_channels("nvls_tree", two),
            co.launched_channels("nvls", hop)) == (24, 32, 16)


def test_a_log_without_small_rows_driven_by_one_thread_takes_the_fitted_floor_per_gpu(monkeypatch):
    """A -g 8 log that starts at 1 MiB has no floor of its own: it takes the host-fit logs' floor per GPU times 8."""
    name = "nccl-tests-old_a100-sxm4-40gb-x8_all_reduce_superbench.log"
    cal = v.calibration()
    o, c = v._option(name, 2**20)
    with_floor = v.host_s(name, o, 2**20, cal)
    monkeypatch.setattr(v, "log_floor_s", lambda n: None)
    without = v.host_s(name, o, 2**20, cal)
    assert 4e-6 < v.host_call_s() < 5e-6                       # about 34 µs for eight GPUs, per GPU
    assert without == pytest.approx(with_floor, rel=0.1)        # the fitted floor stands in for the log's own


# --- the ring's channels across nodes ----------------------------------------------------------------------------

def test_a_runs_nccl_min_ctas_is_read_from_its_env_and_raises_the_launched_channels():
    from x4lib.catalog import published
    assert published.min_channels("NCCL_ALGO=Ring, NCCL_MIN_CTAS=24, NCCL_IB_QPS_PER_CONNECTION=2") == 24
    assert published.min_channels("NCCL_MIN_NCHANNELS=32 NCCL_MIN_CTAS=8") == 32
    assert published.min_channels("default") == 0 and published.min_channels("NCCL_MAX_CTAS=4") == 0
    more = clusters.custom_cluster(8, 8, 450e9, 8, 50e9, nvls=True, min_channels=24)
    assert co.launched_channels("ring", H100_8N) == 16 and co.launched_channels("ring", more) == 24
    assert co.launched_channels("nvls_tree", more) == 24
    # NCCL's tuner prices the graph's channels, so its estimate (and so its choice) does not change
    assert _opt(more, "2.26.2", "ring/Simple").time_s == _opt(H100_8N, "2.26.2", "ring/Simple").time_s
    with pytest.raises(ValueError, match="min_channels"):
        clusters.custom_cluster(8, 8, 450e9, 8, 50e9, min_channels=65)


def test_a_ring_channel_across_nodes_carries_at_most_the_calibrations_rate():
    o = _opt(H100_8N, "2.26.2", "ring/Simple", 2**33)
    cal = Calibration({}, {}, ring_channel_Bps=20e9)
    bus = 2**33 * 2 * 63 / 64
    assert co.ring_channel_time_s(o, 2**33, H100_8N, per_channel_Bps=20e9) == pytest.approx(bus / (16 * 20e9))
    # 16 channels x 20 GB/s = 320 GB/s is below the NICs' 400: the channels bind
    assert co.achieved_time_s(o, 2**33, H100_8N, cal) == pytest.approx(o.latency_s + bus / 320e9)
    # 24 channels would carry 480 GB/s: NCCL's own (NIC) bandwidth term binds again
    more = clusters.custom_cluster(8, 8, 450e9, 8, 50e9, nvls=True, min_channels=24)
    assert co.achieved_time_s(o, 2**33, more, cal) == pytest.approx(o.time_s)
    # one node, other pairs, or no rate: no limit
    one = clusters.custom_cluster(1, 8, 450e9)
    o1 = {f"{x.algorithm}/{x.protocol}": x for x in nccl_tuner.options("all_reduce", 2**30, one)}["ring/Simple"]
    assert co.ring_channel_time_s(o1, 2**30, one, per_channel_Bps=20e9) == 0.0
    assert co.ring_channel_time_s(o, 2**33, H100_8N, per_channel_Bps=0.0) == 0.0


def test_the_ring_channel_rate_is_fitted_on_fit_logs_and_predicts_the_held_out_runs_of_the_same_cluster():
    cal = v.calibration()
    assert 10e9 < cal.ring_channel_Bps < 30e9
    assert v.fit(ring_channel=False).ring_channel_Bps == 0.0
    # without the 8-node default run (the only fit log whose ring is channel-bound) nothing fixes a rate
    others = tuple(n for n in v.fit_names() if not n.endswith("x64_8node_all_reduce_nccltests309-gjaion.log"))
    assert v.fit_ring_channel_rate(others) == 0.0

    def ring_median(calib, suffix):
        import statistics
        rows = [r["model / measured"] for r in v.row_scores(calib) if r["file"].endswith(suffix)
                and r["pair"] == "ring/Simple"]
        assert len(rows) >= 4
        return statistics.median(rows)
    four = "x32_4node_all_reduce_nccltests309-gjaion.log"  # held out, default channels
    ctas = "x64_8node_all_reduce_nccltests309-gjaion-minctas24.log"  # held out, NCCL_MIN_CTAS=24
    assert ring_median(v.fit(ring_channel=False), four) > 1.10
    assert abs(ring_median(cal, four) - 1) < 0.05
    assert abs(ring_median(cal, ctas) - 1) < 0.10


def test_a_steady_cost_passes_the_doubling_test_even_across_a_switch_to_a_faster_algorithm():
    S = 2**27
    steady = {S * 2**i: 30e-6 + S * 2**i / 200e9 for i in range(5)}
    assert v.first_unsteady_doubling(steady) is None
    # from 2S on a faster algorithm with a larger fixed cost (NVLS tree after the ring): still steady
    switch = {s: (20e-6 + s / 150e9) if s < 2 * S else (60e-6 + s / 250e9) for s in steady}
    assert v.first_unsteady_doubling(switch) is None
    # the smaller rows pay a stall the larger ones do not: the second doubling adds less than the first
    stalled = dict(steady)
    stalled[2 * S] += 1.5e-3
    found = v.first_unsteady_doubling(stalled)
    assert found is not None and found[0] == S and found[1] > found[2]
    # rows below the test's start are not read
    assert v.first_unsteady_doubling(stalled, from_B=4 * S) is None


def test_only_the_eks_run_fails_the_steady_rate_test_and_it_is_flagged_not_counted():
    from x4lib.catalog import published
    counted = [n for n, e in published.public_logs().items() if e["status"] == "use"]
    unsteady = [n for n in counted if v.unsteady_step(n) is not None]
    assert len(unsteady) == 1 and unsteady[0].endswith("awsome-p5-eks.log")
    status, why = v.log_status(unsteady[0])
    assert status == "flagged" and "steady" in why
    assert unsteady[0] not in v.fit_names()
    rows = [r for r in v.row_scores() if r["file"] == unsteady[0]]
    assert rows and {r["split"] for r in rows} == {"flagged"}
    # shown, with its miss, but not in the held-out score
    efa = [r for r in v.validation_rows() if r["fabric"] == "AWS EFA" and r["size class"] == "≥ 128 MiB"]
    assert {r["split"] for r in efa} == {"held out", "flagged"}
    assert next(r for r in efa if r["split"] == "flagged")["worst log model / measured"] > 1.15

