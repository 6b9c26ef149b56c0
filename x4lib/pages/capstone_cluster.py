"""Page helpers for the capstone's "The whole cluster" and "Variants" sections (book/capstone-8-to-1024.md): the
fabric, GPU–NIC pairing, checkpoints and goodput, power, a scale-out checklist with nccl-tests targets, an MoE with
expert parallelism, FP8 and a GB200 NVL72 layout, all for the capstone's headline plan (capstone.headline()).

Each topic calls the model its chapter calls: chapter 03's x4lib.network.topology, clusters, collectives and topo;
chapter 04's x4lib.datacenter.facility, reliability and storage (through planner.totals, the same goodput the
capstone's days use); the matmul model of Lab 00 (x4lib.compute.matmul) and x4lib.training.moe.
"""
from __future__ import annotations

import functools

from x4lib.book.tables import Col, table
from x4lib.catalog import landscape, specs
from x4lib.network import collectives, nccl_log, nccl_tests, topo, topology
from x4lib.pages import capstone as cap
from x4lib.training import memory, moe, planner

DEVICE = "h100-sxm"
GPUS = 1024
#: nccl-tests sizes of the checklist: -b 1G -e 8G -f 2 runs 1, 2, 4 and 8 GiB (the size is multiplied by -f while
#: it stays at or below -e; nccl-tests' src/common.cu, nccl-tests-v2-19-6); the targets are the model at 8 GiB
NCCL_MIN, NCCL_MAX, NCCL_FACTOR = "1G", "8G", 2
TARGET_SIZE_B = 8 * 2**30
CHECK_NODES = (1, 2, 128)
HGX_TOPO = "topo_hgx-h100-10nic_nvidia-nccl-1264.txt"
#: a stored two-node nccl-tests log (NVIDIA/nccl-tests issue 309) for the "is this busbw healthy?" exercise
HEALTH_LOG = "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-qoofyk.log"
MOE_MODELS = ("mixtral-8x7b", "deepseek-v3")
#: tokens each GPU holds in one MoE layer's forward pass (one 8192-token sequence, the capstone's micro-batch)
MOE_TOKENS = 8192


def _dev() -> specs.Device:
    return specs.get(DEVICE)


# ------------------------------------------------------------------------------------------------ the fabric

@functools.lru_cache(maxsize=4)
def fabric(gpus: int = GPUS) -> topology.Topology:
    """Chapter 03's rail-optimised fat tree for ``gpus`` GPUs (one NDR port per GPU, 64-port switches)."""
    return topology.rail_fat_tree(gpus, topology.default_radix(), topology.default_link_Bps())


def fabric_rows(gpus: int = GPUS) -> list[dict]:
    t = fabric(gpus)
    leaves = t.shape["leaves"]
    return [{"quantity": "GPUs, each with its own NIC port", "value": f"{t.endpoints:,}"},
            {"quantity": "servers of 8 GPUs (rails)", "value": f"{t.shape['nodes']:,} ({t.shape['gpus_per_node']})"},
            {"quantity": "leaf switches (rails × groups of servers)", "value": f"{leaves:,}"},
            {"quantity": "spine switches", "value": f"{t.switches - leaves:,}"},
            {"quantity": "switch ports (radix)", "value": f"{t.radix}"},
            {"quantity": "cables (GPU–leaf and leaf–spine)", "value": f"{t.links:,}"},
            {"quantity": "bisection, per direction (TB/s)", "value": f"{t.bisection_Bps / 1e12:,.1f}"},
            {"quantity": "bisection / non-blocking", "value": f"{t.bisection_ratio:.2f}"},
            {"quantity": "diameter (links crossed)", "value": f"{t.diameter_hops}"}]


def fabric_table(gpus: int = GPUS):
    return table(fabric_rows(gpus), {"quantity": Col("rail-optimised fat tree", wrap=True), "value": "value"})


# ------------------------------------------------------------------------------------------------ GPU–NIC

def nic_pairing() -> dict:
    """The preset's NICs per server and their rate, and what chapter 03's reading of an HGX H100 capture shows:
    the GPU pairs' path words and each GPU's nearest NIC."""
    c = planner.cluster_for(_dev(), GPUS)
    t, _ = topo.read_topo(_topo_path())
    doc = topo.topo_doc(t)
    return {"nics_per_node": c.nics_per_node, "gpus_per_node": c.gpus_per_node, "nic_gbit": c.nic.bw_Bps * 8 / 1e9,
            "gpu_paths": sorted({p["path"] for p in doc["pairs"] if p["a"].startswith("GPU")
                                 and p["b"].startswith("GPU")}),
            "nearest_nic_paths": sorted({g["nearest_nic_path"] for g in doc["gpus"]}),
            "own_nic": len({tuple(g["nearest_nics"]) for g in doc["gpus"]}) == len(doc["gpus"])
            and all(len(g["nearest_nics"]) == 1 for g in doc["gpus"])}


def _topo_path():
    from x4lib.pages import ch03
    return ch03.TOPO_DIR / HGX_TOPO


# ------------------------------------------------------------------------------------------------ checkpoints

def checkpoint(device: str = DEVICE, gpus: int = GPUS) -> dict:
    """The headline run's training state and checkpoint (x4lib.training.memory, x4lib.datacenter.storage) and the
    interval and goodput chapter 04's model gives (the same planner.totals the capstone's days use)."""
    from x4lib.datacenter import facility as dc, storage
    sp = cap.stack_best(device, gpus)
    params = sp.plan.model.params
    t = sp.totals()
    write_Bps = dc.given("checkpoint_write_GBps") * 1e9
    ck = storage.checkpoint_bytes(params)
    return {"state_tb": memory.model_state_bytes(params) / 1e12, "checkpoint_tb": ck / 1e12,
            "write_gb_s": write_Bps / 1e9, "write_s": ck / write_Bps, "mtbf_h": t.assumptions["mtbf_h"],
            "interval_min": t.assumptions["checkpoint_interval_s"] / 60, "goodput_pct": 100 * t.goodput,
            "restart_min": dc.given("restart_s") / 60, "per_gpu_gb": ck / gpus / 1e9}


# ------------------------------------------------------------------------------------------------ power

def power(device: str = DEVICE, gpus: int = GPUS) -> dict:
    """Chapter 04's power chain for the headline's GPUs: whole servers at the IT load, the facility at the PUE the
    capstone's energy uses (tco.defaults), and the average in training."""
    from x4lib.datacenter import facility as dc, tco
    d = tco.defaults(device)
    pc = dc.power_chain(device, gpus, d["pue"], dc.value("superpod_h100_rack_kw")["value"] * 1e3, d["load_fraction"])
    return {"gpus_mw": pc.gpu_W * pc.n_gpus / 1e6, "it_mw": pc.it_W / 1e6, "facility_mw": pc.facility_W / 1e6,
            "average_mw": pc.average_W / 1e6, "pue": pc.pue, "racks": pc.racks, "load_pct": 100 * pc.load_fraction}


def cluster_rows(device: str = DEVICE, gpus: int = GPUS) -> list[dict]:
    """Checkpoints and power in one table: what the cluster needs besides GPUs and links."""
    c, p = checkpoint(device, gpus), power(device, gpus)
    rows = (("training state (weights, gradients, Adam)", f"{c['state_tb']:,.2f}", "TB"),
            ("one checkpoint (weights and Adam state)", f"{c['checkpoint_tb']:,.2f}", "TB"),
            ("checkpoint write at the given storage rate", f"{c['write_s']:,.0f}", "s"),
            ("job MTBF at Llama 3's failure rate", f"{c['mtbf_h']:,.1f}", "h"),
            ("checkpoint interval (Daly)", f"{c['interval_min']:,.0f}", "min"),
            ("goodput", f"{c['goodput_pct']:.1f}", "%"),
            ("GPUs alone at TDP", f"{p['gpus_mw']:.2f}", "MW"),
            ("whole servers (IT load, maximum)", f"{p['it_mw']:.2f}", "MW"),
            (f"facility at PUE {p['pue']:.2f}", f"{p['facility_mw']:.2f}", "MW"),
            ("facility, average in training", f"{p['average_mw']:.2f}", "MW"))
    return [dict(zip(("quantity", "value", "unit"), r)) for r in rows]


def cluster_table(device: str = DEVICE, gpus: int = GPUS):
    return table(cluster_rows(device, gpus), {"quantity": Col("quantity", wrap=True), "value": "value", "unit": "unit"})


# ------------------------------------------------------------------------------------------------ checklist

def nccl_command(nodes: int, gpus_per_node: int = 8, binary: str = "all_reduce_perf") -> str:
    """The nccl-tests command line of the checklist: one process driving 8 GPUs on one node (-g 8), one process
    per GPU (-g 1) under mpirun on several."""
    sweep = f"-b {NCCL_MIN} -e {NCCL_MAX} -f {NCCL_FACTOR}"
    if nodes == 1:
        return f"./build/{binary} {sweep} -g {gpus_per_node}"
    return (f"mpirun -np {nodes * gpus_per_node} -npernode {gpus_per_node} --bind-to numa "
            f"./build/{binary} {sweep} -g 1")


@functools.lru_cache(maxsize=8)
def busbw_target(nodes: int, algorithm: str | None = None, size_B: int = TARGET_SIZE_B) -> collectives.Prediction:
    """The collective model's AllReduce of ``size_B`` on ``nodes`` servers of the capstone's cluster."""
    return collectives.predict("all_reduce", size_B, planner.cluster_for(_dev(), nodes * 8),
                               algorithm=algorithm)


def busbw_rows(nodes=CHECK_NODES, size_B: int = TARGET_SIZE_B) -> list[dict]:
    rows = []
    for n in nodes:
        c = planner.cluster_for(_dev(), n * 8)
        p, ring = busbw_target(n, None, size_B), busbw_target(n, "ring", size_B)
        rows.append({"nodes": n, "ranks": c.n_ranks, "command": nccl_command(n),
                     "algorithm": f"{p.algorithm}/{p.protocol}", "busbw": p.busbw_Bps / 1e9,
                     "ring": ring.busbw_Bps / 1e9, "wire": collectives.wire_bound_busbw_Bps(c) / 1e9})
    return rows


def busbw_table(nodes=CHECK_NODES, size_B: int = TARGET_SIZE_B):
    gib = f"{size_B / 2**30:g} GiB"
    return table(busbw_rows(nodes, size_B), {
        "nodes": Col("servers", None, "{:,}"), "ranks": Col("GPUs", None, "{:,}"),
        "command": Col("nccl-tests command", wrap=True), "algorithm": "NCCL's choice (model)",
        "busbw": Col(f"target busbw at {gib}", "GB/s", "{:,.0f}"),
        "ring": Col("with NCCL_ALGO=Ring", "GB/s", "{:,.0f}"),
        "wire": Col("ring's line-rate bound", "GB/s", "{:,.0f}")})


MFU_CHECKS = (("8B (Llama 3.1 shape)", 8), ("8B (Llama 3.1 shape)", 1024), ("70B (chapter 00)", 16),
              ("70B (chapter 00)", 1024))


def mfu_rows(checks=MFU_CHECKS) -> list[dict]:
    """The stack model's MFU at one node (the 70B: its smallest count) against 128 nodes: the drop a real
    scale-out should show, no more."""
    rows = []
    for name, g in checks:
        sp = cap.stack_best(DEVICE, g, cap.explorer_model(name))
        rows.append({"model": name, "gpus": g, "nodes": g // 8, "layout": sp.label, "mfu": sp.mfu})
    return rows


def mfu_table(checks=MFU_CHECKS):
    return table(mfu_rows(checks), {"model": "model", "nodes": Col("servers", None, "{:,}"),
                              "layout": Col("fastest layout (stack model)", wrap=True),
                              "mfu": Col("MFU (6ND), model", None, "{:.1%}")})


def checklist_rows(nodes=CHECK_NODES) -> list[dict]:
    """What to run, in order, before trusting the cluster with the 70B run, and what to expect."""
    b = {r["nodes"]: r for r in busbw_rows(nodes)}
    m = {(r["model"], r["gpus"]): r["mfu"] for r in mfu_rows()}
    nic = nic_pairing()
    return [
        {"step": "1. topology", "run": "nvidia-smi topo -m",
         "expect": f"every GPU pair {'/'.join(nic['gpu_paths'])}; each GPU one NIC of its own at "
                   f"{'/'.join(nic['nearest_nic_paths'])}"},
        {"step": "2. each server's state", "run": "python -m x4lib doctor; python -m x4lib doctor --from topo.txt "
                                                  "smi-q.txt all_reduce.log",
         "expect": "exit status 0 (notes only): matmul rate as the model predicts, no problem or warning finding in "
                   "the saved topo -m, nvidia-smi -q and nccl-tests output"},
        *({"step": f"{3 + i}. busbw, {n} server{'s' if n > 1 else ''}", "run": b[n]["command"],
           "expect": f"8 GiB row about {b[n]['busbw']:,.0f} GB/s busbw ({b[n]['algorithm']})"}
          for i, n in enumerate(nodes)),
        {"step": f"{3 + len(nodes)}. MFU, 1 against 128 servers", "run": "the 8B recipe at 8 and 1,024 GPUs",
         "expect": f"about {m[('8B (Llama 3.1 shape)', 8)]:.0%} and {m[('8B (Llama 3.1 shape)', 1024)]:.0%}; "
                   f"a larger drop is the network"}]


def checklist_table(nodes=CHECK_NODES):
    return table(checklist_rows(nodes), {"step": "step", "run": Col("run", wrap=True), "expect": Col("expect", wrap=True)})


# ------------------------------------------------------------------------------------------------ busbw health

@functools.lru_cache(maxsize=1)
def health_log() -> nccl_log.ParsedLog:
    from x4lib.paths import REPO_ROOT
    path = REPO_ROOT / "tests" / "data" / "nccl" / HEALTH_LOG
    return nccl_log.read_log(path.read_text(), str(path.name))


def health_check(size_B: int = TARGET_SIZE_B) -> dict:
    """The stored two-node log's row at ``size_B`` against the model's target on the same cluster, and its footer."""
    log = health_log()
    row = next(r for r in log.rows if r.size_B == size_B)
    p = busbw_target(2)
    measured = row.out_of_place.busbw_gb_s
    c = planner.cluster_for(_dev(), 16)
    return {"size_gib": size_B / 2**30, "measured": measured, "time_us": row.out_of_place.time_us,
            "algbw": row.out_of_place.algbw_gb_s, "model": p.busbw_Bps / 1e9,
            "ratio": measured / (p.busbw_Bps / 1e9), "footer": log.avg_busbw_gb_s,
            "wire": collectives.wire_bound_busbw_Bps(c) / 1e9,
            "factor": nccl_tests.busbw_factor("all_reduce", log.n_ranks), "ranks": log.n_ranks,
            "smallest_b": log.rows[0].size_B, "largest_gib": log.rows[-1].size_B / 2**30}


# ------------------------------------------------------------------------------------------------ MoE

def _moe_cfg(model_id: str):
    from x4lib.serving import inference
    return inference.get(model_id)


def moe_rows(models=MOE_MODELS, tokens: int = MOE_TOKENS) -> list[dict]:
    """EP against TP of 8 (one H100 server) and EP beyond the server, for each MoE of the catalog's models: bytes
    per token and layer, the link, the time of one forward MoE layer's traffic for ``tokens`` tokens per GPU."""
    c = planner.cluster_for(_dev(), GPUS)
    nv, net = c.intra.bw_Bps, c.nic.bw_Bps * c.nics_per_node / c.gpus_per_node
    rows = []
    for mid in models:
        cfg = _moe_cfg(mid)
        for ep in (e for e in (8, 64) if e <= cfg.experts):
            r = moe.compare(cfg.experts_active, cfg.hidden, cfg.moe_ffn, 8, 8, tokens, nv, net)
            e = moe.placement(ep, GPUS, c.gpus_per_node)
            ep_s = moe.layer_comm_s(moe.ep_bytes_sent_per_token(cfg.experts_active, cfg.hidden, ep), tokens,
                                    nv if e.link == "nvlink" else net)
            rows.append({"model": cfg.name, "k": cfg.experts_active, "experts": cfg.experts, "hidden": cfg.hidden,
                         "ep": ep, "link": e.link, "a2a_kb": moe.all_to_all_bytes_per_token_per_layer(
                             cfg.experts_active, cfg.hidden) / 1e3,
                         "ep_ms": 1e3 * ep_s, "tp_ms": 1e3 * r.tp_s,
                         "tp_width": r.tp_expert_width, "width": cfg.moe_ffn})
    return rows


def moe_table(models=MOE_MODELS, tokens: int = MOE_TOKENS):
    return table(moe_rows(models, tokens), {
        "model": "model", "k": Col("experts per token"), "ep": Col("EP degree"), "link": "EP's all-to-all on",
        "a2a_kb": Col("all-to-all per token and layer", "kB", "{:,.1f}"),
        "ep_ms": Col("EP traffic, one layer", "ms", "{:,.2f}"), "tp_ms": Col("TP8 traffic, one layer", "ms", "{:,.2f}"),
        "width": Col("expert width, EP"), "tp_width": Col("expert width, TP8")})


def expert_gemm_rates(model_id: str = "mixtral-8x7b", degree: int = 8, tokens: int = MOE_TOKENS) -> dict:
    """Lab 00's matmul model on one expert's up-projection: whole (EP, the expert's tokens from ``degree`` GPUs)
    against 1/degree of it (TP, the same tokens), in TFLOP/s."""
    from x4lib.compute import matmul
    cfg = _moe_cfg(model_id)
    per_expert = degree * tokens * cfg.experts_active // cfg.experts
    ep = matmul.predict(_dev(), "bf16", per_expert, 2 * cfg.moe_ffn, cfg.hidden)
    tp = matmul.predict(_dev(), "bf16", per_expert, 2 * cfg.moe_ffn // degree, cfg.hidden)
    return {"tokens_per_expert": per_expert, "ep_tflops": ep.flop / ep.time_s / 1e12,
            "tp_tflops": tp.flop / tp.time_s / 1e12}


def ep_vs_tp(model_id: str = "mixtral-8x7b", tokens: int = MOE_TOKENS) -> dict:
    """The exercise's answer: EP8 against TP8 for ``model_id`` on one H100 server."""
    c = planner.cluster_for(_dev(), GPUS)
    cfg = _moe_cfg(model_id)
    r = moe.compare(cfg.experts_active, cfg.hidden, cfg.moe_ffn, 8, c.gpus_per_node, tokens, c.intra.bw_Bps,
                    c.nic.bw_Bps * c.nics_per_node / c.gpus_per_node)
    return {"name": cfg.name, "k": cfg.experts_active, "ep_b": r.ep_bytes_per_token, "tp_b": r.tp_bytes_per_token,
            "ep_ms": 1e3 * r.ep_s, "tp_ms": 1e3 * r.tp_s, "ratio": r.tp_bytes_per_token / r.ep_bytes_per_token,
            "ep_wins": r.ep_wins, "sends_less": moe.ep_sends_less(cfg.experts_active, 8, 8), **expert_gemm_rates(
                model_id, 8, tokens)}


# ------------------------------------------------------------------------------------------------ FP8

def layer_gemms(sp: cap.StackPlan) -> list[tuple[int, int, int]]:
    """The four GEMMs of one layer of the headline layout, forward (tokens × out × in), as the stack model prices
    them (x4lib.training.stack.step)."""
    m, lay = sp.plan.model, sp.plan.layout
    T, t, h = m.seq * lay.micro_batch // lay.cp, lay.tp, m.hidden
    kv = m.kv_heads * (h // m.heads)
    up = 2 * m.ffn if m.gated_mlp else m.ffn
    return [(T, (h + 2 * kv) // t, h), (T, h, h // t), (T, up // t, h), (T, h, m.ffn // t)]


@functools.lru_cache(maxsize=1)
def fp8() -> dict:
    """FP8 against BF16 for the headline plan: the matmul model's rates on the layer's GEMMs (forward and both
    backward GEMMs), the published best-shape rates of both (stas00's MAMF table), and the step if only the GEMMs speed up (Amdahl: attention, memory-bound kernels, launches,
    communication and the bubble stay)."""
    from x4lib.compute import matmul
    sp = cap.stack_best(DEVICE, GPUS)
    dev = _dev()
    t = {"bf16": 0.0, "fp8_e4m3": 0.0}
    for (m, n, k) in layer_gemms(sp):
        for dt in t:
            t[dt] += sum(matmul.predict(dev, dt, *s).time_s for s in ((m, n, k), (m, k, n), (k, n, m)))
    gemm_speedup = t["bf16"] / t["fp8_e4m3"]
    gemm_s = sp.parts_s["GEMMs"]
    step_fp8 = sp.step_s - gemm_s + gemm_s / gemm_speedup
    from x4lib.catalog import published
    mamf = {m["dtype"]: m["value"] for m in published.measurements(DEVICE, "matmul")
            if m["id"].startswith("stas00-mamf-")}
    return {"peak_ratio": dev.peak_flop_per_s("fp8_e4m3") / dev.peak_flop_per_s("bf16"),
            "mamf_bf16": mamf["bf16"], "mamf_fp8": mamf["fp8_e4m3"], "mamf_ratio": mamf["fp8_e4m3"] / mamf["bf16"],
            "gemm_speedup": gemm_speedup, "gemm_share_pct": 100 * gemm_s / sp.step_s,
            "step_speedup": sp.step_s / step_fp8, "step_bf16": sp.step_s, "step_fp8": step_fp8,
            "mfu_bf16_pct": 100 * sp.mfu}


# ------------------------------------------------------------------------------------------------ GB200 NVL72

@functools.lru_cache(maxsize=4)
def nvl72(gpus: int = GPUS, nvlink_gpus: int = 64) -> dict:
    """The planner alone (hardware only: the stack model's constants were fitted on no Blackwell run) on GB200 GPUs
    with the scale-up domain of a DGX-style 8-GPU server and of an NVL72 rack used 64 GPUs at a time (16 racks hold
    1,024 GPUs; 64 is the largest power of two in the domain, so the degrees divide the count)."""
    dev = specs.get("gb200")
    m = cap.model70()
    domain = landscape.scaleup_domain("gb200")["chips"]
    out = {"domain": domain, "used": nvlink_gpus, "racks": gpus // nvlink_gpus}
    for label, per in (("8", 8), ("72", nvlink_gpus)):
        p = planner.search(m, dev, gpus, cap.batch_tokens(), gpus_per_node=per, top=1)[0]
        out[f"layout_{label}"], out[f"mfu_{label}"] = p.layout.label(), 100 * p.mfu
        out[f"tp_{label}"] = p.layout.tp
    moe_cfg = _moe_cfg("deepseek-v3")
    e = moe.placement(64, gpus, nvlink_gpus)
    out.update({"ds_ep": e.ep, "ds_link": e.link, "ds_link_h100": moe.placement(64, gpus, 8).link,
                "ds_name": moe_cfg.name})
    return out


# ------------------------------------------------------------------------------------------------ glue values

def summary() -> dict:
    """Every number the two sections quote (glue key → value, display units); keys start with ``cl_``."""
    s: dict = {}
    t = fabric()
    s.update({"cl_switches": t.switches, "cl_leaves": t.shape["leaves"], "cl_spines": t.switches - t.shape["leaves"],
              "cl_radix": t.radix, "cl_bisection_tb": t.bisection_Bps / 1e12, "cl_nodes": t.shape["nodes"],
              "cl_link_gb": t.link_Bps / 1e9, "cl_rail_groups": t.shape["rail_groups"],
              "cl_group_nodes": t.radix // 2})
    n = nic_pairing()
    s.update({"cl_nics": n["nics_per_node"], "cl_nic_gbit": n["nic_gbit"], "cl_gpu_path": "/".join(n["gpu_paths"]),
              "cl_nic_path": "/".join(n["nearest_nic_paths"])})
    s.update({f"cl_{k}": v for k, v in checkpoint().items()})
    s.update({f"cl_{k}": v for k, v in power().items()})
    for r in busbw_rows():
        s[f"cl_busbw_{r['nodes']}"], s[f"cl_ring_{r['nodes']}"] = r["busbw"], r["ring"]
        s[f"cl_wire_{r['nodes']}"], s[f"cl_alg_{r['nodes']}"] = r["wire"], r["algorithm"]
    for r in mfu_rows():
        s[f"cl_mfu_{r['model'].split()[0].lower()}_{r['gpus']}"] = 100 * r["mfu"]
    h = cap.headline()
    s["cl_head_layout"], s["cl_head_mfu"] = h["layout"], h["mfu"]
    s.update({f"cl_fp8_{k}": v for k, v in fp8().items()})
    s.update({f"cl_nvl_{k}": v for k, v in nvl72().items()})
    mo = {(r["model"], r["ep"]): r for r in moe_rows()}
    mx, ds = _moe_cfg("mixtral-8x7b").name, _moe_cfg("deepseek-v3").name
    s.update({"cl_mx_a2a_kb": mo[(mx, 8)]["a2a_kb"], "cl_mx_ep8_ms": mo[(mx, 8)]["ep_ms"],
              "cl_mx_tp8_ms": mo[(mx, 8)]["tp_ms"], "cl_ds_a2a_kb": mo[(ds, 64)]["a2a_kb"],
              "cl_ds_ep64_ms": mo[(ds, 64)]["ep_ms"], "cl_ds_ep8_ms": mo[(ds, 8)]["ep_ms"],
              "cl_ds_tp8_ms": mo[(ds, 8)]["tp_ms"],
              "cl_ds_tp_width": mo[(ds, 8)]["tp_width"], "cl_mx_tp_width": mo[(mx, 8)]["tp_width"],
              "cl_ds_k": mo[(ds, 64)]["k"], "cl_mx_k": mo[(mx, 8)]["k"], "cl_ds_experts": mo[(ds, 64)]["experts"],
              "cl_mx_name": mx, "cl_ds_name": ds, "cl_moe_tokens": MOE_TOKENS})
    s.update({"cl_nccl_min": NCCL_MIN, "cl_nccl_max": NCCL_MAX, "cl_nccl_factor": NCCL_FACTOR,
              "cl_target": f"{TARGET_SIZE_B / 2**30:.0f} GiB", "cl_gpus": GPUS})
    g = expert_gemm_rates("deepseek-v3")
    s["cl_ds_ep_tflops"], s["cl_ds_tp_tflops"] = g["ep_tflops"], g["tp_tflops"]
    h = health_check()
    s.update({f"cl_health_{k}": v for k, v in h.items()})
    s["cl_health_line"] = health_line()
    return s


def health_line() -> str:
    """The stored log's 8 GiB row as nccl-tests printed it (size, count, type, redop, root, then out-of-place time,
    algbw, busbw, #wrong)."""
    log = health_log()
    row = next(r for r in log.rows if r.size_B == TARGET_SIZE_B)
    o = row.out_of_place
    return f"{row.size_B} {row.count} {row.type} {row.redop} {row.root if row.root is not None else -1} " \
           f"{' '.join(o.text)} {o.wrong}"
