"""Page helpers of the appendix on public ground truth (book/appendix-ground-truth.md): every number it quotes is
the report plan-validate prints, and the Playbook's readings select what they say."""
from x4lib.pages import ground_truth as page
from x4lib.training import validate


def test_numbers_are_the_report_plan_validate_prints():
    n = page.numbers()
    by = {d["source"]: d for d in page.ground_truth_report()["sources"]}
    for src, d in by.items():
        k = src.replace("-", "_")
        assert n[f"gt_{k}_err"] == d["mean_abs_error_pct"] and n[f"gt_{k}_rows"] == d["rows"]
    assert n["gt_n_missed"] == len(page.ground_truth_misses()) == sum(not d["target"]["met"] for d in by.values())
    assert n["gt_playbook_n_met"] == sum(validate.playbook_targets(by["playbook"]).values())
    assert n["vp_v_lo"] <= n["vp_v_hi"] and n["vp_nemo_lo"] <= n["vp_nemo_hi"]


def test_the_playbook_misses_by_node_count_cover_every_group_and_name_what_they_claim():
    pb = page.playbook_by_nodes()
    rows = pb["rows"]
    assert [r["nodes"] for r in rows] == sorted(r["nodes"] for r in rows)
    assert sum(r["groups"] for r in rows) == validate.summary("playbook")["playbook"]["groups"]
    assert pb["top"] == rows[-1]["nodes"] and pb["second"] == rows[-2]["nodes"]
    assert pb["below_lo"] <= pb["below_hi"] and pb["top_best"] == rows[-1]["best"]
    # each model named as slower on the most nodes is: its measured best there takes longer than one node count down
    sc = validate.scored("playbook")
    for model in pb["slower_models"]:
        def best(n):
            return min(x.row.measured_step_s for x in sc
                       if x.row.label == model and x.row.gpus // x.row.gpus_per_node == n)
        assert best(pb["top"]) > best(pb["second"]), model
    assert "tensor parallelism across nodes" in repr(page.playbook_nodes_table())


def test_playbook_layer_floor_selects_what_it_says_and_its_ranges_are_of_its_rows():
    fl = page.playbook_layer_floor(min_tp=4, max_nodes=8)
    rows = fl["rows"]
    assert rows and fl["runs"] == sum(r["runs"] for r in rows)
    assert all(r["tp"] >= 4 for r in rows) and fl["tps"] == sorted({r["tp"] for r in rows})
    assert fl["measured"] == (min(r["measured_ms"] for r in rows), max(r["measured_ms"] for r in rows))
    assert fl["predicted"] == (min(r["predicted_ms"] for r in rows), max(r["predicted_ms"] for r in rows))
    # the launch term is a part of each prediction, and a wider selection has at least as many runs
    assert all(0 < r["kernels_ms"] < r["predicted_ms"] for r in rows)
    assert page.playbook_layer_floor(min_tp=2, max_nodes=64)["runs"] >= fl["runs"]
