"""python -m runners: list device profiles (the labs add their own subcommands)."""
import argparse
import json
import sys

from runners import profiles


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m runners")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("profiles", help="list the device profiles")
    s.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    data = [profiles.load(n) for n in profiles.names()]
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        for d in data:
            ids = ", ".join(d["expects"]["catalog_ids"]) or "any CPU"
            print(f"{d['name']:12} {d['expects']['kind']:8} {ids:45} {d['description']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
