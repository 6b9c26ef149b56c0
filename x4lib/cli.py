"""``python -m x4lib``: the book's command line for readers and scripts.

    python -m x4lib COMMAND [options]        # python -m x4lib --help lists the commands

How a command is built (add one in two steps):

1. in its concept module, a command-line edge: ``cli_arguments(parser)`` adds the options (numbers through
   :func:`number`, sizes through :func:`sizes`), ``cli_main(args) -> int`` runs the model and prints through
   :func:`emit`. Display units (TFLOP/s, GB/s, µs, kW) appear only in that edge; the model stays in SI;
2. one line in :data:`COMMANDS`.

This module owns what every command shares: real argparse subparsers; one number parser that refuses non-finite
and out-of-range values; output that is valid JSON (never NaN or Infinity), text without terminal control
characters, any stdout encoding, and a closed pipe (``| head``) that is not an error; and the exit codes:

    0  done
    1  it ran but a check failed, or a data file of the book is broken (``exit_code = 1`` on the exception)
    2  bad input or usage: argparse's usage line plus one ``error:`` line, no traceback

A model that rejects its input raises ValueError or LookupError (exit 2) with a message naming the value.
Standard library only at import time, so the runners can share :func:`safe_text`; a command's module is imported
only when that command runs (:func:`build_parser`), so each command needs only its own dependencies.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import sys

#: command -> (module with cli_arguments/cli_main, one line of help)
COMMANDS: dict[str, tuple[str, str]] = {
    "specs": ("x4lib.catalog.specs", "list the catalog, or show one device with every value's source"),
    "roofline": ("x4lib.compute.roofline", "peak, memory bandwidth and ridge point of a device"),
    "train-estimate": ("x4lib.training.economics", "time, cost and power of a training run (6·N·D)"),
    "collective-predict": ("x4lib.network.collective_cli", "predicted time, algbw and busbw of a collective on a cluster"),
    "matmul-predict": ("x4lib.compute.matmul", "achievable rate of an MxNxK matmul on a device (tiles, waves, clock, overhead)"),
    "nccl-parse": ("x4lib.network.nccl_log", "read an nccl-tests / rccl-tests log, check it, print JSON or CSV"),
    "check-claims": ("x4lib.book.claims", "check that every number in the book's prose is glued or cited"),
    "doctor": ("x4lib.doctor.diagnose", "is my number right? measure here or read logs, name the likely cause of a gap"),
    "topology": ("x4lib.network.topology", "switches, links, diameter and bisection of a fat tree, torus or dragonfly"),
    "comm-estimate": ("x4lib.training.parallelism", "bytes and time per step of a parallelism strategy on a cluster"),
    "topo": ("x4lib.network.topo", "read nvidia-smi topo -m output: paths, nearest NICs, affinity, findings"),
    "ib-ports": ("x4lib.network.topo", "read ibstat or ibv_devinfo output: port state, rate, link layer"),
    "decode": ("x4lib.serving.decode", "achievable time of one decode step: GEMMs, KV reads and kernel launches (eager or graph)"),
    "kv-cache": ("x4lib.serving.inference", "KV-cache bytes per token and in all, for a shape or a stored model"),
    "memory-plan": ("x4lib.training.memory", "per-GPU training memory (weights, gradients, optimizer, activations) and fits"),
    "tco": ("x4lib.datacenter.tco", "owning against renting a GPU cluster: cost per GPU-hour and break-even utilisation"),
    "checkpoint-interval": ("x4lib.datacenter.reliability", "checkpoint interval (Daly/Young) and goodput for a job's MTBF"),
    "peak": ("x4lib.catalog.peaks", "a peak rate from first principles: units × FLOP per clock × clock, against the catalog"),
    "systolic": ("x4lib.compute.systolic", "simulate a weight-stationary systolic array: cycles, MACs, utilisation"),
    "plan": ("x4lib.training.planner", "lay out a training run: the layout that fits and runs fastest, MFU, days, cost, energy"),
    "plan-validate": ("x4lib.training.validate", "the planner against public ground truth (vTrain, Korthikanti/Calculon, the Playbook, published runs), fitted leave-one-source-out"),
    "landscape": ("x4lib.catalog.landscape", "every accelerator on one basis (dense, per chip, per direction, GB = 1e9 B)"),
    "choose": ("x4lib.catalog.choose", "rank the catalog's accelerators for a workload and name the deciding constraint"),
}

PROG = "python -m x4lib"


class UsageError(ValueError):
    """Bad input found after parsing (exit 2, with the command's usage line)."""
    exit_code = 2


class CheckFailed(RuntimeError):
    """The command ran but a check failed (exit 1)."""
    exit_code = 1


# --------------------------------------------------------------------------------------------- input

def number(kind: str, low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False, integer: bool = False):
    """An argparse ``type``: a finite number of ``kind`` in [low, high] (open ends with ``low_open``/``high_open``),
    a whole number with ``integer``. ``nan``, ``inf``, ``1e999`` and 400-digit numbers are refused with a message
    naming the value and the range, e.g. ``-8 GPUs: must be >= 1``."""
    def parse(text: str):
        t = str(text).strip()
        try:
            v = float(t)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{text!r} is not a number ({kind})") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{text} {kind}: not a finite number")
        if integer:
            if v != int(v):
                raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {kind}")
            v = int(t) if re.fullmatch(r"[+-]?\d{1,18}", t) else int(v)
        if low is not None and (v <= low if low_open else v < low):
            raise argparse.ArgumentTypeError(f"{text} {kind}: must be {'>' if low_open else '>='} {low:g}")
        if high is not None and (v >= high if high_open else v > high):
            raise argparse.ArgumentTypeError(f"{text} {kind}: must be {'<' if high_open else '<='} {high:g}")
        return v
    parse.__name__ = kind  # argparse names the type in its own messages
    return parse


def sizes(text: str) -> list[int]:
    """An argparse ``type`` for comma-separated message sizes (x4lib.network.sizes.parse_size: 1M = 2^20 as nccl-tests,
    1MB = 10^6, 1MiB = 2^20)."""
    from x4lib.network import sizes as sz
    parts = [t for t in str(text).split(",") if t.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("no size given")
    try:
        return [sz.parse_size(t) for t in parts]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def choice_of(kind: str, options_of):
    """An argparse ``type`` that accepts one of ``options``, and otherwise names the closest and all of them.
    ``options`` may be a function, called only when the option is given: a broken data file behind it then stops
    only the command that needs it (one line, exit 1), not ``--help`` or the other commands."""
    def parse(text: str):
        try:
            options = tuple(options_of() if callable(options_of) else options_of)
        except Exception as exc:  # noqa: BLE001 — argparse would swallow a ValueError into "invalid value"
            if getattr(exc, "exit_code", None) != 1:
                raise
            print(safe_text(f"{PROG}: error: {_message(exc)}"), file=sys.stderr)
            raise SystemExit(1) from None
        if text not in options:
            import difflib
            close = difflib.get_close_matches(text, options, n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise argparse.ArgumentTypeError(f"unknown {kind} {text!r}{hint}; known: {', '.join(options)}")
        return text
    parse.__name__ = kind
    return parse


# -------------------------------------------------------------------------------------------- output

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe_text(text: str) -> str:
    """Text for a terminal: control characters (escape sequences from a device name or a log) shown as ``\\x1b``,
    newlines and tabs kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def to_json(doc) -> str:
    """Strict JSON (NaN and Infinity are not JSON): raises ValueError naming the problem instead of writing them."""
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)


def emit(doc=None, text: str | None = None, *, as_json: bool = False) -> None:
    """Print ``doc`` as JSON when ``as_json``, else ``text`` (made safe for a terminal)."""
    print(to_json(doc) if as_json else safe_text(text if text is not None else doc))


def warn(message: str, prog: str = PROG) -> None:
    print(safe_text(f"{prog}: warning: {message}"), file=sys.stderr)


def configure_streams() -> None:
    """Any stdout encoding prints α and →: characters it cannot encode come out as escapes, never a crash."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass


def _message(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and type(exc).__str__ is KeyError.__str__ and exc.args:
        return str(exc.args[0])
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def run_command(run, args, error, prog: str) -> int:
    """Run ``run(args)`` and map what it raises to an exit code: ``error(msg)`` (argparse's, exit 2) for bad input;
    one line and 1 for a failed check or broken data; one line for Ctrl-C (130) and for a closed pipe (0).
    Shared by ``python -m x4lib`` and ``python -m runners``."""
    try:
        return run(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `... | head` closed the pipe: the reader has what it wanted
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except Exception as exc:  # noqa: BLE001 — every failure is one line, no traceback
        code = getattr(exc, "exit_code", getattr(exc, "code", None))
        if not isinstance(code, int):
            code = 2 if isinstance(exc, (ValueError, LookupError)) else None
        if code == 2:
            error(safe_text(_message(exc)))  # exits 2
        if os.environ.get("X4_DEBUG"):
            raise
        if code == 1:
            print(safe_text(f"{prog}: error: {_message(exc)}"), file=sys.stderr)
            return 1
        print(safe_text(f"{prog}: internal error: {type(exc).__name__}: {_message(exc)} "
                        f"(set X4_DEBUG=1 for the traceback, and please report it)"), file=sys.stderr)
        return 1


# ---------------------------------------------------------------------------------------------- main

def build_parser(only: str | None = None, *, fill_all: bool = True
                 ) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser and one subparser per command. Every command is listed (``--help`` shows them all from
    :data:`COMMANDS` alone); a subparser is filled by its module's ``cli_arguments`` only for ``only`` (the command
    that runs), or for all commands when ``only`` is None and ``fill_all``. So ``python -m x4lib doctor`` imports
    the doctor's modules and nothing else (no pybtex, pandas or jsonschema on a bare GPU pod)."""
    p = argparse.ArgumentParser(prog=PROG, description="The X4 book's command line: its models, from the shell.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    subs = {}
    for name, (module, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == only or (only is None and fill_all):
            importlib.import_module(module).cli_arguments(sp)
        subs[name] = sp
    return p, subs


def chosen_command(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word, as the top-level parser takes no options but ``-h``
    (None for ``--help``, no command or an unknown one; argparse then lists the commands or names the error)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def main(argv: list[str] | None = None) -> int:
    configure_streams()
    argv = sys.argv[1:] if argv is None else list(argv)
    command = chosen_command(argv)
    parser, subs = build_parser(command, fill_all=False)
    args = parser.parse_args(argv)
    module = importlib.import_module(COMMANDS[args.command][0])
    return run_command(module.cli_main, args, subs[args.command].error, f"{PROG} {args.command}")
