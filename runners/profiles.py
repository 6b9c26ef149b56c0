"""Device profiles: data files under runners/profiles/, read with the standard library only.

Format (validated against runners/profile.schema.json in the tests):
    name         the profile name (= file stem), e.g. "h100"
    description  one line for humans
    expects      {"kind": "cpu"|"gpu"|"cluster", "catalog_ids": [...] (any accepted; [] = whatever
                 CPU this is), "min_devices": int}
    labs         {"lab00": {papermill parameters}, "lab01": {...}}: per-lab parameters
    rental       optional {"provider", "sku", "usd_per_hour", "source", "accessed"}: how to rent it
"""
from __future__ import annotations

import json
from pathlib import Path

PROFILES_DIR = Path(__file__).parent / "profiles"


class ProfileError(ValueError):
    """Unknown profile or a malformed profile file."""


def names() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.json"))


def load(name: str) -> dict:
    path = PROFILES_DIR / f"{name}.json"
    if not path.exists():
        raise ProfileError(f"unknown profile {name!r}; known profiles: {', '.join(names())}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{path.name}: not valid JSON ({exc})") from None
    if data.get("name") != name:
        raise ProfileError(f"{path.name}: its name must be {name!r}")
    return data
