"""x4lib.training.ground_truth, x4lib.training.stack and x4lib.training.validate: the public ground truth, its loader,
the leave-one-source-out fit and the plan-validate command."""
import json

import jsonschema
import numpy as np
import pytest

from conftest import load_schema, run_cli
from test_cli import check_usage_error
from x4lib.training import ground_truth as gt, stack as stk, validate


@pytest.fixture(scope="module")
def report():
    return validate.report(gt.SOURCES)


def test_loader_reads_every_source_with_its_published_count():
    # vTrain's two CSVs (109 and 1,440 rows), Table 5's eight, the Playbook's runs with metrics, the 17 published
    counts = {s: len(gt.rows(s)) for s in gt.SOURCES}
    assert counts.pop("single-gpu") >= 6  # this book's Lab 02 GPU runs (more as runs are committed)
    assert counts == {"vtrain-multi": 109, "vtrain-single": 1440, "korthikanti": 8, "playbook": 1758,
                      "published": 17}
    assert len({r.group for r in gt.rows("playbook")}) == 26
    for s in gt.SOURCES:
        for r in gt.rows(s):
            assert r.setup.n_gpus == r.gpus and r.measured_step_s > 0
            assert r.stack.id in stk.stacks()


def test_loader_rows_match_the_sources_own_numbers():
    # vTrain multi row 1: 3.6B on 64 GPUs, dp 64, micro-batch 8, 3,566.5 ms (ground_truth_multi.csv, first data row)
    r = gt.rows("vtrain-multi")[0]
    assert (r.gpus, r.setup.dp, r.setup.micro_batch, r.shape.hidden) == (64, 64, 8, 3072)
    assert r.measured_step_s == pytest.approx(3.5665)
    # Korthikanti Table 5: 175B with sequence parallelism and selective recomputation, 13.75 s per iteration
    k = {x.row_id: x for x in gt.rows("korthikanti")}["175B_selective"]
    assert k.measured_step_s == 13.75 and k.setup.sequence_parallel and k.setup.recompute == "selective"
    assert k.setup.interleave == 3 and (k.setup.tp, k.setup.pp) == (8, 8)


def test_unstated_settings_come_from_the_stack_defaults_not_the_fastest_choice():
    doc = stk.document()
    for r in gt.rows("published"):
        d = doc["stacks"][r.stack.id]["defaults"]
        for f in r.not_stated:
            assert getattr(r.setup, f) == d[f], (r.row_id, f)


def test_a_published_run_is_timed_with_the_virtual_stages_its_source_states():
    from x4lib.training import planner
    runs = {r["id"]: r for r in planner.published_runs()}
    rows = {r.row_id: r for r in gt.rows("published")}
    # NVIDIA's README configuration tables: Llama 3.1 70B VP 5, Nemotron-4 340B VP 12
    assert rows["dgxc-llama31-70b-bf16-1024"].setup.interleave == 5
    assert rows["dgxc-nemotron4-340b-bf16-1024"].setup.interleave == 12
    for rid, r in rows.items():
        stated = runs[rid]["layout"].get("interleave")
        want = 1 if r.setup.pp == 1 else (stated or stk.document()["stacks"][r.stack.id]["defaults"]["interleave"])
        assert r.setup.interleave == want, rid
        assert not stated or runs[rid].get("layout_where"), f"{rid}: a stated schedule says where it was read"


def test_the_runs_schema_refuses_zero_virtual_stages():
    from x4lib.training import planner
    doc = {"schema_version": 1, "runs": [json.loads(json.dumps(planner.published_runs()[0]))]}
    doc["runs"][0]["layout"]["interleave"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, load_schema("training_runs.schema.json"))


def test_unknown_source_is_a_lookup_error():
    with pytest.raises(LookupError, match="unknown source"):
        gt.rows("nope")


def test_flash_attention_keeps_no_score_matrix_and_costs_less_memory_traffic():
    shape = stk.Shape(32, 4096, 32, 8, 14336, True, 128256, 8192)
    lay = stk.Setup(8, 1, 1, 1, 0, 1, 4, "none", 1, True)
    from x4lib.catalog import specs
    dev = specs.get("h100-sxm")
    clu = gt._cluster("h100-sxm")
    flash = stk.step(shape, lay, dev, stk.stack("nemo-mcore-2024"), clu)
    plain = stk.step(shape, lay, dev, stk.stack("megatron-lm-2022"), clu)
    assert flash.features["memory"] < plain.features["memory"]


def test_interleaving_shrinks_the_bubble():
    from x4lib.catalog import specs
    shape = stk.Shape(96, 12288, 96, 96, 49152, False, 51200, 2048)
    base = dict(tp=8, pp=8, dp=1, cp=1, zero=0, micro_batch=1, micro_batches=64, recompute="selective",
                sequence_parallel=True)
    args = (specs.get("a100-sxm-80gb"), stk.stack("megatron-lm-2022"), gt._cluster("a100-sxm-80gb"))
    one = stk.step(shape, stk.Setup(**base, interleave=1), *args)
    three = stk.step(shape, stk.Setup(**base, interleave=3), *args)
    assert one.bubble_factor == pytest.approx(1 + 7 / 64) and three.bubble_factor == pytest.approx(1 + 7 / 3 / 64)
    assert three.time_s() < one.time_s()


def test_the_fit_never_sees_the_source_it_scores(monkeypatch, report):
    seen = []
    real = validate.fit.__wrapped__

    def spy(sources, without="", overlap_max=validate.OVERLAP_MAX):
        seen.append((sources, without))
        return real(sources, without, overlap_max)
    monkeypatch.setattr(validate, "fit", spy)
    for s in gt.SOURCES:
        seen.clear()
        validate.scored(s)
        origins = {r.origin for r in gt.rows(s)}
        assert seen and all(src == tuple(x for x in gt.FIT_SOURCES if x != s) for src, _ in seen)
        assert {w for _, w in seen} == origins  # and each row's own publication is left out too
    for doc in report["sources"]:
        assert doc["source"] not in doc["fitted_on"]
        assert len(doc["fitted_on"]) == len(gt.FIT_SOURCES) - (doc["source"] in gt.FIT_SOURCES)


def test_a_published_run_that_is_also_a_table_5_row_is_not_fitted_on_to_score_itself():
    # Korthikanti's 175B selective run is in Table 5 and in training_runs.yaml; the Playbook's best layouts too
    assert len(validate._matrix("korthikanti", "korthikanti-2022")[2]) == 0
    pub = validate._matrix("published", "hf-ultrascale-playbook-2025")[2]
    assert len(pub) == 17 - sum(r.origin == "hf-ultrascale-playbook-2025" for r in gt.rows("published")) < 17


def test_the_fit_recovers_known_constants():
    # rows built from the model itself with known constants: the fit gives them back
    import numpy as np
    truth = stk.Constants(1.1, 0.9, 1.2, 5e-6, 0.1)
    F, fixed, _ = validate._matrix("published")
    meas = F @ np.array(truth.vector()) + fixed
    A = F / meas[:, None]
    b = 1 - fixed / meas
    x = validate._nnls(A, b)
    assert x == pytest.approx(truth.vector(), rel=1e-6)


def test_kendall_tau():
    assert validate.kendall_tau([1, 2, 3], [10, 20, 30]) == 1
    assert validate.kendall_tau([1, 2, 3], [3, 2, 1]) == -1
    assert validate.kendall_tau([1], [1]) is None


def test_targets_as_computed_and_as_stated(report):
    by = {d["source"]: d for d in report["sources"]}
    # the targets this model meets on data it was not fitted on
    assert by["korthikanti"]["mean_abs_error_pct"] <= 10
    assert by["vtrain-multi"]["mean_abs_error_pct"] <= 15
    assert by["published"]["within_10_points"] >= 13
    # the ones it misses are reported as missed (the capstone states each, from the same report)
    for d in report["sources"]:
        assert d["target"]["met"] == validate.TARGETS[d["source"]][1](d)
    from x4lib.pages import ground_truth
    assert {m["source"] for m in ground_truth.ground_truth_misses()} == {d["source"] for d in report["sources"]
                                                                     if not d["target"]["met"]}


def test_plan_validate_json_matches_its_contract():
    r = run_cli("plan-validate", "--source", "korthikanti", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, load_schema("plan_validate_output.schema.json"))
    (s,) = doc["sources"]
    assert s["source"] == "korthikanti" and s["rows"] == 8 and s["peer"]["error_pct"] == 3.65
    assert "korthikanti" not in s["fitted_on"]


def test_plan_validate_text_and_bad_input():
    r = run_cli("plan-validate", "--source", "published")
    assert r.returncode == 0 and "published" in r.stdout and "MFU points" in r.stdout
    check_usage_error(run_cli("plan-validate", "--source", "vtrain"), "source")
    check_usage_error(run_cli("plan-validate", "--bogus"))


def test_the_overlap_constant_stays_within_its_physical_bound():
    """Compute cannot lose more than the whole time of a collective beside it: every fit keeps the overlap constant
    at or below OVERLAP_MAX, and without the bound the same fit is free to pass it (the page shows both)."""
    import math
    for s in gt.SOURCES:
        assert 0 <= validate.loso_constants(s).overlapped <= validate.OVERLAP_MAX
    free = validate.fit(gt.SOURCES, "", math.inf)
    assert validate.all_constants().overlapped == min(free.overlapped, validate.OVERLAP_MAX)


def test_bounded_least_squares_holds_a_column_at_its_bound_and_solves_the_rest():
    A = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = A @ np.array([3.0, 2.0])
    assert validate._bounded(A, b, {}) == pytest.approx([3.0, 2.0])
    x = validate._bounded(A, b, {0: 1.0})
    assert x[0] == 1.0 and x[1] == pytest.approx(np.linalg.lstsq(A[:, 1:], b - A[:, 0], rcond=None)[0][0])


def test_the_playbook_is_priced_on_the_fabric_it_names_and_the_others_on_their_presets():
    # the Playbook says its nodes talk over EFA; vTrain, Table 5 and the published runs keep the InfiniBand presets
    pb = gt.rows("playbook")[0].cluster
    assert pb.nic.network == "efa" and pb.cpu == "amd" and pb.id != gt.CLUSTER_OF["h100-sxm"]
    assert all(r.cluster.nic.network == "infiniband" for s in ("vtrain-multi", "korthikanti") for r in gt.rows(s))
    # an EFA step costs the plugin's latency, so an all-gather over 64 nodes is slower there than on the IB preset
    from x4lib.network import collectives
    import dataclasses
    ib = gt._cluster("h100-sxm")
    t = {c.nic.network: collectives.predict("all_gather", 256 * 2**20, dataclasses.replace(c, nodes=64)).time_s
         for c in (pb, ib)}
    assert t["efa"] > 1.5 * t["infiniband"]


def test_the_playbooks_own_network_benchmark_is_stored_as_read_and_shown_beside_the_model():
    rows = validate.measured_network("playbook")
    assert [r["nodes"] for r in rows] == [1, 2, 4, 8, 16, 32, 64]
    # the figure's medians: all-reduce 436.0 GB/s on one node, all-gather 11.0 GB/s on 64 (hover text, 256 MB)
    assert rows[0]["all_reduce"] == pytest.approx(436.0, abs=0.05)
    assert rows[-1]["all_gather"] == pytest.approx(11.04, abs=0.01)
    # from four nodes on the cluster delivered less than the model on EFA, which is below the IB preset
    for r in rows[2:]:
        assert r["all_gather"] < r["all_gather_model"] < r["all_gather_ib"]
    assert validate.measured_network("vtrain-multi") == []


def test_repeatability_ranks_a_sweep_against_its_own_zero_twins():
    rows = [r for r in gt.rows("playbook") if not r.flag]
    g = max(validate._groups(validate.Scored(r, 1.0) for r in rows).values(), key=len)
    z0 = [x.row for x in g if x.row.setup.zero == 0]
    twins = {x.row.layout_label().replace(" z1 ", " z0 "): x.row for x in g if x.row.setup.zero == 1}
    pairs = [(a, twins[a.layout_label()]) for a in z0 if a.layout_label() in twins]
    assert len(pairs) >= validate.TWIN_GROUP_MIN
    import dataclasses
    # twins measured alike and a model that ranks them right: both agree perfectly
    same = []
    for i, (a, b) in enumerate(pairs):
        same += [validate.Scored(dataclasses.replace(a, measured_step_s=1.0 + i), 1.0 + i),
                 validate.Scored(dataclasses.replace(b, measured_step_s=1.0 + i), 1.0 + i)]
    rp = validate.repeatability(same)
    assert rp["twins"] == len(pairs) and rp["twin_groups"] == 1 and rp["retest_tau"] == 1 and rp["model_tau"] == 1
    assert rp["retest_pick"] == rp["model_pick"] == 1 and rp["twin_ratio_median"] == 1
    # the ZeRO-1 half in the reverse order: the sweep disagrees with itself completely
    rev = [validate.Scored(dataclasses.replace(x.row, measured_step_s=len(pairs) + 1.0 - x.predicted_step_s
                                               if x.row.setup.zero == 1 else x.row.measured_step_s), x.predicted_step_s)
           for x in same]
    assert validate.repeatability(rev)["retest_tau"] == -1


def test_the_playbooks_agreement_with_itself_is_below_the_ranking_target(report):
    # the stored sweep: ZeRO-0/1 twins agree at the median, but their ranking agrees only as far as the book says
    rp = next(s for s in report["sources"] if s["source"] == "playbook")["playbook"]["repeatability"]
    assert 0.95 < rp["twin_ratio_median"] < 1.05 and rp["twins_outside_1_5x"] > 0.2
    assert rp["model_twin_ratio_p5_p95"][1] < 1.15
    assert rp["retest_tau"] < validate.LIMITS["playbook_tau"] and rp["twin_groups"] >= 20


def test_the_single_gpu_source_is_lab_02s_gpu_runs_scored_and_never_fitted_on(report):
    rows = gt.rows("single-gpu")
    assert {r.device.id for r in rows} == {"h100-sxm", "h200-sxm"}
    assert all(r.gpus == 1 and r.stack.id == "pytorch-eager" and 0.9e9 < r.params < 1.0e9 for r in rows)
    assert "single-gpu" not in gt.FIT_SOURCES
    # scored with the constants of every other source: its own LOSO fit is the fit on all of them
    assert validate.loso_constants("single-gpu") == validate.all_constants()
    s = next(d for d in report["sources"] if d["source"] == "single-gpu")
    assert "single-gpu" not in s["fitted_on"] and s["rows"] == len(rows)
    assert s["target"]["met"] == (s["mean_abs_error_pct"] <= validate.LIMITS["single_gpu_pct"])


def test_plain_pytorch_prices_its_optimizer_and_autocasts_casts_from_the_framework():
    eager, nemo = stk.stack("pytorch-eager"), stk.stack("nemo-mcore-2024")
    assert eager.optimizer_B_per_param == 84 and nemo.optimizer_B_per_param == stk.OPTIMIZER_B_PER_PARAM
    assert eager.weight_cast_B_per_param == 12 and nemo.weight_cast_B_per_param == 0
    r = gt.rows("single-gpu")[0]
    a = validate.row_step(r)
    b = stk.step(r.shape, r.setup, r.device, nemo, r.cluster, gpus_per_node=1)
    params = r.shape.layers * r.shape.layer_params()
    W = r.device.memory_bw_Bps
    # the memory term differs by the casts' bytes (the element-wise work is the same, whatever the stack)
    assert a.features["memory"] - b.features["memory"] == pytest.approx(params * 12 / W, rel=1e-6)
    # the optimizer step: its bytes at the copy bandwidth a stream reaches (phi x HBM), outside the fitted terms
    from x4lib.compute import matmul
    phi = matmul.memory_fraction(r.device.id)[0]
    assert 0.5 < phi < 1
    assert a.exposed["optimizer"] == pytest.approx(params * 84 / (phi * W), rel=1e-6)
    assert b.exposed["optimizer"] == pytest.approx(params * stk.OPTIMIZER_B_PER_PARAM / (phi * W), rel=1e-6)
