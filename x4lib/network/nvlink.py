"""NVLink generations, NVIDIA systems as built (DGX H100, DGX B200), the GB200 NVL72 NVLink domain, and what the
link hierarchy costs a weight all-gather.

    per GPU, per direction   = links × rate per link per direction        [GB/s]
    per GPU, bidirectional   = 2 × that                                   (the figure datasheets print)
    NVL72 aggregate          = 72 × per-GPU bidirectional                 (NVIDIA's "130 TB/s": a sum, not a bisection)

All-gather of a model's weights (FSDP/ZeRO-3 gathers every layer's weights before using them): the collective
models of ``x4lib.network.collectives`` (ring and hierarchical α–β models, nccl-tests' size convention, the cluster presets
of ``x4lib.network.clusters``) predict its time inside one NVLink domain and across nodes joined by 400 Gb/s NICs. Model
predictions, not measurements. Data: ``x4lib/data/nvlink.yaml``. Used in: book/02c-nvlink-and-nvl72.md.
"""
from __future__ import annotations

import dataclasses
import functools
from types import MappingProxyType
from typing import Mapping

from x4lib.catalog import specs
from x4lib import paths

DATA_PATH = paths.DATA_DIR / "nvlink.yaml"
SCHEMA_PATH = paths.SCHEMA_DIR / "nvlink.schema.json"
SYSTEM_FIELDS = {"gpus": "GPUs", "cpus": "CPUs", "system_memory": "system memory", "nvswitch": "NVLink switch",
                 "compute_nics": "compute NICs", "storage_nics": "storage / in-band NICs",
                 "management": "management network", "storage": "local storage", "pcie_switches": "PCIe switches",
                 "max_power_w": "maximum power", "form_factor": "form factor"}


class NVLinkDataError(ValueError):
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class Generation:
    generation: int
    gpu: str
    device: str | None
    links: int
    link_Bps_per_direction: float
    source: str
    note: str = ""

    @property
    def gpu_Bps_per_direction(self) -> float:
        return self.links * self.link_Bps_per_direction

    @property
    def gpu_Bps_bidirectional(self) -> float:
        return 2 * self.gpu_Bps_per_direction


@functools.lru_cache(maxsize=1)
def data() -> Mapping:
    import json

    import jsonschema
    try:
        raw = specs.read_yaml(DATA_PATH, NVLinkDataError)
        jsonschema.validate(raw, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise NVLinkDataError(f"{DATA_PATH.name}: {where}: {exc.message}") from None
    return MappingProxyType(raw)


def generations() -> list[Generation]:
    return [Generation(g["generation"], g["gpu"], g["device"], g["links"], g["gb_s_per_link_per_direction"] * 1e9,
                       g["source"], g.get("note", "")) for g in data()["generations"]]


def generation_rows() -> list[dict]:
    """Display rows: links × rate per link per direction, per-GPU per direction, and the bidirectional total beside."""
    return [{"generation": f"NVLink {g.generation}", "GPU": g.gpu, "links": g.links,
             "per link, per direction (GB/s)": g.link_Bps_per_direction / 1e9,
             "per GPU, per direction (GB/s)": g.gpu_Bps_per_direction / 1e9,
             "per GPU, bidirectional (GB/s)": g.gpu_Bps_bidirectional / 1e9, "source": g.source}
            for g in generations()]


def system(system_id: str) -> Mapping:
    systems = data()["systems"]
    if system_id not in systems:
        raise LookupError(f"unknown system {system_id!r}; known: {', '.join(systems)}")
    return systems[system_id]


def system_rows(system_ids=("dgx-h100", "dgx-b200")) -> list[dict]:
    """One row per component, one column per system (values as the sources print them)."""
    rows = []
    for field, label in SYSTEM_FIELDS.items():
        row = {"component": label}
        for sid in system_ids:
            v = system(sid)[field]["value"]
            row[system(sid)["name"]] = f"{v / 1e3:g} kW" if field == "max_power_w" else v
        rows.append(row)
    return rows


def nvl72() -> dict:
    """The NVL72 domain's counts with NVIDIA's aggregate, and the aggregate recomputed from the per-GPU rate."""
    n = data()["nvl72"]
    gpu = specs.get("gb200")
    per_gpu_bidir = 2 * gpu.si("scaleup_bw_gb_s_per_direction")
    return {"gpus": n["gpus"]["value"], "grace_cpus": n["grace_cpus"]["value"],
            "compute_trays": n["compute_trays"]["value"], "switch_trays": n["switch_trays"]["value"],
            "switch_chips": n["switch_trays"]["value"] * n["switch_chips_per_tray"]["value"],
            "gpus_per_tray": n["gpus"]["value"] // n["compute_trays"]["value"],
            "nvidia_aggregate_Bps": n["aggregate_tb_s_bidirectional"]["value"] * 1e12,
            "computed_aggregate_Bps": n["gpus"]["value"] * per_gpu_bidir,
            "per_gpu_Bps_per_direction": per_gpu_bidir / 2}


def dgx_power_per_gpu_W(system_id: str = "dgx-h100") -> float:
    return system(system_id)["max_power_w"]["value"] / 8


# ------------------------------------------------------------------------------------------ all-gather of weights

def allgather_cases(size_B: float) -> list[dict]:
    """Predicted time to all-gather ``size_B`` bytes of weights (nccl-tests size: the whole gathered array) in four
    layouts: 8 H100 in one NVLink/NVSwitch node; 16 H100 in 2 such nodes (8 × 400 Gb/s NICs each); 8 H100 one per
    node (one 400 Gb/s NIC each); and 72 Blackwell GPUs in one NVL72 domain against 9 nodes of 8 joined by 400 Gb/s
    NICs. Each row: {layout, GPUs, time_s, algorithm, bottleneck}."""
    from x4lib.network import clusters, collectives
    h100 = clusters.get("2x8-h100-ib400")
    nic_Bps = h100.nic.bw_Bps
    gb200_link = specs.get("gb200").si("scaleup_bw_gb_s_per_direction")
    layouts = [
        ("8 x H100, one node (NVLink 4 + NVSwitch)",
         clusters.custom_cluster(1, 8, h100.intra.bw_Bps, cluster_id="1x8-h100")),
        ("16 x H100, 2 nodes (8 x 400 Gb/s NICs per node)", h100),
        ("8 x H100, one per node (one 400 Gb/s NIC each)",
         clusters.custom_cluster(8, 1, h100.intra.bw_Bps, 1, nic_Bps, cluster_id="8x1-h100")),
        ("72 x GB200, one NVL72 NVLink domain",
         clusters.custom_cluster(1, 72, gb200_link, cluster_id="1x72-gb200")),
        ("72 x B200, 9 nodes of 8 (8 x 400 Gb/s NICs per node)",
         clusters.custom_cluster(9, 8, specs.get("b200").si("scaleup_bw_gb_s_per_direction"), 8, nic_Bps,
                                 cluster_id="9x8-b200")),
    ]
    out = []
    for label, c in layouts:
        p = collectives.predict("all_gather", size_B, c)
        out.append({"layout": label, "GPUs": c.n_ranks, "time_s": p.time_s, "algorithm": p.algorithm,
                    "bottleneck": p.bottleneck})
    return out
