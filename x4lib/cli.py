"""``python -m x4lib``: the book's command line for readers and scripts.

    python -m x4lib specs [ID] [--json]
    python -m x4lib roofline --device ID --dtype bf16 [--intensity X] [--json]
    python -m x4lib train-estimate --params 70e9 --tokens 1e12 --gpus 1024 --device h100-sxm ...

Subcommands in DELEGATED parse their own arguments in their module's main(argv) (that function is
their display edge). Exit codes: 0 done, 1 a check failed, 2 bad input or usage (argparse's usage line plus one error line, no traceback).
This module is the one place where SI values become display units (TFLOP/s, GB/s, kW, MWh).
"""
from __future__ import annotations

import argparse
import json
import re
import sys

from x4lib import economics, roofline, specs


def number_arg(kind: str, low: float | None = None, low_open: bool = True, high: float | None = None,
               integer: bool = False):
    """An argparse ``type`` for a number of ``kind`` in a range; the error names the value and the range.
    Shared by every subcommand (the delegated ones too)."""
    def parse(text: str):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number ({kind})") from None
        if integer and v != int(v):
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {kind}")
        if low is not None and (v <= low if low_open else v < low):
            raise argparse.ArgumentTypeError(f"{text} {kind}: must be {'>' if low_open else '>='} {low:g}")
        if high is not None and v > high:
            raise argparse.ArgumentTypeError(f"{text} {kind}: must be <= {high:g}")
        return int(v) if integer else v
    return parse


_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def build_parser() -> argparse.ArgumentParser:
    g = economics.quiz_givens()
    p = argparse.ArgumentParser(prog="python -m x4lib", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("specs", help="list the catalog, or show one device with sources")
    s.add_argument("id", nargs="?", help="catalog id, e.g. h100-sxm")
    s.add_argument("--json", action="store_true", help="machine-readable output")

    r = sub.add_parser("roofline", help="peak, bandwidth and ridge point of a device")
    r.add_argument("--device", required=True, help="catalog id")
    r.add_argument("--dtype", default="bf16", help="one of: " + ", ".join(specs.DTYPE_BYTES))
    r.add_argument("--intensity", type=number_arg("FLOP/byte", 0, low_open=False),
                   help="arithmetic intensity in FLOP/byte: also print the attainable rate")
    r.add_argument("--json", action="store_true")

    t = sub.add_parser("train-estimate", help="time, cost and power of a training run (6·N·D)",
                       description="Defaults are the motivation quiz's givens (x4lib/data/givens.yaml).")
    t.add_argument("--params", type=number_arg("parameters", 0), default=g["params"], help="parameter count N")
    t.add_argument("--tokens", type=number_arg("tokens", 0), default=g["tokens"], help="training tokens D")
    t.add_argument("--gpus", type=number_arg("GPUs", 1, low_open=False, integer=True), default=g["n_gpus"])
    t.add_argument("--device", default=g["device"], help="catalog id")
    t.add_argument("--dtype", default=g["dtype"])
    t.add_argument("--mfu", type=number_arg("MFU", 0, high=1), default=g["mfu"], help="in (0, 1]")
    t.add_argument("--usd-per-gpu-hour", type=number_arg("USD/GPU-hour", 0, low_open=False),
                   default=g["usd_per_gpu_hour"])
    t.add_argument("--usd-per-kwh", type=number_arg("USD/kWh", 0, low_open=False), default=g["usd_per_kwh"])
    t.add_argument("--pue", type=number_arg("PUE", 1, low_open=False), default=g["pue"], help=">= 1")
    t.add_argument("--power-scope", choices=list(economics.POWER_SCOPES), default=g["power_scope"])
    t.add_argument("--json", action="store_true")
    for parser in (r, t):  # let "-70e9" reach the number check (argparse only knows plain negatives)
        parser._negative_number_matcher = _NEGATIVE_NUMBER
    return p


def _table(rows: list[dict]) -> str:
    import pandas as pd
    return pd.DataFrame(rows).to_string(index=False, na_rep="—")


def _specs(args) -> str:
    if args.id:
        dev = specs.get(args.id)
        if args.json:
            return json.dumps([dev.to_json()], indent=2)
        head = f"{dev.name} ({dev.id}, {dev.vendor}, {dev.kind})\nscope: {dev.scope}\n"
        rows = [{"field": f, "value": v.value, "unit": v.unit,
                 "dense/sparse · direction": v.sparsity or v.direction or "", "source": v.source,
                 "accessed": v.accessed} for f, v in dev.values.items()]
        tail = "".join(f"\nnot published: {u['field']} ({u['why']})" for u in dev.unpublished)
        return head + _table(rows) + tail
    catalog = specs.load_catalog()
    if args.json:
        return json.dumps([d.to_json() for d in catalog.values()], indent=2)

    return (_table(specs.summary_rows()) +
            "\n(dense rates; GB = 1e9 B; see `specs ID` for every field and its source)")


def _roofline(args) -> str:
    roof = roofline.for_device(args.device, args.dtype)
    out = {"device": roof.device_id, "dtype": roof.dtype, "peak_tflops": roof.peak_flop_per_s / 1e12,
           "peak_field": roof.peak_field, "memory_bw_gb_s": roof.memory_bw_Bps / 1e9,
           "ridge_flop_per_byte": roof.ridge_flop_per_B}
    if args.intensity is not None:
        out["intensity_flop_per_byte"] = args.intensity
        out["attainable_tflops"] = roof.attainable_flop_per_s(args.intensity) / 1e12
    if args.json:
        return json.dumps(out, indent=2)
    lines = [f"{roof.device_id} {roof.dtype}: dense peak {out['peak_tflops']:.1f} TFLOP/s "
             f"({roof.peak_field}), memory {out['memory_bw_gb_s']:.0f} GB/s (GB = 1e9 B)",
             f"ridge point: {out['ridge_flop_per_byte']:.1f} FLOP/byte"]
    if args.intensity is not None:
        bound = "compute" if args.intensity >= roof.ridge_flop_per_B else "memory"
        lines.append(f"at {args.intensity:g} FLOP/byte: attainable {out['attainable_tflops']:.2f} TFLOP/s "
                     f"({bound}-bound)")
    return "\n".join(lines)


def _train(args) -> str:
    est = economics.estimate_training(args.params, args.tokens, args.device, args.gpus, dtype=args.dtype,
                                      mfu=args.mfu, usd_per_gpu_hour=args.usd_per_gpu_hour,
                                      usd_per_kwh=args.usd_per_kwh, pue=args.pue,
                                      power_scope=args.power_scope)
    j = est.to_json()
    if args.json:
        return json.dumps(j, indent=2)
    a = j["assumptions"]
    return "\n".join([
        f"total compute   {j['total_flop']:.3g} FLOP (6·N·D)",
        f"cluster rate    {est.cluster_flop_per_s:.3g} FLOP/s = {a['n_gpus']} × {a['peak_tflops']} TFLOP/s "
        f"({a['peak_field']}) × MFU {a['mfu']}",
        f"wall clock      {j['wall_clock_days']:.2f} days ({j['wall_clock_s']:.3g} s)",
        f"GPU-hours       {j['gpu_hours']:,.0f}  → rental ${j['rental_cost_usd']:,.0f} "
        f"at ${a['usd_per_gpu_hour']}/GPU-hour",
        f"IT power        {j['it_power_kw']:,.1f} kW ({a['power_scope']}: {a['power_w_per_gpu']} W per GPU)",
        f"facility power  {j['facility_power_kw']:,.1f} kW (PUE {a['pue']})",
        f"energy          {j['energy_mwh']:,.1f} MWh → electricity ${j['electricity_cost_usd']:,.0f} "
        f"at ${a['usd_per_kwh']}/kWh",
    ])


#: subcommands that own their argument parsing (their modules expose main(argv) -> exit code)
DELEGATED = {
    "check-claims": ("x4lib.claims", "check every number in the book's prose is glued or cited"),
    "collective-predict": ("x4lib.collectives", "α–β prediction of a collective on a cluster preset"),
    "nccl-parse": ("x4lib.nccl_log", "read an nccl-tests / rccl-tests log, check it, print JSON or CSV"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in DELEGATED:
        import importlib
        return importlib.import_module(DELEGATED[argv[0]][0]).main(argv[1:])
    parser = build_parser()
    sub = parser._subparsers._group_actions[0]
    for name, (_, help_text) in DELEGATED.items():
        sub.choices[name] = argparse.ArgumentParser(prog=f"python -m x4lib {name}", add_help=False)
        sub._choices_actions.append(argparse.Action([], dest=name, help=help_text, metavar=name))
    args = parser.parse_args(argv)
    handlers = {"specs": _specs, "roofline": _roofline, "train-estimate": _train}
    try:
        text = handlers[args.command](args)
    except specs.CatalogError as exc:  # a broken data file, not the user's input: still no traceback
        print(f"x4lib: catalog error: {exc}", file=sys.stderr)
        return 1
    except (specs.UnknownDeviceError, specs.UnsupportedDtypeError, ValueError, KeyError) as exc:
        sub = parser._subparsers._group_actions[0].choices[args.command]  # the subcommand's usage line
        sub.error(str(exc))
    print(text)
    return 0
