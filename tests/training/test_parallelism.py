"""x4lib.training.parallelism: bytes per strategy against closed forms, compute and bubble by hand, placement of groups,
the quiz layout, and the comm-estimate contract."""
import dataclasses
import json

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.book import bib
from x4lib.network import clusters, nccl_tests
from x4lib.training import parallelism as P
from x4lib.catalog import specs

QUIZ = "128x8-h100-ib400"


@pytest.fixture(scope="module")
def m70():
    return P.model("llama3-70b")


@pytest.fixture(scope="module")
def big():
    return P.cluster(QUIZ)


def F(op, g):
    return nccl_tests.busbw_factor(op, g)


def sent(est, strategy):
    return sum(c.sent_B for c in est.by_strategy(strategy))


# --- inputs ------------------------------------------------------------------------------------------------------

def test_llama3_70b_parameter_count_by_hand(m70):
    h, kv, f, L, V = 8192, 1024, 28672, 80, 128256
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h
    assert m70.params == L * per_layer + 2 * V * h + h
    assert 70.0e9 < m70.params < 71.0e9 and m70.kv_hidden == kv


def test_derived_cluster_keeps_the_presets_links(big):
    base = clusters.get("2x8-h100-ib400")
    assert (big.nodes, big.n_ranks) == (128, 1024)
    assert big.intra == base.intra and big.nic == base.nic and big.nics_per_node == base.nics_per_node


def test_data_sources_are_in_the_bibliography():
    data = P.load()
    used = {m["source"] for m in data["models"].values()} | {x["source"] for x in data["layouts"].values()}
    assert not used - bib.book_keys()


def test_quiz_layout_is_the_quiz_cluster(big, m70):
    lay = P.layout("quiz-70b")
    assert lay.n_gpus == big.n_ranks == 1024 and lay.micro_batches == 32
    assert lay.tokens_per_step == 1024 * 4096


# --- closed forms ------------------------------------------------------------------------------------------------

def small(nodes=2, g=8):
    return clusters.custom_cluster(nodes, g, 450e9, g, 50e9)


@pytest.fixture(scope="module")
def c16():
    c = small()
    return dataclasses.replace(c, device="h100-sxm")


def test_dp_sends_an_allreduce_of_the_gradients(c16, m70):
    lay = P.Layout(dp=16, seq=4096, global_batch_seqs=16)
    est = P.estimate_step(m70, c16, lay, efficiency=0.8)
    assert sent(est, "dp") == pytest.approx(2 * 15 / 16 * 2 * m70.params)
    assert [c.op for c in est.comms] == ["all_reduce"] and est.comms[0].calls == 80


def test_zero1_and_zero2_send_as_much_as_dp_when_m_is_1(c16, m70):
    lay = P.Layout(dp=16, seq=4096, global_batch_seqs=16)
    dp = sent(P.estimate_step(m70, c16, lay, 0.8), "dp")
    for z, name in ((1, "zero1"), (2, "zero2")):
        est = P.estimate_step(m70, c16, dataclasses.replace(lay, zero=z), 0.8)
        assert sent(est, name) == pytest.approx(dp)


def test_zero3_sends_one_and_a_half_times_dp(c16, m70):
    lay = P.Layout(dp=16, seq=4096, global_batch_seqs=16)
    dp = sent(P.estimate_step(m70, c16, lay, 0.8), "dp")
    z3 = P.estimate_step(m70, c16, dataclasses.replace(lay, zero=3), 0.8)
    assert sent(z3, "zero3") == pytest.approx(1.5 * dp)


def test_gradient_accumulation_multiplies_zero2_and_zero3_traffic(c16, m70):
    lay = P.Layout(dp=16, seq=4096, global_batch_seqs=64, zero=3)  # m = 4
    one = P.estimate_step(m70, c16, dataclasses.replace(lay, global_batch_seqs=16), 0.8)
    four = P.estimate_step(m70, c16, lay, 0.8)
    assert sent(four, "zero3") == pytest.approx(4 * sent(one, "zero3"))
    z1 = P.estimate_step(m70, c16, dataclasses.replace(lay, zero=1), 0.8)
    assert sent(z1, "zero1") == pytest.approx(2 * 15 / 16 * 2 * m70.params)  # once per step


def test_tp_sends_four_allreduces_per_layer_and_micro_batch(m70, big):
    lay = P.layout("quiz-70b")
    est = P.estimate_step(m70, big, lay)
    S = 2 * 1 * 4096 * 8192
    tp = est.by_strategy("tp")[0]
    assert (tp.op, tp.size_B, tp.calls, tp.group_size) == ("all_reduce", S, 4 * 20 * 32, 8)
    assert tp.sent_B == pytest.approx(4 * 20 * 32 * F("all_reduce", 8) * S)
    assert tp.exposed_s == tp.time_s  # on the critical path
    assert "intra-node" in tp.bottleneck


def test_pp_sends_activations_and_gradients_per_micro_batch(m70, big):
    est = P.estimate_step(m70, big, P.layout("quiz-70b"))
    pp = est.by_strategy("pp")[0]
    S = 2 * 4096 * 8192 / 8  # scatter-gather: 1/tp of the activations
    assert (pp.op, pp.size_B, pp.calls) == ("sendrecv", S, 64) and pp.sent_B == 64 * S
    assert pp.exposed_s == pp.time_s
    assert est.bubble_s == pytest.approx(3 / 32 * est.compute_s)
    assert "inter-node" in pp.bottleneck


def test_cp_and_ep_closed_forms(c16):
    moe = P.Model("moe", "moe", 1e10, layers=8, hidden=4096, heads=32, kv_heads=8, experts=8, top_k=2)
    lay = P.Layout(dp=4, tp=4, cp=1, ep=4, seq=4096, global_batch_seqs=4)
    est = P.estimate_step(moe, c16, lay, 0.8)
    ep = est.by_strategy("ep")[0]
    S = 2 * 2 * 4096 * 4096 / 4 * 4
    assert (ep.op, ep.calls, ep.size_B) == ("all_to_all", 4 * 8, S)
    assert ep.sent_B == pytest.approx(32 * F("all_to_all", 4) * S)
    lay = P.Layout(dp=2, tp=4, cp=2, seq=8192, global_batch_seqs=2)
    est = P.estimate_step(moe, c16, lay, 0.8)
    kv = 2 * 2 * 8192 * 1024 / 4
    cp = est.by_strategy("cp")
    assert [c.op for c in cp] == ["all_gather", "reduce_scatter"] and cp[0].size_B == kv
    assert sum(c.sent_B for c in cp) == pytest.approx(3 * 8 * F("all_gather", 2) * kv)


def test_compute_time_by_hand(m70, big):
    est = P.estimate_step(m70, big, P.layout("quiz-70b"), efficiency=0.5)
    peak = specs.get("h100-sxm").peak_flop_per_s("bf16")
    T = 1024 * 4096
    attn = 6 * 4096 * 4096 * 8192 * 80 * 1024  # PaLM: 12·L·h·s per token, halved (causal), × 1024·4096 tokens
    assert est.compute_s == pytest.approx((6 * m70.params * T + attn) / (1024 * peak * 0.5))
    assert est.backward_s == pytest.approx(2 * est.forward_s)


def test_default_efficiency_is_the_published_matmul_ceiling():
    from x4lib.catalog import published, specs
    eta, ident = P.default_efficiency(specs.get("h100-sxm"))
    rows = published.measurements(device="h100-sxm", kind="matmul", dtype="bf16")
    best = max(rows, key=lambda r: r["value"])
    assert len(rows) >= 2 and ident == best["id"]  # the highest of several published rates, not the first
    assert eta == pytest.approx(best["value"] * 1e12 / specs.get("h100-sxm").peak_flop_per_s("bf16")) and eta < 1


def test_memory_state_per_gpu(m70, big):
    est = P.estimate_step(m70, big, P.layout("quiz-70b"))
    shard = m70.params / 32
    assert est.state_B_per_gpu == pytest.approx(shard * (2 + 2 + 12 / 32)) and est.fits
    dp_only = P.estimate_step(m70, big, P.Layout(dp=1024, seq=4096, global_batch_seqs=1024))
    assert dp_only.fits is False  # 16 B x 70.6e9 per GPU


def test_overlap_window_and_tail(m70, big):
    lay = P.layout("quiz-70b")
    on = P.estimate_step(m70, big, lay)
    off = P.estimate_step(m70, big, dataclasses.replace(lay, overlap=False))
    for a, b in zip(on.comms, off.comms):
        assert a.time_s == b.time_s and a.exposed_s <= b.exposed_s == b.time_s
    rs = on.by_strategy("zero1")[0]
    assert rs.exposed_s >= rs.time_s / rs.calls  # the last layer's reduction never hides


def test_group_placement(big):
    assert P.group_cluster(big, 8, 1).nodes == 1                 # tp: one node, NVLink
    dp = P.group_cluster(big, 32, 8)                              # dp with tp = 8: one GPU per node, its own NIC
    assert (dp.nodes, dp.gpus_per_node, dp.nics_per_node) == (32, 1, 1)
    assert dp.nic.bw_Bps == pytest.approx(big.nic.bw_Bps)
    whole = P.group_cluster(big, 1024, 1)
    assert (whole.nodes, whole.gpus_per_node, whole.nics_per_node) == (128, 8, 8)


def test_predicted_quiz_mfu_is_below_one_and_comm_is_named(m70, big):
    est = P.estimate_step(m70, big, P.layout("quiz-70b"))
    assert 0 < est.mfu < est.efficiency
    assert est.step_s == pytest.approx(est.compute_s + est.bubble_s + est.exposed_comm_s)
    worst = max(est.comms, key=lambda c: c.exposed_s)
    assert worst.strategy == "tp"  # the exposed NVLink traffic, not the gradient reduction


@pytest.mark.parametrize("lay,needle", [
    (dict(dp=100), "GPUs"), (dict(dp=32, tp=8, pp=4, global_batch_seqs=100), "does not split"),
    (dict(dp=16, tp=8, pp=8, ep=2), "mixture-of-experts"), (dict(dp=1, tp=8, pp=128), "exceeds"),
    (dict(dp=32, tp=8, pp=4, cp=1, seq=4095, global_batch_seqs=1024), None),
    (dict(dp=32, tp=8, pp=4, micro_batch=0), "whole number"),
])
def test_bad_layouts(m70, big, lay, needle):
    layout = P.Layout(**{"seq": 4096, "global_batch_seqs": 1024, **lay})
    if needle is None:
        P.check_layout(layout, m70, big)  # an odd sequence length is fine with cp = 1
        return
    with pytest.raises(ValueError, match=needle):
        P.check_layout(layout, m70, big)


# --- command line ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy,extra", [
    ("dp", []), ("zero1", []), ("zero2", []), ("zero3", []), ("fsdp", []),
    ("tp", ["--model", "llama3-70b"]), ("pp", ["--model", "llama3-70b", "--tp", "8", "--pp", "4"]),
    ("cp", ["--model", "llama3-70b", "--tp", "8", "--cp", "2"]),
    ("ep", ["--layers", "8", "--hidden", "4096", "--experts", "8", "--top-k", "2", "--ep", "8", "--tp", "8"]),
])
def test_cli_contract(strategy, extra):
    args = ["--strategy", strategy, "--cluster", QUIZ, "--json"]
    if "--model" not in extra:
        args += ["--params", "70e9"]
    r = run_cli("comm-estimate", *args, *extra)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    jsonschema.validate(d, load_schema("comm_estimate_output.schema.json"))
    assert d["strategy"] == strategy and d["collectives"] and d["bytes_per_gpu_per_step"] > 0
    assert d["exposed_time_s"] <= d["time_s"] + 1e-12


def test_cli_text_names_the_units():
    r = run_cli("comm-estimate", "--strategy", "tp", "--model", "llama3-70b", "--cluster", QUIZ, "--pp", "4")
    assert r.returncode == 0 and "GB = 1e9 B" in r.stdout and "exposed" in r.stdout


@pytest.mark.parametrize("args,needle", [
    (["--strategy", "pp", "--params", "70e9", "--cluster", QUIZ], "needs --pp"),
    (["--strategy", "ep", "--params", "70e9", "--cluster", QUIZ, "--ep", "8"], "mixture-of-experts"),
    (["--strategy", "tp", "--params", "70e9", "--cluster", QUIZ], "shape"),
    (["--strategy", "dp", "--cluster", QUIZ], "--params"),
    (["--strategy", "dp", "--params", "nan", "--cluster", QUIZ], "not a finite number"),
    (["--strategy", "dp", "--params", "70e9", "--cluster", "128x8-h200"], "unknown cluster"),
    (["--strategy", "tp", "--model", "llama3-70b", "--cluster", QUIZ, "--tp", "3"], "does not divide"),
    (["--strategy", "mp", "--params", "70e9", "--cluster", QUIZ], "unknown strategy"),
])
def test_cli_bad_input_is_one_line_exit_2(args, needle):
    r = run_cli("comm-estimate", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert needle in r.stderr.strip().splitlines()[-1], r.stderr


def test_published_check_against_the_model():
    (chk,) = P.published_checks()
    assert chk["source"] == "nccltests-issue-322-2025" and len(chk["rows"]) == 5
    big = chk["rows"][-1]
    assert big["measured_busbw_Bps"] == pytest.approx(367.29e9)
    # the model's bandwidth plateau is within 10 % of the largest measured row
    assert big["model_busbw_Bps"] == pytest.approx(big["measured_busbw_Bps"], rel=0.10)
    for r in chk["rows"]:  # busbw = size / time x 2(n-1)/n holds for the stored measured rows (nccl-tests)
        assert r["measured_busbw_Bps"] == pytest.approx(r["size_B"] / r["measured_time_s"] * 2 * 1023 / 1024, rel=2e-3)


def test_attention_flop_is_the_same_convention_as_the_mfu_budget(m70):
    # chapter 03 and chapter 00 count causal attention alike: PaLM's 12·L·h·s per token, halved by the mask
    from x4lib.training import mfu
    lay = P.Layout(dp=4, tp=8, pp=4, seq=8192, global_batch_seqs=64)
    run = mfu.Run(params=m70.params, layers=m70.layers, d_model=m70.hidden, ffn=m70.ffn, heads=64, kv_heads=8,
                  seq_len=8192, global_batch_tokens=64 * 8192, tp=8, pp=4, dp=4)
    per_token = mfu.attention_flop_per_token(run, causal=True)
    assert P.attention_flop(m70, lay) == pytest.approx(per_token * lay.tokens_per_step)
    assert P.step_flop(m70, lay) == pytest.approx((6 * m70.params + per_token) * lay.tokens_per_step)
