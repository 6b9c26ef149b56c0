"""Page helpers for book/capstone-8-to-1024.md: chapter 00's 70B run planned from 8 to 1024 GPUs, the same plan on
other devices, the planner checked against published runs, the explorer and the glued values."""
from __future__ import annotations

import dataclasses
import functools
from types import MappingProxyType
from typing import Mapping, Sequence

from x4lib.training import ground_truth as gt, memory, mfu, planner
from x4lib.catalog import specs
from x4lib.book.tables import Col, table
from x4lib.pages import ground_truth as gtp
from x4lib.pages.ground_truth import ground_truth_table  # noqa: F401  (page.ground_truth_table in the capstone)

COUNTS = (8, 64, 256, 1024)
DEVICES = ("h100-sxm", "h200-sxm", "b200")
TOKENS = None  # chapter 00's quiz tokens, read in tokens()


def tokens() -> float:
    from x4lib.training import economics
    return economics.quiz_givens()["tokens"]


def model70() -> planner.Model:
    """Chapter 00's 70B model with the shape of givens.yaml ``quiz_run`` (a Llama-3-70B shape)."""
    r = mfu.quiz_run()
    return planner.Model(r.params, r.layers, r.d_model, r.heads, r.kv_heads, r.seq_len, r.ffn, True, "70B")


def batch_tokens() -> int:
    return mfu.quiz_run().global_batch_tokens


@functools.lru_cache(maxsize=64)
def _fallback(gpus: tuple) -> tuple:
    return tuple(_fallback_row(name, g) for name in MODELS for g in gpus)


def _plans(device: str, gpus: int, model: planner.Model | None = None) -> tuple:
    """Every layout ``planner.search`` finds that fits in memory (searched once per page run)."""
    return _search(device, gpus, model or model70())


@functools.lru_cache(maxsize=64)
def _search(device: str, gpus: int, model: planner.Model) -> tuple:
    return tuple(planner.search(model, specs.get(device), gpus, batch_tokens()))


def best(device: str, gpus: int, model: planner.Model | None = None) -> planner.Plan | None:
    """The planner's own fastest layout (hardware-only step; the page labels it as the planner's)."""
    plans = _plans(device, gpus, model)
    return plans[0] if plans else None


# ------------------------------------------------------------------------------------------------ the stack model

#: the stack whose defaults and overlap the capstone's run assumes (NeMo / Megatron-Core, x4lib/data/ground_truth.yaml)
STACK_ID = "nemo-mcore-2024"
#: Llama 3's vocabulary (the logits layer of every shape the page plans; the quiz run does not state one)
VOCAB = 128256
VOCAB_70B = VOCAB
#: the stack model's terms as the page shows them (Step.parts_s keys grouped; the exposed collectives summed; the
#: optimizer step, timed at the copy bandwidth, with the other non-matmul kernels)
PARTS = {"gemm": "GEMMs", "attention": "attention core", "memory": "non-matmul kernels",
         "kernels": "launch and framework overhead", "overlapped": "compute lost to overlapped communication",
         "exposed": "exposed communication", "pipeline bubble": "pipeline bubble"}


@dataclasses.dataclass(frozen=True)
class StackPlan:
    """One layout the planner found that fits, timed by the stack model (x4lib.training.stack, constants fitted on
    every public source)."""
    plan: planner.Plan
    step: object
    step_s: float
    parts_s: Mapping
    interleave: int = 1   # virtual pipeline stages per GPU (interleaved 1F1B); 1: plain 1F1B

    @property
    def layout(self) -> planner.Layout:
        return self.plan.layout

    @property
    def label(self) -> str:
        """The planner's layout label, with the virtual stages where the pipeline is interleaved."""
        return self.layout.label() + (f" VP{self.interleave}" if self.interleave > 1 else "")

    @property
    def mfu(self) -> float:
        """6·N·B / (n·P·t) with the stack model's step t (the book's 6ND convention)."""
        return self.plan.ideal_s / self.step_s

    @property
    def tokens_per_s(self) -> float:
        return self.plan.global_batch_tokens / self.step_s

    @property
    def limit(self) -> str:
        """What costs most after the GEMMs and the attention core."""
        rest = {k: v for k, v in self.parts_s.items() if k not in ("GEMMs", "attention core")}
        return max(rest, key=rest.get)

    def totals(self, tokens: float | None = None) -> planner.RunTotals:
        p = self.plan
        return planner.totals(p.device, p.layout.n_gpus, p.model.params, self.tokens_per_s,
                              tokens if tokens is not None else globals()["tokens"]())


#: stacks whose pipeline can interleave virtual stages (Megatron-LM's schedule, kept by Megatron-Core and NeMo)
INTERLEAVING_STACKS = frozenset({"megatron-lm-2021", "megatron-lm-2022", "nemo-mcore-2024"})


def virtual_stage_options(p: planner.Plan, stack_id: str = STACK_ID) -> tuple[int, ...]:
    """The virtual stages per GPU a layout can run: 1, and with a pipeline on an interleaving stack every divisor of
    the layers per stage (Megatron-Core needs the layers to divide by stages × virtual stages)."""
    layers, pp = p.model.layers, p.layout.pp
    if pp == 1 or layers % pp or stack_id not in INTERLEAVING_STACKS:
        return (1,)
    per = layers // pp
    return tuple(v for v in range(1, per + 1) if per % v == 0)


def stack_plan(p: planner.Plan, stack_id: str = STACK_ID, interleave: int | None = None) -> StackPlan:
    """Time a planner layout with the stack model on the planner's cluster for that device and count. The pipeline
    interleaves the virtual stages given, or, with ``interleave=None``, those of :func:`virtual_stage_options` that
    the stack model times fastest (the planner's search leaves this to the stack model)."""
    if interleave is None:
        return min((stack_plan(p, stack_id, v) for v in virtual_stage_options(p, stack_id)),
                   key=lambda sp: sp.step_s)
    from x4lib.training import stack as stk, validate
    m, lay = p.model, p.layout
    gbs = p.global_batch_tokens // m.seq
    shape = stk.Shape(m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.gated_mlp, VOCAB, m.seq)
    setup = stk.Setup(lay.tp, lay.pp, lay.dp, lay.cp, lay.zero, lay.micro_batch, gbs // (lay.dp * lay.micro_batch),
                      lay.recompute, interleave, lay.tp > 1)
    st = stk.step(shape, setup, p.device, stk.stack(stack_id), planner.cluster_for(p.device, lay.n_gpus))
    c = validate.all_constants()
    raw = st.parts_s(c)
    parts = {PARTS[k]: raw[k] for k in ("gemm", "attention", "memory", "kernels", "overlapped")}
    parts[PARTS["memory"]] += raw.get("exposed optimizer", 0.0)   # the optimizer step is memory-bound work too
    parts[PARTS["exposed"]] = sum(v for k, v in raw.items() if k.startswith("exposed ") and k != "exposed optimizer")
    parts[PARTS["pipeline bubble"]] = raw["pipeline bubble"]
    return StackPlan(p, st, st.time_s(c), MappingProxyType(parts), interleave)


def stack_plan_mfu(p: planner.Plan, stack_id: str = STACK_ID) -> float:
    """The stack model's MFU of a planner layout."""
    return stack_plan(p, stack_id).mfu


def stack_best_of(plans) -> StackPlan | None:
    """The layout the stack model times fastest among ``plans`` (all of which fit in memory)."""
    scored = [stack_plan(p) for p in plans]
    return min(scored, key=lambda sp: sp.step_s) if scored else None


def stack_best(device: str, gpus: int, model: planner.Model | None = None) -> StackPlan | None:
    """The capstone's plan: of every layout ``planner.search`` finds that fits, the one the stack model times
    fastest; its step gives the MFU, days, GPU-hours, energy and cost."""
    return _stack_best(device, gpus, model or model70())


@functools.lru_cache(maxsize=64)
def _stack_best(device: str, gpus: int, model: planner.Model) -> StackPlan | None:
    return stack_best_of(_plans(device, gpus, model))


@functools.lru_cache(maxsize=1)
def fitted_devices() -> frozenset:
    """The devices of the public ground truth the stack model's constants are fitted on."""
    return frozenset(r.device.id for src in gt.FIT_SOURCES for r in gt.rows(src))


@functools.lru_cache(maxsize=1)
def band() -> dict:
    """The stack model's leave-one-source-out residuals (predicted − published, MFU points) on the published H100
    runs: every headline's uncertainty."""
    pub = {d["source"]: d for d in gtp.ground_truth_report()["sources"]}["published"]
    h100 = {r.row_id for r in gt.rows("published") if r.device.id == "h100-sxm"}
    res = [r["points"] for r in pub["runs"] if r["id"] in h100]
    return {"lo": min(res), "hi": max(res), "n": len(res)}


def mfu_range(mfu_frac: float) -> tuple[float, float]:
    """The MFU a real run would reach given the residuals (fractions): a prediction too high by ``hi`` points
    means a real MFU ``hi`` points lower."""
    b = band()
    return mfu_frac - b["hi"] / 100, mfu_frac - b["lo"] / 100


def _range_text(lo: float, hi: float, fmt: str) -> str:
    return f"{fmt.format(lo)} to {fmt.format(hi)}"


def scale_rows(device: str = "h100-sxm", counts=COUNTS) -> list[dict]:
    """The stack model's fastest layout at each GPU count, its MFU with the residual range, and the days,
    GPU-hours, energy and cost that follow from its step (memory is the limit when nothing fits)."""
    rows = []
    for g in counts:
        sp = stack_best(device, g)
        if sp is None:
            least = planner.min_gpus_to_fit(model70(), specs.get(device), batch_tokens())
            rows.append({"gpus": g, "layout": f"none fits (needs {least} GPUs)", "mem": None, "mfu": None,
                         "range": None, "days": None, "gpu_h": None, "limit": "memory", "mwh": None, "usd": None})
            continue
        t = sp.totals()
        lo, hi = mfu_range(sp.mfu)
        rows.append({"gpus": g, "layout": sp.label, "mem": sp.plan.memory.total_B / 1e9, "mfu": sp.mfu,
                     "range": _range_text(100 * lo, 100 * hi, "{:.0f}") + " %",
                     "days": t.wall_clock_days, "days_lo": t.wall_clock_days * sp.mfu / hi,
                     "days_hi": t.wall_clock_days * sp.mfu / lo, "gpu_h": t.gpu_hours, "limit": sp.limit,
                     "mwh": t.energy_J / 3.6e9, "usd": t.rental_usd, "step_s": sp.step_s,
                     "planner_mfu": best(device, g).mfu})
    return rows


def scale_table(device: str = "h100-sxm"):
    return table(scale_rows(device), {
        "gpus": Col("GPUs", None, "{:,}"), "layout": Col("fastest layout that fits (stack model)", wrap=True),
        "mem": Col("memory per GPU", "GB", "{:.0f}"), "mfu": Col("MFU (6ND)", None, "{:.1%}"),
        "range": Col("MFU given the residuals"), "days": Col("wall clock", "days", "{:,.1f}"),
        "gpu_h": Col("GPU-hours", None, "{:,.0f}"), "mwh": Col("energy", "MWh", "{:,.0f}"),
        "usd": Col("rent", "million USD", lambda v: f"{v / 1e6:,.2f}"),
        "limit": Col("costs most after the GEMMs and attention", wrap=True)})


def breakdown_series(device: str = "h100-sxm", counts=COUNTS) -> list[tuple[str, dict]]:
    """(label, {stack model term: seconds per step}) for plots.step_breakdown, counts where a layout fits."""
    out = []
    for g in counts:
        sp = stack_best(device, g)
        if sp:
            out.append((f"{g} GPUs: {sp.label}", dict(sp.parts_s)))
    return out


def device_rows(gpus=(256, 1024)) -> list[dict]:
    """Each device at each count: the stack model's layout and numbers, whether its constants were fitted on that
    chip's runs, and the planner's (hardware-only) MFU beside it, labelled."""
    fitted = fitted_devices()
    rows = []
    for d in DEVICES:
        dev = specs.get(d)
        for g in gpus:
            sp = stack_best(d, g)
            t = sp.totals()
            lo, hi = mfu_range(sp.mfu)
            rows.append({"device": d, "gpus": g, "mem_gb": dev.values["memory_gb"].value,
                         "peak": dev.peak_flop_per_s("bf16") / 1e12, "layout": sp.label, "mfu": sp.mfu,
                         "range": _range_text(100 * lo, 100 * hi, "{:.0f}") + " %",
                         "fitted": d in fitted,
                         "basis": ("fitted on this chip's runs" if d in fitted else
                                   "no run of this chip in the ground truth: constants of "
                                   + ", ".join(sorted(fitted)) + " carried over"),
                         "planner_mfu": best(d, g).mfu,
                         "days": t.wall_clock_days, "gpu_h": t.gpu_hours, "mwh": t.energy_J / 3.6e9,
                         "scope": {"server": "whole server", "gpu": "GPU TDP only"}[t.assumptions["power_scope"]]})
    return rows


def device_table(gpus=(256, 1024)):
    return table(device_rows(gpus), {
        "device": "device", "gpus": Col("GPUs", None, "{:,}"), "mem_gb": Col("memory", "GB", "{:.0f}"),
        "peak": Col("dense BF16 peak", "TFLOP/s", "{:,.0f}"), "layout": Col("fastest layout (stack model)", wrap=True),
        "mfu": Col("MFU", None, "{:.1%}"), "range": Col("given the H100 residuals"),
        "basis": Col("stack model's constants", wrap=True),
        "planner_mfu": Col("planner alone (hardware only)", None, "{:.1%}"),
        "days": Col("days", None, "{:.1f}"), "mwh": Col("energy", "MWh", "{:,.0f}"), "scope": "power counted"})


# ------------------------------------------------------------------------------------------------ validation

#: the likely cause of a miss, per source (shown where the residual exceeds ±10 points); reasons, not fits
CAUSES = {
    "narayanan-2021": "2021 software: fused kernels but no FlashAttention; our rates are today's libraries'",
    "korthikanti-2022": "A100 software of 2022 below today's matmul rates; interleaved schedule not modelled",
    "bigscience-tr11": "DeepSpeed pipeline of 2022; full recomputation and a 250K vocabulary head not modelled",
    "jiang-2024-megascale": "Megatron-LM baseline without overlap; GPU model not named (A100 assumed)",
    "mosaicml-llmfoundry-benchmarks": "FSDP without tensor parallelism: per-layer gathers and CPU launch gaps",
    "hf-ultrascale-playbook-2025": "AWS EFA network and nanotron kernels, not the InfiniBand preset modelled",
    "llama3-2024": "layout exceeds our activation model (no FlashAttention term); interleaving not modelled",
    "nvidia-dgxc-benchmarking": "tuned NeMo recipe: its overlap, and the interleaved schedule the planner alone does "
                                "not time (the stack model does)",
}


@functools.lru_cache(maxsize=1)
def checks() -> tuple:
    return tuple(planner.validation())


def validation_rows(runs: Sequence[Mapping] | None = None) -> list[dict]:
    """The planner on each of ``runs`` (training_runs.yaml entries, default: every published run) against the MFU
    the run reached."""
    rows = []
    for c in (checks() if runs is None else [planner.check_run(r) for r in runs]):
        r, p = c.run, c.plan
        res = c.residual_pp
        rows.append({"run": r["run"], "id": r["id"], "source": r["source"], "device": r["device"], "gpus": r["gpus"],
                     "layout": p.layout.label(), "stated": r["published"]["stated_utilisation_pct"],
                     "published": c.published_mfu, "predicted": c.predicted_mfu, "residual": res,
                     "within": abs(res) <= 10, "fits": not c.error, "memory_gb": p.memory.total_B / 1e9,
                     "usable_gb": p.usable_B / 1e9,
                     "cause": "" if abs(res) <= 10 else CAUSES.get(r["source"], "")})
    return rows


def validation_table(runs: Sequence[Mapping] | None = None):
    return table(validation_rows(runs), {
        "id": "run", "source": "source", "gpus": Col("GPUs", None, "{:,}"), "layout": Col("layout", wrap=True),
        "stated": Col("stated", "%", "{:.1f}"), "published": Col("published, 6ND", None, "{:.1%}"),
        "predicted": Col("planner", None, "{:.1%}"), "residual": Col("residual", "points", "{:+.1f}"),
        "cause": Col("likely cause of a miss", wrap=True)})


def validation_groups() -> list[tuple[str, list[dict]]]:
    groups: dict[str, list] = {}
    for r in validation_rows():
        groups.setdefault(r["source"], []).append({"x": 100 * r["published"], "y": 100 * r["predicted"]})
    return list(groups.items())


# ------------------------------------------------------------------------------------------------ explorer

MODELS = {  # shapes from training_runs.yaml (Llama 3.1 rows) and chapter 00's 70B
    "8B (Llama 3.1 shape)": "dgxc-llama31-8b-bf16-64",
    "70B (chapter 00)": None,
    "405B (Llama 3.1 shape)": "dgxc-llama31-405b-bf16-1024",
}


def explorer_model(name: str) -> planner.Model:
    rid = MODELS[name]
    if rid is None:
        return model70()
    return planner.run_model(next(r for r in planner.published_runs() if r["id"] == rid))


def plan_rows(sp: StackPlan) -> list[dict]:
    """One plan term by term: the stack model's step and the days, GPU-hours, energy and cost it gives, with the
    MFU range the residuals allow and the planner's hardware-only step of the same layout beside it."""
    p = sp.plan
    t = sp.totals()
    lo, hi = mfu_range(sp.mfu)
    rows = [{"quantity": "layout", "value": sp.label},
            {"quantity": "memory per GPU (GB)", "value": f"{p.memory.total_B / 1e9:.1f} of {p.usable_B / 1e9:.1f}"}]
    rows += [{"quantity": f"{k} (s)", "value": f"{v:.2f}"} for k, v in sp.parts_s.items()]
    rows += [{"quantity": "step, stack model (s)", "value": f"{sp.step_s:.2f}"},
             {"quantity": "MFU (6ND), stack model", "value": f"{sp.mfu:.1%}"},
             {"quantity": f"MFU given the residuals on {band()['n']} published H100 runs",
              "value": _range_text(100 * lo, 100 * hi, "{:.0f}") + " %"},
             {"quantity": "days for the quiz's tokens", "value": f"{t.wall_clock_days:,.1f}"},
             {"quantity": "GPU-hours", "value": f"{t.gpu_hours:,.0f}"},
             {"quantity": "energy (MWh)", "value": f"{t.energy_J / 3.6e9:,.0f}"},
             {"quantity": "rent (million USD)",
              "value": "no dated price stored" if t.rental_usd is None else f"{t.rental_usd / 1e6:,.2f}"},
             {"quantity": "planner alone on this layout (hardware only): step (s), MFU",
              "value": f"{p.step_s:.2f}, {p.mfu:.1%}"}]
    return rows


#: the explorer's global batch choices, Mi tokens per step (chapter 00's run uses 4)
BATCH_MI = (1, 2, 4, 8, 16)


def explorer(model: str = "70B (chapter 00)", device: str = "h100-sxm", gpus: int = 256, batch_mi: int | None = None):
    """Model, device, GPU count, global batch (Mi tokens per step) and (optionally) fixed degrees → of the layouts
    that fit, the one the stack model times fastest. The controls start at ``model`` (a key of MODELS), ``device``,
    ``gpus`` and ``batch_mi`` (default: chapter 00's batch)."""
    import ipywidgets as w
    from IPython.display import display

    def show(model, device, gpus, batch_mi, tp, pp, cp, zero):
        fixed = {k: (None if v == "auto" else int(v)) for k, v in (("tp", tp), ("pp", pp), ("cp", cp),
                                                                   ("zero", zero))}
        try:
            plans = planner.search(explorer_model(model), specs.get(device), int(gpus), int(batch_mi * 2**20),
                                   fixed=fixed)
        except ValueError as exc:
            print(f"cannot plan: {exc}")
            return
        if not plans:
            print("no layout fits in memory with these choices")
            return
        display(table(plan_rows(stack_best_of(plans)), {"quantity": "quantity", "value": "value"}))

    auto = ["auto", "1", "2", "4", "8"]
    return w.interactive(
        show, model=w.Dropdown(options=list(MODELS), value=model, description="model"),
        device=w.Dropdown(options=list(DEVICES) + ["a100-sxm-80gb"], value=device, description="device"),
        gpus=w.Dropdown(options=[8, 16, 32, 64, 128, 256, 512, 1024, 2048], value=gpus, description="GPUs"),
        batch_mi=w.Dropdown(options=BATCH_MI, value=batch_mi or batch_tokens() // 2**20, description="batch (Mi tok)"),
        tp=w.Dropdown(options=auto, value="auto", description="TP"),
        pp=w.Dropdown(options=auto + ["16"], value="auto", description="PP"),
        cp=w.Dropdown(options=auto, value="auto", description="CP"),
        zero=w.Dropdown(options=["auto", "0", "1", "2", "3"], value="auto", description="ZeRO"))


def _fallback_row(name: str, g: int) -> dict:
    sp = stack_best("h100-sxm", g, explorer_model(name))
    return {"model": name, "gpus": g, "layout": sp.label if sp else "none fits",
            "mfu": sp.mfu if sp else None, "limit": sp.limit if sp else "memory"}


def explorer_fallback_rows(gpus=(64, 1024)) -> list[dict]:
    return [dict(r) for r in _fallback(tuple(gpus))]


def explorer_fallback_series(gpus=(64, 1024)):
    """(groups, series) for plots.grouped_bars: models × GPU counts, MFU in percent (0 where nothing fits)."""
    rows = explorer_fallback_rows(gpus)
    series = [(f"{g} GPUs", [100 * (r["mfu"] or 0.0) for r in rows if r["gpus"] == g]) for g in gpus]
    return list(MODELS), series


def explorer_fallback_table(gpus=(64, 1024)):
    return table(explorer_fallback_rows(gpus), {
        "model": "model", "gpus": Col("H100 GPUs", None, "{:,}"), "layout": Col("fastest layout", wrap=True),
        "mfu": Col("MFU (6ND), stack model", None, "{:.1%}"),
        "limit": Col("costs most after the GEMMs and attention", wrap=True)})


@functools.lru_cache(maxsize=1)
def headline() -> dict:
    """One MFU for the 70B run on 1024 H100s: the stack model's best of every layout the planner finds that fits,
    with the spread of its leave-one-source-out residuals on the published H100 runs (MFU points), beside the
    planner's own best. The scale table's 1024-GPU row is the same plan (stack_best)."""
    sp = stack_best("h100-sxm", 1024)
    top = best("h100-sxm", 1024)
    t = sp.totals()
    return {"mfu": 100 * sp.mfu, "layout": sp.label, "planner_mfu": 100 * top.mfu,
            "planner_layout": top.layout.label(), "planner_layout_stack_mfu": 100 * stack_plan_mfu(top),
            **band(), "layouts": len(_plans("h100-sxm", 1024)), "days": t.wall_clock_days,
            "gpu_hours": t.gpu_hours, "usd": t.rental_usd, "mwh": t.energy_J / 3.6e9}


def headline_schedule() -> dict:
    """The headline plan's pipeline schedule: its virtual stages per GPU against plain 1F1B on the same layout (the
    bubble's share of the step and the MFU each way), what interleaving adds."""
    sp = stack_best("h100-sxm", 1024)
    plain = stack_plan(sp.plan, interleave=1)
    per = sp.plan.model.layers // sp.layout.pp
    return {"v": sp.interleave, "mfu": 100 * sp.mfu, "plain_mfu": 100 * plain.mfu,
            "gain": 100 * (sp.mfu - plain.mfu), "per_stage": per,
            "bubble_pct": 100 * sp.parts_s[PARTS["pipeline bubble"]] / sp.step_s,
            "plain_bubble_pct": 100 * plain.parts_s[PARTS["pipeline bubble"]] / plain.step_s}


# ------------------------------------------------------------------------------------------------ glue values

@functools.lru_cache(maxsize=1)
def summary() -> dict:
    """Every number the page's prose quotes (glue key → value, display units)."""
    m = model70()
    s: dict = {"params_b": m.params / 1e9, "layers": m.layers, "seq": m.seq, "batch_m": batch_tokens() / 2 ** 20,
               "tokens_t": tokens() / 1e12, "reserve_pct": 100 * planner.RESERVE}
    s["state_gb_per_gpu_8"] = memory.model_state_bytes(m.params) / 8 / 1e9
    s["h100_gb"] = specs.get("h100-sxm").values["memory_gb"].value
    s["min_gpus"] = planner.min_gpus_to_fit(m, specs.get("h100-sxm"), batch_tokens())
    rows = {r["gpus"]: r for r in scale_rows()}
    for g in COUNTS[1:]:
        r = rows[g]
        s[f"mfu_{g}"] = 100 * r["mfu"]
        s[f"days_{g}"] = r["days"]
        s[f"layout_{g}"] = r["layout"]
        s[f"limit_{g}"] = r["limit"]
        s[f"gpuh_{g}_k"] = r["gpu_h"] / 1e3
        s[f"planner_mfu_{g}"] = 100 * r["planner_mfu"]
    s["mwh_1024"] = rows[1024]["mwh"]
    s["usd_1024_m"] = rows[1024]["usd"] / 1e6
    s["days_1024_lo"], s["days_1024_hi"] = rows[1024]["days_lo"], rows[1024]["days_hi"]
    s["usd_1024_m_lo"] = s["usd_1024_m"] * rows[1024]["days_lo"] / rows[1024]["days"]
    s["usd_1024_m_hi"] = s["usd_1024_m"] * rows[1024]["days_hi"] / rows[1024]["days"]
    sp = stack_best("h100-sxm", 1024)
    parts = sp.parts_s
    s["step_1024"] = sp.step_s
    s["gemm_1024_pct"] = 100 * (parts["GEMMs"] + parts["attention core"]) / sp.step_s
    s["overhead_1024_pct"] = 100 * (parts["launch and framework overhead"] + parts["non-matmul kernels"]) / sp.step_s
    for g in COUNTS[1:]:
        sg = stack_best("h100-sxm", g)
        pg = sg.parts_s
        s[f"dp_{g}"] = sg.layout.dp
        s[f"mm_{g}_pct"] = 100 * (pg["GEMMs"] + pg["attention core"]) / sg.step_s
        s[f"bubble_{g}_pct"] = 100 * pg["pipeline bubble"] / sg.step_s
        s[f"comm_{g}_pct"] = 100 * pg["exposed communication"] / sg.step_s
        s[f"overlap_{g}_pct"] = 100 * pg["compute lost to overlapped communication"] / sg.step_s
        s[f"limit_{g}_pct"] = 100 * pg[sg.limit] / sg.step_s
        lo_g, hi_g = mfu_range(sg.mfu)
        s[f"mfu_{g}_lo"], s[f"mfu_{g}_hi"] = 100 * lo_g, 100 * hi_g
    top = best("h100-sxm", 1024)
    s["planner_layout_1024"] = top.layout.label()
    dr = {(r["device"], r["gpus"]): r for r in device_rows()}
    for d in DEVICES:
        key = d.split("-")[0]
        s[f"{key}_mfu_1024"] = 100 * dr[(d, 1024)]["mfu"]
        s[f"{key}_planner_mfu_1024"] = 100 * dr[(d, 1024)]["planner_mfu"]
        s[f"{key}_days_1024"] = dr[(d, 1024)]["days"]
        s[f"{key}_layout_256"] = dr[(d, 256)]["layout"]
        s[f"{key}_layout_1024"] = dr[(d, 1024)]["layout"]
        s[f"{key}_mwh_1024"] = dr[(d, 1024)]["mwh"]
    s["fitted_devices"] = ", ".join(sorted(fitted_devices()))
    s.update(published_numbers())
    s.update(gtp.numbers())
    for k, val in headline_schedule().items():
        s[f"head_vp_{k}"] = val
    h = headline()
    s["head_mfu"], s["head_lo"], s["head_hi"], s["head_n"] = h["mfu"], h["lo"], h["hi"], h["n"]
    s["head_lo_abs"] = abs(h["lo"])
    s["head_gap"] = h["planner_mfu"] - h["mfu"]
    s["head_layout"], s["head_layouts"] = h["layout"], h["layouts"]
    s["head_planner_layout_stack_mfu"] = h["planner_layout_stack_mfu"]
    return s


def published_numbers() -> dict:
    """The planner on the published runs (:func:`validation_rows`): runs, hits within ±10 MFU points (and how many
    of them are NVIDIA's recipes), misses either way, the median residual [points], layouts that do not fit, and
    Llama 3 405B's memory per GPU against the usable memory [GB], the tightest fit. The capstone and the
    ground-truth appendix quote them."""
    v = validation_rows()
    l405 = next(r for r in v if r["id"] == "llama3-405b-8192-seq8192")
    return {"n_runs": len(v), "n_within": sum(r["within"] for r in v),
            "n_within_dgxc": sum(r["within"] for r in v if r["source"] == "nvidia-dgxc-benchmarking"),
            "n_over": sum(r["residual"] > 10 for r in v), "n_under": sum(r["residual"] < -10 for r in v),
            "median_residual": sorted(r["residual"] for r in v)[len(v) // 2],
            "n_not_fit": sum(not r["fits"] for r in v),
            "llama405_gb": l405["memory_gb"], "llama405_usable_gb": l405["usable_gb"]}
