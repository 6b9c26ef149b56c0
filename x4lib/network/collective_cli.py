"""python -m x4lib collective-predict: the command-line edge of :mod:`x4lib.network.collectives` (arguments, the
cluster a reader describes, the JSON document and its text). It lives apart from the model because ``--calibrated``
reads Lab 01's calibration (:mod:`x4lib.network.validation`), which is built on the model: the model never imports
its own validation.
Used in: README.md, book/lab-01-collectives.md.
"""
from __future__ import annotations

import dataclasses

from x4lib.network import clusters, nccl_tests, nccl_tuner
from x4lib.network.clusters import Cluster
from x4lib.network.collectives import (ALGORITHM_CHOICES, MODEL_VERSION, Calibration, _protocol, cluster_summary,
                                       predict, tuner_csv)

def cli_arguments(p) -> None:
    from x4lib import cli
    p.usage = ("%(prog)s [--collective C] (--cluster ID | --nodes N --gpus-per-node G --intra-gb-s B ...) "
               "[--sizes S,...] [--algorithm A] [--protocol P] [--calibrated] [--json]")
    p.description = ("NCCL's own cost model (src/graph/tuning.cc, v2.30.7-1) of a collective's time, algbw and busbw "
                     "(nccl-tests conventions) on a cluster preset (x4lib/data/clusters.yaml) or a custom cluster: "
                     "the (algorithm, protocol) NCCL would pick at each size. Link rates are per direction; "
                     "GB/s = 1e9 B/s, Gb/s = 1e9 bit/s.")
    p.add_argument("--collective", default="all_reduce", type=cli.choice_of("collective", nccl_tests.COLLECTIVES))
    p.add_argument("--cluster", help="preset id, e.g. 2x8-h100-ib400 (the flags below override its values)")
    p.add_argument("--sizes", type=cli.sizes, default=cli.sizes("1M,100M,1G"),
                   help="comma-separated sizes: bytes, K/M/G (powers of two, as nccl-tests), KB/MB/GB "
                        "(powers of ten) or KiB/MiB/GiB; default 1M,100M,1G (the lab's sizes)")
    p.add_argument("--algorithm", default="auto", type=cli.choice_of("algorithm", ALGORITHM_CHOICES),
                   help="auto (NCCL's choice) or one algorithm, as NCCL_ALGO: ring, tree, nvls (NVLS on one node, "
                        "NVLS tree across nodes), nvls_tree, collnet, collnet_direct, collnet_chain, p2p")
    p.add_argument("--protocol", default="auto", type=_protocol_arg,
                   help="auto (NCCL's choice) or LL, LL128, Simple, as NCCL_PROTO")
    p.add_argument("--no-nvls", action="store_true", help="switch NVLink SHARP off (as NCCL_NVLS_ENABLE=0)")
    p.add_argument("--nvls", action="store_true", help="the NVSwitch can reduce (NVLink SHARP), for a custom cluster")
    p.add_argument("--ib-sharp", action="store_true", help="the IB switches can reduce (SHARP, NCCL's CollNet)")
    c = p.add_argument_group("custom cluster (or overrides of --cluster)")
    c.add_argument("--nodes", type=cli.number("nodes", 1, 1e6, integer=True))
    c.add_argument("--gpus-per-node", type=cli.number("GPUs per node", 1, 1e4, integer=True))
    c.add_argument("--intra-gb-s", type=cli.number("GB/s", 0, 1e6, low_open=True),
                   help="intra-node line rate per GPU per direction, GB/s (1e9 B/s), e.g. 450 for H100 NVLink")
    c.add_argument("--intra-kind", choices=["nvlink", "pcie"], help="intra-node link kind of a custom cluster")
    c.add_argument("--arch", choices=list(clusters.ARCHES),
                   help="NCCL's architecture class of the GPUs (custom cluster default: hopper)")
    c.add_argument("--cpu", choices=["intel", "amd"], help="CPU vendor (NCCL's constants across nodes depend on it)")
    c.add_argument("--nics-per-node", type=cli.number("NICs per node", 1, 1e3, integer=True))
    c.add_argument("--nic-gbit-s", type=cli.number("Gb/s", 0, 1e7, low_open=True),
                   help="NIC line rate per direction, Gb/s (bits: 400 Gb/s = 50 GB/s)")
    c.add_argument("--intra-efficiency", type=cli.number("efficiency", 0, 1, low_open=True),
                   help="fraction of the intra-node line rate NCCL's graph uses (default: NCCL's own)")
    c.add_argument("--nic-efficiency", type=cli.number("efficiency", 0, 1, low_open=True),
                   help="fraction of the NIC line rate (default: NCCL's own graph speed)")
    p.add_argument("--nccl-version", help="price with that NCCL's tuner tables, e.g. 2.26.2 (default 2.30.7; "
                   "bands in x4lib/data/nccl_tuning.yaml version_bands)")
    p.add_argument("--calibrated", action="store_true",
                   help="time the pair NCCL picks with Lab 01's calibration (fitted on stored AllReduce logs: extra "
                        "fixed cost and efficiency per algorithm/protocol, the ring's rate per channel across nodes) "
                        "instead of NCCL's bare estimate; all_reduce only, without the host's time per call")
    p.add_argument("--tuner-csv", metavar="FILE", help="also write the model's choice for every tuned collective and "
                   "every size as NCCL's example tuner-plugin CSV (nccl_tuner.conf format) to FILE")
    p.add_argument("--json", action="store_true", help="machine-readable output "
                   "(x4lib/schemas/collective_predict_output.schema.json)")


def _protocol_arg(text: str) -> str:
    import argparse
    try:
        return _protocol(text) or "auto"
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_CUSTOM_FLAGS = ("nodes", "gpus_per_node", "intra_gb_s", "nics_per_node", "nic_gbit_s", "intra_kind")
_OVERRIDE_FLAGS = _CUSTOM_FLAGS + ("intra_efficiency", "nic_efficiency", "arch", "cpu")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def cluster_from_args(args) -> Cluster:
    """The cluster the flags describe: a preset (``--cluster``), a preset with overrides, or a custom cluster.
    Display units (GB/s, Gb/s) become SI here. Raises UsageError naming what is missing."""
    from x4lib import cli
    if args.cluster is None:
        if args.nodes is None:
            raise cli.UsageError("give --cluster ID (known: " + ", ".join(clusters.ids()) + ") or a custom cluster "
                                 "(--nodes, --gpus-per-node, --intra-gb-s, and for more than one node "
                                 "--nics-per-node, --nic-gbit-s)")
        missing = [_flag(f) for f in ("gpus_per_node", "intra_gb_s") if getattr(args, f) is None]
        if args.nodes > 1:
            missing += [_flag(f) for f in ("nics_per_node", "nic_gbit_s") if getattr(args, f) is None]
        if missing:
            raise cli.UsageError(f"a custom cluster of {args.nodes} node(s) also needs {', '.join(missing)}")
        return clusters.custom_cluster(
            args.nodes, args.gpus_per_node, args.intra_gb_s * 1e9, args.nics_per_node or 0,
            (args.nic_gbit_s or 0) * 1e9 / 8, intra_kind=args.intra_kind or "nvlink", arch=args.arch or "hopper",
            cpu=args.cpu or "intel", intra_efficiency=args.intra_efficiency, nic_efficiency=args.nic_efficiency)
    base = clusters.get(args.cluster)
    intra = dataclasses.replace(
        base.intra, bw_Bps=args.intra_gb_s * 1e9 if args.intra_gb_s else base.intra.bw_Bps,
        efficiency=args.intra_efficiency or base.intra.efficiency, kind=args.intra_kind or base.intra.kind)
    nodes, k, nic = args.nodes or base.nodes, args.nics_per_node or base.nics_per_node, base.nic
    if nic is not None:
        nic = dataclasses.replace(nic, bw_Bps=args.nic_gbit_s * 1e9 / 8 if args.nic_gbit_s else nic.bw_Bps,
                                  efficiency=args.nic_efficiency or nic.efficiency)
    elif nodes > 1:
        if not (args.nic_gbit_s and k):
            raise cli.UsageError(f"cluster {base.id} has no network; {nodes} nodes also need --nics-per-node and "
                                 f"--nic-gbit-s")
        nic = clusters.custom_cluster(2, 1, 1.0, k, args.nic_gbit_s * 1e9 / 8, nic_efficiency=args.nic_efficiency).nic
    changed = any(getattr(args, f) is not None for f in _OVERRIDE_FLAGS)
    return dataclasses.replace(
        base, id=base.id + (" (modified)" if changed else ""), nodes=nodes,
        gpus_per_node=args.gpus_per_node or base.gpus_per_node, intra=intra, nic=nic, nics_per_node=k,
        arch=args.arch or base.arch, cpu=args.cpu or base.cpu)


def predict_table(collective: str, sizes_B: list[int], cluster: Cluster, in_network: bool | None = None,
                  algorithm: str | None = None, protocol: str | None = None, nccl_version: str | None = None,
                  calibration: Calibration | None = None) -> dict:
    """The CLI's JSON document (display units: µs, GB/s = 1e9 B/s); see collective_predict_output.schema.json.
    ``calibration``: time each row's pair with it (achieved_time_s) instead of NCCL's estimate; ``timing`` says
    which."""
    from x4lib.network import sizes
    rows = []
    for size in sizes_B:
        pr = predict(collective, size, cluster, in_network=in_network, algorithm=algorithm, protocol=protocol,
                     nccl_version=nccl_version, calibration=calibration)
        rows.append({"size_bytes": int(size), "size_label": sizes.format_size(int(size)),
                     "time_us": pr.time_s * 1e6, "algbw_gb_s": pr.algbw_Bps / 1e9, "busbw_gb_s": pr.busbw_Bps / 1e9,
                     "algorithm": pr.algorithm, "protocol": pr.protocol, "channels": pr.channels,
                     "bottleneck": pr.bottleneck, "bound": pr.bound, "latency_us": pr.latency_s * 1e6,
                     "alternatives_us": {k: v * 1e6 for k, v in pr.alternatives.items()}})
    return {"collective": collective, "cluster": cluster.id, "n_ranks": cluster.n_ranks,
            "model_version": MODEL_VERSION, "algorithm_requested": algorithm or "auto",
            "protocol_requested": protocol or "auto",
            "nccl_version_priced": nccl_version or nccl_tuner.tuning()["nccl"]["tag"],
            "timing": "calibrated" if calibration else "nccl-estimate",
            "calibrated_on": list(calibration.fitted_on) if calibration else [],
            "rows": rows, "assumptions": cluster_summary(cluster)}


def _text(doc: dict, cluster: Cluster) -> str:
    a = doc["assumptions"]
    lines = [f"{doc['collective']} on {doc['cluster']}: {a['nodes']} node(s) x {a['gpus_per_node']} GPUs "
             f"= {doc['n_ranks']} ranks; NCCL {doc['nccl_version_priced']} cost model, t = α + S / algbw per algorithm and "
             f"protocol (x4lib model v{doc['model_version']})" + (
                 f"; the pair NCCL picks timed with Lab 01's calibration (fitted on {len(doc['calibrated_on'])} stored "
                 f"logs)" if doc.get("timing") == "calibrated" else ""),
             f"  intra-node: {a['intra_link']}, {a['intra_bw_gb_s_per_direction_per_gpu']:g} GB/s per GPU per "
             f"direction; NCCL sees {a['intra_nccl_gb_s_per_direction_per_gpu']:.1f} GB/s ({a['arch']})"]
    if cluster.nic and cluster.nodes > 1:
        lines.append(f"  inter-node: {a['nics_per_node']} x {a['nic_link']}, {a['nic_line_rate_gbit_s_per_direction']:g}"
                     f" Gb/s = {a['nic_bw_gb_s_per_direction']:g} GB/s per NIC per direction")
    lines.append(f"  ring graph: {a['ring_channels']} channels x {a['ring_gb_s_per_channel']:g} GB/s = "
                 f"{a['ring_bus_gb_s']:g} GB/s bus bandwidth; NVLS {'on' if a['nvls_available'] else 'off'}, "
                 f"IB SHARP {'on' if a['ib_sharp_available'] else 'off'}; requested "
                 f"{doc['algorithm_requested']}/{doc['protocol_requested']}")
    lines += ["", f"{'size (bytes)':>14} {'':>7} {'time (µs)':>11} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}  "
                  f"algorithm/protocol, bottleneck"]
    for r in doc["rows"]:
        lines.append(f"{r['size_bytes']:>14} {r['size_label']:>7} {r['time_us']:>11.1f} {r['algbw_gb_s']:>13.1f} "
                     f"{r['busbw_gb_s']:>13.1f}  {r['algorithm']}/{r['protocol']}, {r['bottleneck']} "
                     f"({r['bound']}-bound)")
    lines += ["", "GB = 1e9 B, MB = 1e6 B; K/M/G sizes are powers of two as in nccl-tests; busbw = algbw x "
              "busbw_factor (nccl-tests). " + ("Predictions calibrated on others' logs (Lab 01 scores them on held-out "
                                                 "logs), without the host's time per call; "
                                                 "not measurements." if doc.get("timing") == "calibrated" else
                                                 "NCCL's model predictions, not measurements.")]
    if any(r["busbw_gb_s"] * 1e9 > cluster.intra.bw_Bps or (cluster.nodes > 1 and cluster.nic and
           r["busbw_gb_s"] * 1e9 > cluster.node_line_rate_Bps) for r in doc["rows"]):
        lines.append("note: busbw exceeds a line rate: the factor assumes point-to-point transfers, which in-network "
                     "reduction and a two-node tree avoid; it is not a link speed.")
    return "\n".join(lines)


def cli_main(args) -> int:
    from x4lib import cli
    cluster = cluster_from_args(args)
    if args.nvls or args.ib_sharp:
        cluster = clusters.with_in_network(cluster, nvls=True if args.nvls else None,
                                           ib_sharp=True if args.ib_sharp else None)
    in_network = False if args.no_nvls else None
    if args.no_nvls:
        cluster = clusters.with_in_network(cluster, nvls=False)
    if args.nccl_version is not None:
        nccl_tuner.parse_version(args.nccl_version)  # ValueError (exit 2) names it
    calibration = None
    if args.calibrated:
        if args.collective != "all_reduce":
            raise cli.UsageError(f"--calibrated is fitted on AllReduce logs only; not for {args.collective}")
        from x4lib.network import validation
        calibration = validation.calibration()
    doc = predict_table(args.collective, args.sizes, cluster, in_network=in_network, algorithm=args.algorithm,
                        protocol=None if args.protocol == "auto" else args.protocol, nccl_version=args.nccl_version,
                        calibration=calibration)
    if args.tuner_csv:
        text = tuner_csv(cluster, nccl_version=args.nccl_version)
        try:
            with open(args.tuner_csv, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise cli.UsageError(f"cannot write --tuner-csv {args.tuner_csv}: {exc.strerror}") from None
        doc["tuner_csv"] = {"path": str(args.tuner_csv), "rows": text.count("\n") - 4}
    text = _text(doc, cluster) + (f"\nwrote {doc['tuner_csv']['rows']} tuner-plugin rows to {args.tuner_csv}"
                                   if args.tuner_csv else "")
    cli.emit(doc, text, as_json=args.json)
    return 0


