"""Choose hardware for a workload: rank the catalog's accelerators and name the constraint that decided each.

Four workloads, each built from the book's existing models (no new physics here):

    train      a dense model of N parameters (chapter 00's 70B shape, x4lib.training.mfu.quiz_run) on n chips, D tokens:
               state per chip  M = 16 B · N / n  (BF16 weights and gradients, FP32 master and Adam, ZeRO-3)
               rate            the planner's fastest layout that fits (x4lib.training.planner: GEMMs at the achievable
                               rate of x4lib.compute.matmul, attention, element-wise work, exposed communication and
                               the pipeline bubble) where the planner has a collective model for the chip; otherwise
                               the achievable compute alone (x4lib.training.mfu.compute_terms on the matmul model;
                               communication not modelled, an upper bound); a chip with neither is not ranked
                               (peak × one assumed MFU would rank it on its datasheet alone)
               score: training tokens/s per chip; days = D / (n · score)
    serve      a model decoded at a latency target τ per output token (x4lib.serving.inference.decode_step):
               the largest batch B with t_step(B) ≤ τ and weights + KV(B) ≤ usable memory
               score: generated tokens/s per chip = B / t_step(B)
    retrieve   one long-context query: prefill C tokens, then G answer tokens
               t = F_prefill / (P·u) + G · t_step(1, C)                 score: queries per hour per chip
    moe-serve  a mixture-of-experts model on chips of one scale-up domain (tensor/expert parallel over a
               scale-out network is excluded by assumption): the fewest chips that hold the weights, or a power of
               two up to the domain (at most 72) if that serves more tokens/s per chip; then as serve

Deciding constraint (the first that binds): "memory capacity", "scale-up domain", "bandwidth" (the step is
memory-bound at the limit), "compute" (compute-bound), or "price" (``objective="cost"``: score per USD from a
dated rental snapshot; devices without a sourced price are not ranked). Every number that decided is returned.
Used in: book/05-the-accelerator-landscape-2026.md.
"""
from __future__ import annotations

import dataclasses
import functools
import math

from x4lib.serving import inference
from x4lib.catalog import landscape, specs
from x4lib.compute import matmul
from x4lib.training import memory, mfu, planner

WORKLOADS = ("train", "serve", "retrieve", "moe-serve")
CONSTRAINTS = ("memory capacity", "scale-up domain", "bandwidth", "compute", "price")

#: the chooser's assumptions (givens, stated on the page and in every --json answer)
DEFAULTS = {
    "train": {"params": 70e9, "tokens": 1.4e12, "chips": 1024},
    "serve": {"model": "mistral-7b", "context": 4096, "tpot_ms": 20.0, "weight_dtype": "bf16"},
    "retrieve": {"model": "mixtral-8x7b", "context": 32768, "answer_tokens": 256, "mfu": 0.5,
                 "weight_dtype": "bf16"},
    "moe-serve": {"model": "deepseek-v3", "context": 4096, "tpot_ms": 50.0, "weight_dtype": "fp8_e4m3"},
}
WORKSPACE_FRACTION = 0.1     # memory kept free for activations, runtime and fragmentation (an assumption)
TRAIN_BYTES_PER_PARAM = 16   # 2 + 2 + 4 + 8 (x4lib.training.memory.PRECISION_BYTES bf16 + Adam)
MAX_BATCH = 4096
#: how a training score was reached (the "basis" number of every train answer)
TRAIN_BASES = {"planner": "the planner's fastest layout (achievable GEMMs, attention, element-wise work, exposed "
                          "communication, pipeline bubble)",
               "achievable compute": "achievable compute of the matmul model; communication not modelled (upper bound)"}


@dataclasses.dataclass(frozen=True)
class Choice:
    device: str
    score: float
    deciding_constraint: str
    numbers: dict

    def to_json(self) -> dict:
        return {"device": self.device, "score": self.score, "deciding_constraint": self.deciding_constraint,
                "numbers": self.numbers}


def candidates(include_announced: bool = False) -> list[specs.Device]:
    """Accelerators with a dense BF16 peak, a memory size and a memory bandwidth (CPUs left out)."""
    return [d for d in specs.load_catalog().values()
            if d.kind != "cpu" and all(f in d.values for f in ("bf16_dense_tflops", "memory_gb", "memory_bw_gb_s"))
            and (include_announced or d.status == "shipping")]


def usable_B(dev: specs.Device, chips: int = 1) -> float:
    """Memory a workload may fill on ``chips`` of ``dev``: the capacity on chapter 05's basis
    (:func:`x4lib.catalog.landscape.memory_B`: binary-sized HBM as GiB, GB = 1e9 B) less the workspace."""
    return landscape.memory_B(dev)[0] * (1 - WORKSPACE_FRACTION) * chips


def _price(dev: specs.Device):
    r = landscape.cheapest_rental(dev.id)
    return (r["usd_per_gpu_hour"], r["date"], r["source"]) if r else None


def _largest_batch(model, dev, context, tpot_s, weight_dtype, chips):
    """Largest batch meeting the latency and memory limits, and which limit stopped it."""
    def step(b):
        return inference.decode_step(model, dev, b, context, weight_dtype=weight_dtype, gpus=chips)
    cap = usable_B(dev, chips)
    s1 = step(1)
    if s1.memory_needed_B > cap:
        return None, s1, "memory capacity"
    if s1.time_s > tpot_s:
        return None, s1, "bandwidth" if s1.bound == "memory" else "compute"
    lo, hi = 1, MAX_BATCH
    while lo < hi:                                   # time and memory both grow with the batch
        mid = (lo + hi + 1) // 2
        s = step(mid)
        if s.time_s <= tpot_s and s.memory_needed_B <= cap:
            lo = mid
        else:
            hi = mid - 1
    s, nxt = step(lo), step(min(lo + 1, MAX_BATCH))
    if lo == MAX_BATCH:
        why = "bandwidth" if s.bound == "memory" else "compute"
    elif nxt.memory_needed_B > cap:
        why = "memory capacity"
    else:
        why = "bandwidth" if nxt.bound == "memory" else "compute"
    return lo, s, why


def _serve_one(dev, model, context, tpot_ms, weight_dtype, chips=1) -> tuple[float, str, dict]:
    b, s, why = _largest_batch(model, dev, context, tpot_ms / 1e3, weight_dtype, chips)
    nums = {"chips": chips, "usable_memory_gb": usable_B(dev, chips) / 1e9,
            "memory_bw_gb_s": dev.memory_bw_Bps * chips / 1e9,
            "peak_tflops": dev.peak_flop_per_s(s.compute_dtype) * chips / 1e12,
            "compute_dtype": s.compute_dtype}
    if b is None:
        nums.update({"needed_gb_at_batch_1": s.memory_needed_B / 1e9, "step_ms_at_batch_1": s.time_s * 1e3})
        return 0.0, why, nums
    tok = b / s.time_s
    nums.update({"batch": b, "step_ms": s.time_s * 1e3, "memory_needed_gb": s.memory_needed_B / 1e9,
                 "tokens_per_s": tok, "tokens_per_s_per_chip": tok / chips})
    return tok / chips, why, nums


def _with_price(dev, score, why, nums, per_hour_units: float, objective: str):
    """Attach the rental price; with objective 'cost' the score becomes units per USD and the constraint price."""
    p = _price(dev)
    if p:
        usd_h, date, src = p
        nums.update({"usd_per_gpu_hour": usd_h, "price_date": date, "price_source": src})
        if objective == "cost" and score > 0:
            return per_hour_units / usd_h, "price", nums
    elif objective == "cost":
        return None, why, nums
    return score, why, nums


def train_run(params: float) -> mfu.Run:
    """Chapter 00's 70B run (x4lib.training.mfu.quiz_run) with ``params`` parameters: the same layers, width, heads,
    sequence and batch, the MLP widened or narrowed to hold them (x4lib.training.planner.default_ffn)."""
    r = mfu.quiz_run()
    if params == r.params:
        return r
    try:
        ffn = planner.default_ffn(params, r.layers, r.d_model, r.heads, r.kv_heads, r.gated_mlp)
    except planner.PlanError as exc:
        raise ValueError(f"params: {exc}") from None
    return dataclasses.replace(r, params=params, ffn=ffn)


@functools.lru_cache(maxsize=128)
def planned(device_id: str, params: float, chips: int):
    """The planner's fastest layout that fits (None: nothing fits), or the PlanError that says why it cannot plan."""
    r = train_run(params)
    model = planner.Model(params, r.layers, r.d_model, r.heads, r.kv_heads, r.seq_len, r.ffn, r.gated_mlp, "train")
    try:
        plans = planner.search(model, specs.get(device_id), chips, r.global_batch_tokens, top=1)
    except planner.PlanError as exc:
        return exc
    return plans[0] if plans else None


def achievable_compute(dev, params: float) -> tuple[float, float] | None:
    """(achievable fraction of the BF16 peak for the run's layer work, matmul efficiency) from the matmul model,
    or None when no matmul family covers ``dev``."""
    try:
        ct = mfu.compute_terms(train_run(params), dev, "bf16")
    except matmul.NoModelError:
        return None
    return ct.ideal_s / (ct.matmul_s + ct.attention_s + ct.elementwise_s), ct.matmul_efficiency


def train(dev, params, tokens, chips, objective="speed"):
    state = memory.training_plan(params, chips, zero=3)
    per_chip = state.weights_B + state.gradients_B + state.optimizer_B
    cap = usable_B(dev)
    peak = dev.peak_flop_per_s("bf16")
    dom = landscape.scaleup_domain(dev.id)
    nums = {"state_per_chip_gb": per_chip / 1e9, "usable_memory_gb": cap / 1e9, "peak_tflops": peak / 1e12,
            "scaleup_domain_chips": dom["chips"] if dom else None}
    if per_chip > cap:
        nums["chips_needed_for_state"] = math.ceil(params * TRAIN_BYTES_PER_PARAM / cap)
        return 0.0, "memory capacity", nums
    plan = planned(dev.id, params, chips)
    if isinstance(plan, planner.Plan):
        tok_s_chip = plan.tokens_per_s / chips
        nums.update({"basis": "planner", "layout": plan.layout.label(), "mfu": plan.mfu,
                     "matmul_efficiency": plan.matmul_efficiency, "planner_limit": plan.limit})
    elif plan is None:
        nums["basis"] = "planner"
        return 0.0, "memory capacity", nums
    else:
        got = achievable_compute(dev, params)
        if got is None:
            return None, "compute", {**nums, "why_not_ranked": "no achievable-rate model: no matmul family covers "
                                     "it and the planner cannot plan it (" + str(plan) + ")"}
        frac, e_mm = got
        tok_s_chip = peak * frac / (6 * params)
        nums.update({"basis": "achievable compute", "mfu": frac, "matmul_efficiency": e_mm})
    nums.update({"tokens_per_s_per_chip": tok_s_chip, "days": tokens / (tok_s_chip * chips) / 86400})
    return _with_price(dev, tok_s_chip, "compute", nums, tok_s_chip * 3600, objective)


def serve(dev, model, context, tpot_ms, weight_dtype, objective="speed"):
    score, why, nums = _serve_one(dev, model, context, tpot_ms, weight_dtype)
    return _with_price(dev, score, why, nums, score * 3600, objective)


def retrieve(dev, model, context, answer_tokens, mfu, weight_dtype, objective="speed"):
    cfg = inference.get(model)
    p = inference.param_counts(cfg)
    dense = 2 * (p["active"] - (0 if cfg.tied_embeddings else p["embedding"]))
    # prefill: token i attends to i earlier tokens, on average C/2
    f_prefill = context * (dense + inference.attention_flop_per_token(cfg, context // 2))
    s = inference.decode_step(cfg, dev, 1, context, weight_dtype=weight_dtype)
    cdt = s.compute_dtype
    t_pre = f_prefill / (dev.peak_flop_per_s(cdt) * mfu)
    t_dec = answer_tokens * s.time_s
    nums = {"prefill_s": t_pre, "decode_s": t_dec, "memory_needed_gb": s.memory_needed_B / 1e9,
            "usable_memory_gb": usable_B(dev) / 1e9, "prefill_tflop": f_prefill / 1e12,
            "peak_tflops": dev.peak_flop_per_s(cdt) / 1e12, "memory_bw_gb_s": dev.memory_bw_Bps / 1e9}
    if s.memory_needed_B > usable_B(dev):
        return 0.0, "memory capacity", nums
    q_h = 3600 / (t_pre + t_dec)
    nums["queries_per_hour"] = q_h
    return _with_price(dev, q_h, "compute" if t_pre >= t_dec else "bandwidth", nums, q_h, objective)


def moe_serve(dev, model, context, tpot_ms, weight_dtype, objective="speed"):
    cfg = inference.get(model)
    w = inference.weight_bytes(cfg, weight_dtype)
    chips = max(1, math.ceil(w / usable_B(dev)))
    dom = landscape.scaleup_domain(dev.id)
    dom_chips = dom["chips"] if dom else 1
    nums = {"weights_gb": w / 1e9, "usable_memory_gb_per_chip": usable_B(dev) / 1e9, "chips_to_hold": chips,
            "scaleup_domain_chips": dom_chips if dom else None}
    if chips > dom_chips:
        return 0.0, "scale-up domain", nums
    # more chips than the fewest that hold the weights leave room for a larger batch: try the powers of two up to
    # the domain (at most 72 chips, one NVL72 rack) and keep the best tokens/s per chip
    options = sorted({chips} | {2 ** i for i in range(8) if chips < 2 ** i <= min(dom_chips, 72)})
    best = None
    for n in options:
        score, why, more = _serve_one(dev, cfg, context, tpot_ms, weight_dtype, n)
        if best is None or score > best[0]:
            best = (score, why, more)
    score, why, more = best
    nums.update(more)
    if not score:
        return score, why, nums
    return _with_price(dev, score, why, nums, score * 3600 * more["chips"], objective)


def _check(name, v, low, high=None, integer=False):
    if not isinstance(v, (int, float)) or not math.isfinite(v) or v < low or (high is not None and v > high):
        raise ValueError(f"{name} must be a finite number in [{low:g}, {high if high is not None else 'inf'}], got {v!r}")
    if integer and int(v) != v:
        raise ValueError(f"{name} must be a whole number, got {v!r}")


def rank(workload: str, *, objective: str = "speed", include_announced: bool = False, devices=None, **kw) -> dict:
    """Rank the candidates for ``workload`` (flags as in :data:`DEFAULTS`); returns the --json document."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; use one of: {', '.join(WORKLOADS)}")
    if objective not in ("speed", "cost"):
        raise ValueError(f"objective must be speed or cost, got {objective!r}")
    unknown = set(kw) - set(DEFAULTS[workload])
    if unknown:
        raise ValueError(f"workload {workload} takes {', '.join(DEFAULTS[workload])}; not {', '.join(sorted(unknown))}")
    a = {**DEFAULTS[workload], **{k: v for k, v in kw.items() if v is not None}}
    for k in ("params", "tokens"):
        if k in a:
            _check(k, a[k], 1)
    for k in ("chips", "context", "answer_tokens"):
        if k in a:
            _check(k, a[k], 1, 1e7, integer=True)
            a[k] = int(a[k])
    if "mfu" in a:
        _check("mfu", a["mfu"], 1e-3, 1)
    if "tpot_ms" in a:
        _check("tpot_ms", a["tpot_ms"], 1e-3, 1e5)
    if "model" in a:
        inference.get(a["model"])          # unknown model -> error naming the known ones
    devs = [specs.get(d) for d in devices] if devices else candidates(include_announced)
    fn = {"train": train, "serve": serve, "retrieve": retrieve, "moe-serve": moe_serve}[workload]
    ranked, unranked = [], []
    for dev in devs:
        try:
            score, why, nums = fn(dev, **a, objective=objective)
        except specs.UnsupportedDtypeError as exc:
            unranked.append({"device": dev.id, "why": str(exc)})
            continue
        nums = {"status": dev.status, **nums}
        if score is None:
            unranked.append({"device": dev.id, "why": nums.get("why_not_ranked",
                                                               "no dated rental price in the catalog's data")})
            continue
        ranked.append(Choice(dev.id, score, why, nums))
    ranked.sort(key=lambda c: (-c.score, c.device))
    units = {"train": "training tokens/s per chip", "serve": "generated tokens/s per chip at the latency target",
             "retrieve": "queries per hour per chip", "moe-serve": "generated tokens/s per chip at the latency target"}
    if objective == "cost":
        units = {"train": "training tokens per USD", "serve": "generated tokens per USD",
                 "retrieve": "queries per USD", "moe-serve": "generated tokens per USD"}
    assumptions = {"workload": workload, "objective": objective, **a, "score_unit": units[workload],
                   "workspace_fraction": WORKSPACE_FRACTION, "include_announced": include_announced,
                   "memory_basis": "vendor's memory figure read as GB = 1e9 B, less the workspace fraction",
                   "rates": ("training: " + "; or ".join(TRAIN_BASES.values()) if workload == "train" else
                             "dense peaks from the catalog; decode steps are roofline bounds (x4lib.serving.inference)"),
                   "multi_chip": "bandwidth and compute add across chips of one domain; communication time is "
                                 "not modelled (an upper bound)",
                   "not_ranked": unranked}
    return {"ranking": [c.to_json() for c in ranked], "assumptions": assumptions}


# ------------------------------------------------------------------------------ command line: choose

def cli_arguments(p) -> None:
    from x4lib import cli
    p.add_argument("--workload", required=True, type=cli.choice_of("workload", WORKLOADS), help="/".join(WORKLOADS))
    p.add_argument("--objective", default="speed", type=cli.choice_of("objective", ("speed", "cost")),
                   help="speed (default) or cost (per USD, devices with a dated rental price only)")
    p.add_argument("--include-announced", action="store_true", help="rank announced parts too (preliminary figures)")
    p.add_argument("--params", type=cli.number("parameters", 1, 1e15), help="train: parameters (default 70e9)")
    p.add_argument("--tokens", type=cli.number("tokens", 1, 1e16), help="train: training tokens (default 1.4e12)")
    p.add_argument("--chips", type=cli.number("chips", 1, 1e6, integer=True), help="train: chips (default 1024)")
    p.add_argument("--mfu", type=cli.number("MFU", 0, 1, low_open=True), help="retrieve: MFU of the prefill in (0, 1]")
    p.add_argument("--model", help="serve/retrieve/moe-serve: a model id of x4lib/data/models.yaml")
    p.add_argument("--context", type=cli.number("context tokens", 1, 1e7, integer=True), help="context tokens")
    p.add_argument("--tpot-ms", type=cli.number("ms per output token", 0, 1e5, low_open=True),
                   help="serve/moe-serve: latency target per output token in ms")
    p.add_argument("--answer-tokens", type=cli.number("answer tokens", 1, 1e6, integer=True),
                   help="retrieve: tokens generated per query (default 256)")
    p.add_argument("--weight-dtype", help="serve/retrieve/moe-serve: weight dtype (bf16, fp8_e4m3, int8, fp4)")
    p.add_argument("--json", action="store_true", help="machine-readable (schemas/choose_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    flags = {k: getattr(args, k) for k in ("params", "tokens", "chips", "mfu", "model", "context", "tpot_ms",
                                            "answer_tokens", "weight_dtype") if getattr(args, k) is not None}
    wrong = set(flags) - set(DEFAULTS[args.workload])
    if wrong:
        raise cli.UsageError(f"--workload {args.workload} does not take "
                             f"{', '.join('--' + w.replace('_', '-') for w in sorted(wrong))}")
    doc = rank(args.workload, objective=args.objective, include_announced=args.include_announced, **flags)
    lines = [f"{i + 1:>2}. {c['device']:<16}{c['score']:>12.4g}  {c['deciding_constraint']}"
             for i, c in enumerate(doc["ranking"])]
    text = (f"{args.workload} ({doc['assumptions']['score_unit']}; higher is better)\n" + "\n".join(lines)
            + "".join(f"\nnot ranked: {u['device']} ({u['why']})" for u in doc["assumptions"]["not_ranked"]))
    cli.emit(doc, text, as_json=args.json)
    return 0
