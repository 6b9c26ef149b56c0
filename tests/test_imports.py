"""The house: x4lib's subpackages mirror the book's parts, and no module imports itself back through others.

Imports are read with the standard library's ``ast``: top-level and function-level imports both count (a lazy import
is still a dependency); an import under ``if TYPE_CHECKING:`` does not (it never runs).
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "x4lib"
SUBPACKAGES = ("catalog", "compute", "network", "training", "serving", "datacenter", "doctor", "harness", "book",
               "pages")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The x4lib modules ``name`` imports (``from x4lib.a import b`` counts as x4lib.a.b when that is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in known else node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            pytest.fail(f"{name}: relative import (the house uses absolute x4lib.<part>.<module> imports)")
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m in known and m != name and m != "x4lib"}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(path, name, known) for name, path in mods.items()}


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path [a, b, ..., a], or None (depth-first search, colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        stack.append(v)
        for w in sorted(g.get(v, ())):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        stack.pop()
        state[v] = 2
        return None

    for v in sorted(g):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_no_import_cycle_in_x4lib():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_tree_shows_the_parts():
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert flat == ["__init__.py", "__main__.py", "_lazy.py", "cli.py", "paths.py"], flat
    for part in SUBPACKAGES:
        init = PACKAGE / part / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 10, f"x4lib/{part}/__init__.py needs a docstring saying what it models"


@pytest.mark.parametrize("part", [p for p in SUBPACKAGES if p != "pages"])
def test_every_module_of_a_part_is_reachable_as_an_attribute(part):
    import x4lib as x4
    pkg = getattr(x4, part)
    on_disk = sorted(p.stem for p in (PACKAGE / part).glob("*.py") if p.stem != "__init__")
    assert sorted(pkg.__all__) == on_disk
    assert importlib.import_module(f"x4lib.{part}.{on_disk[0]}") is getattr(pkg, on_disk[0])


def test_tests_mirror_the_tree():
    """A module's test is found by its path: tests/<part>/test_<module>.py for every part that has tests."""
    for test in (ROOT / "tests").glob("*/test_*.py"):
        part = test.parent.name
        assert part in SUBPACKAGES + ("runners",), f"{test}: tests/<part>/ must name a part of x4lib or runners"
