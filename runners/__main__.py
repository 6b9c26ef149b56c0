"""python -m runners: run a lab for a device profile and store the run under book/runs/<lab>/<run-id>/.

    python -m runners profiles [--json]
    python -m runners lab00 --profile NAME [--quick] [--measure-only] [--runs-dir DIR]
    python -m runners lab00 --render RUN_DIR
    python -m runners lab01 --profile NAME [--quick] [--measure-only] [--runs-dir DIR]
    python -m runners lab01 --profile cluster-2x8 --import-log LOG [--runs-dir DIR]

Exit codes: 0 done; 1 the run failed (nothing complete-looking is left in the runs directory);
2 bad usage (unknown profile, a profile for a device this machine is not).
Imports only the standard library at start-up; torch and papermill are imported when needed.
"""
import argparse
import json
import sys
from pathlib import Path

from runners import profiles

ROOT = Path(__file__).resolve().parent.parent


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m runners", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser("profiles", help="list the device profiles")
    s.add_argument("--json", action="store_true")
    lab = sub.add_parser("lab00", help="Lab 00: matmul sweep and memory kernels, rendered as the lab notebook")
    what = lab.add_mutually_exclusive_group(required=True)
    what.add_argument("--profile", help="one of: " + ", ".join(profiles.names()))
    what.add_argument("--render", metavar="RUN_DIR", type=Path,
                      help="render the notebook of a run measured elsewhere (--measure-only)")
    lab.add_argument("--quick", action="store_true", help="a small sweep (tests, smoke runs)")
    lab.add_argument("--measure-only", action="store_true",
                     help="measure and write results.json only (standard library + torch; no notebook)")
    lab.add_argument("--runs-dir", "--out", type=Path, default=ROOT / "book" / "runs",
                     help="where run directories go (default: book/runs, the committed runs)")
    l1 = sub.add_parser("lab01", help="Lab 01: collectives in nccl-tests' table (gloo here, NCCL on a cluster), "
                                      "or a real nccl-tests log imported")
    l1.add_argument("--profile", required=True, help="one of: " + ", ".join(profiles.names()))
    l1.add_argument("--quick", action="store_true", help="a small sweep (tests, smoke runs)")
    l1.add_argument("--measure-only", action="store_true",
                    help="measure and write results.json only (standard library + torch; no notebook)")
    l1.add_argument("--import-log", metavar="LOG", type=Path,
                    help="store a real nccl-tests log (cluster profiles) as a run, labelled from the log's header")
    l1.add_argument("--runs-dir", "--out", type=Path, default=ROOT / "book" / "runs",
                    help="where run directories go (default: book/runs, the committed runs)")
    return p


def lab01_main(args, lab_parser) -> int:
    from runners import lab01
    try:
        if args.import_log:
            final = lab01.import_log(args.profile, args.import_log, args.runs_dir, ROOT / "out" / "failed-runs")
        else:
            final = lab01.run(args.profile, args.quick, args.measure_only, args.runs_dir, ROOT / "out" / "failed-runs")
    except (profiles.ProfileError, lab01.WrongDevice, lab01.BadLog, FileExistsError) as exc:
        lab_parser.error(str(exc))
    except ImportError as exc:
        lab_parser.error(f"{exc}: the measuring entry needs torch (pods: use the image's own CUDA torch)")
    except lab01.CheckFailed as exc:
        print(f"python -m runners lab01: check failed: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 — one line, no traceback; the partial run is kept under out/
        print(f"python -m runners lab01: run failed: {type(exc).__name__}: {exc} "
              f"(partial output moved to out/failed-runs/)", file=sys.stderr)
        return 1
    if final is not None:  # None: a torchrun rank other than 0
        print(final)
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "profiles":
        data = [profiles.load(n) for n in profiles.names()]
        if args.json:
            print(json.dumps(data, indent=2))
        else:
            for d in data:
                ids = ", ".join(d["expects"]["catalog_ids"]) or "any CPU"
                print(f"{d['name']:12} {d['expects']['kind']:8} {ids:45} {d['description']}")
        return 0
    if args.command == "lab01":
        return lab01_main(args, parser._subparsers._group_actions[0].choices["lab01"])
    from runners import lab00
    lab_parser = parser._subparsers._group_actions[0].choices["lab00"]
    if args.render:
        if not (args.render / "results.json").exists():
            lab_parser.error(f"{args.render} has no results.json: nothing to render")
        if not lab00.notebook_stack_available():
            lab_parser.error("rendering needs the notebook stack (papermill): run `make setup` first")
        print(lab00.render(args.render))
        return 0
    try:
        final = lab00.run(args.profile, args.quick, args.measure_only, args.runs_dir, ROOT / "out" / "failed-runs")
    except (profiles.ProfileError, lab00.WrongDevice, FileExistsError) as exc:
        lab_parser.error(str(exc))
    except ImportError as exc:
        lab_parser.error(f"{exc}: the measuring entry needs torch (pods: use the image's own CUDA torch)")
    except Exception as exc:  # noqa: BLE001 — one line, no traceback; the partial run is kept under out/
        print(f"python -m runners lab00: run failed: {type(exc).__name__}: {exc} "
              f"(partial output moved to out/failed-runs/)", file=sys.stderr)
        return 1
    print(final)
    return 0


if __name__ == "__main__":
    sys.exit(main())
