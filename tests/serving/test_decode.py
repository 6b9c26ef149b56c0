"""x4lib.serving.decode: one decode step end to end (GEMMs by the matmul model, KV reads, kernel launches)."""
import json

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.serving import decode, inference


def test_a_batch_one_step_streams_the_weights_at_the_achievable_bandwidth():
    e = decode.estimate("llama3-8b", "h100-sxm", 1, 2048)
    assert e.bound == "memory" and e.mode == "graph"
    assert e.step_s >= e.weight_bytes / e.achievable_bw_Bps  # never faster than streaming the weights
    roof = inference.decode_step("llama3-8b", "h100-sxm", 1, 2048)
    assert e.step_s > roof.time_s  # the roofline bound (peak bandwidth) is optimistic; this is not
    assert e.kernels == pytest.approx(32 * 100 / 16 + 1)


def test_eager_pays_the_host_launches_only_when_they_outrun_the_gpu():
    small = decode.estimate("llama3-8b", "h100-sxm", 1, 16, mode="eager")
    assert small.step_s == pytest.approx(max(small.t_device_s, small.t_host_s))
    assert decode.estimate("llama3-8b", "h100-sxm", 1, 16, mode="graph").step_s <= small.step_s


def test_against_a_published_decode_step():
    """gpt-fast (gpt-fast-readme): Llama-3.1-8B BF16, batch 1, on an A100-80GB power-limited to 330 W, 93.89
    tokens/s (a short prompt; the SXM variant is assumed). The model is within 15 %, optimistic (the power limit
    lowers the bandwidth it reaches: not modelled)."""
    e = decode.estimate("llama3-8b", "a100-sxm-80gb", 1, 256)
    assert e.tokens_per_s / 93.89 - 1 == pytest.approx(0.1, abs=0.1)


def test_moe_is_refused_and_the_cli_keeps_its_contract():
    with pytest.raises(ValueError, match="dense"):
        decode.estimate("mixtral-8x7b", "h100-sxm", 1, 128)
    r = run_cli("decode", "--model", "llama3-8b", "--device", "h100-sxm", "--batch", "1", "--context", "2048",
                "--graph", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, load_schema("decode_output.schema.json"))
    assert doc["bound"] == "memory" and doc["tokens_per_s"] == pytest.approx(1000 / doc["step_ms"])
    bad = run_cli("decode", "--model", "llama3-8b", "--device", "h100-sxm", "--context", "0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_more_kernels_per_layer_cost_their_start_up_and_their_launches():
    """A plain-PyTorch decoder launches several times a serving engine's kernels: each extra kernel adds t0 on the
    device (graph) and t_L on the host (eager)."""
    base = decode.estimate("llama3-8b", "h100-sxm", 1, 2048, "graph")
    more = decode.estimate("llama3-8b", "h100-sxm", 1, 2048, "graph", kernels_per_layer=40)
    extra = (40 - decode.KERNELS_PER_LAYER) * 32
    assert more.t_small_s - base.t_small_s == pytest.approx(extra * base.t_fixed_s / base.kernels, rel=1e-6)
    eager = decode.estimate("llama3-8b", "h100-sxm", 1, 2048, "eager", kernels_per_layer=40)
    assert eager.step_s == pytest.approx(eager.kernels * base.t_host_s / base.kernels) and eager.bound == "launch"
    with pytest.raises(ValueError, match="at least"):
        decode.estimate("llama3-8b", "h100-sxm", 1, 2048, kernels_per_layer=2)


def test_a_graph_steps_kernels_start_as_kernels_in_a_cuda_graph_do():
    """In graph mode every kernel of the step pays the matmul model's t0 measured in CUDA graphs (where our runs
    measured it) and the pipeline fill; eager, the family's sourced t0."""
    from x4lib.compute import matmul
    g = decode.estimate("llama3-8b", "h100-sxm", 1, 2048, "graph")
    e = decode.estimate("llama3-8b", "h100-sxm", 1, 2048, "eager")
    t0_graph = matmul.graph_overhead(matmul.target("h100-sxm", "bf16"))[0]
    fam = matmul.constants().family_of("h100-sxm")
    if t0_graph is None:
        pytest.skip("no committed CUDA-graph timings")
    assert g.t_fixed_s == pytest.approx(g.kernels * (t0_graph + fam.tile_latency_for("bf16")))
    assert e.t_fixed_s == pytest.approx(e.kernels * (fam.overhead_s + fam.tile_latency_for("bf16")))


def test_the_measured_decode_steps_are_predicted_without_fitting():
    """Our committed decode steps (book/runs/gemms/) against the model with the profiler's kernel count (nothing is
    fitted to them): every CUDA-graph step within 30 %, the median of all within 12 %. Eager steps are launch-bound,
    the host's: within 60 %. On the first H100 and H200 machines every step was within 30 %; a second H100 machine
    (2026-11-27) whose host issues kernels about 1.5 times slower (its GEMM sweep's floor: 17 µs against 12) decodes
    eagerly up to 55 % slower than predicted, its graph steps as well as the others'."""
    rows = decode.measured_checks()
    if not rows:
        pytest.skip("no committed GEMM sweep with decode steps")
    assert {r["mode"] for r in rows} == {"eager", "graph"}
    errs = sorted(abs(r["error"]) for r in rows)
    assert errs[len(errs) // 2] < 0.12, errs
    assert max(abs(r["error"]) for r in rows if r["mode"] == "graph") < 0.30
    assert max(abs(r["error"]) for r in rows if r["mode"] == "eager") < 0.60


def test_decode_cli_takes_a_kernel_count_and_refuses_a_bad_one():
    r = run_cli("decode", "--model", "llama3-8b", "--device", "h100-sxm", "--context", "2048", "--eager",
                "--kernels-per-layer", "40", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["basis"]["kernels_per_layer"] == 40
    bad = run_cli("decode", "--model", "llama3-8b", "--device", "h100-sxm", "--context", "2048",
                  "--kernels-per-layer", "1")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "--kernels-per-layer" in bad.stderr.strip().splitlines()[-1]
