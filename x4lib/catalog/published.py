"""Measurements published by others, and dated rental listings (``x4lib/data/published.yaml``).

Others' numbers are never mixed with ours: pages draw them hollow and cite them (``source`` is a key of
book/references.bib). Every record names what was run, by whom, and the date of the stored copy read.
Also the public nccl-tests / rccl-tests logs stored under tests/data/nccl/ and the cluster each ran on
(``x4lib/data/public_logs.yaml``, validated against ``x4lib/schemas/public_logs.schema.json``): the input of the
collective model's validation in Lab 01.
Used in: book/lab-00-roofline.md, book/lab-01-collectives.md.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from x4lib import paths

PUBLISHED_PATH = paths.DATA_DIR / "published.yaml"
PUBLIC_LOGS_PATH = paths.DATA_DIR / "public_logs.yaml"
PUBLIC_LOGS_SCHEMA = paths.SCHEMA_DIR / "public_logs.schema.json"
LOG_DIR = paths.REPO_ROOT / "tests" / "data" / "nccl"


class PublicLogsError(ValueError):
    """public_logs.yaml breaks a rule (a broken data file of the book: exit 1); the message names the entry."""
    exit_code = 1


@functools.lru_cache(maxsize=1)
def load() -> dict:
    """The whole file, dates as ISO strings."""
    from x4lib.catalog import specs
    return specs.read_yaml(Path(PUBLISHED_PATH))


def measurements(device: str | None = None, kind: str | None = None, dtype: str | None = None) -> list[dict]:
    """Published measurements, filtered by catalog id, kind (``matmul``, ``memory_bw``) and dtype (in the book's
    vocabulary: ``fp8`` in the file means ``fp8_e4m3``)."""
    from x4lib.catalog import specs
    out = []
    for m in load().get("measurements", []):
        d = specs.normalize_dtype(m["dtype"]) if m.get("dtype") else None
        if (device and m["device"] != device) or (kind and m["kind"] != kind) or (dtype and d != dtype):
            continue
        out.append({**m, "dtype": d} if d else m)
    return out


def rentals(catalog_id: str | None = None) -> list[dict]:
    """Dated on-demand rental listings (a snapshot each, not a quote)."""
    return [r for r in load().get("rental", []) if catalog_id in (None, r["catalog_id"])]


@functools.lru_cache(maxsize=2)
def public_logs(path: Path = PUBLIC_LOGS_PATH) -> dict:
    """Every stored public log (file name -> its entry), validated: JSON Schema, a catalog device, a stored file."""
    from x4lib.catalog import specs
    data = specs.load_document(path, PUBLIC_LOGS_SCHEMA, PublicLogsError)
    for name, entry in data["logs"].items():
        try:
            specs.get(entry["cluster"]["device"])
        except specs.UnknownDeviceError as exc:
            raise PublicLogsError(f"{Path(path).name}: {name}: {exc}") from None
        if entry["cluster"]["nodes"] > 1 and entry["status"] != "not_modelled" and \
                not {"network", "nics_per_node", "nic_gbit_s"} <= set(entry["cluster"]):
            raise PublicLogsError(f"{Path(path).name}: {name}: a multi-node cluster needs network, nics_per_node "
                                  f"and nic_gbit_s")
    return data["logs"]


def host_fit_logs(path: Path = PUBLIC_LOGS_PATH) -> dict:
    """The logs the host's cost per launched channel is fitted on (public_logs.yaml ``host_fit``: file name -> its
    collective, the AllReduce log of the same run and why), checked: the run is a stored log, the file is stored,
    and no such log is also scored."""
    from x4lib.catalog import specs
    data = specs.load_document(path, PUBLIC_LOGS_SCHEMA, PublicLogsError)
    logs = public_logs(path)
    for name, entry in data.get("host_fit", {}).items():
        if name in logs:
            raise PublicLogsError(f"{Path(path).name}: host_fit: {name} is also a scored log")
        if entry["same_run_as"] not in logs:
            raise PublicLogsError(f"{Path(path).name}: host_fit: {name}: same_run_as {entry['same_run_as']} is not a "
                                  f"stored log")
        if not (LOG_DIR / name).is_file():
            raise PublicLogsError(f"{Path(path).name}: host_fit: {name} is not stored in {LOG_DIR.name}/")
    return data.get("host_fit", {})


def log_cluster(name: str):
    """The :class:`x4lib.network.clusters.Cluster` a stored log ran on, as public_logs.yaml describes it (intra-node line
    rate from the catalog); None for a log the model does not describe (status not_modelled)."""
    from x4lib.network import clusters
    from x4lib.catalog import specs
    entry = public_logs()[name]
    if entry["status"] == "not_modelled":
        return None
    c = entry["cluster"]
    line = specs.get(c["device"]).si("scaleup_bw_gb_s_per_direction")
    cluster = clusters.custom_cluster(
        c["nodes"], c["gpus_per_node"], line, c.get("nics_per_node", 0), c.get("nic_gbit_s", 0) * 1e9 / 8,
        arch=clusters.arch_of(c["device"], name), cpu=c["cpu"], nvls=c["nvls"],
        network=c.get("network", "infiniband"), cluster_id=name, min_channels=min_channels(entry["env"]))
    return cluster


#: an NCCL variable that sets the fewest channels, as a log's ``env`` states it (KEY=VALUE, whole numbers)
_MIN_CHANNELS_RE = re.compile(r"\bNCCL_MIN_(?:CTAS|NCHANNELS|NRINGS)\s*=\s*(\d{1,4})\b")


def min_channels(env: str) -> int:
    """The fewest channels a run asked NCCL for (the largest of NCCL_MIN_CTAS, NCCL_MIN_NCHANNELS and the older
    NCCL_MIN_NRINGS in a log's ``env`` text; connect.cc 484 takes the larger of the variable and the config's
    minCTAs), 0 where none is set."""
    return max((int(m) for m in _MIN_CHANNELS_RE.findall(env or "")), default=0)
