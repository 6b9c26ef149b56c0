"""x4lib.training.planner: the training-run planner composes the chapter models; checked piece by piece against them."""
import dataclasses
import json
import math

import jsonschema
import pytest

from conftest import load_schema, run_cli
from test_cli import check_usage_error
from x4lib.training import memory, mfu, parallelism, planner
from x4lib.datacenter import runcost
from x4lib.catalog import specs

H100 = specs.get("h100-sxm")

B70 = 4 * 1024 * 1024  # 4M tokens per step


@pytest.fixture(scope="module")
def m70():
    g = mfu.quiz_run()
    return planner.Model(g.params, g.layers, g.d_model, g.heads, g.kv_heads, g.seq_len, g.ffn)


@pytest.fixture(scope="module")
def quiz_plan(m70):
    lay = planner.Layout(tp=8, pp=4, dp=32, cp=1, zero=1, micro_batch=1, recompute="selective")
    return planner.evaluate(m70, lay, H100, mfu.quiz_run().global_batch_tokens)


def test_memory_is_chapter_02s_plan(m70, quiz_plan):
    ref = memory.training_plan(m70.params, 1024, 1, "adam", "bf16", 8, 4, 80, 8192, 8192, 1, "selective", 64,
                               kv_heads=m70.kv_heads, ffn=m70.ffn, gated_mlp=True, dropout=False,
                               flash_attention=True)
    assert quiz_plan.memory.total_B == pytest.approx(ref.total_B)
    # the layer the model has: GQA, SwiGLU, no dropout keep a little less than Korthikanti's GPT layer (34 sbh/t)
    gpt = memory.training_plan(m70.params, 1024, 1, "adam", "bf16", 8, 4, 80, 8192, 8192, 1, "selective", 64)
    assert 0.9 * gpt.activations_B < quiz_plan.memory.activations_B < gpt.activations_B
    # context parallelism: the same shard of the model, activations split over cp, ZeRO over dp·cp
    a = memory.training_plan(m70.params, 64, 1, tp=8, pp=1, layers=80, hidden=8192, seq=8192, micro_batch=1,
                             recompute="selective", heads=64, cp=2)
    b = memory.training_plan(m70.params, 64, 1, tp=8, pp=1, layers=80, hidden=8192, seq=8192, micro_batch=1,
                             recompute="selective", heads=64)
    assert a.activations_B == pytest.approx(b.activations_B / 2)
    assert a.optimizer_B == pytest.approx(b.optimizer_B) and a.weights_B == b.weights_B  # dp·cp = 8 both ways


def test_compute_is_the_mfu_budgets(quiz_plan):
    run = mfu.quiz_run()
    budget = mfu.budget(run, H100)
    ct = mfu.compute_terms(dataclasses.replace(run, recompute="selective"), H100)
    assert quiz_plan.ideal_s == pytest.approx(budget.ideal_s)
    assert quiz_plan.matmul_efficiency == pytest.approx(budget.matmul_efficiency)
    assert ct.recompute_s == pytest.approx(ct.attention_s / 3)
    assert quiz_plan.compute_s == pytest.approx(ct.matmul_s + ct.attention_s + ct.recompute_s)
    assert quiz_plan.other_s == pytest.approx(ct.elementwise_s)


def test_communication_is_chapter_03s_estimate(m70, quiz_plan):
    clu = planner.cluster_for(H100, 1024)
    assert (clu.nodes, clu.gpus_per_node) == (128, 8)
    pm = parallelism.Model("m", "m", m70.params, 80, 8192, 64, 8, m70.ffn)
    pl = parallelism.Layout(dp=32, tp=8, pp=4, zero=1, seq=8192, global_batch_seqs=B70 // 8192)
    work = quiz_plan.compute_s + quiz_plan.other_s
    flop = 6 * m70.params * B70 + 6 * 8192 ** 2 * 8192 * 80 * pl.micro_batches * 32  # 6ND + causal attention
    eta = flop / (1024 * specs.get("h100-sxm").peak_flop_per_s("bf16") * work)
    est = parallelism.estimate_step(pm, clu, pl, efficiency=eta)
    assert est.compute_s == pytest.approx(work)  # the windows are this step's passes
    assert quiz_plan.exposed_comm_s == pytest.approx(est.exposed_comm_s)
    crit = sum(c.exposed_s for c in est.comms if c.strategy in ("tp", "pp"))
    assert quiz_plan.bubble_s == pytest.approx((work + crit) * 3 / pl.micro_batches)


def test_step_and_mfu_add_up(quiz_plan):
    p = quiz_plan
    assert p.step_s == pytest.approx(sum(p.breakdown().values()))
    assert p.mfu == pytest.approx(p.ideal_s / p.step_s)
    assert p.tokens_per_s == pytest.approx(B70 / p.step_s)
    assert 0 < p.mfu < p.matmul_efficiency < 1


def test_uneven_stages_run_at_the_slowest_stages_pace(m70):
    odd = dataclasses.replace(m70, layers=78)
    even = planner.evaluate(dataclasses.replace(m70, layers=80), planner.Layout(8, 4, 32, 1, 1, 1, "none"),
                            H100, B70)
    p = planner.evaluate(odd, planner.Layout(8, 4, 32, 1, 1, 1, "none"), H100, B70)
    assert p.stage_imbalance == pytest.approx(80 / 78)
    assert p.compute_s > even.compute_s * 0.999


def test_search_returns_only_layouts_that_fit(m70):
    plans = planner.search(m70, H100, 64, B70)
    assert plans
    for p in plans:
        lay = p.layout
        assert p.fits and lay.n_gpus == 64
        assert m70.heads % lay.tp == 0 and m70.seq % lay.cp == 0
        assert (B70 // m70.seq) % (lay.dp * lay.micro_batch) == 0
        assert p.memory.total_B <= memory.capacity_B(H100) * (1 - planner.RESERVE)
    assert [p.step_s for p in plans] == sorted(p.step_s for p in plans)
    # the least recomputation that fits: the same layout with less recomputation does not fit
    order = planner.RECOMPUTE
    for p in plans[:20]:
        i = order.index(p.layout.recompute)
        if i:
            less = dataclasses.replace(p.layout, recompute=order[i - 1])
            assert not planner.memory_plan(m70, less, B70).total_B <= p.usable_B


def test_fixed_degrees_are_held(m70):
    plans = planner.search(m70, H100, 256, B70, fixed={"tp": 8, "zero": 1})
    assert plans and all(p.layout.tp == 8 and p.layout.zero == 1 for p in plans)


def test_seventy_billion_does_not_fit_on_eight_h100(m70):
    assert planner.search(m70, H100, 8, B70) == []
    least = planner.min_gpus_to_fit(m70, H100, B70)
    assert least > 8 and planner.search(m70, H100, least, B70)
    # 16 B per parameter alone is more than eight GPUs hold
    assert m70.params * 16 > 8 * memory.capacity_B(H100)


def test_run_totals_are_chapter_04s_rent_arithmetic(quiz_plan):
    t = planner.run_totals(quiz_plan, 1e12)
    rc = runcost.run_cost(quiz_plan.model.params, 1e12, "h100-sxm", 1024, mfu=quiz_plan.mfu, mode="rent")
    assert t.wall_clock_s == pytest.approx(rc.wall_clock_s)
    assert t.gpu_hours == pytest.approx(rc.gpu_hours)
    assert t.energy_J == pytest.approx(rc.energy_J)
    assert t.rental_usd == pytest.approx(rc.total_usd)


def test_a_device_without_a_stored_price_has_no_rent(m70):
    p = planner.search(m70, specs.get("h200-sxm"), 64, B70, top=1)[0]
    t = planner.run_totals(p, 1e12)
    assert t.rental_usd is None and t.gpu_hours > 0
    assert planner.run_totals(p, 1e12, usd_per_gpu_hour=2.0).rental_usd == pytest.approx(2.0 * t.gpu_hours)


def test_mfu_run_extensions():
    run = mfu.quiz_run()
    cp2 = dataclasses.replace(run, cp=2, dp=16)
    assert [g[0] for g in cp2.layer_gemms()][::3] == [g[0] // 2 for g in run.layer_gemms()][::3]
    plain = dataclasses.replace(run, gated_mlp=False)
    d, f = run.d_model, run.ffn
    assert sum(2 * m * n * k for m, n, k in run.layer_gemms()) - sum(2 * m * n * k for m, n, k in plain.layer_gemms()) \
        == pytest.approx(6 * run.seq_len * d * f / run.tp)
    full = mfu.compute_terms(dataclasses.replace(run, recompute="full"), H100)
    none = mfu.compute_terms(run, H100)
    assert full.recompute_s == pytest.approx((none.matmul_s + none.attention_s + none.elementwise_s) / 3)
    assert mfu.budget(dataclasses.replace(run, recompute="full"), H100).step_s > mfu.budget(run, H100).step_s
    with pytest.raises(ValueError):
        dataclasses.replace(run, cp=3)


# ------------------------------------------------------------------------------------------------ published runs

def test_published_runs_load_and_convert():
    runs = planner.published_runs()
    assert len(runs) >= 6
    for r in runs:
        assert r["quality"] in ("A", "B") and r["source"] and r["accessed"]
        assert 0.05 < planner.published_mfu(r) < 0.8
    r = next(r for r in runs if r["published"]["convention"] == "tokens_per_s")
    P = specs.get(r["device"]).peak_flop_per_s("bf16")
    assert planner.published_mfu(r) == pytest.approx(6 * r["model"]["params"] * r["published"]["value"]
                                                      / (r["gpus"] * P))
    r = next(r for r in runs if r["published"]["convention"] == "korthikanti_eq7")
    m = r["model"]
    eq7 = 72 * m["layers"] * m["hidden"] ** 2 * (1 + m["seq"] / (6 * m["hidden"]) + m["vocab"] / (12 * m["hidden"] * m["layers"]))
    assert planner.published_mfu(r) == pytest.approx(r["published"]["value"] / 100 * 6 * m["params"] / eq7)


def test_a_broken_runs_file_is_refused(tmp_path):
    import yaml
    doc = yaml.safe_load(planner.RUNS_PATH.read_text())
    doc["runs"][0]["layout"]["tp"] = 3
    bad = tmp_path / "runs.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(planner.RunsDataError, match="tp x pp x dp x cp"):
        planner.published_runs(bad)
    doc["runs"][0]["layout"]["tp"] = 8
    doc["runs"][0]["quality"] = "C"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(planner.RunsDataError, match="quality"):
        planner.published_runs(bad)
    doc["runs"][0]["quality"] = "A"
    doc["runs"][0]["published"]["value"] = float("nan")
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(planner.RunsDataError, match="runs/0/published/value: nan is not a finite number"):
        planner.published_runs(bad)
    bad.write_bytes(b"runs: [\xff]")
    with pytest.raises(planner.RunsDataError, match="runs.yaml: not UTF-8 text"):
        planner.published_runs(bad)


def test_validation_gives_a_prediction_for_every_run():
    checks = planner.validation()
    assert len(checks) == len(planner.published_runs())
    for c in checks:
        assert c.plan is not None and math.isfinite(c.residual_pp)
        held = {k: v for k, v in c.run["layout"].items() if k in ("tp", "pp", "dp", "cp") and v is not None}
        assert all(getattr(c.plan.layout, k) == v for k, v in held.items())


# ------------------------------------------------------------------------------------------------ command line

BASE = ["plan", "--params", "70e9", "--layers", "80", "--hidden", "8192", "--heads", "64", "--kv-heads", "8",
        "--ffn", "28672", "--seq", "8192", "--global-batch-tokens", str(B70), "--tokens", "1e12",
        "--device", "h100-sxm"]


def test_plan_json_matches_its_contract():
    r = run_cli(*BASE, "--gpus", "256", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, load_schema("plan_output.schema.json"))
    assert doc["step_time_s"] == pytest.approx(sum(doc["breakdown_s"].values()))
    assert doc["layouts_that_fit"] >= 1


def test_plan_evaluates_a_given_layout(quiz_plan):
    r = run_cli(*BASE, "--gpus", "1024", "--tp", "8", "--pp", "4", "--dp", "32", "--cp", "1", "--zero", "1",
                "--micro-batch", "1", "--recompute", "selective", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["layout"] == {"tp": 8, "pp": 4, "dp": 32, "cp": 1, "zero": 1, "micro_batch": 1,
                             "recompute": "selective"}
    assert doc["mfu_predicted"] == pytest.approx(quiz_plan.mfu)
    assert doc["layouts_that_fit"] is None


@pytest.mark.parametrize("extra, needle", [
    (["--gpus", "8"], "smallest count that fits"),
    (["--gpus", "64", "--tp", "3"], "do not divide 64 GPUs"),
    (["--gpus", "64", "--tp", "8", "--pp", "2", "--dp", "2", "--cp", "1"], "but --gpus is 64"),
    (["--gpus", "12"], "whole nodes of 8"),
    (["--gpus", "64", "--tp", "1", "--pp", "1", "--cp", "1", "--zero", "0", "--micro-batch", "1",
      "--recompute", "none"], "GB usable"),
    (["--gpus", "64", "--device", "nonesuch"], "nonesuch"),
    (["--gpus=-4"], "GPUs"),
])
def test_bad_plan_input_exits_2(extra, needle):
    args = list(BASE)
    if "--device" in extra:
        i = args.index("--device")
        del args[i:i + 2]
    check_usage_error(run_cli(*args, *extra), needle)


def test_a_batch_that_is_not_whole_sequences_exits_2():
    args = list(BASE)
    args[args.index("--global-batch-tokens") + 1] = "1000"
    check_usage_error(run_cli(*args, "--gpus", "64"), "whole sequences")


def test_a_hypothetical_device_plans_like_a_catalog_one(m70):
    """Objects in: a device built in a test (the H100 with twice its memory) goes through the whole planner; the
    catalog is never asked for it again."""
    big = dataclasses.replace(H100, values={**H100.values, "memory_gb": dataclasses.replace(
        H100.values["memory_gb"], value=2 * H100.values["memory_gb"].value)})
    assert planner.min_gpus_to_fit(m70, big, B70) < planner.min_gpus_to_fit(m70, H100, B70)
    plan = planner.search(m70, big, 64, B70, top=1)[0]
    assert plan.device is big and plan.capacity_B == pytest.approx(2 * memory.capacity_B(H100))


def test_every_published_run_fits_with_its_published_layout():
    """Issue 30: a layout a source says ran must fit the memory model (FlashAttention keeps no score matrix; the
    1F1B peak of the busiest stage; Llama 3's short first and last stages)."""
    checks = planner.validation()
    assert len(checks) == len(planner.published_runs())
    for c in checks:
        assert not c.error, (c.run["id"], c.error)
        lay = c.run["layout"]
        for k in ("tp", "pp", "dp", "cp", "zero", "micro_batch", "recompute"):
            if lay[k] is not None:
                assert getattr(c.plan.layout, k) == lay[k], (c.run["id"], k)
        assert c.plan.fits
    llama = next(c for c in checks if c.run["id"] == "llama3-405b-8192-seq8192")
    assert llama.plan.layout.recompute == "none" and llama.plan.memory.assumptions["layers_in_flight"] == 15 * 8


def test_an_obviously_too_large_layout_is_still_refused(m70):
    """The same memory model refuses what cannot fit: the 70B model's state alone on 8 GPUs without sharding, and
    Llama 3 405B's published layout with the score matrix stored (a framework without FlashAttention)."""
    lay = planner.Layout(tp=8, pp=1, dp=1, cp=1, zero=0, micro_batch=1, recompute="full")
    assert not planner.evaluate(m70, lay, H100, mfu.quiz_run().global_batch_tokens).fits
    r = next(r for r in planner.published_runs() if r["id"] == "llama3-405b-8192-seq8192")
    no_flash = dataclasses.replace(planner.run_model(r), flash_attention=False)
    lay = planner.Layout(tp=8, pp=16, dp=64, cp=1, zero=2, micro_batch=1, recompute="none")
    assert not planner.memory_plan(no_flash, lay, r["layout"]["global_batch_tokens"]).total_B <= 72e9
    assert planner.memory_plan(planner.run_model(r), lay, r["layout"]["global_batch_tokens"]).total_B <= 72e9
    # and on the command line: exit 2, naming the memory (the 70B model on 8 GPUs, any layout)
    check_usage_error(run_cli(*BASE, "--gpus", "8"), "smallest count that fits")


def test_a_count_that_fits_with_other_settings_says_so_rather_than_name_itself_as_the_smallest():
    # a 2.7B GPT on one H100: eight sequences per micro-batch without recomputation do not fit, one GPU does
    args = ("plan", "--params", "2.7e9", "--layers", "32", "--hidden", "2560", "--heads", "32", "--seq", "2048",
            "--global-batch-tokens", "16384", "--tokens", "1e9", "--device", "h100-sxm", "--gpus", "1")
    r = run_cli(*args, "--tp", "1", "--pp", "1", "--dp", "1", "--zero", "0", "--micro-batch", "8",
                "--recompute", "none")
    check_usage_error(r, "1 GPU fits with other settings")
    assert "smallest count" not in r.stderr
    assert run_cli(*args, "--micro-batch", "1", "--recompute", "none").returncode == 0
