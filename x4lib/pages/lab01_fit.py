"""Page helpers of Lab 01's section "Fitted on some logs, scored on the others" (book/lab-01-collectives.md): the
collective model calibrated on some public nccl-tests logs and scored on the others (x4lib.network.validation),
per fabric, size class and log; NCCL's own tuning outputs beside the model; the tuner-plugin CSV the model writes.
"""
from __future__ import annotations

from x4lib.network import clusters, collectives as coll, sizes
from x4lib.catalog import published


def fabric_validation_table(rows: list[dict] | None = None):
    """x4lib.network.validation.validation_rows as the page's table: a compact view of what the targets are scored
    on (per fabric and size class, the held-out median |model/measured − 1| and the target's status; not modelled:
    a label) and, collapsed below it, every fabric, size class and split with its worst log and, at 1 MiB, the
    worst factor."""
    from x4lib.book.tables import Col, pivot, with_details
    from x4lib.network import validation
    rows = validation.validation_rows() if rows is None else rows
    shown = [r for r in rows if r["split"] != "flagged"]
    scored = [r for r in shown if r["split"] in ("held out", "not modelled")]
    compact = pivot(scored, index=("fabric", Col("fabric", wrap=True)), columns="size class",
                    values={"median |error|": Col("held-out median |model/measured − 1|", fmt="{:.0%}"),
                            "status": "target"})
    return with_details(compact, _fabric_full_table(shown),
                        summary="every fabric, size class and split (logs fitted on, held out, not modelled): the "
                                "median error, the worst log and the worst 1 MiB factor")


def _fabric_full_table(shown: list[dict]):
    from x4lib.book.tables import Col, table
    return table(shown, {
        "fabric": Col("fabric", wrap=True), "size class": "size class", "split": "logs used as", "logs": "logs",
        "rows": "rows", "median |error|": Col("median |model/measured − 1|", fmt="{:.0%}"),
        "worst log": Col("worst log", wrap=True), "worst log model / measured": Col("its model / measured", fmt="{:.2f}"),
        "worst 1 MiB factor": Col("worst 1 MiB factor", fmt="{:.2f}"), "status": Col("target", wrap=True)})


def calibration_table(calib=None):
    """The fitted constants of ``calib`` (default: validation.calibration(), fitted on validation.fit_names())."""
    from x4lib.book.tables import Col, table
    from x4lib.network import validation
    return table(validation.calibration_rows(calib), {
        "algorithm/protocol@scale": "algorithm/protocol@scale (N1: one node, N2: two, N4: more)",
        "extra fixed cost (µs)": Col("extra fixed cost", "µs", "{:,.1f}"),
        "bandwidth efficiency": Col("efficiency of NCCL's bandwidth", fmt="{:.2f}"),
        "cost per loop (µs)": Col("cost per chunk loop (NVLS, one node)", "µs", "{:,.1f}"),
        "most per channel (GB/s)": Col("most per ring channel (across nodes)", "GB/s", "{:.1f}")})


def cluster_validation_table(calib=None):
    """Per log and size class: split (the logs ``calib`` was fitted on, default validation.calibration(), and the
    others), NCCL version priced, pairs NCCL picks, the calibrated model and NCCL's bare estimate against the log
    (collapsed below a short per-log pivot)."""
    from x4lib.book.tables import Col, pivot, table, with_details
    from x4lib.network import validation
    rows = [{**r, "log": validation.short_name(r["file"])} for r in validation.cluster_rows(calib)]
    modelled = [{**r, "log, used as": f"{r['log']} ({r['split']})"} for r in rows if r["model / measured"] is not None]
    compact = pivot(modelled, index=("log, used as", Col("log (theirs), used as", wrap=True)), columns="size class",
                    values={"model / measured": Col("model / measured", fmt="{:.2f}")})
    full = table(rows, {"log": Col("log (theirs)", wrap=True), "fabric": Col("fabric", wrap=True),
                        "split": "used as", "NCCL version": "NCCL priced", "size class": "size class",
                        "pairs": Col("NCCL's picks", wrap=True), "rows": "rows",
                        "model / measured": Col("model / measured", fmt="{:.2f}"),
                        "NCCL estimate / measured": Col("NCCL's bare estimate / measured", fmt="{:.2f}")})
    return with_details(compact, full, summary="every log and size class: the NCCL version priced, the pairs NCCL "
                                               "picks, the fitted model and NCCL's bare estimate against the log")


def fabric_targets_markdown(rows: list[dict] | None = None) -> str:
    """The sentence under the fabric table (every number computed): targets met and missed on held-out logs, for
    each miss the log that sets it with its model/measured ratio, and the flagged logs (validation.log_status)."""
    from x4lib.network import validation
    rows = validation.validation_rows() if rows is None else rows
    s = validation.target_summary(rows)
    miss_rows = [r for r in rows if r["split"] == "held out" and r["status"].startswith("missed")]
    why = "; ".join(f"{r['fabric']}, {r['size class']}: {r['worst log']}, model/measured busbw "
                    f"{r['worst log model / measured']:.2f}" + (f" (1 MiB off by {r['worst 1 MiB factor']:.2f}×)"
                                            if r["status"] == "missed: 1 MiB" else "") for r in miss_rows)
    out = [f"On the held-out logs the targets are met for {len(s['met'])} fabric and size classes "
           f"({'; '.join(s['met'])}) and missed for {len(s['missed'])}."]
    if why:
        out.append(f"The misses, and the log that sets each: {why}.")
    flagged = [validation.short_name(n) for n in published.public_logs() if validation.log_status(n)[0] == "flagged"]
    if flagged:
        out.append(f"Flagged, shown and not counted: {', '.join(flagged)}.")
    out.append(f"Not modelled, so not predicted: {', '.join(s['not_modelled'])}.")
    return " ".join(out)


def tuning_table(files=None):
    """NCCL's own predicted numbers (stored TUNING outputs; ``files``: which of validation.TUNING_FILES, default
    all) beside the model priced with the same NCCL version."""
    from x4lib.book.tables import Col, table
    from x4lib.network import validation
    if unknown := set(files or ()) - set(validation.TUNING_FILES):
        raise ValueError(f"no stored TUNING output {', '.join(sorted(unknown))}")
    rows = [{**r, "source": r["source"].split("_")[0].replace("nccl-", "NVIDIA/nccl#"),
             "size": sizes.label(r["size (B)"]) if r["size (B)"] is not None else "— (table)"}
            for r in validation.tuning_rows() if files is None or r["source"] in files]
    return table(rows, {"source": "thread", "NCCL version priced": "NCCL priced", "size": "size",
                        "NCCL's pick": "NCCL's pick", "NCCL (µs)": Col("NCCL's time", "µs", "{:,.1f}"),
                        "model, same pair (µs)": Col("model, same pair", "µs", "{:,.1f}"),
                        "model's pick": "model's pick"})


def tuner_csv_head(cluster_id: str = "2x8-h100-ib400") -> str:
    """The tuner-plugin CSV the model writes for a preset (collective-predict --tuner-csv), as text."""
    return coll.tuner_csv(clusters.get(cluster_id))
