"""Page helpers of chapter 01 (book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md): peaks from first principles, the memory
hierarchy (in ``x4lib.pages.ch01_memory``), the host's job in a GPU server,
SIMT occupancy and divergence, the systolic-array simulator, Trainium / Gaudi / edge-NPU facts, one roofline for
every architecture, and the matmul explorer.

The models are ``x4lib.catalog.peaks``, ``x4lib.compute.systolic``, ``x4lib.compute.simt``, ``x4lib.compute.host``, ``x4lib.harness.bench`` (the
hierarchy sweep) and ``x4lib.compute.roofline``; the numbers are in the catalog and ``x4lib/data/facts/``. Everything
measured here is labelled with the CPU as detected.
"""
from __future__ import annotations

import dataclasses

from x4lib.catalog import facts, peaks, specs
from x4lib.compute import host, kernels, roofline as rl, simt, systolic
from x4lib.pages.ch01_memory import Sweep, fmt_size, sweep_points
from x4lib.book.tables import Col, fmt_value, md_text, sig, table, with_details

# ------------------------------------------------------------------------------------------------ peaks

#: one representative per architecture for the compact peak table and the roofline figure
ARCHITECTURES = {"a100-sxm-80gb": "GPU (Ampere)", "h100-sxm": "GPU (Hopper)", "b200": "GPU (Blackwell)",
                 "mi300x": "GPU (CDNA 3)", "tpu-v5p": "TPU", "trn2": "Trainium", "gaudi3": "Gaudi",
                 "i5-8250u": "CPU (laptop)"}
MAIN_DTYPE = {"i5-8250u": "fp32"}


def _peak_row(c: peaks.PeakCheck) -> dict:
    b = c.basis
    return {"device": b.device, "dtype": b.dtype, "units": f"{b.units} × {b.unit_name}",
            "flop_per_clock": b.flop_per_clock_per_unit, "clock_mhz": b.clock_hz / 1e6,
            "clock_kind": b.clock_kind, "computed": c.computed_flop_per_s / 1e12,
            "catalog": None if c.catalog_flop_per_s is None else c.catalog_flop_per_s / 1e12,
            "ratio": c.ratio, "status": c.status, "source": b.source}


_PEAK_COLS = {"device": "device", "dtype": "dtype", "units": Col("units", wrap=True),
              "flop_per_clock": Col("FLOP per clock per unit", fmt="{:,.0f}"),
              "clock_mhz": Col("clock", "MHz", "{:,.0f}"), "clock_kind": "clock is",
              "computed": Col("computed", "TFLOP/s", sig(4)), "catalog": Col("catalog", "TFLOP/s", sig(4)),
              "ratio": Col("computed / catalog", fmt="{:.3f}"), "status": "status", "source": "source"}


def peak_rows() -> list[dict]:
    """Every catalog (device, dtype) rebuilt from units × FLOP per clock × clock (dense), with the ratio."""
    return [_peak_row(c) for c in peaks.check_catalog()]


def peak_table(devices=ARCHITECTURES, dtype_of=MAIN_DTYPE):
    """One row per device of ``devices`` (at its dtype in ``dtype_of``, else BF16) and, collapsed, every
    (device, dtype) rebuilt."""
    compact = [_peak_row(peaks.check(d, dtype_of.get(d, "bf16"))) for d in devices]
    keys = ["device", "dtype", "units", "flop_per_clock", "clock_mhz", "clock_kind", "computed", "catalog", "ratio",
            "status"]
    full = peak_rows()
    return with_details(table(compact, {k: _PEAK_COLS[k] for k in keys}),
                        table(full, {k: _PEAK_COLS[k] for k in keys + ["source"]}),
                        f"All {len(full)} device × dtype peaks rebuilt (dense)")


def peak_summary() -> dict:
    """Counts for the prose: how many (device, dtype) peaks reproduce within the tolerance, how many are flagged."""
    checks = peaks.check_catalog()
    ok = [c for c in checks if c.status == "reproduces"]
    return {"n": len(checks), "reproduce": len(ok),
            # the reproduced peaks split by whether the check could have failed: a clock printed by the vendor or
            # a reference (independent of the figure) against one solved from the figure itself (implied/planned)
            "reproduce_independent": sum(not c.basis.clock_solved for c in ok),
            "reproduce_solved": sum(c.basis.clock_solved for c in ok),
            "solved_devices": len({c.basis.device for c in ok if c.basis.clock_solved}),
            "independent_devices": len({c.basis.device for c in ok if not c.basis.clock_solved}),
            "flagged": sum(c.status == "flagged" for c in checks),
            "unexplained": sum(c.status == "unexplained" for c in checks),
            "devices": len({c.basis.device for c in checks}),
            "max_dev_pct": 100 * max(abs(c.ratio - 1) for c in ok),
            "max_dev_independent_pct": 100 * max(abs(c.ratio - 1) for c in ok if not c.basis.clock_solved),
            "tolerance_pct": 100 * peaks.tolerance()}


def flagged_rows(checks=None) -> list[dict]:
    """The peaks of ``checks`` (default: every one the catalog rebuilds) that do not reproduce, with the recorded
    reason."""
    out = []
    for c in peaks.check_catalog() if checks is None else checks:
        if c.status != "reproduces":
            out.append({"device": c.basis.device, "dtype": c.basis.dtype, "ratio": c.ratio, "reason": c.reason})
    return out


def flagged_table(checks=None):
    """The flagged peaks of ``checks`` (default: the whole catalog), one row per device: computed / catalog for each
    dtype, and the recorded reason."""
    from x4lib.book.tables import fmt_mapping
    by_dev: dict = {}
    for r in flagged_rows(checks):
        d = by_dev.setdefault(r["device"], {"device": r["device"], "ratios": {}, "reason": r["reason"]})
        d["ratios"][r["dtype"]] = r["ratio"]
    rows = [{**d, "ratios": fmt_mapping(d["ratios"], fmt="{:.3f}")} for d in by_dev.values()]
    return table(rows, {"device": "device", "ratios": Col("computed / catalog, by dtype", wrap=True),
                        "reason": Col("why", wrap=True)})


def local_cpu() -> peaks.LocalCpu:
    return peaks.local_cpu()


def local_cpu_table(cpu: peaks.LocalCpu | None = None):
    """The factors of a CPU's peak as detected (default: this CPU), and each assumption behind them."""
    cpu = local_cpu() if cpu is None else cpu
    rows = [{"quantity": "CPU (as /proc/cpuinfo names it)", "value": cpu.name},
            {"quantity": "family / model reported", "value": f"{cpu.family} / {cpu.model}"},
            {"quantity": "microarchitecture by model number", "value": cpu.by_model or "none in the table"},
            {"quantity": "microarchitecture by flags", "value": cpu.by_flags or "no signature flags"},
            {"quantity": "microarchitecture used", "value": cpu.uarch_id or "none (generic assumption)"},
            {"quantity": "cores counted", "value": str(cpu.cores)},
            {"quantity": "vector FMA units × width", "value": f"{cpu.fma_units} × {cpu.vector_bits}-bit"},
            {"quantity": "matrix unit", "value": cpu.matrix_unit or "none"},
            {"quantity": "FLOP per cycle per core (dense)",
             "value": ", ".join(f"{k.upper()} {v:,.0f}" for k, v in cpu.flop_per_cycle_per_core.items())},
            {"quantity": "clock reported (MHz)", "value": f"{cpu.clock_hz / 1e6:,.0f}" if cpu.clock_hz else "—"}]
    rows += [{"quantity": f"assumption {i + 1}", "value": a} for i, a in enumerate(cpu.assumptions)]
    return table(rows, {"quantity": "quantity", "value": Col("value", wrap=True)})


def local_peak_flop_per_s(dtype: str) -> float | None:
    """This CPU's peak for ``dtype`` at the clock it reports, or None when no rate is recorded."""
    try:
        return peaks.check(peaks.LOCAL, dtype).computed_flop_per_s
    except (specs.UnsupportedDtypeError, ValueError):
        return None


def local_peak_sentence() -> str:
    """This CPU's computed peaks against one H100, as a computed sentence (handles a CPU without a known clock)."""
    cpu = local_cpu()
    fp32, bf16 = local_peak_flop_per_s("fp32"), local_peak_flop_per_s("bf16")
    h100 = specs.get("h100-sxm").peak_flop_per_s("bf16")
    if fp32 is None:
        return (f"No peak can be computed for {md_text(cpu.name)}: it reports no clock, or no FP32 rate is recorded for it; "
                f"run `python -m x4lib peak --device local --dtype fp32 --clock-mhz F` with a clock you know.")
    text = (f"So {md_text(cpu.name)} (as detected) peaks at {fp32 / 1e9:,.0f} GFLOP/s dense FP32 on its vector units at the "
            f"clock it reports; one H100's dense BF16 peak is {h100 / fp32:,.0f} times that")
    if bf16 is not None:
        unit = (f"{md_text(cpu.matrix_unit)} units" if "bf16" in cpu.matrix_dtypes
                else "vector units (AVX-512 BF16)")
        text += (f", and {h100 / bf16:,.0f} times the {bf16 / 1e12:,.2f} TFLOP/s dense BF16 of this CPU's {unit}")
    return text + "."


def xeon_8480_peak_flop_per_s(dtype: str) -> float:
    """One Xeon Platinum 8480C of a DGX H100 at its base clock: 56 cores × FLOP per cycle (Sapphire Rapids:
    AVX-512 for FP32/FP64, AMX for BF16/INT8) × 2.0 GHz."""
    arch = next(a for a in peaks.dev_detect._load("cpu_uarch.json")["microarchitectures"]
                if a["id"] == "sapphire-rapids")
    per = {**arch["flop_per_cycle_per_core"], **arch.get("matrix_flop_per_cycle_per_core", {})}[dtype]
    return facts.get("host", "dgx_h100_cores_per_socket").value * per * facts.get("host", "dgx_h100_cpu_base_clock").si


# ------------------------------------------------------------------------------------- the host's job

def givens(group: str = "host_pipeline_givens") -> dict:
    return {k: f.value for k, f in facts.group(group).facts.items()}


def givens_table(group: str = "host_pipeline_givens"):
    rows = [{"given": k, "value": fmt_value(f.value), "unit": f.unit, "meaning": f.note}
            for k, f in facts.group(group).facts.items()]
    return table(rows, {"given": "given", "value": "value", "unit": "unit", "meaning": Col("meaning", wrap=True)})


def dgx_cores_per_gpu() -> float:
    h = "host"
    return (facts.get(h, "dgx_h100_sockets").value * facts.get(h, "dgx_h100_cores_per_socket").value
            / facts.get(h, "dgx_h100_gpus").value)


def pcie_gen5_x16_Bps() -> float:
    return host.pcie_Bps_per_direction(facts.get("host", "pcie_gen5_rate").value, 16,
                                       facts.get("host", "pcie_128b130b").value)


def pcie_gen4_x16_Bps() -> float:
    return host.pcie_Bps_per_direction(facts.get("host", "pcie_gen4_rate").value, 16,
                                       facts.get("host", "pcie_128b130b").value)


def pipelines(device: str = "h100-sxm", dtype: str = "bf16",
              group: str = "host_pipeline_givens") -> dict[str, host.InputPipeline]:
    """The two workloads of the example on one GPU of a DGX H100's host (default the H100 SXM5 at its dense BF16
    peak), at the MFU and per-sample host costs of the givens ``group``."""
    g = givens(group)
    peak = specs.get(device).peak_flop_per_s(dtype)
    cores = dgx_cores_per_gpu()
    link = pcie_gen5_x16_Bps()
    return {"images": host.input_pipeline(g["image_flop_per_sample"], peak, g["mfu"], g["image_cpu_s_per_sample"],
                                          cores, g["image_side"] ** 2 * 3, link),
            "LLM tokens": host.input_pipeline(6 * g["llm_params"], peak, g["mfu"], g["llm_cpu_s_per_token"], cores,
                                              g["token_bytes"], link)}


def pipeline_table(device: str = "h100-sxm", dtype: str = "bf16", group: str = "host_pipeline_givens"):
    rows = []
    for name, p in pipelines(device, dtype, group).items():
        rows.append({"workload": name, "gpu": p.gpu_samples_per_s, "host": p.host_samples_per_s,
                     "need": p.cores_needed_per_gpu, "have": p.cores_per_gpu, "bound": p.bound,
                     "kept": p.achieved_mfu_fraction, "pcie": p.link_utilisation})
    return table(rows, {"workload": "samples are", "gpu": Col("GPU could train on", "samples/s", "{:,.0f}"),
                        "host": Col("host cores prepare", "samples/s", "{:,.0f}"),
                        "need": Col("cores needed per GPU", fmt="{:,.2f}"),
                        "have": Col("cores per GPU", fmt="{:,.0f}"), "bound": "bound",
                        "kept": Col("share of GPU rate kept", fmt="{:.0%}"),
                        "pcie": Col("PCIe Gen5 x16 used, per direction", fmt="{:.2%}")})


# -------------------------------------------------------------------------------------------------- SIMT

#: launch configurations of the occupancy example: (label, threads per block, registers per thread, smem B)
OCCUPANCY_CASES = (("elementwise kernel", 256, 32, 0), ("register-heavy kernel", 256, 128, 0),
                   ("tiled matmul, 64 KiB tiles", 256, 64, 64 * 2**10),
                   ("attention kernel, 100 KiB tiles", 128, 168, 100 * 2**10))


def occupancy_rows(cases=OCCUPANCY_CASES) -> list[dict]:
    out = []
    for label, t, r, s in cases:
        o = simt.occupancy(t, r, s)
        out.append({"kernel": label, "threads": t, "regs": r, "smem": s / 2**10,
                    **{f"by_{k}": v for k, v in o.blocks_by_limit.items()},
                    "blocks": o.blocks_per_sm, "warps": o.active_warps, "occ": o.occupancy, "limiter": o.limiter})
    return out


def occupancy_table(cases=OCCUPANCY_CASES):
    return table(occupancy_rows(cases), {
        "kernel": Col("kernel (given)", wrap=True), "threads": "threads per block", "regs": "registers per thread",
        "smem": Col("shared memory per block", "KiB", "{:,.0f}"), "by_warps": "blocks by warps",
        "by_registers": "blocks by registers", "by_shared memory": "blocks by shared memory",
        "by_blocks": "blocks by the block limit", "blocks": "blocks per SM", "warps": "resident warps",
        "occ": Col("occupancy", fmt="{:.0%}"), "limiter": "limited by"})


def branch_cases(threads: int = 256, then_instr: int = 20, else_instr: int = 20) -> dict:
    """SIMT efficiency of one if/else over a block for three conditions on the thread index."""
    tid = range(threads)
    return {"tid % 2 == 0 (every warp splits)": simt.block_branch_efficiency([t % 2 == 0 for t in tid],
                                                                              then_instr, else_instr),
            "(tid / 32) % 2 == 0 (whole warps agree)": simt.block_branch_efficiency([(t // 32) % 2 == 0 for t in tid],
                                                                                     then_instr, else_instr),
            "tid == 0 (one lane of one warp)": simt.block_branch_efficiency([t == 0 for t in tid],
                                                                            then_instr, else_instr)}


def branch_table(**kw):
    return table([{"condition": k, "eff": v} for k, v in branch_cases(**kw).items()],
                 {"condition": "branch condition", "eff": Col("SIMT efficiency", fmt="{:.1%}")})


# ------------------------------------------------------------------------------------------ systolic

def dataflow_frames(m: int = 3, size: int = 4, cycles=None):
    """The 4 × 4 example: A (m × 4) times B (4 × 4) on a 4 × 4 array, one weight tile; the frames of the cycles
    asked for (default: every cycle of streaming, fill and drain)."""
    import numpy as np
    a = np.arange(1, m * size + 1, dtype=float).reshape(m, size)
    b = np.eye(size) + 1
    run = systolic.simulate(a, b, size, trace=True)
    frames = [f for f in run.trace if f["cycle"] >= size]     # from the end of the weight load
    if cycles is not None:
        frames = [f for f in frames if f["cycle"] in cycles]
    return run, frames, bool(np.array_equal(run.product, a @ b))


def utilisation_curves(array: int = 128, n: int = 1024, k: int = 1024, ms=None, sim_array: int = 8):
    """Formula curves (R × R array, weight tiles double-buffered or not) against m, and simulator points on a
    small array with the same shape ratios (checks the formula, cheaply)."""
    ms = ms or [2 ** e for e in range(0, 14)]
    curves = [(f"{array}×{array}, weights double-buffered (formula)", ms,
               [systolic.formula(m, n, k, array).utilisation for m in ms]),
              (f"{array}×{array}, one tile at a time (formula)", ms,
               [systolic.formula(m, n, k, array, overlap=False).utilisation for m in ms])]
    f = array // sim_array
    sim_ms = [m for m in ms if 1 <= m // f <= 256]
    pts = [(f"{sim_array}×{sim_array} simulator, shape scaled by 1/{f}", [m for m in sim_ms],
            [systolic.random_check(sim_array, max(1, m // f), n // f, k // f)[0].utilisation for m in sim_ms])]
    return curves, pts


#: transformer matmuls on a 128 × 128 MXU: (label, m, n, k) — givens (a 7B-class decoder, d_model 4096)
TRANSFORMER_SHAPES = (("QKV projection, 4096 tokens", 4096, 3 * 4096, 4096),
                      ("MLP up, 4096 tokens", 4096, 11008, 4096),
                      ("MLP down, 4096 tokens", 4096, 4096, 11008),
                      ("QKᵀ per head, 4096 tokens, head dim 128", 4096, 4096, 128),
                      ("QKᵀ per head, 4096 tokens, head dim 80", 4096, 4096, 80),
                      ("vocabulary projection, 50257 words", 4096, 50257, 4096),
                      ("QKV projection, decode batch 8", 8, 3 * 4096, 4096),
                      ("QKV projection, decode batch 128", 128, 3 * 4096, 4096))


def transformer_rows(array: int = 128, shapes=TRANSFORMER_SHAPES) -> list[dict]:
    out = []
    for label, m, n, k in shapes:
        r = systolic.formula(m, n, k, array)
        out.append({"matmul": label, "m": m, "n": n, "k": k, "tiles": r.tiles, "pad": r.padding_efficiency,
                    "util": r.utilisation})
    return out


def transformer_table(array: int = 128):
    return table(transformer_rows(array), {
        "matmul": Col("matmul (given shape)", wrap=True), "m": "m", "n": "n", "k": "k",
        "tiles": Col("weight tiles", fmt="{:,.0f}"), "pad": Col("weights not padding", fmt="{:.1%}"),
        "util": Col(f"utilisation of a {array}×{array} array", fmt="{:.1%}")})


def trainium_tile_utilisation(n_free: int) -> float:
    """Trainium's Tensor Engine with back-to-back MultiplyMoving instructions: a new instruction every
    max(N, 64) cycles, doing useful work for N of them (NKI guide), i.e. N / max(N, 64)."""
    init = facts.get("trainium_core", "mm_init_latency").value
    return n_free / max(n_free, init)


# --------------------------------------------------------------------------- Trainium, Gaudi, edge NPUs

def accelerator_rows(trainium: str = "trainium_core", gaudi: str = "gaudi3_chip", tpu: str = "tpu_v1") -> list[dict]:
    """The numbers that change a design decision on Trainium, Gaudi 3 and TPU v1 (the facts groups named), each
    with its source."""
    t, g, v = trainium, gaudi, tpu
    f = facts.get
    gaudi_scaleout = f(g, "roce_ports").value * f(g, "roce_port_rate").si
    rows = [
        {"part": "Trainium (NeuronCore-v2)", "what": "engines per core",
         "value": f"Tensor {f(t, 'tensor_rows').value:.0f}×{f(t, 'tensor_cols').value:.0f} PEs at "
                  f"{f(t, 'tensor_clock').value:g} GHz; Vector {f(t, 'vector_clock').value:g} GHz; "
                  f"Scalar {f(t, 'scalar_clock').value:g} GHz; GpSimd {f(t, 'gpsimd_clock').value:g} GHz",
         "source": f(t, "tensor_clock").source},
        {"part": "Trainium (NeuronCore-v2)", "what": "on-chip SRAM per core",
         "value": f"SBUF {f(t, 'sbuf').value:g} MiB, PSUM {f(t, 'psum').value:g} MiB (software-managed)",
         "source": f(t, "sbuf").source},
        {"part": "Gaudi 3", "what": "matrix engines",
         "value": f"{f(g, 'mme_count').value:.0f} MMEs of {f(g, 'mme_macs_per_clock').value:,.0f} MACs "
                  f"(256×256, secondary), {f(g, 'tpc_count').value:.0f} TPCs",
         "source": f"{f(g, 'mme_count').source}; {f(g, 'mme_macs_per_clock').source}"},
        {"part": "Gaudi 3", "what": "on-chip SRAM", "value": f"{f(g, 'sram').value:g} MB",
         "source": f(g, "sram").source},
        {"part": "Gaudi 3", "what": "on-die Ethernet",
         "value": f"{f(g, 'roce_ports').value:.0f} × {f(g, 'roce_port_rate').value:g} Gb/s RoCE = "
                  f"{gaudi_scaleout / 1e9:,.0f} GB/s per direction; {f(g, 'hls3_scaleup_ports').value:.0f} ports "
                  f"= {f(g, 'hls3_scaleup_ports').value * f(g, 'roce_port_rate').si / 1e9:,.0f} GB/s per direction "
                  f"to the other 7 cards of an HLS-3 box",
         "source": f"{f(g, 'roce_ports').source}; {f(g, 'hls3_scaleup_ports').source}"},
        {"part": "TPU v1", "what": "systolic array and memory",
         "value": f"{f(v, 'macs').value:,.0f} INT8 MACs (256×256), {f(v, 'peak').value:g} TOP/s, "
                  f"{f(v, 'on_chip_memory').value:g} MiB on chip", "source": f(v, "macs").source},
    ]
    return rows


def accelerator_table(trainium: str = "trainium_core", gaudi: str = "gaudi3_chip", tpu: str = "tpu_v1"):
    return table(accelerator_rows(trainium, gaudi, tpu), {"part": "part", "what": "what",
                                                          "value": Col("value", wrap=True), "source": "source"})


def edge_rows(group: str = "edge_npus") -> list[dict]:
    """Edge NPUs as printed and on one basis: dense (a 2:4 sparse figure halved, as the facts file records it),
    per watt at the highest power quoted; a figure whose sparsity the vendor does not state gets no dense value."""
    e = group
    f = facts.get

    def row(npu, peak, precision, power_text, power_w, sparsity_source=None):
        p = f(e, peak)
        dense = p.dense_si
        return {"npu": npu, "peak": p.si / 1e12, "precision": precision,
                "basis": p.sparsity or "not stated", "dense": None if dense is None else dense / 1e12,
                "power": power_text,
                "printed_tops_w": None if power_w is None else p.si / power_w / 1e12,
                "tops_w": None if (dense is None or power_w is None) else dense / power_w / 1e12,
                "source": p.source + (f"; sparsity: {sparsity_source}" if sparsity_source else "")}

    return [row("Google Edge TPU (Coral)", "edge_tpu_peak", "INT8", f"{f(e, 'edge_tpu_power').value:g} W",
                f(e, "edge_tpu_power").si),
            row("Google Coral NPU (IP, design target)", "coral_npu_peak", "not stated",
                f"{f(e, 'coral_npu_power').value:g} mW", f(e, "coral_npu_power").si),
            row("Apple M4 Neural Engine", "apple_m4_ane_peak", "not stated", "not published", None),
            row("NVIDIA Jetson Orin NX 16GB (module)", "jetson_orin_nx_peak", "INT8",
                f"{f(e, 'jetson_orin_nx_power_min').value:g}–{f(e, 'jetson_orin_nx_power_max').value:g} W",
                f(e, "jetson_orin_nx_power_max").si, sparsity_source="nvidia-dla-sw")]


def edge_table(group: str = "edge_npus"):
    return table(edge_rows(group), {"npu": Col("NPU", wrap=True), "peak": Col("peak as printed", "TOP/s", "{:,.1f}"),
                               "precision": "precision", "basis": "printed as",
                               "dense": Col("dense peak", "TOP/s", "{:,.1f}"), "power": "power quoted",
                               "printed_tops_w": Col("as printed, at the highest power quoted", "TOP/s per W",
                                                     "{:,.1f}"),
                               "tops_w": Col("dense, at the highest power quoted", "TOP/s per W", "{:,.1f}"),
                               "source": "source"})


# ------------------------------------------------------------------------------- one roofline for all

ROOFLINE_DEVICES = {"a100-sxm-80gb": "bf16", "h100-sxm": "bf16", "b200": "bf16", "mi300x": "bf16",
                    "tpu-v5p": "bf16", "trn2": "bf16", "gaudi3": "bf16", "groq-lpu": "fp16"}


def catalog_roofs() -> list[rl.Roofline]:
    out = []
    for d, dt in ROOFLINE_DEVICES.items():
        try:
            out.append(rl.for_device(d, dt))
        except (specs.UnsupportedDtypeError, KeyError):
            continue
    return out


@dataclasses.dataclass(frozen=True)
class CpuRun:
    """This CPU measured with Lab 00's harness (bench.matmul_row): rows with raw times, and its roof."""
    label: str
    rows: list
    dtype: str
    memory_bw_Bps: float
    memory_from: str


def measure_cpu_matmuls(sweep: Sweep, sizes=(256, 512, 1024, 2048), dtype: str = "fp32") -> CpuRun:
    """Square matmuls on this CPU with the Lab 00 harness (2 warm-up and 5 timed calls each); the memory roof is
    the sweep's read rate, with the most threads it ran, at its largest working set (a measurement, labelled)."""
    import torch

    from x4lib.harness import bench
    rows = [bench.matmul_row(torch, dtype, n, n, n, "cpu", warmup=2, repeats=5) for n in sizes]
    threads = max(sweep.rows)
    pts = sorted(sweep_points(sweep, threads), key=lambda p: p["x"])
    return CpuRun(sweep.label, rows, dtype, pts[-1]["y"] * 1e9,
                  f"read rate at a {fmt_size(pts[-1]['x'])} working set, {threads} threads")


def cpu_roof(run: CpuRun) -> rl.Roofline | None:
    peak = local_peak_flop_per_s(run.dtype)
    if peak is None:
        return None
    return rl.Roofline("this CPU", run.dtype, "computed from detected factors", peak, run.memory_bw_Bps)


def cpu_points(run: CpuRun) -> list[dict]:
    b = kernels.DTYPE_BYTES[run.dtype]
    return [{"x": kernels.matmul_intensity(r["m"], r["n"], r["k"], b),
             "y": kernels.matmul_flop(r["m"], r["n"], r["k"]) / r["best_s"] / 1e12}
            for r in run.rows if r["status"] == "ok"]


def accelerator_ridges() -> tuple[float, float]:
    """The smallest and largest ridge point (FLOP/B) of the catalog roofs drawn, HBM devices only (the Groq LPU's
    memory is on-chip SRAM)."""
    r = [roof.ridge_flop_per_B for roof in catalog_roofs() if roof.device_id != "groq-lpu"]
    return min(r), max(r)


def cpu_best(run: CpuRun) -> dict:
    pts = cpu_points(run)
    best = max(pts, key=lambda p: p["y"])
    peak = local_peak_flop_per_s(run.dtype)
    cpu = local_cpu()
    per_cycle = cpu.cores * cpu.flop_per_cycle_per_core.get(run.dtype, float("nan"))
    return {"tflops": best["y"], "peak_tflops": peak / 1e12 if peak else None,
            "efficiency": best["y"] * 1e12 / peak if peak else None,
            "implied_ghz": best["y"] * 1e12 / per_cycle / 1e9}


# --------------------------------------------------------------------------------------------- explorer

SYSTOLIC_DEVICES = {"tpu-v4": 128, "tpu-v5e": 128, "tpu-v5p": 128, "trn1": 128, "trn2": 128, "gaudi3": 256}


@dataclasses.dataclass(frozen=True)
class MatmulPrediction:
    device: str
    dtype: str
    m: int
    n: int
    k: int
    point: rl.RooflinePoint
    array: int | None
    utilisation: float | None
    clock: str = "vendor's clock"

    @property
    def time_s(self) -> float:
        """Roofline lower bound, stretched by the systolic utilisation where the device has an array."""
        return self.point.t_math_s / (self.utilisation or 1.0) if self.point.bound == "compute" and \
            self.utilisation else self.point.time_s


def shipping_roof(device: str, dtype: str) -> tuple[rl.Roofline, str]:
    """The device's roofline at the clock its parts ship at: where the catalog's peak assumes a *planned* clock
    (peak_basis clock_kind "planned") and x4lib/data/matmul.yaml sources the clock shipping parts report, the peak
    is scaled by shipping / planned (Gaudi 3: 1600 of 1750 MHz); otherwise the vendor's peak. Returns the roofline
    and what its clock is."""
    from x4lib.compute import matmul
    roof = rl.for_device(device, dtype)
    dev = specs.get(device)
    basis = dev.peak_basis
    if not basis or basis.get("clock_kind") != "planned":
        return roof, "vendor's clock"
    try:
        clk = matmul.clock_for(dev.id, roof.dtype)
    except matmul.NoModelError:
        clk = None
    if clk is None or clk.kind != "shipping":
        return roof, f"planned {basis['clock_mhz']:,.0f} MHz (no shipping clock sourced)"
    r = clk.sustained_hz / (basis["clock_mhz"] * 1e6)
    return (dataclasses.replace(roof, peak_flop_per_s=roof.peak_flop_per_s * r),
            f"shipping {clk.sustained_hz / 1e6:,.0f} MHz, not the planned {basis['clock_mhz']:,.0f}")


def predict(device: str, dtype: str, m: int, n: int, k: int) -> MatmulPrediction:
    """A matmul on a catalog device: roofline time (peak at the shipping clock, memory) and, for a systolic device,
    the utilisation of one of its arrays on this shape (the chip's arrays share the work; fill, drain and padding
    remain)."""
    roof, clock = shipping_roof(device, dtype)
    b = kernels.DTYPE_BYTES[roof.dtype]
    pt = rl.point(kernels.matmul_flop(m, n, k), kernels.matmul_bytes(m, n, k, b), roof)
    arr = SYSTOLIC_DEVICES.get(device)
    util = systolic.formula(m, n, k, arr).utilisation if arr else None
    return MatmulPrediction(device, roof.dtype, m, n, k, pt, arr, util, clock)


def prediction_row(p: MatmulPrediction) -> dict:
    return {"device": p.device, "dtype": p.dtype, "shape": f"{p.m}×{p.n}×{p.k}",
            "intensity": p.point.intensity_flop_per_B, "bound": p.point.bound,
            "roofline_us": p.point.time_s * 1e6, "util": p.utilisation, "time_us": p.time_s * 1e6, "clock": p.clock}


_PRED_COLS = {"device": "device", "dtype": "dtype", "shape": "m×n×k", "intensity": Col("intensity", "FLOP/B", "{:,.0f}"),
              "bound": "roofline bound", "roofline_us": Col("roofline time", "µs", "{:,.1f}"),
              "util": Col("array utilisation", fmt="{:.0%}"), "time_us": Col("with utilisation", "µs", "{:,.1f}"),
              "clock": Col("peak at", wrap=True)}


def matmul_explorer(device: str = "tpu-v5p", dtype: str = "bf16", m: int = 4096, n: int = 4096, k: int = 4096):
    """Device, precision and shape (the widgets' starting values) → roofline time and position, and the
    utilisation of a systolic array."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from x4lib.book import plots
    ids = [d.id for d in specs.load_catalog().values() if "memory_bw_gb_s" in d.values and d.dtypes()]

    def show(device, dtype, m, n, k):
        try:
            p = predict(device, dtype, int(m), int(n), int(k))
        except (ValueError, specs.UnsupportedDtypeError) as exc:
            print(f"cannot predict: {exc}")
            return
        display(table([prediction_row(p)], _PRED_COLS))
        fig, ax = plots.new_axes()
        plots.roofline(ax, [shipping_roof(device, dtype)[0]], intensity_range=(0.1, 1e5),
                       marks={f"{m}×{n}×{k}": p.point.intensity_flop_per_B})
        plt.show()

    return w.interactive(show, device=w.Dropdown(options=ids, value=device, description="device"),
                         dtype=w.Dropdown(options=list(kernels.DTYPE_BYTES), value=dtype, description="dtype"),
                         m=w.IntText(value=m, description="m"), n=w.IntText(value=n, description="n"),
                         k=w.IntText(value=k, description="k"))


#: the static fallback's shapes: (label, m, n, k)
FALLBACK_SHAPES = (("training matmul", 4096, 4096, 4096), ("decode, batch 8", 8, 4096, 4096),
                   ("head dim 80", 4096, 4096, 80))


def fallback_rows(devices=("h100-sxm", "tpu-v5p", "trn2", "gaudi3"), shapes=FALLBACK_SHAPES,
                  dtype: str = "bf16") -> list[dict]:
    out = []
    for d in devices:
        for label, m, n, k in shapes:
            p = predict(d, dtype, m, n, k)
            out.append({**prediction_row(p), "case": label})
    return out


def fallback_table(**kw):
    rows = fallback_rows(**kw)
    return table(rows, {"case": "case (given)", **_PRED_COLS})


def exercise_decode_utilisation(batch: int, array: int = 128, d_model: int = 4096) -> float:
    return systolic.formula(batch, d_model, d_model, array).utilisation



def cpu_matmul_sentence(run: CpuRun) -> str:
    """The measured matmuls of this CPU against its computed peak, as one computed sentence. An efficiency above
    1 is not printed: the clock (or another factor) of the peak is then wrong, and the sentence says which clock
    the measurement implies."""
    b = cpu_best(run)
    if b["peak_tflops"] is None:
        return f"On {md_text(run.label)} the best {run.dtype.upper()} matmul ran at {b['tflops'] * 1e3:,.0f} GFLOP/s; no peak is recorded for it."
    roof = cpu_roof(run)
    head = (f"On {md_text(run.label)} the best {run.dtype.upper()} matmul ran at {b['tflops'] * 1e3:,.0f} GFLOP/s against a "
            f"computed peak of {b['peak_tflops'] * 1e3:,.0f} GFLOP/s at the clock the system reports (its roofline turns "
            f"at {roof.ridge_flop_per_B:,.0f} FLOP/B with the measured memory roof)")
    if b["efficiency"] <= 1:
        return head + f": {100 * b['efficiency']:.0f} % of it."
    return (head + f". That is above the peak, so an assumption behind the peak is wrong, not the measurement: with "
            f"the FLOP per cycle assumed, the cores must have sustained at least {b['implied_ghz']:.2f} GHz, more "
            f"than the reported clock (a virtual machine reports its host's nominal clock; turbo runs above it).")
