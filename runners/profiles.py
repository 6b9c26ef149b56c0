"""Device profiles: data files under runners/profiles/, read with the standard library only.

Format (validated against runners/profile.schema.json in the tests):
    name         the profile name (= file stem), e.g. "h100"
    description  one line for humans
    expects      {"kind": "cpu"|"gpu"|"cluster", "catalog_ids": [...] (any accepted; [] = whatever
                 CPU this is), "min_devices": int, "name_regex": optional pattern on the detected name}
    labs         {"lab00": {parameters}, "lab01": {...}}: per-lab parameters, with a "quick" subset
    rental       optional: the SKU and pod image to rent it with, and the key of its price in economics.yaml
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from x4lib.cli import UsageError

PROFILES_DIR = Path(__file__).parent / "profiles"


class ProfileError(UsageError):
    """Unknown profile, a malformed profile file, or a lab the profile has no parameters for (exit 2)."""


class WrongDevice(UsageError):
    """The machine is not what the profile expects (exit 2, before anything is measured)."""


def names() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.json"))


def load(name: str) -> dict:
    path = PROFILES_DIR / f"{name}.json"
    if name not in names():
        raise ProfileError(f"unknown profile {name!r}; known profiles: {', '.join(names())}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path.name}: not valid JSON ({exc})") from None
    if data.get("name") != name:
        raise ProfileError(f"{path.name}: its name must be {name!r}")
    return data


def lab_params(profile: dict, lab: str, quick: bool) -> dict:
    """The profile's parameters for ``lab``, with its ``quick`` subset applied when asked."""
    if lab not in profile.get("labs", {}):
        raise ProfileError(f"profile {profile['name']!r} has no {lab} parameters; profiles with them: "
                           f"{', '.join(n for n in names() if lab in load(n)['labs'])}")
    params = {k: v for k, v in profile["labs"][lab].items() if k != "quick"}
    if quick:
        params.update(profile["labs"][lab].get("quick", {}))
    return params


def check_device(profile: dict, dev: dict, min_devices: int | None = None) -> None:
    """Raise WrongDevice unless the detected device is one the profile accepts (by catalog id or by name)."""
    exp = profile["expects"]
    name_ok = bool(exp.get("name_regex")) and bool(re.search(exp["name_regex"], dev.get("detected_name") or ""))
    id_ok = dev.get("catalog_id") in exp["catalog_ids"]
    if exp["kind"] == "cpu":
        if exp["catalog_ids"] and not (id_ok or name_ok):
            raise WrongDevice(f"profile {profile['name']!r} expects CPU {', '.join(exp['catalog_ids'])}; this machine's "
                              f"CPU is {dev['cpu']['model_name']!r}. Use --profile local-cpu for any CPU.")
        return
    if dev["kind"] != "gpu":
        raise WrongDevice(f"profile {profile['name']!r} expects a GPU ({', '.join(exp['catalog_ids'])}); this machine "
                          f"has no CUDA GPU (CPU: {dev['cpu']['model_name']}). Use --profile local-cpu.")
    if not (id_ok or name_ok):
        raise WrongDevice(f"profile {profile['name']!r} expects {', '.join(exp['catalog_ids'])}; this machine has "
                          f"{dev['detected_name']!r}. Pick the profile of the GPU you have.")
    need = min_devices if min_devices is not None else exp["min_devices"]
    if dev["count"] < need:
        raise WrongDevice(f"profile {profile['name']!r} needs {need} GPUs; found {dev['count']}")


def detect_for(ctx, torch, lab: str) -> dict:
    """The device a CPU or GPU profile measures, detected and checked against the profile (exit 2 on another
    machine, or for a profile of another kind, e.g. a cluster)."""
    from x4lib.harness import device
    kind = ctx.profile["expects"]["kind"]
    if kind not in ("cpu", "gpu"):
        raise ProfileError(f"profile {ctx.profile['name']!r} ({kind}) has no {lab} runner")
    dev = device.detect(torch, "cpu" if kind == "cpu" else "cuda")
    check_device(ctx.profile, dev)
    return dev
