"""The doctor on a Lab 02 run: each term of a measured training step beside the calibrated plan, and the term that
is off (x4lib.training.calibration). Used in: book/lab-02-calibrate.md; ``python -m x4lib doctor --from
results.json``.
"""
from __future__ import annotations

from typing import Mapping

from x4lib.doctor.findings import KIND_NAMES, Evidence, Finding, InputReport, Quantity, new_finding


def term_lines(row: Mapping) -> list[str]:
    """One line per term: measured, calibrated and their ratio."""
    return [f"{row['ranks']} process(es), {t}: measured {row['measured'][t] * 1e3:.2f} ms, calibrated "
            f"{row['predicted'][t] * 1e3:.2f} ms (×{row['measured'][t] / row['predicted'][t]:.2f})"
            for t in ("forward", "backward", "optimizer")]


def diagnose_lab02(results: Mapping, name: str = "results.json",
                   text: str | None = None) -> tuple[InputReport, list[Finding]]:
    """A Lab 02 results.json (validated) with a training check: for each process count, the term furthest from
    the calibrated plan when it is more than 15 % off (warning), else a note that all terms agree."""
    from x4lib.training import calibration
    label = results["device"].get("detected_name", "?")
    if not results.get("check"):
        return InputReport(name, "lab02-results", f"{KIND_NAMES['lab02-results']}: {label}, a calibrated layer "
                                                  f"without a training step: nothing to set beside the plan",
                           diagnosed=False), []
    clock = calibration.default_clock(results)
    cal = calibration.calibrate(results["check"]["calibration"], results["device"], clock)
    found = []
    for tr in results["check"]["training"]:
        pred = calibration.predict_check(cal, results["check"], tr["ranks_n"]).terms()
        meas = calibration.measured_step(tr, clock)
        row = {"ranks": tr["ranks_n"], "measured": meas, "predicted": pred}
        ev = [Evidence(name, None, line) for line in term_lines(row)]
        off, ratios = calibration.off_term(meas, pred, calibration.CHECK_TARGET)
        if off:
            found.append(new_finding("lab02-term-off", name, ev,
                                     f"{tr['ranks_n']} process(es): the {off} term is ×{ratios[off]:.2f} the "
                                     f"calibrated one",
                                     Quantity(meas[off] * 1e3, "ms", f"{off}, measured ({clock} clock)"),
                                     Quantity(pred[off] * 1e3, "ms", f"{off}, calibrated plan")))
        else:
            found.append(new_finding("lab02-terms-agree", name, ev,
                                     f"{tr['ranks_n']} process(es): step {meas['step'] * 1e3:.1f} ms measured, "
                                     f"{pred['step'] * 1e3:.1f} ms calibrated"))
    summary = (f"{KIND_NAMES['lab02-results']}: {label}, {len(results['check']['training'])} training runs "
               f"(DDP over {results['check']['backend']}) against the calibrated layer, {clock} clock")
    return InputReport(name, "lab02-results", summary), found
