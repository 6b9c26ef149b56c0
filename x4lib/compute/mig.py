"""Multi-Instance GPU (MIG) on the H100 80 GB: its profiles, the placement rule, and a packer that puts a list of
workloads into valid GPU instances or says why it cannot.

The GPU is cut into 7 compute slices and 8 memory slices. A GPU instance of a profile occupies ``size`` consecutive
memory slices from one of the profile's allowed ``start`` positions; instances may not overlap on the memory-slice
axis (NVML: creation "will fail if there is overlap with the already occupied memory slices"), a profile has a
maximum instance count, and the compute slices used add up to at most 7 (the allowed starts already guarantee it,
e.g. 2g.20gb cannot start at slice 6). Data: ``x4lib/data/mig_h100_80gb.yaml`` (profiles from a real nvidia-smi
capture, placement semantics from NVIDIA's NVML documentation, valid configurations from NVIDIA's mig-parted).
Used in: book/02b-memory-and-decode.md.
"""
from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from types import MappingProxyType
from typing import Iterable, Mapping
from x4lib import paths

DATA_PATH = paths.DATA_DIR / "mig_h100_80gb.yaml"
SCHEMA_PATH = paths.SCHEMA_DIR / "mig.schema.json"


class MigDataError(ValueError):
    """mig_h100_80gb.yaml breaks its schema; the book's fault (exit code 1)."""
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class Profile:
    name: str
    profile_id: int
    compute_slices: int
    memory_slices: int
    max_instances: int
    memory_gib: float
    sms: int
    starts: tuple[int, ...]
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Instance:
    """One GPU instance: a profile placed at a start memory slice."""
    profile: str
    start: int

    def slices(self) -> range:
        return range(self.start, self.start + profile(self.profile).memory_slices)

    def __str__(self) -> str:
        return f"{self.profile}@{self.start}"


@dataclasses.dataclass(frozen=True)
class Geometry:
    gpu: str
    memory_slices: int
    compute_slices: int
    max_instances: int
    profiles: Mapping[str, Profile]
    documented_configs: Mapping[str, Mapping[str, int]]
    source: str
    configs_source: str


@functools.lru_cache(maxsize=1)
def geometry() -> Geometry:
    import json

    import jsonschema

    from x4lib.catalog.specs import read_yaml
    try:
        raw = read_yaml(DATA_PATH, MigDataError)
        jsonschema.validate(raw, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise MigDataError(f"{DATA_PATH.name}: {where}: {exc.message}") from None
    profs = {}
    for p in raw["profiles"]:
        prof = Profile(**{**p, "starts": tuple(p["starts"])})
        last = max(prof.starts) + prof.memory_slices
        if last > raw["memory_slices"]:
            raise MigDataError(f"{DATA_PATH.name}: profiles/{prof.name}: start {max(prof.starts)} + size "
                               f"{prof.memory_slices} runs past memory slice {raw['memory_slices'] - 1}")
        profs[prof.name] = prof
    configs = raw["documented_configs"]
    return Geometry(raw["gpu"], raw["memory_slices"], raw["compute_slices"], raw["max_instances"],
                    MappingProxyType(profs), MappingProxyType({k: MappingProxyType(v)
                                                               for k, v in configs["configs"].items()}),
                    raw["source"], configs["source"])


def profiles() -> Mapping[str, Profile]:
    return geometry().profiles


def profile(name: str) -> Profile:
    if name not in profiles():
        raise LookupError(f"unknown MIG profile {name!r}; known: {', '.join(profiles())}")
    return profiles()[name]


def parse(text: str) -> list[Instance]:
    """'4g.40gb@0, 3g.40gb@4' -> instances."""
    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, start = part.partition("@")
        if not start.strip().isdigit():
            raise ValueError(f"{part!r}: write an instance as PROFILE@START, e.g. 3g.40gb@4")
        out.append(Instance(name.strip(), int(start)))
    return out


def problems(instances: Iterable[Instance]) -> list[str]:
    """Why a set of instances cannot coexist on one GPU (empty list: valid)."""
    g = geometry()
    instances = list(instances)
    out = []
    owner: dict[int, Instance] = {}
    for inst in instances:
        if inst.profile not in g.profiles:
            out.append(f"unknown profile {inst.profile!r}")
            continue
        p = g.profiles[inst.profile]
        if inst.start not in p.starts:
            out.append(f"{inst}: {p.name} may start only at memory slice {', '.join(map(str, p.starts))}")
            continue
        for s in inst.slices():
            if s in owner:
                out.append(f"{inst} overlaps {owner[s]} on memory slice {s}")
                break
            owner[s] = inst
    counts = Counter(i.profile for i in instances if i.profile in g.profiles)
    for name, n in counts.items():
        if n > g.profiles[name].max_instances:
            out.append(f"{n} x {name}: at most {g.profiles[name].max_instances} per GPU")
    compute = sum(g.profiles[i.profile].compute_slices for i in instances if i.profile in g.profiles)
    if compute > g.compute_slices:
        out.append(f"{compute} compute slices used, the GPU has {g.compute_slices}")
    if len(instances) > g.max_instances:
        out.append(f"{len(instances)} instances, at most {g.max_instances}")
    return out


def is_valid(instances: Iterable[Instance]) -> bool:
    return not problems(instances)


def _search(needs: list[list[str]], used: list[Instance]) -> list[Instance] | None:
    """Depth-first: place needs[0] (a list of acceptable profiles, smallest first) and recurse."""
    if not needs:
        return used
    for name in needs[0]:
        for start in profile(name).starts:
            trial = used + [Instance(name, start)]
            if is_valid(trial):
                found = _search(needs[1:], trial)
                if found is not None:
                    return found
    return None


def place(counts: Mapping[str, int]) -> list[Instance] | None:
    """Placements for a number of instances of each profile (as mig-parted's configurations give them), or None."""
    needs = [[name] for name, n in sorted(counts.items(), key=lambda kv: -profile(kv[0]).memory_slices)
             for _ in range(n)]
    return _search(needs, [])


@dataclasses.dataclass(frozen=True)
class Workload:
    """What a job needs from one GPU instance: usable memory (GiB, as nvidia-smi reports it) and compute slices."""
    name: str
    memory_gib: float
    compute_slices: int = 1


@dataclasses.dataclass(frozen=True)
class Packing:
    ok: bool
    assignments: tuple[tuple[str, Instance], ...]
    reason: str = ""

    def rows(self) -> list[dict]:
        return [{"workload": w, "profile": i.profile, "start slice": i.start,
                 "memory slices": f"{i.start}-{i.start + profile(i.profile).memory_slices - 1}",
                 "usable GiB": profile(i.profile).memory_gib, "SMs": profile(i.profile).sms}
                for w, i in self.assignments]


def candidates(w: Workload) -> list[str]:
    """Profiles that give the workload enough memory and compute, smallest first (1g.10gb+me only if asked by name)."""
    ok = [p for p in profiles().values() if p.memory_gib >= w.memory_gib and p.compute_slices >= w.compute_slices
          and not p.name.endswith("+me")]
    return [p.name for p in sorted(ok, key=lambda p: (p.memory_slices, p.compute_slices))]


def pack(workloads: Iterable[Workload]) -> Packing:
    """Give each workload its own GPU instance on one H100 80 GB, preferring the smallest profiles that fit, or
    explain why no valid layout exists."""
    g = geometry()
    ws = list(workloads)
    for w in ws:
        if w.memory_gib <= 0 or w.compute_slices < 1:
            raise ValueError(f"workload {w.name!r}: memory must be > 0 GiB and compute slices >= 1")
    cands = {w.name: candidates(w) for w in ws}
    too_big = [w for w in ws if not cands[w.name]]
    if too_big:
        w = too_big[0]
        biggest = max(g.profiles.values(), key=lambda p: p.memory_gib)
        return Packing(False, (), f"{w.name} needs {w.memory_gib:g} GiB and {w.compute_slices} compute slice(s); "
                                  f"the largest profile, {biggest.name}, gives {biggest.memory_gib:g} GiB and "
                                  f"{biggest.compute_slices}")
    mem = sum(profile(cands[w.name][0]).memory_slices for w in ws)
    comp = sum(min(profile(c).compute_slices for c in cands[w.name]) for w in ws)
    if mem > g.memory_slices:
        return Packing(False, (), f"the workloads need at least {mem} memory slices; the GPU has {g.memory_slices}")
    if comp > g.compute_slices:
        return Packing(False, (), f"the workloads need at least {comp} compute slices; the GPU has "
                                  f"{g.compute_slices}")
    if len(ws) > g.max_instances:
        return Packing(False, (), f"{len(ws)} workloads, at most {g.max_instances} instances per GPU")
    order = sorted(ws, key=lambda w: -profile(cands[w.name][0]).memory_slices)
    found = _search([cands[w.name] for w in order], [])
    if found is None:
        return Packing(False, (), "enough slices in total, but no layout of the allowed start positions avoids an "
                                  "overlap (try fewer or smaller workloads)")
    return Packing(True, tuple((w.name, i) for w, i in zip(order, found)))


def profile_rows() -> list[dict]:
    g = geometry()
    return [{"profile": p.name, "ID": p.profile_id, "compute slices": f"{p.compute_slices}/{g.compute_slices}",
             "memory slices": f"{p.memory_slices}/{g.memory_slices}", "usable memory (GiB)": p.memory_gib,
             "SMs": p.sms, "max instances": p.max_instances, "start slices": ", ".join(map(str, p.starts))}
            for p in g.profiles.values()]


def layout_text(instances: Iterable[Instance]) -> str:
    """The 8 memory slices as text, e.g. '3g.40gb 3g.40gb 3g.40gb 3g.40gb | 2g.20gb ...' -> one cell per slice."""
    g = geometry()
    cells = ["free"] * g.memory_slices
    for i in instances:
        for s in i.slices():
            cells[s] = i.profile
    return " | ".join(cells)
