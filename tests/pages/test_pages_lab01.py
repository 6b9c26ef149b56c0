"""x4lib.pages.lab01: times, algbw, busbw and fits are derived from a run's stored times when Lab 01 is drawn."""
import statistics

import pytest

from conftest import ROOT
from x4lib.network import collectives, nccl_tests, nccl_tuner, sizes
from x4lib.harness import runs
from x4lib.pages import lab01 as page, lab01_fit

V1 = ROOT / "tests" / "data" / "runs" / "lab01-v1"


def measured(rows_times: dict[int, list[float]], n_ranks=2, collective="all_reduce") -> dict:
    rows = [{"size_bytes": s, "count": s // 4, "type": "float", "redop": "sum", "root": -1, "times_us": t,
             "wrong": 0, "in_place": {"times_us": t, "wrong": 0}} for s, t in rows_times.items()]
    return {"nranks": n_ranks, "collectives": [{"collective": collective, "supported": True, "note": "", "rows": rows}],
            "device": {"detected_name": "Test CPU"}, "backend": "gloo", "nhosts": 1, "source": "measured",
            "started_utc": "2026-11-23T00:00:00Z"}


def test_busbw_is_algbw_times_the_factor_of_the_mean_time():
    doc = measured({2**20: [100.0, 300.0, 200.0]}, n_ranks=8)
    st = page.place_stats(doc, "all_reduce", doc["collectives"][0]["rows"][0])
    assert st["time_us"] == pytest.approx(200.0) and st["time_us_median"] == 200.0
    assert st["algbw_gb_s"] == pytest.approx(2**20 / 200e-6 / 1e9)
    assert st["busbw_gb_s"] == pytest.approx(st["algbw_gb_s"] * nccl_tests.busbw_factor("all_reduce", 8))


def test_an_imported_row_keeps_the_values_the_log_printed():
    row = {"size_bytes": 1024, "in_place": {"times_us": [], "time_us": 10.0, "algbw_gb_s": 0.1, "busbw_gb_s": 0.19,
                                            "wrong": 0}}
    st = page.place_stats({"nranks": 16}, "all_reduce", row)
    assert (st["time_us"], st["algbw_gb_s"], st["busbw_gb_s"], st["time_us_median"]) == (10.0, 0.1, 0.19, None)


def test_the_fit_is_derived_from_the_median_times():
    alpha, beta = 50e-6, 1 / 2e9
    times = {s: [(alpha + beta * s) * 1e6] * 3 for s in (2**10, 2**16, 2**20, 2**24)}
    fit = page.run_fit(measured(times))
    assert fit.alpha_s == pytest.approx(alpha) and fit.inv_beta_gb_s == pytest.approx(2.0)
    assert page.run_fit(measured({1024: [1.0]})) is None
    assert page.fit_text(fit)[1] == "a bandwidth term of 2.00 GB/s"


def test_the_compact_view_is_a_collective_by_size_pivot():
    doc = measured({2**10: [10.0], 2**16: [20.0]})
    pv = page.busbw_pivot(doc)
    assert list(pv) == ["all_reduce"] and list(pv["all_reduce"]) == ["1 KiB", "64 KiB"]


def test_a_version_1_run_gives_the_same_busbw_it_stored():
    run = runs.load_run(V1, "lab01").results
    c = next(c for c in run["collectives"] if c["collective"] == "all_reduce")
    r = c["rows"][-1]
    st = page.place_stats(run, "all_reduce", r)
    assert st["busbw_gb_s"] == pytest.approx(r["in_place"]["busbw_gb_s"])
    assert st["time_us"] == pytest.approx(statistics.fmean(r["in_place"]["times_us"]))


def test_the_public_log_is_compared_at_its_nearest_rows_named():
    rows = page.measured_vs_expected("nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log", "2x8-h100-ib400")
    assert [r["lab size"] for r in rows] == ["1 MiB", "100 MiB", "1 GiB"]
    assert [r["log row"] for r in rows] == ["1 MiB", "128 MiB", "1 GiB"]
    assert all(0 < r["measured / model"] for r in rows)


def test_the_run_paragraph_has_no_python_repr():
    md = page.run_markdown(measured({2**10: [10.0], 2**16: [20.0]}))
    assert "Test CPU" in md and "{'" not in md and "None" not in md


def test_the_model_curve_covers_powers_of_two():
    curve = page.model_curve("2x8-h100-ib400", lo_B=2**10, hi_B=2**12)
    assert [p["x"] for p in curve] == [1024, 2048, 4096] and all(p["y"] > 0 for p in curve)
    assert sizes.label(curve[-1]["x"]) == "4 KiB"


# --- the model's validation on the stored public logs ------------------------------------------------------------

@pytest.fixture(scope="module")
def vrows():
    return page.validation_rows()


def test_every_stored_log_appears_at_the_three_lab_sizes(vrows):
    from x4lib.catalog import published
    assert len(vrows) == 3 * len(published.public_logs())
    assert {r["lab size"] for r in vrows} == {"1 MiB", "100 MiB", "1 GiB"}
    assert all(r["row"] == "no row" or r["row"].endswith(" row") for r in vrows)
    assert all(r["cause"] for r in vrows)  # every residual (or its absence) is named


def test_a_row_is_only_used_within_a_factor_of_two(vrows):
    oci = [r for r in vrows if r["file"] == "nccl-tests_h100-80gb-x16_2node_all_reduce_ocitutorials.log"]  # from 1 GiB
    assert [r["row"] for r in oci] == ["no row", "no row", "1 GiB row"]


def test_ratios_are_measured_over_the_model_of_the_algorithm_run(vrows):
    from x4lib.catalog import published
    ring = [r for r in vrows if r["file"].endswith("gjaion-ring.log") and r["measured / model"]]
    for r in ring:
        p = collectives.predict("all_reduce", r["row (B)"], published.log_cluster(r["file"]), algorithm="ring")
        assert r["compared with"].startswith("ring/")
        assert r["measured / model"] == pytest.approx(r["measured busbw (GB/s)"] / (p.busbw_Bps / 1e9))


def test_a_two_node_run_above_the_ring_limit_is_set_against_the_tree(vrows):
    # p4de (4 x 100 Gb/s EFA): the model, as NCCL's search and tuner, picks the two-node tree itself (its graph runs
    # inside the node at twice the network's per-channel speed), so the row is compared with that prediction
    p4de = [r for r in vrows if "p4de" in r["file"] and r["row (B)"] and r["row (B)"] >= 2**27]
    assert p4de and all(r["compared with"].startswith("tree/") for r in p4de)
    assert all(0.85 <= r["measured / model"] <= 1.15 for r in p4de)


def test_flagged_and_unmodelled_logs_are_never_counted(vrows):
    assert not any(r["counted"] for r in vrows if r["status"] != "use")
    assert all(r["measured / model"] is None for r in vrows if r["status"] == "not_modelled")


def test_targets_are_computed_from_the_rows(vrows):
    rep = page.target_report(vrows)
    mine = [r for r in vrows if r["kind"] == page.TARGET_KIND and r["counted"] and r["row (B)"]]
    assert rep["large_n"] == sum(r["row (B)"] >= 2**27 for r in mine)
    assert rep["small_n"] == sum(r["row (B)"] == 2**20 for r in mine)
    assert len(rep["misses"]) == rep["large_n"] - rep["large_ok"] + rep["small_n"] - rep["small_ok"]


def test_kind_medians_by_hand():
    rows = [{"kind": "k", "counted": True, "file": f, "row (B)": b, "measured / model": m}
            for f, b, m in (("a", 2**30, 0.9), ("a", 2**27, 1.3), ("b", 2**30, 1.05), ("a", 2**20, 0.5))]
    rows.append({"kind": "k", "counted": False, "file": "c", "row (B)": 2**30, "measured / model": 0.1})
    (k,) = page.kind_summary(rows)
    assert k["logs"] == 3 and k["counted"] == 2
    assert k["median |error|, 128 MiB and more"] == pytest.approx(0.1)   # |−0.1|, |0.3|, |0.05| -> 0.1
    assert k["median |error|, 1 MiB"] == pytest.approx(0.5)


def test_apparent_latency_from_two_rows():
    log = page.read_public("nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-qoofyk.log")
    # rows: 512 MiB in 2357.6 us, 1 GiB in 4484.9 us -> 4484.9 - 2 x (4484.9 - 2357.6) = 230.3 us
    assert page.apparent_latency_us(log) == pytest.approx(230.3)


def test_validation_table_keeps_the_open_table_short(vrows):
    t = page.validation_table(vrows)
    assert len(t.compact) <= 20 and len(t.full) == len(vrows)


# --- the commands the page prints run the sizes it says ----------------------------------------------------------

def _page_commands():
    import re
    text = (ROOT / "book" / "lab-01-collectives.md").read_text()
    blocks = re.findall(r"```(?:bash|shell|console)\n(.*?)```", text, flags=re.S)
    out = []
    for block in blocks:
        for cmd in re.split(r"(?<!\\)\n", block):
            if "_perf" in cmd:
                out.append(cmd)
    return out


def test_every_perf_command_on_the_page_runs_the_sizes_its_comment_names():
    cmds = _page_commands()
    assert cmds, "no *_perf command found on the page"
    for cmd in cmds:
        assert "# runs " in cmd, f"a *_perf command must say which sizes it runs: {cmd!r}"
        claimed = cmd.split("# runs ", 1)[1].strip()
        assert page.describe_sweep(sizes.nccl_tests_command_sizes(cmd)) == claimed, cmd


def test_the_lab_sizes_are_each_run_exactly():
    ran = {s for cmd in _page_commands() for s in sizes.nccl_tests_command_sizes(cmd)}
    assert set(page.lab_sizes_B()) <= ran


def test_the_protocol_table_reads_nccls_constants():
    rows = {r["protocol"]: r for r in page.protocol_rows()}
    assert rows["LL"]["ring bandwidth factor"] == 0.5 and rows["Simple"]["ring bandwidth factor"] == 1.0
    assert rows["LL"]["per NVLink step (µs)"] < rows["LL128"]["per NVLink step (µs)"] < rows["Simple"]["per NVLink step (µs)"]
    assert rows["Simple"]["per network step (µs)"] == nccl_tuner.tuning()["hw_latency_us"]["value"]["net"]["ring"][2]


def test_the_choice_table_covers_every_size_once():
    rows = collectives.choice_table("all_reduce", "2x8-h100-ib400", lo_B=2**10, hi_B=2**33)
    assert rows[0]["from_B"] == 2**10 and rows[-1]["to_B"] == 2**33
    assert all(a["to_B"] * 2 == b["from_B"] for a, b in zip(rows, rows[1:]))
    assert [r["algorithm"] for r in rows] == ["tree", "tree", "nvls_tree"]


def test_every_flag_row_names_a_known_source_or_none():
    from x4lib.book import bib
    keys = bib.book_keys()
    assert len(page.COMMAND_FLAGS) <= 20
    assert all(src == "" or src in keys for *_, src in page.COMMAND_FLAGS)


def test_describe_sweep():
    assert page.describe_sweep([2**20]) == "1 MiB"
    assert page.describe_sweep(sizes.nccl_tests_sizes("8", "8G", "2")) == "8 B to 8 GiB, ×2, 31 sizes"
    assert page.describe_sweep(sizes.nccl_tests_sizes("1M", "3M")) == "1 MiB to 3 MiB in steps of 1 MiB, 3 sizes"


def test_the_fabric_section_names_every_held_out_miss_and_the_unmodelled():
    from x4lib.network import validation
    rows = validation.validation_rows()
    text = lab01_fit.fabric_targets_markdown(rows)
    for r in rows:
        if r["split"] == "held out" and r["status"].startswith("missed"):
            assert f"{r['fabric']}, {r['size class']}: {r['worst log']}" in text
    assert "RCCL (MI300X)" in text and "GPUDirect-TCPXO" in text
    t = lab01_fit.fabric_validation_table(rows)
    assert len(t.full) == len([r for r in rows if r["split"] != "flagged"])
    assert len(t.compact) <= 20  # the compact view; the full table is collapsed (long_table check of the browser)
    assert "not modelled" in t.to_text()


def test_the_tuner_csv_shown_on_the_page_is_the_commands():
    from x4lib.network import clusters, collectives
    assert lab01_fit.tuner_csv_head() == collectives.tuner_csv(clusters.get("2x8-h100-ib400"))
