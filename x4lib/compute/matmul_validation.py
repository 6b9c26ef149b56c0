"""The matmul model (x4lib.compute.matmul) scored on shapes it was not fitted to: published shape sweeps
(``x4lib/data/matmul_sweeps.yaml``), our committed Lab 00 GPU runs (``book/runs/lab00/``) and our GEMM calibration
sweeps (``book/runs/gemms/``, the GEMMs of real models at decode and training token counts), per shape class and per
precision.

η is calibrated only on the published best-shape rates of ``x4lib/data/published.yaml``; none of the rows scored
here is among them. Two hold-outs, both reported:

- **leave one device out**: η calibrated without any best-shape rate of the row's device;
- **leave one source out**: η calibrated without any best-shape rate from the row's source (our runs are no
  calibration source, so for them this is the model as shipped).

Our runs' rows are predicted as their harness timed them (method 2 and earlier: one call per synchronisation,
``timing="synced"``; method 3: back to back; method 4 adds, for calls under 100 µs, the same shape timed as a
CUDA graph, scored as a row of its own, ``timing="graph"``), with the run's own best copy/triad bandwidth as the achievable
bandwidth (a different kernel measured on the same machine, not a matmul row) and, for Lab 00's rows timed from the
host, the run's own floor per call of each timing API, read from its smallest shape's calls, which are then not
scored (:func:`host_probe_floors`: the host's launch rate differs between machines with the same GPU).
Used in: book/lab-00-roofline.md.
"""
from __future__ import annotations

import dataclasses
import functools
import statistics
from types import MappingProxyType
from typing import Iterable, Mapping

from x4lib import paths
from x4lib.compute import kernels, matmul

SWEEPS_PATH = paths.DATA_DIR / "matmul_sweeps.yaml"
#: shape classes, in the order a shape is tested against them (the first that fits names it)
CLASSES = ("small", "decode/skinny", "short K", "non-aligned", "squares", "training GEMMs")
#: the issue's targets: median |error| overall, the worst class's median |error|, the best-shape check's median
TARGETS = {"overall": 0.10, "class": 0.20, "best_shape": 0.05}


def shape_class(m: int, n: int, k: int) -> str:
    """small: every dimension ≤ 1024; decode/skinny: min(m, n) ≤ 128; short K: k ≤ 256; non-aligned: a dimension
    that is not a multiple of 64; squares: m = n = k; training GEMMs: the rest (large rectangular)."""
    if max(m, n, k) <= 1024:
        return "small"
    if min(m, n) <= 128:
        return "decode/skinny"
    if k <= 256:
        return "short K"
    if any(d % 64 for d in (m, n, k)):
        return "non-aligned"
    if m == n == k:
        return "squares"
    return "training GEMMs"


@dataclasses.dataclass(frozen=True)
class Row:
    """One measured rate the model did not see: who measured it, where, the shape and how the calls were timed."""
    source: str
    device: str
    dtype: str
    m: int
    n: int
    k: int
    measured_flop_per_s: float
    timing: str
    ours: bool
    memory_bw_Bps: float | None = None
    note: str = ""
    #: (the host's floor per call [s], its basis) as the same run measured it on its probe calls (host_probe_floors)
    host_floor: tuple[float, str] | None = None

    @property
    def shape_class(self) -> str:
        return shape_class(self.m, self.n, self.k)

    @property
    def shape(self) -> str:
        return f"{self.m}×{self.n}×{self.k}"


@functools.lru_cache(maxsize=1)
def published_rows() -> tuple[Row, ...]:
    """The published sweeps (x4lib/data/matmul_sweeps.yaml), checked: catalog device, known dtype, positive rate."""
    from x4lib.catalog import specs
    doc = specs.read_yaml(SWEEPS_PATH)
    out = []
    for i, r in enumerate(doc["rows"]):
        where = f"{SWEEPS_PATH.name}: rows/{i}"
        specs.get(r["device"])
        if r["dtype"] not in kernels.DTYPE_BYTES or not r["tflops"] > 0 or r["method"] not in matmul.TIMINGS:
            raise matmul.MatmulDataError(f"{where}: needs a known dtype, a rate > 0 and method queued or synced")
        out.append(Row(r["source"], r["device"], r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]),
                       float(r["tflops"]) * 1e12, r["method"], False, None, r.get("note", "")))
    return tuple(out)


def _modelled_gpu_runs(runs):
    """(run, catalog id) for each full (not quick) GPU run on a device the matmul model covers."""
    for run in runs:
        d = run.device
        cat = d.get("catalog_id")
        if d["kind"] != "gpu" or not cat or run.quick:
            continue
        try:
            matmul.constants().family_of(cat)
        except matmul.NoModelError:
            continue
        yield run, cat


def probe_shape(rows) -> tuple[int, int, int] | None:
    """The smallest shape (least m·n·k) of a run's successful matmul rows: its host probe."""
    ok = [(r["m"], r["n"], r["k"]) for r in rows if r["status"] == "ok"]
    return min(ok, key=lambda s: s[0] * s[1] * s[2]) if ok else None


def host_probe_floors(run, cat: str, timing: str, whose: str = "this run's") -> dict[str, tuple[float, str]]:
    """The host's floor per call of each timing API as the run itself measured it: its least time per call at its
    smallest shape (:func:`probe_shape`, 64³ in Lab 00) over the API's dtypes, less the model's own device time for
    that shape where each call waits for a synchronisation (``synced``: the floor adds to the work). Those probe rows
    are never scored (:func:`run_rows`); the host, not the GPU, sets the time of every call too small to outlast
    its launch, and hosts differ between machines (Lab 00 shows the committed runs' floors side by side).
    ``whose`` names the run in each floor's basis."""
    shape = probe_shape(run.results["matmul"])
    if shape is None:
        return {}
    out: dict[str, tuple[float, str]] = {}
    c = matmul.constants()
    for r in run.results["matmul"]:
        a = c.api_for(r["dtype"])
        if r["status"] != "ok" or (r["m"], r["n"], r["k"]) != shape or a is None:
            continue
        t = r["best_s"]
        if timing == "synced":
            p = matmul.predict(cat, r["dtype"], *shape, timing="synced", host_floor=(0.0, ""))
            t = max(0.0, t - kernels.matmul_flop(*shape) / p.rate_flop_per_s)
        if a.name not in out or t < out[a.name][0]:
            out[a.name] = (t, f"{a.name}: {t * 1e6:.1f} µs, {whose} least time per call at "
                              f"{shape[0]}×{shape[1]}×{shape[2]} ({r['dtype']}; its probe, never scored)")
    return out


def run_rows(runs=None) -> tuple[Row, ...]:
    """Every successful matmul row of our committed Lab 00 GPU runs on a modelled catalog device (best of the
    repeats), with the run's best copy/triad bandwidth and its host's floor per call (:func:`host_probe_floors`);
    the probe shape's rows timed from the host are not rows (they set the floor), its CUDA-graph rows are."""
    from x4lib.harness import runs as hruns
    runs = hruns.load_runs("lab00") if runs is None else runs
    out = []
    c = matmul.constants()
    for run, cat in _modelled_gpu_runs(runs):
        bw = max((kernels.vector_bytes(x["kernel"], x["elements"], x.get("element_bytes", 4)) / x["best_s"]
                  for x in run.results["memory_bw"] if x["status"] == "ok"), default=None)
        timing = "synced" if run.results.get("method_version", 1) <= 2 else "queued"
        floors = host_probe_floors(run, cat, timing)
        probe = probe_shape(run.results["matmul"])
        for r in run.results["matmul"]:
            if r["status"] != "ok":
                continue
            note = f"harness method {run.results.get('method_version')}"
            if (r["m"], r["n"], r["k"]) != probe:
                a = c.api_for(r["dtype"])
                out.append(Row(f"ours: {run.run_id}", cat, r["dtype"], r["m"], r["n"], r["k"],
                               kernels.matmul_flop(r["m"], r["n"], r["k"]) / r["best_s"], timing, True, bw, note,
                               floors.get(a.name) if a else None))
            out += _graph_row(run, cat, r, bw, note)
    return tuple(out)


def _graph_row(run, cat: str, r: dict, bw: float | None, note: str) -> list[Row]:
    """The same shape timed as a CUDA graph (harness 4, calls shorter than 100 µs back to back): a row of its own,
    timing ``graph`` (the GPU's time per call, no host launch)."""
    if not r.get("graph_best_s"):
        return []
    return [Row(f"ours: {run.run_id}", cat, r["dtype"], r["m"], r["n"], r["k"],
                kernels.matmul_flop(r["m"], r["n"], r["k"]) / r["graph_best_s"], "graph", True, bw,
                f"{note}, timed as a CUDA graph")]


#: a sweep and a Lab 00 run are one machine's when the sweep starts at most this long after the Lab 00 run finished,
#: on the same catalog device, driver and PyTorch (the device script runs Lab 00, then the sweep) [s]
SAME_MACHINE_GAP_S = 600


def _utc(text: str):
    import datetime
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def same_machine_lab00(run, lab00_runs=None):
    """The committed Lab 00 run made on the same machine just before a GEMM sweep (same catalog device, driver and
    PyTorch; the sweep started at most SAME_MACHINE_GAP_S after it finished), or None."""
    from x4lib.harness import runs as hruns
    lab00_runs = hruns.load_runs("lab00") if lab00_runs is None else lab00_runs
    d = run.device

    def key(x):
        return (x.get("catalog_id"), (x.get("nvidia_smi") or {}).get("driver_version"), (x.get("env") or {}).get("torch"))
    out = None
    for lab in lab00_runs:
        if lab.device.get("kind") != "gpu" or key(lab.device) != key(d) or not lab.results.get("finished_utc"):
            continue
        gap = (_utc(run.results["started_utc"]) - _utc(lab.results["finished_utc"])).total_seconds()
        if -5 <= gap <= SAME_MACHINE_GAP_S:  # -5: the two clocks are read a second or so apart
            out = lab
    return out


def sweep_pairs(runs=None) -> list[tuple]:
    """(sweep run, the Lab 00 run of the same machine or None) for each committed GEMM sweep the model scores."""
    from x4lib.harness import runs as hruns
    runs = hruns.load_runs("gemms") if runs is None else runs
    lab00_runs = hruns.load_runs("lab00")
    return [(run, same_machine_lab00(run, lab00_runs)) for run, _ in _modelled_gpu_runs(runs)]


def sweep_rows(runs=None, lab00_runs=None) -> tuple[Row, ...]:
    """Every successful row of our committed GEMM calibration sweeps (``book/runs/gemms/``: the layer GEMMs of
    Llama 3 8B and 70B at 1 to 8192 tokens, off-grid and short-K shapes), best of the repeats, timed back to back
    (harness 3). The sweep is not used to calibrate anything: all of it is held out. The achievable bandwidth is the
    model's own (φ × the datasheet), since the sweep times no copy kernel. Where the same machine ran Lab 00 just
    before (:func:`same_machine_lab00`), the rows timed from the host take that run's probe floor
    (:func:`host_probe_floors`); otherwise each API's floor from other machines' sweeps."""
    from x4lib.harness import runs as hruns
    runs = hruns.load_runs("gemms") if runs is None else runs
    lab00_runs = hruns.load_runs("lab00") if lab00_runs is None else lab00_runs
    out = []
    c = matmul.constants()
    for run, cat in _modelled_gpu_runs(runs):
        lab = same_machine_lab00(run, lab00_runs)
        floors = host_probe_floors(lab, cat, "queued", f"Lab 00 on the same machine ({lab.run_id}):") if lab else {}
        for r in run.results["matmul"]:
            if r["status"] != "ok":
                continue
            what = (f"{r['model']} {r['op']} {r['pass']}, {r['tokens']} tokens" if r["set"] == "model"
                    else "extra shape")
            a = c.api_for(r["dtype"])
            floor = floors.get(a.name) if a else None
            out.append(Row(f"ours: {run.run_id}", cat, r["dtype"], r["m"], r["n"], r["k"],
                           kernels.matmul_flop(r["m"], r["n"], r["k"]) / r["best_s"], "queued", True, None,
                           f"GEMM sweep: {what}", floor))
            out += _graph_row(run, cat, r, None, f"GEMM sweep: {what}")
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Scored:
    """A row against the model with η calibrated without its device (``lodo``) and without its source (``loso``)."""
    row: Row
    lodo: matmul.Prediction
    loso: matmul.Prediction

    def error(self, scheme: str = "device") -> float:
        """predicted / measured − 1 (positive: optimistic) under a hold-out scheme, ``device`` or ``source``."""
        p = self.lodo if scheme == "device" else self.loso
        return p.rate_flop_per_s / self.row.measured_flop_per_s - 1


def score(rows: Iterable[Row]) -> tuple[Scored, ...]:
    out = []
    for r in rows:
        common = dict(timing=r.timing, memory_bw_Bps=r.memory_bw_Bps, host_floor=r.host_floor)
        lodo = matmul.predict(r.device, r.dtype, r.m, r.n, r.k, exclude={r.device}, **common)
        loso = matmul.predict(r.device, r.dtype, r.m, r.n, r.k, exclude_sources={r.source}, **common)
        out.append(Scored(r, lodo, loso))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def scored_all() -> tuple[Scored, ...]:
    """Every published sweep row and every row of our committed runs (Lab 00 and the GEMM sweeps), scored."""
    return score(published_rows() + run_rows() + sweep_rows())


@functools.lru_cache(maxsize=1)
def scored_other_hosts() -> tuple[Scored, ...]:
    """:func:`scored_all` with every row's own host floor dropped: our rows timed from the host then take each
    timing API's floor from other machines' sweeps (:func:`x4lib.compute.matmul_floors.api_floor`), as a prediction
    for a host nobody measured must. What a run's own probe is worth."""
    return score(dataclasses.replace(r, host_floor=None) for r in published_rows() + run_rows() + sweep_rows())


def _median_abs(xs) -> float | None:
    xs = [abs(x) for x in xs]
    return statistics.median(xs) if xs else None


@dataclasses.dataclass(frozen=True)
class Summary:
    """Median |error| overall, per class and per dtype, under one hold-out scheme; the targets and the best-shape
    check (:func:`leave_one_out`)."""
    scheme: str
    n_rows: int
    overall: float
    by_class: Mapping[str, tuple[int, float]]
    by_dtype: Mapping[str, tuple[int, float]]
    best_shape: float

    @property
    def worst_class(self) -> tuple[str, float]:
        c = max(self.by_class, key=lambda k: self.by_class[k][1])
        return c, self.by_class[c][1]

    @property
    def targets_met(self) -> dict:
        return {"overall": self.overall <= TARGETS["overall"], "class": self.worst_class[1] <= TARGETS["class"],
                "best_shape": self.best_shape <= TARGETS["best_shape"]}


def summarise(scored: Iterable[Scored], scheme: str = "device") -> Summary:
    scored = tuple(scored)
    if not scored:
        raise ValueError("nothing to summarise")
    by_c: dict[str, list[float]] = {}
    by_d: dict[str, list[float]] = {}
    for s in scored:
        by_c.setdefault(s.row.shape_class, []).append(s.error(scheme))
        by_d.setdefault(s.row.dtype, []).append(s.error(scheme))
    return Summary(scheme, len(scored), _median_abs(s.error(scheme) for s in scored),
                   {c: (len(by_c[c]), _median_abs(by_c[c])) for c in CLASSES if c in by_c},
                   {d: (len(by_d[d]), _median_abs(by_d[d])) for d in kernels.DTYPE_BYTES if d in by_d},
                   summarise_best_shape(leave_one_out()).median_abs_error)


def class_rows(scored=None) -> list[dict]:
    """Per class: rows (ours, theirs), median |error| under both hold-outs, and the median signed error."""
    scored = scored_all() if scored is None else scored
    out = []
    for c in CLASSES:
        xs = [s for s in scored if s.row.shape_class == c]
        if not xs:
            continue
        out.append({"class": c, "rows": len(xs), "ours": sum(s.row.ours for s in xs),
                    "theirs": sum(not s.row.ours for s in xs),
                    "median |error|, device held out": _median_abs(s.error("device") for s in xs),
                    "median |error|, source held out": _median_abs(s.error("source") for s in xs),
                    "median error (signed)": statistics.median(s.error("device") for s in xs)})
    return out


#: what each timing of our rows measures, for the per-timing table
TIMING_MEANS = {"graph": "the GPU (a CUDA graph replayed: no host launch)",
                "queued": "the GPU, or the host's launch rate where that is slower (calls back to back)",
                "synced": "the GPU plus the host's launch and a synchronisation per call",
                "published": "as its source timed it"}


def timing_rows(shape_class: str | None = None, scored=None) -> list[dict]:
    """Per timing (graph, queued, synced, the published rows' methods), within one class or over all: rows, median
    |error| under both hold-outs, median signed error, and what that timing measures. Small calls timed back to
    back measure the host that issued them; the same calls in a CUDA graph measure the GPU."""
    scored = scored_all() if scored is None else scored
    xs = [s for s in scored if shape_class is None or s.row.shape_class == shape_class]
    out = []
    for t in sorted({s.row.timing if s.row.ours else "published" for s in xs}, key=list(TIMING_MEANS).index):
        g = [s for s in xs if (s.row.timing if s.row.ours else "published") == t]
        out.append({"timing": t, "measures": TIMING_MEANS[t], "rows": len(g),
                    "median |error|, device held out": _median_abs(s.error("device") for s in g),
                    "median |error|, source held out": _median_abs(s.error("source") for s in g),
                    "median error (signed)": statistics.median(s.error("device") for s in g)})
    return out


def dtype_rows(scored=None) -> list[dict]:
    scored = scored_all() if scored is None else scored
    out = []
    for d in kernels.DTYPE_BYTES:
        xs = [s for s in scored if s.row.dtype == d]
        if xs:
            out.append({"dtype": d, "rows": len(xs),
                        "median |error|, device held out": _median_abs(s.error("device") for s in xs),
                        "median |error|, source held out": _median_abs(s.error("source") for s in xs),
                        "median error (signed)": statistics.median(s.error("device") for s in xs)})
    return out


def class_breakdown(shape_class: str, scored=None) -> list[dict]:
    """One class's rows grouped by device, dtype and timing (device held out): rows and median signed error, so a
    class's median can be read back to the machines and precisions that make it."""
    if shape_class not in CLASSES:
        raise ValueError(f"shape class must be one of: {', '.join(CLASSES)}")
    scored = scored_all() if scored is None else scored
    groups: dict[tuple[str, str, str], list[float]] = {}
    for s in scored:
        if s.row.shape_class == shape_class:
            groups.setdefault((s.row.device, s.row.dtype, s.row.timing), []).append(s.error("device"))
    return [{"device": d, "dtype": t, "timing": tm, "rows": len(xs), "median error (signed)": statistics.median(xs)}
            for (d, t, tm), xs in sorted(groups.items())]


def worst_rows(n: int = 12, scored=None) -> list[dict]:
    """The n rows with the largest |error| (device held out), with the bound the model names."""
    scored = scored_all() if scored is None else scored
    top = sorted(scored, key=lambda s: -abs(s.error("device")))[:n]
    return [{"source": s.row.source if not s.row.ours else "ours (" + s.row.source.split("-")[0][6:] + ")",
             "device": s.row.device, "dtype": s.row.dtype, "shape": s.row.shape, "class": s.row.shape_class,
             "measured (TFLOP/s)": s.row.measured_flop_per_s / 1e12,
             "predicted (TFLOP/s)": s.lodo.rate_flop_per_s / 1e12, "error": s.error("device"),
             "model bound": s.lodo.bound} for s in top]


# ------------------------------------------------- the best-shape check: leave one device out

@dataclasses.dataclass(frozen=True)
class BestShapeCheck:
    """One published rate against the model's prediction with η calibrated without that device."""
    measurement: matmul.Measurement
    prediction: matmul.Prediction
    family: str

    @property
    def measured_flop_per_s(self) -> float:
        return self.measurement.rate_flop_per_s

    @property
    def predicted_flop_per_s(self) -> float:
        return self.prediction.rate_flop_per_s

    @property
    def error(self) -> float:
        """predicted / measured − 1 (positive: the model is optimistic)."""
        return self.predicted_flop_per_s / self.measured_flop_per_s - 1


def leave_one_out(use_clock: bool = True) -> tuple[BestShapeCheck, ...]:
    """Every published best-shape rate predicted with η calibrated on the other devices only. ``use_clock=False``
    drops the sourced sustained clocks from calibration and prediction alike (what they are worth)."""
    out = []
    for meas in matmul.measurements():
        tg = matmul.target(meas.device, meas.dtype, use_clock=use_clock)
        eta = matmul.eta_of(tg, {meas.device}, use_clock)
        _, pred = matmul.model_rate(tg, meas, eta)
        out.append(BestShapeCheck(meas, pred, tg.family.id))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class BestShapeSummary:
    """The validation's headline: median |error| over all rows and over devices (each device's median |error|)."""
    n_rows: int
    n_devices: int
    median_abs_error: float
    median_abs_error_by_device: float
    per_device: Mapping[str, float]
    worst: BestShapeCheck


def summarise_best_shape(checks: Iterable[BestShapeCheck]) -> BestShapeSummary:
    checks = tuple(checks)
    if not checks:
        raise ValueError("no checks to summarise")
    per: dict[str, list[float]] = {}
    for c in checks:
        per.setdefault(c.measurement.device, []).append(abs(c.error))
    per_dev = {d: statistics.median(v) for d, v in per.items()}
    return BestShapeSummary(len(checks), len(per_dev), statistics.median(abs(c.error) for c in checks),
                   statistics.median(per_dev.values()), MappingProxyType(per_dev),
                   max(checks, key=lambda c: abs(c.error)))
