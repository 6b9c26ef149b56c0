"""The public ground truth the planner is validated on, read by one loader.

    rows("vtrain-multi" | "vtrain-single" | "korthikanti" | "playbook" | "published" | "single-gpu") -> tuple[Row, ...]

The first four come from x4lib/data/ground_truth/rows.csv (measured runs of vTrain, Korthikanti et al. 2022 Table 5
as Calculon validates it, and the Ultra-Scale Playbook's nanotron sweep; provenance in x4lib/data/ground_truth.yaml
and tests/data/README.md), ``published`` from x4lib/data/training_runs.yaml (the capstone's published runs, their
unstated settings from their stack's documented defaults), ``single-gpu`` from this book's own Lab 02 runs on a GPU
(book/runs/lab02: the check training's measured step, on the device each run detected; scored, never fitted on:
FIT_SOURCES). Every row carries its shape, its layout, its stack, its
device and cluster, and the measured step time in seconds. Ids become devices here, at the edge of the models.
"""
from __future__ import annotations

import csv
import dataclasses
import functools
import math
from typing import Mapping

from x4lib.catalog import specs
from x4lib.network import clusters
from x4lib.training import stack as stk

ROWS_PATH = specs.DATA_DIR / "ground_truth" / "rows.csv"
SOURCES = ("vtrain-multi", "vtrain-single", "korthikanti", "playbook", "published", "single-gpu")
#: the sources the planner's constants are fitted on (leave-one-source-out); this book's own single-GPU runs are only
#: scored, so that no constant is fitted on a measurement of ours
FIT_SOURCES = tuple(s for s in SOURCES if s != "single-gpu")
#: where this book's Lab 02 runs are (the single-gpu source)
LAB02_RUNS = specs.DATA_DIR.parent.parent / "book" / "runs" / "lab02"
#: the cluster preset whose links a device's rows use
#: the publication a source's measurements come from, where the published runs (training_runs.yaml, keyed by their
#: ``source``) reuse some of them: Table 5's 175B run and the Playbook's best layouts are in both
ORIGIN = {"korthikanti": "korthikanti-2022", "playbook": "hf-ultrascale-playbook-2025"}
CLUSTER_OF = {"a100-sxm-80gb": "2x8-a100-ib200", "h100-sxm": "2x8-h100-ib400"}


class GroundTruthError(ValueError):
    """A broken ground-truth file (exit 1)."""
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class Row:
    source: str
    row_id: str
    label: str
    params: float
    shape: stk.Shape
    setup: stk.Setup
    gpus_per_node: int
    device: specs.Device
    cluster: clusters.Cluster
    nics_per_node: int
    stack: stk.Stack
    global_batch_seqs: int
    measured_step_s: float
    flag: str = ""
    not_stated: tuple = ()
    origin: str = ""      # the bib key of the publication the measurement comes from


    @property
    def gpus(self) -> int:
        return self.setup.n_gpus

    @property
    def tokens(self) -> int:
        return self.global_batch_seqs * self.shape.seq

    @property
    def group(self) -> tuple:
        """Rows that differ only in layout: same model, GPU count and batch (the ranking is scored within one)."""
        return (self.label, self.shape, self.gpus, self.global_batch_seqs)

    def mfu(self, step_s: float) -> float:
        """6·N·tokens / (n · dense 16-bit peak · step): the book's 6ND convention."""
        return 6 * self.params * self.tokens / (self.gpus * self.device.peak_flop_per_s("bf16") * step_s)

    def layout_label(self) -> str:
        s = self.setup
        out = f"TP{s.tp} PP{s.pp} DP{s.dp}" + (f" CP{s.cp}" if s.cp > 1 else "")
        return out + f" mb{s.micro_batch} z{s.zero} rc:{s.recompute}" + (f" v{s.interleave}" if s.interleave > 1 else "")


def _params(shape: stk.Shape, tied: bool = True) -> float:
    return shape.layers * shape.layer_params() + shape.vocab * shape.hidden * (1 if tied else 2)


def _cluster(dev_id: str, cluster_id: str | None = None) -> clusters.Cluster:
    return clusters.get(cluster_id or CLUSTER_OF[dev_id])


@functools.lru_cache(maxsize=8)
def _source_cluster(dev_id: str, fabric: str = "infiniband", cpu: str = "") -> clusters.Cluster:
    """The device's preset with the fabric and CPU its source states (ground_truth.yaml ``network``): the same links,
    NCCL's constants for that fabric (on EFA the aws-ofi-nccl plugin's latency, x4lib.network.nccl_tuner)."""
    base = _cluster(dev_id)
    if fabric == base.nic.network and cpu in ("", base.cpu):
        return base
    return dataclasses.replace(base, id=f"{base.id}+{fabric}+{cpu or base.cpu}", cpu=cpu or base.cpu,
                               nic=dataclasses.replace(base.nic, network=fabric))


def source_cluster(source: str) -> clusters.Cluster:
    """The cluster a ground-truth source's rows are priced on (its device's preset, with its stated fabric)."""
    src = source_info(source)
    net = src["network"]
    return _source_cluster(src["device"], net.get("fabric", "infiniband"), net.get("cpu", ""))


@functools.lru_cache(maxsize=1)
def _csv_rows(path=ROWS_PATH) -> tuple:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return tuple(csv.DictReader(fh))
    except OSError as exc:
        raise GroundTruthError(f"{path.name}: cannot be read: {exc}") from None


def _int(r: Mapping, k: str) -> int:
    return int(float(r[k]))


def _csv_row(r: Mapping, src: Mapping, doc: Mapping) -> Row:
    where = f"rows.csv: {r['source']} row {r['row_id']}"
    try:
        shape = stk.Shape(_int(r, "layers"), _int(r, "hidden"), _int(r, "heads"), _int(r, "kv_heads"), _int(r, "ffn"),
                          r["mlp"] == "gated", _int(r, "vocab"), _int(r, "seq"))
        tp, pp, dp, mb, gbs = (_int(r, k) for k in ("tp", "pp", "dp", "micro_batch", "global_batch_seqs"))
        m = gbs // (dp * mb)
        setup = stk.Setup(tp, pp, dp, 1, _int(r, "zero"), mb, max(1, m), r["recompute"], _int(r, "interleave"),
                          r["sequence_parallel"] == "yes")
        step = float(r["measured_step_s"])
    except (KeyError, ValueError) as exc:
        raise GroundTruthError(f"{where}: {exc}") from None
    if setup.n_gpus != _int(r, "gpus") or not (math.isfinite(step) and step > 0):
        raise GroundTruthError(f"{where}: tp x pp x dp is not the GPU count, or the step time is not > 0")
    dev = specs.get(src["device"])
    params = float(r["params"]) if r["params"] else _params(shape)
    return Row(r["source"], r["row_id"], r["model_label"] or f"h{shape.hidden} L{shape.layers}", params, shape, setup,
               _int(r, "gpus_per_node"), dev,
               _source_cluster(dev.id, src["network"].get("fabric", "infiniband"), src["network"].get("cpu", "")),
               src["network"]["nics_per_node"],
               stk.stack(src["stack"]), gbs, step, r["flag"], (), ORIGIN.get(r["source"], r["source"]))


def _published_row(r: Mapping, doc: Mapping) -> Row:
    from x4lib.training import planner
    st = stk.stack(doc["published_stacks"][r["id"]])
    m, lay = r["model"], r["layout"]
    d = st.defaults
    val = {k: (lay[k] if lay[k] is not None else d[k]) for k in ("micro_batch", "zero", "recompute")}
    shape = stk.Shape(m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["ffn"], m["mlp"] == "gated", m["vocab"],
                      m["seq"])
    gbs = lay["global_batch_tokens"] // m["seq"]
    micro = max(1, gbs // (lay["dp"] * val["micro_batch"]))
    interleave = lay.get("interleave") or d["interleave"]        # stated virtual stages, else the stack's default
    setup = stk.Setup(lay["tp"], lay["pp"], lay["dp"], lay["cp"], val["zero"], val["micro_batch"], micro,
                      val["recompute"], interleave if lay["pp"] > 1 else 1, d["sequence_parallel"] and lay["tp"] > 1)
    dev = specs.get(r["device"])
    step = lay["global_batch_tokens"] / planner.published_tokens_per_s(r)
    return Row("published", r["id"], r["id"], m["params"], shape, setup, 8, dev, _cluster(dev.id, r["cluster"]),
               clusters.get(r["cluster"]).nics_per_node, st, gbs, step, "", tuple(r["not_stated"]), r["source"])


@functools.lru_cache(maxsize=64)
def lab02_measured(run_id: str) -> Mapping[str, float]:
    """The measured terms [s] of a Lab 02 run's one-process check training (forward, backward, optimizer, step:
    x4lib.training.calibration.measured_step on the run's own clock); empty for a run without one."""
    from x4lib.harness import runs
    from x4lib.training import calibration
    res = runs.load_run(LAB02_RUNS / run_id, "lab02").results
    one = [tr for tr in (res.get("check") or {}).get("training", ()) if tr["ranks_n"] == 1]
    return calibration.measured_step(one[0], calibration.default_clock(res)) if one else {}


def _lab02_gpu_row(run_dir) -> Row | None:
    """The single-gpu row of one Lab 02 run: its check training on one GPU (None for a CPU run or one without a
    check): the run's own shape and batch, the device it detected, the median step after the warm-up."""
    from x4lib.harness import runs
    res = runs.load_run(run_dir, "lab02").results
    chk = res.get("check") or {}
    dev_id = res["device"].get("catalog_id")
    one = [tr for tr in chk.get("training", ()) if tr["ranks_n"] == 1]
    if res["device"]["kind"] != "gpu" or not one or not dev_id:
        return None
    sh = chk["calibration"]["shape"]
    shape = stk.Shape(sh["layers"], sh["hidden"], sh["heads"], sh["kv_heads"], sh["ffn"], True, sh["vocab"], sh["seq"])
    setup = stk.Setup(sh["tp"], 1, 1, 1, 0, sh["micro_batch"], 1, "none")
    dev = specs.get(dev_id)
    step = lab02_measured(run_dir.name)["step"]
    return Row("single-gpu", run_dir.name, f"{sh['layers']} layers of {sh['model']} on {dev.id}",
               float(one[0]["ranks"][0]["params"]), shape, setup, 1, dev, _cluster(dev.id, "2x8-h100-ib400"), 1,
               stk.stack(stk.document()["sources"]["single-gpu"]["stack"]), sh["micro_batch"], step, "", (),
               "single-gpu")


def _lab02_rows(root=None) -> tuple[Row, ...]:
    root = LAB02_RUNS if root is None else root
    found = (_lab02_gpu_row(d) for d in sorted(root.iterdir()) if (d / "results.json").is_file())
    return tuple(r for r in found if r is not None)


@functools.lru_cache(maxsize=8)
def rows(source: str) -> tuple[Row, ...]:
    """Every row of one source (module docstring); LookupError for an unknown source."""
    if source not in SOURCES:
        raise LookupError(f"unknown source {source!r}; known: {', '.join(SOURCES)}")
    doc = stk.document()
    if source == "published":
        from x4lib.training import planner
        return tuple(_published_row(r, doc) for r in planner.published_runs())
    if source == "single-gpu":
        return _lab02_rows()
    src = doc["sources"][source]
    return tuple(_csv_row(r, src, doc) for r in _csv_rows() if r["source"] == source)


def source_info(source: str) -> Mapping:
    if source not in SOURCES:
        raise LookupError(f"unknown source {source!r}; known: {', '.join(SOURCES)}")
    return stk.document()["sources"][source]
